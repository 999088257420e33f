"""The I/O loop of remote stores: one asyncio loop on a thread of its own, on which
zarrcore.concurrency.fan_out runs their requests."""
import asyncio
import atexit
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from .._portable import at_fork_in_child
from ..config import config

_loop: asyncio.AbstractEventLoop | None = None
_loop_guard = threading.Lock()

_T = TypeVar("_T")


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


def answer_deadline(timeout: float | None = None, retries: int | None = None) -> float:
    """Seconds a fan-out of remote requests waits for any answer before it gives up: longer
    than the client's own timeout and retries (config's, unless given), which fail first."""
    timeout = config.io_timeout if timeout is None else timeout
    retries = config.io_retries if retries is None else retries
    return timeout * (retries + 2) + 5
