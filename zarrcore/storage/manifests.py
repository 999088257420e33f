"""VirtualiZarr's ManifestStore read natively: its manifests become zarrcore references and the
object stores of its registry the targets' stores, so chunks are read in coalesced, concurrent
ranges and decoded in native batches, as kerchunk's references are (storage/references.py).

Targets reach only what the registry names: below a local store's directory, or below a
remote store's URL. A registry holding a store zarrcore cannot read itself (not one of
obstore's) leaves the ManifestStore to its own API (a ZarrPythonStore)."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from typing import Any

from .base import Store
from .objectstore import ObjectStore
from .references import ReferenceStore
from .urls import ZARR_STORE_OPENERS

__all__ = ["manifest_store_references"]


def _registered(registry: Any) -> Iterator[tuple[str, Any]]:
    """(URL, store) of every store of an obspec_utils ObjectStoreRegistry."""

    def walk(url: str, entry: Any) -> Iterator[tuple[str, Any]]:
        if entry.store is not None:
            yield url, entry.store
        for segment, child in entry.children.items():
            yield from walk(f"{url.rstrip('/')}/{segment}", child)

    for key, entry in registry.map.items():
        yield from walk(f"{key.scheme}://{key.netloc}", entry)


def _target(url: str, store: Any) -> tuple[str, Store | None] | None:
    """(root, store) through which the targets below `url` are read: a local directory (and
    None: references read local files themselves), or the URL below which keys name the
    objects of an ObjectStore over `store`; None for a store zarrcore cannot read."""
    if not type(store).__module__.startswith("obstore"):
        return None
    # (As the ManifestStore, a target's key in the store is its path less the store's prefix.)
    prefix = str(getattr(store, "prefix", None) or "").strip("/")
    if type(store).__name__ == "LocalStore":
        return os.sep + prefix if prefix else os.sep, None
    return f"{url.rstrip('/')}/{prefix}".rstrip("/"), ObjectStore(store, read_only=True)


def _references(node: Any, path: str, refs: dict[str, Any]) -> None:
    """Add the references of a ManifestGroup and everything below it, at `path`."""
    from zarr.core.buffer import default_buffer_prototype

    prototype = default_buffer_prototype()

    def metadata(at: str, of: Any) -> None:
        refs[f"{at}zarr.json"] = (
            of.metadata.to_buffer_dict(prototype)["zarr.json"].to_bytes().decode()
        )

    metadata(path, node)
    for name, array in node.arrays.items():
        at = f"{path}{name}/"
        metadata(at, array)
        manifest, meta = array.manifest, array.metadata
        for index, entry in manifest.iter_refs():
            refs[at + meta.encode_chunk_key(index)] = [
                entry["path"],
                entry["offset"],
                entry["length"],
            ]
        for index, data in getattr(manifest, "_inlined", {}).items():
            refs[at + meta.encode_chunk_key(index)] = (
                "base64:" + base64.b64encode(bytes(data)).decode()
            )
    for name, group in node.groups.items():
        _references(group, f"{path}{name}/", refs)


def manifest_store_references(manifest_store: Any) -> ReferenceStore | None:
    """A ReferenceStore over a VirtualiZarr ManifestStore's manifests and registry
    (urls.ZARR_STORE_OPENERS), or None when `manifest_store` is not one or its registry holds a
    store zarrcore cannot read."""
    if (type(manifest_store).__module__, type(manifest_store).__name__) != (
        "virtualizarr.manifests.store",
        "ManifestStore",
    ):
        return None
    roots: list[str] = []
    stores: dict[str, Store] = {}
    for url, store in _registered(manifest_store._registry):
        target = _target(url, store)
        if target is None:
            return None
        roots.append(target[0])
        if target[1] is not None:
            stores[target[0]] = target[1]
    refs: dict[str, Any] = {}
    _references(manifest_store._group, "", refs)
    references = ReferenceStore(refs, allowed_roots=roots, target_stores=stores)
    # (Its capabilities are the ManifestStore's: VirtualiZarr's declares no consolidated
    # metadata, and xarray then looks for none.)
    references.supports_consolidated_metadata = manifest_store.supports_consolidated_metadata
    return references


ZARR_STORE_OPENERS.append(manifest_store_references)
