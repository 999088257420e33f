"""Chunk-level access (Array.get_chunk, get_chunk_bytes, encode_chunk, decode_chunk,
set_chunk, set_chunk_bytes): against numpy, over the codec chains, v2 and v3, shards and
inner chunks, edge chunks, bad input; and bytes exchanged with zarr-python 3.4 and
tensorstore (tests/peers.py)."""
import itertools
import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from _peer_arrays import pack, unpack
from peers import peer  # noqa: F401 (a fixture)

import zarrcore
from zarrcore.errors import (
    ChecksumError, ChunkDecodeError, DataTypeMismatchError, ReadOnlyError, SelectionError,
    ShapeMismatchError, ValueTooLargeError, ZarrcoreError,
)
from zarrcore.storage import MemoryStore

# name -> create_array keywords of a chain (v3 unless zarr_format says so)
CHAINS = {
    "zstd": dict(compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
    "raw": dict(compressors=None),
    "crc32c": dict(compressors=[{"name": "zstd", "configuration": {"level": 1}},
                                {"name": "crc32c"}]),
    "gzip-transpose": dict(filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
                           compressors=[{"name": "gzip", "configuration": {"level": 1}}]),
    "blosc-big-endian": dict(
        serializer={"name": "bytes", "configuration": {"endian": "big"}},
        compressors=[{"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]),
    "v2-zlib-F": dict(zarr_format=2, order="F",
                      compressors=[{"id": "zlib", "level": 1}]),
    "v2-delta": dict(zarr_format=2, filters=[{"id": "delta", "dtype": "<i4"}],
                     compressors=[{"id": "zstd", "level": 1}]),
}
SHAPE, CHUNKS = (11, 14), (4, 5)  # edge chunks on both axes
# (chain, sharded) of every chain, sharded too unless v2 (which has no sharding)
LAYOUTS = [(c, s) for c in CHAINS for s in (False, True) if not (s and c.startswith("v2"))]


def regions(shape, chunks):
    """{chunk coords: region} of a regular grid."""
    grid = [range(-(-n // c)) for n, c in zip(shape, chunks)]
    return {coords: tuple(slice(i * c, min((i + 1) * c, n))
                          for i, c, n in zip(coords, chunks, shape))
            for coords in itertools.product(*grid)}


def make(store=None, chain="zstd", shards=None, shape=SHAPE, chunks=CHUNKS, **kwargs):
    return zarrcore.create_array(store if store is not None else MemoryStore(), shape=shape,
                                 chunks=chunks, shards=shards, dtype="int32", fill_value=-7,
                                 **CHAINS[chain], **kwargs)


DATA = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE) * 3 + 1


@pytest.mark.parametrize("chain, sharded", LAYOUTS)
def test_every_chunk_reads_encodes_and_decodes_as_numpy(chain, sharded):
    a = make(chain=chain, shards=(8, 10) if sharded else None)
    a[...] = DATA
    for coords, region in regions(SHAPE, CHUNKS).items():
        np.testing.assert_array_equal(a.get_chunk(coords), DATA[region])
        stored = a.get_chunk_bytes(coords)
        assert isinstance(stored, bytes)
        np.testing.assert_array_equal(a.decode_chunk(stored, coords), DATA[region])
        encoded = a.encode_chunk(DATA[region], coords)
        full = a.decode_chunk(encoded)
        assert full.shape == CHUNKS
        np.testing.assert_array_equal(full[tuple(slice(0, r.stop - r.start) for r in region)],
                                      DATA[region])
        assert (full == -7).sum() == np.prod(CHUNKS) - DATA[region].size
    if sharded:
        for coords, region in regions(SHAPE, (8, 10)).items():
            shard = a.get_chunk_bytes(coords, shard=True)
            np.testing.assert_array_equal(a.decode_chunk(shard, coords, shard=True),
                                          DATA[region])
            np.testing.assert_array_equal(a.get_chunk(coords, shard=True), DATA[region])


@pytest.mark.parametrize("chain, sharded", LAYOUTS)
def test_writes_of_bytes_and_values_land_as_numpy_writes(chain, sharded):
    a = make(chain=chain, shards=(8, 10) if sharded else None)
    source = make(chain=chain, shards=(8, 10) if sharded else None)
    mirror = np.full(SHAPE, -7, dtype="int32")
    for n, (coords, region) in enumerate(regions(SHAPE, CHUNKS).items()):
        value = DATA[region] + n
        mirror[region] = value
        if n % 2:
            a.set_chunk(coords, value)
        else:
            a.set_chunk_bytes(coords, source.encode_chunk(value, coords))
            # The bytes are stored as given and read back identically.
            assert a.get_chunk_bytes(coords) == source.encode_chunk(value, coords)
        np.testing.assert_array_equal(a[...], mirror)
    fresh = zarrcore.open_array(a.store, mode="r")
    np.testing.assert_array_equal(fresh[...], mirror)


def test_missing_chunks_read_as_fill_and_as_none():
    a = make(shards=(8, 10))
    a[:4, :5] = 1
    assert a.get_chunk_bytes((2, 2)) is None  # shard not stored
    assert a.get_chunk_bytes((1, 1)) is None  # shard stored, inner chunk not
    assert a.get_chunk_bytes((1, 1), shard=True) is None
    assert a.get_chunk_bytes((0, 0)) is not None
    np.testing.assert_array_equal(a.get_chunk((2, 2)), np.full((3, 4), -7))
    np.testing.assert_array_equal(a.get_chunk((1, 1)), np.full((4, 5), -7))


def test_inner_chunk_write_keeps_the_shards_other_inner_chunks():
    a = make(shards=(8, 10))
    a[...] = DATA
    before = {c: a.get_chunk_bytes(c) for c in regions(SHAPE, CHUNKS)}
    a.set_chunk_bytes((1, 0), a.encode_chunk(np.zeros(CHUNKS, "int32")))
    for coords, data in before.items():
        if coords != (1, 0):
            assert a.get_chunk_bytes(coords) == data, coords
    expected = DATA.copy()
    expected[4:8, :5] = 0
    np.testing.assert_array_equal(a[...], expected)


@pytest.mark.parametrize("where", ["memory", "directory"])
def test_concurrent_inner_chunk_writes_into_one_shard_lose_nothing(where, tmp_path):
    store = MemoryStore() if where == "memory" else str(tmp_path / "a")
    a = make(store, shape=(16, 20), shards=(16, 20))  # one shard of 4 x 4 inner chunks
    coords = list(itertools.product(range(4), range(4)))
    values = {c: np.full(CHUNKS, 10 * c[0] + c[1], "int32") for c in coords}
    encoded = {c: a.encode_chunk(v) for c, v in values.items()}

    def write(c):
        if sum(c) % 2:
            a.set_chunk_bytes(c, encoded[c])
        else:
            a.set_chunk(c, values[c])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, coords))
    for c in coords:
        np.testing.assert_array_equal(a.get_chunk(c), values[c])


def test_full_shape_value_for_an_edge_chunk_drops_what_lies_outside():
    a = make()
    a.set_chunk((2, 2), np.ones(CHUNKS, "int32"))
    np.testing.assert_array_equal(a.get_chunk((2, 2)), np.ones((3, 4)))
    full = a.decode_chunk(a.get_chunk_bytes((2, 2)))
    assert (full[3:] == -7).all() and (full[:, 4:] == -7).all()


def test_all_fill_set_chunk_deletes_but_bytes_are_stored_as_given():
    a = make()
    a[...] = DATA
    a.set_chunk((0, 0), np.full(CHUNKS, -7, "int32"))
    assert a.get_chunk_bytes((0, 0)) is None
    fill = a.encode_chunk(np.full(CHUNKS, -7, "int32"))
    a.set_chunk_bytes((0, 1), fill)
    assert a.get_chunk_bytes((0, 1)) == fill


def test_zero_dimensional_array():
    a = zarrcore.create_array(MemoryStore(), shape=(), dtype="float64", fill_value=1.5)
    np.testing.assert_array_equal(a.get_chunk(()), np.asarray(1.5))
    a.set_chunk_bytes((), a.encode_chunk(np.asarray(4.0)))
    assert a[...] == 4.0 and a.decode_chunk(a.get_chunk_bytes(())) == 4.0


@pytest.mark.parametrize("sharded", [False, True])
def test_bad_input_raises_named_errors(sharded):
    a = make(chain="crc32c", shards=(8, 10) if sharded else None)
    a[...] = DATA
    good = a.get_chunk_bytes((0, 0))
    for coords in [(3, 0), (0,), (0, 0, 0), (-1, 0), (0.0, 1), (True, 0), "ab"]:
        with pytest.raises(SelectionError, match="coordinates"):
            a.get_chunk(coords)
        with pytest.raises(SelectionError):
            a.set_chunk_bytes(coords, good)
    with pytest.raises(SelectionError, match="shard coordinates" if sharded else "chunk"):
        a.get_chunk_bytes((2, 0) if sharded else (3, 0), shard=True)
    with pytest.raises(ShapeMismatchError, match=r"chunk \(0, 1\).*shape \(4, 4\)"):
        a.set_chunk((0, 1), np.zeros((4, 4), "int32"))
    with pytest.raises(ShapeMismatchError):
        a.encode_chunk(np.zeros((3, 4), "int32"))  # an edge part needs its coordinates
    with pytest.raises(DataTypeMismatchError, match="float64"):
        a.encode_chunk(np.zeros(CHUNKS))
    with pytest.raises(DataTypeMismatchError):
        a.set_chunk((0, 0), np.zeros(CHUNKS, "int64"))
    assert a.encode_chunk(np.zeros(CHUNKS, "int16"))  # casts safely
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0xFF
    with pytest.raises(ChecksumError, match=r"chunk \(0, 0\)"):
        a.set_chunk_bytes((0, 0), bytes(damaged))
    with pytest.raises(ChunkDecodeError, match=r"chunk \(1, 1\)"):
        a.set_chunk_bytes((1, 1), good[:-5])
    with pytest.raises(ChunkDecodeError):
        a.decode_chunk(b"not a chunk")
    with pytest.raises(ValueTooLargeError):
        a.decode_chunk(bytes(10 << 20))
    with pytest.raises(TypeError, match="bytes-like"):
        a.decode_chunk("text")
    np.testing.assert_array_equal(a[...], DATA)  # nothing stored by the refusals
    if sharded:
        shard = bytearray(a.get_chunk_bytes((0, 0), shard=True))
        shard[-3] ^= 0xFF  # the index's checksum
        with pytest.raises(ChunkDecodeError, match=r"shard \(0, 0\)"):
            a.set_chunk_bytes((0, 0), bytes(shard), shard=True)
    a.store.set("c/1/1", b"garbage")
    with pytest.raises(ZarrcoreError, match="c/1/1"):
        a.get_chunk_bytes((2, 2)) if sharded else a.get_chunk((1, 1))
    ro = zarrcore.open_array(a.store, mode="r")
    with pytest.raises(ReadOnlyError):
        ro.set_chunk_bytes((0, 0), good)
    with pytest.raises(ReadOnlyError):
        ro.set_chunk((0, 0), DATA[:4, :5])


def test_uncompressed_bytes_of_the_wrong_size_are_refused():
    a = make(chain="raw")
    with pytest.raises(ChunkDecodeError, match=r"chunk \(0, 0\)"):
        a.set_chunk_bytes((0, 0), bytes(4 * 19))
    with pytest.raises(ChunkDecodeError):
        a.decode_chunk(np.zeros(CHUNKS, "int64").tobytes())  # another dtype's size


def test_writes_on_a_directory_take_the_engines_paths(tmp_path):
    a = make(str(tmp_path / "a"), shards=(8, 10))
    a[...] = DATA
    a.set_chunk_bytes((1, 1), a.encode_chunk(np.ones(CHUNKS, "int32")))
    a.set_chunk((2, 2), np.zeros((3, 4), "int32"))
    expected = DATA.copy()
    expected[4:8, 5:10] = 1
    expected[8:, 10:] = 0
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "a"))[...], expected)
    shard_file = tmp_path / "a" / "c" / "0" / "0"
    assert a.get_chunk_bytes((0, 0), shard=True) == shard_file.read_bytes()


def test_rectilinear_grid():
    a = zarrcore.create_array(MemoryStore(), shape=(10,), chunks=[[3, 7]], dtype="int32",
                              fill_value=0)
    a[...] = np.arange(10)
    assert a.get_chunk((1,)).tolist() == list(range(3, 10))
    data = a.encode_chunk(np.arange(7, dtype="int32") * 2, (1,))
    a.set_chunk_bytes((1,), data)
    assert a[...].tolist() == [0, 1, 2] + list(range(0, 14, 2))
    with pytest.raises(ChunkDecodeError):
        a.set_chunk_bytes((0,), data)  # seven items where three belong


def test_inner_chunks_of_a_rectilinear_grid_of_shards():
    s = zarrcore.create_array(MemoryStore(), shape=(30, 20), dtype="int32", chunks=(5, 4),
                              shards=[[10, 5, 15], [8, 12]], fill_value=0)
    mirror = np.arange(600, dtype="int32").reshape(30, 20)
    s[...] = mirror
    for coords, region in regions((30, 20), (5, 4)).items():
        np.testing.assert_array_equal(s.get_chunk(coords), mirror[region])
        data = s.get_chunk_bytes(coords)
        np.testing.assert_array_equal(s.decode_chunk(data, coords), mirror[region])
        mirror[region] *= -1
        s.set_chunk_bytes(coords, s.encode_chunk(mirror[region], coords))
    np.testing.assert_array_equal(s[...], mirror)
    for coords in [(0, 0), (1, 1), (2, 0)]:
        np.testing.assert_array_equal(s.get_chunk(coords, shard=True),
                                      mirror[s.chunk_grid.region(coords)])


@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 3))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shape = tuple(draw(st.integers(1, 10)) for _ in range(ndim))
    per_shard = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    shards = draw(st.sampled_from([None, tuple(c * p for c, p in zip(chunks, per_shard))]))
    return shape, chunks, shards


