"""Any zarr-python store (zarr.abc.store.Store) as a zarrcore store, through its own API
(zarrcore.storage.zarr_python.ZarrPythonStore): WrapperStore subclasses, stores of other
modules, read-only ones and ones without consolidated metadata, read and written by the engine
and xarray's `zarrcore` engine, with zarr-python reading back what zarrcore wrote."""
import errno
import warnings

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", reason="the tests compare with zarr-python")

from _zarr_stores import OwnLocal, OwnMemory, Wrapped  # noqa: E402
from zarr.abc.store import RangeByteRequest  # noqa: E402
from zarr.storage import LocalStore, LoggingStore, MemoryStore, WrapperStore  # noqa: E402

import zarrcore  # noqa: E402
from zarrcore.errors import (  # noqa: E402
    CommitConflictError, LockUnavailableError, ReadOnlyError, StoreError, WriteConflictError,
    ZarrcoreError,
)
from zarrcore.storage import make_store  # noqa: E402
from zarrcore.storage.zarr_python import ZarrPythonStore  # noqa: E402


class Counting(WrapperStore):
    """Counts the calls of zarr-python's read API."""

    def __init__(self, store):
        super().__init__(store)
        self.calls = {"get": 0, "get_partial_values": 0}
        self.requests = []

    async def get(self, key, prototype, byte_range=None):
        self.calls["get"] += 1
        self.requests.append(type(byte_range).__name__)
        return await super().get(key, prototype, byte_range)

    async def get_partial_values(self, prototype, key_ranges):
        self.calls["get_partial_values"] += 1
        key_ranges = list(key_ranges)
        self.requests.extend(type(r).__name__ for _, r in key_ranges)
        return await super().get_partial_values(prototype, key_ranges)


class NoConsolidated(WrapperStore):
    """A store that keeps no consolidated metadata (as Icechunk's)."""

    supports_consolidated_metadata = False


class Failing(WrapperStore):
    """Fails every read of a chunk."""

    async def get(self, key, prototype, byte_range=None):
        if "/c/" in key:
            raise ConnectionError("connection reset by peer")
        return await super().get(key, prototype, byte_range)


def _filled(store, name, **kwargs):
    kwargs.setdefault("dtype", "int32")
    z = zarr.create_array(store, name=name, **kwargs)
    data = np.arange(np.prod(kwargs["shape"]), dtype=kwargs["dtype"]).reshape(kwargs["shape"])
    z[...] = data
    return data


@pytest.fixture(params=["wrapper-memory", "wrapper-local", "own-memory", "adapter-local"])
def zarr_store(request, tmp_path):
    """A zarr-python store that zarrcore reaches through its API: wrappers of zarr's memory
    and directory stores, a store of another module, and ZarrPythonStore made directly over
    a LocalStore (which make_store reads natively)."""
    kind = request.param
    if kind == "wrapper-memory":
        return Wrapped(MemoryStore())
    if kind == "wrapper-local":
        return Wrapped(LocalStore(str(tmp_path / "d")))
    if kind == "own-memory":
        return OwnMemory()
    return LocalStore(str(tmp_path / "d"))


def _open(zarr_store, **kwargs):
    if isinstance(zarr_store, LocalStore):
        return zarrcore.open_array(ZarrPythonStore(zarr_store), **kwargs)
    return zarrcore.open_array(zarr_store, **kwargs)


def test_reads_and_writes_through_the_stores_api(zarr_store):
    data = _filled(zarr_store, "a", shape=(10, 9), chunks=(3, 4))
    a = _open(zarr_store, path="a")
    assert isinstance(a.store, ZarrPythonStore)
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[2:7, 1:8], data[2:7, 1:8])
    a = _open(zarr_store, path="a", mode="r+")
    a[0:3, 0:4] = -1  # whole chunks: no read-modify-write
    data[0:3, 0:4] = -1
    np.testing.assert_array_equal(zarr.open_array(zarr_store, path="a", mode="r")[...], data)


