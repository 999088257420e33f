"""The zarr-extensions registry's codecs: scale_offset, cast_value, bitround, packbits, reshape
and zfp. Each against numpy's (or numcodecs') arithmetic, the registry's and its writers'
documented examples, and, where zarr-python 3.4 writes it, against zarr-python both ways."""
import json
import math
import time

import numpy as np
import pytest
from _peer_arrays import pack, unpack
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from peers import peer  # noqa: F401 (a fixture)

import zarrcore
from zarrcore.codecs import (BitroundCodec, CastValueCodec, ChunkSpec, PackBitsCodec,
                             ReshapeCodec, ScaleOffsetCodec, ZfpCodec, codec_from_json)
from zarrcore.codecs.cast_value import ROUNDINGS
from zarrcore.errors import (
    ChunkDecodeError, ChunkEncodeError, MetadataError, UnknownCodecError,
)

# (The narrow types packbits and the casts take: the ml extra, which not every platform has.)
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (the ml extra) is not installed")


def _spec(a, **kw):
    return ChunkSpec(a.shape, a.dtype, **kw)


def _round_trip_array(tmp_path, data, fill_value=0, **codecs):
    """Write `data` to an array of chunks (3, ...) with `codecs` and read it back."""
    chunks = tuple(min(3, n) for n in data.shape)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, dtype=data.dtype,
                              chunks=chunks, fill_value=fill_value, **codecs)
    a[...] = data
    return zarrcore.open_array(str(tmp_path / "a"))[...]


def _finite(dtype, **kw):
    return hnp.arrays(dtype, hnp.array_shapes(max_dims=2, max_side=6),
                      elements=st.floats(allow_nan=False, allow_infinity=False,
                                         width=8 * np.dtype(dtype).itemsize, **kw))


# -- scale_offset ----------------------------------------------------------------------------

@given(_finite("f4", min_value=-1e6, max_value=1e6),
       st.floats(-100, 100, width=32), st.floats(2 ** -10, 100, width=32))
def test_scale_offset_float_is_numpy_in_the_type(values, offset, scale):
    codec = ScaleOffsetCodec(offset=float(offset), scale=float(scale))
    spec = _spec(values)
    encoded = codec.encode(values, spec)
    assert encoded.dtype == np.float32
    expect = (values - np.float32(offset)) * np.float32(scale)
    np.testing.assert_array_equal(encoded, expect)
    np.testing.assert_array_equal(codec.decode(encoded, spec),
                                  encoded / np.float32(scale) + np.float32(offset))


@given(hnp.arrays("i2", st.integers(1, 20), elements=st.integers(-300, 300)),
       st.integers(-1000, 1000), st.integers(-30, 30).filter(bool))
def test_scale_offset_integers_exact_or_refused(values, offset, scale):
    codec = ScaleOffsetCodec(offset=offset, scale=scale)
    spec = _spec(values)
    exact = (values.astype(object) - offset) * scale
    if exact.min() < -2 ** 15 or exact.max() >= 2 ** 15:
        with pytest.raises(ChunkEncodeError, match="outside the range of dtype int16"):
            codec.encode(values, spec)
        return
    encoded = codec.encode(values, spec)
    assert encoded.dtype == np.int16
    np.testing.assert_array_equal(encoded, exact.astype(np.int16))
    np.testing.assert_array_equal(codec.decode(encoded, spec), values)


def test_scale_offset_integer_errors():
    u = np.array([0, 5, 2 ** 64 - 1], dtype="u8")
    with pytest.raises(ChunkEncodeError, match=r"x - offset gives -1"):
        ScaleOffsetCodec(offset=1).encode(u, _spec(u))
    np.testing.assert_array_equal(ScaleOffsetCodec(offset=0, scale=1).encode(u, _spec(u)), u)
    i = np.array([-(2 ** 63)], dtype="i8")
    with pytest.raises(ChunkEncodeError, match="outside the range of dtype int64"):
        ScaleOffsetCodec(scale=-1).encode(i, _spec(i))
    with pytest.raises(ChunkDecodeError, match="not a multiple of scale 3"):
        ScaleOffsetCodec(scale=3).decode(np.array([3, 4], "i4"), ChunkSpec((2,), np.int32))
    with pytest.raises(ChunkDecodeError, match="outside the range of dtype int64"):
        ScaleOffsetCodec(scale=-1).decode(i, _spec(i))


def test_scale_offset_refuses_types_and_lists_the_supported():
    with pytest.raises(MetadataError, match="bool is not one it takes: int2, int4"):
        ScaleOffsetCodec(offset=1).resolve(ChunkSpec((2,), np.bool_))


def test_scale_offset_small_types():
    b = np.array([1.5, -2.25, 100], dtype=ml_dtypes.bfloat16)
    codec = ScaleOffsetCodec(offset=0.5, scale=2)
    encoded = codec.encode(b, _spec(b))
    assert encoded.dtype == b.dtype
    np.testing.assert_array_equal(encoded.astype("f4"), [2, -5.5, 199])
    i4 = np.array([-2, 1, 2], dtype=ml_dtypes.int4)
    encoded = ScaleOffsetCodec(offset=-1, scale=2).encode(i4, _spec(i4))
    assert encoded.dtype == i4.dtype
    np.testing.assert_array_equal(encoded.astype("i1"), [-2, 4, 6])
    np.testing.assert_array_equal(ScaleOffsetCodec(offset=-1, scale=2).decode(
        encoded, _spec(i4)).astype("i1"), [-2, 1, 2])
    with pytest.raises(ChunkEncodeError, match=r"gives 8, outside the range of dtype int4 \[-8, 7\]"):
        ScaleOffsetCodec(offset=-1, scale=2).encode(i4 + i4.dtype.type(1), _spec(i4))


