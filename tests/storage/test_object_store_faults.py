"""Object stores under faults (a proxy in front of moto's S3 server): lock objects that
survive lost answers, failed releases and bad stamps, PUTs that land late, and cached reads
that a proxy's 304 for another ETag does not fool."""
import json
import pickle
import threading
import time
import urllib.parse

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import LockTimeoutError, StoreError
from zarrcore.storage import _object_locks, make_store

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")


def _proxied_options(server, proxy, **extra):
    return {**server.storage_options(proxy.endpoint), "timeout": 1, "retries": 1, **extra}


def _within(seconds, call):
    """call()'s result, failing the test if it has not returned within `seconds` (on a
    thread: a call that would wait forever must not hang the test)."""
    result = {}

    def run():
        try:
            result["value"] = call()
        except BaseException as e:  # re-raised below
            result["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    if "error" in result:
        raise result["error"]
    return result.get("value")


def test_lock_put_answered_503_after_it_landed_is_held_at_once(s3_bucket, fault_proxy,
                                                               monkeypatch):
    monkeypatch.setattr(_object_locks, "LOCK_LEASE", 4.0)  # (what waiting for itself costs)
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=_proxied_options(server, fault_proxy))
    faults = fault_proxy.faults
    faults.match, faults.method, faults.count = "/a/.zarrcore-lock.k", "PUT", 1
    faults.status, faults.after_apply = 503, True  # created, but the answer is an error
    started = time.monotonic()
    with store.lock("a/k"):
        elapsed = time.monotonic() - started
    assert faults.count == 0
    assert elapsed < 2, elapsed  # its own lock object, recognised by its nonce
    assert store.get("a/.zarrcore-lock.k") is None


def test_failed_lock_release_does_not_fail_the_committed_update(s3_bucket, fault_proxy):
    server, bucket = s3_bucket
    url = f"s3://{bucket}/a.zarr"
    options = _proxied_options(server, fault_proxy, retries=0)
    a = zarrcore.create_array(url, shape=(0, 4), dtype="i4", chunks=(2, 4),
                              storage_options=options)
    faults = fault_proxy.faults
    # (obstore deletes by S3's DeleteObjects: the key is in the body.)
    faults.match, faults.method = "?delete", "POST"
    faults.drop, faults.after_apply, faults.count = True, True, 1  # deleted; answer lost
    assert a.append(np.ones((3, 4), "i4")) == (3, 4)
    assert faults.count == 0
    direct = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    assert json.loads(direct.get("a.zarr/zarr.json"))["shape"] == [3, 4]
    # Every delete of the lock object fails: it is left, and the update still succeeds.
    faults.after_apply, faults.count = False, None
    a.attrs["x"] = 1
    assert direct.get("a.zarr/.zarrcore-lock.zarr.json") is not None
    faults.reset()
    started = time.monotonic()
    a.attrs["y"] = 2  # takes over what this process left, without waiting out its lease
    assert time.monotonic() - started < 2
    assert direct.get("a.zarr/.zarrcore-lock.zarr.json") is None
    b = zarrcore.open_array(url, mode="r", storage_options=server.storage_options())
    assert b.shape == (3, 4) and dict(b.attrs) == {"x": 1, "y": 2}
    np.testing.assert_array_equal(b[...], np.ones((3, 4)))


def test_future_stamped_lock_times_out_naming_it_then_is_taken_over(s3_bucket, monkeypatch):
    """A stamp's own clock counts for nothing: one from the future neither blocks forever
    nor keeps the lock past a lease of the store's clock."""
    server, bucket = s3_bucket
    url, options = f"s3://{bucket}/f.zarr", server.storage_options()
    a = zarrcore.create_array(url, shape=(4,), dtype="i2", chunks=(2,), storage_options=options)
    lock_key = ".zarrcore-lock.zarr.json"
    a.store.set(lock_key, json.dumps({"host": "skewed", "pid": 7, "time": time.time() + 3600,
                                      "nonce": "f"}).encode())
    with pytest.raises(ValueError, match="lock_timeout"):
        zarrcore.config.set(lock_timeout=0)
    with zarrcore.config.set(lock_timeout=1):
        started = time.monotonic()
        with pytest.raises(LockTimeoutError, match=rf"1 s.*'{lock_key}'.*host 'skewed' pid 7"):
            _within(10, lambda: a.attrs.update(x=1))
        assert 0.9 < time.monotonic() - started < 5
    monkeypatch.setattr(_object_locks, "LOCK_LEASE", 1.0)
    _within(10, lambda: a.resize((6,)))  # unchanged for a lease: its holder is gone
    assert a.store.get(lock_key) is None
    assert zarrcore.open_array(url, mode="r", storage_options=options).shape == (6,)


