"""Fuzz harnesses: stored bytes an attacker controls, fed through zarrcore as a reader and a
writer would. Any exception other than a ZarrcoreError is a finding, as is (under libFuzzer)
a crash, a sanitizer report, an allocation over the malloc limit or a slow input.

- metadata: array and group documents of both formats (zarr.json; .zarray/.zgroup with
  .zattrs) and consolidated metadata (.zmetadata, inline), opened, listed, read and written.
- codecs: one stored chunk under every codec chain's decoder (v3 and v2 codecs, filters and
  checksums), on a memory store and on a directory store (the compiled batch).
- shard_index: one stored shard (index at the start or end, with or without crc32c, plain
  or compressed inner chunks) read whole, in part and by points, and written in part.

The first input byte picks a variant; `tests/support/fuzz/run.py` runs one harness under atheris,
and tests/project/test_fuzz_corpus.py replays tests/support/fuzz/corpus/<harness>/ through them.
"""
import atexit
import json
import os
import shutil
import tempfile
import warnings

import numpy as np

import zarrcore
from zarrcore.errors import ZarrcoreError

# A directory store for the variants that exercise the compiled batch; /dev/shm when there is
# one, so the fuzzer does not write to disk (removed at exit: tmpfs holds it in memory).
_SCRATCH = tempfile.mkdtemp(prefix="zarrcore-fuzz-",
                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
atexit.register(shutil.rmtree, _SCRATCH, True)
SEPARATOR = b"\n\x00\n"  # splits one input into several documents


def _split(data, parts):
    pieces = data.split(SEPARATOR, parts - 1)
    return pieces + [None] * (parts - len(pieces))


def _local_store(name):
    path = os.path.join(_SCRATCH, name)
    for root, dirs, files in os.walk(path, topdown=False):
        for f in files:
            os.unlink(os.path.join(root, f))
        for d in dirs:
            os.rmdir(os.path.join(root, d))
    return zarrcore.LocalStore(path)


def _put(store, key, value):
    if value is not None:
        store.set(key, value)


def _exercise_array(a):
    """Reads and writes a small corner of `a`, as a user would."""
    corner = tuple(slice(0, 3) for _ in a.shape)
    data = a[corner]
    a.info.__repr__()
    if a.ndim and a.size:
        a.vindex[tuple(np.zeros(1, dtype=np.int64) for _ in a.shape)]
        a[tuple(slice(-2, None) for _ in a.shape)]
    if not a.read_only and np.size(data):
        # Not the fill value, so that the chunks are encoded and stored.
        a[corner] = np.ones_like(data) if np.asarray(data).dtype.kind in "biufc" else data
        a.attrs["fuzz"] = 1


def _exercise(node, depth=0):
    if isinstance(node, zarrcore.Array):
        _exercise_array(node)
        return
    for _, child in node.members(max_depth=None if depth == 0 else 0):
        if isinstance(child, zarrcore.nodes.BrokenNode):
            raise child.error  # (listing went on past it; opening it raises this)
        _exercise(child, depth + 1)


def _guard(run):
    """Run `run`; only ZarrcoreError may escape (as zarrcore promises for stored data)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run()
        except ZarrcoreError:
            pass


def metadata(data):
    """data[0] picks the document layout; the rest is one or more documents."""
    if not data:
        return
    kind, docs = data[0] % 5, data[1:]
    store = zarrcore.MemoryStore()
    if kind == 0:  # a v3 array or group, with a chunk
        doc, chunk = _split(docs, 2)
        _put(store, "zarr.json", doc)
        _put(store, "c/0/0", chunk)
        _put(store, "c/0", chunk)
    elif kind == 1:  # a v2 array, its attributes and a chunk
        zarray, zattrs, chunk = _split(docs, 3)
        _put(store, ".zarray", zarray)
        _put(store, ".zattrs", zattrs)
        _put(store, "0.0", chunk)
        _put(store, "0", chunk)
    elif kind == 2:  # a v2 group with consolidated metadata
        store.set(".zgroup", b'{"zarr_format": 2}')
        store.set(".zmetadata", docs)
    elif kind == 3:  # a v3 hierarchy: a group and a child
        group, child = _split(docs, 2)
        _put(store, "zarr.json", group)
        _put(store, "a/zarr.json", child)
    else:  # a v2 hierarchy
        zgroup, child, zattrs = _split(docs, 3)
        _put(store, ".zgroup", zgroup)
        _put(store, "a/.zarray", child)
        _put(store, "a/.zattrs", zattrs)

    def run():
        node = zarrcore.open(store, mode="r+")
        _exercise(node)
        if isinstance(node, zarrcore.Group):
            _exercise(zarrcore.consolidate_metadata(store))

    _guard(run)


# Codec chains over a (6, 5) array in chunks of (4, 3): v3 codecs, then v2 compressors and
# filters. Every decoder zarrcore has is behind one of them.
_ZSTD = {"name": "zstd", "configuration": {"level": 1}}
CHAINS = [
    dict(compressors=None),
    dict(serializer={"name": "bytes", "configuration": {"endian": "big"}}, compressors=None),
    dict(compressors=[_ZSTD]),
    dict(compressors=[{"name": "zstd", "configuration": {"level": 1, "checksum": True}}]),
    dict(compressors=[{"name": "gzip", "configuration": {"level": 1}}]),
    dict(compressors=[{"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "shuffle"}}]),
    dict(compressors=[{"name": "blosc", "configuration": {"cname": "zstd", "shuffle": "bitshuffle"}}]),
    dict(compressors=[{"name": "blosc", "configuration": {"cname": "zlib", "shuffle": "noshuffle"}}]),
    dict(compressors=[{"name": "crc32c"}]),
    dict(compressors=[_ZSTD, {"name": "crc32c"}]),
    dict(compressors=[{"name": "gzip"}, _ZSTD]),
    dict(filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}], compressors=[_ZSTD]),
    dict(dtype="string", serializer={"name": "vlen-utf8"}, compressors=None),
    dict(dtype=bytes, serializer={"name": "vlen-bytes"}, compressors=[_ZSTD]),
    dict(zarr_format=2, compressor={"id": "zlib", "level": 1}),
    dict(zarr_format=2, compressor={"id": "gzip", "level": 1}),
    dict(zarr_format=2, compressor={"id": "bz2", "level": 1}),
    dict(zarr_format=2, compressor={"id": "lzma"}),
    dict(zarr_format=2, compressor={"id": "lz4"}),
    dict(zarr_format=2, compressor={"id": "zstd", "level": 1}),
    dict(zarr_format=2, compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}),
    dict(zarr_format=2, filters=[{"id": "delta", "dtype": "<i4"}]),
    dict(zarr_format=2, filters=[{"id": "shuffle", "elementsize": 4}], compressor={"id": "zlib"}),
    dict(zarr_format=2, filters=[{"id": "fixedscaleoffset", "scale": 10, "offset": 0,
                                  "dtype": "<i4", "astype": "<i2"}]),
    dict(zarr_format=2, filters=[{"id": "astype", "encode_dtype": "<i2", "decode_dtype": "<i4"}]),
    dict(zarr_format=2, filters=[{"id": "crc32"}]),
    dict(zarr_format=2, filters=[{"id": "adler32"}]),
    dict(zarr_format=2, filters=[{"id": "fletcher32"}]),
    dict(zarr_format=2, filters=[{"id": "jenkins_lookup3"}]),
    dict(zarr_format=2, dtype="|b1", filters=[{"id": "packbits"}]),
    dict(zarr_format=2, dtype="|O", filters=[{"id": "vlen-utf8"}]),
    dict(zarr_format=2, dtype="|O", filters=[{"id": "vlen-bytes"}], compressor={"id": "zlib"}),
    dict(zarr_format=2, dtype="<f4", filters=[{"id": "quantize", "digits": 2, "dtype": "<f4"}]),
    dict(zarr_format=2, dtype="<f4", filters=[{"id": "bitround", "keepbits": 4}]),
    dict(zarr_format=2, dtype="|u1", filters=[{"id": "categorize", "labels": ["a", "b"],
                                               "dtype": "<U1", "astype": "|u1"}]),
    # The registry's codecs (after the others, so the corpus keeps its chains).
    dict(dtype="float64", compressors=None, filters=[
        {"name": "scale_offset", "configuration": {"offset": 1, "scale": 4}},
        {"name": "cast_value", "configuration": {"data_type": "int16", "out_of_range": "clamp"}}]),
    dict(filters=[{"name": "bitround", "configuration": {"keepbits": 3}},
                  {"name": "reshape", "configuration": {"shape": [-1]}}], compressors=[_ZSTD]),
    dict(dtype="int16", compressors=None, serializer={"name": "packbits", "configuration": {
        "padding_encoding": "first_byte", "first_bit": 1, "last_bit": 9}}),
]


def _array_document(chain):
    """(key, document, chunk key) of a (6, 5) array with codec chain `chain`."""
    chain = dict(chain)
    if chain.pop("zarr_format", 3) == 2:
        zarray = {"zarr_format": 2, "shape": [6, 5], "chunks": [4, 3],
                  "dtype": chain.get("dtype", "<i4"), "compressor": chain.get("compressor"),
                  "fill_value": None if chain.get("dtype") == "|O" else 0, "order": "C",
                  "filters": chain.get("filters")}
        if zarray["filters"] and zarray["filters"][0]["id"] == "categorize":
            zarray["dtype"] = "<U1"
            zarray["fill_value"] = ""
        return ".zarray", json.dumps(zarray).encode(), "0.0"
    a = zarrcore.create_array({}, shape=(6, 5), chunks=(4, 3), dtype=chain.pop("dtype", "int32"),
                              **chain)
    return "zarr.json", a.metadata.to_bytes(), "c/0/0"


DOCUMENTS = [_array_document(chain) for chain in CHAINS]


def codecs(data):
    """data[0] picks the codec chain, data[1] the store; the rest is the stored chunk (0, 0)."""
    if len(data) < 2:
        return
    key, doc, chunk_key = DOCUMENTS[data[0] % len(DOCUMENTS)]
    store = _local_store("codecs") if data[1] % 2 else zarrcore.MemoryStore()
    store.set(key, doc)
    store.set(chunk_key, data[2:])

    def run():
        a = zarrcore.open_array(store, mode="r+")
        a[:]
        a.vindex[[0, 3], [2, 0]]
        a[1:3, 1:2] = a[1:3, 1:2]

    _guard(run)


def _sharded_document(variant):
    index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if variant & 1:
        index_codecs.append({"name": "crc32c"})
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if variant & 2:
        inner.append(_ZSTD)
    codec = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2], "codecs": inner, "index_codecs": index_codecs,
        "index_location": "start" if variant & 4 else "end"}}
    a = zarrcore.create_array({}, shape=(8, 8), chunks=(8, 8), dtype="uint16", compressors=None,
                              serializer=codec)
    return a.metadata.to_bytes()


SHARD_DOCUMENTS = [_sharded_document(v) for v in range(8)]


def shard_index(data):
    """data[0] picks the index and inner chain variant and the store; the rest is the stored
    shard (0, 0) of an (8, 8) array of (2, 2) inner chunks."""
    if not data:
        return
    store = _local_store("shards") if data[0] & 8 else zarrcore.MemoryStore()
    store.set("zarr.json", SHARD_DOCUMENTS[data[0] % 8])
    store.set("c/0/0", data[1:])

    def run():
        a = zarrcore.open_array(store, mode="r+")
        a[:]
        a[3:5, 1:6]
        a.vindex[[0, 7, 2], [1, 6, 2]]
        a[2:3, 2:5] = 7

    _guard(run)


HARNESSES = {"metadata": metadata, "codecs": codecs, "shard_index": shard_index}
