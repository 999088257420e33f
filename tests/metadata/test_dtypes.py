import base64
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarrcore.errors import MetadataError, UnknownDataTypeError
from zarrcore.metadata.dtypes import (
    DataType,
    dtype_from_numpy,
    dtype_from_v2_json,
    dtype_from_v3_json,
    register_data_type,
    registered_data_types,
)

# The dtype of zarrcore's string arrays: numpy 2's StringDType, object arrays of str before.
STRING = (np.dtypes.StringDType() if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType")
          else np.dtype(object))

CORE_V3 = {
    "bool": "|b1",
    "int8": "|i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint8": "|u1",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
}


def bits_of(x):
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}").item() if x.dtype.kind == "f" else x.tobytes()


@pytest.mark.parametrize("name,typestr", CORE_V3.items())
def test_core_v3_names(name, typestr):
    dt = dtype_from_v3_json(name)
    assert dt.to_json_v3() == name
    assert dt.numpy_dtype == np.dtype(typestr)
    assert dt.numpy_dtype.isnative
    assert dt.to_json_v2() == typestr
    assert dtype_from_numpy(typestr) == dt
    assert dtype_from_v2_json(typestr) == dt
    assert dtype_from_v3_json({"name": name}) == dt
    assert dt.v2_object_codec_id is None
    fill = dt.default_fill_value()
    assert fill.dtype == dt.numpy_dtype and not fill
    assert dt.fill_value_from_json(dt.fill_value_to_json(fill, 3), 3) == fill


def test_v2_keeps_byte_order():
    dt = dtype_from_v2_json(">f8")
    assert dt.numpy_dtype == np.dtype(">f8")
    assert dt.to_json_v2() == ">f8" and dt.to_json_v3() == "float64"
    assert dt != dtype_from_v2_json("<f8")
    assert dt.fill_value_from_json("NaN", 2).dtype == np.float64


def test_raw_bits():
    dt = dtype_from_v3_json("r24")
    assert dt.numpy_dtype == np.dtype("V3") and dt.to_json_v3() == "r24"
    fill = dt.fill_value_from_json([1, 2, 255], 3)
    assert isinstance(fill, np.void) and fill.tobytes() == b"\x01\x02\xff"
    assert dt.fill_value_to_json(fill, 3) == [1, 2, 255]
    assert dt.fill_value_to_json(dt.default_fill_value(), 3) == [0, 0, 0]
    assert dt.to_json_v2() == "|V3"
    for bad in ([1, 2], [1, 2, 256], [1, 2, -1], "x", None, [1, 2, True]):
        with pytest.raises(MetadataError, match="fill_value"):
            dt.fill_value_from_json(bad, 3)
    with pytest.raises(MetadataError, match="data_type"):
        dtype_from_v3_json("r7")


def test_raw_bytes_zarr_python_form():
    dt = dtype_from_numpy("V3")
    assert dt.to_json_v3() == {"name": "raw_bytes", "configuration": {"length_bytes": 3}}
    assert dt.fill_value_to_json(b"abc", 3) == "YWJj"
    assert dt.fill_value_from_json("YWJj", 3).tobytes() == b"abc"
    assert dtype_from_v3_json(dt.to_json_v3()) == dt
    assert dtype_from_v2_json("|V3") == dt


@pytest.mark.parametrize(
    "name,value,expected",
    [
        ("int8", -128, -128),
        ("int8", 127, 127),
        ("uint64", 2**64 - 1, 2**64 - 1),
        ("int64", -(2**63), -(2**63)),
        ("int32", 5.0, 5),
        ("float32", 1, 1.0),
        ("float64", 0.1, 0.1),
        ("float16", 65504, 65504.0),
        ("float32", 1e300, math.inf),
        ("float64", "Infinity", math.inf),
        ("float64", "-Infinity", -math.inf),
        ("bool", True, True),
    ],
)
def test_fill_value_decode(name, value, expected):
    got = dtype_from_v3_json(name).fill_value_from_json(value, 3)
    assert got == expected and got.dtype == dtype_from_v3_json(name).numpy_dtype


