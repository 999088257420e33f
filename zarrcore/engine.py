"""The I/O engine: every chunk read and write of an array, run in compiled batches on the pool.

Reads and writes of basic selections on a directory store with a plain chain (bytes,
optionally numcodecs' shuffle filter, at most one compressor, optional trailing crc32c) run
as one compiled batch: native code walks every chunk with no Python per chunk. Sharded
arrays there whose inner chain is such a chain and whose index is little-endian (with or
without crc32c) do the same over every shard and inner chunk (zarrcore._shard_io): reads of
any basic selection, writes of the shards a selection covers wholly; partly covered shards
are read-modify-written below under their lock. Orthogonal and point (coordinate, mask)
reads over such chains run in the compiled jobs too: the batch on a directory, ChunkWaves
elsewhere and over the inner chunks of shards, with int-array axes as listed pieces and
points grouped by chunk, gathered in C. Everything else goes chunk by chunk through the
codec objects, whose heavy work is compiled and GIL-free as well.
"""
from __future__ import annotations

import bisect
import collections
import contextlib
import enum
import hashlib
import itertools
import math
import queue
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, Union

import numpy as np
import numpy.typing as npt

from ._batch import ChunkBatch
from ._cache import ChunkCache, check_budget
from .runtime.portable import at_fork_in_child
from ._chunk_jobs import ChunkWaves
from ._shard_io import ShardBatch, ShardSpec
from .codecs.base import ENCODED_BOUND, ChunkSpec, check_chunk_bytes
from .codecs.chain import CodecChain
from .codecs.sharding import EMPTY, Entries, coalesce
from .runtime.concurrency import fan_out
from .config import Claims, Options, config, parallel_map, run_workers
from .errors import (
    ChunkNotFoundError, KeyChangedError, LockUnavailableError, ShardIndexError, WriteConflictError,
    ZarrcoreError,
)
from .indexing import (
    BasicIndexer, ChunkProjection, CoordinateIndexer, OrthogonalIndexer, check_out,
)
from .metadata.grid import AxisChunks, ChunkGrid, chunk_start
from .storage.base import UNCHANGED, at_most, bounded, get_at_most
from . import _indexing

if TYPE_CHECKING:
    from ._indexing import AxisPlan, PointGroups
    from .codecs.base import BytesLike, NativeForm
    from .codecs.sharding import ShardingCodec
    from .indexing import Indexer
    from ._files import FileRoot
    from .storage.base import ByteRange, Fetched, RangeReader, ReadBytes, Request, Store

_E = TypeVar("_E", bound=Exception)
Int64s = npt.NDArray[np.int64]
#: A read's (or write's) merge of a stored object: (stored bytes or None, keep_empty) to the
#: new bytes, None to delete it, or the stored bytes themselves to leave it.
Merge = Callable[[Union["BytesLike", None], bool], Union["BytesLike", None]]


def _with_key(error: _E, key: str) -> _E:
    """Re-raise a codec or store error with the store key in front of its message."""
    if isinstance(error, OSError) and error.errno is not None:
        return type(error)(error.errno, f"chunk {key!r}: {error.strerror}")
    return type(error)(f"chunk {key!r}: {error}")


# Conditional writes (Store.set_if) that lose to another writer are tried again this many
# times, after a random pause of up to CONFLICT_PAUSE * 2**attempt (at most CONFLICT_PAUSE_MAX).
CONFLICT_RETRIES = 64
CONFLICT_PAUSE = 0.002
CONFLICT_PAUSE_MAX = 0.25
# A write to a store that streams writes encodes its chunks in at most this many waves (each
# a round of the thread pool), so the first uploads start after a small part of the encoding.
WRITE_WAVES = 16
# A sharded read fetches at most a shard per thread at a time (`_in_waves`), or this many
# bytes when shards are smaller: fewer, larger waves, each a round of requests.
WAVE_BYTES_MIN = 8 << 20
# A batch of large chunk files or of inner chunks of many shards (`reads_ahead`) is also
# asked for by this many helpers on the I/O pool: from a cold page cache the device then
# works on that many files besides the readers' own. (Measured on 2 cores: a cold batch of
# 32 samples 16-32% faster with 3 or 6, a warm one 2% slower with 3, 3-4% with 6.)
READ_AHEAD_HELPERS = 3
# Bytes of parsed shard indexes an array keeps (ShardIndexes): 16 bytes per inner chunk, so
# the indexes of 16,384 shards of 64 inner chunks each.
SHARD_INDEX_BYTES = 16 << 20
_FETCH_DONE = object()


