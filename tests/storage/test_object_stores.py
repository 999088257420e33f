"""Object stores on local servers: S3 (moto), HTTP with byte ranges, fsspec; both ways with
zarr-python on the same bucket; capability flags, conditional writes and locks."""
import concurrent.futures
import json
import os
import pickle
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import CredentialsError, ReadOnlyError, StoreError
from zarrcore.storage import FsspecStore, ObjectStore, make_store

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
zarr = pytest.importorskip("zarr", reason="zarr-python is not installed")


def _values(shape, dtype="int32"):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def _hierarchy_data(zarr_format):
    """A group with a plain, a zstd and (v3) a sharded array, consolidated; arrays by name."""
    data = {"plain": _values((30, 20)), "zstd": _values((25, 17), "float64") / 3}
    if zarr_format == 3:
        data["sharded"] = _values((40, 24), "uint16")
    return data


def _check(group, data):
    for name, values in data.items():
        np.testing.assert_array_equal(group[name][...], values)
        np.testing.assert_array_equal(group[name][3:11, 2:9], values[3:11, 2:9])


def _zarrcore_writes(url, options, zarr_format):
    data = _hierarchy_data(zarr_format)
    root = zarrcore.open_group(url, mode="w", zarr_format=zarr_format, storage_options=options,
                               attributes={"by": "zarrcore"})
    root.create_array("plain", shape=(30, 20), dtype="int32", chunks=(8, 8),
                      compressors=None)[...] = data["plain"]
    root.create_array("zstd", shape=(25, 17), dtype="float64", chunks=(10, 6))[...] = data["zstd"]
    if zarr_format == 3:
        root.create_array("sharded", shape=(40, 24), dtype="uint16", chunks=(5, 6),
                          shards=(20, 12))[...] = data["sharded"]
    zarrcore.consolidate_metadata(url, storage_options=options)
    return data


def _zarr_python_writes(store, zarr_format):
    data = _hierarchy_data(zarr_format)
    root = zarr.open_group(store, mode="w", zarr_format=zarr_format, attributes={"by": "zarr"})
    root.create_array("plain", shape=(30, 20), dtype="int32", chunks=(8, 8),
                      compressors=None)[...] = data["plain"]
    root.create_array("zstd", shape=(25, 17), dtype="float64", chunks=(10, 6))[...] = data["zstd"]
    if zarr_format == 3:
        root.create_array("sharded", shape=(40, 24), dtype="uint16", chunks=(5, 6),
                          shards=(20, 12))[...] = data["sharded"]
    zarr.consolidate_metadata(store)
    return data


# -- S3 ---------------------------------------------------------------------
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_s3_zarrcore_writes_zarr_python_reads(s3_bucket, zarr_format):
    server, bucket = s3_bucket
    url = f"s3://{bucket}/data.zarr"
    data = _zarrcore_writes(url, server.storage_options(), zarr_format)
    # zarr-python through s3fs and through obstore, consolidated and not.
    for store in (zarr.storage.FsspecStore(server.s3fs(True), path=f"{bucket}/data.zarr", read_only=True),
                  zarr.storage.ObjectStore(server.obstore(bucket, "data.zarr"), read_only=True)):
        group = zarr.open_consolidated(store, zarr_format=zarr_format, mode="r") if zarr_format == 2 else \
            zarr.open_group(store, mode="r", use_consolidated=True)
        assert group.attrs["by"] == "zarrcore"
        _check(group, data)
        assert sorted(group.array_keys()) == sorted(data)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_s3_zarr_python_writes_zarrcore_reads(s3_bucket, zarr_format):
    server, bucket = s3_bucket
    store = zarr.storage.FsspecStore(server.s3fs(True), path=f"{bucket}/py.zarr")
    data = _zarr_python_writes(store, zarr_format)
    url = f"s3://{bucket}/py.zarr"
    # Through a URL (s3fs' spelling of the options), consolidated and not, and through
    # zarr-python's own store objects.
    s3fs_options = {"key": "testing", "secret": "testing", "endpoint_url": server.endpoint,
                    "client_kwargs": {"region_name": "us-east-1"}}
    for group in (zarrcore.open_consolidated(url, storage_options=s3fs_options),
                  zarrcore.open_group(url, mode="r", use_consolidated=False,
                                      storage_options=server.storage_options()),
                  zarrcore.open_group(store, mode="r"),
                  zarrcore.open_group(server.obstore(bucket, "py.zarr"), mode="r"),
                  zarrcore.open_group(zarr.storage.ObjectStore(server.obstore(bucket)),
                                      path="py.zarr", mode="r")):
        assert group.attrs["by"] == "zarr"
        _check(group, data)
        assert sorted(group.array_keys()) == sorted(data)


def test_s3_zarrcore_rewrites_what_zarr_python_wrote(s3_bucket):
    server, bucket = s3_bucket
    store = zarr.storage.ObjectStore(server.obstore(bucket))
    data = _zarr_python_writes(store, 3)
    # Whole chunks and whole shards from zarrcore, then zarr-python reads them.
    group = zarrcore.open_group(store, mode="r+")
    group["plain"][8:16, 8:16] = -1
    group["sharded"][0:20, 0:12] = 7
    data["plain"][8:16, 8:16] = -1
    data["sharded"][0:20, 0:12] = 7
    _check(zarr.open_group(store, mode="r"), data)


def test_s3_get_many_runs_concurrently_and_in_arrival_order(s3_bucket, io_config):
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    store.set_many([(f"k/{i}", bytes([i]) * (i + 1)) for i in range(40)])
    assert sorted(store.list_prefix("k"), key=lambda k: int(k[2:])) == [f"k/{i}" for i in range(40)]
    requests = [(f"k/{i}", None) for i in range(40)] + [("k/missing", None), ("k/5", [(1, 3), (-2, None)])]
    got = dict(store.get_many(requests))
    assert got[40] is None and got[41] == [b"\x05\x05", b"\x05\x05"]
    assert [got[i] for i in range(40)] == [bytes([i]) * (i + 1) for i in range(40)]


def test_s3_byte_ranges_are_python_slices(s3_bucket):
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}/p", storage_options=server.storage_options())
    store.set("a/b", b"0123456789")
    for start, stop in [(None, None), (2, 5), (8, 20), (20, 30), (-3, None), (7, None), (-30, None),
                        (2, -2), (-4, -1), (5, 5), (6, 2)]:
        assert store.get("a/b", start, stop) == b"0123456789"[start:stop], (start, stop)
    assert store.get_ranges("a/b", [(0, 2), (8, 20), (20, 25)]) == [b"01", b"89", b""]
    assert store.get("a/missing", 2, 5) is None and store.get_ranges("a/missing", [(0, 1)]) is None
    assert store.getsize("a/b") == 10 and store.getsize("a/c") is None
    assert store.exists("a/b") and not store.exists("a")
    assert store.list_dir("") == ["a"] and store.list_dir("a") == ["b"]
    store.delete("a/b")
    store.delete("a/b")  # a missing key is no error
    assert store.get("a/b") is None


def test_s3_capabilities_repr_and_pickle(s3_bucket):
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}/x.zarr", storage_options=server.storage_options())
    assert isinstance(store, ObjectStore)
    assert (store.supports_listing, store.supports_writes, store.supports_atomic_writes,
            store.supports_conditional_writes, store.supports_locks, store.native_root) == \
        (True, True, True, True, True, None)
    assert repr(store) == f"ObjectStore('s3://{bucket}/x.zarr')"
    store.set("k", b"v")
    again = pickle.loads(pickle.dumps(store))
    assert again.get("k") == b"v" and again == store
    reader = make_store(f"s3://{bucket}/x.zarr", read_only=True, storage_options=server.storage_options())
    with pytest.raises(ReadOnlyError):
        reader.set("k", b"w")
    off = make_store(f"s3://{bucket}", storage_options={**server.storage_options(),
                                                       "conditional_writes": False})
    assert not off.supports_conditional_writes and not off.supports_locks


