"""Zarr v2 compressors and filters by numcodecs id, against numcodecs and zarr-python.

Every case is written by zarr-python (numcodecs) and by zarrcore with the same configuration:
each reads the other's array exactly, and where the encoding is deterministic the stored
chunks are byte-for-byte the same.
"""
import json
import os

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import ChecksumError, ChunkDecodeError, MetadataError, UnknownCodecError

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")
from numcodecs import (  # noqa: E402
    BZ2, CRC32, CRC32C, LZ4, LZMA, Adler32, AsType, BitRound, Blosc, Categorize, Delta,
    FixedScaleOffset, Fletcher32, GZip, JenkinsLookup3, PackBits, Quantize, Shuffle, Zlib, Zstd,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SHAPE, CHUNKS = (13, 7), (5, 4)  # partial edge chunks in both dimensions
LABELS = ["apple", "pear", "fig"]


def sample(dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, SHAPE).astype(dtype)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -50
        return rng.integers(lo, 100, SHAPE).astype(dtype)
    if dtype.kind == "f":
        return (1000 + rng.random(SHAPE)).astype(dtype)
    if dtype.kind == "U":
        return rng.choice(LABELS + ["kiwi"], SHAPE).astype(dtype)
    raise AssertionError(dtype)


def chunk_files(path):
    return {name: (path / name).read_bytes() for name in os.listdir(path) if not name.startswith(".")}


def write_both(tmp_path, data, filters, compressor, order="C"):
    """(zarr-python's array dir, zarrcore's array dir) holding `data`."""
    peer, ours = tmp_path / "peer.zarr", tmp_path / "ours.zarr"
    z = zarr.create_array(str(peer), shape=data.shape, chunks=CHUNKS, dtype=data.dtype, zarr_format=2,
                          filters=filters, compressors=compressor, order=order, fill_value=None)
    z[...] = data
    a = zarrcore.create_array(
        str(ours), shape=data.shape, chunks=CHUNKS, dtype=data.dtype, zarr_format=2, order=order,
        filters=None if filters is None else [f.get_config() for f in filters],
        compressors=None if compressor is None else compressor.get_config(),
    )
    a[...] = data
    return peer, ours


def check_cross_reads(peer, ours, data, exact_values=True):
    expected = zarr.open_array(str(peer), mode="r")[...]
    if exact_values:
        np.testing.assert_array_equal(expected, data)
    np.testing.assert_array_equal(zarrcore.open_array(str(peer), mode="r")[...], expected)
    np.testing.assert_array_equal(zarr.open_array(str(ours), mode="r")[...], expected)
    np.testing.assert_array_equal(zarrcore.open_array(str(ours), mode="r")[...], expected)


FILTERS = [
    ("delta-i4", "<i4", [Delta("<i4")]),
    ("delta-i8-as-i2", "<i8", [Delta("<i8", astype="<i2")]),
    ("delta-u1", "|u1", [Delta("|u1")]),
    ("delta-f8", "<f8", [Delta("<f8")]),
    ("delta-f4-as-f8", "<f4", [Delta("<f4", astype="<f8")]),
    ("delta-f2", "<f2", [Delta("<f2")]),
    ("delta-big-endian", ">i2", [Delta(">i2")]),
    ("fixedscaleoffset", "<f8", [FixedScaleOffset(offset=1000, scale=100, dtype="<f8", astype="u1")]),
    ("fixedscaleoffset-f4-i2", "<f4", [FixedScaleOffset(offset=999.5, scale=1000, dtype="<f4", astype="<i2")]),
    ("quantize", "<f8", [Quantize(digits=3, dtype="<f8")]),
    ("quantize-as-f4", "<f8", [Quantize(digits=2, dtype="<f8", astype="<f4")]),
    ("bitround-f4", "<f4", [BitRound(keepbits=7)]),
    ("bitround-f8", "<f8", [BitRound(keepbits=30)]),
    ("bitround-all-bits", "<f2", [BitRound(keepbits=10)]),
    ("astype-f8-f4", "<f8", [AsType(encode_dtype="<f4", decode_dtype="<f8")]),
    ("astype-i8-i2", "<i8", [AsType(encode_dtype="<i2", decode_dtype="<i8")]),
    ("packbits", "|b1", [PackBits()]),
    ("categorize", "<U5", [Categorize(labels=LABELS, dtype="<U5")]),
    ("categorize-u2", "<U5", [Categorize(labels=LABELS, dtype="<U5", astype="<u2")]),
    ("shuffle-4", "<i4", [Shuffle(elementsize=4)]),
    ("shuffle-8", "<f8", [Shuffle(elementsize=8)]),
    ("shuffle-1", "<i2", [Shuffle(elementsize=1)]),
    ("crc32", "<i4", [CRC32()]),
    ("crc32-end", "<i4", [CRC32(location="end")]),
    ("adler32", "<u2", [Adler32()]),
    ("adler32-end", "<u2", [Adler32(location="end")]),
    ("fletcher32", "<f8", [Fletcher32()]),
    ("fletcher32-odd", "|u1", [Fletcher32()]),
    ("jenkins", "<i4", [JenkinsLookup3()]),
    ("jenkins-initval", "<i4", [JenkinsLookup3(initval=12345)]),
    ("crc32c", "<i4", [CRC32C()]),
    ("delta-crc32", "<i4", [Delta("<i4"), CRC32()]),
    ("shuffle-fletcher32", "<f8", [Shuffle(elementsize=8), Fletcher32()]),
    ("crc32c-then-delta", "<i4", [CRC32C(), Delta("<i4")]),
    ("astype-delta-adler", "<f8", [AsType(encode_dtype="<i4", decode_dtype="<f8"), Delta("<i4"), Adler32()]),
]
LOSSY = {"fixedscaleoffset", "fixedscaleoffset-f4-i2", "quantize", "quantize-as-f4", "bitround-f4",
         "bitround-f8", "astype-f8-f4", "astype-delta-adler", "categorize", "categorize-u2"}


@pytest.mark.parametrize("name,dtype,filters", FILTERS, ids=[c[0] for c in FILTERS])
def test_filter_matches_numcodecs(tmp_path, name, dtype, filters):
    data = sample(dtype)
    peer, ours = write_both(tmp_path, data, filters, None)
    stored = json.loads((ours / ".zarray").read_text())
    assert stored["filters"] == json.loads((peer / ".zarray").read_text())["filters"]
    assert chunk_files(ours) == chunk_files(peer)
    check_cross_reads(peer, ours, data, exact_values=name not in LOSSY)


@pytest.mark.parametrize("order", ["C", "F"])
def test_filters_flatten_in_memory_order(tmp_path, order):
    data = sample("<i4")
    peer, ours = write_both(tmp_path, data, [Delta("<i4", astype="<i8"), Fletcher32()], None, order)
    assert chunk_files(ours) == chunk_files(peer)
    check_cross_reads(peer, ours, data)


COMPRESSORS = [
    ("blosc-lz4-shuffle", Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)),
    ("blosc-zstd-bitshuffle", Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE)),
    ("blosc-blosclz-noshuffle", Blosc(cname="blosclz", clevel=9, shuffle=Blosc.NOSHUFFLE)),
    ("blosc-zlib-autoshuffle", Blosc(cname="zlib", clevel=1, shuffle=Blosc.AUTOSHUFFLE)),
    ("blosc-lz4hc-blocksize", Blosc(cname="lz4hc", clevel=5, shuffle=Blosc.SHUFFLE, blocksize=256)),
    ("zstd", Zstd(level=3)),
    ("zstd-checksum", Zstd(level=1, checksum=True)),
    ("zlib", Zlib(level=6)),
    ("gzip", GZip(level=5)),
    ("bz2", BZ2(level=9)),
    ("lzma", LZMA()),
    ("lzma-preset", LZMA(preset=1)),
    ("lz4", LZ4(acceleration=1)),
]
# gzip headers carry a timestamp; the others depend only on library versions, and the
# bundled libraries are the same.
DETERMINISTIC = {n for n, _ in COMPRESSORS} - {"gzip"}


