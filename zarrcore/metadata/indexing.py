"""Selections of every indexing mode, projected onto a chunk grid.

The grid comes per axis (`AxisChunks`): a chunk length, or the runs of an axis of edge
lengths (`AxisRuns`, a rectilinear grid). Ints and slices on such an axis are planned over its
runs (_indexing.bounded_slice_plan); int arrays and points are planned as on a regular
axis of its longest chunk, each chunk placed at the start of its own stretch of that length
(`_stretched`), which keeps the chunk indices and in-chunk positions.

An indexer has `shape` (the result's shape), `drop_shape` (the shape of the buffer the
pipeline fills: newaxis dims left out, vectorized points flattened), `nitems`, and
`projections()`, which yields one ChunkProjection per chunk touched. Out selections are
always slices, so the engine writes each chunk's share into a view of its buffer: the
buffer holds int-array axes and points grouped by chunk. When that is not the result's order
(`permuted`), `unpermute(buffer, out)` puts it in the result's order (still drop_shape) and
`permute(values)` the buffer's. The compiled reads need no buffer: their pieces may list
output positions, so they take them in the result's order (`result_plans`; for points,
PointGroups.order). The per-chunk arithmetic and the grouping of points by chunk run in
_indexing.pyx.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeGuard, Union, cast

import numpy as np
import numpy.typing as npt

from .._native import indexing as _indexing
from .._native import memory as _memory
from ..errors import SelectionError, ShapeMismatchError
from .common import INT64_MAX
from .grid import AxisChunks, AxisRuns, chunk_start, chunks_holding
from .types import Selection

__all__ = [
    "BasicIndexer",
    "BlockIndexer",
    "ChunkProjection",
    "CoordinateIndexer",
    "Indexer",
    "OrthogonalIndexer",
    "Span",
    "SpanIndexer",
    "check_out",
    "coordinate_indexer",
    "expand_selection",
    "is_basic_selection",
    "is_int",
    "mask_indexer",
    "numpy_indexer",
    "pop_fields",
    "selection_spans",
]


@dataclass(frozen=True)
class ChunkProjection:
    """One chunk's share of a selection.

    `chunk[chunk_selection]` (ints, slices, or int arrays numpy reads as intended) has the shape
    of `out[out_selection]` (ints and slices: a view), out having the indexer's drop_shape.
    `complete` says the selection covers every in-bounds element of the chunk once, in C order.
    """

    coords: tuple[int, ...]
    chunk_selection: tuple[Any, ...]  # ints, slices or int arrays
    out_selection: tuple[Any, ...]
    complete: bool


def check_out(out: npt.NDArray[Any], shape: tuple[int, ...], what: str) -> None:
    """Refuse an `out` that a read cannot fill, before anything is written into it: no numpy
    array (TypeError), one not of `shape` (ShapeMismatchError), or read-only (ValueError, as
    numpy's). `what` names the array in the message."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{what}: out must be a numpy array, not {type(out).__name__}")
    if out.shape != shape:
        raise ShapeMismatchError(f"{what}: out has shape {out.shape}, selection has shape {shape}")
    if not out.flags.writeable:
        raise ValueError(
            f"{what}: out is read-only (its flags.writeable is False); a read "
            f"writes into it, so pass a writable array"
        )


def is_int(x: object) -> bool:
    if type(x) is int:  # the common case, without the abstract-class checks below
        return True
    return isinstance(x, (numbers.Integral, np.integer)) and not isinstance(x, (bool, np.bool_))


def _dim_int(index: Any, dim_len: int, axis: int) -> int:
    i = int(index)
    if i < -dim_len or i >= dim_len:
        raise SelectionError(f"index {i} is out of bounds for axis {axis} with size {dim_len}")
    return i + dim_len if i < 0 else i


def _index_array(item: npt.ArrayLike) -> npt.NDArray[Any]:
    """`item` (list or array) as an integer or boolean ndarray, as numpy accepts it."""
    a = np.asarray(item)
    if a.dtype == bool:
        return a
    if a.size == 0 and a.dtype.kind == "f" and not isinstance(item, np.ndarray):
        # An empty list indexes nothing; numpy reads it as an int array.
        return a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise SelectionError("arrays used as indices must be of integer (or boolean) type")
    if a.dtype.kind == "u" and a.size and int(a.max()) > INT64_MAX:
        # (Not wrapped around to a negative index as a cast to int64 would. Compared as a
        # Python int: numpy < 2 compares a uint64 with an int as float64, 2**63 == 2**63 - 1.)
        raise SelectionError(
            f"index {int(a.max())} is out of bounds for any axis (the "
            f"longest holds 2**63 - 1 items)"
        )
    return a


def _check_bool_axes(mask: npt.NDArray[np.bool_], shape: Sequence[int], axis: int) -> None:
    for d, (m, s) in enumerate(zip(mask.shape, shape)):
        # numpy lets an empty boolean axis stand against any length.
        if m != s and m != 0:
            raise SelectionError(
                f"boolean index did not match indexed array along axis {axis + d}; "
                f"size of axis is {s} but size of corresponding boolean axis is {m}"
            )


def expand_selection(selection: Selection, ndim: int) -> tuple[Any, ...]:
    """Normalize to a tuple of one item per axis, plus None for newaxis; Ellipsis expanded."""
    if type(selection) is tuple and len(selection) == ndim and _all_slices(selection):
        return selection  # already one slice per axis (the common case, kept cheap)
    if not isinstance(selection, tuple):
        selection = (selection,)
    n_ellipsis = sum(1 for s in selection if s is Ellipsis)
    if n_ellipsis > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for s in selection if s is not None and s is not Ellipsis)
    if n_real > ndim:
        raise SelectionError(
            f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed"
        )
    out: list[Any] = []
    for s in selection:
        if s is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(s)
    if n_ellipsis == 0:
        out.extend([slice(None)] * (ndim - n_real))
    return tuple(out)


