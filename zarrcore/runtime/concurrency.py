"""Bounded concurrency: the one primitive every fan-out of zarrcore runs on.

Reads of remote stores, writes of object stores, fetches of byte ranges and the tools' per-key
jobs all call `fan_out`: at most `limit` calls in flight, the next item taken only when one
finishes (so the items held stay bounded), results handed back in the calling thread as they
arrive (or dropped, for writes), a deadline on silence, and a clean stop on the first error or
Ctrl-C.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import queue
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import StoreError
from . import cancellation

if TYPE_CHECKING:  # (asyncio, 30-40 ms to import, only where a loop runs the calls)
    import asyncio

__all__ = ["each", "fan_out", "run_bounded"]

_T = TypeVar("_T")
_R = TypeVar("_R")

# How long the calling thread waits at a time, so that Ctrl-C reaches it between waits.
_WAIT_SLICE = 0.25


def _first(item: Any) -> Any:
    """An item's name in a timeout message: a request's or a write's key."""
    return item[0] if isinstance(item, tuple) else item


class _LoopCalls:
    """The coroutines of one fan_out, run on `loop` from the calling thread: each one's future
    is done once its coroutine has ended, also when `cancel` stopped it. (A future of
    run_coroutine_threadsafe cancelled from this thread is done at once, while its coroutine
    goes on until the loop gets to cancel it, and may send a request meanwhile.)"""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._cancelled = False
        self._running: set[asyncio.Task[Any]] = set()  # (both touched on the loop only)

    def submit(self, coro: Coroutine[Any, Any, _R]) -> concurrent.futures.Future[_R]:
        import asyncio

        return asyncio.run_coroutine_threadsafe(self._run(coro), self.loop)

    async def _run(self, coro: Coroutine[Any, Any, _R]) -> _R:
        import asyncio

        if self._cancelled:  # (its task started after `cancel`: it never runs)
            coro.close()
            raise asyncio.CancelledError
        task = cast("asyncio.Task[Any]", asyncio.current_task())
        self._running.add(task)
        try:
            return await coro
        finally:
            self._running.discard(task)

    def cancel(self) -> None:
        """Cancel the coroutines running, and those submitted that have not started, on the
        loop: their futures are done once each has ended."""

        def cancel_all() -> None:
            if not self._cancelled:
                self._cancelled = True
                for task in self._running:
                    task.cancel()

        try:
            self.loop.call_soon_threadsafe(cancel_all)
        except RuntimeError:  # the loop is closed: nothing runs there any more
            pass


