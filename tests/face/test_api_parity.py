"""zarr-python 3.1's API where zarrcore had none: config.set with a dict and as a context
manager, numpy's copy=False, field names, codec properties, update_attributes, and Group's
__setitem__, move, nmembers, array_values/group_values, require_groups, require_array checks
and array shortcuts."""
import json
import os

import numpy as np
import pytest

import zarrcore
from zarrcore import config
from zarrcore.errors import MemberNotFoundError, NodeExistsError, SelectionError


def test_config_set_takes_a_dict_and_restores_as_a_context_manager():
    before = (config.write_empty_chunks, config.num_threads)
    with config.set({"array.write_empty_chunks": not before[0]}, num_threads=1) as c:
        assert c is config
        assert (config.write_empty_chunks, config.num_threads) == (not before[0], 1)
        assert config.get("threading.max_workers") == 1
    assert (config.write_empty_chunks, config.num_threads) == before


def test_config_set_changes_nothing_when_one_option_is_bad():
    threads = config.num_threads
    with pytest.raises(ValueError, match="io_timeout"):
        config.set(num_threads=threads + 1, io_timeout=-1)
    with pytest.raises(TypeError, match="bogus"):
        config.set({"num_threads": threads + 1, "bogus": 1})
    assert config.num_threads == threads
    with pytest.raises(KeyError):
        config.get("bogus")


def test_array_copy_false_raises_as_numpy_2_requires():
    a = zarrcore.create_array({}, shape=(3,), dtype="i4")
    with pytest.raises(ValueError, match="copy=False"):
        a.__array__(copy=False)  # numpy 2's protocol, whichever numpy is here
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # numpy < 2's asarray has no copy
        with pytest.raises(ValueError, match="copy=False"):
            np.asarray(a, copy=False)
    np.testing.assert_array_equal(np.asarray(a), [0, 0, 0])
    np.testing.assert_array_equal(np.array(a, dtype="f8"), [0.0, 0.0, 0.0])


def test_field_names_need_a_structured_array():
    a = zarrcore.create_array({}, shape=(3,), dtype="i4")
    with pytest.raises(SelectionError, match="no field 'x'.*not a structured"):
        a["x"]
    with pytest.raises(SelectionError, match="no field"):
        a["x"] = 1
    s = zarrcore.create_array({}, shape=(2,), dtype=[("x", "i4"), ("y", "f4")])
    s["x"] = [1, 2]
    np.testing.assert_array_equal(s["x"], [1, 2])
    with pytest.raises(SelectionError, match="no field 'z'"):
        s[["x", "z"]]


def _as_json(codecs):
    return json.loads(json.dumps([c.to_json() for c in codecs]))


def _their_json(codecs):
    return json.loads(json.dumps([c.to_dict() for c in codecs]))


@pytest.mark.parametrize("kwargs", [
    dict(zarr_format=3),
    dict(zarr_format=3, shards=(4,), chunks=(2,)),
    dict(zarr_format=3, compressors=None, filters=None),
    dict(zarr_format=3, filters=[{"name": "transpose", "configuration": {"order": [0]}}],
         compressors=[{"name": "gzip", "configuration": {"level": 2}}]),
])
def test_codec_properties_match_zarr_python_v3(kwargs):
    zarr = pytest.importorskip("zarr")

    kwargs.setdefault("chunks", (4,))
    theirs = zarr.create_array({}, shape=(8,), dtype="i4", **kwargs)
    ours = zarrcore.create_array({}, shape=(8,), dtype="i4", **kwargs)
    assert _as_json(ours.filters) == _their_json(theirs.filters)
    assert _as_json([ours.serializer]) == _their_json([theirs.serializer])
    assert _as_json(ours.compressors) == _their_json(theirs.compressors)


def test_codec_properties_v2():
    import numcodecs
    zarr = pytest.importorskip("zarr")

    kwargs = dict(shape=(8,), dtype="i4", chunks=(4,), zarr_format=2)
    theirs = zarr.create_array({}, filters=[numcodecs.Delta("<i4")], compressors=numcodecs.Zlib(3),
                               **kwargs)
    ours = zarrcore.create_array({}, filters=[{"id": "delta", "dtype": "<i4"}],
                                 compressors={"id": "zlib", "level": 3}, **kwargs)
    assert ours.serializer is None and theirs.serializer is None
    assert [c.to_v2_json() for c in ours.filters] == [c.get_config() for c in theirs.filters]
    assert [c.to_v2_json() for c in ours.compressors] == [c.get_config() for c in theirs.compressors]


