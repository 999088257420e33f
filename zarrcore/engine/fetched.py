"""The routes over stores that hand over bytes (Store.get_many): CHUNK_WAVES and SHARD_WAVES,
decoded in compiled waves as requests arrive; FETCHED_CHUNKS and EACH_CHUNK, through the
codec objects; and the fetch plumbing they share (`arrivals`)."""

from __future__ import annotations

import bisect
import contextlib
import functools
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._native.chunk_jobs import ChunkWaves
from ..codecs.chain import CodecChain
from ..codecs.sharding import EMPTY, partial_codec
from ..errors import KeyChangedError, ShardIndexError, ZarrcoreError
from ..metadata.indexing import BasicIndexer, ChunkProjection, CoordinateIndexer, OrthogonalIndexer
from ..runtime.cancellation import carrying, current
from ..runtime.config import config
from ..runtime.pool import Claims, parallel_map, run_workers
from ..storage.base import UNCHANGED, joined
from .cache import KnownIndex, inner_chunk_digest, share_versions, shared_versions, version_digest
from .on_arrival import decodes_on_arrival, read_on_arrival, split_ranges, stored_in_ranges
from .planning import (
    Int64s,
    chunk_projections,
    grid_of,
    in_shards,
    inner_plans,
    job_groups,
    point_listing,
    replan,
    requests_in_flight,
    split_span,
    task_grid,
    task_values,
    with_key,
)
from .shard_ranges import (
    Cached,
    Fetch,
    ShardReaders,
    ShardRequests,
    ShardWaves,
    known_indexes,
    ranges_in_flight,
    read_indexed_shards,
)
from .write_waves import write_waves

if TYPE_CHECKING:
    from .._native.cache import ChunkCache
    from .._native.indexing import AxisPlan
    from ..codecs.base import BytesLike
    from ..codecs.sharding import ShardingCodec
    from ..metadata.indexing import Indexer
    from ..storage.base import ByteRange, Fetched, ReadBytes, Request, Store
    from . import ChunkEngine

__all__ = [
    "FETCHED_BYTES_MIN",
    "arrivals",
    "cached_task",
    "cached_tasks",
    "decode_arrived",
    "encoded_chunk",
    "encoded_waves",
    "fetched_whole",
    "read_cached_waves",
    "read_chunk_waves",
    "read_each_chunk",
    "read_fetched_chunks",
    "read_into",
    "read_one_block",
    "read_shard_ranges",
    "read_shard_waves",
    "shard_codecs",
    "trimmed",
    "whole_in_flight",
    "write_chunk_waves",
]


# A sharded read holds at most the bytes of a shard (decoded) per thread at a time, fetched
# and not yet decoded, or this many when shards are smaller; over a link, at least what its
# large requests keep in flight (Link.bytes_in_flight), so that the budget does not leave
# the link idle.
FETCHED_BYTES_MIN = 64 << 20


_FETCH_DONE = object()


# Not fan_out: one get_many, which bounds its own requests, drained on an I/O thread.
def arrivals(
    store: Store, requests: Sequence[Request], concurrency: int, known: Sequence[Any] | None = None
) -> Iterator[list[tuple[int, Any]]]:
    """Read `requests` with store.get_many (`concurrency` in flight) on a thread of the
    shared I/O pool (config.io_executor), yielding lists of the (i, result) pairs that
    arrived since the previous list: the caller decodes one list while the next arrives, and
    a list holds all that arrived meanwhile. With `known` (versions),
    store.get_many_versioned reads them, each result a pair (result, version)."""

    def results_of(requests: Sequence[Request]) -> Iterator[tuple[int, Any]]:
        if known is None:
            return store.get_many(requests, concurrency=concurrency)
        return (
            (i, (result, version))
            for i, result, version in store.get_many_versioned(
                requests, known, concurrency=concurrency
            )
        )

    if len(requests) <= 1:
        yield list(results_of(requests))
        return
    arrived: queue.SimpleQueue[object] = queue.SimpleQueue()
    stop = threading.Event()
    token = current()  # (the work's, if cancellable: its requests stop with its chunk jobs)

    def fetch() -> None:
        results = results_of(requests)
        try:
            with carrying(token):
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
            batch, done = _arrived(arrived)
            if batch:
                yield batch
                batch.clear()  # (handed on: its bytes go once the caller drops them)
    finally:
        stop.set()
        if not fetcher.cancel():
            fetcher.result()


