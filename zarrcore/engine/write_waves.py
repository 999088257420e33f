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
# ... and, in a write larger than this many bytes decoded, waves of at least as many: a
# smaller one encodes faster than an upload takes over a link (a fresh connection's slow
# start: about 8 round trips for 0.5 MB), so splitting such a write's encoding finer only
# slows it by the uploads beside it. Measured against moto over links of 10-40 ms RTT
# (2026-11-28): 64 MiB in 2 waves 0.62-0.68 s and 0.74-0.78 s against 0.65-0.67 s and
# 0.86-0.91 s in 16.
WRITE_WAVE_BYTES = 32 << 20
# A write of at most a wave, though, whose encoding is short beside one upload, starts with
# a wave of a chunk per thread, and each next wave is twice as large, up to two chunks per
# thread (or a WRITE_WAVES-th of the write): its uploads go while the rest is encoded, and
# reach the server spread over the encoding rather than all at its end. Against moto over
# links of 40-50 ms RTT (2026-11-29, alternating, 8-12 rounds each): 27 MiB of 432 KiB chunks
# took 0.42-0.46 s so, 0.44-0.46 s doubling up to the whole and 0.46-0.50 s in one wave
# (tensorstore 0.41-0.45 s); of 1 MiB chunks 0.47-0.49 s against 0.49-0.51 s in one wave;
# of 128 KiB chunks 0.65-0.69 s (once 1.03) against 0.68-0.85 s; over 20 ms, 8 MiB of
# 128 KiB chunks 0.19-0.22 s either way. (An earlier trial, 2026-11-28, saw
# 27 MiB of 1 MiB chunks 0.29 and 0.34 s so against 0.28 and 0.32 s in one wave, and the
# 64 MiB array over 16 ms 0.71-0.80 s doubling against 0.62-0.77 s in two equal waves: a
# write of more than a wave keeps its full waves.)


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
    for a write of at most WRITE_WAVE_BYTES, whose first wave keeps the threads busy once
    and each next doubles, up to twice that or a WRITE_WAVES-th of the write. (So a large
    shard is alone in its wave, encoded over every thread: the first upload starts after
    one shard.) One slice otherwise."""
    if not store.streams_writes:
        return [slice(0, n)]
    per_thread = -(-threads // tasks_each)  # (the objects of a wave that keeps them busy)
    small = 0 < n * item_bytes <= WRITE_WAVE_BYTES
    # (a small write's full waves: with no bytes to hold, at least twice a busy one)
    most = full_wave(n, threads, tasks_each, 0 if small else item_bytes)
    if small:
        most = max(most, 2 * per_thread)
    waves: list[slice] = []
    start, size = 0, per_thread if small else most
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
