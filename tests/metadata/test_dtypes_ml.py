"""The zarr-extensions registry's ml_dtypes types (bfloat16, float8_*, float6_*, float4_e2m1fn,
int2/int4/uint2/uint4, complex_float16/complex_bfloat16), its complex_float32/64 names and the
core r<N> raw bits: names, every JSON form of fill values, writes and reads on the compiled and
Python paths in both byte orders, tensorstore both ways, and ml_dtypes missing."""
import json
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.errors import DataTypeDependencyError, MetadataError
from zarrcore.metadata.dtypes import dtype_from_numpy, dtype_from_v2_json, dtype_from_v3_json

ml_dtypes = pytest.importorskip("ml_dtypes", reason="the `ml` extra (ml_dtypes) is not installed")

FLOATS = ["bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
          "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"]
INTEGERS = ["int2", "int4", "uint2", "uint4"]
COMPLEX = {"complex_float16": "complex32", "complex_bfloat16": "bcomplex32"}
ALL = FLOATS + INTEGERS + list(COMPLEX)
# What tensorstore's zarr3 driver takes (not float8_e4m3, float6_*, uint2/uint4, complex_*).
TENSORSTORE = ["bfloat16", "float8_e3m4", "float8_e4m3fn", "float8_e4m3fnuz",
               "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
               "float4_e2m1fn", "int2", "int4"]
N = 11  # items of the test arrays: chunks of 4, the last one partial


def _dtype(name):
    return np.dtype(getattr(ml_dtypes, COMPLEX.get(name, name)))


def _values(name, n=N):
    """n distinct-ish values every type holds exactly."""
    i = np.arange(n)
    if name in INTEGERS:
        info = ml_dtypes.iinfo(_dtype(name))
        return (i % (int(info.max) - int(info.min) + 1) + int(info.min)).astype(_dtype(name))
    if name == "float8_e8m0fnu":  # powers of two only, no zero
        return (2.0 ** (i % 7 - 3)).astype(_dtype(name))
    real = (i % 7 - 3) * 0.5
    if name in COMPLEX:
        return (real + 1j * real[::-1]).astype(_dtype(name))
    return real.astype(_dtype(name))


def _fill(name):
    default = 1 + 1j if name in COMPLEX else 1
    return {"float8_e8m0fnu": 4.0, "uint2": 2, "int2": -1}.get(name, default)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _check(got, expected, by_value=False):
    """`got` is `expected` bit for bit (value for value: the upper bits of sub-byte integers
    are arbitrary in the registry, tensorstore sign-extends them, ml_dtypes clears them)."""
    assert got.dtype == expected.dtype
    if by_value:
        np.testing.assert_array_equal(got.astype(np.int8), expected.astype(np.int8))
    else:
        np.testing.assert_array_equal(_bits(got), _bits(expected))


@pytest.mark.parametrize("name", ALL)
def test_names_resolve_and_are_written_back(name):
    dt = dtype_from_v3_json(name)
    assert dt.numpy_dtype == _dtype(name)
    assert dt.to_json_v3() == name and dt.to_json_v2() == name  # v2: tensorstore's dtype
    assert dtype_from_numpy(_dtype(name)) == dt == dtype_from_numpy(name)
    assert dtype_from_v2_json(name) == dt
    assert dtype_from_v3_json({"name": name, "configuration": {}}) == dt
    assert name in repr(dt)


@pytest.mark.parametrize("name,dtype", [("complex_float32", "c8"), ("complex_float64", "c16")])
def test_registry_complex_names_read_and_kept(name, dtype):
    dt = dtype_from_v3_json(name)
    assert dt.numpy_dtype == np.dtype(dtype) and dt.to_json_v3() == name
    assert dt.fill_value_from_json(["NaN", 1.5], 3).imag == 1.5
    assert dtype_from_numpy(dtype).to_json_v3() == np.dtype(dtype).name  # zarr-python's name


