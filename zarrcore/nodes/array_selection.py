"""The selection methods of Array (docs/guide/arrays.md): basic, orthogonal, coordinate,
mask and block selections, their `oindex`, `vindex` and `blocks` brackets, and many
selections read in one call (`get_many`). Each makes the indexer of its selection and reads
or writes it through the array's own `_read` and `_write`."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .._native import memory as _memory
from ..errors import ShapeMismatchError
from ..metadata.common import INT64_MAX
from ..metadata.indexing import (
    BasicIndexer,
    BlockIndexer,
    OrthogonalIndexer,
    SpanIndexer,
    check_out,
    coordinate_indexer,
    is_int,
    mask_indexer,
    numpy_indexer,
    pop_fields,
    selection_spans,
)
from ..runtime.pool import in_turns
from ._docstrings import shared_doc

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..engine import ChunkEngine
    from ..metadata.grid import AxisChunks
    from ..metadata.types import Fields, Selection

__all__ = ["SelectionMethods"]

_F = TypeVar("_F", bound=Callable[..., Any])

# The numpydoc of the get_*_selection and set_*_selection methods, written once: each method
# gives its summary and its kind of selection, whose parameter is described here.
_SELECTION_PARAMETERS = {
    "basic": "selection : int, slice, Ellipsis or tuple of them\n"
    "    One per axis (Ellipsis fills the rest); steps may be negative.",
    "orthogonal": "selection : int, slice, int array, bool array or tuple of them\n"
    "    One per axis; each axis is selected on its own (as `numpy.ix_`).",
    "coordinate": "selection : tuple of int arrays\n"
    "    One array of coordinates per axis, broadcast together: the points to read.",
    "mask": "mask : bool array\n    A mask of the array's shape: its true elements, in C order.",
    "block": "selection : int, slice or tuple of them\n"
    "    Storage blocks (shards when sharded, else chunks) per axis.",
}
_READ_DOC = """{summary}

Parameters
----------
{selection}
out : numpy.ndarray, optional
    An array of the selection's shape to read into (and return).
fields : str or list of str, optional
    Fields of a structured dtype to read.

Returns
-------
numpy.ndarray or scalar
    The values (`out` when given; a scalar for a 0-d result).

Raises
------
SelectionError
    A selection that does not fit the array (an IndexError).
ShapeMismatchError
    `out` is not of the selection's shape.
"""
_WRITE_DOC = """{summary}

Parameters
----------
{selection}
value : array_like
    Broadcast to the selection's shape and cast to the array's dtype.
fields : str or list of str, optional
    Fields of a structured dtype to write; the others keep their stored values.

Raises
------
SelectionError
    A selection that does not fit the array (an IndexError).
ShapeMismatchError
    `value` does not broadcast to the selection's shape; nothing is written.
ReadOnlyError
    The array is read-only.
