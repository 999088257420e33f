"""Batched directory-store reads and writes (csrc/jobs/zc_batch.c, csrc/files/zc_stream.c): every path of
the streamed read (no compressor / zstd, with or without crc32c; straight into the output or
scattered from bounded windows), the whole-chunk path of the other compressors, damaged
chunks, and interop with zarr-python on the same files."""
import os
import struct
import sys

import crc32c
import numpy as np
import pytest

import zarrcore
from zarrcore.runtime.config import size_with_slack
from zarrcore.errors import ChecksumError, ChunkDecodeError

from _probes import run_measured, waits_for_the_lock

numcodecs = pytest.importorskip("numcodecs")


ZSTD = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
ZSTD_SUM = {"name": "zstd", "configuration": {"level": 3, "checksum": True}}
CRC = {"name": "crc32c"}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
BLOSC = {"name": "blosc", "configuration": {
    "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}

COMPRESSORS = {
    "none": None,
    "crc": [CRC],
    "zstd": [ZSTD],
    "zstd-crc": [ZSTD, CRC],
    "zstd-checksum": [ZSTD_SUM],
    "gzip": [GZIP],
    "blosc-crc": [BLOSC, CRC],
}
STREAMED = ["none", "crc", "zstd", "zstd-crc", "zstd-checksum"]


def make(path, data, chunks, comp, fill_value=None, endian="little", **kw):
    a = zarrcore.create_array(
        str(path), shape=data.shape, dtype=data.dtype, chunks=chunks,
        compressors=COMPRESSORS[comp] if isinstance(comp, str) else comp,
        serializer={"name": "bytes", "configuration": {"endian": endian}},
        fill_value=fill_value, **kw)
    a[...] = data
    return a


def chunk_path(a, *coords):
    return os.path.join(a.store.root, a.path, "c", *map(str, coords))


SELECTIONS = [
    (Ellipsis,),
    (slice(None), slice(None), slice(None)),
    (slice(3, 17), slice(1, 30), slice(5, 6)),
    (slice(None, None, 3), slice(2, None, 5), slice(None, None, 2)),
    (slice(None, None, -1), slice(None), slice(20, 2, -3)),
    (4, slice(None), 7),
    (slice(8, 16), slice(8, 16), slice(None)),   # exactly one chunk, not contiguous in the output
    (17, 31, 19),
    (slice(-5, None), slice(None, None, -7), -1),
]


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    zarrcore.config.set(num_threads=request.param)
    return request.param


@pytest.mark.parametrize("comp", sorted(COMPRESSORS))
@pytest.mark.parametrize("dtype", ["uint16", "float64", "complex64", "bool", "S3"])
def test_selections(tmp_path, comp, dtype, threads):
    rng = np.random.default_rng(1)
    shape = (19, 33, 21)  # edge chunks on every axis
    data = rng.integers(0, 200, shape).astype(dtype)
    a = make(tmp_path / "a", data, (8, 8, 7), comp)
    b = zarrcore.open_array(str(tmp_path / "a"))
    for sel in SELECTIONS:
        np.testing.assert_array_equal(b[sel], data[sel], err_msg=str(sel))
    assert a.nchunks_initialized == a.nchunks


@pytest.mark.parametrize("comp", STREAMED + ["gzip"])
@pytest.mark.parametrize("endian", ["big", "little"])
@pytest.mark.parametrize("dtype", ["uint16", "int32", "float64", "complex128"])
def test_byte_order(tmp_path, comp, endian, dtype):
    data = (np.arange(24 * 10 * 6) * 7 - 300).astype(dtype).reshape(24, 10, 6)
    a = make(tmp_path / "a", data, (6, 10, 6), comp, endian=endian)
    raw = open(chunk_path(a, 1, 0, 0), "rb").read()
    if comp in ("none", "crc"):
        stored = np.frombuffer(raw[:data[6:12].nbytes], dtype=data.dtype.newbyteorder(
            ">" if endian == "big" else "<"))
        np.testing.assert_array_equal(stored, data[6:12].ravel())
    for sel in [Ellipsis, (slice(6, 12),), (slice(5, 13), slice(None, None, 3), 2),
                (slice(None, None, -5), 9)]:
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))


