"""Every decoder stops at the size the chunk can hold: a small stored chunk that inflates to
many times that fails fast, without decoding (or allocating) it in full."""
import json
import lzma
import time
import zlib

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import ChunkDecodeError

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