def _arrived(arrived: queue.SimpleQueue[object]) -> tuple[list[tuple[int, Fetched]], bool]:
    """The (i, result) pairs `arrivals`' fetch put in `arrived` since the last call (waiting
    for one item at least), and whether it is done; an error it put is raised."""
    items = [arrived.get()]
    while True:
        try:
            items.append(arrived.get_nowait())
        except queue.Empty:
            break
    batch: list[tuple[int, Fetched]] = []
    done = False
    for item in items:
        if item is _FETCH_DONE:
            done = True
        elif isinstance(item, BaseException):
            raise item
        else:
            batch.append(item)  # type: ignore[arg-type]  # (what fetch() put)
    items.clear()
    return batch, done


def _run_waves(
    job: ChunkWaves | _InnerChunkWaves, tasks: npt.ArrayLike, work: Callable[[], None], threads: int
) -> tuple[Exception, int] | None:
    """Run the tasks `tasks` of ChunkWaves `job` by its `work` (work_read, work_write) on
    `threads` threads of the pool; None, or (error, task)."""
    ntasks = job.run(tasks)
    try:
        if ntasks:
            run_workers(work, ntasks, job.stop, threads)
    finally:
        # (a cancelled wave too: run_workers raises only once no helper works on it, and its
        # bytes and cache entries would otherwise wait for the job's collection)
        job.release()
    return job.error()


def _in_waves(
    fetch: Callable[[Sequence[Request]], Iterator[list[tuple[int, Any]]]],
    requests: Sequence[Request],
    sizes: Sequence[int],
    budget: int,
) -> Iterator[list[tuple[int, Any]]]:
    """`fetch(requests)`'s batches of (i, result), the requests (of about `sizes` bytes)
    taken in waves of at most `budget` bytes, each fetched once the batches before are
    handed on: for stores read by get_many, which takes its requests all at once."""
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

    def __init__(self, chain: CodecChain, plans: Sequence[AxisPlan], out: npt.NDArray[Any]) -> None:
        self.chain, self.out = chain, out
        self.pieces = [list(zip(p.chunk_sel, p.out_sel, p.complete)) for p in plans]
        self.counts = [len(p) for p in self.pieces]
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
            self.blobs[task] = view[offset : offset + nbytes]
        return -1

    def run(self, tasks: npt.ArrayLike) -> int:
        self.listed = np.asarray(tasks, dtype=np.int64).tolist()
        self.claim = Claims(len(self.listed))
        return len(self.listed)

    def work_read(self) -> None:
        for k in self.claim:
            if self.failure is not None or self.stopped:
                return
            task = self.listed[k]
            error = self.read_one(task, self.blobs.pop(task, None))
            if error is not None:
                self.failure = (error, task)

    def read_one(self, task: int, data: ReadBytes | None) -> ZarrcoreError | None:
        """Decode task `task` from `data` (None: fill) on the calling thread; None, or the
        error."""
        at = np.unravel_index(task, self.counts)
        combo = [pieces[i] for pieces, i in zip(self.pieces, at)]
        chunk_sel = tuple(c[0] for c in combo)
        out_sel = tuple(c[1] for c in combo if c[1] is not None)
        try:
            self.chain.read_into(
                data, chunk_sel, self.out[out_sel + (Ellipsis,)], all(c[2] for c in combo)
            )
        except ZarrcoreError as e:
            return e
        return None

    def stop(self) -> None:
        """Let the workers take no further chunk (Ctrl-C)."""
        self.stopped = True

    def release(self) -> None:
        """(Each chunk's bytes are let go as it is decoded.)"""

    def error(self) -> tuple[Exception, int] | None:
        return self.failure


def encoded_chunk(chain: CodecChain, chunk: npt.NDArray[Any], keep_empty: bool) -> BytesLike | None:
    """`chunk` encoded by `chain`; None when it is all fill and not `keep_empty` (nor the
    array's write_empty_chunks)."""
    return chain.encode(chunk) if keep_empty else chain.encode_unless_fill(chunk)


def trimmed(
    chain: CodecChain, data: BytesLike | None, bound: Sequence[int], keep_empty: bool
) -> BytesLike | None:
    """The stored object `data` (None: not stored) of `chain` with what lies at or beyond
    `bound` reset to fill, encoded (None as in `encoded_chunk`); `data` itself when nothing
    changes. A shard is trimmed through its index (ShardingCodec.trim), never decoded
    whole."""
    if data is None:
        return None
    sharding = partial_codec(chain)
    if sharding is not None:
        return sharding.trim(data, bound, keep_empty)
    chunk = chain.reset_beyond(data, bound)
    return data if chunk is None else encoded_chunk(chain, chunk, keep_empty)


