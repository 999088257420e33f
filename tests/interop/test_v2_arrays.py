"""Zarr v2 arrays and groups: interop with zarr-python (zarr_format=2) in both directions.

Values compare by their bytes (so NaN payloads and big-endian data are exact), and the
.zarray documents both writers produce must agree on dtype, fill value, order and layout.
"""
import base64
import json
import os

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import MetadataError, NodeNotFoundError

zarr = pytest.importorskip("zarr")
from zarr.core.dtype import VariableLengthBytes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SHAPE, CHUNKS = (7, 6), (3, 4)
STRUCT = [("a", "<i4"), ("b", ">f8", (2,)), ("c", [("x", "|u1"), ("y", "<i2")])]


def sample(dtype, shape=SHAPE, seed=0):
    """Arbitrary values of `dtype`: random bytes wherever every byte pattern is a value."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype is str:
        return np.array(["", "a", "héllo", "日本語", "x" * 40] * n, dtype=object)[:n].reshape(shape)
    if dtype is bytes:
        return np.array([b"", b"\x00\xff", b"abc", b"x" * 40] * n, dtype=object)[:n].reshape(shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind == "U":
        chars = rng.integers(0x20, 0x3000, (n, dtype.itemsize // 4)).astype("<u4")
        return chars.view(f"<U{dtype.itemsize // 4}").reshape(shape).astype(dtype)
    return rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype).reshape(shape)


def assert_same(actual, expected):
    assert actual.shape == expected.shape
    if expected.dtype.kind in "OT":
        assert actual.tolist() == expected.tolist()
    else:
        assert actual.dtype == expected.dtype
        assert actual.tobytes() == expected.tobytes()


def zarray(path):
    return json.loads((path / ".zarray").read_text())


def chunk_files(path):
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            if not f.startswith("."):
                full = os.path.join(root, f)
                out[os.path.relpath(full, path)] = open(full, "rb").read()
    return out


DTYPES = [
    "|b1", "|i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", ">u8", "<f2", ">f4", "<f8", ">f8",
    "<c8", ">c16", "<M8[ns]", ">M8[s]", "<m8[ms]", "|S5", "<U4", ">U3", "|V6",
    [("r", "|u1"), ("g", "|u1"), ("b", "|u1")], [("x", "<f4"), ("y", ">i8")], str, bytes,
]


def _fill(dtype):
    """create_array keywords for a fill value both libraries accept for `dtype`."""
    if dtype is str:
        return {"fill_value": "fill"}
    if isinstance(dtype, list):  # zarr-python has no default for structured types
        return {"fill_value": np.zeros((), dtype=dtype)[()]}
    return {}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtype_interop(tmp_path, dtype):
    data = sample(dtype)
    peer, ours = tmp_path / "peer", tmp_path / "ours"
    z = zarr.create_array(str(peer), shape=SHAPE, chunks=CHUNKS, zarr_format=2, compressors=None,
                          dtype=VariableLengthBytes() if dtype is bytes else dtype, **_fill(dtype))
    z[...] = data
    a = zarrcore.open_array(str(peer), mode="r")
    assert a.zarr_format == 2
    assert_same(a[...], data)
    assert_same(a[2:5, 1:5], data[2:5, 1:5])

    b = zarrcore.create_array(str(ours), shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                              zarr_format=2, compressors=None, **_fill(dtype))
    b[...] = data
    assert_same(zarr.open_array(str(ours), mode="r")[...], data)
    mine, theirs = zarray(ours), zarray(peer)
    for key in ("dtype", "fill_value", "filters", "order", "shape", "chunks", "dimension_separator"):
        assert mine[key] == theirs[key], key
    if dtype not in (str, bytes):
        assert chunk_files(ours) == chunk_files(peer)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("separator", [".", "/"])
def test_order_and_separator(tmp_path, order, separator):
    data = sample("<i4", (5, 6, 7))
    peer, ours = tmp_path / "peer", tmp_path / "ours"
    cke = {"name": "v2", "separator": separator}
    z = zarr.create_array(str(peer), shape=data.shape, chunks=(2, 4, 3), dtype=data.dtype, zarr_format=2,
                          order=order, chunk_key_encoding=cke, compressors=None)
    z[...] = data
    assert_same(zarrcore.open_array(str(peer))[...], data)
    b = zarrcore.create_array(str(ours), shape=data.shape, chunks=(2, 4, 3), dtype=data.dtype,
                              zarr_format=2, order=order, chunk_key_encoding=cke, compressors=None)
    b[...] = data
    assert (zarray(ours)["order"], zarray(ours)["dimension_separator"]) == (order, separator)
    assert chunk_files(ours) == chunk_files(peer)
    assert ("0/1/2" in chunk_files(ours)) == (separator == "/")
    assert_same(zarr.open_array(str(ours))[...], data)


@pytest.mark.parametrize("dtype", [str, "|S3", [("a", "<i2"), ("b", ">f4", (2, 2))]], ids=str)
def test_fortran_order_other_types(tmp_path, dtype):
    data = sample(dtype, (4, 5))
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, chunks=(3, 2), dtype=dtype,
                              zarr_format=2, order="F", **_fill(dtype))
    a[...] = data
    assert_same(zarrcore.open_array(str(tmp_path / "a"))[...], data)
    if not isinstance(dtype, list):  # zarr-python 3.1 cannot read subarray fields
        assert_same(zarr.open_array(str(tmp_path / "a"))[...], data)


def test_structured_subarray_and_nested_fields(tmp_path):
    """The spec's nested [name, type, shape] form, written by hand as the spec describes."""
    numcodecs = pytest.importorskip("numcodecs")
    dtype = np.dtype(STRUCT)
    data = sample(STRUCT, (5,))
    fill = np.zeros((), dtype)
    fill["a"], fill["b"], fill["c"]["y"] = 7, [1.5, -2.0], -3
    doc = {"zarr_format": 2, "shape": [5], "chunks": [3], "order": "C", "filters": None,
           "dtype": [["a", "<i4"], ["b", ">f8", [2]], ["c", [["x", "|u1"], ["y", "<i2"]]]],
           "compressor": {"id": "zlib", "level": 1},
           "fill_value": base64.b64encode(fill.tobytes()).decode()}
    peer = tmp_path / "peer"
    peer.mkdir()
    (peer / ".zarray").write_text(json.dumps(doc))
    (peer / "0").write_bytes(numcodecs.Zlib(1).encode(data[:3].tobytes()))
    a = zarrcore.open_array(str(peer))
    assert a.dtype == dtype
    assert a.dtype.fields["b"][0].shape == (2,) and a.dtype["c"].names == ("x", "y")
    got = a[...]
    assert_same(got[:3], data[:3])
    assert got[3].tobytes() == fill.tobytes() == a.fill_value.tobytes()
    np.testing.assert_array_equal(got["b"][:3], data["b"][:3])

    ours = tmp_path / "ours"
    b = zarrcore.create_array(str(ours), shape=(5,), chunks=(3,), dtype=dtype, zarr_format=2,
                              fill_value=fill[()], compressors={"id": "zlib", "level": 1})
    b[:3] = data[:3]
    assert zarray(ours)["dtype"] == doc["dtype"]
    assert zarray(ours)["fill_value"] == doc["fill_value"]
    assert numcodecs.Zlib().decode((ours / "0").read_bytes()) == data[:3].tobytes()
    assert not (ours / "1").exists()


