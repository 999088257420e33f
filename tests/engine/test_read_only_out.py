"""Reads with `out=` refuse an `out` they may not write (read-only: a `bytes` object's memory
through np.frombuffer, a memory map opened mode="r") with numpy's ValueError before anything
is written, on every read path and every route of the engine; the compiled jobs refuse one
themselves too."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.engine.planning import Route
from zarrcore.metadata.indexing import BasicIndexer, OrthogonalIndexer, coordinate_indexer

SHAPE = (20, 6)
DATA = np.arange(120, dtype="int32").reshape(SHAPE)

# (name, the call with `out`, the shape of `out`) of every read path that takes out=.
PATHS = {
    "basic": (lambda a, o: a.get_basic_selection((slice(2, 6), slice(None)), out=o), (4, 6)),
    "basic-scalar": (lambda a, o: a.get_basic_selection((3, 4), out=o), ()),
    "orthogonal": (lambda a, o: a.get_orthogonal_selection(([5, 0, 9], [1, 4]), out=o), (3, 2)),
    "coordinate": (lambda a, o: a.get_coordinate_selection(([0, 7, 19], [0, 5, 1]), out=o), (3,)),
    "mask": (lambda a, o: a.get_mask_selection(DATA % 40 == 0, out=o), (3,)),
    "block": (lambda a, o: a.get_block_selection((1, slice(None)), out=o), (4, 6)),
    "fields-free-cast": (lambda a, o: a.get_basic_selection(slice(0, 2), out=o.view("float32")),
                         (2, 6)),
    "get_many-stacked": (lambda a, o: a.get_many([3, 0, 17], out=o), (3, 6)),
    "get_many-list": (lambda a, o: a.get_many([3, 0, 17], out=list(o)), (3, 6)),
    "get_many-each": (lambda a, o: a.get_many([(3, slice(1, 4)), (slice(0, 1), 2), 5],
                                              out=[o[0, :3], o[1, :1], o[2]]), (3, 6)),
    "get_many-one-read-only": (
        lambda a, o: a.get_many([1, 2], out=[np.zeros(6, "int32"), o[0]]), (1, 6)),
}


def _layouts(tmp_path):
    """Arrays of DATA on each kind of store the engine takes a route of its own for."""
    made = {}
    made["directory"] = zarrcore.create_array(str(tmp_path / "d"), shape=SHAPE, chunks=(4, 3),
                                              dtype="int32")
    made["directory-sharded"] = zarrcore.create_array(
        str(tmp_path / "s"), shape=SHAPE, chunks=(2, 3), shards=(4, 6), dtype="int32")
    made["memory"] = zarrcore.create_array(zarrcore.MemoryStore(), shape=SHAPE, chunks=(4, 3),
                                           dtype="int32")
    made["memory-dict"] = zarrcore.create_array(zarrcore.MemoryStore({}), shape=SHAPE,
                                                chunks=(4, 3), dtype="int32")
    for a in made.values():
        a[...] = DATA
    for name, shards in (("zip", None), ("zip-sharded", (4, 6))):
        path = tmp_path / f"{name}.zip"
        with zarrcore.ZipStore(str(path), mode="w") as store:
            zarrcore.create_array(store, shape=SHAPE, chunks=(2, 3) if shards else (4, 3),
                                  shards=shards, dtype="int32")[...] = DATA
        made[name] = zarrcore.open_array(zarrcore.ZipStore(str(path), mode="r"), mode="r")
    return made


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    return _layouts(tmp_path_factory.mktemp("read-only-out"))


def _read_only(shape, dtype="int32"):
    """An array over an immutable bytes object (as numpy makes it), and that object."""
    raw = bytes(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
    return np.frombuffer(raw, dtype=dtype).reshape(shape), raw


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("layout", ["directory", "directory-sharded", "memory", "memory-dict",
                                    "zip", "zip-sharded"])
def test_every_read_path_refuses_a_read_only_out_untouched(arrays, layout, path):
    call, shape = PATHS[path]
    out, raw = _read_only(shape)
    with pytest.raises(ValueError, match="read-only"):
        call(arrays[layout], out)
    assert raw == bytes(len(raw))  # not one byte written
    # The same read into a writable array works; a buffer that is no array is a TypeError.
    writable = np.zeros(shape, "int32")
    call(arrays[layout], writable)
    if not path.startswith(("fields", "get_many-")):  # (those index or view `out` first)
        with pytest.raises(TypeError, match="out must be a numpy array, not bytearray"):
            call(arrays[layout], bytearray(raw))


@settings(max_examples=30)
@given(rows=st.lists(st.integers(-20, 19), min_size=1, max_size=8),
       cols=st.one_of(st.slices(6), st.lists(st.integers(-6, 5), min_size=1, max_size=4)),
       mode=st.sampled_from(["orthogonal", "coordinate", "basic"]),
       layout=st.sampled_from(["directory", "directory-sharded", "memory", "zip-sharded"]))
def test_read_only_out_is_refused_for_any_selection(arrays, rows, cols, mode, layout):
    a = arrays[layout]
    if mode == "basic":
        selection = (slice(min(rows) % 20, None, 1 + len(rows) % 3), cols)
        if not isinstance(cols, slice):
            selection = (selection[0], cols[0])
        expected = DATA[selection]
        read = a.get_basic_selection
    elif mode == "orthogonal":
        selection = (rows, cols)
        expected = DATA[np.ix_(rows, np.arange(6)[cols])]
        read = a.get_orthogonal_selection
    else:
        columns = cols if isinstance(cols, list) else [0]
        selection = (rows, (columns * len(rows))[:len(rows)])
        expected = DATA[selection]
        read = a.get_coordinate_selection
    out, raw = _read_only(expected.shape)
    with pytest.raises(ValueError, match="read-only"):
        read(selection, out=out)
    assert raw == bytes(len(raw))
    writable = np.full(expected.shape, -1, "int32")
    assert read(selection, out=writable) is writable
    np.testing.assert_array_equal(writable, expected)


@pytest.mark.parametrize("layout,route", [
    ("directory", Route.CHUNK_BATCH), ("directory-sharded", Route.SHARD_BATCH),
    ("zip", Route.CHUNK_WAVES), ("zip-sharded", Route.SHARD_WAVES)])
def test_the_compiled_jobs_refuse_a_read_only_array_themselves(arrays, layout, route):
    """Below the engine's own check: a job handed a read-only array refuses before any of its
    workers writes."""
    a = arrays[layout]
    engine = a.chunk_engine
    for indexer in (BasicIndexer((slice(0, 8), slice(None)), SHAPE, engine.grid.axes),
                    OrthogonalIndexer(([9, 1, 4], slice(None)), SHAPE, engine.grid.axes),
                    coordinate_indexer(([1, 9], [2, 3]), SHAPE, engine.grid.axes)):
        if engine.routes.plan(indexer) != route:
            continue
        out, raw = _read_only(indexer.drop_shape)
        with pytest.raises(ValueError, match="read-only"):
            engine._read_once(indexer, out)
        assert raw == bytes(len(raw))
        break
    else:
        pytest.fail(f"no selection takes {route} on {layout}")


# In a child process: a crash (what a write into a read-only map does) fails the test, not the
# run.
MEMMAP_CHILD = """
import sys
import numpy as np
import zarrcore

