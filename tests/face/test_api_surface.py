"""zarrcore's public names against zarr-python's: `zarr` vs `zarrcore`, `zarr.Array` vs
`zarrcore.Array`, `zarr.Group` vs `zarrcore.Group`. Every zarr-python name is either in
zarrcore or in an allow-list below that says why not; then the names zarrcore added to close
the gaps, each against zarr-python."""
import json
import warnings

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import NodeExistsError, NodeNotFoundError, ReadOnlyError

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")

# zarr-python's public names that zarrcore deliberately has not.
MODULE_ALLOWED = {
    # zarr-python's packages for extending it (codec and store base classes, registries);
    # zarrcore's are zarrcore.codecs, zarrcore.metadata and zarrcore.storage.
    "abc", "core", "registry",
    # zarr-python's data type classes; zarrcore takes them as `dtype`, and its own are in
    # zarrcore.metadata.
    "dtype",
    # zarr-python's logging controls: zarrcore does not log (errors are raised).
    "set_format", "set_log_level",
    # Modules and names zarr-python's __init__ happens to import.
    "Literal", "functools", "logging",
    # zarr-python's test helpers (strategies, store tests), a name once something imports it.
    "testing",
}
ARRAY_ALLOWED = {
    # zarr-python's StorePath object; zarrcore's arrays have `store` and `path`.
    "store_path",
    # Builds an Array object from a metadata dict and a StorePath without writing it;
    # zarrcore.Array(store, path, metadata) does that from zarrcore's metadata objects.
    "from_dict",
}
GROUP_ALLOWED = {
    "store_path",  # as for Array
    # zarr 2's synchronizer (always None in zarr-python 3): zarrcore's stores lock themselves.
    "synchronizer",
    # (AsyncGroup.update_attributes, on `g.async_group`, is the asyncio spelling)
    "update_attributes_async",
}


def _public(obj):
    # Identifiers only: pytest's assertion rewriting leaves "@py_..." names in modules.
    return {name for name in dir(obj) if not name.startswith("_") and name.isidentifier()}


def test_zarr_api_synchronous_has_zarr_pythons_functions():
    """(zarr.api.asynchronous's are checked by test_async_names_against_zarr_python.)"""
    import zarr.api.synchronous as theirs

    assert set(theirs.__all__) - _public(zarrcore.api.synchronous) == set()


@pytest.mark.parametrize("theirs, ours, allowed", [
    (zarr, zarrcore, MODULE_ALLOWED), (zarr.Array, zarrcore.Array, ARRAY_ALLOWED),
    (zarr.Group, zarrcore.Group, GROUP_ALLOWED)], ids=["module", "Array", "Group"])
def test_public_names(theirs, ours, allowed):
    missing = _public(theirs) - _public(ours)
    assert missing <= allowed, f"zarr-python has {sorted(missing - allowed)}, zarrcore not"
    stale = allowed & _public(ours)
    assert not stale, f"allowed as missing but present: {sorted(stale)}"


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def _doc(store, fmt):
    return json.loads(store[".zarray" if fmt == 2 else "zarr.json"])


def _zarr_doc(array):
    import asyncio

    from zarr.core.buffer import default_buffer_prototype

    key = ".zarray" if array.metadata.zarr_format == 2 else "zarr.json"
    buffer = asyncio.run(array.store.get(key, prototype=default_buffer_prototype()))
    return json.loads(buffer.to_bytes())


