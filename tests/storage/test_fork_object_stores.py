"""Worker processes read object stores (S3 and HTTP through obstore) whatever their start
method: a process forked after its parent read through obstore (multiprocessing's 'fork',
os.fork, DataLoader workers) runs obstore's requests in a helper process of its own, with
connections of its own; spawn and forkserver start obstore afresh. Every read is compared
with numpy, and every wait has a deadline, so a hang fails."""
import multiprocessing
import os
import sys
import threading

import numpy as np
import pytest

import zarrcore
from _child import run_in_child
from zarrcore.storage import _obstore_runtime

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
              pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")]

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")

SHAPE, CHUNKS = (48, 24), (1, 24)
# Seconds a pool of workers may take for all its reads (a hang fails the test here).
POOL_DEADLINE = 120


def _data():
    return np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)


@pytest.fixture(params=["s3", "http"])
def remote_array(request):
    """(array, data) of an array read through obstore, S3 (sharded: two samples a shard) or
    HTTP, already read by this process."""
    data = _data()
    if request.param == "s3":
        server, bucket = request.getfixturevalue("s3_bucket")
        a = zarrcore.create_array(f"s3://{bucket}/a.zarr", shape=SHAPE, dtype="float32",
                                  chunks=CHUNKS, shards=(2, 24),
                                  storage_options=server.storage_options())
        a[...] = data
    else:
        server = request.getfixturevalue("http_server")
        name = f"a-{os.urandom(4).hex()}.zarr"  # (the server's directory is the session's)
        zarrcore.create_array(f"{server.root}/{name}", shape=SHAPE, dtype="float32",
                              chunks=CHUNKS)[...] = data
        a = zarrcore.open_array(f"{server.url}/{name}", mode="r")
    np.testing.assert_array_equal(a[...], data)  # obstore's runtime runs in this process
    return a, data


# The array a pool's workers read (set before the pool starts: forked workers inherit it,
# spawned ones get it by pickle through _set_array).
_array = None


def _set_array(a):
    global _array
    _array = a


def _read_rows(rows):
    """(pid, rows read) in a worker: the rows of _array, each read alone, as samples."""
    return os.getpid(), np.stack([_array[int(r)] for r in rows])


def _pool_reads(a, data, method, workers=2, batches=8):
    """Read shuffled batches of rows of `a` in a pool of `workers` of start `method`,
    comparing each with `data`; the pids of the workers that read."""
    _set_array(a)
    context = multiprocessing.get_context(method)
    order = np.random.default_rng(0).permutation(SHAPE[0]).reshape(batches, -1)
    with context.Pool(workers, initializer=_set_array, initargs=(a,)) as pool:
        results = pool.map_async(_read_rows, list(order)).get(POOL_DEADLINE)
    for rows, (_, got) in zip(order, results):
        np.testing.assert_array_equal(got, data[rows])
    return {pid for pid, _ in results}


def test_a_fork_pool_reads_after_the_parent_did(remote_array):
    a, data = remote_array
    pids = _pool_reads(a, data, "fork")
    assert os.getpid() not in pids
    np.testing.assert_array_equal(a[...], data)  # and the parent still reads


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_and_forkserver_pools_read(remote_array, method):
    a, data = remote_array
    _pool_reads(a, data, method)


def test_os_fork_children_read_and_write_s3(s3_bucket):
    server, bucket = s3_bucket
    data = _data()
    url = f"s3://{bucket}/w.zarr"
    a = zarrcore.create_array(url, shape=SHAPE, dtype="float32", chunks=CHUNKS,
                              storage_options=server.storage_options())
    a[...] = data

    def child():
        np.testing.assert_array_equal(a[5:40:3], data[5:40:3])
        a[0] = -1  # a write, a listing and a new store of the child's own
        b = zarrcore.open_array(url, mode="r", storage_options=server.storage_options())
        np.testing.assert_array_equal(b[0], np.full(SHAPE[1], -1, "float32"))
        assert "zarr.json" in b.store.list_dir("")

        def grandchild():  # forked from a child that read through its helper
            np.testing.assert_array_equal(b[1:3], data[1:3])

        assert run_in_child(grandchild, timeout=60) == 0

    assert run_in_child(child, timeout=90) == 0
    data[0] = -1
    np.testing.assert_array_equal(a[...], data)