def test_s3_conditional_writes(s3_bucket):
    """moto's server honours If-None-Match and If-Match on PutObject, as S3 does."""
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    assert store.get_versioned("c") == (None, None)
    assert store.set_if("c", b"one", None)
    assert not store.set_if("c", b"two", None)  # create-only: it exists
    value, version = store.get_versioned("c")
    assert value == b"one"
    assert store.set_if("c", b"three", version)
    assert not store.set_if("c", b"four", version)  # another writer came first
    assert store.get("c") == b"three"
    store.delete("c")
    assert not store.set_if("c", b"five", version)  # deleted meanwhile
    assert store.get("c") is None


def test_s3_lock_excludes_threads_and_hides_its_object(s3_bucket):
    server, bucket = s3_bucket
    stores = [make_store(f"s3://{bucket}", storage_options=server.storage_options())
              for _ in range(2)]
    stores[0].set("n/count", b"0")
    errors = []

    def add(store):
        try:
            for _ in range(5):
                with store.lock("n/count", "n"):
                    value = int(store.get("n/count"))
                    assert store.list_dir("n") == ["count"]  # the lock object is not a key
                    store.set("n/count", str(value + 1).encode())
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=add, args=(stores[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert stores[0].get("n/count") == b"20"
    assert stores[0].list_prefix("n") == ["n/count"]


def test_s3_metadata_updates_hold_the_lock(s3_bucket):
    server, bucket = s3_bucket
    url = f"s3://{bucket}/m.zarr"
    options = server.storage_options()
    a = zarrcore.create_array(url, shape=(4,), dtype="i2", chunks=(2,), storage_options=options)
    a.attrs["x"] = 1
    a.resize((6,))
    b = zarrcore.open_array(url, mode="r", storage_options=options)
    assert b.shape == (6,) and b.attrs["x"] == 1


def test_s3_missing_bucket_and_object(moto_server):
    options = moto_server.storage_options()
    with pytest.raises(zarrcore.errors.NodeNotFoundError):
        zarrcore.open_array(f"s3://{moto_server.new_bucket()}/nothing.zarr", mode="r",
                            storage_options=options)
    store = make_store("s3://no-such-bucket/x", storage_options=options)
    with pytest.raises(StoreError, match="'zarr.json'.*bucket 'no-such-bucket' does not exist") \
            as e:
        store.get("zarr.json")
    assert e.value.errno == 2
    # The server's code and message, not its XML document.
    assert "(NoSuchBucket: " in str(e.value) and "<" not in str(e.value)
    with pytest.raises(StoreError, match="bucket 'no-such-bucket' does not exist"):
        zarrcore.open_group("s3://no-such-bucket/x", mode="r", storage_options=options)
    with pytest.raises(StoreError, match="'k'"):
        store.set("k", b"v")
    with pytest.raises(StoreError, match="bucket 'no-such-bucket' does not exist") as e:
        store.set_many([("k", b"v"), ("l", b"w")])
    assert "<" not in str(e.value)


@pytest.fixture(scope="module")
def checking_moto_server():
    """A moto server that refuses keys it does not know."""
    pytest.importorskip("moto.server", reason="moto's server (the test extra) is not installed")
    from servers import MotoServer

    server = MotoServer(checks_credentials=True)
    yield server
    server.stop()


def test_s3_wrong_credentials_say_to_check_the_key_and_secret(checking_moto_server):
    options = {**checking_moto_server.storage_options(), "access_key_id": "wrong",
               "secret_access_key": "wrong", "retries": 0}
    store = make_store("s3://bucket/x", storage_options=options)
    for call in (lambda: store.get("zarr.json"), lambda: store.set("k", b"v"),
                 lambda: list(store.list_prefix(""))):
        with pytest.raises(StoreError, match="access denied: the server does not accept these "
                                             "credentials; check the key and secret") as e:
            call()
        assert e.value.errno == 13
        assert "(InvalidAccessKeyId: " in str(e.value) and "<" not in str(e.value)
    with pytest.raises(StoreError, match="check the key and secret"):
        zarrcore.open_array("s3://bucket/x", mode="r", storage_options=options)


def test_set_many_starts_each_put_as_its_item_is_yielded():
    import obstore.store

    store = ObjectStore(obstore.store.MemoryStore())

    def items():
        yield "a", b"1"
        waited = time.monotonic()
        while store.get("a") is None:  # (stored only if its put started before the next item)
            assert time.monotonic() - waited < 5, "'a' was not put before the next item was asked for"
            time.sleep(0.005)
        yield "b", b"2"

    store.set_many(items())
    assert store.get("b") == b"2"

    def failing():
        yield "c", b"3"
        raise ValueError("no more items")

    with pytest.raises(ValueError, match="no more items"):
        store.set_many(failing())


def test_s3_over_https_signs_unsigned_payload(monkeypatch):
    """UNSIGNED-PAYLOAD (no SHA-256 of each body) only where TLS protects the body: s3:// to
    AWS or another https endpoint, unless the caller chose otherwise."""
    for name in ("AWS_UNSIGNED_PAYLOAD", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)

    def unsigned(url, **options):
        config = ObjectStore.from_url(url, storage_options={"region": "us-east-1", **options})._store.config
        return config.get("unsigned_payload")

    assert unsigned("s3://b/x") == "true"
    assert unsigned("s3://b/x", endpoint_url="https://minio.example:9000") == "true"
    assert unsigned("s3://b/x", endpoint_url="http://127.0.0.1:9000") is None
    assert unsigned("s3://b/x", client_kwargs={"endpoint_url": "http://127.0.0.1:9000"}) is None
    assert unsigned("s3://b/x", unsigned_payload=False) == "false"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    assert unsigned("s3://b/x") is None
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.setenv("AWS_UNSIGNED_PAYLOAD", "false")
    assert unsigned("s3://b/x") is None


# -- many arrays in one process ---------------------------------------------
def _copies(store, n, prefix="a"):
    """`n` arrays of 32 int32 in two chunks, named prefix0.., written to `store`; the data."""
    data = np.arange(32, dtype="int32")
    zarrcore.create_array(store, name=f"{prefix}0", shape=(32,), dtype="int32",
                          chunks=(16,))[...] = data
    objects = {k[len(prefix) + 2:]: store.get(k) for k in store.list_prefix(f"{prefix}0")}
    store.set_many((f"{prefix}{i}/{k}", v) for i in range(1, n) for k, v in objects.items())
    return data


def _read_all(arrays, threads=8):
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda a: a[...], arrays))


@pytest.mark.parametrize("kind", ["obstore", "s3fs"])
def test_s3_requests_of_many_arrays_and_threads_stay_within_the_process_bound(
        s3_bucket, io_config, kind):
    """config.io_process_concurrency bounds the requests in flight of the whole process,
    over every array and thread, not those of each call (config.io_concurrency)."""
    from servers import CountingProxy

    server, bucket = s3_bucket
    data = _copies(make_store(f"s3://{bucket}", storage_options=server.storage_options()), 24)
    proxy = CountingProxy(server.port)
    io_config.set(io_process_concurrency=4)
    try:
        if kind == "obstore":
            arrays = [zarrcore.open_array(f"s3://{bucket}/a{i}", mode="r",
                                          storage_options=server.storage_options(proxy.endpoint))
                      for i in range(24)]
        else:
            s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed")
            fs = s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=proxy.endpoint,
                                   client_kwargs={"region_name": "us-east-1"},
                                   skip_instance_cache=True)
            arrays = [zarrcore.open_array(FsspecStore(fs, f"{bucket}/a{i}"), mode="r")
                      for i in range(24)]
        got = _read_all(arrays)
    finally:
        proxy.stop()
    assert all((g == data).all() for g in got)
    assert proxy.requests >= 24 * 3
    assert proxy.peak_requests <= 4, proxy.peak_requests