# (type, JSON fill value, its bits, how it is written back)
FILLS = [
    ("bfloat16", 1.5, 0x3FC0, 1.5),
    ("bfloat16", "NaN", 0x7FC0, "NaN"),
    ("bfloat16", "0x7fc1", 0x7FC1, "0x7fc1"),
    ("bfloat16", "0x3fc0", 0x3FC0, 1.5),
    ("bfloat16", "Infinity", 0x7F80, "Infinity"),
    ("bfloat16", "-Infinity", 0xFF80, "-Infinity"),
    ("float8_e3m4", "NaN", 0x78, "NaN"),
    ("float8_e4m3", "NaN", 0x7C, "NaN"),
    ("float8_e4m3", "Infinity", 0x78, "Infinity"),
    ("float8_e4m3fn", "NaN", 0x7F, "NaN"),
    ("float8_e4m3fn", "0xff", 0xFF, "0xff"),
    ("float8_e4m3fn", 448, 0x7E, 448.0),
    ("float8_e4m3fnuz", "NaN", 0x80, "NaN"),
    ("float8_e4m3b11fnuz", "NaN", 0x80, "NaN"),
    ("float8_e5m2", "NaN", 0x7E, "NaN"),
    ("float8_e5m2", -0.0, 0x80, -0.0),
    ("float8_e5m2fnuz", "NaN", 0x80, "NaN"),
    ("float8_e8m0fnu", "NaN", 0xFF, "NaN"),
    ("float8_e8m0fnu", 0.5, 0x7E, 0.5),
    ("float4_e2m1fn", -6, 0x0F, -6.0),
    ("float4_e2m1fn", "0xf", 0x0F, -6.0),
    ("float6_e2m3fn", "0x3f", 0x3F, -7.5),
    ("float6_e3m2fn", 28.0, 0x1F, 28.0),
    ("int4", -8, 0x08, -8),
    ("int4", 7.0, 0x07, 7),
    ("int2", -2, 0x02, -2),
    ("uint4", 15, 0x0F, 15),
    ("uint2", 3, 0x03, 3),
    ("complex_bfloat16", ["NaN", "0x3fc0"], 0x3FC07FC0, ["NaN", 1.5]),
    ("complex_float16", [1.5, "-Infinity"], 0xFC003E00, [1.5, "-Infinity"]),
]


@pytest.mark.parametrize("name,value,bits,written", FILLS)
def test_fill_value_json_forms(name, value, bits, written):
    dt = dtype_from_v3_json(name)
    fill = dt.fill_value_from_json(value, 3)
    assert int.from_bytes(np.asarray(fill, dtype=dt.numpy_dtype).tobytes(), "little") == bits
    assert dt.fill_value_to_json(fill, 3) == written


@pytest.mark.parametrize("name,value", [
    ("float4_e2m1fn", "NaN"), ("float4_e2m1fn", "Infinity"), ("float4_e2m1fn", 7.0),
    ("float4_e2m1fn", "0x1f"), ("float6_e2m3fn", "0x40"), ("float6_e3m2fn", "-Infinity"),
    ("float8_e4m3fn", "Infinity"), ("float8_e4m3fn", 1000), ("float8_e4m3fnuz", "-Infinity"),
    ("float8_e8m0fnu", 0), ("float8_e8m0fnu", -1), ("float8_e8m0fnu", "Infinity"),
    ("bfloat16", "0x10000"), ("bfloat16", True), ("bfloat16", "nan"), ("bfloat16", [1]),
    ("int4", 8), ("int4", 1.5), ("int2", -3), ("uint2", -1), ("uint4", 16), ("int4", "0x1"),
    ("complex_bfloat16", 1.0), ("complex_float16", ["NaN"]),
    # Finite numbers that round to infinity: refused as those that round to NaN or saturate.
    ("bfloat16", 1e39), ("bfloat16", -1e300), ("float8_e5m2", 1e6), ("float8_e5m2", 61440),
    ("float8_e4m3fn", 464),
])
def test_fill_value_refused(name, value):
    dt = dtype_from_v3_json(name)
    with pytest.raises(MetadataError, match="fill_value"):
        dt.fill_value_from_json(value, 3)


