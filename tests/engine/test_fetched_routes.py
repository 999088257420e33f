"""The pipeline over stores the compiled batches cannot open (object stores and the like):
reads plan their byte ranges up front and fetch them concurrently with Store.get_many;
partial writes never lose a concurrent update (conditional writes, retried), or are refused."""
import multiprocessing
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.errors import LockUnavailableError, WriteConflictError
from zarrcore.storage import updates
from _remote_stores import DelayedStore, DirectoryVersionedStore, KeepingStore, VersionedStore

INDEX_BYTES = 64 * 16 + 4  # 8x8 inner chunks, (offset, nbytes) each, and a crc32c


@pytest.fixture(autouse=True)
def _config():
    saved = (zarrcore.config.num_threads, zarrcore.config.unsafe_partial_writes)
    yield
    zarrcore.config.set(num_threads=saved[0], unsafe_partial_writes=saved[1])


def sharded(store, compressors=None, dtype="uint64", shape=(1024, 512)):
    """Two shards of 8x8 inner chunks of 64x64 (32 KiB each uncompressed)."""
    a = zarrcore.create_array(store, name="s", shape=shape, dtype=dtype, chunks=(64, 64),
                              shards=(512, 512), compressors=compressors, fill_value=0)
    data = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    a[...] = data
    store.reset()
    return a, data


def reads(store):
    return [r for r in store.requests if r[0] == "get"]


def test_sharded_read_fetches_each_index_once_then_coalesced_ranges():
    store = DelayedStore()
    a, data = sharded(store)
    # Column 0 of inner chunks: 8 per shard, each 7 inner chunks (224 KiB) from the next, too
    # far apart to share a request.
    np.testing.assert_array_equal(a[:, 0:10], data[:, 0:10])
    got = reads(store)
    index = [r for r in got if r[2] == [(-INDEX_BYTES, None)]]
    assert sorted(r[1] for r in index) == ["s/c/0/0", "s/c/1/0"]
    ranged = [r for r in got if r not in index]
    assert len(ranged) == 16 and all(len(r[2]) == 1 for r in ranged)
    assert all(stop - start == 64 * 64 * 8 for r in ranged for start, stop in r[2])
    assert store.nbytes == 2 * INDEX_BYTES + 16 * 64 * 64 * 8

    # Four neighbouring inner chunks: one index request and one data request.
    store.reset()
    np.testing.assert_array_equal(a[0:64, 0:200], data[0:64, 0:200])
    got = reads(store)
    assert len(got) == 2 and got[0][2] == [(-INDEX_BYTES, None)]
    assert got[1][2] == [(0, 4 * 64 * 64 * 8)]


def test_sharded_read_of_most_of_a_shard_fetches_it_whole_and_missing_shards_read_fill():
    store = DelayedStore()
    a, data = sharded(store)
    np.testing.assert_array_equal(a[...], data)
    whole = [(0, a._engine.chain.max_encoded_bytes + 1)]  # a byte more than a valid shard
    assert sorted((r[1], r[2]) for r in reads(store)) == [("s/c/0/0", whole), ("s/c/1/0", whole)]
    store.delete("s/c/1/0")
    store.reset()
    np.testing.assert_array_equal(a[500:700, 3:9], np.where(np.arange(500, 700)[:, None] < 512,
                                                             data[500:700, 3:9], 0))
    assert len(reads(store)) == 3  # two indexes (one missing), one data range


def test_shard_deleted_between_its_index_and_inner_chunks_names_the_shard():
    store = DelayedStore()
    a, _ = sharded(store)
    fetch = store._fetch

    def delete_after_the_indexes(key, ranges):
        if ranges == [(-INDEX_BYTES, None)]:
            found = fetch(key, ranges)
            store.delete(key)
            return found
        return fetch(key, ranges)

    store._fetch = delete_after_the_indexes
    with pytest.raises(zarrcore.errors.ShardIndexError,
                       match=r"shard 's/c/0/0': deleted while its inner chunks were read"):
        a[0:10, 0:10]


def test_unsharded_read_requests_each_chunk_once():
    store = DelayedStore()
    a = zarrcore.create_array(store, name="u", shape=(100, 100), dtype="int32", chunks=(10, 10))
    data = np.arange(10000, dtype="int32").reshape(100, 100)
    a[...] = data
    store.reset()
    np.testing.assert_array_equal(a[5:35, 50:61], data[5:35, 50:61])
    assert sorted(r[1] for r in reads(store)) == sorted(
        f"u/c/{i}/{j}" for i in range(4) for j in range(5, 7))


