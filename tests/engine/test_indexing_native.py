"""Orthogonal, coordinate (vectorized) and mask reads through the compiled batches and waves:
against numpy on every kind of store, sharded or not, v2 and v3, both byte orders; with no
Python step per chunk."""
import tempfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zarrcore
from zarrcore import engine
from zarrcore.engine import fetched  # noqa: F401  (engine.fetched below)

from _probes import python_calls as _python_calls


@st.composite
def arrays(draw):
    """(layout, reference data): a stored array of 1-4 dims, some chunks never written."""
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, s + 1)) for s in shape)
    sharded = draw(st.booleans())
    shards = None
    if sharded:
        # Inner chunks of `chunks`, shards of 1-2 of them per axis.
        shards = tuple(c * draw(st.integers(1, 2)) for c in chunks)
    fmt = 3 if sharded else draw(st.sampled_from([2, 3]))
    dtype = np.dtype(draw(st.sampled_from(["<i4", ">i4", "<f8", ">u2", "u1"])))
    compressed = draw(st.booleans())
    layout = dict(shape=shape, chunks=chunks, shards=shards, zarr_format=fmt, dtype=dtype,
                  compressed=compressed)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    data = np.full(shape, 3, dtype=dtype)
    # Write a random box only: the chunks (and inner chunks) outside it stay missing.
    box = tuple(slice(*sorted(rng.integers(0, s + 1, 2))) for s in shape)
    data[box] = rng.integers(0, 100, data[box].shape)
    return layout, data, box


def _create(store, layout, data, box):
    kwargs = {} if layout["compressed"] else {"compressors": None}
    a = zarrcore.create_array(store, shape=layout["shape"], chunks=layout["chunks"],
                              shards=layout["shards"], zarr_format=layout["zarr_format"],
                              dtype=layout["dtype"], fill_value=3, **kwargs)
    a[box] = data[box]
    return a


@st.composite
def orthogonal(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "ints", "bools"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            sel.append(slice(draw(st.none() | st.integers(-n - 1, n + 1)),
                             draw(st.none() | st.integers(-n - 1, n + 1)),
                             draw(st.sampled_from([None, 1, 2, -1, -3]))))
        elif kind == "ints":
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), max_size=9)), dtype=np.intp))
        else:
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
    return tuple(sel)


def _numpy_orthogonal(data, sel):
    """numpy's np.ix_ reading of an orthogonal selection (ints drop their axis)."""
    axes = []
    for s, n in zip(sel, data.shape):
        if isinstance(s, slice):
            axes.append(np.arange(n)[s])
        elif isinstance(s, np.ndarray):
            axes.append(np.flatnonzero(s) if s.dtype == bool else s)
        else:
            axes.append(np.array([s]))
    out = data[np.ix_(*axes)]
    return out.reshape([len(a) for a, s in zip(axes, sel) if not isinstance(s, (int, np.integer))])


STORES = ["memory", "local"]


def _stores():
    return st.sampled_from(STORES)


@given(case=arrays(), kind=_stores(), data=st.data())
def test_orthogonal_reads_match_numpy(case, kind, data):
    layout, ref, box = case
    with tempfile.TemporaryDirectory() as tmp:
        a = _create({} if kind == "memory" else tmp, layout, ref, box)
        for _ in range(3):
            sel = data.draw(orthogonal(layout["shape"]))
            np.testing.assert_array_equal(a.oindex[sel], _numpy_orthogonal(ref, sel))


@given(case=arrays(), kind=_stores(), data=st.data())
def test_coordinate_and_mask_reads_match_numpy(case, kind, data):
    layout, ref, box = case
    shape = layout["shape"]
    with tempfile.TemporaryDirectory() as tmp:
        a = _create({} if kind == "memory" else tmp, layout, ref, box)
        npoints = data.draw(st.integers(0, 12))
        # Repeated, unsorted and negative coordinates, broadcast as a 2-d block of points.
        coords = tuple(np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=npoints,
                                                   max_size=npoints)), dtype=np.intp)
                       for n in shape)
        if npoints % 2 == 0 and npoints:
            coords = tuple(c.reshape(2, -1) for c in coords)
        np.testing.assert_array_equal(a.vindex[coords], ref[coords])
        np.testing.assert_array_equal(a.get_coordinate_selection(coords), ref[coords])
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=ref.size,
                                           max_size=ref.size))).reshape(shape)
        np.testing.assert_array_equal(a.get_mask_selection(mask), ref[mask])
        np.testing.assert_array_equal(a.vindex[mask], ref[mask])


