"""The sharding_indexed codec: binary format, partial I/O, writes, validation."""
import json
import struct

import crc32c
import numpy as np
import pytest

import zarrcore
from zarrcore.codecs.sharding import EMPTY, ShardingCodec, morton_order
from zarrcore.errors import ChecksumError, MetadataError, ShardIndexError, ZarrcoreError

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


class CountingStore(zarrcore.MemoryStore):
    """A memory store recording every read: (key, start, stop) per requested range. It reads
    ranges as a remote store does, one request each, instead of from the value held."""

    reader = zarrcore.Store.reader

    def __init__(self):
        super().__init__()
        self.reads = []
        self.requests = 0

    def get(self, key, start=None, stop=None):
        self.reads.append((key, start, stop))
        self.requests += 1
        return super().get(key, start, stop)

    def get_ranges(self, key, ranges):
        self.requests += 1
        out = []
        for start, stop in ranges:
            self.reads.append((key, start, stop))
            out.append(super().get(key, start, stop))
        return out

    def reset(self):
        self.reads, self.requests = [], 0


def parse_shard(data, n, location="end"):
    """(entries (n, 2) as Python ints, index bytes) of a shard with [bytes, crc32c] index."""
    size = 16 * n + 4
    index = data[:size] if location == "start" else data[-size:]
    body, crc = index[:-4], index[-4:]
    assert struct.unpack("<I", crc)[0] == crc32c.crc32c(body)
    return np.frombuffer(body, dtype="<u8").reshape(n, 2).tolist(), index


def shard_key(a, *coords):
    return a.path + "/c/" + "/".join(map(str, coords))


# -- round trips -------------------------------------------------------------------------------

