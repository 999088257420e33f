"""Array handles for compiled code (zarrcore/array_api.h): region reads and writes through the
C functions, called here from Python with the GIL released, against numpy; what arrays a
handle serves; errors; closing; and the guarantees of writes (locks, write_empty_chunks)."""
import contextlib
import copy
import glob
import multiprocessing
import os
import pickle
import re
import threading

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import (
    ChecksumError, ChunkDecodeError, LockUnavailableError, ReadOnlyError, SelectionError,
    ShardIndexError, StoreError, ZarrcoreError,
)

ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 3, "shuffle": "shuffle",
                                            "typesize": 4, "blocksize": 0}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}


@contextlib.contextmanager
def configured(**options):
    old = {name: getattr(zarrcore.config, name) for name in options}
    zarrcore.config.set(**options)
    try:
        yield
    finally:
        zarrcore.config.set(**old)


def random_region(rng, shape):
    """(start, count, step, numpy slices) of a random region, possibly empty on an axis."""
    start, count, step = [], [], []
    for n in shape:
        s = int(rng.integers(0, n))
        k = int(rng.integers(1, 4))
        start.append(s)
        step.append(k)
        count.append(int(rng.integers(0, (n - 1 - s) // k + 2)))
    sel = tuple(slice(s, s + k * (c - 1) + 1 if c else s, k) for s, c, k in zip(start, count, step))
    return start, count, step, sel


def exercise(a, ref, rounds=200, seed=0):
    """Random reads and writes through a handle of `a`, checked against numpy's `ref`."""
    h = a.native_handle()
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        start, count, step, sel = random_region(rng, a.shape)
        if rng.random() < 0.5:
            value = rng.integers(0, 50, size=count).astype(a.dtype)
            if rng.random() < 0.2:
                value[...] = ref.dtype.type(a.fill_value)
            h.write(start, value, step)
            ref[sel] = value
        else:
            np.testing.assert_array_equal(h.read(start, count, step), ref[sel])
    np.testing.assert_array_equal(a[...], ref)


@pytest.mark.parametrize("dtype", ["uint16", ">i4", "float64", "complex64"])
@pytest.mark.parametrize("shards", [None, (12, 20)])
def test_random_regions_match_numpy(tmp_path, dtype, shards):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(29, 41), dtype=dtype, chunks=(6, 5),
                              shards=shards, fill_value=3)
    exercise(a, np.full(a.shape, 3, dtype=a.dtype))


@pytest.mark.parametrize("compressors", [[], [ZSTD], [BLOSC], [GZIP], [ZSTD, CRC]],
                         ids=["raw", "zstd", "blosc", "gzip", "zstd-crc"])
def test_every_native_codec(tmp_path, compressors):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(30, 30), dtype="int32",
                              chunks=(7, 8), compressors=compressors)
    exercise(a, np.zeros(a.shape, np.int32), rounds=60)
    s = zarrcore.create_array(str(tmp_path / "s.zarr"), shape=(30, 30), dtype="int32",
                              chunks=(5, 4), shards={"shape": (10, 12), "index_location": "start"},
                              compressors=compressors)
    assert s.native_handle().shards == (10, 12)
    exercise(s, np.zeros(s.shape, np.int32), rounds=60)


def test_v2_array_and_morton_shards(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "v2.zarr"), shape=(25, 25), dtype="<u2",
                              chunks=(6, 6), zarr_format=2, fill_value=7)
    exercise(a, np.full(a.shape, 7, np.uint16), rounds=80)
    with configured(shard_write_order="morton"):
        s = zarrcore.create_array(str(tmp_path / "m.zarr"), shape=(32, 32), dtype="u1",
                                  chunks=(4, 4), shards=(16, 16))
        exercise(s, np.zeros(s.shape, np.uint8), rounds=80)


