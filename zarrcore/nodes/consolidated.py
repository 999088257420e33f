"""Reading consolidated metadata: the metadata of a whole hierarchy in one document, as
zarr-python writes it (`ConsolidatedMetadata`), and a node's metadata read through it when it
may serve (`open_group_metadata`, which `open_node` calls). Writing it and opening a group
through it are `consolidation.py`'s.

v2: `.zmetadata` = {"metadata": {"a/.zarray": doc, "a/.zattrs": doc, ...},
"zarr_consolidated_format": 1} beside the group's `.zgroup`.
v3: the group's `zarr.json` carries "consolidated_metadata": {"kind": "inline",
"must_understand": false, "metadata": {"a": zarr.json doc, "a/b": ...}}.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import MetadataError
from ..metadata import parse_metadata_v3
from ..metadata.v2 import parse_metadata_v2
from .node import (
    V2_ARRAY_KEY,
    V2_ATTRS_KEY,
    V2_GROUP_KEY,
    V3_KEY,
    find_metadata,
    join,
    load_json,
    normalize_path,
    read_metadata,
)

if TYPE_CHECKING:
    from ..metadata.types import NodeMetadata
    from ..storage import Store

__all__ = ["ConsolidatedMetadata", "V2_DOC_KEYS", "V2_KEY", "empty_inline", "open_group_metadata"]

V2_KEY = ".zmetadata"
V2_DOC_KEYS = (V2_ARRAY_KEY, V2_GROUP_KEY, V2_ATTRS_KEY)


def empty_inline() -> dict[str, Any]:
    return {"kind": "inline", "must_understand": False, "metadata": {}}


#: What a view and its subgroups' views share: the documents, the children of each path and
#: the metadata parsed so far, by path.
_Shared = tuple[dict[str, Any], dict[str, list[str]], dict[str, "NodeMetadata"]]


class ConsolidatedMetadata:
    """Parsed-on-demand metadata of every node below one group, by path relative to it.

    Views of subgroups (`subgroup`) share the documents and the parse cache.
    """

    _docs: dict[str, Any]
    _children: dict[str, list[str]]
    _cache: dict[str, NodeMetadata]

    def __init__(
        self,
        zarr_format: int,
        docs: Any,
        where: str,
        prefix: str = "",
        _shared: _Shared | None = None,
    ) -> None:
        self.zarr_format = zarr_format
        self._where = where
        self._prefix = prefix
        if _shared is None:
            children: dict[str, list[str]] = {}
            for rel in filter(None, docs):  # "" is the group itself (v2)
                parent, _, name = rel.rpartition("/")
                children.setdefault(parent, []).append(name)
            _shared = (docs, {k: sorted(v) for k, v in children.items()}, {})
        self._docs, self._children, self._cache = _shared

    @classmethod
    def from_v3(cls, field: Any, where: str) -> ConsolidatedMetadata | None:
        """From a group's `consolidated_metadata` field (None when it has none)."""
        if field is None:
            return None
        metadata = field.get("metadata") if isinstance(field, dict) else None
        if not isinstance(metadata, dict) or field.get("kind") != "inline":
            raise MetadataError(
                f"{where}: field 'consolidated_metadata': expected an inline metadata object"
            )
        for rel, doc in metadata.items():
            _check_entry(rel, doc, where)
        return cls(3, dict(metadata), where)

    @classmethod
    def from_v2(cls, doc: Any, where: str) -> ConsolidatedMetadata:
        """From a `.zmetadata` document; keys are regrouped by node."""
        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
            raise MetadataError(f"{where}: expected an object with a 'metadata' object")
        if doc.get("zarr_consolidated_format") != 1:
            raise MetadataError(
                f"{where}: field 'zarr_consolidated_format': expected 1, "
                f"got {doc.get('zarr_consolidated_format')!r}"
            )
        nodes_: dict[str, dict[str, Any]] = {}
        for key, value in doc["metadata"].items():
            rel, _, name = key.rpartition("/")
            if name not in V2_DOC_KEYS:
                continue  # zarr-python 2 also consolidated other .z* keys; only nodes matter
            _check_entry(rel, value, where, key)
            nodes_.setdefault(rel, {})[name] = value
        # A bare .zattrs names no node.
        docs = {rel: d for rel, d in nodes_.items() if set(d) - {V2_ATTRS_KEY}}
        return cls(2, docs, where)

    def _key(self, rel: str) -> str:
        return f"{self._prefix}/{rel}" if self._prefix and rel else (self._prefix or rel)

    def metadata(self, rel: str = "") -> NodeMetadata | None:
        """The metadata of the node at `rel` below this view, or None if there is none."""
        key = self._key(rel)
        if key in self._cache:
            return self._cache[key]
        doc = self._docs.get(key)
        if doc is None:
            return None
        where = f"{self._where}: metadata {key!r}"
        if self.zarr_format == 3:
            meta = parse_metadata_v3(doc, where)
        else:
            meta = parse_metadata_v2(
                doc.get(V2_ARRAY_KEY),
                doc.get(V2_GROUP_KEY),
                doc.get(V2_ATTRS_KEY),
                prefix=f"{where}: ",
            )
        # Threads that parse one node at once all get the first one's metadata.
        return self._cache.setdefault(key, meta)

    @property
    def where(self) -> str:
        """The key of the document holding this consolidated metadata."""
        return self._where

    def paths(self) -> list[str]:
        """The relative path of every node listed below this view."""
        head = self._prefix + "/" if self._prefix else ""
        return sorted(k[len(head) :] for k in self._docs if k and k.startswith(head))

    def children(self, rel: str = "") -> list[str]:
        """Names of the direct children of `rel`."""
        return list(self._children.get(self._key(rel), ()))

    def subgroup(self, rel: str) -> ConsolidatedMetadata:
        """The view rooted at the group `rel` below this one."""
        return ConsolidatedMetadata(
            self.zarr_format,
            None,
            self._where,
            self._key(rel),
            (self._docs, self._children, self._cache),
        )