CODEC_CASES = {
    "bytes": dict(compressors=None),
    "zstd": dict(compressors={"name": "zstd", "configuration": {"level": 1, "checksum": False}}),
    "gzip": dict(compressors={"name": "gzip", "configuration": {"level": 1}}),
    "blosc": dict(compressors={"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}),
    "transpose": dict(filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
                      compressors=None),
}


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("case", sorted(CODEC_CASES))
def test_roundtrip(store, case, location):
    data = np.arange(30 * 21, dtype="int32").reshape(30, 21)
    a = zarrcore.create_array(store, name="a", shape=data.shape, dtype="int32", chunks=(4, 3),
                              shards={"shape": (8, 9), "index_location": location},
                              fill_value=-1, **CODEC_CASES[case])
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[3:29:2, 20:1:-3], data[3:29:2, 20:1:-3])
    np.testing.assert_array_equal(a[7, 5:], data[7, 5:])
    assert a[29, 20] == data[29, 20]
    b = zarrcore.open_array(store, path="a", mode="r")
    np.testing.assert_array_equal(b[...], data)
    assert b.chunks == (4, 3) and b.shards == (8, 9)


def test_properties_and_metadata(store):
    a = zarrcore.create_array(store, name="p", shape=(100, 50), dtype="uint16", chunks=(10, 5),
                              shards=(20, 25))
    assert a.chunks == (10, 5)
    assert a.shards == (20, 25)
    assert a.cdata_shape == (10, 10) and a.nchunks == 100
    doc = json.loads(store.get("p/zarr.json"))
    assert doc["chunk_grid"]["configuration"]["chunk_shape"] == [20, 25]
    [codec] = doc["codecs"]
    assert codec["name"] == "sharding_indexed"
    conf = codec["configuration"]
    assert conf["chunk_shape"] == [10, 5]
    assert conf["index_codecs"] == [BYTES, {"name": "crc32c"}]
    assert conf["index_location"] == "end"
    assert [c["name"] for c in conf["codecs"]] == ["bytes", "zstd"]
    a[:20, :25] = 7
    assert a.nchunks_initialized == 10  # one shard of 2 x 5 inner chunks
    assert "Shard shape" in repr(a.info) and "(20, 25)" in repr(a.info)
    plain = zarrcore.create_array(store, name="q", shape=(10,), dtype="uint8", chunks=(5,))
    assert plain.shards is None and plain.chunks == (5,)


def test_create_validation():
    with pytest.raises(ValueError, match="multiple"):
        zarrcore.create_array({}, shape=(10,), chunks=(3,), shards=(8,))
    with pytest.raises(ValueError):
        zarrcore.create_array({}, shape=(10,), chunks=(2,), shards=(8,), zarr_format=2)
    with pytest.raises(MetadataError):
        ShardingCodec((2,), index_location="middle")
    with pytest.raises(MetadataError):
        ShardingCodec((0, 2))
    with pytest.raises(MetadataError, match="fixed"):
        zarrcore.create_array({}, shape=(8,), dtype="uint8", chunks=(2,), serializer=ShardingCodec(
            (2,), index_codecs=[BYTES, {"name": "gzip", "configuration": {"level": 1}}]),
            compressors=None)


def test_auto_inner_chunks_divide_shards():
    a = zarrcore.create_array({}, shape=(3000, 3000), dtype="float64", shards=(1500, 1000))
    assert all(s % c == 0 for s, c in zip(a.shards, a.chunks))
    assert a.chunks != a.shards


# -- binary format ----------------------------------------------------------------------------

@pytest.mark.parametrize("location", ["start", "end"])
def test_exact_binary_layout(location):
    store = {}
    a = zarrcore.create_array(store, shape=(4, 4), dtype="uint8", chunks=(2, 2),
                              shards={"shape": (4, 4), "index_location": location},
                              compressors=None, fill_value=0)
    data = np.arange(1, 17, dtype="uint8").reshape(4, 4)
    data[2:, :2] = 0  # inner chunk (1, 0) is all fill: left out
    a[...] = data
    shard = store["c/0/0"]
    entries, index = parse_shard(shard, 4, location)
    base = len(index) if location == "start" else 0
    assert len(index) == 4 * 16 + 4 == 68
    assert entries == [[base, 4], [base + 4, 4], [EMPTY, EMPTY], [base + 8, 4]]
    body = shard[len(index):] if location == "start" else shard[:-len(index)]
    assert body == bytes([1, 2, 5, 6, 3, 4, 7, 8, 11, 12, 15, 16])


def test_morton_write_order():
    assert morton_order((2, 2)).tolist() == [0, 2, 1, 3]
    assert sorted(morton_order((3, 5, 2)).tolist()) == list(range(30))
    store = {}
    a = zarrcore.create_array(store, shape=(4, 4), dtype="uint8", chunks=(1, 1), shards=(4, 4),
                              compressors=None, fill_value=255)
    data = np.arange(16, dtype="uint8").reshape(4, 4)
    zarrcore.config.set(shard_write_order="morton")
    try:
        a[...] = data
    finally:
        zarrcore.config.set(shard_write_order="C")
    entries, _ = parse_shard(store["c/0/0"], 16)
    order = [i for _, i in sorted((off, i) for i, (off, _) in enumerate(entries))]
    assert order == morton_order((4, 4)).tolist() != list(range(16))
    np.testing.assert_array_equal(a[...], data)
    a[0, 0] = 200  # a C-order rewrite of a Morton-ordered shard
    data[0, 0] = 200
    np.testing.assert_array_equal(a[...], data)
    entries, _ = parse_shard(store["c/0/0"], 16)
    assert [off for off, _ in entries] == list(range(0, 16))


def test_empty_inner_chunks_read_as_fill(store):
    a = zarrcore.create_array(store, name="f", shape=(12, 12), dtype="float32", chunks=(3, 3),
                              shards=(6, 6), fill_value=np.nan)
    a[4, 4] = 1.5
    out = a[...]
    assert out[4, 4] == 1.5
    assert np.isnan(out).sum() == 143
    assert sorted(store.list_prefix("f/c")) == ["f/c/0/0"]
    entries, _ = parse_shard(store.get("f/c/0/0"), 4)
    assert sum(e != [EMPTY, EMPTY] for e in entries) == 1


def test_shard_deleted_when_left_empty(store):
    a = zarrcore.create_array(store, name="d", shape=(8, 8), dtype="int8", chunks=(2, 2),
                              shards=(4, 4), fill_value=0)
    a[:, :] = 3
    assert len(store.list_prefix("d/c")) == 4
    a[:4, :4] = 0  # a whole-shard write of fill
    assert len(store.list_prefix("d/c")) == 3
    a[4:, :4] = 3
    a[4:6, :4] = 0  # partial writes leave
    a[6:, :4] = 0   # the shard empty
    assert sorted(store.list_prefix("d/c")) == ["d/c/0/1", "d/c/1/1"]
    np.testing.assert_array_equal(a[:, :4], 0)
    np.testing.assert_array_equal(a[:, 4:], 3)


def test_write_empty_chunks_keeps_fill_inner_chunks():
    store = {}
    zarrcore.config.set(write_empty_chunks=True)
    a = zarrcore.create_array(store, shape=(4,), dtype="uint8", chunks=(2,), shards=(4,),
                              compressors=None, fill_value=0)
    a[:] = [1, 1, 0, 0]
    entries, _ = parse_shard(store["c/0"], 2)
    assert entries == [[0, 2], [2, 2]]


def test_edge_shards(store):
    data = np.random.default_rng(0).integers(0, 1000, size=(13, 7, 5)).astype("int64")
    a = zarrcore.create_array(store, name="e", shape=data.shape, dtype="int64", chunks=(2, 2, 5),
                              shards=(4, 6, 5), fill_value=0)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    # The last shard along axis 0 holds one row of data: inner chunks past the array are absent.
    entries, _ = parse_shard(store.get("e/c/3/1/0"), 2 * 3)
    assert sum(e != [EMPTY, EMPTY] for e in entries) == 1
    a[12, 6, :] = -5
    data[12, 6, :] = -5
    np.testing.assert_array_equal(a[10:, 5:], data[10:, 5:])


def test_nested_sharding(store):
    inner = ShardingCodec((2, 2), codecs=[BYTES, {"name": "zstd", "configuration": {"level": 3}}],
                          index_location="start")
    a = zarrcore.create_array(store, name="n", shape=(17, 16), dtype="uint32", chunks=(4, 4),
                              shards=(8, 8), serializer=inner, compressors=None, fill_value=0)
    conf = json.loads(store.get("n/zarr.json"))["codecs"][0]["configuration"]
    assert conf["codecs"][0]["name"] == "sharding_indexed"
    assert conf["codecs"][0]["configuration"]["chunk_shape"] == [2, 2]
    data = np.arange(17 * 16, dtype="uint32").reshape(17, 16)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    a[3:6, 1:14] = 9
    data[3:6, 1:14] = 9
    np.testing.assert_array_equal(a[2:9, ::3], data[2:9, ::3])


def test_sharding_after_array_codec(store):
    """A transpose outside the sharding codec: shards are read and written whole."""
    data = np.arange(60, dtype="float64").reshape(6, 10)
    codecs = [{"name": "transpose", "configuration": {"order": [1, 0]}},
              ShardingCodec((5, 2), codecs=[BYTES])]
    a = zarrcore.create_array(store, name="t", shape=(6, 10), dtype="float64", chunks=(4, 10),
                              filters=codecs[:1], serializer=codecs[1], compressors=None)
    assert a.shards is None
    a[...] = data
    a[1, 1] = -1
    data[1, 1] = -1
    np.testing.assert_array_equal(a[...], data)


# -- reads fetch only what they need ---------------------------------------------------------

def make_counted(location="end", **kwargs):
    store = CountingStore()
    a = zarrcore.create_array(store, name="r", shape=(64, 64), dtype="uint16", chunks=(8, 8),
                              shards={"shape": (64, 64), "index_location": location},
                              fill_value=0, **kwargs)
    data = (np.arange(64 * 64) % 60000 + 1).astype("uint16").reshape(64, 64)
    a[...] = data
    store.reset()
    return store, a, data


@pytest.mark.parametrize("location", ["start", "end"])
def test_partial_read_fetches_index_then_needed_ranges(location):
    store, a, data = make_counted(location, compressors=None)
    index_size = 64 * 16 + 4
    np.testing.assert_array_equal(a[9:11, 17:19], data[9:11, 17:19])
    assert store.requests == 2
    (_, i0, i1), (_, c0, c1) = store.reads
    assert (i0, i1) == ((0, index_size) if location == "start" else (-index_size, None))
    assert c1 - c0 == 128  # exactly one 8 x 8 uint16 inner chunk


def test_nearby_ranges_coalesced():
    store, a, data = make_counted(compressors=None)
    # Inner chunks (0, 0), (0, 1), (0, 3) in one request; (7, 7) far away in another range.
    np.testing.assert_array_equal(a[0, 0:32:8], data[0, 0:32:8])
    np.testing.assert_array_equal(a[63, 63], data[63, 63])
    assert store.requests == 4
    ranges = store.reads[1:2] + store.reads[3:]
    assert [stop - start for _, start, stop in ranges] == [4 * 128, 128]


def test_most_of_shard_read_once():
    store, a, data = make_counted()
    np.testing.assert_array_equal(a[:40, :], data[:40, :])
    # Whole, but no further than a byte past the most a valid shard takes.
    assert store.reads == [("r/c/0/0", 0, a._engine.chain.max_encoded_bytes + 1)]


def test_missing_shard_reads_fill_without_data_requests():
    store, a, _ = make_counted()
    store.delete("r/c/0/0")
    store.reset()
    assert (a[1:3, 1:3] == 0).all()
    assert store.requests == 1  # the index read finds nothing


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_partial_read_sees_one_version_of_the_shard(tmp_path, monkeypatch, kind):
    """A writer replaces the shard between the read of its index and of its inner chunks: the
    read still gets the inner chunks of the version whose index it read."""
    store = zarrcore.MemoryStore() if kind == "memory" else zarrcore.LocalStore(tmp_path / "s")
    # The transpose keeps the local store off the native batch, which reads one open file.
    a = zarrcore.create_array(store, name="r", shape=(64, 64), dtype="uint16", chunks=(8, 8),
                              shards=(64, 64), fill_value=0,
                              filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}])
    old = (np.arange(64 * 64) % 60000 + 1).astype("uint16").reshape(64, 64)
    a[...] = old
    a[:16, :] = 0  # the new version lays its inner chunks out at other offsets
    new_bytes = store.get("r/c/0/0")
    a[...] = old
    read_index = ShardingCodec._read_index

    def read_index_then_replace(self, shard):
        entries = read_index(self, shard)
        store.set("r/c/0/0", new_bytes)
        return entries

    monkeypatch.setattr(ShardingCodec, "_read_index", read_index_then_replace)
    np.testing.assert_array_equal(a[20:30, 17:40], old[20:30, 17:40])