# Not pool.run_workers: calls that wait (I/O) are bounded in flight; the caller only collects.
def fan_out(
    call: Callable[[_T], _R] | Callable[[_T], Awaitable[_R]],
    items: Iterable[_T],
    limit: int,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    deadline: float | None = None,
    doing: str = "waiting for",
    keep: bool = True,
    thread_name: str = "zarrcore-bounded",
    executor: concurrent.futures.Executor | None = None,
    weights: Sequence[int] | None = None,
    budget: int = 0,
) -> Iterator[list[tuple[int, _R]]]:
    """Call `call(item)` for every item, at most `limit` at once, and yield lists of
    (index, result) as calls finish (each list: all that finished since the last one).

    `items` may be a generator: it is advanced in the calling thread, one item each time a
    call may start, so producing items overlaps the calls already running. With `loop`,
    `call` returns a coroutine run on that event loop; otherwise `call` runs on threads of
    its own (not the shared pool's, so work inside it may still use the pool), or on
    `executor` when given (a pool that outlives the call, left running; a caller that runs on
    that pool itself must not give it: its calls would queue behind it).
    With `keep=False` results are dropped and nothing is yielded (writes).
    With `weights` (of the items, in their order: their bytes), the items in flight weigh at
    most `budget` together, but for one at a time. Finished calls' results are handed on
    once the calls that take their places (and weight) have started: the caller works on
    them while those run, holding at most `budget` more.

    The first exception, of a call or of `items`, is raised here; so is WorkCancelled once
    the calling thread's cancellation token (work started in the background) has fired, and
    no item is taken after it. Stopped so, or early by its caller (closing the generator), it
    returns only once no call is left running, so that none sends a request after: calls
    not started are cancelled, running threads are waited for (each leaves its whole result
    or none), running coroutines are cancelled (at once when the token fires) and waited for
    until they have ended; but writes' (`keep=False`), waited for whole as threads are: a
    write cancelled once sent may still be applied by the server after its caller went on.
    `deadline`: seconds without any call finishing after which a StoreError names (up to
    five) items still outstanding, as "`doing` keys [...]"; also the most that coroutines
    are waited for at the end (on a loop that stopped, none ends).
    """
    limit = max(1, int(limit))
    # (`call` returns _R on threads, a coroutine of _R on a loop: typed once, not per item)
    run: Callable[[_T], Any] = call
    if loop is None and isinstance(items, Sequence) and len(items) <= 1:
        # One call: in the caller, without starting a thread.
        inline = [(i, run(item)) for i, item in enumerate(items)]
        if keep and inline:
            yield inline
        return
    finished: queue.SimpleQueue[concurrent.futures.Future[_R]] = queue.SimpleQueue()
    running: dict[concurrent.futures.Future[_R], tuple[int, _T]] = {}
    threads: concurrent.futures.Executor | None = None
    coroutines = None if loop is None else _LoopCalls(loop)
    own = loop is None and executor is None
    if own:
        threads = concurrent.futures.ThreadPoolExecutor(limit, thread_name_prefix=thread_name)
    elif loop is None:
        threads = executor
    # (Cancelled: running coroutines, but writes'; see above.)
    cancel_running = coroutines.cancel if coroutines is not None and keep else None
    token = cancellation.current()
    watching = contextlib.ExitStack()
    if token is not None and cancel_running is not None:
        # (The ends of the coroutines a fired token cancels wake this thread.)
        watching.enter_context(token.stopping(cancel_running))
    pending = enumerate(items)
    exhausted = False
    taken = held = 0  # (items taken, and the weight of those running)
    # (The results of the calls that finished last: handed on once the calls their places
    # free have started, so that the caller's work on them overlaps those.)
    results: list[tuple[int, _R]] = []
    try:
        while True:
            while not exhausted and len(running) < limit:
                if token is not None:
                    token.check()
                if (
                    weights is not None
                    and running
                    and taken < len(weights)
                    and held + weights[taken] > budget
                ):
                    break
                try:
                    i, item = next(pending)
                except StopIteration:
                    exhausted = True
                    break
                taken += 1
                if weights is not None:
                    held += weights[i]
                future: concurrent.futures.Future[_R]
                if coroutines is not None:
                    future = coroutines.submit(run(item))
                else:
                    assert threads is not None
                    future = threads.submit(run, item)
                running[future] = (i, item)
                future.add_done_callback(finished.put)
            if results:
                yield results
                results = []
            if not running:
                return
            done = [_next_finished(finished, running, deadline, doing)]
            while True:
                try:
                    done.append(finished.get_nowait())
                except queue.Empty:
                    break
            if token is not None:
                token.check()  # (fired: the calls it cancelled have no results)
            for future in done:
                i, _ = running.pop(future)
                if weights is not None:
                    held -= weights[i]
                result = future.result()  # a failure is raised here
                if keep:
                    results.append((i, result))
    finally:
        watching.close()
        if cancel_running is not None:
            cancel_running()
        if coroutines is not None:
            concurrent.futures.wait(running, timeout=deadline)
        else:
            for future in running:
                future.cancel()
            if own:
                assert threads is not None
                threads.shutdown(wait=True, cancel_futures=True)
            else:
                # (Not ours to shut down: wait for the calls that started, as shutdown would.)
                concurrent.futures.wait(running)


def _next_finished(
    finished: queue.SimpleQueue[concurrent.futures.Future[_R]],
    running: dict[concurrent.futures.Future[_R], tuple[int, Any]],
    deadline: float | None,
    doing: str,
) -> concurrent.futures.Future[_R]:
    """The next call to finish, waited for in short slices (Ctrl-C); StoreError after
    `deadline` seconds with none."""
    start = time.monotonic()
    while True:
        wait = _WAIT_SLICE
        if deadline is not None:
            left = deadline - (time.monotonic() - start)
            if left <= 0:
                keys = [_first(item) for _, item in sorted(running.values(), key=lambda r: r[0])][
                    :5
                ]
                raise StoreError(
                    errno.ETIMEDOUT, f"no answer for {deadline:.0f} s {doing} keys {keys}"
                )
            wait = min(wait, left)
        try:
            return finished.get(timeout=wait)
        except queue.Empty:
            continue


def each(batches: Iterable[list[tuple[int, _R]]]) -> Iterator[tuple[int, _R]]:
    """`fan_out`'s (index, result) pairs one at a time, as Store.get_many yields them."""
    for batch in batches:
        yield from batch


def run_bounded(
    call: Callable[[_T], Any],
    items: Iterable[_T],
    limit: int,
    on_done: Callable[[_T, Any], object] | None = None,
    **options: Any,
) -> None:
    """`fan_out` for work whose results are handed to `on_done(item, result)` in the calling
    thread (calls on threads only), or dropped (writes); return when all are done."""
    if on_done is None:
        for _ in fan_out(call, items, limit, keep=False, **options):
            pass
        return

    def paired(item: _T) -> tuple[_T, Any]:
        return item, call(item)

    for batch in fan_out(paired, items, limit, **options):
        for _, (item, result) in batch:
            on_done(item, result)
