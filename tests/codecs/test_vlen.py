"""vlen-utf8 and vlen-bytes: the compiled framing, its length checks, the codecs, and string and
bytes arrays end to end (hypothesis round trips against numcodecs and zarr-python)."""
import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore import kernels
from zarrcore._native import filters as _filters
from zarrcore.codecs import ChunkSpec, VLenBytesCodec, VLenUTF8Codec, codec_from_json, codec_from_v2
from zarrcore.errors import ChunkDecodeError, MetadataError

numcodecs = pytest.importorskip("numcodecs")

# The dtype of zarrcore's string arrays: numpy 2's StringDType, object arrays of str before.
STRING = (np.dtypes.StringDType() if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType")
          else np.dtype(object))


def frame(*items, count=None):
    """The vlen layout by hand: uint32 count, then per item uint32 length + bytes."""
    out = struct.pack("<I", len(items) if count is None else count)
    for item in items:
        out += struct.pack("<I", len(item)) + item
    return out


# -- the compiled framing ----------------------------------------------------------------------


def test_layout_and_round_trip():
    items = ["", "a", "héllo", "\x00", "日本語" * 50]
    encoded = bytes(_filters.vlen_encode(items, True))
    assert encoded == frame(*(s.encode() for s in items))
    assert _filters.vlen_decode(encoded, len(items), True) == items
    raw = [b"", b"\x00\xff", b"abc" * 1000]
    encoded = bytes(_filters.vlen_encode(raw, False))
    assert encoded == frame(*raw)
    assert _filters.vlen_decode(encoded, 3, False) == raw
    assert bytes(_filters.vlen_encode([], True)) == b"\x00\x00\x00\x00"
    assert _filters.vlen_decode(b"\x00\x00\x00\x00", 0, False) == []


def test_bytes_like_items():
    encoded = _filters.vlen_encode([bytearray(b"ab"), memoryview(b"cd"), np.bytes_(b"e")], False)
    assert _filters.vlen_decode(encoded, 3, False) == [b"ab", b"cd", b"e"]


@pytest.mark.parametrize("text,items", [(True, [b"x"]), (True, [1]), (False, ["x"]), (False, [3.5])])
def test_wrong_item_types(text, items):
    with pytest.raises(TypeError):
        _filters.vlen_encode(items, text)


@pytest.mark.parametrize("data,count", [
    (b"", 0),                                            # no header
    (b"\x01\x00\x00", 1),                                # short header
    (frame(b"ab"), 2),                                   # count differs from the chunk's
    (frame(b"ab", count=3), 3),                          # header claims more items than there are
    (frame(b"abc")[:-1], 1),                             # item runs past the end
    (frame(b"ab") + b"\x05\x00", 2),                     # truncated length field
    (struct.pack("<II", 1, 0xFFFFFFFF) + b"abc", 1),     # huge length
    (struct.pack("<II", 2, 0xFFFFFFFC) + b"abcd" * 2, 2),  # lengths whose sum wraps 32 bits
    (struct.pack("<I", 0xFFFFFFFF), 1),                  # huge count, nothing behind it
])
@pytest.mark.parametrize("text", [True, False])
def test_corrupt_frames_raise(data, count, text):
    with pytest.raises(ChunkDecodeError):
        _filters.vlen_decode(data, count, text)


@pytest.mark.parametrize("text", [True, False])
def test_trailing_bytes_raise(text):
    with pytest.raises(ChunkDecodeError, match="left over"):
        _filters.vlen_decode(frame(b"ab") + b"\x00", 1, text)


def test_invalid_utf8_raises():
    with pytest.raises(ChunkDecodeError, match="item 1 is not valid UTF-8"):
        _filters.vlen_decode(frame(b"ok", b"\xff\xfe"), 2, True)
    assert _filters.vlen_decode(frame(b"ok", b"\xff\xfe"), 2, False) == [b"ok", b"\xff\xfe"]