@pytest.mark.parametrize("shards", [None, (512, 512)])
def test_requests_run_concurrently(shards):
    delay, concurrency = 0.05, 8
    store = DelayedStore(delay=delay, concurrency=concurrency)
    # 32 KiB inner chunks: those of one column are too far apart to share a request.
    a = zarrcore.create_array(store, name="c", shape=(1024, 512), dtype="uint64",
                              chunks=(64, 64), shards=shards, compressors=None)
    data = np.arange(1024 * 512, dtype="uint64").reshape(1024, 512)
    a[...] = data
    store.reset()
    sel = (slice(None), slice(0, 64)) if shards else (slice(None), slice(None))
    start = time.perf_counter()
    np.testing.assert_array_equal(a[sel], data[sel])
    elapsed = time.perf_counter() - start
    n = len(reads(store))
    # Sharded: 2 index requests, then 16 data ranges (two rounds); unsharded: 128 chunks.
    rounds = 2 if shards else 1
    floor = sum(-(-k // concurrency) for k in ([2, 16] if shards else [n])) * delay
    assert n == (18 if shards else 128)
    assert store.most_in_flight == min(concurrency, 16 if shards else n)
    assert elapsed < floor + rounds * delay + 0.3, (elapsed, floor)


SELECTION = st.tuples(*[st.one_of(
    st.integers(-300, 299),
    st.builds(slice, st.none() | st.integers(-320, 320), st.none() | st.integers(-320, 320),
              st.sampled_from([None, 1, 2, 3, 7, -1, -3])),
) for _ in range(2)])


@pytest.fixture(scope="module")
def random_arrays():
    out = []
    for shards, compressors in [(None, "auto"), ((96, 128), None), ((96, 128), "auto")]:
        store = VersionedStore()
        a = zarrcore.create_array(store, name="r", shape=(300, 250), dtype="float32",
                                  chunks=(32, 32), shards=shards, compressors=compressors,
                                  fill_value=-1)
        data = np.random.default_rng(1).random((300, 250), dtype="float32")
        data[200:, :] = -1
        a[:200, :] = data[:200]
        out.append((a, data))
    # Inner chunks through a transpose: decoded chunk by chunk, fetched by the same plan.
    store = VersionedStore()
    inner = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [32, 32], "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                                            {"name": "bytes", "configuration": {"endian": "little"}}]}}
    a = zarrcore.create_array(store, name="t", shape=(300, 250), dtype="float32",
                              chunks=(96, 128), serializer=inner, compressors=None, fill_value=-1)
    assert a._engine.routes.shard_ranges and a._engine.routes.chunk_waves is None
    a[:200, :] = out[0][1][:200]
    out.append((a, out[0][1]))
    return out


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(selection=SELECTION)
def test_random_reads_equal_numpy(random_arrays, selection):
    for a, data in random_arrays:
        try:
            expected = data[selection]
        except IndexError:
            with pytest.raises(IndexError):
                a[selection]
            continue
        np.testing.assert_array_equal(a[selection], expected)


@given(selection=SELECTION, sharded=st.booleans())
def test_random_writes_equal_numpy(selection, sharded):
    store = VersionedStore()
    a = zarrcore.create_array(store, name="w", shape=(300, 250), dtype="int32", chunks=(32, 32),
                              shards=(96, 128) if sharded else None, fill_value=0)
    data = np.arange(300 * 250, dtype="int32").reshape(300, 250)
    a[::2, :] = data[::2, :]
    expected = np.zeros_like(data)
    expected[::2, :] = data[::2, :]
    try:
        expected[selection] = -7
    except IndexError:
        return
    a[selection] = -7
    np.testing.assert_array_equal(a[...], expected)


# -- no lost updates -------------------------------------------------------------------------
SHAPE, WRITERS, ROUNDS = (64, 96), 4, 6


def create_shared(store):
    return zarrcore.create_array(store, name="x", shape=SHAPE, dtype="int32", chunks=(8, 8),
                                 shards=(32, 48), fill_value=0)


def write_rows(a, writer):
    """Writer w sets rows w, w+4, ... to its value round after round: every call is a partial
    write of every shard, which the other writers update too."""
    for rnd in range(ROUNDS):
        a[writer::WRITERS, :] = 100 * (rnd + 1) + writer


def lost(a):
    expected = (100 * ROUNDS + np.arange(SHAPE[0]) % WRITERS)[:, None]
    return int((a[...] != expected).sum())


def test_threads_lose_no_updates_by_conditional_writes():
    store = VersionedStore(delay=0.001)
    a = create_shared(store)
    threads = [threading.Thread(target=write_rows, args=(a, w)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert lost(a) == 0
    assert not store.requests or all(r[0] in ("get", "set") for r in store.requests)


def _process_writer(path, writer, start):
    zarrcore.config.set(num_threads=1)
    a = zarrcore.open_array(DirectoryVersionedStore(path), path="x", mode="r+")
    start.wait()
    write_rows(a, writer)


@pytest.mark.slow
def test_processes_lose_no_updates_by_conditional_writes(tmp_path):
    path = str(tmp_path / "d")
    a = create_shared(DirectoryVersionedStore(path))
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_process_writer, args=(path, w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(120)
        hung = [p.pid for p in procs if p.is_alive()]
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    assert not hung
    assert [p.exitcode for p in procs] == [0] * WRITERS
    assert lost(a) == 0


def test_partial_writes_without_locks_or_conditional_writes_need_opting_in():
    store = DelayedStore()
    a = zarrcore.create_array(store, name="p", shape=(16, 16), dtype="int32", chunks=(8, 8))
    a[:8, :8] = 1  # whole chunks need no lock
    with pytest.raises(LockUnavailableError, match=r"'p/c/1/1'.*unsafe_partial_writes"):
        a[12, 12] = 2
    assert a[12, 12] == 0
    zarrcore.config.set(unsafe_partial_writes=True)
    a[12, 12] = 2
    assert a[12, 12] == 2 and a[0, 0] == 1


def test_conditional_writes_that_keep_losing_raise(monkeypatch):
    store = VersionedStore()
    a = zarrcore.create_array(store, name="q", shape=(16,), dtype="int32", chunks=(8,),
                              shards=(16,))
    a[:] = 1
    monkeypatch.setattr(store, "set_if", lambda key, value, version: False)
    monkeypatch.setattr(updates, "CONFLICT_RETRIES", 3)
    with pytest.raises(WriteConflictError, match="'q/c/0'"):
        a[3] = 5
    assert a[3] == 1


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_attribute_updates_from_threads_lose_nothing_by_conditional_writes(zarr_format):
    store = VersionedStore(delay=0.001)
    a = zarrcore.create_array(store, name="m", shape=(4,), dtype="int8", zarr_format=zarr_format)

    def update(w):
        handle = zarrcore.open_array(store, path="m", mode="r+")
        for i in range(5):
            handle.attrs[f"w{w}-{i}"] = i

    threads = [threading.Thread(target=update, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(zarrcore.open_array(store, path="m").attrs) == sorted(
        f"w{w}-{i}" for w in range(WRITERS) for i in range(5))
    assert a.read_only is False


def test_metadata_updates_without_locks_or_conditional_writes_need_opting_in():
    store = DelayedStore()
    a = zarrcore.create_array(store, name="n", shape=(4,), dtype="int8")
    with pytest.raises(LockUnavailableError, match="'n/zarr.json'.*unsafe_partial_writes"):
        a.attrs["x"] = 1
    with pytest.raises(LockUnavailableError, match="'n/zarr.json'"):
        a.resize(8)
    zarrcore.config.set(unsafe_partial_writes=True)
    a.attrs["x"] = 1
    assert zarrcore.open_array(store, path="n").attrs["x"] == 1
    a[:] = 5
    a.resize(2)
    a.resize(8)
    np.testing.assert_array_equal(a[:], [5, 5, 0, 0, 0, 0, 0, 0])


def test_inner_chunk_past_the_end_of_a_ranged_shard_names_it():
    store = DelayedStore()
    a, data = sharded(store, compressors=None, shape=(512, 512))
    shard = store.get("s/c/0/0")
    # Drop 64 KiB from the middle: the index (kept at the end) now points past the end.
    store.set("s/c/0/0", shard[:1 << 20] + shard[(1 << 20) + (1 << 16):])
    with pytest.raises(zarrcore.errors.ShardIndexError, match=r"'s/c/0/0', inner chunk \(7, 7\)"):
        a[448:, 448:]


def test_a_failing_request_raises_and_stops_the_fetching():
    class FailingStore(DelayedStore):
        def _fetch(self, key, ranges):
            if key.endswith("c/3/3"):
                raise zarrcore.errors.StoreError(f"{key!r}: connection reset")
            return super()._fetch(key, ranges)

    store = FailingStore(delay=0.01, concurrency=4)
    a = zarrcore.create_array(store, name="f", shape=(80, 80), dtype="int16", chunks=(10, 10))
    a[...] = 1
    before = threading.active_count()
    with pytest.raises(zarrcore.errors.StoreError, match="'f/c/3/3'"):
        a[...]
    assert threading.active_count() == before  # the fetching thread is gone
    np.testing.assert_array_equal(a[:30, :30], 1)


@pytest.mark.parametrize("inner", ["native", "transpose"])
def test_ranged_read_from_a_store_keeping_versions_sees_one_version(monkeypatch, inner):
    """A writer replaces the shard between the read of its index and of its inner chunks: a
    store whose reader keeps one version (memory) still gives the inner chunks of the
    version whose index was read."""
    from zarrcore.codecs.sharding import ShardingCodec

    store = zarrcore.MemoryStore()
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if inner == "transpose":
        codecs.insert(0, {"name": "transpose", "configuration": {"order": [1, 0]}})
    serializer = {"name": "sharding_indexed", "configuration": {"chunk_shape": [8, 8], "codecs": codecs}}
    a = zarrcore.create_array(store, name="r", shape=(64, 64), dtype="uint16", chunks=(64, 64),
                              serializer=serializer, compressors=None, fill_value=0)
    old = (np.arange(64 * 64) % 60000 + 1).astype("uint16").reshape(64, 64)
    a[...] = old
    a[:16, :] = 0  # the new version lays its inner chunks out at other offsets
    new_bytes = store.get("r/c/0/0")
    a[...] = old
    parse_index = ShardingCodec.parse_index

    def parse_index_then_replace(self, data, size=None):
        entries = parse_index(self, data, size)
        store.set("r/c/0/0", new_bytes)
        return entries

    monkeypatch.setattr(ShardingCodec, "parse_index", parse_index_then_replace)
    np.testing.assert_array_equal(a[20:30, 17:40], old[20:30, 17:40])


def test_conditional_writes_are_preferred_to_locks():
    """A store with both (an object store whose locks are lock objects) updates chunks by
    conditional writes: no lock object to create and delete for each, whole writes unlocked."""
    class LockingVersionedStore(VersionedStore):
        supports_locks = True

        def lock(self, key, node="", *, replaced_last=False):
            raise AssertionError(f"lock taken for {key!r}")

    store = LockingVersionedStore()
    a = zarrcore.create_array(store, name="l", shape=(32, 32), dtype="int32", chunks=(8, 8),
                              shards=(16, 16))
    a[...] = 1
    a[3:9, 5] = 2
    expected = np.ones((32, 32), dtype="int32")
    expected[3:9, 5] = 2
    np.testing.assert_array_equal(a[...], expected)


def test_ranged_reads_through_version_keeping_readers_run_concurrently():
    store = KeepingStore(delay=0.1)
    a, data = sharded(store, compressors=None)
    store.reset()
    np.testing.assert_array_equal(a[:, 0:10], data[:, 0:10])
    # All 16 data ranges are submitted at once; on a loaded machine the pool's threads may
    # start later than the first requests end, so not all 16 need be seen in flight.
    assert len(reads(store)) == 18 and store.most_in_flight >= 8


class _StreamingStore(zarrcore.MemoryStore):
    """A store that streams writes: set_many takes each item as it is yielded, and calls
    `after_first` once the first is stored."""

    supports_locks = False
    streams_writes = True

    def __init__(self):
        super().__init__()
        self.after_first = lambda: None

    def set_many(self, items, concurrency=None, part_bytes=None):
        for i, (key, value) in enumerate(items):
            self.set(key, value)
            if i == 0:
                self.after_first()


@pytest.fixture
def small_waves(monkeypatch):
    """Waves of a few bytes, so that these small arrays are written in several."""
    from zarrcore.engine import write_waves

    monkeypatch.setattr(write_waves, "WRITE_WAVE_BYTES", 16)


@pytest.mark.parametrize("layout", ["chunks", "shards", "zstd chunks"])
def test_writes_to_a_store_that_streams_them_hand_over_chunks_in_waves(layout, small_waves):
    """The first chunks reach the store before the last are encoded: values changed once the
    first chunk is stored show up in the last chunks only."""
    zarrcore.config.set(num_threads=2)
    store = _StreamingStore()
    kwargs = {"shards": (8,), "chunks": (4,)} if layout == "shards" else {"chunks": (8,)}
    a = zarrcore.create_array(store, shape=(128,), dtype="int32", fill_value=-1,
                              compressors=None if layout != "zstd chunks" else "auto", **kwargs)
    value = np.arange(128, dtype="int32")

    def change_the_source():
        value[:] += 1000

    store.after_first = change_the_source
    a[...] = value
    written = a[...]
    assert np.array_equal(written[:8], np.arange(8))
    assert np.array_equal(written[-8:], np.arange(120, 128) + 1000)


def test_whole_shards_are_handed_over_one_by_one(small_waves):
    """A shard of as many inner chunks as threads or more is alone in its wave (encoded over
    every thread): each is stored before the next is encoded."""
    zarrcore.config.set(num_threads=2)
    store = _StreamingStore()
    a = zarrcore.create_array(store, shape=(64,), dtype="int32", shards=(16,), chunks=(4,),
                              fill_value=-1, compressors=None)
    value = np.arange(64, dtype="int32")

    def change_the_source():
        value[:] += 1000

    store.after_first = change_the_source
    a[...] = value
    written = a[...]
    assert np.array_equal(written[:16], np.arange(16))
    assert np.array_equal(written[16:], np.arange(16, 64) + 1000)


@pytest.mark.parametrize("streams", [False, True])
def test_a_write_hands_over_a_first_wave_of_a_chunk_per_thread_or_encodes_all_first(streams):
    """On a store that streams writes, the first wave of a small write (a chunk per thread)
    reaches the store before the rest is encoded; on another, every chunk is encoded before
    any is stored."""
    zarrcore.config.set(num_threads=2)
    store = _StreamingStore()
    store.streams_writes = streams
    a = zarrcore.create_array(store, shape=(128,), dtype="int32", chunks=(8,), compressors=None)
    value = np.arange(128, dtype="int32")

    def change_the_source():
        value[:] += 1000

    store.after_first = change_the_source
    a[...] = value
    expected = np.arange(128)
    if streams:
        expected[16:] += 1000
    assert np.array_equal(a[...], expected)


def test_write_waves_of_a_small_write_grow_from_a_chunk_per_thread():
    from zarrcore.engine.write_waves import write_waves

    store = _StreamingStore()
    kib, mib = 1 << 10, 1 << 20
    # 8 MiB: from a chunk per thread up to two, or a 16th of the write; 64 MiB: two full
    # waves of 32 MiB.
    sizes = [w.stop - w.start for w in write_waves(64, store, 2, item_bytes=128 * kib)]
    assert sizes == [2] + [4] * 15 + [2]
    sizes = [w.stop - w.start for w in write_waves(216, store, 2, item_bytes=128 * kib)]
    assert sizes == [2, 4, 8] + [14] * 14 + [6]
    sizes = [w.stop - w.start for w in write_waves(64, store, 2, item_bytes=mib)]
    assert sizes == [32, 32]
    # (a shard of 8 inner chunks keeps 2 threads busy alone)
    sizes = [w.stop - w.start for w in write_waves(5, store, 2, 8, item_bytes=64 * mib)]
    assert sizes == [1, 1, 1, 1, 1]
    store.streams_writes = False
    assert write_waves(64, store, 2, item_bytes=128 * kib) == [slice(0, 64)]


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("crc", [False, True])
def test_uncompressed_chunks_encoded_in_waves_equal_the_local_batches(tmp_path, endian, crc):
    """Uncompressed chunks are assembled in their output buffers (swapped there, checksum
    after them); all-fill chunks are not stored. The bytes equal the local batches' own."""
    value = np.arange(64 * 48, dtype="int32").reshape(64, 48)
    value[:16] = 7  # a row of chunks left all fill
    stores = [zarrcore.MemoryStore(), zarrcore.LocalStore(str(tmp_path / "a.zarr"))]
    for store in stores:
        a = zarrcore.create_array(store, shape=value.shape, dtype="int32", chunks=(16, 16),
                                  fill_value=7, serializer={"name": "bytes", "configuration": {"endian": endian}},
                                  compressors=[{"name": "crc32c"}] if crc else None)
        a[...] = value
        assert np.array_equal(a[...], value)
    keys = stores[1].list_prefix("c")
    assert sorted(stores[0].list_prefix("c")) == sorted(keys) and len(keys) == 9
    assert all(stores[0].get(k) == stores[1].get(k) for k in keys)
