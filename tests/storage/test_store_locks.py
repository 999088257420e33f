"""Key locks live beside the data: a lock file beside each hierarchy's top, keyed by the key's
path below it, so processes that reach a store by different paths (a symlink, another TMPDIR,
another store root) exclude each other, every user who can write the store can lock, and no
reader or copy of the store meets it."""
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
from dict_store import DictStore
from zarrcore.errors import LockUnavailableError
from zarrcore._native.files import LOCK_FILE, TEMP_PREFIX

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


def beside(top):
    """The lock file of the hierarchy whose top is the directory `top`."""
    return top.parent / f".{top.name}{LOCK_FILE}"


def test_lock_file_lives_beside_the_hierarchy_and_never_in_the_store(tmp_path):
    a = create(str(tmp_path / "s"), name="grp/arr")
    a[1, 1] = 5  # a partial write takes the inner chunk's shard lock
    assert beside(tmp_path / "s").is_file()
    assert not [f for _, _, files in os.walk(tmp_path / "s") for f in files if LOCK_FILE in f]
    store = zarrcore.LocalStore(tmp_path)
    assert not [k for k in store.list_prefix("") if LOCK_FILE in k]
    assert store.list_dir("") == ["s"]


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
    mode = stat.S_IMODE(os.stat(beside(tmp_path / "a")).st_mode)
    assert mode == lock_mode


def share_directories(base):
    for root, dirs, _ in os.walk(base):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o777)