FILL_VALUES = [
    ("<f8", float("nan"), "NaN"),
    (">f4", float("inf"), "Infinity"),
    ("<f2", float("-inf"), "-Infinity"),
    ("<i4", 42, 42),
    ("|b1", True, True),
    ("<c8", 1 + 2j, [1.0, 2.0]),
    ("|S4", b"ab", "YWI="),
    ("<U3", "hi", "hi"),
    ("<M8[s]", np.datetime64("NaT"), -(2**63)),
    (str, "fill", "fill"),
]


@pytest.mark.parametrize("dtype,fill,encoded", FILL_VALUES, ids=[str(f[0]) for f in FILL_VALUES])
def test_fill_values(tmp_path, dtype, fill, encoded):
    peer, ours = tmp_path / "peer", tmp_path / "ours"
    z = zarr.create_array(str(peer), shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2, fill_value=fill)
    z[:1] = z[1:2]  # one stored chunk, one missing
    b = zarrcore.create_array(str(ours), shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2, fill_value=fill)
    assert zarray(peer)["fill_value"] == zarray(ours)["fill_value"] == encoded
    expected = zarr.open_array(str(peer))[...]
    assert_same(zarrcore.open_array(str(peer))[...], expected)
    assert_same(b[...], expected)
    assert_same(zarr.open_array(str(ours))[...], expected)


