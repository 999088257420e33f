"""Key locks live with the data: a lock file in each node's directory, keyed by the key's path
below it, so processes that reach a store by different paths (a symlink, another TMPDIR,
another store root) exclude each other, and every user who can write the store can lock."""
import multiprocessing
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
import traceback
import warnings

import numpy as np
import pytest

import zarrcore
from zarrcore.errors import LockUnavailableError
from zarrcore.storage.local import LOCK_FILE, TEMP_PREFIX

SHAPE, SHARD, INNER = (48, 40), (24, 40), (4, 4)


def create(path, **kwargs):
    return zarrcore.create_array(path, shape=SHAPE, dtype="int32", chunks=INNER, shards=SHARD,
                                 fill_value=0, **kwargs)


def write_rows(path, worker, workers, start, name=""):
    """Every `workers`-th row, from `worker` on: neighbours share inner chunks and shards."""
    a = zarrcore.open_array(path, path=name, mode="r+")
    start.wait()
    for i in range(worker, SHAPE[0], workers):
        a[i, :] = i + 1


def lost_rows(a):
    expected = np.arange(1, SHAPE[0] + 1, dtype="int32")[:, None]
    return int((a[...] != expected).any(axis=1).sum())


def run_processes(targets):
    """Start a spawned process per (target, args, env) at once; their exit codes."""
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for target, args, env in targets:
        saved = dict(os.environ)
        os.environ.update(env)  # a spawned child starts with the environment of this moment
        try:
            p = ctx.Process(target=target, args=args)
            p.start()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        procs.append(p)
    for p in procs:
        p.join(120)
    return [p.exitcode for p in procs]


def test_lock_file_lives_in_the_node_directory_and_is_never_listed(tmp_path):
    a = create(str(tmp_path / "s"), name="grp/arr")
    a[1, 1] = 5  # a partial write takes the inner chunk's shard lock
    assert (tmp_path / "s" / "grp" / "arr" / LOCK_FILE).is_file()
    store = zarrcore.LocalStore(tmp_path / "s")
    assert not [k for k in store.list_prefix("") if LOCK_FILE in k]
    assert LOCK_FILE not in store.list_dir("grp/arr")


@pytest.mark.slow
@pytest.mark.posix("symbolic links need a privilege on Windows")
def test_processes_through_a_symlink_and_other_tmpdirs_lose_nothing(tmp_path):
    """Two processes write through the real path with one TMPDIR, two through a symlink with
    another, and one through a store rooted above the array: all write rows of one array."""
    real = tmp_path / "real"
    a = create(str(real / "arr"))
    (tmp_path / "link").symlink_to(real)
    for d in ("t1", "t2"):
        (tmp_path / d).mkdir()
    workers = 5
    start = multiprocessing.get_context("spawn").Barrier(workers)
    paths = [(str(real / "arr"), "", "t1"), (str(real / "arr"), "", "t1"),
             (str(tmp_path / "link" / "arr"), "", "t2"), (str(tmp_path / "link" / "arr"), "", "t2"),
             (str(tmp_path / "link"), "arr", "t2")]
    codes = run_processes([
        (write_rows, (path, w, workers, start, name), {"TMPDIR": str(tmp_path / tmp)})
        for w, (path, name, tmp) in enumerate(paths)
    ])
    assert codes == [0] * workers
    assert lost_rows(a) == 0


@pytest.mark.posix("POSIX permission bits and umask")
@pytest.mark.parametrize("dir_mode, lock_mode", [
    (0o755, 0o600), (0o775, 0o660), (0o777, 0o666), (0o2770, 0o660),
])
def test_lock_file_is_writable_by_whoever_may_write_the_directory(tmp_path, dir_mode, lock_mode):
    """Whatever the umask: the lock file's write bits follow the directory's."""
    a = create(str(tmp_path / "a"))
    os.chmod(tmp_path / "a", dir_mode)
    old = os.umask(0o077)
    try:
        a[1, 1] = 5
    finally:
        os.umask(old)
    mode = stat.S_IMODE(os.stat(tmp_path / "a" / LOCK_FILE).st_mode)
    assert mode == lock_mode


