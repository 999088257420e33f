"""resize, append and iter_chunks."""
import subprocess
import sys

import numpy as np
import pytest

import zarrcore


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
    with pytest.raises(np.exceptions.AxisError):
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
    zarrcore.nodes.write_metadata(a.store, "", a.metadata.evolve(shape=(3, 5)))
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
    import zarr

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
