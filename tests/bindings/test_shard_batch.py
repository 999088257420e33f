"""The native sharded batch on a directory store (zarrcore._native.shard_io): reads of any basic
selection and writes of whole shards in one GIL-free job, against numpy, zarr-python and
tensorstore; its errors name the shard key and inner chunk."""
import ctypes
import hashlib
import mmap
import os
import struct
import sys
import time

import crc32c
import numpy as np
import pytest

import zarrcore
from zarrcore._native import shard_io as _shard_io
from zarrcore.codecs.sharding import ShardingCodec
from zarrcore.runtime.config import config
from zarrcore.errors import ChecksumError, ChunkDecodeError, ShardIndexError, ZarrcoreError

from _probes import waits_for_the_lock

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

SHAPE, SHARD, INNER = (21, 26, 10), (8, 12, 10), (4, 3, 5)  # edge shards on axes 0 and 1
EMPTY = 2**64 - 1
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}


def data_for(dtype="int32", shape=SHAPE):
    data = (np.arange(np.prod(shape)) * 7 % 1000 - 300).astype(dtype).reshape(shape)
    data[8:16, 0:12] = 0   # one whole shard of fill: not stored
    data[0:4, 3:6, 5:] = 0  # one inner chunk of fill: an empty index entry
    return data


@pytest.fixture(autouse=True)
def _config():
    saved = (config.num_threads, config.write_empty_chunks, config.shard_write_order)
    yield
    config.set(num_threads=saved[0], write_empty_chunks=saved[1], shard_write_order=saved[2])


@pytest.fixture
def no_python_shards(monkeypatch):
    """Fail if a selection takes the per-shard Python path instead of the native batch."""
    def refuse(*args, **kwargs):
        raise AssertionError("per-shard Python path taken")

    monkeypatch.setattr(ShardingCodec, "read_partial", refuse)
    monkeypatch.setattr(ShardingCodec, "merge", refuse)


def make(path, location="end", compressors=(ZSTD,), dtype="int32", index_crc=True, shape=SHAPE,
         serializer="auto"):
    shards = {"shape": SHARD, "index_location": location}
    a = zarrcore.create_array(str(path), shape=shape, dtype=dtype, chunks=INNER, shards=shards,
                              compressors=list(compressors), fill_value=0, serializer=serializer)
    if not index_crc:
        # Metadata of an index without its crc32c, as the spec allows.
        import json
        meta = json.loads((path / "zarr.json").read_text())
        meta["codecs"][0]["configuration"]["index_codecs"] = [
            {"name": "bytes", "configuration": {"endian": "little"}}]
        (path / "zarr.json").write_text(json.dumps(meta))
        a = zarrcore.open_array(str(path), mode="r+")
    return a


SELECTIONS = [
    (Ellipsis,),
    (slice(3, 17), slice(5, 25), slice(2, 9)),
    (slice(None, None, 3), slice(1, None, 5), slice(None, None, 4)),
    (slice(None, None, -1), slice(20, 2, -3), slice(None)),
    (7, slice(None), 4),
    (slice(19, 21), 25, slice(None, None, -2)),
    (None, slice(8, 16), Ellipsis, None),
    (slice(0, 0), slice(None), slice(None)),
]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("compressors", [(ZSTD,), (), (GZIP, CRC)], ids=["zstd", "none", "gzip-crc"])
def test_reads_and_writes_match_numpy(tmp_path, no_python_shards, threads, location, compressors):
    config.set(num_threads=threads)
    data = data_for()
    a = make(tmp_path / "a", location, compressors)
    a[...] = data
    assert not (tmp_path / "a/c/1/0/0").exists()  # all fill: deleted / never written
    for sel in SELECTIONS:
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))
    z = zarr.open_array(str(tmp_path / "a"), mode="r")
    np.testing.assert_array_equal(z[...], data)


