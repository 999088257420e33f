"""An object's version, as an ObjectStore reads it and conditions its writes on it, and the
put mode of obstore that writes only over one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from obstore import ObjectMeta, PutMode, PutResult, UpdateVersion

__all__ = ["ObjectVersion", "put_mode", "version_of"]

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