def test_partial_write_keeps_other_inner_chunks_bytes():
    store = {}
    a = zarrcore.create_array(store, shape=(16, 16), dtype="int32", chunks=(4, 4), shards=(16, 16),
                              compressors={"name": "zstd", "configuration": {"level": 5}},
                              fill_value=0)
    data = np.random.default_rng(1).integers(-100, 100, size=(16, 16)).astype("int32")
    a[...] = data
    before = store["c/0/0"]
    old, _ = parse_shard(before, 16)
    a[5, 6] = 12345
    data[5, 6] = 12345
    after = store["c/0/0"]
    new, _ = parse_shard(after, 16)
    for i in range(16):
        (o0, n0), (o1, n1) = old[i], new[i]
        if i != 5:  # inner chunk (1, 1) is re-encoded, every other keeps its bytes
            assert before[o0:o0 + n0] == after[o1:o1 + n1]
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("order", ["C", "F"])
def test_read_into_out_array(order):
    """C-ordered rows of whole inner chunks decode straight into `out`; other layouts copy."""
    a = zarrcore.create_array({}, shape=(40, 30), dtype="float64", chunks=(2, 30), shards=(8, 30))
    data = np.linspace(0, 1, 1200).reshape(40, 30)
    a[...] = data
    out = np.empty((40, 30), order=order)
    assert a.get_basic_selection(Ellipsis, out=out) is out
    np.testing.assert_array_equal(out, data)


