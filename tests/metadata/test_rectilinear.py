"""Rectilinear chunk grids (the zarr-extensions registry's `rectilinear`): metadata in both
encodings, creation in zarr-python 3.4's spelling, every indexing mode against numpy, resize
and append as zarr-python 3.4 grows a grid, and both directions against zarr-python 3.4."""
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from _peer_arrays import pack, unpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peers import peer  # noqa: F401 (a fixture)
from _probes import python_calls as _python_calls

import zarrcore
from zarrcore.cli import main
from zarrcore.codecs.chain import CodecChain
from zarrcore.codecs.sharding import ShardingCodec
from zarrcore.errors import MetadataError, ZarrcoreError
from zarrcore.metadata.v3 import ArrayMetadataV3
from zarrcore.tools.convert import convert
from zarrcore.tools.hierarchy import CONVERT_STATE_KEY
from zarrcore.tools.verify import verify


def _doc(chunk_shapes, shape=(30, 20), kind="inline"):
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "int32",
            "chunk_grid": {"name": "rectilinear",
                           "configuration": {"kind": kind, "chunk_shapes": chunk_shapes}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}


def test_metadata_both_encodings_round_trip():
    # (stored shapes, boundaries per axis, what zarrcore writes back: runs as zarr-python)
    for shapes, axes, written in [
            ([[10, 5, 15], [7, 13]], [[0, 10, 15, 30], [0, 7, 20]], None),
            ([[[10, 2], 10], [[5, 4]]], [[0, 10, 20, 30], [0, 5, 10, 15, 20]],
             [[[10, 3]], [[5, 4]]]),
            ([[1, [2, 3], 23], 8], [[0, 1, 3, 5, 7, 30], 8], None)]:
        meta = ArrayMetadataV3.from_json(_doc(shapes))
        got = [a if isinstance(a, int) else a.start(np.arange(a.nchunks + 1)).tolist()
               for a in meta.grid.axes]
        assert got == axes
        assert meta.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == (
            written or shapes)


def test_metadata_errors_name_the_field():
    bad = [_doc([[10, 5, 14], [20]]),  # does not cover the shape
           _doc([[10, 0, 20], [20]]), _doc([[[10, 0]], [20]]), _doc([[10, 20]]),
           _doc([[30], "x"]), _doc([[30], []]), _doc([[30], [20]], kind="external"),
           _doc([[30], [[5, 2, 1]]])]
    for doc in bad:
        with pytest.raises(MetadataError, match="chunk_grid"):
            ArrayMetadataV3.from_json(doc)


def test_edges_past_the_shape_read():
    meta = ArrayMetadataV3.from_json(_doc([[10, 5, 15, 9], [20]]))  # after a shrink
    assert meta.grid.grid_shape == (3, 1)


def test_create_spelling_and_rules():
    a = zarrcore.create_array({}, shape=(30, 20), chunks=[[10, 5, 15], [7, 13]], dtype="i4")
    grid = json.loads(a.store.get("zarr.json"))["chunk_grid"]
    assert grid == {"name": "rectilinear", "configuration": {
        "kind": "inline", "chunk_shapes": [[10, 5, 15], [7, 13]]}}
    assert a.chunks == ((10, 5, 15), (7, 13))
    # Regular edge lengths make a regular grid, as in zarr-python 3.4.
    r = zarrcore.create_array({}, shape=(25,), chunks=[[10, 10, 5]], dtype="i4")
    assert json.loads(r.store.get("zarr.json"))["chunk_grid"]["name"] == "regular"
    assert r.chunks == (10,)
    for chunks in ([[10, 5, 14], [20]], [[10, -5, 25], [20]], [[30]]):
        with pytest.raises(MetadataError, match="chunks"):
            zarrcore.create_array({}, shape=(30, 20), chunks=chunks, dtype="i4")
    with pytest.raises(ValueError, match="multiples"):
        zarrcore.create_array({}, shape=(30,), chunks=(5,), shards=[[20, 3, 7]], dtype="i4")