def test_three_dimensions_and_strided_buffers(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(20, 18, 16), dtype="f4",
                              chunks=(4, 4, 4), shards=(8, 8, 8))
    data = np.random.default_rng(1).random(a.shape, dtype=np.float32)
    a[...] = data
    h = a.native_handle()
    # A transposed and strided output buffer.
    out = np.zeros((9, 7, 13), np.float32).transpose(2, 1, 0)[::2, ::1, ::1]
    assert out.shape == (7, 7, 9)
    h.read((3, 2, 1), out.shape, (2, 2, 1), out=out)
    np.testing.assert_array_equal(out, data[3:17:2, 2:16:2, 1:10])
    value = np.arange(5 * 6 * 7, dtype=np.float32).reshape(7, 6, 5).T  # not C-contiguous
    h.write((2, 5, 9), value)
    data[2:7, 5:11, 9:16] = value
    np.testing.assert_array_equal(a[...], data)


def test_read_chunk_and_queries(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(10, 13), dtype="i2",
                              chunks=(4, 5), shards=(8, 10), fill_value=-9)
    a[...] = np.arange(130, dtype=np.int16).reshape(10, 13)
    h = a.native_handle()
    assert (h.shape, h.chunks, h.shards, h.itemsize, h.fill_value) == ((10, 13), (4, 5), (8, 10), 2, -9)
    expected = np.full((4, 5), -9, np.int16)
    expected[:2, :3] = a[8:, 10:]
    np.testing.assert_array_equal(h.read_chunk((2, 2)), expected)
    np.testing.assert_array_equal(h.read_chunk((1, 0)), a[4:8, 0:5])
    with pytest.raises(SelectionError, match="chunk 3 is outside"):
        h.read_chunk((3, 0))
    plain = zarrcore.create_array(str(tmp_path / "p.zarr"), shape=(5,), dtype="u1", chunks=(2,))
    assert plain.native_handle().shards is None


def test_missing_chunks_read_as_fill_and_fill_chunks_are_not_stored(tmp_path):
    for shards in (None, (8, 8)):
        path = str(tmp_path / f"a{bool(shards)}.zarr")
        a = zarrcore.create_array(path, shape=(16, 16), dtype="f8", chunks=(4, 4), shards=shards,
                                  fill_value=np.nan)
        h = a.native_handle()
        assert np.isnan(h.read((0, 0), (16, 16))).all()
        block = shards or (4, 4)
        h.write((0, 0), np.ones(block))
        assert len(a._stored_chunk_keys()) == 1
        h.write((0, 0), np.full(block, np.nan))  # NaN fill matches any NaN: nothing kept
        assert a._stored_chunk_keys() == []
        h.write((1, 1), np.full((2, 2), np.nan))  # a partial write of fill into nothing
        assert a._stored_chunk_keys() == []
        with configured(write_empty_chunks=True):
            kept = a.native_handle()
        kept.write((0, 0), np.full((4, 4), np.nan))
        assert len(a._stored_chunk_keys()) == 1
        assert not glob.glob(os.path.join(path, "**", ".zarrcore-tmp-*"), recursive=True)


def test_errors_out_of_bounds_and_arguments(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(10, 10), dtype="u1", chunks=(3, 3))
    h = a.native_handle()
    for start, count, step in [((8, 0), (3, 1), None), ((-1, 0), (1, 1), None),
                               ((0, 0), (5, 1), (3, 1)), ((10, 0), (1, 1), None)]:
        with pytest.raises(SelectionError, match="outside the array"):
            h.read(start, count, step)
    with pytest.raises(SelectionError, match="step 0 is not positive"):
        h.read((0, 0), (1, 1), (0, 1))
    with pytest.raises(SelectionError, match="needs 2 values"):
        h.read((0,), (1,))
    assert h.read((10, 0), (0, 5)).shape == (0, 5)  # empty regions may start at the end