@pytest.mark.parametrize("comp", STREAMED)
def test_contiguous_targets(tmp_path, comp, threads):
    """Chunks whose selection is one run of the output: whole chunks of a C-contiguous
    result, parts of them along the outer axis, a 1-d array, a 0-d array."""
    data = np.arange(12 * 5 * 4, dtype="int32").reshape(12, 5, 4)
    a = make(tmp_path / "a", data, (3, 5, 4), comp)
    for sel in [Ellipsis, (slice(3, 9),), (slice(4, 5),), (7,), (7, 2), (slice(1, 11), 3, slice(1, 3))]:
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))
    out = np.zeros((12, 5, 4), "int32")
    a.get_basic_selection(Ellipsis, out=out)
    np.testing.assert_array_equal(out, data)
    one = make(tmp_path / "b", np.arange(100, dtype="float32"), (32,), comp)
    np.testing.assert_array_equal(one[...], np.arange(100, dtype="float32"))
    np.testing.assert_array_equal(one[10:90:7], np.arange(100, dtype="float32")[10:90:7])
    zero = make(tmp_path / "z", np.array(3.5), (), comp)
    assert zarrcore.open_array(str(tmp_path / "z"))[()] == 3.5


@pytest.mark.parametrize("comp", ["none", "zstd-crc", "blosc-crc"])
def test_strided_output(tmp_path, comp):
    data = np.arange(16 * 16, dtype="uint16").reshape(16, 16)
    a = make(tmp_path / "a", data, (8, 8), comp)
    out = np.full((16, 32), 9, dtype="uint16")
    a.get_basic_selection(Ellipsis, out=out[:, ::2])
    np.testing.assert_array_equal(out[:, ::2], data)
    assert (out[:, 1::2] == 9).all()
    # A Fortran-ordered output: rows are not contiguous.
    fout = np.asfortranarray(np.zeros((16, 16), "uint16"))
    a.get_basic_selection(Ellipsis, out=fout)
    np.testing.assert_array_equal(fout, data)


@pytest.mark.parametrize("comp", STREAMED + ["blosc-crc"])
def test_missing_chunks_fill(tmp_path, comp, threads):
    data = np.full((20, 20), 5, dtype="float32")
    data[:10, :10] = np.arange(100).reshape(10, 10)
    a = make(tmp_path / "a", data, (10, 10), comp, fill_value=5)
    assert a.nchunks_initialized == 1  # the rest are all fill: not written
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5:15:2, ::-3], data[5:15:2, ::-3])
    b = zarrcore.create_array(str(tmp_path / "b"), shape=(7, 9), dtype="int16", chunks=(3, 4),
                              fill_value=-2, compressors=COMPRESSORS[comp])
    np.testing.assert_array_equal(b[...], np.full((7, 9), -2, "int16"))
    os.makedirs(chunk_path(b, 0, 0))  # a directory where a chunk would be reads as missing
    np.testing.assert_array_equal(b[...], np.full((7, 9), -2, "int16"))


def _zstd_raw_frame(payload, content_size=False):
    """A zstd frame of raw blocks written by hand: no content size in its header unless asked,
    1 MiB window."""
    blocks = [payload[i:i + 65536] for i in range(0, len(payload), 65536)] or [b""]
    if content_size:
        head = struct.pack("<IBBQ", 0xFD2FB528, 0xC0, 0x50, len(payload))
    else:
        head = struct.pack("<IBB", 0xFD2FB528, 0x00, 0x50)
    for i, blk in enumerate(blocks):
        head += (len(blk) << 3 | int(i == len(blocks) - 1)).to_bytes(3, "little") + blk
    return head


def _put(a, coords, data, crc=False):
    if crc:
        data += struct.pack("<I", crc32c.crc32c(data))
    path = chunk_path(a, *coords)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("crc", [False, True])