def test_index_without_crc(tmp_path, no_python_shards):
    data = data_for()
    a = make(tmp_path / "a", index_crc=False)
    a[...] = data
    size = (tmp_path / "a/c/0/0/0").stat().st_size
    entries = np.frombuffer((tmp_path / "a/c/0/0/0").read_bytes()[-16 * 16:], "<u8").reshape(-1, 2)
    stored = entries[entries[:, 0] != EMPTY]
    assert len(stored) == 15 and (stored.sum(axis=1) <= size - 16 * 16).all()
    for sel in SELECTIONS:
        np.testing.assert_array_equal(a[sel], data[sel])
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)


@pytest.mark.parametrize("dtype", [">f4", "<c8", "u2", "bool"])
def test_dtypes(tmp_path, dtype):
    data = data_for("int32").astype(dtype)
    a = make(tmp_path / "a", dtype=dtype)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[1:20:3, ::-2], data[1:20:3, ::-2])
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)


@pytest.mark.parametrize("location", ["start", "end"])
def test_reads_shards_zarr_python_and_tensorstore_wrote(tmp_path, no_python_shards, location):
    data = data_for("uint16")
    kwargs = dict(shape=SHAPE, dtype="uint16", chunks=INNER, fill_value=0,
                  shards={"shape": SHARD, "index_location": location}, compressors=[ZSTD])
    z = zarr.create_array(str(tmp_path / "z"), **kwargs)
    z[...] = data
    a = zarrcore.open_array(str(tmp_path / "z"), mode="r")
    for sel in SELECTIONS:
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))
    # tensorstore writes into the same layout; zarrcore reads it back.
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "z")},
                 "open": True}).result()
    t[2:19, ::2].write(data[2:19, ::2] + 1).result()
    expect = data.copy()
    expect[2:19, ::2] += 1
    np.testing.assert_array_equal(a[...], expect)
    # ... and reads what zarrcore writes.
    a = zarrcore.open_array(str(tmp_path / "z"), mode="r+")
    a[...] = data
    np.testing.assert_array_equal(t.read().result(), data)


def test_written_shards_are_the_python_paths_bytes(tmp_path):
    """Whole-shard writes lay shards out as the Python codec does, in C and Morton order."""
    data = data_for()
    for order in ("C", "morton"):
        config.set(shard_write_order=order)
        a = make(tmp_path / order)
        a[...] = data
        mem = zarrcore.MemoryStore()
        m = zarrcore.create_array(mem, name="m", shape=SHAPE, dtype="int32", chunks=INNER,
                                  shards=SHARD, compressors=[ZSTD], fill_value=0)
        m[...] = data
        for key in mem.list_prefix("m/c"):
            assert (tmp_path / order / key[2:]).read_bytes() == mem.get(key), (order, key)
        assert len(list((tmp_path / order / "c").rglob("*/*/*"))) == len(mem.list_prefix("m/c"))
        np.testing.assert_array_equal(a[...], data)


def test_write_empty_chunks(tmp_path):
    config.set(write_empty_chunks=True)
    a = make(tmp_path / "a")
    a[...] = 0
    entries = np.frombuffer((tmp_path / "a/c/1/0/0").read_bytes()[-16 * 16 - 4:-4], "<u8")
    assert (entries != EMPTY).all()
    config.set(write_empty_chunks=False)
    a[...] = 0
    assert not list((tmp_path / "a/c").rglob("*/*/*"))


def test_partial_shards_fall_back_and_keep_the_rest(tmp_path):
    data = data_for()
    a = make(tmp_path / "a")
    a[...] = data
    # Whole shards [0:8, 0:12] and partial ones around them in one write.
    a[0:10, 0:12] = -5
    data[0:10, 0:12] = -5
    a[17:, 13:20:2] = 9
    data[17:, 13:20:2] = 9
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)


def test_missing_shards_and_inner_chunks_read_as_fill(tmp_path, no_python_shards):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=SHAPE, dtype="float32", chunks=INNER,
                              shards=SHARD, fill_value=np.nan)
    np.testing.assert_array_equal(a[...], np.full(SHAPE, np.nan, "float32"))
    a[0:8, 0:12] = np.float32(2)
    (tmp_path / "a/c/0/0/0").unlink()
    a[0:8, 0:12] = np.nan  # all fill: nothing stored
    assert not (tmp_path / "a/c/0/0/0").exists()
    a[8:16, 12:24] = 1.5
    expect = np.full(SHAPE, np.nan, "float32")
    expect[8:16, 12:24] = 1.5
    np.testing.assert_array_equal(a[::-1, 3:], expect[::-1, 3:])


