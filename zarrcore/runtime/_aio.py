"""Where remote stores' requests run: the I/O loop, one asyncio loop on a thread of its own
(async fsspec's requests), and the I/O threads (object stores' synchronous calls), on which
zarrcore.runtime.concurrency.fan_out runs them; and the process's bound on the remote
requests in flight (`request_slots`), which every object-store and async fsspec request
holds while it is sent and answered, whatever loop or thread it runs on."""

from __future__ import annotations

import collections
import concurrent.futures
import errno
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import StoreError
from .config import config
from .portable import at_fork_in_child

if TYPE_CHECKING:  # (imported where a loop is made or runs: not by `import zarrcore`)
    import asyncio

_loop: asyncio.AbstractEventLoop | None = None
_threads: DaemonThreads | None = None
_loop_guard = threading.Lock()
# The names of the I/O threads begin so.
_IO_THREAD = "zarrcore-request"
# Whether this process is a multiprocessing worker (_a_worker), once known.
_worker: bool | None = None

_T = TypeVar("_T")
# (A waiter for request slots: a thread's future or a loop's.)
_F = TypeVar("_F", "asyncio.Future[None]", "concurrent.futures.Future[None]")

# What a process that cannot do its remote I/O because it was forked is told to do instead.
SPAWN_ADVICE = (
    "start worker processes with multiprocessing's 'spawn' or 'forkserver' method "
    '(with torch: DataLoader(multiprocessing_context="spawn"))'
)

# Seconds `run` waits at a time before it looks whether the loop still has its thread.
_WAIT_SLICE = 0.25


class RequestSlots:
    """Slots for the remote requests this process has in flight: at most
    `config.io_process_concurrency` held at once, over every store, thread and event loop.
    Waiters are served in order of arrival, each on its own loop or thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held = 0
        # (slots wanted, the future a waiter awaits on its loop or waits for in its thread),
        # in order of arrival
        self._waiting: collections.deque[
            tuple[int, asyncio.Future[None] | concurrent.futures.Future[None]]
        ] = collections.deque()

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

    @contextmanager
    def hold(self, wanted: int = 1) -> Iterator[None]:
        """As `slots`, waited for in the calling thread."""
        wanted = max(1, min(wanted, config.io_process_concurrency))
        granted = self._granted_at_once(wanted, concurrent.futures.Future[None])
        if granted is not None:
            try:
                granted.result()
            except BaseException:
                self._give_up(wanted, granted)
                raise
        try:
            yield
        finally:
            self._release(wanted)

    def _granted_at_once(self, wanted: int, waiter: Callable[[], _F]) -> _F | None:
        """Take the slots if they are free and nobody waits (None); else queue a future
        `waiter()` makes, to be granted them, and give it. (Made only then: a future costs
        a request a lock and a condition.)"""
        with self._lock:
            if not self._waiting and self.held + wanted <= config.io_process_concurrency:
                self.held += wanted
                return None
            granted = waiter()
            self._waiting.append((wanted, granted))
            return granted

    def _give_up(
        self, wanted: int, granted: asyncio.Future[None] | concurrent.futures.Future[None]
    ) -> None:
        """A waiter stopped waiting (cancelled, interrupted): out of the queue, or, granted
        already, its slots back."""
        with self._lock:
            waiting = (wanted, granted) in self._waiting
            if waiting:
                self._waiting.remove((wanted, granted))
        # Granted already: _deliver gives the slots back if it finds the future
        # cancelled; a future it completed first holds them, so they go back here.
        if not waiting and granted.done() and not granted.cancelled():
            self._release(wanted)

    async def _acquire(self, wanted: int) -> None:
        import asyncio

        granted = self._granted_at_once(wanted, asyncio.get_running_loop().create_future)
        if granted is None:
            return
        try:
            await granted
        except BaseException:
            self._give_up(wanted, granted)
            raise

    def _release(self, count: int) -> None:
        with self._lock:
            self.held -= count
            limit = config.io_process_concurrency
            while self._waiting and self.held + min(self._waiting[0][0], limit) <= limit:
                wanted, granted = self._waiting.popleft()
                self.held += wanted
                if isinstance(granted, concurrent.futures.Future):
                    granted.set_result(None)  # (its thread wakes)
                    continue
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
    global _loop, _threads, _loop_guard, request_slots, _worker
    _loop, _threads, _worker = None, None, None
    _loop_guard = threading.Lock()
    request_slots = RequestSlots()


at_fork_in_child(_forget_loop_in_child)


def request_slot(wanted: int = 1) -> AbstractAsyncContextManager[None]:
    """`async with request_slot(): ...` holds slots of the process's bound on remote
    requests (RequestSlots.slots) while a request is sent and its answer read."""
    return request_slots.slots(wanted)


def io_loop() -> asyncio.AbstractEventLoop:
    """The process's I/O event loop, running on a daemon thread (started on first use)."""
    global _loop
    with _loop_guard:
        if _loop is None:
            import asyncio

            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="zarrcore-io", daemon=True).start()
            _loop = loop
        return _loop


def _loop_thread(loop: asyncio.AbstractEventLoop) -> int | None:
    """The ident of the thread that runs `loop` (None before one ran it): asyncio's loops
    note it."""
    return getattr(loop, "_thread_id", None)


