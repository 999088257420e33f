"""Stress: many threads at once on one array, group, cache or store. On a free-threaded Python
(3.13t, run with the GIL off) they race for real; on a GIL build a tiny switch interval makes
the threads interleave between bytecodes. Every test starts its threads together (a barrier),
bounds its wait (a hang fails it), and checks that nothing was lost or mixed up."""
import os
import subprocess
import sys
import sysconfig
import threading
import uuid

import numpy as np
import pytest

import zarrcore
from zarrcore._native import memory as _memory
from zarrcore.runtime.config import Claims, parallel_map

THREADS = 8
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


@pytest.fixture(autouse=True)
def _interleave():
    """Switch threads as often as the GIL build can (no effect without a GIL)."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(saved)


def hammer(target, nthreads=THREADS, timeout=60):
    """Run target(i) in `nthreads` threads started together; re-raise the first exception."""
    barrier = threading.Barrier(nthreads)
    errors = []

    def run(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as e:  # re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "threads still running: a hang"
    if errors:
        raise errors[0]


@pytest.mark.skipif(not FREE_THREADED, reason="a GIL build has no GIL to keep off")
def test_import_keeps_the_gil_off():
    """Every extension module declares it does not need the GIL: importing them all (without
    PYTHON_GIL set) leaves it off."""
    modules = sorted(name for name in os.listdir(os.path.dirname(zarrcore.__file__))
                     if name.endswith(".pyx"))
    code = ("import sys, importlib, zarrcore\n"
            f"for m in {[m[:-4] for m in modules]!r}: importlib.import_module('zarrcore.' + m)\n"
            "print(sys._is_gil_enabled())")
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    root = os.path.dirname(os.path.dirname(zarrcore.__file__))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", out.stderr


def test_claims_hand_out_each_task_once():
    claims = Claims(50_000)
    taken = [[] for _ in range(THREADS)]
    hammer(lambda i: taken[i].extend(claims))
    everything = sorted(k for t in taken for k in t)
    assert everything == list(range(50_000))


def test_parallel_map_from_many_threads():
    zarrcore.config.set(num_threads=4)
    results = [None] * THREADS

    def call(i):
        results[i] = parallel_map(lambda x: x * x + i, range(2000))

    hammer(call)
    for i, got in enumerate(results):
        assert got == [x * x + i for x in range(2000)]


def _store(kind, tmp_path):
    if kind == "memory":
        return zarrcore.MemoryStore()
    if kind == "zip":
        return zarrcore.ZipStore(tmp_path / "s.zip", mode="w")
    return zarrcore.LocalStore(tmp_path / "s")


STORES = ["memory", "local", "zip"]
LAYOUTS = [pytest.param({}, id="chunks"), pytest.param({"shards": (16, 32)}, id="shards"),
           # A transpose: the chain runs chunk by chunk through the codec objects.
           pytest.param({"filters": [{"name": "transpose", "configuration": {"order": [1, 0]}}]},
                        id="python-chain")]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", STORES)
def test_disjoint_chunks(kind, layout, tmp_path):
    """Each thread writes and reads back its own chunks (its own shards), round after round."""
    store = _store(kind, tmp_path)
    rows = 16 if layout.get("shards") else 8
    a = zarrcore.create_array(store, shape=(rows * THREADS, 64), chunks=(8, 16), dtype="i4",
                              fill_value=-1, **layout)

    def work(i):
        band = slice(i * rows, (i + 1) * rows)
        for rnd in range(6):
            value = np.arange(rows * 64, dtype="i4").reshape(rows, 64) + 1000 * rnd + i
            a[band] = value
            np.testing.assert_array_equal(a[band], value)

    hammer(work)
    expected = np.concatenate([np.arange(rows * 64, dtype="i4").reshape(rows, 64) + 5000 + i
                               for i in range(THREADS)])
    np.testing.assert_array_equal(a[...], expected)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", STORES)
def test_overlapping_chunks_lose_no_update(kind, layout, tmp_path):
    """Each writer owns every (THREADS - 1)-th column, so every write is a read-modify-write
    of chunks that all threads share; a reader meanwhile sees each column of each chunk at one
    of its values (a chunk is replaced whole; a read spans chunks one by one)."""
    store = _store(kind, tmp_path)
    a = zarrcore.create_array(store, shape=(16, 4 * THREADS), chunks=(8, 16), dtype="i4",
                              fill_value=0, **layout)
    rounds = 5

    def work(i):
        if i == THREADS - 1:  # a reader
            for _ in range(rounds * 2):
                data = a[...]
                for col in range(data.shape[1]):
                    for column in data[:8, col], data[8:, col]:
                        assert (column == column[0]).all(), f"column {col} mixed: {column}"
                        assert column[0] == 0 or column[0] % 100 == col % (THREADS - 1)
            return
        for rnd in range(1, rounds + 1):
            a[:, i::THREADS - 1] = 100 * rnd + i

    hammer(work)
    data = a[...]
    for col in range(data.shape[1]):
        assert (data[:, col] == 100 * rounds + col % (THREADS - 1)).all(), data[:, col]


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_group_members_and_attributes(kind, tmp_path):
    """Threads create members of one group and set its attributes: all land."""
    store = _store(kind, tmp_path)
    root = zarrcore.group(store)

    def work(i):
        for k in range(4):
            name = f"t{i}_{k}"
            if k % 2:
                root.create_group(name, attributes={"k": k})
            else:
                root.create_array(name, shape=(4,), chunks=(2,), dtype="u1")[...] = k
            root.attrs[name] = k
            zarrcore.open_group(store).attrs.update({f"{name}_again": i})

    hammer(work)
    names = {f"t{i}_{k}" for i in range(THREADS) for k in range(4)}
    reopened = zarrcore.open_group(store)
    assert set(reopened.keys()) == names
    attrs = reopened.attrs.asdict()
    assert attrs == {**{n: int(n[-1]) for n in names},
                     **{f"{n}_again": int(n[1:].split("_")[0]) for n in names}}
    for n in names:
        node = reopened[n]
        if int(n[-1]) % 2:
            assert node.attrs["k"] == int(n[-1])
        else:
            assert list(node[...]) == [int(n[-1])] * 4


def test_named_memory_store_is_one_mapping():
    """Threads that open a new memory://NAME at once all write into one mapping."""
    for _ in range(10):
        url = f"memory://stress-{uuid.uuid4().hex}"
        hammer(lambda i: zarrcore.create_array(url, path=f"t{i}", shape=(2,), dtype="u1"))
        assert set(zarrcore.open_group(url).keys()) == {f"t{i}" for i in range(THREADS)}