def _all_slices(items: Sequence[object]) -> bool:
    for s in items:
        if type(s) is not slice:
            return False
    return True


def _sample_int(selection: Selection, ndim: int) -> Any:
    """The int of a selection that is an int along the first axis, then slices (`a[i]`,
    `a[i, j:k]`); None for any other."""
    if type(selection) is tuple:
        if 0 < len(selection) <= ndim and is_int(selection[0]) and _all_slices(selection[1:]):
            return selection[0]
        return None
    return selection if ndim and is_int(selection) else None


def _only_slices(selection: Selection) -> bool:
    """Whether `selection` is a slice or a tuple of slices: the common case, told apart
    before the general parsing."""
    return type(selection) is slice or type(selection) is tuple and _all_slices(selection)


def is_basic_selection(selection: Selection) -> bool:
    if _only_slices(selection):
        return True
    items = selection if isinstance(selection, tuple) else (selection,)
    return all(s is None or s is Ellipsis or isinstance(s, slice) or is_int(s) for s in items)


def pop_fields(selection: Selection) -> tuple[str | list[str] | None, Selection]:
    """Split structured-dtype field names (str, or a list of str) out of a selection."""
    if _only_slices(selection):
        return None, selection
    if isinstance(selection, str):
        return selection, Ellipsis
    if isinstance(selection, list) and selection and all(isinstance(f, str) for f in selection):
        return selection, Ellipsis
    if not isinstance(selection, tuple):
        return None, selection
    fields = [
        f
        for f in selection
        if isinstance(f, str) or (isinstance(f, list) and f and all(isinstance(x, str) for x in f))
    ]
    if not fields:
        return None, selection
    if len(fields) > 1:
        raise SelectionError("give the fields as one name or one list of names")
    rest = tuple(s for s in selection if s is not fields[0])
    return fields[0], rest if rest else Ellipsis


