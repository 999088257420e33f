"""Zarr v2 data as zarr 2.x wrote it, read as zarr 2.18 reads it: compressor levels that
matter only for writing, old fill values of string and object arrays, delta on bool, json2 on
int32 and fixed-width text, and arrays of Python objects (json2, msgpack2, vlen-array, pickle,
categorize, and vlen-utf8 or vlen-bytes filled with a number or null).

The fixtures in data/zarr218_legacy were written by zarr 2.18 (data/zarr218_legacy/make.py),
each with `expected.npy` or, for object arrays, `expected.json`: the values zarr 2.18 reads.
"""
import importlib.util
import json
import os
import shutil

import numpy as np
import pytest

import zarrcore
from zarrcore.metadata.dtypes import StringType

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "support", "data", "zarr218_legacy")
CASES = sorted(d for d in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, d)))
OBJECT_CASES = [c for c in CASES if os.path.exists(os.path.join(FIXTURES, c, "expected.json"))]
ARRAY_CASES = [c for c in CASES if c not in OBJECT_CASES]
# The dtype of zarrcore's string arrays: numpy 2's StringDType, object arrays of str before.
STRING = (np.dtypes.StringDType() if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType")
          else np.dtype(object))


def test_every_fixture_is_here():
    assert (len(ARRAY_CASES), len(OBJECT_CASES)) == (12, 7)


@pytest.fixture
def pickles_allowed():
    zarrcore.config.set(allow_pickle=True)
    yield
    zarrcore.config.set(allow_pickle=False)


def _untagged(item):
    if isinstance(item, dict) and set(item) == {"ndarray", "dtype"}:
        return np.array(item["ndarray"], dtype=item["dtype"])
    return item


def _assert_items_equal(got, expected):
    assert type(got) is type(expected), (got, expected)
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    else:
        assert got == expected


@pytest.mark.parametrize("case", OBJECT_CASES)
def test_object_arrays_read_as_zarr_2_18(case, pickles_allowed):
    if case == "pickle" and importlib.util.find_spec("numpy._core") is None:
        pytest.skip("the fixture's chunks were pickled by numpy 2 and name numpy._core, "
                    "which numpy < 2 has no module of")
    path = os.path.join(FIXTURES, case)
    with open(os.path.join(path, "expected.json")) as f:
        expected = json.load(f)
    got = zarrcore.open_array(path, mode="r")[:]
    assert got.dtype == object and list(got.shape) == expected["shape"]
    for item, want in zip(got.reshape(-1).tolist(), expected["items"]):
        _assert_items_equal(item, _untagged(want))


def test_pickle_is_refused_unless_allowed():
    a = zarrcore.open_array(os.path.join(FIXTURES, "pickle"), mode="r")
    with pytest.raises(zarrcore.errors.ZarrcoreError, match=r"chunk '0'.*pickle.*runs code.*allow_pickle"):
        a[:]
    assert a[4:] .tolist() == [0, 0]  # chunks not stored need no unpickling


@pytest.mark.parametrize("case", ["json2", "json2_2d", "msgpack2", "vlen_array"])
def test_object_arrays_written_decode_with_numcodecs(tmp_path, case):
    """Items written by zarrcore into such an array are what numcodecs decodes from its chunks."""
    import numcodecs

    path = tmp_path / case
    shutil.copytree(os.path.join(FIXTURES, case), path)
    a = zarrcore.open_array(path, mode="r+")
    values = np.empty(a.shape, dtype=object)
    flat = values.reshape(-1)
    for i in range(flat.size):
        flat[i] = (np.arange(i % 4, dtype="<i4") if case == "vlen_array"
                   else [i, {"k": str(i)}] if i % 3 else f"item {i}")
    a[...] = values
    meta = json.loads((path / ".zarray").read_text())
    codec = numcodecs.get_codec(meta["filters"][0])
    chunk = codec.decode(numcodecs.get_codec(meta["compressor"]).decode((path / ("0.0" if a.ndim == 2 else "0")).read_bytes())
                         if meta["compressor"] else (path / "0").read_bytes())
    first = values[tuple(slice(0, c) for c in a.chunks)].reshape(-1)
    for got, want in zip(np.asarray(chunk).reshape(-1).tolist(), first.tolist()):
        _assert_items_equal(got, want)
    back = zarrcore.open_array(path)[...]
    for got, want in zip(back.reshape(-1).tolist(), flat.tolist()):
        _assert_items_equal(got, want)


