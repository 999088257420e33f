"""The Store interface: a flat key/value space with byte-range reads."""

from __future__ import annotations

import contextlib
import errno
import re
import threading
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Optional, Protocol, Union, cast

from ..errors import (
    InvalidKeyError,
    LockUnavailableError,
    ReadOnlyError,
    StoreError,
    ValueTooLargeError,
)
from ..runtime.config import config
from ..runtime.portable import at_fork_in_child

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from .._native.files import FileRoot
    from .._native.memstore import NativeMemoryMap
    from ..runtime.link import Link

__all__ = [
    "BodyProgress",
    "ByteRange",
    "BytesReader",
    "Fetched",
    "RangeReader",
    "Pieces",
    "ReadBytes",
    "Request",
    "S3_LEAST_PART_BYTES",
    "S3_MOST_PARTS",
    "Store",
    "StreamingReader",
    "UNCHANGED",
    "Unchanged",
    "Version",
    "at_most",
    "both_bounds",
    "bounded",
    "check_length",
    "get_at_most",
    "joined",
    "in_flight",
    "too_large",
    "validate_key",
    "validate_keys",
    "validate_prefix",
]

#: (start, stop) of a byte range: Python slice bounds (a negative start reads a suffix).
ByteRange = tuple[Optional[int], Optional[int]]
#: Bytes read from a store: bytes, or a read-only view of a client's buffer (no copy).
ReadBytes = Union[bytes, memoryview]
#: One request of Store.get_many: a key, and its ranges (None: the whole value).
Request = tuple[str, Optional[Sequence[ByteRange]]]
#: What Store.get_many gives for one request: None for a missing key, the whole value, or the
#: bytes of each range.
Fetched = Union[ReadBytes, Sequence[ReadBytes], None]
#: A value's version (Store.get_versioned, Store.set_if): opaque, each store's own (an ETag
#: pair, a generation, a hash), read only by the store that gave it.
Version = Any
#: What a streaming read (StreamingReader.get_streamed) hands each body to as it arrives:
#: (the range's place in the request, the body's buffer, how many of its bytes arrived) ->
#: how many must have arrived for the next call (more than the body holds: none).
BodyProgress = Callable[[int, memoryview, int], int]
#: The least part of an S3 multipart upload but the last (Store.least_part_bytes).
S3_LEAST_PART_BYTES = 5 << 20
#: The most parts of an S3 multipart upload.
S3_MOST_PARTS = 10_000


class Pieces:
    """A value given as the buffers `pieces` yields in turn, made as they are taken (a shard
    whose inner chunks are encoded in waves), for Store.set_many of a store that
    `writes_pieces`: past one part of `part_bytes`, it goes in such parts, each sent as it
    fills. No piece at all: the key is deleted."""

    __slots__ = ("part_bytes", "pieces")

    def __init__(self, pieces: Iterable[ReadableBuffer], part_bytes: int) -> None:
        self.pieces, self.part_bytes = pieces, part_bytes

    def __iter__(self) -> Iterator[ReadableBuffer]:
        return iter(self.pieces)


class Unchanged:
    """What Store.get_many_versioned gives for a request whose known version is still the
    stored value's: no bytes were read."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()


class RangeReader(Protocol):
    """What Store.reader gives: byte ranges of one value, and its size when known. A reader
    that keeps one version of the value may also tell it, once it has read, as `version`
    (a token that only equal bytes share; None when it cannot tell), which Store.reader
    takes back to read that version only."""

    @property
    def size(self) -> int | None: ...

    def get_ranges(self, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None: ...


class StreamingReader(RangeReader, Protocol):
    """The reader of a store that `streams_reads`: `get_streamed` asks for its ranges at
    once and hands each body to `on_body` while it arrives (not at all where the request
    goes another way), as get_ranges otherwise."""

    def get_streamed(
        self, ranges: Sequence[ByteRange], on_body: BodyProgress
    ) -> Sequence[ReadBytes] | None: ...


def validate_key(key: object) -> str:
    """Return `key` if it is a safe relative store key, else raise InvalidKeyError."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"store key {key!r} is not a string")
    if key == "" or key.startswith("/") or "\\" in key or "\x00" in key:
        raise InvalidKeyError(f"invalid store key {key!r}")
    for part in key.split("/"):
        if part in ("", ".", ".."):
            raise InvalidKeyError(f"invalid store key {key!r}: segment {part!r} not allowed")
    return key


