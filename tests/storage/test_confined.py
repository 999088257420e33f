"""Symlinks in a directory store: followed by default (stores often link data elsewhere), and
refused, with an OutsideStoreError naming the key, in a confined store when they lead out."""
import os
import threading
import time

import numpy as np
import pytest

import zarrcore
from zarrcore._native.files import resolve_by_walking
from zarrcore.errors import OutsideStoreError

pytestmark = pytest.mark.posix("symbolic links need a privilege on Windows, where confinement is "
                               "checked after the open (wheels/README.md)")


@pytest.mark.parametrize("shards", [None, (2, 4)], ids=["chunks", "shards"])
def test_symlinks_out_of_the_store_are_followed_by_default(tmp_path, shards):
    a = zarrcore.create_array(str(tmp_path / "s"), shape=(4, 4), dtype="u1", chunks=(2, 2),
                              shards=shards)
    (tmp_path / "outside").mkdir()
    (tmp_path / "s" / "c").mkdir()
    (tmp_path / "s" / "c" / "1").symlink_to(tmp_path / "outside")
    a[...] = 3
    a[3, 3] = 4
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()
                  if not p.name.startswith(".")) == (["0"] if shards else ["0", "1"])
    assert a[3, 3] == 4 and a[2, 0] == 3


@pytest.mark.parametrize("confine", ["store", "config"])
@pytest.mark.parametrize("shards", [None, (2, 4)], ids=["chunks", "shards"])
def test_a_confined_store_refuses_keys_that_lead_out(tmp_path, confine, shards):
    a = zarrcore.create_array(str(tmp_path / "s"), shape=(4, 4), dtype="u1", chunks=(2, 2),
                              shards=shards)
    (tmp_path / "outside").mkdir()
    (tmp_path / "s" / "inside").mkdir()
    (tmp_path / "s" / "c").mkdir()
    (tmp_path / "s" / "c" / "1").symlink_to(tmp_path / "outside")
    (tmp_path / "s" / "c" / "0").symlink_to("../inside")
    if confine == "config":
        zarrcore.config.set(confine_local_stores=True)
        a = zarrcore.open_array(str(tmp_path / "s"), mode="r+")
    else:
        a = zarrcore.open_array(zarrcore.LocalStore(tmp_path / "s", confined=True), mode="r+")
    assert a.store.confined
    a[0:2, :] = 1  # through a link that stays inside: allowed
    for write in (lambda: a.__setitem__((slice(2, 4), slice(None)), 2),
                  lambda: a.__setitem__((3, 3), 2)):
        with pytest.raises(OutsideStoreError, match="c/1/"):
            write()
    with pytest.raises(OutsideStoreError, match="c/1/"):
        a[3, 3]
    assert not [p for p in (tmp_path / "outside").iterdir()]
    np.testing.assert_array_equal(a[0:2, :], 1)
    assert sorted(p.name for p in (tmp_path / "s" / "inside").iterdir()
                  if not p.name.startswith(".")) == (["0"] if shards else ["0", "1"])


def test_a_confined_store_refuses_a_linked_key_file(tmp_path):
    store = zarrcore.LocalStore(tmp_path / "s", confined=True)
    store.set("a", b"1")
    (tmp_path / "secret").write_bytes(b"s")
    (tmp_path / "s" / "b").symlink_to(tmp_path / "secret")
    for op in (lambda: store.get("b"), lambda: store.set("b", b"2"), lambda: store.delete("b")):
        with pytest.raises(OutsideStoreError, match="'b'"):
            op()
    assert (tmp_path / "secret").read_bytes() == b"s"
    assert store.get("a") == b"1"


# ---- confinement in the compiled file access (csrc/files/zc_fs.c) -----------------------------------

@pytest.fixture(params=["openat2", "walk"])
def resolver(request):
    """Confined paths resolved by openat2, and by the component walk used where it is missing."""
    resolve_by_walking(request.param == "walk")
    yield request.param
    resolve_by_walking(False)


def _confined_array(tmp_path, shards=None, shape=(4, 4), chunks=(2, 2)):
    zarrcore.create_array(str(tmp_path / "s"), shape=shape, dtype="u1", chunks=chunks,
                          shards=shards, fill_value=0)
    (tmp_path / "outside").mkdir()
    return zarrcore.open_array(zarrcore.LocalStore(tmp_path / "s", confined=True), mode="r+")


def _outside_names(tmp_path):
    return sorted(p.name for p in (tmp_path / "outside").iterdir())


@pytest.mark.parametrize("shards", [None, (2, 4)], ids=["chunks", "shards"])
def test_a_confined_store_keeps_the_native_batches_and_handles(tmp_path, shards):
    a = _confined_array(tmp_path, shards)
    assert (a._engine.routes.shard_batch if shards else a._engine.routes.chunk_batch) is not None
    values = np.arange(16, dtype="u1").reshape(4, 4)
    a[...] = values
    with a.native_handle() as h:
        np.testing.assert_array_equal(h.read((0, 0), (4, 4)), values)
        h.write((1, 1), np.full((2, 2), 9, "u1"))
    values[1:3, 1:3] = 9
    np.testing.assert_array_equal(a[...], values)


