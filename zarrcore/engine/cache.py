"""The engine's caches beside the decoded-chunk cache: the shard indexes ranged reads learned,
and the versions of the chunks that reads through Store.get_many decoded into the cache (kept
with the entries too, where the cache is shared between processes); each with its stamp, the
time (time.time()) at which a request found it, which the array's `recheck_cached_data`
compares (`RecheckPolicy`).

The one Python module that decides whether what is cached is valid: which version an entry is
kept at (`version_digest`, `inner_chunk_digest`; the compiled cache then serves it only at
that version, csrc/cache/zc_chunk_version.c), whether a kept piece of an object still holds
for what a request found (`same_version`) and whether a kept version is used without asking
the store (`RecheckPolicy`). The route modules ask these."""

from __future__ import annotations

import bisect
import collections
import hashlib
import json
import math
import threading
import weakref
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..codecs.sharding import Entries
from ..runtime.portable import at_fork_in_child

if TYPE_CHECKING:
    from .._native.cache import ChunkCache
    from .._native.chunk_jobs import ChunkWaves

__all__ = [
    "ChunkVersions",
    "KEPT_ARRAY_INDEXES",
    "KnownIndex",
    "RecheckPolicy",
    "SHARD_INDEX_BYTES",
    "ShardIndexes",
    "inner_chunk_digest",
    "kept_shard_indexes",
    "same_version",
    "share_versions",
    "shared_versions",
    "version_digest",
]


# Bytes of parsed shard indexes an array keeps (ShardIndexes): 16 bytes per inner chunk, so
# the indexes of 16,384 shards of 64 inner chunks each.
SHARD_INDEX_BYTES = 16 << 20


class RecheckPolicy:
    """Which cached versions an array's reads use without asking the store again: those
    found at or after `since` (seconds since the epoch; math.inf, the default, asks every
    time). From the array's `recheck_cached_data`: True (always ask), False (never), "open"
    (found since the array was opened here, `opened`), or a time."""

    def __init__(self, setting: Any, opened: float) -> None:
        self.since = (
            math.inf
            if setting is True
            else -math.inf
            if setting is False
            else opened
            if setting == "open"
            else float(setting)
        )

    @property
    def trusts_any(self) -> bool:
        """Whether any version may be used without asking (a setting other than True)."""
        return self.since < math.inf

    def trusts(self, stamp: float) -> bool:
        """Whether a version found at `stamp` is used without asking."""
        return stamp >= self.since


class KnownIndex(NamedTuple):
    """A shard's parsed index (ShardIndexes), the version of the shard it was read from, and
    when a request last found the shard at that version (its stamp)."""

    version: Any
    entries: Entries
    stamp: float


