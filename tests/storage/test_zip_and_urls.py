"""ZipStore (interchangeable with zarr-python's ZipStore both ways), memory:// stores, and
how make_store resolves URLs and other libraries' store objects."""
import gc
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import (
    DeleteUnsupportedError, NodeNotFoundError, StoreError, StoreURLError, UnsupportedStoreError,
    ZarrcoreError,
)
from zarrcore.storage import LocalStore, MemoryStore, ZipStore, make_store

zarr = pytest.importorskip("zarr", reason="zarr-python is not installed")


def _data(shape, dtype="int32"):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# -- zip --------------------------------------------------------------------
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zip_written_by_zarrcore_reads_in_zarr_python(tmp_path, zarr_format):
    path = tmp_path / "a.zip"
    with ZipStore(path, mode="w") as store:
        root = zarrcore.open_group(store, mode="w", zarr_format=zarr_format)
        root.create_array("plain", shape=(30, 20), dtype="int32", chunks=(8, 8))[...] = _data((30, 20))
        if zarr_format == 3:
            root.create_array("sharded", shape=(40, 24), dtype="uint16", chunks=(5, 6),
                              shards=(20, 12))[...] = _data((40, 24), "uint16")
        zarrcore.consolidate_metadata(store)
    with zarr.storage.ZipStore(path, mode="r") as zstore:
        group = zarr.open_group(zstore, mode="r", use_consolidated=True)
        np.testing.assert_array_equal(group["plain"][...], _data((30, 20)))
        if zarr_format == 3:
            np.testing.assert_array_equal(group["sharded"][5:33, 3:20], _data((40, 24), "uint16")[5:33, 3:20])
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        assert all(info.compress_type == zipfile.ZIP_STORED for info in zf.infolist())


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zip_written_by_zarr_python_reads_in_zarrcore(tmp_path, zarr_format):
    path = tmp_path / "b.zip"
    with zarr.storage.ZipStore(path, mode="w") as zstore:
        root = zarr.open_group(zstore, mode="w", zarr_format=zarr_format)
        root.create_array("plain", shape=(30, 20), dtype="int32", chunks=(8, 8))[...] = _data((30, 20))
        if zarr_format == 3:
            root.create_array("sharded", shape=(40, 24), dtype="uint16", chunks=(5, 6),
                              shards=(20, 12))[...] = _data((40, 24), "uint16")
        zarr.consolidate_metadata(zstore)
    for source in (str(path), f"zip://{path}", zarr.storage.ZipStore(path, mode="r")):
        group = zarrcore.open_group(source, mode="r")
        assert isinstance(group.store, ZipStore) and group.store.read_only
        np.testing.assert_array_equal(group["plain"][3:17, 1:19], _data((30, 20))[3:17, 1:19])
        if zarr_format == 3:
            np.testing.assert_array_equal(group["sharded"][...], _data((40, 24), "uint16"))
    # Compressed members (ZIP_DEFLATED) read too.
    deflated = tmp_path / "deflated.zip"
    with zarr.storage.ZipStore(deflated, mode="w", compression=zipfile.ZIP_DEFLATED) as zstore:
        zarr.create_array(zstore, shape=(10,), dtype="i4", chunks=(4,))[...] = np.arange(10)
    assert zarrcore.open_array(deflated, mode="r")[2:9].tolist() == list(range(2, 9))


def test_zip_rewritten_key_reads_last_in_both_libraries(tmp_path):
    path = tmp_path / "twice.zip"
    with ZipStore(path) as store:
        a = zarrcore.create_array(store, shape=(4,), dtype="i4", chunks=(4,))
        a[...] = [1, 2, 3, 4]
        a[...] = [5, 6, 7, 8]  # appends a second member of the same name
        assert a[...].tolist() == [5, 6, 7, 8]
        with pytest.raises(StoreError, match="'c/0'.*cannot be removed"):
            store.delete("c/0")
        store.delete("c/missing")  # no error
    with zipfile.ZipFile(path) as zf:
        assert [i.filename for i in zf.infolist()].count("c/0") == 2
    with zarr.storage.ZipStore(path, mode="r") as zstore:
        assert zarr.open_array(zstore, mode="r")[...].tolist() == [5, 6, 7, 8]
    # Appending later keeps what was there.
    with ZipStore(path, mode="a") as store:
        store.set("extra", b"x")
    with ZipStore(path, read_only=True) as store:
        assert store.get("extra") == b"x" and zarrcore.open_array(store, mode="r")[1] == 6
        assert store.list_dir("") == ["c", "extra", "zarr.json"]


