"""Whole shards written to S3 (moto, through obstore) in parts sent as their inner chunks are
encoded (storage.base.Pieces): which shards go so, the values read back by zarrcore and
zarr-python, and faults of a part, of the completion and of the encoding, after which each
shard is old or new and no upload is left behind."""
import numpy as np
import pytest

import zarrcore
from zarrcore.codecs.sharding import ShardingCodec
from zarrcore.errors import ChunkEncodeError, StoreError
from zarrcore.storage import make_store

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
zarr = pytest.importorskip("zarr", reason="zarr-python is not installed")

# One shard of 8 inner chunks, float64, uncompressed: 25 MiB and its index, so 5 parts of
# S3's least (5 MiB) and a last one of the index; streamed with write waves of 8 MiB.
SHAPE = (1600, 2048)
INNER = (200, 2048)
PARTS = 6


@pytest.fixture(autouse=True)
def waves_of_8_mib(monkeypatch):
    from zarrcore.engine import write_waves

    monkeypatch.setattr(write_waves, "WRITE_WAVE_BYTES", 8 << 20)


def _store(server, bucket, endpoint):
    return make_store(f"s3://{bucket}", storage_options={
        **server.storage_options(endpoint), "timeout": 30, "retries": 1})


def _values(seed):
    return np.random.default_rng(seed).random(SHAPE)


def _create(store, value, compressors=None):
    a = zarrcore.create_array(store, name="a", shape=SHAPE, dtype="float64", chunks=INNER,
                              shards=SHAPE, compressors=compressors, fill_value=0)
    a[...] = value
    return a


def _shard_requests(fault_proxy):
    return [(method, path.split("?")[1] if "?" in path else "")
            for method, path in fault_proxy.requests if "/a/c/0/0" in path]


def test_a_large_shard_goes_in_parts_as_its_inner_chunks_are_encoded(s3_bucket, fault_proxy):
    server, bucket = s3_bucket
    store = _store(server, bucket, fault_proxy.endpoint)
    assert store.writes_pieces
    value = _values(0)
    _create(store, value)
    requests = _shard_requests(fault_proxy)
    assert requests[0] == ("POST", "uploads=")
    assert sorted(int(p.split("&")[0].split("=")[1]) for m, p in requests if m == "PUT") == list(
        range(1, PARTS + 1))
    assert requests[-1][0] == "POST" and requests[-1][1].startswith("uploadId=")
    head = server.client().head_object(Bucket=bucket, Key="a/c/0/0")
    assert head["ETag"].endswith(f'-{PARTS}"')
    assert head["ContentLength"] == 8 * SHAPE[1] * SHAPE[0] + 16 * 8 + 4
    server.assert_reads(bucket, "a", value)
    assert not server.open_uploads(bucket)


def test_a_shard_within_one_part_is_one_put_and_one_of_fill_is_deleted(s3_bucket,
                                                                       fault_proxy):
    server, bucket = s3_bucket
    store = _store(server, bucket, fault_proxy.endpoint)
    value = np.broadcast_to(np.arange(SHAPE[1], dtype="float64") % 7, SHAPE)
    a = _create(store, value, compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    assert [m for m, _ in _shard_requests(fault_proxy)] == ["PUT"]
    server.assert_reads(bucket, "a", value)
    a[...] = 0
    assert "a/c/0/0" not in store.list_prefix("a/")
    np.testing.assert_array_equal(a[...], 0)


@pytest.mark.parametrize("fault", ["a part fails", "the completion fails"])
def test_a_fault_mid_upload_leaves_the_old_shard_and_no_upload(s3_bucket, fault_proxy, fault):
    server, bucket = s3_bucket
    old = _values(1)
    _create(_store(server, bucket, server.endpoint), old)
    a = zarrcore.open_array(_store(server, bucket, fault_proxy.endpoint), path="a", mode="r+")
    faults = fault_proxy.faults
    if fault == "a part fails":
        faults.match, faults.method, faults.status = "partNumber=2&", "PUT", 500
    else:
        faults.match, faults.method, faults.status = "?uploadId=", "POST", 500
    with pytest.raises(StoreError, match="a/c/0/0"):
        a[...] = _values(2)
    faults.reset()
    server.assert_reads(bucket, "a", old)
    assert not server.open_uploads(bucket)


def test_an_encoding_failure_mid_shard_leaves_the_old_shard_and_no_upload(
        s3_bucket, fault_proxy, monkeypatch):
    server, bucket = s3_bucket
    old = _values(3)
    _create(_store(server, bucket, server.endpoint), old)
    a = zarrcore.open_array(_store(server, bucket, fault_proxy.endpoint), path="a", mode="r+")
    update = ShardingCodec._update
    waves = []

    def failing(self, blobs, selection, value):
        waves.append(selection)
        if len(waves) == 4:  # (past the first part, whose upload started)
            raise ChunkEncodeError("injected")
        update(self, blobs, selection, value)

    monkeypatch.setattr(ShardingCodec, "_update", failing)
    # (one thread: waves of one inner chunk, 3.1 MiB each)
    with zarrcore.config.set(num_threads=1), pytest.raises(
            ChunkEncodeError, match="a/c/0/0.*injected"):
        a[...] = _values(4)
    # (Started, then aborted, never completed; beside the HEAD that learns the version of
    # the shard stored before, sent as the write starts, unless it is still on its way.)
    requests = _shard_requests(fault_proxy)
    methods = [method for method, _ in requests]
    assert methods.count("HEAD") <= 1
    upload = [request for request in requests if request[0] != "HEAD"]
    # (a part sent before the abort may arrive after it)
    assert upload[0] == ("POST", "uploads=") and "DELETE" in methods
    assert methods.count("POST") == 1
    monkeypatch.setattr(ShardingCodec, "_update", update)
    server.assert_reads(bucket, "a", old)
    assert not server.open_uploads(bucket)


def test_a_shard_of_less_than_two_write_waves_is_one_put(s3_bucket, fault_proxy, monkeypatch):
    from zarrcore.engine import write_waves

    monkeypatch.setattr(write_waves, "WRITE_WAVE_BYTES", 16 << 20)  # (the shard: 25 MiB)
    server, bucket = s3_bucket
    value = _values(5)
    _create(_store(server, bucket, fault_proxy.endpoint), value)
    assert [m for m, _ in _shard_requests(fault_proxy)] == ["PUT"]
    server.assert_reads(bucket, "a", value)