def test_fill_value_moves_through_the_codecs_into_shards(tmp_path):
    """A shard's missing inner chunks are the fill value as the codecs before it encode it:
    (9 - 5) * 2 = 8 in int8, which decodes back to 9."""
    sharding = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}
    codecs = [{"name": "scale_offset", "configuration": {"offset": 5, "scale": 2}},
              {"name": "cast_value", "configuration": {"data_type": "int8"}}, sharding]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [10], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 9, "codecs": codecs}))
    a = zarrcore.open_array(str(tmp_path / "a"), mode="r+")
    a[0:3] = [5, 6, 7]
    np.testing.assert_array_equal(a[...], [5, 6, 7] + [9] * 7)
    shard = (tmp_path / "a" / "c" / "0").read_bytes()
    assert shard[:4] == bytes([0, 2, 4, 8])  # inner chunks [5, 6] and [7, fill]
    with pytest.raises(ChunkEncodeError, match="out of the range of int8"):
        a[9] = 100


# -- cast_value ------------------------------------------------------------------------------

def _cast(values, data_type, src=None, **config):
    x = np.array(values, dtype=src)
    codec = CastValueCodec(data_type=data_type, **config)
    codec.resolve(_spec(x))
    return codec.encode(x, _spec(x))


# The results of zarr-python 3.4's cast_value (cast-value-rs 0.5) for the same casts.
CAST_CASES = [
    ([2.5, -2.5, 0.5, 1.5, -0.5], "int64", None, {"rounding": "nearest-away"}, [3, -3, 1, 2, -1]),
    ([2.5, -2.5, 0.5, 1.5, -0.5], "int8", None, {}, [2, -2, 0, 2, 0]),
    ([2.7, -2.7], "int8", None, {"rounding": "towards-positive"}, [3, -2]),
    ([2.7, -2.7], "int8", None, {"rounding": "towards-negative"}, [2, -3]),
    ([2.7, -2.7], "int8", None, {"rounding": "towards-zero"}, [2, -2]),
    ([300.0, -300.0], "uint8", None, {"out_of_range": "wrap"}, [44, 212]),
    ([300.0, -300.0], "uint8", None, {"out_of_range": "clamp"}, [255, 0]),
    ([np.nan], "uint8", None, {"scalar_map": {"encode": [["NaN", 7]]}}, [7]),
    ([70000.0], "float16", None, {"out_of_range": "clamp"}, [np.inf]),
    ([np.inf, np.nan, -0.0], "float16", None, {}, [np.inf, np.nan, -0.0]),
    ([2 ** 53 + 1], "float64", "i8", {"rounding": "towards-positive"}, [2.0 ** 53 + 2]),
    ([2 ** 63 - 1], "float32", "i8", {}, [2.0 ** 63]),
    ([2 ** 63 - 1], "float32", "i8", {"rounding": "towards-zero"}, [9.2233715e18]),
    ([-5, 300], "uint8", "i8", {"out_of_range": "wrap"}, [251, 44]),
    ([-5, 300], "int8", "i8", {"out_of_range": "clamp"}, [-5, 127]),
    ([2 ** 64 - 1], "int64", "u8", {"out_of_range": "wrap"}, [-1]),
    ([1e300], "float32", None, {"rounding": "towards-zero", "out_of_range": "clamp"}, [np.inf]),
    ([1e-50, -1e-50], "float32", None, {"rounding": "towards-positive"}, [1e-45, -0.0]),
    ([1, 2], "int8", "u1", {"scalar_map": {"encode": [[1, 5], [1, 6]]}}, [5, 2]),
    ([1e300], "uint64", None, {"out_of_range": "wrap"}, [0]),
    ([1.5e19], "uint64", None, {}, [15000000000000000000]),
    ([1.5e19], "int64", None, {"out_of_range": "wrap"}, [-3446744073709551616]),
    ([1000.0, 0.3], "float8_e4m3fn", None, {"rounding": "towards-zero", "out_of_range": "clamp"},
     [448, 0.28125]),
]


@pytest.mark.parametrize("values, data_type, src, config, expect", CAST_CASES)
def test_cast_value_cases(values, data_type, src, config, expect):
    got = _cast(values, data_type, src, **config)
    assert got.dtype == zarrcore.codecs.numbers.dtype_from_config(data_type, "t")
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype.kind == "V" else got,
                                  np.array(expect, dtype=got.dtype).astype(
                                      np.float64 if got.dtype.kind == "V" else got.dtype))
    if got.dtype.kind == "f":
        assert list(np.signbit(got)) == list(np.signbit(np.array(expect, dtype=got.dtype)))


