"""A zarrcore Store seen as a zarr-python store (zarr.abc.store.Store), so that zarr-python
and xarray's zarr engine (`xr.open_zarr`) read and write through zarrcore's stores: a
directory, memory, a zip, object stores and fsspec alike. Needs zarr-python."""
import asyncio

from zarr.abc.store import OffsetByteRequest, RangeByteRequest, Store as ZarrStore, SuffixByteRequest

from .base import Store


def _bounds(byte_range):
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

    def __init__(self, store, root="", *, read_only=None):
        if not isinstance(store, Store):
            raise TypeError(f"expected a zarrcore Store, not {type(store).__name__}")
        super().__init__(read_only=store.read_only if read_only is None else read_only)
        self.store = store
        self.root = root.strip("/")
        self.supports_listing = store.supports_listing
        self.supports_writes = self.supports_deletes = store.supports_writes

    def _key(self, key):
        return f"{self.root}/{key}" if self.root else key

    def __eq__(self, other):
        return (type(other) is type(self) and other.store == self.store
                and other.root == self.root)

    def __repr__(self):
        return f"ZarrcoreStore({self.store!r}, root={self.root!r})"

    def with_read_only(self, read_only=False):
        return type(self)(self.store, self.root, read_only=read_only)

    async def get(self, key, prototype, byte_range=None):
        start, stop = _bounds(byte_range)
        data = await asyncio.to_thread(self.store.get, self._key(key), start, stop)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(self, prototype, key_ranges):
        return await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges))

    async def exists(self, key):
        return await asyncio.to_thread(self.store.exists, self._key(key))

    async def set(self, key, value):
        self._check_writable()
        await asyncio.to_thread(self.store.set, self._key(key), value.to_bytes())

    async def delete(self, key):
        self._check_writable()
        await asyncio.to_thread(self.store.delete, self._key(key))

    async def getsize(self, key):
        size = await asyncio.to_thread(self.store.getsize, self._key(key))
        if size is None:
            raise FileNotFoundError(key)
        return size

    async def _relative_keys(self, prefix):
        """Every key below the root (relative to it) that starts with `prefix`."""
        parent = prefix.rpartition("/")[0]
        full = self._key(parent) if parent else self.root
        keys = await asyncio.to_thread(lambda: list(self.store.list_prefix(full)))
        skip = len(self.root) + 1 if self.root else 0
        return [k[skip:] for k in keys if k[skip:].startswith(prefix)]

    async def list(self):
        for key in await self._relative_keys(""):
            yield key

    async def list_prefix(self, prefix):
        for key in await self._relative_keys(prefix):
            yield key

    async def list_dir(self, prefix):
        full = self._key(prefix.strip("/")) if prefix.strip("/") else self.root
        for name in await asyncio.to_thread(lambda: list(self.store.list_dir(full))):
            yield name


def as_zarr_store(store_or_node, *, read_only=None):
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