@pytest.mark.posix("sets RLIMIT_NOFILE")
def test_s3_reads_of_many_arrays_fit_a_low_open_file_limit(s3_bucket):
    """16 threads reading 16 arrays of 16 chunks each want 256 requests at once; under a
    limit of 200 open files the process's bound (128 by default) keeps every read working,
    where one connection per request in flight ran out of descriptors (EIO)."""
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    zarrcore.create_array(store, name="m0", shape=(256,), dtype="int32",
                          chunks=(16,))[...] = np.arange(256)
    objects = {k[3:]: store.get(k) for k in store.list_prefix("m0")}
    store.set_many((f"m{i}/{k}", v) for i in range(1, 16) for k, v in objects.items())
    code = f"""
import concurrent.futures, resource
import numpy as np, zarrcore
resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))
arrays = [zarrcore.open_array(f"s3://{bucket}/m{{i}}", mode="r",
                              storage_options={server.storage_options()!r}) for i in range(16)]
with concurrent.futures.ThreadPoolExecutor(16) as pool:
    assert all((a == np.arange(256)).all() for a in pool.map(lambda a: a[...], arrays))
"""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_http_arrays_of_one_host_share_one_client_and_its_connections(http_server, io_config):
    """Arrays opened one by one on one host (or bucket and credentials) share one client:
    the process's connections are about as few as its requests in flight, not a pool per
    array (about: a request that takes the slot another just left may find that one's
    connection not yet back in the pool, and open one more)."""
    from servers import CountingProxy

    data = _copies(zarrcore.LocalStore(http_server.root), 24, prefix="h")
    proxy = CountingProxy(http_server.server_address[1])
    io_config.set(io_process_concurrency=4)
    try:
        arrays = [zarrcore.open_array(f"{proxy.endpoint}/h{i}", mode="r") for i in range(24)]
        got = _read_all(arrays)
        # A copy unpickled here shares the client too.
        got += _read_all([pickle.loads(pickle.dumps(a)) for a in arrays[:8]])
    finally:
        proxy.stop()
    assert all((g == data).all() for g in got)
    assert http_server.max_in_flight <= 4 and proxy.peak_requests <= 4
    assert proxy.connections <= 2 * 4, proxy.connections  # (one pool per array: 24 and more)


def test_a_url_opened_again_takes_its_client_without_building_one(s3_bucket, monkeypatch):
    """obstore builds a client (its TLS roots loaded) for every URL it parses: a URL opened
    before, with the same options and credentials in the environment, takes the shared
    client at once; other options, or changed credentials, are parsed again."""
    import obstore.store

    server, bucket = s3_bucket
    built = []
    parse = obstore.store.from_url

    def counting(url, **kwargs):
        built.append(url)
        return parse(url, **kwargs)

    monkeypatch.setattr(obstore.store, "from_url", counting)
    url = f"s3://{bucket}/again-{uuid.uuid4().hex}"
    first = make_store(url, storage_options=server.storage_options())
    first.set("k", b"v")
    again = [make_store(url, storage_options=server.storage_options()) for _ in range(3)]
    assert len(built) == 1
    assert all(s.get("k") == b"v" and s._store is first._store for s in again)
    make_store(url, storage_options={**server.storage_options(), "timeout": 7})
    assert len(built) == 2
    monkeypatch.setenv("AWS_SESSION_TOKEN", "another")
    make_store(url, storage_options=server.storage_options())
    assert len(built) == 3


# -- faults through a proxy in front of moto ---------------------------------
def _proxied(server, proxy, bucket, **extra):
    return make_store(f"s3://{bucket}", storage_options={
        **server.storage_options(proxy.endpoint), "timeout": 1, "retries": 1, **extra})


def test_s3_access_denied_names_the_key(s3_bucket, fault_proxy):
    server, bucket = s3_bucket
    fault_proxy.faults.status = 403
    store = _proxied(server, fault_proxy, bucket)
    with pytest.raises(StoreError, match="key 'a/zarr.json'.*access denied: check the key and "
                                         "secret") as e:
        store.get("a/zarr.json")
    assert e.value.errno == 13
    with pytest.raises(StoreError, match="access denied"):
        zarrcore.open_array(f"s3://{bucket}/a", mode="r", storage_options={
            **server.storage_options(fault_proxy.endpoint), "retries": 0})


def test_s3_server_dying_mid_write_leaves_no_torn_object(s3_bucket, fault_proxy):
    server, bucket = s3_bucket
    direct = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    direct.set("obj", b"old" * 1000)
    fault_proxy.faults.cut_request_after = 300  # the headers and a little of the body
    store = _proxied(server, fault_proxy, bucket)
    started = time.monotonic()
    with pytest.raises(StoreError, match="key 'obj'"):
        store.set("obj", b"new" * 100000)
    with pytest.raises(StoreError, match="key 'fresh'"):
        store.set_many([("fresh", b"x" * 100000)])
    assert time.monotonic() - started < 20
    assert direct.get("obj") == b"old" * 1000  # old or new, never part of the new
    assert direct.get("fresh") is None


def test_s3_truncated_and_dropped_reads_raise(s3_bucket, fault_proxy, io_config):
    server, bucket = s3_bucket
    direct = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    direct.set("big", bytes(range(256)) * 4096)
    for fault in ("truncate", "drop"):
        fault_proxy.faults.reset()
        setattr(fault_proxy.faults, fault, True)
        store = _proxied(server, fault_proxy, bucket, retries=0)
        with pytest.raises(StoreError, match="key 'big'"):
            store.get("big")
        with pytest.raises(StoreError, match="key 'big'"):
            list(store.get_many([("big", None)]))


def _sharded_on_s3(server, bucket):
    data = _values((32, 32))
    zarrcore.create_array(f"s3://{bucket}/sh.zarr", shape=(32, 32), dtype="int32",
                          chunks=(8, 8), shards=(16, 16), compressors=None,
                          storage_options=server.storage_options())[...] = data
    return data


def test_s3_failed_range_reads_are_never_empty_values(s3_bucket):
    """A failed request whose error text holds "416" (here the proxy's port; a duration
    can too) is no answer "416 Range Not Satisfiable": it raises, naming the key, and a
    sharded read raises StoreError rather than decoding empty bytes."""
    from servers import FaultProxy, free_port_containing

    server, bucket = s3_bucket
    data = _sharded_on_s3(server, bucket)
    direct = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    direct.set("blob", bytes(range(256)) * 64)
    proxy = FaultProxy(server.port, port=free_port_containing("416"))
    try:
        store = _proxied(server, proxy, bucket, retries=0)
        a = zarrcore.open_array(store, name="sh.zarr", mode="r")
        proxy.faults.drop = True
        for read in (lambda: store.get("blob", 100, 5000), lambda: store.get("blob", -3000),
                     lambda: store.get_ranges("blob", [(0, 1000), (5000, 7000)]),
                     lambda: list(store.get_many([("blob", [(10, 4000), (6000, 9000)])]))):
            with pytest.raises(StoreError, match="key 'blob'"):
                read()
        with pytest.raises(StoreError, match=r"key 'sh\.zarr/c/"):
            a[...]
        proxy.faults.drop = False
        np.testing.assert_array_equal(a[...], data)
    finally:
        proxy.stop()


