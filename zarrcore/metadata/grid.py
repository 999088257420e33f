"""Chunk grids of v3 arrays: ``regular`` (one chunk length per axis) and the registry's
``rectilinear`` (each chunk's edge length along each axis, inline, run-length encoded or
not). Both answer the same questions: per axis the chunk length, or for an axis of edge
lengths its runs (`AxisRuns`), which the indexers and the engine take."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Union, overload

import numpy as np
import numpy.typing as npt

from zarrcore.metadata.common import INT64_MAX, JSONDict, field_error, is_int

__all__ = [
    "AxisChunks",
    "AxisRuns",
    "ChunkGrid",
    "Int64s",
    "chunk_start",
    "chunks_holding",
    "grid_from_spelling",
    "rectilinear_spelling",
]

Int64s = npt.NDArray[np.int64]


class AxisRuns:
    """The chunks of an axis of edge lengths, kept as runs of one length (a run-length
    encoded axis of 10**9 chunks is a few numbers): per run its edge length (`lengths`),
    where it starts (`starts`) and the index of its first chunk (`firsts`), the last two
    ending with the axis' total length and chunk count. A chunk or a position is found by a
    binary search over the runs, so every question costs after the runs, not the chunks."""

    __slots__ = ("lengths", "starts", "firsts")

    def __init__(self, lengths: Sequence[int], counts: Sequence[int]) -> None:
        """Runs of `counts[i]` chunks of `lengths[i]` (each at least 1, the total length and
        count below 2**63); neighbouring runs of one length are merged."""
        merged: list[list[int]] = []
        for length, count in zip(lengths, counts):
            if merged and merged[-1][0] == length:
                merged[-1][1] += count
            else:
                merged.append([int(length), int(count)])
        self.lengths: Int64s = np.array([m[0] for m in merged], dtype=np.int64)
        count_of = np.array([m[1] for m in merged], dtype=np.int64)
        self.firsts: Int64s = np.concatenate(([0], np.cumsum(count_of))).astype(np.int64)
        self.starts: Int64s = np.concatenate(([0], np.cumsum(self.lengths * count_of))).astype(
            np.int64
        )

    @classmethod
    def of_edges(cls, edges: Sequence[int]) -> AxisRuns:
        """The runs of the edge lengths `edges`, one per chunk."""
        return cls(list(edges), [1] * len(edges))

    @property
    def counts(self) -> Int64s:
        return np.diff(self.firsts)

    @property
    def nchunks(self) -> int:
        return int(self.firsts[-1])

    @property
    def total(self) -> int:
        """Where the last chunk ends."""
        return int(self.starts[-1])

    @property
    def longest(self) -> int:
        return int(self.lengths.max())

    def longest_of(self, count: int) -> int:
        """The longest edge among the first `count` (>= 1) chunks."""
        return int(self.lengths[: int(self._run_of_chunk(count - 1)) + 1].max())

    def _run_of_chunk(self, chunks: Any) -> Any:
        # A chunk index at the end (nchunks) falls in the last run, whose end it then names.
        return np.minimum(
            np.searchsorted(self.firsts, chunks, side="right") - 1, len(self.lengths) - 1
        )

    @overload
    def start(self, chunks: int) -> int: ...
    @overload
    def start(self, chunks: Int64s) -> Int64s: ...

    def start(self, chunks: Any) -> Any:
        """Where chunk(s) `chunks` start (0 <= chunks <= nchunks: the end names the total)."""
        r = self._run_of_chunk(chunks)
        at = self.starts[r] + (chunks - self.firsts[r]) * self.lengths[r]
        return int(at) if isinstance(chunks, (int, np.integer)) else at

    @overload
    def length(self, chunks: int) -> int: ...
    @overload
    def length(self, chunks: Int64s) -> Int64s: ...

    def length(self, chunks: Any) -> Any:
        """The edge length of chunk(s) `chunks`."""
        lengths = self.lengths[self._run_of_chunk(chunks)]
        return int(lengths) if isinstance(chunks, (int, np.integer)) else lengths

    @overload
    def chunk_of(self, positions: int) -> int: ...
    @overload
    def chunk_of(self, positions: Int64s) -> Int64s: ...

    def chunk_of(self, positions: Any) -> Any:
        """The chunk holding each position (>= 0); nchunks for positions at or past the
        total."""
        r = np.clip(
            np.searchsorted(self.starts, positions, side="right") - 1, 0, len(self.lengths) - 1
        )
        c = np.minimum(
            self.firsts[r] + (positions - self.starts[r]) // self.lengths[r], self.nchunks
        )
        return int(c) if isinstance(positions, (int, np.integer)) else c

    def within(self, start: int, stop: int) -> Int64s:
        """The chunk boundaries strictly between positions `start` and `stop`."""
        if stop <= start:
            return np.zeros(0, dtype=np.int64)
        return self.start(
            np.arange(self.chunk_of(start) + 1, self.chunk_of(stop - 1) + 1, dtype=np.int64)
        )

    def holding(self, extent: int) -> tuple[Int64s, Int64s]:
        """The runs (lengths, counts) of the chunks holding part of an extent of `extent`,
        the last of them cut at it (dask's convention)."""
        n = chunks_holding(self, extent)
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        r = int(self._run_of_chunk(n - 1))
        lengths, counts = self.lengths[: r + 1].copy(), self.counts[: r + 1].copy()
        counts[r] = n - 1 - int(self.firsts[r])
        last = extent - self.start(n - 1)
        return np.append(lengths, last), np.append(counts, 1)

    def regular_length(self) -> int | None:
        """The length when the axis is one length repeated, its last chunk perhaps shorter."""
        counts = self.counts
        if len(self.lengths) == 1 or (
            len(self.lengths) == 2 and counts[1] == 1 and self.lengths[1] <= self.lengths[0]
        ):
            return int(self.lengths[0])
        return None

    def extended(self, length: int) -> AxisRuns:
        """These runs and one more chunk of `length`."""
        return AxisRuns([*self.lengths.tolist(), length], [*self.counts.tolist(), 1])

    def to_json(self) -> list[Any]:
        """The runs as stored: [length, count], a lone chunk's length bare; only lengths when
        no run repeats."""
        pairs = zip(self.lengths.tolist(), self.counts.tolist())
        return [length if count == 1 else [length, count] for length, count in pairs]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AxisRuns):
            return NotImplemented
        return np.array_equal(self.lengths, other.lengths) and np.array_equal(
            self.firsts, other.firsts
        )

    def __hash__(self) -> int:
        return hash((self.lengths.tobytes(), self.firsts.tobytes()))

    def __repr__(self) -> str:
        return f"AxisRuns({self.to_json()!r})"