class ShardIndexes:
    """The parsed indexes of the shards an array read, by key, each with the version of the
    shard it was read from (RangeReader.version): a later read asks a reader of that version
    only (an object store's If-Match on the ETag), so it fetches the inner chunks it wants at
    once, and a shard replaced meanwhile fails it (KeyChangedError), never reads through a
    stale index. The least recently used are forgotten past `limit` bytes of entries.

    With `shared` (the array's cache, shared between processes), each index is also kept
    in the shared table, an entry of its own tagged with the shard's version, so that the
    other processes (a loader's workers) learn it without reading it (`_shared_get`);
    `ninner` is the inner chunks per shard. A process that takes another's index from the
    table takes its stamp too."""

    def __init__(self, limit: int, shared: ChunkCache | None = None, ninner: int = 0) -> None:
        self._limit, self._held = limit, 0
        self._known: collections.OrderedDict[str, KnownIndex] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._shared, self._ninner = shared, ninner
        # The versions of shards this process found replaced (`forget`), whose shared entries
        # it must not take again until it learns the new index (by key; the latest kept).
        self._refused: collections.OrderedDict[str, Any] = collections.OrderedDict()
        _every_shard_indexes.add(self)

    def get(self, key: str) -> KnownIndex | None:
        with self._lock:
            found = self._known.get(key)
            if found is not None:
                self._known.move_to_end(key)
        if found is None and self._shared is not None:
            found = self._shared_get(key)
            if found is not None:
                self._keep(key, found)
        return found

    def put(self, key: str, version: Any, entries: Entries, stamp: float) -> None:
        """Keep the index `entries` of the shard at `key`, read from it at `version` by a
        request made at `stamp`."""
        self._keep(key, KnownIndex(version, entries, stamp))
        with self._lock:
            self._refused.pop(key, None)
        tag = None if self._shared is None else _version_tag(version, stamp)
        if self._shared is not None and tag is not None:
            self._shared.put_shared(
                self._shared_key(key),
                _index_digest(key, version),
                np.ascontiguousarray(entries, dtype="<u8").view(np.uint8).reshape(-1),
                tag,
            )

    def confirm(self, key: str, version: Any, stamp: float) -> None:
        """Note that a request made at `stamp` found the shard at `key` still at `version`."""
        with self._lock:
            found = self._known.get(key)
            if found is not None and found.version == version and found.stamp < stamp:
                self._known[key] = found._replace(stamp=stamp)

    def _shared_get(self, key: str) -> KnownIndex | None:
        """The index of the shard at `key` that another process kept in the shared table,
        with its shard's version and stamp (read from the entry's tag, found at exactly that
        version); None when there is none."""
        assert self._shared is not None  # (a shared cache)
        shared_key = self._shared_key(key)
        tag = self._shared.shared_tag(shared_key)
        found = None if tag is None else _tag_version(tag)
        with self._lock:
            if found is None or self._refused.get(key) == found[0]:
                return None
        version, stamp = found
        data = self._shared.get_shared(shared_key, _index_digest(key, version), 16 * self._ninner)
        if data is None:
            return None
        return KnownIndex(version, np.frombuffer(data, dtype="<u8").reshape(-1, 2), stamp)

    def _shared_key(self, key: str) -> tuple[int, ...]:
        """The shared table's key of the index of the shard at `key`: a hash of `key`, then
        -1s (chunks' keys hold no negative value)."""
        h = int.from_bytes(
            hashlib.blake2b(key.encode(), digest_size=8).digest(), "little", signed=True
        )
        assert self._shared is not None  # (a shared cache)
        return (h, *[-1] * (self._shared.key_len - 1))

    def _keep(self, key: str, known: KnownIndex) -> None:
        if known.entries.nbytes > self._limit:
            return
        entries = known.entries.copy()
        entries.flags.writeable = False  # (shared by the reads that find it)
        with self._lock:
            old = self._known.pop(key, None)
            if old is not None:
                self._held -= old.entries.nbytes
            self._known[key] = known._replace(entries=entries)
            self._held += entries.nbytes
            while self._held > self._limit:
                self._held -= self._known.popitem(last=False)[1].entries.nbytes

    def forget(self, keys: Iterable[str]) -> None:
        """Forget the indexes of the shards at `keys`, found replaced (or perhaps replaced):
        the next reads read them anew."""
        with self._lock:
            for key in keys:
                old = self._known.pop(key, None)
                if old is not None:
                    self._held -= old.entries.nbytes
                    if self._shared is not None:
                        self._refused[key] = old.version
                        self._refused.move_to_end(key)
                        while len(self._refused) > _REFUSED_HELD:
                            self._refused.popitem(last=False)


# The replaced shards' versions a ShardIndexes remembers (`forget`); one forgotten past these
# costs one more refused request.
_REFUSED_HELD = 4096

# The ShardIndexes of the arrays this process opened (`kept_shard_indexes`), the least
# recently opened forgotten past this many arrays.
KEPT_ARRAY_INDEXES = 64
_kept_indexes: collections.OrderedDict[Hashable, ShardIndexes] = collections.OrderedDict()
_kept_guard = threading.Lock()


def kept_shard_indexes(array: Hashable, limit: int, ninner: int) -> ShardIndexes:
    """The ShardIndexes that every opening of `array` (its store, key prefix and layout) in
    this process shares (a new one of `limit` bytes, of shards of `ninner` inner chunks): a
    later opening learns the indexes an earlier one read, and still asks for their shards'
    versions, so it reads an inner chunk in one round trip (over a 40 ms link a fresh
    opening's box of 8 shards paid 41-44 ms for their indexes before 78-100 ms for its inner
    chunks). At most KEPT_ARRAY_INDEXES times `limit` bytes in all."""
    with _kept_guard:
        found = _kept_indexes.get(array)
        if found is None:
            found = _kept_indexes[array] = ShardIndexes(limit, None, ninner)
            while len(_kept_indexes) > KEPT_ARRAY_INDEXES:
                _kept_indexes.popitem(last=False)
        else:
            _kept_indexes.move_to_end(array)
        return found


# Every ShardIndexes of the process: a forked child gives each a new lock, since one that a
# thread of the parent held at the fork would never be released there.
_every_shard_indexes: weakref.WeakSet[ShardIndexes] = weakref.WeakSet()