def test_s3fs_short_bodies_raise_naming_the_key(s3_bucket, fault_proxy):
    """An answer to a range inside a value (or a suffix) cut short with no Content-Length to
    tell (the connection closed) is an I/O error naming the key, never fewer bytes handed
    on to decode. (Ranges from 0, which read whole values, rely on the answer's framing.)"""
    s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed")
    server, bucket = s3_bucket
    data = _sharded_on_s3(server, bucket)
    blob = bytes(range(256)) * 64
    make_store(f"s3://{bucket}", storage_options=server.storage_options()).set("blob", blob)
    fs = s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=fault_proxy.endpoint,
                           client_kwargs={"region_name": "us-east-1"},
                           skip_instance_cache=True, use_listings_cache=False)
    store = FsspecStore(fs, bucket)
    a = zarrcore.open_array(store, name="sh.zarr", mode="r")
    fault_proxy.faults.unframed = True
    fault_proxy.faults.method = "GET"
    for read in (lambda: store.get("blob", 100, 5000), lambda: store.get("blob", -3000),
                 lambda: store.get_ranges("blob", [(10, 20), (5000, 7000)]),
                 lambda: list(store.get_many([("blob", [(10, 4000)])]))):
        with pytest.raises(StoreError, match="key 'blob'.*held"):
            read()
    with pytest.raises(StoreError, match=r"key 'sh\.zarr/c/0/0'"):
        a[8:16, 8:16]  # the shard's index, then an inner chunk from the middle of the shard
    fault_proxy.faults.unframed = False
    assert store.get("blob", 100, 5000) == blob[100:5000]
    assert store.get("blob", 16000, 20000) == blob[16000:]  # short where the object ends
    np.testing.assert_array_equal(a[...], data)


def test_s3_slow_server_times_out(s3_bucket, fault_proxy):
    server, bucket = s3_bucket
    fault_proxy.faults.delay = 5
    store = _proxied(server, fault_proxy, bucket, timeout=0.5, retries=0)
    started = time.monotonic()
    with pytest.raises(StoreError, match="key 'slow'.*timed out") as e:
        store.get("slow")
    assert e.value.errno == 110
    assert time.monotonic() - started < 4


# -- HTTP -------------------------------------------------------------------
@pytest.fixture
def http_hierarchy(http_server):
    """A zarr-python-written v3 hierarchy (sharded, consolidated) served over HTTP."""
    store = zarr.storage.LocalStore(f"{http_server.root}/h.zarr")
    return http_server, _zarr_python_writes(store, 3)


def test_http_reads_consolidated_hierarchy(http_hierarchy):
    server, data = http_hierarchy
    url = f"{server.url}/h.zarr"
    group = zarrcore.open_group(url, mode="r")
    store = group.store
    assert isinstance(store, ObjectStore) and store.read_only
    assert (store.supports_listing, store.supports_writes, store.supports_locks,
            store.supports_conditional_writes) == (False, False, False, False)
    _check(group, data)
    assert sorted(group.array_keys()) == sorted(data)  # from the consolidated metadata
    with pytest.raises(ReadOnlyError):
        group["plain"][0, 0] = 1
    with pytest.raises(StoreError, match="cannot list"):
        store.list_prefix("plain")
    assert zarrcore.open_array(url + "/sharded", mode="r")[39, 23] == data["sharded"][39, 23]


def test_http_get_many_is_concurrent_and_bounded(http_server, io_config):
    import os

    os.makedirs(f"{http_server.root}/c", exist_ok=True)
    for i in range(24):
        with open(f"{http_server.root}/c/{i}", "wb") as f:
            f.write(bytes([i]) * 1000)
    store = make_store(http_server.url)
    io_config.set(io_concurrency=8)
    http_server.faults.delay = 0.2
    started = time.monotonic()
    got = dict(store.get_many([(f"c/{i}", [(10, 20)] if i % 2 else None) for i in range(24)]))
    elapsed = time.monotonic() - started
    assert [got[i] for i in range(24)] == [
        [bytes([i]) * 10] if i % 2 else bytes([i]) * 1000 for i in range(24)]
    # 24 requests of 0.2 s, 8 at a time: 3 rounds (one after another would take 4.8 s).
    assert http_server.max_in_flight == 8
    assert elapsed < 2.0, elapsed


def test_http_faults(http_server, io_config):
    with open(f"{http_server.root}/blob", "wb") as f:
        f.write(bytes(range(256)) * 1000)
    store = make_store(http_server.url, storage_options={"retries": 1, "timeout": 0.5})
    assert store.get("nothing") is None
    for fault, value, pattern in (("status", 403, "access denied"), ("truncate", True, "failed"),
                                  ("drop", True, "failed"), ("status", 500, "failed"),
                                  ("delay", 2, "timed out")):
        http_server.faults.reset()
        setattr(http_server.faults, fault, value)
        started = time.monotonic()
        with pytest.raises(StoreError, match=f"key 'blob'.*{pattern}"):
            store.get("blob")
        with pytest.raises(StoreError, match=f"key 'blob'.*{pattern}"):
            store.get("blob", 10, 20)
        assert time.monotonic() - started < 6, fault


def test_http_chunks_come_by_the_plain_client(http_server, monkeypatch):
    """An http:// store's metadata and chunks, whole and as byte ranges of one version of a
    shard, come by the plain client, and read what was written."""
    from zarrcore.storage import objectstore

    asked = []
    get_body = objectstore.get_body
    monkeypatch.setattr(
        objectstore,
        "get_body",
        lambda store, path, *args: asked.append(path) or get_body(store, path, *args),
    )
    data = _served(http_server, "plainly", 4096)
    np.testing.assert_array_equal(
        zarrcore.open_array(f"{http_server.url}/plainly", mode="r")[...], data
    )
    zarrcore.create_array(
        zarrcore.LocalStore(http_server.root),
        name="plain-shards",
        data=data,
        chunks=(1, 4096),
        shards=(2, 16384),
    )
    sharded = zarrcore.open_array(f"{http_server.url}/plain-shards", mode="r")
    np.testing.assert_array_equal(sharded[1:3, 5:40000], data[1:3, 5:40000])
    assert asked == []


def test_the_plain_client_replaces_connections_that_were_closed(http_server, io_config):
    """Kept connections that closed meanwhile (a server's idle timeout) cost nothing: the
    request goes on the next one, and on a new one when none is left."""
    import socket

    with open(f"{http_server.root}/kept", "wb") as f:
        f.write(bytes(range(256)) * 100)
    store = make_store(http_server.url)
    store._plain.forget_connections()  # (the session's server: other tests' connections)
    io_config.set(io_concurrency=2)
    http_server.faults.delay = 0.2  # (two requests at once: two connections)
    assert [v for _, v in store.get_many([("kept", [(0, 10)])] * 2)] == [[bytes(range(10))]] * 2
    http_server.faults.reset()
    closed = list(store._plain._idle)
    assert len(closed) == 2
    for *_, connection in closed:
        connection.shutdown(socket.SHUT_RDWR)
    assert store.get("kept", 10, 20) == bytes(range(10, 20))
    assert len(store._plain._idle) == 1 and store._plain._idle[0] not in closed


