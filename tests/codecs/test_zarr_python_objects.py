"""zarr-python's objects wherever zarr-python takes them: its codec objects (zarr.codecs.*,
zarr.codecs.numcodecs.*) and numcodecs' as the filters, serializer and compressors of new
arrays, stored as zarr-python stores them."""
import json
import warnings

import numpy as np
import pytest

import zarrcore
from peers import peer  # noqa: F401 (a fixture)

from zarrcore import errors
from zarrcore.errors import UnknownCodecError, UnknownCodecObjectError

zarr = pytest.importorskip("zarr", reason="zarr-python's codec objects come from zarr")
numcodecs = pytest.importorskip(
    "numcodecs", reason="numcodecs' codec objects come with zarr-python (the test extra)")
import zarr.codecs as zc  # noqa: E402
import zarr.codecs.numcodecs as zn  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    # zarr.codecs.numcodecs warns that its codecs are not in the v3 specification.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# (dtype, create_array keywords), each with zarr-python's codec objects
V3_CASES = {
    "blosc_tuned_i4": ("i4", lambda: dict(compressors=zc.BloscCodec())),
    "blosc_tuned_u1": ("u1", lambda: dict(compressors=zc.BloscCodec())),
    "blosc_given": ("i4", lambda: dict(
        compressors=zc.BloscCodec(typesize=2, shuffle="noshuffle", cname="lz4"))),
    "bytes_u1": ("u1", lambda: dict(serializer=zc.BytesCodec())),
    "zstd_crc32c": ("i4", lambda: dict(compressors=[zc.ZstdCodec(level=3), zc.Crc32cCodec()])),
    "gzip": ("i4", lambda: dict(compressors=zc.GzipCodec(level=2))),
    "transpose": ("i4", lambda: dict(filters=zc.TransposeCodec(order=(1, 0)))),
    "sharding": ("i4", lambda: dict(
        serializer=zc.ShardingCodec(chunk_shape=(2, 2), codecs=[zc.BytesCodec(),
                                                                 zc.BloscCodec()]),
        compressors=None)),
    "numcodecs_zlib": ("i4", lambda: dict(compressors=zn.Zlib(level=3))),
    "numcodecs_delta": ("i4", lambda: dict(filters=zn.Delta(dtype="i4"))),
    "numcodecs_shuffle": ("f4", lambda: dict(compressors=zn.Shuffle())),
    "numcodecs_fixedscaleoffset": ("f8", lambda: dict(
        filters=zn.FixedScaleOffset(scale=10, offset=1))),
}


@pytest.mark.parametrize("case", sorted(V3_CASES))
def test_zarr_python_codec_objects_store_as_zarr_python_stores_them(case, tmp_path):
    dtype, kwargs = V3_CASES[case]
    common = dict(shape=(6, 4), chunks=(4, 2), dtype=dtype)
    theirs = zarr.create_array({}, **common, **kwargs()).metadata.to_dict()["codecs"]
    store = str(tmp_path)
    ours = zarrcore.create_array(store, **common, **kwargs())
    assert ours.metadata.to_json()["codecs"] == json.loads(json.dumps(theirs))
    data = (np.arange(24) % 7).reshape(6, 4).astype(dtype)
    ours[...] = data
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], data)


def test_group_create_array_and_create_take_codec_objects():
    group = zarrcore.group({})
    a = group.create_array("a", shape=(8,), chunks=(4,), dtype="i2",
                           compressors=zc.BloscCodec(cname="zlib"))
    assert a.metadata.to_json()["codecs"][1]["configuration"] == {
        "typesize": 2, "cname": "zlib", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}
    b = zarrcore.create(shape=(8,), chunks=(4,), dtype="i2",
                        codecs=[zc.BytesCodec(), zc.BloscCodec()])
    assert b.metadata.to_json()["codecs"][1]["configuration"]["typesize"] == 2


def test_numcodecs_objects_in_v3_are_their_zarr_codecs_numcodecs_form(tmp_path):
    store = str(tmp_path)
    a = zarrcore.create_array(store, shape=(8,), chunks=(4,), dtype="i4",
                              filters=[numcodecs.Delta(dtype="<i4")],
                              compressors=numcodecs.Zlib(level=2))
    assert a.metadata.to_json()["codecs"] == [
        {"name": "numcodecs.delta", "configuration": {"dtype": "<i4", "astype": "<i4"}},
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "numcodecs.zlib", "configuration": {"level": 2}},
    ]
    a[...] = np.arange(8)
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], np.arange(8))


