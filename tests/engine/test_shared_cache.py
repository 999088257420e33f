"""The decoded-chunk cache shared by the processes of one machine (`shared_cache=True`): a
data loader's workers, forked, spawned or started by a fork server, fill and read one table
within one budget, so a sample any of them read is a hit for all; entries are validated as
the in-process cache's are; a worker killed at any moment leaves the others reading right
values; and nothing is left once the processes are gone. Every read is compared with numpy
and every wait has a deadline."""
import collections
import multiprocessing
import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import zarrcore
from versioned_store import VersionedStore
from zarrcore.array_api import CACHE_SETTLE_SECONDS
from zarrcore.errors import SettingTypeError, SettingValueError

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="the shared cache needs Linux (memfd_create)"),
              pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")]

SAMPLES, SAMPLE = 48, (16, 16)
SAMPLE_BYTES = 4 * SAMPLE[0] * SAMPLE[1]
# Seconds a pool may take for its reads (a hang fails the test here).
DEADLINE = 120
METHODS = ["fork", "spawn", "forkserver"]

_array = None  # a worker's array: inherited (fork) or unpickled (spawn, forkserver)


def _init(array):
    global _array
    _array = array


def _read(indices):
    return [(int(i), _array[int(i)]) for i in indices]


def _info(_):
    return _array.cache_info()


def settle():
    """Wait until files written so far may be cached."""
    time.sleep(CACHE_SETTLE_SECONDS + 0.05)


def _data():
    return np.random.default_rng(5).random((SAMPLES, *SAMPLE), dtype="float32")


def _make(tmp_path, name="a.zarr", **kwargs):
    data = _data()
    path = str(tmp_path / name)
    a = zarrcore.create_array(path, shape=data.shape, dtype=data.dtype,
                              chunks=(1, *SAMPLE), **kwargs)
    a[...] = data
    settle()
    return path, data


def _pool(method, array, workers=2):
    return multiprocessing.get_context(method).Pool(workers, _init, (array,))


def _epoch(pool, data, seed):
    """Every sample once, shuffled, in batches over the pool's workers; checked."""
    order = np.random.default_rng(seed).permutation(SAMPLES)
    batches = [order[k:k + 4] for k in range(0, SAMPLES, 4)]
    for batch in pool.map_async(_read, batches).get(DEADLINE):
        for i, sample in batch:
            np.testing.assert_array_equal(sample, data[i])


@pytest.mark.parametrize("shards", [None, (4, *SAMPLE)], ids=["chunks", "shards"])
@pytest.mark.parametrize("method", METHODS)
def test_epoch_two_is_all_hits_for_every_worker(tmp_path, method, shards):
    path, data = _make(tmp_path, shards=shards)
    a = zarrcore.open_array(path, mode="r", cache_bytes=2 * SAMPLES * SAMPLE_BYTES,
                            shared_cache=True)
    with _pool(method, a) as pool:
        _epoch(pool, data, 1)
        first = a.cache_info()  # the parent reads the workers' table's counters
        assert first["misses"] == first["inserts"] == SAMPLES and first["hits"] == 0
        _epoch(pool, data, 2)
        second = a.cache_info()
        assert second["hits"] == SAMPLES and second["misses"] == SAMPLES
        assert all(info == second for info in pool.map(_info, range(2)))
    np.testing.assert_array_equal(a[...], data)  # the parent: hits too
    assert a.cache_info()["hits"] == 2 * SAMPLES


def test_an_unpickled_array_reads_the_same_table(tmp_path):
    path, data = _make(tmp_path)
    a = zarrcore.open_array(path, mode="r", cache_bytes=SAMPLES * SAMPLE_BYTES * 2,
                            shared_cache=True)
    np.testing.assert_array_equal(a[...], data)
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(b[...], data)
    assert b.cache_info()["hits"] == SAMPLES == a.cache_info()["hits"]


@pytest.mark.parametrize("method", METHODS)
def test_a_chunk_rewritten_with_the_same_stat_is_never_served_stale(tmp_path, method):
    """Another process (this one) stores new bytes into a chunk file through a shared map,
    which leaves its size and times as they were: the workers read the new values."""
    path, data = _make(tmp_path, compressors=[],
                       serializer={"name": "bytes", "configuration": {"endian": "big"}})
    chunk = os.path.join(path, "c", "7", "0", "0")
    m = np.memmap(chunk, dtype="u1", mode="r+")
    m[0] = m[0]  # the page is dirty from here on: later stores leave the times alone
    settle()
    a = zarrcore.open_array(path, mode="r", cache_bytes=2 * SAMPLES * SAMPLE_BYTES,
                            shared_cache=True)
    with _pool(method, a) as pool:
        _epoch(pool, data, 1)
        before = os.stat(chunk)
        data[7] += 1
        m[:] = np.frombuffer(data[7].astype(">f4").tobytes(), "u1")
        after = os.stat(chunk)
        assert (before.st_mtime_ns, before.st_ctime_ns, before.st_size) == (
            after.st_mtime_ns, after.st_ctime_ns, after.st_size)
        _epoch(pool, data, 2)
        info = a.cache_info()
        assert info["stale"] == 1 and info["hits"] == SAMPLES - 1
        _epoch(pool, data, 3)
    del m