# -- corrupt shards ----------------------------------------------------------------------------

def corrupt_setup(location="end"):
    store = zarrcore.MemoryStore()
    a = zarrcore.create_array(store, name="x", shape=(8, 8), dtype="uint8", chunks=(4, 4),
                              shards={"shape": (8, 8), "index_location": location},
                              compressors=None, fill_value=0)
    a[...] = np.arange(64, dtype="uint8").reshape(8, 8) + 1
    return store, a


def rewrite_index(store, entries, location="end", body=None):
    """Store a shard with the given entries, a valid checksum and the old chunk bytes."""
    data = store.get("x/c/0/0")
    if body is None:
        body = data[68:] if location == "start" else data[:-68]
    raw = np.asarray(entries, dtype="<u8").tobytes()
    index = raw + struct.pack("<I", crc32c.crc32c(raw))
    store.set("x/c/0/0", index + body if location == "start" else body + index)


# A partial read of inner chunk (1, 1) alone goes through ranged reads.
READS = {"whole": (Ellipsis,), "partial": (slice(7, 8), slice(7, 8))}


@pytest.mark.parametrize("read", sorted(READS))
def test_bad_checksum(read):
    store, a = corrupt_setup()
    data = bytearray(store.get("x/c/0/0"))
    data[-1] ^= 0xFF
    store.set("x/c/0/0", bytes(data))
    with pytest.raises(ChecksumError, match="x/c/0/0.*shard index.*checksum"):
        a[READS[read]]