@pytest.mark.parametrize("compressor, stored", [
    (lambda: zc.BloscCodec(cname="lz4", shuffle="shuffle"),
     {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}),
    (lambda: zc.ZstdCodec(level=2), {"id": "zstd", "level": 2}),
    (lambda: zc.GzipCodec(level=4), {"id": "gzip", "level": 4}),
    (lambda: zn.Zlib(level=1), {"id": "zlib", "level": 1}),
])
def test_zarr_python_codec_objects_in_format_2(compressor, stored, tmp_path):
    store = str(tmp_path)
    a = zarrcore.create_array(store, shape=(8,), chunks=(4,), dtype="<i4", zarr_format=2,
                              filters=[zn.Delta(dtype="<i4")], compressors=compressor())
    meta = json.loads((tmp_path / ".zarray").read_text())
    assert meta["compressor"] == stored
    assert meta["filters"] == [{"id": "delta", "dtype": "<i4", "astype": "<i4"}]
    a[...] = np.arange(8)
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], np.arange(8))


@pytest.mark.parametrize("stage, zarr_format", [
    ("filters", 3), ("serializer", 3), ("compressors", 3), ("filters", 2), ("compressors", 2)])
def test_an_unknown_object_says_what_to_pass(stage, zarr_format):
    named = stage.rstrip("s")  # format 2's messages name its one "compressor"
    with pytest.raises(UnknownCodecObjectError, match=f"{named}.*zarr.codecs") as e:
        zarrcore.create_array({}, shape=(4,), dtype="i4", zarr_format=zarr_format,
                              **{stage: object()})
    # zarr-python raises a TypeError; zarrcore's codec errors are ValueErrors.
    assert isinstance(e.value, TypeError) and isinstance(e.value, UnknownCodecError)


# -- zarr-python 3.4's names and error kinds ---------------------------------------------------

def _hierarchy(root):
    group = zarrcore.open_group(str(root), mode="w")
    group.create_array("arr", shape=(8,), chunks=(2,), dtype="i4", fill_value=3)
    group.create_group("sub/inner")
    return group


def test_get_array_and_get_group_raise_as_zarr_3_4(tmp_path):
    group = _hierarchy(tmp_path)
    assert group.get_array("arr").shape == (8,)
    assert group.get_group("sub/inner").path == "sub/inner"
    for call, error in [(lambda: group.get_array("nope"), errors.ArrayNotFoundError),
                        (lambda: group.get_group("nope"), errors.GroupNotFoundError),
                        (lambda: group.get_array("sub"), errors.ContainsGroupError),
                        (lambda: group.get_group("arr"), errors.ContainsArrayError)]:
        with pytest.raises(error) as e:
            call()
        assert isinstance(e.value, ValueError)  # as every zarr.errors.BaseZarrError


def test_nodes_in_the_way_raise_contains_errors(tmp_path):
    group = _hierarchy(tmp_path)
    with pytest.raises(errors.ContainsArrayError):
        group.create_group("arr")
    with pytest.raises(errors.ContainsGroupError):
        zarrcore.create_array(str(tmp_path / "sub"), shape=(2,), dtype="i4")
    with pytest.raises(errors.ContainsArrayError) as e:
        group.require_group("arr")
    assert isinstance(e.value, TypeError)  # zarr 3.4's
    with pytest.raises(errors.ContainsGroupError) as e:
        group.require_array("sub", shape=(1,))
    assert isinstance(e.value, TypeError)
    with pytest.raises(errors.ArrayNotFoundError):  # zarr 3.4: a ValueError
        zarrcore.open_array(str(tmp_path / "sub"), mode="r")
    with pytest.raises(errors.GroupNotFoundError):  # zarr 3.4: ContainsArrayError
        zarrcore.open_group(str(tmp_path / "arr"), mode="r")
    assert issubclass(errors.UnsafeCodecError, ValueError)  # PickleCodecDisabledError


def test_read_missing_chunks_false_names_the_chunks_not_stored(tmp_path):
    _hierarchy(tmp_path)
    path = str(tmp_path / "arr")
    zarrcore.open_array(path)[0:3] = 1
    with zarrcore.config.set({"array.read_missing_chunks": False}):
        np.testing.assert_array_equal(zarrcore.open_array(path)[0:4], [1, 1, 1, 3])
        with pytest.raises(errors.ChunkNotFoundError, match="'c/2', 'c/3'"):
            zarrcore.open_array(path)[:]
    strict = zarrcore.open_array(path, config={"read_missing_chunks": False})
    assert strict.config["read_missing_chunks"] is False
    with pytest.raises(errors.ChunkNotFoundError, match="1 chunk"):
        strict.oindex[[1, 5]]
    with pytest.raises(ValueError):
        strict.vindex[[6]]
    assert zarrcore.open_array(path)[7] == 3  # the default fills