def test_zstd_frames(tmp_path, crc):
    """Frames without a content size, several frames, skippable frames, numcodecs' frames."""
    data = np.arange(64 * 64, dtype="<u4").reshape(64, 64)
    comp = [ZSTD, CRC] if crc else [ZSTD]
    a = make(tmp_path / "a", np.zeros_like(data), (32, 64), comp)
    raw = data[:32].tobytes()
    _put(a, (0, 0), _zstd_raw_frame(raw), crc)
    skippable = struct.pack("<II", 0x184D2A53, 5) + b"hello"
    parts = [raw[:1000], raw[1000:1000], raw[1000:5000], raw[5000:]]
    multi = skippable + b"".join(_zstd_raw_frame(p, content_size=i % 2 == 0) + skippable
                                 for i, p in enumerate(parts))
    _put(a, (1, 0), multi, crc)
    np.testing.assert_array_equal(a[:32], data[:32])
    np.testing.assert_array_equal(a[32:], data[:32])
    np.testing.assert_array_equal(a[3:60:5, 63:0:-9], np.concatenate([data[:32]] * 2)[3:60:5, 63:0:-9])
    # numcodecs' frames (content size recorded), several of them, and a big one straddling
    # the 1 MiB read blocks.
    codec = numcodecs.Zstd(level=5)
    _put(a, (1, 0), codec.encode(raw[:3000]) + codec.encode(raw[3000:]), crc)
    np.testing.assert_array_equal(a[32:], data[:32])
    big = np.random.default_rng(0).integers(0, 2**32, (512, 1024), dtype="<u4")
    b = make(tmp_path / "b", np.zeros((1024, 1024), "<u4"), (512, 1024), comp)
    _put(b, (1, 0), codec.encode(big.tobytes()), crc)  # incompressible: ~2 MiB of input
    np.testing.assert_array_equal(b[512:], big)
    np.testing.assert_array_equal(b[600:900:3, ::-1], big[88:388:3, ::-1])


