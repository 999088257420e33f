"""Stores: LocalStore and MemoryStore behave alike; LocalStore writes atomically and locks
across processes."""
import multiprocessing
import os
import threading
import time

import pytest

import zarrcore
from zarrcore.errors import InvalidKeyError, ReadOnlyError, ZarrcoreError
from zarrcore.storage import LocalStore, MemoryStore, validate_key

BAD_KEYS = [
    "", "/abs", "/", "a//b", "a/", "//", "..", "../x", "a/../b", "a/..", ".", "./a", "a/./b",
    "a\\b", "..\\x", "a\x00b",
]


# -- the Store interface on both kinds ----------------------------------------------------------
def test_get_set_exists_delete(store):
    assert store.get("a") is None
    assert not store.exists("a")
    store.set("a", b"hello")
    assert store.exists("a")
    assert store.get("a") == b"hello"
    assert isinstance(store.get("a"), bytes)
    store.set("a", b"replaced")
    assert store.get("a") == b"replaced"
    store.set("deep/er/key", bytearray(b"xyz"))
    assert store.get("deep/er/key") == b"xyz"
    store.set("mv", memoryview(b"view"))
    assert store.get("mv") == b"view"
    store.set("empty", b"")
    assert store.get("empty") == b"" and store.exists("empty")
    store.delete("a")
    assert store.get("a") is None and not store.exists("a")
    store.delete("a")  # deleting a missing key is fine
    store.delete("never/was/here")
    # A "directory" is not a key.
    assert not store.exists("deep") and store.get("deep") is None
    assert store.getsize("deep/er/key") == 3 and store.getsize("nope") is None


def test_binary_values_round_trip(store):
    payload = bytes(range(256)) * 1000
    store.set("bin", payload)
    assert store.get("bin") == payload


def test_byte_ranges(store):
    data = bytes(range(100))
    store.set("k", data)
    cases = [
        (0, 10), (10, 20), (90, 100), (90, 200), (95, None), (None, 5), (0, 0), (50, 40),
        (-10, None), (-1, None), (-100, None), (-200, None), (-10, -5), (200, None), (None, None),
        (0, 100),
    ]
    for start, stop in cases:
        assert store.get("k", start, stop) == data[start:stop], (start, stop)
    assert store.get_ranges("k", [(0, 3), (-3, None), (10, 12)]) == [data[:3], data[-3:],
                                                                   data[10:12]]
    assert store.get_ranges("missing", [(0, 1)]) is None
    assert store.get("missing", 0, 10) is None
    assert store.get("missing", -4, None) is None


def test_large_range_reads_reuse_kept_memory(tmp_path):
    # Ranges of a MiB and more are read into the pool's kept blocks, not fresh memory.
    import numpy as np

    from zarrcore._native import memory as _memory

    store = LocalStore(str(tmp_path))
    data = np.random.default_rng(0).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    store.set("big", data)
    with zarrcore.config.set(buffer_pool_bytes=0):  # (starts empty)
        zarrcore.config.set(buffer_pool_bytes=64 << 20)
        parts = store.get_ranges("big", [(0, None), (5, 9), (-(2 << 20), None), (1, 1 << 30)])
        assert [bytes(p) for p in parts] == [data, data[5:9], data[-(2 << 20):], data[1:]]
        with pytest.raises(TypeError):
            memoryview(parts[0])[0] = 1  # read-only
        kept = _memory.kept_bytes()
        del parts
        given_back = _memory.kept_bytes()
        assert given_back >= kept + (3 << 20)
        again = store.get_ranges("big", [(0, None)])
        assert again is not None and bytes(again[0]) == data
        assert _memory.kept_bytes() < given_back  # taken again