def share_directories(base):
    for root, dirs, _ in os.walk(base):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o777)


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0,
                    reason="switching to a second user needs root and fork")
@pytest.mark.slow
def test_a_second_user_can_write_a_store_the_first_made(tmp_path):
    """The first user (umask 022) writes a store whose directories everyone may write; another
    user then writes partial chunks and shards of it, which take key locks, and updates the
    attributes of groups, whose metadata documents are locked in place."""
    base = tempfile.mkdtemp(prefix="zarrcore-users-", dir="/tmp")  # tmp_path is private to us
    try:
        os.chmod(base, 0o777)
        old = os.umask(0o022)
        try:
            sharded = create(os.path.join(base, "s"))
            plain = zarrcore.create_array(os.path.join(base, "p"), shape=(8, 8), dtype="u1",
                                          chunks=(4, 4), zarr_format=2)
            groups = [zarrcore.open_group(os.path.join(base, f"g{v}"), mode="w", zarr_format=v)
                      for v in (2, 3)]
            share_directories(base)
            sharded[0, 0] = 1  # makes the lock files, and new chunk directories: shared too
            plain[0, 0] = 1
            for g in groups:  # group metadata rewritten in a shared directory: lockable by all
                g.attrs["first"] = 1
            share_directories(base)
        finally:
            os.umask(old)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                zarrcore.open_array(os.path.join(base, "s"), mode="r+")[1, 1] = 2
                zarrcore.open_array(os.path.join(base, "p"), mode="r+")[1, 1] = 2
                for v in (2, 3):  # group metadata updates lock the metadata document itself
                    zarrcore.open_group(os.path.join(base, f"g{v}"), mode="r+").attrs["second"] = 2
                status = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert sharded[1, 1] == 2 and plain[1, 1] == 2
        assert sharded[0, 0] == 1 and plain[0, 0] == 1
        for v in (2, 3):
            assert dict(zarrcore.open_group(os.path.join(base, f"g{v}")).attrs) == {
                "first": 1, "second": 2}
    finally:
        shutil.rmtree(base)


def test_zarr_python_and_tensorstore_ignore_the_lock_file(tmp_path):
    zarr = pytest.importorskip("zarr")
    ts = pytest.importorskip("tensorstore")
    root = str(tmp_path / "g")
    g = zarrcore.open_group(root, mode="w")
    a = g.create_array("a", shape=(8, 8), dtype="int16", chunks=(4, 4), shards=(8, 8))
    a[1:3, 1:3] = 7  # partial: the lock file of "a"
    g.attrs["x"] = 1  # locks the group's zarr.json itself
    assert (tmp_path / "g" / "a" / LOCK_FILE).exists()
    zg = zarr.open_group(root, mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sorted(name for name, _ in zg.members()) == ["a"]
    za = zarr.open_array(root, path="a", mode="r")
    assert za.nchunks_initialized == a.nchunks_initialized
    np.testing.assert_array_equal(za[...], a[...])
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root + "/a"}}).result()
    np.testing.assert_array_equal(t.read().result(), a[...])


class ThirdPartyStore(zarrcore.Store):
    """A store of its own kind, without a lock of its own."""

    def __init__(self):
        super().__init__()
        self.data = {}

    def get(self, key, start=None, stop=None):
        value = self.data.get(key)
        return None if value is None else value[slice(start, stop)]

    def set(self, key, value):
        self.data[key] = bytes(value)

    def delete(self, key):
        self.data.pop(key, None)

    def exists(self, key):
        return key in self.data

    def list_prefix(self, prefix):
        return [k for k in self.data if k.startswith(prefix)]

    def list_dir(self, prefix):
        head = prefix + "/" if prefix else ""
        return sorted({k[len(head):].split("/")[0] for k in self.data if k.startswith(head)})


def test_a_store_that_cannot_lock_fails_loudly():
    """Read-modify-writes on a store without cross-process locks raise rather than risk
    losing a concurrent update; whole-chunk reads still work."""
    store = ThirdPartyStore()
    a = zarrcore.create_array(store, shape=(8,), dtype="u1", chunks=(4,))
    with pytest.raises(LockUnavailableError):
        a[1:3] = 1
    with pytest.raises(LockUnavailableError):
        a.attrs["x"] = 1
    np.testing.assert_array_equal(a[...], 0)