def _check_entry(rel: str, doc: Any, where: str, key: str | None = None) -> None:
    if not isinstance(doc, dict):
        raise MetadataError(f"{where}: metadata {key or rel!r}: expected an object")
    try:
        normalize_path(rel)
    except ValueError:
        raise MetadataError(f"{where}: metadata key {key or rel!r} is not a valid path") from None
    if rel.startswith("/") or rel.endswith("/"):
        raise MetadataError(f"{where}: metadata key {key or rel!r} is not a normalized path")


def open_group_metadata(
    store: Store, path: str, zarr_format: int | None, use_consolidated: bool | None
) -> tuple[Any, ConsolidatedMetadata | None]:
    """(metadata, consolidated metadata or None) of the node at `path`.

    A v2 `.zmetadata` also holds the group's own documents, so when it exists nothing else
    is read. NodeNotFoundError when there is no node; MetadataError when
    `use_consolidated` is True and the node is not a group with consolidated metadata,
    StoreError when the store keeps none (Store.supports_consolidated_metadata); with None,
    none is looked for there.
    """
    if use_consolidated:
        store.check_consolidated_metadata(path)
    elif not store.supports_consolidated_metadata:
        use_consolidated = False  # (any there would be stale: the store does not update it)
    meta: Any = None
    if zarr_format == 3:
        meta = read_metadata(store, path, 3)
    elif zarr_format is None:
        meta = find_metadata(store, path, 3)
    if meta is None:
        if use_consolidated is not False:
            key = join(path, V2_KEY)
            doc = load_json(store, key)
            if doc is not None:
                consolidated = ConsolidatedMetadata.from_v2(doc, key)
                root = consolidated.metadata("")
                if root is not None and root.node_type == "group":
                    return root, consolidated
        meta = read_metadata(store, path, 2)
    consolidated = None
    if meta.node_type == "group" and meta.zarr_format == 3 and use_consolidated is not False:
        consolidated = ConsolidatedMetadata.from_v3(meta.consolidated_metadata, join(path, V3_KEY))
    if use_consolidated and consolidated is None:
        raise MetadataError(f"no consolidated metadata for a group at path {path!r} in {store!r}")
    return meta, consolidated