@pytest.mark.parametrize("values, data_type, src, config, match", [
    ([300.0], "uint8", None, {}, r"300.0 is out of the range of uint8 \[0, 255\]"),
    ([-5], "uint8", "i8", {}, "-5 is out of the range"),
    ([np.nan], "uint8", None, {}, "nan has no value in uint8"),
    ([np.inf], "uint8", None, {"out_of_range": "clamp"}, "inf has no value"),
    ([70000.0], "float16", None, {}, "70000.0 is out of the range of float16"),
    ([np.nan], "float4_e2m1fn", None, {}, "has no NaN"),
])
def test_cast_value_refuses_values(values, data_type, src, config, match):
    with pytest.raises(ChunkEncodeError, match=match):
        _cast(values, data_type, src, **config)


@pytest.mark.parametrize("name, dtype, config, match", [
    ("scale_offset", "i4", {"scale": 0}, "scale must not be zero"),
    ("scale_offset", "i4", {"scale": 0.5}, "scale"),  # not an int32
    ("scale_offset", "i4", {"offset": [1]}, "offset must be a number"),
    ("scale_offset", "i4", {"offset": 1, "bias": 2}, r"'bias'; it takes \['offset', 'scale'\]"),
    # A scale or offset that is not finite in the type would turn every value into NaN.
    ("scale_offset", "f4", {"scale": 1e300}, "scale 1e.300 is not a finite float32"),
    ("scale_offset", "f2", {"scale": 1e6}, "scale 1000000.0 is not a finite float16"),
    ("scale_offset", "f8", {"scale": "NaN"}, "scale 'NaN' is not a finite float64"),
    ("scale_offset", "f8", {"offset": "Infinity"}, "offset 'Infinity' is not a finite"),
    ("scale_offset", "f4", {"offset": "-Infinity"}, "offset '-Infinity' is not a finite"),
    ("cast_value", "f8", {"data_type": "float32", "out_of_range": "wrap"},
     "'wrap' needs an integer"),
    ("cast_value", "f8", {"data_type": "int8", "rounding": "up"}, "rounding 'up' is not one of"),
    ("cast_value", "f8", {"data_type": "int8", "out_of_range": "saturate"}, "'clamp', 'wrap'"),
    ("cast_value", "f8", {"data_type": "string"},
     "target data type string is not one it takes: int2"),
    ("cast_value", "f8", {"data_type": "int8", "scalar_map": {"encode": [[1]]}}, "pairs"),
    ("cast_value", "f8", {"data_type": "int8", "scalar_map": {"both": []}},
     "'encode' and 'decode'"),
    ("cast_value", "f8", {"data_type": "int8", "scalar_map": {"encode": [["NaN", 300]]}}, "300"),
    ("cast_value", "f8", {"data_type": "int8", "extra": 1},
     "'extra'; it takes .'data_type', 'rounding'"),
    ("cast_value", "f8", {}, "data_type"),
])
def test_refuses_configurations(name, dtype, config, match):
    with pytest.raises(MetadataError, match=match):
        codec = codec_from_json({"name": name, "configuration": config})
        codec.resolve(ChunkSpec((2,), np.dtype(dtype)))


def test_cast_value_large_scalar_map_opens_in_linear_time():
    # 40,000 entries (main: 0.3 ms each, 11.7 s), first of each input kept, NaN any NaN,
    # 0.0 and -0.0 one input; then the mapping applies to a chunk in numpy passes.
    n = 40_000
    entries = [[float(i), i % 100] for i in range(n)] + [[0.0, 99], [-0.0, 98], ["NaN", 55],
                                                          ["0x7ff8000000000001", 56], [2.5, 77]]
    codec = {"name": "cast_value", "configuration": {
        "data_type": "int32", "out_of_range": "clamp",
        "scalar_map": {"encode": entries, "decode": [[i % 100, float(i) + 0.5]
                                                     for i in range(n)]}}}
    start = time.perf_counter()
    a = zarrcore.create_array({}, shape=(8,), chunks=(8,), dtype="f8", filters=[codec],
                              compressors=None)
    a[:] = [np.nan, -0.0, 3.0, 2.5, 1e12, -1e12, 39_999.0, 0.25]
    assert a[:].tolist() == [55.5, 0.5, 3.5, 77.5, 2**31 - 1, -2**31, 99.5, 0.5]
    assert time.perf_counter() - start < 10


def test_cast_value_refuses_source_types():
    with pytest.raises(MetadataError, match="array data type complex128 is not one"):
        CastValueCodec(data_type="int8").resolve(ChunkSpec((2,), np.complex128))


_ROUND = {"nearest-even": np.rint, "towards-zero": np.trunc, "towards-positive": np.ceil,
          "towards-negative": np.floor}


@given(_finite("f8", min_value=-1e4, max_value=1e4), st.sampled_from(sorted(_ROUND)),
       st.sampled_from(["int8", "uint8", "int16", "uint16"]))
def test_cast_value_float_to_int_is_numpy_rounding_then_range(values, rounding, target):
    rounded = _ROUND[rounding](values)
    info = np.iinfo(target)
    clamped = _cast(values, target, rounding=rounding, out_of_range="clamp")
    np.testing.assert_array_equal(clamped, np.clip(rounded, info.min, info.max).astype(target))
    wrapped = _cast(values, target, rounding=rounding, out_of_range="wrap")
    np.testing.assert_array_equal(wrapped, rounded.astype(np.int64).astype(target))