class OrthogonalIndexer:
    """Outer-product selection (np.ix_ semantics): per axis an int, a slice with any step, or a
    1-D int array (unsorted, repeated, negative allowed) or bool array; newaxis allowed."""

    arrays_allowed = True

    def __init__(
        self, selection: Selection, shape: Sequence[int], chunk_shape: Sequence[AxisChunks]
    ) -> None:
        # The items of axes indexed by arrays (see buffer_positions).
        self._array_items: dict[int, tuple[Any, int]] = {}
        self.plans: list[_indexing.AxisPlan]
        self.shape: tuple[int, ...]
        self.drop_shape: tuple[int, ...]
        if type(selection) is slice:  # `a[i:j]`: one slice, of the first axis
            selection = (selection,)
        if (
            type(selection) is tuple
            and len(selection) <= len(shape)
            and _all_slices(selection)
            and _regular(chunk_shape)
        ):
            self.scalar = False
            items = selection + (slice(None),) * (len(shape) - len(selection))
            self.plans, self.shape = _indexing.slices_plans(items, shape, chunk_shape)
            self.drop_shape = self.shape
            self.result_plans = self.plans  # (no arrays: no call on every small read)
            return
        first = _sample_int(selection, len(shape))
        if first is not None and _regular(chunk_shape):
            # `a[i]`, `a[i, j:k]`: a sample along the first axis, planned in two calls.
            rest = selection[1:] if type(selection) is tuple else ()
            rest += (slice(None),) * (len(shape) - 1 - len(rest))
            plans, self.shape = _indexing.slices_plans(rest, shape[1:], chunk_shape[1:])
            self.plans = [
                _indexing.int_plan(_dim_int(first, shape[0], 0), chunk_shape[0], shape[0]),
                *plans,
            ]
            self.drop_shape = self.shape
            self.result_plans = self.plans
            self.scalar = len(shape) == 1
            return
        items = expand_selection(selection, len(shape))
        # As numpy: ints on every axis read a scalar, unless an Ellipsis asks for an array.
        self.scalar = (
            not _all_slices(items)
            and all(is_int(item) for item in items)
            and not (
                isinstance(selection, tuple)
                and any(s is Ellipsis for s in selection)
                or selection is Ellipsis
            )
        )
        self.plans = []
        result_shape: list[int] = []
        drop_shape: list[int] = []
        axis = 0
        for item in items:
            if item is None:
                result_shape.append(1)
                continue
            plan = self._axis_plan(item, shape[axis], chunk_shape[axis], axis)
            if plan.kept and not isinstance(item, slice):
                self._array_items[len(self.plans)] = (item, shape[axis])
            if plan.kept:
                n = sum(plan.count)
                result_shape.append(n)
                drop_shape.append(n)
            self.plans.append(plan)
            axis += 1
        self.shape = tuple(result_shape)
        self.drop_shape = tuple(drop_shape)

    def _axis_plan(
        self, item: Any, dim_len: int, chunk_len: AxisChunks, axis: int
    ) -> _indexing.AxisPlan:
        """The plan of one axis; `chunk_len` is its chunk length, or its runs."""
        if isinstance(item, slice):
            if isinstance(chunk_len, AxisRuns):
                return _indexing.bounded_slice_plan(
                    *item.indices(dim_len),
                    chunk_len.lengths,
                    chunk_len.starts,
                    chunk_len.firsts,
                    dim_len,
                )
            return _indexing.slice_plan(*item.indices(dim_len), chunk_len, dim_len)
        if is_int(item):
            return _int_plan(_dim_int(item, dim_len, axis), chunk_len, dim_len)
        if not self.arrays_allowed:
            raise SelectionError(
                f"unsupported index {item!r} for basic selection; use .oindex or .vindex for arrays"
            )
        a = _index_array(item)
        if a.dtype == bool:
            if a.ndim != 1:
                raise SelectionError("orthogonal selection takes 1-D boolean arrays, one per axis")
            _check_bool_axes(a, (dim_len,), axis)
            a = np.flatnonzero(a)
        elif a.ndim == 0:
            return _int_plan(_dim_int(a, dim_len, axis), chunk_len, dim_len)
        elif a.ndim != 1:
            raise SelectionError("orthogonal selection takes 1-D integer arrays, one per axis")
        if isinstance(chunk_len, AxisRuns):
            stretched, length, total = _stretched(a, chunk_len, dim_len, axis)
            return _indexing.array_plan(stretched, length, total, axis)
        return _indexing.array_plan(
            np.ascontiguousarray(a, dtype=np.int64), chunk_len, dim_len, axis
        )

    @property
    def nitems(self) -> int:
        return math.prod(self.shape)

    def array_positions(self, axis: int) -> npt.NDArray[np.intp] | None:
        """The array positions along `axis` in the result's order, when an int or bool array
        indexes it; else None."""
        if axis not in self._array_items:
            return None
        item, dim_len = self._array_items[axis]
        a = _index_array(item)
        a = np.flatnonzero(a) if a.dtype == bool else a.reshape(-1).astype(np.int64)
        return np.where(a < 0, a + dim_len, a)  # (the plan checked the bounds)

    @functools.cached_property
    def result_plans(self) -> list[_indexing.AxisPlan]:
        """`plans` with their output positions in the result's order, for the compiled
        reads (listed pieces, not views): `plans` themselves unless `permuted`."""
        return [p if p.order is None else _indexing.in_result_order(p) for p in self.plans]

    @property
    def dim_pieces(self) -> list[list[tuple[int, Any, Any, bool]]]:
        """Per axis, the (chunk, chunk selection, out selection, complete) of each chunk."""
        return [list(zip(p.chunks, p.chunk_sel, p.out_sel, p.complete)) for p in self.plans]

    @property
    def _orders(self) -> list[tuple[int, npt.NDArray[np.int64]]]:
        kept = [p for p in self.plans if p.kept]
        return [(axis, p.order) for axis, p in enumerate(kept) if p.order is not None]

    @property
    def permuted(self) -> bool:
        for p in self.plans:
            if p.order is not None:
                return True
        return False

    def unpermute(self, buffer: npt.NDArray[Any], out: npt.NDArray[Any]) -> None:
        """Put `buffer` (the buffer's order) into `out` (the result's order, same shape)."""
        orders = self._orders
        for axis, order in orders[:-1]:
            result = _memory.empty(buffer.shape, buffer.dtype)
            result[(slice(None),) * axis + (order,)] = buffer
            buffer = result
        last = (slice(None),) * orders[-1][0] + (orders[-1][1],) if orders else Ellipsis
        out[last] = buffer

    def permute(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        for axis, order in self._orders:
            values = np.take(values, order, axis=axis)
        return values

    def projections(self) -> Iterator[ChunkProjection]:
        return _indexing.orthogonal_projections(self.plans, ChunkProjection)


class BasicIndexer(OrthogonalIndexer):
    """Basic numpy selection: ints, slices with any step, Ellipsis and newaxis."""

    arrays_allowed = False


class Span(NamedTuple):
    """The positions one axis of a basic selection reads: `length` from `first` by `step`,
    in the result's order from the last when `descending`; an int's axis is not `kept`."""

    first: int
    step: int
    length: int
    descending: bool
    kept: bool


def selection_spans(selection: Selection, shape: Sequence[int]) -> tuple[Span, ...] | None:
    """Per axis the Span of a selection of ints and slices only (no Ellipsis nor newaxis),
    that reads at least one element; None for any other, which the indexers parse (and
    refuse with their own errors)."""
    items = selection if type(selection) is tuple else (selection,)
    if not shape or len(items) > len(shape):
        return None
    spans = []
    for item, n in zip(items, shape):
        if type(item) is slice:
            start, stop, step = item.indices(n)
            count = len(range(start, stop, step))
            if not count:
                return None
            if step > 0:
                spans.append(Span(start, step, count, False, True))
            else:
                spans.append(Span(start + (count - 1) * step, -step, count, True, True))
        elif type(item) is int or isinstance(item, np.integer):
            i = int(item) + n if item < 0 else int(item)
            if not 0 <= i < n:
                return None
            spans.append(Span(i, 1, 1, False, False))
        else:
            return None
    return (
        (*spans, *(Span(0, 1, n, False, True) for n in shape[len(items) :] if n))
        if all(shape[len(items) :])
        else None
    )


class SpanIndexer(BasicIndexer):
    """A selection of ints and slices (selection_spans) known by its spans, which a read of
    many selections (ChunkEngine.read_many) groups by region; planned over the chunks only
    when it is read on its own."""

    def __init__(
        self, spans: tuple[Span, ...], shape: Sequence[int], chunk_shape: Sequence[AxisChunks]
    ) -> None:
        self.spans = spans
        self._array_items = {}
        self._array_shape, self._chunk_shape = tuple(shape), tuple(chunk_shape)
        self.shape = self.drop_shape = tuple(s.length for s in spans if s.kept)
        self.scalar = not self.shape and len(spans) > 0

    @functools.cached_property
    def plans(self) -> list[_indexing.AxisPlan]:  # type: ignore[override]
        items = tuple(
            slice(
                s.first + (s.length - 1) * s.step,
                None if s.first - s.step < 0 else s.first - s.step,
                -s.step,
            )
            if s.descending
            else slice(s.first, s.first + (s.length - 1) * s.step + 1, s.step)
            if s.kept
            else s.first
            for s in self.spans
        )
        return BasicIndexer(items, self._array_shape, self._chunk_shape).plans


class BlockIndexer(BasicIndexer):
    """Selection of whole storage blocks (ints and step-1 slices over the block grid), read as
    the basic selection of the elements those blocks cover."""

    def __init__(
        self,
        selection: Selection,
        shape: Sequence[int],
        block_shape: Sequence[AxisChunks],
        chunk_shape: Sequence[AxisChunks],
    ) -> None:
        items = expand_selection(selection, len(shape))
        if any(item is None for item in items):
            raise SelectionError("block selections do not take newaxis")
        region: list[slice] = []
        for axis, (item, dim_len, block) in enumerate(zip(items, shape, block_shape)):
            nblocks = chunks_holding(block, dim_len)
            if isinstance(item, slice):
                start, stop, step = item.indices(nblocks)
                if step != 1:
                    raise SelectionError("block selections take slices with step 1 only")
                stop = max(start, stop)
            elif is_int(item):
                start = _dim_int(item, nblocks, axis)
                stop = start + 1
            else:
                raise SelectionError(f"unsupported block selection {item!r}: use ints and slices")
            region.append(slice(chunk_start(block, start), min(chunk_start(block, stop), dim_len)))
        super().__init__(tuple(region), shape, chunk_shape)


class CoordinateIndexer:
    """Vectorized selection: points given by int arrays (one per axis) broadcast together, as in
    numpy's `x[i0, i1, ...]`. The engine's buffer holds the points flattened."""

    def __init__(
        self,
        arrays: Sequence[npt.NDArray[Any]],
        shape: Sequence[int],
        chunk_shape: Sequence[AxisChunks],
    ) -> None:
        if len(arrays) != len(shape):
            raise SelectionError(
                f"coordinate selection needs {len(shape)} index arrays, got {len(arrays)}"
            )
        for axis, a in enumerate(arrays):
            if not isinstance(a, np.ndarray) or a.dtype.kind not in "iu":
                raise SelectionError("coordinate selections take integer arrays, one per axis")
            if a.ndim == 0:
                # numpy checks ints even when the arrays broadcast to nothing.
                _dim_int(a, shape[axis], axis)
        self.shape = _broadcast_shape([a.shape for a in arrays])
        broadcast = np.broadcast_arrays(*arrays)
        self.scalar = not self.shape
        n = math.prod(self.shape)
        self.drop_shape = (n,)
        # (Views of the caller's arrays when they are int64 already: points take no copy.)
        self._points = [np.ascontiguousarray(a, dtype=np.int64).reshape(n) for a in broadcast]
        self._array_shape = tuple(shape)
        for axis, (p, dim_len) in enumerate(zip(self._points, shape)):
            if n and (p.min() < -dim_len or p.max() >= dim_len):
                bad = p[(p < -dim_len) | (p >= dim_len)][0]
                raise SelectionError(
                    f"index {bad} is out of bounds for axis {axis} with size {dim_len}"
                )
        self._chunk_shape = list(chunk_shape)

    @property
    def nitems(self) -> int:
        return self.drop_shape[0]

    @functools.cached_property
    def groups(self) -> _indexing.PointGroups | None:
        """The points grouped by chunk (_indexing.PointGroups), None when there are none;
        grouped when first asked for."""
        if not self.nitems:
            return None
        flat, shape, chunk_shape = list(self._points), list(self._array_shape), self._chunk_shape
        if not _regular(chunk_shape):
            chunk_shape = list(chunk_shape)
            for axis, runs in enumerate(chunk_shape):
                if isinstance(runs, AxisRuns):
                    flat[axis], chunk_shape[axis], shape[axis] = _stretched(
                        flat[axis], runs, shape[axis], axis
                    )
        return _indexing.group_points(flat, shape, cast(Sequence[int], chunk_shape))

    def groups_by(self, chunk_shape: Sequence[int]) -> _indexing.PointGroups:
        """The points (at least one) grouped by the chunks of the regular grid `chunk_shape`
        over the array, as the inner chunks of a sharded array lie: its shards' grouping
        (`groups`) is then never made."""
        return _indexing.group_points(self._points, self._array_shape, chunk_shape)

    @property
    def permuted(self) -> bool:
        return self._order is not None

    @property
    def _order(self) -> npt.NDArray[np.int64] | None:
        """The input point of each buffer position, None when they are in input order."""
        return None if self.groups is None else self.groups.order

    def unpermute(self, buffer: npt.NDArray[Any], out: npt.NDArray[Any]) -> None:
        """Put `buffer` (the buffer's order) into `out` (the result's order, same shape)."""
        order = self._order
        out[Ellipsis if order is None else order] = buffer

    def permute(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        order = self._order
        return values if order is None else values[order]

    def projections(self) -> Iterator[ChunkProjection]:
        if self.groups is None:
            return iter(())
        return _indexing.point_projections(self.groups, ChunkProjection)


def _int_plan(i: int, chunk_len: AxisChunks, dim_len: int) -> _indexing.AxisPlan:
    """The plan of an in-bounds int on an axis of `chunk_len` (a length, or runs)."""
    if isinstance(chunk_len, AxisRuns):
        return _indexing.bounded_int_plan(
            i, chunk_len.lengths, chunk_len.starts, chunk_len.firsts, dim_len
        )
    return _indexing.int_plan(i, chunk_len, dim_len)


def _regular(chunks: Sequence[AxisChunks]) -> TypeGuard[Sequence[int]]:
    """Is every axis of `chunks` one chunk length?"""
    for c in chunks:
        if isinstance(c, AxisRuns):
            return False
    return True


def _stretched(
    positions: npt.NDArray[Any], runs: AxisRuns, dim_len: int, axis: int
) -> tuple[npt.NDArray[np.int64], int, int]:
    """Positions along an axis of chunk `runs` (negative ones from the end; SelectionError
    naming `axis` outside `dim_len`) as positions on a regular axis of its longest chunk
    `length`, each chunk at the start of its own stretch: (positions, length, its extent)."""
    p = np.asarray(positions, dtype=np.int64).reshape(-1)
    bad = (p < -dim_len) | (p >= dim_len)
    if bad.any():
        raise SelectionError(
            f"index {p[bad][0]} is out of bounds for axis {axis} with size {dim_len}"
        )
    p = np.where(p < 0, p + dim_len, p)
    # Only the chunks holding part of the array count, not those a shrinking resize left
    # beyond its end: the grid the points are grouped over has as many chunks as there are.
    count = chunks_holding(runs, dim_len)
    length = runs.longest_of(count) if count else 1
    if count * length > INT64_MAX:
        raise SelectionError(
            f"int arrays and points on axis {axis}: its {count} chunks of up "
            f"to {length} elements are too many for such selections"
        )
    chunk = runs.chunk_of(p)
    return np.ascontiguousarray(chunk * length + (p - runs.start(chunk))), length, count * length


def coordinate_indexer(
    selection: Selection, shape: Sequence[int], chunk_shape: Sequence[AxisChunks]
) -> CoordinateIndexer:
    """Indexer of a coordinate selection: one int or int array (or list) per axis."""
    items = selection if isinstance(selection, tuple) else (selection,)
    arrays = [_index_array(s) for s in items]
    if any(a.dtype == bool for a in arrays):
        raise SelectionError("coordinate selections take integer arrays; use a mask selection")
    return CoordinateIndexer(arrays, shape, chunk_shape)


def mask_indexer(
    mask: npt.ArrayLike | tuple[npt.ArrayLike],
    shape: Sequence[int],
    chunk_shape: Sequence[AxisChunks],
) -> CoordinateIndexer:
    """Indexer of a boolean mask of the array's shape: the true elements in C order."""
    if isinstance(mask, tuple) and len(mask) == 1:
        mask = mask[0]
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise SelectionError("mask selections take a boolean array")
    if mask.shape != tuple(shape):
        raise SelectionError(f"mask has shape {mask.shape}, the array {tuple(shape)}")
    return CoordinateIndexer(list(np.nonzero(mask)), shape, chunk_shape)


def numpy_indexer(
    selection: Selection, shape: Sequence[int], chunk_shape: Sequence[AxisChunks]
) -> Indexer:
    """The indexer whose result is numpy's `x[selection]`, for any selection numpy accepts
    (basic, advanced int/bool arrays, mixed with slices, ints, Ellipsis and newaxis)."""
    if is_basic_selection(selection):
        return BasicIndexer(selection, shape, chunk_shape)
    items = list(selection) if isinstance(selection, tuple) else [selection]
    for i, item in enumerate(items):
        if not (item is None or item is Ellipsis or isinstance(item, slice) or is_int(item)):
            a = _index_array(item)
            if a.dtype == bool and a.ndim == 0:
                raise SelectionError("boolean scalar indices are not supported")
            # A 0-d int array indexes like an int.
            items[i] = int(a) if a.ndim == 0 else a
    consumed = sum(
        item.ndim if isinstance(item, np.ndarray) and item.dtype == bool else 1
        for item in items
        if item is not None and item is not Ellipsis
    )
    if consumed > len(shape):
        raise SelectionError(
            f"too many indices for array: array is {len(shape)}-dimensional, "
            f"but {consumed} were indexed"
        )
    if sum(1 for item in items if item is Ellipsis) > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    # Expand Ellipsis, and each k-d bool array into the k int arrays of its true elements.
    expanded: list[Any] = []
    axis = 0
    for item in items:
        if item is Ellipsis:
            n = len(shape) - consumed
            expanded.extend([slice(None)] * n)
            axis += n
        elif isinstance(item, np.ndarray) and item.dtype == bool:
            _check_bool_axes(item, shape[axis : axis + item.ndim], axis)
            expanded.extend(np.nonzero(item))
            axis += item.ndim
        else:
            expanded.append(item)
            axis += item is not None
    expanded.extend([slice(None)] * (len(shape) - axis))

    arrays = [i for i, item in enumerate(expanded) if isinstance(item, np.ndarray)]
    if not arrays:
        return BasicIndexer(tuple(expanded), shape, chunk_shape)
    advanced = [
        i for i, item in enumerate(expanded) if isinstance(item, np.ndarray) or is_int(item)
    ]
    # numpy judges adjacency on the selection as written: an Ellipsis separates even when it
    # stands for no axis, and a k-d bool array is one item.
    written = [i for i, item in enumerate(items) if isinstance(item, np.ndarray) or is_int(item)]
    adjacent = written[-1] - written[0] == len(written) - 1
    broadcast = _broadcast_shape([np.shape(expanded[i]) for i in advanced])
    basic = [
        1 if item is None else len(range(*item.indices(shape[_axis_of(expanded, i)])))
        for i, item in enumerate(expanded)
        if item is None or isinstance(item, slice)
    ]
    lead = (
        sum(
            1
            for i, item in enumerate(expanded[: advanced[0]])
            if item is None or isinstance(item, slice)
        )
        if adjacent
        else 0
    )
    result_shape = tuple(basic[:lead]) + broadcast + tuple(basic[lead:])

    if len(arrays) == 1 and adjacent:
        # One array, ints beside it: the orthogonal selection of the flattened array.
        flat = list(expanded)
        flat[arrays[0]] = expanded[arrays[0]].reshape(-1)
        indexer = OrthogonalIndexer(tuple(flat), shape, chunk_shape)
        indexer.shape = result_shape
        return indexer

    # General case: one coordinate array per axis, each shaped to broadcast to the result.
    coords: list[npt.NDArray[Any]] = []
    ndim_out = len(result_shape)
    basic_pos = 0
    for i, item in enumerate(expanded):
        if item is None:
            basic_pos += 1
            continue
        if i in advanced:
            if is_int(item):
                # numpy checks ints even when the arrays broadcast to nothing.
                axis = _axis_of(expanded, i)
                _dim_int(item, shape[axis], axis)
            a = np.asarray(item)
            a = a.reshape((1,) * (len(broadcast) - a.ndim) + a.shape)
            coords.append(a.reshape((1,) * lead + a.shape + (1,) * (ndim_out - lead - a.ndim)))
        else:
            r = basic_pos + (len(broadcast) if basic_pos >= lead else 0)
            axis_range = np.arange(*item.indices(shape[_axis_of(expanded, i)]))
            coords.append(axis_range.reshape((1,) * r + (-1,) + (1,) * (ndim_out - r - 1)))
            basic_pos += 1
    return CoordinateIndexer(coords, shape, chunk_shape)


def _broadcast_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise SelectionError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes "
            + " ".join(str(s) for s in shapes)
        ) from None


def _axis_of(items: Sequence[object], position: int) -> int:
    """The array axis indexed by items[position] (newaxis items index none)."""
    return sum(1 for item in items[:position] if item is not None)


#: What the array's reads and writes take: the chunks a selection touches, and its shapes.
Indexer = Union[OrthogonalIndexer, CoordinateIndexer]
