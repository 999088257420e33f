"""Creating arrays of variable-length and Python-object items: the data types zarr-python 3.1
takes (str, StringDType, its data type objects, v3 names) with its metadata byte for byte,
and numpy's object dtype in format 2 with an object codec, as zarr 2.18 created them."""
import json
import os
import warnings

import numpy as np
import pytest

import zarrcore
from zarrcore.metadata.dtypes import ObjectDataTypeError

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "support", "data", "zarr218_legacy")
TEXT = np.array(["a", "bb", "", "dé"], dtype=object)
BLOBS = np.array([b"a", b"\x00b", b"", b"d"], dtype=object)


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def _document(path, fmt):
    return (path / (".zarray" if fmt == 2 else "zarr.json")).read_text()


try:
    from zarr.dtype import VariableLengthBytes, VariableLengthUTF8
except ImportError:  # zarr-python before 3.1
    VariableLengthBytes = VariableLengthUTF8 = None

# name -> (create_array arguments, values to write)
ZARR_PYTHON_CASES = {
    "str": (dict(dtype=str), TEXT),
    "StringDType": (dict(dtype=np.dtypes.StringDType()), TEXT),
    "string_name": (dict(dtype="string"), TEXT),
    "str_fill": (dict(dtype=str, fill_value="x"), TEXT),
    "str_fill_number": (dict(dtype=str, fill_value=0), TEXT),
    "VariableLengthUTF8": (dict(dtype=VariableLengthUTF8 and VariableLengthUTF8()), TEXT),
    "VariableLengthBytes": (dict(dtype=VariableLengthBytes and VariableLengthBytes()), BLOBS),
    "str_vlen_filter_v2": (dict(dtype=str, filters=[numcodecs.VLenUTF8()]), TEXT),
    "str_vlen_compressor_v2": (dict(dtype=str, filters=None, compressors=numcodecs.VLenUTF8()), TEXT),
}


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("case", sorted(ZARR_PYTHON_CASES))
def test_as_zarr_python_creates_them(tmp_path, case, fmt):
    kwargs, values = ZARR_PYTHON_CASES[case]
    if kwargs["dtype"] is None:
        pytest.skip("this zarr-python has no zarr.dtype data type objects")
    if case.endswith("_v2") and fmt == 3:
        pytest.skip("numcodecs object codecs as filters or compressor are format 2 only")
    layout = dict(shape=(4,), chunks=(2,), zarr_format=fmt, **kwargs)
    theirs = _quiet(lambda: zarr.create_array(tmp_path / "theirs", **layout))
    mine = zarrcore.create_array(tmp_path / "mine", **layout)
    assert _document(tmp_path / "mine", fmt) == _document(tmp_path / "theirs", fmt)
    assert mine.dtype == theirs.dtype
    assert mine.fill_value == theirs.fill_value
    assert mine[:].tolist() == theirs[:].tolist()  # all fill
    mine[:2] = values[:2]
    theirs[:2] = values[:2]
    _quiet(lambda: zarr.open_array(tmp_path / "mine").__setitem__(slice(2, None), values[2:]))
    zarrcore.open_array(tmp_path / "theirs")[2:] = values[2:]
    for path in ("mine", "theirs"):
        assert zarrcore.open_array(tmp_path / path)[:].tolist() == values.tolist()
        assert _quiet(lambda: zarr.open_array(tmp_path / path)[:]).tolist() == values.tolist()


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("make", ["create_array", "zeros", "ones", "full", "empty"])
def test_string_fill_values_as_zarr_python(make, fmt):
    """zarr-python casts a number fill value to text for string arrays (zeros -> "0")."""
    kwargs = dict(shape=(2,), dtype=str, zarr_format=fmt)
    if make == "create_array":
        kwargs["store"] = {}
    if make in ("full", "create_array"):
        kwargs["fill_value"] = 7 if make == "full" else 1.5
    theirs = _quiet(lambda: getattr(zarr, make)(**kwargs))
    mine = getattr(zarrcore, make)(**{**kwargs, "store": {}} if "store" in kwargs else kwargs)
    assert mine.fill_value == theirs.fill_value
    assert mine[:].tolist() == theirs[:].tolist()


@pytest.mark.parametrize("fmt", [2, 3])
def test_object_dtype_without_an_object_codec_is_refused(fmt):
    """zarr-python raises a ValueError for numpy's object dtype; so does zarrcore (also a
    TypeError), unless format 2 names the items' codec."""
    for dtype in (object, "O", "|O", np.dtype(object)):
        with pytest.raises(ValueError, match="ambiguous"):
            _quiet(lambda: zarr.create_array({}, shape=(2,), dtype=dtype, zarr_format=fmt))
        with pytest.raises(ObjectDataTypeError, match="ambiguous") as info:
            zarrcore.create_array({}, shape=(2,), dtype=dtype, zarr_format=fmt)
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
    with pytest.raises(ValueError, match="ambiguous"):
        zarrcore.create_array({}, shape=(2,), dtype=object, zarr_format=3, filters=[numcodecs.JSON()])
    with pytest.raises(ValueError, match="ambiguous"):
        zarrcore.create_array({}, shape=(2,), dtype=object, zarr_format=2, filters=[numcodecs.Delta("i4")])