def as_nobody(work):
    """Run `work` in a forked child as the user and group 65534: its exit code."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            work()
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


needs_root = pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0,
                                reason="switching to a second user needs root and fork")


@needs_root
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

        def writes():
            zarrcore.open_array(os.path.join(base, "s"), mode="r+")[1, 1] = 2
            zarrcore.open_array(os.path.join(base, "p"), mode="r+")[1, 1] = 2
            for v in (2, 3):  # group metadata updates lock the metadata document itself
                zarrcore.open_group(os.path.join(base, f"g{v}"), mode="r+").attrs["second"] = 2

        assert as_nobody(writes) == 0
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
    a[1:3, 1:3] = 7  # partial: the lock file of the hierarchy
    g.attrs["x"] = 1  # locks the group's zarr.json itself
    assert beside(tmp_path / "g").exists()
    zg = zarr.open_group(root, mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sorted(name for name, _ in zg.members()) == ["a"]
    za = zarr.open_array(root, path="a", mode="r")
    assert za.nchunks_initialized == a.nchunks_initialized
    np.testing.assert_array_equal(za[...], a[...])
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root + "/a"}}).result()
    np.testing.assert_array_equal(t.read().result(), a[...])


def test_a_store_that_cannot_lock_fails_loudly():
    """Read-modify-writes on a store without cross-process locks raise rather than risk
    losing a concurrent update; whole-chunk reads still work."""
    store = DictStore()  # (a store of its own kind, without a lock of its own)
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
    a[1:3, 1:3] = 7  # partial: the lock file beside the hierarchy
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
    assert beside(tmp_path / "g").exists()
    assert not (tmp_path / "g" / "sub" / "a" / LOCK_FILE).exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zg = zarr.open_group(root, mode="r", use_consolidated=False)
        assert sorted(name for name, _ in zg.members(max_depth=None)) == ["sub", "sub/a"]
        assert zg["sub"].attrs["y"] == 2
        np.testing.assert_array_equal(zg["sub/a"][...], a[...])


# -- where lock files are ----------------------------------------------------------------------

ZARR_DOCUMENTS = ("zarr.json", ".zarray", ".zattrs", ".zgroup")


def stored_files(root):
    """Paths (with '/') of every file below `root`."""
    return sorted(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")
                  for d, _, files in os.walk(root) for f in files)


def is_zarr_key(key, zarr_format):
    *_, name = key.split("/")
    if name in ZARR_DOCUMENTS:
        return True
    if zarr_format == 3:
        return "/c/" in f"/{key}" and all(p.isdigit() for p in key.split("/c/", 1)[1].split("/"))
    return all(p.isdigit() for p in name.split("."))


@pytest.mark.parametrize("zarr_format, shards", [(2, None), (3, None), (3, (4, 8))])
def test_writes_leave_nothing_but_zarr_keys_in_the_store(tmp_path, zarr_format, shards):
    """Whole, partial and sharded writes, resizes, appends and attribute updates of an array
    in a group store no file of their own below the store's root: zarr-python lists only
    Zarr keys (and so does a copy of the directory)."""
    zarr = pytest.importorskip("zarr")
    root = tmp_path / "s"
    g = zarrcore.open_group(str(root), mode="w", zarr_format=zarr_format)
    a = g.require_group("g").create_array(
        "a", shape=(8, 8), dtype="int16", chunks=(2, 4), fill_value=0, shards=shards)
    a[...] = 1
    a[1:3, 1:3] = 7
    a.resize((6, 8))
    a.append(np.full((2, 8), 3, "int16"))
    a.attrs["unit"] = "m"
    g.attrs["x"] = 1
    files = stored_files(root)
    assert [f for f in files if not is_zarr_key(f, zarr_format)] == []

    async def listed():
        return sorted([k async for k in zarr.storage.LocalStore(str(root)).list()])

    import asyncio
    assert asyncio.run(listed()) == files
    za = zarr.open_array(str(root), path="g/a", mode="r", zarr_format=zarr_format)
    np.testing.assert_array_equal(za[...], a[...])
    assert sorted(os.listdir(tmp_path)) == sorted(["s", f".s{LOCK_FILE}"])


def test_stores_opened_at_every_level_of_a_hierarchy_lock_alike(tmp_path):
    """Processes that open the store at the hierarchy's top, at a group in it, at the array
    itself and through a symbolic link to the group write rows of one array: none is lost,
    all locks are in the one file beside the hierarchy."""
    root = tmp_path / "top"
    g = zarrcore.open_group(str(root), mode="w")
    a = g.require_group("g").create_array("a", shape=SHAPE, dtype="int32", chunks=INNER,
                                          shards=SHARD, fill_value=0)
    (tmp_path / "link").symlink_to(root / "g")
    paths = [(str(root), "g/a"), (str(root / "g"), "a"), (str(root / "g" / "a"), ""),
             (str(tmp_path / "link"), "a")]
    start = multiprocessing.get_context("spawn").Barrier(len(paths))
    codes = run_processes([(write_rows, (path, w, len(paths), start, name), {})
                           for w, (path, name) in enumerate(paths)])
    assert codes == [0] * len(paths)
    assert lost_rows(a) == 0
    assert sorted(os.listdir(tmp_path)) == sorted(["top", "link", f".top{LOCK_FILE}"])
    assert [f for f in stored_files(root) if LOCK_FILE in f] == []


CREATED_NODES = 24


def create_nodes(root, worker, start, results):
    """Create arrays (of a shape this worker's own) and groups (with its own attributes) at
    the paths every worker creates, none of whose parents exist yet: per path, what it got."""
    got = []
    start.wait()
    for n in range(CREATED_NODES):
        try:
            if n % 2:
                zarrcore.create_group(root, path=f"p{n}/g", attributes={"by": worker})
            else:
                zarrcore.create_array(root, name=f"p{n}/a", shape=(worker + 1,), dtype="u1",
                                      chunks=(1,))
            got.append("created")
        except zarrcore.errors.ZarrcoreError as e:
            got.append(type(e).__name__)
    results.put((worker, got))


@pytest.mark.slow
def test_processes_creating_one_node_at_once_leave_one_creator(tmp_path):
    """Processes create the same arrays and groups (and the groups above them) at once on one
    local store: per node one of them creates it, the others get NodeExistsError, and the
    stored metadata is the creator's."""
    ctx = multiprocessing.get_context("spawn")
    workers = 3
    start, results = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=create_nodes, args=(str(tmp_path / "s"), w, start, results))
             for w in range(workers)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * workers
    for n in range(CREATED_NODES):
        outcomes = [got[w][n] for w in range(workers)]
        creators = [w for w, o in enumerate(outcomes) if o == "created"]
        assert len(creators) == 1, (n, outcomes)
        error = "ContainsGroupError" if n % 2 else "ContainsArrayError"
        assert sorted(outcomes) == sorted(["created"] + [error] * (workers - 1)), (n, outcomes)
        if n % 2:
            stored = zarrcore.open_group(str(tmp_path / "s"), path=f"p{n}/g", mode="r")
            assert stored.attrs.asdict() == {"by": creators[0]}
        else:
            stored = zarrcore.open_array(str(tmp_path / "s"), path=f"p{n}/a", mode="r")
            assert stored.shape == (creators[0] + 1,)
    assert not [f for _, _, files in os.walk(tmp_path / "s") for f in files
                if "zarrcore" in f]


def hold_old_lock(lock_file, key, ready, seconds):
    """Hold the lock of `key` as zarrcore before the lock files moved did: a byte of the node's
    own lock file."""
    import fcntl
    from zarrcore._native import shard_io as _shard_io

    at = int(_shard_io.sha256_hex(key.encode())[:8], 16)
    with open(lock_file, "r+b") as f:
        fcntl.lockf(f, fcntl.LOCK_EX, 1, at)
        ready.set()
        time.sleep(seconds)