def test_broadcast_and_strided_values(tmp_path, no_python_shards):
    a = make(tmp_path / "a")
    a[...] = 3
    np.testing.assert_array_equal(a[...], np.full(SHAPE, 3, "int32"))
    big = data_for()
    src = np.zeros((SHAPE[0] * 2,) + SHAPE[1:], "int32")[::-2]
    src[...] = big[::-1]
    a[::-1] = src
    np.testing.assert_array_equal(a[...], big)


# -- errors ------------------------------------------------------------------------------------

def damaged(tmp_path, location="end"):
    a = make(tmp_path / "a", location, compressors=(ZSTD, CRC))
    a[...] = data_for()
    path = tmp_path / "a/c/0/1/0"
    return a, path, bytearray(path.read_bytes())


def rewrite_index(path, entries, location="end"):
    data = path.read_bytes()
    isz = 16 * 16 + 4
    body = data[isz:] if location == "start" else data[:-isz]
    raw = np.asarray(entries, dtype="<u8").tobytes()
    index = raw + struct.pack("<I", crc32c.crc32c(raw))
    path.write_bytes(index + body if location == "start" else body + index)


def index_of(path, location="end"):
    data = path.read_bytes()
    raw = data[:256] if location == "start" else data[-260:-4]
    return np.frombuffer(raw, "<u8").reshape(16, 2).copy()


READS = {"all": (Ellipsis,), "one": (slice(0, 4), slice(12, 15), slice(0, 5))}


@pytest.mark.parametrize("read", sorted(READS))
def test_index_checksum(tmp_path, read):
    a, path, data = damaged(tmp_path)
    data[-2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=r"c/0/1/0'.*shard index.*checksum"):
        a[READS[read]]


@pytest.mark.parametrize("location", ["start", "end"])
def test_entry_past_the_end(tmp_path, location):
    a, path, _ = damaged(tmp_path, location)
    entries = index_of(path, location)
    entries[5] = (entries[5][0], 10**6)
    rewrite_index(path, entries, location)
    with pytest.raises(ShardIndexError, match=r"c/0/1/0'.*inner chunk \(0, 2, 1\).*past the end"):
        a[...]


def test_overlapping_and_half_empty_entries(tmp_path):
    a, path, _ = damaged(tmp_path)
    good = index_of(path)
    entries = good.copy()
    entries[3] = (entries[2][0] + 1, entries[3][1])
    rewrite_index(path, entries)
    with pytest.raises(ShardIndexError, match=r"c/0/1/0'.*inner chunk \(0, \d, \d\).*overlaps"):
        a[...]
    entries = good.copy()
    entries[4] = (EMPTY, 16)
    rewrite_index(path, entries)
    with pytest.raises(ShardIndexError, match=r"c/0/1/0'.*inner chunk \(0, 2, 0\).*empty"):
        a[READS["one"]]


def test_entry_inside_index_at_start(tmp_path):
    a, path, _ = damaged(tmp_path, "start")
    entries = index_of(path, "start")
    entries[0] = (8, 16)
    rewrite_index(path, entries, "start")
    with pytest.raises(ShardIndexError, match=r"c/0/1/0'.*inner chunk \(0, 0, 0\).*index"):
        a[...]


def test_shard_shorter_than_index(tmp_path):
    a, path, _ = damaged(tmp_path)
    path.write_bytes(b"\0" * 30)
    with pytest.raises(ShardIndexError, match=r"c/0/1/0'.*30 bytes, shorter than its 260-byte"):
        a[READS["one"]]


def test_corrupt_inner_chunk(tmp_path):
    a, path, data = damaged(tmp_path)
    off, n = index_of(path)[6]
    data[off + 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=r"c/0/1/0'.*inner chunk \(0, 3, 0\).*checksum"):
        a[...]
    np.testing.assert_array_equal(a[0:4, 12:15, 0:5], data_for()[0:4, 12:15, 0:5])