# Fixture written by zarr 2.18 -> the numcodecs object codec zarr 2.18 was given.
ZARR_2_CASES = {
    "json2": [numcodecs.JSON()],
    "json2_2d": [numcodecs.JSON()],
    "msgpack2": [numcodecs.MsgPack()],
    "vlen_array": [numcodecs.VLenArray("<i4")],
    "pickle": [numcodecs.Pickle()],
}


def _untagged(item):
    if isinstance(item, dict) and set(item) == {"ndarray", "dtype"}:
        return np.array(item["ndarray"], dtype=item["dtype"])
    return item


def _chunk_items(path, key, zarray):
    """A chunk decoded by numcodecs, as zarr 2.18 decodes it."""
    data = numcodecs.get_codec(zarray["compressor"]).decode((path / key).read_bytes())
    return numcodecs.get_codec(zarray["filters"][0]).decode(data)


@pytest.mark.parametrize("case", sorted(ZARR_2_CASES))
def test_object_dtype_with_an_object_codec_as_zarr_2_18(tmp_path, monkeypatch, case):
    """dtype=object and an object codec among the filters in format 2: the .zarray zarr 2.18
    wrote for the same array (plus the dimension_separator zarr-python 3 writes), and chunks
    numcodecs decodes to the items written."""
    fixture = os.path.join(FIXTURES, case)
    with open(os.path.join(fixture, ".zarray")) as f:
        zarray = json.load(f)
    with open(os.path.join(fixture, "expected.json")) as f:
        items = [_untagged(x) for x in json.load(f)["items"]]
    values = np.empty(len(items), dtype=object)
    values[:] = items
    values = values.reshape(zarray["shape"])
    a = zarrcore.create_array(tmp_path / "a", shape=tuple(zarray["shape"]), chunks=tuple(zarray["chunks"]),
                              dtype=object, zarr_format=2, filters=ZARR_2_CASES[case],
                              compressors=zarray["compressor"])
    assert json.loads((tmp_path / "a" / ".zarray").read_text()) == {**zarray, "dimension_separator": "."}
    assert a.fill_value == 0 and a.dtype == object
    lead = tuple(slice(0, n) for n in zarray["chunks"])
    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True, raising=False)
    zarrcore.config.set(allow_pickle=True)
    try:
        a[lead] = values[lead]
        got = a[lead]
    finally:
        zarrcore.config.set(allow_pickle=False)
    stored = _chunk_items(tmp_path / "a", ".".join("0" * len(zarray["shape"])), zarray)
    for g, s, want in zip(got.reshape(-1).tolist(), stored.reshape(-1).tolist(), values[lead].reshape(-1).tolist()):
        for item in (g, s):
            if isinstance(want, np.ndarray):
                np.testing.assert_array_equal(item, want)
            else:
                assert item == want


def test_object_codec_as_compressor_and_string_types(tmp_path):
    """vlen-utf8 / vlen-bytes given for dtype=object decide the string types; categorize on
    objects is a Python-object array."""
    a = zarrcore.create_array(tmp_path / "s", shape=(4,), chunks=(2,), dtype=object, zarr_format=2,
                              filters=None, compressors=numcodecs.VLenUTF8())
    a[:] = TEXT
    assert a.dtype == np.dtypes.StringDType() and a.fill_value == ""
    assert _quiet(lambda: zarr.open_array(tmp_path / "s")[:]).tolist() == TEXT.tolist()
    b = zarrcore.create_array(tmp_path / "b", shape=(4,), chunks=(2,), dtype="O", zarr_format=2,
                              filters=[{"id": "vlen-bytes"}])
    b[:] = BLOBS
    assert _quiet(lambda: zarr.open_array(tmp_path / "b")[:]).tolist() == BLOBS.tolist()
    c = zarrcore.create_array(tmp_path / "c", shape=(4,), chunks=(2,), dtype=object, zarr_format=2,
                              filters=[numcodecs.Categorize(["x", "y"], dtype=object)])
    c[:] = np.array(["x", "y", "", "x"], dtype=object)
    assert c.dtype == object and c[:].tolist() == ["x", "y", "", "x"]


def test_v3_data_type_names_and_zarr_data_type_objects():
    assert zarrcore.create_array({}, shape=(2,), dtype="variable_length_bytes").dtype == object
    if VariableLengthUTF8 is not None:
        from zarr.dtype import Float32, Int16

        assert zarrcore.create_array({}, shape=(2,), dtype=Float32()).dtype == np.float32
        assert zarrcore.create_array({}, shape=(2,), dtype=Int16(endianness="big"), zarr_format=2).dtype == ">i2"
    with pytest.raises(TypeError, match="not a data type"):
        zarrcore.create_array({}, shape=(2,), dtype="no_such_type")
