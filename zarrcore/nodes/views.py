"""Lazy views of an Array: selections, transposes and selections by dimension name compose
into one index transform without I/O, and a read or write through a view is one selection of
the array, planned and run by the engine like any other.

An `IndexTransform` maps a view's coordinates to the array's: per array axis, a constant, an
affine map `offset + stride * i[dim]` of one view axis, or an integer array of the view's rank
whose length-1 axes broadcast (the index arrays stay the size of their own axes, never of the
whole view, until a vectorized read needs the points).
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Union

import numpy as np
import numpy.typing as npt

from ..errors import SelectionError, ShapeMismatchError, ViewOutsideArrayError
from .array import Array

__all__ = ["Affine", "IndexTransform", "Labels", "LazyArray", "OutputMap", "Plan"]


class Affine(NamedTuple):
    """Array coordinate `offset + stride * i` of view axis `dim`."""

    dim: int
    offset: int
    stride: int


# One output axis: a constant, an affine map of one input axis, or an index array (input rank,
# length-1 axes broadcast).
OutputMap = Union[int, Affine, np.ndarray]
Labels = tuple[Union[str, None], ...]


class IndexTransform:
    """A map from a view's coordinates to an array's. Immutable; every operation returns a new
    transform.

    Parameters
    ----------
    shape : tuple of int
        The view's shape.
    labels : tuple of str or None
        The view's dimension names (None for an unnamed axis).
    maps : tuple
        One per array axis: an int (a constant), an `Affine` map of one view axis, or an
        integer array of the view's rank (length-1 axes broadcast).
    """

    __slots__ = ("shape", "labels", "maps")

    def __init__(self, shape: tuple[int, ...], labels: Labels, maps: tuple[OutputMap, ...]) -> None:
        self.shape = shape
        self.labels = labels
        self.maps = maps

    @classmethod
    def identity(
        cls, shape: Sequence[int], labels: Sequence[str | None] | None = None
    ) -> IndexTransform:
        shape = tuple(shape)
        names: Labels = tuple(labels) if labels is not None else (None,) * len(shape)
        return cls(shape, names, tuple(Affine(d, 0, 1) for d in range(len(shape))))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.shape, self.labels, self.maps)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexTransform):
            return NotImplemented
        return self.token() == other.token()

    def __hash__(self) -> int:
        return hash(self.token())

    def token(self) -> str:
        """A digest of the transform, alike in every process.

        Returns
        -------
        str
            Hex digest of the shape, labels and maps.
        """
        digest = hashlib.sha1(repr((self.shape, self.labels)).encode())
        for m in self.maps:
            if isinstance(m, np.ndarray):
                digest.update(repr(m.shape).encode())
                digest.update(np.ascontiguousarray(m, dtype=np.int64).tobytes())
            else:
                digest.update(repr(m).encode())
        return digest.hexdigest()

    # -- composition ------------------------------------------------------------
    def index(self, key: Any, mode: str = "numpy") -> IndexTransform:
        """The transform of `view[key]`.

        Parameters
        ----------
        key : selection
            Ints, slices, Ellipsis, newaxis, int or bool arrays.
        mode : {"numpy", "orthogonal", "vectorized"}
            numpy's rules; each array along its own axis; or arrays broadcast together with
            their axes first.

        Returns
        -------
        IndexTransform
            From the selection's coordinates to the array's.
        """
        return self.compose(_selection_transform(key, self.shape, self.labels, mode))

    def compose(self, step: IndexTransform) -> IndexTransform:
        """This transform applied after `step`.

        Parameters
        ----------
        step : IndexTransform
            A transform whose outputs are this one's inputs.

        Returns
        -------
        IndexTransform
            From `step`'s inputs to this transform's outputs.
        """
        if len(step.maps) != self.ndim:
            raise ValueError(
                f"cannot compose a transform of {len(step.maps)} outputs with one "
                f"of {self.ndim} inputs"
            )
        return IndexTransform(
            step.shape, step.labels, tuple(_compose_map(m, step) for m in self.maps)
        )

    def transpose(self, axes: Sequence[int]) -> IndexTransform:
        """The view's axes reordered.

        Parameters
        ----------
        axes : sequence of int
            New axis i is old axis `axes[i]`.

        Returns
        -------
        IndexTransform
            The transform with its inputs permuted.
        """
        axes = tuple(operator.index(a) for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} are not a permutation of {self.ndim} axes")
        where = {old: new for new, old in enumerate(axes)}
        maps: list[OutputMap] = []
        for m in self.maps:
            if isinstance(m, Affine):
                maps.append(Affine(where[m.dim], m.offset, m.stride))
            elif isinstance(m, np.ndarray):
                maps.append(m.transpose(axes))
            else:
                maps.append(m)
        return IndexTransform(
            tuple(self.shape[a] for a in axes), tuple(self.labels[a] for a in axes), tuple(maps)
        )

    def axis(self, name: str | int) -> int:
        """An input axis by name or number.

        Parameters
        ----------
        name : str or int
            A dimension name, or an axis number (negative from the end).

        Returns
        -------
        int
            The axis number.
        """
        if isinstance(name, str):
            if name not in self.labels:
                raise KeyError(
                    f"no dimension named {name!r}; the view's dimensions are {self.labels}"
                )
            return self.labels.index(name)
        axis = operator.index(name)
        if not -self.ndim <= axis < self.ndim:
            raise SelectionError(f"axis {axis} is out of bounds for {self.ndim} dimensions")
        return axis % self.ndim

    def __repr__(self) -> str:
        maps = ", ".join(
            f"array{m.shape}" if isinstance(m, np.ndarray) else repr(m) for m in self.maps
        )
        return f"IndexTransform(shape={self.shape}, labels={self.labels}, maps=({maps}))"

    # -- the selection of the array ---------------------------------------------
    def extent(self) -> tuple[tuple[int, int], ...]:
        """Per array axis, the lowest and the highest coordinate the view maps to (an empty
        view maps to none: (0, -1) on every axis).

        Returns
        -------
        tuple of (int, int)
        """
        if any(n == 0 for n in self.shape):
            return ((0, -1),) * len(self.maps)
        extent = []
        for m in self.maps:
            if isinstance(m, Affine):
                last = m.offset + m.stride * (self.shape[m.dim] - 1)
                extent.append((min(m.offset, last), max(m.offset, last)))
            elif isinstance(m, np.ndarray):
                extent.append((int(m.min()), int(m.max())))
            else:
                extent.append((m, m))
        return tuple(extent)

    def plan(self) -> Plan:
        """The one selection of the array that this transform reads or writes.

        Returns
        -------
        Plan
            A basic, orthogonal or coordinate selection and how its result becomes the view's.
        """
        axes = [m.dim for m in self.maps if isinstance(m, Affine)]
        arrays = [m for m in self.maps if isinstance(m, np.ndarray)]
        # An orthogonal plan: every index array varies along one view axis, and no view axis
        # feeds two array axes.
        for m in arrays:
            varying = [d for d, n in enumerate(m.shape) if n != 1]
            if len(varying) != 1:
                break
            axes.append(varying[0])
        else:
            if len(set(axes)) == len(axes):
                return self._region_plan("orthogonal" if arrays else "basic")
        points = tuple(np.broadcast_to(_index_array(m, self.shape), self.shape) for m in self.maps)
        return Plan("coordinate", points, (), tuple(range(self.ndim)), self.shape)

    def _region_plan(self, kind: str) -> Plan:
        selection: list[Any] = []
        dims: list[int] = []  # the view axis of each axis of the array's result
        for m in self.maps:
            if isinstance(m, Affine):
                n = self.shape[m.dim]
                stop: int | None = m.offset + m.stride * n
                if n == 0:
                    selection.append(slice(0, 0, 1))
                else:
                    selection.append(
                        slice(
                            m.offset,
                            None if stop < 0 else stop,  # type: ignore[operator]
                            m.stride,
                        )
                    )
                dims.append(m.dim)
            elif isinstance(m, np.ndarray):
                dim = next(d for d, n in enumerate(m.shape) if n != 1)
                selection.append(m.reshape(-1))
                dims.append(dim)
            else:
                selection.append(m)
        order = tuple(sorted(range(len(dims)), key=dims.__getitem__))
        inserted = tuple(d for d in range(self.ndim) if d not in dims)
        return Plan(kind, tuple(selection), inserted, order, self.shape)


class Plan(NamedTuple):
    """One selection of the array (`kind`: basic, orthogonal or coordinate) and how its result
    becomes the view's: transposed by `order`, then axes inserted at `inserted` (where the
    view has no array axis: length 1, or one position repeated)."""

    kind: str
    selection: tuple[Any, ...]
    inserted: tuple[int, ...]
    order: tuple[int, ...]
    shape: tuple[int, ...]

    def to_view(self, data: Any) -> Any:
        """The array's result as the view's."""
        if not self.order and not self.inserted:
            return data
        data = np.asarray(data).transpose(self.order)
        if self.inserted:
            data = np.expand_dims(data, self.inserted)
            if data.shape != self.shape:  # an axis along which the view repeats one position
                data = np.broadcast_to(data, self.shape).copy()
        return data

    def from_view(self, value: np.ndarray) -> np.ndarray:
        """A value of the view's shape as the array selection's."""
        if self.inserted:
            # the last of the values of a position selected more than once, as numpy writes
            value = value[
                tuple(-1 if d in self.inserted else slice(None) for d in range(len(self.shape)))
            ]
        return value.transpose(np.argsort(self.order)) if self.order else value


def _index_array(m: OutputMap, shape: tuple[int, ...]) -> Any:
    """Output map `m` as an int or an integer array of rank len(shape) (length-1 axes
    broadcast)."""
    if isinstance(m, Affine):
        place = [1] * len(shape)
        place[m.dim] = shape[m.dim]
        return (m.offset + m.stride * np.arange(shape[m.dim], dtype=np.intp)).reshape(place)
    return m


def _compose_map(m: OutputMap, step: IndexTransform) -> OutputMap:
    if isinstance(m, Affine):
        inner = step.maps[m.dim]
        if isinstance(inner, Affine):
            return Affine(inner.dim, m.offset + m.stride * inner.offset, m.stride * inner.stride)
        if isinstance(inner, np.ndarray):
            return _compact(m.offset + m.stride * inner)
        return m.offset + m.stride * inner
    if isinstance(m, np.ndarray):
        where = tuple(
            0 if n == 1 else _index_array(step.maps[d], step.shape) for d, n in enumerate(m.shape)
        )
        if all(isinstance(w, int) for w in where):
            return int(m[where])
        # The arrays among the indices have the step's rank: so has their broadcast.
        return _compact(m[where])
    return m


def _compact(a: np.ndarray) -> OutputMap:
    return int(a.reshape(-1)[0]) if a.size == 1 else a.astype(np.intp, copy=False)


# -- a selection as a transform -------------------------------------------------------
def _selection_transform(
    key: Any, shape: tuple[int, ...], labels: Labels, mode: str
) -> IndexTransform:
    """The transform from `view[key]`'s coordinates to the view's (`shape`)."""
    entries = _expand(key, shape, mode)
    arrays = [i for i, (kind, _, _) in enumerate(entries) if kind == "array"]
    advanced = set(arrays)
    if mode != "orthogonal" and arrays:
        advanced |= {i for i, (kind, _, _) in enumerate(entries) if kind == "int"}
    block: tuple[int, ...] = ()
    first = 0
    if mode != "orthogonal" and arrays:
        try:
            block = np.broadcast_shapes(*(np.shape(entries[i][1]) for i in arrays))
        except ValueError:
            raise SelectionError(
                "shape mismatch: indexing arrays could not be broadcast "
                "together with shapes " + " ".join(str(np.shape(entries[i][1])) for i in arrays)
            ) from None
        positions = sorted(advanced)
        adjacent = positions == list(range(positions[0], positions[-1] + 1))
        first = positions[0] if mode == "numpy" and adjacent else 0
    # The new axes in order: one per slice, newaxis and orthogonal array, and the broadcast
    # block of the arrays (at `first`) when they broadcast together.
    new_shape: list[int] = []
    new_labels: list[str | None] = []
    slots: list[int] = []  # entry i's first new axis
    block_at = -1
    for i, (kind, _, dim) in enumerate(entries):
        if block and i == first and block_at < 0:
            block_at = len(new_shape)
            single = len(arrays) == 1 and len(block) == 1 and len(advanced) == 1
            new_shape.extend(block)
            new_labels.extend([labels[dim] if single and dim is not None else None] * len(block))
        slots.append(len(new_shape))
        if kind in ("slice", "newaxis") or (kind == "array" and mode == "orthogonal"):
            size = (
                len(entries[i][1])
                if kind == "array"
                else 1
                if kind == "newaxis"
                else len(range(*entries[i][1]))
            )
            new_shape.append(size)
            new_labels.append(None if kind == "newaxis" else labels[dim])  # type: ignore[index]
    ndim = len(new_shape)
    maps: list[OutputMap] = []
    for i, (kind, value, dim) in enumerate(entries):
        if dim is None:
            continue
        if kind == "int":
            maps.append(value)
        elif kind == "slice":
            start, _, step = value
            maps.append(Affine(slots[i], start, step))
        elif mode == "orthogonal":
            place = [1] * ndim
            place[slots[i]] = len(value)
            maps.append(_compact(value.reshape(place)) if len(value) == 1 else value.reshape(place))
        else:
            padded = np.reshape(value, (1,) * (len(block) - value.ndim) + value.shape)
            place = (1,) * block_at + padded.shape + (1,) * (ndim - block_at - len(block))
            maps.append(
                _compact(padded.reshape(place)) if value.size == 1 else padded.reshape(place)
            )
    return IndexTransform(tuple(new_shape), tuple(new_labels), tuple(maps))


def _expand(key: Any, shape: tuple[int, ...], mode: str) -> list[tuple[str, Any, int | None]]:
    """The key as (kind, value, axis of the view) entries, one a view axis (plus newaxis ones,
    axis None): ints and int arrays checked and made non-negative, slices as (start, stop,
    step), bool arrays as the int arrays of their True positions."""
    ndim = len(shape)
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(item is Ellipsis for item in items) > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    consumed = 0
    for item in items:
        if item is None or item is Ellipsis:
            continue
        if isinstance(item, (bool, np.bool_)):
            raise SelectionError("a boolean scalar is not a selection of a view")
        arr = _as_index(item)
        consumed += arr.ndim if isinstance(arr, np.ndarray) and arr.dtype == bool else 1
    if consumed > ndim:
        raise SelectionError(
            f"too many indices for a view of {ndim} dimensions: {consumed} were indexed"
        )
    if any(item is Ellipsis for item in items):
        at = next(k for k, i in enumerate(items) if i is Ellipsis)
        items[at : at + 1] = [slice(None)] * (ndim - consumed)
    else:
        items.extend([slice(None)] * (ndim - consumed))
    entries: list[tuple[str, Any, int | None]] = []
    dim = 0
    for item in items:
        if item is None:
            entries.append(("newaxis", None, None))
            continue
        item = _as_index(item)
        if isinstance(item, slice):
            entries.append(("slice", item.indices(shape[dim]), dim))
            dim += 1
        elif isinstance(item, np.ndarray):
            if item.dtype == bool:
                if mode == "orthogonal" and item.ndim != 1:
                    raise SelectionError("an orthogonal selection takes 1-D boolean arrays")
                extent = shape[dim : dim + item.ndim]
                if item.shape != extent:
                    raise SelectionError(
                        f"boolean index of shape {item.shape} does not match "
                        f"the indexed axes of shape {extent}"
                    )
                for axis, positions in enumerate(np.nonzero(item)):
                    entries.append(("array", positions.astype(np.intp), dim + axis))
                dim += item.ndim
            else:
                if mode == "orthogonal" and item.ndim != 1:
                    raise SelectionError("an orthogonal selection takes 1-D integer arrays")
                entries.append(("array", _in_bounds(item, shape[dim], dim), dim))
                dim += 1
        else:
            entries.append(("int", int(_in_bounds(np.asarray(item), shape[dim], dim)), dim))
            dim += 1
    return entries


def _as_index(item: Any) -> Any:
    if isinstance(item, slice):
        for part in (item.start, item.stop, item.step):
            if part is not None:
                operator.index(part)
        if item.step == 0:
            raise ValueError("slice step cannot be zero")
        return item
    if isinstance(item, (int, np.integer)):
        return int(item)
    arr = np.asarray(item)
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise SelectionError(
            f"only integers, slices, ellipsis, newaxis and integer or "
            f"boolean arrays select a view, not {item!r}"
        )
    if arr.ndim == 0:
        return int(arr)
    return arr.astype(np.intp)


def _in_bounds(index: np.ndarray, size: int, dim: int) -> Any:
    index = np.asarray(index, dtype=np.intp)
    if index.size and (index.min() < -size or index.max() >= size):
        bad = index[(index < -size) | (index >= size)].reshape(-1)[0]
        raise SelectionError(f"index {bad} is out of bounds for axis {dim} with size {size}")
    return np.where(index < 0, index + size, index)


# -- the view ---------------------------------------------------------------------------
class LazyArray:
    """A lazy view of an Array (`Array.lazy`): indexing it, `.oindex`, `.vindex`,
    `.transpose`, `.T` and `.isel` (by dimension name) give new views and read nothing;
    `read()` and `numpy.asarray` read the view in one selection of the array, `write` and
    `view[...] = value` write through it as the array's own writes do.

    Parameters
    ----------
    array : Array
        The array viewed.
    transform : IndexTransform, optional
        From the view's coordinates to the array's; the whole array when omitted.
    """

    __slots__ = ("array", "transform")

    def __init__(self, array: Array, transform: IndexTransform | None = None) -> None:
        self.array = array
        if transform is None:
            names = getattr(array.metadata, "dimension_names", None)
            transform = IndexTransform.identity(array.shape, names)
        elif len(transform.maps) != array.ndim:
            raise ValueError(
                f"a transform of {len(transform.maps)} outputs cannot view an "
                f"array of {array.ndim} dimensions"
            )
        self.transform = transform

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.array, self.transform)

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return (type(self).__name__, self.array.__dask_tokenize__(), self.transform.token())

    @property
    def shape(self) -> tuple[int, ...]:
        return self.transform.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.transform.ndim

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dims(self) -> tuple[str | None, ...]:
        """The dimension names of the view's axes (None for an unnamed one)."""
        return self.transform.labels

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<zarrcore.LazyArray shape={self.shape} dtype={self.dtype} of {self.array!r}>"

    # -- views -------------------------------------------------------------------
    def _view(self, transform: IndexTransform) -> LazyArray:
        return LazyArray(self.array, transform)

    def __getitem__(self, selection: Any) -> LazyArray:
        """numpy's `x[selection]` as a view: ints, slices (any step), Ellipsis, newaxis, and
        int or bool arrays with numpy's advanced-indexing rules."""
        return self._view(self.transform.index(selection, "numpy"))

    def __setitem__(self, selection: Any, value: npt.ArrayLike) -> None:
        self[selection].write(value)

    @property
    def oindex(self) -> _ViewSelector:
        """Orthogonal selection as a view: each int or bool array selects along its own
        axis (as `numpy.ix_`)."""
        return _ViewSelector(self, "orthogonal")

    @property
    def vindex(self) -> _ViewSelector:
        """Vectorized selection as a view: the arrays broadcast together and their axes come
        first (numpy's rule when the arrays are not adjacent)."""
        return _ViewSelector(self, "vectorized")

    def transpose(self, *axes: Any) -> LazyArray:
        """The axes reordered.

        Parameters
        ----------
        *axes : int or str
            The old axes in their new order, by number or name (or one sequence of them);
            reversed when none are given.

        Returns
        -------
        LazyArray
            The transposed view.
        """
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(range(self.ndim))[::-1]
        return self._view(self.transform.transpose([self.transform.axis(a) for a in axes]))

    @property
    def T(self) -> LazyArray:
        """The axes reversed."""
        return self.transpose()

    def isel(self, **selections: Any) -> LazyArray:
        """Orthogonal selection by dimension name: `v.isel(time=slice(0, 10), y=[3, 1])`.

        Parameters
        ----------
        **selections : int, slice or int or bool array
            A selection per dimension name; the other axes are kept whole.

        Returns
        -------
        LazyArray
            The selected view.
        """
        key: list[Any] = [slice(None)] * self.ndim
        for name, selection in selections.items():
            key[self.transform.axis(name)] = selection
        return self.oindex[tuple(key)]

    # -- I/O -------------------------------------------------------------------------
    def _calls(self, plan: Plan) -> tuple[Callable[..., Any], Callable[..., None]]:
        a = self.array
        return {
            "basic": (a.get_basic_selection, a.set_basic_selection),
            "orthogonal": (a.get_orthogonal_selection, a.set_orthogonal_selection),
            "coordinate": (a.get_coordinate_selection, a.set_coordinate_selection),
        }[plan.kind]

    def read(self) -> Any:
        """The view's values, read as one selection of the array, so each chunk is fetched and
        decoded once.

        Returns
        -------
        numpy.ndarray or scalar
            A new array (a scalar when the view is 0-d).
        """
        if not self.size:  # an axis of the view may have no array axis left to select
            return np.empty(self.shape, self.dtype)
        self._check_inside()
        plan = self.transform.plan()
        data = plan.to_view(self._calls(plan)[0](plan.selection))
        if np.shape(data) != self.shape:  # (the array shrank meanwhile, in another thread)
            self._check_inside()
        return data

    def write(self, value: npt.ArrayLike) -> None:
        """Write through the view: one selection of the array, under the array's locks and
        conditional writes. Where the view selects a position twice, the last value is the
        one written, as numpy's.

        Parameters
        ----------
        value : array_like
            Broadcast to the view's shape and cast to the array's dtype.

        Raises
        ------
        ShapeMismatchError
            `value` does not broadcast to the view's shape; nothing is written.
        """
        data = np.asarray(value)
        try:
            data = np.broadcast_to(data, self.shape)
        except ValueError:
            raise ShapeMismatchError(
                f"a value of shape {data.shape} does not broadcast to the view's shape {self.shape}"
            ) from None
        if self.size:
            self._check_inside()
            plan = self.transform.plan()
            self._calls(plan)[1](plan.selection, plan.from_view(data))

    def _check_inside(self) -> None:
        """Refuse a view that reaches beyond the array's shape: a view keeps the region of
        the array it was made from, which a shrinking `resize` may have cut."""
        shape = self.array.shape
        for axis, ((low, high), size) in enumerate(zip(self.transform.extent(), shape)):
            if low < 0 or high >= size:
                region = ", ".join(f"{lo}:{hi + 1}" for lo, hi in self.transform.extent())
                raise ViewOutsideArrayError(
                    f"the view of array {self.array.name!r} selects [{region}], outside the "
                    f"array's shape {shape} on axis {axis} (it was resized since the view was "
                    f"made); make the view anew"
                )

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError(
                "a view is read into a new numpy array: it cannot be viewed "
                "without a copy (copy=False)"
            )
        data = np.asarray(self.read())
        return data if dtype is None else data.astype(dtype, copy=False)


class _ViewSelector:
    """`view.oindex` and `view.vindex`: selections of one mode as views."""

    __slots__ = ("view", "mode")

    def __init__(self, view: LazyArray, mode: str) -> None:
        self.view = view
        self.mode = mode

    def __getitem__(self, selection: Any) -> LazyArray:
        return self.view._view(self.view.transform.index(selection, self.mode))

    def __setitem__(self, selection: Any, value: npt.ArrayLike) -> None:
        self[selection].write(value)


# -- Array's face here (see Array's "faces") ---------------------------------------------------
def _lazy(self: Array) -> LazyArray:
    """A lazy view of the whole array: indexing it gives views that read nothing until
    `read()` or `numpy.asarray` (docs/guide/views.md)."""
    return LazyArray(self)


Array.lazy = property(_lazy)