@pytest.mark.parametrize("sharded", [False, True])
def test_many_chunks_read_without_python_per_chunk(tmp_path, sharded):
    """One-element chunks, none stored (10**6 inner chunks in 1000 shards; 2 * 10**5 chunks
    unsharded, each a file lookup): orthogonal, coordinate and mask reads make a few hundred
    Python calls (a few per shard when sharded), not one per chunk."""
    n = 10**6 if sharded else 2 * 10**5
    a = zarrcore.create_array(tmp_path, shape=(n,), chunks=(1,), dtype="i4", fill_value=7,
                              shards=(1000,) if sharded else None)
    picks = np.arange(0, n, 2)
    reads = {
        "oindex": (lambda: a.oindex[picks], n // 2),
        "oindex unsorted": (lambda: a.oindex[picks[::-1]], n // 2),
        "vindex": (lambda: a.vindex[picks], n // 2),
        "mask": (lambda: a.get_mask_selection(np.ones(n, dtype=bool)), n),
    }
    # Sharded, the fetching side takes a few Python calls per shard.
    limit = 50_000 if sharded else 500
    for name, (read, size) in reads.items():
        results = []
        calls = _python_calls(lambda: results.append(read()))
        assert calls < limit, (name, calls)
        assert results[0].shape == (size,) and (results[0] == 7).all()


def test_listed_reads_gather_in_compiled_jobs(monkeypatch, tmp_path):
    """Array selections within chunks decode once per chunk in compiled code: the codec
    objects' Python decode is never called, on a directory and in memory."""
    calls = []
    monkeypatch.setattr(engine.CodecChain, "read_into",
                        lambda *args: calls.append(args) or pytest.fail("decoded in Python"))
    ref = np.arange(30 * 20, dtype="f4").reshape(30, 20)
    for store in ({}, tmp_path):
        a = zarrcore.create_array(store, shape=ref.shape, chunks=(7, 6), dtype="f4")
        a[...] = ref
        rows, cols = [29, 3, 3, -1, 0], [5, 19, 0, 5]
        np.testing.assert_array_equal(a.oindex[rows, cols], ref[np.ix_(rows, cols)])
        np.testing.assert_array_equal(a.vindex[rows[:4], cols], ref[rows[:4], cols])
        np.testing.assert_array_equal(a[ref > 300], ref[ref > 300])
    assert not calls


def test_s3_oindex_decodes_in_waves(s3_bucket, monkeypatch):
    """An orthogonal read from S3 (moto) fetches through Store.get_many and decodes in
    compiled waves: no per-chunk decode in Python, sharded or not."""
    server, bucket = s3_bucket
    options = server.storage_options()
    ref = np.arange(40 * 30, dtype="i8").reshape(40, 30)
    waves = []

    class CountedWaves(engine.fetched.ChunkWaves):
        def run(self, tasks):
            waves.append(len(tasks))
            return super().run(tasks)

    monkeypatch.setattr(engine.fetched, "ChunkWaves", CountedWaves)
    for path, shards in (("plain", None), ("sharded", (20, 15))):
        a = zarrcore.create_array(f"s3://{bucket}/{path}", shape=ref.shape, chunks=(10, 5),
                                  shards=shards, dtype="i8", storage_options=options)
        a[...] = ref
        waves.clear()
        monkeypatch.setattr(engine.CodecChain, "read_into",
                            lambda *args: pytest.fail("decoded in Python"))
        rows, cols = [39, 0, 12, 12, -7], np.array([True, False] * 15)
        np.testing.assert_array_equal(a.oindex[rows, cols], ref[np.ix_(rows, np.flatnonzero(cols))])
        points = (np.array([3, 33, 3, -1]), np.array([29, 0, 29, 7]))
        np.testing.assert_array_equal(a.vindex[points], ref[points])
        assert sum(waves) > 0
        monkeypatch.undo()
        monkeypatch.setattr(engine.fetched, "ChunkWaves", CountedWaves)


def test_listed_piece_errors_name_the_key(tmp_path):
    """A corrupt chunk met by an orthogonal or point read raises naming its key."""
    a = zarrcore.create_array(tmp_path, shape=(20,), chunks=(5,), dtype="i4")
    a[...] = np.arange(20)
    (tmp_path / "c" / "2").write_bytes(b"garbage")
    for read in (lambda: a.oindex[[11, 10, 1]], lambda: a.vindex[[11, 10, 1]]):
        with pytest.raises(zarrcore.errors.ZarrcoreError, match="c/2"):
            read()


def test_listings_out_of_bounds_are_refused():
    """Positions outside the chunk or the output are refused before any work runs."""
    from zarrcore._native.indexing import AxisPlan
    from zarrcore._native.chunk_jobs import ChunkWaves

    spec = zarrcore.codecs.base.ChunkSpec((4,), np.dtype("i4"), 0)
    settings = engine.CodecChain([{"name": "bytes"}], spec).native_form()
    out = np.zeros(3, dtype="i4")
    i64 = np.int64

    def plan(index, out_index):
        rows = np.array([[0, 0, 0, len(index), 0, 1]], dtype=i64)
        return AxisPlan.from_rows(rows, (np.array(index, i64), np.array(out_index, i64)),
                                  np.zeros(1, bool))

    ChunkWaves(settings, (4,), (1,), [plan([3, 0, 3], [0, 1, 2])], out)  # in bounds
    with pytest.raises(ValueError):
        ChunkWaves(settings, (4,), (1,), [plan([4, 0, 3], [0, 1, 2])], out)  # past the chunk
    with pytest.raises(ValueError):
        ChunkWaves(settings, (4,), (1,), [plan([1, 0, 3], [0, 3, 2])], out)  # past the output

    def strided(out_start, count, out_step=1):
        rows = np.array([[0, 0, 1, count, out_start, out_step]], dtype=i64)
        return AxisPlan.from_rows(rows, None, np.zeros(1, bool))

    ChunkWaves(settings, (4,), (1,), [strided(1, 2)], out)  # in bounds
    for bad in (strided(2, 2), strided(-1, 1), strided(0, 2, 3), strided(0, 2, 0)):
        with pytest.raises(ValueError, match="output positions"):
            ChunkWaves(settings, (4,), (1,), [bad], out)
    points = (np.array([0, 3], i64), np.array([0, 5, 1], i64), np.arange(3, dtype=i64), None)
    job = ChunkWaves(settings, (4,), (1,), None, out, points=points)
    job.add(np.arange(4, dtype="i4").tobytes(), np.array([0], i64), np.array([0], i64),
            np.array([16], i64))
    job.run(np.array([0], i64))
    job.work_read()
    assert job.error() is not None  # in-chunk offset 5 of a 4-item chunk
    with pytest.raises(ValueError):
        ChunkWaves(settings, (4,), (1,), None, out,
                   points=(points[0], points[1], np.array([0, 1, 3], i64), None))


@pytest.mark.parametrize("store_kind, shards, compressors, selection, read, write", [
    # A directory store opened by the compiled batches.
    ("dir", None, "auto", np.s_[1:5], "CHUNK_BATCH", "CHUNK_BATCH"),
    ("dir", None, "auto", ([0, 5],), "CHUNK_BATCH", "EACH_CHUNK"),
    ("dir", (8,), "auto", np.s_[1:5], "SHARD_BATCH", "SHARD_BATCH"),
    ("dir", (8,), "auto", ([0, 5],), "SHARD_BATCH", "EACH_CHUNK"),
    ("dir", (8,), ["lz4"], np.s_[1:5], "EACH_CHUNK", "EACH_CHUNK"),
    ("dir", None, ["lz4"], np.s_[1:5], "EACH_CHUNK", "EACH_CHUNK"),
    # Stores that hand over bytes (memory here; zip, fsspec, object stores alike).
    ("memory", None, "auto", np.s_[1:5], "CHUNK_WAVES", "CHUNK_WAVES"),
    ("memory", None, "auto", ([0, 5],), "CHUNK_WAVES", "EACH_CHUNK"),
    ("memory", (8,), "auto", np.s_[1:5], "SHARD_WAVES", "EACH_CHUNK"),
    ("memory", (8,), ["lz4"], np.s_[1:5], "SHARD_WAVES", "EACH_CHUNK"),
    ("memory", (8,), ["lz4"], ([0, 5],), "EACH_CHUNK", "EACH_CHUNK"),
    ("memory", None, ["lz4"], np.s_[1:5], "FETCHED_CHUNKS", "EACH_CHUNK"),
])
def test_each_store_and_selection_kind_takes_its_planned_route(
        tmp_path, store_kind, shards, compressors, selection, read, write):
    """OpenRoutes.plan: the route of a read and of a write, by what the store can do, how the
    array is laid out and the kind of selection (docs/architecture.md §4, §5)."""
    from zarrcore.metadata.indexing import numpy_indexer

    store = str(tmp_path / "a") if store_kind == "dir" else zarrcore.MemoryStore()
    if compressors == ["lz4"]:  # a compressor the compiled core does not run
        compressors = [{"name": "numcodecs.lz4"}]
    a = zarrcore.create_array(store, shape=(16,), chunks=(4,), shards=shards, dtype="int32",
                              compressors=compressors)
    data = np.arange(16, dtype="int32")
    a[...] = data
    indexer = numpy_indexer(selection, a.shape, a.chunk_engine.chunk_shape)
    assert a.chunk_engine.routes.plan(indexer) is engine.Route[read]
    assert a.chunk_engine.routes.plan(indexer, writing=True) is engine.Route[write]
    np.testing.assert_array_equal(a[selection], data[selection])


@pytest.mark.parametrize("kind", ["memory", "directory"])
def test_small_requests_take_few_python_calls(kind, tmp_path):
    """A read or write of one chunk runs a few dozen Python calls: threads calling at once on
    a free-threaded Python contend on the objects each call touches (issue #31)."""
    a = zarrcore.create_array(zarrcore.MemoryStore() if kind == "memory" else tmp_path,
                              shape=(64, 16), chunks=(16, 16), dtype="f4", compressors=None)
    block = np.ones((16, 16), dtype="f4")
    a[...] = 1
    a[16:32] = block  # (first calls import and cache what later ones use)
    limits = {"memory": {"read": 56, "write": 63}, "directory": {"read": 36, "write": 38}}[kind]
    runs = {"read": lambda: a[16:32], "write": lambda: a.__setitem__(slice(16, 32), block)}
    for name, run in runs.items():
        run()
        calls = _python_calls(run)
        assert calls <= limits[name], (name, calls)