a = zarrcore.open_array(sys.argv[1], mode="r")
np.zeros((20, 6), "int32").tofile(sys.argv[2])
out = np.memmap(sys.argv[2], dtype="int32", mode="r", shape=(20, 6))
calls = {
    "getitem-out": lambda: a.get_basic_selection(..., out=out),
    "orthogonal": lambda: a.get_orthogonal_selection((list(range(20)), slice(None)), out=out),
    "block": lambda: a.get_block_selection((slice(None), slice(None)), out=out),
    "coordinate": lambda: a.get_coordinate_selection((list(range(20)), [0] * 20), out=out[:, 0]),
    "get_many": lambda: a.get_many(list(range(20)), out=out),
}
for name, call in calls.items():
    try:
        call()
        print(name, "no error")
    except ValueError as e:
        print(name, "ValueError", "read-only" in str(e))
print("unchanged", not out.any())
"""


@pytest.mark.parametrize("shards", [None, (4, 6)])
def test_a_read_only_memory_map_as_out_is_refused_without_a_crash(tmp_path, shards):
    zarrcore.create_array(str(tmp_path / "a"), shape=SHAPE, chunks=(2, 3), shards=shards,
                          dtype="int32")[...] = DATA
    run = subprocess.run([sys.executable, "-c", MEMMAP_CHILD, str(tmp_path / "a"),
                          str(tmp_path / "map")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-2000:]}"
    lines = run.stdout.split("\n")
    assert [line for line in lines if line.split(" ")[1:] not in ([], ["ValueError", "True"])] \
        == ["unchanged True"], run.stdout
    assert os.path.getsize(tmp_path / "map") == DATA.nbytes


def _kernel_calls():
    from zarrcore import kernels
    from zarrcore._native import compress as _compress
    from zarrcore._native import filters as _filters

    packed = _compress.zstd_compress(DATA.tobytes(), 1, False)
    index = np.array([[0, 8], [8, 8]], dtype=np.uint64)
    return {
        "copy_region": (lambda o: kernels.copy_region(DATA, out=o), SHAPE, "int32"),
        "transpose": (lambda o: kernels.transpose(DATA, (1, 0), out=o), SHAPE[::-1], "int32"),
        "crc32c": (lambda o: kernels.crc32c(DATA, out=o), SHAPE[:1], "uint32"),
        "byteswap": (lambda o: kernels.byteswap(DATA, out=o), SHAPE, "int32"),
        "fill_equal": (lambda o: kernels.fill_equal(DATA, 0, out=o), SHAPE, "bool"),
        "shard_index_unpack": (
            lambda o: kernels.shard_index_unpack(kernels.shard_index_pack(index), 2, 16, out=o),
            (2, 2), "uint64"),
        "shard_index_pack": (lambda o: kernels.shard_index_pack(index, out=o), (32,), "uint8"),
        "zstd_decompress": (lambda o: _compress.zstd_decompress(packed, out=o), SHAPE, "int32"),
        "delta_decode-in-place": (lambda o: _filters.delta_decode(o), SHAPE, "int32"),
    }


@pytest.mark.parametrize("name", sorted(_kernel_calls()))
def test_kernels_with_out_refuse_a_read_only_array_untouched(name):
    call, shape, dtype = _kernel_calls()[name]
    out, raw = _read_only(shape, dtype)
    with pytest.raises((ValueError, TypeError), match="read-only|writable"):
        call(out)
    assert raw == bytes(len(raw))
    call(np.zeros(shape, dtype))


@pytest.mark.parametrize("layout", ["directory", "directory-sharded", "memory"])
def test_a_native_handle_refuses_a_read_only_out_untouched(arrays, layout):
    handle = arrays[layout].native_handle()
    out, raw = _read_only((4, 6))
    with pytest.raises(ValueError, match="read-only"):
        handle.read((2, 0), (4, 6), out=out)
    assert raw == bytes(len(raw))
    np.testing.assert_array_equal(handle.read((2, 0), (4, 6), out=np.zeros((4, 6), "int32")),
                                  DATA[2:6])
