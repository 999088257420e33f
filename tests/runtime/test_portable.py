"""The Python layer's stand-ins for POSIX-only calls (zarrcore/runtime/portable.py), which Windows
runs, run here on Linux with the POSIX calls taken away: os.pread, os.fwalk (and so
directories read from descriptors), fcntl and os.register_at_fork."""
import importlib
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest

import zarrcore
from zarrcore._native import files as _files
from zarrcore.runtime import portable as _portable
from zarrcore.errors import InvalidKeyError, StoreError
from zarrcore.storage import LocalStore, ZipStore

POSIX_CALLS = [(os, "pread"), (os, "fwalk"), (os, "register_at_fork")]


def _on_threads(target, n):
    """Run target(0) ... target(n - 1) on threads of their own, all at once."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.fixture
def remove_posix_calls(monkeypatch):
    """A function that takes the POSIX calls away and chooses _portable again, as a Python
    without them would; they are back, and chosen again, after the test."""
    def remove():
        for module, name in POSIX_CALLS:
            monkeypatch.delattr(module, name, raising=False)  # Windows has none of them
        monkeypatch.setitem(sys.modules, "fcntl", None)  # `import fcntl` raises ImportError
        importlib.reload(_portable)
        return _portable

    yield remove
    monkeypatch.undo()
    importlib.reload(_portable)
    assert _portable.pread is getattr(os, "pread", _files.pread)


@pytest.fixture
def fallbacks(remove_posix_calls):
    """_portable as chosen on a Python without the POSIX calls."""
    return remove_posix_calls()


def test_the_stand_ins_are_chosen(fallbacks):
    assert fallbacks.fcntl is None
    assert fallbacks.pread is _files.pread
    assert fallbacks.try_lock_exclusive is _files.try_lock_whole
    fallbacks.at_fork_in_child(lambda: None)  # nothing to register with, and no error


def test_compiled_pread(tmp_path):
    data = bytes(range(256)) * 40
    (tmp_path / "f").write_bytes(data)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert _files.pread(fd, 100, 7) == data[7:107]
        assert _files.pread(fd, 50, len(data) - 10) == data[-10:]  # short at the end
        assert _files.pread(fd, 10, len(data) + 5) == b""
        assert _files.pread(fd, 0, 3) == b""
        assert _files.pread(fd, len(data), 0) == data
        if hasattr(os, "pread"):
            assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # POSIX: the position stays
        with pytest.raises(ValueError):
            _files.pread(fd, -1, 0)
        # Threads reading one descriptor at once each get their own range.
        errors = []

        def read(start):
            for i in range(200):
                lo = (start * 37 + i * 11) % len(data)
                if _files.pread(fd, 64, lo) != data[lo:lo + 64]:
                    errors.append(lo)

        _on_threads(read, 4)
        assert errors == []
    finally:
        os.close(fd)
    with pytest.raises(OSError) as raised:
        _files.pread(fd, 1, 0)
    assert raised.value.errno == 9  # EBADF


def test_compiled_whole_file_lock(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    first, second = os.open(path, os.O_RDWR), os.open(path, os.O_RDWR)
    try:
        assert _files.try_lock_whole(first)
        assert not _files.try_lock_whole(second)  # another open file of it, same process
        os.close(first)
        first = None
        assert _files.try_lock_whole(second)  # dropped when its file closed
    finally:
        for fd in (first, second):
            if fd is not None:
                os.close(fd)


def _tree(root):
    """A store with nested arrays, a group, a link to a directory (not descended into) and a
    dangling link (a file, as os.fwalk takes it)."""
    g = zarrcore.open_group(root, mode="w")
    a = g.create_array("a", shape=(6, 8), chunks=(2, 3), dtype="i4")
    a[...] = np.arange(48).reshape(6, 8)
    s = g.create_group("sub").create_array("s", shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="u2")
    s[...] = np.arange(64, dtype="u2").reshape(8, 8)
    os.makedirs(os.path.join(root, "elsewhere", "deep"))
    with open(os.path.join(root, "elsewhere", "deep", "x"), "wb") as f:
        f.write(b"x")
    try:
        os.symlink(os.path.join(root, "elsewhere"), os.path.join(root, "sub", "link"))
        os.symlink("nothing", os.path.join(root, "dangling"))
    except OSError as e:  # Windows, without the privilege
        pytest.skip(f"cannot make symbolic links here: {e}")


def test_local_store_listing_reads_and_writes(remove_posix_calls, tmp_path):
    root = str(tmp_path / "store")
    _tree(root)  # built and listed with the POSIX calls first
    store = LocalStore(root)
    want = {p: sorted(store.list_prefix(p)) for p in ("", "sub", "a", "sub/s", "missing")}
    want_dirs = {p: store.list_dir(p) for p in ("", "sub", "a/c", "sub/link")}
    assert "sub/link/deep/x" not in want[""] and "dangling" in want[""]
    assert remove_posix_calls().pread is _files.pread

    store = LocalStore(root)
    assert {p: sorted(store.list_prefix(p)) for p in want} == want
    assert {p: store.list_dir(p) for p in want_dirs} == want_dirs
    a = zarrcore.open_array(store, path="a")
    np.testing.assert_array_equal(a[1:5, 2:7], np.arange(48).reshape(6, 8)[1:5, 2:7])
    s = zarrcore.open_array(store, path="sub/s")
    s[1:3, 1:6] = 7  # partial shard writes: read, merge, rewrite
    want_s = np.arange(64, dtype="u2").reshape(8, 8)
    want_s[1:3, 1:6] = 7
    np.testing.assert_array_equal(s[...], want_s)
    with store.reader("sub/s/c/0/0") as reader:  # the positioned reads of a shard
        size = store.getsize("sub/s/c/0/0")
        assert reader.get_ranges([(0, 5), (size - 3, None), (size + 9, None)]) == [
            store.get("sub/s/c/0/0")[:5], store.get("sub/s/c/0/0")[-3:], b""]
    # Stale temporary files are found by the walk and removed.
    stale = os.path.join(root, "sub", "s", "c", _files.TEMP_PREFIX + "left")
    with open(stale, "wb") as f:
        f.write(b"t")
    assert store.remove_stale_temporary_files("sub") == 1 and not os.path.exists(stale)
    assert sorted(zarrcore.open_group(store).keys()) == ["a", "sub"]


def test_zip_store_writes_and_reads_with_position_moving_reads(fallbacks, tmp_path, monkeypatch):
    """As Windows' positioned reads move the file position, the stand-in's reads must not
    share a position with the ZipFile that appends members: interleaved writes and reads
    leave a sound zip."""
    def moving_pread(fd, size, offset):
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, size)

    monkeypatch.setattr(fallbacks, "pread", moving_pread)
    path = tmp_path / "a.zip"
    values = {}
    for mode, keys in (("w", range(20)), ("a", range(20, 40))):  # "a": the ZipFile read first
        with ZipStore(path, mode=mode) as store:
            for i in keys:
                for j in range(0, i, 7):
                    assert store.get(f"k/{j}") == values[f"k/{j}"]
                    assert store.get(f"k/{j}", 3, 9) == values[f"k/{j}"][3:9]
                values[f"k/{i}"] = bytes([i]) * (100 + 37 * i)
                store.set(f"k/{i}", values[f"k/{i}"])
            assert sorted(store.list_prefix("k"), key=lambda k: int(k[2:])) == list(values)
            # The reads' descriptor has a position of its own, not the ZipFile's.
            writer_fd = store._state.file.fileno()
            at = os.lseek(writer_fd, 0, os.SEEK_CUR)
            os.lseek(store._state.fd, at + 1000, os.SEEK_SET)
            assert os.lseek(writer_fd, 0, os.SEEK_CUR) == at
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        assert {n: zf.read(n) for n in zf.namelist()} == values
    # Members stored and compressed by turns: the ZipFile's buffered reads of the compressed
    # ones and the preads of the stored ones go by turns too.
    rng = np.random.default_rng(0)
    mixed = {f"m/{i}": rng.integers(0, 256, 3000, dtype="u1").tobytes() for i in range(12)}
    with zipfile.ZipFile(tmp_path / "mixed.zip", "w") as zf:
        for i, (key, value) in enumerate(mixed.items()):
            zf.writestr(key, value, zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED)
    with ZipStore(tmp_path / "mixed.zip", read_only=True) as store:
        for _ in range(2):
            assert {key: store.get(key) for key in mixed} == mixed


def test_zip_store_arrays_and_writer_lock(fallbacks, tmp_path):
    path = tmp_path / "a.zip"
    want = np.arange(600, dtype="f8").reshape(20, 30)
    with ZipStore(path, mode="w") as store:
        a = zarrcore.create_array(store, name="x", shape=(20, 30), chunks=(7, 8), shards=(14, 16),
                                  dtype="f8")
        a[...] = want
        with pytest.raises(StoreError, match="another process is writing"):
            ZipStore(path).set("y", b"1")  # the lock: another open file of the zip
        np.testing.assert_array_equal(a[3:17, 5:29], want[3:17, 5:29])
    other = ZipStore(path)
    other.set("y", b"1")  # taken once the first writer closed
    other.close()
    zarr = pytest.importorskip("zarr", reason="zarr-python is not installed")
    with zarr.storage.ZipStore(path, mode="r") as zstore:
        np.testing.assert_array_equal(zarr.open_array(zstore, path="x", mode="r")[...], want)


def test_zip_store_writers_across_threads(fallbacks, tmp_path):
    """Threads each opening their own writer of one zip: exactly one gets the lock. Threads
    sharing the writer append and read at once."""
    path = tmp_path / "t.zip"
    barrier = threading.Barrier(4)
    outcomes = []

    def open_writer(n):
        store = ZipStore(path)
        barrier.wait()
        try:
            store.set(f"w{n}", b"x")
            outcomes.append(store)
        except StoreError:
            outcomes.append(None)

    _on_threads(open_writer, 4)
    winners = [s for s in outcomes if s is not None]
    assert len(winners) == 1 and len(outcomes) == 4
    store = winners[0]
    failures = []

    def append_and_read(n):
        for i in range(30):
            key, value = f"t{n}/{i}", bytes([n, i]) * (50 + i)
            store.set(key, value)
            if store.get(key) != value or store.get(key, 1, 5) != value[1:5]:
                failures.append(key)

    _on_threads(append_and_read, 4)
    store.close()
    assert failures == []
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None and len(zf.namelist()) == 121


@pytest.mark.slow
def test_import_and_round_trip_without_posix_calls(tmp_path):
    """A fresh interpreter without fcntl, os.pread, os.fwalk, os.register_at_fork and os.fork
    (as on Windows) imports zarrcore and creates, writes, reads and lists a directory and a zip."""
    code = f"""