class ShardIndexes:
    """The parsed indexes of the shards an array read, by key, each with the version of the
    shard it was read from (RangeReader.version): a later read asks a reader of that version
    only (an object store's If-Match on the ETag), so it fetches the inner chunks it wants at
    once, and a shard replaced meanwhile fails it (KeyChangedError), never reads through a
    stale index. The least recently used are forgotten past `limit` bytes of entries."""

    def __init__(self, limit: int) -> None:
        self._limit, self._held = limit, 0
        self._known: collections.OrderedDict[str, tuple[Any, Entries]] = (
            collections.OrderedDict())
        self._lock = threading.Lock()
        _every_shard_indexes.add(self)

    def get(self, key: str) -> tuple[Any, Entries] | None:
        with self._lock:
            found = self._known.get(key)
            if found is not None:
                self._known.move_to_end(key)
            return found

    def put(self, key: str, version: Any, entries: Entries) -> None:
        if entries.nbytes > self._limit:
            return
        entries = entries.copy()
        entries.flags.writeable = False  # (shared by the reads that find it)
        with self._lock:
            old = self._known.pop(key, None)
            if old is not None:
                self._held -= old[1].nbytes
            self._known[key] = (version, entries)
            self._held += entries.nbytes
            while self._held > self._limit:
                self._held -= self._known.popitem(last=False)[1][1].nbytes

    def forget(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                old = self._known.pop(key, None)
                if old is not None:
                    self._held -= old[1].nbytes


# Every ShardIndexes of the process: a forked child gives each a new lock, since one that a
# thread of the parent held at the fork would never be released there.
_every_shard_indexes: weakref.WeakSet[ShardIndexes] = weakref.WeakSet()


def _unlock_shard_indexes_in_child() -> None:
    for indexes in list(_every_shard_indexes):
        indexes._lock = threading.Lock()


at_fork_in_child(_unlock_shard_indexes_in_child)


def conflict_pause(attempt: int) -> None:
    """Sleep before trying a conditional write again after `attempt` conflicts (random, so
    that the writers that collided spread out; growing, so that many of them do)."""
    time.sleep(random.uniform(0, min(CONFLICT_PAUSE_MAX, CONFLICT_PAUSE * 2**attempt)))


def arrivals(store: Store, requests: Sequence[Request], concurrency: int,
             known: Sequence[Any] | None = None) -> Iterator[list[tuple[int, Any]]]:
    """Read `requests` with store.get_many (`concurrency` in flight) on a thread of the
    shared I/O pool (config.io_executor), yielding lists of the (i, result) pairs that
    arrived since the previous list: the caller decodes one list while the next arrives, and
    a list holds all that arrived meanwhile. With `known` (versions),
    store.get_many_versioned reads them, each result a pair (result, version)."""
    def results_of(requests: Sequence[Request]) -> Iterator[tuple[int, Any]]:
        if known is None:
            return store.get_many(requests, concurrency=concurrency)
        return ((i, (result, version)) for i, result, version
                in store.get_many_versioned(requests, known, concurrency=concurrency))

    if len(requests) <= 1:
        yield list(results_of(requests))
        return
    arrived: queue.SimpleQueue[object] = queue.SimpleQueue()
    stop = threading.Event()

    def fetch() -> None:
        results = results_of(requests)
        try:
            for item in results:
                arrived.put(item)
                if stop.is_set():
                    break
        except BaseException as e:  # re-raised by the caller
            arrived.put(e)
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
            arrived.put(_FETCH_DONE)

    # (Not a thread of its own: a read of many shards calls this once per wave.)
    fetcher = config.io_executor().submit(fetch)
    try:
        done = False
        while not done:
            items = [arrived.get()]
            while True:
                try:
                    items.append(arrived.get_nowait())
                except queue.Empty:
                    break
            batch: list[tuple[int, Fetched]] = []
            for item in items:
                if item is _FETCH_DONE:
                    done = True
                elif isinstance(item, BaseException):
                    raise item
                else:
                    batch.append(item)  # type: ignore[arg-type]  # (what fetch() put)
            items.clear()
            if batch:
                yield batch
                batch.clear()  # (handed on: its bytes go once the caller drops them)
    finally:
        stop.set()
        if not fetcher.cancel():
            fetcher.result()


def _digest(version: Any) -> bytes:
    """The 32 bytes a stored object's version (Store.get_many_versioned) is cached under."""
    return hashlib.sha256(repr(version).encode()).digest()


def _task_grid(plans: Sequence[AxisPlan]) -> Int64s:
    """Per task of a compiled job over `plans` (the C-order product of every axis' pieces), the
    chunk of each axis' piece: an (ntasks, ndim) array."""
    axes = [np.asarray(p.chunks) for p in plans]
    if not axes:
        return np.zeros((1, 0), dtype=np.int64)
    # Each axis' values broadcast into their column of the grid: a few numpy calls, where
    # meshgrid and stack run a dozen Python functions (small reads pay for every one).
    ndim = len(axes)
    grid = np.empty((*(len(a) for a in axes), ndim), dtype=np.result_type(*axes))
    for d, a in enumerate(axes):
        grid[..., d] = a.reshape((-1,) + (1,) * (ndim - 1 - d))
    return grid.reshape(-1, ndim)


def _task_values(plans: Sequence[AxisPlan], name: str) -> list[tuple[Any, ...]]:
    """Per task of a compiled job over `plans` (as `_task_grid`), the value of each axis'
    piece in the plan's list `name` ("chunks", "complete"): a list of tuples. No numpy call
    nor function made per call, so that a request of a few chunks costs a few Python steps
    (small reads and writes pay for each one)."""
    return list(itertools.product(*[getattr(p, name) for p in plans]))


def _replan(plans: Sequence[AxisPlan], shape: Sequence[int], blocks: Sequence[AxisChunks],
            chunk_shape: Sequence[int]) -> list[AxisPlan]:
    """The plans of the basic selection that `plans` make over the blocks `blocks` (per
    axis a length, or runs), over the finer grid of `chunk_shape` (the inner chunks of
    shards)."""
    out = []
    for plan, n, b, c in zip(plans, shape, blocks, chunk_shape):
        if not plan.chunks:
            out.append(_indexing.slice_plan(0, 0, 1, c, n))
            continue
        sel, out_sel = plan.chunk_sel[0], plan.out_sel[0]
        if not isinstance(sel, slice):  # an int: the axis is dropped
            out.append(_indexing.int_plan(chunk_start(b, plan.chunks[0]) + int(sel), c, n))
            continue
        first, step, count = chunk_start(b, plan.chunks[0]) + sel.start, sel.step, sum(plan.count)
        if isinstance(out_sel, slice) and out_sel.step == -1:  # walked ascending, written back
            out.append(_indexing.slice_plan(first + (count - 1) * step, first - 1, -step, c, n))
        else:
            out.append(_indexing.slice_plan(first, first + (count - 1) * step + 1, step, c, n))
    return out


def _listed_plan(positions: npt.NDArray[np.intp], chunk_len: int) -> AxisPlan:
    """Plan of one axis over chunks of `chunk_len`: `positions` (array positions, in the
    result's order) grouped by chunk, each group a listed piece whose output positions are
    its elements' places in `positions`."""
    ids = positions // chunk_len
    perm = np.argsort(ids, kind="stable")
    sorted_ids = ids[perm]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    rows = np.zeros((len(starts), 6), dtype=np.int64)  # zc_piece rows, chunk_step 0
    rows[:, 0] = sorted_ids[starts]
    rows[:, 1] = starts
    rows[:, 3] = np.diff(np.r_[starts, len(perm)])
    rows[:, 5] = 1
    listed = (positions[perm] - sorted_ids * chunk_len, perm.astype(np.int64))
    return _indexing.AxisPlan.from_rows(rows, listed, np.zeros(len(starts), dtype=bool))


def _inner_plans(indexer: OrthogonalIndexer, shape: Sequence[int],
                 blocks: Sequence[AxisChunks], chunk_shape: Sequence[int]) -> list[AxisPlan]:
    """The plans of an orthogonal selection over the blocks `blocks` (shards, per axis a
    length or runs), over the finer grid of `chunk_shape` (their inner chunks), in the
    result's order: axes indexed by arrays become listed pieces."""
    out = []
    for axis, plan in enumerate(indexer.plans):
        positions = indexer.array_positions(axis)
        if positions is None:
            out.extend(_replan([plan], shape[axis:axis + 1], blocks[axis:axis + 1],
                               chunk_shape[axis:axis + 1]))
        else:
            out.append(_listed_plan(positions, chunk_shape[axis]))
    return out


def _points(groups: PointGroups, chunk_shape: Sequence[int]
            ) -> tuple[Int64s, Int64s, Int64s, Int64s]:
    """The zc_listing arrays (point_start, local, out_index, coords) of points grouped by
    chunks of `chunk_shape` (_indexing.PointGroups), each going to its place in the result."""
    local = np.ravel_multi_index(tuple(groups.local), chunk_shape).astype(np.int64, copy=False)
    return (np.ascontiguousarray(groups.offsets), local, _result_places(groups),
            np.ascontiguousarray(groups.coords))


def _result_places(groups: PointGroups, at: Int64s | None = None) -> Int64s:
    """The places in the result of the grouped points at positions `at` (None: all) of
    their grouped order."""
    if groups.order is None:
        return (np.arange(groups.offsets[-1], dtype=np.int64) if at is None
                else at.astype(np.int64, copy=False))
    return np.ascontiguousarray(groups.order if at is None else groups.order[at])


def _core_form(chain: CodecChain) -> NativeForm | None:
    """The settings with which the compiled core reads and writes the stored objects of
    `chain` by itself: the sharding codec's batch_settings when sharded, else the chain's
    native_form; None when it cannot."""
    if chain.partial_codec is not None:
        return chain.partial_codec.batch_settings()
    return chain.native_form()


class _Group(NamedTuple):
    """The chunks (shards) of one stored shape that a request touches, which one compiled job
    runs as over a regular grid of that shape (`chain.spec.shape`) on an array of `extent`:
    each of them keeps its grid index, and so its key, and holds as much of that array as it
    holds of the real one. A regular grid's request is one group, of the array's shape."""

    chain: CodecChain  # the chain of their shape
    form: NativeForm | None  # what the core runs them with (`_core_form`; None: it cannot)
    extent: tuple[int, ...]
    plans: list[AxisPlan]  # their pieces of the indexer's plans (points: [])
    # or their points: the zc_listing arrays (point_start, local, out_index, coords)
    points: tuple[Int64s, Int64s, Int64s, Int64s] | None


def _axis_classes(chunks: Int64s, axis: AxisChunks, extent: int
                  ) -> list[tuple[int, int, Int64s]]:
    """The pieces of one axis whose chunks are `chunks` (grid indices), split by class: per
    class (edge length, extent of the regular axis its job runs over, positions of its
    pieces). A class is an edge length and how much of its chunks lies inside the array,
    which is the whole length but for a last chunk reaching past the array's end."""
    if isinstance(axis, int):
        return [(axis, extent, np.arange(len(chunks), dtype=np.int64))]
    starts, lengths = axis.start(chunks), axis.length(chunks)
    inside = np.minimum(lengths, extent - starts)
    classes = []
    for length, part in np.unique(np.stack([lengths, inside]), axis=1).T.tolist():
        pieces = np.flatnonzero((lengths == length) & (inside == part))
        # A chunk cut by the array's end is alone in its class: the last of its job's axis.
        last = int(chunks[pieces].max())
        classes.append((length, last * length + part, pieces))
    return classes


def _inner_counts(blocks: Sequence[AxisChunks], inner_shape: Sequence[int],
                  shards: Int64s) -> Int64s:
    """The number of inner chunks of `inner_shape` along each axis of the shards at grid
    indices `shards` ((n, ndim)) of the blocks `blocks` (per axis a length, or runs)."""
    counts = np.empty_like(shards)
    for d, (b, c) in enumerate(zip(blocks, inner_shape)):
        at = shards[:, d]
        counts[:, d] = b // c if isinstance(b, int) else b.length(at) // c
    return counts


def _c_order(places: Int64s, counts: Int64s) -> Int64s:
    """The C-order index of each row of `places` ((n, ndim)) in a grid of the same row of
    `counts`."""
    index = np.zeros(len(places), dtype=np.int64)
    for d in range(places.shape[1]):
        index = index * counts[:, d] + places[:, d]
    return index


def _in_shards(blocks: Sequence[AxisChunks], inner_shape: Sequence[int], coords: Int64s
               ) -> tuple[Int64s, Int64s]:
    """For inner chunks at grid indices `coords` ((n, ndim), inner chunks of `inner_shape`
    over the whole array) in shards placed by `blocks` (per axis a length, or runs; each
    shard holds whole inner chunks): their shards' grid indices, and their C-order index in
    their shard."""
    shards = np.empty_like(coords)
    places = np.empty_like(coords)
    for d, (b, c) in enumerate(zip(blocks, inner_shape)):
        at = coords[:, d]
        if isinstance(b, int):
            shards[:, d], places[:, d] = np.divmod(at, b // c)
        else:
            shards[:, d] = b.chunk_of(at * c)
            places[:, d] = at - b.start(shards[:, d]) // c
    return shards, _c_order(places, _inner_counts(blocks, inner_shape, shards))


def _first(parts: Fetched) -> ReadBytes | None:
    """The bytes of the first range of a get_many or get_ranges result `parts` (None: not
    stored)."""
    if parts is None or isinstance(parts, (bytes, memoryview)):
        return parts
    return parts[0]


def _grid_of(extent: Sequence[int], chunk_shape: Sequence[int]) -> tuple[int, ...]:
    """The number of chunks of `chunk_shape` along each axis of an array of `extent`."""
    return tuple(-(-s // c) for s, c in zip(extent, chunk_shape))


def _write_waves(n: int, store: Store, threads: int) -> list[slice]:
    """Consecutive slices of range(n) that a write encodes one after another. On a store that
    streams writes, each wave's chunks upload while the next is encoded: as many chunks per
    wave as `threads`, or more so that there are at most WRITE_WAVES; one slice otherwise."""
    if not store.streams_writes:
        return [slice(0, n)]
    size = max(threads, -(-n // WRITE_WAVES))
    return [slice(start, start + size) for start in range(0, n, size)]


def _run_waves(job: ChunkWaves | _InnerChunkWaves, tasks: npt.ArrayLike,
               work: Callable[[], None], threads: int) -> tuple[Exception, int] | None:
    """Run the tasks `tasks` of ChunkWaves `job` by its `work` (work_read, work_write) on
    `threads` threads of the pool; None, or (error, task)."""
    ntasks = job.run(tasks)
    if ntasks:
        run_workers(work, ntasks, job.stop, threads)
    job.release()
    return job.error()


def _in_waves(fetch: Callable[[Sequence[Request]], Iterator[list[tuple[int, Any]]]],
              requests: Sequence[Request], sizes: Sequence[int], shard: int, threads: int
              ) -> Iterator[list[tuple[int, Any]]]:
    """`fetch(requests)`'s batches of (i, result), the requests (of about `sizes` bytes)
    taken in waves of at most a shard (`shard` bytes) per thread (of `threads`), or
    WAVE_BYTES_MIN, each fetched once the batches before are handed on: a sharded read holds
    about one shard per thread, however many bytes it touches."""
    budget = max(threads * shard, WAVE_BYTES_MIN)
    waves, start, taken = [], 0, 0
    for i, size in enumerate(sizes):
        if taken + size > budget and i > start:
            waves.append((start, i))
            start, taken = i, 0
        taken += size
    if start < len(requests):
        waves.append((start, len(requests)))
    for start, stop in waves:
        for batch in fetch(requests[start:stop]):
            shifted = [(start + k, result) for k, result in batch]
            batch.clear()
            yield shifted
            shifted.clear()  # (handed on: its bytes go once the caller drops them)


class _InnerChunkWaves:
    """ChunkWaves for inner chains the core does not run (a transpose, nested sharding...):
    the same calls, each inner chunk decoded by its codec objects (compiled and GIL-free
    themselves), chunk by chunk on the thread pool. Its plans are of ints and slices (`plan`
    sends it basic selections only): each piece's output is a view."""

    def __init__(self, chain: CodecChain, plans: Sequence[AxisPlan],
                 out: npt.NDArray[Any]) -> None:
        self.chain, self.out = chain, out
        self.pieces = [list(zip(p.chunk_sel, p.out_sel, p.complete)) for p in plans]
        self.blobs: dict[int, memoryview] = {}
        self.listed: list[int] = []
        self.failure: tuple[Exception, int] | None = None
        self.claim = Claims(0)
        self.stopped = False

    def add(self, data: ReadBytes, tasks: Int64s, offsets: Int64s, lengths: Int64s) -> int:
        view = memoryview(data).cast("B")
        spans = list(zip(tasks.tolist(), offsets.tolist(), lengths.tolist()))
        for k, (_, offset, nbytes) in enumerate(spans):
            if offset + nbytes > view.nbytes:
                return k
        for task, offset, nbytes in spans:
            self.blobs[task] = view[offset:offset + nbytes]
        return -1

    def run(self, tasks: npt.ArrayLike) -> int:
        self.listed = np.asarray(tasks, dtype=np.int64).tolist()
        self.claim = Claims(len(self.listed))
        return len(self.listed)

    def work_read(self) -> None:
        counts = [len(p) for p in self.pieces]
        for k in self.claim:
            if self.failure is not None or self.stopped:
                return
            task = self.listed[k]
            combo = [pieces[i] for pieces, i in zip(self.pieces, np.unravel_index(task, counts))]
            chunk_sel = tuple(c[0] for c in combo)
            out_sel = tuple(c[1] for c in combo if c[1] is not None)
            try:
                self.chain.read_into(self.blobs.pop(task, None), chunk_sel,
                                     self.out[out_sel + (Ellipsis,)], all(c[2] for c in combo))
            except ZarrcoreError as e:
                self.failure = (e, task)

    def stop(self) -> None:
        """Let the workers take no further chunk (Ctrl-C)."""
        self.stopped = True

    def release(self) -> None:
        """(Each chunk's bytes are let go as it is decoded.)"""

    def error(self) -> tuple[Exception, int] | None:
        return self.failure


def _ask_ahead(job: ChunkBatch | ShardBatch) -> None:
    """Start the helpers of a read of files that gains from them (`reads_ahead`) on the
    shared I/O pool: from a cold page cache the device then works on that many more files
    than the readers keep it busy with, one each. (The helpers keep the job alive, and stop
    with it.)"""
    if job.reads_ahead:
        io = config.io_executor()
        for _ in range(min(READ_AHEAD_HELPERS, job.ntasks - 1)):
            io.submit(job.work_read_ahead)


def _encoded(chain: CodecChain, chunk: npt.NDArray[Any], keep_empty: bool) -> BytesLike | None:
    """`chunk` encoded by `chain`; None when it is all fill and not `keep_empty` (nor the
    array's write_empty_chunks)."""
    return chain.encode(chunk) if keep_empty else chain.encode_unless_fill(chunk)


def _trimmed(chain: CodecChain, data: BytesLike | None, bound: Sequence[int],
             keep_empty: bool) -> BytesLike | None:
    """The stored object `data` (None: not stored) of `chain` with what lies at or beyond
    `bound` reset to fill, encoded (None as in `_encoded`); `data` itself when nothing
    changes. A shard is trimmed through its index (ShardingCodec.trim), never decoded
    whole."""
    if data is None:
        return None
    if chain.partial_codec is not None:
        return chain.partial_codec.trim(data, bound, keep_empty)
    chunk = chain.reset_beyond(data, bound)
    return data if chunk is None else _encoded(chain, chunk, keep_empty)


class Route(enum.Enum):
    """The roads a read or a write takes (docs/architecture.md §4, §5); ChunkEngine.plan
    picks one per request."""

    CHUNK_BATCH = "chunk batch"  # R1, W1: all chunks on a directory store, one compiled job
    SHARD_BATCH = "shard batch"  # R2, W2: all shards and inner chunks on a directory store
    SHARD_WAVES = "shard waves"  # R3: shard indexes, then inner-chunk ranges, fetched in waves
    CHUNK_WAVES = "chunk waves"  # R4, W3: chunks fetched or stored together, compiled coding
    FETCHED_CHUNKS = "fetched chunks"  # R5: fetched together, decoded by the codec objects
    EACH_CHUNK = "each chunk"  # R5, W4: chunk by chunk or shard by shard, codec objects
    ONE_CHUNK = "one chunk"  # R0: `a[sel]` in one chunk or inner chunk, before any indexer

    # Members are singletons: hashed by identity in C, where Enum's hash is a Python call
    # (the route tables below are looked up on every request).
    __hash__ = object.__hash__


def _selection_kind(indexer: Indexer, ndim: int) -> tuple[bool, bool]:
    """(basic, listed) of a selection: `basic` for ints and slices (BasicIndexer); `listed`
    for any selection the compiled jobs take (orthogonal, basic included, or points of an
    array of at least one dimension)."""
    basic = isinstance(indexer, BasicIndexer)
    listed = (isinstance(indexer, OrthogonalIndexer)
              or isinstance(indexer, CoordinateIndexer) and indexer.nitems > 0 and ndim > 0)
    return basic, listed


class ChunkEngine:
    """Reads and writes the chunks of one array: keys, codec chain, fill value.

    `key_layout` is (head, separator, leading separator) of the chunk key encoding, e.g.
    ("c", "/", True) for v3 default keys "c/1/2", ("", ".", False) for v2 keys "1.2".
    `grid` places the chunks (regular when None); on a rectilinear grid `chunk_shape` is its
    largest chunk, whose chain (`chain`) bounds every stored chunk, and each chunk is coded
    by the chain of its own shape (`chain_at`).
    """

    def __init__(self, store: Store, key_prefix: str,
                 chunk_key: Callable[[Sequence[int]], str], chunk_shape: Sequence[int],
                 dtype: np.dtype[Any], fill_value: Any, codecs: Iterable[object], where: str,
                 key_layout: tuple[str, str, bool], array_shape: Sequence[int],
                 write_empty_chunks: bool | None = None, grid: ChunkGrid | None = None,
                 cache_bytes: int | None = None, options: Options = config) -> None:
        self.store = store
        self.key_prefix = key_prefix
        self._chunk_key = chunk_key
        self.chunk_shape = tuple(chunk_shape)
        self.array_shape = tuple(array_shape)
        self.grid = grid or ChunkGrid.regular(self.chunk_shape, self.array_shape)
        self.dtype = dtype
        self.fill_value = fill_value
        # How requests run (threads, requests in flight, coalescing, shards' write order):
        # the array's own options, else zarrcore.config's. The engine hands them to every
        # road, store call and codec (through `spec`).
        self.options = options
        self.spec = ChunkSpec(self.chunk_shape, dtype, fill_value,
                              write_empty_chunks=write_empty_chunks, options=self.options)
        self._codecs, self._where = list(codecs), where
        self.chain = CodecChain(self._codecs, self.spec, where)
        # The chains of a rectilinear grid's chunk shapes, made when first needed.
        self._chains: dict[tuple[int, ...], CodecChain] = {self.chunk_shape: self.chain}
        # Set for sharding: it fetches and rewrites only the byte ranges a selection needs.
        self.partial = self.chain.partial_codec
        if self.partial is None:  # (sharding checks its inner chunks itself)
            check_chunk_bytes(self.chunk_shape, dtype, f"{where}: chunks")
        self.key_layout = key_layout
        # The array's directory and its chunk files' path head on a directory store: fixed,
        # and asked for by every compiled request (`node_dir`, `key_head`).
        root = store.native_root
        self._node_dir = None if root is None else root + ("/" + key_prefix if key_prefix else "")
        self._key_head = None if root is None else f"{self._node_dir}/{key_layout[0]}"
        # The roads open to this array, decided once from what its store can do and how its
        # chunks are laid out (`plan` picks among them per request). A directory store
        # (native_root) is opened by the compiled batches themselves: `_batch` holds the
        # ChunkBatch settings of a chain the core runs; `_shards` a ShardSpec when the
        # sharding codec's index and inner chain are ones it runs (zarrcore._shard_io).
        # So is a MemoryStore holding its own data (native_memory) when the array keeps a
        # decoded-chunk cache and the core runs its chain: the batches read its blobs, whose
        # versions validate the cache's entries, as native handles do.
        # Other stores (memory, zip, fsspec, object stores) hand over bytes through
        # Store.get_many: `_waves` holds the ChunkWaves settings of an unsharded chain the
        # core runs (None for 0-d arrays); `_ranged_shards` says sharded arrays there are
        # read by planned byte ranges.
        self._batch: NativeForm | None = None
        self._shards: ShardSpec | None = None
        self._waves: NativeForm | None = None
        self._ranged_shards = self._inner_waves = False
        # A rectilinear grid's requests run one compiled job per chunk shape (`_groups`); the
        # roads are those its largest chunk's chain opens, and each job has its shape's form.
        self._forms: dict[tuple[int, ...], NativeForm | None] = {
            self.chunk_shape: self.core_settings}
        # (ChunkBatch's and ShardSpec's places of the stored objects: `_objects`; and the
        # length of what their paths hold before a store key)
        self._placed: dict[str, Any] | None = None
        self._head_len = 0 if store.native_root is None else len(store.native_root) + 1
        settings = self._forms[self.chunk_shape]
        cache_bytes = self._cache_budget(cache_bytes)
        native = store.native_root is not None or bool(
            cache_bytes and store.native_memory is not None and settings is not None
            and self.grid.is_regular)
        if native:
            if self.partial is None:
                self._batch = settings
            elif settings is not None:
                self._shards = self._shard_spec(self.chunk_shape, self.array_shape, settings)
        if not native and self.chunk_shape and self.partial is None:
            self._waves = self._forms[self.chunk_shape]
        # Sharded arrays off a directory are read by planned byte ranges; and those whose
        # inner chain the core runs, listed selections of them too, on any store, inner
        # chunks decoded in compiled waves. Over grids of shards that start on inner chunks'
        # boundaries only (regular ones, and rectilinear ones unless grown by a length the
        # inner chunks do not divide): the inner chunks then lie on one regular grid over
        # the array (`_read_shard_waves`).
        aligned = self.partial is not None and all(
            b % c == 0 if isinstance(b, int) else not np.any(b.lengths % c)
            for b, c in zip(self.grid.axes, self.partial.chunk_shape))
        self._ranged_shards = not native and aligned
        # The shard indexes those reads learned, for stores whose readers keep one version
        # (and say which: RangeReader.version).
        self._shard_indexes = (ShardIndexes(SHARD_INDEX_BYTES)
                               if self._ranged_shards and store.readers_keep_one_version
                               else None)
        self._inner_waves = aligned and self.partial is not None and (
            self.partial.inner_native_form is not None)
        self.cache = self._chunk_cache(cache_bytes)
        # R0 (`read_selection`): the job of R1 (a template ChunkBatch, made on first need) or
        # of R2 (`_shards`) reads a selection in one chunk or inner chunk of a regular grid.
        self._one_chunk: ChunkBatch | None = None
        # (Public: a caller asks before making the call, which costs arrays R0 cannot read.)
        self.one_chunk_open = bool(self.chunk_shape) and self.grid.is_regular and (
            self._batch is not None or self._shards is not None)

    def _cache_budget(self, cache_bytes: int | None) -> int:
        """The bytes of decoded chunks this array may cache: its own budget, which must hold
        an (inner) chunk (check_budget); None takes zarrcore.config's, which every array
        shares: 0 where it holds no chunk."""
        chunk = self.partial.chunk_shape if self.partial is not None else self.chunk_shape
        chunk_bytes = self.dtype.itemsize * math.prod(chunk)
        if cache_bytes is None:
            return config.cache_bytes if config.cache_bytes >= chunk_bytes else 0
        check_budget(cache_bytes, f"{self._where}: cache_bytes", chunk_bytes,
                     "chunk" if self.partial is None else "inner chunk")
        return cache_bytes

    def _chunk_cache(self, cache_bytes: int) -> ChunkCache | None:
        """The decoded-chunk cache of `cache_bytes` (_cache_budget) that the compiled reads
        of a directory store, or of a MemoryStore's own data, share (`_batch`, `_shards`),
        and those of unsharded chunks of a store with `versioned_reads` (`_waves`: zip,
        object stores); of a regular grid, whose chunks all have one shape. None for 0, or
        when no such road is open. Other stores give no identity of their objects to
        validate entries by: they are never cached."""
        chunk = self.partial.chunk_shape if self.partial is not None else self.chunk_shape
        chunk_bytes = self.dtype.itemsize * math.prod(chunk)
        if not cache_bytes or not self.grid.is_regular or (
                self._batch is None and self._shards is None
                and (self._waves is None or not self.store.versioned_reads)):
            return None
        # The versions the entries of `_waves` reads were decoded from, by key, which their
        # next reads ask the store about (Store.get_many_versioned); as many as the cache
        # holds chunks, the least recently used forgotten (their next read fetches them).
        self._versions: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._versions_held = max(1, cache_bytes // chunk_bytes)
        self._versions_lock = threading.Lock()
        ninner = (math.prod(s // c for s, c in zip(self.chunk_shape, chunk))
                  if self.partial is not None else None)
        return ChunkCache(cache_bytes, chunk_bytes, len(chunk), ninner)

    def cache_info(self) -> dict[str, int]:
        """The decoded-chunk cache's counters (ChunkCache.info); all 0 without a cache."""
        if self.cache is None:
            return dict.fromkeys(("hits", "misses", "inserts", "evictions", "stale", "entries",
                                  "used", "capacity"), 0)
        return self.cache.info()

    def _shard_spec(self, shape: Sequence[int], extent: Sequence[int],
                    settings: dict[str, Any]) -> ShardSpec:
        """The ShardSpec of shards of `shape` on an array of `extent` (directory and memory
        stores); `settings` name the keyword arguments of the compiled jobs."""
        return ShardSpec(**self._objects(), head_len=self._head_len, sep=self.key_layout[1],
                         lead_sep=self.key_layout[2], array_shape=tuple(extent),
                         shard_shape=tuple(shape), **settings)

    def _groups(self, indexer: Indexer) -> list[_Group]:
        """The request of `indexer` (its plans, or its points) as compiled jobs: one group of
        chunks per stored shape on a rectilinear grid (it has few), the whole request on a
        regular one. The one place the compiled roads split a request by chunk shape."""
        if self.grid.is_regular:
            form = self._forms[self.chunk_shape]
            if isinstance(indexer, CoordinateIndexer):
                assert indexer.groups is not None  # (points: `plan` saw them)
                return [_Group(self.chain, form, self.array_shape, [],
                               _points(indexer.groups, self.chunk_shape))]
            return [_Group(self.chain, form, self.array_shape, indexer.result_plans, None)]
        if isinstance(indexer, CoordinateIndexer):
            return self._point_groups(indexer)
        per_axis = [_axis_classes(np.asarray(p.chunks, dtype=np.int64), axis, n)
                    for p, axis, n in zip(indexer.plans, self.grid.axes, self.array_shape)]
        groups = []
        for combo in itertools.product(*per_axis):
            shape = tuple(c[0] for c in combo)
            plans = [p if len(c[2]) == p.npieces else p.subset(c[2])
                     for p, c in zip(indexer.result_plans, combo)]
            groups.append(self._group(shape, tuple(c[1] for c in combo), plans, None))
        return groups

    def _point_groups(self, indexer: CoordinateIndexer) -> list[_Group]:
        """`_groups` of points on a rectilinear grid: the groups of points by chunk split by
        the chunks' classes (`_axis_classes`)."""
        groups = indexer.groups
        assert groups is not None  # (points: `plan` saw them)
        ndim = len(self.chunk_shape)
        per_axis = [_axis_classes(groups.coords[:, d], axis, n)
                    for d, (axis, n) in enumerate(zip(self.grid.axes, self.array_shape))]
        # Each group of points' class on each axis, then its class over all axes.
        classes = np.zeros((groups.ngroups, ndim), dtype=np.int64)
        for d, axis in enumerate(per_axis):
            for k, (_, _, members) in enumerate(axis):
                classes[members, d] = k
        found, which = np.unique(classes, axis=0, return_inverse=True)
        counts = np.diff(groups.offsets)
        out = []
        for k, combo in enumerate(found.tolist()):
            members = np.flatnonzero(which.reshape(-1) == k)
            sizes = counts[members]
            starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
            # The positions (grouped) of the members' points, group after group.
            at = (np.repeat(groups.offsets[members] - starts[:-1], sizes)
                  + np.arange(starts[-1], dtype=np.int64))
            shape = tuple(per_axis[d][c][0] for d, c in enumerate(combo))
            local = np.ravel_multi_index(tuple(groups.local[:, at]), shape).astype(np.int64)
            listing = (starts, local, _result_places(groups, at),
                       np.ascontiguousarray(groups.coords[members]))
            out.append(self._group(shape, tuple(per_axis[d][c][1] for d, c in enumerate(combo)),
                                   [], listing))
        return out

    def _group(self, shape: tuple[int, ...], extent: tuple[int, ...], plans: list[AxisPlan],
               points: tuple[Int64s, Int64s, Int64s, Int64s] | None) -> _Group:
        chain = self.chain_at_shape(shape)
        if shape not in self._forms:
            self._forms[shape] = _core_form(chain)
        return _Group(chain, self._forms[shape], extent, plans, points)

    def chain_at(self, coords: Sequence[int]) -> CodecChain:
        """The codec chain of the chunk (or shard) at grid index `coords`: `chain`, but on a
        rectilinear grid that of the chunk's own shape."""
        if self.grid.is_regular:
            return self.chain
        return self.chain_at_shape(self.grid.chunk_shape_at(coords))

    def chain_at_shape(self, shape: tuple[int, ...]) -> CodecChain:
        """The codec chain of chunks (shards) of `shape`."""
        chain = self._chains.get(shape)
        if chain is None:
            spec = ChunkSpec(shape, self.dtype, self.fill_value,
                             write_empty_chunks=self.spec.write_empty_chunks,
                             options=self.options)
            chain = self._chains[shape] = CodecChain(self._codecs, spec, self._where)
        return chain

    @property
    def core_settings(self) -> NativeForm | None:
        """The settings with which the compiled core reads and writes this array's stored
        objects by itself (the batches here, native handles): the sharding codec's
        batch_settings when sharded, else the chain's native_form; None when it cannot."""
        return _core_form(self.chain)

    def plan(self, indexer: Indexer, writing: bool = False) -> Route:
        """The road (Route) a read, or with `writing` a write, of `indexer`'s selection
        takes: the first of the compiled roads open to this array (`__init__`) that takes
        that kind of selection, else the codec objects. Writes give the compiled roads only
        the chunks they cover wholly; the rest is read-modify-written (`write`)."""
        basic, listed = _selection_kind(indexer, len(self.chunk_shape))
        points = isinstance(indexer, CoordinateIndexer)
        if writing:
            listed = basic  # (the compiled writers take ints and slices)
        if self._batch is not None and listed:
            return Route.CHUNK_BATCH
        if self._shards is not None and (basic or not writing and listed and not points):
            return Route.SHARD_BATCH
        if not writing and (self._ranged_shards and basic or self._inner_waves and listed):
            return Route.SHARD_WAVES
        if self._waves is not None and listed:
            return Route.CHUNK_WAVES
        if not writing and self.partial is None and self.store.native_root is None:
            return Route.FETCHED_CHUNKS
        return Route.EACH_CHUNK

    def read_selection(self, selection: Any, fortran: bool) -> Any:
        """`a[selection]` by R0 (Route.ONE_CHUNK), the road `plan` never sees: ints and
        slices (positive steps, Ellipsis, newaxis) that fall in one chunk, or one inner chunk
        when sharded, of an array R1 or R2 reads, read by that road's compiled job on the
        calling thread, GIL released, through the decoded-chunk cache, into a new array (F
        order when `fortran`; a scalar when every axis is given an int). NotImplemented for
        any other selection: the caller makes an indexer and `read`s it."""
        if not self.one_chunk_open:
            return NotImplemented
        if self._shards is not None:
            return self._shards.read_one(selection, fortran, self.dtype, self.cache)
        reader = self._one_chunk
        if reader is None:
            assert self._batch is not None  # (the road is open)
            _, sep, lead = self.key_layout
            reader = self._one_chunk = ChunkBatch(
                settings=self._batch, **self._objects(), sep=sep, lead_sep=lead,
                array_shape=self.array_shape, chunk_shape=self.chunk_shape, plans=None,
                data=None, cache=self.cache, dtype=self.dtype)
        return reader.read_one(selection, fortran, self.options.num_threads, self._head_len)

    def node_dir(self) -> str:
        """The array's directory, which locates its chunks' key locks (csrc/zc_key_lock.h)."""
        assert self._node_dir is not None  # (directory stores only)
        return self._node_dir

    def _file_root(self) -> FileRoot:
        files = self.store.files()
        assert files is not None  # (directory stores only)
        return files

    def key_head(self) -> str:
        """The path of its chunk files up to their coordinates (ChunkBatch, ShardSpec); on a
        MemoryStore, the start of their keys."""
        if self._key_head is None:  # (a MemoryStore's: directories' is set when made)
            self._key_head = (self.key_prefix + "/" if self.key_prefix else "") + \
                self.key_layout[0]
        return self._key_head

    def _objects(self) -> dict[str, Any]:
        """What places the stored objects for ChunkBatch and ShardSpec: the files below the
        store's root and their key locks' directory, or the blobs of its memory map (locked
        by the map's own key locks). Made on first need (a directory may not exist before)."""
        objects = self._placed
        if objects is None:
            if self.store.native_root is None:
                objects = {"memory": self.store.native_memory, "key_head": self.key_head(),
                           "lock_dir": ""}
            else:
                objects = {"root": self._file_root(), "key_head": self.key_head(),
                           "lock_dir": self.node_dir()}
            self._placed = objects
        return objects

    def _run_batches(self, indexer: Indexer, data: npt.NDArray[Any],
                     writing: bool = False) -> list[ChunkProjection]:
        """Read (or write) `data` by one ChunkBatch per group (`_groups`); a write returns the
        projections of the chunks it covers in part (`deferred`)."""
        _, sep, lead = self.key_layout
        objects = self._objects()
        deferred = []
        for group in self._groups(indexer):
            assert group.form is not None  # (as `plan` saw)
            batch = ChunkBatch(
                settings=group.form, **objects, sep=sep, lead_sep=lead, array_shape=group.extent,
                chunk_shape=group.chain.spec.shape, write_empty_chunks=self.spec.writes_empty,
                plans=group.plans if group.points is None else None, points=group.points,
                data=data, cache=None if writing else self.cache)
            threads = self.options.num_threads
            if writing:
                run_workers(batch.work_write, batch.split_writes(threads), batch.stop, threads)
            else:
                _ask_ahead(batch)
                run_workers(batch.work_read, batch.split_reads(threads), batch.stop, threads)
            # Errors name the store key: the path below the store root, array prefix included.
            batch.raise_error(self._head_len)
            if writing:
                deferred += self._projections(group.plans, batch.deferred())
        return deferred

    def key(self, coords: Sequence[int]) -> str:
        rel = self._chunk_key(coords)
        return f"{self.key_prefix}/{rel}" if self.key_prefix else rel

    def _whole(self, keys: Iterable[str]) -> list[Request]:
        """Store.get_many requests of the stored chunks at `keys`, each whole but of at most
        one byte more than a valid chunk takes (see `_stored`)."""
        ranges = at_most(self.chain.max_encoded_bytes)
        return [(key, ranges) for key in keys]

    def _stored(self, key: str, parts: Fetched) -> ReadBytes | None:
        """The stored chunk `key` from the result `parts` of its `_whole` request (None: not
        stored); ValueTooLargeError when it is larger than a valid chunk."""
        if isinstance(parts, (bytes, memoryview)):  # (a request without ranges: none here)
            parts = [parts]
        return bounded(self.store, key, parts, self.chain.max_encoded_bytes, ENCODED_BOUND)

    def get_stored(self, key: str) -> ReadBytes | None:
        """The stored chunk (or shard) at `key`, None when it is not stored; a value larger
        than a valid chunk is refused (ValueTooLargeError) without being read whole."""
        return get_at_most(self.store, key, self.chain.max_encoded_bytes, ENCODED_BOUND)

    def stored(self, keys: Sequence[str]) -> list[bool]:
        """Whether each chunk (shard) of `keys` is stored, asked of the store in parallel."""
        return parallel_map(self.store.exists, keys, self.options.num_threads)

    def check_stored(self, indexer: Indexer) -> None:
        """ChunkNotFoundError naming the chunks (shards when sharded) of `indexer`'s selection
        that are not stored: a read with `read_missing_chunks` False checks them first."""
        keys = [self.key(p.coords) for p in indexer.projections()]
        missing = [k for k, stored in zip(keys, self.stored(keys)) if not stored]
        if missing:
            named = ", ".join(repr(k) for k in missing[:8]) + (", ..." if missing[8:] else "")
            raise ChunkNotFoundError(
                f"{len(missing)} chunk(s) not stored in {self.store!r}: {named}; "
                f"read_missing_chunks=True (the array's config or zarrcore.config) reads them "
                f"as the fill value")

    # -- reads ---------------------------------------------------------------
    def read(self, indexer: Indexer, out: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Fill `out` (shape indexer.drop_shape, the result's order) with the selection,
        chunks in parallel. A shard replaced by a writer between the reads of its index and
        of its inner chunks (KeyChangedError from a store that keeps one version per read) is
        read again. Every read the compiled code does goes through here: `out` is checked
        (shape, writable) before anything is written into it."""
        check_out(out, indexer.drop_shape, self._where)
        for attempt in range(CONFLICT_RETRIES - 1):
            try:
                return self._read_once(indexer, out)
            except KeyChangedError:
                conflict_pause(attempt)
        return self._read_once(indexer, out)

    def _read_once(self, indexer: Indexer, out: npt.NDArray[Any]) -> npt.NDArray[Any]:
        route = self.plan(indexer)
        if route in self._VIEW_ROUTES and indexer.permuted:
            # The codec objects decode into views of a buffer in the indexer's order.
            buffer = np.empty_like(out)
            self._READ_BY_ROUTE[route](self, indexer, buffer)
            indexer.unpermute(buffer, out)
            return out
        self._READ_BY_ROUTE[route](self, indexer, out)
        return out

    def _read_chunk_batch(self, indexer: Indexer, out: npt.NDArray[Any]) -> None:
        self._run_batches(indexer, out)

    def _read_shard_batch(self, indexer: Indexer, out: npt.NDArray[Any]) -> None:
        self._run_shard_batches(indexer, out)

    def _run_shard_batches(self, indexer: Indexer, data: npt.NDArray[Any],
                           writing: bool = False) -> list[ChunkProjection]:
        """Read (or write) `data` by one ShardBatch per group (`_groups`); a write returns the
        projections of the shards it covers in part."""
        assert self._shards is not None and isinstance(indexer, OrthogonalIndexer)  # (`plan`)
        deferred = []
        for group in self._groups(indexer):
            codec = group.chain.partial_codec
            assert group.form is not None and codec is not None  # (as `plan` saw)
            shards = (self._shards if group.extent == self.array_shape
                      and group.chain is self.chain
                      else self._shard_spec(group.chain.spec.shape, group.extent, group.form))
            if not writing:
                batch = shards.batch(group.plans, data, cache=self.cache)
                _ask_ahead(batch)
                run_workers(batch.work_read, batch.ntasks, batch.stop, self.options.num_threads)
                batch.raise_error()
                continue
            batch = shards.batch(group.plans, data, writing=True,
                                 write_empty_chunks=self.spec.writes_empty,
                                 write_order=codec.write_order())
            run_workers(batch.work_write, batch.ntasks, batch.stop, self.options.num_threads)
            batch.raise_error()
            deferred += self._projections(group.plans, batch.deferred())
        return deferred

    def _read_fetched_chunks(self, indexer: Indexer, out: npt.NDArray[Any]) -> None:
        """Every chunk fetched together, each decoded by the codec objects as it arrives."""
        projections = list(indexer.projections())
        keys = [self.key(p.coords) for p in projections]

        def decode(item: tuple[int, Fetched]) -> None:
            i, parts = item
            self._read_into(keys[i], self._stored(keys[i], parts), projections[i], out)

        for batch in arrivals(self.store, self._whole(keys), self.options.io_concurrency):
            parallel_map(decode, batch, self.options.num_threads)

    def _read_each_chunk(self, indexer: Indexer, out: npt.NDArray[Any]) -> None:
        """Chunk by chunk on the pool: a shard through ShardingCodec.read_partial, a chunk
        read whole and decoded by the codec objects."""
        def work(p: ChunkProjection) -> None:
            key = self.key(p.coords)
            try:
                if self.partial is not None:
                    partial = self.chain_at(p.coords).partial_codec
                    assert partial is not None  # (every shard's chain is sharded)
                    partial.read_partial(self.store, key, p.chunk_selection,
                                         out[p.out_selection + (Ellipsis,)])
                    return
            except ZarrcoreError as e:
                raise _with_key(e, key) from e
            self._read_into(key, self.get_stored(key), p, out)

        parallel_map(work, list(indexer.projections()), self.options.num_threads)

    def _read_into(self, key: str, data: BytesLike | None, p: ChunkProjection,
                   out: npt.NDArray[Any]) -> None:
        """Decode the chunk `data` of projection `p` (None: not stored) into `out`."""
        try:
            self.chain_at(p.coords).read_into(data, p.chunk_selection,
                                              out[p.out_selection + (Ellipsis,)], p.complete)
        except ZarrcoreError as e:
            raise _with_key(e, key) from e

    def _read_chunk_waves(self, indexer: Indexer, out: npt.NDArray[Any]) -> None:
        """Read through Store.get_many: every chunk requested at once, decoded by compiled
        workers (one ChunkWaves per group, `_groups`) in waves of those that have arrived.
        Through the cache on a store with `versioned_reads` (`_read_cached_waves`)."""
        jobs, keys, first = [], [], [0]  # first: each job's first place in `keys`
        every: list[Any] = []  # each key's chunk's grid index
        for group in self._groups(indexer):
            shape = group.chain.spec.shape
            assert group.form is not None  # (the road `plan` took is open)
            grid = _grid_of(group.extent, shape)
            coords: list[Any]
            if group.points is not None:
                job = ChunkWaves(group.form, shape, grid, None, out,
                                 points=(*group.points[:3], None), cache=self.cache)
                coords = group.points[3].tolist()
            else:
                job = ChunkWaves(group.form, shape, grid, group.plans, out, cache=self.cache)
                coords = _task_values(group.plans, "chunks")
            jobs.append(job)
            keys += [self.key(c) for c in coords]
            every += coords
            first.append(len(keys))
        if self.cache is not None:
            self._read_cached_waves(jobs, keys, first, every)
            return
        # Per batch in Python ints, no numpy call: a small read's batch is one chunk.
        for batch in arrivals(self.store, self._whole(keys), self.options.io_concurrency):
            arrived: dict[int, list[int]] = {}  # the tasks that arrived, by job
            for i, parts in batch:
                j = bisect.bisect_right(first, i) - 1
                data = self._stored(keys[i], parts)
                if data is not None:
                    jobs[j].add_whole(i - first[j], data)
                arrived.setdefault(j, []).append(i - first[j])
            self._decode_arrived(jobs, arrived, keys, first)

    def _read_cached_waves(self, jobs: list[ChunkWaves], keys: list[str], first: list[int],
                           coords: list[Any]) -> None:
        """`_read_chunk_waves` through the cache: each chunk whose version is known is asked
        for unless it still has it (Store.get_many_versioned; an object store's HEAD
        finding the ETag unchanged), and an unchanged one is copied out of its entry, not
        fetched nor decoded; the others are decoded into entries at the version they arrived with. A
        chunk found unchanged whose entry was evicted meanwhile is fetched again."""
        with self._versions_lock:
            known = [self._versions.get(k) for k in keys]
        wanted = list(range(len(keys)))
        while wanted:
            again: list[int] = []
            requests = self._whole(keys[i] for i in wanted)
            for batch in arrivals(self.store, requests, self.options.io_concurrency,
                                  [known[i] for i in wanted]):
                arrived: dict[int, list[int]] = {}  # the tasks that arrived, by job
                for w, (parts, version) in batch:
                    i = wanted[w]
                    j = bisect.bisect_right(first, i) - 1
                    task, job = i - first[j], jobs[j]
                    if parts is UNCHANGED:
                        if not job.lookup(task, coords[i], _digest(version)):
                            known[i] = None  # (evicted meanwhile: fetched again)
                            again.append(i)
                            continue
                    else:
                        self._note_version(keys[i], version)
                        data = self._stored(keys[i], parts)
                        if data is not None and (version is None or not job.lookup(
                                task, coords[i], _digest(version))):
                            job.add_whole(task, data)
                            if version is not None:
                                job.keep(task, coords[i], _digest(version))
                    arrived.setdefault(j, []).append(task)
                self._decode_arrived(jobs, arrived, keys, first)
            wanted = again

    def _decode_arrived(self, jobs: list[ChunkWaves], arrived: dict[int, list[int]],
                        keys: list[str], first: list[int]) -> None:
        """Run the wave of the tasks that arrived (by job); a failure names its chunk's key."""
        for j in sorted(arrived):
            failure = _run_waves(jobs[j], arrived[j], jobs[j].work_read,
                                 self.options.num_threads)
            if failure is not None:
                error, task = failure
                raise _with_key(error, keys[first[j] + task])

    def _note_version(self, key: str, version: Any) -> None:
        """Remember `version` as the one the entries of `key` are decoded from (None: it is
        not stored, or its store tells no version of it)."""
        with self._versions_lock:
            if version is None:
                self._versions.pop(key, None)
                return
            self._versions[key] = version
            self._versions.move_to_end(key)
            while len(self._versions) > self._versions_held:
                self._versions.popitem(last=False)

    def _read_shard_waves(self, indexer: Indexer, out: npt.NDArray[Any]) -> None:
        """Read a sharded array through Store.get_many: first the index of every shard
        touched (the whole shard when most of it is wanted), then the byte ranges of the
        inner chunks wanted, neighbours coalesced; inner chunks decode in compiled waves as
        their bytes arrive. The inner chunks of every shard lie on one regular grid over the
        array, on a rectilinear grid of shards too (`__init__`): one job takes them all."""
        codec = self.partial
        assert codec is not None  # (the road `plan` took is open)
        inner_shape, blocks = codec.chunk_shape, self.grid.axes
        job: ChunkWaves | _InnerChunkWaves
        inner_grid = _grid_of(self.array_shape, inner_shape)
        if isinstance(indexer, CoordinateIndexer):
            # Tasks are the groups of points by inner chunk (grouped once, in C); each
            # group's shard follows from its inner chunk.
            native = codec.inner_native_form
            assert native is not None  # (as `plan` saw)
            groups = indexer.groups_by(inner_shape)
            job = ChunkWaves(native, inner_shape, inner_grid, None, out,
                             points=(*_points(groups, inner_shape)[:3], None))
            at, local = _in_shards(blocks, inner_shape, groups.coords)
            found, shard_of = np.unique(at, axis=0, return_inverse=True)
            shard_of = shard_of.reshape(-1)
            shards = found.tolist()
        else:
            if isinstance(indexer, BasicIndexer):
                plans = _replan(indexer.plans, self.array_shape, blocks, inner_shape)
            else:
                plans = _inner_plans(indexer, self.array_shape, blocks, inner_shape)
            native = codec.inner_native_form
            if native is not None:
                job = ChunkWaves(native, inner_shape, inner_grid, plans, out)
            else:
                job = _InnerChunkWaves(codec.inner, plans, out)
            shards = _task_values(indexer.plans, "chunks")
            # Per task: the shard it is in (its place in `shards`) and its C-order place in it.
            of_task, local = _in_shards(blocks, inner_shape, _task_grid(plans))
            places = [np.searchsorted(np.asarray(p.chunks, dtype=np.int64), of_task[:, d])
                      for d, p in enumerate(indexer.plans)]
            shard_of = (np.ravel_multi_index(places, [len(p.chunks) for p in indexer.plans])
                        if places else np.zeros(len(of_task), dtype=np.int64))
        keys = [self.key(c) for c in shards]
        codecs = self._shard_codecs(shards)
        by_shard = np.argsort(shard_of, kind="stable")
        bounds = np.searchsorted(shard_of[by_shard], np.arange(len(keys) + 1))
        shard_tasks = [by_shard[bounds[s]:bounds[s + 1]] for s in range(len(keys))]
        requests: list[tuple[str, list[ByteRange] | None]] = [
            (key, None if c.reads_whole(len(t)) else [c.index_range()])
            for key, c, t in zip(keys, codecs, shard_tasks)]

        def name(task: int) -> str:
            inner = codecs[shard_of[task]].coords(int(local[task]))
            return f"{keys[shard_of[task]]!r}, inner chunk {inner}"

        def run(tasks: Int64s) -> None:
            failure = _run_waves(job, tasks, job.work_read, self.options.num_threads)
            if failure is not None:
                error, task = failure
                raise type(error)(f"chunk {name(task)}: {error}")

        def add(data: ReadBytes, tasks: Int64s, offsets: Int64s, lengths: Int64s) -> None:
            bad = job.add(data, tasks, offsets, lengths)
            if bad >= 0:
                raise ShardIndexError(
                    f"chunk {name(tasks[bad])}: shard index entry (offset {offsets[bad]}, "
                    f"nbytes {lengths[bad]}) reaches past the end of the shard")

        with contextlib.ExitStack() as held:
            self._read_shard_ranges(keys, requests, shard_tasks, local, codecs, held, add, run)

    def _shard_codecs(self, shards: Sequence[Sequence[int]]) -> list[ShardingCodec]:
        """The sharding codec of each shard at the grid indices `shards` (each of its own
        shape on a rectilinear grid)."""
        if self.grid.is_regular:
            assert self.partial is not None  # (sharded)
            return [self.partial] * len(shards)
        codecs = []
        for coords in shards:
            codec = self.chain_at(coords).partial_codec
            assert codec is not None  # (every shard's chain is sharded)
            codecs.append(codec)
        return codecs

    def _read_shard_ranges(
            self, keys: list[str], requests: list[tuple[str, list[ByteRange] | None]],
            shard_tasks: list[Int64s], local: Int64s, codecs: Sequence[ShardingCodec],
            held: contextlib.ExitStack, add: Callable[[ReadBytes, Int64s, Int64s, Int64s], None],
            run: Callable[[Int64s], None]) -> None:
        """The fetching half of _read_shard_waves: the `requests` for the shards' indexes (or
        whole shards), then the inner chunks' ranges, passing what arrives to `add` and
        `run`. A store whose readers keep one version of a key (Store.readers_keep_one_version)
        is read through them, index and inner chunks alike, so that a writer replacing a shard
        between the two cannot tear the read; other stores through get_many."""
        store = self.store
        concurrency, threads = self.options.io_concurrency, self.options.num_threads
        indexes = self._shard_indexes
        # The shards whose indexes `indexes` knew: read at the version they were learned from.
        known: dict[int, Entries] = {}
        fetch: Callable[[Sequence[Request]], Iterator[list[tuple[int, Any]]]]
        readers: dict[str, RangeReader | None] = {}
        if not store.readers_keep_one_version:
            def fetch(requests: Sequence[Request]) -> Iterator[list[tuple[int, Fetched]]]:
                return arrivals(store, requests, concurrency)
        else:
            for s, (key, ranges) in enumerate(requests):
                hit = None if indexes is None or ranges is None else indexes.get(key)
                if hit is not None:
                    readers[key] = held.enter_context(store.reader(key, version=hit[0]))
                    known[s] = hit[1]

            def read(request: Request) -> Sequence[ReadBytes] | None:
                key, ranges = request
                reader = readers[key]
                return None if reader is None or ranges is None else reader.get_ranges(ranges)

            def fetch(requests: Sequence[Request]
                      ) -> Iterator[list[tuple[int, Sequence[ReadBytes] | None]]]:
                for key, _ in requests:
                    if key not in readers:
                        readers[key] = held.enter_context(store.reader(key))
                # On the shared I/O pool, not threads of its own: a read makes a wave per
                # few shards, and each would start and stop as many threads.
                return fan_out(read, requests, concurrency, executor=config.io_executor())

        try:
            learned = self._read_indexed_shards(keys, requests, shard_tasks, local, codecs,
                                                known, fetch, add, run, threads)
        except KeyChangedError:
            if indexes is not None:  # (the read is tried again, reading the indexes anew)
                indexes.forget(keys)
            raise
        if indexes is not None:
            for s, entries in learned.items():
                # (None: a version the reader cannot tell, or one that tells no bytes apart)
                version = getattr(readers.get(keys[s]), "version", None)
                if version is not None:
                    indexes.put(keys[s], version, entries)

    def _read_indexed_shards(
            self, keys: list[str], requests: list[tuple[str, list[ByteRange] | None]],
            shard_tasks: list[Int64s], local: Int64s, codecs: Sequence[ShardingCodec],
            known: dict[int, Entries],
            fetch: Callable[[Sequence[Request]], Iterator[list[tuple[int, Any]]]],
            add: Callable[[ReadBytes, Int64s, Int64s, Int64s], None],
            run: Callable[[Int64s], None], threads: int) -> dict[int, Entries]:
        """The waves of _read_shard_ranges: the indexes (or whole shards) of the shards whose
        indexes are not `known`, then the inner chunks' ranges of them all. The indexes it
        read, by shard."""
        # (key, [(start, stop)]), and the tasks whose bytes that range holds, their offsets
        # in it and lengths.
        ranged: list[tuple[Request, Int64s, Int64s, Int64s]] = []
        learned: dict[int, Entries] = {}

        def place(s: int, entries: Entries, data: ReadBytes | None) -> Int64s:
            """Hand the tasks of shard `s` stored in the whole shard `data` to `add`, or
            plan the ranges of those stored (data None): the tasks to run now."""
            tasks = shard_tasks[s]
            spans = entries[local[tasks]]
            stored = spans[:, 0] != EMPTY
            left: Int64s = tasks[~stored]
            tasks, spans = tasks[stored], spans[stored]
            if data is not None:  # (all of them run in this wave: those stored decode)
                add(data, tasks, spans[:, 0].astype(np.int64), spans[:, 1].astype(np.int64))
                return shard_tasks[s]
            starts, stops, group = coalesce(spans[:, 0], spans[:, 1],
                                            self.options.coalesce_gap_bytes,
                                            self.options.coalesce_max_bytes)
            order = np.argsort(group, kind="stable")
            cuts = np.searchsorted(group[order], np.arange(len(starts) + 1))
            for g, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist())):
                members = order[cuts[g]:cuts[g + 1]]
                ranged.append(((keys[s], [(start, stop)]), tasks[members],
                               spans[members, 0].astype(np.int64) - start,
                               spans[members, 1].astype(np.int64)))
            return left

        known_keys = {keys[s] for s in known}
        if known:
            run(np.concatenate([place(s, entries, None) for s, entries in known.items()]))
        unknown = [s for s in range(len(keys)) if s not in known]
        whole = at_most(self.chain.max_encoded_bytes)
        shard = self.dtype.itemsize * math.prod(self.chunk_shape)  # (decoded: a whole one's)
        for batch in _in_waves(fetch, [(keys[s], whole if requests[s][1] is None
                                        else requests[s][1]) for s in unknown],
                               [shard if requests[s][1] is None else 0 for s in unknown],
                               shard, threads):
            wave = []
            for u, parts in batch:
                s = unknown[u]
                whole_shard = requests[s][1] is None
                data = self._stored(keys[s], parts) if whole_shard else _first(parts)
                if data is None:
                    wave.append(shard_tasks[s])
                    continue  # not stored: fill
                try:
                    if whole_shard:
                        entries = codecs[s].parse_index(
                            memoryview(data)[slice(*codecs[s].index_range())], len(data))
                    else:
                        entries = codecs[s].parse_index(data)
                except ZarrcoreError as e:
                    raise _with_key(e, keys[s]) from e
                learned[s] = entries
                wave.append(place(s, entries, data if whole_shard else None))
            run(np.concatenate(wave))
            del data, parts, batch  # (the wave's bytes go while the next arrives)
        if not ranged:
            return learned
        for batch in _in_waves(fetch, [r[0] for r in ranged],
                               [int(r[3].sum()) for r in ranged], shard, threads):
            for r, parts in batch:
                key, _ = ranged[r][0]
                data = _first(parts)
                if data is None:
                    if key in known_keys:  # (deleted since its index was read)
                        raise KeyChangedError(f"shard {key!r} was deleted")
                    raise ShardIndexError(
                        f"shard {key!r}: deleted while its inner chunks were read")
                _, tasks, offsets, lengths = ranged[r]
                add(data, tasks, offsets, lengths)
            run(np.concatenate([ranged[r][1] for r, _ in batch]))
            del data, parts, batch  # (the wave's bytes go while the next arrives)
        return learned


    # -- writes --------------------------------------------------------------
    def write(self, indexer: Indexer, value: npt.NDArray[Any]) -> None:
        """Write `value` (broadcast to indexer.drop_shape) into the selected chunks: the
        planned road writes the chunks it covers wholly and leaves the projections of the
        others, which are merged here (`_write_projections`)."""
        rest = self._WRITE_BY_ROUTE[self.plan(indexer, writing=True)](self, indexer, value)
        if rest:
            self._write_projections(rest, value)

    def _write_chunk_batch(self, indexer: Indexer,
                           value: npt.NDArray[Any]) -> list[ChunkProjection]:
        assert isinstance(indexer, BasicIndexer)  # (as `plan` saw)
        return self._run_batches(indexer, value, writing=True)

    def _write_shard_batch(self, indexer: Indexer,
                           value: npt.NDArray[Any]) -> list[ChunkProjection]:
        return self._run_shard_batches(indexer, value, writing=True)

    def _write_no_whole_chunks(self, indexer: Indexer,
                               value: npt.NDArray[Any]) -> list[ChunkProjection]:
        """EACH_CHUNK: no compiled writer; every projection is left to `_write_projections`."""
        return list(indexer.projections())

    def _write_projections(self, projections: Iterable[ChunkProjection],
                           value: npt.NDArray[Any]) -> None:
        """Write `value`'s part of each projection in `projections` (chunks or shards): a
        part covered in part by read-modify-write (`_read_modify_write`), a whole one
        encoded and stored (`put_many`); in waves (`_write_waves`) on the pool."""
        locked = self._whole_writes_locked()

        def work(p: ChunkProjection) -> tuple[str, BytesLike | None] | None:
            key = self.key(p.coords)
            part = value[p.out_selection + (Ellipsis,)]
            chain = self.chain_at(p.coords)
            try:
                if not p.complete:
                    self._read_modify_write(
                        key, lambda data, keep_empty: self._merged(data, p, part, keep_empty))
                    return None
                if part.size != math.prod(chain.spec.shape):
                    # a chunk at the array's edge: what lies outside is fill
                    data = self._merged(None, p, part, False)
                elif self.partial is not None:  # (sharding encodes `part` where it lies)
                    data = self._merged(None, p, part, self.spec.writes_empty)
                else:
                    data = chain.encode_unless_fill(
                        np.ascontiguousarray(part).reshape(chain.spec.shape))
                if not locked:
                    return key, data
                # Locked too, so it lands wholly before or after another writer's
                # read-modify-write of the same key rather than inside it.
                with self.store.lock(key, self.key_prefix):
                    self.put(key, data)
                return None
            except ZarrcoreError as e:
                raise _with_key(e, key) from e

        def encoded() -> Iterator[tuple[str, BytesLike | None]]:
            listed = list(projections)
            threads = self.options.num_threads
            for wave in _write_waves(len(listed), self.store, threads):
                yield from (item for item in parallel_map(work, listed[wave], threads)
                            if item is not None)

        self.put_many(encoded())

    def _write_chunk_waves(self, indexer: Indexer,
                           value: npt.NDArray[Any]) -> list[ChunkProjection]:
        """Encode every whole chunk of the selection in compiled waves (_write_waves) and
        store them together (Store.set_many); the projections of the partly covered chunks,
        left for read-modify-write."""
        assert isinstance(indexer, BasicIndexer)  # (as `plan` saw)
        rest = []
        for group in self._groups(indexer):
            assert group.form is not None  # (the road `plan` took is open)
            complete = [all(c) for c in _task_values(group.plans, "complete")]
            rest += self._projections(group.plans, [t for t, c in enumerate(complete) if not c])
            tasks = [t for t, c in enumerate(complete) if c]
            if not tasks:
                continue
            shape = group.chain.spec.shape
            job = ChunkWaves(group.form, shape, _grid_of(group.extent, shape), group.plans,
                             value, self.spec.writes_empty)
            coords = _task_values(group.plans, "chunks")
            self.put_many(self._encoded_waves(job, tasks, [self.key(coords[t]) for t in tasks]))
        return rest

    def _encoded_waves(self, job: ChunkWaves, tasks: list[int], keys: list[str]
                       ) -> Iterator[tuple[str, BytesLike | None]]:
        """(key, encoding) of the tasks `tasks` of the write `job`, at the keys `keys`,
        encoded in waves (_write_waves) as they are taken."""
        threads = self.options.num_threads
        for wave in _write_waves(len(tasks), self.store, threads):
            failure = _run_waves(job, tasks[wave], job.work_write, threads)
            if failure is not None:
                error, task = failure
                raise _with_key(error, keys[bisect.bisect_left(tasks, task)])
            yield from zip(keys[wave], job.encoded())

    def put_many(self, items: Iterable[tuple[str, BytesLike | None]]) -> None:
        """Store every (key, encoded chunk or None) of the iterable `items` (see `put`): each
        under its lock on a store with locks, else all together (Store.set_many, which a
        store that streams writes starts uploading as `items` yields them)."""
        store = self.store
        if self._whole_writes_locked():
            parallel_map(self._put_locked, items, self.options.num_threads)
            return
        deleted: list[str] = []

        def stored() -> Iterator[tuple[str, BytesLike]]:
            for key, data in items:
                if data is None:
                    deleted.append(key)
                else:
                    yield key, data

        store.set_many(stored(), concurrency=self.options.io_concurrency)
        for key in deleted:
            store.delete(key)

    def put_copy(self, key: str, source: Store, source_key: str) -> None:
        """Store at `key` a copy of `source`'s stored object `source_key`, as put_many stores
        bytes, copied by the store itself where it can (Store.set_copy)."""
        with (self.store.lock(key, self.key_prefix) if self._whole_writes_locked()
              else contextlib.nullcontext()):
            if not self.store.set_copy(key, source, source_key):
                self.put(key, source.get(source_key))  # (None: deleted since it was listed)

    def _put_locked(self, item: tuple[str, BytesLike | None]) -> None:
        """`put` of one (key, encoded chunk or None) under the key's lock."""
        with self.store.lock(item[0], self.key_prefix):
            self.put(*item)

    def _whole_writes_locked(self) -> bool:
        """Do whole-object writes take the key's lock? Where read-modify-writes lock, so that
        a whole write lands before or after one rather than inside it; not where they are
        conditional writes, which see the whole write change the version and try again."""
        return self.store.supports_locks and not self.store.supports_conditional_writes

    def _merged(self, data: BytesLike | None, p: ChunkProjection, part: npt.NDArray[Any],
                keep_empty: bool) -> BytesLike | None:
        """The chunk `data` (None: not stored) of projection `p` with its selection set to
        `part`, encoded; None when it is all fill and not `keep_empty` (nor the array's
        write_empty_chunks)."""
        chain = self.chain_at(p.coords)
        if chain.partial_codec is not None:
            return chain.partial_codec.merge(data, p.chunk_selection, part, keep_empty)
        return _encoded(chain, chain.merge(data, p.chunk_selection, part), keep_empty)

    def reset_outside(self, coords: Sequence[int], kept: Sequence[int]) -> None:
        """Reset what the stored object at `coords` (a chunk, or a shard) holds outside the box
        `kept` (from the array's origin) to fill, as a resize leaves it: delete it when it lies
        wholly outside, else read-modify-write it as partial writes do, so that a concurrent
        write inside `kept` is never lost."""
        key = self.key(coords)
        bound = [k - o for o, k in zip(self.grid.origin(coords), kept)]
        if any(b <= 0 for b in bound):
            self.put_many([(key, None)])
            return
        chain = self.chain_at(coords)
        try:
            self._read_modify_write(
                key, lambda data, keep_empty: _trimmed(chain, data, bound, keep_empty))
        except ZarrcoreError as e:
            raise _with_key(e, key) from e

    def _read_modify_write(self, key: str, merge: Merge) -> None:
        """Replace the chunk at `key` by `merge(stored bytes or None, keep_empty)` (encoded
        bytes, None to delete it, or the stored bytes themselves to leave it as it is) so that
        no concurrent writer's update is lost: by conditional writes where the store has them,
        tried again while another writer comes first (no lock object to create and remove, and
        whole-object writes need no lock); else under the key's lock; else only with
        config.unsafe_partial_writes. Writes, resizes and appends all update parts of stored
        objects through here."""
        store = self.store
        if store.supports_conditional_writes:
            for attempt in range(CONFLICT_RETRIES):
                data, version = store.get_versioned(key, self.chain.max_encoded_bytes,
                                                     ENCODED_BOUND)
                # A chunk left all fill stays stored as such: a delete cannot be conditional.
                new = merge(data, data is not None)
                if new is None or new is data or store.set_if(
                        key, new, version):
                    return
                conflict_pause(attempt)
            # (Callers put the key in front of these messages.)
            raise WriteConflictError(
                f"other writers replaced it {CONFLICT_RETRIES} times while it was being "
                f"updated; gave up rather than overwrite their updates")

        def replace() -> None:
            data = self.get_stored(key)
            new = merge(data, False)
            if new is not data:
                self.put(key, new)

        if store.supports_locks:
            with store.lock(key, self.key_prefix):
                replace()
            return
        if not config.unsafe_partial_writes:
            raise LockUnavailableError(
                f"cannot write part of it: {store!r} has neither locks nor conditional "
                f"writes, so a concurrent writer's update could be lost; write whole chunks, "
                f"or accept that with zarrcore.config.set(unsafe_partial_writes=True)")
        replace()

    @staticmethod
    def _projections(plans: Sequence[AxisPlan], tasks: Sequence[int]) -> list[ChunkProjection]:
        """The ChunkProjections of batch task numbers `tasks` (C order over the pieces of the
        axes' `plans`)."""
        if not tasks:
            return []  # (most writes: nothing to set up)
        dim_pieces = [list(zip(p.chunks, p.chunk_sel, p.out_sel, p.complete)) for p in plans]
        counts = [len(p) for p in dim_pieces]
        projections = []
        for task in tasks:
            combo = [pieces[i] for pieces, i in zip(dim_pieces, np.unravel_index(task, counts))]
            projections.append(ChunkProjection(
                tuple(p[0] for p in combo), tuple(p[1] for p in combo),
                tuple(p[2] for p in combo if p[2] is not None), all(p[3] for p in combo),
            ))
        return projections

    def put(self, key: str, data: BytesLike | None) -> None:
        """Store the encoded chunk `data` at `key`; None (all fill, not written) deletes it
        (on a store that cannot delete, refused only where a chunk is stored)."""
        if data is None:
            self.store.delete(key)
        else:
            self.store.set(key, data)

    # What runs each Route (see `plan`). Writers return the projections they leave.
    _READ_BY_ROUTE = {
        Route.CHUNK_BATCH: _read_chunk_batch,
        Route.SHARD_BATCH: _read_shard_batch,
        Route.SHARD_WAVES: _read_shard_waves,
        Route.CHUNK_WAVES: _read_chunk_waves,
        Route.FETCHED_CHUNKS: _read_fetched_chunks,
        Route.EACH_CHUNK: _read_each_chunk,
    }
    # The roads whose chunks decode into views of the output (ChunkProjection), in the
    # indexer's order; the compiled ones take output positions in the result's order.
    _VIEW_ROUTES = frozenset((Route.FETCHED_CHUNKS, Route.EACH_CHUNK))
    _WRITE_BY_ROUTE = {
        Route.CHUNK_BATCH: _write_chunk_batch,
        Route.SHARD_BATCH: _write_shard_batch,
        Route.CHUNK_WAVES: _write_chunk_waves,
        Route.EACH_CHUNK: _write_no_whole_chunks,
    }