@pytest.mark.parametrize(
    "name,value",
    [
        ("int8", 128),
        ("int8", -129),
        ("uint8", -1),
        ("uint64", 2**64),
        ("int32", 1.5),
        ("int32", True),
        ("int32", "0x10"),
        ("int32", "1"),
        ("int32", None),
        ("bool", 1),
        ("bool", "true"),
        ("float32", "nan"),
        ("float32", "0x1ffffffff"),
        ("float32", "1.5"),
        ("float32", True),
        ("float32", None),
        ("float32", [1.0]),
        ("complex64", [1.0]),
        ("complex64", 1.0),
        ("complex64", [1.0, "x"]),
    ],
)
def test_fill_value_invalid(name, value):
    with pytest.raises(MetadataError, match=r"zarr\.json.*fill_value"):
        dtype_from_v3_json(name).fill_value_from_json(value, 3)


def test_fill_value_error_names_document():
    with pytest.raises(MetadataError, match=r"a/b/\.zarray.*fill_value"):
        dtype_from_v2_json("|i1").fill_value_from_json(300, 2, where="a/b/.zarray")


def test_nan_encodings():
    f4 = dtype_from_v3_json("float32")
    assert f4.fill_value_to_json(np.float32("nan"), 3) == "NaN"
    assert bits_of(f4.fill_value_from_json("NaN", 3)) == 0x7FC00000
    assert bits_of(f4.fill_value_from_json("0x7fc00000", 3)) == 0x7FC00000
    payload = np.array([0x7FC00001], dtype="u4").view("f4")[0]
    assert f4.fill_value_to_json(payload, 3) == "0x7fc00001"
    assert bits_of(f4.fill_value_from_json("0x7FC00001", 3)) == 0x7FC00001
    negative_nan = np.array([0xFFC00000], dtype="u4").view("f4")[0]
    assert f4.fill_value_to_json(negative_nan, 3) == "0xffc00000"
    # v2 has no payload syntax
    assert f4.fill_value_to_json(payload, 2) == "NaN"
    f2 = dtype_from_v3_json("float16")
    assert f2.fill_value_to_json(np.float16("nan"), 3) == "NaN"
    assert bits_of(f2.fill_value_from_json("0x7c01", 3)) == 0x7C01
    f8 = dtype_from_v3_json("float64")
    assert f8.fill_value_to_json(np.inf, 3) == "Infinity"
    assert f8.fill_value_to_json(-np.inf, 3) == "-Infinity"
    assert f8.fill_value_to_json(-0.0, 3) == 0.0 and math.copysign(1, f8.fill_value_to_json(-0.0, 3)) < 0


def test_complex_fill():
    c16 = dtype_from_v3_json("complex128")
    assert c16.fill_value_from_json([1, 2], 3) == 1 + 2j
    assert c16.fill_value_to_json(1 + 2j, 3) == [1.0, 2.0]
    v = c16.fill_value_from_json(["-Infinity", "NaN"], 3)
    assert v.real == -math.inf and math.isnan(v.imag)
    assert c16.fill_value_to_json(v, 3) == ["-Infinity", "NaN"]
    c8 = dtype_from_v3_json("complex64")
    v = c8.fill_value_from_json(["0x7fc00005", 0.5], 3)
    assert c8.fill_value_to_json(v, 3) == ["0x7fc00005", 0.5]


@given(st.sampled_from([2, 4, 8]), st.data())
def test_float_bits_round_trip(size, data):
    bits = data.draw(st.integers(0, 2 ** (8 * size) - 1))
    value = np.array([bits], dtype=f"u{size}").view(f"f{size}")[0]
    dt = dtype_from_numpy(f"f{size}")
    encoded = dt.fill_value_to_json(value, 3)
    if isinstance(encoded, str) and encoded.startswith("0x"):
        assert math.isnan(value)
    decoded = dt.fill_value_from_json(encoded, 3)
    assert bits_of(decoded) == bits


@given(st.sampled_from([8, 16]), st.data())
def test_complex_bits_round_trip(size, data):
    raw = data.draw(st.binary(min_size=size, max_size=size))
    value = np.frombuffer(raw, dtype=f"c{size}")[0]
    dt = dtype_from_numpy(f"c{size}")
    decoded = dt.fill_value_from_json(dt.fill_value_to_json(value, 3), 3)
    assert np.asarray(decoded).tobytes() == raw


