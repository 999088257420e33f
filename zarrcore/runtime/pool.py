"""The thread pool's helpers: parallel work shared by the caller and the pool's threads
(`run_workers`, `parallel_map`, `Claims`), and who runs inside it. The pool itself and its
size are settings (zarrcore.config, which hands its settings to `serve`)."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from . import cancellation

__all__ = [
    "CALLER_TASKS_PER_WORKER",
    "Claims",
    "PoolSettings",
    "TURN_ITEMS",
    "WAIT_SLICE",
    "WAIT_STARTED",
    "in_parallel_work",
    "in_turns",
    "mark_pool_thread",
    "parallel_map",
    "run_as_caller",
    "run_workers",
    "serve",
]

_T = TypeVar("_T")
_R = TypeVar("_R")


class PoolSettings(Protocol):
    """What the helpers ask of the settings: the pool's size and the pool."""

    num_threads: int

    def executor(self) -> concurrent.futures.ThreadPoolExecutor: ...


# The settings of the pool: zarrcore.config's `config` (config.py imports this module, so
# it hands them over rather than this module importing it).
_settings: PoolSettings


def serve(settings: PoolSettings) -> None:
    """Run parallel work with `settings`' pool and size (zarrcore.config's, at its import)."""
    global _settings
    _settings = settings


# .active: the thread runs parallel work, as a thread of config.executor()'s pool (always) or
# as run_workers' caller (while it calls `work`).
_working = threading.local()


def mark_pool_thread() -> None:
    """The initializer of the pool's threads: all they run is parallel work."""
    _working.active = True


def in_parallel_work() -> bool:
    """Does the caller run inside parallel work already, as a pool thread or as the caller of
    run_workers? Nested parallel calls there run inline: the threads are all busy."""
    return getattr(_working, "active", False)


# How long at a time the main thread waits for pool work: between waits Python handles the
# signals it delivers to the main thread only (Ctrl-C). Until a pool thread has started, it
# waits briefly, then starts a thread of its own for the work when none starts (a busy
# pool); after that, longer, so a long run costs a few Python steps a second. (On POSIX
# systems a signal ends the wait at once; on Windows, Ctrl-C waits out the slice.)
WAIT_SLICE = 0.05
WAIT_STARTED = 1.0

# Up to this many tasks per worker, the main thread works beside the pool rather than waiting
# for it: Ctrl-C then waits for those few tasks, and a small read is spared the wakeups of
# the caller and of one more pool thread. (On 2 cores, 100 random 32^3 boxes of an array of
# 64^3 zstd chunks, 1-8 chunks each, took 0.23-0.25 s with the caller waiting, 0.19-0.20 s
# working.)
CALLER_TASKS_PER_WORKER = 4


# Not concurrency.fan_out: compute on the shared pool, the caller working too, nested inline.
def run_workers(
    work: Callable[[], None],
    ntasks: int,
    stop: Callable[[], None],
    workers: int | None = None,
    *,
    _token_checked: bool = False,
) -> None:
    """Call `work` from the calling thread and from pool threads, as many in all as there are
    threads (config.num_threads, the pool's, or fewer: `workers`) and tasks (`ntasks`).

    `work` takes its tasks one by one from state shared between its calls and returns when
    none is left, so the caller alone can do all of them. Helpers only help: those that have
    not started when the caller runs out of tasks are cancelled, and the caller waits only for
    helpers already running, which are finishing tasks they took. So a caller that holds a
    lock never waits for pool work queued behind tasks blocked on that lock, and a busy pool
    or a descheduled thread delays nobody.

    In the main thread, with more than CALLER_TASKS_PER_WORKER tasks per worker, the pool
    does the work while the caller waits in short slices, so that Ctrl-C is handled at once:
    `stop()` then makes the calls of `work` take no further task, and KeyboardInterrupt is
    raised once the tasks in progress are finished (each chunk written whole or not at all).

    Work started in the background (zarrcore.runtime.background) runs under a cancellation token:
    this is the one place that checks it, before and after each job (raising WorkCancelled),
    and that stops the job with `stop()` when the token fires meanwhile."""
    # (the token read without a Python call: small reads pay for each step)
    token = None if _token_checked else getattr(cancellation.carried, "token", None)
    if token is not None:
        token.check()
        with token.stopping(stop):
            run_workers(work, ntasks, stop, workers, _token_checked=True)
        token.check()
        return
    if ntasks <= 1:
        work()  # one task or none: every route below ends here (small reads pay for each step)
        return
    nworkers = min(_settings.num_threads, ntasks, ntasks if workers is None else workers)
    if in_parallel_work():
        work()  # the threads are busy with this work already
        return
    if (
        ntasks > CALLER_TASKS_PER_WORKER * nworkers
        and threading.current_thread() is threading.main_thread()
    ):
        _run_interruptibly(work, nworkers, stop)
        return
    if nworkers <= 1:
        work()  # no pool round trip (small reads pay for every microsecond)
        return
    helpers, refused = _start_helpers(work, nworkers - 1, stop)
    try:
        if refused is not None:
            raise refused
        _work_here(work)
    finally:
        _wait_for(helpers)


