"""Streaming copies: one array's values written into a region of another, a block of whole
destination objects at a time on `config.num_threads` threads, so memory stays bounded by about
one block per thread whatever the arrays' sizes. `Array.__setitem__` with an Array value,
`from_array` and `convert` plan and buffer their blocks here.
"""
from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .concurrency import run_bounded
from .config import config

if TYPE_CHECKING:
    import numpy.typing as npt

    from .array import Array

#: The default bound on the data a copy holds at once.
DEFAULT_MEMORY = 1 << 30
#: Blocks are grown to at least this many bytes (when the budget allows): a block costs a
#: read and a write request of its own, whose fixed costs small chunks would not amortise.
MIN_BLOCK_BYTES = 16 << 20

#: A region of an array: a slice per axis, step 1.
Region = tuple[slice, ...]


def plan_block(unit: Sequence[int], source_chunks: Sequence[int], extent: Sequence[int],
               itemsize: int, cost: Callable[[Sequence[int]], int], budget: int,
               name: str) -> tuple[int, ...]:
    """The block shape of a copy: a whole number of destination objects (`unit`) per axis,
    lined up with the source chunks (their least common multiple) and grown to at least
    MIN_BLOCK_BYTES, as far as `cost(block)` (the bytes a task over it holds) fits in
    `budget`; ValueError naming the array `name` when not even one object fits."""
    top = [-(-max(n, 1) // u) * u for u, n in zip(unit, extent)]  # whole objects over the extent
    block = [min(math.lcm(u, s), t) for u, s, t in zip(unit, source_chunks, top)]
    # Grown from the last axis, doubling (lined-up blocks stay lined up).
    for axis in reversed(range(len(block))):
        while block[axis] < top[axis] and math.prod(block) * itemsize < MIN_BLOCK_BYTES:
            grown = block[:axis] + [min(2 * block[axis], top[axis])] + block[axis + 1:]
            if cost(grown) > budget:
                break
            block = grown
    while cost(block) > budget and any(b > u for b, u in zip(block, unit)):
        axis = max((i for i in range(len(block)) if block[i] > unit[i]), key=lambda i: block[i])
        block[axis] = max(unit[axis], block[axis] // unit[axis] // 2 * unit[axis])
    if cost(block) > budget:
        raise ValueError(
            f"{name}: copying one destination object of shape {tuple(unit)} needs about "
            f"{cost(block) * 4 // 3 >> 20} MiB; raise the memory limit")
    return tuple(block)


def blocks(region: Region, block: Sequence[int]) -> Iterator[Region]:
    """The blocks tiling `region`, on the grid of `block` from the origin, cut at its edges."""
    ranges = [range(r.start // b * b, r.stop, b) if r.stop > r.start else range(0)
              for r, b in zip(region, block)]
    for corner in np.ndindex(*(len(r) for r in ranges)):
        yield tuple(slice(max(r.start, rng[i]), min(r.stop, rng[i] + b))
                    for r, rng, i, b in zip(region, ranges, corner, block))


class BlockBuffers:
    """Block buffers kept from one task for the next, at most one per task in flight: a fresh
    buffer of hundreds of MiB costs the kernel a page fault and a zeroing per page, every
    block."""

    def __init__(self, in_flight: int) -> None:
        self._kept: list[npt.NDArray[np.uint8]] = []
        self._guard, self._in_flight = threading.Lock(), in_flight

    def take(self, shape: tuple[int, ...],
             dtype: np.dtype[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[np.uint8]]:
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
            del self._kept[:max(0, len(self._kept) - self._in_flight)]


def copy_into(dest: Array, region: Region, source: Array, memory: int = DEFAULT_MEMORY) -> None:
    """dest[region] = source[...], block by block: blocks of whole destination objects (so
    none is read back and merged but at the region's edges), each read from the source into
    a kept buffer and written, up to `config.num_threads` at once within `memory` bytes."""
    unit = tuple(dest.shards or dest.chunks)
    itemsize = source.dtype.itemsize
    # Per task: the block, its copy cast to the destination's type, what is being encoded
    # (at most as large) and the source chunks being decoded into it.
    copies = 2 + (source.dtype != dest.dtype)
    decoding = config.num_threads * math.prod(source.chunks) * itemsize

    def cost(block: Sequence[int]) -> int:
        return copies * math.prod(block) * max(itemsize, dest.dtype.itemsize) + int(decoding)

    # Lined up with the source's chunks where its origin is on the destination's grid.
    offsets = [r.start for r in region]
    lined_up = [c if o % c == 0 else u for c, u, o in zip(source.chunks, unit, offsets)]
    extent = [r.stop - r.start for r in region]
    budget = memory * 3 // 4  # a quarter is headroom: the interpreter, buffers in flight
    block = plan_block(unit, lined_up, extent, itemsize, cost, budget, dest.name)
    in_flight = max(1, min(config.num_threads, budget // cost(block)))
    buffers = BlockBuffers(in_flight)

    def copy_block(part: Region) -> None:
        data, buffer = buffers.take(tuple(p.stop - p.start for p in part), source.dtype)
        try:
            source.get_basic_selection(
                tuple(slice(p.start - o, p.stop - o) for p, o in zip(part, offsets)), out=data)
            dest.set_basic_selection(part, data)
        finally:
            buffers.give_back(buffer)

    parts = blocks(region, block)
    ahead = list(itertools.islice(parts, 2))
    if len(ahead) < 2:  # one block or none: in the calling thread
        for part in ahead:
            copy_block(part)
        return
    run_bounded(copy_block, itertools.chain(ahead, parts), in_flight)