@given(layout=layouts(), data=st.data())
def test_chunk_calls_match_numpy(layout, data):
    shape, chunks, shards = layout
    a = zarrcore.create_array(MemoryStore(), shape=shape, chunks=chunks, shards=shards,
                              dtype="int16", fill_value=5)
    mirror = np.full(shape, 5, dtype="int16")
    grid = regions(shape, chunks)
    for _ in range(data.draw(st.integers(1, 4))):
        coords = data.draw(st.sampled_from(sorted(grid)))
        region = grid[coords]
        part = mirror[region].shape
        value = data.draw(st.sampled_from([part, chunks]))
        values = np.asarray(data.draw(st.lists(st.integers(-5, 9), min_size=int(np.prod(value)),
                                               max_size=int(np.prod(value)))),
                            dtype="int16").reshape(value)
        how = data.draw(st.sampled_from(["set_chunk", "set_chunk_bytes", "setitem"]))
        if how == "set_chunk":
            a.set_chunk(coords, values)
        elif how == "set_chunk_bytes":
            a.set_chunk_bytes(coords, a.encode_chunk(values, coords))
        else:
            a[region] = values[tuple(slice(0, n) for n in part)]
        mirror[region] = values[tuple(slice(0, n) for n in part)]
        for c, r in grid.items():
            np.testing.assert_array_equal(a.get_chunk(c), mirror[r])
            stored = a.get_chunk_bytes(c)
            if stored is not None:
                np.testing.assert_array_equal(a.decode_chunk(stored, c), mirror[r])
    np.testing.assert_array_equal(a[...], mirror)