import os, sys
sys.modules["fcntl"] = None
for name in ("pread", "fwalk", "register_at_fork", "fork"):  # the standard library asks for fork
    delattr(os, name)
import numpy as np
import zarrcore
from zarrcore._native import files as _files
from zarrcore.runtime import portable as _portable
assert _portable.pread is _files.pread and _portable.try_lock_exclusive is _files.try_lock_whole
want = np.arange(200, dtype="i4").reshape(10, 20)
for where in ({str(tmp_path / "d.zarr")!r}, {str(tmp_path / "z.zip")!r}):
    g = zarrcore.open_group(where, mode="w")
    g.create_array("plain", shape=(10, 20), chunks=(3, 7), dtype="i4")[...] = want
    g.create_group("inner").create_array("sharded", shape=(10, 20), chunks=(2, 5), shards=(4, 10),
                                         dtype="i4")[...] = want
    g.store.close() if hasattr(g.store, "close") else None
    g = zarrcore.open_group(where, mode="r")
    assert (g["plain"][2:9, 3:17] == want[2:9, 3:17]).all()
    assert (g["inner/sharded"][1:9, 4:19] == want[1:9, 4:19]).all()
    assert sorted(g.keys()) == ["inner", "plain"], sorted(g.keys())
    assert sorted(n for n, _ in g.members(max_depth=None)) == ["inner", "inner/sharded", "plain"]
    assert len([k for k in g.store.list_prefix("") if "/c/" in k or k.startswith("plain/c")]) > 10
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.stdout.strip() == "ok", run.stderr


