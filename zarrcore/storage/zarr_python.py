"""zarr-python's stores and zarrcore's, each seen as the other's.

ZarrPythonStore: any zarr-python store (a `zarr.abc.store.Store`: WrapperStore subclasses,
Icechunk's IcechunkStore, VirtualiZarr's ManifestStore) as a zarrcore Store, so that the
engine reads and writes it in its native batches. ZarrcoreStore: a zarrcore Store as a
zarr-python store, so that zarr-python and xarray's zarr engine (`xr.open_zarr`) read and write
through zarrcore's stores. Needs zarr-python."""

from __future__ import annotations

import asyncio
import contextlib
import errno
from collections.abc import AsyncIterator, Awaitable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.abc.store import Store as ZarrStore
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import _get_loop
from zarr.storage import MemoryStore as ZarrMemoryStore
from zarr.storage import WrapperStore
from zarr.storage import ZipStore as ZarrZipStore

from ..errors import CommitConflictError, DeleteUnsupportedError, ForeignStoreError, ZarrcoreError
from ..runtime import _aio
from ..runtime.concurrency import each, fan_out, run_bounded
from .base import (
    ByteRange,
    Fetched,
    Pieces,
    ReadBytes,
    Request,
    Store,
    in_flight,
    validate_key,
    validate_prefix,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from _typeshed import ReadableBuffer
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = [
    "StoredNode",
    "ZarrPythonStore",
    "ZarrcoreStore",
    "as_zarr_store",
    "innermost",
    "is_icechunk",
    "of_store_class",
    "place",
    "zarr_loop",
    "zarr_store_error",
]

_T = TypeVar("_T")


def zarr_loop() -> asyncio.AbstractEventLoop:
    """zarr-python's event loop, on which it runs every store's coroutines: a store may hold
    sessions bound to it (aiohttp's, in its FsspecStore)."""
    return _get_loop()


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
        return type(other) is type(self) and other.store == self.store and other.root == self.root

    def __repr__(self) -> str:
        return f"ZarrcoreStore({self.store!r}, root={self.root!r})"

    def with_read_only(self, read_only: bool = False) -> ZarrcoreStore:
        return type(self)(self.store, self.root, read_only=read_only)

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        start, stop = _bounds(byte_range)
        data = await asyncio.to_thread(self.store.get, self._key(key), start, stop)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
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


# A range read only once the value's size is known, and one that is empty whatever it is.
_SIZED = object()
_EMPTY = object()
# What zarr-python stores raise for a missing key where they do not answer None or False
# (Icechunk's NotFoundError is a KeyError; VirtualiZarr's ManifestStore raises IndexError for
# a chunk outside the grid).
_MISSING = (FileNotFoundError, LookupError)


def _request(start: int | None, stop: int | None, clips: bool) -> ByteRequest | object | None:
    """zarr-python's request for the bytes [start:stop] of a value (Python slice bounds):
    None for all of it, or _SIZED or _EMPTY. `clips`: the store reads a range whose stop lies
    past the end up to the end (else ranges from the start, which bounded reads of whole
    values are, need the size)."""
    start = start or 0
    if stop is None:
        if start < 0:
            return SuffixByteRequest(-start)
        return OffsetByteRequest(start) if start else None
    if start < 0 or stop < 0 or (start == 0 and stop > 0 and not clips):
        return _SIZED
    return RangeByteRequest(start, stop) if stop > start else _EMPTY


def _contents(buffer: Buffer, copy: bool) -> ReadBytes:
    """The bytes of a zarr-python Buffer: a read-only view of its memory unless `copy`."""
    if copy:
        return buffer.to_bytes()
    return memoryview(buffer.as_numpy_array()).cast("B").toreadonly()


def of_store_class(thing: object) -> bool:
    """Whether `thing` is an instance of a zarr-python Store class, not only an object that
    passes isinstance (a mock with the class as its spec)."""
    return issubclass(type(thing), ZarrStore)


def place(store: ZarrStore) -> Any:
    """Where a zarr-python store's data is, as far as it can move: a LocalStore's root
    (LocalStore.move changes it), else None."""
    return getattr(store, "root", None)


def innermost(store: ZarrStore) -> ZarrStore:
    """The store below every WrapperStore around `store`."""
    while isinstance(store, WrapperStore):
        store = store._store
    return store


def _package(thing: object) -> str:
    """The top-level package that defines the type of `thing`."""
    return type(thing).__module__.partition(".")[0]


def is_icechunk(thing: object) -> bool:
    """Whether `thing` (a store, an error) is one of Icechunk's."""
    return _package(thing) == "icechunk"


def _session(store: ZarrStore) -> Any:
    """The writable Icechunk session (Session or ForkSession) `store` writes into, or None.
    Its changes stay in this process until its caller commits them; writers of other
    sessions conflict at commit, not here."""
    return cast(Any, store).session if is_icechunk(store) and not store.read_only else None


# Icechunk's errors for a session that another one's commit made out of date.
_ICECHUNK_CONFLICTS = ("ConflictError", "RebaseFailedError")


def _conflicts(error: Exception) -> str:
    """What an Icechunk rebase found in conflict (RebaseFailedError.conflicts): each node's
    path, conflicted chunks and kind of conflict."""
    found = [
        f"{c.path} {c.conflict_type}"
        + (f" in chunks {[list(i) for i in c.conflicted_chunks]}" if c.conflicted_chunks else "")
        for c in getattr(error, "conflicts", None) or ()
    ]
    return f"; in conflict: {', '.join(found)}" if found else ""


def zarr_store_error(error: Exception, what: str, session: Any = None) -> ZarrcoreError:
    """The ZarrcoreError of `error`, which a zarr-python store, or the Icechunk `session`
    below it, raised about `what`: Icechunk's conflicts at commit, rebase or merge are
    CommitConflictErrors naming the branch and what is in conflict; others
    ForeignStoreErrors."""
    name = type(error).__name__
    branch = getattr(session, "branch", None)
    if branch:
        what += f" on branch {branch!r}"
    if is_icechunk(error) and name in _ICECHUNK_CONFLICTS:
        return CommitConflictError(
            f"{what}: another session committed first ({name}: {error}){_conflicts(error)}"
        )
    code = getattr(error, "errno", None) or (
        errno.EACCES if isinstance(error, PermissionError) else errno.EIO
    )
    return ForeignStoreError(code, f"{what}: {name}: {error}")


def _is_fork(session: Any) -> bool:
    """Whether an Icechunk session is a fork: its copies in other processes write changes of
    their own, merged back into it (Session.fork, ForkSession.merge)."""
    return type(session).__name__ == "ForkSession"


class ZarrPythonStore(Store):
    """A zarr-python store (any `zarr.abc.store.Store`) as a zarrcore Store. Its coroutines
    run on zarr-python's event loop (zarr_loop), get_many's and set_many's up to
    the caller's concurrency (`in_flight`) at once; the ranges of one key are read by one
    get_partial_values. Errors of the store are StoreErrors naming the key.

    Capabilities are the store's: read-only, writes, deletes, listing and consolidated
    metadata support. zarr-python stores have neither locks nor conditional writes; a
    read-modify-write locks through the zarrcore store over the same data below the
    wrappers (a directory's file locks), or, over data that only this process writes (a
    zarr-python memory store or zip; a writable Icechunk session, whose other writers use
    other sessions and conflict at commit), locks out this process's threads; otherwise it
    raises LockUnavailableError."""

    def __init__(
        self, store: ZarrStore, read_only: bool = False, below: Store | None = None
    ) -> None:
        if not isinstance(store, ZarrStore):
            raise TypeError(f"expected a zarr-python store, not {type(store).__name__}")
        super().__init__(read_only or store.read_only or not store.supports_writes)
        self.zarr_store = store
        #: The zarrcore store over the data below the wrappers, which locks for this one.
        self.below = below
        self.supports_writes = store.supports_writes
        self.supports_deletes = store.supports_deletes
        self.supports_listing = store.supports_listing
        self.supports_consolidated_metadata = store.supports_consolidated_metadata
        self.supports_atomic_writes = False  # (unknown: each store writes its own way)
        inner = innermost(store)
        session = _session(inner)
        if below is not None:
            self.supports_locks = below.supports_locks
            self.process_local = below.process_local
        elif _is_fork(session):
            # (Forks in other processes cannot exclude each other: merging keeps the last.)
            self.merges_task_writes = True
        elif session is not None or isinstance(inner, (ZarrMemoryStore, ZarrZipStore)):
            # (A zip zarr-python writes has one writer: the process that holds it open.)
            self.supports_locks = self.process_local = True
        # Icechunk fails on a range past the end of a metadata document; VirtualiZarr's
        # ManifestStore reads on past the end of a chunk, into the rest of its file.
        self._clips_ranges = _package(inner) not in ("icechunk", "virtualizarr")
        # A store with no size query of its own answers getsize by reading the whole value
        # (zarr-python's default): a range that needs the size is then cheaper read whole.
        self._sizes_by_reading = type(inner).getsize is ZarrStore.getsize
        self._prototype = default_buffer_prototype()

    def _identity(self) -> Hashable:
        if self.below is not None:
            return self.below.identity
        inner = innermost(self.zarr_store)
        # (Icechunk's session stores have no identity: one per store object.)
        return id(inner._store_dict if isinstance(inner, ZarrMemoryStore) else self.zarr_store)

    def __repr__(self) -> str:
        words = " ".join(repr(self.zarr_store).split())
        return f"ZarrPythonStore({words[:120]})"

    def _error(self, key: str, error: Exception, doing: str = "") -> ZarrcoreError:
        """The ZarrcoreError of `error`, raised by the store about `key` (or while `doing`)."""
        return zarr_store_error(
            error, f"{doing or f'key {key!r}'} of {self!r}", _session(innermost(self.zarr_store))
        )

    async def _guarded(self, key: str, call: Awaitable[_T]) -> _T:
        """`call`'s result, its failure a StoreError naming `key`."""
        try:
            return await call
        except ZarrcoreError:
            raise
        except Exception as e:
            raise self._error(key, e) from e

    def _run(self, key: str, call: Awaitable[_T]) -> _T:
        return _aio.run(self._guarded(key, call), zarr_loop())

    # -- reads --------------------------------------------------------------
    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        ranges = None if start is None and stop is None else [(start, stop)]
        got = self._run(key, self._fetch(validate_key(key), ranges, copy=True))
        return got if got is None or isinstance(got, bytes) else bytes(got[0])

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None:
        got = self._run(key, self._fetch(validate_key(key), list(ranges)))
        return None if got is None else list(cast("Sequence[ReadBytes]", got))

    def get_many(
        self, requests: Sequence[Request], concurrency: int | None = None
    ) -> Iterator[tuple[int, Fetched]]:
        return each(
            fan_out(
                lambda r: self._guarded(r[0], self._fetch(validate_key(r[0]), r[1])),
                requests,
                in_flight(concurrency),
                loop=zarr_loop(),
                deadline=_aio.answer_deadline(),
                doing="reading",
            )
        )

    async def _fetch(
        self, key: str, ranges: Sequence[ByteRange] | None, copy: bool = False
    ) -> Fetched:
        """The value at `key` (ranges None) or the bytes of its ranges; None when missing."""
        if ranges is None:
            value = await self.zarr_store.get(key, self._prototype)
            return None if value is None else _contents(value, copy)
        requests = [_request(start, stop, self._clips_ranges) for start, stop in ranges]
        if _SIZED not in requests:
            with contextlib.suppress(ZarrcoreError):
                return await self._read_parts(key, requests, copy)
        # Ranges that need the value's size, or that the store refused (one starting past
        # the end, which slice bounds allow): resolved against its size.
        if self._sizes_by_reading:
            try:
                value = await self.zarr_store.get(key, self._prototype)
            except _MISSING:
                return None
            if value is None:
                return None
            # (Cut from a view, each range copied once where `copy`.)
            whole = _contents(value, False)
            return [
                bytes(whole[start:stop]) if copy else whole[start:stop] for start, stop in ranges
            ]
        try:
            size = await self.zarr_store.getsize(key)
        except _MISSING:
            return None
        resolved = [slice(start, stop).indices(size)[:2] for start, stop in ranges]
        return await self._read_parts(
            key, [RangeByteRequest(lo, hi) if hi > lo else _EMPTY for lo, hi in resolved], copy
        )

    async def _read_parts(self, key: str, requests: list[Any], copy: bool) -> Fetched:
        """The bytes of each request (b"" for _EMPTY) of `key`, or None when it is missing;
        a refused request is a StoreError."""
        asked = [(i, r) for i, r in enumerate(requests) if r is not _EMPTY]
        if not asked:
            return [b""] * len(requests) if await self.zarr_store.exists(key) else None
        try:
            if len(asked) == 1:
                got = [await self.zarr_store.get(key, self._prototype, asked[0][1])]
            else:
                got = await self._get_partial_values(key, [r for _, r in asked])
        except _MISSING:
            return None
        except Exception as e:
            raise self._error(key, e) from e
        parts: list[ReadBytes] = [b""] * len(requests)
        for (i, _), part in zip(asked, got):
            if part is None:
                return None
            parts[i] = _contents(part, copy)
        return parts

    async def _get_partial_values(
        self, key: str, requests: list[ByteRequest]
    ) -> list[Buffer | None]:
        """The store's batched read of `requests` of `key`; one get each where it has none
        (VirtualiZarr's ManifestStore)."""
        try:
            return await self.zarr_store.get_partial_values(
                self._prototype, [(key, r) for r in requests]
            )
        except NotImplementedError:
            return list(
                await asyncio.gather(
                    *(self.zarr_store.get(key, self._prototype, r) for r in requests)
                )
            )

    def exists(self, key: str) -> bool:
        async def found() -> bool:
            try:
                try:
                    return await self.zarr_store.exists(key)
                except NotImplementedError:  # (VirtualiZarr's ManifestStore)
                    return await self.zarr_store.get(key, self._prototype) is not None
            except _MISSING:
                return False

        return self._run(validate_key(key), found())

    def getsize(self, key: str) -> int | None:
        async def size() -> int | None:
            try:
                return await self.zarr_store.getsize(key)
            except _MISSING:
                return None

        return self._run(validate_key(key), size())

    # -- writes -------------------------------------------------------------
    async def _put(self, key: str, value: ReadableBuffer) -> None:
        # (A zarr-python store may keep the buffer it is given: it must not change after.)
        data = value if isinstance(value, bytes) else bytes(value)
        await self._guarded(key, self.zarr_store.set(key, self._prototype.buffer.from_bytes(data)))

    def set(self, key: str, value: ReadableBuffer) -> None:
        self.check_writable(key)
        _aio.run(self._put(validate_key(key), value), zarr_loop())

    def set_many(
        self,
        items: Iterable[tuple[str, ReadableBuffer | Pieces]],
        concurrency: int | None = None,
        part_bytes: int | None = None,
    ) -> None:
        """As Store.set_many, up to `in_flight(concurrency)` writes at once (each whole)."""

        def checked() -> Iterator[tuple[str, ReadableBuffer]]:
            for key, value in items:
                assert not isinstance(value, Pieces)  # (no `writes_pieces`)
                self.check_writable(key)
                yield validate_key(key), value

        run_bounded(
            lambda item: self._put(*item),
            checked(),
            in_flight(concurrency),
            loop=zarr_loop(),
            deadline=_aio.answer_deadline(),
            doing="writing",
        )

    def delete(self, key: str) -> None:
        self.check_writable(key)
        if not self.supports_deletes:
            if self.exists(key):  # (a missing key is no error: nothing is left there)
                raise DeleteUnsupportedError(
                    errno.EOPNOTSUPP, f"cannot delete {key!r}: {self!r} cannot delete"
                )
            return
        self._run(key, self.zarr_store.delete(validate_key(key)))

    def lock(
        self, key: str, node: str = "", *, replaced_last: bool = False
    ) -> AbstractContextManager[None]:
        if self.below is not None:
            # (Not `replaced_last`: the last write goes through the zarr-python store, not
            # through the protocol by which `below` hands a key's own lock on.)
            return self.below.lock(key, node)
        if self.supports_locks:
            return self.thread_lock(validate_key(key))
        return super().lock(key, node, replaced_last=replaced_last)

    def task_changes(self) -> Any:
        """This copy's Icechunk fork session, with what it wrote."""
        return _session(innermost(self.zarr_store))

    def merge_task_changes(self, changes: Sequence[Any]) -> None:
        """Merge the fork sessions of copies of this store into its own."""
        session = _session(innermost(self.zarr_store))
        try:
            session.merge(*changes)
        except Exception as e:
            raise self._error("", e, f"merging the writes of {len(changes)} tasks") from e

    # -- listing ------------------------------------------------------------
    async def _keys(self, listing: AsyncIterator[str]) -> list[str]:
        return [key async for key in listing]

    def list_prefix(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        self.check_listing(prefix)
        below = prefix + "/" if prefix else ""
        keys = self._run(prefix, self._keys(self.zarr_store.list_prefix(below)))
        return [
            key
            for key in keys
            if key.startswith(below) and key != below and not self._own_file(key.rpartition("/")[2])
        ]

    def list_dir(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        self.check_listing(prefix)
        names = self._run(prefix, self._keys(self.zarr_store.list_dir(prefix)))
        return sorted({name for name in names if not self._own_file(name)})

    def _own_file(self, name: str) -> bool:
        """A file of the store below's own (its locks), which the zarr-python store lists."""
        return self.below is not None and self.below.own_file(name)


def as_zarr_store(
    store_or_node: Store | StoredNode, *, read_only: bool | None = None
) -> ZarrcoreStore:
    """zarr-python's store over a zarrcore Store, or over the keys of a zarrcore Group or
    Array (rooted at its path): `xr.open_zarr(as_zarr_store(group))`,
    `zarr.open_group(as_zarr_store(store))`."""
    if isinstance(store_or_node, Store):
        return ZarrcoreStore(store_or_node, read_only=read_only)
    store = getattr(store_or_node, "store", None)
    if not isinstance(store, Store):
        raise TypeError(
            f"expected a zarrcore Store, Group or Array, not {type(store_or_node).__name__}"
        )
    return ZarrcoreStore(store, store_or_node.path, read_only=read_only)
