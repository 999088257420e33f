"""Runtime configuration: thread pool size and write behaviour.

`ZARRCORE_NUM_THREADS` sets the pool size at import; `config.set(num_threads=...)` changes it.
"""
import concurrent.futures
import os
import threading


def _env_threads():
    value = os.environ.get("ZARRCORE_NUM_THREADS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"ZARRCORE_NUM_THREADS must be an integer, not {value!r}") from None
    return os.cpu_count() or 1


class Config:
    """Process-wide settings. Attribute reads are cheap; `set` validates."""

    def __init__(self):
        self.num_threads = _env_threads()
        self.write_empty_chunks = False
        # Order in which a shard's inner chunks are laid out on write ("C" or "morton"); not stored.
        self.shard_write_order = "C"
        self._executor = None
        self._executor_threads = 0
        self._lock = threading.Lock()

    def set(self, **options):
        for name, value in options.items():
            if name == "num_threads":
                value = int(value)
                if value < 1:
                    raise ValueError("num_threads must be >= 1")
            elif name == "write_empty_chunks":
                value = bool(value)
            elif name == "shard_write_order":
                if value not in ("C", "morton"):
                    raise ValueError("shard_write_order must be 'C' or 'morton'")
            else:
                raise TypeError(f"unknown config option {name!r}")
            setattr(self, name, value)

    def executor(self):
        """The shared thread pool, sized to `num_threads`."""
        with self._lock:
            if self._executor is None or self._executor_threads != self.num_threads:
                if self._executor is not None:
                    self._executor.shutdown(wait=False)
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    self.num_threads, thread_name_prefix="zarrcore"
                )
                self._executor_threads = self.num_threads
            return self._executor


config = Config()


def parallel_map(func, items):
    """Apply `func` to every item on the pool (inline when there is one item or one thread);
    results in order, the first exception re-raised."""
    items = list(items)
    if len(items) <= 1 or config.num_threads == 1:
        return [func(item) for item in items]
    # Threads of the pool must not wait on the pool themselves (nested sharded reads).
    if threading.current_thread().name.startswith("zarrcore"):
        return [func(item) for item in items]
    return list(config.executor().map(func, items))
