"""A hit of the decoded-chunk cache on a file means the very bytes its entry was decoded from:
the stored bytes are compared by a hash keyed with a secret of the cache (of the shared table,
which every process using it holds), so no pair of chunks can be built offline to hash alike.
The unkeyed hash before it could be fooled: a word equal to one of its constants multiplied a
lane by 0, and two chunks built so were served one for the other. Every read is compared with
numpy."""
import os
import struct
import sys
import time

import numpy as np
import pytest

import zarrcore
from zarrcore._native.cache import ChunkCache
from zarrcore.array_api import CACHE_SETTLE_SECONDS

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the shared cache needs Linux (memfd_create)")
BIG = {"name": "bytes", "configuration": {"endian": "big"}}  # (stored bytes != items: cached)

# The unkeyed 64-bit hash the cache compared stored bytes by (csrc/zc_hash64.c, removed).
M64 = (1 << 64) - 1
K1, K2, K3, K4 = (0x9e3779b97f4a7c15, 0xd6e8feb86659fd93, 0xff51afd7ed558ccd,
                  0xc4ceb9fe1a85ec53)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _step(acc, w0, w1):
    product = (w0 ^ K1) * (w1 ^ K2 ^ acc)
    return ((product ^ (product >> 64)) + _rotl(acc, 29) + w0 + _rotl(w1, 32)) & M64


def _mix(h):
    h = (h ^ (h >> 33)) * K3 & M64
    h = (h ^ (h >> 33)) * K4 & M64
    return h ^ (h >> 33)


def _old_hash(data):
    """The old hash of `data` (whole 64-byte blocks only, words little-endian)."""
    assert len(data) % 64 == 0
    words = struct.unpack(f"<{len(data) // 8}Q", data)
    lanes = [K1, K2, K3, K4]
    for block in range(0, len(words), 8):
        for lane in range(4):
            lanes[lane] = _step(lanes[lane], words[block + 2 * lane], words[block + 2 * lane + 1])
    h = (_mix(K4 ^ len(data) ^ lanes[0]) * K1 + _rotl(_mix(lanes[1]), 17)) & M64
    h = (_mix(h ^ lanes[2]) * K2 + _rotl(_mix(lanes[3]), 41)) & M64
    return _mix(h)


def _colliding_pair():
    """Two different 128-byte chunks of one old hash: the second lane's first word of each
    block is K1, so its product is 0 and its state takes the other word in by addition only;
    the second block's other word makes up for the first's change."""
    words = list(range(1, 17))
    words[2] = words[10] = K1
    other = list(words)
    other[3] += 1
    first, changed = _step(K2, K1, words[3]), _step(K2, K1, other[3])
    other[11] = _rotl((_rotl(first, 29) + _rotl(words[11], 32) - _rotl(changed, 29)) & M64, 32)
    pair = struct.pack("<16Q", *words), struct.pack("<16Q", *other)
    assert pair[0] != pair[1] and _old_hash(pair[0]) == _old_hash(pair[1])
    return pair


def test_a_pair_the_old_hash_could_not_tell_apart_hashes_apart():
    one, two = _colliding_pair()
    cache = ChunkCache(1 << 16, 128, 1)
    assert cache.content_hash(one) != cache.content_hash(two)


def test_each_cache_keys_its_hash_with_a_secret_of_its_own():
    one, _ = _colliding_pair()
    hashes = {ChunkCache(1 << 16, 128, 1).content_hash(one) for _ in range(8)}
    assert len(hashes) == 8


@linux_only
def test_a_shared_table_keys_its_hash_alike_in_every_process_using_it():
    """The key is the table's, kept in its header: a cache opening the table (here in this
    process, as another process does) hashes as its creator does; another table does not."""
    one, _ = _colliding_pair()
    made = ChunkCache(1 << 16, 128, 1, shared=True)
    opened = ChunkCache(1 << 16, 128, 1, shared=made.shared_ref)
    assert opened.shared_ref == made.shared_ref
    other = ChunkCache(1 << 16, 128, 1, shared=True)
    assert made.content_hash(one) == opened.content_hash(one) != other.content_hash(one)


@pytest.mark.skipif(sys.byteorder != "little", reason="the old hash read words in the "
                                                      "machine's order: the pair is built "
                                                      "little-endian")
@pytest.mark.parametrize("shards", [None, (16,)], ids=["chunks", "shards"])
@pytest.mark.parametrize("route", ["handle", "array",
                                   pytest.param("shared", marks=linux_only)])
def test_a_chunk_rewritten_in_place_with_a_colliding_pair_is_read_fresh(disk_path, shm_path,
                                                                        route, shards):
    """A chunk file (or a shard's inner chunk) holding one chunk of the pair is read through
    the cache, then its bytes are replaced with the other through a shared memory map, which
    keeps the file's size and times: the read gives the new values."""
    one, two = _colliding_pair()
    # (On /dev/shm, tmpfs, a store through a shared map never updates a file's times.)
    for place in [p for p in (disk_path, shm_path) if p is not None]:
        root = os.path.join(place, "a.zarr")
        a = zarrcore.create_array(root, shape=(16,), dtype="u8", chunks=(16,), shards=shards,
                                  compressors=[], serializer=BIG)
        a[...] = np.frombuffer(one, ">u8")
        path = os.path.join(root, "c", "0")
        with open(path, "rb") as f:
            assert f.read(len(one)) == one  # (a shard's inner chunk is its first bytes)
        m = np.memmap(path, dtype="u1", mode="r+")
        m[0] = m[0]  # the page is dirty from here on: later stores leave the times alone
        time.sleep(CACHE_SETTLE_SECONDS + 0.05)
        if route == "handle":
            h = a.native_handle(cache_bytes=1 << 20)
            read, info = (lambda: h.read((0,), (16,))), h.cache_info
        else:
            b = zarrcore.open_array(root, mode="r", cache_bytes=1 << 20,
                                    shared_cache=route == "shared")
            read, info = (lambda: b[...]), b.cache_info
        for _ in range(2):
            np.testing.assert_array_equal(read(), np.frombuffer(one, ">u8"))
        assert info()["hits"] == info()["misses"] == 1
        before = os.stat(path)
        m[:len(two)] = np.frombuffer(two, "u1")
        after = os.stat(path)
        assert (before.st_size, before.st_mtime_ns, before.st_ctime_ns) == (
            after.st_size, after.st_mtime_ns, after.st_ctime_ns)
        np.testing.assert_array_equal(read(), np.frombuffer(two, ">u8"))
        assert info()["stale"] == 1
        del m
