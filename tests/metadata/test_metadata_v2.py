import json
import math
import warnings

import numpy as np
import pytest

from zarrcore.errors import MetadataError, UnknownDataTypeError
from zarrcore.metadata import (
    ArrayMetadataV2,
    ChunkKeyEncoding,
    GroupMetadataV2,
    dtype_from_numpy,
    parse_metadata_v2,
)

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")


def zarray(**changes):
    doc = {
        "zarr_format": 2,
        "shape": [10, 20],
        "chunks": [5, 5],
        "dtype": "<f8",
        "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
        "fill_value": "NaN",
        "order": "C",
        "filters": [{"id": "delta", "dtype": "<f8"}],
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


def test_spec_example_round_trip():
    meta = ArrayMetadataV2.from_json(json.dumps(zarray()), b'{"a": 1}')
    assert meta.shape == (10, 20) and meta.chunk_shape == (5, 5) and meta.ndim == 2
    assert meta.dtype == np.dtype("<f8") and math.isnan(meta.fill_value)
    assert meta.filters == [{"id": "delta", "dtype": "<f8"}]
    assert meta.dimension_separator == "." and meta.attributes == {"a": 1}
    assert meta.zarr_format == 2 and meta.node_type == "array"
    assert meta.chunk_key((1, 2)) == "1.2"
    assert meta.chunk_key_encoding == ChunkKeyEncoding("v2", ".")
    out = meta.to_json()
    assert out == {**zarray(), "dimension_separator": "."}
    assert list(out) == [
        "shape", "chunks", "dtype", "fill_value", "order", "filters", "dimension_separator", "compressor", "zarr_format"
    ]
    assert ArrayMetadataV2.from_json(meta.to_bytes(), meta.zattrs_bytes()) == meta
    assert json.loads(meta.zattrs_bytes()) == {"a": 1}


def test_chunk_keys():
    meta = ArrayMetadataV2(shape=(4, 4), data_type="i4", chunk_shape=(2, 2), dimension_separator="/")
    assert meta.chunk_key((1, 0)) == "1/0"
    scalar = ArrayMetadataV2(shape=(), data_type="i4", chunk_shape=())
    assert scalar.chunk_key(()) == "0"


def test_null_fill_and_filters_kept():
    meta = ArrayMetadataV2.from_json(zarray(fill_value=None, filters=[], compressor=None))
    assert meta.fill_value is None
    assert meta.to_json()["filters"] == [] and meta.to_json()["fill_value"] is None
    meta = ArrayMetadataV2.from_json(zarray(filters=None))
    assert meta.to_json()["filters"] is None
    assert ArrayMetadataV2.from_json(zarray(filters=...)).filters is None


def test_big_endian_and_unknown_keys():
    meta = ArrayMetadataV2.from_json(zarray(dtype=">i4", fill_value=-7, filters=None, extra_key=[1], dimension_separator="/"))
    assert meta.dtype == np.dtype(">i4") and meta.fill_value == -7
    assert meta.to_json()["dtype"] == ">i4" and "extra_key" not in meta.to_json()
    assert meta.chunk_key((3, 4)) == "3/4"


def test_evolve():
    meta = ArrayMetadataV2.from_json(zarray())
    other = meta.evolve(shape=(30, 20), attributes={"b": 2})
    assert other.shape == (30, 20) and other.attributes == {"b": 2} and meta.shape == (10, 20)
    with pytest.raises(MetadataError, match="chunks"):
        meta.evolve(chunk_shape=(1,))


@pytest.mark.parametrize(
    "changes,field",
    [
        ({"zarr_format": 3}, "zarr_format"),
        ({"zarr_format": ...}, "zarr_format"),
        ({"shape": ...}, "shape"),
        ({"shape": [-1, 2]}, "shape"),
        ({"chunks": [5]}, "chunks"),
        ({"chunks": [5, 0]}, "chunks"),
        ({"chunks": ...}, "chunks"),
        ({"dtype": ...}, "dtype"),
        ({"dtype": "<x8"}, "dtype"),
        ({"fill_value": "nan"}, "fill_value"),
        ({"fill_value": ...}, "fill_value"),
        ({"dtype": "<i2", "fill_value": 70000}, "fill_value"),
        ({"order": "K"}, "order"),
        ({"order": ...}, "order"),
        ({"compressor": {"cname": "lz4"}}, "compressor"),
        ({"compressor": ...}, "compressor"),
        ({"filters": {"id": "delta"}}, "filters"),
        ({"filters": [{"x": 1}]}, "filters"),
        ({"dimension_separator": "-"}, "dimension_separator"),
    ],
)
def test_malformed(changes, field):
    with pytest.raises(MetadataError, match=rf"^a/\.zarray: field '{field}'"):
        ArrayMetadataV2.from_json(zarray(**changes), where="a/.zarray")


def test_object_dtypes():
    doc = zarray(dtype="|O", fill_value="", filters=[{"id": "vlen-utf8"}], compressor=None)
    meta = ArrayMetadataV2.from_json(doc)
    assert meta.data_type.to_json_v3() == "string" and meta.fill_value == ""
    assert meta.to_json()["dtype"] == "|O"
    doc = zarray(dtype="|O", fill_value="", filters=None, compressor={"id": "vlen-bytes"})
    assert ArrayMetadataV2.from_json(doc).data_type.v2_object_codec_id == "vlen-bytes"
    # A number fill: Python objects, as zarr 2.18 reads them; a null fill stays bytes, as
    # zarr-python 3 reads it (test_v2_legacy.py).
    doc = zarray(dtype="|O", fill_value=0, filters=None, compressor={"id": "vlen-bytes"})
    assert type(ArrayMetadataV2.from_json(doc).data_type).__name__ == "PythonObjectType"
    doc = zarray(dtype="|O", fill_value=None, filters=None, compressor={"id": "vlen-bytes"})
    assert type(ArrayMetadataV2.from_json(doc).data_type).__name__ == "VariableLengthBytesType"
    with pytest.raises(UnknownDataTypeError, match=r"\.zarray: field 'dtype'"):
        ArrayMetadataV2.from_json(zarray(dtype="|O", fill_value=0, filters=[{"id": "base64"}]))
    # Python objects (json2, msgpack2, vlen-array, pickle) are a v2-only type.
    meta = ArrayMetadataV2.from_json(zarray(dtype="|O", fill_value=0, filters=[{"id": "pickle"}]))
    assert type(meta.data_type).__name__ == "PythonObjectType" and meta.fill_value == 0


def test_bad_zattrs():
    with pytest.raises(MetadataError, match=r"^x/\.zattrs"):
        ArrayMetadataV2.from_json(zarray(), b"[1]", where="x/.zarray")
    with pytest.raises(MetadataError, match=r"^x/\.zattrs"):
        GroupMetadataV2.from_json(b'{"zarr_format": 2}', b"{", where="x/.zgroup")


def test_group():
    group = GroupMetadataV2.from_json(b'{"zarr_format": 2}', b'{"a": [1]}')
    assert group.attributes == {"a": [1]} and group.to_json() == {"zarr_format": 2}
    assert group.zarr_format == 2 and group.node_type == "group"
    assert json.loads(group.to_bytes()) == {"zarr_format": 2}
    assert json.loads(group.zattrs_bytes()) == {"a": [1]}
    with pytest.raises(MetadataError, match=r"\.zgroup: field 'zarr_format'"):
        GroupMetadataV2.from_json({"zarr_format": 3})


def test_parse_metadata_v2():
    assert isinstance(parse_metadata_v2(zarray_doc=zarray()), ArrayMetadataV2)
    group = parse_metadata_v2(zgroup_doc={"zarr_format": 2}, zattrs_doc={"x": 1}, prefix="g/")
    assert isinstance(group, GroupMetadataV2) and group.attributes == {"x": 1}
    with pytest.raises(MetadataError, match=r"^g/\.zarray: field 'shape'"):
        parse_metadata_v2(zarray_doc=zarray(shape=...), prefix="g/")
    with pytest.raises(MetadataError):
        parse_metadata_v2()
    with pytest.raises(MetadataError):
        parse_metadata_v2(zarray(), {"zarr_format": 2})


S = [("a", "<i4"), ("b", "S2")]
CASES = [
    dict(dtype="<f8"),
    dict(dtype=">f8", fill_value=1.5),
    dict(dtype="<f4", fill_value=float("nan")),
    dict(dtype="<f2", fill_value=float("-inf")),
    dict(dtype="|i1", fill_value=-3),
    dict(dtype=">u8", fill_value=2**64 - 1),
    dict(dtype="|b1", fill_value=True),
    dict(dtype="<c16", fill_value=1 + 2j),
    dict(dtype="|V3", fill_value=b"abc"),
    dict(dtype="|S3", fill_value=b"abc"),
    dict(dtype="<U3", fill_value="abc"),
    dict(dtype=">U3"),
    dict(dtype="<M8[s]", fill_value=np.datetime64("2000-01-01")),
    dict(dtype="<M8[10s]", fill_value=np.datetime64("NaT")),
    dict(dtype=">m8[ns]"),
    dict(dtype=str, fill_value="héllo"),
    dict(dtype=str),
    dict(dtype=S, fill_value=np.array((1, b"x"), dtype=S)[()]),
    # zarr-python 3.1 writes nested structures but cannot read them back
    dict(dtype=[("field_a", ">i2"), ("field_b", [("subfield_c", ">f4"), ("subfield_d", "i2")])], reopen=False),
    dict(dtype="<i4", dimension_separator="/"),
    dict(dtype="<i4", order="F"),
    dict(dtype="<i4", filters=[numcodecs.Delta(dtype="<i4")], compressors=None),
    dict(dtype="<i4", shape=(), chunks=()),
]


@pytest.mark.parametrize("kwargs", CASES, ids=lambda kw: f"{kw['dtype']}-{kw.get('fill_value')}"[:40])
def test_matches_zarr_python(kwargs):
    kwargs = {"shape": (6, 4), "chunks": (3, 2), **kwargs}
    reopen = kwargs.pop("reopen", True)
    if "dimension_separator" in kwargs:
        kwargs["chunk_key_encoding"] = {"name": "v2", "separator": kwargs.pop("dimension_separator")}
    store = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(store=store, zarr_format=2, attributes={"k": "v"}, **kwargs)
    doc = json.loads(store[".zarray"].to_bytes())
    meta = ArrayMetadataV2.from_json(store[".zarray"].to_bytes(), store[".zattrs"].to_bytes())
    assert meta.to_json() == doc
    assert meta.attributes == {"k": "v"}
    if reopen:
        # zarr-python reads what we write
        buf = zarr.core.buffer.cpu.Buffer.from_bytes
        store2 = {".zarray": buf(meta.to_bytes()), ".zattrs": buf(meta.zattrs_bytes())}
        z = zarr.open_array(store=store2, mode="r", zarr_format=2)
        assert z.shape == meta.shape and z.dtype == meta.dtype and z.attrs.asdict() == {"k": "v"}


def test_zarr2_style_documents():
    """Documents as zarr 2.x / numcodecs wrote them: sorted keys, subarray fields, 0 fill for objects."""
    doc = {
        "chunks": [10],
        "compressor": {"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1},
        "dtype": [["x", "<f8"], ["y", "<i4", [2, 2]]],
        "fill_value": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "filters": None,
        "order": "C",
        "shape": [100],
        "zarr_format": 2,
    }
    meta = ArrayMetadataV2.from_json(doc)
    assert meta.dtype == np.dtype([("x", "<f8"), ("y", "<i4", (2, 2))])
    assert meta.to_json() == {**doc, "dimension_separator": "."}
    strings = ArrayMetadataV2.from_json(
        {**doc, "dtype": "|O", "fill_value": 0, "filters": [{"id": "vlen-utf8"}]}
    )
    # zarr 2.18 reads it as Python objects: the stored text, and 0 where no chunk is stored.
    assert strings.fill_value == 0 and type(strings.data_type).__name__ == "PythonObjectType"
    assert strings.to_json()["fill_value"] == 0 and strings.to_json()["dtype"] == "|O"