# -- temporary files ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork for the live writer")
def test_stale_temporary_files_go_with_a_listing_and_live_ones_stay(tmp_path):
    """A temporary file no one holds (its writer was killed) is removed when a writable store
    lists its directory; one a live writer holds stays; a read-only store removes nothing."""
    import fcntl

    a = zarrcore.create_array(str(tmp_path / "a"), shape=(8,), dtype="u1", chunks=(4,))
    a[...] = 1
    stale = tmp_path / "a" / "c" / (TEMP_PREFIX + "dead-1")
    stale.write_bytes(b"half a chunk")
    live = tmp_path / "a" / "c" / (TEMP_PREFIX + "live-1")
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            with open(live, "wb") as f:
                fcntl.lockf(f, fcntl.LOCK_EX)
                os.write(ready_w, b"x")
                time.sleep(60)
        finally:
            os._exit(0)
    try:
        os.read(ready_r, 1)
        reader = zarrcore.LocalStore(tmp_path / "a", read_only=True)
        assert sorted(reader.list_prefix("")) == ["c/0", "c/1", "zarr.json"]
        assert stale.exists()
        store = zarrcore.LocalStore(tmp_path / "a")
        assert sorted(store.list_prefix("")) == ["c/0", "c/1", "zarr.json"]
        assert not stale.exists() and live.exists()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert store.remove_stale_temporary_files() == 1
    assert not live.exists()


def test_cleaning_never_takes_a_live_writers_temporary_file(tmp_path):
    """Listing (and so cleaning) all the time beside writers fails no write."""
    path = str(tmp_path / "a")
    a = zarrcore.create_array(path, shape=(64, 64), dtype="int32", chunks=(4, 4))
    store = zarrcore.LocalStore(path)
    stop, errors = threading.Event(), []

    def clean():
        while not stop.is_set():
            store.remove_stale_temporary_files()

    cleaner = threading.Thread(target=clean)
    cleaner.start()
    try:
        for g in range(1, 30):
            a[...] = g
            a[1:3, 1:63] = -g  # partial chunks: the Python writer's temporary files
            store.set("other", b"x" * g)
    except BaseException as e:
        errors.append(e)
    finally:
        stop.set()
        cleaner.join()
    assert not errors
    assert a[0, 0] == 29 and a[1, 1] == -29


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_directories_hold_nothing_zarr_python_would_list(tmp_path, zarr_format):
    """Updates of a group's metadata lock its metadata file itself: zarr-python lists every
    file of a group's directory as a member and warns of those it does not know."""
    zarr = pytest.importorskip("zarr")
    root = str(tmp_path / "g")
    g = zarrcore.open_group(root, mode="w", zarr_format=zarr_format)
    sub = g.create_group("sub")
    a = sub.create_array("a", shape=(8, 8), dtype="int16", chunks=(4, 4), fill_value=0)
    a[1:3, 1:3] = 7  # partial: the lock file of "a" (arrays keep theirs)
    a.resize((6, 10))
    a.append(np.ones((2, 10), "int16"))
    a.attrs["unit"] = "m"
    g.attrs["x"] = 1
    sub.attrs.update(y=2)
    del g.attrs["x"]
    zarrcore.consolidate_metadata(root)
    zarrcore.consolidate_metadata(root, path="sub")
    for group_dir in (tmp_path / "g", tmp_path / "g" / "sub"):
        extra = [n for n in os.listdir(group_dir)
                 if n not in ("zarr.json", ".zgroup", ".zattrs", ".zmetadata", "sub", "a")]
        assert extra == []
    assert (tmp_path / "g" / "sub" / "a" / LOCK_FILE).exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zg = zarr.open_group(root, mode="r", use_consolidated=False)
        assert sorted(name for name, _ in zg.members(max_depth=None)) == ["sub", "sub/a"]
        assert zg["sub"].attrs["y"] == 2
        np.testing.assert_array_equal(zg["sub/a"][...], a[...])
