"""Consolidated metadata (v2 `.zmetadata`, v3 inline in the root zarr.json), both ways with
zarr-python, and the promise that a consolidated hierarchy opens without per-node reads."""
import json

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import MemberNotFoundError, MetadataError

zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

DEPTH = 6
TREE = ["a", "a/x", "b", *("/".join(["deep"] * i) for i in range(1, DEPTH + 1)),
        "/".join(["deep"] * DEPTH) + "/leaf"]


class CountingStore(zarrcore.LocalStore):
    """A LocalStore that records every key it reads or probes and every listing."""

    def __init__(self, root):
        super().__init__(root)
        self.calls = []

    def get(self, key, start=None, stop=None):
        self.calls.append(("get", key))
        return super().get(key, start, stop)

    def get_ranges(self, key, ranges):
        self.calls.append(("get", key))
        return super().get_ranges(key, ranges)

    def exists(self, key):
        self.calls.append(("exists", key))
        return super().exists(key)

    def list_dir(self, prefix):
        self.calls.append(("list_dir", prefix))
        return super().list_dir(prefix)

    def list_prefix(self, prefix):
        self.calls.append(("list_prefix", prefix))
        return super().list_prefix(prefix)


def build_with_zarr(path, fmt):
    root = zarr.open_group(str(path), mode="w", zarr_format=fmt, attributes={"level": 0})
    root.create_group("b", attributes={"name": "b"})
    a = root.create_group("a")
    x = a.create_array("x", shape=(4, 3), chunks=(2, 2), dtype="<i4", attributes={"units": "m"})
    x[...] = np.arange(12).reshape(4, 3)
    g = root
    for _ in range(DEPTH):
        g = g.create_group("deep")
    g.create_array("leaf", shape=(5,), dtype="<f8", fill_value=1.5)
    zarr.consolidate_metadata(str(path))


def build_with_zarrcore(path, fmt):
    root = zarrcore.group(str(path), zarr_format=fmt, attributes={"level": 0})
    root.create_group("b", attributes={"name": "b"})
    x = root.create_array("a/x", shape=(4, 3), chunks=(2, 2), dtype="<i4", attributes={"units": "m"})
    x[...] = np.arange(12).reshape(4, 3)
    root.create_array("/".join(["deep"] * DEPTH) + "/leaf", shape=(5,), dtype="<f8", fill_value=1.5)
    return zarrcore.consolidate_metadata(str(path))


def check_tree(group, members):
    assert group.attrs["level"] == 0
    assert sorted(members) == sorted(TREE)
    assert group["b"].attrs["name"] == "b"
    x = group["a/x"]
    assert x.attrs["units"] == "m"
    np.testing.assert_array_equal(x[...], np.arange(12).reshape(4, 3))
    np.testing.assert_array_equal(group["/".join(["deep"] * DEPTH) + "/leaf"][...], np.full(5, 1.5))


@pytest.mark.parametrize("fmt", [2, 3])
def test_zarr_python_consolidated_opens_without_node_reads(tmp_path, fmt):
    build_with_zarr(tmp_path, fmt)
    store = CountingStore(tmp_path)
    g = zarrcore.open_group(store, mode="r")
    members = [name for name, _ in g.members(max_depth=None)]
    deep = g["/".join(["deep"] * DEPTH)]
    assert deep["leaf"].shape == (5,) and "leaf" in deep and "nope" not in deep
    # One read: the root's zarr.json (v3), or a probe for it and then .zmetadata (v2).
    expected = [("get", "zarr.json"), ("get", ".zmetadata")] if fmt == 2 else [("get", "zarr.json")]
    assert store.calls == expected
    check_tree(g, members)
    # Reading data needs no metadata either: only chunk keys are fetched.
    assert not any(c[1].rpartition("/")[2] in (".zarray", ".zgroup", ".zattrs", "zarr.json")
                   for c in store.calls[len(expected):])


@pytest.mark.parametrize("fmt", [2, 3])
def test_open_consolidated_and_entry_points(tmp_path, fmt):
    build_with_zarr(tmp_path, fmt)
    for node in (zarrcore.open_consolidated(str(tmp_path)), zarrcore.open(str(tmp_path), mode="r"),
                 zarrcore.open_group(str(tmp_path), use_consolidated=True, zarr_format=fmt)):
        assert node.zarr_format == fmt
        check_tree(node, [name for name, _ in node.members(max_depth=None)])


@pytest.mark.parametrize("fmt", [2, 3])
def test_zarrcore_consolidated_read_by_zarr_python(tmp_path, fmt):
    g = build_with_zarrcore(tmp_path, fmt)
    check_tree(g, [name for name, _ in g.members(max_depth=None)])
    # Remove every per-node document, so zarr-python can only succeed from the consolidated one.
    for f in tmp_path.rglob("*"):
        if f.is_file() and f.name in (".zarray", ".zgroup", ".zattrs", "zarr.json") and f.parent != tmp_path:
            f.unlink()
    z = zarr.open_consolidated(str(tmp_path), zarr_format=fmt)
    assert sorted(k for k, _ in z.members(max_depth=None)) == sorted(TREE)
    assert z.attrs["level"] == 0 and z["b"].attrs["name"] == "b" and z["a/x"].attrs["units"] == "m"
    np.testing.assert_array_equal(z["a/x"][...], np.arange(12).reshape(4, 3))
    np.testing.assert_array_equal(z["/".join(["deep"] * DEPTH) + "/leaf"][...], np.full(5, 1.5))
    # and zarrcore, from the consolidated document alone, too
    check_tree(zarrcore.open_consolidated(str(tmp_path)),
               [n for n, _ in zarrcore.open_consolidated(str(tmp_path)).members(max_depth=None)])