# A key's empty, "." or ".." segment, a backslash or a NUL, in keys joined by NULs.
_BAD_IN_KEYS = re.compile(r"(?:\A|[\x00/])\.{0,2}(?=[\x00/]|\Z)|\\")


def validate_keys(keys: Collection[object]) -> None:
    """validate_key of each of `keys`, in one pass over them joined (a million keys of a
    references file): InvalidKeyError of the first bad one."""
    if all(type(k) is str for k in keys):
        joined = "\x00".join(cast("Collection[str]", keys))
        if joined.count("\x00") == max(len(keys) - 1, 0) and not _BAD_IN_KEYS.search(joined):
            return
    for key in keys:
        validate_key(key)


def validate_prefix(prefix: str) -> str:
    """Like validate_key, but the empty prefix (the root) and a trailing '/' are allowed."""
    stripped = prefix.rstrip("/")
    if stripped:
        validate_key(stripped)
    return stripped


def too_large(store: Store, key: str, limit: int, why: str | None) -> ValueTooLargeError:
    """ValueTooLargeError: the value at `key` of `store` takes more than `limit` bytes, the
    most `why` allows."""
    return ValueTooLargeError(
        errno.EFBIG,
        f"key {key!r} of {store!r}: more than {limit} bytes, the most {why}; refused unread",
    )


def check_length(
    store: Store, key: str, got: int, start: int | None, stop: int | None, size: int
) -> None:
    """StoreError (EIO) naming `key` of `store` unless `got` bytes are all of [start:stop]
    (Python slice bounds) of a value of `size` bytes: a body that ended early is an I/O
    error, never bytes to decode."""
    lo, hi, _ = slice(start, stop).indices(size)
    wanted = max(hi - lo, 0)
    if got != wanted:
        raise StoreError(
            errno.EIO,
            f"key {key!r} of {store!r}: the answer held {got} bytes "
            f"of the {wanted} of [{start}:{stop}] of its {size}",
        )


def joined(parts: Fetched) -> ReadBytes | None:
    """The bytes of a get_many or get_ranges result `parts` of one span (None: not stored),
    asked for whole, as one range, or as several adjoining ones (their bytes joined)."""
    if parts is None or isinstance(parts, (bytes, memoryview)):
        return parts
    return parts[0] if len(parts) == 1 else b"".join(parts)


def both_bounds(ranges: Sequence[ByteRange]) -> bool:
    """Has every range both bounds, from 0 on, and a byte at least?"""
    return all(lo is not None and hi is not None and 0 <= lo < hi for lo, hi in ranges)


def at_most(limit: int) -> list[ByteRange]:
    """The ranges (get_ranges, get_many) that read a whole value of at most `limit` bytes: one
    byte more, so a larger value shows without being read whole (see `bounded`)."""
    return [(0, limit + 1)]


def bounded(
    store: Store, key: str, parts: Sequence[ReadBytes | None] | None, limit: int, why: str | None
) -> ReadBytes | None:
    """The value that an `at_most(limit)` read of `key` returned as `parts` (None: missing);
    `too_large` when it is larger than `limit`."""
    if parts is None or parts[0] is None:
        return None
    if len(parts[0]) > limit:
        raise too_large(store, key, limit, why)
    return parts[0]


