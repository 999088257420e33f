"""The routes over a directory store (or a MemoryStore's own data): CHUNK_BATCH and
SHARD_BATCH, one compiled job over every chunk, or every shard and inner chunk."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy.typing as npt

from .._native.batch import ChunkBatch
from .._native.shard_io import ShardBatch
from ..codecs.sharding import partial_codec
from ..metadata.indexing import BasicIndexer, ChunkProjection, OrthogonalIndexer
from ..runtime.config import config
from ..runtime.pool import run_workers
from .planning import chunk_projections, job_groups

if TYPE_CHECKING:
    from ..metadata.indexing import Indexer
    from . import ChunkEngine

__all__ = [
    "READ_AHEAD_HELPERS",
    "read_chunk_batch",
    "read_shard_batch",
    "run_batches",
    "run_shard_batches",
    "write_chunk_batch",
    "write_shard_batch",
]


# A batch of large chunk files or of inner chunks of many shards (`reads_ahead`) is also
# asked for by this many helpers on the I/O pool: from a cold page cache the device then
# works on that many files besides the readers' own. (Measured on 2 cores: a cold batch of
# 32 samples 16-32% faster with 3 or 6, a warm one 2% slower with 3, 3-4% with 6.)
READ_AHEAD_HELPERS = 3


def _ask_ahead(job: ChunkBatch | ShardBatch) -> None:
    """Start the helpers of a read of files that gains from them (`reads_ahead`) on the
    shared I/O pool: from a cold page cache the device then works on that many more files
    than the readers keep it busy with, one each. (The helpers keep the job alive, and stop
    with it.)"""
    if job.reads_ahead:
        io = config.io_executor()
        for _ in range(min(READ_AHEAD_HELPERS, job.ntasks - 1)):
            io.submit(job.work_read_ahead)


def run_batches(
    engine: ChunkEngine, indexer: Indexer, data: npt.NDArray[Any], writing: bool = False
) -> list[ChunkProjection]:
    """Read (or write) `data` by one ChunkBatch per group (`_groups`); a write returns the
    projections of the chunks it covers in part (`deferred`)."""
    _, sep, lead = engine.key_layout
    objects = engine.object_places()
    deferred = []
    for group in job_groups(engine, indexer):
        assert group.form is not None  # (as `plan` saw)
        batch = ChunkBatch(
            settings=group.form,
            **objects,
            sep=sep,
            lead_sep=lead,
            array_shape=group.extent,
            chunk_shape=group.chain.spec.shape,
            write_empty_chunks=engine.spec.writes_empty,
            plans=group.plans if group.points is None else None,
            points=group.points,
            data=data,
            cache=None if writing else engine.cache,
        )
        threads = engine.options.num_threads
        if writing:
            run_workers(batch.work_write, batch.split_writes(threads), batch.stop, threads)
        else:
            _ask_ahead(batch)
            run_workers(batch.work_read, batch.split_reads(threads), batch.stop, threads)
        # Errors name the store key: the path below the store root, array prefix included.
        batch.raise_error(engine.head_len)
        if writing:
            deferred += chunk_projections(group.plans, batch.deferred())
    return deferred


def read_chunk_batch(engine: ChunkEngine, indexer: Indexer, out: npt.NDArray[Any]) -> None:
    run_batches(engine, indexer, out)


def read_shard_batch(engine: ChunkEngine, indexer: Indexer, out: npt.NDArray[Any]) -> None:
    run_shard_batches(engine, indexer, out)


def run_shard_batches(
    engine: ChunkEngine, indexer: Indexer, data: npt.NDArray[Any], writing: bool = False
) -> list[ChunkProjection]:
    """Read (or write) `data` by one ShardBatch per group (`_groups`); a write returns the
    projections of the shards it covers in part."""
    assert engine.routes.shard_batch is not None and isinstance(indexer, OrthogonalIndexer)
    deferred = []
    for group in job_groups(engine, indexer):
        codec = partial_codec(group.chain)
        assert group.form is not None and codec is not None  # (as `plan` saw)
        shards = (
            engine.routes.shard_batch
            if group.extent == engine.array_shape and group.chain is engine.chain
            else engine.shard_spec_for(group.chain.spec.shape, group.extent, group.form)
        )
        if not writing:
            batch = shards.batch(group.plans, data, cache=engine.cache)
            _ask_ahead(batch)
            run_workers(batch.work_read, batch.ntasks, batch.stop, engine.options.num_threads)
            batch.raise_error()
            continue
        batch = shards.batch(
            group.plans,
            data,
            writing=True,
            write_empty_chunks=engine.spec.writes_empty,
            write_order=codec.write_order(),
        )
        run_workers(batch.work_write, batch.ntasks, batch.stop, engine.options.num_threads)
        batch.raise_error()
        deferred += chunk_projections(group.plans, batch.deferred())
    return deferred


def write_chunk_batch(
    engine: ChunkEngine, indexer: Indexer, value: npt.NDArray[Any]
) -> list[ChunkProjection]:
    assert isinstance(indexer, BasicIndexer)  # (as `plan` saw)
    return run_batches(engine, indexer, value, writing=True)


def write_shard_batch(
    engine: ChunkEngine, indexer: Indexer, value: npt.NDArray[Any]
) -> list[ChunkProjection]:
    return run_shard_batches(engine, indexer, value, writing=True)
