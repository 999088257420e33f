"""The I/O loop of remote stores: one asyncio loop on a thread of its own, on which
zarrcore.runtime.concurrency.fan_out runs their requests; and the process's bound on the remote
requests in flight (`request_slots`), which every object-store and async fsspec request
holds while it is sent and answered, whatever loop it runs on."""
import asyncio
import atexit
import collections
import concurrent.futures
import errno
import threading
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from ..runtime.portable import at_fork_in_child
from ..config import config
from ..errors import StoreError

_loop: asyncio.AbstractEventLoop | None = None
_loop_guard = threading.Lock()

_T = TypeVar("_T")

# What a process that cannot do its remote I/O because it was forked is told to do instead.
SPAWN_ADVICE = ("start worker processes with multiprocessing's 'spawn' or 'forkserver' method "
                "(with torch: DataLoader(multiprocessing_context=\"spawn\"))")

# Seconds `run` waits at a time before it looks whether the loop still has its thread.
_WAIT_SLICE = 0.25


class RequestSlots:
    """Slots for the remote requests this process has in flight: at most
    `config.io_process_concurrency` held at once, over every store, thread and event loop.
    Waiters are served in order of arrival, each on its own loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held = 0
        # (slots wanted, the future a waiter awaits on its loop), in order of arrival
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    @asynccontextmanager
    async def slots(self, wanted: int = 1) -> AsyncIterator[None]:
        """Hold `wanted` slots (at most the limit) for the body of the block: one per request
        it may have in flight at once."""
        wanted = max(1, min(wanted, config.io_process_concurrency))
        await self._acquire(wanted)
        try:
            yield
        finally:
            self._release(wanted)

    async def _acquire(self, wanted: int) -> None:
        with self._lock:
            if not self._waiting and self.held + wanted <= config.io_process_concurrency:
                self.held += wanted
                return
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append((wanted, granted))
        try:
            await granted
        except BaseException:
            with self._lock:
                waiting = (wanted, granted) in self._waiting
                if waiting:
                    self._waiting.remove((wanted, granted))
            # Granted already: _deliver gives the slots back if it finds the future
            # cancelled; a future it completed first holds them, so they go back here.
            if not waiting and granted.done() and not granted.cancelled():
                self._release(wanted)
            raise

    def _release(self, count: int) -> None:
        with self._lock:
            self.held -= count
            limit = config.io_process_concurrency
            while self._waiting and self.held + min(self._waiting[0][0], limit) <= limit:
                wanted, granted = self._waiting.popleft()
                self.held += wanted
                try:
                    granted.get_loop().call_soon_threadsafe(self._deliver, wanted, granted)
                except RuntimeError:  # its loop is closed: nobody waits there any more
                    self.held -= wanted

    def _deliver(self, wanted: int, granted: asyncio.Future[None]) -> None:
        """(On the waiter's loop.) Hand the slots over, or back when it stopped waiting."""
        if granted.cancelled():
            self._release(wanted)
        else:
            granted.set_result(None)


request_slots = RequestSlots()


def _forget_loop_in_child() -> None:
    # The parent's loop thread does not exist in a forked child, nor do the parent's
    # requests that held slots (they would never give them back) or the loops that waited.
    global _loop, _loop_guard, request_slots
    _loop = None
    _loop_guard = threading.Lock()
    request_slots = RequestSlots()


at_fork_in_child(_forget_loop_in_child)


def request_slot(wanted: int = 1) -> AbstractAsyncContextManager[None]:
    """`async with request_slot(): ...` holds slots of the process's bound on remote
    requests (RequestSlots.slots) while a request is sent and its answer read."""
    return request_slots.slots(wanted)


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


def _thread_gone(loop: asyncio.AbstractEventLoop) -> bool:
    """Was `loop` run by a thread that this process does not have (a forked child inherits
    its parent's loops, not their threads)?"""
    ident = getattr(loop, "_thread_id", None)  # (asyncio's loops note the thread running them)
    return ident is not None and all(t.ident != ident for t in threading.enumerate())


# Not fan_out: one coroutine awaited from any thread, and a loop whose thread may be gone.
def run(coro: Coroutine[Any, Any, _T], loop: asyncio.AbstractEventLoop | None = None,
        deadline: float | None = None) -> _T:
    """Run `coro` on the I/O loop (or `loop`) and return its result, from any other thread.
    A StoreError (ETIMEDOUT) after `deadline` seconds (default `answer_deadline()`) without
    its result, or at once when no thread of this process runs the loop: the requests in it
    time out sooner, so only a loop that no longer runs gets there."""
    loop = loop or io_loop()
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    wait = answer_deadline() if deadline is None else deadline
    ends = time.monotonic() + wait
    try:
        while True:
            try:
                return future.result(min(_WAIT_SLICE, max(ends - time.monotonic(), 0)))
            except concurrent.futures.TimeoutError:
                if future.done():  # the coroutine's own TimeoutError
                    raise
                if time.monotonic() >= ends:
                    raise StoreError(errno.ETIMEDOUT, f"no answer for {wait:.0f} s from "
                                     f"{getattr(coro, '__qualname__', coro)}") from None
                if _thread_gone(loop):
                    raise StoreError(errno.EPERM, (
                        f"{getattr(coro, '__qualname__', coro)}: no thread of this process "
                        f"runs its event loop (this process was forked after it started): "
                        f"{SPAWN_ADVICE}")) from None
    except BaseException:
        future.cancel()
        raise


def answer_deadline(timeout: float | None = None, retries: int | None = None) -> float:
    """Seconds a fan-out of remote requests waits for any answer before it gives up: longer
    than the client's own timeout and retries (config's, unless given), which fail first."""
    timeout = config.io_timeout if timeout is None else timeout
    retries = config.io_retries if retries is None else retries
    return timeout * (retries + 2) + 5
