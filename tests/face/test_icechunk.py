"""Icechunk repositories through their zarr-python store (`session.store`): zarrcore reads
any branch, tag or snapshot, writes through a writable session whose commit the caller makes,
serves xarray's `zarrcore` engine and zarrcore.xarray.to_zarr, and dask writes through fork
sessions whose changes come back merged. Repositories are in memory or in a temporary
directory."""
import sys

import numpy as np
import pytest

icechunk = pytest.importorskip(
    "icechunk", reason=f"icechunk is not installed (icechunk 2 needs Python >= 3.12, this is "
                       f"{sys.version_info.major}.{sys.version_info.minor}): the extra "
                       f"zarrcore[icechunk]")
zarr = pytest.importorskip("zarr", reason="icechunk needs zarr-python")

import zarrcore  # noqa: E402
import zarrcore.icechunk  # noqa: E402
from zarrcore.errors import (  # noqa: E402
    CommitConflictError, LockUnavailableError, ProcessLocalStoreError, ReadOnlyError,
    StoreError, WriteConflictError, ZarrcoreError,
)
from zarrcore.storage.zarr_python import ZarrPythonStore  # noqa: E402


def _memory_repo():
    return icechunk.Repository.create(icechunk.in_memory_storage())


def _directory_repo(tmp_path):
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def _write(session, name, data, **kwargs):
    z = zarr.create_array(session.store, name=name, shape=data.shape, dtype=data.dtype,
                          overwrite=True, **kwargs)
    z[...] = data


def test_reads_branches_tags_and_snapshots():
    repo = _memory_repo()
    first = np.arange(60, dtype="int32").reshape(6, 10)
    session = repo.writable_session("main")
    _write(session, "g/a", first, chunks=(4, 3))
    _write(session, "g/s", np.linspace(0, 1, 40), chunks=(4,), shards=(20,))
    snapshot = session.commit("first")
    repo.create_tag("v1", snapshot)
    repo.create_branch("dev", snapshot)
    session = repo.writable_session("main")
    _write(session, "g/a", first * 2, chunks=(4, 3))
    session.commit("second")
    session = repo.writable_session("dev")
    _write(session, "g/a", -first, chunks=(4, 3))
    session.commit("on dev")

    expected = {(("branch", "main"),): first * 2, (("tag", "v1"),): first,
                (("snapshot_id", snapshot),): first, (("branch", "dev"),): -first}
    for which, data in expected.items():
        store = repo.readonly_session(**dict(which)).store
        a = zarrcore.open_array(store, path="g/a")
        assert isinstance(a.store, ZarrPythonStore) and a.store.read_only
        np.testing.assert_array_equal(a[...], data, err_msg=str(which))
        np.testing.assert_array_equal(a[1:5, 2:9], data[1:5, 2:9], err_msg=str(which))
        group = zarrcore.open_group(store, path="g", mode="r")
        assert sorted(group.array_keys()) == ["a", "s"]
        np.testing.assert_array_equal(group["s"][5:33], np.linspace(0, 1, 40)[5:33])