def test_update_attributes(tmp_path):
    a = zarrcore.create_array(tmp_path, shape=(2,), dtype="u1", attributes={"a": 1})
    assert a.update_attributes({"b": 2}) is a
    assert dict(zarrcore.open_array(tmp_path).attrs) == {"a": 1, "b": 2}


@pytest.fixture(params=["local", "memory"])
def group(request, tmp_path):
    store = tmp_path / "g.zarr" if request.param == "local" else {}
    return zarrcore.open_group(store, mode="w")


def test_group_setitem_stores_and_replaces(group):
    group["x"] = np.arange(5)
    np.testing.assert_array_equal(group["x"][:], np.arange(5))
    group["x"] = np.ones((2, 2), dtype="f4")
    assert group["x"].shape == (2, 2) and group["x"].dtype == np.float32


def test_group_shortcuts_and_counts(group):
    group.zeros(name="z", shape=(3,))
    group.ones(name="o", shape=(2,), dtype="i2")
    group.full(name="f", shape=(2,), fill_value=7)
    group.empty(name="e", shape=(1,))
    group.array("d", data=[1, 2])
    np.testing.assert_array_equal(group["o"][:], [1, 1])
    np.testing.assert_array_equal(group["f"][:], [7, 7])
    np.testing.assert_array_equal(group["d"][:], [1, 2])
    a, b = group.require_groups("a", "b")
    a.create_array("inner", shape=(1,), dtype="u1")
    assert group.nmembers() == 7 and group.nmembers(max_depth=None) == 8
    assert sorted(x.basename for x in group.array_values()) == ["d", "e", "f", "o", "z"]
    assert sorted(x.basename for x in group.group_values()) == ["a", "b"]
    assert group.require_groups("a")[0].name == a.name


def test_require_array_checks_shape_and_dtype(group):
    group.create_array("z", shape=(3,), dtype="f8")
    with pytest.raises(TypeError, match="shape"):
        group.require_array("z", shape=(4,))
    with pytest.raises(TypeError, match="does not cast safely"):
        group.require_array("z", shape=(3,), dtype="i1")
    with pytest.raises(TypeError, match="is not"):
        group.require_array("z", shape=(3,), dtype="f4", exact=True)
    assert group.require_array("z", shape=3, dtype="f8", exact=True).shape == (3,)
    assert group.require_array("new", shape=(2,), dtype="u1").dtype == np.uint8


def test_move(group):
    group.create_array("x", shape=(3,), dtype="i4")[:] = [1, 2, 3]
    group.create_group("sub").create_array("y", shape=(1,), dtype="u1")
    group.move("x", "deep/er/x2")
    group.move("sub", "sub2")
    assert sorted(group.keys()) == ["deep", "sub2"]
    np.testing.assert_array_equal(group["deep/er/x2"][:], [1, 2, 3])
    assert group["sub2/y"].shape == (1,)
    with pytest.raises(NodeExistsError):
        group.move("sub2", "deep")
    with pytest.raises(MemberNotFoundError):
        group.move("nothing", "there")
    with pytest.raises(ValueError, match="into itself"):
        group.move("sub2", "sub2/inside")


# -- top-level functions -----------------------------------------------------------------------

def test_create_array_with_data():
    a = zarrcore.create_array({}, data=np.arange(6).reshape(2, 3), chunks=(1, 3))
    assert a.dtype == np.int64 and a.chunks == (1, 3)
    np.testing.assert_array_equal(a[...], np.arange(6).reshape(2, 3))
    b = zarrcore.create_array({}, data=np.arange(6), write_data=False, fill_value=9)
    np.testing.assert_array_equal(b[...], np.full(6, 9))
    with pytest.raises(ValueError, match="either data"):
        zarrcore.create_array({}, data=[1], shape=(1,))
    with pytest.raises(TypeError, match="shape"):
        zarrcore.create_array({})


