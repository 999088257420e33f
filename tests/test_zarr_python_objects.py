"""zarr-python's objects wherever zarr-python takes them: its codec objects (zarr.codecs.*,
zarr.codecs.numcodecs.*) and numcodecs' as the filters, serializer and compressors of new
arrays, stored as zarr-python stores them."""
import json
import warnings

import numcodecs
import numpy as np
import pytest

import zarrcore
from zarrcore.errors import UnknownCodecError, UnknownCodecObjectError

zarr = pytest.importorskip("zarr", reason="zarr-python's codec objects come from zarr")
import zarr.codecs as zc  # noqa: E402
import zarr.codecs.numcodecs as zn  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet():
    # zarr.codecs.numcodecs warns that its codecs are not in the v3 specification.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# (dtype, create_array keywords), each with zarr-python's codec objects
V3_CASES = {
    "blosc_tuned_i4": ("i4", lambda: dict(compressors=zc.BloscCodec())),
    "blosc_tuned_u1": ("u1", lambda: dict(compressors=zc.BloscCodec())),
    "blosc_given": ("i4", lambda: dict(
        compressors=zc.BloscCodec(typesize=2, shuffle="noshuffle", cname="lz4"))),
    "bytes_u1": ("u1", lambda: dict(serializer=zc.BytesCodec())),
    "zstd_crc32c": ("i4", lambda: dict(compressors=[zc.ZstdCodec(level=3), zc.Crc32cCodec()])),
    "gzip": ("i4", lambda: dict(compressors=zc.GzipCodec(level=2))),
    "transpose": ("i4", lambda: dict(filters=zc.TransposeCodec(order=(1, 0)))),
    "sharding": ("i4", lambda: dict(
        serializer=zc.ShardingCodec(chunk_shape=(2, 2), codecs=[zc.BytesCodec(),
                                                                 zc.BloscCodec()]),
        compressors=None)),
    "numcodecs_zlib": ("i4", lambda: dict(compressors=zn.Zlib(level=3))),
    "numcodecs_delta": ("i4", lambda: dict(filters=zn.Delta(dtype="i4"))),
    "numcodecs_shuffle": ("f4", lambda: dict(compressors=zn.Shuffle())),
    "numcodecs_fixedscaleoffset": ("f8", lambda: dict(
        filters=zn.FixedScaleOffset(scale=10, offset=1))),
}


@pytest.mark.parametrize("case", sorted(V3_CASES))
def test_zarr_python_codec_objects_store_as_zarr_python_stores_them(case, tmp_path):
    dtype, kwargs = V3_CASES[case]
    common = dict(shape=(6, 4), chunks=(4, 2), dtype=dtype)
    theirs = zarr.create_array({}, **common, **kwargs()).metadata.to_dict()["codecs"]
    store = str(tmp_path)
    ours = zarrcore.create_array(store, **common, **kwargs())
    assert ours.metadata.to_json()["codecs"] == json.loads(json.dumps(theirs))
    data = (np.arange(24) % 7).reshape(6, 4).astype(dtype)
    ours[...] = data
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], data)


def test_group_create_array_and_create_take_codec_objects():
    group = zarrcore.group({})
    a = group.create_array("a", shape=(8,), chunks=(4,), dtype="i2",
                           compressors=zc.BloscCodec(cname="zlib"))
    assert a.metadata.to_json()["codecs"][1]["configuration"] == {
        "typesize": 2, "cname": "zlib", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}
    b = zarrcore.create(shape=(8,), chunks=(4,), dtype="i2",
                        codecs=[zc.BytesCodec(), zc.BloscCodec()])
    assert b.metadata.to_json()["codecs"][1]["configuration"]["typesize"] == 2


def test_numcodecs_objects_in_v3_are_their_zarr_codecs_numcodecs_form(tmp_path):
    store = str(tmp_path)
    a = zarrcore.create_array(store, shape=(8,), chunks=(4,), dtype="i4",
                              filters=[numcodecs.Delta(dtype="<i4")],
                              compressors=numcodecs.Zlib(level=2))
    assert a.metadata.to_json()["codecs"] == [
        {"name": "numcodecs.delta", "configuration": {"dtype": "<i4", "astype": "<i4"}},
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "numcodecs.zlib", "configuration": {"level": 2}},
    ]
    a[...] = np.arange(8)
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], np.arange(8))


@pytest.mark.parametrize("compressor, stored", [
    (lambda: zc.BloscCodec(cname="lz4", shuffle="shuffle"),
     {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}),
    (lambda: zc.ZstdCodec(level=2), {"id": "zstd", "level": 2}),
    (lambda: zc.GzipCodec(level=4), {"id": "gzip", "level": 4}),
    (lambda: zn.Zlib(level=1), {"id": "zlib", "level": 1}),
])
def test_zarr_python_codec_objects_in_format_2(compressor, stored, tmp_path):
    store = str(tmp_path)
    a = zarrcore.create_array(store, shape=(8,), chunks=(4,), dtype="<i4", zarr_format=2,
                              filters=[zn.Delta(dtype="<i4")], compressors=compressor())
    meta = json.loads((tmp_path / ".zarray").read_text())
    assert meta["compressor"] == stored
    assert meta["filters"] == [{"id": "delta", "dtype": "<i4", "astype": "<i4"}]
    a[...] = np.arange(8)
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], np.arange(8))


@pytest.mark.parametrize("stage, zarr_format", [
    ("filters", 3), ("serializer", 3), ("compressors", 3), ("filters", 2), ("compressors", 2)])
def test_an_unknown_object_says_what_to_pass(stage, zarr_format):
    named = stage.rstrip("s")  # format 2's messages name its one "compressor"
    with pytest.raises(UnknownCodecObjectError, match=f"{named}.*zarr.codecs") as e:
        zarrcore.create_array({}, shape=(4,), dtype="i4", zarr_format=zarr_format,
                              **{stage: object()})
    # zarr-python raises a TypeError; zarrcore's codec errors are ValueErrors.
    assert isinstance(e.value, TypeError) and isinstance(e.value, UnknownCodecError)
