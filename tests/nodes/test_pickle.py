"""Arrays and groups pickle (as multiprocessing, dask and DataLoader workers need): the copy
reads and writes the same data, sharded or not, v2 or v3, and keeps read-only."""
import concurrent.futures
import multiprocessing
import pickle

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import ReadOnlyError

LAYOUTS = {
    "v3": {},
    "v3-sharded": {"shards": (8, 8)},
    "v2": {"zarr_format": 2},
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_array_round_trips(tmp_path, layout):
    data = np.arange(16 * 24, dtype="int32").reshape(16, 24)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, dtype="int32",
                              chunks=(4, 4), **LAYOUTS[layout])
    a[...] = data
    b = pickle.loads(pickle.dumps(a))
    assert (b.shape, b.dtype, b.chunks, b.metadata.to_json()) == (a.shape, a.dtype, a.chunks,
                                                                  a.metadata.to_json())
    np.testing.assert_array_equal(b[...], data)
    b[2:5, 3:20] = -7
    np.testing.assert_array_equal(a[2:5, 3:20], -7)


def test_read_only_survives_pickling(tmp_path):
    zarrcore.create_array(str(tmp_path / "a"), shape=(4,), dtype="uint8", shards=(4,), chunks=(2,))
    a = pickle.loads(pickle.dumps(zarrcore.open_array(str(tmp_path / "a"), mode="r")))
    with pytest.raises(ReadOnlyError):
        a[0] = 1


def test_group_round_trips(tmp_path):
    g = zarrcore.open_group(str(tmp_path / "g"), mode="w")
    g.create_array("x", shape=(6,), dtype="int16", chunks=(2,), shards=(6,))[...] = 5
    h = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(h["x"][...], 5)


def _block_sum(array, k):
    return int(array[k * 8:(k + 1) * 8].sum())


@pytest.mark.slow
def test_spawned_workers_read_a_pickled_sharded_array(tmp_path):
    data = np.arange(32 * 16, dtype="int64").reshape(32, 16)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, dtype="int64",
                              chunks=(4, 4), shards=(8, 16))
    a[...] = data
    with concurrent.futures.ProcessPoolExecutor(
            2, mp_context=multiprocessing.get_context("spawn")) as pool:
        sums = list(pool.map(_block_sum, [a] * 4, range(4)))
    assert sums == [int(data[k * 8:(k + 1) * 8].sum()) for k in range(4)]


def test_codecs_bound_to_an_arrays_options_pickle_with_them():
    a = zarrcore.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="i4")
    codec = pickle.loads(pickle.dumps(a.chunk_engine.sharding))
    assert codec._spec.options is zarrcore.config  # (by name: this process's config)
    own = a.with_config({"shard_write_order": "morton", "io_concurrency": 3})
    codec = pickle.loads(pickle.dumps(own.chunk_engine.sharding))
    assert codec._spec.options == own.chunk_engine.options
    assert codec.write_order() is not None and codec._spec.options.io_concurrency == 3