@pytest.mark.parametrize("dtype", ["<f8", "|b1", ">i4"])
@pytest.mark.parametrize("name,compressor", COMPRESSORS, ids=[c[0] for c in COMPRESSORS])
def test_compressor_interop(tmp_path, name, compressor, dtype):
    data = sample(dtype)
    peer, ours = write_both(tmp_path, data, None, compressor)
    assert json.loads((ours / ".zarray").read_text())["compressor"]["id"] == compressor.codec_id
    ours_chunks, peer_chunks = chunk_files(ours), chunk_files(peer)
    assert ours_chunks.keys() == peer_chunks.keys()
    for key, blob in ours_chunks.items():
        assert compressor.decode(blob) == compressor.decode(peer_chunks[key])
        if name in DETERMINISTIC:
            assert blob == peer_chunks[key], key
    check_cross_reads(peer, ours, data)


# numcodecs' shuffle filter before a compressor (HDF5's shuffle and deflate, in kerchunk
# references): the compiled chain runs both, on a directory (one chunk batch) as on other
# stores (chunk waves), and stores what numcodecs stores.
SHUFFLED = [
    ("<f4", Shuffle(elementsize=4), Zlib(level=4)),
    (">f8", Shuffle(elementsize=8), Zstd(level=3)),
    ("<i2", Shuffle(elementsize=2), GZip(level=5)),
    ("<u8", Shuffle(elementsize=4), Blosc(cname="lz4", clevel=5, shuffle=Blosc.NOSHUFFLE)),
    ("<i4", Shuffle(elementsize=4), None),
]


