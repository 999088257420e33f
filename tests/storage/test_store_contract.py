"""The Store interface (zarrcore/storage/base.py) checked against every store: a directory,
memory, a zip, S3 (moto) through obstore and through s3fs, fsspec's memory filesystem, an
HTTP server and kerchunk references (read only), and zarr-python stores through their API.
Where stores legitimately differ, a test asks the store's capability flags, never its type."""
import base64
import json
import os
import pickle
import threading
import time
import uuid

import pytest

from zarrcore.errors import (InvalidKeyError, KeyChangedError, LockUnavailableError,
                             ReadOnlyError, StoreError)
from zarrcore.storage import (
    FsspecStore, LocalStore, MemoryStore, ObjectStore, ReferenceStore, ZipStore,
)

VALUE = bytes(range(100))
# (start, stop) pairs of Python slice bounds: suffixes, past the end, empty, reversed.
BOUNDS = [(None, None), (0, 10), (10, None), (None, 10), (-10, None), (-10, -5), (5, -5),
          (90, 200), (150, None), (150, 200), (-200, None), (-200, 5), (50, 10), (0, 0),
          (99, 100)]
# A small tree: "ab/x" shares a prefix with "a" without being below it.
TREE = {"a/b/c": b"abc", "a/b/d": b"abd", "a/e": b"ae", "ab/x": b"abx", "f": b"f"}
INVALID_KEYS = ["", "/a", "a/", "a//b", "a/../b", "./a", "..", "a\\b", "a\x00b", 5, None]
INVALID_PREFIXES = ["/a", "a//b", "../a", "a/./b", "a\\b"]


class Kind:
    """One kind of store: `store()` opens a store over this test's one location (another
    Store object over the same data each call), `fill(data)` a writable one holding `data`."""

    writable = True

    def __init__(self, make):
        self._make = make

    def store(self, read_only=False):
        return self._make(read_only)

    def fill(self, data):
        store = self.store()
        store.set_many(data.items())
        return store

    def read_only_twin(self, writer):
        """A read-only store over what `writer` wrote."""
        close = getattr(writer, "close", None)
        if close is not None:  # a zip shows its members to other readers once closed
            close()
        return self.store(read_only=True)