def test_chunk_sizes_follow_the_edges():
    a = zarrcore.create_array({}, shape=(30, 20), chunks=[[10, 5, 15], [7, 13]], dtype="i4")
    assert a.read_chunk_sizes == a.write_chunk_sizes == ((10, 5, 15), (7, 13))
    s = zarrcore.create_array({}, shape=(30, 20), chunks=(5, 4), shards=[[10, 5, 15], [8, 12]],
                              dtype="i4")
    assert s.write_chunk_sizes == ((10, 5, 15), (8, 12))
    assert s.read_chunk_sizes == ((5,) * 6, (4,) * 5)
    # After a shrink, the cuts end at the shape.
    s.resize((28, 18))
    assert s.write_chunk_sizes == ((10, 5, 13), (8, 10))
    assert s.read_chunk_sizes == ((5, 5, 5, 5, 5, 3), (4, 4, 4, 4, 2))


def _stores(tmp_path):
    return [{}, str(tmp_path / "dir")]


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("on_disk", [False, True])
def test_every_indexing_mode(tmp_path, sharded, on_disk):
    kw = (dict(chunks=(5, 4), shards=[[10, 5, 15], [8, 12]]) if sharded
          else dict(chunks=[[10, 5, 15], [7, 13]]))
    store = str(tmp_path / "a") if on_disk else {}
    a = zarrcore.create_array(store, shape=(30, 20), dtype="i4", fill_value=-1, **kw)
    d = np.full((30, 20), -1, dtype="i4")
    a[2:29, 1:] = d[2:29, 1:] = np.arange(27 * 19).reshape(27, 19)
    np.testing.assert_array_equal(a[...], d)
    for sel in [np.s_[3:27:4, ::-3], np.s_[11, 5:19], np.s_[-1, -1], np.s_[::7, 12]]:
        np.testing.assert_array_equal(a[sel], d[sel])
    rows, cols = [1, 29, 12, 11, 12], [0, 19, 7]
    np.testing.assert_array_equal(a.oindex[rows, cols], d[np.ix_(rows, cols)])
    np.testing.assert_array_equal(a.vindex[rows, [0, 19, 7, 8, 8]], d[rows, [0, 19, 7, 8, 8]])
    mask = (d % 7) == 0
    np.testing.assert_array_equal(a.vindex[mask], d[mask])
    np.testing.assert_array_equal(a.blocks[1], d[10:15])
    np.testing.assert_array_equal(a.blocks[1:, -1], d[10:, (7 if not sharded else 8):])
    a.oindex[[0, 29], [3, 4]] = d[np.ix_([0, 29], [3, 4])] = 99
    a.vindex[[14, 15], [6, 7]] = d[[14, 15], [6, 7]] = 98
    a[9:16, 6:9] = d[9:16, 6:9] = 97
    a.blocks[2, 0] = d[15:, :(7 if not sharded else 8)] = 96
    np.testing.assert_array_equal(a[...], d)
    with pytest.raises(IndexError):
        a.vindex[[30], [0]]


def test_resize_and_append_as_zarr34(tmp_path):
    a = zarrcore.create_array({}, shape=(30, 20), chunks=[[10, 5, 15], [7, 13]], dtype="i4")
    a[...] = 1
    a.append(np.full((4, 20), 2, dtype="i4"))
    assert a.chunks == ((10, 5, 15, 4), (7, 13))  # a new chunk of the growth
    a.resize(25, 20)  # edge lengths stay
    assert a.chunk_grid.to_json()["configuration"]["chunk_shapes"] == [[10, 5, 15, 4], [7, 13]]
    assert a.chunks == ((10, 5, 10), (7, 13))
    a.resize(40, 20)
    assert a.chunks == ((10, 5, 15, 4, 6), (7, 13))
    np.testing.assert_array_equal(a[:, 0], [1] * 25 + [0] * 15)


