"""Work started in the background: a call run on the shared pool (config.executor()) under a
cancellation token, its outcome given to a future. The futures API (Array.read_future,
Array.write_future) and the asyncio API (zarrcore.AsyncArray) both start their work here, so
they share the pool, its size and the process's I/O bounds with the synchronous calls: no
thread is started per call."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .cancellation import CancelToken, carrying
from .config import config
from .pool import run_as_caller

__all__ = ["BackgroundFuture", "start"]

_R = TypeVar("_R")

# The phases of a started call, in order.
_QUEUED, _RUNNING, _ENDED = "queued", "running", "ended"


class BackgroundFuture(concurrent.futures.Future[_R]):
    """The outcome of a call started by `start`, pending until the call has ended.

    `cancel()` fires the call's token (no further chunk is started, those in progress are
    finished whole) and returns once no work of the call is left running, so nothing of a
    cancelled write lands after it returns. `stop()` fires the token without waiting: an event
    loop, which must not block, stops the call and then awaits the future."""

    def __init__(self, token: CancelToken) -> None:
        super().__init__()
        self._token = token
        self._gate = threading.Lock()
        self._phase = _QUEUED
        self._ended = threading.Event()
        self._runner: int | None = None  # the thread running the call

    def running(self) -> bool:
        return self._phase == _RUNNING

    def stop(self) -> bool:
        """Fire the token and return at once: False when the call has ended already."""
        with self._gate:
            if self._phase == _ENDED:
                return self.cancelled()
            self._token.cancel()
            if self._phase == _RUNNING:
                return True
            self._phase = _ENDED  # (queued: the call never starts)
        concurrent.futures.Future.cancel(self)
        self._ended.set()
        return True

    def cancel(self) -> bool:
        if not self.stop():
            return False
        # (from inside the call itself, waiting for it would never end)
        if self._runner != threading.get_ident():
            self._ended.wait()
        return True

    def _run(self, call: Callable[[], _R]) -> None:
        with self._gate:
            if self._phase != _QUEUED:  # cancelled before it started
                return
            self._phase = _RUNNING
            self._runner = threading.get_ident()
        result: Any = None
        error: BaseException | None = None
        try:
            with carrying(self._token):
                result = run_as_caller(call)
        except BaseException as e:  # handed to the future (WorkCancelled: dropped)
            error = e
        with self._gate:
            self._phase = _ENDED
        if self._token.cancelled:  # (stopped while it ran: cancelled, however it ended)
            concurrent.futures.Future.cancel(self)
        elif error is not None:
            self.set_exception(error)
        else:
            self.set_result(result)
        self._ended.set()


def start(call: Callable[..., _R], *args: Any, **kwargs: Any) -> BackgroundFuture[_R]:
    """Run `call(*args, **kwargs)` on the pool, at once or when a thread of it is free.

    The future stays pending (not done) until the call has ended, also when cancelled while
    it runs, as asyncio's tasks end."""
    future: BackgroundFuture[_R] = BackgroundFuture(CancelToken())
    config.executor().submit(future._run, lambda: call(*args, **kwargs))
    return future