class HTTPKind(Kind):
    """A directory served over HTTP: read only, no listing; filled through the directory."""

    writable = False

    def __init__(self, server):
        self._root = os.path.join(server.root, uuid.uuid4().hex)
        self._url = f"{server.url}/{os.path.basename(self._root)}"

    def store(self, read_only=True):
        return ObjectStore.from_url(self._url)  # read only, asked or not

    def fill(self, data):
        for key, value in data.items():
            path = os.path.join(self._root, *key.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(value)
        return self.store()


class ReferencesKind(Kind):
    """kerchunk references (read only): values byte ranges of one target file, or with
    `whole` files of their own; short ones inline (base64); all in one directory."""

    writable = False

    def __init__(self, root, whole=False):
        self._root, self._whole = root, whole

    def store(self, read_only=True):
        refs = self._root / "refs.json"
        if not refs.exists():
            self.fill({})
        return ReferenceStore(refs)

    def fill(self, data):
        self._root.mkdir(exist_ok=True)
        target, refs = bytearray(), {}
        for n, (key, value) in enumerate(data.items()):
            if len(value) < 3:
                refs[key] = "base64:" + base64.b64encode(value).decode()
                continue
            if self._whole:
                (self._root / f"whole{n}.bin").write_bytes(value)
                refs[key] = [f"whole{n}.bin"]
                continue
            target += b"-" * 7  # (values apart, as chunks of a file are)
            refs[key] = ["target.bin", len(target), len(value)]
            target += value
        (self._root / "target.bin").write_bytes(bytes(target))
        (self._root / "refs.json").write_text(json.dumps(refs))
        return ReferenceStore(self._root / "refs.json")


@pytest.fixture(scope="module")
def contract_bucket(moto_server):
    """One bucket for this module; each test works below a prefix of its own."""
    return moto_server, moto_server.new_bucket()


@pytest.fixture(scope="module")
def contract_s3fs(moto_server):
    """One s3fs filesystem of the moto server for this module (making one takes a while)."""
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    return moto_server.s3fs()


def _memory_kind():
    data = MemoryStore().native_memory
    return Kind(lambda read_only: MemoryStore(data, read_only=read_only))


def _fsspec_memory_kind():
    fsspec = pytest.importorskip("fsspec", reason="fsspec (the remote extra) is not installed")
    fs, path = fsspec.filesystem("memory"), f"/contract-{uuid.uuid4().hex}"
    return Kind(lambda read_only: FsspecStore(fs, path, read_only=read_only))


def _s3_kind(request, through):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, bucket = request.getfixturevalue("contract_bucket")
    prefix = uuid.uuid4().hex
    if through == "obstore":
        return Kind(lambda read_only: ObjectStore.from_url(
            f"s3://{bucket}/{prefix}", read_only, storage_options=server.storage_options()))
    fs = request.getfixturevalue("contract_s3fs")
    return Kind(lambda read_only: FsspecStore(fs, f"{bucket}/{prefix}", read_only=read_only))


def _zarr_python_kind(tmp_path, below):
    """zarr-python stores that zarrcore reaches through their API (ZarrPythonStore): a
    WrapperStore subclass around zarr's LocalStore, or a MemoryStore subclass of another
    module."""
    zarr_stores = pytest.importorskip("_zarr_stores", reason="zarr-python is not installed")
    from zarrcore.storage import make_store

    if below == "local":
        root = str(tmp_path / "store")
        return Kind(lambda read_only: make_store(zarr_stores.Wrapped(
            zarr_stores.LocalStore(root, read_only=read_only))))
    data = {}
    return Kind(lambda read_only: make_store(zarr_stores.OwnMemory(data, read_only=read_only)))


# The S3 kinds start moto's server.
KINDS = ["local", "memory", "zip", pytest.param("s3-obstore", marks=pytest.mark.slow),
         pytest.param("s3-s3fs", marks=pytest.mark.slow), "fsspec-memory", "http", "references",
         "references-whole", "zarr-python-local", "zarr-python-memory"]


@pytest.fixture(params=KINDS)
def kind(request, tmp_path):
    name = request.param
    if name == "local":
        return Kind(lambda read_only: LocalStore(tmp_path / "store", read_only=read_only))
    if name == "memory":
        return _memory_kind()
    if name == "zip":
        return Kind(lambda read_only: ZipStore(tmp_path / "store.zip", read_only=read_only))
    if name == "fsspec-memory":
        return _fsspec_memory_kind()
    if name.startswith("references"):
        return ReferencesKind(tmp_path / "references", whole=name.endswith("whole"))
    if name.startswith("zarr-python-"):
        return _zarr_python_kind(tmp_path, name.rpartition("-")[2])
    if name == "http":
        pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
        return HTTPKind(request.getfixturevalue("http_server"))
    return _s3_kind(request, name.split("-")[1])


@pytest.fixture
def writable(kind):
    if not kind.writable:
        pytest.skip("a read-only kind of store: its writes are checked by test_writes_refused")
    return kind


def _as_bytes(result):
    return None if result is None else bytes(result)


# -- reads ---------------------------------------------------------------------------------
def test_get_exists_getsize(kind):
    store = kind.fill({"k": VALUE, "dir/empty": b""})
    assert _as_bytes(store.get("k")) == VALUE
    assert _as_bytes(store.get("dir/empty")) == b""
    assert store.exists("k") and store.exists("dir/empty")
    assert store.getsize("k") == len(VALUE) and store.getsize("dir/empty") == 0
    for missing in ("nope", "dir/nope", "k/below"):
        assert store.get(missing) is None and store.get(missing, 0, 5) is None
        assert not store.exists(missing) and store.getsize(missing) is None
    assert not store.exists("dir")  # a 'directory' is no key
    assert isinstance(store.missing_detail("nowhere"), str)


def test_get_takes_slice_bounds(kind):
    store = kind.fill({"k": VALUE, "empty": b""})
    for key, value in (("k", VALUE), ("empty", b"")):
        for start, stop in BOUNDS:
            assert _as_bytes(store.get(key, start, stop)) == value[start:stop], (key, start, stop)


def test_get_ranges(kind):
    store = kind.fill({"k": VALUE})
    assert [bytes(p) for p in store.get_ranges("k", BOUNDS)] == [VALUE[a:b] for a, b in BOUNDS]
    assert store.get_ranges("missing", [(0, 1), (-2, None)]) is None


def test_get_many_yields_every_request_once(kind):
    store = kind.fill({"k": VALUE, "a/b": b"ab"})
    requests = [("k", None), ("missing", None), ("a/b", [(0, 1), (-1, None)]),
                ("k", BOUNDS), ("missing", [(0, 1)]), ("a/b", None)]
    got = list(store.get_many(requests))
    assert sorted(i for i, _ in got) == list(range(len(requests)))
    results = dict(got)
    assert _as_bytes(results[0]) == VALUE and _as_bytes(results[5]) == b"ab"
    assert results[1] is None and results[4] is None
    assert [bytes(p) for p in results[2]] == [b"a", b"b"]
    assert [bytes(p) for p in results[3]] == [VALUE[a:b] for a, b in BOUNDS]
    assert list(store.get_many([])) == []


def _read_through(reader, ranges):
    return None if reader is None else reader.get_ranges(ranges)


def test_reader(kind):
    store = kind.fill({"k": VALUE})
    with store.reader("k") as reader:
        assert reader.size in (None, len(VALUE))
        assert [bytes(p) for p in reader.get_ranges(BOUNDS)] == [VALUE[a:b] for a, b in BOUNDS]
    with store.reader("missing") as reader:  # None, or a reader that reads None
        assert _read_through(reader, [(0, 1)]) is None


def test_streaming_readers_hand_on_the_bodies_they_read(kind):
    """A store that streams_reads: its readers' get_streamed reads what get_ranges reads,
    and hands each body on as it arrives (if at all), the bytes it names all come."""
    store = kind.fill({"k": VALUE})
    if not store.streams_reads:
        return
    seen = []

    def progress(part, body, filled):
        seen.append((part, bytes(body[:filled])))
        return filled + 1 if filled < len(body) else len(body) + 1

    with store.reader("k") as reader:
        parts = reader.get_streamed(BOUNDS, progress)
        assert [bytes(p) for p in parts] == [VALUE[a:b] for a, b in BOUNDS]
    for part, arrived in seen:
        assert VALUE[slice(*BOUNDS[part])].startswith(arrived)
    with store.reader("missing") as reader:
        assert reader is None or reader.get_streamed([(0, 1)], progress) is None


def test_reader_reads_one_version_where_declared(writable):
    """A store whose readers_keep_one_version reads one version throughout (or raises
    KeyChangedError); others read each range as the value is at that moment."""
    store = writable.fill({"k": VALUE})
    new = VALUE[::-1]
    one_version = store.readers_keep_one_version
    with store.reader("k") as reader:
        assert bytes(reader.get_ranges([(0, 10)])[0]) == VALUE[:10]
        store.set("k", new)
        try:
            rest = bytes(reader.get_ranges([(10, 20)])[0])
        except KeyChangedError:
            assert one_version
        else:
            assert rest == (VALUE if one_version else new)[10:20]
    assert _as_bytes(store.get("k")) == new


# -- listing -------------------------------------------------------------------------------
def _listings(store):
    return {prefix: (sorted(store.list_prefix(prefix)), list(store.list_dir(prefix)))
            for prefix in ("", "a", "a/", "a/b", "ab", "zz")}


def test_listing(kind):
    store = kind.fill(TREE)
    if not store.supports_listing:
        for call in (store.check_listing, store.list_prefix, store.list_dir):
            with pytest.raises(StoreError):
                call("a")
        return
    store.check_listing("a")
    listed = _listings(store)
    assert listed[""] == (sorted(TREE), ["a", "ab", "f"])
    assert listed["a"] == listed["a/"] == (["a/b/c", "a/b/d", "a/e"], ["b", "e"])
    assert listed["a/b"] == (["a/b/c", "a/b/d"], ["c", "d"])
    assert listed["ab"] == (["ab/x"], ["x"])
    assert listed["zz"] == ([], [])


def test_lock_objects_are_never_listed(writable):
    store = writable.fill(TREE)
    if not store.supports_locks:
        pytest.skip("the store has no locks")
    listed = _listings(store)
    with store.lock("a/e", "a"), store.lock("a/b/c", "a/b"), store.lock("f"):
        assert _listings(store) == listed
    with store.lock("ab/x", "ab", replaced_last=True):
        assert _listings(store) == listed
        store.set("ab/x", b"new")
    assert _listings(store) == listed


# -- writes --------------------------------------------------------------------------------
def test_set_overwrite_delete(writable):
    store = writable.store()
    store.set("k", VALUE)
    store.set("a/b", bytearray(b"ab"))
    store.set("a/c", memoryview(VALUE)[10:20])
    store.set("empty", b"")
    assert _as_bytes(store.get("a/b")) == b"ab" and _as_bytes(store.get("a/c")) == VALUE[10:20]
    assert _as_bytes(store.get("empty")) == b""
    store.set("k", b"new")
    assert _as_bytes(store.get("k")) == b"new" and store.getsize("k") == 3
    store.delete("never-stored")  # deleting a missing key is no error
    if store.supports_deletes:
        store.delete("k")
        assert store.get("k") is None and not store.exists("k")
    else:
        with pytest.raises(StoreError, match="'k'"):
            store.delete("k")
        assert _as_bytes(store.get("k")) == b"new"


def test_set_many(writable):
    store = writable.store()
    values = {f"c/{i}": bytes([i]) * i for i in range(20)}
    store.set_many(iter(values.items()))  # any iterable, a generator too
    store.set_many([])
    assert {key: _as_bytes(store.get(key)) for key in values} == values


def test_streams_writes_where_declared(writable):
    """A store that streams writes starts each item's write before set_many takes the next."""
    store = writable.store()
    if not store.streams_writes:
        pytest.skip("the store does not stream writes")

    def items():
        yield "first", b"1"
        deadline = time.monotonic() + 10
        while not store.exists("first"):
            assert time.monotonic() < deadline, "the first item was not written before the next"
            time.sleep(0.01)
        yield "second", b"2"

    store.set_many(items())
    assert _as_bytes(store.get("second")) == b"2"


def test_delete_prefix(writable):
    store = writable.fill(TREE)
    if not store.supports_deletes:
        with pytest.raises(StoreError):
            store.delete_prefix("a")
        assert _as_bytes(store.get("a/e")) == b"ae"
        return
    store.delete_prefix("a")
    assert sorted(k for k in TREE if store.exists(k)) == ["ab/x", "f"]
    assert sorted(store.list_prefix("")) == ["ab/x", "f"]
    store.delete_prefix("nothing/here")


def test_rename_prefix(writable):
    store = writable.fill(TREE)
    if not store.supports_deletes:  # the source's keys could not be removed
        with pytest.raises(StoreError):
            store.rename_prefix("a", "z")
        assert list(store.list_prefix("z")) == []  # refused before copying any
        return
    store.rename_prefix("a", "z/y")
    moved = {"z/y" + key[1:]: value for key, value in TREE.items() if key.startswith("a/")}
    assert sorted(store.list_prefix("")) == sorted([*moved, "ab/x", "f"])
    assert {key: _as_bytes(store.get(key)) for key in moved} == moved
    assert store.get("a/e") is None and _as_bytes(store.get("ab/x")) == b"abx"


def test_atomic_writes_where_declared(writable):
    """A reader sees each value whole, old or new, while it is rewritten."""
    store = writable.store()
    if not store.supports_atomic_writes:
        pytest.skip("the store does not declare atomic writes")
    values = [bytes([1]) * (1 << 18), bytes([2]) * (1 << 18)]
    store.set("k", values[0])
    done = threading.Event()

    def rewrite():
        try:
            for i in range(8):
                store.set("k", values[i % 2])
        finally:
            done.set()

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        while not done.is_set():
            assert _as_bytes(store.get("k")) in values
    finally:
        writer.join()


# -- read only -----------------------------------------------------------------------------
def test_writes_refused(kind):
    """A read-only store, or one that cannot write, refuses every write with ReadOnlyError and
    keeps its data."""
    store = kind.fill(TREE)
    reader = kind.read_only_twin(store)
    assert reader.read_only
    writes = [lambda: reader.set("f", b"x"), lambda: reader.set("new", b"x"),
              lambda: reader.set_many([("f", b"x")]), lambda: reader.delete("f"),
              lambda: reader.delete_prefix("a"), lambda: reader.rename_prefix("a", "z")]
    if reader.supports_conditional_writes:
        writes.append(lambda: reader.set_if("f", b"x", reader.get_versioned("f")[1]))
    for write in writes:
        with pytest.raises(ReadOnlyError):
            write()
    assert {key: _as_bytes(reader.get(key)) for key in TREE} == TREE
    if not reader.supports_writes:
        with pytest.raises(ReadOnlyError):
            kind.store(read_only=False).set("f", b"x")


# -- keys ----------------------------------------------------------------------------------
def _key_calls(store, key):
    calls = [lambda: store.get(key), lambda: store.get(key, 0, 1), lambda: store.exists(key),
             lambda: store.getsize(key), lambda: store.get_ranges(key, [(0, 1)]),
             lambda: list(store.get_many([(key, None)])),
             lambda: list(store.get_many([(key, [(0, 1)])]))]

    def read_through_reader():
        with store.reader(key) as reader:
            _read_through(reader, [(0, 1)])

    calls.append(read_through_reader)
    if store.supports_writes and not store.read_only:
        calls += [lambda: store.set(key, b"x"), lambda: store.set_many([(key, b"x")]),
                  lambda: store.delete(key)]
    if store.supports_conditional_writes:
        calls += [lambda: store.get_versioned(key), lambda: store.set_if(key, b"x", None)]
    if store.supports_locks:
        def take_lock():
            with store.lock(key):
                pass
        calls.append(take_lock)
    return calls


def test_invalid_keys_refused(kind):
    store = kind.fill({"k": VALUE})
    for key in INVALID_KEYS:
        for call in _key_calls(store, key):
            with pytest.raises(InvalidKeyError):
                call()
    assert _as_bytes(store.get("k")) == VALUE


def test_invalid_prefixes_refused(kind):
    store = kind.fill({"k": VALUE})
    calls = []
    if store.supports_listing:
        calls += [store.list_prefix, store.list_dir]
    if store.supports_writes and not store.read_only:
        calls += [store.delete_prefix, lambda prefix: store.rename_prefix(prefix, "z"),
                  lambda prefix: store.rename_prefix("k", prefix)]
    for prefix in INVALID_PREFIXES:
        for call in calls:
            with pytest.raises(InvalidKeyError):
                call(prefix)
    assert _as_bytes(store.get("k")) == VALUE


def test_unusual_valid_keys(writable):
    store = writable.store()
    keys = ["a b/ü.json", "x-y_z.0", ".hidden/.zattrs", "c/0.1.2", "a...b"]
    store.set_many((key, key.encode()) for key in keys)
    assert [_as_bytes(store.get(key)) for key in keys] == [key.encode() for key in keys]
    if store.supports_listing:
        assert sorted(store.list_prefix("")) == sorted(keys)


# -- conditional writes and locks ----------------------------------------------------------
def test_conditional_writes_where_declared(writable):
    store = writable.store()
    if not store.supports_conditional_writes:
        with pytest.raises(LockUnavailableError):
            store.set_if("k", b"x", None)
        with pytest.raises(LockUnavailableError):
            store.get_versioned("k")
        return
    assert store.get_versioned("k") == (None, None)
    assert store.set_if("k", b"one", None)
    assert not store.set_if("k", b"two", None)  # exists already
    value, version = store.get_versioned("k")
    assert bytes(value) == b"one" and version is not None
    assert store.set_if("k", b"three", version)
    assert not store.set_if("k", b"four", version)  # another writer came first
    assert bytes(store.get_versioned("k")[0]) == b"three"
    # A writer through another Store object is seen too.
    other = writable.store()
    _, version = other.get_versioned("k")
    store.set("k", b"five")
    assert not other.set_if("k", b"six", version)
    assert _as_bytes(store.get("k")) == b"five"


def test_locks_where_declared(writable):
    """A lock excludes every other holder of the key (through any Store object over the same
    data), not holders of other keys; it is released when its block ends, raising or not."""
    store = writable.fill({"n/k": b"k", "n/other": b"o"})
    if not store.supports_locks:
        with pytest.raises(LockUnavailableError):
            with store.lock("n/k", "n"):
                pass
        return
    other = writable.store()
    taken = threading.Event()

    def take():
        with other.lock("n/k", "n"):
            taken.set()

    with store.lock("n/k", "n"):
        waiter = threading.Thread(target=take)
        waiter.start()
        with other.lock("n/other", "n"):  # another key is free
            pass
        assert not taken.wait(0.3), "two holders of one key's lock"
    assert taken.wait(10), "the lock was not released"
    waiter.join()
    with pytest.raises(RuntimeError):
        with store.lock("n/k", "n"):
            raise RuntimeError
    with store.lock("n/k", "n", replaced_last=True):
        store.set("n/k", b"new")
    with other.lock("n/k", "n"):  # handed on by the write
        assert _as_bytes(store.get("n/k")) == b"new"


def test_copies_read_the_same_data_unless_process_local(kind):
    """A store that is not `process_local` reaches the same data from a copy of it (what a
    task pickled to a worker process gets): checked here on a copy made in this process."""
    reader = kind.read_only_twin(kind.fill(TREE))
    if reader.process_local:
        pytest.skip("the store's data lives in this process only")
    copy = pickle.loads(pickle.dumps(reader))
    assert {key: _as_bytes(copy.get(key)) for key in TREE} == TREE


def test_native_root_where_declared(writable):
    store = writable.store()
    if store.native_root is None:
        pytest.skip("the store has no native root")
    store.set("a/b", b"bytes")
    with open(os.path.join(store.native_root, "a", "b"), "rb") as f:
        assert f.read() == b"bytes"
    assert store.files() is not None