@pytest.mark.parametrize("target", ["directory", "file"])
@pytest.mark.parametrize("shards", [None, (2, 4)], ids=["chunks", "shards"])
def test_links_out_of_a_confined_store_are_refused_everywhere(tmp_path, resolver, shards, target):
    """Reads, whole and partial writes (native batches of many chunks, and read-modify-writes
    of shards) and native handle calls all refuse a key whose path leads out; nothing outside
    is read or written."""
    a = _confined_array(tmp_path, shards, shape=(4, 64), chunks=(2, 2))
    a[...] = 1
    store_dir = tmp_path / "s" / "c" / "1"
    if target == "directory":  # c/1 -> outside: every chunk of row 1
        for p in store_dir.iterdir():
            p.unlink()
        store_dir.rmdir()
        store_dir.symlink_to(tmp_path / "outside")
    else:  # c/1/0 -> a file outside
        (tmp_path / "outside" / "secret").write_bytes(b"secret")
        (store_dir / "0").unlink()
        (store_dir / "0").symlink_to(tmp_path / "outside" / "secret")
    before = {p.name: p.read_bytes() for p in (tmp_path / "outside").iterdir()}
    escapes = [
        lambda: a[2:4, :],                                          # read, native batch
        lambda: a.__setitem__((slice(2, 4), slice(None)), 5),       # native batch write
        lambda: a.__setitem__((slice(None), slice(None)), 6),       # many chunks at once
        lambda: a.__setitem__((3, 1), 7),                           # partial: read-modify-write
        lambda: a.native_handle().read((2, 0), (2, 4)),
        lambda: a.native_handle().write((2, 0), np.full((2, 4), 8, "u1")),
        lambda: a.native_handle().write((3, 1), np.full((1, 1), 8, "u1")),
    ]
    # Behind a linked directory every chunk of row 1 is outside, and threads may meet any first.
    refused_key = "c/1/0" if target == "file" else r"c/1/\d"
    for i, op in enumerate(escapes):
        with pytest.raises(OutsideStoreError, match=refused_key):
            op()
        assert {p.name: p.read_bytes() for p in (tmp_path / "outside").iterdir()} == before, i
    np.testing.assert_array_equal(a[0:2, :], 6 if shards is None else a[0:2, :])


def test_store_level_calls_refuse_links_out(tmp_path, resolver):
    store = zarrcore.LocalStore(tmp_path / "s", confined=True)
    store.set("d/a", b"1")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x").write_bytes(b"x")
    (tmp_path / "s" / "e").symlink_to(tmp_path / "outside")
    (tmp_path / "s" / "in").symlink_to("d")  # stays inside: fine
    assert store.get("in/a") == b"1" and store.exists("in/a") and store.getsize("in/a") == 1
    for op in (lambda: store.get("e/x"), lambda: store.set("e/y", b"2"),
               lambda: store.delete("e/x"), lambda: store.getsize("e/x"),
               lambda: store.exists("e/x"), lambda: store.list_dir("e"),
               lambda: store.list_prefix("e"), lambda: store.get_ranges("e/x", [(0, 1)]),
               lambda: store.rename_prefix("d", "e/d"),
               lambda: store.lock("e/x", replaced_last=True).__enter__()):
        with pytest.raises(OutsideStoreError, match="'e"):
            op()
    assert _outside_names(tmp_path) == ["x"] and store.get("d/a") == b"1"
    # Listing the root lists the link, never what lies behind it.
    assert sorted(store.list_prefix("")) == ["d/a"]


@pytest.mark.parametrize("shards", [None, (1, 8)], ids=["chunks", "shards"])
def test_swapping_a_directory_for_a_link_never_lets_a_write_out(tmp_path, resolver, shards):
    """A thread keeps swapping a chunk directory with a symlink to a directory outside while
    another writes through the confined store: nothing ever lands outside. (A check of the
    resolved path before opening it, as confined stores once did, lets writes escape here.)"""
    a = _confined_array(tmp_path, shards, shape=(4, 32), chunks=(1, 1))
    outside = tmp_path / "outside"
    c0 = tmp_path / "s" / "c" / "0"
    a[...] = 1
    stop = threading.Event()

    def swap():
        n = 0
        while not stop.is_set():
            n += 1
            for step in (lambda: os.rename(c0, c0.with_name(f"away{n}")),
                         lambda: os.symlink(outside, c0),
                         lambda: os.unlink(c0) if c0.is_symlink() else None):
                try:
                    step()
                except OSError:
                    pass

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        deadline = time.monotonic() + 1.0
        value = 0
        while time.monotonic() < deadline and not list(outside.iterdir()):
            value = value % 250 + 2
            for write in (lambda: a.__setitem__(Ellipsis, value),
                          lambda: a.__setitem__((0, slice(0, 31)), value)):
                try:
                    write()
                except (OutsideStoreError, zarrcore.errors.StoreError):
                    pass
    finally:
        stop.set()
        swapper.join()
    assert _outside_names(tmp_path) == []


@pytest.mark.parametrize("shards", [None, (2, 4)], ids=["chunks", "shards"])
def test_a_cached_handle_of_a_confined_store_still_refuses_links_out(tmp_path, resolver, shards):
    """A chunk cached by a handle's decoded-chunk cache, then replaced by a link to a file
    outside with the same bytes: the read opens the link beneath the root and refuses it, so
    the cache never answers for a key that now leads out."""
    from zarrcore.array_api import CACHE_SETTLE_SECONDS

    a = _confined_array(tmp_path, shards)
    values = np.arange(16, dtype="u1").reshape(4, 4)
    a[...] = values
    time.sleep(CACHE_SETTLE_SECONDS + 0.05)  # old enough to be cached
    h = a.native_handle(cache_bytes=1 << 16)
    for _ in range(2):
        np.testing.assert_array_equal(h.read((0, 0), (4, 4)), values)
    assert h.cache_info()["hits"] > 0
    key = tmp_path / "s" / "c" / "1" / "0"
    secret = tmp_path / "outside" / "secret"
    os.rename(key, secret)
    key.symlink_to(secret)
    with pytest.raises(OutsideStoreError, match="c/1/0"):
        h.read((2, 0), (2, 2))
    np.testing.assert_array_equal(h.read((0, 0), (2, 4)), values[:2])
