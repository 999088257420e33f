"""make_store: a Store from whatever a caller passes as a store (a path, a URL, a dict, a
zarr-python store, an fsspec filesystem or mapper, an obstore store).

A URL never falls back to a local path: an unknown scheme, or a scheme whose optional
dependency is missing, raises StoreURLError naming the URL and what to install."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from ..errors import StoreURLError, UnsupportedStoreError
from .base import Store
from .fsspec import FsspecStore
from .local import LocalStore
from .memory import MemoryStore, named_memory_store
from .objectstore import ObjectStore
from .options import StorageOptions, checked_fsspec_options
from .zip import ZipStore

if TYPE_CHECKING:
    from zarr.core.buffer import Buffer

__all__ = [
    "LOCATION_OPENERS",
    "URL_SCHEME",
    "ZARR_STORE_OPENERS",
    "keeps_consolidated_metadata",
    "make_store",
]

URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# Schemes obstore opens (gcs:// is fsspec's spelling of gs://).
_OBJECT_SCHEMES = {"s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl", "http", "https"}
_REMOTE_EXTRA = 'pip install "zarrcore[remote]"'


#: How stores that build on this module (opening their own targets through make_store) open
#: a path or URL: `opener(location, storage_options)` gives their Store, or None when the
#: location is not theirs. zarrcore.storage.references registers ReferenceStore's.
LOCATION_OPENERS: list[Callable[[str, StorageOptions | None], Store | None]] = []

#: How stores that build on this module read one of zarr-python's stores natively:
#: `opener(store)` gives their Store, or None when the store is not theirs.
#: zarrcore.storage.manifests registers VirtualiZarr's ManifestStore's.
ZARR_STORE_OPENERS: list[Callable[[Any], Store | None]] = []


def _is_zip_path(path: str) -> bool:
    return path.lower().endswith(".zip") and not os.path.isdir(path)


def keeps_consolidated_metadata(store: object) -> bool:
    """May consolidated metadata be kept in `store` (anything make_store takes, or a node)?
    Not in a store that declares it may not, as an Icechunk session's does."""
    return bool(getattr(store, "supports_consolidated_metadata", True))


def make_store(
    store: object,
    read_only: bool = False,
    storage_options: StorageOptions | None = None,
    mode: str | None = None,
) -> Store:
    """Turn `store` into a Store.

    - None or a dict: a MemoryStore (over the dict); a Store: itself.
    - A path (str or PathLike): a LocalStore, a ZipStore when it names a `.zip` file, a
      ReferenceStore when it names kerchunk references (a `.json` file, a parquet directory).
    - A URL: file:// (a directory, or a .zip), memory://NAME (one store per name in the
      process), zip://PATH, reference:// (a ReferenceStore: `storage_options` are fsspec's
      ReferenceFileSystem's, `fo` the references; see ReferenceStore.from_options), s3://,
      gs://, az:// / abfs://, http(s):// (an ObjectStore; the extra `zarrcore[remote]`),
      and any other protocol fsspec knows (an FsspecStore).
      `storage_options` configure it (see ObjectStore.from_url; fsspec's own for fsspec).
    - zarr-python's LocalStore, MemoryStore, FsspecStore, ObjectStore and ZipStore (read
      natively); VirtualiZarr's ManifestStore, as references whose targets its registry's
      obstore stores read (a ReferenceStore; through its own API when the registry holds
      another kind); any other zarr-python store (a WrapperStore, Icechunk's IcechunkStore)
      through its own API (a ZarrPythonStore); an fsspec filesystem or FSMap, an obstore
      store.
    `mode` "w": the whole store is being replaced (a zip is made anew).
    """
    if isinstance(store, (str, os.PathLike)):
        path = os.fspath(store)
        if isinstance(path, bytes):
            raise UnsupportedStoreError(f"a store path must be text, not {path!r}")
        for opener in LOCATION_OPENERS:
            opened = opener(path, storage_options)
            if opened is not None:
                return opened
        if "://" not in path and "::" not in path:
            if storage_options:
                raise StoreURLError(f"storage_options are for URLs, not the path {path!r}")
            if _is_zip_path(path):
                return _zip_store(path, read_only, mode)
            return LocalStore(path, read_only=read_only)
        return _from_url(path, read_only, storage_options, mode)
    if storage_options:
        raise StoreURLError(f"storage_options are for URLs, not a {type(store).__name__}")
    if isinstance(store, Store):
        return store
    if isinstance(store, dict):
        return MemoryStore(store, read_only=read_only)
    if store is None:
        return MemoryStore(read_only=read_only)
    converted = _from_object(store, read_only, mode)
    if converted is None:
        raise UnsupportedStoreError(
            f"unsupported store type {type(store).__name__}: give a path, a URL, a dict, a "
            f"zarrcore Store or one of the stores the guide's 'Storage and URLs' page lists"
        )
    return converted


def _zip_store(path: str, read_only: bool, mode: str | None) -> ZipStore:
    zip_mode: Literal["r", "a", "w"] = "r" if read_only else "w" if mode == "w" else "a"
    return ZipStore(path, read_only=read_only, mode=zip_mode)


def _from_url(
    url: str, read_only: bool, storage_options: StorageOptions | None, mode: str | None
) -> Store:
    match = URL_SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    rest = url[match.end() :] if match else url
    if scheme == "file" and "::" not in url:
        if storage_options:
            raise StoreURLError(f"storage_options are for remote URLs, not {url!r}")
        if _is_zip_path(rest):
            return _zip_store(rest, read_only, mode)
        return LocalStore(rest, read_only=read_only)
    if scheme == "memory":
        return named_memory_store(rest.strip("/"), read_only)
    if scheme == "zip" and "::" not in url:
        if not rest:
            raise StoreURLError(f"{url!r} names no zip file (zip://PATH.zip)")
        return _zip_store(rest, read_only, mode)
    if scheme in _OBJECT_SCHEMES and "::" not in url:
        try:
            import obstore  # noqa: F401
        except ImportError:
            raise StoreURLError(f"opening {url!r} needs obstore: {_REMOTE_EXTRA}") from None
        if scheme == "gcs":
            url = "gs://" + rest
        return ObjectStore.from_url(url, read_only, storage_options)
    return _fsspec_url(url, scheme, read_only, storage_options)