@pytest.mark.parametrize("comp", ["zstd", "zstd-crc", "none", "crc"])
def test_damaged_chunks(tmp_path, comp):
    data = np.arange(32 * 32, dtype="uint16").reshape(32, 32)
    a = make(tmp_path / "a", data, (16, 16), comp)
    path = chunk_path(a, 1, 1)
    good = open(path, "rb").read()
    crc = comp.endswith("crc")
    zstd = comp.startswith("zstd")
    body = good[:-4] if crc else good

    def check(raw, error, sels=(Ellipsis, (slice(16, 32), slice(16, 32)), (20, slice(None)))):
        with open(path, "wb") as f:
            f.write(raw)
        for sel in sels:
            with pytest.raises(error, match=r"c/1/1"):
                a[sel]

    # Truncated, oversized and garbage payloads, with a matching crc32c when there is one.
    seal = (lambda b: b + struct.pack("<I", crc32c.crc32c(b))) if crc else (lambda b: b)
    check(seal(body[:-7]), ChunkDecodeError)
    check(seal(body[: len(body) // 2]), ChunkDecodeError)
    check(seal(b""), ChunkDecodeError)
    check(seal(body + body[:8]), ChunkDecodeError)
    if zstd:
        check(seal(b"\x17" * len(body)), ChunkDecodeError)
        more = numcodecs.Zstd().encode(np.zeros(16 * 16 + 1, "uint16").tobytes())
        check(seal(more), ChunkDecodeError)
        fewer = numcodecs.Zstd().encode(np.zeros(16 * 16 - 1, "uint16").tobytes())
        check(seal(fewer), ChunkDecodeError)
        check(seal(numcodecs.Zstd().encode(b"")), ChunkDecodeError)
    if crc:
        # A flipped bit anywhere, a wrong trailer, a file too short for one.
        for pos in (0, len(body) // 2, len(body) - 1):
            bad = bytearray(good)
            bad[pos] ^= 0x10
            check(bytes(bad), ChecksumError)
        check(good[:-1] + bytes([good[-1] ^ 1]), ChecksumError)
        check(good[:-4], ChecksumError)  # trailer missing: the last 4 payload bytes are read as it
        check(b"\x01\x02", ChunkDecodeError)
    # The undamaged chunks around it still read, and the repaired one again.
    np.testing.assert_array_equal(a[:16], data[:16])
    with open(path, "wb") as f:
        f.write(good)
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("comp", sorted(COMPRESSORS))
def test_empty_chunk_file(tmp_path, comp):
    """An empty file is a damaged chunk under every chain (it once was a bad-parameter error)."""
    data = np.arange(8 * 8, dtype="int16").reshape(8, 8)
    a = make(tmp_path / "a", data, (4, 8), comp)
    open(chunk_path(a, 1, 0), "wb").close()
    for sel in (Ellipsis, (slice(4, 8),), (5, slice(1, 7, 2))):
        with pytest.raises(ChunkDecodeError, match=r"c/1/0"):
            a[sel]
    np.testing.assert_array_equal(a[:4], data[:4])


def test_zstd_frame_checksum(tmp_path):
    data = np.arange(40 * 40, dtype="float32").reshape(40, 40)
    a = make(tmp_path / "a", data, (20, 40), "zstd-checksum")
    path = chunk_path(a, 0, 0)
    raw = bytearray(open(path, "rb").read())
    raw[-1] ^= 0xFF  # the frame's xxhash
    open(path, "wb").write(bytes(raw))
    with pytest.raises(ChunkDecodeError):
        a[...]
    np.testing.assert_array_equal(a[20:], data[20:])


@pytest.mark.parametrize("comp", STREAMED + ["gzip", "blosc-crc"])
def test_write_then_read_large_chunks(tmp_path, comp, threads):
    """Chunks bigger than the 1 MiB blocks and windows, many blocks per chunk."""
    data = np.random.default_rng(3).integers(0, 50, (64, 96, 80), dtype="uint16")
    a = make(tmp_path / "a", data, (64, 64, 64), comp)
    b = zarrcore.open_array(str(tmp_path / "a"))
    for sel in [Ellipsis, (slice(1, 63, 2), slice(None), slice(70, 1, -1)), (slice(None), 50)]:
        np.testing.assert_array_equal(b[sel], data[sel], err_msg=str(sel))


# -- interop --------------------------------------------------------------------------------------

zarr = pytest.importorskip("zarr")


def _zarr_compressors(comp):
    from zarr.codecs import Crc32cCodec, ZstdCodec

    return {
        "none": None,
        "zstd": [ZstdCodec(level=0)],
        "zstd-crc": [ZstdCodec(level=0), Crc32cCodec()],
    }[comp]


@pytest.mark.parametrize("comp", ["none", "zstd", "zstd-crc"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_reads_zarr_python_v3(tmp_path, comp, endian):
    from zarr.codecs import BytesCodec

    data = np.random.default_rng(5).normal(size=(50, 41, 30)).astype("float32")
    z = zarr.create_array(str(tmp_path / "z"), shape=data.shape, dtype="float32",
                          chunks=(16, 16, 16), compressors=_zarr_compressors(comp),
                          serializer=BytesCodec(endian=endian), fill_value=0)
    z[...] = data
    a = zarrcore.open_array(str(tmp_path / "z"))
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5:45:3, ::-2, 7], data[5:45:3, ::-2, 7])


@pytest.mark.parametrize("compressor", [None, "zstd"])
def test_reads_zarr_python_v2(tmp_path, compressor):
    data = np.arange(30 * 20, dtype=">i4").reshape(30, 20)
    comp = numcodecs.Zstd(level=1) if compressor else None
    z = zarr.create_array(str(tmp_path / "z"), shape=data.shape, dtype=">i4", chunks=(8, 8),
                          zarr_format=2, compressors=comp, fill_value=0)
    z[...] = data
    a = zarrcore.open_array(str(tmp_path / "z"))
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[3:29:2, 19:0:-3], data[3:29:2, 19:0:-3])


@pytest.mark.parametrize("comp", ["none", "zstd", "zstd-crc"])
def test_zarr_python_reads_ours(tmp_path, comp):
    data = np.random.default_rng(6).integers(0, 1000, (40, 33, 20), dtype="uint16")
    make(tmp_path / "a", data, (16, 16, 16), comp, endian="big")
    z = zarr.open_array(str(tmp_path / "a"), mode="r")
    np.testing.assert_array_equal(z[...], data)


@pytest.mark.parametrize("comp", ["none", "crc"])
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("shape, chunks", [
    ((40, 33, 20), (16, 16, 16)),       # edge chunks: padded with the fill value
    ((64, 48, 1024), (32, 8, 512)),     # 8 KiB rows, 32 KiB slabs, many per write
    ((4, 70000), (2, 70000)),           # a row over 256 KiB: the whole-chunk buffer path
    ((96,), (32,)),
])
def test_uncompressed_chunks_match_zarr_python_bytes(tmp_path, comp, endian, shape, chunks,
                                                     threads):
    """Uncompressed chunks are stored a cache-sized piece at a time; the files are byte for
    byte the ones zarr-python writes, from a strided source, with all-fill chunks left out."""
    from zarr.codecs import BytesCodec, Crc32cCodec

    rng = np.random.default_rng(8)
    data = rng.integers(1, 60000, tuple(2 * n for n in shape), dtype="uint16")
    data = data[(slice(None, None, 2),) * len(shape)]   # not contiguous
    data[(slice(0, chunks[0]),) + (slice(None),) * (len(shape) - 1)] = 0  # all-fill chunks
    ours = make(tmp_path / "a", data, chunks, comp, fill_value=0, endian=endian)
    z = zarr.create_array(str(tmp_path / "z"), shape=data.shape, dtype="uint16", chunks=chunks,
                          compressors=[Crc32cCodec()] if comp == "crc" else None,
                          serializer=BytesCodec(endian=endian), fill_value=0)
    z[...] = data
    files = {}
    for name in ("a", "z"):
        root = tmp_path / name / "c"
        files[name] = {str(p.relative_to(root)): p.read_bytes()
                       for p in root.rglob("*") if p.is_file()}
    assert files["a"].keys() == files["z"].keys()
    assert files["a"] == files["z"]
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)
    np.testing.assert_array_equal(ours[...], data)


@pytest.mark.parametrize("comp", ["zstd", "zstd-crc", "zstd-checksum"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_zstd_chunks_equal_one_call(tmp_path, comp, endian, threads):
    """zstd chunks gathered from a strided array are stored byte for byte as the frame one
    call over the contiguous chunk makes."""
    from zarrcore._native import compress as _compress

    rng = np.random.default_rng(9)
    data = rng.integers(0, 300, (96, 40, 2048), dtype="uint16")[::2, :, ::2]  # strided
    a = make(tmp_path / "a", data, (16, 20, 512), comp, endian=endian)
    zstd = COMPRESSORS[comp][0]["configuration"]
    for i, j, k in np.ndindex(3, 2, 2):
        chunk = np.ascontiguousarray(data[16 * i:16 * (i + 1), 20 * j:20 * (j + 1),
                                          512 * k:512 * (k + 1)], dtype=f"{'<' if endian == 'little' else '>'}u2")
        want = _compress.zstd_compress(chunk.tobytes(), zstd["level"], zstd["checksum"])
        if comp == "zstd-crc":
            want += struct.pack("<I", crc32c.crc32c(want))
        with open(chunk_path(a, i, j, k), "rb") as f:
            assert f.read() == want, (i, j, k)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)


BIG_CHUNK = (128, 256, 256)  # 16 MiB of uint16: two 8 MiB segments on two threads


def big_chunk_data(seed=12):
    rng = np.random.default_rng(seed)
    z, y, x = np.ogrid[:128, :256, :256]
    return ((x + y * y // 32 + z ** 3) % 4096 + rng.integers(0, 3, BIG_CHUNK)).astype("uint16")


def read_with_tensorstore(path):
    ts = pytest.importorskip("tensorstore", reason="the comparison needs tensorstore")

    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}).result() \
        .read().result()


@pytest.mark.parametrize("comp", ["zstd", "zstd-crc"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_a_big_chunk_is_compressed_by_every_thread_as_one_frame(tmp_path, comp, endian):
    """Fewer big zstd chunks than threads: the threads compress segments of each chunk at once
    into one frame that zarr-python and tensorstore read exactly, at most a few per cent larger
    than one call's; on one thread it is one call's frame byte for byte."""
    from zarrcore._native import compress as _compress

    data = big_chunk_data()
    stored = {}
    for nthreads in (1, 2):
        zarrcore.config.set(num_threads=nthreads)
        path = tmp_path / f"t{nthreads}"
        a = make(path, data, BIG_CHUNK, comp, endian=endian)
        with open(chunk_path(a, 0, 0, 0), "rb") as f:
            stored[nthreads] = f.read()
        np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], data)
        np.testing.assert_array_equal(read_with_tensorstore(path), data)
        np.testing.assert_array_equal(zarrcore.open_array(str(path))[...], data)
    one_call = _compress.zstd_compress(data.astype(a.dtype.newbyteorder(
        "<" if endian == "little" else ">")).tobytes(), 0, False)
    frames = {n: s[:-4] if comp == "zstd-crc" else s for n, s in stored.items()}
    if comp == "zstd-crc":
        for s in stored.values():
            assert struct.unpack("<I", s[-4:])[0] == crc32c.crc32c(s[:-4])
    assert frames[1] == one_call
    assert frames[2] != one_call  # split, and still one frame declaring the whole chunk
    assert numcodecs.Zstd().decode(frames[2]) == numcodecs.Zstd().decode(one_call)
    assert len(frames[2]) < 1.05 * len(one_call)


def test_a_split_chunk_of_fill_values_is_not_stored(tmp_path):
    """write_empty_chunks=False holds for split chunks: all fill deletes the chunk; one value
    other than the fill, in the last segment only, stores it."""
    zarrcore.config.set(num_threads=2, write_empty_chunks=False)
    data = np.full(BIG_CHUNK, 7, dtype="uint16")
    a = make(tmp_path / "a", data, BIG_CHUNK, "zstd", fill_value=7)
    assert not os.path.exists(chunk_path(a, 0, 0, 0))
    data[-1, -1, -1] = 8
    a[...] = data
    assert os.path.exists(chunk_path(a, 0, 0, 0))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)
    a[...] = 7
    assert not os.path.exists(chunk_path(a, 0, 0, 0))


@pytest.mark.parametrize("nthreads", [1, 2], ids=["whole", "split"])
def test_a_failed_big_chunk_store_names_the_chunk(tmp_path, nthreads):
    """A chunk that cannot be stored (here a directory stands at its key) fails the write with
    an OSError naming the chunk, and leaves no temporary file, split or not."""
    zarrcore.config.set(num_threads=nthreads)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=BIG_CHUNK, dtype="uint16",
                              chunks=BIG_CHUNK, compressors=[ZSTD], fill_value=0)
    os.makedirs(os.path.join(chunk_path(a, 0, 0, 0), "in-the-way"))
    with pytest.raises(OSError, match="c/0/0/0"):
        a[...] = big_chunk_data()
    assert os.listdir(os.path.dirname(chunk_path(a, 0, 0, 0))) == ["0"]


def test_zstd_checksums_keep_chunks_whole(tmp_path):
    """A zstd checksum covers the whole frame, so such chunks are never split."""
    from zarrcore._native import compress as _compress

    zarrcore.config.set(num_threads=2)
    data = big_chunk_data()
    a = make(tmp_path / "a", data, BIG_CHUNK, "zstd-checksum")
    with open(chunk_path(a, 0, 0, 0), "rb") as f:
        assert f.read() == _compress.zstd_compress(data.tobytes(), 3, True)


@pytest.mark.parametrize("cname", ["lz4", "zstd"])
def test_a_big_blosc_chunk_decodes_on_every_thread(tmp_path, cname, threads):
    """Fewer big blosc chunks than threads: each decodes on blosc threads of its own; what
    zarr-python wrote reads exactly, whole or in part, and a cut chunk still fails by name."""
    from zarr.codecs import BloscCodec

    data = big_chunk_data()
    zarr.create_array(str(tmp_path / "z"), shape=BIG_CHUNK, dtype="uint16", chunks=BIG_CHUNK,
                      compressors=[BloscCodec(cname=cname, clevel=5, shuffle="shuffle")],
                      fill_value=0)[...] = data
    a = zarrcore.open_array(str(tmp_path / "z"))
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5:100, ::3, 7], data[5:100, ::3, 7])
    path = chunk_path(a, 0, 0, 0)
    with open(path, "rb") as f:
        stored = f.read()
    with open(path, "wb") as f:
        f.write(stored[:len(stored) // 2])
    with pytest.raises(ChunkDecodeError, match="c/0/0/0"):
        a[...]


@pytest.mark.parametrize("comp", ["none", "zstd", "zstd-crc"])
@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "shards"])
def test_large_outputs_stream_rows_exactly(tmp_path, comp, sharded):
    """Outputs of 8 MiB and more take their rows through streaming stores: rows of odd
    lengths and unaligned starts land exactly, neighbours untouched."""
    rng = np.random.default_rng(10)
    data = rng.integers(0, 60000, (40, 300, 389), dtype="uint16")   # 9.3 MB
    kw = {"shards": (20, 150, 389)} if sharded else {}
    a = make(tmp_path / "a", data, (10, 75, 389) if sharded else (20, 37, 131), comp, **kw)
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[1:, 3:297, 7:388], data[1:, 3:297, 7:388])
    out = np.full((40, 300, 400), 7, dtype="uint16")
    a.get_basic_selection(Ellipsis, out=out[:, :, 5:394])
    np.testing.assert_array_equal(out[:, :, 5:394], data)
    assert (out[:, :, :5] == 7).all() and (out[:, :, 394:] == 7).all()