def test_list_prefix_and_list_dir(store):
    for key in ["zarr.json", "a/zarr.json", "a/c/0/0", "a/c/0/1", "a/c/1/0", "ab/zarr.json",
                "b/x/y/z", "top"]:
        store.set(key, b"1")
    assert sorted(store.list_prefix("")) == sorted(
        ["zarr.json", "a/zarr.json", "a/c/0/0", "a/c/0/1", "a/c/1/0", "ab/zarr.json",
         "b/x/y/z", "top"])
    # A prefix is a path: "a" does not take in "ab".
    assert sorted(store.list_prefix("a")) == ["a/c/0/0", "a/c/0/1", "a/c/1/0", "a/zarr.json"]
    assert sorted(store.list_prefix("a/")) == sorted(store.list_prefix("a"))
    assert sorted(store.list_prefix("a/c/0")) == ["a/c/0/0", "a/c/0/1"]
    assert list(store.list_prefix("nothing")) == []
    assert list(store.list_prefix("top")) == []  # a key is no prefix of itself
    assert sorted(store.list_dir("")) == ["a", "ab", "b", "top", "zarr.json"]
    assert sorted(store.list_dir("a")) == ["c", "zarr.json"]
    assert sorted(store.list_dir("a/c")) == ["0", "1"]
    assert sorted(store.list_dir("b/x")) == ["y"]
    assert list(store.list_dir("nothing")) == []
    store.delete_prefix("a")
    assert list(store.list_prefix("a")) == []
    assert store.exists("ab/zarr.json") and store.exists("zarr.json")


@pytest.mark.parametrize("key", BAD_KEYS)
def test_invalid_keys_rejected(store, key):
    for call in (lambda: store.get(key), lambda: store.set(key, b"x"), lambda: store.exists(key),
                 lambda: store.delete(key)):
        with pytest.raises(InvalidKeyError) as info:
            call()
        assert isinstance(info.value, ZarrcoreError)


@pytest.mark.parametrize("key", BAD_KEYS)
def test_validate_key(key):
    with pytest.raises(InvalidKeyError):
        validate_key(key)


@pytest.mark.parametrize("prefix", ["../x", "/abs", "a//b", "a/../..", "./a"])
def test_invalid_prefixes_rejected(store, prefix):
    with pytest.raises(InvalidKeyError):
        list(store.list_prefix(prefix))
    with pytest.raises(InvalidKeyError):
        list(store.list_dir(prefix))


@pytest.mark.parametrize("key", [None, 3, b"bytes"])
def test_non_string_keys_rejected(store, key):
    with pytest.raises(InvalidKeyError):
        store.set(key, b"x")


def test_local_store_never_escapes_root(tmp_path):
    root = tmp_path / "root"
    s = LocalStore(root)
    (tmp_path / "secret").write_bytes(b"s")
    for key in ("../secret", "a/../../secret", str(tmp_path / "secret")):
        with pytest.raises(InvalidKeyError):
            s.get(key)
        with pytest.raises(InvalidKeyError):
            s.set(key, b"overwritten")
    assert (tmp_path / "secret").read_bytes() == b"s"
    assert not (tmp_path / "overwritten").exists()


def test_valid_unusual_keys(store):
    for key in ["a.b", "...", "a/...b", ".hidden", "c/0.0.0", "x y", "ü/ñ", "a-b_c"]:
        store.set(key, key.encode())
        assert store.get(key) == key.encode()
        assert key in list(store.list_prefix(""))


def test_read_only_stores(tmp_path):
    LocalStore(tmp_path).set("k", b"v")
    for s in (LocalStore(tmp_path, read_only=True), MemoryStore({"k": b"v"}, read_only=True)):
        assert s.get("k") == b"v"
        with pytest.raises(ReadOnlyError):
            s.set("k", b"w")
        with pytest.raises(ReadOnlyError):
            s.delete("k")
        assert s.get("k") == b"v"


def test_memory_store_shares_dict():
    d = {}
    s = MemoryStore(d)
    s.set("a/b", b"1")
    assert d == {"a/b": b"1"}
    assert MemoryStore(d).get("a/b") == b"1"
    assert MemoryStore(d) == s and hash(MemoryStore(d)) == hash(s)
    assert MemoryStore() != MemoryStore()


