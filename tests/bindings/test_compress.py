"""zarrcore._native.compress against the reference implementations, plus hostile input."""
import gzip
import os
import zlib

import crc32c as crc32c_ref
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarrcore._native import compress as c
from zarrcore.errors import ChunkDecodeError

blosc = pytest.importorskip("blosc", reason="python-blosc, the reference, is in the test extra")
numcodecs = pytest.importorskip("numcodecs")
zstandard = pytest.importorskip("zstandard")


# Compressible data: runs and repeats, so the codecs exercise their match paths.
payloads = st.one_of(
    st.binary(max_size=3000),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=40), st.integers(1, 300)),
)

DECODERS = {
    "blosc": c.blosc_decompress,
    "zstd": c.zstd_decompress,
    "gzip": c.gzip_decompress,
    "zlib": c.zlib_decompress,
    "lz4": c.lz4_decompress,
}


def encoders():
    return {
        "blosc": lambda d: c.blosc_compress(d, 4, 5, 1, "zstd"),
        "zstd": lambda d: c.zstd_compress(d, 3, True),
        "gzip": lambda d: c.gzip_compress(d, 6),
        "zlib": lambda d: c.zlib_compress(d, 6),
        "lz4": lambda d: c.lz4_compress(d),
    }


def zstd_stream(data):
    """A frame without a content size, as streaming writers produce."""
    obj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return obj.compress(data) + obj.flush()


# ---- round trips against references -----------------------------------------------------


@given(payloads, st.sampled_from(["blosclz", "lz4", "lz4hc", "zlib", "zstd"]),
       st.integers(0, 9), st.integers(0, 2), st.sampled_from([1, 2, 4, 8, 3, 300]))
def test_blosc_matches_python_blosc(data, cname, clevel, shuffle, typesize):
    ours = c.blosc_compress(data, typesize, clevel, shuffle, cname)
    assert blosc.decompress(ours) == data
    assert c.blosc_decompress(ours) == data
    assert c.blosc_decoded_size(ours) == len(data)
    theirs = blosc.compress(data, typesize=min(typesize, 255), clevel=clevel, shuffle=shuffle, cname=cname)
    assert c.blosc_decompress(theirs) == data
    out = bytearray(len(data))
    assert c.blosc_decompress(theirs, out) is out and out == data


def test_blosc_blocksize_and_numpy_input():
    a = np.arange(100_000, dtype="f8")
    enc = c.blosc_compress(a, 8, 5, 2, "lz4", blocksize=4096)
    out = np.empty_like(a)
    c.blosc_decompress(enc, out)
    np.testing.assert_array_equal(out, a)
    assert np.frombuffer(blosc.decompress(enc), "f8").tolist() == a.tolist()


@given(payloads, st.integers(-5, 19), st.booleans())
def test_zstd_matches_zstandard(data, level, checksum):
    ours = c.zstd_compress(data, level, checksum)
    assert zstandard.ZstdDecompressor().decompress(ours) == data
    assert c.zstd_decompress(ours) == data
    for theirs in (zstandard.ZstdCompressor(level=3).compress(data), zstd_stream(data),
                   numcodecs.Zstd(level=1).encode(data)):
        assert c.zstd_decompress(theirs) == data
        out = bytearray(len(data))
        c.zstd_decompress(theirs, out)
        assert out == data


@given(st.lists(payloads, min_size=1, max_size=4), st.booleans())
def test_zstd_concatenated_frames(parts, with_size):
    frames = [c.zstd_compress(p, 1, False) if with_size else zstd_stream(p) for p in parts]
    joined = b"".join(parts)
    assert c.zstd_decompress(b"".join(frames)) == joined
    out = bytearray(len(joined))
    c.zstd_decompress(b"".join(frames), out)
    assert out == joined


def test_zstd_unknown_size_large_output():
    data = os.urandom(1000) * 3000  # several MB: the streaming buffer must grow
    assert c.zstd_decompress(zstd_stream(data)) == data


