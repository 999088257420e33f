"""How ObjectStore reads the bodies of obstore's GETs: in the thread that asked, by obstore's
own runtime when they are large, or cut from a whole object a server sent for a range."""

from __future__ import annotations

import time
from collections.abc import Coroutine
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import StoreError
from ..runtime import _aio
from ..runtime.link import Link
from ._obstore_runtime import obstore_module as _obstore

if TYPE_CHECKING:
    from obstore import Bytes, GetOptions, GetResult
    from obstore.store import ObjectStore as ObstoreStore

__all__ = ["COLLECTED_BY_RUNTIME", "get_body", "get_parts"]

_T = TypeVar("_T")


# Bodies of at least this many bytes are collected by obstore's own runtime (its
# asynchronous call, awaited on the I/O loop), not in the thread that asked. The synchronous
# call wakes that thread for every piece the connection delivers: over a 40 ms link, 0.5 MB
# bodies cost 2-3 times the CPU that way, and twice that again beside a busy process. Below
# about 64 KiB the loop's hop costs more than it saves.
COLLECTED_BY_RUNTIME = 128 << 10
# Except over a link whose round trip is shorter than this many seconds (the same host, a
# LAN): a body arrives there in a few large pieces, and the hop costs more than the wakeups
# it saves (on loopback, 0.5 MB chunks cost about 0.4 ms more CPU each through the loop, and
# a whole array in 34 MB shards took 2.0 s against 1.5 s; over a 10 ms link neither way was
# ahead).
FAST_ROUND_TRIP = 0.002


async def _collect(result: GetResult) -> Bytes:
    return await result.bytes_async()


async def _ranges(
    obs: ModuleType, store: ObstoreStore, path: str, starts: list[int], ends: list[int]
) -> list[Bytes]:
    parts: list[Bytes] = await obs.get_ranges_async(store, path, starts=starts, ends=ends)
    return parts


def _by_runtime(nbytes: int, caller: object, call: str, link: Link | None) -> bool:
    """Are `nbytes` collected by obstore's runtime (`caller.call`, its asynchronous call)
    over `link` (None: not known)? Not over a fast link, nor where `caller` has none (a
    forked child's helper), nor on the I/O loop's own thread."""
    return (
        nbytes >= COLLECTED_BY_RUNTIME
        and (link is None or link.round_trip >= FAST_ROUND_TRIP)
        and hasattr(caller, call)
        and not _aio.on_io_loop()
    )


def _awaited(coro: Coroutine[Any, Any, _T], path: str, deadline: float | None) -> _T:
    """`coro`'s result, run on the I/O loop; a StoreError for no answer names `path` (the
    client's own errors name it already)."""
    try:
        return _aio.run(coro, deadline=deadline)
    except StoreError as e:
        raise StoreError(e.errno, f"{path!r}: {e.strerror}") from e


def get_body(
    store: ObstoreStore,
    path: str,
    options: GetOptions,
    cut: tuple[int | None, int | None] | None = None,
    deadline: float | None = None,
    link: Link | None = None,
) -> tuple[GetResult, memoryview]:
    """obstore's GET of `path` and its body: all of it, or the slice `cut` of it as it
    streams in (a server that turned a range down sends the whole object). `deadline`:
    seconds to wait for a large body (_aio.run's); `link`: the store's, which says how it is
    collected."""
    began = time.monotonic()
    result = _obstore().get(store, path, options=options)
    if link is not None:
        link.observe_answer(time.monotonic() - began)
    lo, hi = result.range
    if cut is not None:
        data = _cut(result, *cut)
    elif _by_runtime(hi - lo, result, "bytes_async", link):
        data = _awaited(_collect(result), path, deadline)
    else:
        data = result.bytes()
    return result, memoryview(data)


def get_parts(
    store: ObstoreStore,
    path: str,
    starts: list[int],
    ends: list[int],
    deadline: float | None = None,
    link: Link | None = None,
) -> list[Bytes]:
    """obstore's get_ranges of `path` (the ranges [starts[i], ends[i])), by its runtime when
    they add up to COLLECTED_BY_RUNTIME bytes or more, as get_body's bodies."""
    obs = _obstore()
    if _by_runtime(sum(ends) - sum(starts), obs, "get_ranges_async", link):
        return _awaited(_ranges(obs, store, path, starts, ends), path, deadline)
    parts: list[Bytes] = obs.get_ranges(store, path, starts=starts, ends=ends)
    return parts


def _cut(result: GetResult, start: int | None, stop: int | None) -> bytes:
    """[start:stop] of the body of the obstore GetResult `result` (a server that turns byte
    ranges down sends all of it): read as it streams in, no further than `stop`."""
    lo, hi, _ = slice(start, stop).indices(result.meta["size"])
    parts: list[memoryview] = []
    at = 0
    if hi > lo:
        for part in result.stream(min_chunk_size=min(hi, 1 << 20)):
            parts.append(memoryview(part)[max(lo - at, 0) : max(hi - at, 0)])
            at += len(part)
            if at >= hi:
                break
    return b"".join(parts)