def test_sharded_reads_batch_the_ranges_of_a_shard():
    store = Counting(MemoryStore())
    z = zarr.create_array(store, name="s", shape=(400_000,), chunks=(1000,), shards=(200_000,),
                          dtype="uint8", compressors=None)
    data = (np.arange(400_000) % 251).astype("uint8")
    z[...] = data
    a = zarrcore.open_array(store, path="s")
    store.requests.clear()
    points = np.array([1, 100_500, 199_999, 200_001, 300_000, 399_999])
    np.testing.assert_array_equal(a.vindex[points], data[points])
    # Two shards: their indexes, then the three inner chunks wanted of each (too far apart to
    # be read as one range), never a whole shard.
    assert sorted(store.requests) == ["RangeByteRequest"] * 6 + ["SuffixByteRequest"] * 2


def test_byte_ranges_follow_slice_bounds():
    inner = MemoryStore()
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    sync(inner.set("k", default_buffer_prototype().buffer.from_bytes(b"0123456789")))
    store = make_store(Wrapped(inner))
    assert store.get("k") == b"0123456789"
    cases = [(2, 5), (None, 4), (-3, None), (7, None), (-4, -1), (3, -2), (5, 2), (8, 100),
             (0, 100), (20, 30), (0, 0), (-100, None)]
    got = store.get_ranges("k", cases)
    assert [bytes(g) for g in got] == [b"0123456789"[slice(*c)] for c in cases]
    assert [store.get("k", *c) for c in cases] == [b"0123456789"[slice(*c)] for c in cases]
    counted = Counting(inner)
    assert make_store(counted).get_ranges("k", [(1, 2), (4, 6), (-1, None)]) == [b"1", b"45",
                                                                                b"9"]
    assert counted.calls == {"get": 0, "get_partial_values": 1}  # one batched call
    assert store.get("missing") is None
    assert store.get_ranges("missing", [(0, 2)]) is None
    assert store.get_ranges("missing", [(0, 0)]) is None
    results = dict(store.get_many([("k", None), ("missing", None), ("k", [(1, 3)])]))
    assert results[0] == b"0123456789" and results[1] is None
    assert [bytes(r) for r in results[2]] == [b"12"]
    assert store.getsize("k") == 10 and store.getsize("missing") is None
    assert store.exists("k") and not store.exists("missing")


def test_listing_and_deletes(zarr_store):
    _filled(zarr_store, "g/a", shape=(4,), chunks=(2,))
    _filled(zarr_store, "g/b", shape=(4,), chunks=(2,))
    store = (ZarrPythonStore(zarr_store) if isinstance(zarr_store, LocalStore)
             else make_store(zarr_store))
    assert store.list_dir("g") == ["a", "b", "zarr.json"]
    assert sorted(store.list_prefix("g/a")) == ["g/a/c/0", "g/a/c/1", "g/a/zarr.json"]
    group = zarrcore.open_group(store, path="g")
    assert sorted(group.array_keys()) == ["a", "b"]
    store.delete_prefix("g/b")
    assert store.list_prefix("g/b") == []
    assert not store.exists("g/b/zarr.json")


def test_partial_writes_lock_through_the_store_below_the_wrappers(tmp_path):
    for zarr_store in (Wrapped(MemoryStore()), Wrapped(LocalStore(str(tmp_path / "d"))),
                       OwnMemory()):
        data = _filled(zarr_store, "a", shape=(10,), chunks=(4,))
        a = zarrcore.open_array(zarr_store, path="a", mode="r+")
        assert a.store.supports_locks
        a[1:6] = 0  # parts of two chunks
        data[1:6] = 0
        np.testing.assert_array_equal(zarr.open_array(zarr_store, path="a")[...], data)
        a.resize((12,))  # a metadata update, under the metadata's lock
        assert zarr.open_array(zarr_store, path="a").shape == (12,)