def _bounded(work):
    """(result of `work()`, seconds, peak bytes Python allocated meanwhile)."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = work()
        return result, time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_run_length_counts_stay_compressed():
    # A 300-byte document of 10**9 chunks along an axis: every read, write and resize
    # costs after its runs and the chunks it touches, never the 10**9 (main expanded them:
    # gigabytes, or a MemoryError).
    n = 10**9
    store = {"zarr.json": json.dumps(_doc([[[1, n]], [[5, 3], 5]], shape=(n, 20))).encode()}

    def work():
        a = zarrcore.open_array(store, mode="r+")
        a[n // 2, 3] = 7
        a[n - 3:, 10:] = 5
        a.vindex[[1, n - 1], [0, 19]] = [8, 9]
        got = (int(a[n // 2, 3]), a[n - 4:, 9:11].tolist(), a.vindex[[1, n - 1], [0, 19]].tolist(),
               a.oindex[[n - 1, 2, n // 2], [3, 19]].tolist(), a.blocks[n - 1, 3].tolist(),
               a[n // 2:n // 2 + 3:2, 3].tolist(), a[::n // 4, 3].tolist())
        a.resize((n + 5, 20))
        a[n + 4, 0] = 6
        grown = (a.chunk_grid.to_json()["configuration"]["chunk_shapes"], int(a[n + 4, 0]),
                 a.cdata_shape, a.nchunks, a.chunk_grid.grid_shape)
        a.resize((n - 2, 20))
        return got, grown, a.chunk_grid.to_json()["configuration"]["chunk_shapes"], \
            a.chunk_grid.grid_shape, next(a.iter_chunks())

    (got, grown, shrunk, grid, first), seconds, peak = _bounded(work)
    assert got == (7, [[0, 0]] + [[0, 5]] * 3, [8, 9], [[0, 9], [0, 0], [7, 0]], [[5, 5, 5, 5, 9]],
                   [7, 0], [0, 0, 7, 0])
    # (written back as runs, neighbours of one length joined as zarr-python 3.4 writes them)
    assert grown == ([[[1, n], 5], [[5, 4]]], 6, (n + 1, 4), (n + 1) * 4, (n + 1, 4))
    # Edge lengths are never dropped, as zarr-python 3.4 resizes.
    assert shrunk == grown[0] and grid == (n - 2, 4)
    assert first == ((0, 0), (slice(0, 1), slice(0, 5)))
    assert peak < 20 << 20 and seconds < 20, (peak, seconds)


def test_run_length_counts_of_shards_stay_compressed():
    # Shards by the 10**8 of one run, read by byte ranges (inner chunks on one grid) and
    # written, and the C plans of a directory store: the cost follows the runs.
    n = 10**8
    doc = _doc([[[4, n]]], shape=(4 * n,))
    doc["codecs"] = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}], "index_location": "end"}}]

    def work(store):
        a = zarrcore.open_array(store, mode="r+")
        a[4 * n - 3:] = [1, 2, 3]
        a[5] = 4
        return (a[4 * n - 4:].tolist(), int(a[5]), a.oindex[[5, 4 * n - 1]].tolist(),
                a.vindex[[4 * n - 2, 5]].tolist(), a.cdata_shape)

    for store in ({"zarr.json": json.dumps(doc).encode()}, None):
        if store is None:
            store = zarrcore.storage.LocalStore(str(Path(tempfile.mkdtemp())))
            store.set("zarr.json", json.dumps(doc).encode())
        got, seconds, peak = _bounded(lambda: work(store))
        assert got == ([0, 1, 2, 3], 4, [4, 3], [2, 4], (2 * n,))
        assert peak < 20 << 20 and seconds < 20, (peak, seconds)


_EDGES = st.lists(st.integers(1, 6), min_size=1, max_size=6)


@given(st.lists(_EDGES, min_size=1, max_size=3), st.data())
def test_indexing_matches_numpy(edges, data):
    shape = tuple(sum(e) for e in edges)
    a = zarrcore.create_array({}, shape=shape, chunks=edges, dtype="i2", fill_value=-1)
    d = np.arange(int(np.prod(shape)), dtype="i2").reshape(shape)
    a[...] = d
    sl = tuple(data.draw(st.slices(n)) for n in shape)
    np.testing.assert_array_equal(a[sl], d[sl])
    idx = tuple(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5))
                for n in shape)
    np.testing.assert_array_equal(a.oindex[idx], d[np.ix_(*idx)])
    n = data.draw(st.integers(1, 5))
    pts = tuple(data.draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n))
                for s in shape)
    np.testing.assert_array_equal(a.vindex[pts], d[pts])
    a[sl] = d[sl] = -d[sl]
    a.vindex[pts] = d[pts] = 7
    np.testing.assert_array_equal(a[...], d)


# -- against zarr-python 3.4 (the peer interpreter) -----------------------------------------

# name -> (create_array keywords, data)
CASES = {
    "plain": (dict(shape=(30, 20), chunks=[[10, 5, 15], [7, 13]], dtype="int32",
                   fill_value=-1), np.arange(600, dtype="int32").reshape(30, 20)),
    "runs": (dict(shape=(42,), chunks=[[4, 4, 4, 4, 6, 20]], dtype="float64"),
             np.linspace(-1, 1, 42)),
    "sharded": (dict(shape=(30, 20), chunks=(5, 4), shards=[[10, 5, 15], [8, 12]],
                     dtype="uint16", fill_value=3),
                np.arange(600, dtype="uint16").reshape(30, 20)),
}

PEER_WRITES = """
import json, zarr
zarr.config.set({"array.rectilinear_chunks": True})
result = {}
for name, case in payload.items():
    a = zarr.create_array(case["path"], **case["kwargs"])
    a[...] = unpack(case["data"])
    if name == "plain":
        a.append(unpack(case["data"])[:4])
    with open(case["path"] + "/zarr.json") as f:
        result[name] = json.load(f)["chunk_grid"]
