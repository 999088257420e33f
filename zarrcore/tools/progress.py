"""Progress bars for long jobs, and the bounded parallel loop they watch.

A bar (tqdm) shows bytes with throughput and ETA, and chunks done out of the total. It is drawn
only on a terminal: `progress=None` means "when stderr is a terminal", True forces it and False
turns it off. Without tqdm installed (the `tools` extra) there is no bar.
"""
import concurrent.futures
import sys
import threading


def parse_bytes(text):
    """A size such as 1GiB, 512MiB, 2G, 1e9 or an int, in bytes."""
    if isinstance(text, (int, float)):
        return int(text)
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    s = str(text).strip().lower().removesuffix("b").removesuffix("i")
    scale = units.get(s[-1:], 1)
    if s[-1:] in units:
        s = s[:-1]
    try:
        value = float(s) * scale
    except ValueError:
        raise ValueError(f"not a size: {text!r} (say 1GiB, 512MiB or a number of bytes)") from None
    if value <= 0:
        raise ValueError(f"size must be positive, got {text!r}")
    return int(value)


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    """Bytes and chunks done of a job; a no-op unless enabled."""

    def __init__(self, total_bytes, total_chunks, desc, enabled=None, chunk_word="chunks"):
        if enabled is None:
            enabled = sys.stderr.isatty()
        tqdm = _tqdm() if enabled else None
        self._chunks_total = total_chunks
        self._chunks = 0
        self._word = chunk_word
        self._lock = threading.Lock()
        self._bar = None
        if tqdm is not None:
            self._bar = tqdm(total=total_bytes, desc=desc, unit="B", unit_scale=True,
                             unit_divisor=1024, file=sys.stderr, dynamic_ncols=True,
                             mininterval=0.2, smoothing=0.1, leave=True)
            self._bar.set_postfix_str(self._postfix(), refresh=False)

    def _postfix(self):
        return f"{self._chunks}/{self._chunks_total} {self._word}"

    def update(self, nbytes, chunks=1):
        with self._lock:
            self._chunks += chunks
            if self._bar is not None:
                self._bar.set_postfix_str(self._postfix(), refresh=False)
                self._bar.update(nbytes)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_bounded(func, items, in_flight, on_done=None):
    """Call `func(item)` for every item on `in_flight` worker threads, taking the next item only
    when one finishes (so at most `in_flight` items are held at once); `on_done(item, result)`
    runs in the calling thread. The first exception stops the loop and is raised.

    On Ctrl-C (KeyboardInterrupt in the calling thread) no new item starts, the running ones
    finish (each leaves a whole result or none), and KeyboardInterrupt is raised.

    The workers are not named as zarrcore's pool threads, so reads and writes inside `func`
    still spread their chunks over the pool.
    """
    items = iter(items)
    in_flight = max(1, int(in_flight))
    pending = {}
    executor = concurrent.futures.ThreadPoolExecutor(in_flight, thread_name_prefix="tools-worker")
    try:
        for item in items:
            pending[executor.submit(func, item)] = item
            if len(pending) >= in_flight:
                _drain(pending, on_done)
        while pending:
            _drain(pending, on_done)
    except BaseException:
        for future in pending:
            future.cancel()
        concurrent.futures.wait(pending)
        raise
    finally:
        executor.shutdown(wait=True)


def _drain(pending, on_done):
    # A timeout keeps the wait interruptible by Ctrl-C.
    done, _ = concurrent.futures.wait(pending, timeout=0.25,
                                      return_when=concurrent.futures.FIRST_COMPLETED)
    for future in done:
        item = pending.pop(future)
        result = future.result()
        if on_done is not None:
            on_done(item, result)