def test_open_group_in_mode_a_races_its_creation():
    """Threads that open (creating) one group at once all get it: the ones that lose the race
    to create it open the winner's."""
    for _ in range(10):
        store = zarrcore.MemoryStore()
        groups = [None] * THREADS

        def work(i):
            groups[i] = zarrcore.open_group(store, mode="a")

        hammer(work)
        assert all(isinstance(g, zarrcore.Group) for g in groups)


def test_consolidated_metadata_parsed_once_per_node(tmp_path):
    """Threads asking for the same node's consolidated metadata get one parsed object."""
    root = zarrcore.group(tmp_path / "c")
    for k in range(20):
        root.create_array(f"a{k}", shape=(4,), chunks=(2,), dtype="f8")
    zarrcore.consolidate_metadata(tmp_path / "c")
    for _ in range(5):
        consolidated = zarrcore.open_consolidated(tmp_path / "c")._consolidated
        seen = [[] for _ in range(THREADS)]
        hammer(lambda i: seen[i].extend(consolidated.metadata(f"a{k}") for k in range(20)))
        for k in range(20):
            assert len({id(s[k]) for s in seen}) == 1


def test_native_handle_cache_from_many_threads(tmp_path):
    """One cached native handle read and written by many threads: reads see whole chunks."""
    # (every chunk stored before the threads start, so that every read goes through the cache
    # however the threads are scheduled: a chunk never stored is fill, read without it)
    a = zarrcore.create_array(tmp_path / "h", shape=(64, 64), chunks=(8, 8), dtype="i8",
                              fill_value=-1)
    a[...] = 0
    handle = a.native_handle(cache_bytes=16 * 8 * 8 * 8)

    def work(i):
        rng = np.random.default_rng(i)
        for rnd in range(40):
            r, c = rng.integers(0, 8, size=2)
            if i % 2:
                handle.write((r * 8, c * 8), np.full((8, 8), rnd + 1, dtype="i8"))
            else:
                chunk = handle.read_chunk((r, c))
                assert (chunk == chunk[0, 0]).all()

    hammer(work)
    assert handle.cache_info()["hits"] + handle.cache_info()["misses"] > 0


