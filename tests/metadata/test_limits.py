"""Resource limits (zarrcore.config.max_*): metadata that declares more is refused with a
MetadataError naming the document and field before anything is allocated from it; small
hostile documents open fast; every exception from stored metadata is a ZarrcoreError."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import MetadataError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def zarr_json(shape, chunks, dtype="uint8", codecs=None, attributes=None):
    return json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": codecs or [{"name": "bytes"}], "attributes": attributes or {},
    }).encode()


def sharded(shard, inner, inner_codecs=None):
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner, "codecs": inner_codecs or [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}]}}]


def open_doc(doc, key="zarr.json"):
    return zarrcore.open_array({key: doc})


def test_limits_are_configurable_and_checked():
    cfg = zarrcore.config
    assert (cfg.max_dimensions, cfg.max_chunk_bytes, cfg.max_shard_index_entries) == (
        32, 128 << 20, 1 << 20)
    with pytest.raises(ValueError):
        cfg.set(max_dimensions=33)  # the compiled core's ceiling
    with pytest.raises(ValueError):
        cfg.set(max_chunk_bytes=0)
    cfg.set(max_dimensions=2)
    with pytest.raises(MetadataError, match=r"field 'shape': 3 dimensions exceed config.max_dimensions \(2\)"):
        open_doc(zarr_json([1, 1, 1], [1, 1, 1]))


@pytest.mark.slow
def test_limits_from_environment():
    code = "import zarrcore; c = zarrcore.config; print(c.max_dimensions, c.max_chunk_bytes, c.max_shard_index_entries)"
    env = dict(os.environ, ZARRCORE_MAX_DIMENSIONS="4", ZARRCORE_MAX_CHUNK_BYTES="1000",
               ZARRCORE_MAX_SHARD_INDEX_ENTRIES="77", PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["4", "1000", "77"]


def test_more_than_32_dimensions_is_a_metadata_error():
    for ndim in (33, 65, 100_000):
        with pytest.raises(MetadataError, match="field 'shape'"):
            open_doc(zarr_json([1] * ndim, [1] * ndim))


def test_chunk_bytes_limit_before_any_allocation():
    # 2**40 declared bytes over a 9-byte stored chunk: refused at open, nothing allocated.
    doc = zarr_json([2**40], [2**40], codecs=[{"name": "bytes"}, {"name": "zstd"}])
    with pytest.raises(MetadataError, match="max_chunk_bytes"):
        zarrcore.open_array({"zarr.json": doc, "c/0": b"\x28\xb5\x2f\xfd" + bytes(5)})
    zarrcore.config.set(max_chunk_bytes=100)
    with pytest.raises(MetadataError, match="max_chunk_bytes"):
        zarrcore.create_array({}, shape=(20, 20), chunks=(11, 10), dtype="u1")
    zarrcore.create_array({}, shape=(20, 20), chunks=(10, 10), dtype="u1")


def test_create_array_over_a_limit_writes_nothing():
    store = {}
    zarrcore.config.set(max_chunk_bytes=100)
    with pytest.raises(MetadataError):
        zarrcore.create_array(store, shape=(200,), chunks=(200,), dtype="u1")
    assert store == {}


def test_shard_index_entries_limit():
    doc = zarr_json([2**30], [2**30], codecs=sharded([2**30], [1]))
    t = time.perf_counter()
    with pytest.raises(MetadataError, match="zarr.json: sharding_indexed: 1073741824 inner chunks"):
        open_doc(doc)
    assert time.perf_counter() - t < 1


def test_big_shard_opens_without_allocating_its_index():
    """With the limit raised, a shard of 2**26 inner chunks opens at once: the empty index,
    its size and the Morton order are not built from the declared count."""
    zarrcore.config.set(max_shard_index_entries=2**26)
    t = time.perf_counter()
    a = open_doc(zarr_json([2**26], [2**26], codecs=sharded([2**26], [1])))
    assert a[:3].tolist() == [0, 0, 0] and a[-1] == 0
    assert time.perf_counter() - t < 1


def test_inner_chunk_bytes_limit():
    zarrcore.config.set(max_chunk_bytes=1000)
    with pytest.raises(MetadataError, match="inner chunks of shape"):
        open_doc(zarr_json([4000], [4000], codecs=sharded([4000], [2000])))
    open_doc(zarr_json([4000], [4000], codecs=sharded([4000], [1000])))


def test_nested_sharding_is_bounded():
    codecs = [{"name": "bytes"}]
    for _ in range(200):
        codecs = sharded([1], [1], codecs)
    with pytest.raises(MetadataError, match="nested more than 8 levels"):
        open_doc(zarr_json([4], [1], codecs=codecs))


@pytest.mark.parametrize("key", ["zarr.json", ".zattrs", ".zmetadata"])
def test_deeply_nested_json_is_a_metadata_error(key):
    deep = "[" * 100_000 + "]" * 100_000
    store = {}
    if key == "zarr.json":
        store[key] = zarr_json([4], [2]).replace(b'"attributes": {}', b'"attributes": {"a": ' + deep.encode() + b"}")
        opener = zarrcore.open_array
    elif key == ".zattrs":
        store[".zarray"] = json.dumps({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|u1",
                                       "compressor": None, "fill_value": 0, "order": "C",
                                       "filters": None}).encode()
        store[key] = deep.encode()
        opener = zarrcore.open_array
    else:
        store[".zgroup"] = b'{"zarr_format": 2}'
        store[key] = deep.encode()
        opener = zarrcore.open_consolidated
    with pytest.raises(MetadataError, match=f"{key}: invalid JSON: nested too deeply"):
        opener(store)


def test_huge_fixed_length_types_are_metadata_errors():
    for dtype in ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 2**40}},
                  {"name": "raw_bytes", "configuration": {"length_bytes": 2**40}},
                  {"name": "null_terminated_bytes", "configuration": {"length_bytes": 2**40}},
                  "r" + str(2**43)):
        with pytest.raises(MetadataError, match="field 'data_type'"):
            open_doc(zarr_json([4], [2], dtype=dtype))


@pytest.mark.parametrize("fmt", [2, 3])
def test_attributes_json_cannot_hold_fail_before_writing(store, fmt):
    a = zarrcore.create_array(store, name="a", shape=(4,), chunks=(2,), dtype="u1", zarr_format=fmt,
                              attributes={"ok": 1})
    for bad in ({1, 2}, float("nan"), float("inf"), object()):
        with pytest.raises(MetadataError, match="cannot be stored as JSON"):
            a.attrs["x"] = bad
    # Nothing was written, and the handle still works: a later resize writes valid metadata.
    a.resize((6,))
    b = zarrcore.open_array(store, path="a")
    assert b.shape == (6,) and dict(b.attrs) == {"ok": 1}
    with pytest.raises(MetadataError):
        zarrcore.create_array(store, name="b", shape=(1,), zarr_format=fmt, attributes={"x": {1}})
    with pytest.raises(MetadataError):
        zarrcore.create_group(store, path="g", zarr_format=fmt, attributes={"x": float("nan")})
    assert "b" not in zarrcore.open_group(store) and "g" not in zarrcore.open_group(store)


def test_nan_attributes_written_by_zarr_python_still_read():
    # zarr-python writes a bare NaN; reading it back keeps working (only new values are strict).
    store = {"zarr.json": zarr_json([4], [2]).replace(b'"attributes": {}', b'"attributes": {"x": NaN}')}
    a = zarrcore.open_array(store)
    assert np.isnan(a.attrs["x"])


def test_malformed_data_type_values_are_metadata_errors():
    # Found by tests/support/fuzz/slow_metadata.py: a non-string time unit raised TypeError
    # (unhashable).
    for unit in ({"s": 1}, ["s"]):
        dtype = {"name": "numpy.datetime64", "configuration": {"unit": unit, "scale_factor": 1}}
        with pytest.raises(MetadataError, match="field 'data_type'"):
            open_doc(zarr_json([4], [2], dtype=dtype))


@pytest.mark.parametrize("digits", [-400, 400, 2**31 - 1])
def test_quantize_digits_beyond_a_double_are_metadata_errors(digits):
    # Writing raised OverflowError or ValueError (math domain error).
    zarray = {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f8", "compressor": None,
              "fill_value": 0, "order": "C", "filters": [{"id": "quantize", "digits": digits, "dtype": "<f8"}]}
    with pytest.raises(MetadataError, match="quantize filter: digits"):
        zarrcore.open_array({".zarray": json.dumps(zarray).encode()}, mode="r+")


@pytest.mark.parametrize("inner_codecs", [None, [{"name": "bytes"}, {"name": "gzip"}]],
                         ids=["native", "python"])
def test_array_selections_of_a_huge_declared_shard_take_memory_of_their_extent(
        tmp_path, inner_codecs):
    """A shard declared at 64 GiB holding a few stored bytes: point and orthogonal reads and
    writes touch only the inner chunks they span (the whole shard used to be allocated)."""
    n = 1 << 36
    kwargs = {} if inner_codecs is None else {"serializer": inner_codecs[0],
                                              "compressors": inner_codecs[1:]}
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(n,), dtype="u1", chunks=(1 << 20,),
                              shards=(n,), fill_value=7, **kwargs)
    a.vindex[[5, 1 << 21, 3]] = [1, 2, 3]
    a.oindex[[(1 << 21) + 1]] = 4
    np.testing.assert_array_equal(a.vindex[[3, 5, 1 << 21, (1 << 21) + 1, 6]], [3, 1, 2, 4, 7])
    np.testing.assert_array_equal(a.oindex[[(1 << 21) + 1, 0]], [4, 7])
    assert a[1 << 21] == 2