def test_the_plain_client_takes_its_fastest_idle_connection(http_server, io_config, monkeypatch):
    """Of the idle connections, the one whose last timed body came fastest carries the next
    request, and of those never timed the one opened first (see PlainHTTP's _idle: a server
    paces a connection by what it has carried)."""
    import heapq

    with open(f"{http_server.root}/oldest", "wb") as f:
        f.write(b"old" * 1000)
    store = make_store(http_server.url)
    store._plain.forget_connections()  # (the session's server: other tests' connections)
    io_config.set(io_concurrency=3)
    http_server.faults.delay = 0.2  # (three requests at once: three connections)
    assert [v for _, v in store.get_many([("oldest", None)] * 3)] == [b"old" * 1000] * 3
    http_server.faults.reset()
    plain, used = store._plain, []
    exchange = plain._exchange
    monkeypatch.setattr(plain, "_exchange",
                        lambda sent, *args: used.append(sent.sock) or exchange(sent, *args))
    assert len(plain._idle) == 3
    plain._idle = [(0.0, serial, sock) for _, serial, sock in plain._idle]  # (none timed)
    heapq.heapify(plain._idle)
    oldest = min(plain._idle)[2]
    # (Small bodies: their rates are not timed, and the connection keeps its place.)
    assert store.get("oldest", 0, 3) == b"old" and store.get("oldest", 3, 6) == b"old"
    assert used == [oldest, oldest]
    *_, fastest = max(plain._idle)  # (the newest)
    plain._idle = [(-1e9 if sock is fastest else 0.0, s, sock) for _, s, sock in plain._idle]
    heapq.heapify(plain._idle)
    assert store.get("oldest", 6, 9) == b"old"
    assert used[2] is fastest and fastest is not oldest
    # A body large enough to time gives its connection a rate.
    with open(f"{http_server.root}/timed", "wb") as f:
        f.write(bytes(200_000))
    plain._idle = [(0.0, s, sock) for _, s, sock in plain._idle]
    heapq.heapify(plain._idle)
    assert len(store.get("timed")) == 200_000
    assert [rate < 0 for rate, *_ in sorted(plain._idle)] == [True, False, False]


def test_the_plain_client_sends_the_ranges_of_an_object_at_once_from_one_thread(
    http_server, monkeypatch
):
    """Each range on a connection of its own, every request sent before any answer is read,
    all in the calling thread (no hop to the I/O threads, no obstore)."""
    from zarrcore.storage import objectstore

    blob = np.random.default_rng(5).bytes(90_000)
    with open(f"{http_server.root}/ranged", "wb") as f:
        f.write(blob)
    store = make_store(http_server.url)
    monkeypatch.setattr(objectstore, "fan_out", lambda *args, **kwargs: pytest.fail("fanned out"))
    monkeypatch.setattr(objectstore, "get_body", lambda *args: pytest.fail("asked obstore"))
    plain, sent, read = store._plain, [], []
    send, answer = plain._sent, plain._answer
    monkeypatch.setattr(plain, "_sent", lambda *args, **kw: sent.append(1) or send(*args, **kw))
    monkeypatch.setattr(plain, "_answer",
                        lambda *args, **kw: read.append(len(sent)) or answer(*args, **kw))
    ranges = [(0, 30_000), (30_000, 60_000), (60_000, 90_001)]
    assert [bytes(p) for p in store.get_ranges("ranged", ranges)] == [
        blob[:30_000], blob[30_000:60_000], blob[60_000:]
    ]
    assert read == [3, 3, 3]


def test_ranges_on_kept_connections_the_server_closed_go_on_new_ones(http_server, monkeypatch):
    import socket

    from zarrcore.storage import objectstore

    with open(f"{http_server.root}/again", "wb") as f:
        f.write(b"0123456789" * 10)
    store = make_store(http_server.url)
    plain = store._plain
    plain.forget_connections()
    monkeypatch.setattr(objectstore, "get_body", lambda *args: pytest.fail("asked obstore"))
    for serial in range(3):  # idle connections whose server end is gone
        ours, theirs = socket.socketpair()
        theirs.close()
        plain._idle.append((0.0, -1 - serial, ours))
    assert store.get_ranges("again", [(0, 5), (95, 100), (50, 51)]) == [b"01234", b"56789", b"0"]
    assert len(plain._idle) == 3 and all(serial >= 0 for _, serial, _ in plain._idle)


def test_ranges_answered_with_an_error_are_left_to_obstore(http_server, monkeypatch):
    """Obstore is asked instead, whose error names the key; the plain client reads right
    afterwards, the connections of the answers it left unread closed."""
    from zarrcore.storage import objectstore

    with open(f"{http_server.root}/failing", "wb") as f:
        f.write(bytes(range(200)))
    store = make_store(http_server.url)
    store._plain.forget_connections()
    http_server.faults.status = 503
    http_server.faults.match = "/failing"
    with pytest.raises(StoreError, match="failing"):
        store.get_ranges("failing", [(0, 50), (50, 100), (100, 150)])
    http_server.faults.reset()
    monkeypatch.setattr(objectstore, "get_body", lambda *args: pytest.fail("asked obstore"))
    assert store.get_ranges("failing", [(0, 2), (198, 200)]) == [b"\x00\x01", b"\xc6\xc7"]


def test_a_missing_key_keeps_its_plain_connection(http_server):
    """A 404 reads as None, and its connection carries the next request (a sparse array's
    missing chunks open no connection each)."""
    with open(f"{http_server.root}/present", "wb") as f:
        f.write(b"here")
    store = make_store(http_server.url)
    store._plain.forget_connections()  # (the session's server: other tests' connections)
    assert store.get("present") == b"here"
    kept = set(store._plain._idle)
    assert store.get("absent") is None
    assert store.get("absent", 2, 4) is None
    assert store.get("present", -2) == b"re"
    assert set(store._plain._idle) == kept


def test_the_plain_client_reads_a_head_that_comes_in_pieces():
    """An answer whose head comes a few bytes at a time (the first read, sent with the
    request, holds only its start) is read whole, on a connection kept for the next."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    requests = []

    def serve():
        conn, _ = listener.accept()
        with conn:
            for _ in range(2):
                asked = b""
                while not asked.endswith(b"\r\n\r\n"):
                    asked += conn.recv(4096)
                requests.append(asked.split(b"\r\n")[0])
                body = b"0123456789"[int(asked.split(b"=")[1][:1]):]
                answer = b"HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n" % len(body)
                answer += b"Content-Range: bytes %d-9/10\r\n\r\n" % (10 - len(body)) + body
                for at in range(0, len(answer), 7):
                    conn.sendall(answer[at : at + 7])
                    time.sleep(0.002)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        store = make_store(f"http://127.0.0.1:{listener.getsockname()[1]}")
        assert store.get("k", 3, None) == b"3456789"
        assert store.get("k", 6, None) == b"6789"
        server.join(5)
        assert requests == [b"GET /k HTTP/1.1"] * 2
    finally:
        listener.close()


def test_what_the_plain_client_does_not_read_is_left_to_obstore():
    """A redirect: obstore follows it. A body sent in chunks (Transfer-Encoding), which
    neither client reads: an error naming the key, and obstore is asked from then on."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Answers(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            body = self.path.encode() * 100
            if self.path.startswith("/moved/"):
                self.send_response(302)
                self.send_header("Location", self.path.replace("/moved/", "/here/"))
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path.startswith("/chunked/"):
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            else:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = make_store(f"http://127.0.0.1:{server.server_address[1]}")
        assert store.get("moved/a") == b"/here/a" * 100
        assert not store._plain.refused
        with pytest.raises(StoreError, match="key 'chunked/b'"):
            store.get("chunked/b")
        assert store._plain.refused
        assert store.get("c") == b"/c" * 100
    finally:
        server.shutdown()
        server.server_close()