@given(_finite("f8", min_value=-1e30, max_value=1e30),
       st.sampled_from(sorted(_ROUND) + ["nearest-away"]))
def test_cast_value_float64_to_float32_picks_the_right_neighbour(values, rounding):
    got = _cast(values, "float32", rounding=rounding).astype(np.float64)
    up = np.nextafter(got.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    down = np.nextafter(got.astype(np.float32), np.float32(-np.inf)).astype(np.float64)
    assert np.all(np.abs(got - values) <= np.maximum(up - got, got - down))
    if rounding == "towards-positive":
        assert np.all((got >= values) & (down < values))
    elif rounding == "towards-negative":
        assert np.all((got <= values) & (up > values))
    elif rounding == "towards-zero":
        assert np.all(np.abs(got) <= np.abs(values))
    else:
        assert np.all(np.abs(got - values) <= np.minimum(up - values, values - down) + 0)
        if rounding == "nearest-even":
            np.testing.assert_array_equal(got, values.astype(np.float32))


def test_cast_value_large_integers_round_exactly():
    values = np.array([2 ** 62 + 2 ** 38 + 1, -(2 ** 62) - 2 ** 38, 2 ** 63 - 1], dtype="i8")
    for rounding, expect in [("towards-zero", [2 ** 62, -(2 ** 62), 2 ** 63 - 2 ** 39]),
                             ("nearest-away", [2 ** 62 + 2 ** 39, -(2 ** 62) - 2 ** 39, 2 ** 63]),
                             ("nearest-even", [2 ** 62 + 2 ** 39, -(2 ** 62), 2 ** 63])]:
        got = _cast(values, "float32", rounding=rounding)
        assert [int(v) for v in got] == expect, rounding


def test_cast_value_round_trip_with_scale_offset(tmp_path):
    """The registry's example: float64 in [0, 2540] as uint8, NaN kept as 0."""
    filters = [
        {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
        {"name": "cast_value", "configuration": {
            "data_type": "uint8", "rounding": "nearest-even",
            "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}},
    ]
    data = np.linspace(0, 2540, 20)
    data[3] = np.nan
    got = _round_trip_array(tmp_path, data, fill_value=np.nan, filters=filters)
    expect = (np.rint((data + 10) * 0.1) / 0.1) - 10
    np.testing.assert_array_equal(got, expect)
    with pytest.raises(ChunkEncodeError, match=r"chunk 'c/0': cast_value codec: 301.0 is out "
                                               r"of the range of uint8"):
        zarrcore.open_array(str(tmp_path / "a"), mode="r+")[0] = 3000


def test_cast_value_fill_value_must_cast(tmp_path):
    with pytest.raises(MetadataError, match="fill value"):
        zarrcore.create_array(str(tmp_path / "a"), shape=(4,), dtype="float32", fill_value=1e6,
                              filters=[{"name": "cast_value",
                                        "configuration": {"data_type": "int8"}}])


# -- bitround --------------------------------------------------------------------------------

# The registry's sample data (keepbits 3) and zarrs' documented examples.
BITROUND_CASES = [
    ("f4", [0.0, 0.1, 1.2, 12.3, 123.4, 1234.5, np.nan, np.inf, -np.inf],
     [0.0, 0.1015625, 1.25, 12.0, 120.0, 1280.0, np.nan, np.inf, -np.inf]),
    ("u1", [0, 1, 10, 11, 100, 123, 200, 208, 209, 255],
     [0, 1, 10, 12, 96, 128, 192, 192, 224, 224]),
    ("u4", [0, 1024, 1280, 1664, 1685, 123145182, 4294967295],
     [0, 1024, 1280, 1536, 1792, 117440512, 3758096384]),
    ("f4", [0.0, 1.23456789, -8.3587192834, 98765.43210], [0.0, 1.25, -8.0, 98304.0]),
]


@pytest.mark.parametrize("dtype, values, expect", BITROUND_CASES)
def test_bitround_examples(dtype, values, expect, tmp_path):
    data = np.array(values, dtype=dtype)
    filters = [{"name": "bitround", "configuration": {"keepbits": 3}}]
    np.testing.assert_array_equal(_round_trip_array(tmp_path, data, filters=filters),
                                  np.array(expect, dtype=dtype))


@pytest.mark.parametrize("dtype", ["f4", "u2"])
def test_bitround_keepbits_beyond_any_width_changes_nothing(dtype, tmp_path):
    data = np.array([0.1, 3, 1234.5] if dtype == "f4" else [3, 1234, 65535], dtype=dtype)
    filters = [{"name": "bitround", "configuration": {"keepbits": 2**64}}]
    np.testing.assert_array_equal(_round_trip_array(tmp_path, data, filters=filters), data)


@given(_finite("f4"), st.integers(1, 22))
def test_bitround_floats_match_numcodecs(values, keepbits):
    numcodecs = pytest.importorskip("numcodecs", reason="numcodecs gives the reference")
    expect = numcodecs.BitRound(keepbits).encode(values).reshape(values.shape)
    got = BitroundCodec(keepbits).encode(values, _spec(values))
    np.testing.assert_array_equal(got.view("u4"), expect.view("u4"))


def _bitround_int(value, bits, keepbits):
    """The registry's integer rounding, one value (its bits as unsigned) at a time."""
    width = value.bit_length()
    if keepbits >= width:
        return value
    drop = width - keepbits
    rounded = value + ((value >> drop) & 1) + (1 << (drop - 1)) - 1
    rounded = min(rounded, (1 << bits) - 1)
    return rounded >> drop << drop


@given(hnp.arrays(st.sampled_from(["u1", "i2", "u4", "i8"]), st.integers(0, 20)),
       st.integers(1, 70))
def test_bitround_integers(values, keepbits):
    bits = 8 * values.itemsize
    unsigned = values.view(f"u{values.itemsize}")
    expect = np.array([_bitround_int(int(v), bits, keepbits) for v in unsigned],
                      dtype=unsigned.dtype).view(values.dtype)
    got = BitroundCodec(keepbits).encode(values, _spec(values))
    np.testing.assert_array_equal(got, expect)


def test_bitround_types_and_configuration():
    c = np.array([1.2 + 3.4j], dtype="c8")
    np.testing.assert_array_equal(BitroundCodec(3).encode(c, _spec(c)), [1.25 + 3.5j])
    b = np.array([1.2345], dtype=ml_dtypes.bfloat16)
    assert float(BitroundCodec(2).encode(b, _spec(b))[0]) == 1.25
    for keepbits in (0, -1, 2.5, True):
        with pytest.raises(MetadataError, match="keepbits must be an integer >= 1"):
            BitroundCodec(keepbits)
    with pytest.raises(MetadataError, match="is not one it takes: float16, bfloat16"):
        BitroundCodec(3).resolve(ChunkSpec((2,), np.dtype("U2")))


# -- packbits --------------------------------------------------------------------------------

PACK_TYPES = [np.bool_, ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.int4, ml_dtypes.uint4,
              ml_dtypes.float4_e2m1fn, ml_dtypes.float6_e2m3fn, "i1", "u2", "i4", "u8", "f4",
              "f8", "c8", ml_dtypes.bfloat16]


_NARROW_BITS = {"int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4,
                "float6_e2m3fn": 6}


def _packable(dtype, raw):
    """Values of `dtype` from the bytes `raw`, one byte per value for ml_dtypes' narrow types
    (which hold a value in the low bits of its byte)."""
    name = dtype.type.__name__
    if dtype.kind == "b":
        return (raw % 2).astype(bool)
    if name in _NARROW_BITS:
        bits = _NARROW_BITS[name]
        low = raw % (1 << bits)
        if name.startswith("int"):
            signed = [int(v) - ((int(v) >> (bits - 1)) << bits) for v in low]
            return np.array(signed, dtype=np.int64).astype(dtype)
        return low.view(dtype) if name.startswith("float") else low.astype(dtype)
    return raw.view(dtype)


@given(st.sampled_from(PACK_TYPES), st.integers(1, 30), st.sampled_from(
    [None, "none", "first_byte", "last_byte"]), st.data())
def test_packbits_round_trip(dtype, count, padding, data):
    dtype = np.dtype(dtype)
    per_value = 1 if dtype.type.__name__ in _NARROW_BITS else dtype.itemsize
    values = _packable(dtype, data.draw(hnp.arrays(np.uint8, count * per_value)))
    codec = PackBitsCodec(padding_encoding=padding)
    spec = _spec(values)
    encoded = bytes(codec.encode(values, spec))
    assert len(encoded) == codec.encoded_nbytes(spec)
    decoded = codec.decode(encoded, spec)
    assert decoded.dtype == dtype
    np.testing.assert_array_equal(decoded.view(np.uint8), values.view(np.uint8))


def test_packbits_layout():
    """Least significant bit first; the padding byte counts the bits after the last value."""
    flags = np.array([1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0], dtype=bool)
    codec = PackBitsCodec(padding_encoding="first_byte")
    assert bytes(codec.encode(flags, _spec(flags))) == bytes([5, 0b10001101, 0b011])
    nibbles = np.array([-8, 7, 1, -1, 3], dtype=ml_dtypes.int4)
    codec = PackBitsCodec(padding_encoding="last_byte")
    assert bytes(codec.encode(nibbles, _spec(nibbles))) == bytes([0x78, 0xF1, 0x03, 4])
    # Bits 1..3 of each: sign-extended from bit 3 on decoding, bit 0 is lost.
    codec = PackBitsCodec(first_bit=1, last_bit=3)
    encoded = codec.encode(nibbles, _spec(nibbles))
    assert len(bytes(encoded)) == 2
    np.testing.assert_array_equal(codec.decode(bytes(encoded), _spec(nibbles)).astype("i1"),
                                  [-8, 6, 0, -2, 2])
    shorts = np.array([-300, 5], dtype="i2")
    codec = PackBitsCodec(first_bit=0, last_bit=9)  # 10 bits, sign-extended back
    np.testing.assert_array_equal(codec.decode(bytes(codec.encode(shorts, _spec(shorts))),
                                               _spec(shorts)), shorts)


def test_packbits_refuses(tmp_path):
    flags = np.array([True, False, True])
    codec = PackBitsCodec(padding_encoding="first_byte")
    with pytest.raises(ChunkDecodeError, match="padding byte says 4 bits, expected 5"):
        codec.decode(bytes([4, 5]), _spec(flags))
    with pytest.raises(ChunkDecodeError, match="chunk has 3 bytes, expected 2"):
        codec.decode(bytes([5, 5, 0]), _spec(flags))
    with pytest.raises(MetadataError, match="bits 0 ... 8 are not within the 8 bits of int8"):
        PackBitsCodec(last_bit=8).resolve(ChunkSpec((2,), np.int8))
    with pytest.raises(MetadataError, match="last_bit 1 is less than first_bit 2"):
        PackBitsCodec(first_bit=2, last_bit=1)
    with pytest.raises(MetadataError, match="padding_encoding 'start' is not one of"):
        PackBitsCodec(padding_encoding="start")
    with pytest.raises(MetadataError, match="is not one it takes: bool, int2"):
        PackBitsCodec().resolve(ChunkSpec((2,), np.dtype("U3")))
    data = np.arange(-20, 20, dtype="i2").reshape(8, 5)
    got = _round_trip_array(tmp_path, data, serializer={
        "name": "packbits", "configuration": {"padding_encoding": "first_byte", "last_bit": 5}},
        compressors=None)
    np.testing.assert_array_equal(got, data)


# -- reshape ---------------------------------------------------------------------------------

def test_reshape_the_registry_example():
    codec = ReshapeCodec([[0, 1], [2], 3])
    spec = ChunkSpec((100, 50, 64, 3), np.uint8)
    assert codec.encoded_spec(spec).shape == (5000, 64, 3)
    assert ReshapeCodec([-1, 3]).encoded_spec(ChunkSpec((4, 6), np.uint8)).shape == (8, 3)
    assert ReshapeCodec([[], -1]).encoded_spec(ChunkSpec((4, 6), np.uint8)).shape == (1, 24)


@pytest.mark.parametrize("shape, chunk, match", [
    ([[1], [0]], (2, 3), "strictly increasing"),
    ([[3, 4], 10, [0, 1]], (2, 3, 10, 2, 2), "strictly increasing"),
    ([-1, -1], (4,), "more than once"),
    ([5, -1], (4, 6), "no size for -1"),
    ([7], (4, 6), "not 24 items"),
    ([[1], -1], (2, 3, 4), "does not line up"),
    ([[0, 5]], (2, 3), "do not exist"),
    ([0], (4,), "positive size"),
    ("24", (4, 6), "non-empty list"),
])
def test_reshape_refuses(shape, chunk, match):
    with pytest.raises(MetadataError, match=match):
        ReshapeCodec(shape).resolve(ChunkSpec(chunk, np.uint8))


def test_reshape_with_transpose_round_trips(tmp_path):
    data = np.arange(6 * 5 * 4, dtype="i4").reshape(6, 5, 4)
    filters = [{"name": "reshape", "configuration": {"shape": [[0, 1], [2]]}},
               {"name": "transpose", "configuration": {"order": [1, 0]}}]
    np.testing.assert_array_equal(_round_trip_array(tmp_path, data, filters=filters), data)


# -- zfp -------------------------------------------------------------------------------------

ZFP_MODES = [{"mode": "fixed_accuracy", "tolerance": 0.01}, {"mode": "fixed_rate", "rate": 8},
             {"mode": "fixed_precision", "precision": 12}]


@pytest.mark.parametrize("config", ZFP_MODES)
@pytest.mark.parametrize("shape", [(), (7,), (5, 6), (3, 5, 6), (2, 3, 4, 5), (2, 1, 3, 1, 4)])
def test_zfp_is_zfpys_stream_without_its_header(config, shape):
    zfpy = pytest.importorskip("zfpy", reason="the zfp codec runs through zfpy")
    data = np.linspace(-3, 3, math.prod(shape)).reshape(shape)
    codec = codec_from_json({"name": "zfp", "configuration": config})
    spec = _spec(data)
    codec.resolve(spec)
    keyword = {k: v for k, v in config.items() if k != "mode"}
    field = [n for n in shape if n != 1] if len(shape) > 4 else (list(shape) or [1])
    expect = zfpy.compress_numpy(data.reshape(field), write_header=False, **keyword)
    encoded = bytes(codec.encode(data, spec))
    assert encoded == expect
    with_header = zfpy.compress_numpy(data.reshape(field), write_header=True, **keyword)
    np.testing.assert_array_equal(codec.decode(encoded, spec),
                                  zfpy.decompress_numpy(with_header).reshape(shape))


def test_zfp_promotes_narrow_types(tmp_path):
    zfpy = pytest.importorskip("zfpy", reason="the zfp codec runs through zfpy")
    serializer = {"name": "zfp", "configuration": {"mode": "fixed_precision", "precision": 32}}
    for dtype in ("i1", "u1", "i2", "u2"):
        info = np.iinfo(dtype)
        data = np.linspace(info.min, info.max, 30).astype(dtype).reshape(5, 6)
        got = _round_trip_array(tmp_path / dtype, data, serializer=serializer, compressors=None)
        np.testing.assert_array_equal(got, data)
    data = np.linspace(-2, 2, 30).astype(ml_dtypes.bfloat16).reshape(5, 6)
    got = _round_trip_array(tmp_path / "b", data, serializer=serializer, compressors=None)
    np.testing.assert_array_equal(got, data)
    # uint32 and uint64 as the signed integers of their size, clamped to them (as zarrs does)
    codec = ZfpCodec(mode="fixed_precision", precision=32)
    data = np.array([[0, 7, 2 ** 31 - 1, 2 ** 32 - 1]], dtype="u4")
    clamped = np.array([[0, 7, 2 ** 31 - 1, 2 ** 31 - 1]], dtype="i4")
    assert bytes(codec.encode(data, _spec(data))) == zfpy.compress_numpy(
        clamped, write_header=False, precision=32)
    data = np.array(["2020-01-01", "NaT", "1970-01-02"], dtype="M8[s]")
    got = _round_trip_array(tmp_path / "M8", data, fill_value="NaT", serializer={
        "name": "zfp", "configuration": {"mode": "fixed_precision", "precision": 64}},
        compressors=None)
    np.testing.assert_array_equal(got, data)


def test_zfp_refuses():
    pytest.importorskip("zfpy", reason="the zfp codec runs through zfpy")
    for mode in ("reversible", "expert"):
        with pytest.raises(UnknownCodecError, match=f"mode '{mode}' is not supported .* "
                                                    r"\['fixed_accuracy'"):
            codec_from_json({"name": "zfp", "configuration": {"mode": mode}})
    with pytest.raises(MetadataError, match="takes 'rate' only, got \\['tolerance'\\]"):
        ZfpCodec(mode="fixed_rate", rate=8, tolerance=1)
    with pytest.raises(MetadataError, match=r"needs a precision in \(0, 64\], got 1.5"):
        ZfpCodec(mode="fixed_precision", precision=1.5)
    for field, value in (("precision", 0), ("rate", 65), ("tolerance", float("nan"))):
        with pytest.raises(MetadataError, match=f"needs a {field} in"):
            ZfpCodec(mode=f"fixed_{field}".replace("tolerance", "accuracy"), **{field: value})
    with pytest.raises(MetadataError, match="needs a 'mode'"):
        codec_from_json({"name": "zfp", "configuration": {}})
    with pytest.raises(MetadataError, match="more than 4 axes"):
        ZfpCodec(mode="fixed_rate", rate=8).resolve(ChunkSpec((2,) * 5, np.float32))
    with pytest.raises(MetadataError, match="complex64 is not one it takes: int32"):
        ZfpCodec(mode="fixed_rate", rate=8).resolve(ChunkSpec((4,), np.complex64))
    codec, spec = ZfpCodec(mode="fixed_rate", rate=16), ChunkSpec((16, 16), np.float64)
    encoded = bytes(codec.encode(np.ones((16, 16)), spec))
    with pytest.raises(ChunkDecodeError, match="shorter than its 16 blocks"):
        codec.decode(encoded[:100], spec)


# -- zarr-python 3.4 -------------------------------------------------------------------------

# name -> (create_array keywords, data): codecs in zarrcore's JSON and in zarr-python's.
_SCALE = {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}}
_CAST = {"name": "cast_value", "configuration": {
    "data_type": "uint8", "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}
PEER_CASES = {
    "scale_offset_f4": (dict(dtype="float32", fill_value=1.5, filters=[
        {"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.25}}]),
        np.linspace(-40, 40, 30, dtype="float32")),
    "scale_offset_i2": (dict(dtype="int16", fill_value=7, filters=[
        {"name": "scale_offset", "configuration": {"offset": 1000, "scale": 3}}]),
        np.arange(1000, 1030, dtype="int16")),
    "scale_cast_u8": (dict(dtype="float64", fill_value=float("nan"), filters=[_SCALE, _CAST]),
                      np.where(np.arange(30) % 7 == 3, np.nan, np.linspace(0, 2540, 30))),
    "cast_clamp_i1": (dict(dtype="float32", fill_value=0, filters=[
        {"name": "cast_value", "configuration": {
            "data_type": "int8", "rounding": "towards-zero", "out_of_range": "clamp"}}]),
        np.linspace(-500, 500, 30, dtype="float32")),
    "cast_wrap_u2": (dict(dtype="int32", fill_value=0, shards=(10,), filters=[
        {"name": "cast_value", "configuration": {"data_type": "uint16", "out_of_range": "wrap"}}]),
        np.arange(-15, 15, dtype="int32") * 5000),
}

_PEER_HAS_CAST = """
try:
    import cast_value_rs
    result = True
except ImportError:
    result = False
"""

_PEER_READS = """
import zarr
result = {name: pack(zarr.open_array(path, mode="r")[...]) for name, path in payload.items()}
"""

_PEER_WRITES = """
import zarr
for case in payload.values():
    kw = case["kwargs"]
    a = zarr.create_array(case["path"], shape=(30,), chunks=(5,), compressors=None, **kw)
    a[:28] = unpack(case["data"])[:28]
result = {name: pack(zarr.open_array(c["path"], mode="r")[...]) for name, c in payload.items()}
"""


def _peer_cases(peer, group):  # noqa: F811
    """The PEER_CASES of `group` ("scale_offset" or "cast"), skipped when the peer cannot
    write them."""
    if group == "cast" and not peer.run(_PEER_HAS_CAST):
        pytest.skip("zarr-python's cast_value needs cast-value-rs, which the peer interpreter "
                    "lacks (tests/support/peer-requirements.txt installs it)")
    return {k: v for k, v in PEER_CASES.items() if ("cast" in k) == (group == "cast")}


def _expected(data, kwargs):
    """What a round trip through the codecs gives: zarrcore's own reading of its encoding."""
    a = zarrcore.create_array({}, shape=(30,), chunks=(5,), compressors=None, **kwargs)
    a[:28] = data[:28]
    return a[...]


@pytest.mark.slow
@pytest.mark.parametrize("group", ["scale_offset", "cast"])
def test_zarr34_reads_zarrcore(peer, tmp_path, group):  # noqa: F811
    cases = _peer_cases(peer, group)
    paths = {}
    for name, (kwargs, data) in cases.items():
        paths[name] = str(tmp_path / name)
        a = zarrcore.create_array(paths[name], shape=(30,), chunks=(5,), compressors=None,
                                  **kwargs)
        a[:28] = data[:28]
    read = peer.run(_PEER_READS, paths)
    for name, (kwargs, data) in cases.items():
        np.testing.assert_array_equal(unpack(read[name]), _expected(data, kwargs), err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("group", ["scale_offset", "cast"])
def test_zarrcore_reads_zarr34(peer, tmp_path, group):  # noqa: F811
    cases = _peer_cases(peer, group)
    payload = {name: {"path": str(tmp_path / name), "kwargs": kwargs, "data": pack(data)}
               for name, (kwargs, data) in cases.items()}
    written = peer.run(_PEER_WRITES, payload)
    for name, (kwargs, data) in cases.items():
        got = zarrcore.open_array(str(tmp_path / name))[...]
        np.testing.assert_array_equal(got, unpack(written[name]), err_msg=name)
        np.testing.assert_array_equal(got, _expected(data, kwargs), err_msg=name)
        stored = (tmp_path / name / "zarr.json").read_text()
        assert all(f'"{f["name"]}"' in stored for f in kwargs["filters"]), name


_PEER_CASTS = """
import numpy as np
from cast_value_rs import cast_array
result = []
for case in payload:
    try:
        out = cast_array(unpack(case["values"]), target_dtype=np.dtype(case["target"]),
                         rounding_mode=case["rounding"], out_of_range_mode=case["out_of_range"],
                         scalar_map_entries=None)
        result.append(pack(out))
    except ValueError as e:
        result.append(str(e))
"""


def _cast_cases():
    """Values with ties, extremes, signed zeros and NaN, per source type, rounding, range mode
    and target."""
    rng = np.random.default_rng(27)
    floats = np.concatenate([np.arange(-6, 6) + 0.5, [-0.0, 0.0, 1e-300, -1e-40, 65504, 65519,
                                                       65520, 2 ** 63, -2 ** 63, 1e19, 3e38],
                             rng.normal(0, 1e4, 40), rng.normal(0, 1e30, 10)])
    ints = np.concatenate([[-2 ** 63, 2 ** 63 - 1, 2 ** 53 + 1, -(2 ** 53) - 3, 2 ** 24 + 1,
                            -129, 128, 255, 256, 65535, 65536],
                           rng.integers(-2 ** 40, 2 ** 40, 20)]).astype("i8")
    sources = {"f8": floats, "f4": floats[np.abs(floats) < 3e38].astype("f4"), "i8": ints,
               "u8": ints[ints >= 0].astype("u8"), "i2": ints[np.abs(ints) < 2 ** 15]}
    for source, values in sources.items():
        for target in ("int8", "uint8", "int32", "uint64", "int64", "float16", "float32"):
            if source == "f8" or target in ("int64", "float32"):
                for rounding in ROUNDINGS:
                    modes = [None, "clamp"] + (["wrap"] if "int" in target else [])
                    for out_of_range in modes:
                        yield source, values, target, rounding, out_of_range


@pytest.mark.slow
def test_cast_value_is_zarr34s_cast(peer):  # noqa: F811
    """zarr-python 3.4's cast (cast-value-rs) and zarrcore's agree on every case: the same
    values, or both refuse."""
    _peer_cases(peer, "cast")
    cases = list(_cast_cases())
    payload = [{"values": pack(v), "target": t, "rounding": r, "out_of_range": o}
               for _, v, t, r, o in cases]
    answers = peer.run(_PEER_CASTS, payload)
    for (source, values, target, rounding, out_of_range), answer in zip(cases, answers):
        what = f"{source} -> {target} {rounding} {out_of_range}"
        if isinstance(answer, str):
            with pytest.raises(ChunkEncodeError):
                _cast(values, target, rounding=rounding, out_of_range=out_of_range)
                pytest.fail(f"{what}: zarr-python refuses ({answer})")
            continue
        got = _cast(values, target, rounding=rounding, out_of_range=out_of_range)
        expect = unpack(answer)
        assert got.tobytes() == expect.tobytes(), (what, values, got, expect)