def test_from_array_keeps_the_source_settings():
    src = zarrcore.create_array({}, shape=(10, 6), chunks=(4, 3), shards=(8, 6), dtype="i2",
                                fill_value=3, attributes={"a": 1}, dimension_names=["x", "y"],
                                compressors=[{"name": "gzip", "configuration": {"level": 1}}])
    src[:] = np.arange(60).reshape(10, 6)
    dst = zarrcore.from_array({}, data=src)
    assert (dst.chunks, dst.shards, dst.fill_value) == ((4, 3), (8, 6), 3)
    assert dict(dst.attrs) == {"a": 1} and dst.metadata.dimension_names == ("x", "y")
    assert [c.to_json() for c in dst.compressors] == [c.to_json() for c in src.compressors]
    np.testing.assert_array_equal(dst[...], src[...])
    other = zarrcore.from_array({}, data=src, chunks=(5, 6), shards=None, write_data=False)
    assert (other.chunks, other.shards, other.nchunks_initialized) == ((5, 6), None, 0)
    v2 = zarrcore.from_array({}, data=src, zarr_format=2)
    assert v2.zarr_format == 2 and v2.chunks == (4, 3)
    np.testing.assert_array_equal(v2[...], src[...])
    plain = zarrcore.from_array({}, data=np.ones((3, 3)), chunks=(2, 2))
    assert plain.chunks == (2, 2) and plain[...].sum() == 9


def test_save_and_load(tmp_path):
    zarrcore.save(tmp_path / "one", np.arange(3))
    np.testing.assert_array_equal(zarrcore.load(tmp_path / "one"), np.arange(3))
    zarrcore.save(tmp_path / "many", np.arange(3), b=np.ones(2))
    loaded = zarrcore.load(tmp_path / "many")
    assert sorted(loaded) == ["arr_0", "b"] and len(loaded) == 2
    np.testing.assert_array_equal(loaded["b"], np.ones(2))
    with pytest.raises(KeyError):
        loaded["nothing"]
    zarrcore.save_array(tmp_path / "one", np.zeros(2), zarr_format=2)  # replaces
    assert zarrcore.open_array(tmp_path / "one").zarr_format == 2
    with pytest.raises(ValueError):
        zarrcore.save_group(tmp_path / "none")
    zarr = pytest.importorskip("zarr")

    np.testing.assert_array_equal(zarr.open_array(tmp_path / "many", path="arr_0")[:], np.arange(3))


def test_open_like_tree_and_copies(tmp_path):
    src = zarrcore.create_array({}, shape=(4,), chunks=(2,), dtype="u2", fill_value=5)
    like = zarrcore.open_like(src, tmp_path / "like")
    assert (like.shape, like.dtype, like.chunks, like.fill_value) == ((4,), np.uint16, (2,), 5)
    g = zarrcore.open_group(tmp_path / "g", mode="w")
    g["x"] = np.arange(3)
    g.create_group("sub")["y"] = np.ones(2)
    assert zarrcore.tree(g) == g.tree()
    dest = zarrcore.open_group(tmp_path / "d", mode="w")
    copied, skipped, nbytes = zarrcore.copy_all(g, dest)
    assert copied >= 4 and skipped == 0 and nbytes > 0
    np.testing.assert_array_equal(dest["sub/y"][:], np.ones(2))
    with pytest.raises(NodeExistsError):
        zarrcore.copy_store(g.store, dest.store, "x", "x")
    zarrcore.copy_store(g.store, dest.store, "x", "x", if_exists="replace")


def test_create_hierarchy_from_zarr_python_metadata(tmp_path):
    zarr = pytest.importorskip("zarr")

    metadata = {"": zarr.create_group({}, attributes={"r": 1}).metadata,
                "a/b": zarr.create_array({}, shape=(2,), dtype="i4").metadata,
                "v2": zarr.create_array({}, shape=(3,), dtype="f4", zarr_format=2).metadata}
    made = dict(zarrcore.create_hierarchy(store=tmp_path, nodes=metadata))
    assert sorted(made) == ["", "a/b", "v2"]
    root = zarr.open_group(tmp_path, mode="r")
    assert root.attrs["r"] == 1 and root["a/b"].shape == (2,)
    assert zarr.open_array(tmp_path / "v2", mode="r").metadata.zarr_format == 2
    with pytest.raises(NodeExistsError):
        list(zarrcore.create_hierarchy(store=tmp_path, nodes={"a/b": metadata["a/b"]}))