@pytest.mark.parametrize("key", ["a:b/zarr.json", "x/CON", "x/nul.txt", "c/0?/1", "d/e.", "d/e ",
                                 "com1/zarr.json", "a\x01b"])
def test_keys_windows_cannot_name_are_refused_there(tmp_path, monkeypatch, key):
    """On Windows a ':' writes an alternate stream of another file and CON a device: a
    directory store there refuses such keys before touching the disk."""
    assert _portable.windows_file_name_problem(key)
    monkeypatch.setattr(_portable, "file_name_problem", _portable.windows_file_name_problem)
    store = LocalStore(tmp_path / "s")
    with pytest.raises(InvalidKeyError, match="cannot be a file"):
        store.set(key, b"1")
    with pytest.raises(InvalidKeyError, match="cannot be a file"):
        store.get(key)
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").rglob("*"))


def test_ordinary_keys_name_files_on_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(_portable, "file_name_problem", _portable.windows_file_name_problem)
    a = zarrcore.create_array(LocalStore(tmp_path / "s"), name="g/temperature.v2", shape=(4, 4),
                              chunks=(2, 2), shards=(4, 4), dtype="i4")
    a[...] = 7
    assert (a[...] == 7).all()
    for key in ("zarr.json", ".zattrs", "c/0/0", "0.0", "console/LPT", "a.b/c_d-e"):
        assert _portable.windows_file_name_problem(key) is None, key
