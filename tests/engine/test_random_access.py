"""Random access as training loaders make it: orthogonal reads of sharded arrays on a
directory in the compiled shard batch (each inner chunk decoded once), the decoded-chunk cache
of an Array (shared with the native handle's C cache), batched reads (`Array.get_many`), and
the memory a fancy read of a sharded array holds."""
import concurrent.futures
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore import engine
from zarrcore.engine import directory  # noqa: F401  (engine.directory below)
from zarrcore.array_api import CACHE_SETTLE_SECONDS
from zarrcore.runtime.config import config
from zarrcore.errors import SelectionError, ShapeMismatchError
from zarrcore.runtime import pool
from zarrcore.metadata.indexing import OrthogonalIndexer
from zarrcore.engine.routes import OpenRoutes

from one_block import in_one_chunk, same_result

SETTLE = CACHE_SETTLE_SECONDS + 0.1  # after which files are old enough to cache


@pytest.fixture(autouse=True)
def _threads():
    saved = config.num_threads, config.cache_bytes, config.io_concurrency
    yield
    config.set(num_threads=saved[0], cache_bytes=saved[1], io_concurrency=saved[2])


@st.composite
def sharded(draw):
    """(shape, inner chunks, shards, data, stored box): a sharded array of 1-3 dims whose
    shards at the edges reach past it, some shards and inner chunks never written."""
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    shards = tuple(c * draw(st.integers(1, 3)) for c in inner)
    shape = tuple(draw(st.integers(1, 2 * s + 1)) for s in shards)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    data = np.full(shape, -1, dtype="i4")
    box = tuple(slice(*sorted(rng.integers(0, s + 1, 2))) for s in shape)
    data[box] = rng.integers(0, 1000, data[box].shape)
    return shape, inner, shards, data, box


@st.composite
def orthogonal(draw, shape):
    """One int, slice, int array (unsorted, repeated, negative) or mask per axis, with at
    least one array."""
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "ints", "ints", "bools"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            sel.append(slice(draw(st.none() | st.integers(-n, n)),
                             draw(st.none() | st.integers(-n, n)),
                             draw(st.sampled_from([None, 1, 2, -1]))))
        elif kind == "ints":
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), max_size=8)), dtype=np.intp))
        else:
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    if not any(isinstance(s, np.ndarray) for s in sel):
        sel[0] = np.array([shape[0] - 1, 0], dtype=np.intp)
    return tuple(sel)


def _numpy_orthogonal(data, sel):
    axes = [np.arange(n)[s] if isinstance(s, slice)
            else np.flatnonzero(s) if isinstance(s, np.ndarray) and s.dtype == bool
            else np.asarray(s).reshape(-1) for s, n in zip(sel, data.shape)]
    out = data[np.ix_(*axes)]
    return out.reshape([len(a) for a, s in zip(axes, sel) if not isinstance(s, (int, np.integer))])


def _make(path, shape, inner, shards, data, box, **kwargs):
    a = zarrcore.create_array(str(path), shape=shape, chunks=inner, shards=shards, dtype="i4",
                              fill_value=-1, **kwargs)
    a[box] = data[box]
    return a


@settings(max_examples=60, deadline=None)
@given(case=sharded(), cached=st.booleans(), threads=st.sampled_from([1, 3]), data=st.data())
def test_orthogonal_reads_of_shards_on_a_directory_match_numpy(case, cached, threads, data):
    """Int arrays and masks over sharded arrays on a directory take the compiled shard batch
    (listed pieces split at inner chunks), with and without a cache, on any thread count."""
    shape, inner, shards, ref, box = case
    config.set(num_threads=threads)
    with tempfile.TemporaryDirectory() as tmp:
        _make(tmp, shape, inner, shards, ref, box)
        a = zarrcore.open_array(tmp, mode="r", cache_bytes=(1 << 20) if cached else 0)
        for _ in range(3):
            sel = data.draw(orthogonal(shape))
            indexer = OrthogonalIndexer(sel, a.shape, a.chunk_engine.grid.axes)
            assert a.chunk_engine.routes.plan(indexer) is engine.Route.SHARD_BATCH
            expected = _numpy_orthogonal(ref, sel)
            np.testing.assert_array_equal(a.oindex[sel], expected)
            np.testing.assert_array_equal(a.get_orthogonal_selection(sel), expected)