# -- fsspec -----------------------------------------------------------------
def test_fsspec_store_on_s3fs_both_ways(s3_bucket):
    server, bucket = s3_bucket
    fs = server.s3fs()
    mapped = make_store(fs.get_mapper(f"{bucket}/f.zarr"))
    assert isinstance(mapped, FsspecStore) and mapped.supports_atomic_writes
    assert not mapped.supports_locks and not mapped.supports_conditional_writes
    with pytest.raises(zarrcore.errors.LockUnavailableError):
        with mapped.lock("a/c/0/0", "a"):
            pass
    # Writes that lock need the caller's word that this process is the only writer.
    store = FsspecStore(fs, f"{bucket}/f.zarr", single_writer=True)
    a = zarrcore.create_array(store, name="a", shape=(20, 20), dtype="i4", chunks=(5, 5),
                              shards=(10, 10))
    a[...] = _values((20, 20))
    zarrcore.consolidate_metadata(store)
    group = zarr.open_group(zarr.storage.FsspecStore(server.s3fs(True), path=f"{bucket}/f.zarr"), mode="r")
    np.testing.assert_array_equal(group["a"][...], _values((20, 20)))
    got = dict(store.get_many([("a/zarr.json", None), ("a/missing", None), ("a/c/0/0", [(-20, None)])]))
    assert json.loads(got[0])["shape"] == [20, 20] and got[1] is None and len(got[2][0]) == 20
    assert store.list_dir("") == ["a", "zarr.json"]
    # A whole filesystem: the bucket is the first part of each key.
    assert make_store(fs).list_dir(bucket) == ["f.zarr"]


def test_fsspec_memory_filesystem_and_fsspec_urls():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    a = zarrcore.create_array(fs.get_mapper("/zc/a"), shape=(5,), dtype="i1", chunks=(2,))
    a[...] = [1, 2, 3, 4, 5]
    assert json.loads(fs.cat("/zc/a/zarr.json"))["shape"] == [5]
    # A protocol zarrcore does not open itself goes to fsspec (here a chained URL).
    b = zarrcore.open_array("simplecache::memory://zc/a", mode="r")
    assert isinstance(b.store, FsspecStore)
    assert b[...].tolist() == [1, 2, 3, 4, 5]


def _read_first(array, queue):
    try:
        queue.put(array[0].tolist())
    except Exception as e:  # handed back to the test
        queue.put(f"{type(e).__name__}: {e}")


def test_s3_arrays_in_worker_processes(s3_bucket):
    """Spawned workers take pickled arrays; a child forked after obstore ran reads too,
    through a helper process of its own (obstore's threads are not the child's)."""
    import multiprocessing

    server, bucket = s3_bucket
    a = zarrcore.create_array(f"s3://{bucket}/w.zarr", shape=(2, 3), dtype="i4",
                              storage_options=server.storage_options())
    a[...] = [[1, 2, 3], [4, 5, 6]]
    results = {}
    for method in ("spawn", "fork"):
        context = multiprocessing.get_context(method)
        queue = context.Queue()
        process = context.Process(target=_read_first, args=(a, queue))
        process.start()
        results[method] = queue.get(timeout=120)
        process.join(60)
    assert results["spawn"] == [1, 2, 3]
    assert results["fork"] == [1, 2, 3]


def test_s3_set_many_uploads_concurrently(s3_bucket, fault_proxy, io_config):
    server, bucket = s3_bucket
    fault_proxy.faults.delay = 0.3  # per connection; each upload in flight has its own
    store = _proxied(server, fault_proxy, bucket, timeout=10)
    io_config.set(io_concurrency=16)
    started = time.monotonic()
    store.set_many([(f"u/{i}", bytes([i]) * 100) for i in range(16)])
    elapsed = time.monotonic() - started
    direct = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    assert [direct.get(f"u/{i}") for i in range(16)] == [bytes([i]) * 100 for i in range(16)]
    assert elapsed < 2.4, elapsed  # one after another: 16 x 0.3 s = 4.8 s


def test_s3_stale_lock_object_is_taken_over(s3_bucket):
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    # Left by a holder that died long ago.
    store.set("a/.zarrcore-lock.k", json.dumps({"host": "gone", "pid": 1, "time": 0}).encode())
    started = time.monotonic()
    with store.lock("a/k", "a"):
        assert json.loads(store.get("a/.zarrcore-lock.k"))["time"] > 0
    assert time.monotonic() - started < 10
    assert store.get("a/.zarrcore-lock.k") is None and store.list_prefix("a") == []


def test_s3_lock_held_past_its_lease_is_renewed_not_taken(s3_bucket, monkeypatch):
    from zarrcore.storage import _object_locks

    monkeypatch.setattr(_object_locks, "LOCK_LEASE", 0.8)
    server, bucket = s3_bucket
    options = server.storage_options()
    holder = make_store(f"s3://{bucket}", storage_options=options)
    # The waiter is another process: this one's threads queue on a lock of their own.
    waiter = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
from zarrcore.storage import _object_locks, make_store
_object_locks.LOCK_LEASE = 0.8
store = make_store("s3://{bucket}", storage_options={options!r})
sys.stdin.readline()
with store.lock("a/k", "a"):
    print(time.time(), flush=True)
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))})
    with holder.lock("a/k", "a"):
        waiter.stdin.write("go\n")
        waiter.stdin.flush()
        time.sleep(2.5)  # three leases: renewed meanwhile, so never presumed dead
        released = time.time()
    taken, _ = waiter.communicate(timeout=60)
    assert waiter.returncode == 0
    assert float(taken) >= released


def test_s3_lock_taken_over_while_held_fails_loudly(s3_bucket, monkeypatch):
    from zarrcore.storage import _object_locks

    monkeypatch.setattr(_object_locks, "LOCK_LEASE", 0.4)
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    with pytest.raises(zarrcore.errors.LockLostError, match="a/.zarrcore-lock.k"):
        with store.lock("a/k", "a"):
            # Another host, presuming this holder dead, takes the lock object over.
            store.set("a/.zarrcore-lock.k", json.dumps({"host": "other", "pid": 1,
                                                        "time": time.time()}).encode())
            time.sleep(0.5)


def test_tools_and_cli_take_urls_with_storage_options(s3_bucket, tmp_path):
    from zarrcore.cli import main

    server, bucket = s3_bucket
    options = server.storage_options()
    local = tmp_path / "src.zarr"
    a = zarrcore.create_array(str(local), shape=(12, 10), dtype="int32", chunks=(4, 5))
    a[...] = _values((12, 10))
    zarrcore.copy(str(local), f"s3://{bucket}/copied.zarr", dest_storage_options=options)
    assert zarrcore.verify(f"s3://{bucket}/copied.zarr", storage_options=options).ok
    assert main(["convert", f"s3://{bucket}/copied.zarr", f"s3://{bucket}/sharded.zarr", "-q",
                 "--shards", "12,10", "--chunks", "4,5", "--storage-options", json.dumps(options)]) == 0
    converted = zarrcore.open_array(f"s3://{bucket}/sharded.zarr", mode="r", storage_options=options)
    assert converted.shards == (12, 10)
    np.testing.assert_array_equal(converted[...], _values((12, 10)))
    assert main(["verify", f"s3://{bucket}/sharded.zarr", "-q", "--storage-options",
                 json.dumps(options)]) == 0