def test_lock_left_long_ago_is_taken_over_at_once_by_the_stores_clock(s3_bucket,
                                                                      monkeypatch):
    """Its age by the store's clock (Last-Modified against a probe's) decides at once, even
    when its stamp, from a skewed clock, says it is new."""
    monkeypatch.setattr(_object_locks, "LOCK_LEASE", 2.0)
    server, bucket = s3_bucket
    store = make_store(f"s3://{bucket}", storage_options=server.storage_options())
    store.set("a/.zarrcore-lock.k", json.dumps({"host": "skewed", "pid": 7, "nonce": "s",
                                                "time": time.time() + 3600}).encode())
    time.sleep(4.5)  # more than a lease, a second of margin and Last-Modified's rounding
    taker = make_store(f"s3://{bucket}", storage_options=server.storage_options())

    def take():
        with taker.lock("a/k"):
            return time.monotonic() - started

    started = time.monotonic()
    assert _within(5, take) < 1.8  # not a lease of watching it unchanged
    assert taker.get("a/.zarrcore-lock.") is None  # the probe is gone


def test_lock_stamps_no_holder_writes_are_taken_over(s3_bucket):
    """No zarrcore holder writes a NaN time or garbage: such an object is no live lock."""
    server, bucket = s3_bucket
    url, options = f"s3://{bucket}/n.zarr", server.storage_options()
    a = zarrcore.create_array(url, shape=(0, 4), dtype="i2", chunks=(2, 4),
                              storage_options=options)
    for rows, stamp in enumerate([b'{"host": "h", "pid": 1, "time": NaN}', b"garbage"], 1):
        a.store.set(".zarrcore-lock.zarr.json", stamp)
        assert _within(10, lambda: a.append(np.zeros((1, 4), "i2"))) == (rows, 4)
        assert a.store.get(".zarrcore-lock.zarr.json") is None


@pytest.mark.parametrize("existing", [False, True])
def test_put_that_lands_late_cannot_revert_a_newer_write(s3_bucket, fault_proxy, existing):
    server, bucket = s3_bucket
    url, options = f"s3://{bucket}/late.zarr", server.storage_options()
    zarrcore.create_array(url, shape=(4,), dtype="i4", chunks=(2,), fill_value=0,
                          storage_options=options)
    slow = zarrcore.open_array(url, mode="r+", storage_options=_proxied_options(
        server, fault_proxy, timeout=1, retries=0))
    if existing:
        slow[...] = 7  # (its next PUTs are If-Match these versions; else create-only)
    fault_proxy.faults.match, fault_proxy.faults.delay = "/late.zarr/c/", 3.0
    with pytest.raises(StoreError, match="timed out"):
        slow[...] = 1  # the PUTs reach the server only after the client gave up
    fast = zarrcore.open_array(url, mode="r+", storage_options=options)
    fast[0:2] = 2
    assert fault_proxy.wait_idle(10)  # the late PUTs were answered
    got = fast[...]
    assert got[:2].tolist() == [2, 2]  # the newer write stands
    assert got[2:].tolist() in ([1, 1], [7, 7] if existing else [0, 0])


def test_conditional_writes_cost_one_put_per_object(s3_bucket, fault_proxy):
    """A new array, and a handle rewriting what it wrote, make one PUT per object."""
    server, bucket = s3_bucket
    a = zarrcore.create_array(f"s3://{bucket}/n.zarr", shape=(8, 8), dtype="i4", chunks=(2, 8),
                              storage_options=_proxied_options(server, fault_proxy))
    for value in (1, 2):
        del fault_proxy.requests[:]
        a[...] = value
        assert sorted(m for m, _ in fault_proxy.requests) == ["PUT"] * 4, fault_proxy.requests
    np.testing.assert_array_equal(a[...], 2)


def _requests(proxy):
    """The methods of the requests `proxy` forwarded, a listing as "LIST"; sorted."""
    return sorted("LIST" if "list-type" in path else m for m, path in proxy.requests)


