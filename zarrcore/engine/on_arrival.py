"""Small reads over stores that hand over bytes (Store.get_many): each chunk fetched and
decoded by one call on an I/O thread, as soon as its bytes arrive, and over a link that
paces each connection slowly, asked for in ranges at once on several connections."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import KeyChangedError
from ..runtime.concurrency import run_bounded
from ..runtime.config import config
from .planning import split_span, with_key

if TYPE_CHECKING:
    from .._native.chunk_jobs import ChunkWaves
    from ..storage.base import ByteRange, ReadBytes, Request
    from . import ChunkEngine

__all__ = [
    "ON_ARRIVAL_PER_THREAD",
    "decodes_on_arrival",
    "read_on_arrival",
    "split_ranges",
    "stored_in_ranges",
]


# A read of at most this many chunks per thread of the array decodes each on the I/O thread
# its bytes arrived on (decodes_on_arrival).
ON_ARRIVAL_PER_THREAD = 2


def decodes_on_arrival(engine: ChunkEngine, count: int) -> bool:
    """Does a read of `count` chunks decode each on the I/O thread its bytes arrived on,
    rather than in waves on the array's threads? For small reads (ON_ARRIVAL_PER_THREAD
    chunks per thread at most), whose time is the path from the first request to the last
    chunk decoded: no thread hands a chunk on, and the chunks decode at once. (Larger reads
    decode on the array's threads, as many at a time, while the I/O threads keep their
    requests going.)"""
    return count <= ON_ARRIVAL_PER_THREAD * engine.options.num_threads


def read_on_arrival(
    engine: ChunkEngine,
    jobs: list[ChunkWaves],
    keys: list[str],
    first: list[int],
    requests: Sequence[Request],
    concurrency: int,
) -> None:
    """`fetched.read_chunk_waves`' fetch and decoding where `decodes_on_arrival`: each chunk
    fetched (in ranges at once where its link splits it: `split_ranges`) and decoded
    (ChunkWaves.read_one) by one call on the shared I/O threads, `concurrency` at once; a
    failure names its chunk's key."""
    ranges = split_ranges(engine, len(requests))

    def fetch_and_decode(i: int) -> None:
        j = bisect.bisect_right(first, i) - 1
        data = stored_in_ranges(engine, keys[i], ranges, requests[i])
        error = jobs[j].read_one(i - first[j], data)
        if error is not None:
            raise with_key(error, keys[i])

    run_bounded(fetch_and_decode, range(len(requests)), concurrency, executor=config.io_executor())


def split_ranges(engine: ChunkEngine, chunks: int) -> list[ByteRange] | None:
    """The ranges a small read of `chunks` chunks asks for each stored chunk in, at once,
    where its store's link splits chunks of the size last read (`split_span`), the last
    reaching a byte past the largest valid chunk (as `whole_requests`); None where a chunk
    goes whole."""
    expected, limit = engine.stored_bytes.nbytes, engine.chain.max_encoded_bytes
    ranges = split_span(engine, 0, expected, chunks) if expected < limit else []
    if len(ranges) <= 1:
        return None
    return [*ranges[:-1], (ranges[-1][0], limit + 1)]


def stored_in_ranges(
    engine: ChunkEngine, key: str, ranges: list[ByteRange] | None, whole: Request
) -> ReadBytes | None:
    """The stored chunk at `key` (None: not stored), fetched in `ranges` (`split_ranges`)
    or by its request `whole`: so too where the object was replaced between the ranges,
    which its store tells (KeyChangedError)."""
    if ranges is not None:
        try:
            for _, parts in engine.store.get_many([(key, ranges)], 1):
                return engine.stored_chunk(key, parts)
        except KeyChangedError:
            pass  # (read again, whole)
    for _, parts in engine.store.get_many([whole], 1):
        return engine.stored_chunk(key, parts)
    return None