"""

PEER_READS = """
import zarr
zarr.config.set({"array.rectilinear_chunks": True})
result = {name: pack(zarr.open_array(path, mode="r")[...]) for name, path in payload.items()}
"""


@pytest.mark.slow
def test_zarrcore_reads_zarr34(peer, tmp_path):  # noqa: F811
    payload = {name: {"path": str(tmp_path / name), "kwargs": kw, "data": pack(data)}
               for name, (kw, data) in CASES.items()}
    grids = peer.run(PEER_WRITES, payload)
    assert grids["runs"]["configuration"]["chunk_shapes"] == [[[4, 4], 6, 20]]
    assert grids["plain"]["configuration"]["chunk_shapes"] == [[10, 5, 15, 4], [7, 13]]
    for name, (kw, data) in CASES.items():
        a = zarrcore.open_array(str(tmp_path / name), mode="r")
        want = np.concatenate([data, data[:4]]) if name == "plain" else data
        np.testing.assert_array_equal(a[...], want, err_msg=name)
        assert a.dtype == np.dtype(kw["dtype"])


@pytest.mark.slow
def test_zarr34_reads_zarrcore(peer, tmp_path):  # noqa: F811
    paths = {}
    for name, (kw, data) in CASES.items():
        paths[name] = str(tmp_path / name)
        zarrcore.create_array(paths[name], **kw)[...] = data
    zarrcore.open_array(paths["plain"], mode="r+").append(CASES["plain"][1][:4])
    read = peer.run(PEER_READS, paths)
    for name, (kw, data) in CASES.items():
        want = np.concatenate([data, data[:4]]) if name == "plain" else data
        np.testing.assert_array_equal(unpack(read[name]), want, err_msg=name)


# Rectilinear shards of inner chunks (2, 3): shards hold 1 to 4 rows and 1 to 3 columns of
# them.
SHARDED = dict(shape=(20, 18), chunks=(2, 3), shards=[[4, 6, 2, 8], [3, 9, 6]], dtype="int32",
               fill_value=-7)
# Orthogonal and point selections (unsorted, repeated, negative) as both sides index them.
LISTED = {"oindex": ([17, 0, 5, 5, -1, 9], slice(2, 17, 4)),
          "oindex both": ([3, 12, 1], [17, 0, 8, 9]),
          "vindex": ([18, 0, 7, 7, 11, 4], [0, 17, 9, 10, 3, 3])}

PEER_LISTED = """
import zarr
zarr.config.set({"array.rectilinear_chunks": True})
if payload["write"] is not None:
    a = zarr.create_array(payload["path"], **payload["create"])
    a[...] = unpack(payload["write"])
    a[5:9, 4:11] = -1
a = zarr.open_array(payload["path"], mode="r")
def sel(x):
    return slice(*x["slice"]) if isinstance(x, dict) else x
result = {"grid": a.metadata.to_dict()["chunk_grid"], "all": pack(a[...])}
for name, (rows, cols) in payload["listed"].items():
    index = a.vindex if name == "vindex" else a.oindex
    result[name] = pack(index[sel(rows), sel(cols)])
