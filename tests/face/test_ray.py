"""zarrcore.ray on a local Ray cluster of two worker processes: datasets read from arrays of
each format, layout and store match numpy, their blocks cut at shard or chunk boundaries;
read tasks pickle small whatever the metadata; the shared cache is shared with the workers;
writes of blocks that share shards lose nothing; Ray's own read_zarr reads the same v2 data
alike."""
import pickle
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")
pytest.importorskip("ray.data", reason="Ray Data (the ray extra) is not installed")
import zarrcore  # noqa: E402
import zarrcore.ray as zr  # noqa: E402
from zarrcore.errors import (  # noqa: E402
    LockUnavailableError, ProcessLocalStoreError, SelectionError, SettingValueError)
from zarrcore.array_api import CACHE_SETTLE_SECONDS  # noqa: E402
from zarrcore.storage import FsspecStore, MemoryStore  # noqa: E402

SHAPE = (50, 6, 4)
DATA = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """A local Ray cluster of two worker processes, one per test module."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def _rows(dataset, column="data", index="index"):
    """The dataset's values in index order, and its indices in that order."""
    batches = list(dataset.iter_batches(batch_size=None, batch_format="numpy"))
    indices = np.concatenate([b[index] for b in batches])
    values = np.concatenate([b[column] for b in batches])
    order = np.argsort(indices, kind="stable")
    return values[order], indices[order]


def _block_rows(source, parallelism=4):
    """The rows of each block the source's read tasks yield, task by task (run here)."""
    return [[len(block) for block in task()] for task in source.get_read_tasks(parallelism)]


