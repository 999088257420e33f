"""Codec classes: round trips, numcodecs interop, JSON forms and validation."""
import gzip
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarrcore.codecs import (
    BloscCodec, BytesCodec, ChunkSpec, Crc32cCodec, GzipCodec, LZ4Codec, TransposeCodec, ZlibCodec,
    ZstdCodec, codec_from_json, codec_from_v2,
)
from zarrcore.errors import ChecksumError, ChunkDecodeError, MetadataError, UnknownCodecError

numcodecs = pytest.importorskip("numcodecs")


dtypes = st.sampled_from(["u1", "i2", "u4", "i8", "f2", "f4", "f8", "c8", "c16", "?", "M8[ms]"]).map(np.dtype)
chunks = hnp.arrays(dtypes, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=8))


def spec_of(a):
    return ChunkSpec(a.shape, a.dtype)


def bytes_bytes_codecs():
    return [
        BloscCodec(), BloscCodec("lz4", 1, "bitshuffle"), BloscCodec("zlib", 9, "noshuffle"),
        BloscCodec("blosclz", 0, "shuffle", typesize=3, blocksize=1024), ZstdCodec(),
        ZstdCodec(level=-3, checksum=True), GzipCodec(), GzipCodec(0), ZlibCodec(), ZlibCodec(9),
        LZ4Codec(), LZ4Codec(10), Crc32cCodec(),
    ]


# ---- round trips ------------------------------------------------------------------------


@given(chunks, st.sampled_from(["little", "big"]))
def test_bytes_codec_round_trip(a, endian):
    spec = spec_of(a)
    codec = BytesCodec(endian).resolve(spec)
    encoded = codec.encode(a, spec)
    order = "<" if endian == "little" else ">"
    stored = a.astype(a.dtype.newbyteorder(order)) if a.dtype.itemsize > 1 else a
    assert bytes(encoded) == stored.tobytes()
    decoded = codec.decode(bytes(encoded), spec)
    assert decoded.shape == a.shape and decoded.dtype == a.dtype
    assert decoded.tobytes() == a.tobytes()
    out = np.empty_like(a)
    assert codec.decode(bytearray(encoded), spec, out=out) is out
    assert out.tobytes() == a.tobytes()


def test_bytes_codec_resolve_and_validation():
    assert BytesCodec().resolve(ChunkSpec((3,), np.dtype("u1"))).to_json() == {"name": "bytes"}
    assert BytesCodec().resolve(ChunkSpec((3,), np.dtype("f4"))).to_json() == {
        "name": "bytes", "configuration": {"endian": "little"}}
    with pytest.raises(MetadataError):
        BytesCodec(None).resolve(ChunkSpec((3,), np.dtype("i4")))
    with pytest.raises(MetadataError):
        BytesCodec("middle")
    with pytest.raises(MetadataError):
        BytesCodec().resolve(ChunkSpec((3,), np.dtype(object)))
    assert codec_from_json({"name": "bytes"}) == BytesCodec("little")


@pytest.mark.parametrize("delta", [-1, 1])
def test_bytes_codec_wrong_length(delta):
    spec = ChunkSpec((4, 4), np.dtype("f4"))
    with pytest.raises(ChunkDecodeError, match="64"):
        BytesCodec().decode(b"\0" * (64 + delta), spec)
    with pytest.raises(ChunkDecodeError):
        BytesCodec().decode(b"\0" * (64 + delta), spec, out=np.empty((4, 4), "f4"))


@given(chunks, st.data())
def test_transpose_codec_round_trip(a, data):
    order = data.draw(st.permutations(range(a.ndim)))
    codec = TransposeCodec(order).resolve(spec_of(a))
    enc = codec.encode(a, spec_of(a))
    assert codec.encoded_spec(spec_of(a)).shape == enc.shape
    np.testing.assert_array_equal(enc, a.transpose(order))
    np.testing.assert_array_equal(codec.decode(enc, spec_of(a)), a)


@pytest.mark.parametrize("order", [[0, 0], [1, 2], "C", [0.0, 1.0], [True, False], 3])
def test_transpose_codec_invalid_order(order):
    with pytest.raises(MetadataError):
        TransposeCodec(order)


def test_transpose_codec_ndim_mismatch():
    with pytest.raises(MetadataError):
        TransposeCodec([1, 0]).resolve(ChunkSpec((2, 3, 4), np.dtype("u1")))