def test_writes_go_to_the_session_and_the_caller_commits():
    repo = _memory_repo()
    session = repo.writable_session("main")
    group = zarrcore.open_group(session.store, mode="w", attributes={"title": "t"})
    a = group.create_array("a", shape=(10, 8), chunks=(4, 4), dtype="float64", fill_value=0)
    a[...] = np.arange(80.0).reshape(10, 8)
    a[1:3, 1:7] = -1  # parts of chunks: read, merged, rewritten in the session
    a.resize((12, 8))
    a[10:, :] = 5
    s = group.create_array("s", shape=(30,), chunks=(2,), shards=(10,), dtype="int16")
    s[3:25] = 7
    expected = np.zeros((12, 8))
    expected[:10] = np.arange(80.0).reshape(10, 8)
    expected[1:3, 1:7] = -1
    expected[10:] = 5
    # Nothing is in the repository before the caller commits.
    with pytest.raises(ZarrcoreError):
        zarrcore.open_group(repo.readonly_session(branch="main").store, path="", mode="r")["a"]
    session.commit("zarrcore's writes")
    store = repo.readonly_session(branch="main").store
    np.testing.assert_array_equal(zarr.open_array(store, path="a")[...], expected)
    np.testing.assert_array_equal(zarr.open_array(store, path="s")[...],
                                  np.where((np.arange(30) >= 3) & (np.arange(30) < 25), 7, 0))
    assert zarr.open_group(store, mode="r").attrs["title"] == "t"
    # Icechunk keeps no consolidated metadata: none is written, asking for it is an error.
    assert zarr.open_group(store, mode="r").metadata.consolidated_metadata is None
    with pytest.raises(StoreError, match="consolidated"):
        zarrcore.consolidate_metadata(repo.writable_session("main").store)


def test_writing_a_read_only_session_is_refused():
    repo = _memory_repo()
    session = repo.writable_session("main")
    _write(session, "a", np.arange(4), chunks=(2,))
    session.commit("a")
    store = repo.readonly_session(branch="main").store
    a = zarrcore.open_array(store, path="a", mode="r+")
    np.testing.assert_array_equal(a[...], np.arange(4))
    with pytest.raises(ReadOnlyError):
        a[...] = 1


def test_concurrent_sessions_conflict_at_commit():
    repo = _memory_repo()
    session = repo.writable_session("main")
    _write(session, "a", np.zeros(4, dtype="int8"), chunks=(2,))
    session.commit("a")
    one, two = repo.writable_session("main"), repo.writable_session("main")
    zarrcore.open_array(one.store, path="a", mode="r+")[0] = 1
    zarrcore.open_array(two.store, path="a", mode="r+")[1] = 2
    one.commit("one")
    with pytest.raises(icechunk.ConflictError):
        two.commit("two")  # (Icechunk's own call: the caller's commit)
    np.testing.assert_array_equal(
        zarrcore.open_array(repo.readonly_session(branch="main").store, path="a")[...],
        [1, 0, 0, 0])


def test_commit_conflicts_are_zarrcore_errors_naming_the_branch():
    repo = _memory_repo()
    session = repo.writable_session("main")
    _write(session, "a", np.zeros(4, dtype="int8"), chunks=(2,))
    zarrcore.icechunk.commit(session, "a")
    one, two = repo.writable_session("main"), repo.writable_session("main")
    zarrcore.open_array(one.store, path="a", mode="r+")[0:2] = 1  # the same chunk
    zarrcore.open_array(two.store, path="a", mode="r+")[0:2] = 2
    assert zarrcore.icechunk.commit(one, "one") == repo.lookup_branch("main")
    with pytest.raises(CommitConflictError, match="committing 'two' on branch 'main'") as info:
        zarrcore.icechunk.commit(two, "two")
    assert isinstance(info.value, WriteConflictError)
    assert isinstance(info.value.__cause__, icechunk.ConflictError)
    # Rebasing finds both sessions wrote chunk 0 of /a: named, and nothing is committed.
    refuse = icechunk.BasicConflictSolver(on_chunk_conflict=icechunk.VersionSelection.Fail)
    with pytest.raises(CommitConflictError, match=r"branch 'main'.*/a .* in chunks \[\[0\]\]"):
        zarrcore.icechunk.commit(two, "two", rebase_with=refuse)
    np.testing.assert_array_equal(
        zarrcore.open_array(repo.readonly_session(branch="main").store, path="a")[...],
        [1, 1, 0, 0])
    # Icechunk's other refusals are StoreErrors; the caller's mistakes stay theirs.
    with pytest.raises(StoreError, match="committing 'nothing' on branch 'main'"):
        zarrcore.icechunk.commit(repo.writable_session("main"), "nothing")
    with pytest.raises(TypeError):
        zarrcore.icechunk.commit(repo.writable_session("main"), "x", no_such_option=1)