CREATE_CASES = {
    "default": dict(),
    "v2": dict(zarr_format=2),
    "v2_version": dict(zarr_version=2),
    "v2_codecs": dict(zarr_format=2, compressor=numcodecs.Zlib(2), filters=[numcodecs.Delta("<i4")],
                      order="F", dimension_separator="/", fill_value=3),
    "v2_no_compressor": dict(zarr_format=2, compressor=None),
    "v2_object_codec": dict(zarr_format=2, dtype=str, object_codec=numcodecs.VLenUTF8()),
    "v3_codecs": dict(codecs=[{"name": "bytes", "configuration": {"endian": "big"}},
                              {"name": "gzip", "configuration": {"level": 3}}]),
    "v3_key_encoding": dict(chunk_key_encoding=("v2", "."), dimension_names=["x", "y"]),
    "chunks_false": dict(chunks=False),
    "chunks_true": dict(chunks=True),
    "chunk_shape": dict(chunk_shape=(3, 4)),
    "attributes": dict(attributes={"a": 1}),
}


@pytest.mark.parametrize("case", sorted(CREATE_CASES))
def test_create_as_zarr_python(case):
    kwargs = {"dtype": "i4", **CREATE_CASES[case]}
    fmt = kwargs.get("zarr_format") or kwargs.get("zarr_version") or 3
    theirs = _quiet(lambda: zarr.create((10, 8), store={}, **kwargs))
    store = {}
    ours = zarrcore.create((10, 8), store=store, **kwargs)
    assert _doc(store, fmt) == _zarr_doc(theirs)
    assert ours.order == theirs.order and ours.dtype == theirs.dtype


def test_create_refuses_what_zarr_python_refuses():
    for kwargs in (dict(compressor=numcodecs.Zlib(1)), dict(dimension_separator="."),
                   dict(zarr_format=2, codecs=[{"name": "bytes"}])):
        with pytest.raises(ValueError):
            _quiet(lambda: zarr.create((4,), store={}, **kwargs))
        with pytest.raises(ValueError):
            zarrcore.create((4,), store={}, **kwargs)
    with pytest.raises(TypeError, match="bogus"):
        zarrcore.create((4,), bogus=1)
    with pytest.raises(NotImplementedError):
        zarrcore.create((4,), chunk_store={})


def test_create_config_and_read_only():
    a = zarrcore.create((4,), store={}, write_empty_chunks=True, read_only=True)
    assert a.config["write_empty_chunks"] is True
    with pytest.raises(ReadOnlyError):
        a[:] = 1


def test_print_debug_info(capsys):
    zarrcore.print_debug_info()
    out = capsys.readouterr().out
    assert f"zarrcore: {zarrcore.__version__}" in out and f"numpy: {np.__version__}" in out


def test_array_compressor_open_create(tmp_path):
    v2 = zarrcore.create_array(tmp_path / "v2", shape=(4,), dtype="i4", zarr_format=2,
                               compressors=numcodecs.Zlib(3))
    theirs = _quiet(lambda: zarr.open_array(tmp_path / "v2"))
    assert v2.compressor.to_v2_json() == _quiet(lambda: theirs.compressor).get_config()
    assert zarrcore.create_array({}, shape=(2,), dtype="i1", zarr_format=2, compressors=None).compressor is None
    v3 = zarrcore.create_array(tmp_path / "v3", shape=(4,), dtype="i4")
    with pytest.raises(TypeError, match="compressors"):
        v3.compressor
    with pytest.raises(TypeError, match="compressor"):
        _quiet(lambda: zarr.open_array(tmp_path / "v3").compressor)

    opened = zarrcore.Array.open(str(tmp_path / "v2"))
    assert isinstance(opened, zarrcore.Array) and opened.zarr_format == 2
    with pytest.raises(NodeNotFoundError):
        zarrcore.Array.open(str(tmp_path / "missing"))
    with pytest.warns(DeprecationWarning):
        made = zarrcore.Array.create({}, shape=(6,), dtype="u2", chunk_shape=(3,))
    assert made.chunks == (3,) and made.dtype == np.uint16