@pytest.mark.parametrize("fmt", [2, 3])
def test_zip_all_fill_chunks_as_zarr_python(tmp_path, fmt):
    """Writing only the fill value (write_empty_chunks off) leaves a chunk never stored
    unstored; one stored cannot be removed: DeleteUnsupportedError, a NotImplementedError
    as zarr-python's ZipStore raises."""
    with ZipStore(tmp_path / "fill.zip") as store:
        a = zarrcore.create_array(store, shape=(8,), chunks=(4,), dtype="i4", fill_value=7,
                                  zarr_format=fmt)
        a[4:] = 7
        a[:4] = [1, 2, 3, 4]
        with pytest.raises(NotImplementedError, match="cannot be removed"):
            a[:4] = 7
        with pytest.raises(DeleteUnsupportedError):
            a[:] = 7
        assert a[...].tolist() == [1, 2, 3, 4, 7, 7, 7, 7]
        assert sorted(k for k in store.list_prefix("") if k[-1].isdigit()) == (
            ["0"] if fmt == 2 else ["c/0"])


def test_zip_threads_write_and_read_at_once(tmp_path):
    path = tmp_path / "threads.zip"
    store = ZipStore(path)
    a = zarrcore.create_array(store, shape=(64, 64), dtype="f8", chunks=(8, 8))
    errors = []

    def work(row):
        try:
            for _ in range(3):
                a[row * 8:(row + 1) * 8, :] = row
                assert (a[row * 8:(row + 1) * 8, :] == row).all()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    assert not errors
    expected = np.repeat(np.arange(8.0), 8)[:, None] * np.ones((1, 64))
    with zarr.storage.ZipStore(path, mode="r") as zstore:
        np.testing.assert_array_equal(zarr.open_array(zstore, mode="r")[...], expected)


@pytest.mark.slow
def test_zip_store_is_closed_when_collected(tmp_path):
    path = tmp_path / "gc.zip"
    code = (f"import zarrcore; a = zarrcore.create_array({str(path)!r}, shape=(3,), dtype='i1'); "
            f"a[...] = [1, 2, 3]")  # never closed: the interpreter's exit writes the directory
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    with zarr.storage.ZipStore(path, mode="r") as zstore:
        assert zarr.open_array(zstore, mode="r")[...].tolist() == [1, 2, 3]


def test_zip_collected_with_its_array_can_be_written_again(tmp_path):
    path = str(tmp_path / "again.zip")
    a = zarrcore.create_array(path, shape=(3,), dtype="i1")
    a[...] = [1, 2, 3]
    del a
    gc.collect()  # the lock goes with the store's last descriptor
    b = zarrcore.open_array(path, mode="a")
    b[0] = 5
    assert b[...].tolist() == [5, 2, 3]


@pytest.mark.slow
def test_zip_one_writer_process_and_zip64(tmp_path):
    path = tmp_path / "one.zip"
    store = ZipStore(path)
    store.set("k", b"v")
    code = (f"import zarrcore, sys\n"
            f"try:\n    zarrcore.ZipStore({str(path)!r}).set('j', b'w')\n"
            f"except zarrcore.errors.StoreError as e:\n    print(e); sys.exit(3)\n")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 3 and "another process is writing" in run.stdout
    store.close()
    with zipfile.ZipFile(path) as zf:
        assert zf.read("k") == b"v"
    # Members past 4 GiB need zip64 records; a zip64 central directory from many members
    # (over 65535) is cheaper to make and shows the same.
    many = tmp_path / "many.zip"
    with ZipStore(many) as store:
        for i in range(65600):
            store.set(f"k/{i}", b"")
    with zipfile.ZipFile(many) as zf:
        assert len(zf.namelist()) == 65600
    with ZipStore(many, read_only=True) as store:
        assert len(store.list_prefix("k")) == 65600


def test_missing_zip_read_only_creates_nothing(tmp_path):
    path = tmp_path / "none.zip"
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_group(path, mode="r")
    assert not path.exists()
    store = ZipStore(path, read_only=True)
    assert store.get("k") is None and store.list_prefix("") == []
    assert not path.exists()


# -- memory:// ----------------------------------------------------------------
def test_memory_urls_share_one_store_per_name():
    a = zarrcore.create_array("memory://shared-1", name="x", shape=(3,), dtype="i2")
    a[...] = [1, 2, 3]
    assert zarrcore.open_array("memory://shared-1", path="x", mode="r")[...].tolist() == [1, 2, 3]
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_array("memory://shared-2", path="x", mode="r")
    assert make_store("memory://shared-1") == make_store("memory://shared-1")
    assert make_store("memory://") != make_store("memory://")


# -- URL resolution -----------------------------------------------------------
def test_make_store_resolves_paths_and_objects(tmp_path):
    assert isinstance(make_store(str(tmp_path / "d.zarr")), LocalStore)
    assert isinstance(make_store(tmp_path / "d.zip"), ZipStore)
    os.makedirs(tmp_path / "dir.zip")  # a directory named .zip stays a directory
    assert isinstance(make_store(str(tmp_path / "dir.zip")), LocalStore)
    assert make_store(f"file://{tmp_path}/d.zarr") == LocalStore(tmp_path / "d.zarr")
    assert isinstance(make_store(f"file://{tmp_path}/x.zip"), ZipStore)
    # zarr-python's stores.
    zlocal = zarr.storage.LocalStore(tmp_path / "z", read_only=True)
    assert make_store(zlocal) == LocalStore(tmp_path / "z") and make_store(zlocal).read_only
    zmem = zarr.storage.MemoryStore()
    zarr.create_array(zmem, shape=(4,), dtype="i4", chunks=(2,))[...] = [1, 2, 3, 4]
    ours = zarrcore.open_array(zmem, mode="r+")
    assert isinstance(ours.store, MemoryStore) and ours[...].tolist() == [1, 2, 3, 4]
    ours[1:3] = 0
    assert zarr.open_array(zmem, mode="r")[...].tolist() == [1, 0, 0, 4]
    with pytest.raises(StoreURLError, match="storage_options"):
        make_store(str(tmp_path), storage_options={"anon": True})