def _inner_chunks(rows, cols, inner):
    return len({(r // inner[0], c // inner[1]) for r in rows for c in cols})


def test_fancy_sharded_read_decodes_each_inner_chunk_once(tmp_path):
    """Each inner chunk an orthogonal read touches is looked up (decoded) once, however many
    of its rows and columns the read picks, and repeated picks cost nothing more."""
    data = np.arange(64 * 48, dtype="i4").reshape(64, 48)
    a = zarrcore.create_array(str(tmp_path), shape=data.shape, chunks=(4, 6), shards=(16, 24),
                              dtype="i4")
    a[...] = data
    a = zarrcore.open_array(str(tmp_path), mode="r", cache_bytes=1 << 20)
    rows = np.array([63, 1, 2, 3, 2, 40, 41, 17, 1])
    cols = np.array([47, 0, 5, 7, 30, 0])
    np.testing.assert_array_equal(a.oindex[rows, cols], data[np.ix_(rows, cols)])
    # (files written just now are decoded but not kept: each lookup counts a miss)
    assert a.cache_info()["misses"] == _inner_chunks(rows, cols, (4, 6))
    assert a.cache_info()["hits"] == 0


def test_cache_serves_repeated_reads_until_a_write_changes_the_shard(tmp_path):
    data = np.arange(32 * 20, dtype="f4").reshape(32, 20)
    w = zarrcore.create_array(str(tmp_path), shape=data.shape, chunks=(1, 20), shards=(8, 20),
                              dtype="f4")
    w[...] = data
    time.sleep(SETTLE)
    a = zarrcore.open_array(str(tmp_path), mode="r", cache_bytes=1 << 20)
    picks = [3, 17, 5, 3]
    for _ in range(2):
        np.testing.assert_array_equal(a.oindex[picks], data[picks])
        np.testing.assert_array_equal(a[17], data[17])
    info = a.cache_info()
    assert info["misses"] == 3 and info["inserts"] == 3 and info["entries"] == 3
    assert info["hits"] == 1 + 3 + 1  # a[17] after the first oindex, then both again
    assert info["used"] == 3 * 20 * 4 and info["capacity"] >= 1 << 19

    # A write through this process replaces the shard file: its entries are never served.
    w[3] = -data[3]
    np.testing.assert_array_equal(a[3], -data[3])
    np.testing.assert_array_equal(a.oindex[[5, 17]], data[[5, 17]])
    # (5 shares row 3's shard, whose file changed; 17's shard did not)
    assert a.cache_info()["stale"] >= 1

    # Another process rewrites a shard: a new file identity, a miss.
    time.sleep(SETTLE)
    a.oindex[[16, 17]]
    hits = a.cache_info()["hits"]
    script = textwrap.dedent(f"""
        import numpy as np, zarrcore
        a = zarrcore.open_array({str(tmp_path)!r})
        a[16:24] = np.full((8, 20), 7, dtype="f4")
    """)
    subprocess.run([sys.executable, "-c", script], check=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    np.testing.assert_array_equal(a.oindex[[16, 17]], np.full((2, 20), 7, dtype="f4"))
    assert a.cache_info()["hits"] == hits


def test_unsharded_chunks_are_cached_too(tmp_path):
    data = np.arange(10 * 6, dtype="i2").reshape(10, 6)
    zarrcore.create_array(str(tmp_path), shape=data.shape, chunks=(1, 6), dtype="i2")[...] = data
    time.sleep(SETTLE)
    a = zarrcore.open_array(str(tmp_path), mode="r", cache_bytes=1 << 16)
    for _ in range(3):
        np.testing.assert_array_equal(a.oindex[[4, 9, 4]], data[[4, 9, 4]])
    assert a.cache_info()["inserts"] == 2 and a.cache_info()["hits"] >= 4


def test_cache_settings(tmp_path):
    zarrcore.create_array(str(tmp_path), shape=(8, 8), chunks=(2, 8), dtype="f8")
    assert zarrcore.open_array(str(tmp_path)).cache_info()["capacity"] == 0
    config.set(cache_bytes=1 << 16)
    a = zarrcore.open_array(str(tmp_path))
    assert a.cache_info()["capacity"] == 1 << 16
    assert "cache_bytes" not in a.config  # (zarrcore.config's: not the array's own)
    assert a.with_config({"cache_bytes": 0}).cache_info()["capacity"] == 0
    b = zarrcore.open_array(str(tmp_path), cache_bytes=4096)
    assert b.config["cache_bytes"] == 4096 and b.cache_info()["capacity"] == 4096
    assert pickle.loads(pickle.dumps(b)).cache_info()["capacity"] == 4096
    for bad in (-1, 1.5, True, "1", 2**63, 2**64):
        with pytest.raises(ValueError, match="cache_bytes"):
            zarrcore.open_array(str(tmp_path), cache_bytes=bad)
        with pytest.raises(ValueError, match="cache_bytes"):
            config.set(cache_bytes=bad)
    assert zarrcore.open_array(str(tmp_path), cache_bytes=np.int64(4096)).config[
        "cache_bytes"] == 4096


def test_a_cache_budget_holding_no_chunk_follows_one_rule(tmp_path):
    """An array's own budget, like a native handle's, must hold one (inner) chunk: 128 bytes
    here; zarrcore.config's, for every array, leaves those whose chunks it cannot hold
    uncached."""
    zarrcore.create_array(str(tmp_path / "a"), shape=(8, 8), chunks=(2, 8), dtype="f8")
    zarrcore.create_array(str(tmp_path / "s"), shape=(8, 8), chunks=(2, 8), shards=(4, 8),
                          dtype="f8")
    for name in ("a", "s"):
        for make in (lambda b: zarrcore.open_array(str(tmp_path / name), cache_bytes=b),
                     lambda b: zarrcore.open_array(str(tmp_path / name)).native_handle(b)):
            with pytest.raises(ValueError, match="cache_bytes must be 0 .* at least one "
                                                 r"(inner )?chunk of 128 bytes, not 64"):
                make(64)
            make(128)
        with pytest.raises(ValueError, match="cache_bytes"):
            zarrcore.open_array(str(tmp_path / name)).with_config({"cache_bytes": 127})
    config.set(cache_bytes=64)
    assert zarrcore.open_array(str(tmp_path / "a")).cache_info()["capacity"] == 0
    config.set(cache_bytes=128)
    assert zarrcore.open_array(str(tmp_path / "a")).cache_info()["capacity"] == 128


@pytest.mark.parametrize("value,message", [
    ("-5", "ZARRCORE_CACHE_BYTES must be an integer >= 0"),
    (str(2**64), "ZARRCORE_CACHE_BYTES must be from 0"), ("lots", "ZARRCORE_CACHE_BYTES")])
def test_the_cache_environment_variable_is_checked_as_the_setting_is(value, message):
    run = subprocess.run([sys.executable, "-c", "import zarrcore"], capture_output=True,
                         text=True, timeout=120, env={
                             **os.environ, "ZARRCORE_CACHE_BYTES": value, "PYTHONPATH":
                             os.path.dirname(os.path.dirname(zarrcore.__file__))})
    assert run.returncode != 0 and "ValueError" in run.stderr and message in run.stderr, \
        run.stderr[-2000:]


def test_memory_stores_over_a_dict_read_without_a_cache():
    """A MemoryStore over a dict passed in gives no version of its values: never cached."""
    a = zarrcore.create_array(zarrcore.MemoryStore({}), shape=(4,), chunks=(2,), dtype="i4",
                              config={"cache_bytes": 1 << 20})
    a[...] = [1, 2, 3, 4]
    np.testing.assert_array_equal(a.oindex[[3, 0]], [4, 1])
    np.testing.assert_array_equal(a.oindex[[3, 0]], [4, 1])
    assert a.cache_info() == dict.fromkeys(a.cache_info(), 0)


@pytest.mark.parametrize("shards", [None, (8, 6)])
def test_memory_store_cache_serves_until_a_write_changes_the_object(shards):
    """A MemoryStore's own data is cached by its blobs' versions (no settling time): repeated
    reads hit, and a write through this Array, another Array on the same store object or
    the store itself makes the next read miss and return the new data."""
    store = zarrcore.MemoryStore()
    data = np.arange(16 * 12, dtype="i4").reshape(16, 12)
    w = zarrcore.create_array(store, name="m", shape=data.shape, chunks=(2, 6), shards=shards,
                              dtype="i4", fill_value=-1, config={"cache_bytes": 1 << 20})
    w[...] = data
    a = zarrcore.open_array(store, path="m", cache_bytes=1 << 20)
    rows = [3, 9, 3, 0]
    np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    first = a.cache_info()
    assert first["misses"] == first["inserts"] == 3 * 2 and first["hits"] == 0
    np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    np.testing.assert_array_equal(a[2:4], data[2:4])
    info = a.cache_info()
    assert info["hits"] == 3 * 2 + 2 and info["misses"] == first["misses"]

    # Through this Array: its own entries are not served.
    a[3, :4] = -5
    data[3, :4] = -5
    np.testing.assert_array_equal(a[2:4], data[2:4])
    # Through another Array on the same store object.
    w[9] = 99
    data[9] = 99
    np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    # Through the store: a chunk (shard) replaced by its own earlier bytes is a new blob too.
    key = "m/c/0/0"
    old = store.get(key)
    w[0:2, 0:6] = 7
    np.testing.assert_array_equal(a[0:2, 0:6], 7)
    store.set(key, old)
    np.testing.assert_array_equal(a[0:2], data[0:2])
    assert a.cache_info()["stale"] >= 4
    # Deleted (all fill, not stored): read as fill.
    w[8:10] = -1
    data[8:10] = -1
    np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    np.testing.assert_array_equal(a[...], data)


def test_memory_store_cache_evicts_within_its_budget():
    store = zarrcore.MemoryStore()
    data = np.arange(20 * 10, dtype="f8").reshape(20, 10)
    zarrcore.create_array(store, shape=data.shape, chunks=(1, 10), dtype="f8")[...] = data
    a = zarrcore.open_array(store, cache_bytes=3 * 10 * 8)  # three chunks
    for _ in range(2):
        for row in range(6):
            np.testing.assert_array_equal(a[row], data[row])
    info = a.cache_info()
    assert info["entries"] == 3 and info["used"] == 3 * 80 and info["capacity"] == 3 * 80
    # (the budget is the whole cache's; which entry goes first is each part's own LRU)
    assert info["hits"] + info["misses"] == 12 and info["inserts"] == info["misses"] >= 9
    assert info["evictions"] == info["inserts"] - 3
    for _ in range(3):
        np.testing.assert_array_equal(a[5], data[5])
    assert a.cache_info()["hits"] - info["hits"] >= 2


@settings(max_examples=40, deadline=None)
@given(case=sharded(), sharded_layout=st.booleans(), data=st.data())
def test_memory_store_cached_reads_and_writes_match_numpy(case, sharded_layout, data):
    """Reads and writes of a cached MemoryStore array (the compiled batches over its blobs)
    match numpy, read twice (the second from the cache), after partial writes too."""
    shape, inner, shards, ref, box = case
    store = zarrcore.MemoryStore()
    a = zarrcore.create_array(store, shape=shape, chunks=inner,
                              shards=shards if sharded_layout else None, dtype="i4",
                              fill_value=-1, config={"cache_bytes": 1 << 16})
    a[box] = ref[box]
    for _ in range(2):
        sel = data.draw(orthogonal(shape))
        for _ in range(2):
            np.testing.assert_array_equal(a.oindex[sel], _numpy_orthogonal(ref, sel))
        np.testing.assert_array_equal(a[...], ref)
        part = tuple(slice(0, max(1, n // 2)) for n in shape)
        ref[part] += 1
        a[part] = ref[part]


@st.composite
def sample_lists(draw, shape):
    n = draw(st.integers(1, 6))
    rest = draw(st.sampled_from([(), (slice(1, 4),), (Ellipsis,), (2,)]))
    return [(draw(st.integers(-shape[0], shape[0] - 1)), *rest) for _ in range(n)]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), sharded_layout=st.booleans(), kind=st.sampled_from(["dir", "memory"]))
def test_get_many_matches_numpy(tmp_path_factory, data, sharded_layout, kind):
    ref = np.arange(9 * 5 * 4, dtype="u2").reshape(9, 5, 4)
    store = zarrcore.MemoryStore() if kind == "memory" else str(tmp_path_factory.mktemp("a"))
    a = zarrcore.create_array(store, shape=ref.shape, chunks=(1, 5, 4),
                              shards=(3, 5, 4) if sharded_layout else None, dtype="u2")
    a[...] = ref
    samples = data.draw(sample_lists(ref.shape))
    got = a.get_many(samples)
    assert isinstance(got, list) and len(got) == len(samples)
    for g, s in zip(got, samples):
        np.testing.assert_array_equal(g, ref[s])
    out = np.zeros((len(samples),) + ref[samples[0]].shape, dtype="u2")
    assert a.get_many(samples, out=out) is out
    np.testing.assert_array_equal(out, np.stack([ref[s] for s in samples]))
    # Selections of other shapes: each read as a[selection], concurrently.
    mixed = [s[:1] + (slice(0, k + 1),) for k, s in enumerate(samples)] + [np.s_[1:3, ::2]]
    outs = [np.empty(ref[s].shape, dtype="u2") for s in mixed]
    assert a.get_many(mixed, out=outs) is outs
    for o, s in zip(outs, mixed):
        np.testing.assert_array_equal(o, ref[s])


def test_get_many_refuses_bad_selections_and_outputs(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(6, 3), chunks=(1, 3), dtype="i4")
    assert a.get_many([]) == []
    with pytest.raises(SelectionError):
        a.get_many([0, 6])
    with pytest.raises(ShapeMismatchError):
        a.get_many([0, 1], out=np.empty((3, 3), dtype="i4"))
    with pytest.raises(ShapeMismatchError):
        a.get_many([0, 1], out=[np.empty(3, dtype="i4"), np.empty(2, dtype="i4")])
    with pytest.raises(ShapeMismatchError):
        a.get_many([0, np.s_[1:3]], out=[np.empty(3, dtype="i4")])


@pytest.mark.parametrize("huge", [2**63, np.uint64(2**63), np.uint64(2**64 - 1), 2**64,
                                  -2**63 - 1, 2**100])
def test_get_many_with_an_index_beyond_int64_raises_numpys_index_error(tmp_path, huge):
    """An IndexError, as numpy gives for np.uint64(2**63) (for the Python int, an
    OverflowError), not an OverflowError from the conversion to int64."""
    a = zarrcore.create_array(str(tmp_path), shape=(6, 3), chunks=(1, 3), dtype="i4")
    for selections in ([huge], [0, huge], [(huge, slice(None))], [huge, np.s_[1:3]]):
        with pytest.raises(IndexError, match="out of bounds"):
            a.get_many(selections)


def test_a_uint64_index_array_of_2_63_is_out_of_bounds_as_itself(tmp_path):
    """2**63 in a uint64 index array is named as itself, not wrapped to -2**63 (numpy < 2
    compares a uint64 with a Python int as float64, in which 2**63 - 1 is 2**63)."""
    a = zarrcore.create_array(str(tmp_path), shape=(6, 3), chunks=(1, 3), dtype="i4")
    for index in (np.array([2**63], dtype=np.uint64), np.array([0, 2**63], dtype=np.uint64)):
        with pytest.raises(IndexError, match="index 9223372036854775808 is out of bounds"):
            a[index]


@pytest.mark.parametrize("read", ["getitem", "oindex", "vindex", "coordinate", "get_many"])
def test_uint64_index_arrays_past_int64_are_out_of_bounds_not_wrapped(tmp_path, read):
    """2**64 - 1 cast to int64 is -1: numpy 2.4 reads the last row for it; zarrcore calls it
    out of bounds, as it calls the same index given as a scalar."""
    a = zarrcore.create_array(str(tmp_path), shape=(6, 3), chunks=(1, 3), dtype="i4")
    a[...] = np.arange(18).reshape(6, 3)
    index = np.array([2**64 - 1], dtype=np.uint64)
    call = {"getitem": lambda: a[index], "oindex": lambda: a.oindex[index, :],
            "vindex": lambda: a.vindex[index, index], "coordinate":
            lambda: a.get_coordinate_selection((index, [0])),
            "get_many": lambda: a.get_many([(index, slice(None))])}[read]
    with pytest.raises(IndexError, match="out of bounds"):
        call()


_PEAK_SCRIPT = """
import resource, sys
import numpy as np, zarrcore
zarrcore.config.set(num_threads=2)
a = zarrcore.open_array(sys.argv[1], mode="r")
rng = np.random.default_rng(0)
points = tuple(rng.integers(0, n, 200_000) for n in a.shape)
a.vindex[points[0][:10], points[1][:10]]  # (threads, pools and code paged in)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
got = a.{read}
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024, got.nbytes)
"""


@pytest.mark.parametrize("read", ["vindex[points]", "oindex[np.unique(points[0])[::7], :]"])
def test_fancy_sharded_reads_hold_about_a_shard_per_thread(tmp_path, read):
    """Peak memory of a fancy read touching every shard of an array: the output plus about
    one shard per thread, not the shards it touches (16 shards of 4 MiB here; the points'
    grouping takes about 3 more)."""
    shape, shard = (4096, 4096), (1024, 1024)
    a = zarrcore.create_array(str(tmp_path), shape=shape, chunks=(256, 256), shards=shard,
                              dtype="f4", compressors=None)
    a[...] = np.random.default_rng(1).random(shape, dtype="f4")
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT.format(read=read), str(tmp_path)],
                          check=True, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    grown, output = map(int, done.stdout.split())
    shard_bytes = 1024 * 1024 * 4
    assert grown <= output + 7 * shard_bytes, (grown, output)


def test_a_pickled_array_reads_without_its_metadata(tmp_path):
    """Workers spawned (or fed by a forkserver) get the array pickled with its metadata: their
    first read reads only chunks, never the metadata document again."""
    a = zarrcore.create_array(str(tmp_path), shape=(8, 4), chunks=(2, 4), dtype="i4",
                              config={"cache_bytes": 1 << 12})
    a[...] = np.arange(32).reshape(8, 4)
    shipped = pickle.dumps(a)
    os.remove(tmp_path / "zarr.json")
    b = pickle.loads(shipped)
    np.testing.assert_array_equal(b.get_many([3, 0]), [[12, 13, 14, 15], [0, 1, 2, 3]])
    assert b.cache_info()["capacity"] == 1 << 12


@pytest.mark.parametrize("selection", [3, -1, np.int64(2), (4,), (0, slice(1, 3)),
                                       (np.uint8(5), slice(None, None, -1), slice(2, None))])
def test_sample_reads_match_numpy(tmp_path, selection):
    """`a[i]` and `a[i, slices...]` (the planner's shortcut for samples) as numpy reads them."""
    ref = np.arange(6 * 5 * 4, dtype="i8").reshape(6, 5, 4)
    a = zarrcore.create_array(str(tmp_path), shape=ref.shape, chunks=(1, 2, 4), dtype="i8")
    a[...] = ref
    np.testing.assert_array_equal(a[selection], ref[selection])
    np.testing.assert_array_equal(a.oindex[selection], ref[selection])
    a[selection] = -ref[selection]
    np.testing.assert_array_equal(a[...][selection], -ref[selection])


def test_sample_reads_of_one_axis_and_out_of_bounds(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(5,), chunks=(2,), dtype="i4")
    a[...] = np.arange(5)
    assert a[3] == 3 and a[-5] == 0 and np.ndim(a[3]) == 0
    for bad in (5, -6, (5, slice(None))):
        with pytest.raises(SelectionError):
            a[bad]


def test_cached_inner_chunks_serve_listed_picks(tmp_path):
    """Inner chunks served from the cache gather listed, unsorted and repeated picks as
    decoded ones do, beside a shard that is not stored."""
    data = np.arange(40 * 36, dtype="f8").reshape(40, 36)
    w = zarrcore.create_array(str(tmp_path), shape=data.shape, chunks=(4, 3), shards=(20, 36),
                              dtype="f8")
    w[...] = data
    w[20:] = 0  # (a shard of fill: not stored)
    data[20:] = 0
    time.sleep(SETTLE)
    a = zarrcore.open_array(str(tmp_path), mode="r", cache_bytes=1 << 22)
    rows = np.array([3, 1, 2, 1, 39, 22, 7])
    for cols in (np.array([5, 3, 4, 35]), np.arange(36)[::-1]):
        for _ in range(2):
            np.testing.assert_array_equal(a.oindex[rows, cols], data[np.ix_(rows, cols)])
    assert a.cache_info()["hits"] > 0


@st.composite
def points_in(draw, shape):
    """A tuple of int arrays (negative ones too), one point per row, up to 40 points."""
    n = draw(st.integers(1, 40))
    return tuple(np.array(draw(st.lists(st.integers(-s, s - 1), min_size=n, max_size=n)),
                          dtype=np.intp) for s in shape)


@pytest.mark.parametrize("kind", ["dir", "memory", "zip"])
def test_point_reads_of_shards_start_no_threads(tmp_path, kind, monkeypatch):
    """vindex on a sharded array fetches its waves on the shared pools (config.executor,
    config.io_executor): many reads construct no thread pool and start no threads beyond
    those pools', and match numpy."""
    config.set(num_threads=3, io_concurrency=4)
    ref = np.arange(24 * 30, dtype="i4").reshape(24, 30)
    store = {"memory": zarrcore.MemoryStore(), "dir": str(tmp_path),
             "zip": zarrcore.ZipStore(str(tmp_path / "a.zip"), mode="w")}[kind]
    a = zarrcore.create_array(store, shape=ref.shape, chunks=(2, 5), shards=(6, 10),
                              dtype="i4")
    a[...] = ref
    # Every thread of the shared pool started, then the count is the baseline.
    started, release = threading.Barrier(4), threading.Event()
    waits = [config.executor().submit(lambda: (started.wait(), release.wait()))
             for _ in range(3)]
    started.wait()
    release.set()
    for w in waits:
        w.result()
    config.io_executor()  # (made once, at the first fetch of a process)
    # A caller of run_workers whose pool threads have not started within WAIT_SLICE starts a
    # thread of its own: on a loaded machine (another test process, pytest -n) an idle pool's
    # threads can be that slow to wake. Here the pool is idle, so its threads must take the work.
    monkeypatch.setattr(pool, "WAIT_SLICE", 30.0)
    made = []
    real_init = concurrent.futures.ThreadPoolExecutor.__init__

    def counted(self, *args, **kwargs):
        made.append(args)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "__init__", counted)
    names = []
    real_start = threading.Thread.start

    def recorded(self):
        names.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", recorded)
    baseline = threading.active_count()

    @settings(max_examples=40, deadline=None)
    @given(points=points_in(ref.shape))
    def reads(points):
        np.testing.assert_array_equal(a.vindex[points], ref[points])

    reads()
    rng = np.random.default_rng(0)
    for _ in range(20):  # (points in every shard: a wave per few shards)
        points = (rng.integers(0, 24, 300), rng.integers(0, 30, 300))
        np.testing.assert_array_equal(a.vindex[points], ref[points])
    assert made == []
    # (only the I/O pool may have grown, to its io_concurrency threads)
    assert all(name.startswith("zarrcore-io") for name in names) and len(names) <= 4, names
    assert threading.active_count() <= baseline + 4


def test_zip_store_cache_serves_until_a_write_changes_the_member(tmp_path):
    """Chunks of a zip are cached by the member they were read from (the zip's opening, the
    member's place, sizes and CRC): repeated reads hit, a write through this process (this
    Array or another on the same store object) appends a member, read fresh."""
    path = str(tmp_path / "a.zip")
    data = np.arange(12 * 8, dtype="i4").reshape(12, 8)
    store = zarrcore.ZipStore(path, mode="w")
    w = zarrcore.create_array(store, shape=data.shape, chunks=(2, 8), dtype="i4",
                              fill_value=-1)
    w[...] = data
    a = zarrcore.open_array(store, cache_bytes=1 << 16)
    rows = [5, 0, 5, 11]
    for _ in range(3):
        np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    info = a.cache_info()
    assert info["misses"] == info["inserts"] == 3 and info["hits"] == 6
    a[4, :3] = 70  # (chunk 2: read, merged and appended again)
    data[4, :3] = 70
    w[0] = 71
    data[0] = 71
    for _ in range(2):
        np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    assert a.cache_info()["stale"] == 2
    store.close()
    # Opened again (read only): every version is new, none served stale.
    b = zarrcore.open_array(zarrcore.ZipStore(path, mode="r"), cache_bytes=3 * 8 * 2 * 4)
    for _ in range(2):
        np.testing.assert_array_equal(b[...], data)
    info = b.cache_info()
    assert info["entries"] == 3 and info["evictions"] == info["inserts"] - 3


def test_object_store_cache_revalidates_each_hit(s3_bucket, monkeypatch):
    """Chunks on S3 are cached by their ETags: a repeated read asks a HEAD for the ETag (no
    body, nothing decoded) and copies out of the entry; an object overwritten from outside
    (another store, as another process would) is never served stale."""
    server, bucket = s3_bucket
    options = server.storage_options()
    url = f"s3://{bucket}/c.zarr"
    data = np.arange(10 * 6, dtype="f8").reshape(10, 6)
    zarrcore.create_array(url, shape=data.shape, chunks=(2, 6), dtype="f8",
                          storage_options=options)[...] = data
    a = zarrcore.open_array(url, mode="r", storage_options=options, cache_bytes=1 << 16)
    from zarrcore.storage import objectstore

    asked = []
    real_get, real_etag = objectstore.ObjectStore._get, objectstore.ObjectStore._etag

    def counted_get(self, key, *args, **kwargs):
        asked.append("GET")
        return real_get(self, key, *args, **kwargs)

    def counted_head(self, key):
        asked.append("HEAD")
        return real_etag(self, key)

    monkeypatch.setattr(objectstore.ObjectStore, "_get", counted_get)
    monkeypatch.setattr(objectstore.ObjectStore, "_etag", counted_head)
    rows = [1, 7, 1]
    np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    assert a.cache_info()["misses"] == 2 and asked == ["GET", "GET"]
    asked.clear()
    for _ in range(2):
        np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    assert a.cache_info()["hits"] == 4 and a.cache_info()["inserts"] == 2
    assert asked == ["HEAD"] * 4

    # Overwritten from outside: new bytes, then the first bytes again (the same ETag).
    other = zarrcore.open_array(url, mode="r+", storage_options=options)
    other[0:2] = -1
    np.testing.assert_array_equal(a[0:2], -np.ones((2, 6)))
    other[0:2] = data[0:2]
    np.testing.assert_array_equal(a[0:2], data[0:2])
    other[6:8] = 5
    data[6:8] = 5
    np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    # Another process.
    np.testing.assert_array_equal(a[2:4], data[2:4])
    script = textwrap.dedent(f"""
        import numpy as np, zarrcore
        a = zarrcore.open_array({url!r}, mode="r+", storage_options={options!r})
        a[2:4] = np.full((2, 6), 9.0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    data[2:4] = 9
    np.testing.assert_array_equal(a[...], data)
    assert a.cache_info()["stale"] >= 3


@pytest.mark.parametrize("layout", ["chunks", "shards"])
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=sharded(), data=st.data())
def test_zip_store_cached_reads_match_numpy(tmp_path_factory, layout, case, data):
    """Basic, orthogonal and point reads of a cached zip (chunks, or shards' inner chunks,
    through ChunkWaves and the cache) match numpy, read twice (the second from the cache)
    and after a write."""
    shape, inner, shards, ref, box = case
    store = zarrcore.ZipStore(str(tmp_path_factory.mktemp("z") / "a.zip"), mode="w")
    a = zarrcore.create_array(store, shape=shape, chunks=inner, dtype="i4", fill_value=-1,
                              shards=shards if layout == "shards" else None,
                              config={"cache_bytes": 1 << 16})
    a[box] = ref[box]
    for _ in range(2):
        sel = data.draw(orthogonal(shape))
        points = data.draw(points_in(shape))
        for _ in range(2):
            np.testing.assert_array_equal(a.oindex[sel], _numpy_orthogonal(ref, sel))
            np.testing.assert_array_equal(a.vindex[points], ref[points])
            np.testing.assert_array_equal(a[box], ref[box])
        part = tuple(slice(0, max(1, n // 2)) for n in shape)
        ref[part] += 1
        a[part] = ref[part]
    store.close()


DELTA = [{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}}]  # (not compiled)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=sharded(), kind=st.sampled_from(["dir", "memory"]), layout=st.sampled_from(
    ["chunks", "shards", "filtered"]), data=st.data())
def test_every_read_road_puts_unsorted_picks_in_place(tmp_path_factory, case, kind, layout,
                                                      data):
    """Unsorted, repeated int arrays and points land in the result's order on every route:
    the compiled ones decode straight into the result (or the caller's `out`), the codec
    objects' ones into a buffer put in order after."""
    shape, inner, shards, ref, box = case
    store = zarrcore.MemoryStore() if kind == "memory" else str(tmp_path_factory.mktemp("a"))
    a = zarrcore.create_array(store, shape=shape, chunks=inner, dtype="i4", fill_value=-1,
                              shards=shards if layout == "shards" else None,
                              filters=DELTA if layout == "filtered" else None)
    a[box] = ref[box]
    sel = data.draw(orthogonal(shape))
    points = data.draw(points_in(shape))
    expected = _numpy_orthogonal(ref, sel)
    np.testing.assert_array_equal(a.oindex[sel], expected)
    out = np.full(expected.shape, 7, dtype="i4")
    assert a.get_orthogonal_selection(sel, out=out) is out
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(a.vindex[points], ref[points])
    out = np.full(ref[points].shape, 7, dtype="i4")
    assert a.get_coordinate_selection(points, out=out) is out
    np.testing.assert_array_equal(out, ref[points])


def test_unsorted_picks_decode_into_their_places(tmp_path):
    """A batch of unsorted samples takes no buffer to reorder: chunks decode into the
    result at the samples' places, and `out` is filled in place."""
    a = zarrcore.create_array(str(tmp_path), shape=(16, 4, 4), chunks=(1, 4, 4), dtype="i4")
    ref = np.arange(a.size, dtype="i4").reshape(a.shape)
    a[...] = ref
    picks = np.array([9, 2, 14, 2, 0])
    indexer = OrthogonalIndexer((picks,), a.shape, a.chunk_engine.grid.axes)
    assert indexer.permuted
    plan = indexer.result_plans[0]
    # Chunks 0, 9 and 14 decode into samples 4, 0 and 2; chunk 2 (twice) is listed.
    assert plan.rows[:, [0, 2, 4]].tolist() == [[0, 1, 4], [2, 0, 0], [9, 1, 0], [14, 1, 2]]
    assert plan.listed[1].tolist() == [1, 3]
    out = np.zeros((5, 4, 4), dtype="i4")
    assert a.get_orthogonal_selection(picks, out=out) is out
    np.testing.assert_array_equal(out, ref[picks])


def test_batches_of_large_chunk_files_are_asked_for_ahead(tmp_path, monkeypatch):
    """A batch of large chunks, or of inner chunks from several shards, on a directory also
    has its files asked for by helpers on the I/O pool (`reads_ahead`), and reads right;
    small chunks, points, one shard and cached reads have none."""
    asked = []
    io = config.io_executor()

    class Counting:
        def submit(self, fn, *args):
            asked.append(getattr(fn, "__name__", ""))
            return io.submit(fn, *args)

    monkeypatch.setattr(config, "io_executor", lambda: Counting())
    ref = np.arange(12 * 128 * 128, dtype="f4").reshape(12, 128, 128)  # 64 KiB chunks
    big = zarrcore.create_array(str(tmp_path / "big"), shape=ref.shape, chunks=(1, 128, 128),
                                dtype="f4")
    small = zarrcore.create_array(str(tmp_path / "small"), shape=ref.shape,
                                  chunks=(1, 16, 128), dtype="f4")
    big[...] = small[...] = ref
    picks = np.array([7, 1, 11, 1, 4])
    sharded = zarrcore.create_array(str(tmp_path / "sharded"), shape=ref.shape,
                                    chunks=(1, 128, 128), shards=(4, 128, 128), dtype="f4")
    sharded[...] = ref
    np.testing.assert_array_equal(big.oindex[picks], ref[picks])
    np.testing.assert_array_equal(sharded.oindex[picks], ref[picks])
    assert asked.count("work_read_ahead") == 2 * min(engine.directory.READ_AHEAD_HELPERS, 3)
    asked.clear()
    np.testing.assert_array_equal(sharded.oindex[[1, 2, 3]], ref[[1, 2, 3]])  # one shard
    np.testing.assert_array_equal(small.oindex[picks], ref[picks])
    points = (picks, picks + 3, picks)
    np.testing.assert_array_equal(big.vindex[points], ref[points])
    cached = zarrcore.open_array(str(tmp_path / "big"), mode="r", cache_bytes=1 << 22)
    np.testing.assert_array_equal(cached.oindex[picks], ref[picks])
    np.testing.assert_array_equal(big[3], ref[3])
    assert "work_read_ahead" not in asked


def test_http_object_stores_are_not_cached(http_server):
    """An HTTP server's ETags (a file's size and modification second, often) may come back
    for other bytes: such a store gives no versions, and arrays on it keep no cache."""
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    data = np.arange(12, dtype="i4")
    zarrcore.create_array(f"{http_server.root}/nc.zarr", shape=(12,), chunks=(4,),
                          dtype="i4")[...] = data
    a = zarrcore.open_array(f"{http_server.url}/nc.zarr", mode="r", cache_bytes=1 << 16)
    assert not a.store.versioned_reads
    for _ in range(2):
        np.testing.assert_array_equal(a[...], data)
    assert a.cache_info() == dict.fromkeys(a.cache_info(), 0)


@st.composite
def one_chunk_case(draw):
    """(array settings, reference data, stored chunk coordinates) of a small array, sharded
    or not, v2 or v3, C or F order, some of its chunks never written."""
    ndim = draw(st.integers(1, 3))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    sharded_layout = draw(st.booleans())
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks) if sharded_layout else None
    shape = tuple(draw(st.integers(1, 3 * c + 1)) for c in shards or chunks)
    dtype = draw(st.sampled_from(["<f4", ">f8", "<i8", ">i2", "u1", "|b1", "<c8", "<M8[s]",
                                  [("a", "<i4"), ("b", ">f4")]]))
    zarr_format = 3 if sharded_layout else draw(st.sampled_from([2, 3]))
    order = draw(st.sampled_from(["C", "F"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    ref = np.zeros(shape, dtype=dtype)
    raw = ref.view(np.uint8).reshape(-1)
    raw[...] = rng.integers(0, 256, raw.shape, dtype=np.uint8)
    if ref.dtype == bool:
        ref = rng.integers(0, 2, shape).astype(bool)
    elif ref.dtype.kind in "fc":
        ref = rng.standard_normal(shape).astype(dtype)
    settings_ = dict(shape=shape, chunks=chunks, shards=shards, dtype=dtype,
                     zarr_format=zarr_format, order=order)
    return settings_, ref


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=one_chunk_case(), cached=st.booleans(), memory=st.booleans(), data=st.data())
def test_one_chunk_reads_take_the_compiled_road_and_match_numpy(tmp_path_factory, case, cached,
                                                                 memory, data):
    """`a[sel]` in one chunk (inner chunk) reads by R0 (ChunkEngine.read_selection, with no
    planning) exactly what numpy and the planned routes give, missing chunks as the fill
    value; writes between reads are seen, with or without the decoded-chunk cache, on a
    directory and on a MemoryStore's own data (which the compiled jobs read when cached)."""
    kw, ref = case
    memory = memory and cached
    path = zarrcore.MemoryStore() if memory else str(tmp_path_factory.mktemp("one"))
    order = kw.pop("order")
    options = {"cache_bytes": 1 << 16 if cached else 0}
    if kw["zarr_format"] == 3:
        options["order"] = order  # (v3 arrays keep the order of reads in their config)
    else:
        kw["order"] = order
    a = zarrcore.create_array(path, fill_value=ref.flat[0], config=options, **kw)
    ref = ref.astype(a.dtype)  # (v3 data types have no byte order)
    ref = np.full(ref.shape, ref.flat[0], dtype=ref.dtype) if data.draw(st.booleans()) else ref
    block = kw["chunks"]
    stored = tuple(slice(0, data.draw(st.integers(0, n))) for n in ref.shape)
    a[stored] = ref[stored]  # (chunks past `stored` are never written)
    want_all = np.full(ref.shape, ref.flat[0], dtype=ref.dtype)
    want_all[stored] = ref[stored]
    core = a.chunk_engine.core_settings is not None  # (structured items: the codec objects)
    for _ in range(3):
        sel = data.draw(in_one_chunk(ref.shape, block))
        with pytest.MonkeyPatch.context() as mp:
            if core:
                mp.setattr(OpenRoutes, "plan", _unplanned)
            got = a[sel]
        same_result(got, want_all[sel], order)
        same_result(a.get_basic_selection(sel), want_all[sel], order)
        # A write between reads is seen by the next read of the same chunk.
        new = np.asarray(want_all[sel]).copy()
        new[...] = ref.flat[-1]
        a[sel] = new
        want_all[sel] = new
        with pytest.MonkeyPatch.context() as mp:
            if core:
                mp.setattr(OpenRoutes, "plan", _unplanned)
            same_result(a[sel], want_all[sel], order)


def _unplanned(*args, **kwargs):
    raise AssertionError("a one-chunk read was planned: it did not take R0")


@pytest.mark.parametrize("shards", [None, (4, 6)])
def test_one_chunk_road_leaves_other_selections_to_the_planner(tmp_path, shards):
    """Selections R0 does not take (several chunks, negative steps, empty, out of bounds,
    fields, missing chunks that must raise) go to the planned routes, errors included."""
    ref = np.arange(12 * 6, dtype="i4").reshape(12, 6)
    a = zarrcore.create_array(str(tmp_path), shape=ref.shape, chunks=(2, 3), shards=shards,
                              dtype="i4", fill_value=-1)
    a[:6] = ref[:6]
    routes = []
    plan = OpenRoutes.plan

    def recorded(self, indexer, writing=False):
        routes.append(plan(self, indexer, writing))
        return routes[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(OpenRoutes, "plan", recorded)
        full = np.vstack([ref[:6], np.full((6, 6), -1, "i4")])
        for sel in [(slice(0, 3), 0), (1, slice(None, None, -1)), (slice(2, 2), 1), (7, 0),
                    (Ellipsis, 4), 3, (1, slice(1, 3))]:
            routes.clear()
            np.testing.assert_array_equal(a[sel], full[sel])
            # (an empty selection reads nothing: neither route)
            assert bool(routes) == (sel not in ((7, 0), (1, slice(1, 3)), (slice(2, 2), 1)))
        for bad in [(12, 0), (0, -7), (0, 0, 0)]:
            with pytest.raises(SelectionError):
                a[bad]
        with pytest.raises(ValueError, match="zero"):  # (numpy's error)
            a[slice(0, 1, 0), 0]
    config.set(read_missing_chunks=False)
    try:
        with pytest.raises(zarrcore.errors.ChunkNotFoundError):
            a[9, 0]  # (a chunk, a shard, never written)
    finally:
        config.set(read_missing_chunks=True)


@pytest.mark.parametrize("order", ["C", "F"])
def test_zero_dimensional_and_odd_ints_read_as_numpy(tmp_path, order):
    """0-d arrays (left to the planner) and numpy ints read as numpy does, F order
    included; bools, which R0 refuses, get the planner's error."""
    z = zarrcore.create_array(str(tmp_path / "z"), shape=(), dtype="f8", fill_value=1.5,
                              config={"order": order})
    for sel in [(), Ellipsis, None]:
        want = np.array(1.5)[sel]
        got = z[sel]  # (`z[()]` is a 0-d array, not numpy's scalar: as before R0)
        assert np.shape(got) == np.shape(want) and got == want and got.dtype == want.dtype
    ref = np.arange(12, dtype="u2").reshape(3, 4)
    a = zarrcore.create_array(str(tmp_path / "a"), data=ref, chunks=(1, 4),
                              config={"order": order})
    for sel in [np.int8(-1), (np.uint64(2), np.int32(1)), (1, Ellipsis), (np.intp(0), None)]:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(OpenRoutes, "plan", _unplanned)
            same_result(a[sel], ref[sel], order)
    for sel in [True, (1, False), (np.bool_(True), 0)]:  # (no int to numpy either)
        with pytest.raises(SelectionError, match="boolean"):
            a[sel]


@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_one_chunk_road_raises_the_planned_roads_errors(tmp_path, shards):
    """A damaged chunk or shard read by R0 raises what the planned route raises, naming it."""
    a = zarrcore.create_array(str(tmp_path), shape=(8, 4), chunks=(2, 4), shards=shards,
                              dtype="f4", compressors=[{"name": "zstd"}])
    a[...] = np.arange(32, dtype="f4").reshape(8, 4)
    key = tmp_path / "c" / "0" / "0"
    key.write_bytes(b"\x01" * (len(key.read_bytes()) if shards is None else 40))
    with pytest.raises(zarrcore.errors.ZarrcoreError) as planned:
        a.get_basic_selection((1, slice(None)))
    with pytest.raises(type(planned.value)) as fast, pytest.MonkeyPatch.context() as mp:
        mp.setattr(OpenRoutes, "plan", _unplanned)
        a[1]
    assert str(fast.value) == str(planned.value) and "c/0/0" in str(fast.value)