"""


def _peer_listed(peer, path, write=None):  # noqa: F811
    """What zarr-python reads of the array at `path` (after writing `write` there, then -1 into
    [5:9, 4:11], when given): its grid, all of it, and each of LISTED."""
    def js(x):
        return {"slice": [x.start, x.stop, x.step]} if isinstance(x, slice) else x
    listed = {k: [js(x) for x in v] for k, v in LISTED.items()}
    return peer.run(PEER_LISTED, {"path": path, "create": SHARDED, "listed": listed,
                                  "write": None if write is None else pack(write)})


def _check_listed(a, peer_read, want):
    """`a`'s listed reads against numpy on `want` and against the peer's (`peer_read`)."""
    for name, (rows, cols) in LISTED.items():
        if name == "vindex":
            got, expected = a.vindex[rows, cols], want[rows, cols]
        else:
            got, expected = a.oindex[rows, cols], want[np.ix_(np.arange(want.shape[0])[rows],
                                                              np.arange(want.shape[1])[cols])]
        np.testing.assert_array_equal(got, expected, err_msg=name)
        np.testing.assert_array_equal(unpack(peer_read[name]), expected, err_msg=name)


@pytest.mark.slow
def test_rectilinear_shards_listed_reads_both_ways(peer, tmp_path):  # noqa: F811
    """Rectilinear shards written by zarr-python 3.4 read by zarrcore's shard waves (on a
    directory and in memory), orthogonal and point selections, as zarr-python reads them; and
    the same read by zarr-python from zarrcore's writes."""
    d = np.arange(20 * 18, dtype="int32").reshape(20, 18)
    want = d.copy()
    want[5:9, 4:11] = -1
    peer_path = str(tmp_path / "peer")
    read = _peer_listed(peer, peer_path, d)
    assert read["grid"]["name"] == "rectilinear"
    np.testing.assert_array_equal(unpack(read["all"]), want)
    files = {str(p.relative_to(peer_path)): p.read_bytes()
             for p in Path(peer_path).rglob("*") if p.is_file()}
    for store in (peer_path, zarrcore.MemoryStore(files)):
        a = zarrcore.open_array(store, mode="r")
        np.testing.assert_array_equal(a[...], want)
        _check_listed(a, read, want)
    ours = str(tmp_path / "ours")
    w = zarrcore.create_array(ours, **SHARDED)
    w[...] = d
    w[5:9, 4:11] = -1
    read = _peer_listed(peer, ours)
    np.testing.assert_array_equal(unpack(read["all"]), want)
    _check_listed(zarrcore.open_array(ours), read, want)


def test_verify_walks_the_grid(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(30,), chunks=[[10, 5, 15]], dtype="i4")
    a[...] = np.arange(30)
    report = verify(str(tmp_path / "a"))
    assert not report.problems


def _grid(path):
    with open(f"{path}/zarr.json") as f:
        return json.load(f)["chunk_grid"]


# (source create_array keywords, convert keywords, the destination's chunk_grid, its shards')
CONVERSIONS = {
    "to rectilinear": (dict(chunks=(8, 8)), dict(chunks=[[10, 5, 15], [7, 13]]),
                       [[10, 5, 15], [7, 13]], None),
    "spelled as text": (dict(chunks=(8, 8)), dict(chunks="[[3, 27], 5]"), [[3, 27], [[5, 4]]],
                        None),
    "to regular": (dict(chunks=[[10, 5, 15], [7, 13]]), dict(chunks=(8, 8)), [8, 8], None),
    "rectilinear kept": (dict(chunks=[[10, 5, 15], [7, 13]]), dict(compressor="none"),
                         [[10, 5, 15], [7, 13]], None),
    "to sharded": (dict(chunks=[[10, 5, 15], [7, 13]]),
                   dict(chunks=(5, 4), shards="[[10,5,15],[8,12]]"), [[10, 5, 15], [8, 12]],
                   (5, 4)),
    "shards to regular": (dict(chunks=(5, 4), shards=[[10, 5, 15], [8, 12]]),
                          dict(shards=(10, 8)), [10, 8], (5, 4)),
    "shards kept": (dict(chunks=(5, 4), shards=[[10, 5, 15], [8, 12]]), dict(memory=4000),
                    [[10, 5, 15], [8, 12]], (5, 4)),
}