_TEMPLATE_PROBE = """
import json, multiprocessing, sys
import zarrcore
from zarrcore.storage import _obstore_runtime
if sys.argv[2] != "default":
    multiprocessing.set_start_method(sys.argv[2])
url, options = json.loads(sys.argv[1])
zarrcore.open_array(url, mode="r", storage_options=options)[0]
print(_obstore_runtime._template is not None, len(_obstore_runtime._sent_to_template))
"""


@pytest.mark.parametrize("method, started", [("default", sys.platform == "linux"
                                                and sys.version_info < (3, 14)),
                                               ("fork", True), ("spawn", False)])
def test_a_process_that_forks_its_workers_starts_the_template_at_once(s3_bucket, method,
                                                                      started):
    """Where workers are forked (the start method), the helper template starts when obstore
    first runs, not at the first fork, and is sent the client made before to build: a worker
    forked soon after waits neither for the template's interpreter nor for that client.
    Elsewhere no process starts until a fork."""
    import json
    import subprocess

    server, bucket = s3_bucket
    url = f"s3://{bucket}/t.zarr"
    zarrcore.create_array(url, shape=SHAPE, dtype="float32", chunks=CHUNKS,
                          storage_options=server.storage_options())
    probe = json.dumps([url, server.storage_options()])
    out = subprocess.run([sys.executable, "-c", _TEMPLATE_PROBE, probe, method],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(started), str(int(started))]


def test_a_forked_child_sees_missing_chunks_and_replaced_shards(s3_bucket):
    """obstore's answers that are errors come back to the child as themselves: a missing
    chunk (404) reads as fill, a shard replaced since its index was read (412 on If-Match)
    is read again through its new index."""
    server, bucket = s3_bucket
    data = _data()
    url = f"s3://{bucket}/r.zarr"
    a = zarrcore.create_array(url, shape=SHAPE, dtype="float32", chunks=CHUNKS,
                              shards=(8, 24), fill_value=7,
                              storage_options=server.storage_options())
    a[:40] = data[:40]  # the last shard is not stored
    data[40:] = 7
    np.testing.assert_array_equal(a[...], data)  # every index known here

    def child():
        np.testing.assert_array_equal(a[44], data[44])
        writer = zarrcore.open_array(url, mode="r+", storage_options=server.storage_options())
        new = np.repeat(np.arange(8, dtype="float32")[:, None], SHAPE[1], axis=1)
        writer[0:8] = new
        np.testing.assert_array_equal(a[3], new[3])
        np.testing.assert_array_equal(a[0:8], new)

    assert run_in_child(child, timeout=60) == 0


def test_a_child_forked_while_the_shard_indexes_are_locked_reads(s3_bucket):
    """A thread of the parent holds the lock of an array's kept shard indexes at the fork
    (here held throughout, so the fork surely finds it held): the child has a lock of its
    own, and reads."""
    server, bucket = s3_bucket
    data = _data()
    a = zarrcore.create_array(f"s3://{bucket}/l.zarr", shape=SHAPE, dtype="float32",
                              chunks=CHUNKS, shards=(8, 24),
                              storage_options=server.storage_options())
    a[...] = data
    np.testing.assert_array_equal(a[3], data[3])
    lock = a._engine.shard_indexes._lock
    lock.acquire()
    try:
        def child():
            np.testing.assert_array_equal(a[5], data[5])
            np.testing.assert_array_equal(a[20], data[20])

        assert run_in_child(child, timeout=30) == 0
    finally:
        lock.release()
    np.testing.assert_array_equal(a[6], data[6])