"""


def _reads(summary: str, kind: str) -> Callable[[_F], _F]:
    """The docstring of the method reading a `kind` of selection (_SELECTION_PARAMETERS)."""
    return shared_doc(_READ_DOC, summary=summary, selection=_SELECTION_PARAMETERS[kind])


def _writes(summary: str, kind: str) -> Callable[[_F], _F]:
    """The docstring of the method writing a `kind` of selection (_SELECTION_PARAMETERS)."""
    return shared_doc(_WRITE_DOC, summary=summary, selection=_SELECTION_PARAMETERS[kind])


class SelectionMethods:
    """Array's selection calls, by the kind of selection."""

    if TYPE_CHECKING:  # (what Array gives the methods)
        _engine: ChunkEngine
        _fortran: bool

        @property
        def name(self) -> str: ...
        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def ndim(self) -> int: ...
        @property
        def dtype(self) -> np.dtype[Any]: ...
        @property
        def _grid(self) -> tuple[AxisChunks, ...]: ...
        @property
        def reads_missing_as_fill(self) -> bool: ...
        def _read(
            self, indexer: Any, out: np.ndarray | None = None, fields: Fields = None
        ) -> Any: ...
        def _result(
            self,
            indexer: Any,
            buffer: np.ndarray,
            out: np.ndarray | None = None,
            fields: Fields = None,
        ) -> Any: ...
        def _write(self, indexer: Any, value: Any, fields: Fields = None) -> None: ...
        def _streamed(self, selection: Selection, value: Any, fields: Fields) -> bool: ...

    @property
    def oindex(self) -> _Selector:
        """Orthogonal selection: `a.oindex[[0, 2], 1:5]` (one int, slice or array per axis)."""
        return _Selector(self.get_orthogonal_selection, self.set_orthogonal_selection)

    @property
    def vindex(self) -> _Selector:
        """Vectorized selection, as numpy's advanced indexing: `a.vindex[rows, cols]`, or a
        boolean mask `a.vindex[mask]`."""
        return _Selector(self._get_vectorized, self._set_vectorized)

    @property
    def blocks(self) -> _Selector:
        """Selection by storage block (shard when sharded, else chunk): `a.blocks[1, :2]`."""
        return _Selector(self.get_block_selection, self.set_block_selection)

    def _get_vectorized(
        self, selection: Selection, out: np.ndarray | None = None, fields: Fields = None
    ) -> Any:
        return self._read(numpy_indexer(selection, self.shape, self._grid), out, fields)

    def _set_vectorized(
        self, selection: Selection, value: npt.ArrayLike, fields: Fields = None
    ) -> None:
        self._write(numpy_indexer(selection, self.shape, self._grid), value, fields)

    @_reads("Read a basic selection: ints and slices.", "basic")
    def get_basic_selection(
        self, selection: Selection = Ellipsis, out: np.ndarray | None = None, fields: Fields = None
    ) -> Any:
        return self._read(BasicIndexer(selection, self.shape, self._grid), out, fields)

    @_writes("Write a basic selection: ints and slices.", "basic")
    def set_basic_selection(
        self, selection: Selection, value: npt.ArrayLike, fields: Fields = None
    ) -> None:
        if not self._streamed(selection, value, fields):
            self._write(BasicIndexer(selection, self.shape, self._grid), value, fields)

    @_reads("Read an orthogonal selection (as `a.oindex[...]`).", "orthogonal")
    def get_orthogonal_selection(
        self, selection: Selection, out: np.ndarray | None = None, fields: Fields = None
    ) -> Any:
        return self._read(OrthogonalIndexer(selection, self.shape, self._grid), out, fields)

    def get_many(
        self, selections: Sequence[Selection], out: np.ndarray | Sequence[np.ndarray] | None = None
    ) -> Any:
        """Read many selections in one call: a training loader's batch of samples.

        Selections that are one int along the first axis, the rest the same for all
        (`[3, 17, 5]`, or `[(3, slice(0, 64)), (17, slice(0, 64))]`), are read as one
        orthogonal selection: each chunk (inner chunk) decoded once, the requests to the
        store made together (concurrent, byte ranges of a shard coalesced). Others are read
        together too (ChunkEngine.read_many): selections of ints and slices that overlap
        (tiles of one region, repeated samples) as boxes whose chunks are fetched and
        decoded once, the rest concurrently on the thread pool. Each result is an array of
        its own.

        Parameters
        ----------
        selections : sequence of selections
            Each as `a[selection]` takes it.
        out : numpy.ndarray or sequence of numpy.ndarray, optional
            One array whose first axis runs over the selections (each of the same shape), or
            one array per selection, to read into.

        Returns
        -------
        list or numpy.ndarray
            The values of each selection as `a[selection]` gives them (a list), or `out`.

        Raises
        ------
        SelectionError
            A selection that does not fit the array.
        ShapeMismatchError
            `out` does not hold one array of each selection's shape.
        """
        selections = list(selections)
        if out is not None and len(out) != len(selections):
            raise ShapeMismatchError(
                f"array {self.name!r}: out holds {len(out)} arrays for {len(selections)} selections"
            )
        stacked = _one_int_each(selections, self.ndim)
        if stacked is not None:
            indexer = OrthogonalIndexer(stacked, self.shape, self._grid)
            if isinstance(out, np.ndarray):
                return self._read(indexer, out)
            if out is None:
                return list(self._read(indexer))
            for target in out:  # (all of them before anything is read)
                self._check_out(target, indexer.shape[1:])
            data = self._read(indexer)
            for i, target in enumerate(out):
                target[...] = data[i]
            return out
        shape, grid = self.shape, self._grid
        indexers: list[Any] = []
        for selection in in_turns(selections):
            spans = selection_spans(selection, shape)
            indexers.append(
                numpy_indexer(selection, shape, grid)
                if spans is None
                else SpanIndexer(spans, shape, grid)
            )
        if out is not None:
            for target, indexer in zip(out, indexers):
                self._check_out(target, indexer.shape)
        results = self._read_many(indexers, out)
        return results if out is None else out

    def _read_many(
        self, indexers: Sequence[Any], out: np.ndarray | Sequence[np.ndarray] | None = None
    ) -> list[Any]:
        """Each selection as `_read` gives it, read together (ChunkEngine.read_many: those
        that overlap fetch and decode their chunks once)."""
        buffers = [_memory.empty(indexer.drop_shape, self.dtype) for indexer in in_turns(indexers)]
        read = [k for k, buffer in enumerate(buffers) if buffer.size]
        if not self.reads_missing_as_fill:
            self._engine.check_stored(*(indexers[k] for k in read))
        self._engine.read_many([indexers[k] for k in read], [buffers[k] for k in read])
        return [
            self._result(indexer, buffer, None if out is None else out[k])
            for k, (indexer, buffer) in enumerate(in_turns(zip(indexers, buffers)))
        ]

    def _check_out(self, out: np.ndarray, shape: tuple[int, ...]) -> None:
        check_out(out, shape, f"array {self.name!r}")

    @_writes("Write an orthogonal selection (as `a.oindex[...] = value`).", "orthogonal")
    def set_orthogonal_selection(
        self, selection: Selection, value: npt.ArrayLike, fields: Fields = None
    ) -> None:
        self._write(OrthogonalIndexer(selection, self.shape, self._grid), value, fields)

    @_reads("Read points given by their coordinates (as `a.vindex[...]`).", "coordinate")
    def get_coordinate_selection(
        self, selection: Selection, out: np.ndarray | None = None, fields: Fields = None
    ) -> Any:
        return self._read(coordinate_indexer(selection, self.shape, self._grid), out, fields)

    @_writes("Write points given by their coordinates (as `a.vindex[...] = value`).", "coordinate")
    def set_coordinate_selection(
        self, selection: Selection, value: npt.ArrayLike, fields: Fields = None
    ) -> None:
        self._write(coordinate_indexer(selection, self.shape, self._grid), value, fields)

    @_reads("Read the elements where a boolean mask is true.", "mask")
    def get_mask_selection(
        self, mask: npt.ArrayLike, out: np.ndarray | None = None, fields: Fields = None
    ) -> Any:
        return self._read(mask_indexer(mask, self.shape, self._grid), out, fields)

    @_writes("Write the elements where a boolean mask is true.", "mask")
    def set_mask_selection(
        self, mask: npt.ArrayLike, value: npt.ArrayLike, fields: Fields = None
    ) -> None:
        self._write(mask_indexer(mask, self.shape, self._grid), value, fields)

    @_reads("Read whole storage blocks (as `a.blocks[...]`).", "block")
    def get_block_selection(
        self, selection: Selection, out: np.ndarray | None = None, fields: Fields = None
    ) -> Any:
        indexer = BlockIndexer(selection, self.shape, self._grid, self._grid)
        return self._read(indexer, out, fields)

    @_writes("Write whole storage blocks (as `a.blocks[...] = value`).", "block")
    def set_block_selection(
        self, selection: Selection, value: npt.ArrayLike, fields: Fields = None
    ) -> None:
        indexer = BlockIndexer(selection, self.shape, self._grid, self._grid)
        self._write(indexer, value, fields)


