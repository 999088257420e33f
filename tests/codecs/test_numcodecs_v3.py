"""numcodecs' codecs in v3 arrays (`numcodecs.<id>`), both ways with zarr-python 3."""
import json
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.codecs import codec_from_json, codec_from_v2
from zarrcore.errors import ChecksumError, MetadataError

zarr = pytest.importorskip("zarr")

from _numcodecs_zarr3 import IGNORE_WARNINGS, nc  # noqa: E402

pytestmark = IGNORE_WARNINGS


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


# name -> (dtype, "filters" or "compressors", zarr-python codec factory)
CASES = {
    "delta": ("int32", "filters", lambda: nc.Delta(dtype="int32")),
    "delta_astype": ("int32", "filters", lambda: nc.Delta(dtype="<i4", astype="<i2")),
    "delta_float": ("float64", "filters", lambda: nc.Delta(dtype="<f8")),
    "bitround": ("float32", "filters", lambda: nc.BitRound(keepbits=10)),
    "fixedscaleoffset": ("float64", "filters", lambda: nc.FixedScaleOffset(offset=1, scale=10, astype="u1")),
    "quantize": ("float64", "filters", lambda: nc.Quantize(digits=3)),
    "astype": ("float64", "filters", lambda: nc.AsType(encode_dtype="float32")),
    "packbits": ("bool", "filters", lambda: nc.PackBits()),
    "zlib": ("int32", "compressors", lambda: nc.Zlib()),
    "gzip": ("int32", "compressors", lambda: nc.GZip(level=3)),
    "zstd": ("uint16", "compressors", lambda: nc.Zstd(level=5, checksum=True)),
    "blosc": ("int32", "compressors", lambda: nc.Blosc()),
    "blosc_autoshuffle": ("int32", "compressors", lambda: nc.Blosc(cname="zstd", shuffle=-1)),
    "blosc_typesize": ("int32", "compressors", lambda: nc.Blosc(typesize=4, shuffle=2)),
    "lz4": ("int32", "compressors", lambda: nc.LZ4()),
    "bz2": ("int32", "compressors", lambda: nc.BZ2(level=9)),
    "lzma": ("int32", "compressors", lambda: nc.LZMA()),
    "shuffle": ("int32", "compressors", lambda: nc.Shuffle()),
    "crc32": ("int32", "compressors", lambda: nc.CRC32()),
    "crc32c": ("int32", "compressors", lambda: nc.CRC32C()),
    "crc32c_start": ("int32", "compressors", lambda: nc.CRC32C(location="start")),
    "adler32": ("int32", "compressors", lambda: nc.Adler32(location="end")),
    "fletcher32": ("int32", "compressors", lambda: nc.Fletcher32()),
    "jenkins_lookup3": ("int32", "compressors", lambda: nc.JenkinsLookup3(initval=5)),
}


def _data(dtype, shape):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == bool:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) * 1.37 + 2).astype(dtype).reshape(shape)


def _codecs(path):
    with open(path / "zarr.json") as f:
        return json.load(f)["codecs"]


def _kwargs(case, as_dict):
    dtype, where, make = CASES[case]
    codec = _quiet(make)
    return {"dtype": dtype, where: [codec.to_dict() if as_dict else codec]}


