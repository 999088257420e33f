"""Runtime configuration: thread pool size, kept memory and write behaviour.

`ZARRCORE_NUM_THREADS` sets the pool size at import; `config.set(num_threads=...)` changes it.
`ZARRCORE_BUFFER_POOL_BYTES` sets how much freed output memory is kept for reuse.
`ZARRCORE_CACHE_BYTES` sets the decoded-chunk cache of each array opened (0: none).
`ZARRCORE_CONFINE_LOCAL_STORES=1` makes directory stores refuse paths outside their root.
`ZARRCORE_ALLOW_PICKLE=1` lets the v2 `pickle` codec decode chunks (it runs stored code).
`ZARRCORE_IO_CONCURRENCY`, `ZARRCORE_IO_PROCESS_CONCURRENCY`, `ZARRCORE_IO_TIMEOUT` and
`ZARRCORE_IO_RETRIES` set how remote stores fetch: requests in flight per call and per process,
seconds per request, and retries of a failed request.
`ZARRCORE_LOCK_TIMEOUT` sets the seconds an object store's lock is waited for.
`ZARRCORE_WRITE_PART_BYTES` sets the parts object stores write large objects in (0: whole).
`ZARRCORE_PIPELINE_FALLBACK=0` makes zarrcore's codec pipeline for zarr-python raise where it
would hand a request to zarr-python's own pipeline.
The resource limits on what stored metadata may declare (`max_dimensions`, `max_chunk_bytes`,
`max_shard_index_entries`, `max_codecs`) come from `ZARRCORE_MAX_DIMENSIONS`,
`ZARRCORE_MAX_CHUNK_BYTES`, `ZARRCORE_MAX_SHARD_INDEX_ENTRIES` and `ZARRCORE_MAX_CODECS`.
An integer variable below its least value (or `ZARRCORE_CACHE_BYTES` above 2**63 - 1) is
refused, as config.set refuses it: a ValueError naming the variable, at import.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from .._native import memory as _memory
from .._native.cache import check_budget
from .._native.status import MAX_NDIM

# (Their path before runtime/pool.py, which users and tests import them by.)
from .pool import Claims as Claims
from .pool import mark_pool_thread, serve
from .pool import parallel_map as parallel_map
from .pool import run_workers as run_workers
from .portable import at_fork_in_child

__all__ = [
    "ARRAY_OPTIONS",
    "ArrayOptions",
    "Config",
    "DIMENSIONS_CEILING",
    "LIMITS",
    "Options",
    "array_options",
    "checked_array_options",
    "config",
    "size_with_slack",
]

_T = TypeVar("_T")
_R = TypeVar("_R")


def _env_int(name: str, default: int, minimum: int) -> int:
    """Integer environment variable `name` (at least `minimum`, as config.set requires), or
    `default` when unset."""
    value = os.environ.get(name)
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return number


# The compiled core handles at most this many dimensions (csrc/zc_status.h).
DIMENSIONS_CEILING = MAX_NDIM
# Resource limits: metadata declaring more is refused before anything is allocated from it.
LIMITS = {
    "max_dimensions": ("ZARRCORE_MAX_DIMENSIONS", MAX_NDIM),
    "max_chunk_bytes": ("ZARRCORE_MAX_CHUNK_BYTES", 128 << 20),
    "max_shard_index_entries": ("ZARRCORE_MAX_SHARD_INDEX_ENTRIES", 1 << 20),
    # Codecs in one chain: each is a pass over every chunk read or written.
    "max_codecs": ("ZARRCORE_MAX_CODECS", 256),
}


def size_with_slack(nbytes: int) -> int:
    """`nbytes` plus room for what codecs add: checksums, headers, and the growth of
    incompressible data under a compressor or two."""
    return nbytes + nbytes // 64 + 65536


def _check_limit(name: str, value: Any) -> int:
    value = int(value)
    if value < 1 or (name == "max_dimensions" and value > DIMENSIONS_CEILING):
        high = f" and <= {DIMENSIONS_CEILING}" if name == "max_dimensions" else ""
        raise ValueError(f"{name} must be >= 1{high}, not {value}")
    return value


def _default_pool_bytes() -> int:
    """1 GiB, or an eighth of the machine's memory when that is less."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        ram = 8 << 30
    return min(1 << 30, ram // 8)


class Config:
    """Process-wide settings. Attribute reads are cheap; `set` validates.

    The options, each an attribute: `num_threads`, `write_empty_chunks`,
    `read_missing_chunks`, `array_order`, `default_zarr_format`, `target_shard_size_bytes`,
    `json_indent`, `shard_write_order`, `confine_local_stores`, `allow_pickle`, `buffer_pool_bytes`,
    `cache_bytes`, `io_concurrency`, `io_process_concurrency`, `io_timeout`, `io_retries`,
    `lock_timeout`, `write_part_bytes`, `coalesce_gap_bytes`, `coalesce_max_bytes`,
    `pipeline_fallback`,
    `max_dimensions`, `max_chunk_bytes`, `max_shard_index_entries` and `max_codecs`; the
    module's documentation names their environment variables. An array may set its own
    values of those of ARRAY_OPTIONS (`Array.with_config`, `array_options`).
    """

    # Set from LIMITS in __init__.
    max_dimensions: int
    max_chunk_bytes: int
    max_shard_index_entries: int
    max_codecs: int

    def __init__(self) -> None:
        self.num_threads = _env_int("ZARRCORE_NUM_THREADS", os.cpu_count() or 1, 1)
        self.write_empty_chunks = False
        # Reads fill chunks that are not stored with the fill value; when False they raise
        # ChunkNotFoundError instead (zarr-python 3.4's "array.read_missing_chunks").
        self.read_missing_chunks = True
        # The memory order ("C" or "F") of what reads return, for v3 arrays opened or created
        # without an order of their own (their `config`), and the order new v2 arrays store
        # when `order` is not given: zarr-python's "array.order".
        self.array_order = "C"
        # The format of new arrays and groups when none is given (zarr-python's
        # "default_zarr_format"); create_array and Group.from_store take 3 unless told.
        self.default_zarr_format = 3
        # shards="auto" makes shards of about this many bytes, the same number of chunks
        # along every axis; None: two chunks along each axis of more than 8 chunks
        # (zarr-python 3.4's "array.target_shard_size_bytes").
        self.target_shard_size_bytes: int | None = None
        # The indent of the JSON metadata documents written (None: one line), as
        # zarr-python's "json_indent".
        self.json_indent: int | None = 2
        # Order in which a shard's inner chunks are laid out on write ("C" or "morton"); not stored.
        self.shard_write_order = "C"
        # Stores made from a path refuse keys that resolve outside their root (LocalStore's
        # `confined`); otherwise symlinks out of the store are followed.
        self.confine_local_stores = bool(_env_int("ZARRCORE_CONFINE_LOCAL_STORES", 0, 0))
        # Chunks of the v2 `pickle` codec are decoded only when set: unpickling runs code
        # that the stored data names.
        self.allow_pickle = bool(_env_int("ZARRCORE_ALLOW_PICKLE", 0, 0))
        # Freed output arrays of 1 MiB and more, and freed 2 MiB blocks shared by arrays of
        # 256 KiB and more, are kept up to this many bytes (reclaimable by the kernel under
        # memory pressure) and reused by later reads.
        self.buffer_pool_bytes = _env_int("ZARRCORE_BUFFER_POOL_BYTES", _default_pool_bytes(), 0)
        _memory.set_limit(self.buffer_pool_bytes)
        # The decoded-chunk cache of each array opened or created from now on, in bytes, of
        # which its reads' threads share (0: none); an array's `cache_bytes` overrides it.
        self.cache_bytes = check_budget(
            _env_int("ZARRCORE_CACHE_BYTES", 0, 0), "ZARRCORE_CACHE_BYTES"
        )
        # Requests one call of a remote store keeps in flight at once (one get_many or
        # set_many, so one array read or write): object stores answer each in tens of
        # milliseconds, so throughput needs many in flight. Calls from several threads each
        # have this many, within io_process_concurrency; at the default, a read over a link
        # with a round trip keeps small ones in flight up to io_process_concurrency
        # (engine.planning.requests_in_flight).
        self.io_concurrency = _env_int("ZARRCORE_IO_CONCURRENCY", 64, 1)
        # The options set (config.set, or their environment variable) rather than left at
        # their defaults (`chose`).
        self._chosen = {"io_concurrency"} if os.environ.get("ZARRCORE_IO_CONCURRENCY") else set()
        # Requests all the remote stores of this process keep in flight at once (object
        # stores and async fsspec filesystems; every store, array, thread and call): each
        # holds one of these slots while it is sent and its answer read, and further
        # requests wait for one. It bounds the process's connections too, as stores on one
        # endpoint, bucket and credentials share one client and its connection pool.
        self.io_process_concurrency = _env_int("ZARRCORE_IO_PROCESS_CONCURRENCY", 128, 1)
        # Seconds a remote request may take before it fails, and how many times a failed
        # request (a timeout, a dropped connection, a server error) is tried again.
        self.io_timeout = float(os.environ.get("ZARRCORE_IO_TIMEOUT") or 30.0)
        self.io_retries = _env_int("ZARRCORE_IO_RETRIES", 3, 0)
        # Seconds an object store's lock is waited for before LockTimeoutError: longer than
        # two leases (storage/_object_locks.py LOCK_LEASE), so that a lock its dead holder left
        # is always taken over first, and a queue of live holders has time to pass.
        self.lock_timeout = float(os.environ.get("ZARRCORE_LOCK_TIMEOUT") or 300.0)
        # An object larger than this many bytes goes to a store that writes in parts (S3's
        # multipart uploads) in equal parts of at most this many, sent at once over as many
        # connections: each part costs a request, and the upload two more in turn, to start
        # and to complete it, so only objects that hold one connection for many round trips
        # gain (engine.write_waves.write_part_bytes). 0: every object in one request.
        self.write_part_bytes = _env_int("ZARRCORE_WRITE_PART_BYTES", 64 << 20, 0)
        # A write of part of a chunk or shard reads, merges and rewrites it. On a store with
        # neither locks nor conditional writes a concurrent writer's update could be lost
        # that way, so such writes raise LockUnavailableError unless this is True.
        self.unsafe_partial_writes = False
        # Byte ranges of a shard less than `coalesce_gap_bytes` apart are fetched in one
        # request (reading a gap is cheaper than a request), while it spans at most
        # `coalesce_max_bytes` (None: any length): zarr-python's
        # "array.sharding_coalesce_max_gap_bytes" and "array.sharding_coalesce_max_bytes".
        # Over a store's link with a round trip, larger gaps are merged and requests cut by
        # what the link shows (engine.shard_ranges.range_limits).
        self.coalesce_gap_bytes = 1 << 16
        self.coalesce_max_bytes: int | None = None
        # zarrcore's codec pipeline for zarr-python (zarr_pipeline.py) hands a request it
        # cannot run to zarr-python's own pipeline; when False it raises PipelineFallbackError.
        self.pipeline_fallback = bool(_env_int("ZARRCORE_PIPELINE_FALLBACK", 1, 0))
        for name, (env, default) in LIMITS.items():
            setattr(self, name, _check_limit(name, _env_int(env, default, 1)))
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._executor_threads = 0
        self._io_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._io_threads = 0
        self._lock = threading.Lock()

    @property
    def max_stored_bytes(self) -> int:
        """The most bytes a stored value read whole may take when nothing tighter is known
        (a chunk of `max_chunk_bytes` encoded, with slack): more is refused, not read."""
        return size_with_slack(self.max_chunk_bytes)

    def set(self, options: Mapping[str, Any] | None = None, **kwargs: Any) -> _Restore:
        """Set options, given as a dict, as keywords or both.

        zarr-python's names ("array.write_empty_chunks", "array.read_missing_chunks",
        "array.allow_unsafe_pickle_decode", "array.order", "array.target_shard_size_bytes",
        "threading.max_workers", "async.concurrency", "async.timeout") work too. Nothing
        changes when one is invalid.

        Parameters
        ----------
        options : dict, optional
            Option names and values.
        **kwargs
            More options, by name.

        Returns
        -------
        context manager
            Used as a context manager, it restores the previous values at the end of the
            block: `with config.set(num_threads=1): ...`.

        Raises
        ------
        TypeError
            An unknown option name.
        ValueError
            A value out of the option's range, or not of its type.
        """
        given = {**(options or {}), **kwargs}
        options = {_ALIASES.get(name, name): value for name, value in given.items()}
        checked = {name: self._checked(name, value) for name, value in options.items()}
        with self._lock:  # one call's values all land together, and `previous` is theirs
            previous = {name: getattr(self, name) for name in checked}
            chosen = self._chosen & set(checked)
            for name, value in checked.items():
                if name == "buffer_pool_bytes":
                    _memory.set_limit(value)
                setattr(self, name, value)
            self._chosen |= set(checked)
        return _Restore(self, previous, chosen)

    def chose(self, name: str) -> bool:
        """Whether an option was set rather than left at its default.

        Parameters
        ----------
        name : str
            The option's name.

        Returns
        -------
        bool
            True once `set` or its environment variable gave it a value, even the default's;
            `set` used as a context manager leaves it as it was before the block. Over a
            link with a round trip, reads keep more small requests in flight than an
            `io_concurrency` left unset.
        """
        return _ALIASES.get(name, name) in self._chosen

    def get(self, name: str) -> Any:
        """The value of an option.

        Parameters
        ----------
        name : str
            The option's name (zarr-python's names work too).

        Returns
        -------
        object
            Its current value.

        Raises
        ------
        KeyError
            An unknown option name.
        """
        name = _ALIASES.get(name, name)
        if name not in _OPTIONS:
            raise KeyError(f"unknown config option {name!r}")
        return getattr(self, name)

    @staticmethod
    def _checked(name: str, value: Any) -> Any:
        if name not in _OPTIONS:
            raise TypeError(f"unknown config option {name!r}")
        if name == "cache_bytes":
            value = check_budget(value, name)
        elif name in (
            "num_threads",
            "io_concurrency",
            "io_process_concurrency",
            "io_retries",
            "buffer_pool_bytes",
            "coalesce_gap_bytes",
            "write_part_bytes",
        ):
            value = int(value)
            least = (
                0
                if name
                in ("io_retries", "buffer_pool_bytes", "coalesce_gap_bytes", "write_part_bytes")
                else 1
            )
            if value < least:
                raise ValueError(f"{name} must be >= {least}")
        elif name in (
            "write_empty_chunks",
            "read_missing_chunks",
            "confine_local_stores",
            "allow_pickle",
            "unsafe_partial_writes",
            "pipeline_fallback",
        ):
            value = bool(value)
        elif name == "array_order":
            if value not in ("C", "F"):
                raise ValueError(f"array_order must be 'C' or 'F', not {value!r}")
        elif name == "default_zarr_format":
            if value not in (2, 3) or isinstance(value, bool):
                raise ValueError(f"default_zarr_format must be 2 or 3, not {value!r}")
        elif name in ("target_shard_size_bytes", "json_indent", "coalesce_max_bytes"):
            least = 0 if name == "json_indent" else 1
            if value is not None and (isinstance(value, bool) or int(value) < least):
                raise ValueError(f"{name} must be None or an integer >= {least}")
            value = None if value is None else int(value)
        elif name == "shard_write_order":
            if value not in ("C", "morton"):
                raise ValueError("shard_write_order must be 'C' or 'morton'")
        elif name in ("io_timeout", "lock_timeout"):
            value = float(value)
            if not value > 0:
                raise ValueError(f"{name} must be > 0")
        elif name in LIMITS:
            value = _check_limit(name, value)
        return value

    def __reduce__(self) -> str:
        # Pickled by name (what follows the process's config, such as a codec bound to an
        # array's Options, does so in the process it is unpickled in).
        return "config"

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        """The shared thread pool.

        Returns
        -------
        concurrent.futures.ThreadPoolExecutor
            The pool of `num_threads` threads (a new one after `num_threads` changed).
        """
        with self._lock:
            if self._executor is None or self._executor_threads != self.num_threads:
                # The old pool is dropped, not shut down: a call in another thread may hold it
                # still and submit to it. Its idle threads exit once it is collected.
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    self.num_threads, thread_name_prefix="zarrcore", initializer=mark_pool_thread
                )
                self._executor_threads = self.num_threads
            return self._executor

    def io_executor(self) -> concurrent.futures.ThreadPoolExecutor:
        """The shared pool for blocking store calls that wait on I/O (reads of byte ranges
        through Store.reader, a read's Store.get_many): `io_concurrency` threads, apart from
        `executor()`'s, so that remote requests stay that many in flight while the compute
        threads decode. A call on it never waits for another call on it (one queued behind
        it would never run).

        Returns
        -------
        concurrent.futures.ThreadPoolExecutor
            The pool (a new one after `io_concurrency` changed).
        """
        with self._lock:
            if self._io_executor is None or self._io_threads != self.io_concurrency:
                # (Dropped, not shut down, as `executor`'s.)
                self._io_executor = concurrent.futures.ThreadPoolExecutor(
                    self.io_concurrency, thread_name_prefix="zarrcore-io"
                )
                self._io_threads = self.io_concurrency
            return self._io_executor

    def _after_fork_in_child(self) -> None:
        # The pool's threads, and whoever held the lock, do not exist in a forked child: its
        # first parallel call starts a pool of its own instead of queueing work that no
        # thread would ever run.
        self._lock = threading.Lock()
        self._executor = None
        self._executor_threads = 0
        self._io_executor = None
        self._io_threads = 0