@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_convert_between_regular_and_rectilinear(tmp_path, name):
    """convert rewrites regular grids as rectilinear ones and back (chunks and shards, as
    Python values or text), in blocks of whole destination objects, resumably."""
    src_kw, options, shapes, inner = CONVERSIONS[name]
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    d = np.arange(600, dtype="i4").reshape(30, 20)
    zarrcore.create_array(src, shape=(30, 20), dtype="i4", fill_value=-1, **src_kw)[...] = d
    convert(src, dst, memory=options.pop("memory", "64MiB"), **options)
    b = zarrcore.open_array(dst, mode="r")
    np.testing.assert_array_equal(b[...], d)
    grid = _grid(dst)
    got = grid["configuration"].get("chunk_shapes", grid["configuration"].get("chunk_shape"))
    assert got == shapes, grid
    assert (b.shards is not None) == (inner is not None) and (inner is None or b.chunks == inner)


def test_convert_resumes_onto_a_rectilinear_grid(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    d = np.arange(600, dtype="i4").reshape(30, 20)
    zarrcore.create_array(str(src), shape=(30, 20), chunks=(8, 8), dtype="i4")[...] = d
    chunks = [[10, 5, 15], [7, 13]]
    convert(str(src), str(dst), chunks=chunks)
    # As if cut short: the state document back, one object gone, one damaged.
    (dst / CONVERT_STATE_KEY).write_text(json.dumps({"source": "", "options": {
        "zarr_format": None, "chunks": chunks, "shards": None, "codecs": None,
        "compressor": None, "dtype": None, "dimension_names": None}}))
    (dst / "c/1/0").unlink()
    (dst / "c/2/1").write_bytes(b"xx")
    report = convert(str(src), str(dst), chunks=chunks, resume=True)
    assert report.objects_written == 2 and report.objects_kept == 4
    np.testing.assert_array_equal(zarrcore.open_array(str(dst))[...], d)


def test_cli_convert_and_info_show_the_grid(tmp_path, capsys):
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    zarrcore.create_array(src, shape=(30, 20), chunks=(8, 8), dtype="i4")[...] = 1
    assert main(["convert", src, dst, "--chunks", "[[10,5,15],[7,13]]"]) == 0
    capsys.readouterr()
    assert main(["info", dst]) == 0
    assert "((10, 5, 15), (7, 13))" in capsys.readouterr().out
    assert main(["convert", dst, str(tmp_path / "sharded"), "--chunks", "5,1",
                 "--shards", "[[10,5,15],[7,13]]"]) == 0
    assert _grid(tmp_path / "sharded")["configuration"]["chunk_shapes"] == [[10, 5, 15],
                                                                             [7, 13]]
    assert main(["convert", dst, str(tmp_path / "bad"), "--chunks", "[[10,5,15],[7"]) != 0
    assert "edge lengths" in capsys.readouterr().err


# -- compiled jobs, one per chunk shape ---------------------------------------------------------

def _runs(a, d):
    """The reads and writes of the test below on array `a` holding `d`: name -> (call,
    expected result or None)."""
    picks = np.arange(0, len(d), 3)
    return {"write": (lambda: a.__setitem__(Ellipsis, d), None),
            "write stepped": (lambda: a.__setitem__(slice(0, None, 1), d), None),
            "basic": (lambda: a[1:], d[1:]), "oindex": (lambda: a.oindex[picks], d[picks]),
            "unsorted": (lambda: a.oindex[picks[::-1]], d[picks[::-1]]),
            "vindex": (lambda: a.vindex[picks], d[picks]),
            "mask": (lambda: a.vindex[d % 3 == 0], d[d % 3 == 0])}


@pytest.mark.parametrize("kind", ["directory", "memory", "sharded"])
def test_many_chunks_run_in_compiled_jobs(tmp_path, monkeypatch, kind):
    """20,000 chunks (shards) of two lengths, 5,000 in memory: every indexing mode reads, and
    basic selections write, through one compiled job per chunk shape. On a directory a few
    hundred Python calls, not one per chunk; in memory (where keys are named in Python) as many
    as over a regular grid of as many chunks; and the codec objects never code a chunk
    (shard)."""
    def array(store, pairs):
        edges = [3, 1] * pairs
        return zarrcore.create_array(store, shape=(4 * pairs,), dtype="i4", fill_value=-1,
                                     **(dict(chunks=(1,), shards=[edges]) if kind == "sharded"
                                        else dict(chunks=[edges])))

    # Each run once on a small array first: what the first call in a process imports (numpy's
    # np.unique imports numpy.ma, some 10,000 calls) is not a per-chunk cost.
    small = {} if kind == "memory" else str(tmp_path / "small")
    for run, _ in _runs(array(small, 4), np.arange(16, dtype="i4")).values():
        run()
    # (In memory every run is profiled three times: 5,000 chunks keep the same ratio to a
    # regular grid in a quarter of the time.)
    n = 2_500 if kind == "memory" else 10_000
    d = np.arange(4 * n, dtype="i4")
    limits = dict.fromkeys(_runs(None, d), 2000)
    # Only the calling thread's calls count, and in memory its share of the chunks varies with
    # the scheduling of the pool's threads (on a free-threaded build by tens of percent): the
    # fewest of 3 runs on both sides.
    rounds = 3 if kind == "memory" else 1
    if kind == "memory":
        regular = zarrcore.create_array({}, shape=(4 * n,), chunks=(2,), dtype="i4")
        for name, (run, _) in _runs(regular, d).items():
            limits[name] = min(_python_calls(run) for _ in range(rounds)) * 1.2 + 500
    a = array({} if kind == "memory" else str(tmp_path / "a"), n)
    for name in ("read_into", "encode", "encode_unless_fill", "merge", "decode"):
        monkeypatch.setattr(CodecChain, name, lambda *args, name=name: pytest.fail(name))
    runs = _runs(a, d)
    if kind == "sharded":  # (listed reads: below)
        runs = {k: v for k, v in runs.items() if k in ("write", "write stepped", "basic")}
    for name, (run, want) in runs.items():
        got = []
        # (The fewest calls of the rounds are under the limit when any round's are.)
        assert any(_python_calls(lambda: got.append(run())) < limits[name]
                   for _ in range(rounds)), name
        if want is not None:
            np.testing.assert_array_equal(got[-1], want, err_msg=name)


@pytest.mark.parametrize("on_disk", [True, False])
def test_rectilinear_shards_read_in_shard_waves(tmp_path, monkeypatch, on_disk):
    """Listed reads of rectilinear shards (and off a directory, basic ones too) take the shard
    waves of a regular grid of shards, not shard by shard: about as many Python calls as over
    a regular grid of as many shards (the waves name each shard in Python), and the sharding
    codec never reads a shard by itself."""
    n = 500
    d = np.arange(4 * n, dtype="i4")
    arrays = {}
    for name, shards in (("regular", (2,)), ("rectilinear", [[3, 1] * n])):
        store = str(tmp_path / name) if on_disk else {}
        arrays[name] = zarrcore.create_array(store, shape=(4 * n,), chunks=(1,), shards=shards,
                                             dtype="i4", fill_value=-1)
        arrays[name][...] = d
    monkeypatch.setattr(ShardingCodec, "read_partial", lambda *a: pytest.fail("shard by shard"))
    calls = {}
    for layout, a in arrays.items():
        for name, (run, want) in _runs(a, d).items():
            if name.startswith("write") or name == "basic" and on_disk:
                continue  # (the compiled shard batch)
            got = []
            calls[layout, name] = _python_calls(lambda: got.append(run()))
            np.testing.assert_array_equal(got[0], want, err_msg=f"{layout} {name}")
    for (layout, name), count in calls.items():
        assert count < calls["regular", name] * 2 + 500, (name, count)


_LAYOUTS = st.sampled_from(["memory", "directory", "sharded", "sharded in memory"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(_EDGES, min_size=1, max_size=3), _LAYOUTS, st.booleans(), st.data())
def test_compiled_jobs_match_numpy(tmp_path_factory, edges, layout, shrink, data):
    """Every indexing mode, reads and writes, over a rectilinear grid (its last chunks cut by a
    shrinking resize or not) on each compiled route, against numpy. Shards hold inner chunks
    of 1 to 3 a side, so that shards hold different numbers of them."""
    if layout.startswith("sharded"):
        inner = tuple(data.draw(st.integers(1, 3)) for _ in edges)
        edges = [[e * k for e in axis] for axis, k in zip(edges, inner)]
        kw = dict(chunks=inner, shards=edges)
    else:
        kw = dict(chunks=edges)
    shape = tuple(sum(e) for e in edges)
    store = {} if "memory" in layout else str(tmp_path_factory.mktemp("r") / "a")
    a = zarrcore.create_array(store, shape=shape, dtype="i2", fill_value=-1, **kw)
    if shrink:
        shape = tuple(max(1, n - data.draw(st.integers(0, 3))) for n in shape)
        a.resize(shape)
    d = np.arange(int(np.prod(shape)), dtype="i2").reshape(shape)
    a[...] = d
    sl = tuple(data.draw(st.slices(n)) for n in shape)
    np.testing.assert_array_equal(a[sl], d[sl])
    idx = tuple(np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5)))
                for n in shape)
    np.testing.assert_array_equal(a.oindex[idx], d[np.ix_(*idx)])
    n = data.draw(st.integers(1, 6))
    pts = tuple(np.array(data.draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n)))
                for s in shape)
    np.testing.assert_array_equal(a.vindex[pts], d[pts])
    mask = d % 3 == 0
    np.testing.assert_array_equal(a.vindex[mask], d[mask])
    a[sl] = d[sl] = -d[sl]
    a.oindex[idx] = d[np.ix_(*idx)] = 5
    a.vindex[pts] = d[pts] = 7
    np.testing.assert_array_equal(a[...], d)


