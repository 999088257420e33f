"""Any fsspec filesystem as a store (s3fs, gcsfs, adlfs, sftp, ...). Filesystems with an
async implementation fetch get_many's requests concurrently on fsspec's own loop, up to
the caller's concurrency (an array's io_concurrency, `in_flight`) at once per call and
`config.io_process_concurrency` in the process; others read one request after another.

A process forked from one that used the store (multiprocessing's 'fork', PyTorch's
DataLoader workers) opens the filesystem anew from its options on first use: the parent's
loop, sessions and connections are not the child's to use."""

from __future__ import annotations

import errno
import inspect
import os
import threading
import time
from collections.abc import Coroutine, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..errors import StoreError
from ..runtime import _aio
from ..runtime.concurrency import each, fan_out, run_bounded
from ..runtime.link import Link, link_to
from ..runtime.portable import at_fork_in_child
from .base import (
    S3_LEAST_PART_BYTES,
    ByteRange,
    Fetched,
    Pieces,
    Request,
    Store,
    check_length,
    in_flight,
    validate_key,
    validate_prefix,
)
from .options import credentials_error

if TYPE_CHECKING:
    import asyncio

    from _typeshed import ReadableBuffer
    from fsspec import AbstractFileSystem

__all__ = ["FsspecStore"]

_T = TypeVar("_T")

# Filesystems whose writes go straight into the target file (no atomic replace).
_IN_PLACE_PROTOCOLS = ("file", "local", "sftp", "ssh", "ftp", "smb")
_HTTP_PROTOCOLS = ("http", "https")
# Filesystems whose pipe_file writes a file of two `chunksize`s or more by a multipart
# upload of parts of that size, `max_concurrency` at once (where it takes that), aborted when
# one fails (s3fs).
_PART_PROTOCOLS = ("s3", "s3a")
# Filesystems with no round trip to plan for (no `link`).
_NEAR_PROTOCOLS = ("file", "local", "memory")
# A listing asks for its pages one after another: it is waited for as long as this many
# requests may take (a wait without a bound would outlast a loop that stopped).
_LISTING_PAGES = 32


def _protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


# The filesystems opened anew in this forked process, by id of the parent's: (the parent's,
# this process's), so that stores that shared one filesystem share its successor.
_reopened: dict[int, tuple[AbstractFileSystem, AbstractFileSystem]] = {}
_reopened_guard = threading.RLock()


def _forget_reopened_in_child() -> None:
    global _reopened_guard
    _reopened.clear()
    _reopened_guard = threading.RLock()


at_fork_in_child(_forget_reopened_in_child)


def _reopen(fs: AbstractFileSystem) -> AbstractFileSystem:
    """A filesystem like `fs`, made in this process from the options `fs` was made with
    (filesystems among them made anew too), outside fsspec's instance cache. Not asynchronous
    and on no loop given: its coroutines run on fsspec's loop of this process."""
    from fsspec import AbstractFileSystem

    with _reopened_guard:
        known = _reopened.get(id(fs))
        if known is not None and known[0] is fs:
            return known[1]
        options = {
            name: _reopen(value) if isinstance(value, AbstractFileSystem) else value
            for name, value in fs.storage_options.items()
            if name not in ("asynchronous", "loop")
        }
        fresh = type(fs)(*fs.storage_args, skip_instance_cache=True, **options)
        _reopened[id(fs)] = (fs, fresh)
        return fresh


