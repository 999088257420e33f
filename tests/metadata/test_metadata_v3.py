import json
import warnings

import numpy as np
import pytest

from zarrcore.errors import MetadataError, UnknownDataTypeError
from zarrcore.metadata import (
    ArrayMetadataV3,
    ChunkKeyEncoding,
    GroupMetadataV3,
    dtype_from_numpy,
    parse_metadata_v3,
)

zarr = pytest.importorskip("zarr")

# zarr-python warns that its v3 encodings of numpy-only types may change.
pytestmark = pytest.mark.filterwarnings("ignore:The data type")


def zarr_python_doc(key="zarr.json", **kwargs):
    store = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(store=store, **kwargs)
    return json.loads(store[key].to_bytes())


def base_doc(**changes):
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10, 20],
        "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {"foo": 42},
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


def test_chunk_key_encoding():
    assert ChunkKeyEncoding().encode((1, 2)) == "c/1/2"
    assert ChunkKeyEncoding().encode(()) == "c"
    assert ChunkKeyEncoding("default", ".").encode((1, 23, 45)) == "c.1.23.45"
    assert ChunkKeyEncoding("v2").encode((1, 2)) == "1.2"
    assert ChunkKeyEncoding("v2").encode(()) == "0"
    assert ChunkKeyEncoding("v2", "/").encode((1, 2)) == "1/2"
    assert ChunkKeyEncoding("v2").to_json() == {"name": "v2", "configuration": {"separator": "."}}
    assert ChunkKeyEncoding.from_json("default") == ChunkKeyEncoding()
    assert ChunkKeyEncoding.from_json({"name": "v2"}) == ChunkKeyEncoding("v2", ".")
    assert ChunkKeyEncoding.from_json({"name": "default", "configuration": {}}).separator == "/"
    for bad in ({"name": "x"}, {"name": "default", "configuration": {"separator": "-"}}, 3, {"name": "v2", "configuration": {"foo": 1}}):
        with pytest.raises(MetadataError, match="chunk_key_encoding"):
            ChunkKeyEncoding.from_json(bad)
    with pytest.raises(ValueError):
        ChunkKeyEncoding("default", "-")


def test_round_trip_spec_example():
    doc = base_doc(dimension_names=["rows", None])
    meta = ArrayMetadataV3.from_json(json.dumps(doc).encode())
    assert meta.shape == (10, 20) and meta.chunk_shape == (5, 5) and meta.ndim == 2
    assert meta.dtype == np.dtype("f8") and np.isnan(meta.fill_value)
    assert meta.dimension_names == ("rows", None)
    assert meta.zarr_format == 3 and meta.node_type == "array"
    assert meta.chunk_key((1, 3)) == "c/1/3"
    out = meta.to_json()
    assert list(out) == [  # zarr-python's order
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "dimension_names",
        "zarr_format",
        "node_type",
        "storage_transformers",
    ]
    assert out == {**doc, "storage_transformers": []}
    assert json.loads(meta.to_bytes()) == out
    assert meta.to_bytes().startswith(b'{\n  "shape": [')
    assert parse_metadata_v3(meta.to_bytes()) == meta


def test_evolve_and_defaults():
    meta = ArrayMetadataV3(shape=(4,), data_type=np.dtype(">i2"), chunk_shape=(2,))
    assert meta.dtype == np.dtype("<i2") and meta.fill_value == 0
    assert meta.codecs == [{"name": "bytes", "configuration": {"endian": "little"}}]
    assert ArrayMetadataV3(shape=(), data_type="u1", chunk_shape=()).codecs == [{"name": "bytes"}]
    bigger = meta.evolve(shape=(8,), attributes={"a": 1})
    assert bigger.shape == (8,) and bigger.attributes == {"a": 1} and meta.shape == (4,)
    with pytest.raises(MetadataError, match="chunk_grid"):
        meta.evolve(shape=(8, 8))
    with pytest.raises(ValueError):
        meta.evolve(fill_value=2**20)


