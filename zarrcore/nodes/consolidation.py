"""Consolidated metadata: writing it (`consolidate_metadata`) and opening a group through it
(`open_consolidated`), as zarr-python does; reading it is `consolidated.py`'s
(`ConsolidatedMetadata`, `open_group_metadata`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import GroupNotFoundError, MetadataError
from ..metadata import GroupMetadataV3
from ..storage import make_store
from .consolidated import V2_DOC_KEYS, V2_KEY, ConsolidatedMetadata, empty_inline
from .group import Group, open_group
from .node import (
    METADATA_KEYS,
    V2_ATTRS_KEY,
    V2_GROUP_KEY,
    V3_KEY,
    dump_json,
    join,
    load_json,
    metadata_update,
    normalize_path,
    read_metadata,
)

if TYPE_CHECKING:
    from ..metadata.types import StoreLike
    from ..storage import Store

__all__ = ["consolidate_metadata", "open_consolidated"]


# -- consolidating a group's metadata, and opening it through them (zarr-python's functions) ---


def _node_docs(store: Store, path: str, keys: Iterable[str]) -> dict[str, Any]:
    """{key: document} of the metadata documents among `keys` stored at `path`."""
    docs: dict[str, Any] = {}
    for key in keys:
        doc = load_json(store, join(path, key))
        if doc is not None:
            docs[key] = doc
    return docs


def _walk(
    store: Store, path: str, keys: Iterable[str], rel: str = ""
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(relative path, documents) of every node below `path`, parents first."""
    group = join(path, rel) if rel else path
    for name in sorted(store.list_dir(group)):
        if name in METADATA_KEYS or name == V2_KEY:
            continue
        child_rel = f"{rel}/{name}" if rel else name
        docs = _node_docs(store, join(path, child_rel), keys)
        if not set(docs) - {V2_ATTRS_KEY}:
            continue  # not a node (a v2 bare .zattrs, a stray file or a v3 node in v2)
        for key, doc in docs.items():
            if not isinstance(doc, dict):
                raise MetadataError(
                    f"{join(path, child_rel)}/{key}: expected a JSON object, "
                    f"got {type(doc).__name__}"
                )
        yield child_rel, docs
        if V2_GROUP_KEY in docs or docs.get(V3_KEY, {}).get("node_type") == "group":
            yield from _walk(store, path, keys, child_rel)


def consolidate_metadata(
    store: StoreLike,
    path: str = "",
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Gather the metadata of every node below the group at `path` into it; return the group.

    v3 groups get the inline `consolidated_metadata` field of their `zarr.json`, v2 groups a
    `.zmetadata` document, as zarr-python writes them.

    Parameters
    ----------
    store : str, os.PathLike, dict or Store
        Where the hierarchy is.
    path : str, optional
        The group's path in the store.
    zarr_format : {2, 3}, optional
        The group's format; None finds it.
    storage_options : dict, optional
        Options of the store a URL names (see `make_store`).

    Returns
    -------
    Group
        The group, opened through its new consolidated metadata.

    Raises
    ------
    NodeNotFoundError
        No group at `path` (or an array there).
    MetadataError
        A member's metadata is not a JSON object.
    ReadOnlyError
        The store is read-only.
    StoreError
        The store keeps no consolidated metadata (an Icechunk session's).
    """
    store = make_store(store, storage_options=storage_options)
    path = normalize_path(path)
    store.check_consolidated_metadata(path)
    meta = read_metadata(store, path, zarr_format)
    if meta.node_type != "group":
        raise GroupNotFoundError(f"the node at path {path!r} is an array, not a group")
    group = Group(store, path, meta)
    # Under the group's metadata lock, so a concurrent update of its attributes is kept.
    with metadata_update(group) as (meta, store_metadata):
        if isinstance(meta, GroupMetadataV3):
            gathered: dict[str, Any] = {}
            for rel, docs in _walk(store, path, (V3_KEY,)):
                doc = docs[V3_KEY]
                if doc.get("node_type") == "group":
                    doc = {**doc, "consolidated_metadata": empty_inline()}  # as zarr-python writes
                gathered[rel] = doc
            updated = meta.evolve(
                consolidated_metadata={
                    "kind": "inline",
                    "must_understand": False,
                    "metadata": gathered,
                }
            )
            store_metadata(updated)
            consolidated = ConsolidatedMetadata.from_v3(
                updated.consolidated_metadata, join(path, V3_KEY)
            )
        else:
            gathered = _node_docs(store, path, (V2_GROUP_KEY, V2_ATTRS_KEY))
            for rel, docs in _walk(store, path, V2_DOC_KEYS):
                gathered.update({f"{rel}/{key}": doc for key, doc in docs.items()})
            doc = {"metadata": gathered, "zarr_consolidated_format": 1}
            key = join(path, V2_KEY)
            store.set(key, dump_json(doc))
            consolidated = ConsolidatedMetadata.from_v2(doc, key)
    return Group(store, path, group.metadata, consolidated=consolidated)


def open_consolidated(
    store: StoreLike = None,
    *,
    path: str | None = None,
    mode: str = "r",
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Open the group at `path` through its consolidated metadata (which must exist).

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        Where the hierarchy is.
    path : str, optional
        The group's path in the store.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        As `open_group` takes it.
    zarr_format : {2, 3}, optional
        The group's format; None finds it.
    storage_options : dict, optional
        Options of the store a URL names (see `make_store`).

    Returns
    -------
    Group
        Its members open without reading their metadata from the store.

    Raises
    ------
    MetadataError
        The group has no consolidated metadata, or it is malformed.
    NodeNotFoundError
        No group at `path`.
    """
    return open_group(
        store,
        mode=mode,
        path=path,
        zarr_format=zarr_format,
        use_consolidated=True,
        storage_options=storage_options,
    )