def whole_in_flight(engine: ChunkEngine, count: int) -> int:
    """The requests a read of `count` whole chunks keeps in flight (each of about the size
    of the last one read: ChunkEngine.stored_bytes)."""
    return requests_in_flight(engine, engine.stored_bytes.nbytes, count)


def read_fetched_chunks(engine: ChunkEngine, indexer: Indexer, out: npt.NDArray[Any]) -> None:
    """Every chunk fetched together, each decoded by the codec objects as it arrives."""
    projections = list(indexer.projections())
    keys = [engine.key(p.coords) for p in projections]

    def decode(item: tuple[int, Fetched]) -> None:
        i, parts = item
        read_into(engine, keys[i], engine.stored_chunk(keys[i], parts), projections[i], out)

    requests = engine.whole_requests(keys)
    for batch in arrivals(engine.store, requests, whole_in_flight(engine, len(requests))):
        parallel_map(decode, batch, engine.options.num_threads)


def read_each_chunk(engine: ChunkEngine, indexer: Indexer, out: npt.NDArray[Any]) -> None:
    """Chunk by chunk on the pool: a shard through ShardingCodec.read_partial, a chunk
    read whole and decoded by the codec objects."""

    def work(p: ChunkProjection) -> None:
        key = engine.key(p.coords)
        try:
            if engine.sharding is not None:
                partial = partial_codec(engine.chain_at(p.coords))
                assert partial is not None  # (every shard's chain is sharded)
                partial.read_partial(
                    engine.store, key, p.chunk_selection, out[p.out_selection + (Ellipsis,)]
                )
                return
        except ZarrcoreError as e:
            raise with_key(e, key) from e
        read_into(engine, key, engine.get_stored(key), p, out)

    parallel_map(work, list(indexer.projections()), engine.options.num_threads)


def read_into(
    engine: ChunkEngine, key: str, data: BytesLike | None, p: ChunkProjection, out: npt.NDArray[Any]
) -> None:
    """Decode the chunk `data` of projection `p` (None: not stored) into `out`."""
    try:
        engine.chain_at(p.coords).read_into(
            data, p.chunk_selection, out[p.out_selection + (Ellipsis,)], p.complete
        )
    except ZarrcoreError as e:
        raise with_key(e, key) from e


def read_chunk_waves(engine: ChunkEngine, indexer: Indexer, out: npt.NDArray[Any]) -> None:
    """Read through Store.get_many: every chunk requested at once, decoded by compiled
    workers (one ChunkWaves per group, `_groups`) in waves of those that have arrived.
    Through the cache on a store with `versioned_reads` (`_read_cached_waves`)."""
    jobs, keys, first = [], [], [0]  # first: each job's first place in `keys`
    every: list[Any] = []  # each key's chunk's grid index
    for group in job_groups(engine, indexer):
        shape = group.chain.spec.shape
        assert group.form is not None  # (the route `plan` took is open)
        grid = grid_of(group.extent, shape)
        coords: list[Any]
        if group.points is not None:
            job = ChunkWaves(
                group.form,
                shape,
                grid,
                None,
                out,
                points=(*group.points[:3], None),
                cache=engine.cache,
            )
            coords = group.points[3].tolist()
        else:
            job = ChunkWaves(group.form, shape, grid, group.plans, out, cache=engine.cache)
            coords = task_values(group.plans, "chunks")
        jobs.append(job)
        keys += [engine.key(c) for c in coords]
        every += coords
        first.append(len(keys))
    if engine.cache is not None:
        read_cached_waves(engine, jobs, keys, first, every)
        return
    requests = engine.whole_requests(keys)
    concurrency = whole_in_flight(engine, len(requests))
    if decodes_on_arrival(engine, len(requests)):
        read_on_arrival(engine, jobs, keys, first, requests, concurrency)
        return
    # Per batch in Python ints, no numpy call: a small read's batch is one chunk.
    for batch in arrivals(engine.store, requests, concurrency):
        arrived: dict[int, list[int]] = {}  # the tasks that arrived, by job
        for i, parts in batch:
            j = bisect.bisect_right(first, i) - 1
            data = engine.stored_chunk(keys[i], parts)
            if data is not None:
                jobs[j].add_whole(i - first[j], data)
            arrived.setdefault(j, []).append(i - first[j])
        decode_arrived(engine, jobs, arrived, keys, first)


