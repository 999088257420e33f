"""Whole shards decoded while they arrive: over a store whose readers stream their bodies
(Store.streams_reads), each inner chunk of a shard fetched whole is decoded on the thread
pool as soon as its bytes are there, while the rest still comes.

Why: a read of eight whole shards over a 24 ms link spent its last 18 ms decoding 27 MiB
after the bodies arrived, their bytes having come over the 17 ms before; decoded while they
came, it took 54.7-55.6 ms at best instead of 57.5-58.9. On the pool rather than the
thread that reads the body, which goes on reading meanwhile (58-59 ms at best on that
thread)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..codecs.sharding import EMPTY
from ..errors import ZarrcoreError
from ..runtime.config import config

if TYPE_CHECKING:
    from ..codecs.sharding import Entries, ShardingCodec
    from ..storage.base import ByteRange, ReadBytes
    from .planning import Int64s

__all__ = ["DecodesNow", "ShardStream"]

_FAR = np.uint64(1 << 62)


class DecodesNow(Protocol):
    """What decodes a read's task from its bytes on the calling thread (ShardWaves): False
    where it failed, and the task is left to the read's waves."""

    def decode_now(self, task: int, data: ReadBytes) -> bool: ...


class ShardStream:
    """What one whole shard's body is handed to as it arrives (a BodyProgress): first its
    index (where it is at the end, a range of its own asked for just before the shard, else
    the body's first bytes), then each stored inner chunk of the read's `tasks` (at C-order
    places `local` in the shard), decoded (`waves.decode_now`, on the thread pool) once all
    its bytes came. `decoded` tells the tasks decoded: the read runs them again unless the
    shard's own index, once it arrived whole, is the index they were decoded by, and its
    answer the body they came from. `close` ends the decoding: none runs after it
    returned."""

    def __init__(
        self, codec: ShardingCodec, tasks: Int64s, local: Int64s, waves: DecodesNow
    ) -> None:
        self.codec, self.tasks, self.local, self.waves = codec, tasks, local, waves
        self.index_apart = codec.index_location == "end"
        self.entries: Entries | None = None
        self.done: list[int] = []
        # The body decoded from, and whether the shard's answer is it (`shard`): not where
        # the streamed request failed and the reader read the shard again another way.
        self._body: memoryview | None = None
        self._answered = False
        # (Each decoding handed to the pool, with its task and bytes.)
        self._decoding: list[tuple[concurrent.futures.Future[None], int, memoryview]] = []
        self._closed = False
        self._guard = threading.Lock()
        # The stored tasks by where their bytes end, and their spans: the next to decode
        # is at `_next`.
        self._tasks: list[int] = []
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._next = 0

    def ranges(self, whole: Sequence[ByteRange]) -> list[ByteRange]:
        """The ranges to ask for the shard in: those of it `whole`, after its index's where
        that is at the end."""
        return [self.codec.index_range(), *whole] if self.index_apart else list(whole)

    def shard(self, parts: Sequence[ReadBytes]) -> list[ReadBytes]:
        """The parts of the whole shard in the answer `parts` to `ranges`."""
        shard = list(parts[1:] if self.index_apart else parts)
        self._answered = len(shard) == 1 and shard[0] is self._body
        return shard

    def decoded(self, entries: Entries) -> list[int]:
        """The tasks decoded (once the body arrived: those the pool has not started are
        decoded here, and those it has are waited for), where the shard's own index
        (`entries`) is the one they were decoded by, and its bytes (`shard`) those they were
        decoded from; none otherwise. (Never a wait for the pool's queue: the read may run
        on the pool itself.)"""
        for future, task, data in self._decoding:
            if future.cancel():
                self._decode(task, data)
            else:
                future.result()
        same = self.entries is not None and np.array_equal(self.entries, entries)
        return self.done if same and self._answered else []

    def close(self) -> None:
        """Start no more decoding (a read that failed), and wait for that started."""
        with self._guard:
            self._closed = True
        for future, _, _ in self._decoding:
            if not future.cancel():
                future.result()

    def __call__(self, part: int, body: memoryview, filled: int) -> int:
        never = len(body) + 1
        if self.entries is None:
            if self.index_apart:
                if part > 0:  # (a body without its index: none decodes)
                    return never
                if filled < len(body):
                    return len(body)
                self._learn(body)
                return never
            index_bytes = self.codec.index_range()[1]
            assert index_bytes is not None  # (at the start)
            if filled < index_bytes:
                return index_bytes
            self._learn(body[:index_bytes])
            if self.entries is None:
                return never
        ends = self._ends
        with self._guard:
            if self._closed or (self._body is not None and self._body is not body):
                return never
            self._body = body
            pool = config.executor()
            while self._next < len(ends) and ends[self._next] <= filled:
                k = self._next
                task, piece = self._tasks[k], body[self._starts[k] : ends[k]]
                self._decoding.append((pool.submit(self._decode, task, piece), task, piece))
                self._next += 1
        return ends[self._next] if self._next < len(ends) else never

    def _decode(self, task: int, data: memoryview) -> None:
        # (A failure leaves the task to the read's waves, which name it.)
        if self.waves.decode_now(task, data):
            self.done.append(task)

    def _learn(self, index: ReadBytes) -> None:
        """Take the entries of the shard's `index` bytes (none where they are not valid: the
        read then finds the error in the whole shard)."""
        try:
            entries = self.codec.parse_index(index)
        except ZarrcoreError:
            return
        spans = entries[self.local]
        # (Entries of a shard of unknown size may reach past any body: those wait for the
        # whole shard, whose size tells.)
        stored = (spans[:, 0] != EMPTY) & (spans[:, 0] + spans[:, 1] < _FAR)
        starts = spans[stored, 0].astype(np.int64)
        ends = starts + spans[stored, 1].astype(np.int64)
        order = np.argsort(ends, kind="stable")
        self._tasks = self.tasks[stored][order].tolist()
        self._starts, self._ends = starts[order].tolist(), ends[order].tolist()
        self.entries = entries