@given(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]), st.data())
def test_int_round_trip(name, data):
    dt = dtype_from_v3_json(name)
    info = np.iinfo(dt.numpy_dtype)
    value = data.draw(st.integers(int(info.min), int(info.max)))
    encoded = dt.fill_value_to_json(value, 3)
    assert encoded == value and type(encoded) is int
    assert dt.fill_value_from_json(encoded, 3) == value


def test_cast_fill_value_errors():
    with pytest.raises(ValueError):
        dtype_from_numpy("i1").fill_value_to_json(300, 3)
    with pytest.raises((TypeError, ValueError)):
        dtype_from_numpy("f4").fill_value_to_json("abc", 3)


@pytest.mark.parametrize("bad", ["int128", "float8", {"name": "nope"}, "r0", {"name": "int32", "configuration": {"x": 1}}])
def test_unknown_v3_types(bad):
    with pytest.raises(UnknownDataTypeError, match="data_type"):
        dtype_from_v3_json(bad)


@pytest.mark.parametrize("bad", [3, None, [], {"configuration": {}}])
def test_malformed_v3_types(bad):
    with pytest.raises(MetadataError, match="data_type"):
        dtype_from_v3_json(bad)


@pytest.mark.parametrize("bad", ["<x4", "|O", "<f16", 7])
def test_unknown_v2_types(bad):
    with pytest.raises(UnknownDataTypeError, match="dtype"):
        dtype_from_v2_json(bad)


@pytest.mark.parametrize("bad", ["float128", "O", object, "not a dtype"])
def test_dtype_from_numpy_unsupported(bad):
    with pytest.raises(TypeError):
        dtype_from_numpy(bad)


def test_register_user_type():
    class Int4Bits(DataType):
        """A made-up type stored as one byte per element."""

        @classmethod
        def from_json_v3(cls, obj, where="zarr.json"):
            return cls("i1") if obj == "test.int4" else None

        @classmethod
        def from_json_v2(cls, obj, object_codec_id=None, where=".zarray"):
            return cls("i1") if obj == "test.int4" else None

        def to_json_v3(self):
            return "test.int4"

        def to_json_v2(self):
            return "test.int4"

        def _decode_fill(self, value, zarr_format):
            if not isinstance(value, int) or not -8 <= value < 8:
                raise ValueError("expected an int in [-8, 8)")
            return np.int8(value)

        def _encode_fill(self, value, zarr_format):
            return int(value)

    register_data_type(Int4Bits)
    try:
        dt = dtype_from_v3_json("test.int4")
        assert isinstance(dt, Int4Bits) and dt.numpy_dtype == np.dtype("i1")
        assert isinstance(dtype_from_v2_json("test.int4"), Int4Bits)
        assert dt.fill_value_from_json(3, 3) == 3
        with pytest.raises(MetadataError, match="fill_value"):
            dt.fill_value_from_json(9, 3)
        # the built-in int8 still wins for numpy input: the user type has no from_numpy
        assert dtype_from_numpy("i1").to_json_v3() == "int8"
    finally:
        from zarrcore.metadata import dtypes

        dtypes.base._REGISTRY.remove(Int4Bits)
    assert Int4Bits not in registered_data_types()
    with pytest.raises(TypeError):
        register_data_type(int)


# -- extended types ----------------------------------------------------------

EXTENDED = [
    # (numpy input, v3 JSON, v2 JSON, object codec id)
    (str, "string", "|O", "vlen-utf8"),
    (bytes, "variable_length_bytes", "|O", "vlen-bytes"),
    ("U3", {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}, "<U3", None),
    ("S5", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 5}}, "|S5", None),
    ("V7", {"name": "raw_bytes", "configuration": {"length_bytes": 7}}, "|V7", None),
    ("M8[10s]", {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}}, "<M8[10s]", None),
    ("M8", {"name": "numpy.datetime64", "configuration": {"unit": "generic", "scale_factor": 1}}, "<M8", None),
    ("m8[ns]", {"name": "numpy.timedelta64", "configuration": {"unit": "ns", "scale_factor": 1}}, "<m8[ns]", None),
    (
        [("a", "<i4"), ("b", [("c", "<f4"), ("d", "u1")])],
        {
            "name": "structured",
            "configuration": {
                "fields": [
                    ["a", "int32"],
                    ["b", {"name": "structured", "configuration": {"fields": [["c", "float32"], ["d", "uint8"]]}}],
                ]
            },
        },
        [["a", "<i4"], ["b", [["c", "<f4"], ["d", "|u1"]]]],
        None,
    ),
]