def read_cached_waves(
    engine: ChunkEngine,
    jobs: list[ChunkWaves],
    keys: list[str],
    first: list[int],
    coords: list[Any],
) -> None:
    """`_read_chunk_waves` through the cache: each chunk whose version is known is asked
    for unless it still has it (Store.get_many_versioned; an object store's HEAD
    finding the ETag unchanged), and an unchanged one is copied out of its entry, not
    fetched nor decoded; the others are decoded into entries at the version they arrived with. A
    chunk found unchanged whose entry was evicted meanwhile is fetched again. In a cache
    shared between processes, of a store that `shares_versions`, entries keep the version
    they were decoded from, and a chunk is asked for at its entry's (`shared_versions`):
    another process's read is a hit here too. A chunk whose version the array's
    `recheck` trusts is copied out of its entry without asking."""
    known = engine.versions.known(keys)
    assert engine.cache is not None  # (read through the cache)
    shares = engine.cache.shared_ref is not None and engine.store.shares_versions
    if shares:
        shared_versions(jobs, first, coords, known)
    wanted = list(range(len(keys)))
    if engine.recheck.trusts_any:
        wanted = _trusted_hits(engine, jobs, keys, first, coords, known)
    while wanted:
        again: list[int] = []
        requests = engine.whole_requests(keys[i] for i in wanted)
        versions = [None if (k := known[i]) is None else k[0] for i in wanted]
        asked = time.time()  # (what the answers tell was so at this time, or later)
        for batch in arrivals(
            engine.store, requests, whole_in_flight(engine, len(requests)), versions
        ):
            arrived: dict[int, list[int]] = {}  # the tasks that arrived, by job
            read: list[tuple[int, Any]] = []  # (place, version) of those fetched, to share
            for w, (parts, version) in batch:
                i = wanted[w]
                j = bisect.bisect_right(first, i) - 1
                task, job = i - first[j], jobs[j]
                if parts is UNCHANGED:
                    if not job.lookup(task, coords[i], version_digest(version)):
                        known[i] = None  # (evicted meanwhile: fetched again)
                        again.append(i)
                        continue
                    if engine.recheck.trusts_any:
                        engine.versions.note(keys[i], version, asked)
                else:
                    engine.versions.note(keys[i], version, asked)
                    data = engine.stored_chunk(keys[i], parts)
                    if data is not None and (
                        version is None or not job.lookup(task, coords[i], version_digest(version))
                    ):
                        job.add_whole(task, data)
                        if version is not None:
                            job.keep(task, coords[i], version_digest(version))
                    if shares and data is not None and version is not None:
                        read.append((i, version))
                arrived.setdefault(j, []).append(task)
            decode_arrived(engine, jobs, arrived, keys, first)
            share_versions(jobs, first, coords, read, asked)
        wanted = again


def _trusted_hits(
    engine: ChunkEngine,
    jobs: list[ChunkWaves],
    keys: list[str],
    first: list[int],
    coords: list[Any],
    known: list[tuple[Any, float] | None],
) -> list[int]:
    """Copy out of their entries the chunks (places in the jobs' tasks) whose known version
    the array's `recheck` trusts and the cache holds at that version, asking the store
    nothing; the places of the others."""
    arrived: dict[int, list[int]] = {}
    wanted = []
    for j, job in enumerate(jobs):
        for i in range(first[j], first[j + 1]):
            found = known[i]
            if (
                found is not None
                and engine.recheck.trusts(found[1])
                and job.lookup(i - first[j], coords[i], version_digest(found[0]))
            ):
                arrived.setdefault(j, []).append(i - first[j])
            else:
                wanted.append(i)
    decode_arrived(engine, jobs, arrived, keys, first)
    return wanted


def decode_arrived(
    engine: ChunkEngine,
    jobs: list[ChunkWaves],
    arrived: dict[int, list[int]],
    keys: list[str],
    first: list[int],
) -> None:
    """Run the wave of the tasks that arrived (by job); a failure names its chunk's key."""
    for j in sorted(arrived):
        failure = _run_waves(jobs[j], arrived[j], jobs[j].work_read, engine.options.num_threads)
        if failure is not None:
            error, task = failure
            raise with_key(error, keys[first[j] + task])


@dataclass
class _ShardTasks:
    """The tasks of a sharded read (its job's: groups of points, or pieces of inner chunks):
    by task, its inner chunk (grid indices over the array), the shard it is in (its place in
    `shards`) and its C-order place in it; and the grid indices of the shards touched."""

    job: ChunkWaves | _InnerChunkWaves
    inner: Int64s
    shard_of: Int64s
    local: Int64s
    shards: Sequence[Sequence[int]]


