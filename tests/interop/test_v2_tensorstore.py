"""Zarr v2 interop with tensorstore's "zarr" driver, in both directions.

tensorstore writes `null` fill values, both orders and separators, and its own codec
configurations; it stores fixed-length bytes as an extra `char` dimension and opens
structured types one field at a time.
"""
import json

import numpy as np
import pytest

import zarrcore

ts = pytest.importorskip("tensorstore")

SHAPE, CHUNKS = (9, 7), (4, 3)


def sample(dtype, shape=SHAPE):
    rng = np.random.default_rng(1)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8).view(dtype).reshape(shape)


def ts_spec(path, field=None, **metadata):
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(path)}}
    if metadata:
        spec["metadata"] = metadata
    if field is not None:
        spec["field"] = field
    return spec


def ts_create(path, dtype, field=None, **metadata):
    metadata = {"shape": list(SHAPE), "chunks": list(CHUNKS), "dtype": dtype, **metadata}
    return ts.open(ts_spec(path, field, **metadata), create=True, open=True).result()


def ts_read(path, field=None):
    return ts.open(ts_spec(path, field), open=True).result().read().result()


def assert_same(actual, expected):
    assert actual.shape == expected.shape
    assert actual.dtype.newbyteorder("=") == expected.dtype.newbyteorder("=")
    # Compare values' bytes in one byte order: exact, NaN payloads included.
    native = expected.dtype.newbyteorder("=")
    assert actual.astype(native).tobytes() == expected.astype(native).tobytes()


DTYPES = ["|b1", "|i1", ">i2", "<i4", ">i8", "|u1", "<u2", ">u4", "<u8", "<f2", ">f4", "<f8",
          ">c8", "<c16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_both_ways(tmp_path, dtype):
    data = sample(dtype)
    t = ts_create(tmp_path / "peer", dtype, order="F", dimension_separator="/", fill_value=None,
                  compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1})
    t[:8, :] = data[:8]  # the last row of chunks stays unwritten
    a = zarrcore.open_array(str(tmp_path / "peer"))
    assert a.fill_value is None and a.order == "F" and a.dtype == np.dtype(dtype)
    expected = data.copy()
    expected[8:] = np.zeros((), dtype)
    assert_same(a[...], expected)

    b = zarrcore.create_array(str(tmp_path / "ours"), shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                              zarr_format=2, order="F", chunk_key_encoding={"name": "v2", "separator": "/"})
    b[...] = data
    assert_same(ts_read(tmp_path / "ours"), data)


COMPRESSORS = [
    None,
    {"id": "zlib", "level": 3},
    {"id": "gzip", "level": 6},
    {"id": "bz2", "level": 5},
    {"id": "zstd", "level": 2},
    {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0},
    {"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0, "blocksize": 0},
]


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=lambda c: c and f"{c['id']}-{c.get('cname', '')}")
@pytest.mark.parametrize("order", ["C", "F"])
def test_compressors_both_ways(tmp_path, compressor, order):
    data = sample("<f8")
    t = ts_create(tmp_path / "peer", "<f8", order=order, compressor=compressor, fill_value="NaN")
    t[...] = data
    assert_same(zarrcore.open_array(str(tmp_path / "peer"))[...], data)

    b = zarrcore.create_array(str(tmp_path / "ours"), shape=SHAPE, chunks=CHUNKS, dtype="<f8",
                              zarr_format=2, order=order, compressors=compressor, fill_value=np.nan)
    b[:5] = data[:5]
    expected = data.copy()
    expected[5:] = np.nan
    assert_same(ts_read(tmp_path / "ours"), expected)


def test_fixed_bytes_from_tensorstore(tmp_path):
    t = ts_create(tmp_path / "peer", "|S3", compressor=None, fill_value=None)
    raw = np.frombuffer(bytes(range(65, 65 + 27)) * 7, dtype="S1")[: 9 * 7 * 3]
    t[...] = raw.reshape(SHAPE + (3,))
    a = zarrcore.open_array(str(tmp_path / "peer"))
    assert a.dtype == np.dtype("S3")
    assert a[...].tobytes() == raw.tobytes()


STRUCT = [["a", "<i4"], ["b", ">f8", [2]], ["c", "|u1"]]


def test_structured_fields_both_ways(tmp_path):
    dtype = np.dtype([(n, t, tuple(s[0])) if s else (n, t) for n, t, *s in STRUCT])
    data = sample(dtype)
    for name in dtype.names:
        t = ts_create(tmp_path / "peer", STRUCT, field=name, compressor={"id": "zlib", "level": 1},
                      fill_value=None)
        t[...] = data[name]
    a = zarrcore.open_array(str(tmp_path / "peer"))
    assert a.dtype == dtype
    assert a[...].tobytes() == data.tobytes()

    b = zarrcore.create_array(str(tmp_path / "ours"), shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                              zarr_format=2, compressors={"id": "zlib", "level": 1})
    b[...] = data
    assert json.loads((tmp_path / "ours" / ".zarray").read_text())["dtype"] == STRUCT
    for name in dtype.names:
        assert_same(ts_read(tmp_path / "ours", field=name), data[name])