def test_a_store_without_locks_refuses_partial_writes(tmp_path):
    zarr_store = Wrapped(OwnLocal(str(tmp_path / "d")))
    data = _filled(zarr_store, "a", shape=(10,), chunks=(4,))
    a = zarrcore.open_array(zarr_store, path="a", mode="r+")
    assert not a.store.supports_locks
    with pytest.raises(LockUnavailableError, match="a/c/0"):
        a[1:3] = 0
    a[4:8] = 5  # one whole chunk: no lock needed
    data[4:8] = 5
    np.testing.assert_array_equal(zarr.open_array(zarr_store, path="a")[...], data)


def test_read_only_stores(tmp_path):
    _filled(LocalStore(str(tmp_path / "d")), "a", shape=(4,), chunks=(2,))
    zarr_store = Wrapped(LocalStore(str(tmp_path / "d"), read_only=True))
    a = zarrcore.open_array(zarr_store, path="a")
    assert a.store.read_only and a.read_only
    np.testing.assert_array_equal(a[...], np.arange(4))
    with pytest.raises(ReadOnlyError):
        zarrcore.open_array(zarr_store, path="a", mode="r+")[...] = 1
    with pytest.raises(ReadOnlyError):
        a.store.set("a/c/0", b"x")
    # A writable zarr-python store opened read-only by zarrcore stays read-only.
    store = make_store(Wrapped(MemoryStore()), read_only=True)
    with pytest.raises(ReadOnlyError):
        store.set("k", b"x")


def test_errors_name_the_key():
    zarr_store = Failing(MemoryStore())
    _filled(zarr_store, "a", shape=(4,), chunks=(2,))
    a = zarrcore.open_array(zarr_store, path="a")
    with pytest.raises(StoreError, match=r"a/c/\d.*ConnectionError.*connection reset") as e:
        a[...]
    assert isinstance(e.value, ZarrcoreError) and e.value.errno == errno.EIO


# An Icechunk conflict, as the adapter tells it: by its module and name.
IcechunkConflict = type("ConflictError", (Exception,), {"__module__": "icechunk"})


class Conflicting(WrapperStore):
    """Writes fail as an out-of-date Icechunk session's would."""

    async def set(self, key, value):
        raise IcechunkConflict("expected parent: A, actual parent: B")


def test_icechunk_conflicts_of_writes_are_commit_conflict_errors():
    memory = MemoryStore()
    _filled(memory, "a", shape=(4,), chunks=(2,))
    a = zarrcore.open_array(Conflicting(memory), path="a", mode="r+")
    with pytest.raises(CommitConflictError, match=r"a/c/0.*another session committed first"
                                                  r".*ConflictError: expected parent: A") as e:
        a[0:2] = 1
    assert isinstance(e.value, WriteConflictError)
    assert isinstance(e.value.__cause__, IcechunkConflict)


class ReadsOnPastTheEnd(MemoryStore):
    """A range past a value's end reads on into what follows it, as VirtualiZarr's
    ManifestStore reads on into a chunk's file."""

    async def get(self, key, prototype, byte_range=None):
        value = await super().get(key, prototype)
        if value is None or not isinstance(byte_range, RangeByteRequest):
            return await super().get(key, prototype, byte_range)
        data = value.to_bytes() + b"rest of the file" * 1000
        return prototype.buffer.from_bytes(data[byte_range.start:byte_range.end])


ReadsOnPastTheEnd.__module__ = "virtualizarr.manifests.store"


def test_ranges_of_stores_that_read_past_a_values_end_are_sized_first():
    store = ReadsOnPastTheEnd()
    data = _filled(store, "a", shape=(40,), chunks=(10,),
                   compressors=[{"name": "zstd", "configuration": {"level": 0}}])
    a = zarrcore.open_array(store, path="a")
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5:27], data[5:27])


def test_stores_without_a_size_query_read_each_chunk_once():
    # zarr-python's default getsize reads the whole value: sizing each chunk first read it twice.
    inner = ReadsOnPastTheEnd()
    data = _filled(inner, "a", shape=(40,), chunks=(10,),
                   compressors=[{"name": "zstd", "configuration": {"level": 0}}])
    store = Counting(inner)
    a = zarrcore.open_array(store, path="a")
    store.calls["get"] = 0
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5:27], data[5:27])
    assert store.calls["get"] == 4 + 3