def get_at_most(store: Store, key: str, limit: int, why: str | None) -> ReadBytes | None:
    """The value at `key` of `store` (None: missing), read by one `at_most(limit)` request;
    `too_large` when it is larger than `limit`."""
    return bounded(store, key, store.get_ranges(key, at_most(limit)), limit, why)


# Key locks of all stores, by (store type, store identity, key): two Store objects over the
# same data (say, each thread opening the array anew) must exclude each other. Entries are
# counted and dropped when no one holds or waits for them.
class _KeyLock:
    """A key's lock in _KEY_LOCKS, and how many threads hold or wait for it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


_KEY_LOCKS: dict[tuple[type[Store], Hashable, str], _KeyLock] = {}
_KEY_LOCKS_GUARD = threading.Lock()


def _forget_key_locks_in_child() -> None:
    # Locks held by the parent's other threads would never be released in a forked child.
    global _KEY_LOCKS, _KEY_LOCKS_GUARD
    _KEY_LOCKS = {}
    _KEY_LOCKS_GUARD = threading.Lock()


at_fork_in_child(_forget_key_locks_in_child)


class _KeyReader:
    """Store.reader of a store that keeps no versions: each read goes to the store."""

    size = None

    def __init__(self, store: Store, key: str) -> None:
        self._store, self._key = store, key

    def get_ranges(self, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None:
        return self._store.get_ranges(self._key, ranges)


class BytesReader:
    """Byte ranges of one value in memory (Store.reader)."""

    def __init__(self, data: ReadableBuffer) -> None:
        self._view = memoryview(data).cast("B")
        self.size = self._view.nbytes

    def get_ranges(self, ranges: Sequence[ByteRange]) -> list[memoryview]:
        """The bytes of each (start, stop) range, Python slice bounds (short past the end)."""
        return [self._view[slice(start, stop)] for start, stop in ranges]


def in_flight(concurrency: int | None) -> int:
    """The requests a call of Store.get_many or set_many keeps in flight: `concurrency`, the
    caller's (an array's ArrayOptions.io_concurrency), else config.io_concurrency."""
    return config.io_concurrency if concurrency is None else concurrency


class Store:
    """Base class of stores. Keys are '/'-separated relative paths.

    `get` takes Python slice bounds: `start` may be negative to read a suffix.
    Missing keys read as None.

    The capabilities say what the engine may ask of a store (it asks them, never the
    store's type nor its private attributes):

    - `supports_listing`: list_prefix and list_dir work;
    - `supports_writes`: set and delete work (unless the instance is `read_only`);
    - `supports_deletes`: delete removes a stored key (a zip's members stay); a store
      without it refuses to delete a stored key (DeleteUnsupportedError), and a missing
      key is no error on any store;
    - `supports_atomic_writes`: a reader sees a value set whole or not at all;
    - `supports_locks`: lock() excludes every thread, process and host writing the store;
    - `supports_conditional_writes`: get_versioned and set_if work, so a read-modify-write
      can detect a concurrent one and retry instead of locking;
    - `conditions_writes`: every write is conditional on the version the store knows of
      the key (create-only when it knows none), so whole writes of keys that may hold
      objects it has not seen are better announced first (`may_hold`);
    - `supports_consolidated_metadata`: a group's consolidated metadata may be written and
      used (a store that versions its metadata itself, such as Icechunk's, has none);
    - `streams_writes`: set_many starts writing each item as soon as its iterable yields it
      and goes on in the background, so writers hand it chunks in waves as they are encoded
      (the uploads of one wave overlap the encoding of the next);
    - `least_part_bytes`: set_many can write one object in parts sent at once (an S3
      multipart upload, made visible whole when it completes), each but the last of at least
      this many bytes; None where every object is written by one request;
    - `writes_pieces`: set_many takes a value as Pieces, whose pieces it takes in the calling
      thread (so they are made there) while the parts they fill upload in the background;
    - `process_local`: the data lives in this process's memory only, so a copy of the store
      in another process (a task pickled to a worker) reads and writes other data;
    - `merges_task_writes`: a copy of the store in another process (a task's) writes changes
      of its own, which come back to this one: `task_changes()` of the copy gives them
      (picklable), `merge_task_changes(changes)` takes them in (an Icechunk fork session);
    - `readers_keep_one_version`: `reader(key)` reads one version of the value throughout,
      even when the key is replaced meanwhile (KeyChangedError where it cannot);
    - `streams_reads`: with `readers_keep_one_version`, its readers are StreamingReaders;
    - `versioned_reads`: get_many_versioned gives each value with its version (a token with
      a stable repr that only equal bytes share, so it never comes back for other bytes),
      and UNCHANGED without reading it when the version the caller knows is still the
      stored one: an Array's decoded-chunk cache serves such a store's chunks while their
      version stays (a store without it gives no identity to check, and is not cached);
    - `shares_versions`: with `versioned_reads`, its versions are strings that mean the same
      in every process reading the store (a server's ETags), so one process may ask about a
      version another saw: a cache shared between processes keeps them with its entries;
    - `link`: what its requests have shown of the link to its server (a
      zarrcore.runtime.link.Link: the round trip, what one connection carries), by which the
      engine sizes its byte-range requests; None for a store with no round trip to speak
      of (local files, memory);
    - `native_root`: the directory of a local store whose keys are plain files below it,
      which the compiled batches read and write directly, through the store's `files()`
      (zarrcore._native.files.FileRoot, confined or not); None otherwise;
    - `native_memory`: the zarrcore._native.memstore.NativeMemoryMap holding the store's data, which
      array handles read and write without the GIL; None otherwise;
    - `local_path(prefix)`: the file system path of a key or node below a directory, None
      for a store whose keys are not files.
    """

    read_only = False
    supports_listing = True
    supports_writes = True
    supports_deletes = True
    supports_atomic_writes = True
    supports_locks = False
    supports_conditional_writes = False
    conditions_writes = False
    supports_consolidated_metadata = True
    streams_writes = False
    least_part_bytes: int | None = None
    writes_pieces = False
    process_local = False
    merges_task_writes = False
    readers_keep_one_version = False
    streams_reads = False
    versioned_reads = False
    shares_versions = False
    link: Link | None = None
    native_root: str | None = None

    def __init__(self, read_only: bool = False) -> None:
        self.read_only = read_only

    # -- to implement -------------------------------------------------------
    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        raise NotImplementedError

    def set(self, key: str, value: ReadableBuffer) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError

    def list_prefix(self, prefix: str) -> Iterable[str]:
        """Yield every key that starts with `prefix` + '/' (all keys for '')."""
        raise NotImplementedError

    def list_dir(self, prefix: str) -> Iterable[str]:
        """Yield the names of the immediate children (keys and 'directories') under `prefix`."""
        raise NotImplementedError

    # -- shared behaviour ---------------------------------------------------
    @property
    def native_memory(self) -> NativeMemoryMap | None:
        """The NativeMemoryMap holding the store's data (see the class's docstring), or
        None."""
        return None

    def files(self, create: bool = False) -> FileRoot | None:
        """The zarrcore._native.files.FileRoot of `native_root` (None when there is none); `create`
        makes the directory first where the store may."""
        return None

    def local_path(self, prefix: str) -> str | None:
        """The file system path of `prefix` (a key, or a node's path; '' for the root) when
        the store's keys are files, else None."""
        return None

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None:
        """Read several (start, stop) ranges of one key; None if the key is missing."""
        out: list[ReadBytes] = []
        for start, stop in ranges:
            data = self.get(key, start, stop)
            if data is None:
                return None
            out.append(data)
        return out

    @contextlib.contextmanager
    def reader(self, key: str, version: Any = None) -> Iterator[RangeReader | None]:
        """Byte ranges of `key` for a series of reads: an object whose `get_ranges` reads as
        Store.get_ranges does and whose `size` is the value's size or None, or None when the
        key is known to be missing. Stores that can, override this to read one version of the
        value throughout, even when the key is replaced meanwhile; this one reads each range
        from the value as it is at that moment. `version`: one that an earlier reader of
        the key told (RangeReader.version), to read only that (KeyChangedError when the key
        has another); stores whose readers tell none are never given one."""
        yield _KeyReader(self, key)

    def get_many(
        self, requests: Sequence[Request], concurrency: int | None = None
    ) -> Iterator[tuple[int, Fetched]]:
        """Read many keys at once: `requests` is a sequence of (key, ranges), ranges None for
        the whole value or a list of (start, stop) as in get_ranges. Yields (i, result) for
        every request i, in the order results arrive (remote stores fetch concurrently, up to
        `in_flight(concurrency)` requests at once); a result is None for a missing key, the
        bytes for a whole value, or the list of bytes of its ranges."""
        for i, (key, ranges) in enumerate(requests):
            yield i, self.get(key) if ranges is None else self.get_ranges(key, ranges)

    def get_many_versioned(
        self,
        requests: Sequence[Request],
        known: Sequence[Version | None],
        concurrency: int | None = None,
    ) -> Iterator[tuple[int, Fetched | Unchanged, Version | None]]:
        """As get_many, with each result's version (None when the value is missing or its
        version unknown); a request whose stored value is still at the version `known[i]`
        gives UNCHANGED instead of its bytes. Stores with `versioned_reads` only."""
        raise NotImplementedError

    def set_many(
        self,
        items: Iterable[tuple[str, ReadableBuffer | Pieces]],
        concurrency: int | None = None,
        part_bytes: int | None = None,
    ) -> None:
        """Write every (key, value) of the iterable `items`; remote stores upload
        concurrently, up to `in_flight(concurrency)` at once. A store with
        `least_part_bytes` writes each value larger than `part_bytes` (at least twice
        that least) in parts of about `part_bytes`, sent at once; others ignore it. Values
        come as Pieces to stores that `writes_pieces` only."""
        for key, value in items:
            assert not isinstance(value, Pieces)  # (see above)
            self.set(key, value)

    def may_hold(self, keys: Iterable[str]) -> None:
        """Hear that `keys`, about to be written whole, may hold objects this store has not
        seen (written before it was opened): a store that `conditions_writes` learns their
        versions before writing them rather than after a refusal."""

    def set_copy(self, key: str, source: Store, source_key: str) -> bool:
        """Write at `key` a copy of `source`'s value at `source_key` (known to be stored) in
        the store's own way, with no bytes through Python, when it has one for such a source;
        False, writing nothing, when it has not and the caller copies the bytes."""
        return False

    def get_versioned(
        self, key: str, limit: int | None = None, why: str | None = None
    ) -> tuple[bytes | None, Version]:
        """(value, version) of `key`, or (None, None) when it is missing. `version` (an ETag,
        a generation) is what set_if compares with. With `limit`, a value larger than that
        raises `too_large(self, key, limit, why)` without being read whole."""
        raise LockUnavailableError(f"{self!r} has no conditional writes")

    def set_if(self, key: str, value: ReadableBuffer, version: Version) -> bool:
        """Write `value` at `key` only if the stored version is still `version` (None: only if
        `key` is missing); False, writing nothing, when another writer came first."""
        raise LockUnavailableError(f"{self!r} has no conditional writes")

    def task_changes(self) -> Any:
        """What this copy of a store that `merges_task_writes` wrote (picklable)."""
        raise NotImplementedError

    def merge_task_changes(self, changes: Sequence[Any]) -> None:
        """Take in the `task_changes()` of copies of this store."""
        raise NotImplementedError

    def getsize(self, key: str) -> int | None:
        data = self.get(key)
        return None if data is None else len(data)

    def delete_prefix(self, prefix: str) -> None:
        self.check_writable(prefix or "/")
        for key in list(self.list_prefix(prefix)):
            self.delete(key)

    def own_file(self, name: str) -> bool:
        """Whether a file or object named `name` (a key's last segment) is one the store keeps
        for itself (a lock, a temporary file), which its listings never show."""
        return False

    def missing_detail(self, prefix: str) -> str:
        """What the store can say about why nothing is under `prefix` ('' when nothing)."""
        return ""

    def rename_prefix(self, source: str, dest: str) -> None:
        """Move every key under `source` to the same place under `dest` (which holds none)."""
        validate_prefix(source)
        validate_prefix(dest)
        self.check_writable(dest)
        if not self.supports_deletes:  # refused before any copy is made
            raise StoreError(
                errno.EOPNOTSUPP,
                f"cannot move the keys below {source!r}: {self!r} cannot delete keys",
            )
        for key in list(self.list_prefix(source)):
            value = self.get(key)
            if value is not None:  # (None: deleted meanwhile, so nothing to move)
                self.set(dest + key[len(source) :], value)
        self.delete_prefix(source)

    def check_writable(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"cannot write {key!r}: store is read-only")

    def check_listing(self, prefix: str) -> None:
        if not self.supports_listing:
            raise StoreError(
                errno.EOPNOTSUPP,
                f"{self!r} cannot list keys (below {prefix!r}): "
                f"open it through consolidated metadata",
            )

    def check_consolidated_metadata(self, path: str) -> None:
        if not self.supports_consolidated_metadata:
            raise StoreError(
                errno.EOPNOTSUPP,
                f"{self!r} keeps no consolidated metadata (of "
                f"the group at {path!r}): open it without",
            )

    def lock(
        self, key: str, node: str = "", *, replaced_last: bool = False
    ) -> AbstractContextManager[None]:
        """Exclusive lock on `key` for read-modify-write, across every thread and process that
        writes the store (a context manager). `node` is the path of the node (array or group)
        `key` belongs to: stores that keep locks with the data keep them with that node, so
        every store opened at or above it agrees. `replaced_last`: the holder writes `key`
        only as its last write under the lock, replacing it whole, and `key` exists; a store
        may then lock the object itself and let that write hand the lock on. A store that
        cannot lock across processes raises LockUnavailableError: its read-modify-writes
        could lose concurrent updates. A store whose data no other process writes may use
        `thread_lock` as its lock."""
        raise LockUnavailableError(
            f"{self!r} cannot lock keys across processes (no lock() of its own), so it cannot "
            f"update {key!r} without risking to lose a concurrent update"
        )

    def creation_lock(self) -> AbstractContextManager[None]:
        """The lock creators of nodes hold across processes, from finding no node at a path to
        writing its metadata (creation.create_node; threads also take node.creation_lock,
        under it). Nothing here: a store whose nodes other processes create overrides it."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def thread_lock(self, key: str) -> Iterator[None]:
        """Exclusive lock on `key` across the threads of this process and every Store object
        over the same data."""
        name = (type(self), self._identity(), key)
        with _KEY_LOCKS_GUARD:
            entry = _KEY_LOCKS.setdefault(name, _KeyLock())
            entry.users += 1
        try:
            with entry.lock:
                yield
        finally:
            with _KEY_LOCKS_GUARD:
                entry.users -= 1
                # (A child forked inside this block has a fresh registry without `entry`.)
                if not entry.users and _KEY_LOCKS.get(name) is entry:
                    del _KEY_LOCKS[name]

    @property
    def identity(self) -> Hashable:
        """What stores of one type over the same data have in common (stable across
        processes where the data is: a directory, a URL)."""
        return self._identity()

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Store)
            and type(self) is type(other)
            and self._identity() == other._identity()
        )

    def __hash__(self) -> int:
        return hash((type(self), self._identity()))

    def _identity(self) -> Hashable:
        return id(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._identity()!r})"