def test_s3_reader_reads_one_version(s3_bucket):
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    store.set("shard", b"A" * 100)
    with store.reader("shard") as reader:
        assert reader.get_ranges([(-10, None), (0, 5)]) == [b"A" * 10, b"A" * 5]
        assert reader.size == 100
        assert reader.get_ranges([(90, -5)]) == [b"A" * 5]
        store.set("shard", b"B" * 100)  # a writer replaces it between two reads
        with pytest.raises(zarrcore.errors.KeyChangedError, match="'shard'.*replaced"):
            reader.get_ranges([(0, 5)])
    with store.reader("missing") as reader:
        assert reader.get_ranges([(0, 4)]) is None


def _write_row(url, options, row, errors):
    try:
        a = zarrcore.open_array(url, mode="r+", storage_options=options)
        for start in range(0, 40, 8):  # five partial writes of the one shard
            a[row, start:start + 8] = np.arange(start, start + 8) + 100 * row
    except Exception as e:
        errors.put(f"{type(e).__name__}: {e}")


def test_processes_that_end_right_after_a_request_exit_cleanly(s3_bucket):
    """A process that ends as soon as it has a request's result (made on a daemon I/O thread
    from the main thread, beside obstore's runtime threads) exits cleanly, never aborted at
    finalization."""
    server, bucket = s3_bucket
    options = server.storage_options()
    code = f"""
import sys
from zarrcore.storage import make_store
store = make_store("s3://{bucket}", storage_options={options!r})
store.set("k/" + sys.argv[1], b"x" * 1000)
store.get("k/" + sys.argv[1])
"""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    codes = []
    for wave in range(4):
        children = [subprocess.Popen([sys.executable, "-c", code, f"{wave}-{i}"], env=env,
                                     stderr=subprocess.PIPE) for i in range(4)]
        codes += [(child.wait(60), child.stderr.read().decode()[-300:]) for child in children]
    assert [c for c, _ in codes] == [0] * 16, codes