def test_corrupt_chunks_and_shards_name_their_key(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(8, 8), dtype="i4", chunks=(4, 4),
                              compressors=[ZSTD, CRC])
    a[...] = 1
    chunk = tmp_path / "a.zarr" / "c" / "1" / "0"
    data = bytearray(chunk.read_bytes())
    data[3] ^= 0xFF
    chunk.write_bytes(bytes(data))
    h = a.native_handle()
    with pytest.raises(ChecksumError, match="chunk 'c/1/0'"):
        h.read((0, 0), (8, 8))
    chunk.write_bytes(b"xy")
    with pytest.raises(ChunkDecodeError, match="chunk 'c/1/0'"):
        h.read((4, 0), (1, 1))
    with pytest.raises(ChunkDecodeError, match="chunk 'c/1/0'"):
        h.write((4, 0), np.zeros((1, 1), np.int32))  # the read-modify-write decodes it
    s = zarrcore.create_array(str(tmp_path / "s.zarr"), shape=(8, 8), dtype="i4", chunks=(2, 2),
                              shards=(4, 4))
    s[...] = 2
    shard = tmp_path / "s.zarr" / "c" / "0" / "1"
    blob = bytearray(shard.read_bytes())
    blob[-10] ^= 1
    shard.write_bytes(bytes(blob))
    hs = s.native_handle()
    with pytest.raises(ChecksumError, match="chunk 'c/0/1': shard index"):
        hs.read((0, 4), (2, 2))
    with pytest.raises(ChecksumError, match="chunk 'c/0/1': shard index"):
        hs.write((0, 4), np.zeros((1, 1), np.int32))
    shard.write_bytes(b"short")
    with pytest.raises(ShardIndexError, match="shorter than its"):
        hs.read((0, 4), (1, 1))
    with pytest.raises(ShardIndexError, match="shorter than its"):
        hs.write((0, 4), np.zeros((1, 1), np.int32))
    # An inner chunk that does not decode is named (the default inner chain is zstd).
    s[...] = 2
    entries = np.frombuffer(shard.read_bytes()[-68:-4], "<u8").reshape(-1, 2)
    blob = bytearray(shard.read_bytes())
    blob[int(entries[3, 0]):int(entries[3, 0] + entries[3, 1])] = b"\0" * int(entries[3, 1])
    shard.write_bytes(bytes(blob))
    with pytest.raises(ChunkDecodeError, match=r"chunk 'c/0/1': inner chunk \(1, 1\)"):
        hs.read((2, 6), (2, 2))
    with pytest.raises(ChunkDecodeError, match=r"chunk 'c/0/1': inner chunk \(1, 1\)"):
        hs.write((3, 7), np.zeros((1, 1), np.int32))
    np.testing.assert_array_equal(hs.read((0, 4), (2, 4)), 2)  # the other inner chunks read


def test_store_errors(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype="u1", chunks=(2,))
    os.makedirs(tmp_path / "a.zarr" / "c")
    (tmp_path / "a.zarr" / "c" / "1").mkdir()  # a directory where a chunk would be
    h = a.native_handle()
    np.testing.assert_array_equal(h.read((0,), (4,)), 0)  # reads as not stored
    with pytest.raises(StoreError, match="chunk 'c/1'"):
        h.write((2,), np.ones(2, np.uint8))


def test_closed_handles_refuse_calls(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype="u1", chunks=(2,))
    with a.native_handle() as h:
        capsule = h.capsule()
        assert not h.closed
    assert h.closed and "closed" in repr(h)
    for call in (lambda: h.read((0,), (1,)), lambda: h.write((0,), np.ones(1, np.uint8)),
                 lambda: h.read_chunk((0,))):
        with pytest.raises(ZarrcoreError, match="handle is closed"):
            call()
    del h, capsule  # the capsule's reference outlives the handle; both go without a crash


def test_read_only_arrays_refuse_writes(tmp_path):
    zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype="u1", chunks=(2,))
    h = zarrcore.open_array(str(tmp_path / "a.zarr"), mode="r").native_handle()
    assert h.read((0,), (4,)).tolist() == [0] * 4
    with pytest.raises(ReadOnlyError):
        h.write((0,), np.ones(1, np.uint8))


def test_unsupported_arrays_are_refused_when_the_handle_is_made(tmp_path):
    memory = zarrcore.create_array({}, shape=(4,), dtype="u1", chunks=(2,))
    with pytest.raises(ZarrcoreError, match="needs a local directory store"):
        memory.native_handle()
    transposed = zarrcore.create_array(
        str(tmp_path / "t.zarr"), shape=(4, 4), dtype="u1", chunks=(2, 2),
        filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}])
    with pytest.raises(ZarrcoreError, match="codecs the compiled core runs"):
        transposed.native_handle()
    strings = zarrcore.create_array(str(tmp_path / "s.zarr"), shape=(4,), dtype=str, chunks=(2,))
    with pytest.raises(ZarrcoreError, match="codecs the compiled core runs"):
        strings.native_handle()