@pytest.mark.parametrize("case, garbage", [("json2", b"[1, 2"), ("json2", b'[1, "|O", [3]]'),
                                           ("msgpack2", b"\xc1"), ("vlen_array", b"\x05\x00"),
                                           ("pickle", b"not a pickle"),
                                           ("json2_int32", b'[1,2,"|O",[2]]'),
                                           ("json2_int32", b'[1,"x","<i4",[2]]'),
                                           ("json2_int32", b'[1,2,3,"<i4",[3]]'),
                                           ("json2_unicode", b'["a","b","<i8",[2]]')])
def test_garbage_object_chunks_raise(tmp_path, case, garbage, pickles_allowed):
    path = tmp_path / case
    shutil.copytree(os.path.join(FIXTURES, case), path)
    meta = json.loads((path / ".zarray").read_text())
    data = garbage
    if meta["compressor"]:
        import numcodecs

        data = numcodecs.get_codec(meta["compressor"]).encode(garbage)
    (path / "0").write_bytes(data)
    with pytest.raises(zarrcore.errors.ChunkDecodeError, match="chunk '0'"):
        zarrcore.open_array(path)[:]


def test_delta_on_bool_is_read_but_not_written(tmp_path):
    """numcodecs decodes bool deltas as a running OR, which is not the data written: zarrcore
    reads what numcodecs reads (the fixture) and refuses to write such chunks."""
    path = tmp_path / "delta_bool"
    shutil.copytree(os.path.join(FIXTURES, "delta_bool"), path)
    a = zarrcore.open_array(path, mode="r+")
    with pytest.raises(zarrcore.errors.MetadataError, match="delta filter on bool"):
        a[:2] = [True, False]


def test_object_arrays_have_no_v3_form():
    a = zarrcore.open_array(os.path.join(FIXTURES, "json2"))
    with pytest.raises(TypeError, match="no data type for Python objects"):
        a.metadata.data_type.to_json_v3()


@pytest.mark.parametrize("case", ARRAY_CASES)
def test_reads_as_zarr_2_18(case):
    path = os.path.join(FIXTURES, case)
    expected = np.load(os.path.join(path, "expected.npy"))
    a = zarrcore.open_array(path, mode="r")
    got = a[:]
    if got.dtype.kind == "T":
        got = got.astype(expected.dtype)  # zarr 2.18's object array, as text
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("case", ["base64", "delta_timedelta", "json2_int32", "json2_unicode"])
def test_writes_what_numcodecs_reads(tmp_path, case):
    """base64, delta on timedeltas and json2 on int32 and U3, written as zarr 2.18 writes
    them: the same .zarray and the same chunk bytes for the same values."""
    source = os.path.join(FIXTURES, case)
    dest = str(tmp_path / case)
    shutil.copytree(source, dest)
    for key in ("0", "1"):
        os.remove(os.path.join(dest, key))
    a = zarrcore.open_array(dest, mode="r+")
    a[:4] = np.load(os.path.join(source, "expected.npy"))[:4]
    for key in ("0", "1"):
        with open(os.path.join(source, key), "rb") as f, open(os.path.join(dest, key), "rb") as g:
            assert f.read() == g.read(), key


@pytest.mark.parametrize("case", ["zlib_level_-1", "gzip_level_-1", "zstd_level_30"])
def test_writes_keep_the_stored_level(tmp_path, case):
    """Writing into such an array compresses at the level numcodecs would use (zlib's default
    6, zstd's maximum 22) and leaves the stored configuration as it was."""
    import numcodecs

    path = tmp_path / case
    shutil.copytree(os.path.join(FIXTURES, case), path)
    before = json.loads((path / ".zarray").read_text())["compressor"]
    a = zarrcore.open_array(path, mode="r+")
    a[:] = np.arange(6, 0, -1)
    assert json.loads((path / ".zarray").read_text())["compressor"] == before
    codec = numcodecs.get_codec(before)
    np.testing.assert_array_equal(np.frombuffer(codec.decode((path / "2").read_bytes()), "<i4"), [2, 1])
    np.testing.assert_array_equal(zarrcore.open_array(path)[:], np.arange(6, 0, -1))


@pytest.mark.parametrize("compressor", [{"id": "zlib", "level": -2}, {"id": "gzip", "level": 10},
                                        {"id": "zstd", "level": 1.5}])
def test_levels_numcodecs_refuses_still_are_refused(tmp_path, compressor):
    with pytest.raises(zarrcore.errors.MetadataError, match="level"):
        zarrcore.create_array(tmp_path / "a", shape=(4,), dtype="i4", zarr_format=2, compressors=compressor)