def test_one_request_slot_serves_the_main_thread_and_a_fan_out_together(s3_bucket):
    """With one slot for the whole process (so one I/O thread), the main thread's requests
    (each handed to the I/O thread) and another thread's get_many (whose requests run there)
    all finish: a request takes its slot where it runs, so a caller waiting for the I/O
    thread holds none that the thread's request would wait for."""
    server, bucket = s3_bucket
    options = server.storage_options()
    code = f"""
import threading
from zarrcore.storage import make_store
store = make_store("s3://{bucket}/slots", storage_options={options!r})
for i in range(8):
    store.set(f"k/{{i}}", b"x" * 100)
requests = [(f"k/{{i}}", None) for i in range(8)]
many = threading.Thread(target=lambda: [list(store.get_many(requests)) for _ in range(30)])
many.start()
for _ in range(60):
    assert store.get("k/0") == b"x" * 100
many.join()
print("done")
"""
    env = {**os.environ, "ZARRCORE_IO_PROCESS_CONCURRENCY": "1",
           "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.strip() == "done", done.stderr[-2000:]


def test_s3_processes_partially_writing_one_shard_lose_nothing(s3_bucket):
    """Four processes read-modify-write the same shard under the store's lock objects."""
    import multiprocessing

    server, bucket = s3_bucket
    url, options = f"s3://{bucket}/rmw.zarr", server.storage_options()
    zarrcore.create_array(url, shape=(4, 40), dtype="i4", chunks=(1, 10), shards=(4, 40),
                          fill_value=-1, storage_options=options)
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    processes = [context.Process(target=_write_row, args=(url, options, row, errors))
                 for row in range(4)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(120)
    assert [p.exitcode for p in processes] == [0] * 4
    assert errors.empty(), errors.get()
    expected = np.arange(40)[None, :] + 100 * np.arange(4)[:, None]
    np.testing.assert_array_equal(zarrcore.open_array(url, mode="r", storage_options=options)[...],
                                  expected)


@pytest.fixture
def refusing_metadata_service():
    """The URL of a local stand-in for the cloud's instance metadata service that answers 403
    to everything, as 169.254.169.254 does on a machine without a role."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refuse(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _refuse(self):
            self.send_response(403)
            self.send_header("Content-Length", "9")
            self.end_headers()
            self.wfile.write(b"Forbidden")

        do_GET = do_PUT = do_HEAD = _refuse

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _without_aws_credentials(monkeypatch):
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # botocore: no 169.254.169.254
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


def _says_how_to_pass_credentials(error):
    assert isinstance(error, PermissionError) and isinstance(error, StoreError)
    text = str(error)
    assert "no credentials found" in text and "'zarr.json'" in text
    assert '"key"' in text and '"secret"' in text and '"anon": true' in text
    assert "AWS_ACCESS_KEY_ID" in text


def test_missing_s3_credentials_say_how_to_pass_them(monkeypatch, refusing_metadata_service):
    _without_aws_credentials(monkeypatch)
    with pytest.raises(CredentialsError) as info:
        zarrcore.open_array("s3://bucket/a.zarr", mode="r", storage_options={
            "endpoint_url": "http://127.0.0.1:9", "region": "us-east-1", "retries": 0,
            "metadata_endpoint": refusing_metadata_service})
    _says_how_to_pass_credentials(info.value)
    assert "403" in str(info.value)


def test_missing_s3_credentials_through_fsspec_say_how_to_pass_them(monkeypatch):
    s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed")
    _without_aws_credentials(monkeypatch)
    fs = s3fs.S3FileSystem(endpoint_url="http://127.0.0.1:9", skip_instance_cache=True,
                           client_kwargs={"region_name": "us-east-1"})
    with pytest.raises(CredentialsError) as info:
        zarrcore.open_array(FsspecStore(fs, "bucket/a.zarr"), mode="r")
    _says_how_to_pass_credentials(info.value)


def test_http_sharded_reads_keep_each_shard_index_at_its_etag(http_server):
    """A shard's index read over HTTP is kept with its ETag: later reads of the shard fetch
    inner chunks only, asking for that ETag, and a shard replaced meanwhile is read anew."""
    local = zarrcore.LocalStore(http_server.root)
    data = np.arange(64 * 64, dtype="int32").reshape(64, 64)
    zarrcore.create_array(local, name="k", shape=(64, 64), dtype="int32", chunks=(8, 8),
                          shards=(32, 32))[...] = data
    a = zarrcore.open_array(f"{http_server.url}/k", mode="r")
    np.testing.assert_array_equal(a[0], data[0])  # (2 shards: indexes, then their rows)
    http_server.reset()
    for row in range(1, 8):
        np.testing.assert_array_equal(a[row], data[row])
    assert http_server.requests == 7 * 2  # (one range a shard, no index)
    time.sleep(0.01)  # (another ETag, of the modification time)
    zarrcore.open_array(local, name="k", mode="r+")[0:32, 0:32] = -data[0:32, 0:32]
    np.testing.assert_array_equal(a[1, :32], -data[1, :32])


def _served(server, name, chunk):
    """An uncompressed (4, 65536) float32 array at `name` below the HTTP server's root, in
    chunks (1, `chunk`): its values."""
    data = np.arange(4 * 65536, dtype="f4").reshape(4, 65536)
    zarrcore.create_array(zarrcore.LocalStore(server.root), name=name, data=data,
                          chunks=(1, chunk), compressors=None)
    return data


# Options that leave every request of an http:// store to obstore (the plain client takes no
# client options).
_BY_OBSTORE = {"client_options": {"allow_http": True}}


def test_large_bodies_are_collected_by_the_clients_runtime(http_server, monkeypatch):
    """Over a link that is not fast, a body of COLLECTED_BY_RUNTIME bytes or more is
    awaited on the I/O loop (obstore's asynchronous call), a smaller one read in the thread
    that asked; both read what was written."""
    from zarrcore.storage import _object_bodies

    monkeypatch.setattr(_object_bodies, "FAST_ROUND_TRIP", 0.0)  # (no link is fast)
    collected = []
    collect = _object_bodies._collect

    async def counting(result):
        collected.append(result.range)
        return await collect(result)

    monkeypatch.setattr(_object_bodies, "_collect", counting)
    big = 65536 * 4  # (bytes of a chunk: one row)
    assert big >= _object_bodies.COLLECTED_BY_RUNTIME
    data = _served(http_server, "big", 65536)
    got = zarrcore.open_array(f"{http_server.url}/big", mode="r",
                              storage_options=_BY_OBSTORE)[...]
    np.testing.assert_array_equal(got, data)
    assert sorted(collected) == [(0, big)] * 4
    collected.clear()
    data = _served(http_server, "small", 1024)
    got = zarrcore.open_array(f"{http_server.url}/small", mode="r",
                              storage_options=_BY_OBSTORE)[...]
    np.testing.assert_array_equal(got, data)
    assert collected == []


def test_large_bodies_over_a_fast_link_are_read_in_the_thread_that_asked(http_server, monkeypatch):
    """Over a link whose round trip is under FAST_ROUND_TRIP, large bodies and large sets
    of ranges are read in the thread that asked, and read what was written."""
    from zarrcore.runtime.link import Link
    from zarrcore.storage import _object_bodies

    awaited = []
    monkeypatch.setattr(_object_bodies, "_collect", lambda result: awaited.append(result))
    monkeypatch.setattr(_object_bodies, "_ranges", lambda *args: awaited.append(args))
    big = 65536 * 4
    assert big >= _object_bodies.COLLECTED_BY_RUNTIME
    data = _served(http_server, "fast", 65536)
    store = make_store(f"{http_server.url}/fast", storage_options=_BY_OBSTORE)
    store.link = Link()
    store.link.observe_answer(_object_bodies.FAST_ROUND_TRIP / 2)
    assert store.get("c/1/0") == data[1].tobytes()
    assert store.get_ranges("c/2/0", [(0, 150_000), (150_000, big)]) == [
        data[2].tobytes()[:150_000], data[2].tobytes()[150_000:]]
    assert awaited == []


def test_large_bodies_go_to_the_runtime_unless_the_link_is_timed_fast():
    """A link not yet timed is taken to be slow, as is one whose least round trip is
    FAST_ROUND_TRIP or more; small bodies stay in the asking thread over any link."""
    from zarrcore.runtime.link import Link
    from zarrcore.storage._object_bodies import COLLECTED_BY_RUNTIME, FAST_ROUND_TRIP, _by_runtime

    class Result:
        def bytes_async(self):
            raise AssertionError("not called")

    def by_runtime(nbytes, *round_trips):
        link = Link()
        for seconds in round_trips:
            link.observe_answer(seconds)
        return _by_runtime(nbytes, Result(), "bytes_async", link)

    big = COLLECTED_BY_RUNTIME
    assert _by_runtime(big, Result(), "bytes_async", None)
    assert by_runtime(big)
    assert by_runtime(big, 2 * FAST_ROUND_TRIP)
    assert not by_runtime(big, 2 * FAST_ROUND_TRIP, FAST_ROUND_TRIP / 2)
    assert not by_runtime(big - 1)


def test_a_link_learns_its_round_trip_from_the_answers_of_large_requests():
    """Every answer times a round trip, however large its body: the least of them."""
    from zarrcore.runtime.link import ASSUMED_ROUND_TRIP, Link

    link = Link()
    assert link.round_trip == ASSUMED_ROUND_TRIP
    link.observe_answer(0.03)  # (a first request, which opened its connection)
    link.observe_answer(0.0015)
    link.observe(0.25, 8 << 20)  # (the transfer of a large body: not a round trip)
    assert link.round_trip == 0.0015


@pytest.mark.parametrize("client", ["plain", "fast-link", "slow-link"])
def test_a_large_body_cut_short_fails_naming_its_key(http_server, io_config, monkeypatch,
                                                      client):
    """A server that announces a large body and closes halfway: the read fails with a
    StoreError naming the chunk, as a small body's would, whether the plain client or
    obstore read it, in the asking thread (a fast link) or on the I/O loop."""
    from zarrcore.storage import _object_bodies

    monkeypatch.setattr(_object_bodies, "FAST_ROUND_TRIP", 60.0 if client == "fast-link" else 0.0)
    io_config.set(io_retries=0)
    name = f"cut-{client}"
    _served(http_server, name, 65536)
    a = zarrcore.open_array(f"{http_server.url}/{name}", mode="r",
                            storage_options=None if client == "plain" else _BY_OBSTORE)
    http_server.faults.match, http_server.faults.truncate = f"{name}/c/2/0", True
    with pytest.raises(StoreError, match=f"key .c/2/0. of .*{name}"):
        a[...]


def test_a_large_body_the_loop_never_answers_fails_naming_its_key(http_server, monkeypatch):
    """The I/O loop gives no answer within the deadline (a loop that stopped): the read fails
    with a StoreError naming the chunk, not only the coroutine it waited for."""
    from zarrcore.runtime import _aio
    from zarrcore.storage import _object_bodies

    monkeypatch.setattr(_object_bodies, "FAST_ROUND_TRIP", 0.0)  # (no link is fast)

    _served(http_server, "silent", 65536)
    a = zarrcore.open_array(f"{http_server.url}/silent", mode="r",
                            storage_options=_BY_OBSTORE)

    def no_answer(coro, loop=None, deadline=None):
        coro.close()
        raise StoreError(110, "no answer for 6 s from _collect")

    monkeypatch.setattr(_aio, "run", no_answer)
    with pytest.raises(StoreError, match=r"'silent/c/\d/0': no answer for 6 s") as e:
        a[...]
    assert e.value.errno == 110


def test_large_sets_of_ranges_are_collected_by_the_clients_runtime(http_server, monkeypatch):
    """Over a link that is not fast, get_ranges of one object whose ranges add up to
    COLLECTED_BY_RUNTIME bytes or more runs as obstore's asynchronous call on the I/O loop,
    fewer bytes synchronously; both read what was written, and a range past the end reads
    empty either way."""
    from zarrcore.storage import _object_bodies

    monkeypatch.setattr(_object_bodies, "FAST_ROUND_TRIP", 0.0)  # (no link is fast)
    awaited = []
    ranges = _object_bodies._ranges

    async def counting(obs, store, path, starts, ends):
        awaited.append(path)
        return await ranges(obs, store, path, starts, ends)

    monkeypatch.setattr(_object_bodies, "_ranges", counting)
    _served(http_server, "parts", 65536)
    blob = np.arange(65536, 2 * 65536, dtype="f4").tobytes()  # (row 1: chunk c/1/0)
    store = make_store(f"{http_server.url}/parts", storage_options=_BY_OBSTORE)
    assert store.get_ranges("c/1/0", [(0, 100_000), (150_000, 262_144)]) == [
        blob[:100_000], blob[150_000:]]
    assert awaited == ["parts/c/1/0"]
    assert store.get_ranges("c/1/0", [(0, 1000), (5000, 7000)]) == [blob[:1000],
                                                                    blob[5000:7000]]
    assert awaited == ["parts/c/1/0"]
    assert store.get_ranges("c/1/0", [(0, 200_000), (300_000, 400_000)]) == [
        blob[:200_000], b""]
