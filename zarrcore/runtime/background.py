"""Work started in the background: a call run on the shared pool (config.executor()) under a
cancellation token, its outcome given to a concurrent.futures.Future. The futures API
(Array.read_future, Array.write_future) and the asyncio API (zarrcore.AsyncArray) both
start their work here, so they share the pool, its size and the process's I/O bounds with
the synchronous calls: no thread is started per call."""
from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from .cancellation import CancelToken, carrying
from ..config import config
from .pool import run_as_caller

_R = TypeVar("_R")


class Started(NamedTuple):
    """A call started by `start`."""

    #: Its outcome. Cancelling it (future.cancel(), True until it is done) fires the token:
    #: no further chunk is started, those in progress are finished whole.
    future: concurrent.futures.Future[Any]
    #: Done (with None) once the call has returned or raised: after a cancel, once its work
    #: in progress has ended.
    ended: concurrent.futures.Future[None]


def start(call: Callable[..., _R], *args: Any, **kwargs: Any) -> Started:
    """Run `call(*args, **kwargs)` on the pool, at once or when a thread of it is free.

    The future stays pending (not running) until the call returns, so that `cancel()` works
    while it runs, as tensorstore's futures and asyncio's tasks cancel."""
    future: concurrent.futures.Future[_R] = concurrent.futures.Future()
    token = CancelToken()

    def on_done(done: concurrent.futures.Future[_R]) -> None:
        if done.cancelled():
            token.cancel()

    def run() -> None:
        if future.cancelled():
            return
        try:
            with carrying(token):
                result = run_as_caller(lambda: call(*args, **kwargs))
        except BaseException as e:  # handed to the future (WorkCancelled: dropped)
            if future.set_running_or_notify_cancel():
                future.set_exception(e)
        else:
            if future.set_running_or_notify_cancel():
                future.set_result(result)

    future.add_done_callback(on_done)
    # (the pool's own future of `run` is done when the call has ended)
    return Started(future, config.executor().submit(run))
