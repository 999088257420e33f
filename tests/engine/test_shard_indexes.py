"""Sharded arrays on object stores keep the indexes of the shards they read (ShardIndexes): a
sample then costs one range GET, If-Match the ETag its index came from, and a shard that
another writer replaced meanwhile is read through its new index, never the stale one.
Requests are counted by a proxy in front of the loopback S3; every read is compared with
numpy."""
import os

import numpy as np
import pytest

import zarrcore
from zarrcore import engine

from _links import link_of

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")

SHAPE, CHUNKS, SHARDS = (64, 24), (1, 24), (16, 24)


def _written(server, bucket, data, name="a.zarr"):
    a = zarrcore.create_array(f"s3://{bucket}/{name}", shape=data.shape, dtype=data.dtype,
                              chunks=CHUNKS, shards=SHARDS,
                              storage_options=server.storage_options())
    a[...] = data
    return a


def _through(server, bucket, proxy, name="a.zarr"):
    return zarrcore.open_array(f"s3://{bucket}/{name}", mode="r",
                               storage_options=server.storage_options(proxy.endpoint))


def _requests(proxy, read):
    before = proxy.requests
    read()
    return proxy.requests - before


def test_a_sample_costs_one_get_once_its_shard_index_is_known(counted):
    server, bucket, proxy = counted
    data = np.random.default_rng(0).standard_normal(SHAPE).astype("float32")
    _written(server, bucket, data)
    a = _through(server, bucket, proxy)
    for shard in range(SHAPE[0] // SHARDS[0]):
        first = shard * SHARDS[0]
        # Unknown index: its GET, then the sample's range.
        assert _requests(proxy, lambda: np.testing.assert_array_equal(a[first], data[first])) == 2
        for t in np.random.default_rng(shard).permutation(range(first + 1, first + 16))[:6]:
            count = _requests(proxy, lambda: np.testing.assert_array_equal(a[int(t)], data[t]))
            assert count == 1, (t, count)
    # Points and orthogonal selections of known shards, too.
    rows = [3, 20, 37, 60]
    assert _requests(proxy, lambda: np.testing.assert_array_equal(a[rows], data[rows])) == 4
    assert _requests(proxy, lambda: np.testing.assert_array_equal(
        a.vindex[rows, [1, 2, 3, 4]], data[rows, [1, 2, 3, 4]])) == 4


def test_a_batch_of_known_shards_coalesces_neighbours(counted):
    server, bucket, proxy = counted
    data = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    _written(server, bucket, data)
    a = _through(server, bucket, proxy)
    np.testing.assert_array_equal(a[[0, 16, 32, 48]], data[[0, 16, 32, 48]])  # indexes
    batch = [1, 2, 3, 17, 18, 40, 41, 42, 43, 50]  # four runs of neighbours
    assert _requests(proxy, lambda: np.testing.assert_array_equal(a[batch], data[batch])) == 4


@pytest.mark.parametrize("change", ["rewritten", "emptied", "deleted"])
def test_a_shard_replaced_by_another_writer_is_read_through_its_new_index(counted, change):
    """The reader knows the shard's index; another writer (another client) replaces the
    shard with one whose inner chunks lie elsewhere (other sizes), or all fill, or deletes
    it: the reader's next sample is the new data (its range GET If-Match the old ETag is
    refused, and the index is read anew)."""
    server, bucket, proxy = counted
    rng = np.random.default_rng(1)
    data = rng.standard_normal(SHAPE).astype("float32")
    _written(server, bucket, data)
    a = _through(server, bucket, proxy)
    np.testing.assert_array_equal(a[5], data[5])
    assert _requests(proxy, lambda: np.testing.assert_array_equal(a[6], data[6])) == 1

    writer = zarrcore.open_array(f"s3://{bucket}/a.zarr", mode="r+",
                                 storage_options=server.storage_options())
    if change == "rewritten":  # compressible rows first: every offset moves
        data[0:16] = np.repeat(np.arange(16, dtype="float32")[:, None], SHAPE[1], axis=1)
        data[9] = rng.standard_normal(SHAPE[1]).astype("float32")
        writer[0:16] = data[0:16]
    elif change == "emptied":
        data[0:16] = 0
        writer[0:16] = 0
    else:
        writer.store.delete("c/0/0")
        data[0:16] = 0
    for t in (6, 9, 5, 15):
        np.testing.assert_array_equal(a[t], data[t])
    if change == "rewritten":  # the new index is known again
        assert _requests(proxy, lambda: np.testing.assert_array_equal(a[2], data[2])) == 1


def test_a_later_opening_of_the_array_knows_the_indexes_an_earlier_one_read(counted):
    server, bucket, proxy = counted
    data = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    _written(server, bucket, data)
    first = _through(server, bucket, proxy)
    assert _requests(proxy, lambda: np.testing.assert_array_equal(first[0], data[0])) == 2
    del first
    again = _through(server, bucket, proxy)
    assert _requests(proxy, lambda: np.testing.assert_array_equal(again[1], data[1])) == 1
    assert _requests(proxy, lambda: np.testing.assert_array_equal(again[17], data[17])) == 2


def test_the_indexes_an_array_keeps_are_bounded(counted, monkeypatch):
    server, bucket, proxy = counted
    data = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    # Room for two shards' indexes (16 entries of 16 bytes each), in every opening's.
    monkeypatch.setattr(engine, "SHARD_INDEX_BYTES", 2 * 16 * 16)
    _written(server, bucket, data)
    a = _through(server, bucket, proxy)
    for t in (0, 16, 32):
        np.testing.assert_array_equal(a[t], data[t])
    assert _requests(proxy, lambda: np.testing.assert_array_equal(a[33], data[33])) == 1
    # The shard read first was forgotten: its index is read again.
    assert _requests(proxy, lambda: np.testing.assert_array_equal(a[1], data[1])) == 2


def test_http_etags_are_not_trusted_with_indexes(http_server):
    """An HTTP server's ETag (often size and modification second) may stay when the file
    changes: its shards' indexes are read with every sample, so a rewrite of the same size
    within the same second is still seen."""
    name = f"h-{os.urandom(4).hex()}.zarr"
    data = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    w = zarrcore.create_array(f"{http_server.root}/{name}", shape=SHAPE, dtype="float32",
                              chunks=CHUNKS, shards=SHARDS, compressors=None)
    w[...] = data
    a = zarrcore.open_array(f"{http_server.url}/{name}", mode="r")
    np.testing.assert_array_equal(a[3], data[3])
    data[0:16] = -data[0:16]  # the same size, uncompressed: the same layout
    w[0:16] = data[0:16]
    np.testing.assert_array_equal(a[3], data[3])


def test_the_ranges_of_a_batch_are_requested_at_once(s3_bucket, fault_proxy):
    """Once the indexes are known, a batch's ranges in four shards go out together: each
    held 0.2 s by a delaying proxy, they are seen in flight at once."""
    from servers import CountingProxy

    server, bucket = s3_bucket
    data = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    _written(server, bucket, data)
    counting = CountingProxy(int(fault_proxy.endpoint.rsplit(":", 1)[1]))
    try:
        a = _through(server, bucket, counting)
        np.testing.assert_array_equal(a[[0, 16, 32, 48]], data[[0, 16, 32, 48]])
        fault_proxy.faults.delay = 0.2
        counting.peak_requests = 0
        batch = [1, 17, 33, 49]
        assert _requests(counting, lambda: np.testing.assert_array_equal(a[batch],
                                                                         data[batch])) == 4
        assert counting.peak_requests >= 2, counting.peak_requests
    finally:
        counting.stop()


def test_a_known_shards_ranges_go_out_with_the_unknown_shards_indexes(counted):
    """A read of inner chunks of a shard whose index is known and of one whose index is not
    sends the known one's range with the other's index request, not after its answer: each
    request held 0.3 s by the proxy, both arrive together."""
    server, bucket, proxy = counted
    data = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    _written(server, bucket, data)
    a = _through(server, bucket, proxy)
    np.testing.assert_array_equal(a[0], data[0])  # (shard c/0/0's index)
    proxy.delay = 0.3
    first = len(proxy.asked)
    np.testing.assert_array_equal(a[[1, 17]], data[[1, 17]])
    asked = [(path.rsplit(".zarr/", 1)[1], t)
             for (path, _), t in zip(proxy.asked[first:], proxy.arrivals[first:])]
    assert [key for key, _ in asked] == ["c/0/0", "c/1/0", "c/1/0"] or [
        key for key, _ in asked] == ["c/1/0", "c/0/0", "c/1/0"], asked
    known = next(t for key, t in asked if key == "c/0/0")
    assert known - asked[0][1] < 0.2, asked  # (not after the index's 0.3 s)


@pytest.mark.parametrize("side", [256, 1024])
def test_a_shard_wanted_whole_is_read_by_its_known_index_where_it_is_large(counted, side):
    """Over a link (40 ms, 1 GiB/s: a shard of 4 MiB is wanted whole; bodies that came at
    10 MiB/s: a large one is split), a shard wanted whole is fetched whole (its index in
    it); once its index is known and it stores more than WHOLE_KNOWN_BYTES, by the index's
    ranges instead, in pieces on several connections, without the index's bytes."""
    from zarrcore.engine.shard_ranges import WHOLE_KNOWN_BYTES

    server, bucket, proxy = counted
    data = np.random.default_rng(1).standard_normal((side, 1024)).astype("float32")
    assert (data.nbytes > WHOLE_KNOWN_BYTES) == (side == 1024)
    a = zarrcore.create_array(f"s3://{bucket}/w{side}.zarr", shape=data.shape, dtype="f4",
                              chunks=(side // 4, 1024), shards=data.shape, compressors=None,
                              storage_options=server.storage_options())
    a[...] = data
    a = _through(server, bucket, proxy, f"w{side}.zarr")
    a.store.link = link_of(0.04, 2**30, body_rate=10 * 2**20)
    index_start = data.nbytes  # (the index follows the inner chunks)
    reads = []
    for _ in range(2):
        first = len(proxy.asked)
        np.testing.assert_array_equal(a[...], data)
        reads.append([ranged for path, ranged in proxy.asked[first:] if "/c/" in path])
    assert len(reads[0]) == 1  # (whole, its index in it)

    def last_byte(ranged):
        return int(ranged.rsplit("-", 1)[1]) if ranged and ranged[-1] != "-" else None

    if side == 1024:
        assert len(reads[1]) > 1 and all(
            last_byte(r) is not None and last_byte(r) < index_start for r in reads[1]
        ), reads[1]
    else:
        assert reads[1] == reads[0]