def test_zarr_pythons_own_wrappers():
    zarr_store = LoggingStore(MemoryStore())
    data = _filled(zarr_store, "a", shape=(5,), chunks=(2,))
    np.testing.assert_array_equal(zarrcore.open_array(zarr_store, path="a")[...], data)


def test_stores_without_consolidated_metadata():
    zarr_store = NoConsolidated(MemoryStore())
    zarrcore.open_group(zarr_store).create_array("a", shape=(3,), chunks=(3,), dtype="i1")
    with pytest.raises(StoreError, match="consolidated"):
        zarrcore.consolidate_metadata(zarr_store)
    with pytest.raises(StoreError, match="consolidated"):
        zarrcore.open_consolidated(zarr_store)
    # zarr-python's consolidated metadata there is not used (nothing keeps it up to date).
    zarr.consolidate_metadata(Wrapped(zarr_store._store))
    zarr.create_array(zarr_store, name="b", shape=(2,), dtype="i1")
    group = zarrcore.open_group(zarr_store, mode="r")
    assert not group.consolidated and sorted(group.array_keys()) == ["a", "b"]


def test_xarray_round_trip_through_a_wrapper_store():
    xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
    import zarrcore.xarray

    ds = xr.Dataset({"t": (("x", "y"), np.arange(20.0).reshape(4, 5))},
                    coords={"x": np.arange(4)}, attrs={"title": "w"})
    for zarr_store in (Wrapped(MemoryStore()), NoConsolidated(MemoryStore())):
        zarrcore.xarray.to_zarr(ds, zarr_store, mode="w")
        consolidated = zarr_store.supports_consolidated_metadata
        doc = zarr.open_group(zarr_store, mode="r").metadata.consolidated_metadata
        assert (doc is not None) == consolidated
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning about missing consolidated metadata
            back = xr.open_dataset(zarr_store, engine="zarrcore")
        xr.testing.assert_identical(back.load(), ds)
        xr.testing.assert_identical(xr.open_zarr(zarr_store).load(), ds)


def test_virtualizarr_manifest_store(tmp_path):
    """VirtualiZarr's ManifestStore: chunks at byte ranges of a file; read only, no batched
    reads nor `exists` of its own, no consolidated metadata."""
    manifests = pytest.importorskip("virtualizarr.manifests",
                                    reason="VirtualiZarr is not installed")
    obstore = pytest.importorskip("obstore", reason="VirtualiZarr reads through obstore")
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr.manifests.utils import create_v3_array_metadata

    data = np.arange(64, dtype="<i4").reshape(8, 8)
    path = tmp_path / "data.bin"
    blocks = {f"{i}.{j}": data[4 * i:4 * i + 4, 4 * j:4 * j + 4].tobytes()
              for i in range(2) for j in range(2)}
    path.write_bytes(b"header" + b"".join(blocks.values()))
    offsets = np.cumsum([6] + [len(b) for b in blocks.values()])
    entries = {key: {"path": f"file://{path}", "offset": int(offset), "length": len(block)}
               for (key, block), offset in zip(blocks.items(), offsets)}
    metadata = create_v3_array_metadata(
        shape=(8, 8), chunk_shape=(4, 4), data_type=np.dtype("int32"),
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}],
        chunk_key_encoding={"name": "default", "separator": "."}, fill_value=0)
    group = manifests.ManifestGroup(arrays={"a": manifests.ManifestArray(
        metadata=metadata, chunkmanifest=manifests.ChunkManifest(entries=entries))})
    zarr_store = manifests.ManifestStore(
        group, registry=ObjectStoreRegistry({"file://": obstore.store.LocalStore()}))
    a = zarrcore.open_array(zarr_store, path="a")
    assert a.store.read_only and not a.store.supports_consolidated_metadata
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[3:7, 1:6], data[3:7, 1:6])
    store = a.store
    assert store.exists("a/c.1.1") and not store.exists("a/c.5.5")
    assert [bytes(p) for p in store.get_ranges("a/c.0.0", [(0, 4), (8, 12)])] == [
        blocks["0.0"][0:4], blocks["0.0"][8:12]]
    with pytest.raises(ReadOnlyError):
        a.store.set("a/c.0.0", b"x")