_OPTIONS = frozenset(
    [
        "num_threads",
        "write_empty_chunks",
        "read_missing_chunks",
        "array_order",
        "default_zarr_format",
        "target_shard_size_bytes",
        "json_indent",
        "shard_write_order",
        "confine_local_stores",
        "allow_pickle",
        "unsafe_partial_writes",
        "buffer_pool_bytes",
        "cache_bytes",
        "io_concurrency",
        "io_process_concurrency",
        "io_timeout",
        "io_retries",
        "lock_timeout",
        "write_part_bytes",
        "coalesce_gap_bytes",
        "coalesce_max_bytes",
        "pipeline_fallback",
        *LIMITS,
    ]
)
# zarr-python's names of the options that mean the same here.
_ALIASES = {
    "array.write_empty_chunks": "write_empty_chunks",
    "array.read_missing_chunks": "read_missing_chunks",
    "array.allow_unsafe_pickle_decode": "allow_pickle",
    "array.order": "array_order",
    "array.target_shard_size_bytes": "target_shard_size_bytes",
    "threading.max_workers": "num_threads",
    "async.concurrency": "io_concurrency",
    "async.timeout": "io_timeout",
    "array.sharding_coalesce_max_gap_bytes": "coalesce_gap_bytes",
    "array.sharding_coalesce_max_bytes": "coalesce_max_bytes",
}


