"""Stores: where keys and their bytes live. ObjectStore needs obstore and FsspecStore fsspec
(the extra `zarrcore[remote]`), imported only when such a store is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import manifests  # noqa: F401  (registers its opener of ManifestStores)
from .base import Store, validate_key
from .fsspec import FsspecStore
from .local import LocalStore
from .memory import MemoryStore
from .objectstore import ObjectStore
from .references import ReferenceStore
from .urls import make_store
from .zip import ZipStore

if TYPE_CHECKING:
    from zarr.abc.store import Store as ZarrStore

    from .zarr_python import StoredNode

__all__ = [
    "Store",
    "LocalStore",
    "MemoryStore",
    "ZipStore",
    "ObjectStore",
    "FsspecStore",
    "ReferenceStore",
    "validate_key",
    "make_store",
    "as_zarr_store",
]


def as_zarr_store(store_or_node: Store | StoredNode, *, read_only: bool | None = None) -> ZarrStore:
    """zarr-python's store (a `zarr.abc.store.Store`) over a zarrcore Store, or over the keys
    below a zarrcore Group or Array: `xr.open_zarr(as_zarr_store(group))` reads through
    zarrcore's store. Needs zarr-python.

    Parameters
    ----------
    store_or_node : Store, Group or Array
        The store, or the node whose path becomes the zarr-python store's root.
    read_only : bool, optional
        Default: as the zarrcore store.

    Returns
    -------
    zarr.abc.store.Store
    """
    from .zarr_python import as_zarr_store as make

    return make(store_or_node, read_only=read_only)