def test_group_open_from_store_create(tmp_path):
    g = zarrcore.Group.from_store(str(tmp_path / "g"), attributes={"a": 1}, zarr_format=2)
    assert g.zarr_format == 2 and g.attrs["a"] == 1
    with pytest.raises(NodeExistsError):
        zarrcore.Group.from_store(str(tmp_path / "g"))
    assert zarrcore.Group.from_store(str(tmp_path / "g"), overwrite=True).zarr_format == 3
    theirs = _quiet(lambda: zarr.Group.from_store(str(tmp_path / "t"), attributes={"a": 1}))
    assert zarrcore.Group.open(str(tmp_path / "t")).attrs["a"] == theirs.attrs["a"]
    with pytest.raises(NodeNotFoundError):
        zarrcore.Group.open(str(tmp_path / "none"))

    g = zarrcore.Group.open(str(tmp_path / "g"))
    a = g.create("x", shape=(4,), dtype="i2")
    assert a.path == "x" and g["x"].dtype == np.int16
    with pytest.warns(DeprecationWarning):
        d = g.create_dataset("d", shape=(3,), dtype="f4")
    with pytest.warns(DeprecationWarning):
        assert g.require_dataset("d", shape=(3,), dtype="f4").path == d.path
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError):
        g.require_dataset("d", shape=(5,), dtype="f4")


def test_group_like_functions_as_zarr_python():
    model = zarrcore.create_array({}, shape=(5, 4), chunks=(2, 2), dtype="i2", fill_value=7)
    ours = zarrcore.create_group({})
    theirs = _quiet(lambda: zarr.create_group({}))
    source = np.arange(20, dtype="i2").reshape(5, 4)
    for method in ("zeros_like", "ones_like", "empty_like", "full_like"):
        kwargs = {"fill_value": 3} if method == "full_like" else {}
        a = getattr(ours, method)(name=method, data=source, **kwargs)
        b = _quiet(lambda: getattr(theirs, method)(name=method, data=source, **kwargs))
        assert (a.shape, a.dtype, a.path) == (b.shape, b.dtype, b.path)
        if method != "empty_like":
            np.testing.assert_array_equal(a[:], b[:])
    kept = ours.full_like(name="kept", data=model)
    assert kept.fill_value == 7 and kept.chunks == (2, 2)


def test_group_like_functions_take_the_groups_format_over_the_models():
    model = zarrcore.create_array({}, shape=(3,), dtype="u1", zarr_format=3)
    v2 = zarrcore.create_group({}, zarr_format=2)
    for method in ("zeros_like", "ones_like", "empty_like", "full_like"):
        kwargs = {"fill_value": 5} if method == "full_like" else {}
        made = getattr(v2, method)(name=method, data=model, **kwargs)
        assert made.zarr_format == 2, method
    assert v2.zeros_like(name="v3", data=model, zarr_format=3).zarr_format == 3
    np.testing.assert_array_equal(v2["ones_like"][:], np.ones(3, "u1"))
    v2["set"] = np.arange(3, dtype="i2")
    v2.array("cast", data=np.arange(3), dtype="f4")
    assert (v2["set"].zarr_format, v2["set"].dtype, v2["cast"].dtype) == (2, "i2", "f4")
    np.testing.assert_array_equal(v2["cast"][:], np.arange(3, dtype="f4"))


def test_group_create_hierarchy_info_complete_update_attributes():
    from zarrcore.metadata import GroupMetadataV3

    root = zarrcore.create_group({})
    sub = root.create_group("sub")
    array_meta = zarrcore.create_array({}, shape=(3,), dtype="u1").metadata
    made = dict(sub.create_hierarchy({"a/b": GroupMetadataV3(), "a/b/c": array_meta}))
    assert sorted(made) == ["a/b", "a/b/c"]
    assert root["sub/a/b/c"].shape == (3,) and isinstance(root["sub/a/b"], zarrcore.Group)
    info = root.info_complete()
    assert "Members (all depths) : 4" in info and "Arrays : 1" in info and "Groups : 3" in info
    assert sub.update_attributes({"k": [1, 2]}) is sub
    assert zarrcore.open_group(sub.store, path="sub").attrs["k"] == [1, 2]