def _fsspec_url(
    url: str, scheme: str, read_only: bool, storage_options: StorageOptions | None
) -> FsspecStore:
    """Other protocols, and fsspec's chained URLs (`simplecache::s3://...`), through fsspec."""
    try:
        import fsspec.core
        from fsspec.registry import known_implementations, registry
    except ImportError:
        raise StoreURLError(
            f"{url!r}: the scheme {scheme!r} is not one zarrcore opens "
            f"itself; fsspec would open it: {_REMOTE_EXTRA}"
        ) from None
    protocol = url.split("::", 1)[0].split("://", 1)[0] if "::" in url else scheme
    if protocol not in known_implementations and protocol not in registry:
        raise StoreURLError(
            f"{url!r}: unknown scheme {protocol!r} (zarrcore opens s3://, gs://, "
            f"az://, abfs://, http(s)://, file://, memory://, zip:// and "
            f"fsspec's protocols)"
        )
    options = checked_fsspec_options(url, dict(storage_options or {}))
    single_writer = options.pop("single_writer", False)
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
    except ImportError as e:
        raise StoreURLError(f"opening {url!r} needs a package that is not installed: {e}") from e
    except (ValueError, TypeError) as e:
        raise StoreURLError(f"cannot open {url!r}: {e}") from e
    return FsspecStore(fs, path, read_only=read_only, single_writer=single_writer)


class _ZarrBuffers:
    """zarr-python's MemoryStore dict (of zarr Buffers) seen as a dict of bytes, so both
    libraries share one in-memory store."""

    def __init__(self, buffers: dict[str, Buffer]) -> None:
        from zarr.core.buffer import default_buffer_prototype

        self.shared_dict = buffers
        self._buffer = default_buffer_prototype().buffer

    def get(self, key: str, default: bytes | None = None) -> bytes | None:
        value = self.shared_dict.get(key)
        return default if value is None else value.to_bytes()

    def __setitem__(self, key: str, value: bytes) -> None:
        self.shared_dict[key] = self._buffer.from_bytes(value)

    def pop(self, key: str, default: bytes | None = None) -> bytes | None:
        value = self.shared_dict.pop(key, None)
        return default if value is None else value.to_bytes()

    def __contains__(self, key: object) -> bool:
        return key in self.shared_dict

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.shared_dict))

    def __len__(self) -> int:
        return len(self.shared_dict)


def _zarr_native(store: Any, read_only: bool, mode: str | None) -> Store | None:
    """zarrcore's own store over the data of one of zarr-python's stores that zarrcore reads
    natively, or None when `store` is none of them (nor a subclass's instance)."""
    kind = type(store).__name__
    if not type(store).__module__.startswith("zarr."):
        return None
    if kind == "LocalStore":
        return LocalStore(store.root, read_only=read_only)
    if kind == "MemoryStore":
        return MemoryStore(_ZarrBuffers(store._store_dict), read_only=read_only)
    if kind == "FsspecStore":
        from .zarr_python import zarr_loop

        return FsspecStore(store.fs, store.path, read_only=read_only, loop=zarr_loop())
    if kind == "ObjectStore":
        return ObjectStore(store.store, read_only=read_only)
    if kind == "ZipStore":
        if store.path is None:
            return None  # (a zip in a file object: read through zarr-python's store)
        if getattr(store, "_is_open", False) and not store.read_only:
            raise StoreURLError(
                f"{store!r} is open for writing in zarr-python: close it first (one writer per zip)"
            )
        return _zip_store(store.path, read_only, mode)
    return None


def _from_object(store: Any, read_only: bool, mode: str | None) -> Store | None:
    """A Store over another library's store object, or None when it is none of them."""
    # (`store` is recognised by its class's module and name, or by the base classes of
    # modules already imported, so as not to import the libraries: its type is any of theirs.)
    zarr_stores = sys.modules.get("zarr.abc.store")
    if zarr_stores is not None and isinstance(store, zarr_stores.Store):
        read_only = read_only or store.read_only
        native = _zarr_native(store, read_only, mode)
        if native is None:
            native = next(
                (found for opener in ZARR_STORE_OPENERS if (found := opener(store)) is not None),
                None,
            )
        if native is not None:
            return native
        # Any other zarr-python store (a wrapper, Icechunk's, VirtualiZarr's) through its own
        # API; a zarrcore store over the data below the wrappers (not a zip: one writer)
        # lends it locks.
        from .zarr_python import ZarrPythonStore, innermost

        inner = innermost(store)
        below = None
        if inner is not store and type(inner).__name__ != "ZipStore":
            below = _zarr_native(inner, read_only, mode)
        return ZarrPythonStore(store, read_only=read_only, below=below)
    if (type(store).__module__ or "").startswith("obstore"):
        return ObjectStore(store, read_only=read_only)
    fsspec = sys.modules.get("fsspec")
    if fsspec is not None:
        from fsspec.mapping import FSMap

        if isinstance(store, FSMap):
            return FsspecStore(store.fs, store.root, read_only=read_only)
        if isinstance(store, fsspec.AbstractFileSystem):
            return FsspecStore(store, "", read_only=read_only)
    return None