def test_point_grid_counts_only_chunks_in_the_array(tmp_path):
    """Chunks a shrink leaves beyond the array's end (2**21 a side here, 2**63 in all) do not
    count in the grid points are grouped over, nor their length in its stretch."""
    doc = _doc([[[1, 2**21]]] * 3, shape=(4, 4, 4))
    (tmp_path / "zarr.json").write_text(json.dumps(doc))
    a = zarrcore.open_array(str(tmp_path), mode="r+")
    d = np.arange(64, dtype=a.dtype).reshape(4, 4, 4)
    a[...] = d
    pts = ([3, 0, 2], [1, 3, 0], [0, 3, 2])
    np.testing.assert_array_equal(a.vindex[pts], d[pts])
    rows = ([3, 1], [0, 2], [3, 0])
    np.testing.assert_array_equal(a.oindex[rows], d[np.ix_(*rows)])


def test_native_handle_refuses_rectilinear_grids(tmp_path):
    """The native handle's C planner takes one chunk shape: it refuses the grid, naming it,
    rather than read or write chunks by the largest one."""
    for name, kw in (("a", dict(chunks=[[10, 5, 15]])),
                     ("s", dict(chunks=(5,), shards=[[10, 5, 15]]))):
        a = zarrcore.create_array(str(tmp_path / name), shape=(30,), dtype="i4", **kw)
        a[...] = np.arange(30)
        with pytest.raises(ZarrcoreError, match="'rectilinear' chunk_grid") as caught:
            a.native_handle()
        assert repr(a.name) in str(caught.value)