@pytest.mark.parametrize("name,value", [
    ("float4_e2m1fn", 7.0), ("float4_e2m1fn", np.nan), ("float6_e3m2fn", "Infinity"),
    ("float8_e4m3fn", np.inf), ("float8_e4m3fn", 1000), ("float8_e8m0fnu", 0), ("int4", 8),
    ("uint2", -1), ("int2", np.int64(2)),
])
def test_fill_value_of_new_array_refused(name, value):
    # ml_dtypes converts these silently (to -0, 6, NaN, a wrapped integer...).
    with pytest.raises(ValueError, match="fill value|representation|range"):
        zarrcore.create_array({}, shape=(4,), dtype=name, fill_value=value)


@pytest.mark.parametrize("name, value, expect", [
    ("float8_e5m2", 61000, 57344), ("float8_e4m3fn", 460, 448), ("bfloat16", -3.3e38, None),
])
def test_fill_value_rounding_to_the_largest_is_kept(name, value, expect):
    """Within half a unit in the last place beyond the largest number, a value rounds to it,
    with or without infinities in the type."""
    fill = dtype_from_v3_json(name).fill_value_from_json(value, 3)
    assert np.isfinite(float(fill))
    if expect is not None:
        assert float(fill) == expect


# The compiled core serves local and memory stores; a transpose codec sends chunks through the
# Python codecs.
PATHS = ["local", "memory", "python"]


def _create(path, tmp_path, name, **kwargs):
    store = str(tmp_path / "a") if path == "local" else {}
    if path == "python":
        kwargs["filters"] = [{"name": "transpose", "configuration": {"order": [0]}}]
    return zarrcore.create_array(store, shape=(N,), chunks=(4,), **kwargs)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ALL)
def test_write_read(tmp_path, name, path):
    a = _create(path, tmp_path, name, dtype=_dtype(name), fill_value=_fill(name))
    values = _values(name)
    a[2:7] = values[2:7]
    expected = np.full(N, _fill(name)).astype(_dtype(name))
    expected[2:7] = values[2:7]
    _check(a[...], expected)
    a[...] = expected[0]  # every chunk the fill value: none stored
    assert list(a.store.list_prefix("c/")) == []
    doc = json.loads(a.store.get("zarr.json"))
    assert doc["data_type"] == name
    serializer = [c for c in doc["codecs"] if c["name"] == "bytes"][0]
    assert ("configuration" in serializer) == (_dtype(name).itemsize > 1)
    assert f"Data type   : {_dtype(name)}" in str(a.info)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ["bfloat16", "complex_float16", "complex_bfloat16"])
def test_big_endian_bytes_codec(tmp_path, name, path):
    big = {"name": "bytes", "configuration": {"endian": "big"}}
    a = _create(path, tmp_path, name, dtype=name, serializer=big, compressors=None)
    values = _values(name)
    a[...] = values
    _check(a[...], values)
    unit = 2  # each 16-bit float, each part of a complex number
    stored = np.frombuffer(a.store.get("c/0"), np.uint8).reshape(-1, unit)
    np.testing.assert_array_equal(stored, _bits(values[:4]).reshape(-1, unit)[:, ::-1])


def test_v2_arrays(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(N,), chunks=(4,), dtype="bfloat16",
                              zarr_format=2, fill_value="NaN")
    a[:3] = _values("bfloat16")[:3]
    doc = json.loads((tmp_path / "a" / ".zarray").read_text())
    assert doc["dtype"] == "bfloat16" and doc["fill_value"] == "NaN"
    b = zarrcore.open_array(str(tmp_path / "a"))
    assert b.dtype == _dtype("bfloat16") and np.isnan(b[5])
    ts = pytest.importorskip("tensorstore")
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "a")}},
                open=True).result()
    _check(t.read().result(), b[...])


def test_raw_bits(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(5,), chunks=(2,), dtype="r24",
                              fill_value=b"\x01\x02\x03")
    doc = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert doc["data_type"] == "r24" and doc["fill_value"] == [1, 2, 3]
    a[1] = np.void(b"abc")
    got = zarrcore.open_array(str(tmp_path / "a"))[...]
    assert got.dtype == np.dtype("V3")
    assert [bytes(x) for x in got] == [b"\x01\x02\x03", b"abc"] + [b"\x01\x02\x03"] * 3
    with pytest.raises(MetadataError, match="multiple of 8"):
        dtype_from_v3_json("r12")


