"""Sharded arrays written by zarrcore, zarr-python and tensorstore read the same in all three."""
import json

import numpy as np
import pytest

import zarrcore

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")
# zarr-python warns that a codec before sharding_indexed disables its partial I/O.
pytestmark = pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec")

SHAPE, SHARD, INNER = (37, 26), (16, 12), (4, 3)
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
CRC = {"name": "crc32c"}
ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
GZIP = {"name": "gzip", "configuration": {"level": 5}}
BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                           "typesize": 4, "blocksize": 0}}
TRANSPOSE = {"name": "transpose", "configuration": {"order": [1, 0]}}


def sharding(chunk_shape, codecs, location="end", index_codecs=(BYTES, CRC)):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": list(codecs),
        "index_codecs": list(index_codecs), "index_location": location}}


BIG = {"name": "bytes", "configuration": {"endian": "big"}}

# The array's codec list per case.
CASES = {
    "end-zstd": [sharding(INNER, [BYTES, ZSTD])],
    "start-gzip": [sharding(INNER, [BYTES, GZIP], "start")],
    "blosc": [sharding(INNER, [BYTES, BLOSC])],
    "transpose-inside": [sharding(INNER, [TRANSPOSE, BYTES, ZSTD], "start")],
    "transpose-outside": [TRANSPOSE, sharding((4, 4), [BYTES, ZSTD])],
    "nested": [sharding((8, 6), [sharding(INNER, [BYTES, ZSTD], "start")])],
    "big-endian-crc-inside": [sharding(INNER, [BIG, GZIP, CRC])],
    "index-without-crc": [sharding(INNER, [BYTES], index_codecs=[BYTES])],
    "big-endian-index": [sharding(INNER, [BYTES], "start", index_codecs=[BIG, CRC])],
}


def expected():
    data = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE) * 7 - 1000
    data[16:32, :] = 0   # a whole row of shards left empty
    data[0:4, 0:3] = 0   # one empty inner chunk
    data[5:9, 2:20] = -3  # the partial overwrite each writer makes
    return data


def metadata(codecs):
    return {"zarr_format": 3, "node_type": "array", "shape": list(SHAPE), "data_type": "int32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(SHARD)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": codecs, "attributes": {}}


def write_metadata(path, codecs):
    path.mkdir(parents=True)
    (path / "zarr.json").write_text(json.dumps(metadata(codecs)))


def ts_open(path):
    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
                    "open": True}).result()


def initial():
    data = expected()
    data[5:9, 2:20] = 11
    return data


def write_zarrcore(path):
    a = zarrcore.open_array(str(path), mode="r+")
    a[...] = initial()
    a[5:9, 2:20] = -3


def write_zarr(path):
    a = zarr.open_array(str(path), mode="r+")
    a[...] = initial()
    a[5:9, 2:20] = -3


def write_tensorstore(path):
    a = ts_open(path)
    a.write(initial()).result()
    a[5:9, 2:20].write(np.full((4, 18), -3, dtype="int32")).result()


def read_all(path):
    """The array as each library reads it, whole and in a region."""
    out = {}
    a = zarrcore.open_array(str(path), mode="r")
    out["zarrcore"] = (a[...], a[3:30:2, 1:26:4])
    z = zarr.open_array(str(path), mode="r")
    out["zarr"] = (z[...], z[3:30:2, 1:26:4])
    t = ts_open(path)
    out["tensorstore"] = (t.read().result(), t[3:30:2, 1:26:4].read().result())
    return out


WRITERS = {"zarrcore": write_zarrcore, "zarr": write_zarr, "tensorstore": write_tensorstore}


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_peers_read_each_others_shards(tmp_path, case, writer):
    path = tmp_path / "a"
    write_metadata(path, CASES[case])
    WRITERS[writer](path)
    data = expected()
    for reader, (whole, region) in read_all(path).items():
        np.testing.assert_array_equal(whole, data, err_msg=f"{reader} reading {writer}'s {case}")
        np.testing.assert_array_equal(region, data[3:30:2, 1:26:4], err_msg=reader)
    # The row of shards holding only fill is not stored, whoever wrote it.
    assert not list(path.glob("c/1/*"))


@pytest.mark.parametrize("location", ["start", "end"])
def test_create_array_matches_zarr_python(tmp_path, location):
    """create_array(shards=) writes the metadata zarr-python writes for the same call."""
    kwargs = dict(shape=SHAPE, dtype="int32", chunks=INNER,
                  shards={"shape": SHARD, "index_location": location}, fill_value=0,
                  compressors=[ZSTD])
    ours = zarrcore.create_array(str(tmp_path / "ours"), **kwargs)
    zarr.create_array(str(tmp_path / "theirs"), **kwargs)
    docs = [json.loads((tmp_path / n / "zarr.json").read_text()) for n in ("ours", "theirs")]
    for key in ("shape", "chunk_grid", "codecs", "fill_value", "data_type"):
        assert docs[0][key] == docs[1][key], key
    ours[...] = expected()
    got = read_all(tmp_path / "ours")
    for reader, (whole, _) in got.items():
        np.testing.assert_array_equal(whole, expected(), err_msg=reader)
    z = zarr.open_array(str(tmp_path / "ours"), mode="r")
    assert z.chunks == ours.chunks == INNER and z.shards == ours.shards == SHARD


def test_morton_order_readable_by_peers(tmp_path):
    path = tmp_path / "m"
    write_metadata(path, CASES["end-zstd"])
    zarrcore.config.set(shard_write_order="morton")
    try:
        write_zarrcore(path)
    finally:
        zarrcore.config.set(shard_write_order="C")
    for reader, (whole, _) in read_all(path).items():
        np.testing.assert_array_equal(whole, expected(), err_msg=reader)


DTYPES = {"bool": False, "uint8": 7, "int16": -1, "float64": "NaN", "complex64": [1.0, -2.0],
          "str": ""}


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_dtypes_both_ways(tmp_path, dtype):
    rng = np.random.default_rng(3)
    if dtype == "str":
        data = np.array([f"v{i}" * (i % 3) for i in range(9 * 10)], dtype=object).reshape(9, 10)
    else:
        data = (rng.random((9, 10)) * 100).astype(dtype)
    kwargs = dict(shape=data.shape, dtype=str if dtype == "str" else dtype, chunks=(2, 5),
                  shards=(4, 10), compressors=[ZSTD])
    if dtype != "str":
        kwargs["fill_value"] = np.nan if DTYPES[dtype] == "NaN" else (
            complex(*DTYPES[dtype]) if dtype.startswith("complex") else DTYPES[dtype])
    theirs = zarr.create_array(str(tmp_path / "theirs"), **kwargs)
    theirs[...] = data
    theirs[4:8, :] = theirs.fill_value  # left out of the shard
    ours = zarrcore.create_array(str(tmp_path / "ours"), **kwargs)
    ours[...] = data
    ours[4:8, :] = ours.fill_value
    expected = zarr.open_array(str(tmp_path / "theirs"), mode="r")[...]
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "theirs"))[...], expected)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "ours"), mode="r")[...], expected)
    if dtype != "str":
        np.testing.assert_array_equal(ts_open(tmp_path / "ours").read().result(), expected)
