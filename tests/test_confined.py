"""Symlinks in a directory store: followed by default (stores often link data elsewhere), and
refused, with an OutsideStoreError naming the key, in a confined store when they lead out."""
import numpy as np
import pytest

import zarrcore
from zarrcore.errors import OutsideStoreError


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