def _manifest_array(chunks, metadata_kw=None):
    """A VirtualiZarr ManifestArray of int32 (8, 8) in (4, 4) chunks: `chunks` maps "i.j" to a
    manifest entry."""
    from virtualizarr.manifests import ChunkManifest, ManifestArray
    from virtualizarr.manifests.utils import create_v3_array_metadata

    metadata = create_v3_array_metadata(
        shape=(8, 8), chunk_shape=(4, 4), data_type=np.dtype("int32"),
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}],
        fill_value=-1, **(metadata_kw or {}))
    return ManifestArray(metadata=metadata, chunkmanifest=ChunkManifest(entries=chunks,
                                                                        shape=(2, 2)))


def _blocks(data):
    return {f"{i}.{j}": data[4 * i:4 * i + 4, 4 * j:4 * j + 4].tobytes()
            for i in range(2) for j in range(2)}


def test_virtualizarr_manifests_are_read_as_references(tmp_path, s3_bucket):
    """A ManifestStore whose registry holds obstore's stores is read natively, as references
    (coalesced ranges through zarrcore's own stores): local and S3 targets, groups below
    groups, inlined and missing chunks, each value exact; xarray reads it too."""
    manifests = pytest.importorskip("virtualizarr.manifests",
                                    reason="VirtualiZarr is not installed")
    obstore = pytest.importorskip("obstore", reason="VirtualiZarr reads through obstore")
    from obspec_utils.registry import ObjectStoreRegistry

    from zarrcore.storage.references import ReferenceStore

    server, bucket = s3_bucket
    a = np.arange(64, dtype="<i4").reshape(8, 8)
    b = -a
    local = tmp_path / "a.bin"
    blocks_a, blocks_b = _blocks(a), _blocks(b)
    local.write_bytes(b"head" + b"".join(blocks_a.values()))
    s3 = server.obstore(bucket)
    obstore.put(s3, "files/b.bin", b"".join(blocks_b.values()))
    entries_a = {k: {"path": f"file://{local}", "offset": 4 + 64 * n, "length": 64}
                 for n, k in enumerate(blocks_a)}
    entries_a["1.1"] = {"path": "", "offset": 0, "length": 64, "data": blocks_a["1.1"]}
    entries_b = {k: {"path": f"s3://{bucket}/files/b.bin", "offset": 64 * n, "length": 64}
                 for n, k in enumerate(blocks_b) if k != "0.1"}
    group = manifests.ManifestGroup(
        arrays={"a": _manifest_array(entries_a)},
        groups={"g": manifests.ManifestGroup(arrays={"b": _manifest_array(
            entries_b, {"dimension_names": ("y", "x"), "attributes": {"units": "m"}})},
                                             attributes={"title": "below"})})
    registry = ObjectStoreRegistry({"file://": obstore.store.LocalStore(prefix=tmp_path),
                                    f"s3://{bucket}": s3})
    zarr_store = manifests.ManifestStore(group, registry=registry)
    root = zarrcore.open_group(zarr_store, mode="r")
    assert isinstance(root.store, ReferenceStore) and root.store.read_only
    assert not root.store.supports_consolidated_metadata
    np.testing.assert_array_equal(root["a"][...], a)
    want_b = b.copy()
    want_b[0:4, 4:8] = -1  # the missing chunk: fill
    np.testing.assert_array_equal(root["g/b"][...], want_b)
    np.testing.assert_array_equal(root["g/b"][2:7, 3:6], want_b[2:7, 3:6])
    assert root["g"].attrs["title"] == "below"
    np.testing.assert_array_equal(zarr.open_array(zarr_store, path="g/b", mode="r")[...],
                                  want_b)
    xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about missing consolidated metadata
        ds = xr.open_dataset(zarr_store, engine="zarrcore", group="g", consolidated=False)
    np.testing.assert_array_equal(ds["b"].values, want_b)
    assert ds["b"].dims == ("y", "x") and ds["b"].attrs == {"units": "m"}