# -- memory ---------------------------------------------------------------------------------------

RSS_SCRIPT = """
    zarrcore.config.set(num_threads=2)
    base = status_kib("VmRSS")
    a = zarrcore.open_array(sys.argv[1])
    out = a[...]
    print(status_kib("VmHWM") - base, out.nbytes // 1024, int(out[-1, -1, -1]))
"""


@pytest.mark.slow
@pytest.mark.measures_memory
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("comp", ["none", "zstd-crc"])
def test_read_memory_is_bounded(tmp_path, comp):
    """A whole-array read whose chunks land on non-contiguous regions needs about the output
    and no chunk-sized buffer: 64 MiB of output in 8 MiB chunks, on two threads."""
    data = np.random.default_rng(7).integers(0, 1000, (256, 256, 512), dtype="uint16")
    make(tmp_path / "a", data, (128, 128, 256), comp)
    expect = int(data[-1, -1, -1])
    del data
    grown, out_kib, last = run_measured(RSS_SCRIPT, tmp_path / "a")
    assert last == expect
    # Whole-chunk buffers would add 2 threads x (8 MiB file + 8 MiB scratch) = 32 MiB; streamed
    # reads keep a few bounded buffers per thread (blocks, window, zstd's history window).
    assert grown < out_kib + 16 * 1024, (grown, out_kib)


