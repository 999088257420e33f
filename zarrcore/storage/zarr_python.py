"""A zarrcore Store seen as a zarr-python store (zarr.abc.store.Store), so that zarr-python
and xarray's zarr engine (`xr.open_zarr`) read and write through zarrcore's stores: a
directory, memory, a zip, object stores and fsspec alike. Needs zarr-python."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Protocol

from zarr.abc.store import (
    OffsetByteRequest, RangeByteRequest, Store as ZarrStore, SuffixByteRequest,
)

from .base import Store

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype


class StoredNode(Protocol):
    """A zarrcore Group or Array: the keys below `path` of `store`."""

    @property
    def store(self) -> Store: ...

    @property
    def path(self) -> str: ...


def _bounds(byte_range: ByteRequest | None) -> tuple[int | None, int | None]:
    """zarrcore's (start, stop) slice bounds of a zarr-python byte request."""
    if byte_range is None:
        return None, None
    if isinstance(byte_range, RangeByteRequest):
        return byte_range.start, byte_range.end
    if isinstance(byte_range, OffsetByteRequest):
        return byte_range.offset, None
    if isinstance(byte_range, SuffixByteRequest):
        # A suffix of 0 bytes is the empty range, not the whole value (-0 == 0).
        return (-byte_range.suffix, None) if byte_range.suffix else (0, 0)
    raise TypeError(f"unexpected byte range {byte_range!r}")


class ZarrcoreStore(ZarrStore):
    """zarr-python's view of the keys below `root` of a zarrcore Store. Blocking store calls
    run in worker threads, so zarr-python's event loop keeps serving other requests."""

    supports_writes = True
    supports_deletes = True
    supports_partial_writes = False
    supports_listing = True

    def __init__(self, store: Store, root: str = "", *, read_only: bool | None = None) -> None:
        if not isinstance(store, Store):
            raise TypeError(f"expected a zarrcore Store, not {type(store).__name__}")
        super().__init__(read_only=store.read_only if read_only is None else read_only)
        self.store = store
        self.root = root.strip("/")
        self.supports_listing = store.supports_listing
        self.supports_writes = self.supports_deletes = store.supports_writes

    def _key(self, key: str) -> str:
        return f"{self.root}/{key}" if self.root else key

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and other.store == self.store
                and other.root == self.root)

    def __repr__(self) -> str:
        return f"ZarrcoreStore({self.store!r}, root={self.root!r})"

    def with_read_only(self, read_only: bool = False) -> ZarrcoreStore:
        return type(self)(self.store, self.root, read_only=read_only)

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        start, stop = _bounds(byte_range)
        data = await asyncio.to_thread(self.store.get, self._key(key), start, stop)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(
            self, prototype: BufferPrototype,
            key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        return await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges))

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self.store.exists, self._key(key))

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        await asyncio.to_thread(self.store.set, self._key(key), value.to_bytes())

    async def delete(self, key: str) -> None:
        self._check_writable()
        await asyncio.to_thread(self.store.delete, self._key(key))

    async def getsize(self, key: str) -> int:
        size = await asyncio.to_thread(self.store.getsize, self._key(key))
        if size is None:
            raise FileNotFoundError(key)
        return size

    async def _relative_keys(self, prefix: str) -> list[str]:
        """Every key below the root (relative to it) that starts with `prefix`."""
        parent = prefix.rpartition("/")[0]
        full = self._key(parent) if parent else self.root
        keys = await asyncio.to_thread(lambda: list(self.store.list_prefix(full)))
        skip = len(self.root) + 1 if self.root else 0
        return [k[skip:] for k in keys if k[skip:].startswith(prefix)]

    async def list(self) -> AsyncIterator[str]:
        for key in await self._relative_keys(""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in await self._relative_keys(prefix):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        full = self._key(prefix.strip("/")) if prefix.strip("/") else self.root
        for name in await asyncio.to_thread(lambda: list(self.store.list_dir(full))):
            yield name


def as_zarr_store(store_or_node: Store | StoredNode, *,
                  read_only: bool | None = None) -> ZarrcoreStore:
    """zarr-python's store over a zarrcore Store, or over the keys of a zarrcore Group or
    Array (rooted at its path): `xr.open_zarr(as_zarr_store(group))`,
    `zarr.open_group(as_zarr_store(store))`."""
    if isinstance(store_or_node, Store):
        return ZarrcoreStore(store_or_node, read_only=read_only)
    store = getattr(store_or_node, "store", None)
    if not isinstance(store, Store):
        raise TypeError(f"expected a zarrcore Store, Group or Array, not "
                        f"{type(store_or_node).__name__}")
    return ZarrcoreStore(store, store_or_node.path, read_only=read_only)
