"""A read of part of a zstd chunk decodes only the blocks up to the last byte it needs
(zc_chain_decode_prefix), from fetched bytes and local files alike: the answer is numpy's for
every selection, byte order and writer;
a frame with a content checksum, several frames or damage within the prefix are decoded or
refused as a whole decode would."""
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.errors import ZarrcoreError
from zarrcore.storage import MemoryStore

zstandard = pytest.importorskip("zstandard")

ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}


def zstd_array(data, chunks, checksum=False, store=None):
    codec = {"name": "zstd", "configuration": {"level": 3, "checksum": checksum}}
    store = MemoryStore() if store is None else store
    a = zarrcore.create_array(store, shape=data.shape, dtype=data.dtype, chunks=chunks,
                              compressors=[codec], fill_value=0)
    a[...] = data
    return store, a


def slices(n):
    return st.tuples(st.integers(0, n - 1), st.integers(1, n), st.integers(1, 3)).map(
        lambda t: slice(min(t[0], t[1] - 1), t[1], t[2]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from(["<f4", ">f4", "<i8", ">u2", "|u1"]),
       rows=st.integers(1, 80), cut=st.sampled_from([(16, 64), (40, 64), (80, 32)]),
       local=st.booleans(), data=st.data())
def test_parts_of_zstd_chunks_read_as_numpy(dtype, rows, cut, local, data):
    # (Chunks of up to 960 KiB: zstd blocks of 128 KiB, of which a part needs the first.)
    values = np.arange(rows * 64 * 48, dtype=np.int64).reshape(rows, 64, 48) % 251
    values = values.astype(dtype)
    folder = tempfile.mkdtemp() if local else None
    try:
        store = None if folder is None else zarrcore.storage.make_store(folder)
        _, a = zstd_array(values, (cut[0], cut[1], 48), store=store)
        sel = (data.draw(slices(rows)), data.draw(slices(64)), data.draw(st.integers(0, 47)))
        np.testing.assert_array_equal(a[sel], values[sel])
        row = data.draw(st.integers(0, rows - 1))
        np.testing.assert_array_equal(a[row], values[row])
    finally:
        if folder is not None:
            shutil.rmtree(folder)


def test_chunks_of_other_writers_read_in_part(store):
    """Frames without a content size (a streaming writer's) and several frames in a chunk
    are decoded whole, with the same answer."""
    values = np.arange(64 * 64 * 16, dtype="<f4").reshape(64, 64, 16)
    store, a = zstd_array(values, (64, 64, 16), store=store)
    raw = values.tobytes()
    streamed = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    unsized = streamed.compress(raw) + streamed.flush()
    half = len(raw) // 2
    framed = zstandard.compress(raw[:half]) + zstandard.compress(raw[half:])
    for chunk in (unsized, framed):
        store.set("c/0/0/0", chunk)
        np.testing.assert_array_equal(a[3], values[3])
        np.testing.assert_array_equal(a[60:, 5], values[60:, 5])


@pytest.fixture(params=["memory", "local"])
def store(request, tmp_path):
    return MemoryStore() if request.param == "memory" else zarrcore.storage.make_store(tmp_path)


def test_a_checksummed_frame_is_checked_whole(store):
    """A content checksum covers the whole content: a read of the first row of a chunk whose
    checksum does not match fails, as a whole read does."""
    values = np.arange(64 * 64 * 16, dtype="<f4").reshape(64, 64, 16)
    store, a = zstd_array(values, (64, 64, 16), checksum=True, store=store)
    chunk = bytearray(store.get("c/0/0/0"))
    np.testing.assert_array_equal(a[0], values[0])
    chunk[-1] ^= 0xFF  # (the checksum's last byte)
    store.set("c/0/0/0", bytes(chunk))
    with pytest.raises(ZarrcoreError, match="c/0/0/0"):
        a[0]
    with pytest.raises(ZarrcoreError, match="c/0/0/0"):
        a[...]


def test_a_cut_chunk_is_refused_whatever_part_is_read(store):
    values = np.random.default_rng(7).integers(0, 9, (64, 64, 16)).astype("<f4")
    store, a = zstd_array(values, (64, 64, 16), store=store)
    chunk = bytearray(store.get("c/0/0/0"))
    assert zstandard.get_frame_parameters(bytes(chunk)).content_size == values.nbytes
    truncated = bytes(chunk[: len(chunk) // 2])
    store.set("c/0/0/0", truncated)
    with pytest.raises(ZarrcoreError, match="c/0/0/0"):
        a[-1]
    store.set("c/0/0/0", bytes(chunk[:12]))  # (the frame header and a cut first block)
    with pytest.raises(ZarrcoreError, match="c/0/0/0"):
        a[0]
