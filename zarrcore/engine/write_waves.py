"""The waves in which a write encodes its objects and hands them to a store that uploads them
as they come (Store.streams_writes), and the parts in which large objects go."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy.typing as npt

from ..codecs.sharding import partial_codec
from ..errors import ZarrcoreError
from ..runtime.config import config
from ..storage.base import S3_MOST_PARTS, Pieces
from .planning import with_key

if TYPE_CHECKING:
    from ..codecs.base import BytesLike
    from ..storage.base import Store
    from . import ChunkEngine

__all__ = [
    "WRITE_WAVES",
    "WRITE_WAVE_BYTES",
    "full_wave",
    "piece_part_bytes",
    "shard_pieces",
    "write_part_bytes",
    "write_waves",
]

# A write to a store that streams writes encodes its chunks in at most this many waves (each
# a round of the thread pool), so the first uploads start after a small part of the encoding.
WRITE_WAVES = 16
# ... and waves of at least this many bytes decoded: a smaller one encodes faster than an
# upload takes over a link (a fresh connection's slow start: about 8 round trips for 0.5 MB),
# so splitting the encoding finer only slows it by the uploads beside it. Measured against
# moto over links of 10-40 ms RTT (2026-11-28): 27 MiB of 1 MiB chunks in one wave took
# 0.33-0.35 s against 0.35-0.40 s in 14; 64 MiB in 2 waves 0.62-0.68 s and 0.74-0.78 s
# against 0.65-0.67 s and 0.86-0.91 s in 16.
WRITE_WAVE_BYTES = 32 << 20
# A write of at most half a wave, though, whose encoding is short beside one upload, starts
# with a wave of a chunk per thread, and each next wave is twice as large: its first uploads
# go while the rest is encoded, and the server takes them meanwhile. Against moto over a
# 30 ms link, 8 MiB of 128 KiB chunks took 0.24-0.26 s so and 0.27-0.32 s in one wave; but
# 27 MiB of 1 MiB chunks, over 16 and 24 ms, at best 0.29 and 0.34 s so against 0.28 and
# 0.32 s in one wave (its uploads slowed its encoding), and the 64 MiB array over 16 ms
# 0.71-0.80 s against 0.62-0.77 s in two equal waves.


def full_wave(n: int, threads: int, tasks_each: int = 1, item_bytes: int = 0) -> int:
    """The objects of a full wave of a write of `n` objects: as few as keep the `threads`
    busy (each object `tasks_each` tasks that run in parallel: a shard's inner chunks) and,
    with `item_bytes` (each object's bytes decoded), hold WRITE_WAVE_BYTES, or more so that
    there are at most WRITE_WAVES."""
    size = max(-(-threads // tasks_each), -(-n // WRITE_WAVES))
    if item_bytes:
        size = max(size, -(-WRITE_WAVE_BYTES // item_bytes))
    return size


def write_waves(
    n: int, store: Store, threads: int, tasks_each: int = 1, item_bytes: int = 0
) -> list[slice]:
    """Consecutive slices of range(n) that a write encodes one after another. On a store that
    streams writes, each wave's objects upload while the next is encoded: `full_wave`s, but
    for a write of at most half of WRITE_WAVE_BYTES, whose first wave keeps the threads busy
    once and each next doubles. (So a large shard is alone in its wave, encoded over every
    thread: the first upload starts after one shard.) One slice otherwise."""
    if not store.streams_writes:
        return [slice(0, n)]
    most = full_wave(n, threads, tasks_each, item_bytes)
    small = 0 < n * item_bytes <= WRITE_WAVE_BYTES // 2
    waves: list[slice] = []
    # (a full wave keeps the threads busy at least)
    start, size = 0, -(-threads // tasks_each) if small else most
    while start < n:
        waves.append(slice(start, min(start + size, n)))
        start, size = start + size, min(most, 2 * size)
    return waves


def write_part_bytes(store: Store) -> int | None:
    """The `part_bytes` of Store.set_many for `store`: config.write_part_bytes, but twice the
    store's least part at least (Store.least_part_bytes), so that an object's equal parts
    are never less; None where the store writes whole objects only, or with
    write_part_bytes 0."""
    least = store.least_part_bytes
    if least is None or not config.write_part_bytes:
        return None
    return max(2 * least, config.write_part_bytes)


def piece_part_bytes(store: Store, most_bytes: int) -> int | None:
    """The parts in which a store that `writes_pieces` takes Pieces of at most `most_bytes`:
    its least part (the most connections at once: measured over a 40 ms link, a 34 MB shard
    went 17% faster in 5 MiB parts than in one PUT, 13% in 7 MiB ones), or more where that
    would take over S3's most parts. None where it takes none, or write_part_bytes is 0."""
    least = store.least_part_bytes
    if not store.writes_pieces or least is None or not config.write_part_bytes:
        return None
    return max(least, -(-most_bytes // S3_MOST_PARTS))


def shard_pieces(
    engine: ChunkEngine, coords: tuple[int, ...], value: npt.NDArray[Any]
) -> Pieces | None:
    """The shard at `coords` holding `value` whole, as Pieces made in waves of inner chunks
    (ShardingCodec.pieces), so that its first parts upload while the rest is encoded: on a
    store that takes Pieces, for a shard of two write waves (WRITE_WAVE_BYTES) decoded, which
    gains more than the multipart upload's two more requests cost. None otherwise. (Measured
    against moto: a 64 MiB shard, 34 MB encoded, took 0.83-0.87x the time of one PUT after
    the encoding over a 40 ms link, and as long over 10 ms; a 27 MiB one, 14 MB encoded,
    1.15x over 24 ms.)"""
    chain = engine.chain_at(coords)
    codec = partial_codec(chain)
    if codec is None or value.shape != tuple(chain.spec.shape):
        return None
    part = piece_part_bytes(engine.store, codec.max_encoded_bytes)
    if part is None or value.nbytes < 2 * WRITE_WAVE_BYTES:
        return None
    wave = full_wave(codec.ninner, engine.options.num_threads)
    if wave >= codec.ninner:
        return None  # (nothing to overlap: encoded whole, and one PUT)
    pieces = codec.pieces(value, engine.spec.writes_empty, wave)
    if pieces is None:
        return None
    key = engine.key(coords)

    def keyed() -> Iterator[BytesLike]:
        try:
            yield from pieces
        except ZarrcoreError as e:
            raise with_key(e, key) from e

    return Pieces(keyed(), part)