@pytest.mark.parametrize("shards", [None, (10, 8)], ids=["chunked", "sharded"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_both_ways(tmp_path, case, shards):
    """zarr-python writes, zarrcore reads exactly; zarrcore writes the same zarr.json from the
    same codec configurations, and zarr-python reads what it wrote exactly."""
    layout = dict(shape=(20, 8), chunks=(5, 4), shards=shards)
    theirs = _quiet(lambda: zarr.create_array(tmp_path / "theirs", **layout, **_kwargs(case, False)))
    data = _data(theirs.dtype, (20, 8))
    theirs[:15] = data[:15]  # the last chunks (or shard) are not written
    expected = theirs[:]

    ours = zarrcore.open_array(tmp_path / "theirs")
    np.testing.assert_array_equal(ours[:], expected)
    np.testing.assert_array_equal(ours[3:17, 1:7], expected[3:17, 1:7])

    mine = zarrcore.create_array(tmp_path / "mine", **layout, **_kwargs(case, True))
    mine[:15] = data[:15]
    assert _codecs(tmp_path / "mine") == _codecs(tmp_path / "theirs")
    np.testing.assert_array_equal(_quiet(lambda: zarr.open_array(tmp_path / "mine")[:]), expected)
    np.testing.assert_array_equal(mine[:], expected)
    # Their writes into our array and ours into theirs: every chunk decodes either way.
    _quiet(lambda: zarr.open_array(tmp_path / "mine").__setitem__((slice(15, 20),), data[15:]))
    ours[15:] = data[15:]
    np.testing.assert_array_equal(mine[:], _quiet(lambda: zarr.open_array(tmp_path / "theirs")[:]))


@pytest.mark.parametrize("case", ["zstd", "zlib", "gzip", "blosc"])
@pytest.mark.parametrize("shards", [None, (10, 8)], ids=["chunked", "sharded"])
def test_compiled_batch(tmp_path, case, shards):
    """numcodecs.zstd/zlib/gzip/blosc run on the same compiled batch paths as zstd & co."""
    a = zarrcore.create_array(tmp_path / "a", shape=(20, 8), chunks=(5, 4), shards=shards,
                              **_kwargs(case, True))
    if shards is None:
        assert a._engine.routes.chunk_batch is not None
    else:
        assert a._engine.routes.shard_batch is not None
    a[:] = _data(a.dtype, a.shape)
    np.testing.assert_array_equal(_quiet(lambda: zarr.open_array(tmp_path / "a")[:]), a[:])


def test_filled_parameters_come_from_the_array_dtype(tmp_path):
    """Parameters zarr-python fills in (shuffle's elementsize, astype's decode_dtype) come from
    the array's dtype even after a filter that changed it; the bytes codec keeps the endian of
    a multi-byte array whose filter makes bytes, and records none for a 1-byte array whose
    filter makes multi-byte items (native order, which zarr-python writes but cannot read)."""
    cases = [
        ("int32", [lambda: nc.Delta(dtype="i4", astype="i2")], [nc.Shuffle]),
        ("float64", [lambda: nc.AsType(encode_dtype="f4"),
                     lambda: nc.FixedScaleOffset(offset=0, scale=1, dtype="f4", astype="u1")], None),
        ("uint8", [lambda: nc.Delta(dtype="u1", astype="<i2")], None),
    ]
    for i, (dtype, filters, compressors) in enumerate(cases):
        filters, compressors = _quiet(lambda: [f() for f in filters]), _quiet(lambda: [c() for c in compressors or ()])
        kwargs = dict(shape=(12,), chunks=(6,), dtype=dtype)
        theirs = _quiet(lambda: zarr.create_array(tmp_path / f"t{i}", filters=filters, compressors=compressors, **kwargs))
        mine = zarrcore.create_array(tmp_path / f"m{i}", filters=[c.to_dict() for c in filters],
                                     compressors=[c.to_dict() for c in compressors], **kwargs)
        assert _codecs(tmp_path / f"m{i}") == _codecs(tmp_path / f"t{i}")
        data = np.arange(12).astype(dtype)
        theirs[:] = data
        mine[:] = data
        expected = data.astype("f4").astype("u1").astype(dtype) if dtype == "float64" else data
        np.testing.assert_array_equal(zarrcore.open_array(tmp_path / f"t{i}")[:], expected)
        np.testing.assert_array_equal(mine[:], expected)
        if dtype != "uint8":
            np.testing.assert_array_equal(_quiet(lambda: zarr.open_array(tmp_path / f"m{i}")[:]), expected)


def test_partial_configuration_takes_numcodecs_defaults():
    """Omitted parameters take numcodecs' defaults (blosc lz4 level 5 byte shuffle, zstd 0),
    and the configuration is stored as given."""
    blosc = codec_from_json({"name": "numcodecs.blosc", "configuration": {}})
    assert blosc.to_json() == {"name": "numcodecs.blosc", "configuration": {}}
    from zarrcore.codecs.base import ChunkSpec

    resolved = blosc.resolve(ChunkSpec((4,), np.dtype("f8")))
    assert (resolved.cname, resolved.clevel, resolved.shuffle, resolved.typesize) == ("lz4", 5, "shuffle", 1)
    assert resolved.to_json() == {"name": "numcodecs.blosc", "configuration": {}}
    assert codec_from_v2({"id": "zstd"}).level == 0
    assert codec_from_v2({"id": "blosc"}).cname == "lz4"


@pytest.mark.parametrize("spec, message", [
    ({"name": "numcodecs.delta", "configuration": {}}, "dtype"),
    ({"name": "numcodecs.zlib", "configuration": {"level": "high"}}, "level"),
    ({"name": "numcodecs.crc32c", "configuration": {"location": "middle"}}, "location"),
    ({"name": "numcodecs.zstd", "configuration": {"id": "zstd"}}, "'id'"),
    ({"name": "numcodecs.no_such_codec", "configuration": {}}, "unknown codec"),
])
def test_bad_configurations(spec, message):
    with pytest.raises(MetadataError, match=message) as info:
        zarrcore.create_array({}, shape=(4,), dtype="int32", filters=[spec] if "delta" in spec["name"] else None,
                              compressors=None if "delta" in spec["name"] else [spec])
    assert "numcodecs." in str(info.value)


def test_quantize_astype_must_match_dtype():
    """zarr-python can neither write nor read quantize with another astype: refused."""
    spec = {"name": "numcodecs.quantize", "configuration": {"digits": 2, "dtype": "f8", "astype": "f4"}}
    with pytest.raises(MetadataError, match="astype"):
        zarrcore.create_array({}, shape=(4,), dtype="float64", filters=[spec])


def test_corrupt_checksum_names_the_chunk(tmp_path):
    a = zarrcore.create_array(tmp_path / "a", shape=(8,), chunks=(4,), dtype="int32",
                              compressors=[{"name": "numcodecs.crc32", "configuration": {}}])
    a[:] = np.arange(8)
    path = tmp_path / "a" / "c" / "1"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match="c/1"):
        a[:]


def test_v2_crc32c_location(tmp_path):
    """numcodecs' crc32c `location` in v2 metadata too, both ways with numcodecs."""
    import numcodecs

    for location in ("start", "end"):
        a = zarrcore.create_array(tmp_path / location, shape=(8,), chunks=(8,), dtype="uint8",
                                  zarr_format=2, compressors={"id": "crc32c", "location": location})
        a[:] = np.arange(8)
        stored = (tmp_path / location / "0").read_bytes()
        assert numcodecs.CRC32C(location=location).encode(np.arange(8, dtype="u1")).tobytes() == stored


CODEC_CHOICES = st.sampled_from(sorted(CASES))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=CODEC_CHOICES, extra=st.sampled_from([None, "zstd", "crc32", "shuffle", "lz4"]),
       shape=st.tuples(st.integers(1, 13), st.integers(1, 7)),
       chunks=st.tuples(st.integers(1, 6), st.integers(1, 4)), seed=st.integers(0, 2**16),
       sharded=st.booleans())
