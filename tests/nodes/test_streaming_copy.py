"""Array-to-array copies stream block by block: `b[region] = a` with `a` an Array, and
`from_array`; the same values as numpy's assignment, memory bounded by blocks, and copies
that zarr-python 3.1 (here) and 3.4 (the peer interpreter) read exactly."""
import subprocess
import sys

import numpy as np
import pytest
from _peer_arrays import unpack
from hypothesis import given, settings
from hypothesis import strategies as st
from peers import peer  # noqa: F401 (a fixture)

import zarrcore
from zarrcore.nodes import streaming


@st.composite
def copies(draw):
    """(source shape, source settings, destination shape, settings, the region's start)."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 12), min_size=ndim, max_size=ndim)))
    pad = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    start = tuple(draw(st.integers(0, p)) for p in pad)

    def edges(extent, unit):
        """Edge lengths of whole `unit`s covering `extent` (the last one cut)."""
        out = []
        while sum(out) < extent:
            out.append(unit * draw(st.integers(1, 3)))
        out[-1] -= sum(out) - extent
        return out

    def layout(extent):
        chunks = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
        rectilinear = min(extent) > 0 and draw(st.booleans())
        if draw(st.booleans()):
            if rectilinear:
                chunks = [edges(n, 1) for n in extent]
            return {"chunks": chunks, "zarr_format": 3 if rectilinear else
                    draw(st.sampled_from([2, 3]))}
        if rectilinear and all(n % c == 0 for n, c in zip(extent, chunks)):
            return {"chunks": chunks, "shards": [edges(n, c) for n, c in zip(extent, chunks)]}
        factors = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
        return {"chunks": chunks, "shards": tuple(c * f for c, f in zip(chunks, factors))}

    source = layout(shape)
    if draw(st.booleans()):  # the whole of an array of the same layout: a raw copy when alike
        return shape, source, shape, source, (0,) * ndim
    dest_shape = tuple(n + p for n, p in zip(shape, pad))
    return shape, source, dest_shape, layout(dest_shape), start


@settings(max_examples=60, deadline=None)
@given(case=copies(), dest_dtype=st.sampled_from(["int32", "int16", "float64"]))
def test_a_streamed_copy_assigns_as_numpy(case, dest_dtype, monkeypatch_module):
    shape, src_kw, dest_shape, dest_kw, start = case
    data = np.arange(np.prod(shape), dtype="int32").reshape(shape) - 7
    a = zarrcore.create_array({}, shape=shape, dtype="int32", fill_value=0, **src_kw)
    a[...] = data
    b = zarrcore.create_array({}, shape=dest_shape, dtype=dest_dtype, fill_value=3, **dest_kw)
    region = tuple(slice(s, s + n) for s, n in zip(start, shape))
    b[region] = a
    want = np.full(dest_shape, 3, dtype=dest_dtype)
    want[region] = data
    np.testing.assert_array_equal(b[...], want)


@pytest.fixture(scope="module")
def monkeypatch_module():
    """Blocks of one destination object (not grown): small arrays then copy in many blocks,
    on several threads."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(streaming, "MIN_BLOCK_BYTES", 0)
        yield


def test_copies_stream_in_blocks_of_whole_destination_objects(monkeypatch):
    """Each block read from the source is one whole shard of the destination (so none is
    merged), and the source is never read whole."""
    monkeypatch.setattr(streaming, "MIN_BLOCK_BYTES", 0)
    a = zarrcore.create_array({}, shape=(40, 30), dtype="u2", chunks=(5, 5))
    a[...] = np.arange(1200, dtype="u2").reshape(40, 30)
    b = zarrcore.create_array({}, shape=(40, 30), dtype="u2", chunks=(5, 5), shards=(10, 15))
    reads = []
    real = zarrcore.Array.get_basic_selection

    def get(self, selection=Ellipsis, out=None, fields=None):
        if self is a:
            reads.append(selection)
        return real(self, selection, out, fields)

    monkeypatch.setattr(zarrcore.Array, "get_basic_selection", get)
    b[...] = a
    assert sorted((r[0].start, r[1].start) for r in reads) == [
        (i, j) for i in range(0, 40, 10) for j in range(0, 30, 15)]
    assert all((r[0].stop - r[0].start, r[1].stop - r[1].start) == (10, 15) for r in reads)
    np.testing.assert_array_equal(b[...], a[...])


