"""Shard byte-range reads: the indexes (or whole shards) of the shards a sharded read touches,
then the byte ranges of the inner chunks it wants, neighbours coalesced, each handed to the
read's waves as it arrives. fetched.read_shard_waves plans the read and its tasks, and
fetched.read_shard_ranges chooses how the store is fetched."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from ..codecs.sharding import EMPTY, Entries, coalesce
from ..errors import KeyChangedError, ShardIndexError, ZarrcoreError
from ..runtime.concurrency import fan_out
from ..runtime.config import config
from ..runtime.link import SHARE_PIECE
from ..storage.base import at_most, joined
from .cache import KnownIndex, same_version
from .planning import Int64s, requests_in_flight, split_span, with_key
from .streamed_shards import DecodesNow, ShardStream

if TYPE_CHECKING:
    import contextlib

    from ..codecs.sharding import ShardingCodec
    from ..storage.base import ByteRange, RangeReader, ReadBytes, Request, StreamingReader
    from . import ChunkEngine

__all__ = [
    "WHOLE_GAP",
    "WHOLE_KNOWN_BYTES",
    "Fetch",
    "PlannedRange",
    "Cached",
    "ShardRequests",
    "ShardWaves",
    "range_limits",
    "ranges_in_flight",
    "known_indexes",
    "ShardReaders",
    "read_indexed_shards",
]


# The gap a shard wanted whole (ShardingCodec.reads_whole) coalesces its inner chunks'
# ranges over, where its index is known: one request, as for the whole shard.
WHOLE_GAP = 1 << 62

# A shard wanted whole is fetched whole (its index in it; streamed where the store streams
# reads) unless its index is known and, over a link, it stores more than WHOLE_KNOWN_BYTES:
# then its ranges go as the link cuts them, in pieces on several connections at once where
# one would carry them slowly. The 1/8 box of a 320^3 array in 128^3 shards of 4.3 MB over a
# 40 ms link took 0.07-0.12 s by ranges once the link was timed, 0.10-0.40 s whole; of a
# 384^3 one in 96^3 shards of 1.8 MB over 24 ms, 0.057-0.063 s by ranges, 0.055-0.060 s
# whole. (By size alone: a rule by the link's split changed its choice from read to read,
# as the kept connections that were fast changed.)
WHOLE_KNOWN_BYTES = 2 << 20

# A sharded read's fetch: (requests, their sizes in bytes) -> batches of (i, (result, the
# shard's version or None)) as they arrive (`read_shard_ranges`).
Fetch = Callable[[Sequence["Request"], Sequence[int]], Iterator[list[tuple[int, tuple[Any, Any]]]]]

# A planned range of a shard: (its request, the tasks whose bytes it holds, their offsets in
# it and their lengths).
PlannedRange = tuple["Request", Int64s, Int64s, Int64s]

# Which of a shard's stored tasks the decoded-chunk cache holds (`cached_tasks`, bound to its
# read's job): (shard version, tasks, offsets, lengths) -> a mask of the hits.
Cached = Callable[[Any, Int64s, Int64s, Int64s], npt.NDArray[np.bool_]]


@dataclass(frozen=True)
class ShardRequests:
    """The shards a sharded read touches: their keys; the first request of each, for its
    index's range (or, ranges None, for the whole shard); the read's tasks in each shard
    (its job's inner chunks); each task's C-order place in its shard (`local`, by task);
    and each shard's sharding codec."""

    keys: list[str]
    requests: list[tuple[str, list[ByteRange] | None]]
    tasks: list[Int64s]
    local: Int64s
    codecs: Sequence[ShardingCodec]


class ShardWaves(DecodesNow, Protocol):
    """What a sharded read hands the bytes it fetched to: `add` gives tasks their bytes (at
    offsets and lengths in `data`), `run` decodes a wave of tasks, `decode_now` one task on
    the calling thread (False where it did not: its wave is then to run it), and `cached`
    (None where the read keeps no decoded chunks) tells which stored tasks the cache
    holds."""

    cached: Cached | None

    def add(self, data: ReadBytes, tasks: Int64s, offsets: Int64s, lengths: Int64s) -> None: ...

    def run(self, tasks: Int64s) -> None: ...


def range_limits(
    engine: ChunkEngine, whole: bool, total: int, spans: Entries
) -> tuple[int, int | None]:
    """(gap, most) by which `coalesce` groups a shard's byte ranges (its stored `spans`) into
    requests, where all of it is wanted (`whole`) or some, in a read of about `total` bytes:
    the array's options (config.array_options), or one request for a whole shard; over a
    link with a round trip, also every gap that moving costs less than a round trip
    (Link.gap_bytes), and requests cut to what one connection moves fast (Link.piece_bytes),
    unless the options set the most (smaller than Link's least where the `spans` leave no
    gaps: `dense`); both within the read's share of the requests of
    SHARE_PIECE that fit in flight (fewer and larger requests than of the least piece: over a
    10 ms link, a 34 MB shard from S3 took 0.36 s in ranges of 1 MiB, 0.20 s in 16 ranges),
    or of the fast connections (Link.fast_share) where fewer; the shard's bytes cut about
    equally (`_even_cut`): a whole shard of 4.3 MB in a read of 27 over a 20 ms link went in
    a request of 4 MiB and one of 0.2 MB, 55 in all (0.29-0.39 s against 0.18-0.23 s in 28)."""
    gap = WHOLE_GAP if whole else engine.options.coalesce_gap_bytes
    most = None if whole else engine.options.coalesce_max_bytes
    link = engine.store.link
    if link is not None:
        connections = requests_in_flight(engine, SHARE_PIECE)
        fast = link.fast_share(total)
        if fast is not None:
            connections = min(connections, fast)
        gap = max(gap, link.gap_bytes(total, connections))
        if most is None:
            dense = whole or (len(spans) > 0 and _extent(spans) == int(spans[:, 1].sum()))
            most = link.piece_bytes(total, connections, dense)
            if len(spans):
                most = _even_cut(spans, most)
    return gap, most


def _extent(spans: Entries) -> int:
    """The bytes from the first of `spans` to the end of the last."""
    return int((spans[:, 0] + spans[:, 1]).max() - spans[:, 0].min())


def _even_cut(spans: Entries, most: int) -> int:
    """The most bytes of a request where the bytes of `spans` are cut in the nearest whole
    number of requests of `most`, about equal: not in requests of `most` and a short tail,
    which would take one connection more for little. An equal share where its cuts fall
    between inner chunks, else up to an inner chunk more."""
    extent = _extent(spans)
    count = max(1, round(extent / most))
    share = -(-extent // count)
    if len(coalesce(spans[:, 0], spans[:, 1], 0, share)[0]) <= count:
        return share
    return share + int(spans[:, 1].max())


def ranges_in_flight(engine: ChunkEngine, sizes: Sequence[int]) -> int:
    """The requests a fetch of byte ranges of `sizes` bytes keeps in flight."""
    return requests_in_flight(engine, sum(sizes) // max(len(sizes), 1), len(sizes))


def _span_bytes(request: Request) -> int:
    """The bytes of a request of one range (`place`'s: (start, stop), or an index's)."""
    ranges = request[1]
    assert ranges is not None and len(ranges) == 1  # (as `place` makes them)
    start, stop = ranges[0]
    return -start if start is not None and start < 0 else (stop or 0) - (start or 0)


def _in_pieces(engine: ChunkEngine, request: Request, count: int) -> Request:
    """`request` (one range, as `place` makes them) as a read of `count` requests asks for
    it: its range in pieces at once where the link splits it (`split_span`); an index's
    suffix as it is."""
    key, spans = request
    assert spans is not None and len(spans) == 1  # (as `place` makes them)
    start, stop = spans[0]
    if start is None or stop is None or start < 0:
        return request
    return key, split_span(engine, start, stop, count)


def known_indexes(
    engine: ChunkEngine, shards: ShardRequests, cached: bool
) -> dict[int, KnownIndex]:
    """The shards whose indexes the array knows (`shard_indexes`), by their place in
    `shards`, with the version they were learned from: a store whose readers keep one
    version reads them at that version. A shard wanted whole is known too where the read
    keeps decoded chunks (`cached`): then only the inner chunks the cache does not hold are
    fetched, in one range; and over a link where it stores more than WHOLE_KNOWN_BYTES."""
    indexes = engine.shard_indexes
    known: dict[int, KnownIndex] = {}
    if indexes is None:
        return known
    over_link = engine.store.link is not None
    for s, (key, ranges) in enumerate(shards.requests):
        hit = indexes.get(key)
        if hit is None:
            continue
        if ranges is None and not cached:
            if not over_link or _stored_bytes(hit.entries) <= WHOLE_KNOWN_BYTES:
                continue  # (fetched whole, its index in it)
        known[s] = hit
    return known


def _stored_bytes(entries: Entries) -> int:
    """The bytes of the inner chunks stored in a shard of index `entries`."""
    return int(entries[entries[:, 0] != EMPTY, 1].sum())


class ShardReaders:
    """A sharded read's fetch (`Fetch`) through readers that keep one version of each shard
    (Store.readers_keep_one_version), index and inner chunks alike, so that a writer
    replacing a shard between the two cannot tear the read: the known shards' readers at
    the version their index was learned from, the others' opened as they are first asked
    for; each held until `held` closes. `streaming` (a store that streams reads): `streams`
    (by key) takes the shards whose bodies are handed on as they arrive (ShardStream)."""

    def __init__(
        self,
        engine: ChunkEngine,
        held: contextlib.ExitStack,
        keys: Sequence[str],
        known: dict[int, KnownIndex],
        budget: int,
        streaming: bool,
    ) -> None:
        self.engine, self.store, self.held, self.budget = engine, engine.store, held, budget
        self.streams: dict[str, ShardStream] | None = {} if streaming else None
        self.readers: dict[str, RangeReader | None] = {
            keys[s]: held.enter_context(self.store.reader(keys[s], version=hit.version))
            for s, hit in known.items()
        }

    def read(self, request: Request) -> tuple[Sequence[ReadBytes] | None, Any]:
        key, ranges = request
        reader = self.readers[key]
        if reader is None or ranges is None:
            return None, None
        stream = None if self.streams is None else self.streams.get(key)
        if stream is None:
            parts = reader.get_ranges(ranges)
        else:
            parts = cast("StreamingReader", reader).get_streamed(ranges, stream)
        # (None: a version the reader cannot tell, or one that tells no bytes apart)
        return parts, getattr(reader, "version", None)

    def __call__(
        self, requests: Sequence[Request], sizes: Sequence[int]
    ) -> Iterator[list[tuple[int, tuple[Any, Any]]]]:
        for key, _ in requests:
            if key not in self.readers:
                self.readers[key] = self.held.enter_context(self.store.reader(key))
        # On the shared I/O pool, not threads of its own: a read fetches twice (indexes,
        # then inner chunks), and each would start and stop as many threads.
        return fan_out(
            self.read,
            requests,
            ranges_in_flight(self.engine, sizes),
            executor=config.io_executor(),
            weights=sizes,
            budget=self.budget,
        )


def read_indexed_shards(
    engine: ChunkEngine,
    shards: ShardRequests,
    known: dict[int, KnownIndex],
    fetch: Fetch,
    waves: ShardWaves,
    streams: dict[str, ShardStream] | None = None,
) -> dict[int, tuple[Any, Entries]]:
    """The waves of read_shard_ranges: the indexes (or whole shards) of the shards whose
    indexes are not `known` together with the inner chunks' ranges of the known ones, then
    those of the others; but not the inner chunks `waves.cached` finds at their shard's
    version. A known shard none of whose inner chunks is fetched is asked for its index at
    its version (but where the array's `recheck` trusts the index's stamp), and the known
    shards' tasks that need no bytes run last, so that no read goes through an index (nor
    entries) of a shard replaced since. With `streams` (`fetch`'s, ShardReaders.streams),
    the shards fetched whole stream. The indexes it read, by shard, each with its shard's
    version."""
    read = _IndexedShards(engine, shards, known, waves, streams)
    # The tasks of known shards that need no bytes (cached, or not stored): run once every
    # request at their shards' versions has succeeded, so that what a replaced shard's stale
    # index or entries say never reaches the output.
    confirmed = [read.place(s, k.entries, None) for s, k in known.items()]
    try:
        read.read_indexes(fetch)
    finally:
        for stream in (streams or {}).values():  # (none decodes on once the read failed)
            stream.close()
    read.read_ranges(fetch)
    if confirmed:
        waves.run(np.concatenate(confirmed))
    return read.learned


class _IndexedShards:
    """The state of one read_indexed_shards: the ranges planned of the shards whose indexes
    it has (`ranged`), the indexes it read (`learned`) and each shard's version in it."""

    def __init__(
        self,
        engine: ChunkEngine,
        shards: ShardRequests,
        known: dict[int, KnownIndex],
        waves: ShardWaves,
        streams: dict[str, ShardStream] | None,
    ) -> None:
        self.engine, self.shards, self.known, self.waves = engine, shards, known, waves
        self.streams = streams
        # The ranges planned and not fetched yet (read_indexes and read_ranges take them).
        self.ranged: list[PlannedRange] = []
        self.learned: dict[int, tuple[Any, Entries]] = {}
        # Each shard's version in this read (None: unknown, or not stored).
        self.versions: dict[str, Any] = {shards.keys[s]: k.version for s, k in known.items()}
        self.known_keys = {shards.keys[s] for s in known}

    def place(
        self, s: int, entries: Entries, data: ReadBytes | None, decoded: Sequence[int] = ()
    ) -> Int64s:
        """Hand the tasks of shard `s` stored in the whole shard `data` to `add`, or
        plan the ranges of those stored (data None): the tasks to run now (those not stored,
        and those the cache holds, with the whole shard's), but those `decoded` already."""
        keys, cached = self.shards.keys, self.waves.cached
        tasks = self.shards.tasks[s]
        if decoded:
            tasks = tasks[~np.isin(tasks, decoded)]
        every = tasks
        spans = entries[self.shards.local[tasks]]
        stored = spans[:, 0] != EMPTY
        left: Int64s = tasks[~stored]
        tasks, spans = tasks[stored], spans[stored]
        version = self.versions.get(keys[s])
        if cached is not None and version is not None and len(tasks):
            hits = cached(
                version, tasks, spans[:, 0].astype(np.int64), spans[:, 1].astype(np.int64)
            )
            left = np.concatenate([left, tasks[hits]])
            tasks, spans = tasks[~hits], spans[~hits]
        if data is not None:  # (all of them run in this wave: those stored decode)
            self.waves.add(data, tasks, spans[:, 0].astype(np.int64), spans[:, 1].astype(np.int64))
            return every
        if not len(tasks):
            if s in self.known and not self.engine.recheck.trusts(self.known[s].stamp):
                # (its version confirmed by one request for its index)
                none = np.zeros(0, dtype=np.int64)
                self.ranged.append(
                    ((keys[s], [self.shards.codecs[s].index_range()]), none, none, none)
                )
            return left
        self.plan_ranges(s, tasks, spans)
        return left

    def plan_ranges(self, s: int, tasks: Int64s, spans: Entries) -> None:
        """Plan the requests for the stored `tasks` of shard `s` (at `spans`, their entries):
        neighbours coalesced by the array's limits (`range_limits`)."""
        keys = self.shards.keys
        # (The read's bytes, were each of its inner chunks as large as this shard's: shards
        # may hold few of them, a box's corner, or many.)
        total = int(spans[:, 1].sum()) * len(self.shards.local) // len(spans)
        whole = self.shards.requests[s][1] is None
        starts, stops, group = coalesce(
            spans[:, 0], spans[:, 1], *range_limits(self.engine, whole, total, spans)
        )
        order = np.argsort(group, kind="stable")
        cuts = np.searchsorted(group[order], np.arange(len(starts) + 1))
        for g, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist())):
            members = order[cuts[g] : cuts[g + 1]]
            self.ranged.append(
                (
                    (keys[s], [(start, stop)]),
                    tasks[members],
                    spans[members, 0].astype(np.int64) - start,
                    spans[members, 1].astype(np.int64),
                )
            )

    def read_indexes(self, fetch: Fetch) -> None:
        """Fetch the indexes (or the whole shards) of the shards whose indexes are not known,
        and with them the ranges planned so far (the known shards'), so that neither waits
        for the other; each wave runs the tasks of what arrived: the shards not stored, and
        those of whole shards and of ranges."""
        requests, keys = self.shards.requests, self.shards.keys
        unknown = [s for s in range(len(keys)) if s not in self.known]
        whole = at_most(self.engine.chain.max_encoded_bytes)
        firsts = []
        for s in unknown:
            ranges = requests[s][1]
            if ranges is None:  # (the whole shard; streamed where the read streams)
                ranges = whole if self.streams is None else self.streamed(s, whole)
            firsts.append((keys[s], ranges))
        shard = self.engine.object_bytes
        sizes = [shard if requests[s][1] is None else 0 for s in unknown]
        ranged, more, more_sizes = self.range_requests()
        for batch in fetch(firsts + more, sizes + more_sizes):
            wave = []
            for i, (parts, version) in batch:
                if i >= len(unknown):
                    wave.append(self.range_arrived(ranged[i - len(unknown)], parts, version))
                    continue
                # (inline, not a call per shard: reads of a thousand shards count them)
                s = unknown[i]
                whole_shard = requests[s][1] is None
                stream = self.streams.get(keys[s]) if self.streams else None
                if stream is not None and parts is not None:
                    parts = stream.shard(parts)
                data = self.engine.stored_chunk(keys[s], parts) if whole_shard else joined(parts)
                if data is None:
                    wave.append(self.shards.tasks[s])
                    continue  # not stored: fill
                entries = self.parse_index(s, data, whole_shard)
                self.learned[s] = (version, entries)
                self.versions[keys[s]] = version
                decoded = () if stream is None else stream.decoded(entries)
                wave.append(self.place(s, entries, data if whole_shard else None, decoded))
            self.waves.run(np.concatenate(wave))
            data = parts = None  # (the wave's bytes go while the next arrives)
            del batch

    def streamed(self, s: int, whole: Sequence[ByteRange]) -> list[ByteRange]:
        """The ranges shard `s`, wanted `whole`, is asked in by its stream (ShardStream),
        which its body goes to as it arrives."""
        assert self.streams is not None  # (a read that streams)
        tasks = self.shards.tasks[s]
        stream = ShardStream(self.shards.codecs[s], tasks, self.shards.local[tasks], self.waves)
        self.streams[self.shards.keys[s]] = stream
        return stream.ranges(whole)

    def parse_index(self, s: int, data: ReadBytes, whole_shard: bool) -> Entries:
        """The index entries of shard `s` from `data`: its index, or the whole shard."""
        codec = self.shards.codecs[s]
        try:
            if whole_shard:
                return codec.parse_index(memoryview(data)[slice(*codec.index_range())], len(data))
            return codec.parse_index(data)
        except ZarrcoreError as e:
            raise with_key(e, self.shards.keys[s]) from e

    def read_ranges(self, fetch: Fetch) -> None:
        """Fetch the ranges planned since read_indexes, each at its shard's version in this
        read; each wave runs the tasks whose bytes arrived."""
        ranged, requests, sizes = self.range_requests()
        for batch in fetch(requests, sizes):
            wave = [self.range_arrived(ranged[r], parts, version) for r, (parts, version) in batch]
            self.waves.run(np.concatenate(wave))
            del batch  # (the wave's bytes go while the next arrives)

    def range_requests(self) -> tuple[list[PlannedRange], list[Request], list[int]]:
        """The ranges planned so far (taken: none is left planned), the requests for them and
        their sizes: the largest first, as each request takes the fastest kept connection
        left, and a small read's large ranges in pieces at once, each on a connection of its
        own."""
        sizes = [_span_bytes(r[0]) for r in self.ranged]
        order = np.argsort(-np.asarray(sizes, dtype=np.int64), kind="stable").tolist()
        ranged, sizes = [self.ranged[r] for r in order], [sizes[r] for r in order]
        self.ranged = []
        return ranged, [_in_pieces(self.engine, r[0], len(ranged)) for r in ranged], sizes

    def range_arrived(self, planned: PlannedRange, parts: Any, version: Any) -> Int64s:
        """Hand the bytes of the range `planned` that arrived as `parts` at `version` to the
        waves: the tasks whose bytes they hold."""
        key = planned[0][0]
        data = joined(parts)
        if data is None:
            if key in self.known_keys:  # (deleted since its index was read)
                raise KeyChangedError(f"shard {key!r} was deleted")
            raise ShardIndexError(f"shard {key!r}: deleted while its inner chunks were read")
        if not same_version(version, self.versions.get(key)):
            # (a store whose readers do not keep one version: read again, whole)
            raise KeyChangedError(f"shard {key!r} was replaced while it was read")
        _, tasks, offsets, lengths = planned
        self.waves.add(data, tasks, offsets, lengths)
        return tasks
