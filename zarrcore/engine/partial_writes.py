"""The one read-modify-write: chunks and shards a write covers in part are merged into what
is stored, under the store's lock or by a conditional write that retries on a conflict."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import numpy.typing as npt

from ..codecs.base import ENCODED_BOUND
from ..codecs.sharding import partial_codec
from ..errors import LockUnavailableError, WriteConflictError, ZarrcoreError
from ..metadata.indexing import ChunkProjection
from ..runtime.pool import parallel_map
from ..storage.updates import CONFLICT_RETRIES, retry_conflicts, update_mode
from .fetched import encoded_chunk
from .planning import with_key
from .write_waves import shard_pieces, write_waves

if TYPE_CHECKING:
    from ..codecs.base import BytesLike
    from ..metadata.indexing import Indexer
    from ..storage.base import Pieces
    from . import ChunkEngine

__all__ = [
    "Merge",
    "encoded_whole",
    "merged_chunk",
    "put_locked",
    "read_modify_write",
    "whole_writes_locked",
    "write_no_whole_chunks",
    "write_projections",
]


#: A read's (or write's) merge of a stored object: (stored bytes or None, keep_empty) to the
#: new bytes, None to delete it, or the stored bytes themselves to leave it.
Merge = Callable[[Union["BytesLike", None], bool], Union["BytesLike", None]]


def write_no_whole_chunks(
    engine: ChunkEngine, indexer: Indexer, value: npt.NDArray[Any]
) -> list[ChunkProjection]:
    """EACH_CHUNK: no compiled writer; every projection is left to `_write_projections`."""
    return list(indexer.projections())


def write_projections(
    engine: ChunkEngine, projections: Iterable[ChunkProjection], value: npt.NDArray[Any]
) -> None:
    """Write `value`'s part of each projection in `projections` (chunks or shards): a
    part covered in part by read-modify-write (`read_modify_write`), a whole one
    encoded and stored (`put_many`); in waves (`write_waves`) on the pool."""
    locked = whole_writes_locked(engine)

    def work(p: ChunkProjection) -> tuple[str, BytesLike | Pieces | None] | None:
        key = engine.key(p.coords)
        part = value[p.out_selection + (Ellipsis,)]
        try:
            if not p.complete:
                read_modify_write(
                    engine,
                    key,
                    lambda data, keep_empty: merged_chunk(engine, data, p, part, keep_empty),
                )
                return None
            pieces = None if locked else shard_pieces(engine, p.coords, part)
            if pieces is not None:
                return key, pieces
            data = encoded_whole(engine, p, part)
            if not locked:
                return key, data
            # Locked too, so it lands wholly before or after another writer's
            # read-modify-write of the same key rather than inside it.
            with engine.store.lock(key, engine.key_prefix):
                engine.put(key, data)
            return None
        except ZarrcoreError as e:
            raise with_key(e, key) from e

    def encoded() -> Iterator[tuple[str, BytesLike | Pieces | None]]:
        listed = list(projections)
        if engine.store.conditions_writes:
            whole = [p.coords for p in listed if p.complete]
            engine.note_prior(whole, [engine.key(c) for c in whole])
        threads = engine.options.num_threads
        # The whole objects first: they upload while those covered in part are merged. A
        # whole shard encodes its inner chunks in parallel (when alone in its wave).
        inner = 1 if engine.sharding is None else engine.sharding.ninner
        for group, tasks_each in (
            ([p for p in listed if p.complete], inner),
            ([p for p in listed if not p.complete], 1),
        ):
            for wave in write_waves(
                len(group), engine.store, threads, tasks_each, engine.object_bytes
            ):
                yield from (
                    item for item in parallel_map(work, group[wave], threads) if item is not None
                )

    engine.put_many(encoded())


def encoded_whole(
    engine: ChunkEngine, p: ChunkProjection, part: npt.NDArray[Any]
) -> BytesLike | None:
    """The chunk or shard of projection `p` holding `part`, which covers it wholly, encoded;
    None when it is all fill and not kept."""
    chain = engine.chain_at(p.coords)
    if part.size != math.prod(chain.spec.shape):
        # a chunk at the array's edge: what lies outside is fill
        return merged_chunk(engine, None, p, part, False)
    if engine.sharding is not None:  # (sharding encodes `part` where it lies)
        return merged_chunk(engine, None, p, part, engine.spec.writes_empty)
    return chain.encode_unless_fill(np.ascontiguousarray(part).reshape(chain.spec.shape))


def put_locked(engine: ChunkEngine, item: tuple[str, BytesLike | None]) -> None:
    """`put` of one (key, encoded chunk or None) under the key's lock."""
    with engine.store.lock(item[0], engine.key_prefix):
        engine.put(*item)


def whole_writes_locked(engine: ChunkEngine) -> bool:
    """Do whole-object writes take the key's lock? Where read-modify-writes lock, so that
    a whole write lands before or after one rather than inside it; not where they are
    conditional writes, which see the whole write change the version and try again."""
    return update_mode(engine.store, locks_first=False) == "lock"


def merged_chunk(
    engine: ChunkEngine,
    data: BytesLike | None,
    p: ChunkProjection,
    part: npt.NDArray[Any],
    keep_empty: bool,
) -> BytesLike | None:
    """The chunk `data` (None: not stored) of projection `p` with its selection set to
    `part`, encoded; None when it is all fill and not `keep_empty` (nor the array's
    write_empty_chunks)."""
    chain = engine.chain_at(p.coords)
    sharding = partial_codec(chain)
    if sharding is not None:
        return sharding.merge(data, p.chunk_selection, part, keep_empty)
    return encoded_chunk(chain, chain.merge(data, p.chunk_selection, part), keep_empty)


def read_modify_write(engine: ChunkEngine, key: str, merge: Merge) -> None:
    """Replace the chunk at `key` by `merge(stored bytes or None, keep_empty)` (encoded
    bytes, None to delete it, or the stored bytes themselves to leave it as it is) so that
    no concurrent writer's update is lost: by conditional writes where the store has them,
    tried again while another writer comes first (no lock object to create and remove, and
    whole-object writes need no lock); else under the key's lock; else only with
    config.unsafe_partial_writes. Writes, resizes and appends all update parts of stored
    objects through here."""
    store = engine.store
    mode = update_mode(store, locks_first=False)
    if mode == "conditional":

        def attempt() -> None:
            data, version = store.get_versioned(key, engine.chain.max_encoded_bytes, ENCODED_BOUND)
            # A chunk left all fill stays stored as such: a delete cannot be conditional.
            new = merge(data, data is not None)
            if new is None or new is data or store.set_if(key, new, version):
                return
            # (Callers put the key in front of these messages.)
            raise WriteConflictError(
                f"other writers replaced it {CONFLICT_RETRIES} times while it was being "
                f"updated; gave up rather than overwrite their updates"
            )

        retry_conflicts(attempt)
        return

    def replace() -> None:
        data = engine.get_stored(key)
        new = merge(data, False)
        if new is not data:
            engine.put(key, new)

    if mode == "lock":
        with store.lock(key, engine.key_prefix):
            replace()
        return
    if mode is None:
        raise LockUnavailableError(
            f"cannot write part of it: {store!r} has neither locks nor conditional "
            f"writes, so a concurrent writer's update could be lost; write whole chunks, "
            f"or accept that with zarrcore.config.set(unsafe_partial_writes=True)"
        )
    replace()