def test_rectilinear_grids_stream_in_blocks_of_whole_destination_objects(monkeypatch):
    """A rectilinear source is read block by block, never whole; into a rectilinear
    destination, each block spans whole destination objects (cut at the region's edges)."""
    monkeypatch.setattr(streaming, "MIN_BLOCK_BYTES", 0)
    d = np.arange(40 * 30, dtype="u2").reshape(40, 30)
    a = zarrcore.create_array({}, shape=(40, 30), dtype="u2", chunks=[[10, 5, 25], [7, 23]])
    a[...] = d
    reads = []
    real = zarrcore.Array.get_basic_selection

    def get(self, selection=Ellipsis, out=None, fields=None):
        if self is a:
            reads.append(tuple((s.start, s.stop) for s in selection))
        return real(self, selection, out, fields)

    monkeypatch.setattr(zarrcore.Array, "get_basic_selection", get)
    b = zarrcore.create_array({}, shape=(40, 30), dtype="u2", chunks=(5, 5), shards=(10, 15))
    b[...] = a
    assert sorted(reads) == [((i, i + 10), (j, j + 15)) for i in range(0, 40, 10)
                             for j in range(0, 30, 15)]
    np.testing.assert_array_equal(b[...], d)
    reads.clear()
    c = zarrcore.create_array({}, shape=(45, 30), dtype="u2", chunks=(5, 5),
                              shards=[[10, 5, 30], [15, 15]], fill_value=9)
    c[3:43, :] = a
    # Whole shards, as many as fit in the side of the largest (30 rows): the region's part of
    # the first two, then the third; in the source's rows (the region starts at row 3).
    rows = [(0, 12), (12, 40)]
    assert sorted(reads) == [(r, (j, j + 15)) for r in rows for j in (0, 15)]
    want = np.full((45, 30), 9, dtype="u2")
    want[3:43] = d
    np.testing.assert_array_equal(c[...], want)


def test_alike_arrays_copy_their_stored_objects_and_drop_the_others(monkeypatch):
    """Same grid, type, fill value and codecs: the stored objects are copied as they are (no
    block is read), and an object the destination holds where the source holds none goes."""
    kw = dict(shape=(12, 10), dtype="i2", chunks=(2, 5), shards=(4, 10), fill_value=0)
    a = zarrcore.create_array({}, **kw)
    a[:8] = np.arange(80, dtype="i2").reshape(8, 10) + 1  # shards 0 and 1; 2 is not stored
    b = zarrcore.create_array({}, **kw)
    b[...] = 9
    monkeypatch.setattr(zarrcore.Array, "get_basic_selection", None)  # no block is read
    b[...] = a
    monkeypatch.undo()
    assert sorted(b.store.list_prefix("c/")) == ["c/0/0", "c/1/0"]
    assert all(b.store.get(k) == a.store.get(k) for k in ("c/0/0", "c/1/0"))
    np.testing.assert_array_equal(b[...], a[...])


@pytest.mark.parametrize("size", [1, (1 << 20) + 3])
def test_alike_local_arrays_copy_their_files_without_reading_them_into_python(
        disk_path, shm_path, monkeypatch, size):
    """Between directory stores the files are copied by the system, whole, the bytes never
    passing through Python, wherever the two directories are: on one file system (the system
    copies) and, where /dev/shm is another, on two (through memory)."""
    roots = [(disk_path / "a", disk_path / "b")]
    if shm_path is not None:
        roots.append((shm_path / "a", disk_path / "c"))
    for src, dst in roots:
        kw = dict(shape=(3, size), dtype="u1", chunks=(1, size), compressors=None, fill_value=7)
        a = zarrcore.create_array(str(src), **kw)
        a[:2] = np.random.default_rng(0).integers(0, 255, (2, size), dtype="u1")
        b = zarrcore.create_array(str(dst), **kw)
        b[2] = 1  # not stored in the source: goes
        with monkeypatch.context() as m:
            m.setattr(zarrcore.storage.local.LocalStore, "get", None)
            m.setattr(zarrcore.storage.local._FileReader, "get_ranges", None)
            b[...] = a
        assert sorted(b.store.list_prefix("c/")) == ["c/0/0", "c/1/0"]
        assert all(b.store.get(k) == a.store.get(k) for k in ("c/0/0", "c/1/0"))
        np.testing.assert_array_equal(b[...], a[...])


def test_a_source_whose_missing_chunks_must_raise_raises_as_its_read_would():
    a = zarrcore.create_array({}, shape=(4, 4), dtype="u1", chunks=(2, 2),
                              config={"read_missing_chunks": False})
    a[:2, :2] = 1
    b = zarrcore.create_array({}, shape=(4, 4), dtype="u1", chunks=(2, 2))
    with pytest.raises(zarrcore.errors.ZarrcoreError) as read:
        a[...]
    with pytest.raises(type(read.value)):
        b[...] = a