def test_read_missing_chunks_applies_to_shards_not_inner_chunks():
    a = zarrcore.create_array({}, shape=(8,), chunks=(2,), shards=(4,), dtype="i4",
                              fill_value=3, config={"read_missing_chunks": False})
    a[0] = 1
    np.testing.assert_array_equal(a[0:4], [1, 3, 3, 3])  # a missing inner chunk fills
    with pytest.raises(errors.ChunkNotFoundError, match="'c/1'"):
        a[4:]


def test_allow_unsafe_pickle_decode_is_allow_pickle():
    with zarrcore.config.set({"array.allow_unsafe_pickle_decode": True}):
        assert zarrcore.config.allow_pickle is True
    assert zarrcore.config.get("array.allow_unsafe_pickle_decode") is False


@pytest.mark.parametrize("shape, chunks, shards, read, write", [
    ((100, 80), (30, 40), None, ((30, 30, 30, 10), (40, 40)), ((30, 30, 30, 10), (40, 40))),
    ((35,), (10,), (20,), ((10, 10, 10, 5),), ((20, 15),)),
    ((0, 3), (2, 2), None, ((), (2, 1)), ((), (2, 1))),
])
def test_read_and_write_chunk_sizes(shape, chunks, shards, read, write):
    a = zarrcore.create_array({}, shape=shape, chunks=chunks, shards=shards, dtype="i1")
    assert (a.read_chunk_sizes, a.write_chunk_sizes) == (read, write)


# The same calls on zarr-python 3.4 (in the peer interpreter) and on zarrcore, given as `lib`.
CALLS = """
def calls(lib, root):
    group = lib.open_group(root, mode="w")
    group.create_array("arr", shape=(8,), chunks=(2,), shards=(4,), dtype="i4", fill_value=3)
    group.create_group("sub")
    lib.open_array(root + "/arr")[0:1] = 1
    strict = lib.open_array(root + "/arr", config={"read_missing_chunks": False})
    return {
        "get_array missing": lambda: group.get_array("nope"),
        "get_array on a group": lambda: group.get_array("sub"),
        "get_group missing": lambda: group.get_group("nope"),
        "get_group on an array": lambda: group.get_group("arr"),
        "create_array over an array": lambda: group.create_array("arr", shape=(2,), dtype="i4"),
        "create_group over a group": lambda: group.create_group("sub"),
        "open_array on a group": lambda: lib.open_array(root + "/sub", mode="r"),
        "open_group on an array": lambda: lib.open_group(root + "/arr", mode="r"),
        "missing inner chunk": lambda: strict[0:4].tolist(),
        "missing shard": lambda: strict[:].tolist(),
        "chunk sizes": lambda: [strict.read_chunk_sizes, strict.write_chunk_sizes],
        "chunk sizes, no items and 0-d": lambda: [
            [a.read_chunk_sizes, a.write_chunk_sizes]
            for a in (lib.create_array({}, shape=(0, 5), chunks=(4, 3), dtype="i4"),
                      lib.create_array({}, shape=(), dtype="i4"))],
        "get_array nested missing": lambda: group.get_array("sub/nope"),
        "get_array ''": lambda: group.get_array(""),
        "get_group ''": lambda: group.get_group("").path,
        "get_group 'sub/'": lambda: group.get_group("sub/").path,
        "require_group on an array": lambda: group.require_group("arr"),
        "require_array on a group": lambda: group.require_array("sub", shape=(1,)),
        "shards auto": lambda: auto_shards(lib, None),
        "shards auto, target_shard_size_bytes": lambda: auto_shards(lib, 100_000),
        "default_zarr_format 2": lambda: default_format_2(lib, root),
        "json_indent": lambda: indented(lib, root),
    }


def auto_shards(lib, target):
    with lib.config.set({"array.target_shard_size_bytes": target}):
        return [[list(a.chunks), list(a.shards)] for a in (
            lib.create_array({}, shape=shape, chunks=chunks, shards="auto", dtype="i4")
            for shape, chunks in [((1000, 1000), (50, 50)), ((1000, 1000), "auto"),
                                  ((100, 10), (10, 5)), ((120, 10), (50, 5)),
                                  ((0, 5), (4, 3)), ((10**7,), (1,))])]


def default_format_2(lib, root):
    with lib.config.set({"default_zarr_format": 2}):
        return [node.metadata.zarr_format for node in (
            lib.create_array({}, shape=(3,), dtype="i4", zarr_format=None),
            lib.create_array({}, shape=(3,), dtype="i4"), lib.zeros((3,)),
            lib.open_array(root + "/v", mode="w", shape=(3,)), lib.group(),
            lib.create_group({}), lib.open_group(root + "/g", mode="w"))]


def indented(lib, root):
    out = []
    for indent in (0, 4):
        with lib.config.set({"json_indent": indent}):
            lib.create_group(root + f"/indent{indent}", attributes={"a": [1]})
        with open(f"{root}/indent{indent}/zarr.json") as f:
            out.append(f.read())
    return out


BUILTINS = (ValueError, TypeError, KeyError, IndexError, FileNotFoundError, FileExistsError)


def outcomes(lib, root):
    out = {}
    for name, call in calls(lib, root).items():
        try:
            out[name] = ["value", json.loads(json.dumps(call()))]
        except Exception as e:
            out[name] = [type(e).__name__, [b.__name__ for b in BUILTINS if isinstance(e, b)]]
    return out
"""