def read_shard_waves(engine: ChunkEngine, indexer: Indexer, out: npt.NDArray[Any]) -> None:
    """Read a sharded array through Store.get_many: first the index of every shard
    touched (the whole shard when most of it is wanted), then the byte ranges of the
    inner chunks wanted, neighbours coalesced; inner chunks decode in compiled waves as
    their bytes arrive. The inner chunks of every shard lie on one regular grid over the
    array, on a rectilinear grid of shards too (`__init__`): one job takes them all."""
    codec = engine.sharding
    assert codec is not None  # (the route `plan` took is open)
    # Through the decoded-chunk cache where the store tells each shard's version
    # (`cached_tasks`).
    cache = engine.cache if engine.store.versioned_reads else None
    if isinstance(indexer, CoordinateIndexer):
        tasks = _point_tasks(engine, codec, indexer, out, cache)
    else:
        tasks = _planned_tasks(engine, codec, indexer, out, cache)
    keys = [engine.key(c) for c in tasks.shards]
    codecs = shard_codecs(engine, tasks.shards)
    by_shard = np.argsort(tasks.shard_of, kind="stable")
    bounds = np.searchsorted(tasks.shard_of[by_shard], np.arange(len(keys) + 1))
    shard_tasks = [by_shard[bounds[s] : bounds[s + 1]] for s in range(len(keys))]
    requests: list[tuple[str, list[ByteRange] | None]] = [
        (key, None if fetched_whole(engine, c, len(t)) else [c.index_range()])
        for key, c, t in zip(keys, codecs, shard_tasks)
    ]
    cached = None
    if cache is not None and isinstance(tasks.job, ChunkWaves):  # (only compiled jobs')
        cached = functools.partial(cached_tasks, tasks.job, tasks.inner.tolist())
    waves = _ShardWaves(engine, tasks, keys, codecs, cached)
    with contextlib.ExitStack() as held:
        read_shard_ranges(
            engine, ShardRequests(keys, requests, shard_tasks, tasks.local, codecs), held, waves
        )


def _point_tasks(
    engine: ChunkEngine,
    codec: ShardingCodec,
    indexer: CoordinateIndexer,
    out: npt.NDArray[Any],
    cache: ChunkCache | None,
) -> _ShardTasks:
    """Tasks are the groups of points by inner chunk (grouped once, in C); each group's
    shard follows from its inner chunk."""
    inner_shape = codec.chunk_shape
    native = codec.inner_native_form
    assert native is not None  # (as `plan` saw)
    groups = indexer.groups_by(inner_shape)
    job = ChunkWaves(
        native,
        inner_shape,
        grid_of(engine.array_shape, inner_shape),
        None,
        out,
        points=(*point_listing(groups, inner_shape)[:3], None),
        cache=cache,
    )
    inner = np.asarray(groups.coords)
    at, local = in_shards(engine.grid.axes, inner_shape, inner)
    found, shard_of = np.unique(at, axis=0, return_inverse=True)
    return _ShardTasks(job, inner, shard_of.reshape(-1), local, found.tolist())


def _planned_tasks(
    engine: ChunkEngine,
    codec: ShardingCodec,
    indexer: OrthogonalIndexer,
    out: npt.NDArray[Any],
    cache: ChunkCache | None,
) -> _ShardTasks:
    """Tasks are the pieces of inner chunks of the selection's plans, per task the shard
    it is in (by the plans' chunks) and its C-order place in it."""
    inner_shape, blocks = codec.chunk_shape, engine.grid.axes
    if isinstance(indexer, BasicIndexer):
        plans = replan(indexer.plans, engine.array_shape, blocks, inner_shape)
    else:
        plans = inner_plans(indexer, engine.array_shape, blocks, inner_shape)
    native = codec.inner_native_form
    job: ChunkWaves | _InnerChunkWaves
    if native is not None:
        job = ChunkWaves(
            native, inner_shape, grid_of(engine.array_shape, inner_shape), plans, out, cache=cache
        )
    else:
        job = _InnerChunkWaves(codec.inner, plans, out)
    inner = task_grid(plans)
    of_task, local = in_shards(blocks, inner_shape, inner)
    places = [
        np.searchsorted(np.asarray(p.chunks, dtype=np.int64), of_task[:, d])
        for d, p in enumerate(indexer.plans)
    ]
    shard_of = (
        np.ravel_multi_index(places, [len(p.chunks) for p in indexer.plans])
        if places
        else np.zeros(len(of_task), dtype=np.int64)
    )
    return _ShardTasks(job, inner, shard_of, local, task_values(indexer.plans, "chunks"))


