"""An object's version, as an ObjectStore reads it and conditions its writes on it, the
put mode of obstore that writes only over one, and the listings that learn many at once."""

from __future__ import annotations

import itertools
import os
import string
from typing import TYPE_CHECKING, Optional

from ._obstore_runtime import obstore_module

if TYPE_CHECKING:
    from obstore import ObjectMeta, PutMode, PutResult, UpdateVersion
    from obstore.store import ObjectStore as ObstoreStore

__all__ = ["ObjectVersion", "listed_objects", "listing_runs", "put_mode", "version_of"]

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


def listing_runs(keys: list[str], run: int, most: int) -> list[list[str]]:
    """The sorted `keys` in runs for listings of their own, sent at once: the keys under
    one folder each, at the deepest level of folders that holds `run` of them on average (the
    keys' common folder at least), cut evenly into runs of at most `most`."""
    depth = max(key.count("/") for key in keys)
    for level in range(depth, -1, -1):
        runs = [list(g) for _, g in itertools.groupby(keys, lambda k: k.split("/")[:level])]
        if len(keys) >= run * len(runs):
            break
    cut = [-(-len(r) // -(-len(r) // most)) for r in runs]  # (even runs of at most `most`)
    return [r[i : i + step] for r, step in zip(runs, cut) for i in range(0, len(r), step)]