def _start_helpers(
    work: Callable[[], None], count: int, stop: Callable[[], None]
) -> tuple[list[concurrent.futures.Future[None]], BaseException | None]:
    """(helpers, None): `count` calls of `work` submitted to the pool. A start that fails
    (Ctrl-C while it waits for its thread, a pool that refuses one at interpreter exit)
    calls `stop()`, so that the helpers started take no further task, and is returned as
    the error beside them."""
    helpers: list[concurrent.futures.Future[None]] = []
    try:
        executor = _settings.executor()
        for _ in range(count):
            helpers.append(executor.submit(work))
    except BaseException as e:
        stop()
        return helpers, e
    return helpers, None


def _wait_for(helpers: list[concurrent.futures.Future[None]]) -> None:
    """Cancel the helpers not started and wait for every other one, then raise the first
    one's error: none works on after the call has returned or raised."""
    failure: BaseException | None = None
    for f in helpers:
        if not f.cancel():
            try:
                f.result()
            except BaseException as e:
                failure = failure or e
    if failure is not None:
        raise failure


def _work_here(work: Callable[[], None]) -> None:
    """Call `work` as run_workers' caller: parallel calls inside it run inline."""
    _working.active = True
    try:
        work()
    finally:
        _working.active = False


def run_as_caller(call: Callable[[], _R]) -> _R:
    """Call `call` in a thread of the pool as an outside caller would: its parallel work is
    shared with the pool's other threads (run_workers' callers never wait for helpers that
    have not started, so a pool busy with such calls delays them and blocks none)."""
    previous = in_parallel_work()
    _working.active = False
    try:
        return call()
    finally:
        _working.active = previous


def _work_as_future(work: Callable[[], None], future: concurrent.futures.Future[None]) -> None:
    """Call `work` (as run_workers' caller would) unless `future` was cancelled; its outcome
    goes to `future`. The target of a thread of its own."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        _work_here(work)
    except BaseException as e:
        future.set_exception(e)
    else:
        future.set_result(None)


def _run_interruptibly(work: Callable[[], None], nworkers: int, stop: Callable[[], None]) -> None:
    """run_workers in the main thread: `nworkers` pool threads work, the caller waits."""
    # (a start that failed: the helpers started stop, and are waited for below)
    helpers, interrupt = _start_helpers(work, nworkers, stop)
    pending = set(helpers)
    # No task is left to take: helpers not started yet have nothing to do.
    drained = interrupt is not None
    started = False  # a helper has started, so the work goes on without the caller
    while pending:
        try:
            if drained:
                pending = {f for f in pending if not f.cancel()}
                if not pending:
                    break
            done, pending = concurrent.futures.wait(
                pending,
                WAIT_STARTED if started or drained else WAIT_SLICE,
                concurrent.futures.FIRST_COMPLETED,
            )
            if done:  # a call of `work` returns when no task is left
                drained = True
            elif not drained and not started:
                started = any(f.running() for f in pending)
                if not started:
                    # The pool is busy elsewhere. The work runs on a thread of its own, not
                    # here: a compiled call of `work` holds the main thread until it returns,
                    # and Ctrl-C would wait for all the work.
                    helpers.append(concurrent.futures.Future())
                    pending.add(helpers[-1])
                    started = True
                    threading.Thread(
                        target=_work_as_future,
                        args=(work, helpers[-1]),
                        name="zarrcore-run-workers",
                    ).start()
        except KeyboardInterrupt as e:
            if interrupt is None:
                stop()
            interrupt, drained = e, True
    if interrupt is not None:
        raise interrupt
    _wait_for(helpers)


class Claims:
    """The task indices 0..n-1, each handed out once to the threads that iterate over this
    together (`for i in claims`, one iterator per thread). A lock hands them out:
    next() on a shared itertools.count or range iterator is atomic only under the GIL, and
    on a free-threaded Python two threads could take the same task."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._next = 0
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[int]:
        while True:
            with self._lock:
                i = self._next
                if i >= self._n:
                    return
                self._next = i + 1
            yield i


def parallel_map(
    func: Callable[[_T], _R], items: Iterable[_T], workers: int | None = None
) -> list[_R]:
    """Apply `func` to every item, with pool threads helping the caller (run_workers, on at
    most `workers` threads); results in order, the exception of the first failing item
    re-raised (later items are skipped)."""
    items = list(items)
    n = len(items)
    workers = _settings.num_threads if workers is None else min(workers, _settings.num_threads)
    if n <= 1 or workers == 1 or in_parallel_work():
        return [func(item) for item in items]
    results: list[Any] = [None] * n
    failures: list[tuple[int, BaseException]] = []
    claims = Claims(n)
    stopped = threading.Event()

    def work() -> None:
        for i in claims:
            if failures or stopped.is_set():
                return
            try:
                results[i] = func(items[i])
            except BaseException as e:  # re-raised by the caller
                failures.append((i, e))

    run_workers(work, n, stopped.set, workers)
    if failures:
        raise min(failures, key=lambda f: f[0])[1]
    return results


# How many items a Python loop of pool work handles between two turns it offers the other
# threads (an event loop waiting to run a callback): CPython otherwise hands the interpreter
# over only every sys.getswitchinterval() (5 ms by default).
TURN_ITEMS = 128


def in_turns(items: Iterable[_T]) -> Iterator[_T]:
    """`items`, with the interpreter (the GIL) offered to other threads after every
    TURN_ITEMS of them."""
    for k, item in enumerate(items):
        if k % TURN_ITEMS == TURN_ITEMS - 1:
            time.sleep(0)  # (releases the GIL: a waiting thread takes it)
        yield item
