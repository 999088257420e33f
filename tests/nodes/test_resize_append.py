"""resize, append and iter_chunks."""
import errno
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import zarrcore
import zarrcore.nodes.node


def chunk_keys(a):
    return sorted(k for k in a.store.list_prefix("") if not k.endswith(("zarr.json", ".zarray", ".zattrs")))


@pytest.fixture(params=["v3", "v3-sharded", "v2"])
def make(request, store):
    def make(shape, chunks, **kwargs):
        if request.param == "v2":
            kwargs["zarr_format"] = 2
        if request.param == "v3-sharded":
            kwargs["shards"] = tuple(2 * c for c in chunks)
        return zarrcore.create_array(store, shape=shape, chunks=chunks, dtype="i4", fill_value=-7,
                                     **kwargs)

    return make


def test_shrink_drops_outside_chunks_and_grow_shows_fill(make):
    a = make((10, 9), (2, 3))
    ref = np.arange(90, dtype="i4").reshape(10, 9)
    a[...] = ref
    before = len(chunk_keys(a))
    a.resize((5, 4))
    assert a.shape == (5, 4)
    np.testing.assert_array_equal(a[...], ref[:5, :4])
    assert len(chunk_keys(a)) < before
    block = a.shards or a.chunks
    grid = [-(-s // b) for s, b in zip(a.shape, block)]
    assert len(chunk_keys(a)) == grid[0] * grid[1]
    a.resize(10, 9)
    expected = np.full((10, 9), -7, dtype="i4")
    expected[:5, :4] = ref[:5, :4]
    np.testing.assert_array_equal(a[...], expected)
    reopened = zarrcore.open_array(a.store, path=a.path)
    assert reopened.shape == (10, 9)
    np.testing.assert_array_equal(reopened[...], expected)


def test_resize_to_zero_and_back(make):
    a = make((6,), (4,))
    a[...] = np.arange(6)
    a.resize(0)
    assert a.shape == (0,) and chunk_keys(a) == []
    a.resize(3)
    np.testing.assert_array_equal(a[...], [-7, -7, -7])


def test_resize_rejects_bad_shapes(make):
    a = make((6, 2), (4, 1))
    with pytest.raises(ValueError):
        a.resize((6,))
    with pytest.raises(ValueError):
        a.resize((6, -1))


def test_append(make):
    a = make((3, 4), (2, 3))
    ref = np.arange(12, dtype="i4").reshape(3, 4)
    a[...] = ref
    assert a.append(np.full((2, 4), 5)) == (5, 4)
    ref = np.concatenate([ref, np.full((2, 4), 5, dtype="i4")])
    assert a.append(np.ones((5, 3)), axis=-1) == (5, 7)
    ref = np.concatenate([ref, np.ones((5, 3), dtype="i4")], axis=1)
    np.testing.assert_array_equal(a[...], ref)
    with pytest.raises(ValueError):
        a.append(np.ones((2, 6)))
    with pytest.raises(ValueError):
        a.append(np.ones(7))
    with pytest.raises(getattr(getattr(np, "exceptions", np), "AxisError")):
        a.append(np.ones((5, 7)), axis=2)


def test_read_only_resize_fails():
    store = zarrcore.MemoryStore()
    zarrcore.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
    a = zarrcore.open_array(store, mode="r")
    with pytest.raises(zarrcore.errors.ReadOnlyError):
        a.resize(8)


def test_iter_chunks_covers_the_array_once(make):
    a = make((7, 5), (3, 2))
    ref = np.arange(35, dtype="i4").reshape(7, 5)
    a[...] = ref
    seen = np.zeros(ref.shape, dtype=int)
    items = list(a.iter_chunks())
    for coords, region in items:
        seen[region] += 1
        np.testing.assert_array_equal(a[region], a.blocks[coords])
    assert (seen == 1).all()
    block = a.shards or a.chunks
    assert len(items) == (-(-7 // block[0])) * (-(-5 // block[1]))
    assert [c for c, _ in items] == sorted(c for c, _ in items)


def test_iter_chunks_zero_d_and_empty():
    a = zarrcore.create_array({}, shape=(), dtype="i4")
    assert list(a.iter_chunks()) == [((), ())]
    b = zarrcore.create_array({}, shape=(0, 3), chunks=(2, 2), dtype="i4")
    assert list(b.iter_chunks()) == []


@pytest.mark.parametrize("shards", [None, (4, 6)], ids=["chunks", "shards"])
def test_growing_shows_fill_where_a_killed_shrink_or_an_outdated_writer_left_data(tmp_path, shards):
    """A shrink killed right after its metadata write leaves the cut-off chunks; a writer
    whose handle has the old shape writes beyond the new one. Growing resets both to fill
    before the larger shape shows them."""
    path = str(tmp_path / "a")
    a = zarrcore.create_array(path, shape=(8, 12), dtype="int16", chunks=(2, 3), shards=shards,
                              fill_value=-1)
    a[...] = 7
    outdated = zarrcore.open_array(path, mode="r+")
    # The shrink's only atomic step, as a kill right after it would leave things:
    zarrcore.nodes.node.write_metadata(a.store, "", a.metadata.evolve(shape=(3, 5)))
    outdated[6:8, 0:2] = 9  # beyond the new shape, through the old one
    a = zarrcore.open_array(path, mode="r+")
    a.resize((8, 12))
    expected = np.full((8, 12), -1, "int16")
    expected[:3, :5] = 7
    np.testing.assert_array_equal(a[...], expected)


def test_append_checks_only_the_blocks_it_exposes(tmp_path, monkeypatch):
    """Growing looks at the blocks beyond the old shape, not at a listing of every chunk."""
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(0, 40), dtype="u1", chunks=(2, 4))
    calls = []
    monkeypatch.setattr(a, "_stored_chunk_keys", lambda: calls.append(1) or [])
    for i in range(5):
        a.append(np.full((3, 40), i, "u1"))
    assert not calls
    np.testing.assert_array_equal(a[...], np.repeat(np.arange(5, dtype="u1"), 3)[:, None] + np.zeros(40, "u1"))


# ---- resizing stored shards through their index --------------------------------------------

@pytest.mark.parametrize("order", ["C", "morton"])
@pytest.mark.parametrize("index_location", ["start", "end"])
def test_shrink_then_grow_of_shards_equals_numpy_and_zarr_python(tmp_path, order, index_location):
    zarr = pytest.importorskip("zarr")

    zarrcore.config.set(shard_write_order=order)
    path = str(tmp_path / "a")
    a = zarrcore.create_array(path, shape=(40, 30), chunks=(4, 4), dtype="i4", fill_value=-7,
                              shards={"shape": (16, 16), "index_location": index_location},
                              compressors={"name": "zstd"})
    ref = np.arange(1200, dtype="i4").reshape(40, 30)
    a[...] = ref
    a.resize((21, 13))  # cuts across inner chunks and shards on both axes
    a.resize((40, 30))
    want = np.full((40, 30), -7, "i4")
    want[:21, :13] = ref[:21, :13]
    np.testing.assert_array_equal(a[...], want)
    np.testing.assert_array_equal(zarrcore.open_array(path)[...], want)
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], want)


_HUGE_SHARD_RESIZE = r"""
import sys, time
import numpy as np
import zarrcore
import zarrcore.nodes.node


def status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


zarrcore.config.set(max_shard_index_entries=1 << 20)
# 2**20 inner chunks of 64 x 64 bytes: a shard declared 4 GiB, of which three are stored.
a = zarrcore.create_array(sys.argv[1], shape=(65536, 65536), chunks=(64, 64),
                          shards=(65536, 65536), dtype="u1", fill_value=0)
block = np.zeros((256, 384), "u1")
for r, c in ((0, 0), (1, 1), (3, 5)):
    block[r * 64:(r + 1) * 64, c * 64:(c + 1) * 64] = r + c + 1
a[:256, :384] = block  # inner chunks of fill are not stored
with open("/proc/self/clear_refs", "w") as f:  # the peak (VmHWM) starts again from here
    f.write("5")
before = status_kib("VmRSS")
t0 = time.process_time()  # (CPU time: a loaded machine's waits are not the resize's work)
a.resize((100, 300))  # keeps (0, 0), cuts across (1, 1), drops (3, 5)
elapsed = time.process_time() - t0
grown = status_kib("VmHWM") - before
a.resize((65536, 65536))
want = np.zeros((256, 384), "u1")
want[:100, :300] = block[:100, :300]
np.testing.assert_array_equal(a[:256, :384], want)
print(elapsed, grown)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS read from /proc")
def test_resizing_a_huge_declared_shard_touches_only_its_stored_inner_chunks(tmp_path):
    out = subprocess.run([sys.executable, "-c", _HUGE_SHARD_RESIZE, str(tmp_path / "a")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    elapsed, grown_kib = map(float, out.stdout.split())
    assert elapsed < 1.0
    assert grown_kib < 200 * 1024  # the index (16 MiB) and a few copies, not the 4 GiB shard


# ---- resizes beside concurrent writers, and resizes cut short ------------------------------

LAYOUTS = ["v3", "v3-sharded", "v2"]


def new_handles(kind, tmp_path, request):
    """A function giving another Store object on one new, empty store of `kind` per call."""
    if kind == "memory":
        store = zarrcore.MemoryStore()
        return lambda: store
    if kind == "local":
        return lambda: zarrcore.LocalStore(tmp_path / "store")
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, bucket = request.getfixturevalue("s3_bucket")
    return lambda: zarrcore.storage.make_store(f"s3://{bucket}/a.zarr",
                                               storage_options=server.storage_options())


def create(store, shape, chunks, layout):
    """An int32 array of fill -7; `chunks` are the storage blocks (shards when sharded)."""
    kwargs = {"zarr_format": 2} if layout == "v2" else {}
    if layout == "v3-sharded":
        kwargs["shards"], chunks = chunks, tuple(max(1, c // 2) for c in chunks)
    return zarrcore.create_array(store, shape=shape, chunks=chunks, dtype="i4", fill_value=-7,
                                 **kwargs)


def cut(data, shape, extent=None):
    """`data` cut to `shape`, shown in `extent` (fill beyond `shape`)."""
    out = np.full(extent or shape, -7, "i4")
    keep = tuple(slice(0, min(dims)) for dims in zip(shape, out.shape, data.shape))
    out[keep] = data[keep]
    return out


@pytest.mark.parametrize("kind", ["memory", "local", "s3"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("grow", [False, True], ids=["shrink", "grow"])
def test_a_write_while_a_resize_resets_its_block_is_kept(kind, layout, grow, tmp_path, request):
    """A partial write inside the kept region lands between the resize's read of a boundary
    block and its write-back (on a store with locks it waits for the resize): kept either way.
    Growing resets what a shrink cut short left beyond the old shape (written here as such a
    shrink leaves it)."""
    handle = new_handles(kind, tmp_path, request)
    a = create(handle(), (8, 8), (4, 4), layout)
    ref = np.arange(64, dtype="i4").reshape(8, 8)
    a[...] = ref
    if grow:
        zarrcore.nodes.node.write_metadata(a.store, "", a.metadata.evolve(shape=(6, 6)))
    writer = zarrcore.open_array(handle(), mode="r+")
    resizer = zarrcore.open_array(handle(), mode="r+")
    store, boundary = resizer.store, resizer._engine.key((1, 1))
    threads = []

    def write_inside(read):
        def hooked(key, *args):
            data = read(key, *args)
            if key == boundary and not threads:
                threads.append(threading.Thread(target=writer.__setitem__,
                                                args=((slice(4, 6), 4), 99)))
                threads[0].start()
                # Done before the write-back, unless the resize's lock holds it until after.
                threads[0].join(30 if store.supports_conditional_writes else 0.3)
            return data
        return hooked

    for name in ("get", "get_ranges", "get_versioned"):
        setattr(store, name, write_inside(getattr(store, name)))
    resizer.resize((8, 8) if grow else (6, 6))
    assert threads, "the resize never read the boundary block"
    threads[0].join(30)
    want = cut(ref, (6, 6), (8, 8) if grow else (6, 6))
    want[4:6, 4] = 99
    np.testing.assert_array_equal(zarrcore.open_array(handle())[...], want)


@pytest.mark.parametrize("layout", ["v3", "v3-sharded"])
def test_s3_partial_writes_beside_resizes_lose_nothing(layout, s3_bucket):
    """Writers update their own elements of the block a resize cuts, inside every shape it
    takes, while it shrinks and grows the array over and over (writing what each shrink
    resets); each writer reads its element back after every write: it holds what was written."""
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, bucket = s3_bucket

    def handle():
        return zarrcore.storage.make_store(f"s3://{bucket}/a.zarr",
                                           storage_options=server.storage_options())

    create(handle(), (10,), (4,), layout)
    rounds, lost, errors = [], [], []
    stop = threading.Event()

    def write(element):
        try:
            a = zarrcore.open_array(handle(), mode="r+")
            value = 0
            while not stop.is_set():
                value += 1
                a[element] = value
                time.sleep(0.01)  # for a resize that read the block before to write it back
                if a[element] != value:
                    lost.append((element, value))
            rounds.append(value)
        except BaseException as e:
            errors.append(e)

    def resize():
        try:
            a = zarrcore.open_array(handle(), mode="r+")
            while not stop.is_set():
                a.resize(7)
                a.resize(10)
                a[7:] = 1  # for the next shrink to reset
        except BaseException as e:
            errors.append(e)

    # Each writer its own element of the block that the shrinks cut, inside the kept part.
    threads = [threading.Thread(target=write, args=(e,)) for e in (4, 5, 6)]
    threads.append(threading.Thread(target=resize))
    for t in threads:
        t.start()
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join(60)
    assert not errors
    assert min(rounds) > 3, "too few writes to mean anything"
    assert lost == []


class InjectedFailure(zarrcore.errors.StoreError):
    """A write refused on purpose (as a 403 would refuse it)."""


def fail_write(store, number):
    """Make the `number`-th write (set, conditional set or delete) of a chunk or metadata key
    through `store` fail; lock objects are not counted. Returns the list of keys written."""
    written = []

    def counted(real):
        def write(key, *args):
            if ".zarrcore-lock." not in key:
                written.append(key)
                if len(written) == number:
                    raise InjectedFailure(errno.EACCES, f"{key!r}: refused")
            return real(key, *args)
        return write

    for name in ("set", "set_if", "delete"):
        setattr(store, name, counted(getattr(store, name)))
    store.set_many = lambda items, concurrency=None, part_bytes=None: [
        store.set(key, value) for key, value in items]
    return written


@pytest.mark.parametrize("kind", ["memory", "local", "s3"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_resize_failing_at_any_write_leaves_the_old_or_the_new_array(kind, layout, tmp_path,
                                                                        request):
    """Growing one axis and shrinking the other, with each of the resize's writes failing in
    turn (the metadata's among them): the array is then exactly the old one in the old shape
    or the new one in the new shape, and resizing again completes it."""
    old, new = (8, 6), (5, 9)
    ref = np.arange(1, 49, dtype="i4").reshape(old)
    metadata_key = ".zarray" if layout == "v2" else "zarr.json"
    number = 0
    while True:
        number += 1
        make = new_handles(kind, tmp_path / str(number), request)
        a = create(make(), old, (2, 3), layout)
        a[...] = ref
        a = zarrcore.open_array(make(), mode="r+")
        written = fail_write(a.store, number)
        try:
            a.resize(new)
            break
        except InjectedFailure:
            pass
        b = zarrcore.open_array(make(), mode="r+")
        if b.shape == old:
            np.testing.assert_array_equal(b[...], ref, err_msg=f"failed at {written[-1]}")
        else:
            assert b.shape == new and written[-1] != metadata_key
            np.testing.assert_array_equal(b[...], cut(ref, new))
        b.resize(new)
        b.resize((8, 9))
        np.testing.assert_array_equal(b[...], cut(ref, new, (8, 9)))
        if kind == "s3":
            b.store.delete_prefix("")
    assert number > 2 and metadata_key in written