LAYOUTS = {
    "v2": dict(zarr_format=2, chunks=(8, 3, 4)),
    "v3": dict(chunks=(8, 6, 4)),
    "v3 sharded": dict(chunks=(4, 3, 2), shards=(16, 6, 4)),
    "rectilinear": dict(chunks=[[10, 5, 20, 15], [6], [4]]),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reads_match_numpy_in_blocks_of_storage_blocks(tmp_path, layout):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=SHAPE, dtype=DATA.dtype,
                              **LAYOUTS[layout])
    a[...] = DATA
    values, indices = _rows(zr.read_zarr(str(tmp_path / "a")))
    np.testing.assert_array_equal(values, DATA)
    np.testing.assert_array_equal(indices, np.arange(SHAPE[0]))
    # With blocks of one row's bytes, every block is one stored object's rows (shards when
    # sharded); tasks take consecutive ones.
    row_bytes = DATA[0].nbytes
    source = zr.ZarrcoreDatasource(a, block_bytes=row_bytes, task_bytes=1)
    expected = list(a.chunk_grid.edge_lengths(0))
    got = _block_rows(source)
    assert sum(got, []) == expected
    assert len(got) == min(4, len(expected))
    # Larger blocks group consecutive stored objects of a task up to their bytes (one larger
    # alone); by default, Ray's target block size holds each task's in one.
    for most in (12, 20):
        source = zr.ZarrcoreDatasource(a, block_bytes=most * row_bytes, task_bytes=1)
        for task, rows in zip(_block_rows(source), got):
            assert sum(task) == sum(rows)
            assert all(n <= most or n in rows for n in task)
            edges = set(np.cumsum(rows).tolist())
            assert set(np.cumsum(task).tolist()) <= edges  # (cut where stored objects end)
            merged = [a + b for a, b in zip(task, task[1:])]
            assert all(n > most for n in merged)  # (no two neighbours would fit in one)
    assert [len(t) for t in _block_rows(zr.ZarrcoreDatasource(a, task_bytes=1))] == [1] * len(got)
    # A task reads at least task_bytes where the array has them: this small one, in one.
    assert _block_rows(zr.ZarrcoreDatasource(a)) == [[SHAPE[0]]]
    assert len(_block_rows(zr.ZarrcoreDatasource(a, task_bytes=DATA.nbytes // 2 + 1))) == 2


def test_other_axes_and_inner_chunks(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=SHAPE, dtype=DATA.dtype,
                              chunks=(5, 2, 2), shards=(10, 4, 4))
    a[...] = DATA
    values, indices = _rows(zr.read_zarr(a, axis=1, column="v", index="y"), "v", "y")
    np.testing.assert_array_equal(values, np.moveaxis(DATA, 1, 0))
    np.testing.assert_array_equal(indices, np.arange(6))
    one_each = dict(block_bytes=1, task_bytes=1)  # (a block per stored object, a task each)
    assert sum(_block_rows(zr.ZarrcoreDatasource(a, axis=-2, **one_each)), []) == [4, 2]
    assert sum(_block_rows(zr.ZarrcoreDatasource(a, axis=1, blocks="chunks", **one_each)),
               []) == [2, 2, 2]
    one = zarrcore.create_array(str(tmp_path / "one"), shape=(30,), dtype="float64", chunks=(7,))
    one[...] = np.linspace(0, 1, 30)
    values, _ = _rows(zr.read_zarr(one))
    np.testing.assert_array_equal(values, np.linspace(0, 1, 30))
    assert zr.read_zarr(one).limit(9).count() == 9


def test_s3_memory_and_foreign_stores(tmp_path, s3_bucket):
    server, bucket = s3_bucket
    url = f"s3://{bucket}/a"
    options = server.storage_options()
    a = zarrcore.create_array(url, shape=SHAPE, dtype=DATA.dtype, chunks=(4, 6, 4),
                              shards=(12, 6, 4), storage_options=options)
    a[...] = DATA
    np.testing.assert_array_equal(_rows(zr.read_zarr(url, storage_options=options))[0], DATA)
    memory = zarrcore.create_array(MemoryStore(), shape=SHAPE, dtype=DATA.dtype, chunks=(9, 6, 4))
    memory[...] = DATA
    np.testing.assert_array_equal(_rows(zr.read_zarr(memory))[0], DATA)
    group = zarrcore.open_group(str(tmp_path / "g.zip"), mode="w")
    group.create_array("x", shape=SHAPE, dtype=DATA.dtype, chunks=(25, 6, 4))[...] = DATA
    group.store.close()
    np.testing.assert_array_equal(_rows(zr.read_zarr(str(tmp_path / "g.zip"), path="x"))[0], DATA)


def test_read_tasks_pickle_small_and_carry_no_metadata(tmp_path, s3_bucket):
    """Tasks carry a reference to the array and their rows: an array whose metadata is
    large (attributes, a rectilinear grid of many edges) gives tasks as small."""
    server, bucket = s3_bucket
    edges = [1 + i % 3 for i in range(2000)]
    for where, options in ((str(tmp_path / "big"), None),
                           (f"s3://{bucket}/big", server.storage_options())):
        a = zarrcore.create_array(where, shape=(sum(edges), 3), dtype="uint8",
                                  chunks=[edges, [3]], attributes={"notes": "x" * 20_000},
                                  storage_options=options)
        source = zr.ZarrcoreDatasource(a, task_bytes=1)
        assert len(a.metadata.to_json()["attributes"]["notes"]) == 20_000
        tasks = source.get_read_tasks(200)
        assert len(tasks) == 200
        sizes = [len(pickle.dumps(task)) for task in tasks]
        assert max(sizes) < 4096, max(sizes)
        assert b"xxxx" not in pickle.dumps(tasks[0])


def test_workers_share_the_shared_cache(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=SHAPE, dtype=DATA.dtype,
                              chunks=(5, 6, 4))
    a[...] = DATA
    time.sleep(CACHE_SETTLE_SECONDS + 0.05)  # (files written since are read, not cached)
    a = zarrcore.open_array(str(tmp_path / "a"), mode="r", cache_bytes=1 << 20,
                            shared_cache=True)
    zr.read_zarr(a).materialize()
    assert a.cache_info()["inserts"] == 10  # the workers' reads, in the driver's table
    np.testing.assert_array_equal(_rows(zr.read_zarr(a))[0], DATA)
    assert a.cache_info()["hits"] == 10
    shared = zr.read_zarr(str(tmp_path / "a"), cache_bytes=1 << 20, shared_cache=True)
    np.testing.assert_array_equal(_rows(shared)[0], DATA)


def _dataset(rows, block):
    """Rows i of DATA-like values (i * 100 + column) with their index, in blocks of `block`
    rows, shuffled."""
    items = [{"data": np.full((3,), i * 100, dtype="int64") + np.arange(3), "index": i}
             for i in rows]
    return ray.data.from_items(items, override_num_blocks=-(-len(items) // block))


def test_writes_of_blocks_sharing_shards_lose_nothing(tmp_path, s3_bucket):
    """Blocks of 7 rows, out of order, write shards of 16 rows that two or three tasks share:
    under a directory's locks, and by S3's conditional writes, every row lands."""
    server, bucket = s3_bucket
    expected = np.arange(112)[:, None] * 100 + np.arange(3)
    rows = np.random.default_rng(0).permutation(112)
    for where, options in ((str(tmp_path / "s"), None),
                           (f"s3://{bucket}/s", server.storage_options())):
        target = zarrcore.create_array(where, shape=(112, 3), dtype="int64", chunks=(4, 3),
                                       shards=(16, 3), storage_options=options)
        zr.write_zarr(_dataset(rows, 7), target)
        np.testing.assert_array_equal(target[...], expected)
    # A new array, of the rows' shape and data type.
    created = zr.write_zarr(_dataset(rows, 7), str(tmp_path / "n"), path="v", chunks=(4, 3),
                            shards=(16, 3))
    assert created.shape == (112, 3) and created.dtype == np.dtype("int64")
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "n"), path="v")[...],
                                  expected)


def test_a_store_that_cannot_share_shards_refuses_to(s3_bucket):
    """A store with neither locks nor conditional writes (fsspec's S3) takes blocks of whole
    shards, and refuses blocks that share one rather than lose rows."""
    server, bucket = s3_bucket
    store = FsspecStore(server.s3fs(), f"{bucket}/f")
    assert not (store.supports_locks or store.supports_conditional_writes)
    target = zarrcore.create_array(store, shape=(112, 3), dtype="int64", chunks=(4, 3),
                                   shards=(16, 3))
    zr.write_zarr(_dataset(range(112), 16), target)
    np.testing.assert_array_equal(target[...], np.arange(112)[:, None] * 100 + np.arange(3))
    with pytest.raises(LockUnavailableError, match="neither locks nor conditional"):
        zr.write_zarr(_dataset(range(112), 7), target)


def test_a_dataset_read_is_written_back(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=SHAPE, dtype=DATA.dtype,
                              chunks=(4, 3, 2), shards=(8, 6, 4))
    a[...] = DATA
    copied = zr.write_zarr(zr.read_zarr(a, axis=2).repartition(3), str(tmp_path / "b"), axis=2,
                           chunks=(5, 6, 1), zarr_format=2)
    assert copied.shape == SHAPE and copied.metadata.zarr_format == 2
    np.testing.assert_array_equal(copied[...], DATA)


def test_bad_input_is_refused_naming_the_field(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(10, 3), dtype="int64", chunks=(5, 3))
    with pytest.raises(SettingValueError, match="axis"):
        zr.read_zarr(a, axis=2)
    with pytest.raises(SettingValueError, match="blocks"):
        zr.read_zarr(a, blocks="rows")
    with pytest.raises(SettingValueError, match="column and index"):
        zr.read_zarr(a, column="x", index="x")
    with pytest.raises(SettingValueError, match="'values'"):
        zr.write_zarr(_dataset(range(10), 5), a, column="values")
    with pytest.raises(SelectionError, match="index"):
        zr.write_zarr(_dataset(range(5, 15), 5), a)
    with pytest.raises(ProcessLocalStoreError, match="this process only"):
        zr.write_zarr(_dataset(range(10), 5), zarrcore.create_array(
            MemoryStore(), shape=(10, 3), dtype="int64", chunks=(5, 3)))


def test_rays_own_read_zarr_reads_the_same_v2_data(tmp_path):
    """Ray's read_zarr (consolidated format 2, through zarr-python 2) reads what zarrcore
    wrote as zarrcore.ray reads it."""
    if not hasattr(ray.data, "read_zarr"):
        pytest.skip(f"Ray {ray.__version__} has no ray.data.read_zarr")
    zarr = pytest.importorskip("zarr", reason="Ray's read_zarr needs zarr-python")
    if int(zarr.__version__.split(".")[0]) >= 3:
        pytest.skip(f"Ray's read_zarr reads through zarr-python 2 only, and zarr-python "
                    f"{zarr.__version__} is installed (the test extra needs 3; "
                    f"benchmarks/engines.py compares them from a virtualenv of zarr-python 2)")
    group = zarrcore.open_group(str(tmp_path / "g"), mode="w", zarr_format=2)
    group.create_array("x", shape=SHAPE, dtype=DATA.dtype, chunks=(8, 6, 4))[...] = DATA
    zarrcore.consolidate_metadata(str(tmp_path / "g"))
    theirs = ray.data.read_zarr(str(tmp_path / "g"), align_axis_0=True).take_all()
    got = np.concatenate([row["x"] for row in sorted(theirs, key=lambda r: r["t_start"])])
    np.testing.assert_array_equal(got, _rows(zr.read_zarr(str(tmp_path / "g"), path="x"))[0])
