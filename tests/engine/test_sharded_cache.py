"""The decoded-chunk cache of sharded arrays on stores that version their objects (S3
through moto, zip files): an inner chunk's entry is served only for the shard version (ETag)
and the byte span it was decoded from. A repeated sample is copied out of its entry at the
cost of one conditional request per shard (none beyond the index request when the index is
read anyway); a shard another writer replaced, even with bytes of the same size, is read
fresh. Requests are counted by a proxy in front of the loopback S3; every read is compared
with numpy."""
import collections

import numpy as np
import pytest

import zarrcore

SHAPE, CHUNKS, SHARDS = (64, 24), (1, 24), (16, 24)
CACHE = 1 << 20


def _s3(counted, data, **kwargs):
    """(the array read through the proxy with a cache, the writer's array: another client)
    of `data` on S3."""
    server, bucket, proxy = counted
    url = f"s3://{bucket}/a.zarr"
    writer = zarrcore.create_array(url, shape=data.shape, dtype=data.dtype, chunks=CHUNKS,
                                   shards=SHARDS, storage_options=server.storage_options(),
                                   **kwargs)
    writer[...] = data
    a = zarrcore.open_array(url, mode="r", cache_bytes=CACHE,
                            storage_options=server.storage_options(proxy.endpoint))
    return a, writer


def _sent(proxy, read):
    """The requests for shards, by method, that `read()` sent through `proxy`."""
    before = collections.Counter(proxy.methods)
    read()
    sent = collections.Counter()
    for (method, path), n in (proxy.methods - before).items():
        if "/a.zarr/c/" in path:
            sent[method] += n
    return sent


def _data(seed=0):
    return np.random.default_rng(seed).standard_normal(SHAPE).astype("float32")


def test_a_repeated_sample_is_a_hit_for_one_conditional_request(counted):
    data = _data()
    a, _ = _s3(counted, data)
    proxy = counted[2]
    assert a.cache_info()["capacity"] > 0

    def check(sel):
        return lambda: np.testing.assert_array_equal(a[sel], data[sel])

    # Unknown index: its GET, then the sample's range.
    assert sum(_sent(proxy, check(5)).values()) == 2
    assert a.cache_info()["inserts"] == 1
    # Known index, sample cached: one GET of the index If-Match its ETag, nothing decoded.
    assert sum(_sent(proxy, check(5)).values()) == 1
    assert a.cache_info()["hits"] == 1 and a.cache_info()["inserts"] == 1
    # Another sample of that shard: its range only, which confirms the cached one too.
    assert sum(_sent(proxy, check([5, 6])).values()) == 1
    info = a.cache_info()
    assert info["hits"] == 2 and info["inserts"] == 2
    # Samples of four shards (one of them known), then again: one request per shard.
    rows = [1, 17, 33, 49]
    assert sum(_sent(proxy, check(rows)).values()) == 1 + 3 * 2
    assert sum(_sent(proxy, check(rows)).values()) == 4
    assert a.cache_info()["hits"] == 6
    # A basic read of a whole shard, then again: every inner chunk from the cache.
    np.testing.assert_array_equal(a[16:32], data[16:32])
    before = a.cache_info()["hits"]
    assert sum(_sent(proxy, check(slice(16, 32))).values()) == 1
    assert a.cache_info()["hits"] == before + 16
    # A whole shard whose index is known and some inner chunks cached (rows 1, 5, 6): the
    # others in one range.
    before = a.cache_info()["hits"]
    assert sum(_sent(proxy, check(slice(0, 16))).values()) == 1
    assert a.cache_info()["hits"] == before + 3


def test_point_reads_of_shards_go_through_the_cache(counted):
    data = _data(1)
    a, _ = _s3(counted, data)
    proxy = counted[2]
    rows, cols = [3, 20, 37, 60, 3], [1, 2, 3, 4, 5]
    np.testing.assert_array_equal(a.vindex[rows, cols], data[rows, cols])
    assert a.cache_info()["inserts"] == 4
    sent = _sent(proxy, lambda: np.testing.assert_array_equal(a.vindex[rows, cols],
                                                              data[rows, cols]))
    assert sum(sent.values()) == 4  # (each shard's index, at its ETag)
    info = a.cache_info()
    assert info["hits"] == 4 and info["inserts"] == 4


@pytest.mark.parametrize("change", ["rewritten", "same size", "emptied", "deleted"])
def test_a_shard_another_writer_replaced_is_never_served_stale(counted, change):
    """Samples cached and their shard's index known; another writer replaces the shard:
    with other bytes, with bytes of the very same size and layout (no compressor), with
    fill, or deletes it. Every later read is of the new data."""
    data = _data(2)
    a, writer = _s3(counted, data, compressors=None if change == "same size" else "auto")
    rows = [2, 5, 9, 20]
    for _ in range(2):
        np.testing.assert_array_equal(a[rows], data[rows])
    assert a.cache_info()["hits"] == 4
    if change == "rewritten":  # compressible rows first: every offset moves
        data[0:16] = np.repeat(np.arange(16, dtype="float32")[:, None], SHAPE[1], axis=1)
        writer[0:16] = data[0:16]
    elif change == "same size":
        data[0:16] = -data[0:16]
        writer[0:16] = data[0:16]
    elif change == "emptied":
        data[0:16] = 0
        writer[0:16] = 0
    else:
        writer.store.delete("c/0/0")
        data[0:16] = 0
    for _ in range(2):
        np.testing.assert_array_equal(a[rows], data[rows])
        np.testing.assert_array_equal(a.vindex[rows, [0, 1, 2, 3]], data[rows, [0, 1, 2, 3]])
        np.testing.assert_array_equal(a[2], data[2])
    if change in ("rewritten", "same size"):
        assert a.cache_info()["stale"] >= 3