def test_extra_fields_kept():
    ext = {"must_understand": False, "value": [1, 2]}
    meta = ArrayMetadataV3.from_json(base_doc(my_extension=ext))
    assert meta.extra == {"my_extension": ext}
    assert meta.to_json()["my_extension"] == ext
    group = GroupMetadataV3.from_json({"zarr_format": 3, "node_type": "group", "x": ext})
    assert group.to_json()["x"] == ext


@pytest.mark.parametrize(
    "changes,field",
    [
        ({"shape": ...}, "shape"),
        ({"shape": [10, -1]}, "shape"),
        ({"shape": [10, 2.5]}, "shape"),
        ({"shape": "10"}, "shape"),
        ({"zarr_format": 2}, "zarr_format"),
        ({"zarr_format": ...}, "zarr_format"),
        ({"node_type": "group"}, "node_type"),
        ({"node_type": ...}, "node_type"),
        ({"data_type": ...}, "data_type"),
        ({"fill_value": ...}, "fill_value"),
        ({"fill_value": "nan"}, "fill_value"),
        ({"fill_value": None}, "fill_value"),
        ({"codecs": ...}, "codecs"),
        ({"codecs": []}, "codecs"),
        ({"codecs": [{"configuration": {}}]}, "codecs"),
        ({"chunk_key_encoding": ...}, "chunk_key_encoding"),
        ({"chunk_key_encoding": {"name": "mine"}}, "chunk_key_encoding"),
        ({"chunk_grid": ...}, "chunk_grid"),
        ({"chunk_grid": {"name": "rectilinear", "configuration": {}}}, "chunk_grid"),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}}}, "chunk_grid"),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 0]}}}, "chunk_grid"),
        ({"chunk_grid": {"name": "regular", "configuration": {}}}, "chunk_grid"),
        ({"attributes": []}, "attributes"),
        ({"dimension_names": ["x"]}, "dimension_names"),
        ({"dimension_names": ["x", 1]}, "dimension_names"),
        ({"storage_transformers": [{"name": "sharding_index"}]}, "storage_transformers"),
        ({"unknown_thing": 1}, "unknown_thing"),
        ({"unknown_thing": {"name": "x"}}, "unknown_thing"),
        ({"unknown_thing": {"must_understand": True}}, "unknown_thing"),
    ],
)
def test_malformed_array(changes, field):
    with pytest.raises(MetadataError, match=rf"^a/zarr\.json: field '{field}'"):
        ArrayMetadataV3.from_json(base_doc(**changes), where="a/zarr.json")


def test_unknown_data_type():
    with pytest.raises(UnknownDataTypeError, match="data_type"):
        ArrayMetadataV3.from_json(base_doc(data_type={"name": "foo.bar", "configuration": {}}))


def test_ignorable_storage_transformer_kept():
    st = [{"name": "x", "must_understand": False}]
    assert ArrayMetadataV3.from_json(base_doc(storage_transformers=st)).to_json()["storage_transformers"] == st


@pytest.mark.parametrize("doc", [b"{", b"\xff", "[]", b"null"])
def test_bad_documents(doc):
    with pytest.raises(MetadataError, match="zarr.json"):
        parse_metadata_v3(doc)


def test_group():
    group = parse_metadata_v3(b'{"zarr_format": 3, "node_type": "group"}')
    assert isinstance(group, GroupMetadataV3)
    assert group.attributes == {} and group.consolidated_metadata is None
    assert group.to_json() == {"zarr_format": 3, "node_type": "group", "attributes": {}}
    assert group.zarr_format == 3 and group.node_type == "group"
    with pytest.raises(MetadataError, match="attributes"):
        GroupMetadataV3.from_json({"zarr_format": 3, "node_type": "group", "attributes": 1})
    with pytest.raises(MetadataError, match="node_type"):
        parse_metadata_v3({"zarr_format": 3, "node_type": "thing"})
    with pytest.raises(MetadataError, match="zarr_format"):
        parse_metadata_v3({"zarr_format": 2, "node_type": "group"})


def test_zarr_python_consolidated_group():
    store = {}
    root = zarr.open_group(store=store, mode="w", zarr_format=3, attributes={"a": 1})
    root.create_array("x", shape=(3,), dtype="i4")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(store)
    doc = json.loads(store["zarr.json"].to_bytes())
    group = parse_metadata_v3(doc)
    assert group.consolidated_metadata["kind"] == "inline"
    assert group.to_json() == doc
    inner = group.consolidated_metadata["metadata"]["x"]
    assert ArrayMetadataV3.from_json(inner).to_json() == {k: v for k, v in inner.items()}


