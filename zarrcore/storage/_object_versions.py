"""An object's version, as an ObjectStore reads it and conditions its writes on it, the
put mode of obstore that writes only over one, and the listing that learns many at once."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional

from ._obstore_runtime import obstore_module

if TYPE_CHECKING:
    from obstore import ObjectMeta, PutMode, PutResult, UpdateVersion
    from obstore.store import ObjectStore as ObstoreStore

__all__ = ["ObjectVersion", "listed_objects", "put_mode", "version_of"]

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
    # (Under the deepest folder holding both, from just before the first.)
    under = os.path.commonprefix([first, last]).rpartition("/")[0]
    found: list[ObjectMeta] = []
    stream = obstore_module().list(store, prefix=under or None, offset=first[:-1], chunk_size=1000)
    for batch in stream:
        for meta in batch:
            if meta["path"] > last:
                return found, None
            found.append(meta)
            if len(found) == most:
                return found, meta["path"]
    return found, None
