"""Walking a hierarchy as stored, and telling the stored keys of an array apart."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..errors import ZarrcoreError
from ..metadata.types import NodeMetadata, StoreLike
from ..nodes.consolidated import V2_KEY
from ..nodes.node import (
    METADATA_KEYS,
    V3_KEY,
    Node,
    join,
    node_exists,
    normalize_path,
    read_metadata,
)
from ..storage import Store, make_store

__all__ = [
    "CONVERT_STATE_KEY",
    "ProblemHandler",
    "array_dimensions",
    "named_axes",
    "place",
    "source_and_dest",
    "store_and_path",
    "walk",
]

# Written into a destination while a conversion runs; see tools/convert.py.
CONVERT_STATE_KEY = ".zarrcore-convert.json"
_NOT_MEMBERS = frozenset(METADATA_KEYS) | {V2_KEY, CONVERT_STATE_KEY}


def store_and_path(
    source: StoreLike | Node,
    path: str = "",
    read_only: bool = False,
    storage_options: dict[str, Any] | None = None,
    mode: str | None = None,
) -> tuple[Store, str]:
    """(Store, normalized path) of a path, URL, dict, Store, Array or Group plus a path below
    it; `storage_options` configure a URL; `mode` "w": the whole store is being replaced."""
    if isinstance(source, Node):
        inside = join(source.path, normalize_path(path))
        return source.store, normalize_path(inside)
    store = make_store(source, read_only=read_only, storage_options=storage_options, mode=mode)
    return store, normalize_path(path)


def source_and_dest(
    source: StoreLike | Node,
    source_path: str,
    source_storage_options: dict[str, Any] | None,
    dest: StoreLike | Node,
    dest_path: str,
    dest_storage_options: dict[str, Any] | None,
    overwrite: bool,
) -> tuple[Store, str, Store, str]:
    """(source store, path, destination store, path) of a copy or conversion: the source read
    only; the destination made anew where `overwrite` replaces it whole (a zip's members
    cannot be deleted)."""
    src_store, src_path = store_and_path(
        source, source_path, read_only=True, storage_options=source_storage_options
    )
    dst_store, dst_path = store_and_path(
        dest,
        dest_path,
        storage_options=dest_storage_options,
        mode="w" if overwrite and not dest_path else None,
    )
    return src_store, src_path, dst_store, dst_path


def place(store: Store, path: str) -> str:
    """The store, and the path in it unless it is the root, for messages."""
    return f"{store!r}" + (f" at {path!r}" if path else "")


#: Hears of a problem: (kind, key, detail).
ProblemHandler = Callable[[str, str, str], object]


def walk(store: Store, path: str, on_problem: ProblemHandler) -> Iterator[tuple[str, NodeMetadata]]:
    """Yield (path, metadata) of the node at `path` and of every node below it, parents first,
    reading each node's own metadata (not consolidated copies).

    `on_problem(kind, key, detail)` hears of metadata that does not read ("metadata") and of
    keys inside a group that belong to no node ("stray")."""
    try:
        meta = read_metadata(store, path)
    except ZarrcoreError as e:
        on_problem("metadata", _metadata_key(store, path), str(e))
        return
    yield path, meta
    if meta.node_type != "group":
        return
    for name in store.list_dir(path):
        if name in _NOT_MEMBERS:
            continue
        child = join(path, name)
        if node_exists(store, child):
            yield from walk(store, child, on_problem)
            continue
        keys = [child] if store.exists(child) else sorted(store.list_prefix(child))
        for key in keys:
            on_problem("stray", key, "belongs to no array or group")


def array_dimensions(attributes: Mapping[str, Any], ndim: int) -> list[str] | None:
    """The dimension names a `_ARRAY_DIMENSIONS` attribute gives an `ndim`-d array (v2's and
    xarray's way), or None when it is absent or names no axes of it."""
    names = attributes.get("_ARRAY_DIMENSIONS")
    if isinstance(names, list) and len(names) == ndim and all(isinstance(n, str) for n in names):
        return names
    return None


def named_axes(meta: Any, ndim: int) -> tuple[tuple[str | None, ...], dict[str, Any]]:
    """(the axes' names, None for an unnamed one; the other attributes) of an array's
    metadata: format 3's `dimension_names`, else `_ARRAY_DIMENSIONS`, which is then no
    attribute (nor where it repeats the names)."""
    attributes = dict(meta.attributes)
    names = getattr(meta, "dimension_names", None)
    given = array_dimensions(attributes, ndim)
    if names is None or all(n is None for n in names):
        names = given
    if given is not None and list(given) == list(names or ()):
        del attributes["_ARRAY_DIMENSIONS"]
    return tuple(names) if names is not None else (None,) * ndim, attributes


def _metadata_key(store: Store, path: str) -> str:
    for key in METADATA_KEYS:
        full = join(path, key)
        if store.exists(full):
            return full
    return join(path, V3_KEY)