def test_xarray_reads_and_writes_a_session():
    xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
    import zarrcore.xarray

    repo = _memory_repo()
    ds = xr.Dataset({"t": (("time", "x"), np.arange(20.0).reshape(4, 5), {"units": "K"})},
                    coords={"time": np.arange(4), "x": np.arange(5) * 10.0},
                    attrs={"title": "ice"})
    session = repo.writable_session("main")
    zarrcore.xarray.to_zarr(ds, session.store, group="ds", mode="w")
    more = ds.assign_coords(time=np.arange(4, 8))
    zarrcore.xarray.to_zarr(more, session.store, group="ds", append_dim="time")
    session.commit("dataset")
    expected = xr.concat([ds, more], dim="time")
    store = repo.readonly_session(branch="main").store
    back = xr.open_dataset(store, group="ds", engine="zarrcore")
    xr.testing.assert_identical(back.load(), expected)
    xr.testing.assert_identical(xr.open_zarr(store, group="ds", consolidated=False).load(),
                                expected)


def test_dask_writes_threads_into_a_session_and_processes_into_a_fork(tmp_path):
    da = pytest.importorskip("dask.array", reason="the dask extra is not installed")
    import dask
    import zarrcore.dask

    repo = _directory_repo(tmp_path)
    session = repo.writable_session("main")
    for name in ("a", "b"):
        zarrcore.create_array(session.store, name=name, shape=(12, 8), chunks=(4, 4),
                              dtype="float64", fill_value=0)
    session.commit("arrays")
    data = np.arange(96.0).reshape(12, 8)
    source = da.from_array(data, chunks=(4, 4))

    session = repo.writable_session("main")
    a = zarrcore.open_array(session.store, path="a", mode="r+")
    zarrcore.dask.store([source], [a], scheduler="threads")
    # A session's changes live in this process: tasks in others would write copies.
    with pytest.raises(ProcessLocalStoreError):
        zarrcore.dask.store([source], [a], scheduler="processes")

    fork = session.fork()
    b = zarrcore.open_array(fork.store, path="b", mode="r+")
    assert b.store.merges_task_writes and not b.store.supports_locks
    # Forks merged keep the last write of a chunk: tasks may not share one.
    with pytest.raises(LockUnavailableError):
        zarrcore.dask.store([source.rechunk((3, 3))], [b], scheduler="processes")
    with dask.config.set(num_workers=2):
        zarrcore.dask.store([source * 2], [b], scheduler="processes")
    session.merge(fork)
    session.commit("dask")
    store = repo.readonly_session(branch="main").store
    np.testing.assert_array_equal(zarr.open_array(store, path="a")[...], data)
    np.testing.assert_array_equal(zarr.open_array(store, path="b")[...], data * 2)


def test_xarray_writes_dask_variables_through_a_fork(tmp_path):
    xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
    pytest.importorskip("dask.array", reason="the dask extra is not installed")
    import dask
    import zarrcore.xarray

    repo = _directory_repo(tmp_path)
    ds = xr.Dataset({"t": (("x", "y"), np.arange(48.0).reshape(8, 6))}).chunk({"x": 4, "y": 3})
    session = repo.writable_session("main")
    # The metadata through the session, then the data by tasks, each into a copy of a fork.
    zarrcore.xarray.to_zarr(ds, session.store, mode="w", compute=False)
    fork = session.fork()
    with dask.config.set(num_workers=2):
        zarrcore.xarray.to_zarr(ds, fork.store, mode="r+",
                                chunkmanager_store_kwargs={"scheduler": "processes"})
    session.merge(fork)
    session.commit("dataset")
    back = xr.open_dataset(repo.readonly_session(branch="main").store, engine="zarrcore")
    xr.testing.assert_identical(back.load(), ds.load())
