"""zarrcore.dask: from_zarr and to_zarr under the threaded scheduler and a 2-process
LocalCluster; deterministic task names, small graphs, lock-free aligned writes, and
concurrent writes to shared shards that lose nothing."""
import pickle

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="the dask extra is not installed")
import dask  # noqa: E402
import zarrcore  # noqa: E402
import zarrcore.dask as zd  # noqa: E402
from zarrcore.errors import LockUnavailableError, ProcessLocalStoreError  # noqa: E402
from zarrcore.storage import FsspecStore, MemoryStore  # noqa: E402
from _remote_stores import VersionedStore  # noqa: E402


def _array(path, **kwargs):
    data = np.arange(60 * 40, dtype="int32").reshape(60, 40)
    a = zarrcore.create_array(str(path), shape=data.shape, dtype=data.dtype, **kwargs)
    a[...] = data
    return a, data


@pytest.mark.parametrize("layout, expected", [
    ({"chunks": (10, 20)}, ((10,) * 6, (20, 20))),
    ({"chunks": (5, 10), "shards": (20, 40)}, ((20, 20, 20), (40,))),
])
def test_from_zarr_chunks_default_to_storage_blocks(tmp_path, dask_scheduler, layout, expected):
    a, data = _array(tmp_path / "a", **layout)
    x = zd.from_zarr(str(tmp_path / "a"))
    assert x.chunks == expected
    np.testing.assert_array_equal(x.compute(), data)
    assert int(x.sum().compute()) == int(data.sum())
    np.testing.assert_array_equal(zd.from_zarr(a, chunks=(7, 9))[3:50:2, 5].compute(), data[3:50:2, 5])


def test_task_names_follow_store_path_and_metadata(tmp_path):
    a, _ = _array(tmp_path / "a", chunks=(10, 20))
    b, _ = _array(tmp_path / "b", chunks=(10, 20))
    x = zd.from_zarr(str(tmp_path / "a"))
    assert zd.from_zarr(zarrcore.open_array(str(tmp_path / "a"))).name == x.name
    assert pickle.loads(pickle.dumps(x)).name == x.name
    assert zd.from_zarr(b).name != x.name
    assert zd.from_zarr(a, chunks=(20, 20)).name != x.name
    a.attrs["changed"] = True  # the metadata is part of the name
    assert zd.from_zarr(zarrcore.open_array(str(tmp_path / "a"))).name != x.name


def test_graph_pickles_small(tmp_path):
    """The graph holds the array's description, not its data: its size does not grow with
    the data."""
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(4096, 4096), dtype="float64",
                              chunks=(512, 512), shards=(2048, 2048))
    a[...] = 1.0
    x = zd.from_zarr(a)
    assert x.npartitions == 4
    size = len(pickle.dumps(dict(x.dask)))
    assert size < 4096, size


def test_to_zarr_round_trips(tmp_path, dask_scheduler):
    data = np.random.default_rng(0).random((50, 30)).astype("float32")
    x = da.from_array(data, chunks=(10, 30))
    created = zd.to_zarr(x, str(tmp_path / "new"), path="v", shards=(10, 30), chunks=(5, 10))
    assert created.shards == (10, 30) and created.chunks == (5, 10)
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "new"), path="v")[...], data)
    np.testing.assert_array_equal(zd.from_zarr(str(tmp_path / "new"), path="v").compute(), data)
    # Into a region of an existing array.
    target = zarrcore.create_array(str(tmp_path / "t"), shape=(60, 30), dtype="float32",
                                   chunks=(10, 30), fill_value=-1)
    zd.to_zarr(x, target, region=(slice(10, 60),))
    got = target[...]
    assert (got[:10] == -1).all()
    np.testing.assert_array_equal(got[10:], data)


def test_shared_shards_lose_nothing(tmp_path, dask_scheduler):
    """Tasks of 7 rows write shards of 16 rows that two or three tasks share; under the
    store's locks every row lands."""
    target = zarrcore.create_array(str(tmp_path / "s"), shape=(112, 24), dtype="int64",
                                   chunks=(4, 8), shards=(16, 24))
    rows = da.arange(112, chunks=7, dtype="int64")[:, None] * 100 + da.arange(24, dtype="int64")
    zd.to_zarr(rows.rechunk((7, 24)), target)
    expected = np.arange(112)[:, None] * 100 + np.arange(24)
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "s"))[...], expected)