PEER_ROUND_TRIP = """
import zarr
zarr.config.set({"array.rectilinear_chunks": True})
result = {}
for name, path in payload.items():
    a = zarr.open_array(path, mode="r+")
    result[name] = pack(a[...])
    a[3:17, 2:9] = -5
"""


@pytest.mark.slow
def test_zarr34_reads_and_writes_converted_and_sharded(peer, tmp_path):  # noqa: F811
    """Convert output onto rectilinear grids (chunks, shards) and rectilinear shards written
    in part by the compiled batch read by zarr-python 3.4, which writes into them in turn."""
    d = np.arange(600, dtype="i4").reshape(30, 20)
    src = str(tmp_path / "src")
    zarrcore.create_array(src, shape=(30, 20), chunks=(8, 8), dtype="i4")[...] = d
    paths = {name: str(tmp_path / name) for name in ("chunks", "shards", "written")}
    convert(src, paths["chunks"], chunks=[[10, 5, 15], [7, 13]])
    convert(src, paths["shards"], chunks=(5, 4), shards="[[10,5,15],[8,12]]")
    w = zarrcore.create_array(paths["written"], shape=(30, 20), chunks=(5, 4),
                              shards=[[10, 5, 15], [8, 12]], dtype="i4", fill_value=-1)
    want = np.full((30, 20), -1, dtype="i4")
    w[4:29, 1:19] = want[4:29, 1:19] = d[4:29, 1:19]
    read = peer.run(PEER_ROUND_TRIP, paths)
    for name, path in paths.items():
        expected = want if name == "written" else d
        np.testing.assert_array_equal(unpack(read[name]), expected, err_msg=name)
        expected = expected.copy()
        expected[3:17, 2:9] = -5
        np.testing.assert_array_equal(zarrcore.open_array(path)[...], expected, err_msg=name)