def test_null_fill_value_reads_as_zeros(tmp_path):
    store = zarrcore.LocalStore(tmp_path)
    doc = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "compressor": None,
           "fill_value": None, "order": "C", "filters": None}
    store.set("a/.zarray", json.dumps(doc).encode())
    a = zarrcore.open_array(store, path="a")
    assert a.fill_value is None
    assert_same(a[...], np.zeros(4))
    a[:2] = [1, 2]
    assert_same(zarr.open_array(str(tmp_path / "a"))[...], np.array([1.0, 2, 0, 0]))


def test_metadata_variants(tmp_path):
    """Unknown keys are ignored, a missing separator means '.', and [] vs null filters stay."""
    store = zarrcore.LocalStore(tmp_path)
    doc = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i2", "compressor": None,
           "fill_value": 5, "order": "C", "filters": [], "extra": {"x": 1}}
    store.set("a/.zarray", json.dumps(doc).encode())
    store.set("a/1", np.array([7, 8], "<i2").tobytes())
    a = zarrcore.open_array(store, path="a")
    assert a.metadata.dimension_separator == "." and a.metadata.filters == []
    assert_same(a[...], np.array([5, 5, 7, 8], "<i2"))
    a.attrs["k"] = "v"
    assert json.loads(store.get("a/.zarray"))["filters"] == []
    assert json.loads(store.get("a/.zattrs")) == {"k": "v"}
    assert zarr.open_array(str(tmp_path / "a")).attrs["k"] == "v"
    b = zarrcore.create_array(store, name="b", shape=(4,), dtype="<i2", zarr_format=2, filters=[])
    assert json.loads(store.get("b/.zarray"))["filters"] == []


def test_groups_interop(tmp_path):
    ours = tmp_path / "ours"
    root = zarrcore.group(str(ours), zarr_format=2, attributes={"title": "root"})
    root.create_array("x/y/arr", shape=(3,), dtype="<i4", attributes={"units": "m"})[...] = [1, 2, 3]
    root.create_group("g").attrs["k"] = 1
    for rel in ("", "x", "x/y", "g"):
        assert json.loads((ours / rel / ".zgroup").read_text()) == {"zarr_format": 2}
    assert not (ours / "zarr.json").exists()
    z = zarr.open_group(str(ours), mode="r")
    assert z.metadata.zarr_format == 2 and z.attrs["title"] == "root"
    assert sorted(k for k, _ in z.members(max_depth=None)) == ["g", "x", "x/y", "x/y/arr"]
    assert z["x/y/arr"].attrs["units"] == "m" and list(z["x/y/arr"][...]) == [1, 2, 3]
    assert z["g"].attrs["k"] == 1

    peer = tmp_path / "peer"
    zg = zarr.open_group(str(peer), mode="w", zarr_format=2, attributes={"a": [1, 2]})
    zg.create_group("sub").create_array("arr", shape=(2, 2), dtype="<f4", fill_value=1.5)
    for node in (zarrcore.open_group(str(peer)), zarrcore.open(str(peer), mode="r")):
        assert node.zarr_format == 2 and node.attrs["a"] == [1, 2]
        assert sorted(k for k, _ in node.members(max_depth=None)) == ["sub", "sub/arr"]
        assert_same(node["sub/arr"][...], np.full((2, 2), 1.5, "<f4"))
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_group(str(peer), path="sub/arr", mode="r")
    assert zarrcore.open_group(str(peer), zarr_format=2).zarr_format == 2
    with pytest.raises(NodeNotFoundError):
        zarrcore.open_group(str(peer), zarr_format=3, mode="r")


def test_malformed_v2_metadata_names_the_field(tmp_path):
    store = zarrcore.LocalStore(tmp_path)
    good = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", "compressor": None,
            "fill_value": 0, "order": "C", "filters": None}
    for field, value in [("order", "K"), ("dtype", "<q9"), ("dimension_separator", "-"), ("chunks", [0])]:
        store.set("a/.zarray", json.dumps({**good, field: value}).encode())
        with pytest.raises(MetadataError, match=field):
            zarrcore.open_array(store, path="a")