@pytest.mark.parametrize("read", sorted(READS))
@pytest.mark.parametrize("location", ["start", "end"])
def test_entry_outside_shard(read, location):
    store, a = corrupt_setup(location)
    base = 68 if location == "start" else 0
    rewrite_index(store, [[base, 16], [base + 16, 16], [base + 32, 16], [base + 48, 1000]], location)
    with pytest.raises(ShardIndexError, match=r"x/c/0/0.*inner chunk (3|\(1, 1\)).*past") as e:
        a[READS[read]]
    assert isinstance(e.value, ZarrcoreError)


def test_entry_inside_index_at_start():
    store, a = corrupt_setup("start")
    rewrite_index(store, [[0, 16], [84, 16], [100, 16], [116, 16]], "start")
    with pytest.raises(ShardIndexError, match=r"x/c/0/0.*inner chunk \(0, 0\).*index"):
        a[...]


@pytest.mark.parametrize("read", sorted(READS))
def test_overlapping_entries(read):
    store, a = corrupt_setup()
    rewrite_index(store, [[0, 16], [8, 16], [32, 16], [48, 16]])
    with pytest.raises(ShardIndexError, match=r"x/c/0/0.*inner chunk 1.*overlaps"):
        a[READS[read]]


def test_half_empty_entry():
    store, a = corrupt_setup()
    rewrite_index(store, [[0, 16], [EMPTY, 16], [32, 16], [48, 16]])
    with pytest.raises(ShardIndexError, match=r"x/c/0/0.*inner chunk 1"):
        a[...]


@pytest.mark.parametrize("read", sorted(READS))
def test_shard_shorter_than_index(read):
    store, a = corrupt_setup()
    store.set("x/c/0/0", b"\x00" * 30)
    with pytest.raises(ShardIndexError, match=r"x/c/0/0.*shorter than its 68-byte index"):
        a[READS[read]]


def test_wrong_index_size_from_chunk_grid():
    """An index of a different chunk count fails its checksum or the entry checks."""
    store, a = corrupt_setup()
    raw = np.asarray([[0, 64]], dtype="<u8").tobytes()
    store.set("x/c/0/0", bytes(64) + raw + struct.pack("<I", crc32c.crc32c(raw)))
    with pytest.raises((ChecksumError, ShardIndexError), match="x/c/0/0"):
        a[...]


def test_corrupt_inner_chunk_names_inner_chunk():
    store = zarrcore.MemoryStore()
    a = zarrcore.create_array(store, name="x", shape=(8, 8), dtype="uint8", chunks=(4, 4),
                              shards=(8, 8), fill_value=0,
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = 1
    a[4:, 4:] = np.arange(16, dtype="uint8").reshape(4, 4)
    data = store.get("x/c/0/0")
    entries, _ = parse_shard(data, 4)
    off, n = entries[3]
    store.set("x/c/0/0", data[:off] + b"\xff" * n + data[off + n:])
    with pytest.raises(ZarrcoreError, match=r"x/c/0/0.*inner chunk \(1, 1\)"):
        a[...]
    with pytest.raises(ZarrcoreError, match=r"x/c/0/0.*inner chunk \(1, 1\)"):
        a[5, 5] = 3  # a partial write decodes the touched inner chunk


def test_array_selections(store):
    """Orthogonal, vectorized and block selections read and write inside shards."""
    data = np.arange(20 * 18, dtype="int32").reshape(20, 18)
    a = zarrcore.create_array(store, name="o", shape=data.shape, dtype="int32", chunks=(3, 3),
                              shards=(6, 9), fill_value=0)
    a[...] = data
    rows, cols = [0, 5, 6, 19], [17, 1, 9]
    np.testing.assert_array_equal(a.oindex[rows, cols], data[np.ix_(rows, cols)])
    np.testing.assert_array_equal(a.vindex[rows[:3], cols], data[rows[:3], cols])
    np.testing.assert_array_equal(a.blocks[1, 1], data[6:12, 9:18])
    a.oindex[[2, 7], 4:6] = -1
    data[np.ix_([2, 7], [4, 5])] = -1
    a.vindex[[0, 19], [0, 17]] = -2
    data[[0, 19], [0, 17]] = -2
    np.testing.assert_array_equal(a[...], data)