@pytest.mark.parametrize("rows", [8, 16], ids=["a-head-each", "one-listing"])
def test_a_handle_opened_afresh_learns_what_was_stored_before_it(s3_bucket, fault_proxy, rows):
    """A handle opened afresh learns the versions of the objects that may be stored from
    before, a few by a HEAD each, more by one listing, then PUTs each once, never sending a
    whole body to be refused; objects past the shape it opened, or of an array made for it
    elsewhere, take one PUT each."""
    server, bucket = s3_bucket
    url, chunks = f"s3://{bucket}/o.zarr", rows // 2
    made = zarrcore.create_array(url, shape=(rows, 8), dtype="i4", chunks=(2, 8), fill_value=0,
                                 storage_options=_proxied_options(server, fault_proxy))
    made[...] = 1
    a = zarrcore.open_array(url, mode="r+", storage_options=_proxied_options(server, fault_proxy))
    del fault_proxy.requests[:]
    a[...] = 2
    learnt = ["HEAD"] * chunks if chunks < 8 else ["LIST"]
    assert _requests(fault_proxy) == sorted(learnt + ["PUT"] * chunks), fault_proxy.requests
    a.resize((rows + 4, 8))
    del fault_proxy.requests[:]
    a[rows:] = 3
    assert _requests(fault_proxy) == ["PUT"] * 2, fault_proxy.requests
    shipped = pickle.loads(pickle.dumps(zarrcore.create_array(
        f"s3://{bucket}/p.zarr", shape=(rows, 8), dtype="i4", chunks=(2, 8), fill_value=0,
        storage_options=_proxied_options(server, fault_proxy))))
    del fault_proxy.requests[:]
    shipped[...] = 4
    assert _requests(fault_proxy) == ["PUT"] * chunks, fault_proxy.requests
    for path, expected in (("o", np.repeat([2, 3], [rows, 4])), ("p", np.full(rows, 4))):
        got = zarrcore.open_array(f"s3://{bucket}/{path}.zarr", mode="r",
                                  storage_options=server.storage_options())[...]
        np.testing.assert_array_equal(got, np.broadcast_to(expected[:, None], got.shape))


def test_a_handle_opened_afresh_with_other_settings_learns_first(s3_bucket, fault_proxy):
    """`with_config` of a handle opened onto stored data keeps what was stored before it:
    its rewrite learns the versions first (one listing), then PUTs each once."""
    server, bucket = s3_bucket
    url = f"s3://{bucket}/w.zarr"
    zarrcore.create_array(url, shape=(16, 8), dtype="i4", chunks=(2, 8), fill_value=0,
                          storage_options=server.storage_options())[...] = 1
    a = zarrcore.open_array(url, mode="r+", storage_options=_proxied_options(server, fault_proxy))
    b = a.with_config({"write_empty_chunks": True})
    del fault_proxy.requests[:]
    b[...] = 2
    assert _requests(fault_proxy) == ["LIST"] + ["PUT"] * 8, fault_proxy.requests
    np.testing.assert_array_equal(a[...], 2)


def test_keys_past_a_listings_page_are_headed(s3_bucket, fault_proxy, monkeypatch):
    """Listings go through one page of objects at most (here 3), the keys cut into runs of
    at most a page each, listed at once: where other objects lie between them, the keys
    past a page have a HEAD each."""
    from zarrcore.storage import _object_versions

    monkeypatch.setattr(_object_versions, "LISTED_MOST", 3)
    server, bucket = s3_bucket
    url = f"s3://{bucket}/m"
    keys = [f"k{i}" for i in range(8)]
    make_store(url, storage_options=server.storage_options()).set_many(
        [(k, b"old") for k in keys] + [("k1a", b"other")])
    store = make_store(url, storage_options=_proxied_options(server, fault_proxy))
    store.may_hold(keys)
    store.set_many([(k, k.encode()) for k in keys])
    # (Runs k0-k2, k3-k5 and k6-k7: the first's page ends at k1a, short of k2.)
    assert _requests(fault_proxy) == ["HEAD"] + ["LIST"] * 3 + ["PUT"] * 8, fault_proxy.requests
    assert [path for m, path in fault_proxy.requests if m == "HEAD"] == [f"/{bucket}/m/k2"]
    assert [store.get(k) for k in keys] == [k.encode() for k in keys]


def test_keys_in_many_folders_are_listed_at_once_a_folder_each(
        s3_bucket, fault_proxy, monkeypatch):
    """The keys of a rewrite spread over folders are learnt by listings sent at once, one
    of each folder where their answers then hold LISTED_FLIGHT keys at most (here 4: the
    rows' folders of 4 chunks each), then PUT once each."""
    from zarrcore.storage import _object_versions

    monkeypatch.setattr(_object_versions, "LISTED_FLIGHT", 4)
    server, bucket = s3_bucket
    url = f"s3://{bucket}/f.zarr"
    zarrcore.create_array(url, shape=(8, 8), dtype="i4", chunks=(2, 2), fill_value=0,
                          storage_options=server.storage_options())[...] = 1
    a = zarrcore.open_array(url, mode="r+", storage_options=_proxied_options(server, fault_proxy))
    del fault_proxy.requests[:]
    a[...] = 2
    assert _requests(fault_proxy) == ["LIST"] * 4 + ["PUT"] * 16, fault_proxy.requests
    prefixes = sorted(urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["prefix"][0]
                      for m, path in fault_proxy.requests if "list-type" in path)
    assert prefixes == [f"f.zarr/c/{i}/" for i in range(4)], fault_proxy.requests
    np.testing.assert_array_equal(zarrcore.open_array(
        url, mode="r", storage_options=server.storage_options())[...], 2)