def test_zip_shards_are_cached_by_their_member(tmp_path):
    """In a zip, an inner chunk's entry is of its shard's member (the zip's opening, the
    member's place, sizes and CRC) and its span: repeated reads hit, and a shard written
    again, with bytes of the same size too, is read fresh."""
    data = _data(3)
    store = zarrcore.ZipStore(str(tmp_path / "a.zip"), mode="w")
    w = zarrcore.create_array(store, shape=data.shape, dtype=data.dtype, chunks=CHUNKS,
                              shards=SHARDS, compressors=None)
    w[...] = data
    a = zarrcore.open_array(store, cache_bytes=CACHE)
    assert a.cache_info()["capacity"] > 0
    rows = [3, 20, 37, 60, 3]
    for _ in range(3):
        np.testing.assert_array_equal(a[rows], data[rows])
        np.testing.assert_array_equal(a.vindex[rows, [0, 1, 2, 3, 4]],
                                      data[rows, [0, 1, 2, 3, 4]])
    info = a.cache_info()
    assert info["inserts"] == 4 and info["hits"] == 4 * 5
    data[0:16] = -data[0:16]  # (the same size: a new member elsewhere in the zip)
    w[0:16] = data[0:16]
    for _ in range(2):
        np.testing.assert_array_equal(a[rows], data[rows])
    info = a.cache_info()
    assert info["stale"] == 1 and info["inserts"] == 5
    np.testing.assert_array_equal(a[...], data)
    store.close()


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])
def test_an_answer_of_another_version_than_asked_for_is_refused(counted, monkeypatch,
                                                                  cached):
    """A server (or proxy) that ignores If-Match answers a replaced shard's new bytes to a
    request for its known version: the answer's ETag is not the one asked for, so the read
    reads the shard again, never mixing the new bytes with the old index or entries."""
    import obstore

    data = _data(4)
    a, writer = _s3(counted, data, compressors=None)
    if not cached:
        a = a.with_config({"cache_bytes": 0})
    rows = [2, 5]
    for _ in range(2):
        np.testing.assert_array_equal(a[rows], data[rows])
    real_get = obstore.get

    def ignoring_if_match(store, path, *, options=None):
        options = {k: v for k, v in (options or {}).items() if k != "if_match"}
        return real_get(store, path, options=options)

    monkeypatch.setattr(obstore, "get", ignoring_if_match)
    data[0:16] = -data[0:16]  # (the same size and layout)
    writer[0:16] = data[0:16]
    for _ in range(2):
        np.testing.assert_array_equal(a[rows], data[rows])
        np.testing.assert_array_equal(a[[3, 6]], data[[3, 6]])


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])
def test_inner_chunks_a_known_index_says_are_empty_are_checked(counted, cached):
    """A read of inner chunks that a known index says are not stored fetches no range, so
    it asks for the index at its version (one request): inner chunks another writer stored
    since are read, not filled from the stale index."""
    server, bucket, proxy = counted
    url = f"s3://{bucket}/a.zarr"
    data = np.zeros(SHAPE, dtype="float32")
    data[0] = 1
    writer = zarrcore.create_array(url, shape=SHAPE, dtype="float32", chunks=CHUNKS,
                                   shards=SHARDS, storage_options=server.storage_options())
    writer[0] = 1
    a = zarrcore.open_array(url, mode="r", cache_bytes=CACHE if cached else 0,
                            storage_options=server.storage_options(proxy.endpoint))
    np.testing.assert_array_equal(a[[0, 5]], data[[0, 5]])
    assert sum(_sent(proxy, lambda: np.testing.assert_array_equal(a[5], data[5])).values()) == 1
    data[5] = 2
    writer[5] = 2
    np.testing.assert_array_equal(a[5], data[5])
    np.testing.assert_array_equal(a.vindex[[5, 0], [1, 1]], data[[5, 0], [1, 1]])


@pytest.mark.parametrize("compressors", [None, "auto"], ids=["raw", "compressed"])
def test_random_reads_and_rewrites_match_numpy(counted, compressors):
    """Rounds of basic, orthogonal and point reads (each twice: the second through the cache)
    between rewrites by another writer of random regions (raw: every shard keeps its size and
    layout), every read compared with numpy."""
    rng = np.random.default_rng(6)
    data = _data(6)
    a, writer = _s3(counted, data, compressors=compressors)
    for _ in range(6):
        for _ in range(2):
            rows = np.sort(rng.choice(SHAPE[0], 6, replace=False))
            cols = rng.integers(0, SHAPE[1], 6)
            start = int(rng.integers(0, SHAPE[0] - 8))
            np.testing.assert_array_equal(a[rows], data[rows])
            np.testing.assert_array_equal(a.vindex[rows, cols], data[rows, cols])
            np.testing.assert_array_equal(a[start:start + 8, 3:9], data[start:start + 8, 3:9])
        lo = int(rng.integers(0, SHAPE[0] - 4))
        hi = lo + int(rng.integers(1, 20))
        data[lo:hi] = rng.standard_normal(data[lo:hi].shape).astype("float32")
        writer[lo:hi] = data[lo:hi]
    assert a.cache_info()["hits"] > 0 and a.cache_info()["stale"] > 0


def test_a_weak_etag_versions_nothing(counted):
    """A weak ETag may be shared by other bytes (and If-Match never matches one): a reader
    that saw one tells no version, so neither the shard's index nor its inner chunks are
    kept by it."""
    a, _ = _s3(counted, _data(7))
    with a.store.reader(a._engine.key((0, 0))) as reader:
        reader.get_ranges([(0, 4)])
        assert reader.version is not None
        reader.e_tag = 'W/"' + reader.e_tag.strip('"') + '"'
        assert reader.version is None
