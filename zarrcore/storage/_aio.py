"""Concurrent requests of remote stores: an asyncio loop on a thread of its own, and a bounded
fan-out whose results the calling thread takes as they arrive."""
import asyncio
import atexit
import concurrent.futures
import errno
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from typing import Any, TypeVar, Union

from .._portable import at_fork_in_child
from ..errors import StoreError

_loop: asyncio.AbstractEventLoop | None = None
_loop_guard = threading.Lock()

_T = TypeVar("_T")
# What a request of fan_out or an item of drain holds after its key, and fetch's result.
_Arg = TypeVar("_Arg")
_Result = TypeVar("_Result")


def _forget_loop_in_child() -> None:
    # The parent's loop thread does not exist in a forked child.
    global _loop, _loop_guard
    _loop = None
    _loop_guard = threading.Lock()


at_fork_in_child(_forget_loop_in_child)


def _settle_at_exit() -> None:
    """Give the threads of obstore's runtime a moment to leave Python before the interpreter
    finalizes. Such a thread completes a request's future by calling into the loop (which
    writes to a socket with the GIL released); once the caller has its result and the
    program ends, a thread still in that call is killed at finalization, which aborts the
    process (its frames are Rust's)."""
    if _loop is not None:
        time.sleep(0.05)


atexit.register(_settle_at_exit)


def io_loop() -> asyncio.AbstractEventLoop:
    """The process's I/O event loop, running on a daemon thread (started on first use)."""
    global _loop
    with _loop_guard:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="zarrcore-io", daemon=True).start()
            _loop = loop
        return _loop


def run(coro: Coroutine[Any, Any, _T],
        loop: asyncio.AbstractEventLoop | None = None) -> _T:
    """Run `coro` on the I/O loop (or `loop`) and return its result, from any other thread."""
    return asyncio.run_coroutine_threadsafe(coro, loop or io_loop()).result()


def fan_out(fetch: Callable[[str, _Arg], Awaitable[_Result]],
            requests: Iterable[tuple[str, _Arg]], limit: int, deadline: float,
            loop: asyncio.AbstractEventLoop | None = None) -> Iterator[tuple[int, _Result]]:
    """Yield (i, fetch(*requests[i])) as each arrives, with at most `limit` coroutines in
    flight on the I/O loop (or `loop`). The first exception raised by a fetch is re-raised
    here and the rest are cancelled. `deadline`: seconds without any result after which a
    StoreError names the requests still outstanding (fetch's own timeouts come first; this
    only guards against a transport that never gives up)."""
    requests = list(requests)
    if not requests:
        return
    # (i, fetch's result) of each request, or the exception of the first that failed
    arrived: queue.SimpleQueue[Union[tuple[int, _Result], BaseException]] = queue.SimpleQueue()
    pending = iter(enumerate(requests))

    async def worker() -> None:
        for i, request in pending:  # one loop thread: workers share the iterator safely
            try:
                arrived.put((i, await fetch(*request)))
            except asyncio.CancelledError:
                raise
            except BaseException as e:  # handed to the caller, which raises it
                arrived.put(e)
                return

    async def workers() -> None:
        await asyncio.gather(*(worker() for _ in range(min(limit, len(requests)))))

    future = asyncio.run_coroutine_threadsafe(workers(), loop or io_loop())
    done: set[int] = set()
    try:
        for _ in range(len(requests)):
            try:
                got = arrived.get(timeout=deadline)
            except queue.Empty:
                keys = [requests[j][0] for j in range(len(requests)) if j not in done][:5]
                raise StoreError(errno.ETIMEDOUT,
                                 f"no answer for {deadline:.0f} s reading keys {keys}") from None
            if isinstance(got, BaseException):
                raise got
            i, result = got
            done.add(i)
            yield i, result
    finally:
        future.cancel()


def drain(call: Callable[[str, _Arg], Awaitable[object]], items: Iterable[tuple[str, _Arg]],
          limit: int, deadline: float, loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Run call(*item) on the I/O loop (or `loop`) for every item of the iterable `items`,
    each as soon as `items` yields it, with at most `limit` running at once; return when all
    are done. `items` is iterated on the calling thread, so whatever produces them (encoding
    the next chunks) overlaps with the calls already started. The first exception, of a call
    or of `items`, is re-raised here and the calls not finished are cancelled. `deadline`:
    seconds without any call finishing after which a StoreError names the keys (each item's
    first element) still outstanding."""
    loop = loop or io_loop()
    gate: list[asyncio.Semaphore] = []  # the loop's semaphore, made on the loop by the first call

    async def bounded(item: tuple[str, _Arg]) -> object:
        if not gate:
            gate.append(asyncio.Semaphore(limit))
        async with gate[0]:
            return await call(*item)

    finished: queue.SimpleQueue[concurrent.futures.Future[object]] = queue.SimpleQueue()
    running: dict[concurrent.futures.Future[object], str] = {}

    def settle(future: concurrent.futures.Future[object]) -> None:
        del running[future]
        future.result()  # a failure is raised here

    try:
        for item in items:
            future = asyncio.run_coroutine_threadsafe(bounded(item), loop)
            running[future] = item[0]
            future.add_done_callback(finished.put)
            while not finished.empty():
                settle(finished.get())
        while running:
            try:
                future = finished.get(timeout=deadline)
            except queue.Empty:
                keys = list(running.values())[:5]
                raise StoreError(errno.ETIMEDOUT,
                                 f"no answer for {deadline:.0f} s writing keys {keys}") from None
            settle(future)
    finally:
        for future in running:
            future.cancel()
