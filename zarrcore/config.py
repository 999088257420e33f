"""Runtime configuration: thread pool size, kept memory and write behaviour.

`ZARRCORE_NUM_THREADS` sets the pool size at import; `config.set(num_threads=...)` changes it.
`ZARRCORE_BUFFER_POOL_BYTES` sets how much freed output memory is kept for reuse.
The resource limits on what stored metadata may declare (`max_dimensions`, `max_chunk_bytes`,
`max_shard_index_entries`) come from `ZARRCORE_MAX_DIMENSIONS`, `ZARRCORE_MAX_CHUNK_BYTES` and
`ZARRCORE_MAX_SHARD_INDEX_ENTRIES`.
"""
import concurrent.futures
import os
import threading

from . import _memory


def _env_int(name, default, minimum):
    """Integer environment variable `name` (at least `minimum`), or `default` when unset."""
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return max(minimum, int(value))
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None


# The compiled batches handle at most this many dimensions (ZC_BATCH_MAX_NDIM).
DIMENSIONS_CEILING = 32
# Resource limits: metadata declaring more is refused before anything is allocated from it.
LIMITS = {
    "max_dimensions": ("ZARRCORE_MAX_DIMENSIONS", 32),
    "max_chunk_bytes": ("ZARRCORE_MAX_CHUNK_BYTES", 128 << 20),
    "max_shard_index_entries": ("ZARRCORE_MAX_SHARD_INDEX_ENTRIES", 1 << 20),
}


def _check_limit(name, value):
    value = int(value)
    if value < 1 or (name == "max_dimensions" and value > DIMENSIONS_CEILING):
        high = f" and <= {DIMENSIONS_CEILING}" if name == "max_dimensions" else ""
        raise ValueError(f"{name} must be >= 1{high}, not {value}")
    return value


def _default_pool_bytes():
    """1 GiB, or an eighth of the machine's memory when that is less."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        ram = 8 << 30
    return min(1 << 30, ram // 8)


class Config:
    """Process-wide settings. Attribute reads are cheap; `set` validates."""

    def __init__(self):
        self.num_threads = _env_int("ZARRCORE_NUM_THREADS", os.cpu_count() or 1, 1)
        self.write_empty_chunks = False
        # Order in which a shard's inner chunks are laid out on write ("C" or "morton"); not stored.
        self.shard_write_order = "C"
        # Freed output arrays of 1 MiB and more, and freed 2 MiB blocks shared by arrays of
        # 256 KiB and more, are kept up to this many bytes (reclaimable by the kernel under
        # memory pressure) and reused by later reads.
        self.buffer_pool_bytes = _env_int("ZARRCORE_BUFFER_POOL_BYTES", _default_pool_bytes(), 0)
        _memory.set_limit(self.buffer_pool_bytes)
        for name, (env, default) in LIMITS.items():
            setattr(self, name, _check_limit(name, _env_int(env, default, 1)))
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
            elif name == "buffer_pool_bytes":
                value = int(value)
                if value < 0:
                    raise ValueError("buffer_pool_bytes must be >= 0")
                _memory.set_limit(value)
            elif name in LIMITS:
                value = _check_limit(name, value)
            else:
                raise TypeError(f"unknown config option {name!r}")
            setattr(self, name, value)

    def executor(self):
        """The shared thread pool, sized to `num_threads`."""
        with self._lock:
            if self._executor is None or self._executor_threads != self.num_threads:
                # The old pool is dropped, not shut down: a call in another thread may hold it
                # still and submit to it. Its idle threads exit once it is collected.
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    self.num_threads, thread_name_prefix="zarrcore"
                )
                self._executor_threads = self.num_threads
            return self._executor

    def _after_fork_in_child(self):
        # The pool's threads, and whoever held the lock, do not exist in a forked child: its
        # first parallel call starts a pool of its own instead of queueing work that no
        # thread would ever run.
        self._lock = threading.Lock()
        self._executor = None
        self._executor_threads = 0


config = Config()
os.register_at_fork(after_in_child=config._after_fork_in_child)


def in_pool_thread():
    """Is the caller one of the pool's threads? (They must not wait on the pool themselves.)"""
    return threading.current_thread().name.startswith("zarrcore")


def parallel_map(func, items):
    """Apply `func` to every item on the pool (inline when there is one item or one thread);
    results in order, the first exception re-raised."""
    items = list(items)
    if len(items) <= 1 or config.num_threads == 1:
        return [func(item) for item in items]
    if in_pool_thread():  # nested sharded reads
        return [func(item) for item in items]
    return list(config.executor().map(func, items))