def test_round_trip_hypothesis(tmp_path_factory, case, extra, shape, chunks, seed, sharded):
    """Random data through random numcodecs chains: zarrcore writes, zarr-python and zarrcore
    read the same values, and zarrcore reads back what zarr-python wrote."""
    # Shuffle's elementsize is the array's itemsize: bytes of narrower items may not fill one
    # (zarr-python refuses those chunks too).
    assume(extra != "shuffle" or case not in ("astype", "delta_astype", "fixedscaleoffset"))
    dtype, where, make = CASES[case]
    codecs = {"filters": [], "compressors": []}
    codecs[where].append(_quiet(make).to_dict())
    if extra is not None:
        codecs["compressors"].append(_quiet(CASES[extra][2]).to_dict())
        # Shuffle first: it needs whole items, which compressed bytes are not.
        codecs["compressors"].sort(key=lambda c: c["name"] != "numcodecs.shuffle")
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        data = rng.random(shape) < 0.5
    elif np.dtype(dtype).kind == "f":
        data = (rng.standard_normal(shape) * 100).astype(dtype)
    else:
        data = rng.integers(0, 120, shape).astype(dtype)
    shards = tuple(c * 2 for c in chunks) if sharded else None
    path = tmp_path_factory.mktemp("rt")
    mine = zarrcore.create_array(path / "mine", shape=shape, chunks=chunks, shards=shards, dtype=dtype, **codecs)
    mine[:] = data
    theirs = _quiet(lambda: zarr.open_array(path / "mine"))
    np.testing.assert_array_equal(theirs[:], mine[:])
    other = _quiet(lambda: zarr.create_array(path / "theirs", shape=shape, chunks=chunks, shards=shards,
                                             dtype=dtype, **codecs))
    other[:] = data
    np.testing.assert_array_equal(zarrcore.open_array(path / "theirs")[:], mine[:])
    assert _codecs(path / "theirs") == _codecs(path / "mine")