@pytest.mark.parametrize("np_in,v3,v2,codec", EXTENDED, ids=lambda x: str(x)[:30])
def test_extended_names(np_in, v3, v2, codec):
    dt = dtype_from_numpy(np_in)
    assert dt.to_json_v3() == v3 and dt.to_json_v2() == v2
    assert dt.v2_object_codec_id == codec
    assert dtype_from_v3_json(v3) == dt
    assert dtype_from_v2_json(v2, codec) == dt
    fill = dt.default_fill_value()
    for fmt in (2, 3):
        again = dt.fill_value_from_json(json.loads(json.dumps(dt.fill_value_to_json(fill, fmt))), fmt)
        if dt.numpy_dtype.kind in "OTUS":
            assert again == fill
        else:
            assert again.dtype == dt.numpy_dtype.newbyteorder("=") or again.dtype == dt.numpy_dtype
            assert np.asarray(again).tobytes() == np.asarray(fill).tobytes()


def test_string_fill_values():
    dt = dtype_from_numpy("string")
    assert dt.numpy_dtype == STRING
    assert dtype_from_numpy(str) == dt
    if STRING.kind == "T":  # (numpy < 2 has no StringDType: its strings are objects)
        assert dtype_from_numpy(np.dtypes.StringDType()) == dt
    assert dt.fill_value_from_json("héllo", 3) == "héllo"
    assert type(dt.fill_value_from_json("x", 3)) is str
    assert dt.fill_value_from_json("a\x00", 3) == "a\x00"  # trailing NULs are kept
    assert dt.fill_value_to_json("\x00", 3) == "\x00"
    assert dt.fill_value_to_json("héllo", 2) == "héllo"
    assert dt.fill_value_from_json(0, 2) == "0"  # zarr 2.x's default for object arrays, as zarr-python 3 reads it
    assert dt.fill_value_from_json(None, 2) is None
    # A number is its text in v3 too, as zarr-python 3 reads and creates it.
    assert dt.fill_value_from_json(0, 3) == "0" and dt.fill_value_to_json(5, 3) == "5"
    for bad in (None, b"x", ["a"], True):
        with pytest.raises(MetadataError, match="fill_value"):
            dt.fill_value_from_json(bad, 3)
    with pytest.raises(TypeError):
        dt.fill_value_to_json(b"x", 3)


def test_vlen_bytes_fill_values():
    dt = dtype_from_numpy(bytes)
    assert dt.numpy_dtype == np.dtype(object)
    assert dtype_from_v3_json("bytes") == dt  # zarr-python's alias
    assert dt.fill_value_to_json(b"ab\x00", 3) == "YWIA"
    assert dt.fill_value_from_json("YWIA", 3) == b"ab\x00"
    assert dt.fill_value_from_json("YWI=", 2) == b"ab"
    for bad in ("not base64!", 1, "YWI"):
        with pytest.raises(MetadataError, match="fill_value"):
            dt.fill_value_from_json(bad, 3)


def test_object_dtype_needs_codec():
    with pytest.raises(UnknownDataTypeError, match="vlen-utf8"):
        dtype_from_v2_json("|O")
    with pytest.raises(UnknownDataTypeError, match="dtype"):
        dtype_from_v2_json("|O", "base64")
    assert dtype_from_v2_json("|O", "vlen-utf8").to_json_v3() == "string"
    # the codec id is only consulted for object dtypes
    assert dtype_from_v2_json("<i4", "vlen-utf8").to_json_v3() == "int32"


