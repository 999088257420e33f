"""A process forked after zarrcore has run its thread pool, taken key locks or read a remote
store (multiprocessing's fork start method, DataLoader workers) reads and writes normally: no
work queued for the parent's threads, no lock that only a vanished thread could release, no
request sent on the parent's event loop."""
import asyncio
import os
import threading
import time

import numpy as np
import pytest

import zarrcore
from _child import run_in_child
from zarrcore.runtime import _aio
from zarrcore.storage import FsspecStore, make_store

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")]


@pytest.mark.parametrize("shards", [None, (64, 64)], ids=["chunks", "shards"])
def test_child_uses_its_own_pool(tmp_path, shards):
    zarrcore.config.set(num_threads=2)
    data = np.arange(128 * 128, dtype="float32").reshape(128, 128)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, dtype="float32",
                              chunks=(16, 16), shards=shards)
    a[...] = data  # the pool's threads start in the parent
    np.testing.assert_array_equal(a[...], data)

    def child():
        np.testing.assert_array_equal(a[...], data)
        a[10:100, 5:70] = -1
        expect = data.copy()
        expect[10:100, 5:70] = -1
        np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "a"))[...], expect)

    assert run_in_child(child) == 0
    assert (a[10:100, 5:70] == -1).all()  # what the child wrote


def test_child_takes_a_key_lock_the_parent_held_at_fork(tmp_path):
    """A thread of the parent holds a key's lock when the process forks; once the parent
    releases it, the child can take it (the child's copy of the descriptor keeps nothing)."""
    store = zarrcore.LocalStore(tmp_path / "s")
    held, release = threading.Event(), threading.Event()

    def holder():
        with store.lock("c/0/0"):
            held.set()
            release.wait()

    t = threading.Thread(target=holder)
    t.start()
    held.wait()

    def child():
        with store.lock("c/0/0"):
            pass

    threading.Timer(0.5, release.set).start()
    status = run_in_child(child)
    t.join()
    assert status == 0
    with store.lock("c/0/0"):  # and the parent still can
        pass


def _fork_while(busy, child, forks=40):
    """Fork `forks` times while `busy()` runs in a loop on another thread; every child runs
    `child()` and must finish within its deadline (a lock the busy thread held at the fork and
    nobody in the child can release would hang it)."""
    stop = threading.Event()
    failures = []

    def loop():
        try:
            while not stop.is_set():
                busy()
        except BaseException as e:  # (the parent's own reads must keep working too)
            failures.append(e)

    t = threading.Thread(target=loop)
    t.start()
    try:
        statuses = [run_in_child(child, timeout=10) for _ in range(forks)]
    finally:
        stop.set()
        t.join()
    assert not failures
    assert statuses == [0] * forks


def _small_chunks_array(store=None):
    # Stored big-endian: decoded, so files of them are read through a cache (files stored as
    # the items lie in memory are read without it).
    data = np.arange(64 * 64, dtype="int32").reshape(64, 64)
    a = zarrcore.create_array(zarrcore.MemoryStore() if store is None else store,
                              shape=data.shape, dtype="int32", chunks=(4, 4), compressors=None,
                              serializer={"name": "bytes", "configuration": {"endian": "big"}})
    a[...] = data
    return a, data


@pytest.mark.parametrize("where", ["memory", "directory"])
def test_fork_while_a_thread_reads_through_a_cached_handle(tmp_path, where):
    """The chunk cache's locks are taken across a fork, so a child never starts with one held
    by a thread it does not have."""
    from zarrcore.array_api import ArrayHandle

    a, data = _small_chunks_array(None if where == "memory" else str(tmp_path / "a"))
    if where == "directory":
        time.sleep(1.1)  # chunks of files changed within the last second are not cached
    # Room for a few chunks only: the busy reader inserts and evicts all the time.
    handle = ArrayHandle(a, cache_bytes=8 * 4 * 4 * 4)
    rng = np.random.default_rng(0)

    def busy():
        i, j = rng.integers(0, 32, 2)
        np.testing.assert_array_equal(handle.read((i, j), (32, 32)), data[i:i + 32, j:j + 32])

    def child():
        np.testing.assert_array_equal(handle.read((0, 0), (64, 64)), data)

    _fork_while(busy, child)
    assert handle.cache_info()["evictions"] > 0


