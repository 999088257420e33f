"""The public API: functions, Array and Group, as zarr-python 3 names and shapes them."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import (
    MemberNotFoundError, NodeExistsError, NodeNotFoundError, ReadOnlyError, ZarrcoreError,
)


def chunk_files(root):
    out = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f not in ("zarr.json", ".zarray", ".zgroup", ".zattrs"):
                out.add(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
    return out


# -- stores accepted by every function ----------------------------------------------------------
@pytest.mark.parametrize("kind", ["str", "pathlib", "file-url", "dict", "MemoryStore", "LocalStore",
                                  "None"])
def test_store_forms(tmp_path, kind):
    root = tmp_path / "s"
    store = {
        "str": str(root), "pathlib": root, "file-url": "file://" + str(root), "dict": {},
        "MemoryStore": zarrcore.MemoryStore(), "LocalStore": zarrcore.LocalStore(root),
        "None": None,
    }[kind]
    a = zarrcore.create_array(store, shape=(4, 5), dtype="int16", chunks=(2, 2))
    a[...] = np.arange(20).reshape(4, 5)
    np.testing.assert_array_equal(a[...], np.arange(20).reshape(4, 5))
    assert isinstance(a.store, zarrcore.Store)
    if kind in ("str", "pathlib", "file-url", "LocalStore"):
        assert (root / "zarr.json").is_file()
        assert (root / "c" / "1" / "2").is_file()
        b = zarrcore.open_array(root, mode="r")
        np.testing.assert_array_equal(b[...], np.arange(20).reshape(4, 5))
    if kind == "dict":
        # The dict is the store: reopening it sees the same array.
        np.testing.assert_array_equal(zarrcore.open_array(store)[...], np.arange(20).reshape(4, 5))
        assert "zarr.json" in store and "c/0/0" in store


def test_unsupported_store_type():
    with pytest.raises(TypeError):
        zarrcore.create_array(12345, shape=(2,), dtype="i4")


# -- Array properties -------------------------------------------------------------------------
def test_array_properties(tmp_path):
    a = zarrcore.create_array(str(tmp_path), name="grp/arr", shape=(10, 7), dtype="float32",
                              chunks=(4, 3), fill_value=2.5, attributes={"u": "K"})
    assert a.shape == (10, 7)
    assert a.dtype == np.dtype("float32")
    assert a.chunks == (4, 3)
    assert a.ndim == 2
    assert a.size == 70
    assert a.nbytes == 70 * 4
    assert a.fill_value == np.float32(2.5)
    assert dict(a.attrs) == {"u": "K"}
    assert a.path == "grp/arr"
    assert a.name == "/grp/arr"
    assert a.read_only is False
    assert a.nchunks == 3 * 3
    assert a.nchunks_initialized == 0
    assert len(a) == 10
    assert a.metadata.zarr_format == 3
    assert tuple(a.metadata.shape) == (10, 7)
    assert isinstance(a.store, zarrcore.LocalStore)
    np.testing.assert_array_equal(np.asarray(a), np.full((10, 7), 2.5, dtype="f4"))
    assert np.asarray(a, dtype="f8").dtype == np.float64
    assert "grp/arr" in repr(a) or "/grp/arr" in repr(a)


def test_zero_d_array(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(), dtype="int64", chunks=(), fill_value=-3)
    assert a.shape == () and a.ndim == 0 and a.size == 1 and a.nchunks == 1
    assert a[()] == -3 and a[...] == -3
    with pytest.raises(TypeError):
        len(a)
    a[()] = 12
    assert a[()] == 12
    assert np.asarray(a).shape == ()
    assert a.nchunks_initialized == 1
    a[...] = np.int64(-3)
    assert a.nchunks_initialized == 0


def test_empty_array(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(0, 4), dtype="u1", chunks=(2, 2))
    assert a.size == 0 and a.nchunks == 0 and len(a) == 0
    assert a[...].shape == (0, 4)
    a[...] = 1
    assert a[:, 1:].shape == (0, 3)
    assert chunk_files(tmp_path) == set()


def test_default_chunks_and_codecs(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(100, 100), dtype="f8")
    assert len(a.chunks) == 2 and all(1 <= c <= 100 for c in a.chunks)
    doc = json.loads((tmp_path / "zarr.json").read_text())
    names = [c["name"] for c in doc["codecs"]]
    assert names == ["bytes", "zstd"]
    b = zarrcore.create_array({}, shape=(4096, 4096), dtype="f8")
    # Automatic chunks stay a reasonable size (zarr-python aims at about 1 MiB).
    assert np.prod(b.chunks) * 8 <= 16 * 2 ** 20
    c = zarrcore.create_array({}, shape=(10, 10), dtype="i4", chunks=(-1, 3))
    assert c.chunks == (10, 3)
    d = zarrcore.create_array({}, shape=(10, 10), dtype="i4", chunks=4)
    assert d.chunks == (4, 4)


@pytest.mark.parametrize("kwargs", [
    {"shape": (-1, 2)},
    {"shape": (4,), "chunks": (0,)},
    {"shape": (4, 4), "chunks": (2,)},
    {"shape": (4,), "order": "K"},
    {"shape": (4,), "zarr_format": 4},
    {"shape": (4, 4), "dimension_names": ["x"]},
])
def test_create_array_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        zarrcore.create_array({}, dtype="i4", **kwargs)


def test_create_array_with_codec_json(tmp_path):
    a = zarrcore.create_array(
        str(tmp_path), shape=(8, 6), dtype=">i4", chunks=(3, 4),
        filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
        serializer={"name": "bytes", "configuration": {"endian": "big"}},
        compressors=[{"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}],
        chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}},
        dimension_names=["row", "col"],
    )
    data = np.arange(48, dtype="i4").reshape(8, 6)
    a[...] = data
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path))[...], data)
    assert chunk_files(tmp_path) == {f"{i}.{j}" for i in range(3) for j in range(2)}
    doc = json.loads((tmp_path / "zarr.json").read_text())
    assert [c["name"] for c in doc["codecs"]] == ["transpose", "bytes", "gzip", "crc32c"]
    assert doc["dimension_names"] == ["row", "col"]
    assert doc["data_type"] == "int32"


@pytest.mark.parametrize("separator", ["/", "."])
def test_chunk_key_encoding_zarr_python_form(tmp_path, separator):
    """zarr-python takes {"name": ..., "separator": ...} without a configuration level."""
    a = zarrcore.create_array(str(tmp_path), shape=(4, 4), dtype="u1", chunks=(2, 2),
                              chunk_key_encoding={"name": "default", "separator": separator})
    a[...] = 1
    assert chunk_files(tmp_path) == {separator.join(["c", str(i), str(j)])
                                     for i in range(2) for j in range(2)}


# -- modes ----------------------------------------------------------------------------------------
def _make(root, value=1):
    a = zarrcore.create_array(str(root), shape=(4,), dtype="i4", chunks=(2,), overwrite=True)
    a[...] = value
    return a


def test_mode_r(tmp_path):
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_array(str(tmp_path / "nope"), mode="r")
    with pytest.raises(FileNotFoundError):  # NodeNotFoundError is one
        zarrcore.open(str(tmp_path / "nope"), mode="r")
    _make(tmp_path)
    a = zarrcore.open_array(str(tmp_path), mode="r")
    assert a.read_only
    np.testing.assert_array_equal(a[...], [1, 1, 1, 1])
    with pytest.raises(ReadOnlyError):
        a[0] = 5
    with pytest.raises(ReadOnlyError):
        a.attrs["x"] = 1
    assert zarrcore.open_array(str(tmp_path))[0] == 1
    assert not (tmp_path / "nope").exists()


def test_mode_r_group_read_only_everywhere(tmp_path):
    g = zarrcore.open_group(str(tmp_path), mode="w")
    g.create_array("a", shape=(2,), dtype="i1", chunks=(2,))
    r = zarrcore.open_group(str(tmp_path), mode="r")
    assert r.read_only
    with pytest.raises(ReadOnlyError):
        r.create_group("b")
    with pytest.raises(ReadOnlyError):
        r.create_array("c", shape=(1,), dtype="i1")
    with pytest.raises(ReadOnlyError):
        r["a"][0] = 1
    with pytest.raises(ReadOnlyError):
        r.attrs["k"] = "v"
    assert sorted(r.keys()) == ["a"]


def test_mode_r_plus(tmp_path):
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_array(str(tmp_path / "nope"), mode="r+")
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_group(str(tmp_path / "nope"), mode="r+")
    _make(tmp_path)
    a = zarrcore.open_array(str(tmp_path), mode="r+")
    assert not a.read_only
    a[1] = 9
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path), mode="r")[...], [1, 9, 1, 1])


def test_mode_a(tmp_path):
    a = zarrcore.open_array(str(tmp_path), mode="a", shape=(3,), dtype="u2", chunks=(2,))
    a[...] = 7
    # Opening again in mode "a" keeps the existing array, whatever shape is passed.
    b = zarrcore.open_array(str(tmp_path), mode="a", shape=(3,), dtype="u2", chunks=(2,))
    np.testing.assert_array_equal(b[...], [7, 7, 7])
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_array(str(tmp_path / "other"), mode="a")
    g = zarrcore.open_group(str(tmp_path / "g"), mode="a")
    assert isinstance(g, zarrcore.Group)
    assert zarrcore.open_group(str(tmp_path / "g"), mode="a").path == g.path


def test_mode_w(tmp_path):
    _make(tmp_path, 5)
    assert len(chunk_files(tmp_path)) == 2
    a = zarrcore.open_array(str(tmp_path), mode="w", shape=(6,), dtype="f4", chunks=(3,),
                            fill_value=0.5)
    assert a.shape == (6,) and a.dtype == np.float32
    # The old chunks are gone, so nothing of the old array shows through.
    assert chunk_files(tmp_path) == set()
    np.testing.assert_array_equal(a[...], np.full(6, 0.5, dtype="f4"))
    g = zarrcore.open_group(str(tmp_path), mode="w")
    assert isinstance(g, zarrcore.Group) and list(g.keys()) == []
    assert isinstance(zarrcore.open(str(tmp_path), mode="r"), zarrcore.Group)


def test_mode_w_minus(tmp_path):
    a = zarrcore.open_array(str(tmp_path), mode="w-", shape=(2,), dtype="i4", chunks=(2,))
    a[...] = 3
    with pytest.raises(NodeExistsError):
        zarrcore.open_array(str(tmp_path), mode="w-", shape=(2,), dtype="i4", chunks=(2,))
    with pytest.raises(FileExistsError):
        zarrcore.open_group(str(tmp_path), mode="w-")
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path))[...], [3, 3])
    zarrcore.open_group(str(tmp_path / "g"), mode="w-")
    with pytest.raises(NodeExistsError):
        zarrcore.open_group(str(tmp_path / "g"), mode="w-")


@pytest.mark.parametrize("func", [zarrcore.open, zarrcore.open_array, zarrcore.open_group])
def test_invalid_mode(tmp_path, func):
    with pytest.raises(ValueError):
        func(str(tmp_path), mode="x")


def test_open_dispatch(tmp_path):
    root = str(tmp_path)
    g = zarrcore.open(root, mode="w")
    assert isinstance(g, zarrcore.Group)
    a = zarrcore.open(root, mode="a", path="sub/arr", shape=(3,), dtype="i2", chunks=(3,))
    assert isinstance(a, zarrcore.Array) and a.path == "sub/arr"
    assert isinstance(zarrcore.open(root, path="sub/arr"), zarrcore.Array)
    assert isinstance(zarrcore.open(root, path="sub"), zarrcore.Group)
    assert isinstance(zarrcore.open(root + "/sub/arr", mode="r"), zarrcore.Array)
    with pytest.raises(NodeNotFoundError):
        zarrcore.open(root, mode="r", path="missing")
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_array(root, path="sub")  # a group, not an array
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_group(root, path="sub/arr")  # an array, not a group


# -- paths, hierarchies ----------------------------------------------------------------------------
def test_path_into_hierarchy_creates_parents(tmp_path):
    a = zarrcore.create_array(str(tmp_path), name="a/b/c", shape=(2,), dtype="i1", chunks=(2,))
    a[...] = 4
    for parent in ("", "a", "a/b"):
        doc = json.loads((tmp_path / parent / "zarr.json").read_text())
        assert doc == {"zarr_format": 3, "node_type": "group", "attributes": {}} or (
            doc["node_type"] == "group" and doc["zarr_format"] == 3 and not doc.get("attributes"))
    g = zarrcore.open_group(str(tmp_path), mode="r")
    assert "a/b/c" in g
    np.testing.assert_array_equal(g["a/b/c"][...], [4, 4])
    np.testing.assert_array_equal(g["a"]["b"]["c"][...], [4, 4])
    b = zarrcore.open_array(str(tmp_path), path="a/b/c", mode="r")
    assert b.path == "a/b/c" and b.name == "/a/b/c" and b.basename == "c"
    # Paths with leading/trailing slashes mean the same node.
    assert zarrcore.open_array(str(tmp_path), path="/a/b/c/").path == "a/b/c"


def test_existing_parent_group_kept(tmp_path):
    root = zarrcore.open_group(str(tmp_path), mode="w", attributes={"keep": True})
    root.create_group("a", attributes={"also": 1})
    zarrcore.create_array(str(tmp_path), name="a/x", shape=(1,), dtype="i1", chunks=(1,))
    assert dict(zarrcore.open_group(str(tmp_path)).attrs) == {"keep": True}
    assert dict(zarrcore.open_group(str(tmp_path), path="a").attrs) == {"also": 1}


@pytest.mark.parametrize("bad", ["a/../b", "../x", "a//b", "./a", "a/./b", "a\\b"])
def test_bad_paths_rejected(tmp_path, bad):
    with pytest.raises(ZarrcoreError):
        zarrcore.create_array(str(tmp_path), name=bad, shape=(1,), dtype="i1")
    assert not (tmp_path.parent / "x").exists() and not (tmp_path.parent / "b").exists()


def test_overwrite(tmp_path):
    a = zarrcore.create_array(str(tmp_path), name="x", shape=(4,), dtype="i4", chunks=(2,))
    a[...] = 1
    with pytest.raises(NodeExistsError):
        zarrcore.create_array(str(tmp_path), name="x", shape=(4,), dtype="i4", chunks=(2,))
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path), path="x")[...], [1] * 4)
    b = zarrcore.create_array(str(tmp_path), name="x", shape=(4,), dtype="i4", chunks=(2,),
                              overwrite=True)
    assert b.nchunks_initialized == 0
    np.testing.assert_array_equal(b[...], [0] * 4)
    # A group in the way is replaced too, and so is everything below it.
    g = zarrcore.create_group(str(tmp_path), path="g")
    g.create_array("inner", shape=(1,), dtype="i1", chunks=(1,))[...] = 1
    with pytest.raises(NodeExistsError):
        zarrcore.create_array(str(tmp_path), name="g", shape=(1,), dtype="i1")
    zarrcore.create_array(str(tmp_path), name="g", shape=(1,), dtype="i1", overwrite=True)
    assert not [p for p in (tmp_path / "g").rglob("*") if p.is_file() and p.name != "zarr.json"]
    assert not (tmp_path / "g" / "inner" / "zarr.json").exists()
    assert isinstance(zarrcore.open(str(tmp_path), path="g"), zarrcore.Array)


# -- attributes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("node_kind", ["array", "group"])
def test_attrs_persist(tmp_path, node_kind):
    root = str(tmp_path)
    if node_kind == "array":
        node = zarrcore.create_array(root, name="n", shape=(1,), dtype="i1", attributes={"a": 1})
        reopen = lambda: zarrcore.open_array(root, path="n")  # noqa: E731
    else:
        node = zarrcore.create_group(root, path="n", attributes={"a": 1})
        reopen = lambda: zarrcore.open_group(root, path="n")  # noqa: E731
    assert dict(reopen().attrs) == {"a": 1}
    node.attrs["b"] = [1, 2.5, "x", None, {"deep": True}]
    assert dict(reopen().attrs) == {"a": 1, "b": [1, 2.5, "x", None, {"deep": True}]}
    node.attrs.update({"c": "see", "a": 2})
    assert dict(reopen().attrs) == {"a": 2, "b": [1, 2.5, "x", None, {"deep": True}], "c": "see"}
    del node.attrs["b"]
    assert dict(reopen().attrs) == {"a": 2, "c": "see"}
    attrs = reopen().attrs
    attrs["z"] = "ü"
    assert reopen().attrs["z"] == "ü"
    node.attrs.put({"only": 0})
    assert dict(reopen().attrs) == {"only": 0}
    assert node.attrs.asdict() == {"only": 0}
    with pytest.raises(KeyError):
        reopen().attrs["missing"]


def test_attrs_survive_data_writes(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(4,), dtype="i4", chunks=(2,),
                              attributes={"k": "v"})
    a[...] = 3
    a.attrs["n"] = 1
    a[:2] = 4
    b = zarrcore.open_array(str(tmp_path))
    assert dict(b.attrs) == {"k": "v", "n": 1}
    np.testing.assert_array_equal(b[...], [4, 4, 3, 3])


# -- creation helpers ------------------------------------------------------------------------------
def test_zeros_ones_full_empty(tmp_path):
    z = zarrcore.zeros((5, 3), chunks=(2, 2), dtype="i4")
    o = zarrcore.ones((5, 3), chunks=(2, 2), dtype="f8")
    f = zarrcore.full((5, 3), 7, chunks=(2, 2), dtype="u1")
    e = zarrcore.empty((5, 3), chunks=(2, 2), dtype="f4")
    np.testing.assert_array_equal(z[...], np.zeros((5, 3), "i4"))
    np.testing.assert_array_equal(o[...], np.ones((5, 3)))
    np.testing.assert_array_equal(f[...], np.full((5, 3), 7, "u1"))
    assert z.dtype == np.int32 and o.dtype == np.float64 and f.dtype == np.uint8
    assert e.shape == (5, 3) and e.dtype == np.float32
    for arr in (z, o, f, e):
        assert arr.nchunks_initialized == 0  # nothing is written for fill values
    nan = zarrcore.full((2,), np.nan, dtype="f8")
    assert np.isnan(nan[...]).all()
    on_disk = zarrcore.zeros((3,), store=str(tmp_path), dtype="i2")
    assert isinstance(on_disk.store, zarrcore.LocalStore)
    assert (tmp_path / "zarr.json").exists()


def test_like_functions():
    src = np.arange(12, dtype="i2").reshape(3, 4)
    z = zarrcore.zeros_like(src)
    assert z.shape == (3, 4) and z.dtype == np.int16
    np.testing.assert_array_equal(z[...], np.zeros((3, 4), "i2"))
    o = zarrcore.ones_like(src, dtype="f4")
    assert o.dtype == np.float32
    np.testing.assert_array_equal(o[...], np.ones((3, 4), "f4"))
    f = zarrcore.full_like(src, 9)
    assert f.dtype == np.int16
    np.testing.assert_array_equal(f[...], np.full((3, 4), 9, "i2"))
    e = zarrcore.empty_like(src)
    assert e.shape == (3, 4) and e.dtype == np.int16
    # From a zarrcore array: shape, dtype and chunks carry over.
    a = zarrcore.create_array({}, shape=(6, 5), dtype="u4", chunks=(4, 2))
    for like in (zarrcore.zeros_like(a), zarrcore.ones_like(a), zarrcore.empty_like(a),
                 zarrcore.full_like(a, 3)):
        assert like.shape == (6, 5) and like.dtype == np.uint32 and like.chunks == (4, 2)
    np.testing.assert_array_equal(zarrcore.full_like(a, 3)[...], np.full((6, 5), 3, "u4"))
    # Overrides win.
    b = zarrcore.zeros_like(a, chunks=(1, 1), dtype="i8")
    assert b.chunks == (1, 1) and b.dtype == np.int64


def test_array_function():
    data = np.arange(30, dtype=">f8").reshape(5, 6)
    a = zarrcore.array(data, chunks=(2, 4))
    assert a.shape == (5, 6) and a.chunks == (2, 4)
    assert a.dtype.kind == "f" and a.dtype.itemsize == 8
    np.testing.assert_array_equal(a[...], data)
    b = zarrcore.array([[1, 2], [3, 4]], dtype="u1")
    assert b.dtype == np.uint8
    np.testing.assert_array_equal(b[...], [[1, 2], [3, 4]])


# -- info, nchunks_initialized -----------------------------------------------------------------
def test_info_and_nchunks_initialized(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(10, 10), dtype="int32", chunks=(5, 5),
                              fill_value=0)
    text = str(a.info)
    assert "Array" in text and "(10, 10)" in text and "(5, 5)" in text and "int32" in text
    assert "0/4" in str(a.info_complete())
    assert a.nchunks_initialized == 0
    a[0, 0] = 1
    assert a.nchunks_initialized == 1
    a[9, 9] = 1
    assert a.nchunks_initialized == 2
    a[:, :] = 5
    assert a.nchunks_initialized == 4
    assert "4/4" in repr(a.info_complete())
    a[:5, :5] = 0
    assert a.nchunks_initialized == 3
    # Other files in the array's directory are no chunks.
    assert zarrcore.open_array(str(tmp_path)).nchunks_initialized == 3
    g = zarrcore.open_group(str(tmp_path / "g"), mode="w")
    g.create_array("x", shape=(1,), dtype="i1")
    assert "Group" in str(g.info)


def test_nchunks_initialized_ignores_children_of_groups(tmp_path):
    g = zarrcore.open_group(str(tmp_path), mode="w")
    a = g.create_array("a", shape=(4,), dtype="i1", chunks=(2,))
    a[...] = 1
    ab = g.create_array("ab", shape=(4,), dtype="i1", chunks=(2,))
    assert a.nchunks_initialized == 2
    assert ab.nchunks_initialized == 0


# -- config ---------------------------------------------------------------------------------------
def test_config_num_threads_results_match(store):
    data = np.random.default_rng(1).integers(0, 1000, size=(40, 33)).astype("i8")
    results = []
    for n in (1, 2, 5):
        zarrcore.config.set(num_threads=n)
        assert zarrcore.config.num_threads == n
        a = zarrcore.create_array(store, name=f"t{n}", shape=data.shape, dtype="i8",
                                  chunks=(7, 5))
        a[...] = data
        a[3:30:3, ::-2] = -1
        results.append(a[...])
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_a_pool_in_use_survives_a_resize():
    """A call in one thread holds the pool while another thread changes num_threads: its
    remaining work still runs (a shut-down pool would refuse it)."""
    zarrcore.config.set(num_threads=2)
    held = zarrcore.config.executor()
    zarrcore.config.set(num_threads=3)
    assert zarrcore.config.executor() is not held
    assert held.submit(lambda: 42).result(timeout=10) == 42


def test_config_rejects_bad_values():
    with pytest.raises(ValueError):
        zarrcore.config.set(num_threads=0)
    with pytest.raises(TypeError):
        zarrcore.config.set(no_such_option=1)


def test_write_empty_chunks_config(store):
    zarrcore.config.set(write_empty_chunks=True)
    a = zarrcore.create_array(store, shape=(4,), dtype="i1", chunks=(2,))
    a[...] = 0
    assert a.nchunks_initialized == 2
    np.testing.assert_array_equal(a[...], [0] * 4)
    zarrcore.config.set(write_empty_chunks=False)
    a[...] = 0
    assert a.nchunks_initialized == 0
    a[1:3] = 0  # partial writes of fill drop nothing new and store nothing
    assert a.nchunks_initialized == 0


@pytest.mark.parametrize("dtype,fill", [("f4", np.nan), ("f8", np.inf), ("c8", complex(np.nan, 1)),
                                        ("i8", -5), ("u2", 65535), ("bool", True)])
def test_all_fill_chunks_not_stored(store, dtype, fill):
    a = zarrcore.create_array(store, shape=(5, 4), dtype=dtype, chunks=(2, 3), fill_value=fill)
    a[...] = np.full((5, 4), fill, dtype=dtype)
    assert a.nchunks_initialized == 0
    a[1, 1] = 0
    assert a.nchunks_initialized == 1
    a[0:2, 0:3] = fill  # back to all fill: the chunk is deleted
    assert a.nchunks_initialized == 0
    np.testing.assert_array_equal(a[...], np.full((5, 4), fill, dtype=dtype))


def _subprocess_env(**extra):
    env = dict(os.environ)
    # The child must import the same zarrcore as this process.
    pkg_parent = str(pathlib.Path(zarrcore.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@pytest.mark.slow
def test_num_threads_env_variable():
    code = "import zarrcore; print(zarrcore.config.num_threads)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_subprocess_env(ZARRCORE_NUM_THREADS="3"), check=True)
    assert out.stdout.strip() == "3"
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_subprocess_env(ZARRCORE_NUM_THREADS="many"))
    assert bad.returncode != 0 and "ZARRCORE_NUM_THREADS" in bad.stderr


def test_io_concurrency_set_by_its_env_variable_counts_as_chosen():
    """ZARRCORE_IO_CONCURRENCY sets io_concurrency as config.set does: Config.chose tells it
    (and reads over a long round trip then keep to it)."""
    code = ("import zarrcore; c = zarrcore.config\n"
            "print(c.io_concurrency, c.chose('io_concurrency'), c.chose('num_threads'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_subprocess_env(ZARRCORE_IO_CONCURRENCY="64"), check=True)
    assert out.stdout.split() == ["64", "True", "False"]
    env = _subprocess_env()
    env.pop("ZARRCORE_IO_CONCURRENCY", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    assert out.stdout.split() == ["64", "False", "False"]


@pytest.mark.slow
def test_buffer_pool_env_variable():
    code = ("import zarrcore, numpy as np; from zarrcore._native import memory as _memory\n"
            "a = _memory.empty((1 << 20,), np.uint8); del a\n"
            "print(zarrcore.config.buffer_pool_bytes, _memory.kept_bytes())")
    for value, kept in (("0", 0), ("3000000", 1 << 20)):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=_subprocess_env(ZARRCORE_BUFFER_POOL_BYTES=value), check=True)
        assert out.stdout.split() == [value, str(kept)]
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_subprocess_env(ZARRCORE_BUFFER_POOL_BYTES="lots"))
    assert bad.returncode != 0 and "ZARRCORE_BUFFER_POOL_BYTES" in bad.stderr


# -- basic indexing against numpy ---------------------------------------------------------------
@pytest.fixture
def pair(store):
    rng = np.random.default_rng(7)
    data = rng.integers(-100, 100, size=(13, 9, 5)).astype("i4")
    a = zarrcore.create_array(store, name="x", shape=data.shape, dtype="i4", chunks=(4, 3, 2),
                              fill_value=-7)
    a[...] = data
    return a, data


SELECTIONS = [
    (), Ellipsis, 0, -1, 12, -13, (slice(None),), (1, 2, 3), (-1, -1, -1), (slice(2, 11), 4),
    (slice(None, None, -1),), (slice(None, None, 3), slice(None, None, -2), slice(1, 4)),
    (slice(-3, None), Ellipsis), (Ellipsis, 2), (3, Ellipsis, slice(0, 1)),
    (slice(100, 200),), (slice(-200, 200, 5),), (slice(5, 2),), (slice(5, 2, -1), 0, 4),
    (None, 2), (slice(1, 3), None, Ellipsis, None), (None,), (np.int64(3), np.int32(-2)),
    (slice(None, None, 7), slice(None, None, 8), slice(None, None, 9)),
    (slice(12, None, -5), slice(8, 0, -3), -1),
]


@pytest.mark.parametrize("sel", SELECTIONS, ids=[repr(s) for s in SELECTIONS])
def test_basic_read(pair, sel):
    a, data = pair
    got = a[sel]
    expected = data[sel]
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("sel", SELECTIONS, ids=[repr(s) for s in SELECTIONS])
def test_basic_write_array_and_scalar(pair, sel):
    a, data = pair
    shape = data[sel].shape
    value = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape) + 1000
    a[sel] = value
    data[sel] = value
    np.testing.assert_array_equal(a[...], data)
    a[sel] = 42  # a scalar broadcasts over the selection
    data[sel] = 42
    np.testing.assert_array_equal(a[...], data)


def test_write_broadcasts_like_numpy(pair):
    a, data = pair
    a[2:6] = np.arange(5, dtype="i4")  # (5,) over (4, 9, 5)
    data[2:6] = np.arange(5)
    a[:, 1] = np.arange(13, dtype="i4")[:, None]  # (13, 1) over (13, 5)
    data[:, 1] = np.arange(13)[:, None]
    a[0, 0, 0] = np.array([[99]])[0, 0]
    data[0, 0, 0] = 99
    a[..., 4] = np.int8(-5)  # other integer dtypes are cast as numpy casts them
    data[..., 4] = -5
    a[7] = 3.0
    data[7] = 3
    np.testing.assert_array_equal(a[...], data)


def test_float_values_cast_like_numpy(store):
    a = zarrcore.create_array(store, shape=(4,), dtype="i2", chunks=(3,))
    a[...] = np.array([1.9, -1.9, 300.0, 0.49])
    np.testing.assert_array_equal(a[...], np.array([1.9, -1.9, 300.0, 0.49]).astype("i2"))
    b = zarrcore.create_array(store, name="b", shape=(3,), dtype="f4", chunks=(2,))
    b[...] = [1, 2, 3]
    np.testing.assert_array_equal(b[...], np.array([1, 2, 3], "f4"))


@pytest.mark.parametrize("sel,value_shape", [
    ((slice(0, 4),), (3, 9, 5)), ((slice(None), 0), (9, 5)), ((0, 0), (6,)), ((0, 0, 0), (2,)),
    ((slice(0, 4),), (4, 9, 5, 1)), ((Ellipsis,), (2, 13, 9, 5)),
])
def test_wrong_shape_assignment(pair, sel, value_shape):
    a, data = pair
    with pytest.raises(ValueError):
        a[sel] = np.zeros(value_shape, dtype="i4")
    np.testing.assert_array_equal(a[...], data)  # nothing was written


@pytest.mark.parametrize("sel", [13, -14, (0, 9), (0, 0, 5), (0, 0, 0, 0), (Ellipsis, Ellipsis),
                                 (slice(None),) * 4])
def test_bad_index_raises_index_error(pair, sel):
    a, _ = pair
    with pytest.raises(IndexError):
        a[sel]
    with pytest.raises(IndexError):
        a[sel] = 1


def test_zero_step_slice_rejected(pair):
    a, _ = pair
    with pytest.raises(ValueError):
        a[::0]


def test_scalar_read_types(pair):
    a, data = pair
    v = a[1, 2, 3]
    assert np.asarray(v).shape == ()
    assert np.asarray(v).dtype == np.int32
    assert v == data[1, 2, 3]
    assert int(v) == int(data[1, 2, 3])


def test_fill_value_for_unwritten_regions(store):
    a = zarrcore.create_array(store, shape=(10, 10), dtype="f8", chunks=(3, 3), fill_value=np.nan)
    a[2:4, 2:4] = 1.0
    expected = np.full((10, 10), np.nan)
    expected[2:4, 2:4] = 1.0
    np.testing.assert_array_equal(a[...], expected)
    assert a.nchunks_initialized == 4


def test_get_basic_selection_out(pair):
    a, data = pair
    out = np.empty((4, 9, 5), dtype="i4")
    res = a.get_basic_selection((slice(2, 6),), out=out)
    assert res is out
    np.testing.assert_array_equal(out, data[2:6])


# -- Group ------------------------------------------------------------------------------------------
@pytest.fixture
def tree(store):
    g = zarrcore.group(store, attributes={"root": True})
    g.create_array("a1", shape=(3,), dtype="i4", chunks=(2,))[...] = [1, 2, 3]
    sub = g.create_group("sub", attributes={"level": 1})
    sub.create_array("a2", shape=(2, 2), dtype="f4", chunks=(1, 2))
    deep = sub.require_group("deep")
    deep.create_group("deeper")
    deep.create_array("a3", shape=(), dtype="bool", chunks=())
    return g


def test_group_members(tree):
    g = tree
    assert sorted(g.keys()) == ["a1", "sub"]
    assert sorted(g) == ["a1", "sub"]
    assert len(g) == 2
    assert [n for n, _ in g.arrays()] == ["a1"]
    assert [n for n, _ in g.groups()] == ["sub"]
    assert g.array_keys() == ["a1"] and g.group_keys() == ["sub"]
    kinds = lambda m: {p: type(n).__name__ for p, n in m}  # noqa: E731
    assert kinds(g.members()) == {"a1": "Array", "sub": "Group"}
    assert kinds(g.members(max_depth=1)) == {
        "a1": "Array", "sub": "Group", "sub/a2": "Array", "sub/deep": "Group"}
    every = {"a1": "Array", "sub": "Group", "sub/a2": "Array", "sub/deep": "Group",
             "sub/deep/deeper": "Group", "sub/deep/a3": "Array"}
    assert kinds(g.members(max_depth=None)) == every
    assert kinds(g.members(max_depth=10)) == every
    with pytest.raises(ValueError):
        list(g.members(max_depth=-1))
    # Paths of members are their paths in the store.
    for path, node in g.members(max_depth=None):
        assert node.path == path


def test_group_getitem_and_contains(tree):
    g = tree
    assert isinstance(g["sub"], zarrcore.Group)
    assert isinstance(g["sub/deep/a3"], zarrcore.Array)
    assert g["sub"]["deep"]["a3"].path == "sub/deep/a3"
    assert g["sub/deep"].name == "/sub/deep"
    np.testing.assert_array_equal(g["a1"][...], [1, 2, 3])
    for name in ("a1", "sub", "sub/a2", "sub/deep/deeper"):
        assert name in g
    for name in ("nope", "sub/nope", "a1/x", "", "../a1"):
        assert name not in g
    with pytest.raises(KeyError):
        g["nope"]
    with pytest.raises(MemberNotFoundError):
        g["sub/nope"]
    assert g.get("nope") is None
    assert g.get("sub/a2").shape == (2, 2)
    assert dict(g.attrs) == {"root": True}
    assert dict(g["sub"].attrs) == {"level": 1}


def test_group_require(tree):
    g = tree
    sub = g.require_group("sub")
    assert dict(sub.attrs) == {"level": 1}  # the existing group, untouched
    new = g.require_group("brand/new")
    assert "brand" in g and "brand/new" in g and new.path == "brand/new"
    with pytest.raises((NodeExistsError, TypeError)):
        g.require_group("a1")  # an array is in the way
    with pytest.raises(NodeExistsError):
        g.create_group("sub")
    with pytest.raises(NodeExistsError):
        g.create_array("a1", shape=(1,), dtype="i1")
    g.create_group("sub", overwrite=True)
    assert "sub/a2" not in g


def test_group_tree_text(tree):
    text = tree.tree()
    lines = text.splitlines()
    assert lines[0].strip() in ("/", "")
    body = "\n".join(lines[1:])
    for name in ("a1", "sub", "a2", "deep", "deeper", "a3"):
        assert name in body
    assert "(3,)" in body and "int32" in body


def test_group_delete_member(tree):
    g = tree
    del g["sub/deep"]
    assert "sub/deep" not in g and "sub/deep/a3" not in g
    assert "sub/a2" in g
    with pytest.raises(KeyError):
        del g["sub/deep"]


def test_group_functions(tmp_path):
    g = zarrcore.group(str(tmp_path), attributes={"a": 1})
    assert isinstance(g, zarrcore.Group) and g.path == ""
    # group() without overwrite opens what is there.
    assert dict(zarrcore.group(str(tmp_path)).attrs) == {"a": 1}
    g.create_array("x", shape=(1,), dtype="i1")
    g2 = zarrcore.group(str(tmp_path), overwrite=True)
    assert list(g2.keys()) == []
    zarrcore.create_group(str(tmp_path), path="p/q", attributes={"b": 2})
    assert dict(zarrcore.open_group(str(tmp_path), path="p/q", mode="r").attrs) == {"b": 2}
    assert isinstance(zarrcore.open_group(str(tmp_path), path="p", mode="r"), zarrcore.Group)
    with pytest.raises(NodeExistsError):
        zarrcore.create_group(str(tmp_path), path="p/q")


def test_group_create_array_kwargs(tmp_path):
    g = zarrcore.open_group(str(tmp_path), mode="w")
    a = g.create_array("nested/arr", shape=(4, 4), dtype="u2", chunks=(2, 2), fill_value=9,
                       attributes={"u": 1}, dimension_names=("y", "x"))
    assert a.path == "nested/arr" and a.fill_value == 9
    assert isinstance(g["nested"], zarrcore.Group)
    assert g["nested/arr"].metadata.dimension_names == ("y", "x")
    again = g.require_array("nested/arr", shape=(4, 4), dtype="u2")
    assert again.path == "nested/arr" and again.fill_value == 9


def test_v2_group_and_array_via_api(tmp_path):
    g = zarrcore.open_group(str(tmp_path), mode="w", zarr_format=2, attributes={"v": 2})
    a = g.create_array("x", shape=(5,), dtype="<i4", chunks=(2,))
    a[...] = np.arange(5)
    assert (tmp_path / ".zgroup").is_file() and (tmp_path / "x" / ".zarray").is_file()
    h = zarrcore.open_group(str(tmp_path), mode="r")
    assert h.zarr_format == 2 and dict(h.attrs) == {"v": 2}
    np.testing.assert_array_equal(h["x"][...], np.arange(5))
    assert h["x"].zarr_format == 2


def test_stray_files_and_dirs_are_not_members(tmp_path):
    g = zarrcore.open_group(str(tmp_path), mode="w")
    g.create_array("a", shape=(2,), dtype="i1", chunks=(1,))[...] = 1
    (tmp_path / "README.txt").write_text("not a node")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x01")
    (tmp_path / "plain_dir" / "inner").mkdir(parents=True)
    (tmp_path / "plain_dir" / "inner" / "file").write_bytes(b"x")
    g = zarrcore.open_group(str(tmp_path), mode="r")
    assert sorted(g.keys()) == ["a"]
    assert [p for p, _ in g.members(max_depth=None)] == ["a"]
    assert "README.txt" not in g and "plain_dir" not in g
    assert g.tree().count("\n") == 1
    assert g["a"].nchunks_initialized == 2


def test_empty_group_tree(tmp_path):
    g = zarrcore.open_group(str(tmp_path), mode="w")
    assert g.tree().strip().splitlines() == [g.tree().strip().splitlines()[0]]
    assert list(g.members(max_depth=None)) == [] and len(g) == 0


def test_default_chunks_are_zarr_pythons_guess():
    # zarr-python 3's guess (its _guess_chunks, after h5py): the target is 256 KiB *
    # 2**log10(MiB of the array) within 128 KiB..64 MiB, reached by halving axes in turn.
    assert zarrcore.create_array({}, shape=(4096, 4096), dtype="f8").chunks == (256, 512)
    assert zarrcore.create_array({}, shape=(100, 100), dtype="f8").chunks == (100, 100)
    assert zarrcore.create_array({}, shape=(10 ** 9,), dtype="u1").chunks == (1953125,)
    assert zarrcore.create_array({}, shape=(48, 256, 256), dtype="f4").chunks == (12, 128, 128)
    zarr = pytest.importorskip("zarr", reason="the comparison with zarr-python needs it")
    for shape, dtype in [((4096, 4096), "f8"), ((7, 1000, 33), "i2"), ((10 ** 7,), "c16")]:
        ours = zarrcore.create_array({}, shape=shape, dtype=dtype).chunks
        assert ours == zarr.create_array({}, shape=shape, dtype=dtype).chunks


def test_setting_shape_resizes_as_in_zarr_python():
    a = zarrcore.create_array({}, shape=(4, 4), chunks=(2, 2), dtype="i4", fill_value=0)
    a[...] = 7
    a.shape = (2, 6)
    assert a.shape == (2, 6)
    np.testing.assert_array_equal(a[...], [[7, 7, 7, 7, 0, 0]] * 2)


def test_info_reads_no_listing_and_info_complete_does(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(10, 10), dtype="int32", chunks=(5, 5))
    a[...] = 1
    listed = []
    real = type(a.store).list_prefix

    def counting(self, prefix):
        listed.append(prefix)
        return real(self, prefix)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(a.store), "list_prefix", counting)
        text = repr(a.info)
        assert listed == [] and "(10, 10)" in text and "Chunks initialized" not in text
        assert "nchunks_initialized" not in a.info.to_dict()
        assert "4/4" in repr(a.info_complete()) and listed


def test_opening_with_the_other_zarr_format_says_which_is_there(tmp_path):
    zarrcore.create_array(str(tmp_path / "v2"), shape=(3,), dtype="i1", zarr_format=2)
    zarrcore.open_group(str(tmp_path / "v3"), mode="w", zarr_format=3)
    with pytest.raises(NodeNotFoundError, match="a format 2 array is there"):
        zarrcore.open_array(str(tmp_path / "v2"), mode="r", zarr_format=3)
    with pytest.raises(NodeNotFoundError, match="a format 3 group is there"):
        zarrcore.open_group(str(tmp_path / "v3"), mode="r", zarr_format=2)
    with pytest.raises(NodeNotFoundError, match="no array or group at path"):
        zarrcore.open_array(str(tmp_path / "none"), mode="r", zarr_format=3)


@pytest.mark.slow
def test_an_unbuilt_source_tree_says_to_build(tmp_path):
    package = os.path.dirname(zarrcore.__file__)
    shutil.copytree(package, tmp_path / "zarrcore",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    run = subprocess.run([sys.executable, "-c", "import zarrcore"], cwd=tmp_path, text=True,
                         capture_output=True, env={**os.environ, "PYTHONPATH": str(tmp_path)},
                         timeout=120)
    assert run.returncode == 1
    assert "ImportError: zarrcore's compiled extensions are not built" in run.stderr
    assert "build_ext --inplace" in run.stderr and "circular" not in run.stderr


# -- zarr-python's zarr.api modules -------------------------------------------------------------
def test_zarr_api_modules_are_there_after_import_zarrcore():
    """`import zarrcore as zarr` alone gives zarr.api.asynchronous and zarr.api.synchronous,
    as `import zarr` does."""
    code = ("import zarrcore as zarr; "
            "print(zarr.api.asynchronous.open_array.__name__, zarr.api.synchronous.save)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert done.stdout.startswith("open_array <function save")


def test_zarr_api_asynchronous_is_zarrcore_asynchronous(tmp_path):
    import asyncio

    import zarrcore.api.asynchronous as zaa
    from zarrcore.api.synchronous import open_array

    path = str(tmp_path / "a")
    zarrcore.create_array(path, shape=(4,), dtype="i4")[...] = np.arange(4)

    async def read():
        a = await zarrcore.api.asynchronous.open_array(path, mode="r")
        return await a.getitem(slice(1, 3))

    np.testing.assert_array_equal(asyncio.run(read()), [1, 2])
    assert {n: getattr(zaa, n) for n in zarrcore.asynchronous.__all__} == {
        n: getattr(zarrcore.asynchronous, n) for n in zarrcore.asynchronous.__all__}
    assert open_array is zarrcore.open_array is zarrcore.api.open_array