def _listing(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root)
                  for f in files if not f.startswith(".zarrcore"))


def _outcome(open_fn, root, mode, kwargs):
    try:
        node = open_fn(root, mode=mode, **kwargs)
    except Exception as e:  # the two libraries' error classes differ; that one is raised counts
        return "error", _listing(root)
    return ("array" if hasattr(node, "shape") else "group"), _listing(root)


@pytest.mark.parametrize("function", ["open", "open+shape", "open_array", "open_group"])
def test_open_modes_match_zarr_python(tmp_path, function):
    """Every mode over nothing, an array and a group: the same node kind or error kind as
    zarr-python, and the same files afterwards. One deliberate difference: open(mode="w-")
    over nothing creates a group, as mode "w" does, where zarr-python raises a TypeError
    asking for a shape."""
    import shutil
    import warnings

    zarr = pytest.importorskip("zarr")

    kwargs = dict(shape=(4,), dtype="i4") if function in ("open+shape", "open_array") else {}
    name = function.split("+")[0]
    for existing in ("nothing", "array", "group"):
        for mode in ("r", "r+", "a", "w", "w-"):
            outcomes = []
            for lib in (zarr, zarrcore):
                root = tmp_path / lib.__name__
                shutil.rmtree(root, ignore_errors=True)
                if existing == "array":
                    zarr.create_array(root, shape=(4,), chunks=(2,), dtype="i4")[:] = 1
                elif existing == "group":
                    zarr.open_group(root, mode="w").create_array("m", shape=(2,), dtype="i4")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    outcomes.append(_outcome(getattr(lib, name), root, mode, kwargs))
            if (function, existing, mode) == ("open", "nothing", "w-"):
                assert outcomes[0][0] == "error" and outcomes[1] == ("group", ["zarr.json"])
                continue
            assert outcomes[0] == outcomes[1], (function, existing, mode)


def test_a_missing_directory_is_named(tmp_path):
    missing = tmp_path / "no" / "such.zarr"
    for open_fn in (zarrcore.open_array, zarrcore.open_group, zarrcore.open):
        with pytest.raises(zarrcore.errors.NodeNotFoundError, match="directory .*such.zarr' does not exist"):
            open_fn(missing, mode="r")
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("layout", [dict(chunks=(4,)), dict(chunks=(2,), shards=(4,))])
@pytest.mark.parametrize("where", ["local", "memory"])
def test_per_array_write_empty_chunks_as_zarr_python(tmp_path, layout, where):
    """config={"write_empty_chunks": ...} and with_config decide for one array, whatever
    zarrcore.config says; zarr-python given the same config stores the same keys."""
    zarr = pytest.importorskip("zarr")

    def stored(store):
        keys = store.keys() if isinstance(store, dict) else (
            os.path.relpath(os.path.join(d, f), store) for d, _, fs in os.walk(store) for f in fs)
        return sorted(k for k in keys if k.startswith("c") and not os.path.basename(k).startswith("."))

    stores = [{}, {}] if where == "memory" else [str(tmp_path / "ours"), str(tmp_path / "theirs")]
    ours = zarrcore.create_array(stores[0], shape=(16,), dtype="i4", **layout,
                                 config={"write_empty_chunks": True})
    theirs = zarr.create_array(stores[1], shape=(16,), dtype="i4", **layout,
                               config={"write_empty_chunks": True})
    with config.set(write_empty_chunks=False):
        ours[:] = 0
        ours[1:3] = 0  # a partial write: read-modify-write of one chunk
    theirs[:] = 0
    assert stored(stores[0]) == stored(stores[1]) != []
    quiet = ours.with_config({"write_empty_chunks": False})
    assert ours.config == {"write_empty_chunks": True, "order": "C"}
    quiet[:] = 0
    assert stored(stores[0]) == []
    import pickle

    assert pickle.loads(pickle.dumps(ours)).config == {"write_empty_chunks": True, "order": "C"}
    with pytest.raises(TypeError, match="unknown array config"):
        ours.with_config({"bogus": 1})