@pytest.mark.parametrize("chunks, shards", [((8, 16), None), ((4, 4), (8, 16))])
def test_threads_writing_parts_of_shared_shards_lose_no_update(tmp_path, chunks, shards):
    """Threads write interleaved single rows through the handle and through a[...] at once:
    every write is a read-modify-write of a chunk or shard another thread rewrites too."""
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(24, 16), dtype="i4", chunks=chunks,
                              shards=shards, compressors=[ZSTD])
    h = a.native_handle()

    def writer(k):
        for row in range(k, 24, 4):
            value = np.full((1, 16), row + 1, np.int32)
            if k % 2:
                h.write((row, 0), value)
            else:
                a[row:row + 1] = value

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(a[...], np.repeat(np.arange(1, 25, dtype=np.int32)[:, None], 16, 1))


def _process_writer(path, k, n, barrier):
    h = zarrcore.open_array(path).native_handle()
    barrier.wait()  # both write at once
    for i in range(k, n, 2):
        h.write((i, 0), np.full((1, 6), i + 1, np.int16))


@pytest.mark.slow
def test_processes_writing_the_same_shard_lose_no_update(tmp_path):
    path = str(tmp_path / "a.zarr")
    n = 100
    zarrcore.create_array(path, shape=(n, 6), dtype="i2", chunks=(4, 6), shards=(n, 6))
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_process_writer, args=(path, k, n, barrier)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    expected = np.repeat(np.arange(1, n + 1, dtype=np.int16)[:, None], 6, 1)
    np.testing.assert_array_equal(zarrcore.open_array(path)[...], expected)


def test_lock_errors_map_to_lock_unavailable():
    from zarrcore.array_api import raise_status

    with pytest.raises(LockUnavailableError) as info:
        raise_status(-105, 37, b"chunk 'c/0': cannot lock it")
    assert info.value.errno == 37


@pytest.mark.parametrize("dtype, code", [
    ("bool", "BOOL"), ("int8", "INT8"), ("<i2", "INT16"), ("int32", "INT32"), ("int64", "INT64"),
    ("uint8", "UINT8"), ("uint16", "UINT16"), ("uint32", "UINT32"), ("uint64", "UINT64"),
    ("float16", "FLOAT16"), ("float32", "FLOAT32"), ("float64", "FLOAT64"),
    ("complex64", "COMPLEX64"), ("complex128", "COMPLEX128"), ("M8[s]", "DATETIME64"),
    ("m8[ms]", "TIMEDELTA64"), ("S5", "BYTES"), ("U3", "UNICODE"), ("V4", "OTHER"),
])
def test_dtype_codes_tell_types_of_one_size_apart(tmp_path, dtype, code):
    codes = _header_dtype_codes()
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype=dtype, chunks=(2,),
                              zarr_format=2 if dtype == "V4" else 3)
    assert a.native_handle().dtype_code == codes[code]


def test_dtype_code_marks_swapped_byte_order(tmp_path):
    codes = _header_dtype_codes()
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype=">i4", chunks=(2,),
                              zarr_format=2)
    if a.dtype.isnative:
        pytest.skip("this machine is big-endian: >i4 is its own order")
    assert a.native_handle().dtype_code == codes["INT32"] | codes["SWAPPED"]


def _header_dtype_codes():
    """ZC_ARRAY_DTYPE_* as zarrcore/array_api.h defines them."""
    text = open(os.path.join(zarrcore.get_include(), "zarrcore", "array_api.h")).read()
    return {name: int(value, 0)
            for name, value in re.findall(r"ZC_ARRAY_DTYPE_(\w+) = (0x[0-9a-f]+|\d+)", text)}


def test_handles_refuse_pickling_saying_what_to_do(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(4,), dtype="i4", chunks=(2,))
    handle = a.native_handle()
    for attempt in (pickle.dumps, copy.copy):
        with pytest.raises(TypeError, match=r"make a handle in each worker \(array\.native_handle"):
            attempt(handle)
    assert pickle.loads(pickle.dumps(a)).native_handle().shape == (4,)