def test_fork_while_a_thread_writes_a_memory_store():
    """A MemoryStore's table and key locks are taken across a fork; the child drops the key
    locks of the parent's other threads and writes the keys they held."""
    a, data = _small_chunks_array()
    rng = np.random.default_rng(1)

    def busy():
        i, j = rng.integers(0, 60, 2)
        a[i:i + 3, j:j + 3] = data[i:i + 3, j:j + 3]  # a read-modify-write under key locks

    def child():
        a[...] = -data
        np.testing.assert_array_equal(a[...], -data)

    _fork_while(busy, child)
    np.testing.assert_array_equal(a[...], data)


def test_child_reads_into_the_pool_its_parent_kept(tmp_path):
    """The output blocks the parent kept are the child's copies: the child's reads reuse them
    (no page fault a read beyond the copy-on-write of its first ones), and what it writes into
    them never shows in the parent's arrays, live or read later."""
    import resource  # (POSIX, as os.fork)

    from zarrcore._native import memory as _memory

    data = np.random.default_rng(0).standard_normal((16, 64, 256), dtype=np.float32)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, dtype="float32",
                              chunks=(1, 64, 256))  # 64 KiB samples: pool blocks
    a[...] = data
    live = a[0]
    for t in range(16):
        x = a[t]
    del x
    assert _memory.kept_bytes() > 0

    def child():
        faults = []
        for t in [*range(16)] * 4:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            x = a[t]
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
            np.testing.assert_array_equal(x, data[t])
            x[...] = -1
        assert sum(faults[16:]) < 16  # of 16 pages a read
        np.testing.assert_array_equal(live, data[0])
        live[...] = -2

    assert run_in_child(child) == 0
    np.testing.assert_array_equal(live, data[0])
    for t in range(16):
        np.testing.assert_array_equal(a[t], data[t])


def test_fork_while_a_thread_takes_and_gives_pool_blocks():
    """The pool's lock is taken across a fork: a child never starts with it held by a thread
    it does not have, and takes blocks of each kind."""
    from zarrcore._native import memory as _memory

    sizes = [_memory.BLOCK_MIN_BYTES, _memory.PIECE_MIN_BYTES, _memory.POOL_MIN_BYTES]

    def busy():
        held = [_memory.empty((n,), np.uint8) for n in sizes]
        for k, arr in enumerate(held):
            arr.fill(k)

    def child():
        held = [_memory.empty((n,), np.uint8) for n in sizes]
        for k, arr in enumerate(held):
            arr.fill(k + 1)
        assert all((arr == k + 1).all() for k, arr in enumerate(held))

    _fork_while(busy, child)
# -- remote stores -------------------------------------------------------------------------
def _s3fs_store(kind, server, bucket):
    if kind == "s3fs":  # fsspec's loop, as s3fs' own sync calls use it
        return FsspecStore(server.s3fs(), f"{bucket}/f.zarr", single_writer=True)
    zarr = pytest.importorskip("zarr", reason="zarr-python is not installed")
    # An asynchronous filesystem on zarr-python's loop, as zarr.storage.FsspecStore has it.
    return make_store(zarr.storage.FsspecStore(server.s3fs(True), path=f"{bucket}/f.zarr"))