class _ShardWaves:
    """What read_shard_ranges hands a sharded read's bytes to (ShardWaves): its job's
    `add`, and its waves run on the array's threads, each failure naming its inner chunk."""

    def __init__(
        self,
        engine: ChunkEngine,
        tasks: _ShardTasks,
        keys: Sequence[str],
        codecs: Sequence[ShardingCodec],
        cached: Cached | None,
    ) -> None:
        self.job, self.tasks, self.keys, self.codecs = tasks.job, tasks, keys, codecs
        self.threads = engine.options.num_threads
        self.cached = cached

    def name(self, task: int) -> str:
        shard = self.tasks.shard_of[task]
        inner = self.codecs[shard].coords(int(self.tasks.local[task]))
        return f"{self.keys[shard]!r}, inner chunk {inner}"

    def run(self, tasks: Int64s) -> None:
        failure = _run_waves(self.job, tasks, self.job.work_read, self.threads)
        if failure is not None:
            error, task = failure
            raise type(error)(f"chunk {self.name(task)}: {error}")

    def decode_now(self, task: int, data: ReadBytes) -> bool:
        return self.job.read_one(task, data) is None

    def add(self, data: ReadBytes, tasks: Int64s, offsets: Int64s, lengths: Int64s) -> None:
        bad = self.job.add(data, tasks, offsets, lengths)
        if bad >= 0:
            raise ShardIndexError(
                f"chunk {self.name(tasks[bad])}: shard index entry (offset {offsets[bad]}, "
                f"nbytes {lengths[bad]}) reaches past the end of the shard"
            )


def cached_tasks(
    job: ChunkWaves,
    coords: Sequence[Sequence[int]],
    version: Any,
    tasks: Int64s,
    offsets: Int64s,
    lengths: Int64s,
) -> npt.NDArray[np.bool_]:
    """Which of `tasks` (inner chunks at grid indices coords[task], stored at `offsets`
    and `lengths` in their shard at `version`) the cache holds (`cached_task`)."""
    hits = np.zeros(len(tasks), dtype=bool)
    for k, (task, offset, nbytes) in enumerate(
        zip(tasks.tolist(), offsets.tolist(), lengths.tolist())
    ):
        hits[k] = cached_task(job, task, coords[task], version, offset, nbytes)
    return hits


def cached_task(
    job: ChunkWaves, task: int, coords: Sequence[int], version: Any, offset: int, nbytes: int
) -> bool:
    """Whether the cache holds task `task` (the inner chunk at grid index `coords`, stored at
    `offset` and `nbytes` in its shard at `version`): then it is pinned and copied out of its
    entry; else it decodes the bytes it is given into a new entry. An entry's version is the
    shard's and the inner chunk's span in it: one is served only for the very bytes it was
    decoded from."""
    digest = inner_chunk_digest(version, offset, nbytes)
    if job.lookup(task, coords, digest):
        return True
    job.keep(task, coords, digest)
    return False


def read_one_block(engine: ChunkEngine, selection: Any, fortran: bool) -> Any:
    """R0 (ChunkEngine.read_selection) over a store that hands over bytes: `array[selection]`
    in one chunk, or in one inner chunk of a shard whose index the array knows
    (`shard_indexes`), read by one request (a GET, a range GET at the shard's version;
    through the cache, as `read_cached_waves` and `cached_task` read) and decoded on the
    calling thread, GIL released, with no indexer nor plan.
    NotImplemented for any other selection, for a shard whose index is not known, its
    inner chunk not stored, or the shard replaced: the planned routes read those (and learn
    the index, or read the shard again)."""
    found = engine.one_blocks().job(selection, fortran)
    if found is None:
        return NotImplemented
    job, out, index, scalar = found
    local = None
    if engine.sharding is None:
        key = engine.key(index)
        if engine.cache is not None:  # (a job of one task, read as R4 reads its jobs)
            read_cached_waves(engine, [job], [key], [0, 1], [index])
            return out[()] if scalar else out
        # (get_many, not get_stored: its answer is the store's own buffer, not a copy)
        whole = engine.whole_requests([key])[0]
        data = stored_in_ranges(engine, key, split_ranges(engine, 1), whole)
        if data is not None:
            job.add_whole(0, data)
    else:
        where = _fetch_inner_chunk(engine, job, index)
        if where is None:
            return NotImplemented
        key, local = where
    failure = job.read_here()
    if failure is not None:
        raise type(failure[0])(f"chunk {_block_name(engine, key, local)}: {failure[0]}")
    return out[()] if scalar else out