def test_garbage_inner_chunk(tmp_path):
    a = make(tmp_path / "a")
    a[...] = data_for()
    path = tmp_path / "a/c/0/1/0"
    data = bytearray(path.read_bytes())
    off, n = index_of(path)[0]
    data[off:off + n] = b"\xff" * n
    path.write_bytes(bytes(data))
    with pytest.raises(ChunkDecodeError, match=r"c/0/1/0'.*inner chunk \(0, 0, 0\)"):
        a[0:3, 12:13]


# -- reading ahead from a cold page cache -----------------------------------------------------

def resident(path, offset=0):
    """Whether the page of file `path` at `offset` is in the page cache (mincore: no read)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = offset - offset % mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, mmap.PAGESIZE, mmap.PROT_READ, mmap.MAP_SHARED, fd, page)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
    finally:
        os.close(fd)
    try:
        vec = ctypes.create_string_buffer(1)
        assert libc.mincore(addr, mmap.PAGESIZE, vec) == 0, os.strerror(ctypes.get_errno())
        return bool(vec.raw[0] & 1)
    finally:
        libc.munmap(addr, mmap.PAGESIZE)


def evict(root, probe, offset=0):
    """Drop every file below `root` from the page cache; skip where that cannot be seen done
    on the page of `probe` at `offset` (tmpfs keeps its files in memory)."""
    for dirpath, _, names in os.walk(root):
        for name in names:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)  # (dirty pages are not dropped)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    if resident(probe, offset):
        pytest.skip("this file system keeps files in memory: no cold page cache to read from")


def arrives(path, offset=0, timeout=5.0):
    """Whether the page of `path` at `offset` enters the page cache within `timeout` seconds
    (what the system was asked for is read in the background)."""
    deadline = time.monotonic() + timeout
    while not resident(path, offset):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="posix_fadvise and mincore: Linux only")


@linux_only
def test_read_asks_for_the_next_whole_shard_ahead(disk_path):
    """A read that needs the next shard whole asks for its file while the shard before it is
    decoded, so a cold read keeps the device busy: here the second shard's first page arrives
    although the read stops at that shard's index, before reading any of its chunks."""
    config.set(num_threads=1)  # (shards in order)
    a = zarrcore.create_array(str(disk_path / "a"), shape=(2 * 65536,), dtype="uint16",
                              chunks=(1024,), shards=(65536,), compressors=None, fill_value=0)
    a[...] = np.arange(2 * 65536) % 65535 + 1
    second = disk_path / "a/c/1"
    data = bytearray(second.read_bytes())
    data[-1] ^= 1  # the index's crc32c: the read fails when it loads the second shard
    second.write_bytes(bytes(data))
    evict(disk_path / "a", second)
    with pytest.raises(ChecksumError, match=r"c/1'.*shard index"):
        a[...]
    assert arrives(second)


def padded_shards(tmp_path, nshards, size, corrupt):
    """A 1-d array of `nshards` stored shards, each padded to `size` bytes by a hole between
    its chunks and its index (no device I/O to write or read it); shard `corrupt`'s index
    fails its crc32c, so a read stops when it loads that shard. Evicted from the page cache."""
    config.set(num_threads=1)  # (shards in order)
    n = 65536
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(nshards * n,), dtype="uint16",
                              chunks=(1024,), shards=(n,), compressors=None, fill_value=0)
    a[...] = np.arange(nshards * n) % 65535 + 1
    isz = 64 * 16 + 4
    for i in range(nshards):
        path = tmp_path / f"a/c/{i}"
        data = bytearray(path.read_bytes())
        if i == corrupt:
            data[-1] ^= 1
        with open(path, "wb") as f:
            f.write(data[:-isz])
            f.seek(size - len(data), os.SEEK_CUR)
            f.write(data[-isz:])
        assert path.stat().st_size == size
    evict(tmp_path / "a", tmp_path / "a/c/0")
    return a