@pytest.mark.parametrize("store", [object(), b"/tmp/x.zarr", 3])
def test_unsupported_store_objects_raise_a_zarrcore_type_error(store):
    with pytest.raises(UnsupportedStoreError, match="store") as info:
        zarrcore.open_array(store, mode="r")
    assert isinstance(info.value, ZarrcoreError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize("url, pattern", [
    ("foo://bucket/x.zarr", "unknown scheme 'foo'"),
    ("zip://", "names no zip file"),
])
def test_bad_urls_raise_and_create_nothing(tmp_path, monkeypatch, url, pattern):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreURLError, match=pattern):
        zarrcore.create_array(url, shape=(3,), dtype="i4")
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_urls_without_the_remote_extra_say_what_to_install(tmp_path):
    """With obstore and fsspec absent, every remote URL fails naming the URL and the extra,
    and nothing appears in the working directory (it used to make ./s3:/bucket/x.zarr)."""
    code = """
import sys
sys.modules["obstore"] = None
sys.modules["fsspec"] = None
import zarrcore
for url in ["s3://bucket/x.zarr", "gs://b/x", "az://c/x", "abfs://c/x", "http://h/x",
            "https://h/x", "gcs://b/x", "sftp://h/x"]:
    try:
        zarrcore.create_array(url, shape=(3,), dtype="i4")
    except zarrcore.errors.StoreURLError as e:
        assert url in str(e) and 'pip install "zarrcore[remote]"' in str(e), str(e)
    else:
        raise SystemExit("no error for " + url)
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "ok", run.stderr
    assert os.listdir(tmp_path) == []


def test_cli_takes_storage_options(http_server, capsys):
    from zarrcore.cli import main

    store = zarr.storage.LocalStore(f"{http_server.root}/cli.zarr")
    zarr.create_array(store, shape=(6,), dtype="i4", chunks=(3,))[...] = np.arange(6)
    assert main(["tree", f"{http_server.url}/cli.zarr", "--json",
                 "--storage-options", '{"timeout": 5, "retries": 0}']) == 0
    assert '"shape"' in capsys.readouterr().out
    assert main(["info", f"{http_server.url}/cli.zarr", "--storage-options", "[1]"]) == 1
    assert "JSON object" in capsys.readouterr().err
    assert main(["info", "nope://x"]) == 1
    assert "unknown scheme" in capsys.readouterr().err


@pytest.mark.parametrize("url, options, backend", [
    ("gs://bkt/x.zarr", {"skip_signature": True}, "GCSStore"),
    ("gcs://bkt/x.zarr", {"skip_signature": True}, "GCSStore"),
    ("az://cont/x.zarr", {"account_name": "acct", "skip_signature": True}, "AzureStore"),
    ("abfs://cont@acct.dfs.core.windows.net/x.zarr", {"skip_signature": True}, "AzureStore"),
    ("s3://b/x.zarr", {"anon": True, "region_name": "eu-west-1"}, "S3Store"),
])
def test_object_store_urls_make_their_backend(url, options, backend):
    """Made without a request (no server for GCS or Azure here): the backend and its flags."""
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    store = make_store(url, storage_options=options)
    assert type(store._store).__name__ == backend
    assert store.supports_conditional_writes and store.supports_locks and store.supports_listing
    with pytest.raises(StoreURLError, match="bogus"):
        make_store(url, storage_options={**options, "bogus": 1})


def test_overwriting_a_node_in_a_zip_keeps_the_others(tmp_path):
    path = tmp_path / "nodes.zip"
    root = zarrcore.open_group(path, mode="w")
    root.create_array("a", shape=(2,), dtype="i1")[...] = [1, 2]
    root.store.close()
    # A new node beside "a", overwrite or not, keeps "a"; overwriting the root replaces all.
    b = zarrcore.create_array(path, name="b", shape=(2,), dtype="i1", overwrite=True)
    b[...] = [3, 4]
    b.store.close()
    group = zarrcore.open_group(path, mode="r")
    assert group["a"][...].tolist() == [1, 2] and group["b"][...].tolist() == [3, 4]
    group.store.close()
    fresh = zarrcore.open_group(path, mode="w")
    fresh.store.close()
    assert list(zarrcore.open_group(path, mode="r")) == []