STREAM_SCRIPT = """
    path, sharded = sys.argv[1], sys.argv[2] == "1"
    zarrcore.config.set(num_threads=2)
    shape, block = (1024, 1024, 512), 64
    kw = {"chunks": (64, 64, 64), "shards": (64, 256, 512)} if sharded else {"chunks": (64, 256, 512)}
    a = zarrcore.create_array(path, shape=shape, dtype="uint16", fill_value=0, **kw)
    base = status_kib("VmRSS")
    for k in range(shape[0] // block):
        a[k * block:(k + 1) * block] = numpy.full((block,) + shape[1:], k + 1, "uint16")
    wrong = 0
    for k in range(shape[0] // block):
        out = a[k * block:(k + 1) * block]
        wrong += int(out.min() != k + 1 or out.max() != k + 1)
        del out
    print(status_kib("VmHWM") - base, wrong)
"""


@pytest.mark.slow
@pytest.mark.measures_memory
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "shards"])
def test_streaming_a_large_array_block_by_block_keeps_memory_bounded(tmp_path, sharded):
    """Writing then reading 1 GiB in 64 MiB blocks holds a few blocks at most, whatever the
    array's size: nothing is kept per chunk or shard (so arrays larger than RAM stream)."""
    grown_kib, wrong = run_measured(STREAM_SCRIPT, tmp_path / "a", int(sharded))
    assert wrong == 0
    # A block being written (64 MiB), its chunks in flight, and a read block with its pool
    # block: well under a quarter of the 1 GiB streamed.
    assert grown_kib < 256 * 1024, grown_kib


