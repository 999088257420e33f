"""In-memory store: a mapping of keys to bytes, its own in C or a dict passed in."""
import contextlib

from .._memstore import NativeMemoryMap
from .base import BytesReader, Store, validate_key, validate_prefix


class MemoryStore(Store):
    """A store in memory. Its own data is kept in C (zarrcore._memstore.NativeMemoryMap), so
    array handles (Array.native_handle) read and write it from threads without the GIL; pass
    your own dict to share it instead (such a store is served by a[...] only)."""

    # Its data lives in this process, so locking out this process's threads locks out all.
    supports_locks = True
    process_local = True
    readers_keep_one_version = True  # (reader keeps the value it found)

    def __init__(self, store_dict=None, read_only=False):
        super().__init__(read_only)
        self._data = NativeMemoryMap() if store_dict is None else store_dict

    @property
    def native_memory(self):
        """The NativeMemoryMap holding the data, or None for a dict passed in."""
        return self._data if isinstance(self._data, NativeMemoryMap) else None

    def lock(self, key, node="", *, replaced_last=False):
        """Exclusive across threads: the data lives in this process, so no other can write it.
        Over its own data, the lock array handles take for the key from native threads."""
        key = validate_key(key)
        if isinstance(self._data, NativeMemoryMap):
            return self._data.lock(key)
        return self.thread_lock(key)

    def _identity(self):
        # (A view of another library's dict, urls._ZarrBuffers, is identified by that dict.)
        return id(getattr(self._data, "shared_dict", self._data))

    def __repr__(self):
        return f"MemoryStore(<{len(self._data)} keys>)"

    def get(self, key, start=None, stop=None):
        value = self._data.get(validate_key(key))
        if value is None:
            return None
        if start is None and stop is None:
            return bytes(value)
        return bytes(value[slice(start, stop)])

    @contextlib.contextmanager
    def reader(self, key):
        """As Store.reader, of the value stored now (values are immutable bytes)."""
        value = self._data.get(validate_key(key))
        yield None if value is None else BytesReader(value)

    def set(self, key, value):
        self.check_writable(key)
        self._data[validate_key(key)] = bytes(value)

    def delete(self, key):
        self.check_writable(key)
        self._data.pop(validate_key(key), None)

    def exists(self, key):
        return validate_key(key) in self._data

    def list_prefix(self, prefix):
        prefix = validate_prefix(prefix)
        head = prefix + "/" if prefix else ""
        return [k for k in list(self._data) if k.startswith(head)]

    def list_dir(self, prefix):
        prefix = validate_prefix(prefix)
        head = prefix + "/" if prefix else ""
        names = set()
        for k in list(self._data):
            if k.startswith(head):
                names.add(k[len(head):].split("/", 1)[0])
        return sorted(names)


# memory://NAME stores: one mapping per name for the life of the process.
_NAMED: dict[str, NativeMemoryMap] = {}


def named_memory_store(name, read_only=False):
    """The MemoryStore of `memory://name`, shared by every opening of that name in this
    process (a new, unshared one when `name` is empty)."""
    if not name:
        return MemoryStore(read_only=read_only)
    if name not in _NAMED:
        _NAMED[name] = NativeMemoryMap()
    return MemoryStore(_NAMED[name], read_only=read_only)