@pytest.mark.parametrize("kind", ["s3fs", "zarr-python"])
def test_child_forked_after_an_fsspec_store_read_uses_its_own_filesystem(s3_bucket, kind):
    """The parent's fsspec loop thread and sessions are gone in a forked child: the store
    opens the filesystem anew there, so a DataLoader-style worker reads and writes, and
    nothing waits forever on a loop that no thread runs."""
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    server, bucket = s3_bucket
    store = _s3fs_store(kind, server, bucket)
    data = np.arange(32 * 16, dtype="int32").reshape(32, 16)
    a = zarrcore.create_array(store, name="a", shape=data.shape, dtype="int32", chunks=(8, 8),
                              shards=(16, 16))
    a[...] = data
    np.testing.assert_array_equal(a[...], data)  # the parent's loop and sessions are in use

    def child():
        np.testing.assert_array_equal(a[3:30, 2:15], data[3:30, 2:15])
        if kind == "s3fs":
            a[0, :] = -1

    assert run_in_child(child, timeout=30) == 0
    if kind == "s3fs":
        data[0, :] = -1
    np.testing.assert_array_equal(a[...], data)  # and the parent's store still works


def test_child_forked_after_an_http_fsspec_store_read_uses_its_own_session(http_server):
    fsspec = pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp")
    data = np.arange(100, dtype="float64")
    zarrcore.create_array(f"{http_server.root}/forked.zarr", shape=(100,), dtype="float64",
                          chunks=(10,))[...] = data
    store = FsspecStore(fsspec.filesystem("http"), f"{http_server.url}/forked.zarr")
    a = zarrcore.open_array(store, mode="r")
    np.testing.assert_array_equal(a[...], data)

    def child():
        np.testing.assert_array_equal(a[...], data)

    assert run_in_child(child, timeout=30) == 0


def test_child_forked_with_remote_requests_in_flight_has_every_request_slot(s3_bucket,
                                                                            io_config):
    """Requests the parent had in flight at the fork never end in the child: their slots of
    the process's bound are not the child's to wait for."""
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    server, bucket = s3_bucket
    io_config.set(io_process_concurrency=1)
    store = FsspecStore(server.s3fs(), bucket)
    store.set("k", b"v")
    release = asyncio.run_coroutine_threadsafe(_hold_a_slot(), _aio.io_loop())
    while _aio.request_slots.held < 1:  # the parent's only slot is taken
        time.sleep(0.01)

    def child():
        assert store.get("k") == b"v"
        assert _aio.run(asyncio.sleep(0, result=7)) == 7  # a loop of its own

    try:
        assert run_in_child(child, timeout=30) == 0
    finally:
        release.cancel()


async def _hold_a_slot():
    async with _aio.request_slot():
        await asyncio.sleep(60)


def test_child_that_cannot_open_the_filesystem_anew_is_told_to_spawn():
    memory = pytest.importorskip("fsspec.implementations.memory")
    MemoryFileSystem = memory.MemoryFileSystem

    parent = os.getpid()

    class OnlyInParent(MemoryFileSystem):
        def __init__(self, *args, **kwargs):
            if os.getpid() != parent:
                raise RuntimeError("made only in the parent")
            super().__init__(*args, **kwargs)

    store = FsspecStore(OnlyInParent(skip_instance_cache=True), "/only-parent")
    store.set("k", b"v")
    assert store.get("k") == b"v"

    def child():
        with pytest.raises(zarrcore.errors.StoreError,
                           match="'spawn' or 'forkserver'.*DataLoader"):
            store.get("k")

    assert run_in_child(child, timeout=20) == 0


def test_a_wait_on_a_loop_whose_thread_the_child_lacks_ends_at_once():
    """A loop the parent runs on a thread of its own (zarr-python's, fsspec's) is a loop no
    thread runs in a forked child: a wait on it there raises instead of hanging."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        assert _aio.run(asyncio.sleep(0, result=1), loop) == 1

        def child():
            started = time.monotonic()
            waiting = asyncio.sleep(0)
            with pytest.raises(zarrcore.errors.StoreError,
                           match="'spawn' or 'forkserver'.*DataLoader"):
                _aio.run(waiting, loop)
            waiting.close()
            assert time.monotonic() - started < 5

        assert run_in_child(child, timeout=20) == 0
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
