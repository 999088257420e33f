"""In-memory store: a mapping of keys to bytes, its own in C or a dict passed in."""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .._native.memstore import NativeMemoryMap
from .base import BytesReader, RangeReader, Store, validate_key, validate_prefix

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["KeyBytes", "MemoryStore", "named_memory_store"]


class KeyBytes(Protocol):
    """The mapping of keys to bytes a MemoryStore passed a dict keeps its data in: that
    dict, or a view alike (urls._ZarrBuffers)."""

    def get(self, key: str, /) -> bytes | None: ...

    def __setitem__(self, key: str, value: bytes, /) -> None: ...

    def pop(self, key: str, default: None, /) -> bytes | None: ...

    def __contains__(self, key: object, /) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def __len__(self) -> int: ...


class MemoryStore(Store):
    """A store in memory. Its own data is kept in C (zarrcore._native.memstore.NativeMemoryMap), so
    array handles (Array.native_handle) read and write it from threads without the GIL; pass
    your own dict to share it instead (such a store is served by a[...] only)."""

    # Its data lives in this process, so locking out this process's threads locks out all.
    supports_locks = True
    process_local = True
    readers_keep_one_version = True  # (reader keeps the value it found)

    def __init__(
        self, store_dict: NativeMemoryMap | KeyBytes | None = None, read_only: bool = False
    ) -> None:
        super().__init__(read_only)
        self._data: NativeMemoryMap | KeyBytes = (
            NativeMemoryMap() if store_dict is None else store_dict
        )

    @property
    def native_memory(self) -> NativeMemoryMap | None:
        """The NativeMemoryMap holding the data, or None for a dict passed in."""
        return self._data if isinstance(self._data, NativeMemoryMap) else None

    def lock(
        self, key: str, node: str = "", *, replaced_last: bool = False
    ) -> AbstractContextManager[None]:
        """Exclusive across threads: the data lives in this process, so no other can write it.
        Over its own data, the lock array handles take for the key from native threads."""
        key = validate_key(key)
        if isinstance(self._data, NativeMemoryMap):
            held: AbstractContextManager[None] = self._data.lock(key)  # (its stub is untyped)
            return held
        return self.thread_lock(key)

    def _identity(self) -> Hashable:
        # (A view of another library's dict, urls._ZarrBuffers, is identified by that dict.)
        return id(getattr(self._data, "shared_dict", self._data))

    def __repr__(self) -> str:
        return f"MemoryStore(<{len(self._data)} keys>)"

    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        value = self._data.get(validate_key(key))
        if value is None:
            return None
        if start is None and stop is None:
            return bytes(value)
        return bytes(value[slice(start, stop)])

    @contextlib.contextmanager
    def reader(self, key: str, version: Any = None) -> Iterator[RangeReader | None]:
        """As Store.reader, of the value stored now (values are immutable bytes)."""
        value = self._data.get(validate_key(key))
        yield None if value is None else BytesReader(value)

    def set(self, key: str, value: ReadableBuffer) -> None:
        self.check_writable(key)
        # (bytes(), even of bytes, looks up __bytes__ on the value's type: on a free-threaded
        # CPython 3.13 threads writing at once queue on the interpreter's type lock there.)
        self._data[validate_key(key)] = value if type(value) is bytes else bytes(value)

    def delete(self, key: str) -> None:
        self.check_writable(key)
        self._data.pop(validate_key(key), None)

    def exists(self, key: str) -> bool:
        return validate_key(key) in self._data

    def list_prefix(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        head = prefix + "/" if prefix else ""
        return [k for k in list(self._data) if k.startswith(head)]

    def list_dir(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        head = prefix + "/" if prefix else ""
        names: set[str] = set()
        for k in list(self._data):
            if k.startswith(head):
                names.add(k[len(head) :].split("/", 1)[0])
        return sorted(names)


# memory://NAME stores: one mapping per name for the life of the process.
_NAMED: dict[str, NativeMemoryMap] = {}


def named_memory_store(name: str, read_only: bool = False) -> MemoryStore:
    """The MemoryStore of `memory://name`, shared by every opening of that name in this
    process (a new, unshared one when `name` is empty)."""
    if not name:
        return MemoryStore(read_only=read_only)
    data = _NAMED.get(name)
    if data is None:
        # setdefault, not a test and a store: two threads opening a new name at once get the
        # same mapping, so neither's writes go to one the other never sees.
        data = _NAMED.setdefault(name, NativeMemoryMap())
    return MemoryStore(data, read_only=read_only)