class _Selector:
    """`a.oindex`, `a.vindex`, `a.blocks`: square brackets over a get/set selection method."""

    def __init__(self, get: Callable[..., Any], set: Callable[..., None]) -> None:
        self._get, self._set = get, set

    def __getitem__(self, selection: Selection) -> Any:
        """Read the selection."""
        fields, selection = pop_fields(selection)
        return self._get(selection, fields=fields)

    def __setitem__(self, selection: Selection, value: npt.ArrayLike) -> None:
        """Write `value` to the selection."""
        fields, selection = pop_fields(selection)
        self._set(selection, value, fields=fields)


def _one_int_each(selections: list[Any], ndim: int) -> tuple[Any, ...] | None:
    """The orthogonal selection that reads `selections` stacked along a first axis, when
    each is one int along the first axis and the same ints and slices along the others;
    else None."""
    if not selections or ndim == 0:
        return None
    firsts, rests = [], set()
    for sel in selections:
        first, *rest = sel if isinstance(sel, tuple) else (sel,)
        if not is_int(first) or not all(
            r is Ellipsis or type(r) is slice or is_int(r) for r in rest
        ):
            return None
        # (As a Python int: numpy < 2 compares a uint64 with an int as float64, in which
        # 2**63 - 1 is 2**63.)
        first = operator.index(first)
        if not -INT64_MAX - 1 <= first <= INT64_MAX:
            return None  # (out of bounds: read alone, it raises the IndexError numpy gives)
        firsts.append(first)
        rests.add(tuple((r.start, r.stop, r.step) if type(r) is slice else r for r in rest))
        if len(rests) > 1:
            return None
    rest = selections[0][1:] if isinstance(selections[0], tuple) else ()
    return (np.asarray(firsts, dtype=np.int64), *rest)