@given(payloads, st.integers(0, 9))
def test_gzip_and_zlib_match_stdlib(data, level):
    assert gzip.decompress(c.gzip_compress(data, level)) == data
    assert zlib.decompress(c.zlib_compress(data, level)) == data
    assert c.gzip_decompress(gzip.compress(data, level)) == data
    assert c.zlib_decompress(zlib.compress(data, level)) == data
    assert c.gzip_decompress(numcodecs.GZip(level).encode(data)) == data
    out = bytearray(len(data))
    c.gzip_decompress(gzip.compress(data), out)
    assert out == data
    out = bytearray(len(data))
    c.zlib_decompress(zlib.compress(data), out)
    assert out == data


@given(st.lists(payloads, min_size=1, max_size=4))
def test_gzip_concatenated_members(parts):
    stream = b"".join(gzip.compress(p) for p in parts)
    joined = b"".join(parts)
    assert c.gzip_decompress(stream) == joined
    out = bytearray(len(joined))
    c.gzip_decompress(stream, out)
    assert out == joined


def test_zlib_rejects_trailing_stream():
    with pytest.raises(ChunkDecodeError):
        c.zlib_decompress(zlib.compress(b"a") + zlib.compress(b"b"))


@given(payloads, st.integers(1, 20))
def test_lz4_matches_numcodecs(data, accel):
    ours = c.lz4_compress(data, accel)
    if data:  # numcodecs cannot decode its own encoding of b""
        assert numcodecs.LZ4().decode(ours) == data
    assert c.lz4_decompress(numcodecs.LZ4(accel).encode(data)) == data
    out = bytearray(len(data))
    c.lz4_decompress(ours, out)
    assert out == data


@given(st.binary(max_size=5000), st.integers(0, 2**32 - 1))
def test_crc32c_matches_package(data, value):
    assert c.crc32c(data) == crc32c_ref.crc32c(data)
    assert c.crc32c(data, value) == crc32c_ref.crc32c(data, value)
    half = len(data) // 2
    assert c.crc32c(data[half:], c.crc32c(data[:half])) == c.crc32c(data)


def test_crc32c_known_vector_and_buffers():
    assert c.crc32c(b"123456789") == 0xE3069283
    assert c.crc32c(b"") == 0
    a = np.arange(10, dtype="u4")
    assert c.crc32c(a) == crc32c_ref.crc32c(a.tobytes())
    assert c.crc32c(memoryview(bytearray(b"123456789"))) == 0xE3069283


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_empty_payload_round_trip(name):
    enc = encoders()[name](b"")
    assert DECODERS[name](enc) == b""
    assert DECODERS[name](enc, bytearray()) == bytearray()


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_out_accepts_numpy_and_returns_it(name):
    a = np.linspace(0, 1, 5000)
    enc = encoders()[name](a)
    out = np.empty_like(a)
    assert DECODERS[name](enc, out) is out
    np.testing.assert_array_equal(out, a)


# ---- hostile input ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DECODERS))
@pytest.mark.parametrize("delta", [-1, 1, 1000])
def test_out_of_wrong_size_raises(name, delta):
    data = b"abc" * 1000
    enc = encoders()[name](data)
    with pytest.raises(ChunkDecodeError):
        DECODERS[name](enc, bytearray(len(data) + delta))


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_out_must_be_writable_contiguous(name):
    enc = encoders()[name](b"x" * 16)
    with pytest.raises(TypeError):
        DECODERS[name](enc, b"\0" * 16)
    with pytest.raises(TypeError):
        DECODERS[name](enc, np.zeros((4, 8), "u1")[:, ::2])


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_empty_and_tiny_input_raise(name):
    for bad in (b"", b"\0", b"\xff" * 3, b"\0" * 15):
        with pytest.raises(ChunkDecodeError):
            DECODERS[name](bad)


@given(st.sampled_from(sorted(DECODERS)), st.binary(max_size=300), st.booleans())
def test_random_bytes_never_crash(name, data, with_out):
    try:
        if with_out:
            DECODERS[name](data, bytearray(len(data) * 3))
        else:
            DECODERS[name](data)
    except ChunkDecodeError:
        pass


