"""Chunk grids of v3 arrays: ``regular`` (one chunk length per axis) and the registry's
``rectilinear`` (each chunk's edge length along each axis, inline, run-length encoded or
not). Both answer the same questions: per axis the chunk length, or for an axis of edge
lengths the chunk boundaries (`axes`), which the indexers and the engine take."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from zarrcore.metadata.common import INT64_MAX, JSONDict, field_error, is_int

__all__ = ["AxisChunks", "ChunkGrid", "chunks_holding", "grid_from_spelling",
           "rectilinear_spelling"]

#: One axis of a grid as the indexers take it: the chunk length of a regular axis, or the
#: boundaries of an axis of edge lengths (int64, 0 first, one more than its chunks).
AxisChunks = Union[int, npt.NDArray[np.int64]]

#: One axis of a grid as stored: a chunk length (`regular`, or the `rectilinear` shorthand
#: that repeats to cover any extent), or the tuple of its chunks' edge lengths.
AxisSpec = Union[int, tuple[int, ...]]


def _expand(value: object, where: str, axis: int) -> AxisSpec:
    """One axis of `chunk_shapes`: an int, or a list of ints and [length, count] runs."""
    field = "chunk_grid"
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise field_error(where, field, f"axis {axis}: edge length {value} is not positive")
        return int(value)
    if not isinstance(value, list) or not value:
        raise field_error(where, field, f"axis {axis}: expected an integer or a non-empty list "
                          f"of edge lengths, got {value!r}")
    edges: list[int] = []
    for item in value:
        if is_int(item):
            length, count = item, 1
        elif isinstance(item, list) and len(item) == 2 and all(is_int(v) for v in item):
            length, count = item
        else:
            raise field_error(where, field, f"axis {axis}: {item!r} is neither an edge length "
                              "nor a [length, count] run")
        if length < 1 or count < 1 or length > INT64_MAX:
            raise field_error(where, field, f"axis {axis}: {item!r} has a length or count "
                              "below 1 or of 2**63 or more")
        if len(edges) + count > INT64_MAX:
            raise field_error(where, field, f"axis {axis}: 2**63 chunks or more")
        edges.extend([length] * count)
    return tuple(edges)


def _runs(edges: Sequence[int]) -> list[Any]:
    """`edges` run-length encoded: runs of one length as [length, count], lone ones bare."""
    out: list[Any] = []
    for length, group in itertools.groupby(edges):
        count = len(list(group))
        out.append(length if count == 1 else [length, count])
    return out


def rectilinear_spelling(chunks: object) -> bool:
    """Does `chunks` (as create_array takes it) give edge lengths, e.g. [[10, 5], [7, 13]]?"""
    if isinstance(chunks, (str, bytes, int, np.integer)) or not isinstance(chunks, Sequence):
        return False
    return any(isinstance(c, Sequence) and not isinstance(c, (str, bytes)) for c in chunks)


def grid_from_spelling(chunks: Any, shape: Sequence[int], name: str) -> ChunkGrid:
    """The grid zarr-python 3.4 makes of `chunks` given per axis (an int, -1 for the whole
    axis, or edge lengths summing to the axis' extent): regular when every axis is one length
    repeated, its last chunk perhaps shorter; else rectilinear. MetadataError naming `name`
    for anything else."""
    if len(chunks) != len(shape):
        raise field_error(name, name, f"{list(chunks)!r} does not give one entry per axis of "
                          f"the {len(shape)} of shape {tuple(shape)}")
    axes: list[tuple[int, ...]] = []
    for d, (spec, extent) in enumerate(zip(chunks, shape)):
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            length = extent if spec == -1 else int(spec)
            if length < 1 and not (spec == -1 and extent == 0):
                raise field_error(name, name, f"axis {d}: chunk length {spec} is not positive")
            axes.append((max(length, 1),) * max(1, -(-extent // max(length, 1))))
            continue
        edges = list(spec) if isinstance(spec, Sequence) else None
        if not edges or not all(is_int(e) or isinstance(e, np.integer) for e in edges):
            raise field_error(name, name, f"axis {d}: expected an integer or a list of edge "
                              f"lengths, got {spec!r}")
        if any(e < 1 for e in edges) or sum(edges) != extent:
            raise field_error(name, name, f"axis {d}: edge lengths {edges} must be positive "
                              f"and sum to the axis' extent {extent}")
        axes.append(tuple(int(e) for e in edges))
    if all(all(e == a[0] for e in a[:-1]) and a[-1] <= a[0] for a in axes):
        return ChunkGrid.regular([a[0] for a in axes], shape)
    return ChunkGrid("rectilinear", axes, shape)


class ChunkGrid:
    """The chunk grid of an array of `shape`: `name` ("regular" or "rectilinear") and per
    axis an `AxisSpec` (`specs`). A rectilinear axis of edge lengths covers at least its
    extent; its last chunks may reach past it (after a shrinking resize)."""

    def __init__(self, name: str, specs: Sequence[AxisSpec], shape: Sequence[int]) -> None:
        self.name = name
        self.specs = tuple(specs)
        self.shape = tuple(shape)
        self.axes: tuple[AxisChunks, ...] = tuple(
            s if isinstance(s, int) else np.concatenate(([0], np.cumsum(s, dtype=np.int64)))
            for s in self.specs)
        # Is every axis one chunk length (a `regular` grid, or a rectilinear one of only
        # shorthands)? Set once: every read and write asks.
        self.is_regular = all(isinstance(s, int) for s in self.specs)

    @classmethod
    def regular(cls, chunk_shape: Sequence[int], shape: Sequence[int]) -> ChunkGrid:
        return cls("regular", tuple(chunk_shape), shape)

    @classmethod
    def from_json(cls, name: str, config: JSONDict, shape: Sequence[int],
                  where: str) -> ChunkGrid:
        """The `rectilinear` grid of a configuration (`regular` ones parse where they did)."""
        if set(config) != {"kind", "chunk_shapes"}:
            raise field_error(where, "chunk_grid", "expected configuration {\"kind\": "
                              f"\"inline\", \"chunk_shapes\": [...]}}, got {config!r}")
        if config["kind"] != "inline":
            raise field_error(where, "chunk_grid", f"unsupported rectilinear kind "
                              f"{config['kind']!r} (only \"inline\")")
        shapes = config["chunk_shapes"]
        if not isinstance(shapes, list) or len(shapes) != len(shape):
            raise field_error(where, "chunk_grid", f"chunk_shapes {shapes!r} does not give one "
                              f"entry per axis of the {len(shape)} of shape")
        grid = cls(name, [_expand(v, where, d) for d, v in enumerate(shapes)], shape)
        grid.check(where)
        return grid

    def check(self, where: str) -> None:
        """MetadataError unless every axis of edge lengths covers its extent."""
        for d, (spec, axis, extent) in enumerate(zip(self.specs, self.axes, self.shape)):
            if not isinstance(spec, int) and int(axis[-1]) < extent:  # type: ignore[index]
                raise field_error(where, "chunk_grid", f"axis {d}: the edge lengths sum to "
                                  f"{int(axis[-1])}, less than the shape's {extent}")  # type: ignore[index]

    def to_json(self) -> JSONDict:
        if self.name == "regular":
            return {"name": "regular", "configuration": {"chunk_shape": list(self.specs)}}
        shapes: list[Any] = []
        for spec in self.specs:
            if isinstance(spec, int):
                shapes.append(spec)
                continue
            runs = _runs(spec)
            shapes.append(runs if len(runs) < len(spec) else list(spec))
        return {"name": "rectilinear",
                "configuration": {"kind": "inline", "chunk_shapes": shapes}}

    @property
    def max_chunk_shape(self) -> tuple[int, ...]:
        """The largest edge length on each axis: what bounds every chunk."""
        return tuple(s if isinstance(s, int) else max(s) for s in self.specs)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The number of chunks along each axis that hold part of the array."""
        return tuple(chunks_holding(a, n) for a, n in zip(self.axes, self.shape))

    def edge_lengths(self, axis: int) -> tuple[int, ...]:
        """The edge lengths of the chunks along `axis` that hold part of the array, clipped
        to its extent (dask's convention)."""
        n = self.shape[axis]
        return tuple(min(hi, n) - lo for lo, hi in self.bounds(axis))

    def bounds(self, axis: int) -> list[tuple[int, int]]:
        """(start, stop) of each chunk along `axis` that holds part of the array, unclipped."""
        a, n = self.axes[axis], self.shape[axis]
        if isinstance(a, int):
            return [(c * a, (c + 1) * a) for c in range(chunks_holding(a, n))]
        starts = a.tolist()
        return list(zip(starts, starts[1:]))[:chunks_holding(a, n)]

    def chunks_within(self, axis: int, position: int) -> int:
        """The number of chunks along `axis` that end at or before `position`."""
        a = self.axes[axis]
        if isinstance(a, int):
            return position // a
        return int(np.searchsorted(a, position, side="right")) - 1

    def chunk_end(self, axis: int, c: int) -> int | None:
        """Where chunk `c` along `axis` ends; None for a chunk beyond an axis of edge
        lengths."""
        a = self.axes[axis]
        if isinstance(a, int):
            return (c + 1) * a
        return int(a[c + 1]) if c + 1 < len(a) else None

    def origin(self, coords: Sequence[int]) -> tuple[int, ...]:
        """Where the chunk at grid index `coords` starts."""
        return tuple(c * a if isinstance(a, int) else int(a[c])
                     for c, a in zip(coords, self.axes))

    def chunk_shape_at(self, coords: Sequence[int]) -> tuple[int, ...]:
        """The stored shape of the chunk at `coords` (past the array's end included)."""
        return tuple(a if isinstance(a, int) else int(a[c + 1] - a[c])
                     for c, a in zip(coords, self.axes))

    def resized(self, shape: Sequence[int]) -> ChunkGrid:
        """This grid for an array grown or shrunk to `shape`, as zarr-python 3.4 resizes it:
        an axis of edge lengths that no longer covers its extent gains one chunk reaching
        just to it; edge lengths are never dropped."""
        specs: list[AxisSpec] = []
        for spec, axis, extent in zip(self.specs, self.axes, shape):
            total = 0 if isinstance(spec, int) else int(axis[-1])  # type: ignore[index]
            specs.append(spec if isinstance(spec, int) or extent <= total
                         else (*spec, extent - total))
        return ChunkGrid(self.name, specs, shape)


def chunks_holding(axis: AxisChunks, extent: int) -> int:
    """The number of chunks of `axis` that hold part of an extent of `extent`."""
    if isinstance(axis, int):
        return -(-extent // axis)
    return int(np.searchsorted(axis, extent)) if extent else 0