CASES = [
    dict(shape=(10, 20), chunks=(5, 5), dtype="f8"),
    dict(shape=(10,), chunks=(3,), dtype="f4", fill_value=np.float32("nan")),
    dict(shape=(10,), chunks=(3,), dtype="f2", fill_value=-np.inf),
    dict(shape=(7,), chunks=(7,), dtype="i1", fill_value=-5),
    dict(shape=(7,), chunks=(7,), dtype="u8", fill_value=2**64 - 1),
    dict(shape=(7,), chunks=(7,), dtype="i8", fill_value=-(2**63)),
    dict(shape=(7,), chunks=(7,), dtype="bool", fill_value=True),
    dict(shape=(7,), chunks=(7,), dtype="c8", fill_value=1 + 2j),
    dict(shape=(7,), chunks=(7,), dtype="c16", fill_value=complex("nan+infj")),
    dict(shape=(7,), chunks=(7,), dtype="V3", fill_value=b"abc"),
    dict(shape=(), chunks=(), dtype="u2"),
    dict(shape=(0, 5), chunks=(2, 2), dtype="i4", dimension_names=("a", None)),
    dict(shape=(4, 4), chunks=(2, 2), dtype="i4", chunk_key_encoding={"name": "v2", "separator": "."}),
    dict(shape=(4, 4), chunks=(2, 2), dtype="i4", chunk_key_encoding={"name": "default", "separator": "."}),
    dict(shape=(4, 4), chunks=(2, 2), dtype="i4", attributes={"x": [1, "a", None]}),
    dict(shape=(4,), chunks=(2,), dtype=str),
    dict(shape=(4,), chunks=(2,), dtype=str, fill_value="héllo"),
    dict(shape=(4,), chunks=(2,), dtype=zarr.dtype.VariableLengthBytes(), fill_value=b"ab\x00"),
    dict(shape=(4,), chunks=(2,), dtype="U3", fill_value="abc"),
    dict(shape=(4,), chunks=(2,), dtype="S5", fill_value=b"ab"),
    dict(shape=(4,), chunks=(2,), dtype="M8[10s]"),
    dict(shape=(4,), chunks=(2,), dtype="M8[s]", fill_value=np.datetime64("2000-01-01")),
    dict(shape=(4,), chunks=(2,), dtype="m8[ns]", fill_value=np.timedelta64(5, "ns")),
    dict(shape=(4,), chunks=(2,), dtype=[("a", "<i4"), ("b", "S2")], fill_value=np.array((1, b"x"), dtype=[("a", "<i4"), ("b", "S2")])[()]),
    dict(shape=(4,), chunks=(2,), dtype=[("a", "<i4"), ("b", [("c", ">f4")])]),
]


@pytest.mark.parametrize("kwargs", CASES, ids=lambda kw: f"{kw['dtype']}-{kw.get('fill_value')}"[:40])
def test_matches_zarr_python(kwargs):
    doc = zarr_python_doc(**kwargs)
    meta = ArrayMetadataV3.from_json(doc)
    out = meta.to_json()
    for key in doc:
        assert out[key] == doc[key], key
    assert set(out) == set(doc)
    # and zarr-python accepts what we write
    store = {"zarr.json": zarr.core.buffer.cpu.Buffer.from_bytes(meta.to_bytes())}
    z = zarr.open_array(store=store, mode="r")
    assert z.shape == meta.shape and z.dtype == meta.dtype
    assert json.loads(json.dumps(z.metadata.to_dict()["fill_value"])) == out["fill_value"]


def test_build_like_zarr_python():
    doc = zarr_python_doc(shape=(6, 4), chunks=(3, 2), dtype="f4", fill_value=1.5, compressors=None)
    meta = ArrayMetadataV3(shape=(6, 4), data_type=dtype_from_numpy("f4"), chunk_shape=(3, 2), fill_value=1.5)
    assert meta.to_json() == doc
