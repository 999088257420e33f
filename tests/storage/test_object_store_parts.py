"""Objects written in parts (S3 multipart uploads) through obstore and s3fs, on the local moto
server: which objects go in parts, the values read back by zarrcore and zarr-python, and
faults, timeouts and kills mid-upload, after which each object is old or new and no upload
is left behind but a killed writer's."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import StoreError
from zarrcore.storage import FsspecStore, make_store

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
zarr = pytest.importorskip("zarr", reason="zarr-python is not installed")

# The least parts the engine asks for (twice S3's least part): a chunk of 2.5 of them goes
# in 3 parts.
PART = 10 << 20
SHAPE = (1600, 2048)  # float64, one chunk: 25 MiB, uncompressed


def _values(seed):
    return np.random.default_rng(seed).random(SHAPE)


def _store(kind, server, bucket, endpoint, timeout=30, **extra):
    """The bucket's store through `endpoint` (a proxy in front of the moto server), whose
    requests give up after `timeout` seconds."""
    if kind == "obstore":
        return make_store(f"s3://{bucket}", storage_options={
            **server.storage_options(endpoint), "timeout": timeout, "retries": 1, **extra})
    import s3fs

    fs = s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=endpoint,
                           client_kwargs={"region_name": "us-east-1"},
                           config_kwargs={"read_timeout": timeout, "connect_timeout": timeout,
                                          "retries": {"max_attempts": 1}},
                           use_listings_cache=False, skip_instance_cache=True)
    return FsspecStore(fs, bucket)


def _create(store, value):
    a = zarrcore.create_array(store, name="a", shape=SHAPE, dtype="float64", chunks=SHAPE,
                              compressors=None, fill_value=0)
    a[...] = value
    return a


@pytest.fixture
def parts():
    with zarrcore.config.set(write_part_bytes=PART):
        yield


def _etag(server, bucket, key):
    return server.client().head_object(Bucket=bucket, Key=key)["ETag"]


def test_large_objects_go_in_parts_sent_at_once(s3_bucket, fault_proxy, parts):
    server, bucket = s3_bucket
    store = _store("obstore", server, bucket, fault_proxy.endpoint)
    assert store.least_part_bytes == 5 << 20 and store.streams_writes
    value = _values(0)
    _create(store, value)
    requests = [(method, path.split("?")[1]) for method, path in fault_proxy.requests
                if "/a/c/0/0?" in path]
    assert requests[0] == ("POST", "uploads=")
    assert sorted(p.split("&")[0] for m, p in requests if m == "PUT") == [
        "partNumber=1", "partNumber=2", "partNumber=3"]
    assert requests[-1][0] == "POST" and requests[-1][1].startswith("uploadId=")
    assert _etag(server, bucket, "a/c/0/0").endswith('-3"')  # (S3's ETag of 3 parts)
    # The metadata, far smaller, is one PUT.
    assert ("PUT", f"/{bucket}/a/zarr.json") in fault_proxy.requests
    server.assert_reads(bucket, "a", value)
    assert not server.open_uploads(bucket)


def test_s3fs_writes_large_objects_in_parts(s3_bucket, parts):
    server, bucket = s3_bucket
    store = _store("s3fs", server, bucket, server.endpoint)
    assert store.least_part_bytes == 5 << 20 and store.streams_writes
    value = _values(0)
    _create(store, value)
    # (s3fs's cut of equal parts leaves a last one of a few bytes)
    assert _etag(server, bucket, "a/c/0/0")[-3:] in ('-3"', '-4"')
    server.assert_reads(bucket, "a", value)
    assert not server.open_uploads(bucket)


def test_the_parts_asked_for_hold_two_of_the_stores_least_at_least():
    from zarrcore.engine.write_waves import write_part_bytes

    class Parts(zarrcore.MemoryStore):
        least_part_bytes = 5 << 20

    assert write_part_bytes(Parts()) == 64 << 20  # (the default)
    assert write_part_bytes(zarrcore.MemoryStore()) is None
    for asked, given in ((1, 10 << 20), (12 << 20, 12 << 20), (0, None)):
        with zarrcore.config.set(write_part_bytes=asked):
            assert write_part_bytes(Parts()) == given
    with pytest.raises(ValueError, match="write_part_bytes"):
        zarrcore.config.set(write_part_bytes=-1)


def test_objects_of_at_most_one_part_and_parts_turned_off_go_whole(s3_bucket, fault_proxy):
    server, bucket = s3_bucket
    store = _store("obstore", server, bucket, fault_proxy.endpoint)
    value = _values(1)
    with zarrcore.config.set(write_part_bytes=26 << 20):  # (more than the 25 MiB chunk)
        _create(store, value)
    with zarrcore.config.set(write_part_bytes=0):
        zarrcore.open_array(store, path="a", mode="r+")[...] = value + 1
    assert not any("uploads" in path for _, path in fault_proxy.requests)
    np.testing.assert_array_equal(zarrcore.open_array(store, path="a", mode="r")[...], value + 1)


@pytest.mark.parametrize("fault", ["a part fails", "the completion fails",
                                   "the start fails", "a part times out"])
def test_a_fault_mid_upload_leaves_the_old_object_and_no_upload(s3_bucket, fault_proxy, parts,
                                                                fault):
    server, bucket = s3_bucket
    old = _values(2)
    _create(_store("obstore", server, bucket, server.endpoint), old)
    store = _store("obstore", server, bucket, fault_proxy.endpoint,
                   timeout=5 if fault == "a part times out" else 30)
    a = zarrcore.open_array(store, path="a", mode="r+")
    faults = fault_proxy.faults
    if fault == "a part fails":
        faults.match, faults.method, faults.status = "partNumber=2&", "PUT", 500
    elif fault == "the completion fails":
        faults.match, faults.method, faults.status = "?uploadId=", "POST", 500
    elif fault == "the start fails":
        faults.match, faults.method, faults.status = "?uploads", "POST", 500
    else:
        faults.match, faults.method, faults.delay = "partNumber=2&", "PUT", 12
    started = time.monotonic()
    with pytest.raises(StoreError, match="a/c/0/0"):
        a[...] = _values(3)
    assert time.monotonic() - started < 25
    faults.reset()
    np.testing.assert_array_equal(zarrcore.open_array(store, path="a", mode="r")[...], old)
    if fault == "a part times out":  # (the part the proxy holds lands once it forwards it)
        fault_proxy.wait_idle(40)
    assert not server.open_uploads(bucket)


@pytest.mark.parametrize("fault", ["upload_part", "complete_multipart_upload"])
def test_s3fs_fault_mid_upload_leaves_the_old_object_and_no_upload(s3_bucket, parts, fault):
    """(s3fs's requests fail in the client here: the proxy does not frame its bodies.)"""
    server, bucket = s3_bucket
    old = _values(2)
    store = _store("s3fs", server, bucket, server.endpoint)
    _create(store, old)
    fs = store.fs
    call = fs._call_s3

    async def failing(method, *args, **kwargs):
        if method == fault and kwargs.get("PartNumber", 2) == 2:
            raise OSError(f"injected: {method} failed")
        return await call(method, *args, **kwargs)

    fs._call_s3 = failing
    with pytest.raises(StoreError, match="a/c/0/0.*injected"):
        zarrcore.open_array(store, path="a", mode="r+")[...] = _values(3)
    fs._call_s3 = call
    np.testing.assert_array_equal(zarrcore.open_array(store, path="a", mode="r")[...], old)
    assert not server.open_uploads(bucket)


def test_a_completion_whose_answer_is_lost_leaves_the_new_object(s3_bucket, fault_proxy,
                                                                 parts):
    server, bucket = s3_bucket
    _create(_store("obstore", server, bucket, server.endpoint), _values(4))
    store = _store("obstore", server, bucket, fault_proxy.endpoint)
    faults = fault_proxy.faults
    faults.match, faults.method, faults.count = "?uploadId=", "POST", 1
    faults.drop, faults.after_apply = True, True  # completed, but the answer is lost
    new = _values(5)
    try:
        zarrcore.open_array(store, path="a", mode="r+")[...] = new
    except StoreError:
        pass  # (the retried completion finds no upload: which failed is not known here)
    assert faults.count == 0
    np.testing.assert_array_equal(zarrcore.open_array(store, path="a", mode="r")[...], new)
    assert not server.open_uploads(bucket)


_KILLED_WRITER = """
import sys
import numpy as np
import zarrcore
from zarrcore.storage import make_store

zarrcore.config.set(write_part_bytes={part})
store = make_store(sys.argv[1], storage_options={{"endpoint": sys.argv[2],
    "access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1"}})
a = zarrcore.open_array(store, path="a", mode="r+")
print("writing", flush=True)
a[...] = np.random.default_rng(7).random(a.shape)
"""


@pytest.mark.posix("SIGKILL")
def test_a_writer_killed_mid_upload_leaves_the_old_object(s3_bucket, fault_proxy):
    """Killed while its parts are in flight: the object is the old one. (Its upload stays
    until a lifecycle rule of the bucket removes it: nobody is left to abort it.)"""
    server, bucket = s3_bucket
    old = _values(6)
    with zarrcore.config.set(write_part_bytes=PART):
        _create(_store("obstore", server, bucket, server.endpoint), old)
    faults = fault_proxy.faults
    faults.match, faults.method, faults.delay = "partNumber=", "PUT", 3
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER.format(part=PART), f"s3://{bucket}",
         fault_proxy.endpoint], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    assert child.stdout.readline() == "writing\n"
    deadline = time.monotonic() + 30
    while not any("partNumber=" in path for _, path in fault_proxy.requests):
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    fault_proxy.wait_idle(30)
    faults.reset()
    store = _store("obstore", server, bucket, server.endpoint)
    np.testing.assert_array_equal(zarrcore.open_array(store, path="a", mode="r")[...], old)
    assert len(server.open_uploads(bucket)) == 1
