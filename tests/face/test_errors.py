"""Corrupt chunks and malformed metadata raise ZarrcoreError subclasses that name the key or
field: never a crash, never silently wrong data.

The corrupt reads run in this process on purpose: a segfault in the compiled core kills the
test run, and that is the failure signal.
"""
import builtins
import glob
import json
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.errors import (
    ChecksumError, ChunkDecodeError, MetadataError, NodeNotFoundError, UnknownCodecError,
    UnknownDataTypeError, ZarrcoreError,
)

numcodecs = pytest.importorskip("numcodecs")

SHAPE, CHUNKS = (6, 5), (4, 3)
CHUNK_NBYTES = 4 * 3 * 4  # int32

CHAINS = {
    "bytes": dict(compressors=None),
    "bytes-be": dict(serializer={"name": "bytes", "configuration": {"endian": "big"}},
                     compressors=None),
    "zstd": dict(compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
    "zstd-checksum": dict(compressors=[{"name": "zstd",
                                        "configuration": {"level": 1, "checksum": True}}]),
    "gzip": dict(compressors=[{"name": "gzip", "configuration": {"level": 1}}]),
    "blosc-lz4": dict(compressors=[{"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle"}}]),
    "blosc-zstd-bitshuffle": dict(compressors=[{"name": "blosc", "configuration": {
        "cname": "zstd", "clevel": 5, "shuffle": "bitshuffle"}}]),
    "crc32c": dict(compressors=[{"name": "crc32c"}]),
    "zstd-crc32c": dict(compressors=[{"name": "zstd", "configuration": {"level": 1}},
                                     {"name": "crc32c"}]),
    "transpose-zstd": dict(filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
                           compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
    "transpose-gzip-crc32c": dict(
        filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
        compressors=[{"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}]),
}


def _crc(data):
    import crc32c

    return crc32c.crc32c(data).to_bytes(4, "little")


def _encode_like(chain, raw):
    """Encode `raw` bytes with the chain's compressors, as a valid but wrong-sized chunk."""
    out = raw
    for c in CHAINS[chain].get("compressors") or []:
        name, cfg = c["name"], c.get("configuration", {})
        if name == "zstd":
            out = numcodecs.Zstd(level=cfg["level"], checksum=cfg.get("checksum", False)).encode(out)
        elif name == "gzip":
            out = numcodecs.GZip(level=cfg["level"]).encode(out)
        elif name == "blosc":
            shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[cfg["shuffle"]]
            out = numcodecs.Blosc(cname=cfg["cname"], clevel=cfg["clevel"],
                                  shuffle=shuffle, typesize=4).encode(out)
        elif name == "crc32c":
            out = bytes(out) + _crc(bytes(out))
    return bytes(out)


def _corruptions(chain, good):
    rng = np.random.default_rng(1)
    return {
        "empty": b"",
        "one-byte": good[:1],
        "truncated-half": good[: len(good) // 2],
        "truncated-last-byte": good[:-1],
        "garbage": rng.integers(0, 256, size=len(good), dtype=np.uint8).tobytes(),
        "garbage-long": rng.integers(0, 256, size=10_000, dtype=np.uint8).tobytes(),
        "oversized": _encode_like(chain, bytes(range(256)) * 4),
        "oversized-by-one-element": _encode_like(chain, bytes(CHUNK_NBYTES + 4)),
        "undersized": _encode_like(chain, bytes(CHUNK_NBYTES - 4)),
        "appended": good + b"\x00" * 8,
    }


CORRUPTIONS = list(_corruptions("bytes", bytes(CHUNK_NBYTES)))

# Corruptions a chain cannot detect by design, so reading them is no error:
UNDETECTABLE = {
    # random bytes of the right length are valid raw int32 data;
    ("bytes", "garbage"), ("bytes-be", "garbage"),
    # gzip allows zero padding after a member, a blosc frame states its own length, and a
    # zstd decoder may stop at the end of its frame.
    ("gzip", "appended"), ("blosc-lz4", "appended"), ("blosc-zstd-bitshuffle", "appended"),
    ("transpose-zstd", "appended"), ("zstd", "appended"), ("zstd-checksum", "appended"),
}


def _corrupt_params():
    out = []
    for kind in ("local", "memory"):
        for chain in CHAINS:
            for corruption in CORRUPTIONS:
                if (chain, corruption) in UNDETECTABLE:
                    continue
                out.append(pytest.param(kind, chain, corruption,
                                        id=f"{kind}-{chain}-{corruption}"))
    return out


@pytest.fixture(params=["local", "memory"])
def store_kind(request):
    return request.param


def _make_store(kind, tmp_path):
    return zarrcore.LocalStore(tmp_path / "s") if kind == "local" else zarrcore.MemoryStore()


def _write_array(store, chain):
    a = zarrcore.create_array(store, name="arr", shape=SHAPE, dtype="int32", chunks=CHUNKS,
                              fill_value=0, **CHAINS[chain])
    a[...] = np.arange(30, dtype="int32").reshape(SHAPE) + 1
    return a


@pytest.mark.parametrize("store_kind,chain,corruption", _corrupt_params())
def test_corrupt_chunk(tmp_path, store_kind, chain, corruption):
    store = _make_store(store_kind, tmp_path)
    a = _write_array(store, chain)
    key = "arr/c/0/1"
    good = store.get(key)
    assert good is not None
    bad = _corruptions(chain, good)[corruption]
    if bad == good:
        pytest.skip("this corruption leaves the chunk as it was")
    store.set(key, bad)
    b = zarrcore.open_array(store, path="arr", mode="r")
    # Every chain and corruption here is detectable (see UNDETECTABLE), so each read raises.
    for sel in [(Ellipsis,), (slice(0, 4), slice(3, 5)), (1, 4), (slice(None, None, -1), 3)]:
        with pytest.raises(ChunkDecodeError) as info:
            b[sel]
        assert key in str(info.value), str(info.value)
    # Reads that do not touch the chunk still work, and so does rewriting it whole.
    np.testing.assert_array_equal(b[:, :3], (np.arange(30).reshape(SHAPE) + 1)[:, :3])
    w = zarrcore.open_array(store, path="arr", mode="r+")
    with pytest.raises(ChunkDecodeError):
        w[0, 3] = 5  # a partial write must read the chunk first
    w[0:4, 3:5] = 7  # covers the whole chunk (the edge chunk ends at column 5)
    assert (w[0:4, 3:5] == 7).all()


@pytest.mark.parametrize("chain", ["crc32c", "zstd-crc32c", "transpose-gzip-crc32c"])
def test_bit_flip_with_crc32c_is_checksum_error(tmp_path, store_kind, chain):
    store = _make_store(store_kind, tmp_path)
    _write_array(store, chain)
    key = "arr/c/1/0"
    good = store.get(key)
    for position in (0, len(good) // 2, len(good) - 5, len(good) - 1):
        for bit in (0, 7):
            flipped = bytearray(good)
            flipped[position] ^= 1 << bit
            store.set(key, bytes(flipped))
            b = zarrcore.open_array(store, path="arr", mode="r")
            with pytest.raises(ChecksumError) as info:
                b[...]
            assert key in str(info.value)
            assert isinstance(info.value, ChunkDecodeError)


def test_zstd_checksum_mismatch(tmp_path, store_kind):
    store = _make_store(store_kind, tmp_path)
    _write_array(store, "zstd-checksum")
    key = "arr/c/0/0"
    good = bytearray(store.get(key))
    good[-1] ^= 0xFF  # the frame's content checksum
    store.set(key, bytes(good))
    with pytest.raises(ChunkDecodeError) as info:
        zarrcore.open_array(store, path="arr")[...]
    assert key in str(info.value)


def test_zero_d_corrupt_chunk(tmp_path, store_kind):
    store = _make_store(store_kind, tmp_path)
    a = zarrcore.create_array(store, name="s", shape=(), dtype="float64", chunks=(),
                              compressors=None)
    a[()] = 1.5
    store.set("s/c", b"\x00" * 7)
    with pytest.raises(ChunkDecodeError) as info:
        a[()]
    assert "s/c" in str(info.value)


def test_v2_corrupt_chunk(tmp_path, store_kind):
    store = _make_store(store_kind, tmp_path)
    a = zarrcore.create_array(store, name="v2", shape=(8,), dtype="<i4", chunks=(4,),
                              zarr_format=2, compressors=None)
    a[...] = np.arange(8)
    store.set("v2/1", b"\x01\x02\x03")
    with pytest.raises(ChunkDecodeError) as info:
        a[...]
    assert "v2/1" in str(info.value)
    np.testing.assert_array_equal(a[:4], np.arange(4))


def test_corrupt_chunk_error_is_never_wrong_data(tmp_path):
    """A chunk file replaced by a valid chunk of a different dtype size is an error, not noise."""
    store = zarrcore.LocalStore(tmp_path)
    a = zarrcore.create_array(store, shape=(8,), dtype="int64", chunks=(4,), compressors=None)
    a[...] = np.arange(8)
    store.set("c/0", np.arange(4, dtype="int32").tobytes())
    with pytest.raises(ChunkDecodeError):
        a[...]


# -- malformed metadata ----------------------------------------------------------------------------
def _good_doc():
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [6, 5],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {},
    }


def _put_doc(store, doc, path="node"):
    key = f"{path}/zarr.json"
    store.set(key, doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return key


def _open_fails(store, exc, *words, path="node"):
    """Opening `path` in every way raises `exc` naming the key (and every one of `words`)."""
    key = f"{path}/zarr.json"
    for open_ in (lambda: zarrcore.open_array(store, path=path, mode="r"),
                  lambda: zarrcore.open(store, path=path, mode="r"),
                  lambda: zarrcore.open_group(store, mode="r")[path]):
        with pytest.raises(exc) as info:
            open_()
        message = str(info.value)
        assert isinstance(info.value, ZarrcoreError)
        assert key in message, message
        for word in words:
            assert word in message, (word, message)


@pytest.fixture
def mstore():
    s = zarrcore.MemoryStore()
    zarrcore.create_group(s)
    return s


def test_good_document_opens(mstore):
    _put_doc(mstore, _good_doc())
    assert zarrcore.open_array(mstore, path="node").shape == (6, 5)


@pytest.mark.parametrize("raw", [
    b"", b"{", b"not json", b"[1, 2]", b"null", b"\xff\xfe\x00", b'{"zarr_format": 3,}', b"42",
    json.dumps(_good_doc()).encode()[:-1],
])
def test_invalid_json(mstore, raw):
    _put_doc(mstore, raw)
    _open_fails(mstore, MetadataError)


@pytest.mark.parametrize("field", ["zarr_format", "node_type", "shape", "data_type", "chunk_grid",
                                   "chunk_key_encoding", "fill_value", "codecs"])
def test_missing_field(mstore, field):
    doc = _good_doc()
    del doc[field]
    _put_doc(mstore, doc)
    _open_fails(mstore, MetadataError, field)


@pytest.mark.parametrize("field,value", [
    ("zarr_format", 2), ("zarr_format", "3"), ("zarr_format", True), ("node_type", "table"),
    ("shape", [6, -5]), ("shape", "6,5"), ("shape", [6.0, 5]), ("shape", [6]),
    ("chunk_grid", {"name": "rectilinear", "configuration": {"chunk_shape": [4, 3]}}),
    ("chunk_grid", {"name": "regular", "configuration": {"chunk_shape": [4, 0]}}),
    ("chunk_grid", {"name": "regular", "configuration": {}}), ("chunk_grid", 7),
    ("chunk_key_encoding", {"name": "hashed"}),
    ("chunk_key_encoding", {"name": "default", "configuration": {"separator": "-"}}),
    ("codecs", []), ("codecs", "bytes!"), ("codecs", [7]),
    ("attributes", [1, 2]), ("dimension_names", ["a"]), ("dimension_names", [1, 2]),
    ("storage_transformers", [{"name": "offset"}]),
])
def test_bad_field_value(mstore, field, value):
    doc = _good_doc()
    doc[field] = value
    _put_doc(mstore, doc)
    _open_fails(mstore, MetadataError, field)


@pytest.mark.parametrize("names", [["x"], ["x", "y", "z"]])
def test_dimension_names_of_the_wrong_length(names):
    with pytest.raises(MetadataError, match=r"dimension_names .*expected one name .* 2 for shape") \
            as info:
        zarrcore.create_array({}, shape=(4, 4), dtype="i4", dimension_names=names)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("dtype,fill", [
    ("int32", "abc"), ("int32", 1.5), ("int32", 2 ** 31), ("uint8", 256), ("uint8", -1),
    ("int8", None), ("bool", 1), ("bool", "true"), ("float32", "nan"),
    ("float32", "0x7fc00000ff"), ("float32", [1.0, 2.0]), ("float64", "Inf"),
    ("complex64", 1.0), ("complex64", [1.0]), ("complex64", ["NaN", "x"]), ("float16", {}),
])
def test_bad_fill_value(mstore, dtype, fill):
    doc = _good_doc()
    doc["data_type"] = dtype
    doc["fill_value"] = fill
    _put_doc(mstore, doc)
    _open_fails(mstore, MetadataError, "fill_value")


@pytest.mark.parametrize("codecs,name", [
    ([{"name": "bytes"}, {"name": "no-such-codec"}], "no-such-codec"),
    ([{"name": "fancy_serializer"}], "fancy_serializer"),
    ([{"name": "rot13", "configuration": {}}, {"name": "bytes"}], "rot13"),
])
def test_unknown_codec(mstore, codecs, name):
    doc = _good_doc()
    doc["codecs"] = codecs
    _put_doc(mstore, doc)
    _open_fails(mstore, UnknownCodecError, name)


@pytest.mark.parametrize("codecs,word", [
    ([{"name": "bytes", "configuration": {"endian": "middle"}}], "endian"),
    ([{"name": "zstd", "configuration": {"level": 1}}], "bytes"),  # no array->bytes codec
    ([{"name": "bytes"}, {"name": "bytes"}], "bytes"),
    ([{"name": "bytes"}, {"name": "transpose", "configuration": {"order": [1, 0]}}], "transpose"),
    ([{"name": "transpose", "configuration": {"order": [0, 0]}}, {"name": "bytes"}], "transpose"),
    ([{"name": "transpose", "configuration": {"order": [0]}}, {"name": "bytes"}], "transpose"),
    ([{"name": "bytes"}, {"name": "gzip", "configuration": {"level": "high"}}], "gzip"),
    ([{"name": "bytes"}, {"name": "blosc", "configuration": {"cname": "snappy9"}}], "blosc"),
    ([{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1, "extra": 2}}], "zstd"),
    ([{"name": "bytes"}, {"name": "crc32c", "configuration": []}], "crc32c"),
])
def test_invalid_codec_configuration(mstore, codecs, word):
    doc = _good_doc()
    doc["codecs"] = codecs
    _put_doc(mstore, doc)
    _open_fails(mstore, MetadataError, word)


@pytest.mark.parametrize("dtype", ["int128", "float8", "Float32", "", "<i4", 5, {"name": 7},
                                   {"name": "quaternion"}])
def test_unknown_data_type(mstore, dtype):
    doc = _good_doc()
    doc["data_type"] = dtype
    _put_doc(mstore, doc)
    _open_fails(mstore, MetadataError, "data_type")


@pytest.mark.parametrize("dtype", ["int128", "float8", "quaternion"])
def test_unknown_data_type_class(mstore, dtype):
    doc = _good_doc()
    doc["data_type"] = dtype
    _put_doc(mstore, doc)
    _open_fails(mstore, UnknownDataTypeError, dtype)


@pytest.mark.parametrize("extra", [
    {"my_extension": {"must_understand": True}},
    {"my_extension": {"foo": 1}},
    {"my_extension": 42},
    {"my_extension": "yes"},
])
def test_unknown_must_understand_field(mstore, extra):
    doc = _good_doc()
    doc.update(extra)
    _put_doc(mstore, doc)
    _open_fails(mstore, MetadataError, "my_extension")


def test_unknown_field_that_may_be_ignored(mstore):
    doc = _good_doc()
    doc["my_extension"] = {"must_understand": False, "whatever": [1, 2]}
    _put_doc(mstore, doc)
    a = zarrcore.open_array(mstore, path="node", mode="r+")
    assert a.shape == (6, 5)
    a[0, 0] = 3
    assert a[0, 0] == 3
    # Rewriting the metadata keeps the field a later reader may understand.
    a.attrs["x"] = 1
    stored = json.loads(mstore.get("node/zarr.json"))
    assert stored["my_extension"] == {"must_understand": False, "whatever": [1, 2]}


def test_unknown_group_field(mstore):
    _put_doc(mstore, {"zarr_format": 3, "node_type": "group", "mystery": {"must_understand": True}})
    _open_fails(mstore, MetadataError, "mystery")


def test_metadata_error_is_value_error(mstore):
    """zarr-python users catch ValueError; MetadataError is one."""
    _put_doc(mstore, b"{")
    with pytest.raises(ValueError):
        zarrcore.open_array(mstore, path="node")


def test_error_in_group_walk_names_the_member(mstore):
    g = zarrcore.open_group(mstore)
    g.create_array("fine", shape=(1,), dtype="i1")
    g.create_group("sub")
    _put_doc(mstore, b"oops", path="sub/broken")
    broken = dict(g.members(max_depth=None))["sub/broken"]  # listed, not fatal
    assert isinstance(broken.error, MetadataError)
    assert "sub/broken/zarr.json" in str(broken.error)


def test_missing_node(tmp_path):
    with pytest.raises(NodeNotFoundError) as info:
        zarrcore.open_array(str(tmp_path), path="nowhere", mode="r")
    assert "nowhere" in str(info.value)


def test_v2_malformed_metadata(tmp_path):
    store = zarrcore.LocalStore(tmp_path)
    store.set("a/.zarray", b"{not json")
    with pytest.raises(MetadataError) as info:
        zarrcore.open_array(store, path="a")
    assert "a/.zarray" in str(info.value)
    good = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", "compressor": None,
            "fill_value": 0, "order": "C", "filters": None}
    store.set("b/.zarray", json.dumps({**good, "compressor": {"id": "nonesuch"}}).encode())
    with pytest.raises(UnknownCodecError) as info:
        zarrcore.open_array(store, path="b")
    assert "b/.zarray" in str(info.value) and "nonesuch" in str(info.value)
    store.set("c/.zarray", json.dumps({**good, "dtype": "<q9"}).encode())
    with pytest.raises(MetadataError) as info:
        zarrcore.open_array(store, path="c")
    assert "c/.zarray" in str(info.value)
    store.set("d/.zarray", json.dumps({k: v for k, v in good.items() if k != "shape"}).encode())
    with pytest.raises(MetadataError) as info:
        zarrcore.open_array(store, path="d")
    assert "d/.zarray" in str(info.value) and "shape" in str(info.value)


def test_metadata_on_disk_with_bad_encoding(tmp_path):
    """A zarr.json that is not UTF-8, read from a directory store."""
    os.makedirs(tmp_path / "x")
    (tmp_path / "x" / "zarr.json").write_bytes(b'{"zarr_format": 3, "node_type": "\xff"}')
    with pytest.raises(MetadataError) as info:
        zarrcore.open(str(tmp_path / "x"), mode="r")
    assert "zarr.json" in str(info.value)


# -- random damage: an error naming the key, or (without a checksum) some values; never a crash --
CHECKSUMMED = {"crc32c", "zstd-crc32c", "transpose-gzip-crc32c"}


@st.composite
def damage(draw, good):
    kind = draw(st.sampled_from(["flip", "overwrite", "truncate", "insert", "header"]))
    out = bytearray(good)
    if kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(out) - 1))
            out[i] ^= 1 << draw(st.integers(0, 7))
    elif kind == "overwrite":
        i = draw(st.integers(0, len(out) - 1))
        chunk = draw(st.binary(min_size=1, max_size=16))
        out[i:i + len(chunk)] = chunk
    elif kind == "truncate":
        # Not to nothing: an empty chunk is test_corrupt_chunk's "empty" case.
        del out[draw(st.integers(1, len(out) - 1)):]
    elif kind == "insert":
        i = draw(st.integers(0, len(out)))
        out[i:i] = draw(st.binary(min_size=1, max_size=64))
    else:
        # The first 16 bytes hold the headers (blosc sizes, zstd frame sizes, gzip flags).
        n = min(16, len(out))
        out[:n] = draw(st.binary(min_size=n, max_size=n))
    return bytes(out)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_damage_never_crashes(tmp_path_factory, data):
    chain = data.draw(st.sampled_from(sorted(CHAINS)), label="chain")
    kind = data.draw(st.sampled_from(["local", "memory"]), label="store")
    store = _make_store(kind, tmp_path_factory.mktemp("dmg"))
    _write_array(store, chain)
    key = "arr/c/1/1"
    good = store.get(key)
    bad = data.draw(damage(good), label="damaged chunk")
    store.set(key, bad)
    b = zarrcore.open_array(store, path="arr", mode="r")
    try:
        got = b[...]
    except ChunkDecodeError as e:
        assert key in str(e)
        return
    assert got.shape == SHAPE and got.dtype == np.int32
    if chain in CHECKSUMMED and bad != good:
        pytest.fail(f"damage to a crc32c-protected chunk went unnoticed: {chain}")
    if bad == good:
        np.testing.assert_array_equal(got, np.arange(30, dtype="int32").reshape(SHAPE) + 1)


# -- selections and assignments ---------------------------------------------------------------

@pytest.mark.parametrize("select", [
    lambda a: a[10, 0],
    lambda a: a[0, 0, 0],
    lambda a: a.oindex[[0, 12], :],
    lambda a: a.vindex[[0, 1], [0, 99]],
    lambda a: a.blocks[5],
    lambda a: a[..., ...],
], ids=["out of bounds", "too many indices", "oindex", "vindex", "blocks", "two ellipses"])
def test_bad_selections_raise_a_zarrcore_index_error(select):
    a = zarrcore.create_array({}, shape=(10, 10), chunks=(4, 4), dtype="i4")
    with pytest.raises(zarrcore.errors.SelectionError) as info:
        select(a)
    assert isinstance(info.value, zarrcore.errors.ZarrcoreError)
    assert isinstance(info.value, IndexError)  # as numpy raises


def test_wrong_value_or_out_shapes_name_the_array():
    a = zarrcore.create_array({}, name="grid/t", shape=(10, 10), chunks=(4, 4), dtype="i4")
    with pytest.raises(zarrcore.errors.ShapeMismatchError, match="'/grid/t'.*shape \\(3,\\)"):
        a[0:4, 0] = np.arange(3)
    with pytest.raises(zarrcore.errors.ShapeMismatchError, match="'/grid/t': out has shape"):
        a.get_basic_selection((slice(0, 4), 0), out=np.empty(5, "i4"))
    assert issubclass(zarrcore.errors.ShapeMismatchError, ValueError)
    np.testing.assert_array_equal(a[...], 0)  # nothing was written


def test_every_error_the_docs_name_is_a_zarrcore_error():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    names = set()
    for page in [os.path.join(root, "README.md")] + glob.glob(
            os.path.join(root, "docs", "guide", "*.md")):
        with open(page, encoding="utf-8") as f:
            # (a name qualified by another module, `asyncio.CancelledError`, is not ours)
            names |= set(re.findall(r"(?<![.\w])([A-Z][A-Za-z]*Error)\b", f.read()))
    ours = sorted(n for n in names if not hasattr(builtins, n))
    assert "UnsafeCodecError" in ours and "ObjectDataTypeError" in ours
    for name in ours:
        error = getattr(zarrcore.errors, name, None)
        assert error is not None, f"{name} is not in zarrcore.errors"
        assert issubclass(error, ZarrcoreError), name


def test_errors_raised_in_a_worker_reach_its_caller():
    """Every error pickles (a pool's worker sends the ones it raises), keeping its message
    and errno."""
    import pickle

    from zarrcore import errors

    raised = [errors.KeyChangedError("key 'c/0' was replaced"), errors.StoreError(5, "gone"),
              errors.ShardIndexError("bad entry")]
    for error in raised:
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert getattr(back, "errno", None) == getattr(error, "errno", None)