@pytest.mark.parametrize("dtype,shuffle,compressor", SHUFFLED,
                         ids=[f"{d}-{s.elementsize}-{c and c.codec_id}" for d, s, c in SHUFFLED])
def test_shuffle_and_a_compressor_run_in_the_compiled_chain(tmp_path, dtype, shuffle,
                                                            compressor):
    from zarrcore.engine.planning import Route
    from zarrcore.metadata.indexing import numpy_indexer

    data = sample(dtype)
    peer, ours = write_both(tmp_path, data, [shuffle], compressor)
    memory = zarrcore.MemoryStore()
    in_memory = zarrcore.create_array(
        memory, shape=data.shape, chunks=CHUNKS, dtype=data.dtype, zarr_format=2,
        filters=[shuffle.get_config()],
        compressors=None if compressor is None else compressor.get_config())
    in_memory[...] = data
    decode = bytes if compressor is None else compressor.decode
    peer_chunks = chunk_files(peer)
    assert chunk_files(ours).keys() == peer_chunks.keys()
    for key, blob in peer_chunks.items():
        shuffled = decode(blob)  # exactly numcodecs' shuffled bytes, from either store
        assert decode(chunk_files(ours)[key]) == shuffled, key
        assert decode(memory.get(key)) == shuffled, key
    check_cross_reads(peer, ours, data)
    on_disk = zarrcore.open_array(str(peer), mode="r+")
    for a, route in ((on_disk, Route.CHUNK_BATCH), (in_memory, Route.CHUNK_WAVES)):
        indexer = numpy_indexer(np.s_[1:, 2:], a.shape, a.chunk_engine.chunk_shape)
        assert a.chunk_engine.routes.plan(indexer) is route
        assert a.chunk_engine.routes.plan(indexer, writing=True) is route
        np.testing.assert_array_equal(a[1:, 2:], data[1:, 2:])


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 8, 12, 16, 24])
def test_shuffle_kernels_move_byte_j_of_item_i_to_plane_j(size):
    from zarrcore._native import filters as _filters

    items = np.random.default_rng(size).integers(0, 256, (37, size), dtype=np.uint8)
    planes = items.T.copy()  # byte j of every item together, numcodecs' layout
    assert _filters.shuffle(items.tobytes(), size).tobytes() == planes.tobytes()
    assert _filters.unshuffle(planes.tobytes(), size).tobytes() == items.tobytes()


# Chunks whose last decoding step unshuffles their items (shuffle of the item size, no byte
# swap) are unshuffled straight into the region read; others go through a decoded chunk.
UNSHUFFLED_INTO_PLACE = [("<f4", 4), ("<i2", 2), ("<u8", 8), ("<c16", 16), ("<f8", 4),
                         (">f4", 4), ("|u1", 1)]


@pytest.mark.parametrize("dtype,elementsize", UNSHUFFLED_INTO_PLACE,
                         ids=[f"{d}-{e}" for d, e in UNSHUFFLED_INTO_PLACE])
