"""Write the seed inputs of tests/support/fuzz/corpus/<harness>/: valid documents, chunks and shards
that the fuzzer mutates, and the hostile inputs found so far (regression-*), so that
tests/project/test_fuzz_corpus.py replays them. Run from the repository root:
    python tests/support/fuzz/make_corpus.py
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zarrcore  # noqa: E402
from harnesses import DOCUMENTS, SEPARATOR, SHARD_DOCUMENTS  # noqa: E402

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def v3_array(shape=(6, 5), chunks=(4, 3), **kwargs):
    return zarrcore.create_array({}, shape=shape, chunks=chunks, **kwargs).metadata.to_bytes()


def v2_zarray(**changes):
    doc = {"zarr_format": 2, "shape": [6, 5], "chunks": [4, 3], "dtype": "<i4", "compressor": None,
           "fill_value": 0, "order": "C", "filters": None}
    doc.update(changes)
    return json.dumps(doc).encode()


def zarr_json(shape, chunks, dtype="uint8", codecs=None):
    return json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": codecs or [{"name": "bytes"}]}).encode()


def sharding(shard_inner, codecs=None):
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": shard_inner, "codecs": codecs or [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]


def metadata_seeds():
    chunk = np.arange(12, dtype="<i4").tobytes()
    seeds = {
        "v3-int32": b"\x00" + v3_array(dtype="int32", attributes={"a": [1, {"b": None}]}) + SEPARATOR + chunk,
        "v3-float-nan": b"\x00" + v3_array(dtype="float32", fill_value=float("nan"), compressors=None),
        "v3-string": b"\x00" + v3_array(dtype="string"),
        "v3-structured": b"\x00" + v3_array(dtype=[("x", "<i2"), ("y", "<f8")], compressors=None),
        "v3-datetime": b"\x00" + v3_array(dtype="datetime64[s]"),
        "v3-utf32": b"\x00" + v3_array(dtype="<U3", fill_value="ab"),
        "v3-sharded": b"\x00" + v3_array(shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="u2"),
        "v3-dimension-names": b"\x00" + v3_array(dimension_names=["x", None], chunk_key_encoding={"name": "v2"}),
        "v3-group": b"\x00" + b'{"zarr_format": 3, "node_type": "group", "attributes": {"k": [1.5, "s"]}}',
        "v2-int32": b"\x01" + v2_zarray() + SEPARATOR + b'{"units": "m"}' + SEPARATOR + chunk,
        "v2-blosc-f-order": b"\x01" + v2_zarray(order="F", dtype=">f8", fill_value="NaN",
                                                 compressor={"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": -1}),
        "v2-structured": b"\x01" + v2_zarray(dtype=[["a", "<i4"], ["b", "|S3", [2]]], fill_value=None),
        "v2-vlen": b"\x01" + v2_zarray(dtype="|O", filters=[{"id": "vlen-utf8"}], fill_value=""),
        "v2-zmetadata": b"\x02" + json.dumps({"zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2}, "a/.zarray": json.loads(v2_zarray()),
            "a/.zattrs": {"x": 1}, "g/.zgroup": {"zarr_format": 2}}}).encode(),
        "v3-hierarchy": b"\x03" + json.dumps({"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
            "kind": "inline", "must_understand": False, "metadata": {"a": json.loads(v3_array())}}}).encode()
            + SEPARATOR + v3_array(),
        "v2-hierarchy": b"\x04" + b'{"zarr_format": 2}' + SEPARATOR + v2_zarray() + SEPARATOR + b'{"a": 1}',
    }
    # Hostile documents met so far: each was a crash, an exception outside ZarrcoreError, a
    # giant allocation or a slow open.
    deep = b"[" * 5000 + b"]" * 5000  # past what the JSON parser recurses through
    nested = [{"name": "bytes"}]
    for _ in range(200):
        nested = sharding([1], nested)
    seeds.update({
        "regression-shape-2-63": b"\x00" + zarr_json([2**63], [1]),
        "regression-chunks-2-63": b"\x00" + zarr_json([4], [2**63]),
        "regression-shape-near-2-63": b"\x00" + zarr_json([2**63 - 1], [10]),
        "regression-grid-2-124": b"\x00" + zarr_json([2**62, 2**62], [1, 1]),
        "regression-33-dimensions": b"\x00" + zarr_json([1] * 33, [1] * 33),
        "regression-huge-chunk": b"\x00" + zarr_json([2**40], [2**40], codecs=[{"name": "bytes"}, {"name": "zstd"}])
            + SEPARATOR + b"\x28\xb5\x2f\xfd\x00\x00\x00\x00\x00",
        "regression-utf32-2-40": b"\x00" + zarr_json([4], [2], dtype={"name": "fixed_length_utf32", "configuration": {"length_bytes": 2**40}}),
        "regression-shard-2-30": b"\x00" + zarr_json([2**30], [2**30], codecs=sharding([1])),
        "regression-shard-2-26": b"\x00" + zarr_json([2**26], [2**26], codecs=sharding([1])),
        "regression-sharding-nested-200": b"\x00" + zarr_json([4], [1], codecs=nested),
        "regression-deep-zarr-json": b"\x00" + zarr_json([4], [2]).replace(b'"codecs"', b'"attributes": {"a": ' + deep + b'}, "codecs"'),
        "regression-deep-zattrs": b"\x01" + v2_zarray() + SEPARATOR + deep,
        "regression-deep-zmetadata": b"\x02" + deep,
        "regression-child-list": b"\x03" + b'{"zarr_format": 3, "node_type": "group"}' + SEPARATOR + b"[1, 2]",
        "regression-vlen-count": b"\x01" + v2_zarray(shape=[2**31], chunks=[2**31], dtype="|O", fill_value="",
                                                     filters=[{"id": "vlen-utf8"}]),
        "regression-raw-bits-digits": b"\x00" + zarr_json([4], [2], dtype="r" + "9" * 5000),
        # Found by slow_metadata.py: a non-string time unit, quantize digits past a double.
        "regression-datetime-unit-object": b"\x00" + zarr_json(
            [4], [2], dtype={"name": "numpy.datetime64", "configuration": {"unit": {"s": 1}, "scale_factor": 1}}),
        "regression-quantize-digits": b"\x01" + v2_zarray(dtype="<f8", filters=[{"id": "quantize", "digits": -400, "dtype": "<f8"}]),
    })
    return seeds


def codec_seeds():
    seeds = {}
    for i, (key, doc, chunk_key) in enumerate(DOCUMENTS):
        a = zarrcore.open_array({key: doc}, mode="r+")
        kind = a.dtype.kind
        if kind in "OTU":
            values = np.array([["a", "bc", "", "b"][j % 4] for j in range(30)], dtype=object)
            if "vlen-bytes" in doc.decode():
                values = np.array([v.encode() for v in values], dtype=object)
        elif kind == "b":
            values = np.arange(30) % 3 == 0
        else:
            values = np.arange(30)
        a[:] = values.reshape(6, 5)
        seeds[f"chain-{i:02d}"] = bytes([i, 0]) + a.store.get(chunk_key)
    lz4 = next(i for i, (_, doc, _) in enumerate(DOCUMENTS) if b'"lz4"' in doc and b"blosc" not in doc)
    seeds["regression-lz4-size-prefix"] = bytes([lz4, 0]) + (2**31 - 1).to_bytes(4, "little") + bytes(16)
    return seeds


def shard_seeds():
    seeds = {}
    for v, doc in enumerate(SHARD_DOCUMENTS):
        a = zarrcore.open_array({"zarr.json": doc}, mode="r+")
        a[0:6, 0:4] = np.arange(24, dtype="u2").reshape(6, 4)
        seeds[f"variant-{v}"] = bytes([v]) + a.store.get("c/0/0")
    return seeds


def main():
    for harness, seeds in (("metadata", metadata_seeds()), ("codecs", codec_seeds()),
                           ("shard_index", shard_seeds())):
        directory = os.path.join(CORPUS, harness)
        os.makedirs(directory, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(directory, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