@linux_only
def test_read_asks_for_several_whole_shards_ahead_within_a_budget(disk_path):
    """Loading a shard asks for the files of the shards after it that the read needs whole, as
    many as fit in PREFETCH_MAX bytes: here the read stops at the second shard's index, yet
    the third and fourth shards arrive; the fifth, past the budget, is never asked for."""
    size = _shard_io.PREFETCH_MAX * 3 // 10
    a = padded_shards(disk_path, 6, size, corrupt=1)
    with pytest.raises(ChecksumError, match=r"c/1'.*shard index"):
        a[...]
    for i in (2, 3):
        assert arrives(disk_path / f"a/c/{i}", 0)
        assert arrives(disk_path / f"a/c/{i}", size - 1)
    time.sleep(0.2)  # (what was asked for had time to arrive)
    for i in (4, 5):
        assert not resident(disk_path / f"a/c/{i}", 0)
        assert not resident(disk_path / f"a/c/{i}", size - 1)


@linux_only
def test_read_asks_for_a_large_shard_whole(disk_path):
    """A shard larger than the system's read-ahead window (Linux reads at most that much of
    one request to read ahead) is asked for whole all the same: here its page at 24 MiB
    arrives although the read stops at its index."""
    a = padded_shards(disk_path, 2, 32 << 20, corrupt=1)
    with pytest.raises(ChecksumError, match=r"c/1'.*shard index"):
        a[...]
    assert arrives(disk_path / "a/c/1", 24 << 20)


def test_read_of_many_shards_matches_numpy(tmp_path, no_python_shards):
    """A read that reads ahead over shards it needs whole and shards it needs in part returns
    what numpy does, on one thread and on several."""
    data = (np.arange(96 * 80) * 7 % 1000).astype("uint16").reshape(96, 80)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, dtype="uint16",
                              chunks=(4, 5), shards=(8, 10), compressors=[ZSTD], fill_value=0)
    a[...] = data
    for threads in (1, 2, 4):
        config.set(num_threads=threads)
        for sel in (np.s_[...], np.s_[3:90, 7:77], np.s_[8:88, ::3], np.s_[::-1, 5:]):
            np.testing.assert_array_equal(a[sel], data[sel])


@linux_only
def test_read_asks_for_a_shards_chunks_ahead(disk_path):
    """Loading a shard's index asks for every inner chunk the read needs, wherever stored: here
    the shard's chunks lie in reverse order, which the system's own read-ahead never follows,
    and the last chunk's page arrives although the read stops at the second chunk."""
    config.set(num_threads=1)  # (chunks in order)
    n = 32768  # 64 KiB per inner chunk
    a = zarrcore.create_array(str(disk_path / "a"), shape=(4 * n,), dtype="uint16", chunks=(n,),
                              shards=(4 * n,), compressors=None, fill_value=0)
    a[...] = np.arange(4 * n) % 65535 + 1
    shard = disk_path / "a/c/0"
    data = shard.read_bytes()
    size, isz = 2 * n, 4 * 16 + 4
    body = b"".join(data[i * size:(i + 1) * size] for i in reversed(range(4)))
    entries = [((3 - i) * size, size) for i in range(4)]
    entries[1] = (entries[1][0], size - 2)  # the second chunk is short: its read fails
    raw = np.asarray(entries, dtype="<u8").tobytes()
    shard.write_bytes(body + raw + struct.pack("<I", crc32c.crc32c(raw)))
    assert len(body) + isz == len(data)
    evict(disk_path / "a", shard)
    with pytest.raises(ZarrcoreError, match=r"c/0'.*inner chunk \(1,\)"):
        a[...]
    assert arrives(shard, 0)  # the fourth chunk, never read


# -- locks -------------------------------------------------------------------------------------

def test_key_lock_stripes_hash_with_sha256():
    for text in (b"", b"abc", b"x" * 55, b"y" * 64, "/tmp/é/c/0/1".encode() * 9):
        assert _shard_io.sha256_hex(text) == hashlib.sha256(text).hexdigest()


def test_whole_shard_write_waits_for_the_store_lock(tmp_path):
    """A whole-shard write never lands inside another writer's read-modify-write."""
    a = make(tmp_path / "a")

    def write():
        a[0:8, 0:12] = 7

    assert waits_for_the_lock(zarrcore.LocalStore(tmp_path / "a"), "c/0/0/0", write)
    np.testing.assert_array_equal(a[0:8, 0:12], 7)