def test_buffer_pool_blocks_are_never_shared():
    """Threads take and give back pool blocks (whole ones and pieces of shared ones): each
    array's memory is its own while it lives."""
    sizes = [_memory.BLOCK_MIN_BYTES + 8, _memory.PIECE_MIN_BYTES, _memory.POOL_MIN_BYTES,
             3 * _memory.POOL_MIN_BYTES // 2]

    def work(i):
        for rnd in range(30):
            held = [_memory.empty((n // 8,), "i8") for n in sizes]
            for k, arr in enumerate(held):
                arr.fill(i * 1000 + rnd * 10 + k)
            for k, arr in enumerate(held):
                assert (arr == i * 1000 + rnd * 10 + k).all()

    hammer(work)


def test_config_changes_while_threads_read(tmp_path):
    """The pool is replaced while other threads run parallel reads on it."""
    a = zarrcore.create_array(tmp_path / "p", shape=(64, 64), chunks=(8, 8), dtype="u2")
    a[...] = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    expected = a[...]

    def work(i):
        for rnd in range(20):
            if i == 0:
                zarrcore.config.set(num_threads=1 + rnd % 4)
            else:
                np.testing.assert_array_equal(a[...], expected)

    hammer(work)


def test_zip_closed_while_threads_read(tmp_path):
    """A thread closes a zip store again and again while others read it, and another opens
    files meanwhile (which may take the numbers of descriptors just closed): every read
    gives the stored bytes (a read after a close opens the zip again)."""
    path = tmp_path / "r.zip"
    values = {f"k{n}": bytes([n]) * (1000 + n) for n in range(20)}
    with zarrcore.ZipStore(path, mode="w") as store:
        for key, value in values.items():
            store.set(key, value)
    store = zarrcore.ZipStore(path, mode="r")
    other = tmp_path / "other"
    other.write_bytes(b"\xff" * 4096)
    readers_left = [THREADS - 2]
    counting = threading.Lock()

    def work(i):
        if i < 2:  # the closer and the opener, until every reader is done
            while readers_left[0]:
                if i == 0:
                    store.close()
                else:
                    with open(other, "rb") as f:
                        f.read(1)
            return
        try:
            for _ in range(30):
                for key, value in values.items():
                    assert store.get(key, 10, 20) == value[10:20], key
        finally:
            with counting:
                readers_left[0] -= 1

    hammer(work)
    store.close()


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("kind", ["memory", "local"])
def test_one_node_created_by_many_threads(kind, zarr_format, tmp_path):
    """Threads create one group, each with its own attributes: one of them creates it, the
    others get NodeExistsError, and the stored attributes are the creator's."""
    for rnd in range(10):
        store = _store(kind, tmp_path / str(rnd))
        made = [None] * THREADS

        def work(i):
            try:
                made[i] = zarrcore.create_group(store, path="g", zarr_format=zarr_format,
                                                attributes={"by": i})
            except zarrcore.errors.NodeExistsError:
                pass

        hammer(work)
        creators = [i for i, g in enumerate(made) if g is not None]
        assert len(creators) == 1, creators
        assert zarrcore.open_group(store, path="g").attrs.asdict() == {"by": creators[0]}


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_implicit_parents_keep_concurrent_attributes(kind, tmp_path):
    """While threads create groups below a group that is not there yet (creating it on the
    way), another creates that group with attributes (or sets them, when it came too late):
    they are kept."""
    store = _store(kind, tmp_path)
    groups = 30
    step = threading.Barrier(THREADS)

    def work(i):
        for j in range(groups):
            step.wait()
            if i == 0:
                try:
                    zarrcore.create_group(store, path=f"p{j}", attributes={"kept": j})
                except zarrcore.errors.NodeExistsError:  # made on the way to a member
                    zarrcore.open_group(store, path=f"p{j}").attrs["kept"] = j
            else:
                zarrcore.create_group(store, path=f"p{j}/g{i}")

    hammer(work)
    for j in range(groups):
        group = zarrcore.open_group(store, path=f"p{j}")
        assert group.attrs.asdict() == {"kept": j}
        assert set(group.keys()) == {f"g{i}" for i in range(1, THREADS)}