# -- locks -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [7, 0], ids=["replace", "delete"])
def test_whole_chunk_write_waits_for_the_store_lock(tmp_path, value):
    """A whole-chunk write (or the delete of a chunk left all fill) never lands inside
    another writer's read-modify-write of the same key."""
    a = make(tmp_path / "a", np.ones((16, 16), np.uint16), (8, 8), "zstd", fill_value=0)
    assert a._engine.routes.chunk_batch is not None

    def write():
        a[0:8, 0:8] = value

    assert waits_for_the_lock(zarrcore.LocalStore(tmp_path / "a"), "c/0/0", write)
    np.testing.assert_array_equal(a[0:8, 0:8], value)
    assert os.path.exists(chunk_path(a, 0, 0)) == bool(value)


def test_a_chains_native_form_composes_its_codecs_forms():
    """The pipeline asks the chain which compiled form runs it: its codecs' native forms
    composed, None when one has none or they make no chain the core runs."""
    from zarrcore.codecs.base import ChunkSpec
    from zarrcore.engine import CodecChain

    spec = ChunkSpec((4,), np.dtype(">i4"), 7)

    def form(*codecs):
        return CodecChain([{"name": "bytes", "configuration": {"endian": "little"}}, *codecs],
                          spec).native_form()

    zstd = {"name": "zstd", "configuration": {"level": 2, "checksum": True}}
    assert form(zstd, {"name": "crc32c"}) == {
        "crc32c": True, "compressor": "zstd", "clevel": 2, "checksum": True, "itemsize": 4,
        "swap_size": 4, "fill": np.asarray(7, ">i4").tobytes(), "fill_floatsize": 0,
        # Each stage's bound on what it writes: zstd's slack over 16 bytes, then 4 of crc32c.
        "max_stored": size_with_slack(16) + 4}
    assert form()["compressor"] is None and form()["crc32c"] is False
    assert form({"name": "numcodecs.zlib", "configuration": {"level": 1}})["compressor"] == "zlib"
    # numcodecs.shuffle first on the serialized items (HDF5's shuffle in v3) is the stage of
    # v2's shuffle filter.
    shuffle = {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}
    zlib = {"name": "numcodecs.zlib", "configuration": {"level": 1}}
    assert form(shuffle, zlib) == {**form(zlib), "byte_shuffle": 4}
    assert form(zlib, shuffle) is None and form(shuffle, shuffle) is None
    # No form: a codec the core does not run, two compressors, a crc32c not last.
    assert form({"name": "numcodecs.bz2"}) is None
    assert form(zstd, {"name": "gzip"}) is None
    assert form({"name": "crc32c"}, zstd) is None
    assert CodecChain([{"name": "transpose", "configuration": {"order": [0]}}, "bytes"],
                      spec.evolve(dtype=np.dtype("u1"))).native_form() is None


