"""Shapes and chunks near 2**63: the slice planner and point grouping compute chunk counts and
bounds without overflowing int64 (such a read once crashed the process), and metadata whose
derived sizes would overflow is refused."""
import json

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import MetadataError

BIG = 2**63 - 1


@pytest.fixture
def huge_chunks_allowed():
    zarrcore.config.set(max_chunk_bytes=BIG)


@pytest.mark.parametrize("n, chunk", [(BIG, 10), (BIG, 1), (BIG - 1, 3), (BIG, 2**62), (BIG, BIG)])
def test_reads_at_the_end_of_an_axis_near_2_63(store, huge_chunks_allowed, n, chunk):
    a = zarrcore.create_array(store, shape=(n,), chunks=(chunk,), dtype="u1", fill_value=7)
    last = [7, 7, 7]
    if chunk <= 10:  # (a partial write of a giant chunk would allocate all of it)
        a[n - 3:] = [1, 2, 3]
        last = [1, 2, 3]
    assert a[n - 5:].tolist() == [7, 7, *last]
    assert a[-1] == last[-1]
    assert a[::2**61].tolist() == [7] * len(range(0, n, 2**61))
    assert a[::-(2**61)].tolist()[0] == last[-1]
    assert a.oindex[[0, n - 1]].tolist() == [7, last[-1]]
    assert a.vindex[np.array([n - 1, 0])].tolist() == [last[-1], 7]


def test_two_dimensions_near_the_limit(store):
    a = zarrcore.create_array(store, shape=(BIG, 5), chunks=(4, 3), dtype="i2",
                              fill_value=-1)
    a[-2:, -2:] = [[5, 6], [7, 8]]
    assert a[-2:, -3:].tolist() == [[-1, 5, 6], [-1, 7, 8]]


def test_sharded_axis_near_2_63(tmp_path):
    a = zarrcore.create_array(tmp_path / "s", shape=(BIG,), chunks=(4,), shards=(8,), dtype="u2")
    a[BIG - 6:] = np.arange(6)
    assert a[BIG - 7:].tolist() == [0, 0, 1, 2, 3, 4, 5]


def _zarr_json(shape, chunks):
    return json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}],
    })


@pytest.mark.parametrize("shape, chunks, field", [
    ([2**63], [1], "shape"),
    ([2**64 + 5], [1], "shape"),
    ([1], [2**63], "chunk_grid"),
    ([2**62, 2**62], [1, 1], "chunk_grid"),       # 2**124 chunks
    ([2**40, 2**40], [2**40, 2**40], "chunk_grid"),  # a chunk of 2**80 bytes
])
def test_metadata_whose_sizes_overflow_is_refused(shape, chunks, field):
    store = {"zarr.json": _zarr_json(shape, chunks).encode()}
    with pytest.raises(MetadataError, match=f"zarr.json: field '{field}'"):
        zarrcore.open_array(store)