def _unlock_shard_indexes_in_child() -> None:
    global _kept_guard
    _kept_guard = threading.Lock()
    for indexes in list(_every_shard_indexes):
        indexes._lock = threading.Lock()


at_fork_in_child(_unlock_shard_indexes_in_child)


def _index_digest(key: str, version: Any) -> bytes:
    """The version a shard's index is kept under in a shared table: of its key and of its
    shard's version, so that an entry found is that shard's at that version."""
    return version_digest(("shard index", key, version))


def _version_tag(version: Any, stamp: float) -> bytes | None:
    """A version (a chunk's ETag, a shard's (ETag, size)) and its stamp as the tag of a
    shared entry; None when it has no such form."""
    try:
        return json.dumps([version, stamp]).encode()
    except (TypeError, ValueError):
        return None


def _tag_version(tag: bytes) -> tuple[Any, float] | None:
    """The version and stamp `_version_tag` wrote (None: no tag of that form)."""
    try:
        version, stamp = json.loads(tag)
    except (ValueError, TypeError):
        return None
    if not isinstance(version, (list, str)) or not isinstance(stamp, (int, float)):
        return None
    return tuple(version) if isinstance(version, list) else version, float(stamp)


def version_digest(version: Any) -> bytes:
    """The 32 bytes a stored object's version (Store.get_many_versioned) is cached under."""
    return hashlib.sha256(repr(version).encode()).digest()


def inner_chunk_digest(version: Any, offset: int, nbytes: int) -> bytes:
    """The version an inner chunk's entry is kept at: its shard's `version` and its span
    (`offset`, `nbytes`) in it, so that one is served only for the very bytes it was decoded
    from."""
    return version_digest((version, offset, nbytes))


def same_version(found: Any, kept: Any) -> bool:
    """Whether bytes a request found at version `found` go with what was kept of their object
    at version `kept` (a shard's index): False when the object was replaced meanwhile. (None:
    the store tells no version of them, nothing to compare.)"""
    return found is None or found == kept


class ChunkVersions:
    """The versions the decoded-chunk cache's entries of fetched chunks were decoded from, by
    key, each with its stamp, which their next reads ask the store about
    (Store.get_many_versioned); as many as the cache holds chunks, the least recently used
    forgotten (their next read fetches them)."""

    def __init__(self, held: int) -> None:
        self._held = held
        self._versions: collections.OrderedDict[str, tuple[Any, float]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def known(self, keys: Iterable[str]) -> list[tuple[Any, float] | None]:
        """The version and stamp remembered for each of `keys` (None where there is none)."""
        with self._lock:
            return [self._versions.get(k) for k in keys]

    def note(self, key: str, version: Any, stamp: float) -> None:
        """Remember `version` as the one the entries of `key` are decoded from, found by a
        request made at `stamp` (None: it is not stored, or its store tells no version of
        it)."""
        with self._lock:
            if version is None:
                self._versions.pop(key, None)
                return
            self._versions[key] = (version, stamp)
            self._versions.move_to_end(key)
            while len(self._versions) > self._held:
                self._versions.popitem(last=False)


def shared_versions(
    jobs: list[ChunkWaves],
    first: list[int],
    coords: list[Any],
    known: list[tuple[Any, float] | None],
) -> None:
    """Set in `known` (each chunk's version and stamp, by its place in the jobs' tasks;
    `first`: each job's first place) those kept with the chunk's entry in the shared cache,
    where there are: the chunk is asked about at that version, which another process may
    have read since this one last did (the table keeps one entry per chunk, so no other
    version of it would be found there). Only a hint: an entry is served only at its exact
    version (`version_digest`), so a wrong one costs a fetch, never a stale read."""
    for j, job in enumerate(jobs):
        for i in range(first[j], first[j + 1]):
            tag = job.shared_version(coords[i])
            found = None if tag is None else _tag_version(tag)
            if found is not None:
                known[i] = found


def share_versions(
    jobs: list[ChunkWaves],
    first: list[int],
    coords: list[Any],
    read: list[tuple[int, Any]],
    stamp: float,
) -> None:
    """Keep each version of `read` ((place, version) of the chunks read whole, whose wave
    has run, by requests made at `stamp`) with its chunk's entry in the shared cache, for
    other processes' shared_versions. (A version too long for the table is not kept: those
    reads fetch.)"""
    for i, version in read:
        j = bisect.bisect_right(first, i) - 1
        tag = _version_tag(version, stamp)
        if tag is not None:
            jobs[j].share_version(coords[i], version_digest(version), tag)