def on_io_loop() -> bool:
    """Is this the I/O loop's thread (where waiting for the loop would wait forever)?"""
    loop = _loop
    return loop is not None and _loop_thread(loop) == threading.get_ident()


class DaemonThreads(concurrent.futures.Executor):
    """Up to `limit` threads, started as calls need them, that run the calls submitted, in
    order. Daemons, unlike ThreadPoolExecutor's: an exit, Ctrl-C's included, never waits
    for a call blocked in a request until the client's timeout (nothing can cancel one)."""

    def __init__(self, limit: int, name: str) -> None:
        self._limit, self._name = limit, name
        self._calls: queue.SimpleQueue[
            tuple[
                concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]
            ]
        ] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._started = 0
        self._lock = threading.Lock()

    def submit(
        self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[_T]:
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._calls.put((future, fn, args, kwargs))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if self._started < self._limit:
                    self._started += 1
                    threading.Thread(
                        target=self._work, name=f"{self._name}_{self._started}", daemon=True
                    ).start()
        return future

    def _work(self) -> None:
        while True:
            future, fn, args, kwargs = self._calls.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as e:  # (the caller gets it, as from any executor)
                    future.set_exception(e)
            del future, fn, args, kwargs  # (nothing of the call kept while idle)
            self._idle.release()


def io_threads() -> concurrent.futures.Executor | None:
    """The process's I/O threads (started as needed, as many as the process may have requests
    in flight), on which object stores' requests run, one each; None on one of them, where a
    call that fans out again must run on threads of its own rather than queue behind itself.
    (Apart from config.io_executor's threads, whose calls, a read's get_many, wait on these.)"""
    global _threads
    if threading.current_thread().name.startswith(_IO_THREAD):
        return None
    with _loop_guard:
        if _threads is None:
            _threads = DaemonThreads(config.io_process_concurrency, _IO_THREAD)
        return _threads


def _a_worker() -> bool:
    """Is this process a multiprocessing worker (a DataLoader's, a pool's)? Ctrl-C is then its
    parent's to handle, which stops it by SIGTERM, whatever call it is in."""
    global _worker
    if _worker is None:
        import multiprocessing

        _worker = multiprocessing.parent_process() is not None
    return _worker


def request(call: Callable[..., _T], *args: Any, slots: int = 1, **kwargs: Any) -> _T:
    """call(*args, **kwargs): a remote request that blocks its thread (obstore's synchronous
    calls), holding `slots` of the process's bound (RequestSlots.hold) while it runs. In the
    calling thread; from the main thread, on an I/O thread, whose result it waits for:
    Ctrl-C reaches only the main thread, and only between Python steps, so a call blocked
    there would hold it up to the client's timeout and retries. (Not in a multiprocessing
    worker, where that hop would cost each request 0.1-0.15 ms of CPU.) The slots are taken
    where the call runs: a caller waiting for an I/O thread holds none."""

    def held() -> _T:
        with request_slots.hold(slots):
            return call(*args, **kwargs)

    if threading.current_thread() is not threading.main_thread() or _a_worker():
        return held()
    threads = io_threads()
    assert threads is not None  # (the main thread is none of them)
    return threads.submit(held).result()  # (a wait that Ctrl-C interrupts)


def _thread_gone(loop: asyncio.AbstractEventLoop) -> bool:
    """Was `loop` run by a thread that this process does not have (a forked child inherits
    its parent's loops, not their threads)?"""
    ident = _loop_thread(loop)
    return ident is not None and all(t.ident != ident for t in threading.enumerate())


# Not fan_out: one coroutine awaited from any thread, and a loop whose thread may be gone.
def run(
    coro: Coroutine[Any, Any, _T],
    loop: asyncio.AbstractEventLoop | None = None,
    deadline: float | None = None,
) -> _T:
    """Run `coro` on the I/O loop (or `loop`) and return its result, from any other thread.
    A StoreError (ETIMEDOUT) after `deadline` seconds (default `answer_deadline()`) without
    its result, or at once when no thread of this process runs the loop: the requests in it
    time out sooner, so only a loop that no longer runs gets there. A StoreError (EDEADLK) at
    once on the loop's own thread, which would wait for itself."""
    import asyncio

    loop = loop or io_loop()
    if _loop_thread(loop) == threading.get_ident():
        coro.close()
        raise StoreError(
            errno.EDEADLK,
            f"{getattr(coro, '__qualname__', coro)}: waited for on the thread that runs its "
            f"event loop, which would wait for itself: await it there",
        )
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
                    raise StoreError(
                        errno.ETIMEDOUT,
                        f"no answer for {wait:.0f} s from {getattr(coro, '__qualname__', coro)}",
                    ) from None
                if _thread_gone(loop):
                    raise StoreError(
                        errno.EPERM,
                        (
                            f"{getattr(coro, '__qualname__', coro)}: no thread of this process "
                            f"runs its event loop (this process was forked after it started): "
                            f"{SPAWN_ADVICE}"
                        ),
                    ) from None
    except BaseException:
        future.cancel()
        raise


def answer_deadline(timeout: float | None = None, retries: int | None = None) -> float:
    """Seconds a fan-out of remote requests waits for any answer before it gives up: longer
    than the client's own timeout and retries (config's, unless given), which fail first."""
    timeout = config.io_timeout if timeout is None else timeout
    retries = config.io_retries if retries is None else retries
    return timeout * (retries + 2) + 5