def test_children_forked_while_the_parent_reads_in_threads(remote_array):
    """The parent forks while its own reads are in flight on other threads (obstore's runtime
    busy, the I/O loop's slots taken): every child reads right, and so does the parent."""
    a, data = remote_array
    stop, failures = threading.Event(), []
    # (Made, and the readers' and children's selections read once, here: a thread's first
    # use of a module imported on demand (np.random, a route's) imports it, and a child
    # forked while that import's lock is held waits on it forever, whatever the store.)
    rngs = [np.random.default_rng(seed) for seed in range(3)]
    np.testing.assert_array_equal(a[1:5], data[1:5])
    np.testing.assert_array_equal(a[3], data[3])

    def reader(rng):
        try:
            while not stop.is_set():
                r = int(rng.integers(0, SHAPE[0] - 4))
                np.testing.assert_array_equal(a[r:r + 4], data[r:r + 4])
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=reader, args=(rng,)) for rng in rngs]
    for t in threads:
        t.start()
    try:
        def child():
            rows = np.random.default_rng(os.getpid()).permutation(SHAPE[0])[:6]
            for r in rows:
                np.testing.assert_array_equal(a[int(r)], data[r])

        statuses = [run_in_child(child, timeout=60) for _ in range(6)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures
    assert statuses == [0] * 6


def test_a_forked_child_opens_connections_of_its_own(s3_bucket):
    """None of the parent's connections: the child's requests reach the server over new
    connections (the helper's), and the parent's keep working afterwards."""
    from servers import CountingProxy

    server, bucket = s3_bucket
    data = _data()
    zarrcore.create_array(f"s3://{bucket}/c.zarr", shape=SHAPE, dtype="float32",
                          chunks=CHUNKS, storage_options=server.storage_options())[...] = data
    proxy = CountingProxy(server.port)
    try:
        a = zarrcore.open_array(f"s3://{bucket}/c.zarr", mode="r",
                                storage_options=server.storage_options(proxy.endpoint))
        np.testing.assert_array_equal(a[...], data)
        parents = proxy.connections

        def child():
            np.testing.assert_array_equal(a[3], data[3])

        assert run_in_child(child, timeout=60) == 0
        assert proxy.connections > parents
        np.testing.assert_array_equal(a[7:9], data[7:9])
    finally:
        proxy.stop()


class _StartsAThread:
    """Unpickled, starts a thread: as a store whose building starts obstore's runtime."""

    def __reduce__(self):
        import _thread
        import time

        return _thread.start_new_thread, (time.sleep, (30,))


def _template(env=None):
    """(this end of its socket, the process) of a new helper template."""
    import socket
    import subprocess

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    template = subprocess.Popen(
        _obstore_runtime._helper_command("template", str(theirs.fileno())),
        pass_fds=(theirs.fileno(),), env=env)
    theirs.close()
    return ours, template


def _head_by_helper(template, blob, key):
    """(the helper's socket, the meta of `key`) of a HEAD that a helper the template gives
    runs on the store pickled as `blob`."""
    import pickle
    import socket

    from zarrcore.storage import _obstore_helper

    mine, helpers = socket.socketpair()
    socket.send_fds(template, [b"h"], [helpers.fileno()])
    helpers.close()
    mine.settimeout(60)
    frame = pickle.dumps((1, "head", blob, (key,), {}))
    mine.sendall(_obstore_helper.HEADER.pack(len(frame)) + frame)
    size, = _obstore_helper.HEADER.unpack(
        _obstore_helper.receive_exactly(mine, _obstore_helper.HEADER.size))
    ident, ok, meta = pickle.loads(_obstore_helper.receive_exactly(mine, size))
    assert (ident, ok) == (1, True), meta
    return mine, meta


def test_the_template_builds_stores_ahead_and_outlives_bad_ones(s3_bucket):
    """The template takes stores' pickles to build ahead (a bad one is dropped, and one whose
    building starts a thread makes it start afresh, since forking it would no longer be
    safe), then forks a helper that answers calls on them; it ends when its socket closes."""
    import pickle

    server, bucket = s3_bucket
    a = zarrcore.create_array(f"s3://{bucket}/p.zarr", shape=SHAPE, dtype="float32",
                              chunks=CHUNKS, storage_options=server.storage_options())
    a[0] = 7
    blob = pickle.dumps(a.store._store)
    ours, template = _template()
    try:
        ours.send(b"s" + b"not a pickle")
        ours.send(b"s" + pickle.dumps(_StartsAThread()))
        ours.send(b"s" + blob)
        mine, meta = _head_by_helper(ours, blob, "p.zarr/c/0/0")
        assert meta["size"] > 0
        mine.close()
    finally:
        ours.close()
        assert template.wait(60) == 0


def _stat(pid):
    """The fields of /proc/PID/stat after the command's name (state, parent's pid...); None
    where the process is gone (reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _with_marker(marker):
    """The processes whose environment holds `marker` (the template and the helpers it
    forked), but zombies."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if (_stat(pid) or ["Z"])[0] == "Z":
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() in f.read():
                    found.add(int(pid))
        except OSError:
            continue  # (gone meanwhile, or another user's)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_template_keeps_a_spare_helper_ahead(counted):
    """Once idle with a store built, the template forks one spare helper (no more while
    nothing changes), which asks no server anything; the next child's socket goes to it and
    is served; and every helper ends once the template's socket has closed."""
    import pickle
    import time
    import uuid

    server, bucket, proxy = counted
    a = zarrcore.create_array(f"s3://{bucket}/w.zarr", shape=SHAPE, dtype="float32",
                              chunks=CHUNKS, storage_options=server.storage_options())
    a[0] = 7
    blob = pickle.dumps(zarrcore.open_array(
        f"s3://{bucket}/w.zarr", storage_options=server.storage_options(proxy.endpoint)
    ).store._store)
    name, value = "ZARRCORE_TEST_TEMPLATE", uuid.uuid4().hex
    marker = f"{name}={value}"
    ours, template = _template({**os.environ, name: value})

    def settled(count):
        deadline = time.monotonic() + 60
        while len(_with_marker(marker)) != count:
            assert time.monotonic() < deadline, (count, _with_marker(marker))
            time.sleep(0.02)
        time.sleep(0.5)
        found = _with_marker(marker)
        assert len(found) == count
        return found

    try:
        settled(1)  # (nothing built: no spare)
        before = proxy.requests
        ours.send(b"s" + blob)
        spare = settled(2) - {template.pid}  # the template and its spare
        assert proxy.requests == before
        mine, meta = _head_by_helper(ours, blob, "w.zarr/c/0/0")
        assert meta["size"] > 0
        assert spare < settled(3)  # the spare serves it; a new spare waits
        mine.close()
        assert not spare & settled(2)  # (it ended with the socket it served)
    finally:
        ours.close()
        assert template.wait(60) == 0
    deadline = time.monotonic() + 60
    while _with_marker(marker):
        assert time.monotonic() < deadline, "a helper outlived the template"
        time.sleep(0.05)


def _templates_started_here():
    """The running helper templates whose parent is this process."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(pid)
        if stat is None or stat[0] == "Z" or int(stat[1]) != os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue  # (gone meanwhile)
        if b"template" in args and any(b"_obstore_helper" in arg for arg in args):
            found.add(int(pid))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_template_is_reaped_and_started_again(http_server):
    """The template killed (SIGKILL) leaves no zombie: before the next fork this process
    reaps it and starts another, which gives the child its helper (rather than the child
    starting a helper interpreter of its own), and the child reads through it."""
    import signal
    import time

    data = _data()
    name = f"k-{os.urandom(4).hex()}.zarr"
    zarrcore.create_array(f"{http_server.root}/{name}", shape=SHAPE, dtype="float32",
                          chunks=CHUNKS)[...] = data
    a = zarrcore.open_array(f"{http_server.url}/{name}", mode="r")
    np.testing.assert_array_equal(a[0], data[0])  # obstore runs in this process
    _obstore_runtime.prepare_helpers([])  # (as before a fork: the template runs)
    (killed,) = _templates_started_here()
    os.kill(killed, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _stat(killed)[0] != "Z":  # (nothing reaps it before the next fork)
        assert time.monotonic() < deadline, _stat(killed)
        time.sleep(0.01)

    def child():
        _, helper = _obstore_runtime._forked._unread
        assert helper is None, "the child started a helper interpreter of its own"
        np.testing.assert_array_equal(a[3], data[3])

    assert run_in_child(child, timeout=60) == 0
    assert _stat(killed) is None, "the killed template is left a zombie"
    assert len(_templates_started_here() - {killed}) == 1


def test_a_child_whose_helper_cannot_start_is_told_how_to_start_workers(remote_array,
                                                                      monkeypatch):
    """A child without obstore's helper cannot read S3; an HTTP server's chunks come by the
    plain client, which needs none."""
    a, data = remote_array

    def child():
        # Neither the helper asked for at the fork nor the template, and no interpreter to
        # start one.
        _obstore_runtime._forked = _obstore_runtime._template = None
        monkeypatch.setattr(sys, "executable", "/nonexistent/python")
        if a.store.url.startswith("http://"):
            np.testing.assert_array_equal(a[2], data[2])
            return
        with pytest.raises(zarrcore.errors.StoreError,
                           match='DataLoader\\(multiprocessing_context="spawn"\\)'):
            a[2]

    assert run_in_child(child, timeout=60) == 0


def test_a_forked_child_opens_plain_connections_of_its_own(http_server):
    """A child never reads from its parent's kept connections (answers meant for the parent
    would go to either): it opens its own, and the parent's still serve the parent."""
    with open(f"{http_server.root}/forked-plain", "wb") as f:
        f.write(bytes(range(256)) * 100)
    store = zarrcore.storage.make_store(http_server.url)
    assert store.get("forked-plain", 0, 4) == bytes(range(4))
    kept = list(store._plain._idle)
    assert kept

    def child():
        assert not store._plain._idle
        assert store.get("forked-plain", 4, 8) == bytes(range(4, 8))

    assert run_in_child(child, timeout=60) == 0
    assert store.get("forked-plain", 8, 12) == bytes(range(8, 12))
    assert store._plain._idle[0] in kept