# -- peers: zarr-python 3.4 and tensorstore -----------------------------------------------
# name -> (create_array keywords, zarr-python's keywords for the same array)
PEER_CASES = {
    "v3-zstd": dict(shape=[11, 14], chunks=[4, 5], dtype="int32", fill_value=-7,
                    compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
    "v3-crc32c-gzip": dict(shape=[11, 14], chunks=[4, 5], dtype="int32", fill_value=0,
                           compressors=[{"name": "gzip", "configuration": {"level": 1}},
                                        {"name": "crc32c"}]),
    "v3-sharded": dict(shape=[11, 14], chunks=[4, 5], shards=[8, 10], dtype="int32",
                       fill_value=-7,
                       compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
    "v2-zlib": dict(shape=[11, 14], chunks=[4, 5], dtype="int32", fill_value=3, zarr_format=2,
                    compressors=[{"id": "zlib", "level": 1}]),
    "v2-zlib-F": dict(shape=[11, 14], chunks=[4, 5], dtype="int32", fill_value=3,
                      zarr_format=2, order="F", compressors=[{"id": "zlib", "level": 1}]),
}

PEER_READ = """
import json, os
import zarr, tensorstore as ts
result = {}
for name, path in payload.items():
    v2 = os.path.exists(os.path.join(path, ".zarray"))
    spec = {"driver": "zarr" if v2 else "zarr3", "kvstore": {"driver": "file", "path": path}}
    result[name] = {"zarr": pack(zarr.open_array(path, mode="r")[...]),
                    "tensorstore": pack(ts.open(spec).result().read().result())}
"""

PEER_WRITE = """
import zarr, tensorstore as ts
for name, case in payload.items():
    kwargs = dict(case["kwargs"])
    for key in ("shape", "chunks", "shards"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    v2 = kwargs.get("zarr_format") == 2
    if v2:
        from numcodecs import Zlib
        kwargs["compressors"] = [Zlib(level=1)]
    if case["writer"] == "zarr":
        a = zarr.create_array(case["path"], **kwargs)
        a[...] = unpack(case["data"])
    else:
        zarr.create_array(case["path"], **kwargs)  # the metadata; tensorstore writes chunks
        spec = {"driver": "zarr" if v2 else "zarr3",
                "kvstore": {"driver": "file", "path": case["path"]}}
        t = ts.open(spec).result()
        t.write(unpack(case["data"])).result()
result = "ok"
"""


def _key_path(a, path, coords):
    return os.path.join(path, *a.chunk_engine.key(coords).split("/"))


def _inner_bytes(a, path, coords):
    """An inner chunk's bytes cut from its shard file by the test's own reading of the index
    (little-endian offset and length pairs, then a crc32c, at the shard's end)."""
    inner = a.chunks
    per = [s // c for s, c in zip(a.shards, inner)]
    shard = tuple(c // p for c, p in zip(coords, per))
    local = tuple(c % p for c, p in zip(coords, per))
    try:
        with open(_key_path(a, path, shard), "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    n = int(np.prod(per))
    index = np.frombuffer(raw[-(16 * n + 4):-4], dtype="<u8").reshape(n, 2)
    offset, nbytes = index[np.ravel_multi_index(local, per)]
    return None if offset == 2**64 - 1 else raw[int(offset):int(offset + nbytes)]


@pytest.mark.slow
def test_peers_read_the_bytes_we_encode_and_store(peer, tmp_path):  # noqa: F811
    paths = {}
    for name, kwargs in PEER_CASES.items():
        paths[name] = str(tmp_path / name)
        kwargs = {k: tuple(v) if isinstance(v, list) and k != "compressors" else v
                  for k, v in kwargs.items()}
        a = zarrcore.create_array(paths[name], **kwargs)
        encoder = zarrcore.create_array(MemoryStore(), **kwargs)  # encodes apart from the store
        for n, (coords, region) in enumerate(regions(SHAPE, CHUNKS).items()):
            if n % 3 == 0:
                a.set_chunk(coords, DATA[region])
            else:
                a.set_chunk_bytes(coords, encoder.encode_chunk(DATA[region], coords))
    read = peer.run(PEER_READ, paths)
    for name in PEER_CASES:
        for reader in ("zarr", "tensorstore"):
            np.testing.assert_array_equal(unpack(read[name][reader]), DATA,
                                          err_msg=f"{name} read by {reader}")


@pytest.mark.slow
def test_bytes_peers_wrote_are_returned_identically(peer, tmp_path):  # noqa: F811
    payload = {}
    for name, kwargs in PEER_CASES.items():
        for writer in ("zarr", "tensorstore"):
            payload[f"{name}-{writer}"] = {"path": str(tmp_path / f"{name}-{writer}"),
                                           "kwargs": kwargs, "writer": writer,
                                           "data": pack(DATA)}
    assert peer.run(PEER_WRITE, json.loads(json.dumps(payload))) == "ok"
    for case in payload.values():
        path = case["path"]
        a = zarrcore.open_array(path, mode="r")
        for coords, region in regions(SHAPE, CHUNKS).items():
            if a.shards is None:
                on_disk = open(_key_path(a, path, coords), "rb").read()
            else:
                on_disk = _inner_bytes(a, path, coords)
            got = a.get_chunk_bytes(coords)
            assert got == on_disk, (path, coords)
            np.testing.assert_array_equal(a.decode_chunk(got, coords), DATA[region])
            np.testing.assert_array_equal(a.get_chunk(coords), DATA[region])
        if a.shards is not None:
            for coords in regions(SHAPE, a.shards):
                got = a.get_chunk_bytes(coords, shard=True)
                assert got == open(_key_path(a, path, coords), "rb").read()