def test_v3_levels_stay_strict():
    """zarr-python 3 refuses these in v3 zstd and gzip, and so does zarrcore."""
    for codec in ({"name": "zstd", "configuration": {"level": 23}},
                  {"name": "gzip", "configuration": {"level": -1}}):
        with pytest.raises(zarrcore.errors.MetadataError, match="level"):
            zarrcore.create_array({}, shape=(4,), dtype="i4", compressors=[codec])


# zarr 2.18.7 (numcodecs 0.15.2) on a .zarray of shape [4], chunks [2], dtype "|O", the
# object codec as the filter and the fill value patched in, no chunk stored: for each fill value,
# `a.fill_value` and every item of `a[:]` are that value, of that type; and writing "x" into
# item 0 of a vlen-utf8 (vlen-bytes) array filled with 0 reads back ["x", "", 0, 0]
# ([b"x", b"", 0, 0]): numcodecs writes 0 and None as empty.
ZARR_2_18_FILLS = [0, 1, 2.5, 0.0, True, None]
ZARR_2_18_CODECS = [{"id": "vlen-utf8"}, {"id": "vlen-bytes"}, {"id": "json2"},
                    {"id": "msgpack2"}, {"id": "pickle"}, {"id": "vlen-array", "dtype": "<i4"}]


def _object_array(path, codec, fill):
    os.makedirs(path)
    with open(os.path.join(path, ".zarray"), "w") as f:
        json.dump({"chunks": [2], "compressor": None, "dtype": "|O", "fill_value": fill,
                   "filters": [codec], "order": "C", "shape": [4], "zarr_format": 2}, f)
    return zarrcore.open_array(path, mode="r+")


@pytest.mark.parametrize("codec", ZARR_2_18_CODECS, ids=lambda c: c["id"])
@pytest.mark.parametrize("fill", ZARR_2_18_FILLS, ids=repr)
def test_object_fill_values_read_as_zarr_2_18(tmp_path, codec, fill, pickles_allowed):
    if fill is None and codec["id"] in ("vlen-utf8", "vlen-bytes"):
        pytest.skip("a null fill of text or bytes reads as zarr-python 3 reads it "
                    "(test_null_fill_of_text_reads_as_zarr_python_3)")
    a = _object_array(str(tmp_path / "a"), codec, fill)
    assert type(a.fill_value) is type(fill) and a.fill_value == fill
    got = a[:]
    assert got.dtype == object
    assert [(type(x), x) for x in got.tolist()] == [(type(fill), fill)] * 4


@pytest.mark.parametrize("codec, item", [("vlen-utf8", "x"), ("vlen-bytes", b"x")])
def test_vlen_fill_0_writes_as_zarr_2_18(tmp_path, codec, item):
    import numcodecs

    path = str(tmp_path / "a")
    a = _object_array(path, {"id": codec}, 0)
    a[0] = item
    assert a[:].tolist() == [item, item[:0], 0, 0]
    with open(os.path.join(path, "0"), "rb") as f:
        assert numcodecs.get_codec({"id": codec}).decode(f.read()).tolist() == [item, item[:0]]
    with pytest.raises(TypeError, match="expected"):
        a[2] = 3


def test_string_fills_zarr_python_3_writes_stay_text(tmp_path):
    """zarr-python 3 and zarrcore write a text fill value: those arrays stay text."""
    a = _object_array(str(tmp_path / "a"), {"id": "vlen-utf8"}, "0")
    assert a.dtype == STRING and isinstance(a.metadata.data_type, StringType)
    assert a.fill_value == "0" and a[:].tolist() == ["0"] * 4
    b = _object_array(str(tmp_path / "b"), {"id": "vlen-bytes"}, "")
    assert b.fill_value == b"" and b[:].tolist() == [b""] * 4


def test_null_fill_of_text_reads_as_zarr_python_3(tmp_path):
    """zarr-python 3 and xarray write null as the fill value of their v2 string arrays: those
    stay text (bytes), read empty where no chunk is stored, as zarr-python 3 reads them."""
    a = _object_array(str(tmp_path / "a"), {"id": "vlen-utf8"}, None)
    assert a.dtype == STRING and isinstance(a.metadata.data_type, StringType)
    assert a.fill_value is None and a[:].tolist() == [""] * 4
    b = _object_array(str(tmp_path / "b"), {"id": "vlen-bytes"}, None)
    assert b.fill_value is None and b[:].tolist() == [b""] * 4
