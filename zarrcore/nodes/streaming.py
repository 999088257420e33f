"""Streaming copies: one array's values written into a region of another, a block of whole
destination objects at a time on `config.num_threads` threads, so memory stays bounded by about
one block per thread whatever the arrays' sizes; between arrays that store alike, the stored
objects byte for byte. `Array.__setitem__` with an Array value and `from_array` copy here;
`convert` plans and buffers its blocks, and tells raw copies apart, here too.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..metadata.grid import AxisChunks
from ..metadata.indexing import expand_selection
from ..runtime.concurrency import run_bounded
from ..runtime.config import config
from .array import Array
from .node import METADATA_KEYS

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import Fields, Selection

__all__ = [
    "BlockBuffers",
    "ChunkKeys",
    "DEFAULT_MEMORY",
    "MIN_BLOCK_BYTES",
    "Region",
    "block_cost",
    "block_edges",
    "blocks",
    "copy_into",
    "plan_block",
    "same_bits",
    "stored_encoding",
    "stores_alike",
]

#: The default bound on the data a copy holds at once.
DEFAULT_MEMORY = 1 << 30
#: Blocks are grown to at least this many bytes (when the budget allows): a block costs a
#: read and a write request of its own, whose fixed costs small chunks would not amortise.
MIN_BLOCK_BYTES = 16 << 20

#: A region of an array: a slice per axis, step 1.
Region = tuple[slice, ...]


def plan_block(
    unit: Sequence[int],
    source_chunks: Sequence[int],
    extent: Sequence[int],
    itemsize: int,
    cost: Callable[[Sequence[int]], int],
    budget: int,
) -> tuple[int, ...]:
    """The block shape of a copy: a whole number of destination objects (`unit`) per axis,
    lined up with the source chunks (their least common multiple) and grown to at least
    MIN_BLOCK_BYTES, as far as `cost(block)` (the bytes a task over it holds) fits in
    `budget` (one object per axis when even that does not fit)."""
    top = [-(-max(n, 1) // u) * u for u, n in zip(unit, extent)]  # whole objects over the extent
    block = [min(math.lcm(u, s), t) for u, s, t in zip(unit, source_chunks, top)]
    # Grown from the last axis, doubling (lined-up blocks stay lined up).
    for axis in reversed(range(len(block))):
        while block[axis] < top[axis] and math.prod(block) * itemsize < MIN_BLOCK_BYTES:
            grown = block[:axis] + [min(2 * block[axis], top[axis])] + block[axis + 1 :]
            if cost(grown) > budget:
                break
            block = grown
    while cost(block) > budget and any(b > u for b, u in zip(block, unit)):
        axis = max((i for i in range(len(block)) if block[i] > unit[i]), key=lambda i: block[i])
        block[axis] = max(unit[axis], block[axis] // unit[axis] // 2 * unit[axis])
    return tuple(block)


def block_cost(block: Sequence[int], source: Array, dest: Array, copies: int) -> int:
    """Bytes a copy task over `block` holds at most: `copies` arrays of the block's values (the
    block read, what is encoded from it, copies in another type) and, on each thread, a stored
    source object (a chunk, or a shard) being decoded into it."""
    itemsize = max(source.dtype.itemsize, dest.dtype.itemsize)
    stored = math.prod(source.chunk_engine.chunk_shape) * source.dtype.itemsize
    return copies * math.prod(block) * itemsize + config.num_threads * stored


def block_edges(axis: AxisChunks, start: int, stop: int, side: int) -> list[int]:
    """Where the blocks over [start, stop) of a grid axis (`axis`: an object length, or the
    objects' runs) start and end: each spans whole objects, cut at `start` and `stop`,
    as many as fit in `side` (at least one; on a regular axis `side` is a whole number of
    them, and the blocks lie on its grid from the origin)."""
    if stop <= start:
        return [start]
    if isinstance(axis, int):
        return [start, *range((start // side + 1) * side, stop, side), stop]
    ends = [*axis.within(start, stop).tolist(), stop]
    edges = [start]
    for end, after in zip(ends, ends[1:] + [None]):
        if after is None or after - edges[-1] > side:
            edges.append(end)
    return edges


def blocks(edges: Sequence[Sequence[int]]) -> Iterator[Region]:
    """The blocks between the `edges` of each axis (`block_edges`), in C order."""
    for corner in np.ndindex(*(len(e) - 1 for e in edges)):
        yield tuple(slice(e[i], e[i + 1]) for e, i in zip(edges, corner))


class BlockBuffers:
    """Block buffers kept from one task for the next, at most one per task in flight: a fresh
    buffer of hundreds of MiB costs the kernel a page fault and a zeroing per page, every
    block."""

    def __init__(self, in_flight: int) -> None:
        self._kept: list[npt.NDArray[np.uint8]] = []
        self._guard, self._in_flight = threading.Lock(), in_flight

    def take(
        self, shape: tuple[int, ...], dtype: np.dtype[Any]
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.uint8]]:
        """An uninitialised array of `shape` and `dtype`, and the buffer to give back."""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        with self._guard:
            # Kept smallest first: the first that fits.
            at = next((i for i, b in enumerate(self._kept) if b.nbytes >= nbytes), None)
            buffer = None if at is None else self._kept.pop(at)
        if buffer is None:
            buffer = np.empty(nbytes, dtype=np.uint8)
        return buffer[:nbytes].view(dtype).reshape(shape), buffer

    def give_back(self, buffer: npt.NDArray[np.uint8]) -> None:
        with self._guard:
            self._kept.append(buffer)
            # Past one per task in flight, the smallest go (a later array's blocks may differ).
            self._kept.sort(key=lambda b: b.nbytes)
            del self._kept[: max(0, len(self._kept) - self._in_flight)]


def copy_into(dest: Array, region: Region, source: Array) -> None:
    """dest[region] = source[...], block by block: blocks of whole destination objects (so
    none is read back and merged but at the region's edges), each read from the source into
    a kept buffer and written, up to `config.num_threads` at once within DEFAULT_MEMORY.
    When the destination is the whole of an array that stores its objects as the source does,
    the stored objects are copied as they are, without decoding."""
    if source.shape == dest.shape and _copy_stored(source, dest):
        return
    unit = tuple(dest.chunk_engine.chunk_shape)
    itemsize = source.dtype.itemsize

    def cost(block: Sequence[int]) -> int:  # the block, what is encoded, a cast copy
        return block_cost(block, source, dest, 2 + (source.dtype != dest.dtype))

    # Lined up with the source's chunks where its origin is on the destination's grid (an
    # axis of edge lengths lines up with nothing).
    offsets = [r.start for r in region]
    lined_up = [
        c if isinstance(c, int) and o % c == 0 else u
        for c, u, o in zip(source.chunks, unit, offsets)
    ]
    extent = [r.stop - r.start for r in region]
    budget = DEFAULT_MEMORY * 3 // 4  # a quarter is headroom, as convert keeps
    # Over a rectilinear destination, the block's side (of its largest objects) bounds its
    # blocks of whole objects.
    block = plan_block(unit, lined_up, extent, itemsize, cost, budget)
    in_flight = max(1, min(config.num_threads, budget // cost(block)))
    buffers = BlockBuffers(in_flight)

    def copy_block(part: Region) -> None:
        data, buffer = buffers.take(tuple(p.stop - p.start for p in part), source.dtype)
        try:
            source.get_basic_selection(
                tuple(slice(p.start - o, p.stop - o) for p, o in zip(part, offsets)), out=data
            )
            dest.set_basic_selection(part, data)
        finally:
            buffers.give_back(buffer)

    parts = blocks(
        [
            block_edges(axis, r.start, r.stop, side)
            for axis, r, side in zip(dest.chunk_grid.axes, region, block)
        ]
    )
    ahead = list(itertools.islice(parts, 2))
    if len(ahead) < 2:  # one block or none: in the calling thread
        for part in ahead:
            copy_block(part)
        return
    run_bounded(copy_block, itertools.chain(ahead, parts), in_flight)


def _copy_stored(source: Array, dest: Array) -> bool:
    """Copy the source's stored objects to the destination byte for byte, and delete the
    destination's others, when the arrays store their objects alike; False when they do not
    (or a missing object must raise rather than read as fill)."""
    src_keys, dst_keys = ChunkKeys(source), ChunkKeys(dest)
    if not stores_alike(src_keys, dst_keys, stored_encoding):
        return False
    stored = src_keys.stored()[0]
    if len(stored) < math.prod(src_keys.grid) and not source.reads_missing_as_fill:
        return False
    engine = dest.chunk_engine

    def copy_object(item: tuple[tuple[int, ...], str]) -> None:
        engine.put_copy(engine.key(item[0]), source.store, item[1])

    run_bounded(copy_object, stored.items(), config.num_threads)
    engine.put_many(
        (key, None) for coords, key in dst_keys.stored()[0].items() if coords not in stored
    )
    return True


def stored_encoding(array: Array) -> object:
    """How the array encodes its stored objects, as its metadata says."""
    meta: Any = array.metadata
    if array.zarr_format == 2:
        return 2, meta.compressor, meta.filters, meta.order
    return 3, array.chunk_engine.chain.to_json()


def stores_alike(src: ChunkKeys, dst: ChunkKeys, encoding: Callable[[Array], object]) -> bool:
    """Do two arrays of one shape store alike: the same grid, data type and fill value, and
    the same `encoding` (of each Array)? Then every stored object means the same in both."""
    s, d = src.chunks, dst.chunks
    return (
        s.grid.axes == d.grid.axes
        and s.dtype == d.dtype
        and same_bits(
            np.asarray(s.fill_value, dtype=s.dtype), np.asarray(d.fill_value, dtype=d.dtype)
        )
        and encoding(src.array) == encoding(dst.array)
    )


def same_bits(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    """Do two arrays hold the same values, bit for bit (NaNs, signed zeros)?"""
    if a.dtype.hasobject or b.dtype.hasobject:
        return np.array_equal(a, b)
    return (
        a.shape == b.shape
        and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    )


class ChunkKeys:
    """The stored objects of one array (chunks, or shards when sharded) by grid position."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.chunks = array.chunk_engine  # keys, codec chain, fill value
        self.grid = array.chunk_grid.grid_shape
        self._head = len(array.path) + 1 if array.path else 0

    def stored(self) -> tuple[dict[tuple[int, ...], str], list[str]]:
        """(in-grid {coords: key}, [keys that are no grid position]) of the stored keys."""
        meta = set(METADATA_KEYS)
        found: dict[tuple[int, ...], str] = {}
        outside: list[str] = []
        for key in self.array.store.list_prefix(self.array.path):
            rel = key[self._head :]
            if rel in meta:
                continue
            coords = self.coords(key)
            if coords is None:
                outside.append(key)
            else:
                found[coords] = key
        return found, sorted(outside)

    def coords(self, key: str) -> tuple[int, ...] | None:
        """The grid position whose key is `key`, or None when there is none."""
        # A 0-d array's one chunk has a key of its own ("0" in v2, "c" in v3).
        coords = tuple(int(c) for c in re.findall(r"\d+", key[self._head :])) if self.grid else ()
        if len(coords) != len(self.grid) or any(c >= n for c, n in zip(coords, self.grid)):
            return None
        return coords if self.chunks.key(coords) == key else None

    def all_coords(self) -> Iterator[tuple[int, ...]]:
        return self.array.chunk_grid.chunks()

    def region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The array region (tuple of slices) the object at `coords` holds."""
        return self.array.chunk_grid.region(coords)


# -- Array's face here (see Array's "faces") ---------------------------------------------------
def _streamed(self: Array, selection: Selection, value: Any, fields: Fields) -> bool:
    """Copy `value` into `selection` block by block, never read whole, when it is an Array
    of the selection's shape and the selection a region (step-1 slices); False when not."""
    if not isinstance(value, Array) or fields is not None:
        return False
    region = _region_of(selection, self.shape)
    if region is None or tuple(r.stop - r.start for r in region) != value.shape:
        return False
    if value.store == self.store and value.path == self.path and value.shape != self.shape:
        return False  # a region of the array onto itself: the blocks would overlap
    self._check_writable()
    copy_into(self, region, value)
    return True


def _region_of(selection: Selection, shape: tuple[int, ...]) -> Region | None:
    """The region `selection` selects when it is step-1 slices (and Ellipsis), else None."""
    items = expand_selection(selection, len(shape))
    if not all(type(s) is slice and s.step in (None, 1) for s in items):
        return None
    return tuple(
        slice(start, max(start, stop))
        for start, stop, _ in (s.indices(n) for s, n in zip(items, shape))
    )


Array._streamed = _streamed