def test_a_node_with_a_lock_file_of_its_own_keeps_locking_there(tmp_path):
    """A node directory that holds a lock file (made by an older version) keeps its keys'
    locks there, as that version takes them: both exclude each other."""
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(8,), dtype="u1", chunks=(4,),
                              fill_value=0)
    (tmp_path / "a" / LOCK_FILE).touch()
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=hold_old_lock,
                         args=(str(tmp_path / "a" / LOCK_FILE), "c/0", ready, 1.5))
    holder.start()
    try:
        assert ready.wait(60)
        began = time.monotonic()
        a[1:3] = 5  # a read-modify-write of c/0: waits for the older version's lock
        waited = time.monotonic() - began
    finally:
        holder.join(60)
    assert waited > 0.5
    assert not beside(tmp_path / "a").exists()
    np.testing.assert_array_equal(a[...], [0, 5, 5, 0, 0, 0, 0, 0])


@pytest.mark.posix("symbolic links need a privilege on Windows")
@pytest.mark.parametrize("confined", [False, True])
def test_a_symlink_in_place_of_the_lock_file_is_never_followed(tmp_path, confined):
    """A symbolic link where the lock file beside a hierarchy belongs (in a directory others
    may write) is refused with a ZarrcoreError naming it; its target is never made."""
    # No groups: the array is the hierarchy, its lock file in "s", below the store's root.
    zarrcore.create_array(str(tmp_path / "s" / "a"), shape=(8,), dtype="u1", chunks=(4,),
                          fill_value=0)
    victim = tmp_path / "victim"
    beside(tmp_path / "s" / "a").symlink_to(victim)
    store = zarrcore.LocalStore(tmp_path, confined=confined)
    a = zarrcore.open_array(store, path="s/a", mode="r+")
    for write in (lambda: a.__setitem__(slice(1, 3), 5), lambda: a.__setitem__(slice(None), 1),
                  lambda: a.attrs.__setitem__("x", 1)):
        with pytest.raises(zarrcore.errors.ZarrcoreError, match=f".a{LOCK_FILE}"):
            write()
    assert not victim.exists()


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_a_lock_file_the_user_cannot_write_raises_a_zarrcore_error_naming_it(shards):
    """A user who may write the store's files but not its lock file gets a ZarrcoreError
    naming the lock file, from whole and partial writes and metadata updates alike."""
    base = tempfile.mkdtemp(prefix="zarrcore-users-", dir="/tmp")  # tmp_path is private to us
    try:
        os.chmod(base, 0o755)
        a = zarrcore.create_array(os.path.join(base, "a"), shape=(8, 8), dtype="u1",
                                  chunks=(2, 2), shards=shards, fill_value=0)
        a[1, 1] = 1  # makes the lock file
        share_directories(base)
        os.chmod(base, 0o755)
        for d, _, files in os.walk(base):
            for f in files:  # everyone may write the store's files, no one but root its lock file
                os.chmod(os.path.join(d, f), 0o600 if f.endswith(LOCK_FILE) else 0o666)
        lock_files = [os.path.join(d, f) for d, _, files in os.walk(base) for f in files
                      if f.endswith(LOCK_FILE)]
        assert len(lock_files) == 1

        def writes():
            b = zarrcore.open_array(os.path.join(base, "a"), mode="r+")
            for write in (lambda: b.__setitem__((1, 1), 2), lambda: b.__setitem__(..., 3),
                          lambda: b.attrs.__setitem__("x", 1), lambda: b.resize((4, 4))):
                try:
                    write()
                except zarrcore.errors.ZarrcoreError as e:
                    assert lock_files[0] in str(e), e
                else:
                    raise AssertionError("the write did not fail")

        import concurrent.futures.thread  # noqa: F401 (imported while the files are readable)
        assert as_nobody(writes) == 0
        np.testing.assert_array_equal(a[...], np.eye(8, dtype="u1") * (np.arange(8) == 1))
    finally:
        shutil.rmtree(base)


@needs_root
@pytest.mark.slow
def test_where_no_lock_file_can_be_made_beside_the_node_keeps_its_own():
    """A user who may write a store but not the directory above it locks in a lock file of
    the node's own, which every later writer then uses too."""
    base = tempfile.mkdtemp(prefix="zarrcore-users-", dir="/tmp")
    try:
        os.chmod(base, 0o755)  # root's: no one else may make a file beside the array
        a = zarrcore.create_array(os.path.join(base, "a"), shape=(8,), dtype="u1",
                                  chunks=(4,), fill_value=0)
        share_directories(base)
        for d, _, files in os.walk(os.path.join(base, "a")):
            for f in files:
                os.chmod(os.path.join(d, f), 0o666)
        assert as_nobody(lambda: zarrcore.open_array(
            os.path.join(base, "a"), mode="r+").__setitem__(slice(1, 3), 5)) == 0
        own = os.path.join(base, "a", LOCK_FILE)
        assert os.path.isfile(own) and os.listdir(base) == ["a"]
        a[5:7] = 6
        assert os.listdir(base) == ["a"]  # the node's own file decides for everyone
        np.testing.assert_array_equal(a[...], [0, 5, 5, 0, 0, 6, 6, 0])
    finally:
        shutil.rmtree(base)