class NoLockStore(MemoryStore):
    """Declares neither locks nor conditional writes (as a plain object store)."""

    supports_locks = False


def test_misaligned_writes_need_locks_or_conditional_writes():
    store = NoLockStore()
    target = zarrcore.create_array(store, shape=(40,), dtype="int16", chunks=(5,), shards=(10,))
    with pytest.raises(LockUnavailableError, match=r"rechunk\(\(10,\)\)"):
        zd.to_zarr(da.ones(40, chunks=15, dtype="int16"), target)
    # Edges on shard boundaries (the last one at the array's end) share nothing.
    zd.to_zarr(da.arange(40, chunks=20, dtype="int16"), target)
    np.testing.assert_array_equal(target[...], np.arange(40))
    zd.to_zarr(da.ones(30, chunks=((10, 20),), dtype="int16"), target, region=(slice(10, 40),))
    with pytest.raises(LockUnavailableError):
        zd.to_zarr(da.ones(30, chunks=10, dtype="int16"), target, region=(slice(5, 35),))
    # The one task writing part of a shard is refused too: the store cannot tell that no other
    # writer touches that shard.
    with pytest.raises(LockUnavailableError, match="part of it"):
        zd.to_zarr(da.ones(35, chunks=((5, 10, 20),), dtype="int16"), target, region=(slice(5, 40),))
    versioned = VersionedStore(delay=0)
    target = zarrcore.create_array(versioned, shape=(40,), dtype="int16", chunks=(5,), shards=(10,))
    zd.to_zarr(da.ones(40, chunks=15, dtype="int16"), target)
    np.testing.assert_array_equal(target[...], 1)


def test_region_must_fit(tmp_path):
    target = zarrcore.create_array(str(tmp_path / "t"), shape=(10,), dtype="int8", chunks=(5,))
    with pytest.raises(ValueError, match="does not fit"):
        zd.to_zarr(da.ones(4, chunks=2, dtype="int8"), target, region=(slice(0, 5),))


def test_compute_false_returns_one_delayed(tmp_path):
    target = zarrcore.create_array(str(tmp_path / "t"), shape=(10,), dtype="int8", chunks=(5,))
    delayed = zd.to_zarr(da.ones(10, chunks=5, dtype="int8"), target, compute=False)
    assert (target[...] == 0).all()
    delayed.compute()
    assert (target[...] == 1).all()


def _memory_targets():
    """Stores that live in this process only: zarrcore's memory stores and fsspec's."""
    fsspec = pytest.importorskip("fsspec", reason="fsspec is not installed")
    return [("memory://", "memory://dask-process-local"), ("memory", MemoryStore()), ("dict", {}),
            ("fsspec memory", FsspecStore(fsspec.filesystem("memory"), "dask-process-local"))]


@pytest.mark.parametrize("scheduler", ["distributed", "processes"])
def test_process_local_stores_are_refused_where_tasks_run_elsewhere(request, scheduler):
    """Workers in other processes would write copies of a memory store: the client would
    read fill values after a 'successful' write. Refused before any task runs."""
    chosen = request.getfixturevalue("cluster_client") if scheduler == "distributed" else scheduler
    x = da.ones((100, 100), chunks=50)
    for what, target in _memory_targets():
        array = zarrcore.create_array(target, shape=x.shape, dtype=x.dtype, chunks=(50, 50),
                                      overwrite=True)
        with dask.config.set(scheduler=chosen):
            with pytest.raises(ProcessLocalStoreError, match="this process only"):
                zd.to_zarr(x, array)
            with pytest.raises(ProcessLocalStoreError):
                zd.store([x], [array], compute=False)
        with pytest.raises(ProcessLocalStoreError):
            zd.store([x], [array], scheduler=chosen)
        assert not array.nchunks_initialized, what
    # Threads (and synchronous runs) share the store: those writes land.
    for what, target in _memory_targets():
        for local in ("threads", "sync"):
            array = zarrcore.create_array(target, shape=x.shape, dtype=x.dtype, chunks=(50, 50),
                                          overwrite=True)
            with dask.config.set(scheduler=local):
                zd.to_zarr(x, array)
            assert array[...].sum() == 10_000, (what, local)