def test_local_store_equality(tmp_path):
    assert LocalStore(tmp_path) == LocalStore(str(tmp_path) + "/")
    assert LocalStore(tmp_path / "a") != LocalStore(tmp_path / "b")


def test_local_store_files_are_plain_files(tmp_path):
    s = LocalStore(tmp_path)
    s.set("a/b/c", b"data")
    assert (tmp_path / "a" / "b" / "c").read_bytes() == b"data"
    (tmp_path / "ext").write_bytes(b"written elsewhere")
    assert s.get("ext") == b"written elsewhere"


# -- atomic writes -------------------------------------------------------------------------------
def _temp_files(root):
    out = []
    for dirpath, _, files in os.walk(root):
        out += [os.path.join(dirpath, f) for f in files if f.startswith(".") or "tmp" in f]
    return out


def test_no_temp_files_left(tmp_path):
    s = LocalStore(tmp_path)
    for i in range(50):
        s.set(f"k{i % 5}", os.urandom(1000 + i))
        s.set(f"d/k{i % 3}", b"x" * i)
    assert _temp_files(tmp_path) == []
    assert sorted(s.list_prefix("")) == sorted(
        [f"k{i}" for i in range(5)] + [f"d/k{i}" for i in range(3)])


def test_failed_write_leaves_old_value_and_no_temp_file(tmp_path):
    s = LocalStore(tmp_path)
    s.set("k", b"old")

    class Exploding:
        """Not a bytes-like object: the write fails after the temp file is opened."""

    with pytest.raises(TypeError):
        s.set("k", Exploding())
    assert s.get("k") == b"old"
    assert _temp_files(tmp_path) == []
    assert os.listdir(tmp_path) == ["k"]


def _writer_loop(root, key, payloads, started, n):
    s = LocalStore(root)
    started.set()
    for i in range(n):
        s.set(key, payloads[i % len(payloads)])


@pytest.mark.slow
def test_reader_never_sees_partial_data(tmp_path):
    """One process rewrites a key with large values while this one reads: every read is one
    whole value."""
    payloads = [bytes([i]) * (2 << 20) for i in (1, 2, 3)]
    s = LocalStore(tmp_path)
    s.set("big", payloads[0])
    ctx = multiprocessing.get_context("spawn")
    started = ctx.Event()
    writer = ctx.Process(target=_writer_loop,
                         args=(str(tmp_path), "big", payloads, started, 150))
    writer.start()
    assert started.wait(120)
    reads = 0
    while writer.is_alive():
        data = s.get("big")
        assert data in payloads, (len(data), data[:1], data[-1:])
        # Nor does a listing ever show a half-written file.
        assert list(s.list_prefix("")) == ["big"]
        assert list(s.list_dir("")) == ["big"]
        reads += 1
    writer.join(120)
    assert writer.exitcode == 0
    assert reads > 3
    assert s.get("big") == payloads[149 % 3]
    assert _temp_files(tmp_path) == []