def test_fixed_length_strings():
    u = dtype_from_v3_json({"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}})
    assert u.numpy_dtype == np.dtype("<U2")
    assert u.fill_value_from_json("ab", 3) == "ab"
    with pytest.raises(MetadataError, match="fill_value"):
        u.fill_value_from_json("abc", 3)
    big = dtype_from_v2_json(">U3")
    assert big.numpy_dtype == np.dtype(">U3") and big.fill_value_to_json("héy", 2) == "héy"
    s = dtype_from_v2_json("|S3")
    assert s.fill_value_from_json("YWJj", 2) == b"abc"
    assert isinstance(s.fill_value_from_json("YWI=", 3), np.bytes_)
    assert s.fill_value_to_json(b"ab", 3) == "YWI="
    with pytest.raises(MetadataError, match="fill_value"):
        s.fill_value_from_json("YWJjZA==", 3)
    for bad in (
        {"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}},
        {"name": "fixed_length_utf32"},
        {"name": "null_terminated_bytes", "configuration": {"length_bytes": 0}},
        {"name": "raw_bytes", "configuration": {"length_bytes": "3"}},
    ):
        with pytest.raises(MetadataError, match="data_type"):
            dtype_from_v3_json(bad)


def test_time_fill_values():
    dt = dtype_from_numpy("M8[s]")
    assert dt.fill_value_from_json(946684800, 3) == np.datetime64("2000-01-01T00:00:00")
    assert dt.fill_value_to_json(np.datetime64("2000-01-01"), 3) == 946684800
    nat = dt.fill_value_from_json(-(2**63), 3)
    assert np.isnat(nat) and dt.fill_value_to_json(nat, 2) == -(2**63)
    assert np.isnat(dt.default_fill_value()) and dt.default_fill_value().dtype == np.dtype("M8[s]")
    td = dtype_from_v2_json(">m8[10ms]")
    assert td.numpy_dtype == np.dtype(">m8[10ms]")
    assert td.fill_value_from_json(3, 2) == np.timedelta64(30, "ms")
    assert np.isnat(dt.fill_value_from_json("NaT", 3)) and np.isnat(td.fill_value_from_json("NaT", 2))
    for bad in (2**63, "nat", "2000-01-01", 1.5, True):
        with pytest.raises(MetadataError, match="fill_value"):
            dt.fill_value_from_json(bad, 3)
    for config in ({"unit": "parsec", "scale_factor": 1}, {"unit": "s", "scale_factor": 0}, {"unit": "s"}, {"unit": "s", "scale_factor": 2**31}):
        with pytest.raises(MetadataError, match="data_type"):
            dtype_from_v3_json({"name": "numpy.datetime64", "configuration": config})


def test_structured():
    v2 = [["a", ">i2"], ["b", [["c", ">f4"], ["d", "<i2"]]], ["e", "|S2", [2, 3]]]
    dt = dtype_from_v2_json(v2)
    assert dt.numpy_dtype == np.dtype([("a", ">i2"), ("b", [("c", ">f4"), ("d", "<i2")]), ("e", "S2", (2, 3))])
    assert dt.to_json_v2() == v2
    with pytest.raises(TypeError, match="shape"):
        dt.to_json_v3()
    fill = np.zeros((), dtype=dt.numpy_dtype)[()]
    fill["a"] = 7
    encoded = dt.fill_value_to_json(fill, 2)
    assert dt.fill_value_from_json(encoded, 2).tobytes() == fill.tobytes()
    assert dt.fill_value_from_json(encoded, 2)["a"] == 7
    # zarr-extensions' "struct" form: object fields and fill values, kept when written back
    struct_json = {"name": "struct", "configuration": {"fields": [
        {"name": "x", "data_type": "uint8"},
        {"name": "p", "data_type": {"name": "struct", "configuration": {"fields": [
            {"name": "t", "data_type": {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}},
            {"name": "f", "data_type": "float32"}]}}}]}}
    struct = dtype_from_v3_json(struct_json)
    assert struct.numpy_dtype == np.dtype([("x", "u1"), ("p", [("t", "M8[s]"), ("f", "<f4")])])
    assert struct.to_json_v3() == struct_json
    fill_json = {"x": 3, "p": {"t": "NaT", "f": "NaN"}}
    fill = struct.fill_value_from_json(fill_json, 3)
    assert fill["x"] == 3 and np.isnat(fill["p"]["t"]) and np.isnan(fill["p"]["f"])
    assert struct.fill_value_to_json(fill, 3) == {"x": 3, "p": {"t": -(2**63), "f": "NaN"}}
    # either field form and either fill form under either name
    mixed = dtype_from_v3_json({"name": "struct", "configuration": {"fields": [["x", "uint8"], ["y", "float64"]]}})
    assert mixed.to_json_v3()["configuration"]["fields"][1] == {"name": "y", "data_type": "float64"}
    assert mixed.fill_value_from_json(base64.b64encode(bytes(9)).decode(), 3).tobytes() == bytes(9)
    old = dtype_from_v3_json({"name": "structured", "configuration": {"fields": [["x", "uint8"], ["y", "float64"]]}})
    assert old.fill_value_from_json({"x": 1, "y": -0.5}, 3).tolist() == (1, -0.5)
    assert old.numpy_dtype == np.dtype([("x", "u1"), ("y", "<f8")])
    fill = old.fill_value_from_json(old.fill_value_to_json((3, 1.5), 3), 3)
    assert fill["x"] == 3 and fill["y"] == 1.5
    for bad in ({"x": 1}, {"x": 1, "y": 2, "z": 3}, {"x": "a", "y": 1}):
        with pytest.raises(MetadataError, match="fill_value"):
            old.fill_value_from_json(bad, 3)
    for bad in ([["a"]], [["a", "<i4", "x"]], [["a", "<i4"], ["a", "<i4"]], [[1, "<i4"]], [["a", "|O"]]):
        with pytest.raises(MetadataError, match="dtype"):
            dtype_from_v2_json(bad)
    for bad in ({"fields": []}, {"fields": [["a"]]}, {}, {"fields": [["a", "string"]]}):
        with pytest.raises(MetadataError, match="data_type"):
            dtype_from_v3_json({"name": "structured", "configuration": bad})
    # padded layouts have no JSON form
    with pytest.raises(TypeError):
        dtype_from_numpy(np.dtype({"names": ["a", "b"], "formats": ["i1", "i4"], "offsets": [0, 4]}))
    with pytest.raises(TypeError):
        dtype_from_numpy([("a", "O")])


def _counts(values):
    """The int64 counts of datetime/timedelta items, in whatever byte order they carry."""
    return values.view(np.dtype("i8").newbyteorder(values.dtype.byteorder)).astype("=i8")


TIME_DTYPES = [f"{order}{kind}8{unit}" for order in "<>" for kind in "Mm" for unit in ("", "[us]")]


@pytest.mark.filterwarnings("ignore:The 'generic' unit for NumPy timedelta:DeprecationWarning")
@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("typestr", TIME_DTYPES)
@given(counts=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=6),
       fill=st.none() | st.integers(-(2**63), 2**63 - 1))
def test_time_values_round_trip_in_any_byte_order(fmt, typestr, counts, fill):
    """Counts written in either byte order, generic unit or not, read back as numpy has them,
    the fill value past them (numpy allocates generic-unit arrays in native order only)."""
    import zarrcore

    dtype = np.dtype(typestr)
    data = np.array(counts, dtype=dtype.byteorder + "i8").view(dtype)
    fill_kwargs = ({} if fill is None
                   else {"fill_value": np.array(fill, "i8").view(dtype.kind + "8")})
    array = zarrcore.create_array({}, shape=(len(counts) + 3,), chunks=(2,), dtype=dtype,
                                  zarr_format=fmt, **fill_kwargs)
    array[: len(counts)] = data
    stored_fill = -(2**63) if fill is None else fill
    expected = counts + [stored_fill] * 3
    assert _counts(array[...]).tolist() == expected
    assert np.datetime_data(array.dtype) == np.datetime_data(dtype)
    reopened = zarrcore.open_array(array.store, mode="r")
    assert _counts(reopened[...]).tolist() == expected
    assert _counts(reopened[1:]).tolist() == expected[1:]