def test_chunks_stored_as_their_items_bypass_it(tmp_path):
    """As the in-process cache: uncompressed native-order chunk files are read without it (a
    hit would read and hash the very bytes a read copies into place)."""
    path, data = _make(tmp_path, compressors=[])
    a = zarrcore.open_array(path, mode="r", cache_bytes=2 * SAMPLES * SAMPLE_BYTES,
                            shared_cache=True)
    with _pool("fork", a) as pool:
        _epoch(pool, data, 1)
        _epoch(pool, data, 2)
    info = a.cache_info()
    assert info["hits"] == info["misses"] == info["entries"] == 0


def _stopped(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_worker_killed_half_way_through_an_entry_harms_no_one(tmp_path, method):
    """A worker stopped while it owns a slot, half its bytes written, then SIGKILLed: the
    others never read that slot, take it over, and read right values; the table stays within
    its budget."""
    path, data = _make(tmp_path)
    budget = 2 * SAMPLES * SAMPLE_BYTES
    a = zarrcore.open_array(path, mode="r", cache_bytes=budget, shared_cache=True)
    ctx = multiprocessing.get_context(method)
    victim = ctx.Process(target=_killed_writer, args=(a, 3))
    victim.start()
    deadline = time.monotonic() + DEADLINE
    while not _stopped(victim.pid):
        assert time.monotonic() < deadline and victim.is_alive(), "the writer never stopped"
        time.sleep(0.01)
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(DEADLINE)
    with _pool(method, a) as pool:
        _epoch(pool, data, 1)
        _epoch(pool, data, 2)
    info = a.cache_info()
    assert info["hits"] >= SAMPLES and info["used"] <= info["capacity"] <= budget, info


def _killed_writer(array, i):
    array._engine.cache.stop_mid_write(os.getpid())
    array[i]


def _read_forever(array):
    while True:
        for i in np.random.default_rng().permutation(SAMPLES):
            array[int(i)]


def test_workers_killed_at_any_moment_harm_no_one(tmp_path):
    """Readers filling a table too small for the data, SIGKILLed at random moments, then a
    pool: right values, every slot usable, the budget kept."""
    path, data = _make(tmp_path)
    budget = SAMPLES * SAMPLE_BYTES // 3
    a = zarrcore.open_array(path, mode="r", cache_bytes=budget, shared_cache=True)
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(3)
    for _ in range(6):
        procs = [ctx.Process(target=_read_forever, args=(a,)) for _ in range(2)]
        for p in procs:
            p.start()
        time.sleep(rng.uniform(0.05, 0.3))
        for p in procs:
            os.kill(p.pid, signal.SIGKILL)
            p.join(DEADLINE)
    with _pool("fork", a) as pool:
        _epoch(pool, data, 1)
    info = a.cache_info()
    assert info["used"] <= info["capacity"] <= budget
    assert info["entries"] >= budget // SAMPLE_BYTES - 8  # (no slot lost for good)


def test_the_budget_is_never_exceeded(tmp_path):
    path, data = _make(tmp_path)
    budget = SAMPLES * SAMPLE_BYTES // 4 + 100
    a = zarrcore.open_array(path, mode="r", cache_bytes=budget, shared_cache=True)
    ref = a._engine.cache.shared_ref
    size = os.fstat(ref.fd).st_size
    slots = budget // SAMPLE_BYTES
    # the chunks' bytes, plus a header and each slot's key, version and tag
    assert size <= slots * SAMPLE_BYTES + 4096 + 256 * slots
    with _pool("fork", a, workers=3) as pool:
        for seed in range(3):
            _epoch(pool, data, seed)
            info = a.cache_info()
            assert info["entries"] <= slots and info["used"] <= info["capacity"] <= budget
    assert os.fstat(ref.fd).st_size == size


def test_a_table_two_thirds_full_evicts_nothing(tmp_path):
    """Each key has two sets of slots and goes to the emptier: 64 keys read by threads into
    96 slots overflow no set and overwrite no entry, in any of 40 tables. (Filling a key's
    first set first overflowed one table in eight, and a slot seen empty was taken after
    another thread had filled it.)"""
    data = np.arange(40 * 64 * 16, dtype="float32").reshape(-1, 4, 4)
    path = str(tmp_path / "small.zarr")
    a = zarrcore.create_array(path, shape=data.shape, dtype=data.dtype, chunks=(1, 4, 4))
    a[...] = data
    settle()
    for window in range(40):
        a = zarrcore.open_array(path, mode="r", cache_bytes=96 * 64, shared_cache=True)
        keys = slice(64 * window, 64 * (window + 1))
        np.testing.assert_array_equal(a[keys], data[keys])
        info = a.cache_info()
        assert info["entries"] == 64 and info["evictions"] == 0, (window, sorted(info.items()))


_LOADER = textwrap.dedent("""
    import multiprocessing, os, sys, time
    import zarrcore
    from test_shared_cache import _init, _read

    if __name__ == "__main__":
        a = zarrcore.open_array(sys.argv[1], mode="r", cache_bytes=1 << 20, shared_cache=True)
        pool = multiprocessing.get_context(sys.argv[2]).Pool(2, _init, (a,))
        pool.map(_read, [[0, 1], [2, 3]])
        ref = a._engine.cache.shared_ref
        print(os.stat(f"/proc/self/fd/{ref.fd}").st_ino, flush=True)
        if sys.argv[3] == "killed":
            time.sleep(600)
        sys.stdin.readline()  # (the test has seen what it holds)
        pool.close()
        pool.join()
""")


def _holders(inode):
    """The processes with a descriptor or a mapping of the anonymous file `inode`."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []  # (gone meanwhile, or another user's)
        for fd in fds:
            try:  # (each on its own: a descriptor closed meanwhile must not hide the rest)
                if "memfd:zarrcore-cache" in os.readlink(f"/proc/{pid}/fd/{fd}") and os.stat(
                        f"/proc/{pid}/fd/{fd}").st_ino == inode:
                    found.add(int(pid))
            except OSError:
                continue
        try:
            with open(f"/proc/{pid}/maps") as f:
                if any("memfd:zarrcore-cache" in line and line.split()[4] == str(inode)
                       for line in f):
                    found.add(int(pid))
        except OSError:
            continue  # (gone meanwhile, or another user's)
    return found


@pytest.mark.parametrize("end", ["exits", "killed"])
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_nothing_is_left_once_the_loader_is_gone(tmp_path, method, end):
    path, _ = _make(tmp_path)
    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    here = os.path.dirname(os.path.abspath(__file__))
    loader = subprocess.Popen([sys.executable, "-c", _LOADER, path, method, end],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=here, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [here, os.path.join(os.path.dirname(here), "support")])})
    inode = int(loader.stdout.readline())
    assert loader.pid in _holders(inode)
    if end == "killed":
        loader.kill()
    else:
        loader.stdin.write("\n")  # (it ends now)
    loader.stdin.close()
    assert loader.wait(DEADLINE) in (0, -signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _holders(inode):  # orphaned workers see their parent gone and exit
        assert time.monotonic() < deadline, f"held by {_holders(inode)}"
        time.sleep(0.1)
    if os.path.isdir("/dev/shm"):
        assert not {n for n in set(os.listdir("/dev/shm")) - shm_before if "zarrcore" in n}


def test_bad_settings_name_the_setting(tmp_path):
    path, _ = _make(tmp_path)
    for bad in ("yes", 1, 2.0):
        with pytest.raises(SettingTypeError, match="shared_cache"):
            zarrcore.open_array(path, mode="r", cache_bytes=1 << 20, shared_cache=bad)
    with pytest.raises(SettingTypeError, match="shared_cache"):
        zarrcore.open_array(path, mode="r", config={"cache_bytes": 1 << 20,
                                                    "shared_cache": "on"})
    with pytest.raises(SettingValueError, match="shared_cache needs a cache budget"):
        zarrcore.open_array(path, mode="r", shared_cache=True)
    with pytest.raises(SettingValueError, match="shared_cache: no shared cache of"):
        zarrcore.open_array(path, mode="r", cache_bytes=2**62, shared_cache=True)
    with pytest.raises(ValueError, match="cache_bytes"):  # (the budget's own rule)
        zarrcore.open_array(path, mode="r", cache_bytes=SAMPLE_BYTES - 1, shared_cache=True)
    # False, or an array never opened shared, is the in-process cache
    a = zarrcore.open_array(path, mode="r", cache_bytes=1 << 20, shared_cache=False)
    assert a._engine.cache.shared_ref is None


class _Samples:
    """A map-style dataset of an array's samples (picklable: spawned workers get it)."""

    def __init__(self, array):
        self.array = array

    def __len__(self):
        return len(self.array)

    def __getitem__(self, i):
        return i, self.array[i]


def test_a_dataloader_shares_the_cache(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed (not in the test "
                                                "extra: a large download)")
    path, data = _make(tmp_path)
    a = zarrcore.open_array(path, mode="r", cache_bytes=2 * SAMPLES * SAMPLE_BYTES,
                            shared_cache=True)
    for method in METHODS:  # fork fills the table, the others read it
        before = a.cache_info()["hits"]
        loader = torch.utils.data.DataLoader(_Samples(a), batch_size=4, shuffle=True,
                                             num_workers=2, multiprocessing_context=method,
                                             timeout=DEADLINE)
        for index, batch in loader:
            np.testing.assert_array_equal(batch.numpy(), data[index.numpy()])
        assert a.cache_info()["hits"] - before == (0 if method == "fork" else SAMPLES)


# -- object stores: entries are found by the version (ETag) kept with them -------------------
def _s3_array(s3_bucket, proxy, shards=None, **kwargs):
    """(array read through `proxy`, shared cache of room for every sample, and `kwargs`; its
    data; the writer's array, not proxied) of a new array of samples on the moto server."""
    server, bucket = s3_bucket
    url, data = f"s3://{bucket}/a.zarr", _data()
    writer = zarrcore.create_array(url, shape=data.shape, dtype=data.dtype, chunks=(1, *SAMPLE),
                                   shards=shards, storage_options=server.storage_options())
    writer[...] = data
    a = zarrcore.open_array(url, mode="r", cache_bytes=2 * SAMPLES * SAMPLE_BYTES,
                            shared_cache=True, storage_options=server.storage_options(
                                proxy.endpoint), **kwargs)
    return a, data, writer


@pytest.fixture
def proxy(moto_server):
    from servers import CountingProxy

    proxy = CountingProxy(moto_server.port)
    yield proxy
    proxy.stop()


def _requests_of(proxy, work):
    """The requests for chunks, by method, that `work()` sent through `proxy` (not a forked
    worker's first request, which opens a connection)."""
    before = collections.Counter(proxy.methods)
    work()
    sent = collections.Counter()
    for (method, path), n in (proxy.methods - before).items():
        if "/a.zarr/c/" in path:
            sent[method] += n
    return sent


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_chunk_another_worker_read_from_s3_is_a_hit_without_its_bytes(s3_bucket, proxy,
                                                                         method):
    """One worker reads every sample in epoch 1, another in epoch 2: each of its reads asks
    whether the object still has the version kept with the entry (a HEAD, no body) and
    copies the entry out, neither fetching nor decoding the chunk."""
    a, data, _ = _s3_array(s3_bucket, proxy)
    with _pool(method, a, workers=1) as pool:
        _epoch(pool, data, 1)
    assert a.cache_info()["inserts"] == SAMPLES
    with _pool(method, a, workers=1) as pool:
        sent = _requests_of(proxy, lambda: _epoch(pool, data, 2))
    assert sent["GET"] == 0 and sent["HEAD"] == SAMPLES
    assert a.cache_info()["hits"] == SAMPLES


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_an_s3_object_rewritten_between_epochs_is_read_fresh(s3_bucket, proxy, method):
    """Two workers per epoch; between epochs another writer replaces samples 3 and 7 (and
    one with bytes of the same length): every worker reads the new values, fetching those
    objects only, and the entries of the old ones are dropped as stale."""
    a, data, writer = _s3_array(s3_bucket, proxy)
    with _pool(method, a) as pool:
        _epoch(pool, data, 1)
        data[3] += 1
        data[7] = data[7][::-1]
        writer[3] = data[3]
        writer[7] = data[7]
        sent = _requests_of(proxy, lambda: _epoch(pool, data, 2))
        assert sent["GET"] == 2 and sent["HEAD"] == SAMPLES
        info = a.cache_info()
        assert info["stale"] == 2 and info["hits"] == SAMPLES - 2
        sent = _requests_of(proxy, lambda: _epoch(pool, data, 3))
        assert sent["GET"] == 0 and a.cache_info()["hits"] == 2 * SAMPLES - 2
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_inner_chunks_another_worker_read_from_s3_shards_are_hits(s3_bucket, proxy, method):
    """Sharded samples on S3: an inner chunk's entry is of its shard's ETag and its span in
    the shard, the same in every process. A worker that never read the shards costs one
    request per sample in epoch 2 (the shard's index at the ETag kept with it in the shared
    table) and decodes nothing; a shard another writer replaced is read fresh, never stale."""
    a, data, writer = _s3_array(s3_bucket, proxy, shards=(4, *SAMPLE))
    with _pool(method, a, workers=1) as pool:
        _epoch(pool, data, 1)
    assert a.cache_info()["inserts"] == SAMPLES
    with _pool(method, a, workers=1) as pool:
        sent = _requests_of(proxy, lambda: _epoch(pool, data, 2))
        assert sent["GET"] == SAMPLES and sent["HEAD"] == 0
        assert a.cache_info()["hits"] == SAMPLES
        data[4:8] = -data[4:8]  # (the same size: uncompressed floats' signs)
        writer[4:8] = data[4:8]
        _epoch(pool, data, 3)
    info = a.cache_info()
    # (The read that found the shard replaced may count a hit of the index's old version
    # before it reads again.)
    assert info["misses"] == SAMPLES + 4 and info["stale"] == 4
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_shard_index_one_worker_read_is_known_to_the_others(s3_bucket, proxy, method):
    """A pool reads one sample of each shard, learning every shard's index; a new pool's
    worker reads the other samples by one range GET each (If-Match the ETag kept with the
    index in the shared table), reading no index. After another writer replaces a shard,
    the index kept there is refused once and read anew: every value is the new one."""
    a, data, writer = _s3_array(s3_bucket, proxy, shards=(4, *SAMPLE))
    firsts = np.arange(0, SAMPLES, 4)
    others = np.setdiff1d(np.arange(SAMPLES), firsts)
    with _pool(method, a, workers=1) as pool:
        sent = _requests_of(proxy, lambda: pool.map(_read, [firsts]))
    assert sent["GET"] == 2 * len(firsts)  # (each index, then the sample)
    with _pool(method, a, workers=1) as pool:
        sent = _requests_of(proxy, lambda: _check(pool.map(_read, [others]), data))
        assert sent["GET"] == len(others) and sum(sent.values()) == len(others)
        data[8:12] = -data[8:12]  # (the same size: uncompressed floats' signs)
        writer[8:12] = data[8:12]
        _check(pool.map(_read, [np.arange(8, 12)]), data)
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("shards", [None, (4, *SAMPLE)], ids=["chunks", "shards"])
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_with_recheck_open_epoch_two_asks_s3_nothing(s3_bucket, proxy, method, shards):
    """recheck_cached_data="open": what any worker found since the array was opened is
    taken from the shared table without a request, so epoch 2 of a new pool (spawned: its
    workers unpickle the array) sends none."""
    a, data, _ = _s3_array(s3_bucket, proxy, shards, recheck_cached_data="open")
    with _pool(method, a) as pool:
        _epoch(pool, data, 1)
    with _pool(method, a) as pool:
        sent = _requests_of(proxy, lambda: _epoch(pool, data, 2))
    assert sum(sent.values()) == 0
    assert a.cache_info()["hits"] == SAMPLES


def _check(results, data):
    for batch in results:
        for i, sample in batch:
            np.testing.assert_array_equal(sample, data[i])


@pytest.mark.parametrize("pad", [0, 97], ids=["kept", "too-long"])
def test_versions_kept_with_entries_are_bounded_and_only_a_hint(pad):
    """A reader of the same table that never read the array (an unpickled copy) asks at the
    versions kept with the entries: nothing fetched but what was rewritten since. A version
    longer than a tag holds (96 bytes) is not kept: that reader fetches every chunk, and the
    entries still save their decode."""
    store = VersionedStore(f"{os.getpid()}-{pad}", pad)
    data = _data()
    writer = zarrcore.create_array(store, shape=data.shape, dtype=data.dtype,
                                   chunks=(1, *SAMPLE))
    writer[...] = data
    a = zarrcore.open_array(store, mode="r", cache_bytes=2 * SAMPLES * SAMPLE_BYTES,
                            shared_cache=True)
    np.testing.assert_array_equal(a[...], data)
    data[5] += 1
    writer[5] = data[5]
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(b[...], data)
    assert b.store.fetched == (1 if pad == 0 else SAMPLES)
    info = b.cache_info()
    assert info["hits"] == SAMPLES - 1 and info["stale"] == 1
    np.testing.assert_array_equal(a[...], data)  # the first reader: at the new version too
    assert a.store.fetched == SAMPLES + (0 if pad == 0 else 1)
