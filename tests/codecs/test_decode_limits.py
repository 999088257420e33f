"""Every decoder stops at the size the chunk can hold: a small stored chunk that inflates to
many times that fails fast, without decoding (or allocating) it in full."""
import json
import lzma
import math
import time
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.codecs import ChunkSpec
from zarrcore.codecs.chain import CodecChain
from zarrcore.errors import ChunkDecodeError, MetadataError, ZarrcoreError

numcodecs = pytest.importorskip("numcodecs")
zstandard = pytest.importorskip("zstandard")

BOMB = 64 << 20  # what most stored chunks below inflate to (the chunks hold 64 bytes)
# bz2.compress(bytes(256 << 20), 9): 208 bytes (compressing it anew takes seconds).
BZ2_BOMB = bytes.fromhex(
    "425a6839" + "3141592653590e09e2df015f8e4000c0000008200030804d4642a025a90a8097" * 5
    + "3141592653591ecee4db012a3fc000c0040008200030cc0529a6aaa8491b002248f1772453850906b17caf00")


def v2_store(compressor, chunk, dtype="|u1", filters=None):
    zarray = {"zarr_format": 2, "shape": [64], "chunks": [64], "dtype": dtype,
              "compressor": compressor, "fill_value": 0 if dtype != "|O" else "",
              "order": "C", "filters": filters}
    return {".zarray": json.dumps(zarray).encode(), "0": chunk}


@pytest.fixture(scope="module")
def bombs():
    """Small encodings of BOMB zero bytes (made once: compressing them takes a while)."""
    zeros = bytes(BOMB)
    return {
        "bz2": BZ2_BOMB,
        "lzma": lzma.compress(bytes(128 << 20), preset=0),
        "zlib": zlib.compress(zeros, 1),
        "gzip": numcodecs.GZip(1).encode(zeros),
        "zstd": zstandard.ZstdCompressor(write_content_size=True).compress(zeros),
        "zstd-unsized": zstandard.ZstdCompressor(write_content_size=False).compress(zeros),
        "lz4": (2**31 - 1).to_bytes(4, "little") + b"\x00" * 16,  # a size prefix that lies
        "blosc": numcodecs.Blosc("zstd", 1).encode(zeros),
    }


def fast_failure(read):
    t = time.perf_counter()
    with pytest.raises(ChunkDecodeError):
        read()
    assert time.perf_counter() - t < 0.2  # decoding all of it takes 0.3 s or (bz2) 1.3 s


@pytest.mark.parametrize("name", ["bz2", "lzma", "zlib", "gzip", "zstd", "zstd-unsized", "lz4", "blosc"])
def test_v2_bomb_fails_fast(bombs, name):
    codec_id = name.split("-")[0]
    store = v2_store({"id": codec_id}, bombs[name])
    a = zarrcore.open_array(store)
    fast_failure(lambda: a[:])


@pytest.mark.parametrize("name", ["gzip", "zstd", "zstd-unsized", "blosc"])
def test_v3_bomb_fails_fast(bombs, tmp_path, name):
    codec = {"name": name.split("-")[0]}
    for store in ({}, zarrcore.LocalStore(tmp_path / name)):
        a = zarrcore.create_array(store, shape=(64,), chunks=(64,), dtype="u1", compressors=[codec])
        a.store.set("c/0", bombs[name])
        fast_failure(lambda: a[:])
        fast_failure(lambda: a.vindex[[3]])  # the chunk-by-chunk path too


def test_codec_chain_bound_allows_legitimate_chunks():
    # Two compressors in a row: the outer one decodes to a little more than the chunk.
    a = zarrcore.create_array({}, shape=(1000,), chunks=(1000,), dtype="f8",
                              compressors=[{"name": "gzip"}, {"name": "zstd"}, {"name": "crc32c"}])
    data = np.random.default_rng(0).random(1000)
    a[:] = data
    assert np.array_equal(a[:], data)


def test_variable_length_chunks_are_bounded_by_max_chunk_bytes(bombs):
    zarrcore.config.set(max_chunk_bytes=1 << 20)
    store = v2_store({"id": "zstd"}, bombs["zstd-unsized"], dtype="|O",
                     filters=[{"id": "vlen-utf8"}])
    a = zarrcore.open_array(store)
    fast_failure(lambda: a[:])


def test_vlen_count_is_checked_before_allocating():
    zarrcore.config.set(max_chunk_bytes=2**40)
    zarray = {"zarr_format": 2, "shape": [2**31], "chunks": [2**31], "dtype": "|O",
              "compressor": None, "fill_value": "", "order": "C", "filters": [{"id": "vlen-utf8"}]}
    a = zarrcore.open_array({".zarray": json.dumps(zarray).encode(), "0": (2**31).to_bytes(4, "little")})
    fast_failure(lambda: a[:2])