#: The options of zarrcore.config an array may set for itself (`array_options`).
ARRAY_OPTIONS = (
    "io_concurrency",
    "num_threads",
    "coalesce_gap_bytes",
    "coalesce_max_bytes",
    "shard_write_order",
)


class Options(Protocol):
    """How an array's requests run, as `array_options` gives them: zarrcore.config itself, or
    an ArrayOptions. `num_threads` bounds the threads of one request (the pool has
    config.num_threads); `coalesce_gap_bytes` and `coalesce_max_bytes` group a shard's byte
    ranges (codecs.sharding.coalesce); `io_concurrency` is the requests one store call keeps
    in flight; `shard_write_order` lays out written shards. `chose(name)`: whether an option
    was set rather than left at its default."""

    io_concurrency: int
    num_threads: int
    coalesce_gap_bytes: int
    coalesce_max_bytes: int | None
    shard_write_order: str

    def chose(self, name: str) -> bool: ...


class ArrayOptions:
    """The options of ARRAY_OPTIONS of an array that set some of them: its own as attributes
    (`own`), the others read through to zarrcore.config as it is when they are read."""

    io_concurrency: int
    num_threads: int
    coalesce_gap_bytes: int
    coalesce_max_bytes: int | None
    shard_write_order: str

    def __init__(self, own: Mapping[str, Any]) -> None:
        #: The values the array set, by option name.
        self.own = dict(own)
        for name, value in self.own.items():
            setattr(self, name, value)

    def __getattr__(self, name: str) -> Any:  # (only for the options the array did not set)
        if name in ARRAY_OPTIONS:
            return getattr(config, name)
        raise AttributeError(name)

    def chose(self, name: str) -> bool:
        """Did the array set option `name`, or zarrcore.config (Config.chose)?"""
        return name in self.own or config.chose(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrayOptions) and other.own == self.own

    def __hash__(self) -> int:
        return hash(frozenset(self.own.items()))

    def __repr__(self) -> str:
        return f"ArrayOptions({self.own!r})"


