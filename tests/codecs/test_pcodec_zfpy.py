"""numcodecs' array->bytes codecs `pcodec` and `zfpy`: v2 ids and v3 `numcodecs.<id>` names,
both ways with zarr-python 3 + numcodecs, and decoding bounded by the chunk's size."""
import json
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.codecs import ChunkSpec, codec_from_json, codec_from_v2
from zarrcore.errors import ChunkDecodeError, MetadataError

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")
pytest.importorskip("pcodec", reason="pcodec is not installed (the pcodec extra)")
pytest.importorskip("zfpy", reason="zfpy is not installed (the zfpy extra)")
if not hasattr(numcodecs, "ZFPY") or not hasattr(numcodecs, "PCodec"):
    pytest.skip("this numcodecs has no ZFPY/PCodec, so there is nothing to compare with",
                allow_module_level=True)

from _numcodecs_zarr3 import IGNORE_WARNINGS, nc  # noqa: E402

pytestmark = IGNORE_WARNINGS

# name -> (dtype, numcodecs configuration without its id)
CASES = {
    "pcodec": ("float64", {"id": "pcodec"}),
    "pcodec_level_classic": ("int32", {"id": "pcodec", "level": 3, "mode_spec": "classic"}),
    "pcodec_delta_order": ("uint16", {"id": "pcodec", "delta_spec": "try_consecutive",
                                      "delta_encoding_order": 2}),
    "pcodec_float16": ("float16", {"id": "pcodec", "equal_pages_up_to": 7}),
    "zfpy_lossless": ("float64", {"id": "zfpy"}),
    "zfpy_tolerance": ("float32", {"id": "zfpy", "mode": 4, "tolerance": 0.01}),
    "zfpy_rate": ("float64", {"id": "zfpy", "mode": 2, "rate": 12}),
    "zfpy_precision": ("int64", {"id": "zfpy", "mode": 3, "precision": 20}),
    "zfpy_int32": ("int32", {"id": "zfpy"}),
    # numcodecs hands datetimes and timedeltas over as int64
    "pcodec_datetime": ("<M8[s]", {"id": "pcodec"}),
    "zfpy_timedelta": ("<m8[ns]", {"id": "zfpy"}),
}


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def _data(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    values = np.cumsum(rng.normal(size=shape), axis=-1) * 50
    if np.dtype(dtype).kind in "mM":
        return values.astype(np.int64).view(dtype)
    return values.astype(dtype)


def _numcodec(config):
    return numcodecs.get_codec(dict(config))


def _v3_codec(config):
    options = {k: v for k, v in config.items() if k != "id"}
    return _quiet(lambda: (nc.PCodec if config["id"] == "pcodec" else nc.ZFPY)(**options))


def _document(path, name):
    with open(path / name) as f:
        return json.load(f)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_v2_both_ways(tmp_path, case, order):
    """zarr-python writes a v2 array with the codec as compressor, zarrcore reads it exactly and
    writes the same .zarray and the same chunk bytes; zarr-python reads zarrcore's exactly."""
    dtype, config = CASES[case]
    if order == "F" and config["id"] == "zfpy":
        pytest.skip("numcodecs' zfpy refuses F-order chunks, so zarr-python cannot write them")
    layout = dict(shape=(20, 9), chunks=(6, 4), dtype=dtype, zarr_format=2, order=order, fill_value=0)
    data = _data(dtype, (20, 9))
    theirs = _quiet(lambda: zarr.create_array(tmp_path / "theirs", compressors=_numcodec(config), **layout))
    theirs[:14] = data[:14]
    expected = theirs[:]
    ours = zarrcore.open_array(tmp_path / "theirs")
    np.testing.assert_array_equal(ours[:], expected)
    np.testing.assert_array_equal(ours[3:17, 1:7], expected[3:17, 1:7])

    zarray = _document(tmp_path / "theirs", ".zarray")
    mine = zarrcore.create_array(tmp_path / "mine", compressors=zarray["compressor"], **layout)
    mine[:14] = data[:14]
    assert _document(tmp_path / "mine", ".zarray") == zarray
    for key in ("0.0", "1.2", "2.1"):
        assert (tmp_path / "mine" / key).read_bytes() == (tmp_path / "theirs" / key).read_bytes()
    np.testing.assert_array_equal(_quiet(lambda: zarr.open_array(tmp_path / "mine")[:]), expected)


@pytest.mark.parametrize("shards", [None, (12, 8)], ids=["chunked", "sharded"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_v3_both_ways(tmp_path, case, shards):
    """numcodecs.pcodec / numcodecs.zfpy as the serializer: zarr-python writes, zarrcore reads
    exactly; zarrcore writes the same zarr.json and zarr-python reads it exactly, each writing
    into the other's array."""
    dtype, config = CASES[case]
    layout = dict(shape=(24, 8), chunks=(6, 4), shards=shards, dtype=dtype, compressors=None, fill_value=0)
    data = _data(dtype, (24, 8), seed=1)
    theirs = _quiet(lambda: zarr.create_array(tmp_path / "theirs", serializer=_v3_codec(config), **layout))
    theirs[:18] = data[:18]
    expected = theirs[:]
    ours = zarrcore.open_array(tmp_path / "theirs")
    np.testing.assert_array_equal(ours[:], expected)

    stored = _document(tmp_path / "theirs", "zarr.json")["codecs"]
    serializer = stored[0]["configuration"]["codecs"][0] if shards else stored[0]
    mine = zarrcore.create_array(tmp_path / "mine", serializer=serializer, **layout)
    mine[:18] = data[:18]
    assert _document(tmp_path / "mine", "zarr.json")["codecs"] == stored
    np.testing.assert_array_equal(_quiet(lambda: zarr.open_array(tmp_path / "mine")[:]), expected)
    _quiet(lambda: zarr.open_array(tmp_path / "mine").__setitem__(slice(18, None), data[18:]))
    ours[18:] = data[18:]
    np.testing.assert_array_equal(mine[:], _quiet(lambda: zarr.open_array(tmp_path / "theirs")[:]))


def test_configurations_as_numcodecs_stores_them():
    """to_v2_json is numcodecs' get_config for every case, defaults included."""
    for dtype, config in CASES.values():
        assert codec_from_v2(config).to_v2_json() == _numcodec(config).get_config()
    reversible = {"id": "zfpy", "mode": 5}  # no compression_kwargs for a mode it cannot encode
    assert codec_from_v2(reversible).to_v2_json() == {**reversible, "tolerance": -1, "rate": -1, "precision": -1}


@pytest.mark.parametrize("config, dtype", [({"id": "pcodec"}, "uint8"), ({"id": "pcodec"}, "complex64"),
                                           ({"id": "zfpy"}, "uint16"), ({"id": "zfpy"}, "float16")])
def test_types_the_codec_cannot_store(tmp_path, config, dtype):
    with pytest.raises(MetadataError, match=f"{config['id']} codec: data type"):
        zarrcore.create_array(tmp_path / "a", shape=(4,), dtype=dtype, zarr_format=2, compressors=config)


@pytest.mark.parametrize("config", [{"id": "pcodec", "level": 40}, {"id": "pcodec", "mode_spec": "x"},
                                    {"id": "pcodec", "delta_spec": "none", "delta_encoding_order": 1},
                                    {"id": "zfpy", "mode": 1}])
def test_bad_encoding_parameters_are_refused_on_write_only(tmp_path, config):
    """Parameters matter only for encoding: an array stored with them still reads."""
    a = zarrcore.create_array(tmp_path / "a", shape=(8,), chunks=(8,), dtype="float64",
                              zarr_format=2, compressors=config, fill_value=0)
    with pytest.raises(MetadataError, match=config["id"]):
        a[:] = 1.0
    np.testing.assert_array_equal(a[:], np.zeros(8))


def _spec(shape, dtype):
    return ChunkSpec(tuple(shape), np.dtype(dtype))


@pytest.mark.parametrize("config", [{"id": "pcodec"}, {"id": "zfpy"}])
def test_hostile_chunks(config):
    """Chunks that hold more, fewer, or other values than the chunk, or are cut short, are
    ChunkDecodeErrors; nothing is allocated from what the data declares."""
    codec = codec_from_v2(config)
    good = codec.encode(_data("float64", (8, 8)), _spec((8, 8), "float64"))
    for data, spec in [
        (good, _spec((4, 8), "float64")),  # more values than the chunk
        (good, _spec((16, 8), "float64")),  # fewer
        (good, _spec((8, 8), "int64")),  # another type
        (codec.encode(_data("float64", (4096, 64)), _spec((4096, 64), "float64")), _spec((8, 8), "float64")),
        (good[: len(good) // 2], _spec((8, 8), "float64")),
        (good[:5], _spec((8, 8), "float64")),
        (b"", _spec((8, 8), "float64")),
        (b"\xff" * 40, _spec((8, 8), "float64")),
    ]:
        try:
            out = codec.resolve(spec).decode(data, spec)
        except ChunkDecodeError:
            continue
        # zfp has no end marker: a stream cut short decodes, into its zero padding.
        assert config["id"] == "zfpy" and len(data) < len(good) and out.shape == spec.shape


def test_zfp_stream_shorter_than_its_header_implies_is_refused():
    """A fixed-rate header promises every block's bits: a shorter stream is cut short, and is
    refused before it is padded for decoding."""
    import zfpy

    stream = zfpy.compress_numpy(np.zeros(4096), rate=4000, write_header=True)
    codec = codec_from_v2({"id": "zfpy"})
    np.testing.assert_array_equal(codec.decode(stream, _spec((4096,), "float64")), np.zeros(4096))
    with pytest.raises(ChunkDecodeError, match="shorter than its 1024 blocks"):
        codec.decode(stream[:-100], _spec((4096,), "float64"))


@pytest.mark.parametrize("module", ["pcodec", "zfpy"])
def test_missing_package_names_the_extra(tmp_path, monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(MetadataError, match=rf"zarrcore\[{module}\]"):
        zarrcore.create_array(tmp_path / "a", shape=(4,), dtype="float64", zarr_format=2,
                              compressors={"id": module})
    with pytest.raises(MetadataError, match=rf"zarrcore\[{module}\]"):
        codec_from_json({"name": f"numcodecs.{module}"}).resolve(_spec((4,), "float64"))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=st.sampled_from(sorted(CASES)), fmt=st.sampled_from([2, 3]),
       shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
       chunk_fraction=st.floats(0.2, 1.0), seed=st.integers(0, 2**16))
def test_round_trip(tmp_path_factory, case, fmt, shape, chunk_fraction, seed):
    """zarrcore's writes read back as zarr-python reads them; lossless configurations exactly."""
    dtype, config = CASES[case]
    chunks = tuple(max(1, int(n * chunk_fraction)) for n in shape)
    path = tmp_path_factory.mktemp("rt")
    codec = {"compressors": config} if fmt == 2 else {
        "serializer": {"name": f"numcodecs.{config['id']}",
                       "configuration": {k: v for k, v in config.items() if k != "id"}},
        "compressors": None}
    data = _data(dtype, tuple(shape), seed)
    a = zarrcore.create_array(path, shape=tuple(shape), chunks=chunks, dtype=dtype, zarr_format=fmt,
                              fill_value=0, **codec)
    a[...] = data
    theirs = _quiet(lambda: zarr.open_array(path)[...])
    np.testing.assert_array_equal(a[...], theirs)
    if config["id"] == "pcodec" or config == {"id": "zfpy"} or dtype == "<m8[ns]":
        np.testing.assert_array_equal(a[...], data)
