"""Array handles on memory stores: MemoryStore keeps its data in C (zarrcore._native.memstore), so
handles read and write it from threads without the GIL while Python code reads and writes it
too. Random regions against numpy, concurrent writers and readers, errors."""
import pickle
import threading

import numpy as np
import pytest

import zarrcore
from zarrcore._native.memstore import NativeMemoryMap
from zarrcore.errors import (
    ChecksumError, ChunkDecodeError, ReadOnlyError, SelectionError, ShardIndexError, ZarrcoreError,
)
from zarrcore.storage.memory import MemoryStore

ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}


def random_box(rng, shape):
    start = [int(rng.integers(0, n)) for n in shape]
    count = [int(rng.integers(1, n - s + 1)) for n, s in zip(shape, start)]
    return start, count, tuple(slice(s, s + c) for s, c in zip(start, count))


@pytest.mark.parametrize("shards", [None, (12, 20)], ids=["chunks", "shards"])
@pytest.mark.parametrize("compressors", [[], [ZSTD, CRC], [GZIP]], ids=["raw", "zstd-crc", "gzip"])
@pytest.mark.parametrize("cache_bytes", [0, 1 << 16], ids=["", "cached"])
def test_random_regions_match_numpy(shards, compressors, cache_bytes):
    a = zarrcore.create_array(MemoryStore(), shape=(29, 41), dtype=">i4", chunks=(6, 5),
                              shards=shards, compressors=compressors, fill_value=3)
    ref = np.full(a.shape, 3, a.dtype)
    h = a.native_handle(cache_bytes=cache_bytes)
    rng = np.random.default_rng(0)
    for _ in range(150):
        start, count, sel = random_box(rng, a.shape)
        if rng.random() < 0.5:
            value = rng.integers(0, 50, size=count).astype(a.dtype)
            if rng.random() < 0.2:
                value[...] = 3  # all fill: chunks are deleted
            (h.write(start, value) if rng.random() < 0.5 else a.__setitem__(sel, value))
            ref[sel] = value
        else:
            np.testing.assert_array_equal(h.read(start, count), ref[sel])
            np.testing.assert_array_equal(a[sel], ref[sel])
    np.testing.assert_array_equal(a[...], ref)
    np.testing.assert_array_equal(h.read_chunk((4, 8)), np.pad(ref[24:, 40:], ((0, 1), (0, 4)),
                                                               constant_values=3))
    if cache_bytes:
        assert h.cache_info()["hits"] > 0 and h.cache_info()["stale"] > 0


def test_named_stores_share_the_map_and_pickle():
    a = zarrcore.create_array("memory://array-api-shared", shape=(10,), dtype="u2", chunks=(4,))
    h = a.native_handle()
    h.write((2,), np.arange(5, dtype="u2"))
    b = zarrcore.open_array("memory://array-api-shared")
    assert b[...].tolist() == [0, 0, 0, 1, 2, 3, 4, 0, 0, 0]
    store = pickle.loads(pickle.dumps(MemoryStore()))
    assert isinstance(store.native_memory, NativeMemoryMap)
    data = store.native_memory
    data["k"] = b"v"
    copy = pickle.loads(pickle.dumps(data))
    assert copy.items() == [("k", b"v")] and "k" in copy and len(copy) == 1
    del copy["k"]
    assert copy.get("k") is None and list(copy) == [] and data["k"] == b"v"
    with pytest.raises(KeyError):
        copy["k"]


@pytest.mark.parametrize("shards", [None, (8, 16)], ids=["chunks", "shards"])
def test_native_and_python_writers_lose_no_update(shards):
    """Threads writing disjoint single items of the same chunks, half through the handle
    (read-modify-writes in C under the store's key lock) and half through a[...] (Python's
    read-modify-writes under MemoryStore.lock): every item lands."""
    a = zarrcore.create_array(MemoryStore(), shape=(8, 16), dtype="i4",
                              chunks=(4, 4) if shards else (8, 16), shards=shards)
    h = a.native_handle()
    cells = [(i, j) for i in range(8) for j in range(16)]

    def work(k):
        for i, j in cells[k::4]:
            if k % 2:
                h.write((i, j), np.full((1, 1), 1 + i * 16 + j, "i4"))
            else:
                a[i, j] = 1 + i * 16 + j

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(a[...], 1 + np.arange(128, dtype="i4").reshape(8, 16))


def test_reads_without_the_gil_while_python_rewrites_chunks():
    """A Python thread keeps replacing whole chunks (all 1 or all 2); reads through the
    handle, with the GIL released, always see each chunk whole, old or new."""
    a = zarrcore.create_array(MemoryStore(), shape=(32, 32), dtype="u1", chunks=(8, 8),
                              shards=(16, 16), fill_value=0)
    a[...] = 1
    h = a.native_handle(cache_bytes=8 * 8 * 4)
    stop = threading.Event()

    def writer():
        v = 1
        while not stop.is_set():
            v = 3 - v
            a[...] = v

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(300):
            out = h.read((0, 0), (32, 32))
            blocks = out.reshape(4, 8, 4, 8).transpose(0, 2, 1, 3).reshape(16, 64)
            assert ((blocks == blocks[:, :1]).all(axis=1)).all()
            assert set(np.unique(out)) <= {1, 2}
    finally:
        stop.set()
        t.join()


def test_errors_name_their_key():
    store = MemoryStore()
    a = zarrcore.create_array(store, shape=(8, 8), dtype="i4", chunks=(4, 4),
                              compressors=[ZSTD, CRC])
    a[...] = 1
    h = a.native_handle()
    data = bytearray(store.native_memory["c/1/0"])
    data[3] ^= 0xFF
    store.native_memory["c/1/0"] = bytes(data)
    with pytest.raises(ChecksumError, match="chunk 'c/1/0'"):
        h.read((0, 0), (8, 8))
    store.native_memory["c/1/0"] = b"xy"
    with pytest.raises(ChunkDecodeError, match="chunk 'c/1/0'"):
        h.read((4, 0), (1, 1))
    with pytest.raises(ChunkDecodeError, match="chunk 'c/1/0'"):
        h.write((4, 0), np.zeros((1, 1), np.int32))
    with pytest.raises(SelectionError, match="outside the array"):
        h.read((8, 0), (1, 1))
    s = zarrcore.create_array(store, name="s", shape=(8, 8), dtype="i4", chunks=(2, 2),
                              shards=(4, 4))
    s[...] = 2
    hs = s.native_handle()
    blob = bytearray(store.native_memory["s/c/0/1"])
    blob[-10] ^= 1
    store.native_memory["s/c/0/1"] = bytes(blob)
    with pytest.raises(ChecksumError, match="chunk 's/c/0/1': shard index"):
        hs.read((0, 4), (2, 2))
    store.native_memory["s/c/0/1"] = b"short"
    with pytest.raises(ShardIndexError, match="shorter than its"):
        hs.write((0, 4), np.zeros((1, 1), np.int32))
    hs.close()
    with pytest.raises(ZarrcoreError, match="handle is closed"):
        hs.read((0, 0), (1, 1))
    ro = zarrcore.open_array(MemoryStore(store.native_memory, read_only=True), path="s")
    with pytest.raises(ReadOnlyError):
        ro.native_handle().write((0, 0), np.zeros((1, 1), np.int32))


def test_memory_store_over_a_dict_is_refused():
    a = zarrcore.create_array(MemoryStore({}), shape=(4,), dtype="u1", chunks=(2,))
    with pytest.raises(ZarrcoreError, match="MemoryStore holding its own data"):
        a.native_handle()