# What zarr-python 3.4.2 gives for auto_shards (below) without and with a target size.
AUTO_SHARDS_3_4 = {
    None: [[[50, 50], [100, 100]], [[250, 500], [250, 500]], [[10, 5], [20, 5]],
           [[50, 5], [50, 5]], [[4, 3], [4, 3]], [[1], [2]]],
    100_000: [[[50, 50], [150, 150]], [[250, 500], [250, 500]], [[10, 5], [20, 10]],
              [[50, 5], [100, 10]], [[4, 3], [4, 3]], [[1], [25000]]],
}


def test_config_keys_of_zarr_3_4(tmp_path):
    """default_zarr_format, array.target_shard_size_bytes (shards="auto") and json_indent
    mean what they mean in zarr-python 3.4 (checked against it by the test below)."""
    scope = {"json": json}
    exec(CALLS, scope)
    for target, want in AUTO_SHARDS_3_4.items():
        assert scope["auto_shards"](zarrcore, target) == want
    # create_array takes 3 unless told, as zarr-python 3.4's
    assert scope["default_format_2"](zarrcore, str(tmp_path)) == [2, 3, 2, 2, 2, 2, 2]
    assert zarrcore.zeros((3,)).metadata.zarr_format == 3
    flat, wide = scope["indented"](zarrcore, str(tmp_path))
    assert flat.startswith('{\n"attributes"') and wide.startswith('{\n    "attributes"')
    with zarrcore.config.set(target_shard_size_bytes=10**9):  # no loop over 10**8 sizes
        with pytest.raises(errors.MetadataError, match="max_shard_index_entries"):
            zarrcore.create_array({}, shape=(10**8,), chunks=(1,), shards="auto", dtype="i1")
    for key, bad in [("default_zarr_format", 4), ("json_indent", -1),
                     ("array.target_shard_size_bytes", 0)]:
        with pytest.raises(ValueError):
            zarrcore.config.set({key: bad})


@pytest.mark.slow  # another interpreter
def test_zarr_3_4_raises_the_same_kinds_of_errors(peer, tmp_path):  # noqa: F811
    theirs = peer.run("import json, zarr\n" + CALLS + "result = outcomes(zarr, payload)",
                      str(tmp_path / "theirs"))
    scope = {"json": json}
    exec(CALLS, scope)
    ours = scope["outcomes"](zarrcore, str(tmp_path / "ours"))
    assert ours.keys() == theirs.keys()
    for name, (kind, detail) in theirs.items():
        if kind == "value":
            assert ours[name] == [kind, detail], name
        else:  # ours is each builtin theirs is, and has the same name but where noted
            assert set(detail) <= set(ours[name][1]), (name, theirs[name], ours[name])
            assert OUR_NAMES.get(name, kind) == ours[name][0], (name, kind, ours[name])


# Where zarrcore's error has another name than zarr 3.4's (NodeTypeValidationError,
# ContainsArrayError): a subclass of the error it raised before (NodeNotFoundError), also the
# builtin zarr's is.
OUR_NAMES = {"open_array on a group": "ArrayNotFoundError",
             "open_group on an array": "GroupNotFoundError",
             "require_group on an array": "IncompatibleArrayError",
             "require_array on a group": "IncompatibleGroupError"}