@given(chunks, st.sampled_from(range(len(bytes_bytes_codecs()))))
def test_bytes_bytes_round_trip(a, which):
    spec = spec_of(a)
    codec = bytes_bytes_codecs()[which].resolve(spec)
    raw = a.tobytes()
    enc = codec.encode(raw, spec)
    assert bytes(codec.decode(enc, spec)) == raw
    out = np.empty_like(a)
    assert codec.decode_into(bytes(enc), out, spec) == a.nbytes
    assert out.tobytes() == raw
    with pytest.raises(ChunkDecodeError):
        codec.decode_into(bytes(enc), bytearray(a.nbytes + 1), spec)


# ---- interop with numcodecs / stdlib ----------------------------------------------------


@given(chunks)
def test_numcodecs_interop(a):
    spec = spec_of(a)
    raw = a.tobytes()
    pairs = [
        (BloscCodec("lz4", 5, "shuffle"), numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)),
        (BloscCodec("zstd", 3, "bitshuffle"), numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE)),
        (ZstdCodec(5, True), numcodecs.Zstd(5, checksum=True)),
        (GzipCodec(5), numcodecs.GZip(5)),
        (ZlibCodec(5), numcodecs.Zlib(5)),
        (LZ4Codec(), numcodecs.LZ4()),
        (Crc32cCodec(), numcodecs.CRC32C()),
    ]
    for ours, theirs in pairs:
        ours = ours.resolve(spec)
        assert bytes(theirs.decode(ours.encode(raw, spec))) == raw, ours
        assert bytes(ours.decode(theirs.encode(a), spec)) == raw, ours
        assert codec_from_v2(theirs.get_config()) == codec_from_v2(ours.to_v2_json())
    assert bytes(Crc32cCodec().encode(raw, spec)) == bytes(numcodecs.CRC32C().encode(raw))


def test_gzip_decodes_stdlib_members():
    spec = ChunkSpec((10,), np.dtype("u1"))
    data = bytes(range(10))
    assert bytes(GzipCodec().decode(gzip.compress(data[:4]) + gzip.compress(data[4:]), spec)) == data
    assert bytes(ZlibCodec().decode(zlib.compress(data), spec)) == data


# ---- checksums and damage ---------------------------------------------------------------


def test_crc32c_codec_detects_damage():
    spec = ChunkSpec((100,), np.dtype("u1"))
    enc = bytearray(Crc32cCodec().encode(bytes(range(100)), spec))
    assert enc[-4:] == numcodecs.CRC32C().encode(bytes(range(100)))[-4:]
    for pos in (0, 50, 99, 100, 103):
        bad = bytearray(enc)
        bad[pos] ^= 0x10
        with pytest.raises(ChecksumError):
            Crc32cCodec().decode(bytes(bad), spec)
        with pytest.raises(ChecksumError):
            Crc32cCodec().decode_into(bytes(bad), bytearray(100), spec)
    with pytest.raises(ChunkDecodeError):
        Crc32cCodec().decode(b"abc", spec)
    assert Crc32cCodec().decode(b"\0\0\0\0", spec).nbytes == 0