#: One axis of a grid: the chunk length of a regular axis (`regular`, or the `rectilinear`
#: shorthand that repeats to cover any extent), or the runs of an axis of edge lengths.
AxisChunks = Union[int, AxisRuns]


def _parse_axis(value: object, where: str, axis: int) -> AxisChunks:
    """One axis of `chunk_shapes`: an int, or a list of ints and [length, count] runs."""
    field = "chunk_grid"
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise field_error(where, field, f"axis {axis}: edge length {value} is not positive")
        return int(value)
    if not isinstance(value, list) or not value:
        raise field_error(
            where,
            field,
            f"axis {axis}: expected an integer or a non-empty list of edge lengths, got {value!r}",
        )
    lengths: list[int] = []
    counts: list[int] = []
    total = 0
    for item in value:
        if is_int(item):
            length, count = item, 1
        elif isinstance(item, list) and len(item) == 2 and all(is_int(v) for v in item):
            length, count = item
        else:
            raise field_error(
                where,
                field,
                f"axis {axis}: {item!r} is neither an edge length nor a [length, count] run",
            )
        if length < 1 or count < 1 or length > INT64_MAX:
            raise field_error(
                where,
                field,
                f"axis {axis}: {item!r} has a length or count below 1 or of 2**63 or more",
            )
        total += length * count
        if total > INT64_MAX:
            raise field_error(where, field, f"axis {axis}: the edge lengths sum to 2**63 or more")
        lengths.append(length)
        counts.append(count)
    return AxisRuns(lengths, counts)


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
        raise field_error(
            name,
            name,
            f"{list(chunks)!r} does not give one entry per axis of "
            f"the {len(shape)} of shape {tuple(shape)}",
        )
    axes: list[AxisRuns] = []
    for d, (spec, extent) in enumerate(zip(chunks, shape)):
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            length = extent if spec == -1 else int(spec)
            if length < 1 and not (spec == -1 and extent == 0):
                raise field_error(name, name, f"axis {d}: chunk length {spec} is not positive")
            length = max(length, 1)
            axes.append(AxisRuns([length], [max(1, -(-extent // length))]))
            continue
        edges = list(spec) if isinstance(spec, Sequence) else None
        if not edges or not all(is_int(e) or isinstance(e, np.integer) for e in edges):
            raise field_error(
                name, name, f"axis {d}: expected an integer or a list of edge lengths, got {spec!r}"
            )
        if any(e < 1 for e in edges) or sum(edges) != extent:
            raise field_error(
                name,
                name,
                f"axis {d}: edge lengths {edges} must be positive "
                f"and sum to the axis' extent {extent}",
            )
        axes.append(AxisRuns.of_edges([int(e) for e in edges]))
    regular = [a.regular_length() for a in axes]
    if all(length is not None for length in regular):
        return ChunkGrid.regular(regular, shape)  # type: ignore[arg-type]
    return ChunkGrid("rectilinear", axes, shape)


class ChunkGrid:
    """The chunk grid of an array of `shape`: `name` ("regular" or "rectilinear") and per
    axis its chunks (`axes`: a length, or `AxisRuns`). A rectilinear axis of edge lengths
    covers at least its extent; its last chunks may reach past it (after a shrinking
    resize)."""

    def __init__(self, name: str, axes: Sequence[AxisChunks], shape: Sequence[int]) -> None:
        self.name = name
        self.axes: tuple[AxisChunks, ...] = tuple(axes)
        self.shape = tuple(shape)
        # Is every axis one chunk length (a `regular` grid, or a rectilinear one of only
        # shorthands)? Set once: every read and write asks.
        self.is_regular = all(isinstance(a, int) for a in self.axes)

    @classmethod
    def regular(cls, chunk_shape: Sequence[int], shape: Sequence[int]) -> ChunkGrid:
        return cls("regular", tuple(chunk_shape), shape)

    @classmethod
    def from_json(cls, name: str, config: JSONDict, shape: Sequence[int], where: str) -> ChunkGrid:
        """The `rectilinear` grid of a configuration (`regular` ones parse where they did)."""
        if set(config) != {"kind", "chunk_shapes"}:
            raise field_error(
                where,
                "chunk_grid",
                'expected configuration {"kind": '
                f'"inline", "chunk_shapes": [...]}}, got {config!r}',
            )
        if config["kind"] != "inline":
            raise field_error(
                where,
                "chunk_grid",
                f'unsupported rectilinear kind {config["kind"]!r} (only "inline")',
            )
        shapes = config["chunk_shapes"]
        if not isinstance(shapes, list) or len(shapes) != len(shape):
            raise field_error(
                where,
                "chunk_grid",
                f"chunk_shapes {shapes!r} does not give one "
                f"entry per axis of the {len(shape)} of shape",
            )
        grid = cls(name, [_parse_axis(v, where, d) for d, v in enumerate(shapes)], shape)
        grid.check(where)
        return grid

    def check(self, where: str) -> None:
        """MetadataError unless every axis of edge lengths covers its extent."""
        for d, (axis, extent) in enumerate(zip(self.axes, self.shape)):
            if isinstance(axis, AxisRuns) and axis.total < extent:
                raise field_error(
                    where,
                    "chunk_grid",
                    f"axis {d}: the edge lengths sum to "
                    f"{axis.total}, less than the shape's {extent}",
                )

    def to_json(self) -> JSONDict:
        if self.name == "regular":
            return {"name": "regular", "configuration": {"chunk_shape": list(self.axes)}}
        shapes = [a if isinstance(a, int) else a.to_json() for a in self.axes]
        return {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": shapes}}

    @property
    def max_chunk_shape(self) -> tuple[int, ...]:
        """The largest edge length on each axis: what bounds every chunk."""
        return tuple(a if isinstance(a, int) else a.longest for a in self.axes)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The number of chunks along each axis that hold part of the array."""
        return tuple(chunks_holding(a, n) for a, n in zip(self.axes, self.shape))

    def edge_lengths(self, axis: int) -> tuple[int, ...]:
        """The edge lengths of the chunks along `axis` that hold part of the array, clipped
        to its extent (dask's convention): one per chunk."""
        a, n = self.axes[axis], self.shape[axis]
        if isinstance(a, int):
            return tuple(min(a, n - c * a) for c in range(chunks_holding(a, n)))
        return tuple(np.repeat(*a.holding(n)).tolist())

    def inner_chunks(self, axis: int, inner: int) -> int:
        """The number of inner chunks of length `inner` along `axis` in the chunks (shards)
        holding part of the array, each cut at its end."""
        a, n = self.axes[axis], self.shape[axis]
        if isinstance(a, int):
            return n // a * -(-a // inner) + -(-(n % a) // inner)
        lengths, counts = a.holding(n)
        return int(np.sum(-(-lengths // inner) * counts))

    def region(self, coords: Sequence[int]) -> tuple[slice, ...]:
        """The region of the array the chunk at `coords` holds (cut at the array's end)."""
        return tuple(
            slice(o, min(o + e, n))
            for o, e, n in zip(self.origin(coords), self.chunk_shape_at(coords), self.shape)
        )

    def chunks(self) -> Iterator[tuple[int, ...]]:
        """The grid index of every chunk holding part of the array, in C order (one at a
        time: an axis of 10**9 chunks is never listed, as itertools.product would list it)."""
        shape = self.grid_shape
        if 0 in shape:
            return
        coords = [0] * len(shape)
        while True:
            yield tuple(coords)
            d = len(shape) - 1
            while d >= 0:
                coords[d] += 1
                if coords[d] < shape[d]:
                    break
                coords[d] = 0
                d -= 1
            if d < 0:
                return

    def chunks_within(self, axis: int, position: int) -> int:
        """The number of chunks along `axis` that end at or before `position`."""
        a = self.axes[axis]
        if isinstance(a, int):
            return position // a
        return a.chunk_of(position)

    def chunk_end(self, axis: int, c: int) -> int | None:
        """Where chunk `c` along `axis` ends; None for a chunk beyond an axis of edge
        lengths."""
        a = self.axes[axis]
        if isinstance(a, int):
            return (c + 1) * a
        return a.start(c + 1) if c < a.nchunks else None

    def origin(self, coords: Sequence[int]) -> tuple[int, ...]:
        """Where the chunk at grid index `coords` starts."""
        return tuple(chunk_start(a, c) for c, a in zip(coords, self.axes))

    def chunk_shape_at(self, coords: Sequence[int]) -> tuple[int, ...]:
        """The stored shape of the chunk at `coords` (past the array's end included)."""
        return tuple(a if isinstance(a, int) else a.length(c) for c, a in zip(coords, self.axes))

    def resized(self, shape: Sequence[int]) -> ChunkGrid:
        """This grid for an array grown or shrunk to `shape`, as zarr-python 3.4 resizes it:
        an axis of edge lengths that no longer covers its extent gains one chunk reaching
        just to it; edge lengths are never dropped."""
        axes = [
            a if isinstance(a, int) or extent <= a.total else a.extended(extent - a.total)
            for a, extent in zip(self.axes, shape)
        ]
        return ChunkGrid(self.name, axes, shape)


def chunk_start(axis: AxisChunks, c: int) -> int:
    """Where chunk `c` of `axis` (a length, or runs) starts."""
    return c * axis if isinstance(axis, int) else axis.start(c)


def chunks_holding(axis: AxisChunks, extent: int) -> int:
    """The number of chunks of `axis` that hold part of an extent of `extent`."""
    if isinstance(axis, int):
        return -(-extent // axis)
    return min(axis.chunk_of(extent - 1) + 1, axis.nchunks) if extent else 0