def test_shuffled_chunks_read_into_any_region(dtype, elementsize):
    data = (np.arange(7 * 9 * 10) * 7919 % 4099).astype(dtype).reshape(7, 9, 10)
    a = zarrcore.create_array(
        zarrcore.MemoryStore(), shape=data.shape, chunks=(3, 4, 5), dtype=data.dtype,
        zarr_format=2, filters=[Shuffle(elementsize=elementsize).get_config()],
        compressors=Zlib(level=1).get_config())
    a[...] = data
    for sel in (np.s_[...], np.s_[1:, 2:7, 3:], np.s_[::2, 1::3, 4:9], np.s_[2, :, 3:8],
                np.s_[5:6, 3:4, 7:8], np.s_[:, 1, ::4], np.s_[0:3, 0:4, 0:5]):
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))
    stored = a.store.get("1.1.0")
    a.store.set("1.1.0", stored[:len(stored) // 2])  # cut short: an error naming the chunk
    with pytest.raises(ChunkDecodeError, match=r"1\.1\.0"):
        a[2:6, 3:7, 1:4]
    a[...] = data
    into = np.zeros((7, 9, 20), dtype=np.dtype(dtype).newbyteorder("="))
    a.get_basic_selection(np.s_[...], out=into[:, :, ::2])  # strided in the last dimension
    np.testing.assert_array_equal(into[:, :, ::2], data)
    assert not into[:, :, 1::2].any()


def test_compressor_after_filters_gets_a_byte_buffer(tmp_path):
    # numcodecs gives blosc the checksum filter's uint8 output, so typesize 1 (bit shuffle).
    data = sample("<f8")
    compressor = Blosc(cname="lz4", clevel=5, shuffle=Blosc.AUTOSHUFFLE)
    peer, ours = write_both(tmp_path, data, [CRC32C(), Adler32()], compressor)
    assert chunk_files(ours) == chunk_files(peer)
    check_cross_reads(peer, ours, data)


def test_jenkins_prefix_matches_numcodecs():
    from zarrcore.codecs.numcodecs_filters import JenkinsLookup3Filter

    raw = np.arange(37, dtype="u1")
    for prefix in ([1, 2, 3], list(range(15))):
        ours = JenkinsLookup3Filter(initval=9, prefix=prefix).encode_flat(raw)
        assert bytes(ours) == bytes(JenkinsLookup3(initval=9, prefix=bytes(prefix)).encode(raw))


def test_stored_configurations_are_numcodecs(tmp_path):
    a = zarrcore.create_array(
        tmp_path / "a", shape=(4,), dtype="<i4", zarr_format=2,
        filters=[{"id": "delta", "dtype": "<i4"}, {"id": "crc32"}, {"id": "jenkins_lookup3"}],
        compressors={"id": "blosc", "cname": "zstd", "clevel": 1, "shuffle": -1},
    )
    stored = json.loads((tmp_path / "a" / ".zarray").read_text())
    assert stored["filters"] == [Delta("<i4").get_config(), CRC32().get_config(),
                                 JenkinsLookup3().get_config()]
    assert stored["compressor"] == Blosc(cname="zstd", clevel=1, shuffle=-1).get_config()
    assert a.metadata.filters == stored["filters"]


def test_default_compressor_is_zstd(tmp_path):
    zarrcore.create_array(tmp_path / "a", shape=(4,), dtype="<i4", zarr_format=2)
    stored = json.loads((tmp_path / "a" / ".zarray").read_text())
    assert stored["compressor"]["id"] == "zstd" and stored["compressor"]["level"] == 0
    assert stored["filters"] is None


# -- errors ------------------------------------------------------------------------------

def _zarray(**changes):
    doc = {"zarr_format": 2, "shape": [8], "chunks": [4], "dtype": "<i4", "compressor": None,
           "fill_value": 0, "order": "C", "filters": None}
    return json.dumps({**doc, **changes}).encode()


@pytest.mark.parametrize("field", ["compressor", "filters"])
def test_unknown_codec_id_is_named(field):
    store = zarrcore.MemoryStore()
    codec = {"id": "nonesuch", "level": 1}
    store.set("x/.zarray", _zarray(**{field: codec if field == "compressor" else [codec]}))
    with pytest.raises(UnknownCodecError, match="nonesuch") as info:
        zarrcore.open_array(store, path="x")
    assert "x/.zarray" in str(info.value)


@pytest.mark.parametrize("filters", [
    [{"id": "delta", "dtype": "<i4", "bogus": 1}],
    [{"id": "shuffle", "elementsize": 3}],
    [{"id": "bitround", "keepbits": 3}],  # integer data
    [{"id": "quantize", "digits": 2, "dtype": "<i4"}],
    [{"id": "crc32", "location": "middle"}],
])
def test_invalid_filter_configuration(filters):
    store = zarrcore.MemoryStore()
    store.set("g/a/.zarray", _zarray(filters=filters))
    with pytest.raises(MetadataError, match=filters[0]["id"]) as info:
        zarrcore.open_array(store, path="g/a")
    assert str(info.value).startswith("g/a/.zarray: ")


@pytest.mark.parametrize("checksum", [CRC32(), Adler32(), Fletcher32(), JenkinsLookup3(), CRC32C()])
def test_corrupt_checksum_names_the_chunk(checksum):
    store = zarrcore.MemoryStore()
    a = zarrcore.create_array(store, shape=(8,), chunks=(4,), dtype="<i4", zarr_format=2,
                              filters=[checksum.get_config()], compressors=None)
    a[...] = np.arange(8)
    blob = bytearray(store.get("1"))
    blob[5] ^= 0xFF
    store.set("1", bytes(blob))
    np.testing.assert_array_equal(a[:4], np.arange(4))
    with pytest.raises(ChecksumError, match="'1'"):
        a[...]
    store.set("1", b"\x01\x02")
    with pytest.raises(ChunkDecodeError, match="'1'"):
        a[...]


@pytest.mark.parametrize("blob", [b"", b"\x05\x00\x00\x00", b"\x01\x00\x00\x00\x09\x00\x00\x00ab",
                                  b"\x01\x00\x00\x00\x01\x00\x00\x00ab"])
def test_corrupt_vlen_chunk(blob):
    store = zarrcore.MemoryStore()
    a = zarrcore.create_array(store, shape=(1,), dtype=str, zarr_format=2, compressors=None)
    store.set("0", blob)
    with pytest.raises(ChunkDecodeError, match="vlen-utf8"):
        a[...]


def test_truncated_compressed_chunk():
    store = zarrcore.MemoryStore()
    a = zarrcore.create_array(store, shape=(64,), dtype="<f8", zarr_format=2,
                              compressors={"id": "bz2", "level": 1})
    a[...] = np.arange(64.0)
    store.set("0", store.get("0")[:-3])
    with pytest.raises(ChunkDecodeError, match="bz2"):
        a[...]


def test_kernel_bindings_check_their_input():
    from zarrcore._native import filters as _filters

    with pytest.raises(ChunkDecodeError):
        _filters.unshuffle(b"abcde", 2)
    with pytest.raises(ChunkDecodeError):
        _filters.checksum_verify("fletcher32", b"abc", True)
    with pytest.raises(ValueError, match="unknown checksum"):
        _filters.checksum32("md5", b"")
    with pytest.raises(ValueError, match="prefix|parameters"):
        _filters.checksum32("crc32", b"x", 0, b"prefix")  # only jenkins_lookup3 takes one
    with pytest.raises(ValueError, match="native"):
        _filters.delta_encode(np.arange(4, dtype=">i4"))
    with pytest.raises(ValueError, match="unsupported"):
        _filters.delta_encode(np.zeros(4, dtype="c8"))
    assert _filters.checksum32("crc32", b"") == 0 and _filters.checksum32("adler32", b"") == 1
    assert bytes(_filters.shuffle(b"", 4)) == b"" and list(_filters.vlen_decode(b"\0\0\0\0", 0, True)) == []
    with pytest.raises(TypeError, match="str"):
        _filters.vlen_encode([b"bytes"], True)


def test_filters_take_buffers_as_the_compressors_do():
    """One buffer helper: datetime arrays give their bytes, and a strided array is refused with
    a TypeError naming the argument, by filters as by compressors."""
    from zarrcore._native import compress as _compress
    from zarrcore._native import filters as _filters

    times = np.arange(4).astype("M8[s]")
    assert bytes(_filters.shuffle(times, 8)) == bytes(_filters.shuffle(times.view(np.uint8), 8))
    assert _compress.buffer_nbytes(times) == 32
    strided = np.arange(8, dtype=np.uint8)[::2]
    for encode in (lambda: _filters.shuffle(strided, 1), lambda: _compress.zlib_compress(strided, 1)):
        with pytest.raises(TypeError, match="input must be a C-contiguous buffer"):
            encode()