@pytest.mark.parametrize("which", range(len(bytes_bytes_codecs()) - 1))
def test_compressor_codecs_reject_garbage(which):
    codec = bytes_bytes_codecs()[which]
    spec = ChunkSpec((64,), np.dtype("f8"))
    enc = codec.resolve(spec).encode(np.arange(64.0).tobytes(), spec)
    for bad in (b"", b"\x00" * 7, bytes(enc)[: len(enc) // 2], b"\x5a" * 200):
        with pytest.raises(ChunkDecodeError):
            codec.decode(bad, spec)
        with pytest.raises(ChunkDecodeError):
            codec.decode_into(bad, bytearray(512), spec)


# ---- JSON forms -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", bytes_bytes_codecs() + [BytesCodec("big"), TransposeCodec([2, 0, 1])],
                         ids=repr)
def test_json_round_trips(codec):
    if codec.name:
        assert codec_from_json(codec.to_json()) == codec
    if hasattr(codec, "to_v2_json"):  # v2 has no blosc typesize, so compare the v2 forms
        assert codec_from_v2(codec.to_v2_json()).to_v2_json() == codec.to_v2_json()


def test_json_matches_zarr_python():
    zcodecs = pytest.importorskip("zarr.codecs")
    spec = ChunkSpec((10,), np.dtype("f4"))
    assert BloscCodec(shuffle="shuffle").resolve(spec).to_json() == zcodecs.BloscCodec(
        typesize=4, shuffle="shuffle").to_dict()
    assert ZstdCodec().to_json() == zcodecs.ZstdCodec().to_dict()
    assert GzipCodec(5).to_json() == zcodecs.GzipCodec(level=5).to_dict()
    assert Crc32cCodec().to_json() == zcodecs.Crc32cCodec().to_dict()
    assert BytesCodec().to_json() == zcodecs.BytesCodec().to_dict()
    zt = zcodecs.TransposeCodec(order=(1, 0)).to_dict()
    assert TransposeCodec([1, 0]).to_json() == {**zt, "configuration": {"order": list(zt["configuration"]["order"])}}


def test_v2_configs_match_numcodecs():
    assert BloscCodec("lz4", 5, "shuffle").to_v2_json() == numcodecs.Blosc("lz4", 5, 1).get_config()
    # As zarr-python writes it: a false checksum is left out (tensorstore rejects the key).
    assert ZstdCodec(0).to_v2_json() == {"id": "zstd", "level": 0}
    assert ZstdCodec(3, True).to_v2_json() == numcodecs.Zstd(3, checksum=True).get_config()
    assert GzipCodec(1).to_v2_json() == numcodecs.GZip().get_config()
    assert ZlibCodec().to_v2_json() == numcodecs.Zlib().get_config()
    assert LZ4Codec().to_v2_json() == numcodecs.LZ4().get_config()
    assert Crc32cCodec().to_v2_json() == numcodecs.CRC32C().get_config()


def test_blosc_v2_auto_shuffle():
    auto = codec_from_v2({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1, "blocksize": 0})
    assert auto.to_v2_json()["shuffle"] == -1
    one = auto.resolve(ChunkSpec((8,), np.dtype("u1")))
    eight = auto.resolve(ChunkSpec((8,), np.dtype("f8")))
    assert (one.shuffle, one.typesize) == ("bitshuffle", 1)
    assert (eight.shuffle, eight.typesize) == ("shuffle", 8)
    explicit = BloscCodec(typesize=2, shuffle="noshuffle")
    assert explicit.resolve(ChunkSpec((8,), np.dtype("f8"))) is explicit
    spec = ChunkSpec((8,), np.dtype("u2"))
    raw = np.arange(8, dtype="u2").tobytes()
    assert numcodecs.Blosc("lz4", 5, -1).decode(auto.encode(raw, spec)) == raw


@pytest.mark.parametrize("config", [
    {"cname": "brotli"}, {"clevel": 10}, {"clevel": -1}, {"clevel": True}, {"shuffle": "yes"},
    {"shuffle": 1}, {"typesize": 0}, {"blocksize": -1}, {"bogus": 1},
])
def test_blosc_invalid_config(config):
    with pytest.raises(MetadataError):
        codec_from_json({"name": "blosc", "configuration": config})


@pytest.mark.parametrize("doc", [
    {"name": "zstd", "configuration": {"level": 23}},
    {"name": "zstd", "configuration": {"checksum": 1}},
    {"name": "gzip", "configuration": {"level": 10}},
    {"name": "gzip", "configuration": {"level": "6"}},
    {"name": "crc32c", "configuration": {"x": 1}},
])
def test_invalid_configs(doc):
    with pytest.raises(MetadataError):
        codec_from_json(doc)


def test_v2_only_and_unknown():
    with pytest.raises(UnknownCodecError):
        codec_from_json({"name": "lz4"})
    with pytest.raises(UnknownCodecError):
        codec_from_json({"name": "zlib"})
    with pytest.raises(MetadataError):
        codec_from_v2({"id": "blosc", "shuffle": 7})
    with pytest.raises(MetadataError):
        codec_from_v2({"id": "lz4", "acceleration": "fast"})
    assert codec_from_v2({"id": "zstd", "level": 3}) == ZstdCodec(3)


def test_snappy_reads_metadata_but_cannot_encode():
    codec = BloscCodec("snappy", shuffle="noshuffle", typesize=1)
    with pytest.raises(MetadataError, match="snappy"):
        codec.encode(b"abc", ChunkSpec((3,), np.dtype("u1")))