def test_virtualizarr_targets_stay_inside_the_registry(tmp_path):
    """A manifest entry outside every store of the registry is refused, naming the key and
    the target, where VirtualiZarr would read a file below its local store's directory."""
    manifests = pytest.importorskip("virtualizarr.manifests",
                                    reason="VirtualiZarr is not installed")
    obstore = pytest.importorskip("obstore", reason="VirtualiZarr reads through obstore")
    from obspec_utils.registry import ObjectStoreRegistry

    from zarrcore.errors import ReferenceOutsideError

    (tmp_path / "inside").mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(bytes(64))
    entries = {k: {"path": f"file://{secret}", "offset": 0, "length": 64}
               for k in ("0.0", "0.1", "1.0", "1.1")}
    zarr_store = manifests.ManifestStore(
        manifests.ManifestGroup(arrays={"a": _manifest_array(entries)}),
        registry=ObjectStoreRegistry({"file://": obstore.store.LocalStore(
            prefix=tmp_path / "inside")}))
    a = zarrcore.open_array(zarr_store, path="a")
    # (All four chunks point outside; they are fetched at once, and the first to fail is named.)
    with pytest.raises(ReferenceOutsideError, match="a/c/[01]/[01].*secret.bin"):
        a[...]


class _ObspecFiles:
    """A store of obspec's Get API that is none of obstore's: reads local files."""

    prefix = None

    async def get_range_async(self, path, *, start, end=None, length=None):
        with open("/" + path, "rb") as f:
            f.seek(start)
            return f.read((end - start) if end is not None else length)


def test_virtualizarr_registry_of_other_stores_goes_through_its_api(tmp_path):
    """A registry holding a store zarrcore cannot read itself leaves the ManifestStore to its
    own API: read exactly through it."""
    manifests = pytest.importorskip("virtualizarr.manifests",
                                    reason="VirtualiZarr is not installed")
    from obspec_utils.registry import ObjectStoreRegistry

    data = np.arange(64, dtype="<i4").reshape(8, 8)
    blocks = _blocks(data)
    path = tmp_path / "data.bin"
    path.write_bytes(b"".join(blocks.values()))
    entries = {k: {"path": f"file://{path}", "offset": 64 * n, "length": 64}
               for n, k in enumerate(blocks)}
    zarr_store = manifests.ManifestStore(
        manifests.ManifestGroup(arrays={"a": _manifest_array(entries)}),
        registry=ObjectStoreRegistry({"file://": _ObspecFiles()}))
    a = zarrcore.open_array(zarr_store, path="a")
    assert isinstance(a.store, ZarrPythonStore)
    np.testing.assert_array_equal(a[...], data)


def test_virtualizarr_hdf5_manifest_reads_exactly_in_compiled_jobs(tmp_path, monkeypatch):
    """VirtualiZarr's HDF parser on a file h5py wrote with gzip and shuffle: zarrcore reads
    its ManifestStore exactly, every chunk in the compiled jobs (numcodecs.shuffle and
    numcodecs.zlib, as the parser names HDF5's filters, are the core's chain)."""
    pytest.importorskip("virtualizarr.parsers", reason="VirtualiZarr is not installed")
    obstore = pytest.importorskip("obstore", reason="VirtualiZarr reads through obstore")
    h5py = pytest.importorskip("h5py", reason="h5py (the test extra) writes the file")
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr.parsers import HDFParser

    from zarrcore.engine import CodecChain

    data = (np.arange(40 * 30) * 37 % 1000).astype("<f4").reshape(40, 30)
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(8, 16), compression="gzip", shuffle=True)
    zarr_store = HDFParser()(url=f"file://{path}",
                             registry=ObjectStoreRegistry({"file://": obstore.store.LocalStore()}))
    a = zarrcore.open_array(zarr_store, path="v")
    for name in ("decode", "read_into"):
        monkeypatch.setattr(CodecChain, name, lambda *args, name=name: pytest.fail(name))
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5:33, 7:29], data[5:33, 7:29])