class FsspecStore(Store):
    """Keys as files below `path` of the fsspec filesystem `fs`. An async filesystem's
    coroutines run on `loop` (default: the filesystem's own, fsspec's I/O loop), which must
    be the loop its sessions belong to (zarr-python's for its FsspecStore).

    fsspec has no locks or conditional writes, so read-modify-writes raise
    LockUnavailableError unless `single_writer` (the caller's word that only this process
    writes the store: locks then exclude its threads) or the filesystem is fsspec's
    in-memory one."""

    def __init__(
        self,
        fs: AbstractFileSystem,
        path: str = "",
        read_only: bool = False,
        loop: asyncio.AbstractEventLoop | None = None,
        single_writer: bool = False,
    ) -> None:
        protocols = _protocols(fs)
        http = any(p in _HTTP_PROTOCOLS for p in protocols)
        super().__init__(read_only or http)
        self.fs = fs
        self._async = bool(getattr(fs, "async_impl", False))
        self._loop: asyncio.AbstractEventLoop | None = (loop or fs.loop) if self._async else None
        # The process `fs` and `_loop` serve (see _in_this_process).
        self._pid = os.getpid()
        self.path: str = fs._strip_protocol(path).rstrip("/") if path else ""
        self.supports_listing = not http
        self.supports_writes = not http
        self.supports_atomic_writes = not any(p in _IN_PLACE_PROTOCOLS for p in protocols)
        # fsspec's in-memory filesystem is one per process.
        self.process_local = "memory" in protocols
        self.single_writer = bool(single_writer) or self.process_local
        self.supports_locks = self.single_writer and self.supports_writes
        # Writes stream on an async filesystem's loop (set_many).
        self.streams_writes = self._async
        parts = (
            self._async
            and any(p in _PART_PROTOCOLS for p in protocols)
            and ("max_concurrency" in inspect.signature(fs._pipe_file).parameters)
        )
        self.least_part_bytes = S3_LEAST_PART_BYTES if parts else None
        self.link = self._link()

    def _link(self) -> Link | None:
        """The Link to the filesystem's server (of its protocol and the path's first part,
        a host or bucket); None for one on this machine."""
        protocols = _protocols(self.fs)
        if any(p in _NEAR_PROTOCOLS for p in protocols):
            return None
        return link_to(f"{protocols[0]}://{self.path.split('/', 1)[0]}")

    def _identity(self) -> Hashable:
        return (_protocols(self.fs)[0], self.path, id(self.fs))

    def __repr__(self) -> str:
        return f"FsspecStore({_protocols(self.fs)[0]}://{self.path})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_loop"] = None  # a loop does not pickle; the filesystem's own serves after
        state["link"] = None  # (this process's: a copy shares its own process's)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.link = self._link()
        self._pid = os.getpid()  # (the filesystem was unpickled here)
        if self._async:
            self._loop = self.fs.loop

    def _in_this_process(self) -> None:
        """In a process forked from the one that made the store: open the filesystem anew
        (the parent's loop thread, sessions and connections are not this process's; a
        request sent on them would never be answered)."""
        if self._pid == os.getpid():
            return
        try:
            fs = _reopen(self.fs)
        except Exception as e:
            raise StoreError(
                errno.EPERM,
                (
                    f"{self!r} cannot open its filesystem anew in this process, forked from the "
                    f"one that made it ({type(e).__name__}: {e}): {_aio.SPAWN_ADVICE}"
                ),
            ) from e
        self.fs = fs
        self._loop = fs.loop if self._async else None
        self._pid = os.getpid()

    async def _acall(self, method: str, *args: Any, slots: int = 1, **kwargs: Any) -> Any:
        """fs.`method`(...), awaiting its coroutine when the filesystem is async (as `slots`
        requests of the process's bound, config.io_process_concurrency)."""
        if self._async:
            async with _aio.request_slot(slots):
                return await getattr(self.fs, "_" + method)(*args, **kwargs)
        return getattr(self.fs, method)(*args, **kwargs)

    def _run(self, coro: Coroutine[Any, Any, _T], requests: int = 1) -> _T:
        """The result of `coro`, run on the store's loop when the filesystem is async (over a
        sync filesystem it never suspends, so it runs here), waited for as long as
        `requests` requests one after another may take."""
        self._in_this_process()
        if self._async:
            return _aio.run(coro, self._loop, deadline=_aio.answer_deadline() * requests)
        try:
            coro.send(None)
        except StopIteration as done:
            result: _T = done.value  # (StopIteration's value is untyped)
            return result
        coro.close()
        raise RuntimeError(f"{self!r}: a call of a sync filesystem suspended")

    def _call(self, method: str, *args: Any, requests: int = 1, **kwargs: Any) -> Any:
        return self._run(self._acall(method, *args, **kwargs), requests)

    def _full(self, key: str) -> str:
        return f"{self.path}/{key}" if self.path else key

    def _error(self, key: str, error: Exception) -> StoreError:
        no_credentials = credentials_error(
            error, f"key {key!r} of {self!r}", _protocols(self.fs)[0]
        )
        if no_credentials is not None:
            return no_credentials
        code = (
            errno.EACCES
            if isinstance(error, PermissionError)
            else (getattr(error, "errno", None) or errno.EIO)
        )
        return StoreError(code, f"key {key!r} of {self!r}: {error}")

    # -- reads --------------------------------------------------------------
    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        if start is None and stop is None:
            return self._run(self._fetch(key, None))
        got = self._run(self._fetch(key, [(start, stop)]))
        return None if got is None else got[0]

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> list[bytes] | None:
        return self._run(self._fetch(key, list(ranges)))

    async def _read(self, key: str, path: str, start: int | None, stop: int | None) -> bytes:
        """The bytes of path[start:stop] (Python slice bounds). Filesystems disagree on
        reversed bounds, negative ends and starts past the end: those are resolved against
        the size, and a plain range cat_file refuses is empty if it lies past the end."""
        start = start or 0
        if (start < 0 and stop is None) or (start >= 0 and (stop is None or stop > start)):
            try:
                data: bytes = await self._timed(
                    self._acall("cat_file", path, start=start, end=stop)
                )
                if (
                    len(data) < -start
                    if start < 0
                    else start > 0 and stop is not None and len(data) != stop - start
                ):
                    # Fewer bytes are right only where the file ends: its size tells. (Not
                    # asked of reads from 0, which read whole values of at most so many
                    # bytes, short as a rule: a request more each.)
                    check_length(self, key, len(data), start, stop, await self._acall("size", path))
                return data
            except (FileNotFoundError, StoreError):
                raise
            except Exception:
                lo, hi, _ = slice(start, stop).indices(await self._acall("size", path))
                if hi > lo:
                    raise
                return b""
        lo, hi, _ = slice(start, stop).indices(await self._acall("size", path))
        return await self._read(key, path, lo, hi) if hi > lo else b""

    async def _timed(self, read: Coroutine[Any, Any, bytes]) -> bytes:
        """The bytes `read` gives, its time told to the store's link."""
        began = time.monotonic()
        data = await read
        if self.link is not None:
            self.link.observe(time.monotonic() - began, len(data))
        return data

    @overload
    async def _fetch(self, key: str, ranges: None) -> bytes | None: ...

    @overload
    async def _fetch(self, key: str, ranges: Sequence[ByteRange]) -> list[bytes] | None: ...

    @overload
    async def _fetch(self, key: str, ranges: Sequence[ByteRange] | None) -> Fetched: ...

    async def _fetch(self, key: str, ranges: Sequence[ByteRange] | None) -> Fetched:
        """The value at `key` (None: all of it) or the bytes of its `ranges`; None when the
        key is missing."""
        path = self._full(validate_key(key))
        try:
            if ranges is None:
                whole: bytes = await self._timed(self._acall("cat_file", path))
                return whole
            return [await self._read(key, path, start, stop) for start, stop in ranges]
        except FileNotFoundError:
            return None
        except StoreError:
            raise
        except Exception as e:
            raise self._error(key, e) from e

    def get_many(
        self, requests: Sequence[Request], concurrency: int | None = None
    ) -> Iterator[tuple[int, Fetched]]:
        self._in_this_process()
        if not self._async:
            return super().get_many(requests)
        return each(
            fan_out(
                lambda r: self._fetch(*r),
                requests,
                in_flight(concurrency),
                loop=self._loop or _aio.io_loop(),
                deadline=_aio.answer_deadline(),
                doing="reading",
            )
        )

    def exists(self, key: str) -> bool:
        path = self._full(validate_key(key))
        try:
            found: bool = self._call("isfile", path)
            return found
        except Exception as e:
            raise self._error(key, e) from e

    def getsize(self, key: str) -> int | None:
        path = self._full(validate_key(key))
        try:
            size: int = self._call("size", path)
            return size
        except FileNotFoundError:
            return None
        except Exception as e:
            raise self._error(key, e) from e

    # -- writes -------------------------------------------------------------
    def set(self, key: str, value: ReadableBuffer) -> None:
        self.check_writable(key)
        self._run(self._put(validate_key(key), value))

    async def _put(self, key: str, value: ReadableBuffer, part_bytes: int | None = None) -> None:
        """Write `value` at `key`; larger than `part_bytes` (with `least_part_bytes`), by a
        multipart upload of parts of at most that many bytes, all sent at once (s3fs's cut
        leaves the remainder of the division, a few bytes, to a part of its own)."""
        data = bytes(value)
        parts = 1 if part_bytes is None else -(-len(data) // part_bytes)
        cut = {} if parts == 1 else {"chunksize": len(data) // parts, "max_concurrency": parts + 1}
        try:
            await self._acall("pipe_file", self._full(key), data, slots=parts, **cut)
        except Exception as e:
            raise self._error(key, e) from e

    def set_many(
        self,
        items: Iterable[tuple[str, ReadableBuffer | Pieces]],
        concurrency: int | None = None,
        part_bytes: int | None = None,
    ) -> None:
        """As Store.set_many: on an async filesystem each write starts as soon as `items`
        (which may be a generator) yields it, as many at once as get_many's."""

        def checked() -> Iterator[tuple[str, ReadableBuffer]]:
            for key, value in items:
                assert not isinstance(value, Pieces)  # (no `writes_pieces`)
                self.check_writable(validate_key(key))
                yield key, value

        self._in_this_process()
        if self._async:
            parts = None if self.least_part_bytes is None else part_bytes
            run_bounded(
                lambda item: self._put(*item, parts),
                checked(),
                in_flight(concurrency),
                loop=self._loop or _aio.io_loop(),
                deadline=_aio.answer_deadline(),
                doing="writing",
            )
            return
        listed = list(checked())
        if not listed:
            return
        try:
            self._call("pipe", {self._full(key): bytes(value) for key, value in listed})
        except Exception as e:
            raise self._error(listed[0][0] if len(listed) == 1 else f"{len(listed)} keys", e) from e

    def delete(self, key: str) -> None:
        self.check_writable(key)
        path = self._full(validate_key(key))
        try:
            self._call("rm_file", path)
        except FileNotFoundError:
            pass
        except Exception as e:
            raise self._error(key, e) from e

    def lock(
        self, key: str, node: str = "", *, replaced_last: bool = False
    ) -> AbstractContextManager[None]:
        if not self.single_writer:
            return super().lock(key, node, replaced_last=replaced_last)
        return self.thread_lock(validate_key(key))

    # -- listing ------------------------------------------------------------
    def list_prefix(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        self.check_listing(prefix)
        base = self._full(prefix) if prefix else self.path
        head = len(self.path) + 1 if self.path else 0
        try:
            found = self._call("find", base or "", requests=_LISTING_PAGES)
        except FileNotFoundError:
            return []
        except Exception as e:
            raise self._error(prefix, e) from e
        return [p[head:] for p in found if p != base]

    def list_dir(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        self.check_listing(prefix)
        base = self._full(prefix) if prefix else self.path
        try:
            entries = self._call("ls", base, detail=False, requests=_LISTING_PAGES)
        except FileNotFoundError:
            return []
        except Exception as e:
            raise self._error(prefix, e) from e
        return sorted(
            {p.rstrip("/").rpartition("/")[2] for p in entries if p.rstrip("/") != base.rstrip("/")}
        )