def _block_name(engine: ChunkEngine, key: str, local: int | None) -> str:
    """The name in errors of the chunk at `key`, or of the inner chunk at C-order index
    `local` of the shard at `key`."""
    if local is None:
        return repr(key)
    assert engine.sharding is not None  # (an inner chunk)
    return f"{key!r}, inner chunk {engine.sharding.coords(local)}"


def _fetch_inner_chunk(
    engine: ChunkEngine, job: ChunkWaves, index: tuple[int, ...]
) -> tuple[str, int] | None:
    """Give `job`'s one task the bytes of the inner chunk at grid index `index`, read at the
    version of its shard's known index (or, when the cache holds it at that version, the
    index's bytes only, which confirm the version; nothing where the array's `recheck`
    trusts the index's stamp): its shard's key and its C-order index there; None where
    `read_one_block` leaves the read to the planned routes."""
    indexes, codec = engine.shard_indexes, engine.sharding
    assert indexes is not None and codec is not None  # (as routes.one_chunk saw)
    per = [b // c for b, c in zip(engine.grid.axes, codec.chunk_shape)]  # type: ignore[operator]
    shard = [i // n for i, n in zip(index, per)]
    key = engine.key(shard)
    known = indexes.get(key)
    if known is None:
        return None
    version, entries, stamp = known
    local = 0
    for i, n in zip(index, per):
        local = local * n + i % n
    offset, nbytes = entries[local].tolist()
    if offset == EMPTY:
        return None  # (fill, once a request confirms the shard's version: the planned route)
    cache = engine.cache if engine.store.versioned_reads else None
    hit = cache is not None and cached_task(job, 0, index, version, offset, nbytes)
    if hit and engine.recheck.trusts(stamp):
        return key, local
    asked = time.time()
    try:
        with engine.store.reader(key, version=version) as reader:
            assert reader is not None  # (a store whose readers keep one version)
            ranges = (
                [codec.index_range()] if hit else split_span(engine, offset, offset + nbytes, 1)
            )
            parts = reader.get_ranges(ranges)
    except KeyChangedError:
        parts = None
    if parts is None:  # (replaced or deleted since its index was read)
        indexes.forget([key])
        return None
    if not hit:
        data = joined(parts)
        if data is None or memoryview(data).nbytes != nbytes:  # (a GET answers what there is)
            raise ShardIndexError(
                f"chunk {_block_name(engine, key, local)}: shard index entry (offset "
                f"{offset}, nbytes {nbytes}) reaches past the end of the shard"
            )
        job.add_whole(0, data)
    if engine.recheck.trusts_any:
        indexes.confirm(key, version, asked)
    return key, local


def shard_codecs(engine: ChunkEngine, shards: Sequence[Sequence[int]]) -> list[ShardingCodec]:
    """The sharding codec of each shard at the grid indices `shards` (each of its own
    shape on a rectilinear grid)."""
    if engine.grid.is_regular:
        assert engine.sharding is not None  # (sharded)
        return [engine.sharding] * len(shards)
    codecs = []
    for coords in shards:
        codec = partial_codec(engine.chain_at(coords))
        assert codec is not None  # (every shard's chain is sharded)
        codecs.append(codec)
    return codecs


def fetched_whole(engine: ChunkEngine, codec: ShardingCodec, ntouched: int) -> bool:
    """Is a shard of which a read touches `ntouched` inner chunks fetched by one request,
    rather than its index and then byte ranges? Where most of it is wanted
    (ShardingCodec.reads_whole), and, over a link with a round trip, it is small enough that
    one connection moves it fast (Link.piece_bytes): a larger one's ranges go over many."""
    link = engine.store.link
    return codec.reads_whole(ntouched) and (
        link is None or engine.object_bytes <= link.piece_bytes()
    )


def read_shard_ranges(
    engine: ChunkEngine, shards: ShardRequests, held: contextlib.ExitStack, waves: ShardWaves
) -> None:
    """The fetching half of read_shard_waves: the requests for the shards' indexes (or
    whole shards), then the inner chunks' ranges, passing what arrives to `waves`
    (read_indexed_shards). A store whose readers keep one version of a key
    (Store.readers_keep_one_version) is read through them (ShardReaders, held until `held`
    closes), index and inner chunks alike, so that a writer replacing a shard between the
    two cannot tear the read; other stores through get_many (with `waves.cached`,
    get_many_versioned: each shard's version, which its inner chunks' entries are of)."""
    indexes = engine.shard_indexes
    link = engine.store.link
    budget = max(
        engine.options.num_threads * engine.object_bytes,
        FETCHED_BYTES_MIN,
        0 if link is None else link.bytes_in_flight,
    )
    asked = time.time()  # (what the answers tell was so at this time, or later)
    # (Each yields batches of (i, (result, the shard's version or None)) of requests of
    # about `sizes` bytes, those held at once at most `budget` bytes.)
    fetch: Fetch
    known: dict[int, KnownIndex] = {}
    streams = None
    if engine.store.readers_keep_one_version:
        known = known_indexes(engine, shards, waves.cached is not None)
        # Whole shards decode as they arrive where they all come at once (no later arrival to
        # overlap their decoding with), not through the cache. More come in waves of `budget`,
        # each decoded while the next arrives: decoding them as they arrived took longer (64
        # shards of 1.8 MB over a 24 ms link: medians of 0.28-0.32 s against 0.27 s).
        streaming = (
            waves.cached is None
            and engine.store.streams_reads
            and sum(r is None for _, r in shards.requests) * engine.object_bytes <= budget
        )
        readers = ShardReaders(engine, held, shards.keys, known, budget, streaming)
        fetch, streams = readers, readers.streams
    else:
        fetch = _get_many_fetch(engine, budget, waves.cached is not None)
    try:
        learned = read_indexed_shards(engine, shards, known, fetch, waves, streams)
    except KeyChangedError:
        if indexes is not None:  # (the read is tried again, reading the indexes anew)
            indexes.forget(shards.keys)
        raise
    if indexes is not None:
        for s, (version, entries) in learned.items():
            if version is not None:
                indexes.put(shards.keys[s], version, entries, asked)


def _get_many_fetch(engine: ChunkEngine, budget: int, versioned: bool) -> Fetch:
    """A sharded read's fetch through Store.get_many, in waves of at most `budget` bytes
    (`_in_waves`); `versioned`: through get_many_versioned, which tells each shard's
    version."""
    store = engine.store
    if versioned:

        def fetch(
            requests: Sequence[Request], sizes: Sequence[int]
        ) -> Iterator[list[tuple[int, tuple[Any, Any]]]]:
            concurrency = ranges_in_flight(engine, sizes)
            return _in_waves(
                lambda wave: arrivals(store, wave, concurrency, [None] * len(wave)),
                requests,
                sizes,
                budget,
            )

        return fetch

    def fetch_unversioned(
        requests: Sequence[Request], sizes: Sequence[int]
    ) -> Iterator[list[tuple[int, tuple[Any, Any]]]]:
        concurrency = ranges_in_flight(engine, sizes)
        for batch in _in_waves(
            lambda wave: arrivals(store, wave, concurrency), requests, sizes, budget
        ):
            yield [(i, (parts, None)) for i, parts in batch]

    return fetch_unversioned


def write_chunk_waves(
    engine: ChunkEngine, indexer: Indexer, value: npt.NDArray[Any]
) -> list[ChunkProjection]:
    """Encode every whole chunk of the selection in compiled waves (write_waves) and
    store them together (Store.set_many); the projections of the partly covered chunks,
    left for read-modify-write."""
    assert isinstance(indexer, BasicIndexer)  # (as `plan` saw)
    rest = []
    for group in job_groups(engine, indexer):
        assert group.form is not None  # (the route `plan` took is open)
        complete = [all(c) for c in task_values(group.plans, "complete")]
        rest += chunk_projections(group.plans, [t for t, c in enumerate(complete) if not c])
        tasks = [t for t, c in enumerate(complete) if c]
        if not tasks:
            continue
        shape = group.chain.spec.shape
        job = ChunkWaves(
            group.form,
            shape,
            grid_of(group.extent, shape),
            group.plans,
            value,
            engine.spec.writes_empty,
        )
        coords = task_values(group.plans, "chunks")
        keys = [engine.key(coords[t]) for t in tasks]
        if engine.store.conditions_writes:
            engine.note_prior([coords[t] for t in tasks], keys)
        engine.put_many(encoded_waves(engine, job, tasks, keys))
    return rest


def encoded_waves(
    engine: ChunkEngine, job: ChunkWaves, tasks: list[int], keys: list[str]
) -> Iterator[tuple[str, BytesLike | None]]:
    """(key, encoding) of the tasks `tasks` of the write `job`, at the keys `keys`,
    encoded in waves (write_waves) as they are taken."""
    threads = engine.options.num_threads
    for wave in write_waves(len(tasks), engine.store, threads, 1, engine.object_bytes):
        failure = _run_waves(job, tasks[wave], job.work_write, threads)
        if failure is not None:
            error, task = failure
            raise with_key(error, keys[bisect.bisect_left(tasks, task)])
        yield from zip(keys[wave], job.encoded())
