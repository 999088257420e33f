"""The engine's caches beside the decoded-chunk cache: the shard indexes ranged reads learned,
and the versions of the chunks that reads through Store.get_many decoded into the cache (kept
with the entries too, where the cache is shared between processes)."""
from __future__ import annotations

import bisect
import collections
import hashlib
import threading
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from ..runtime.portable import at_fork_in_child
from ..codecs.sharding import Entries


if TYPE_CHECKING:
    from .._chunk_jobs import ChunkWaves


# Bytes of parsed shard indexes an array keeps (ShardIndexes): 16 bytes per inner chunk, so
# the indexes of 16,384 shards of 64 inner chunks each.
SHARD_INDEX_BYTES = 16 << 20


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


def version_digest(version: Any) -> bytes:
    """The 32 bytes a stored object's version (Store.get_many_versioned) is cached under."""
    return hashlib.sha256(repr(version).encode()).digest()


class ChunkVersions:
    """The versions the decoded-chunk cache's entries of fetched chunks were decoded from, by
    key, which their next reads ask the store about (Store.get_many_versioned); as many as
    the cache holds chunks, the least recently used forgotten (their next read fetches them)."""

    def __init__(self, held: int) -> None:
        self._held = held
        self._versions: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def known(self, keys: Iterable[str]) -> list[Any]:
        """The version remembered for each of `keys` (None where there is none)."""
        with self._lock:
            return [self._versions.get(k) for k in keys]

    def note(self, key: str, version: Any) -> None:
        """Remember `version` as the one the entries of `key` are decoded from (None: it is
        not stored, or its store tells no version of it)."""
        with self._lock:
            if version is None:
                self._versions.pop(key, None)
                return
            self._versions[key] = version
            self._versions.move_to_end(key)
            while len(self._versions) > self._held:
                self._versions.popitem(last=False)


def shared_versions(jobs: list[ChunkWaves], first: list[int], coords: list[Any],
                    known: list[Any]) -> None:
    """Set in `known` (each chunk's version, by its place in the jobs' tasks; `first`: each
    job's first place) the version kept with the chunk's entry in the shared cache, where
    there is one: the chunk is asked about at that version, which another process may have
    read since this one last did (the table keeps one entry per chunk, so no other version
    of it would be found there). Only a hint: an entry is served only at its exact version
    (`version_digest`), so a wrong one costs a fetch, never a stale read."""
    for j, job in enumerate(jobs):
        for i in range(first[j], first[j + 1]):
            tag = job.shared_version(coords[i])
            if tag is not None:
                known[i] = tag.decode("utf-8", "replace")


def share_versions(jobs: list[ChunkWaves], first: list[int], coords: list[Any],
                   read: list[tuple[int, Any]]) -> None:
    """Keep each version of `read` ((place, version) of the chunks read whole, whose wave
    has run) with its chunk's entry in the shared cache, for other processes'
    shared_versions. (A version too long for the table is not kept: those reads fetch.)"""
    for i, version in read:
        j = bisect.bisect_right(first, i) - 1
        jobs[j].share_version(coords[i], version_digest(version), version.encode())