# -- the size bound of a chain agrees with what its encoders make ------------------------------
def _crc32c_array(count):
    doc = {"zarr_format": 3, "node_type": "array", "shape": [16], "data_type": "uint8",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
           "codecs": [{"name": "bytes"}] + [{"name": "crc32c"}] * count}
    return {"zarr.json": json.dumps(doc).encode()}


def test_long_chains_open_fast_and_read_back_what_they_write():
    # main: 26-51 s to open 100,000 crc32c, and a chunk written through 17,000 of them was
    # refused on reading ("more than 65552 bytes"): the bound did not count what each adds.
    start = time.perf_counter()
    with pytest.raises(MetadataError, match="field 'codecs'.*100001 codecs exceed.*max_codecs"):
        zarrcore.open_array(_crc32c_array(100_000), mode="r")
    with zarrcore.config.set(max_codecs=20_000):
        a = zarrcore.open_array(_crc32c_array(17_000), mode="r+")
        assert time.perf_counter() - start < 10
        a[:] = np.arange(16, dtype="u1")
        assert len(a.store.get("c/0")) == 16 + 4 * 17_000
        assert a[:].tolist() == list(range(16))


_BYTES_CODECS = [
    st.just({"name": "crc32c"}),
    st.builds(lambda level, checksum: {"name": "zstd", "configuration": {
        "level": level, "checksum": checksum}}, st.integers(-3, 5), st.booleans()),
    st.builds(lambda level: {"name": "gzip", "configuration": {"level": level}},
              st.integers(0, 9)),
    st.builds(lambda cname, shuffle, typesize: {"name": "blosc", "configuration": {
        "cname": cname, "clevel": 5, "shuffle": shuffle, "typesize": typesize,
        "blocksize": 0}}, st.sampled_from(["lz4", "zstd", "zlib", "blosclz"]),
        st.sampled_from(["noshuffle", "shuffle", "bitshuffle"]), st.sampled_from([1, 4, 8])),
    *(st.just({"name": f"numcodecs.{name}"}) for name in (
        "lz4", "bz2", "lzma", "zlib", "crc32", "adler32", "fletcher32", "jenkins_lookup3")),
    st.builds(lambda size: {"name": "numcodecs.shuffle", "configuration": {
        "elementsize": size}}, st.sampled_from([1, 2, 4, 8])),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["<f8", "<i2", "|u1"]), st.integers(0, 3),
       st.lists(st.one_of(*_BYTES_CODECS), max_size=6), st.booleans(),
       st.sampled_from(["little", "big"]), st.sampled_from(["zeros", "random", "ramp"]),
       st.integers(0, 2**32 - 1))
def test_chain_bound_holds_for_every_chain(dtype, rows, bytes_codecs, transpose, endian, kind,
                                           seed):
    # Each bytes->bytes codec's encoded_bound, and so the chain's max_encoded_bytes, is at
    # least what encoding makes, for compressible and incompressible chunks; every chunk
    # decodes back bit for bit.
    shape = (rows * 700 + 3, 33)
    spec = ChunkSpec(shape, np.dtype(dtype), 0)
    codecs = [*([{"name": "transpose", "configuration": {"order": [1, 0]}}] if transpose
                else []), {"name": "bytes", "configuration": {"endian": endian}}, *bytes_codecs]
    chain = CodecChain(codecs, spec)
    nbytes = math.prod(shape) * spec.dtype.itemsize
    raw = {"zeros": np.zeros(nbytes, "u1"), "ramp": np.arange(nbytes).astype("u1"),
           "random": np.random.default_rng(seed).integers(0, 256, nbytes, dtype="u1")}[kind]
    chunk = raw.view(dtype).reshape(shape)
    data = chain.array_bytes.encode(chain.array_array[0].encode(chunk, spec) if transpose
                                    else chunk, chain.bytes_spec)
    for codec in chain.bytes_bytes:
        size = memoryview(data).nbytes
        try:
            data = codec.encode(data, chain.bytes_spec)
        except ZarrcoreError:  # a chain zarrcore does not write (a shuffle of odd bytes)
            assume(False)
        assert memoryview(data).nbytes <= codec.encoded_bound(size), codec
    encoded = chain.encode(chunk)
    assert memoryview(encoded).nbytes <= chain.max_encoded_bytes
    assert chain.decode(encoded).tobytes() == chunk.tobytes()