@pytest.mark.parametrize("name", TENSORSTORE)
def test_tensorstore_reads_zarrcore(tmp_path, name):
    ts = pytest.importorskip("tensorstore")
    a = zarrcore.create_array(str(tmp_path), shape=(N,), chunks=(4,), shards=(8,),
                              dtype=name, fill_value=_fill(name))
    a[:6] = _values(name)[:6]
    expected = np.full(N, _fill(name)).astype(_dtype(name))
    expected[:6] = _values(name)[:6]
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}},
                open=True).result()
    got = t.read().result()
    if name == "float8_e8m0fnu":  # tensorstore's fill value: test_zarrcore_reads_tensorstore
        got, expected = got[:8], expected[:8]
    _check(got, expected, by_value=name in INTEGERS)
    assert ts.dtype(name) == t.dtype


@pytest.mark.parametrize("name", TENSORSTORE)
def test_zarrcore_reads_tensorstore(tmp_path, name):
    ts = pytest.importorskip("tensorstore")
    metadata = {"data_type": name, "shape": [N], "fill_value": _fill(name),
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}}
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
                 "metadata": metadata}, create=True).result()
    values = _values(name)
    t[1:7].write(values[1:7]).result()
    expected = np.full(N, _fill(name)).astype(_dtype(name))
    expected[1:7] = values[1:7]
    got = zarrcore.open_array(str(tmp_path), mode="r")[...]
    if name == "float8_e8m0fnu":
        # tensorstore 0.1.86 fills float8_e8m0fnu arrays with 2**-62 for the fill value 4.0
        # (and reads zarrcore's arrays so: test_tensorstore_reads_zarrcore).
        got, expected = got[1:7], expected[1:7]
    _check(got, expected, by_value=name in INTEGERS)


def test_missing_ml_dtypes(monkeypatch, tmp_path):
    zarrcore.create_array(str(tmp_path), shape=(2,), dtype="bfloat16")
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import fails
    for attempt in (lambda: dtype_from_v3_json("int4"),
                    lambda: zarrcore.open_array(str(tmp_path)),
                    # (numpy keeps the names ml_dtypes gave it: a v3 name it does not know)
                    lambda: zarrcore.create_array({}, shape=(2,), dtype={"name": "float8_e4m3"})):
        with pytest.raises(DataTypeDependencyError, match=r"ml_dtypes.*zarrcore\[ml\]"):
            attempt()


def _nbits(name):
    dtype = _dtype(name)
    if name in INTEGERS:
        return ml_dtypes.iinfo(dtype).bits
    return 8 * dtype.itemsize if name in COMPLEX else ml_dtypes.finfo(dtype).bits


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), name=st.sampled_from(ALL), path=st.sampled_from(PATHS))
def test_hypothesis_round_trips_bit_exact(tmp_path_factory, data, name, path):
    dtype, nbits = _dtype(name), _nbits(name)
    if name in COMPLEX:  # two 16-bit parts
        parts = data.draw(st.lists(st.integers(0, 2**16 - 1), min_size=2 * N, max_size=2 * N))
        values = np.array(parts, dtype="<u2").view(dtype)
        fill = np.array(parts[:2], dtype="<u2").view(dtype)[0]
    else:
        bits = data.draw(st.lists(st.integers(0, 2**nbits - 1), min_size=N + 1, max_size=N + 1))
        raw = np.array(bits, dtype=f"<u{dtype.itemsize}")
        values, fill = raw[:N].view(dtype), raw[N:].view(dtype)[0]
    # The fill value, through its JSON form, is the same bits.
    dt = dtype_from_numpy(dtype)
    again = dt.fill_value_from_json(json.loads(json.dumps(dt.fill_value_to_json(fill, 3))), 3)
    assert np.asarray(again, dtype).tobytes() == np.asarray(fill, dtype).tobytes()
    a = _create(path, tmp_path_factory.mktemp("h"), name, dtype=dtype, fill_value=fill)
    a[...] = values
    _check(a[...], values)