@pytest.mark.parametrize("zarr_format, encoding, sep", [
    (3, "default", "/"), (3, "default", "."), (3, "v2", "."), (2, "v2", "."), (2, "v2", "/")])
def test_compiled_writes_name_chunk_files_digit_by_digit(tmp_path, zarr_format, encoding, sep):
    """The compiled batch formats each chunk's file name itself (zc_key_format): every digit
    of coordinates of one digit to eighteen, with the array's separator, and the names
    zarr-python reads (v3 default keys start with "c")."""
    top = 2**58 + 3  # (a grid holds fewer than 2**63 chunks)
    a = zarrcore.create_array(tmp_path / "a", shape=(top, 120), chunks=(1, 10), dtype="u1",
                              fill_value=0, zarr_format=zarr_format,
                              chunk_key_encoding={"name": encoding, "separator": sep})
    a[top - 1, 100:120] = 5
    a[0, :10] = 1
    a[1234567, 10:20] = 2
    head = ["c"] if encoding == "default" else []
    expected = {sep.join(head + [str(i), str(j)])
                for i, j in [(top - 1, 10), (top - 1, 11), (0, 0), (1234567, 1)]}
    found = {os.path.relpath(os.path.join(d, f), tmp_path / "a").replace(os.sep, "/")
             for d, _, files in os.walk(tmp_path / "a") for f in files
             if f not in ("zarr.json", ".zarray", ".zattrs")}
    assert found == expected
    assert a[top - 1, 95:].tolist() == [0] * 5 + [5] * 20
    assert a[1234567, 9:21].tolist() == [0] + [2] * 10 + [0]