def test_a_destination_object_larger_than_the_memory_bound_still_copies(monkeypatch):
    monkeypatch.setattr(streaming, "DEFAULT_MEMORY", 1024)  # under one 40 x 40 float64 shard
    a = zarrcore.create_array({}, shape=(80, 80), dtype="i4", chunks=(20, 20))
    a[...] = np.arange(6400).reshape(80, 80)
    b = zarrcore.create_array({}, shape=(80, 80), dtype="f8", chunks=(10, 10), shards=(40, 40))
    b[...] = a
    np.testing.assert_array_equal(b[...], a[...])


def test_from_array_streams_across_stores_formats_and_keeps_attributes(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(50, 20), dtype="f4", chunks=(8, 8),
                              shards=(16, 16), attributes={"units": "m"})
    a[...] = np.linspace(0, 1, 1000, dtype="f4").reshape(50, 20)
    b = zarrcore.from_array({}, data=a, zarr_format=2, chunks=(7, 9))
    assert (b.zarr_format, b.chunks, dict(b.attrs)) == (2, (7, 9), {"units": "m"})
    np.testing.assert_array_equal(b[...], a[...])


def test_an_array_onto_itself_or_of_another_shape_is_assigned_as_numpy_would():
    a = zarrcore.create_array({}, shape=(20,), dtype="i4", chunks=(3,))
    a[...] = np.arange(20)
    same = zarrcore.open_array(a.store, mode="a")
    with pytest.raises(zarrcore.errors.ShapeMismatchError):
        a[2:] = same  # numpy's error, before anything is written
    a[...] = same
    np.testing.assert_array_equal(a[...], np.arange(20))


MEMORY_SCRIPT = """
import sys
import numpy as np
import zarrcore

def status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))

zarrcore.config.set(num_threads=2)
kw = dict(shape=(256, 512, 1024), dtype="u2", chunks=(32, 128, 128), compressors=None)
a = zarrcore.create_array(sys.argv[1], **kw)
for i in range(0, 256, 16):  # 256 MiB, written a slab at a time
    a[i:i + 16] = np.arange(16 * 512 * 1024, dtype="u2").reshape(16, 512, 1024) + i
b = zarrcore.create_array(sys.argv[2], **dict(kw, chunks=(64, 64, 64), shards=(64, 256, 256),
                                              compressors="zstd"))
with open("/proc/self/clear_refs", "w") as f:  # the peak (VmHWM) starts again from here
    f.write("5")
before = status_kib("VmRSS")
b[...] = a
print(status_kib("VmHWM") - before, int(b[200, 300, 1000]))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS read from /proc")
def test_a_streamed_copy_holds_blocks_not_the_array(tmp_path):
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(tmp_path / "a"),
                          str(tmp_path / "b")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    grown_kib, value = map(int, out.stdout.split())
    assert value == (8 * 512 * 1024 + 300 * 1024 + 1000 + 192) % 65536
    # Two threads of a 16 MiB block, its encoded shards and the chunks being decoded: about
    # 100 MiB, far below the 256 MiB array.
    assert grown_kib < 128 * 1024, grown_kib


def _written_copies(root):
    """Copies zarrcore streams: a v3 sharded one and a v2 one of another chunking; the data."""
    data = (np.arange(30 * 41, dtype="i4") * 7).reshape(30, 41)
    a = zarrcore.create_array(str(root / "a"), shape=data.shape, dtype="i4", chunks=(4, 5),
                              fill_value=-1, attributes={"k": 1})
    a[...] = data
    zarrcore.from_array(str(root / "v3"), data=a, chunks=(3, 4), shards=(9, 12))
    zarrcore.from_array(str(root / "v2"), data=a, zarr_format=2, chunks=(7, 6))
    b = zarrcore.create_array(str(root / "setitem"), shape=(35, 45), dtype="f8", chunks=(8, 8),
                              fill_value=0.5)
    b[2:32, 4:45] = a
    want = np.full((35, 45), 0.5)
    want[2:32, 4:45] = data
    return {"v3": data, "v2": data, "setitem": want}


def test_zarr31_reads_the_copies(tmp_path):
    zarr = pytest.importorskip("zarr")
    for name, want in _written_copies(tmp_path).items():
        got = zarr.open_array(str(tmp_path / name), mode="r")
        np.testing.assert_array_equal(got[...], want, err_msg=name)
        assert dict(got.attrs) == ({"k": 1} if name != "setitem" else {}), name


PEER_READS = """
import zarr
result = {name: pack(zarr.open_array(path, mode="r")[...]) for name, path in payload.items()}
"""


@pytest.mark.slow
def test_zarr34_reads_the_copies(peer, tmp_path):  # noqa: F811
    copies_written = _written_copies(tmp_path)
    read = peer.run(PEER_READS, {name: str(tmp_path / name) for name in copies_written})
    for name, want in copies_written.items():
        np.testing.assert_array_equal(unpack(read[name]), want, err_msg=name)