@given(st.sampled_from(sorted(DECODERS)), payloads.filter(len), st.data())
def test_truncated_and_corrupted_frames_raise(name, payload, draw):
    enc = encoders()[name](payload)
    cut = draw.draw(st.integers(0, len(enc) - 1))
    with pytest.raises(ChunkDecodeError):
        DECODERS[name](enc[:cut])
    with pytest.raises(ChunkDecodeError):
        DECODERS[name](enc[:cut], bytearray(len(payload)))
    # A flipped byte must either decode to something (unchecked formats) or raise.
    pos = draw.draw(st.integers(0, len(enc) - 1))
    flipped = bytearray(enc)
    flipped[pos] ^= draw.draw(st.integers(1, 255))
    try:
        DECODERS[name](bytes(flipped))
    except ChunkDecodeError:
        pass


def test_trailing_garbage_raises():
    data = b"hello world" * 100
    for name, enc in encoders().items():
        with pytest.raises(ChunkDecodeError):
            DECODERS[name](enc(data) + b"\x01garbage", bytearray(len(data)))


def test_zstd_checksum_detects_corruption():
    data = os.urandom(200) * 10
    enc = bytearray(c.zstd_compress(data, 1, True))
    enc[-1] ^= 1  # the 4-byte content checksum ends the frame
    with pytest.raises(ChunkDecodeError):
        c.zstd_decompress(bytes(enc))


def test_oversized_claims_raise_before_allocating():
    # An lz4 prefix and a zstd frame header claiming far more than the input can hold.
    with pytest.raises(ChunkDecodeError):
        c.lz4_decompress((2**31 - 1).to_bytes(4, "little") + b"\0" * 8)
    # zstd frame header: magic, descriptor 0xE0 (single segment, 8-byte content size), size.
    huge = b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + (2**50).to_bytes(8, "little") + b"\x01\x00\x00"
    assert zstandard.get_frame_parameters(huge).content_size == 2**50
    with pytest.raises(ChunkDecodeError):
        c.zstd_decompress(huge)
    # A blosc header whose cbytes disagrees with the buffer length.
    enc = bytearray(c.blosc_compress(b"x" * 1000, 1, 5, 0, "lz4"))
    enc[12:16] = (len(enc) + 1).to_bytes(4, "little")
    with pytest.raises(ChunkDecodeError):
        c.blosc_decompress(bytes(enc))


@pytest.mark.parametrize("cname", ["snappy", "brotli", ""])
def test_unavailable_blosc_compressors(cname, capfd):
    with pytest.raises(ValueError, match="not available"):
        c.blosc_compress(b"abc" * 100, 1, 5, 0, cname)
    assert capfd.readouterr().err == ""


def test_threads_share_nothing():
    # The GIL is released and zstd keeps per-thread contexts: run everything concurrently.
    from concurrent.futures import ThreadPoolExecutor

    def work(i):
        data = bytes([i % 251]) * (1000 + i) + os.urandom(500)
        for enc, dec in ((lambda d: c.zstd_compress(d, i % 7, bool(i & 1)), c.zstd_decompress),
                         (lambda d: c.blosc_compress(d, 4, 5, 1, "zstd"), c.blosc_decompress),
                         (lambda d: c.gzip_compress(d, 1), c.gzip_decompress)):
            assert dec(enc(data)) == data
            assert dec(enc(data), bytearray(len(data))) == data
        return True

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(200)))


def test_compress_parameter_errors():
    with pytest.raises(ValueError):
        c.gzip_compress(b"x", 10)
    with pytest.raises(ValueError):
        c.zstd_compress(b"x", 99, False)
    with pytest.raises(ValueError):
        c.blosc_compress(b"x", 0, 5, 0, "lz4")
    with pytest.raises(TypeError):
        c.zstd_compress(np.zeros((4, 4))[:, ::2], 1, False)