def test_layouts_match_zarr_python(tmp_path):
    build_with_zarr(tmp_path / "peer2", 2)
    build_with_zarrcore(tmp_path / "ours2", 2)
    peer = json.loads((tmp_path / "peer2" / ".zmetadata").read_text())
    ours = json.loads((tmp_path / "ours2" / ".zmetadata").read_text())
    assert ours["zarr_consolidated_format"] == 1
    documents = {k for k in peer["metadata"] if not k.endswith(".zattrs")}
    assert documents == {k for k in ours["metadata"] if not k.endswith(".zattrs")}
    assert ours["metadata"]["a/x/.zattrs"] == {"units": "m"}

    build_with_zarr(tmp_path / "peer3", 3)
    build_with_zarrcore(tmp_path / "ours3", 3)
    peer = json.loads((tmp_path / "peer3" / "zarr.json").read_text())["consolidated_metadata"]
    ours = json.loads((tmp_path / "ours3" / "zarr.json").read_text())["consolidated_metadata"]
    assert (ours["kind"], ours["must_understand"]) == ("inline", False)
    assert set(ours["metadata"]) == set(peer["metadata"]) == set(TREE)
    assert ours["metadata"]["b"]["consolidated_metadata"] == peer["metadata"]["b"]["consolidated_metadata"]


@pytest.mark.parametrize("fmt", [2, 3])
def test_use_consolidated_modes(tmp_path, fmt):
    build_with_zarrcore(tmp_path, fmt)
    zarrcore.open_group(str(tmp_path)).create_group("late")  # after consolidating
    assert "late" not in zarrcore.open_group(str(tmp_path), mode="r")
    with pytest.raises(MemberNotFoundError):
        zarrcore.open_group(str(tmp_path), mode="r")["late"]
    assert "late" in zarrcore.open_group(str(tmp_path), mode="r", use_consolidated=False)
    zarrcore.consolidate_metadata(str(tmp_path))
    assert "late" in zarrcore.open_group(str(tmp_path), mode="r")
    # Creating through a consolidated group switches it to the store.
    g = zarrcore.open_group(str(tmp_path))
    g.create_group("later")
    assert "later" in g and "later" in g.keys()


@pytest.mark.parametrize("fmt", [2, 3])
def test_use_consolidated_true_requires_it(tmp_path, fmt):
    zarrcore.group(str(tmp_path), zarr_format=fmt).create_group("g")
    with pytest.raises(MetadataError, match="consolidated"):
        zarrcore.open_group(str(tmp_path), use_consolidated=True)
    with pytest.raises(MetadataError):
        zarrcore.open_consolidated(str(tmp_path))
    assert "g" in zarrcore.open_group(str(tmp_path), mode="r")


def test_consolidate_a_subgroup(tmp_path):
    build_with_zarrcore(tmp_path, 2)
    zarrcore.consolidate_metadata(str(tmp_path), path="deep/deep")
    sub = json.loads((tmp_path / "deep" / "deep" / ".zmetadata").read_text())["metadata"]
    assert ".zgroup" in sub and "deep/deep/deep/deep/leaf/.zarray" in sub
    g = zarrcore.open_consolidated(str(tmp_path), path="deep/deep")
    assert [n for n, _ in g.members(max_depth=None)][-1] == "deep/deep/deep/deep/leaf"


@pytest.mark.parametrize("doc", [
    {"metadata": {".zgroup": {"zarr_format": 2}}, "zarr_consolidated_format": 2},
    {"metadata": [], "zarr_consolidated_format": 1},
    {"metadata": {".zgroup": {"zarr_format": 2}, "../x/.zarray": {}}, "zarr_consolidated_format": 1},
])
def test_invalid_zmetadata(tmp_path, doc):
    zarrcore.group(str(tmp_path), zarr_format=2)
    (tmp_path / ".zmetadata").write_text(json.dumps(doc))
    with pytest.raises(MetadataError, match=".zmetadata"):
        zarrcore.open_group(str(tmp_path))


def test_invalid_inline_v3(tmp_path):
    zarrcore.group(str(tmp_path), zarr_format=3)
    doc = json.loads((tmp_path / "zarr.json").read_text())
    doc["consolidated_metadata"] = {"kind": "elsewhere", "metadata": {}}
    (tmp_path / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(MetadataError, match="consolidated_metadata"):
        zarrcore.open_group(str(tmp_path))
    assert zarrcore.open_group(str(tmp_path), use_consolidated=False).zarr_format == 3
