"""An object's version, as an ObjectStore reads it and conditions its writes on it, the
put mode of obstore that writes only over one, and the versions of objects stored before a
writer came, learnt ahead of its PUTs (`PriorVersions`: listings of many, a HEAD each of a
few)."""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import string
from typing import TYPE_CHECKING, Optional, Protocol

from ..runtime import _aio
from ._obstore_runtime import obstore_module, obstore_request

if TYPE_CHECKING:
    from obstore import ObjectMeta, PutMode, PutResult, UpdateVersion
    from obstore.store import ObjectStore as ObstoreStore

__all__ = [
    "LISTED_LEAST",
    "LISTED_MOST",
    "LISTED_FLIGHT",
    "LISTINGS_AT_ONCE",
    "ObjectVersion",
    "PriorVersions",
    "listed_objects",
    "listing_runs",
    "put_mode",
    "version_of",
]

# Keys announced together (PriorVersions.announce) from which listings learn their
# versions, not a HEAD each; the most objects a listing goes through: one page of S3's
# (those past it are HEADed); the most keys whose listing answers in one flight of a new
# connection (10 segments, at 200-300 bytes a key); and the most listings sent at once.
# Over an 80 ms link to moto, which closes every connection, 64 keys took 251-253 ms in one
# listing (13.3 KB: a second flight; 12.7 KB with shorter names took 170 ms), 170-181 ms in
# 4 of 16 keys and 166-200 ms in 16 of 4; over 40 ms, 512 keys took 258 ms in one, 95-152 ms
# in 8 of 64 and 86-270 ms in 64 of 8.
LISTED_LEAST = 8
LISTED_MOST = 1000
LISTED_FLIGHT = 32
LISTINGS_AT_ONCE = 16

_PLAIN = frozenset(string.ascii_letters + string.digits + "-_.")

#: An object's version as an ObjectStore reads and conditions writes on it: (ETag, version).
ObjectVersion = tuple[Optional[str], Optional[str]]


def put_mode(version: ObjectVersion | None) -> PutMode:
    """obstore's put mode that writes only over `version` ((ETag, version) of the object;
    None: only where there is no object)."""
    if version is None:
        return "create"
    e_tag, generation = version
    mode: UpdateVersion = {}
    if e_tag is not None:
        mode["e_tag"] = e_tag
    if generation is not None:
        mode["version"] = generation
    return mode


def version_of(meta: ObjectMeta | PutResult) -> ObjectVersion | None:
    """(ETag, version) of an object from obstore's metadata or put result; None without."""
    version = (meta.get("e_tag"), meta.get("version"))
    return None if version == (None, None) else version


def listed_objects(
    store: ObstoreStore, paths: list[str], most: int
) -> tuple[list[ObjectMeta], str | None]:
    """The objects of `store` one listing finds from the first of the sorted `paths` to the
    last, at most `most` of them, and the path it stopped at short of the last (None when it
    got there)."""
    first, last = paths[0], paths[-1]
    # (Under the deepest folder holding both, from just before the first: its last character
    # one lower where that is a plain one, else without it, as a path has no empty part.)
    under = os.path.commonprefix([first, last]).rpartition("/")[0]
    lower = chr(ord(first[-1]) - 1)
    offset = first[:-1] + (lower if lower in _PLAIN else "")
    found: list[ObjectMeta] = []
    stream = obstore_module().list(store, prefix=under or None, offset=offset, chunk_size=1000)
    for batch in stream:
        for meta in batch:
            if meta["path"] > last:
                return found, None
            found.append(meta)
            if len(found) == most:
                return found, meta["path"]
    return found, None


def listing_runs(keys: list[str], flight: int, listings: int, most: int) -> list[list[str]]:
    """The sorted `keys` in runs for listings of their own, sent at once, each run the keys
    under one folder: the fewest whose listings each answer in one `flight` of keys where
    that takes at most `listings` of them, else the smallest of at most `listings`; cut
    evenly into runs of at most `most`."""
    # Folders deeper down split the keys finer, so a level of more than `listings` ends the
    # search: the level before it is the smallest of at most `listings`.
    parts = [key.split("/") for key in keys]
    runs = [keys]  # (level 0: one run)
    for level in range(1, max(map(len, parts))):
        if max(map(len, runs)) <= flight:
            break
        finer = [
            [keys[i] for i, _ in g]
            for _, g in itertools.groupby(enumerate(parts), lambda p: p[1][:level])
        ]
        if len(finer) > listings:
            break
        runs = finer
    cut = [-(-len(r) // -(-len(r) // most)) for r in runs]  # (even runs of at most `most`)
    return [r[i : i + step] for r, step in zip(runs, cut) for i in range(0, len(r), step)]


class VersionedStore(Protocol):
    """What learning versions asks of its store (an ObjectStore; not imported: it imports
    this module)."""

    _store: ObstoreStore

    def _path(self, key: str) -> str: ...
    def _saw(self, key: str, meta: ObjectMeta | PutResult) -> None: ...
    def _learn(self, key: str) -> bool: ...


class PriorVersions:
    """The keys of a store about to be written whole that may hold objects it has not seen
    (ObjectStore.may_hold), their versions learnt at once while the writer encodes: by
    listings of runs of them (listing_runs), or by a HEAD each of a few; each PUT waits for
    its own (`settles`)."""

    def __init__(self, store: VersionedStore, most: int) -> None:
        self._store, self._most = store, most
        self._learning: dict[str, concurrent.futures.Future[set[str]] | None] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._learning

    def announce(self, unknown: list[str]) -> None:
        """Learn the versions of the sorted keys `unknown` (on an I/O thread, where no
        request may wait for another there: by each PUT)."""
        if len(self._learning) > self._most:
            self._learning.clear()  # (those of writes that never came)
        if not unknown:
            return
        threads = _aio.io_threads()
        if threads is None:
            self._learning.update(dict.fromkeys(unknown))
            return
        if len(unknown) >= LISTED_LEAST:
            runs = listing_runs(unknown, LISTED_FLIGHT, LISTINGS_AT_ONCE, LISTED_MOST)
            learn = self._listed
        else:
            runs, learn = [[key] for key in unknown], self._headed
        for run in runs:
            self._learning.update(dict.fromkeys(run, threads.submit(learn, run)))

    def settles(self, key: str, deadline: float) -> bool:
        """Take the announced `key` off: was its version learnt (or its object found
        missing)? Not where learning it failed (credentials that may not list) or gave no
        answer in `deadline` seconds (a forked child's copy of its parent's)."""
        learning = self._learning.pop(key, None)
        if learning is None:
            return False
        try:
            return key in learning.result(timeout=deadline)
        except Exception:
            return False

    def _headed(self, keys: list[str]) -> set[str]:
        for key in keys:
            self._store._learn(key)
        return set(keys)

    def _listed(self, keys: list[str]) -> set[str]:
        """Learn the versions of the sorted `keys` from one listing from the first to the
        last (`listed_objects`): the keys it settled (found, or passed without finding)."""
        store = self._store
        paths = dict(zip(map(store._path, keys), keys))
        objects, end = obstore_request(listed_objects, store._store, list(paths), LISTED_MOST)
        for meta in objects:
            key = paths.get(meta["path"])
            if key is not None:
                store._saw(key, meta)
        return set(keys) if end is None else {key for p, key in paths.items() if p <= end}