def test_a_groups_own_new_array_opened_through_it_writes_one_put_each(s3_bucket,
                                                                      fault_proxy):
    """An array a group object made, opened again through that group, writes its objects
    create-only (nothing was stored before); what it wrote, rewritten through the group,
    is put over the ETag its PUT gave."""
    server, bucket = s3_bucket
    g = zarrcore.open_group(f"s3://{bucket}/g.zarr", mode="w",
                            storage_options=_proxied_options(server, fault_proxy))
    g.create_array("x", shape=(16, 8), dtype="i4", chunks=(2, 8), fill_value=0)
    for value in (1, 2):
        del fault_proxy.requests[:]
        g["x"][...] = value
        assert _requests(fault_proxy) == ["GET"] + ["PUT"] * 8, fault_proxy.requests
    np.testing.assert_array_equal(g["x"][...], 2)


def test_keys_nobody_announced_are_learnt_first_once_one_was_found_stored(s3_bucket,
                                                                          fault_proxy):
    """Keys written without `may_hold` (as zarr-python's pipeline writes) go create-only
    while they are new; once one was found stored, the next ones are HEADed first, until
    one is found missing."""
    server, bucket = s3_bucket
    url = f"s3://{bucket}/u"
    make_store(url, storage_options=server.storage_options()).set_many(
        [(f"old{i}", b"old") for i in range(2)])
    store = make_store(url, storage_options=_proxied_options(server, fault_proxy))
    for key, expected in (("new0", ["PUT"]), ("old0", ["PUT", "HEAD", "PUT"]),
                          ("old1", ["HEAD", "PUT"]), ("new1", ["HEAD", "PUT"]),
                          ("new2", ["PUT"])):
        del fault_proxy.requests[:]
        store.set(key, key.encode())
        assert [m for m, _ in fault_proxy.requests] == expected, (key, fault_proxy.requests)
    assert sorted(store.list_prefix("")) == ["new0", "new1", "new2", "old0", "old1"]
    assert [store.get(k) for k in ("old0", "new1")] == [b"old0", b"new1"]


def test_a_listing_refused_leaves_a_head_each(s3_bucket, fault_proxy):
    """Credentials that may write but not list: the versions are learnt by a HEAD each."""
    server, bucket = s3_bucket
    url = f"s3://{bucket}/l.zarr"
    zarrcore.create_array(url, shape=(16, 8), dtype="i4", chunks=(2, 8), fill_value=0,
                          storage_options=server.storage_options())[...] = 1
    a = zarrcore.open_array(url, mode="r+", storage_options=_proxied_options(server, fault_proxy))
    fault_proxy.faults.match, fault_proxy.faults.status = "list-type", 403
    del fault_proxy.requests[:]
    a[...] = 2
    assert _requests(fault_proxy) == ["HEAD"] * 8 + ["LIST"] + ["PUT"] * 8, fault_proxy.requests
    np.testing.assert_array_equal(zarrcore.open_array(
        url, mode="r", storage_options=server.storage_options())[...], 2)


@pytest.mark.parametrize("etag", ['"0123456789abcdef0123456789abcdef"', None],
                         ids=["other-etag", "no-etag"])
def test_cache_hit_only_from_a_304_for_the_etag_asked_about(s3_bucket, fault_proxy, etag):
    """A proxy answers every conditional GET with 304 although the object changed, naming
    another ETag or none: the read gets the new bytes (a cached entry is served only when a
    HEAD finds the object still at its ETag), and an unchanged object is still served from
    the cache."""
    server, bucket = s3_bucket
    url = f"s3://{bucket}/a.zarr"
    data = np.arange(8 * 6, dtype="f8").reshape(8, 6)
    writer = zarrcore.create_array(url, shape=data.shape, chunks=(2, 6), dtype="f8",
                                   storage_options=server.storage_options())
    writer[...] = data
    a = zarrcore.open_array(url, mode="r", cache_bytes=1 << 16,
                            storage_options=_proxied_options(server, fault_proxy))
    np.testing.assert_array_equal(a[0:2], data[0:2])
    np.testing.assert_array_equal(a[0:2], data[0:2])
    assert a.cache_info()["hits"] == 1
    writer[0:2] = -1
    faults = fault_proxy.faults
    faults.status, faults.etag, faults.method, faults.conditional = 304, etag, "GET", True
    np.testing.assert_array_equal(a[0:2], -np.ones((2, 6)))
    np.testing.assert_array_equal(a[0:2], -np.ones((2, 6)))
    faults.reset()
    np.testing.assert_array_equal(a[0:2], -np.ones((2, 6)))
    assert a.cache_info()["hits"] >= 2
