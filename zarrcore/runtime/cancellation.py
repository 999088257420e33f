"""Cancellation of work started in the background (zarrcore.runtime.background): a token that
the thread running the work carries, and that pool.run_workers, through which every parallel
chunk job runs, checks before and after each job and stops the job with when it fires; and
that concurrency.fan_out, through which requests go out, checks before each request."""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Iterator

from ..errors import ZarrcoreError

__all__ = ["CancelToken", "WorkCancelled", "carried", "carrying", "current"]


class WorkCancelled(ZarrcoreError, concurrent.futures.CancelledError):
    """The work was cancelled: raised in the thread running it, between chunk jobs."""


class CancelToken:
    """Fired once (`cancel`), from any thread; the jobs running under it are stopped (their
    `stop`, as run_workers takes it: no further chunk is started, those in progress end whole)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._stops: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            # (under the lock: a job is not released while its stop runs)
            for stop in self._stops:
                stop()

    def check(self) -> None:
        """Raise WorkCancelled if the token has fired."""
        if self._cancelled:
            raise WorkCancelled("the work was cancelled")

    @contextlib.contextmanager
    def stopping(self, stop: Callable[[], None]) -> Iterator[None]:
        """While the block runs, `cancel` calls `stop` (at once if it has fired already)."""
        with self._lock:
            self._stops.append(stop)
            if self._cancelled:
                stop()
        try:
            yield
        finally:
            with self._lock:
                self._stops.remove(stop)


# (read by run_workers directly: a Python call there would cost every small read)
carried = threading.local()


def current() -> CancelToken | None:
    """The token that the calling thread's work runs under, if any."""
    return getattr(carried, "token", None)


@contextlib.contextmanager
def carrying(token: CancelToken | None) -> Iterator[None]:
    """Run the block's work under `token` (in this thread; None: under none)."""
    previous = current()
    carried.token = token
    try:
        yield
    finally:
        carried.token = previous