def test_decode_accepts_any_buffer():
    data = frame(b"ab", b"c")
    for buf in (data, bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert _filters.vlen_decode(buf, 2, False) == [b"ab", b"c"]


# -- the codecs ------------------------------------------------------------------------------------


def test_codec_names_and_json():
    for cls, name in ((VLenUTF8Codec, "vlen-utf8"), (VLenBytesCodec, "vlen-bytes")):
        codec = codec_from_json({"name": name, "configuration": {}})
        assert type(codec) is cls and codec.to_json() == {"name": name, "configuration": {}}
        assert type(codec_from_v2({"id": name})) is cls and codec.to_v2_json() == {"id": name}


def test_codec_refuses_fixed_size_dtypes():
    with pytest.raises(MetadataError, match="variable-length"):
        VLenUTF8Codec().resolve(ChunkSpec((2,), np.dtype("U3")))


@pytest.mark.parametrize("shape", [(0,), (5,), (2, 3)])
def test_codec_matches_numcodecs(shape):
    n = int(np.prod(shape))
    text = np.array([f"s{i}é" * i for i in range(n)], dtype=object).reshape(shape)
    raw = np.array([bytes(range(i)) for i in range(n)] or [], dtype=object).reshape(shape)
    for codec, theirs, data, dtype in ((VLenUTF8Codec(), numcodecs.VLenUTF8(), text, STRING),
                                        (VLenBytesCodec(), numcodecs.VLenBytes(), raw, np.dtype(object))):
        spec = ChunkSpec(shape, dtype)
        ours = bytes(codec.encode(data.astype(dtype), spec))
        assert ours == bytes(theirs.encode(data))
        decoded = codec.decode(ours, spec)
        assert decoded.dtype == dtype and decoded.shape == shape
        assert decoded.tolist() == data.tolist()
        out = np.empty(shape, dtype=dtype)
        assert codec.decode(ours, spec, out=out) is out and out.tolist() == data.tolist()


def test_is_fill_on_variable_length():
    assert kernels.is_fill(np.array(["", ""], dtype=STRING), "")
    assert not kernels.is_fill(np.array(["", "a"], dtype=STRING), "")
    assert kernels.is_fill(np.array([b"z\x00", b"z\x00"], dtype=object), b"z\x00")
    assert not kernels.is_fill(np.array([b"z\x00", b"z"], dtype=object), b"z\x00")
    assert not kernels.is_fill(np.array([b"z", b"z"], dtype=object), b"z\x00")


# -- arrays ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
def test_all_fill_chunks_are_not_stored(store, fmt):
    a = zarrcore.create_array(store, shape=(6,), chunks=(2,), dtype=str, fill_value="f", zarr_format=fmt)
    a[:] = ["f", "f", "x", "f", "f", "f"]
    assert a.nchunks_initialized == 1
    assert a[:].tolist() == ["f", "f", "x", "f", "f", "f"]
    a[2] = "f"
    assert a.nchunks_initialized == 0


def test_fill_with_trailing_nul_is_kept(store):
    a = zarrcore.create_array(store, shape=(4,), chunks=(2,), dtype=bytes, fill_value=b"z\x00")
    a[1] = b"y"
    a[2:] = [b"z", b"z"]  # not the fill: must be stored
    assert a[:].tolist() == [b"z\x00", b"y", b"z", b"z"]
    assert a.nchunks_initialized == 2


@pytest.mark.parametrize("fmt", [2, 3])
def test_bytes_fill_value_reads_as_zarr34_reads_it(tmp_path, fmt):
    """A vlen-bytes fill value is stored in base64 and read as zarr-python 3.4 reads it:
    characters outside base64's alphabet (a line break, say) skipped; bad padding refused."""
    a = zarrcore.create_array(tmp_path / "a", shape=(2,), dtype=bytes, fill_value=b"\xff",
                              zarr_format=fmt)
    assert a.fill_value == b"\xff" and a[...].tolist() == [b"\xff", b"\xff"]
    name = "zarr.json" if fmt == 3 else ".zarray"
    doc = json.loads((tmp_path / "a" / name).read_text())
    assert doc["fill_value"] == "/w=="
    (tmp_path / "a" / name).write_text(json.dumps(dict(doc, fill_value="YW\nJj")))
    a = zarrcore.open_array(tmp_path / "a")
    assert a.fill_value == b"abc" and a[...].tolist() == [b"abc", b"abc"]
    (tmp_path / "a" / name).write_text(json.dumps(dict(doc, fill_value="abc")))
    with pytest.raises(MetadataError, match="fill_value"):
        zarrcore.open_array(tmp_path / "a")


@pytest.mark.parametrize("fmt", [2, 3])
def test_corrupt_chunk_names_its_key(tmp_path, fmt):
    a = zarrcore.create_array(tmp_path, shape=(4,), chunks=(2,), dtype=bytes, zarr_format=fmt, compressors=None)
    a[:] = [b"a", b"b", b"c", b"d"]
    key = "c/1" if fmt == 3 else "1"
    (tmp_path / key).write_bytes(frame(b"c", b"d", count=3))
    with pytest.raises(ChunkDecodeError, match=key):
        a[:]
    assert a[:2].tolist() == [b"a", b"b"]


def test_string_selections_and_fields_of_metadata(store):
    a = zarrcore.create_array(store, shape=(5, 4), chunks=(2, 3), dtype=str, fill_value="·")
    a[1:4, 1:3] = [["a", "bb"], ["ccc", ""], ["é", "日"]]
    b = zarrcore.open_array(store, mode="r")
    assert b.dtype == STRING and b.fill_value == "·"
    assert b[2, 1] == "ccc"
    assert b.oindex[[0, 3], [2, 1]].tolist() == [["·", "·"], ["日", "é"]]
    assert b.vindex[[1, 2], [1, 2]].tolist() == ["a", ""]
    assert b[:, 0].tolist() == ["·"] * 5


def test_resize_and_append_strings(store):
    a = zarrcore.create_array(store, shape=(3,), chunks=(2,), dtype=str, fill_value="-")
    a[:] = ["a", "b", "c"]
    a.resize(1)
    a.resize(4)
    assert a[:].tolist() == ["a", "-", "-", "-"]
    a.append(np.array(["x", "yy"], dtype=STRING))
    assert a[:].tolist() == ["a", "-", "-", "-", "x", "yy"]


# -- hypothesis round trips ----------------------------------------------------------------------

texts = st.text(max_size=20)
blobs = st.binary(max_size=20)


@given(items=st.lists(texts, max_size=30))
def test_hypothesis_utf8_framing(items):
    encoded = _filters.vlen_encode(items, True)
    assert bytes(encoded) == bytes(numcodecs.VLenUTF8().encode(np.array(items, dtype=object)))
    assert _filters.vlen_decode(encoded, len(items), True) == items


@given(items=st.lists(blobs, max_size=30))
def test_hypothesis_bytes_framing(items):
    encoded = _filters.vlen_encode(items, False)
    assert _filters.vlen_decode(encoded, len(items), False) == items
    decoded = numcodecs.VLenBytes().decode(bytes(encoded))
    assert list(decoded) == items


@given(data=st.binary(max_size=40), count=st.integers(0, 6), text=st.booleans())
def test_hypothesis_garbage_never_crashes(data, count, text):
    try:
        items = _filters.vlen_decode(data, count, text)
    except ChunkDecodeError:
        return
    assert len(items) == count
    assert bytes(_filters.vlen_encode(items, text)) == data


@st.composite
def writes(draw):
    kind = draw(st.sampled_from(["str", "bytes"]))
    items = texts if kind == "str" else blobs
    n = draw(st.integers(1, 12))
    chunks = draw(st.integers(1, n))
    fill = draw(items)
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, n - 1))
        stop = draw(st.integers(start + 1, n))
        steps.append((start, stop, draw(st.lists(items, min_size=stop - start, max_size=stop - start))))
    return kind, n, chunks, fill, steps, draw(st.sampled_from([2, 3]))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=writes())
def test_hypothesis_arrays_match_numpy_and_zarr_python(tmp_path_factory, case):
    zarr = pytest.importorskip("zarr")
    kind, n, chunks, fill, steps, fmt = case
    path = tmp_path_factory.mktemp("vlen")
    dtype = STRING if kind == "str" else np.dtype(object)
    a = zarrcore.create_array(path, shape=(n,), chunks=(chunks,), dtype=str if kind == "str" else bytes,
                              fill_value=fill, zarr_format=fmt)
    model = np.empty(n, dtype=dtype)
    model[...] = fill
    for start, stop, values in steps:
        value = np.empty(len(values), dtype=dtype)
        value[:] = values
        a[start:stop] = value
        model[start:stop] = value
    assert a[...].tolist() == model.tolist()
    assert zarr.open_array(path, mode="r")[...].tolist() == model.tolist()
