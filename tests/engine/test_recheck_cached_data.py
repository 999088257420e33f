"""recheck_cached_data: which chunks (and shard indexes) an array opened read-only takes out
of its decoded-chunk cache without asking the store whether they changed. True (the default)
asks every time; False never; "open" asks about what was found before the array was opened;
a time, about what was found before it. Requests are counted by a proxy in front of the
loopback S3 (or by a store without a server); every read is compared with numpy."""
import collections
import itertools
import math
import os
import pickle
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import zarrcore
from zarrcore.errors import SettingTypeError, SettingValueError
from versioned_store import VersionedStore

SHAPE, CHUNKS, SHARDS = (64, 24), (1, 24), (16, 24)
CACHE = 1 << 20


def _data(seed=0):
    return np.random.default_rng(seed).standard_normal(SHAPE).astype("float32")


def _s3(counted, data, shards=None, **kwargs):
    """(the array read through the proxy with a cache and `kwargs`, the writer's array:
    another client) of `data` on S3."""
    server, bucket, proxy = counted
    url = f"s3://{bucket}/a.zarr"
    writer = zarrcore.create_array(url, shape=data.shape, dtype=data.dtype, chunks=CHUNKS,
                                   shards=shards, storage_options=server.storage_options())
    writer[...] = data
    a = zarrcore.open_array(url, mode="r", cache_bytes=CACHE,
                            storage_options=server.storage_options(proxy.endpoint), **kwargs)
    return a, writer


def _sent(proxy, read):
    """How many requests for chunks `read()` sent through `proxy`."""
    before = collections.Counter(proxy.methods)
    read()
    return sum(n for (_, path), n in (proxy.methods - before).items() if "/a.zarr/c/" in path)


def _checker(a, data):
    def check(sel):
        return lambda: np.testing.assert_array_equal(a[sel], data[sel])
    return check


@pytest.mark.parametrize("shards", [None, SHARDS], ids=["chunks", "shards"])
@pytest.mark.parametrize("recheck", [False, "open"])
def test_a_trusted_hit_asks_the_store_nothing(counted, shards, recheck):
    data = _data()
    a, writer = _s3(counted, data, shards, recheck_cached_data=recheck)
    proxy, check = counted[2], _checker(a, data)
    assert _sent(proxy, check(5)) == (1 if shards is None else 2)  # (and the index)
    # The sample again, alone (one block) and in a list (the planned routes): nothing asked.
    assert _sent(proxy, check(5)) == 0
    assert _sent(proxy, check([5])) == 0
    assert a.cache_info()["hits"] == 2
    # Row 4 is not cached: it alone is fetched (sharded: by the known index, at its ETag).
    assert _sent(proxy, check(slice(4, 6))) == 1
    assert _sent(proxy, check(slice(4, 6))) == 0
    # What this array found stays what it reads: another writer's change is not asked about.
    # An array that asks (the default) reads the new values.
    new = data.copy()
    new[5] += 1
    writer[5] = new[5]
    np.testing.assert_array_equal(a[5], data[5])
    fresh = zarrcore.open_array(a.store, mode="r", cache_bytes=CACHE)
    np.testing.assert_array_equal(fresh[5], new[5])


@pytest.mark.parametrize("shards", [None, SHARDS], ids=["chunks", "shards"])
def test_the_default_asks_every_time(counted, shards):
    data = _data()
    a, writer = _s3(counted, data, shards)
    assert math.isinf(a.chunk_engine.recheck.since)
    proxy, check = counted[2], _checker(a, data)
    check(5)()
    for _ in range(3):
        assert _sent(proxy, check(5)) == 1  # (a HEAD; sharded, the index at its ETag)
    data[5] += 1
    writer[5] = data[5]
    check(5)()


@pytest.mark.parametrize("shards", [None, SHARDS], ids=["chunks", "shards"])
def test_a_time_trusts_what_a_request_found_since(counted, shards):
    """What was found before the time is asked about; once a request found it since, not."""
    data = _data()
    written, _ = _s3(counted, data, shards)
    since = time.time() + 1.0
    a = zarrcore.open_array(written.store, mode="r", cache_bytes=CACHE,
                            recheck_cached_data=since)
    proxy, check = counted[2], _checker(a, data)
    check(5)()
    assert _sent(proxy, check(5)) == 1
    assert time.time() < since  # (those two reads were found before it)
    time.sleep(max(0.0, since - time.time()) + 0.01)
    assert _sent(proxy, check(5)) == 1  # (found since the time)
    assert _sent(proxy, check(5)) == 0
    assert _sent(proxy, check([5])) == 0
    past = zarrcore.open_array(written.store, mode="r", cache_bytes=CACHE,
                               recheck_cached_data=time.time() - 60)
    check = _checker(past, data)
    check(7)()
    assert _sent(proxy, check(7)) == 0


def test_it_needs_an_array_opened_read_only_and_is_checked(tmp_path):
    path = str(tmp_path / "a.zarr")
    zarrcore.create_array(path, shape=(4,), chunks=(2,), dtype="i4")
    with pytest.raises(SettingValueError, match="recheck_cached_data.*read-only"):
        zarrcore.open_array(path, mode="r+", recheck_cached_data=False)
    for bad in ("always", math.nan, math.inf, 10**400, [1], b"open"):
        with pytest.raises(SettingTypeError, match="recheck_cached_data"):
            zarrcore.open_array(path, mode="r", recheck_cached_data=bad)
    a = zarrcore.open_array(path, mode="r", config={"recheck_cached_data": False})
    assert a.chunk_engine.recheck.since == -math.inf
    assert zarrcore.open_array(path, mode="r", config={"recheck_cached_data": None}
                               ).chunk_engine.recheck.since == math.inf


def test_open_travels_as_the_time_the_array_was_opened(tmp_path):
    """A worker that unpickles the array trusts what any process found since the array was
    opened, as a forked worker (which keeps the array itself) does."""
    path = str(tmp_path / "a.zarr")
    zarrcore.create_array(path, shape=(4,), chunks=(2,), dtype="i4")
    before = time.time()
    a = zarrcore.open_array(path, mode="r", recheck_cached_data="open")
    opened = a.chunk_engine.recheck.since
    assert before <= opened <= time.time()
    time.sleep(0.01)
    b = pickle.loads(pickle.dumps(a))
    assert b.chunk_engine.recheck.since == opened


_names = itertools.count()


@settings(max_examples=40, deadline=None)
@given(reads=st.lists(st.one_of(
    st.integers(0, 15),
    st.tuples(st.integers(0, 15), st.integers(0, 16)).map(lambda t: slice(min(t), max(t))),
    st.lists(st.integers(0, 15), min_size=1, max_size=5)), min_size=1, max_size=8),
       recheck=st.sampled_from([False, "open"]))
def test_reads_are_right_and_ask_only_about_chunks_never_read(reads, recheck):
    store = VersionedStore(f"{os.getpid()}-recheck-{next(_names)}")
    data = np.arange(16 * 6, dtype="int32").reshape(16, 6)
    zarrcore.create_array(store, shape=data.shape, dtype=data.dtype, chunks=(2, 6))[...] = data
    a = zarrcore.open_array(store, mode="r", cache_bytes=CACHE, recheck_cached_data=recheck)
    seen: set[int] = set()
    for sel in reads:
        asked = store.asked
        np.testing.assert_array_equal(a[sel], data[sel])
        rows = np.arange(16)[sel]
        chunks = set((np.atleast_1d(rows) // 2).tolist())
        assert store.asked - asked == len(chunks - seen)
        seen |= chunks