def test_reader_never_sees_partial_data_threads(tmp_path):
    payloads = [bytes([i]) * (1 << 20) for i in (4, 5)]
    s = LocalStore(tmp_path)
    s.set("k", payloads[0])
    stop = threading.Event()
    errors = []

    def write():
        i = 0
        while not stop.is_set():
            s.set("k", payloads[i % 2])
            i += 1

    def read():
        for _ in range(200):
            data = s.get("k")
            if data not in payloads:
                errors.append(len(data))
        stop.set()

    threads = [threading.Thread(target=write), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


# -- locks ---------------------------------------------------------------------------------------
N_INCREMENTS = 40
N_PROCESSES = 4


def _increment(root, n):
    s = LocalStore(root)
    for _ in range(n):
        with s.lock("counter"):
            value = int(s.get("counter"))
            # Widen the window in which an unlocked peer would read the same value.
            time.sleep(0.0005)
            s.set("counter", str(value + 1).encode())


@pytest.mark.slow
def test_lock_across_processes(tmp_path):
    s = LocalStore(tmp_path)
    s.set("counter", b"0")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_increment, args=(str(tmp_path), N_INCREMENTS))
             for _ in range(N_PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * N_PROCESSES
    assert int(s.get("counter")) == N_INCREMENTS * N_PROCESSES
    # Lock files live outside the store, so peers listing it never see them.
    assert list(s.list_prefix("")) == ["counter"]


def test_lock_across_threads(store):
    store.set("counter", b"0")

    def work():
        for _ in range(100):
            with store.lock("counter"):
                value = int(store.get("counter"))
                store.set("counter", str(value + 1).encode())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert int(store.get("counter")) == 400


def test_lock_is_per_key(tmp_path):
    s = LocalStore(tmp_path)
    acquired = threading.Event()

    def other():
        with s.lock("b"):
            acquired.set()

    with s.lock("a"):
        t = threading.Thread(target=other)
        t.start()
        assert acquired.wait(10), "a lock on another key must not wait"
        t.join()


def test_lock_released_on_error(tmp_path):
    s = LocalStore(tmp_path)
    with pytest.raises(RuntimeError):
        with s.lock("k"):
            raise RuntimeError("boom")
    done = threading.Event()

    def take():
        with s.lock("k"):
            done.set()

    t = threading.Thread(target=take)
    t.start()
    assert done.wait(10)
    t.join()


def _concurrent_array_writer(root, row):
    a = zarrcore.open_array(root, mode="r+")
    for col in range(a.shape[1]):
        a[row, col] = row * 100 + col + 1


@pytest.mark.slow
def test_concurrent_partial_chunk_writes_from_processes(tmp_path):
    """Processes write disjoint elements of the same chunks: the chunk locks keep every one."""
    import numpy as np

    a = zarrcore.create_array(str(tmp_path), shape=(4, 6), dtype="int32", chunks=(4, 6))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_concurrent_array_writer, args=(str(tmp_path), r))
             for r in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 4
    expected = np.array([[r * 100 + c + 1 for c in range(6)] for r in range(4)], dtype="int32")
    np.testing.assert_array_equal(a[...], expected)


def test_make_store_forms(tmp_path):
    from zarrcore.storage import make_store

    assert isinstance(make_store(None), MemoryStore)
    assert isinstance(make_store({}), MemoryStore)
    assert isinstance(make_store(str(tmp_path)), LocalStore)
    assert isinstance(make_store(tmp_path), LocalStore)
    assert make_store("file://" + str(tmp_path)) == LocalStore(tmp_path)
    s = MemoryStore()
    assert make_store(s) is s
    assert make_store(str(tmp_path), read_only=True).read_only
    with pytest.raises(TypeError):
        make_store(1.5)


def test_concurrent_partial_chunk_writes_from_threads(tmp_path):
    """Threads, each with its own store and array objects, write disjoint elements of the same
    chunk: every element survives."""
    import numpy as np

    zarrcore.create_array(str(tmp_path), shape=(6, 8), dtype="int32", chunks=(6, 8))
    memory = {}
    zarrcore.create_array(memory, shape=(6, 8), dtype="int32", chunks=(6, 8))

    def work(row, make_store):
        a = zarrcore.open_array(make_store(), mode="r+")
        for col in range(8):
            a[row, col] = row * 100 + col + 1

    expected = np.array([[r * 100 + c + 1 for c in range(8)] for r in range(6)], dtype="int32")
    for make_store in (lambda: LocalStore(tmp_path), lambda: MemoryStore(memory)):
        threads = [threading.Thread(target=work, args=(r, make_store)) for r in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        np.testing.assert_array_equal(zarrcore.open_array(make_store())[...], expected)