def test_a_child_with_an_obstore_memory_store_is_told_how_to_start_workers():
    """An obstore MemoryStore's data is in this process's runtime only: it cannot go to a
    child's helper, and the child is told what to do rather than reading nothing."""
    from obstore.store import MemoryStore

    a = zarrcore.create_array(zarrcore.storage.ObjectStore(MemoryStore()), shape=(4,),
                              dtype="int32", chunks=(2,))
    a[...] = [1, 2, 3, 4]
    assert a[...].tolist() == [1, 2, 3, 4]

    def child():
        with pytest.raises(zarrcore.errors.StoreError,
                           match='DataLoader\\(multiprocessing_context="spawn"\\)'):
            a[...]

    assert run_in_child(child, timeout=60) == 0


def test_a_dataloader_with_forked_workers_reads(remote_array):
    torch = pytest.importorskip("torch", reason="torch is not installed (not in the test "
                                                "extra: a large download)")
    a, data = remote_array

    class Samples(torch.utils.data.Dataset):
        def __len__(self):
            return SHAPE[0]

        def __getitem__(self, i):
            return i, a[i]

    loader = torch.utils.data.DataLoader(Samples(), batch_size=6, shuffle=True, num_workers=2,
                                         multiprocessing_context="fork", timeout=60)
    seen = 0
    for _ in range(2):  # two epochs
        for index, batch in loader:
            np.testing.assert_array_equal(batch.numpy(), data[index.numpy()])
            seen += len(index)
    assert seen == 2 * SHAPE[0]