def checked_array_options(own: Mapping[str, Any]) -> dict[str, Any]:
    """The options of ARRAY_OPTIONS that `own` sets (None: not set), checked as Config.set
    checks them."""
    given = {name: value for name, value in own.items() if value is not None}
    unknown = sorted(set(given) - set(ARRAY_OPTIONS))
    if unknown:
        raise TypeError(
            f"unknown array options {unknown}: an array sets only {', '.join(ARRAY_OPTIONS)}"
        )
    return {name: Config._checked(name, value) for name, value in given.items()}


def array_options(own: Mapping[str, Any]) -> Options:
    """The Options of an array that sets `own` (`checked_array_options`): the one place where
    an array's own value, else zarrcore.config's, is chosen. An array that sets none reads
    zarrcore.config itself."""
    given = checked_array_options(own)
    return ArrayOptions(given) if given else config


class _Restore:
    """What Config.set returns: as a context manager, it restores the previous values."""

    def __init__(self, config: Config, previous: dict[str, Any], chosen: set[str]) -> None:
        # (and which of them had been set: the others are left at their defaults again)
        self._config, self._previous, self._chosen = config, previous, chosen

    def __enter__(self) -> Config:
        return self._config

    def __exit__(self, *exc: object) -> None:
        settings = self._config
        settings.set(self._previous)
        with settings._lock:
            settings._chosen -= set(self._previous) - self._chosen


config = Config()
at_fork_in_child(config._after_fork_in_child)
serve(config)
