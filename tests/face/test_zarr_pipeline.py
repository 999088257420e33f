"""zarrcore as zarr-python 3.4's codec pipeline (zarrcore.zarr_pipeline): what zarr-python
with it writes, zarrcore, plain zarr-python and tensorstore read, and the other way round;
every selection kind; concurrent partial writes of shared shards through zarr-python's API
lose nothing, on a directory and on S3 (moto), where they are conditional writes, and are
refused or warned about on stores that have neither those nor locks; zarr-python's config
keys keep their meaning, per array, and zarrcore's own config is left as it is; the cases it
hands to zarr-python's own pipeline (FALLBACKS) raise when zarrcore's config says so."""
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

zarr = pytest.importorskip("zarr", minversion="3.4",
                           reason="the pipeline implements zarr-python 3.4's CodecPipeline")

import zarrcore  # noqa: E402
from zarr.abc.codec import BytesBytesCodec  # noqa: E402
from zarr.core.buffer import default_buffer_prototype  # noqa: E402
from zarr.errors import ChunkNotFoundError as ZarrChunkNotFoundError  # noqa: E402
from zarr.registry import register_codec  # noqa: E402
from zarr.storage import LocalStore, LoggingStore, MemoryStore, ZipStore  # noqa: E402

import zarrcore.engine.directory  # noqa: E402
import zarrcore.engine.fetched  # noqa: E402
import zarrcore.storage.memory  # noqa: E402
from zarrcore.runtime.config import ARRAY_OPTIONS  # noqa: E402
from zarrcore.errors import PipelineFallbackError  # noqa: E402
from zarrcore.zarr_pipeline import FALLBACKS, ZarrcorePipeline, pipeline_status  # noqa: E402

PATH = "zarrcore.zarr_pipeline.ZarrcorePipeline"


@pytest.fixture(autouse=True)
def _zarrcore_config_unchanged():
    """The pipeline gives zarr-python's settings to the arrays it runs requests on, never to
    zarrcore.config: every test leaves it as it found it."""
    before = {name: zarrcore.config.get(name) for name in ARRAY_OPTIONS}
    yield
    assert {name: zarrcore.config.get(name) for name in ARRAY_OPTIONS} == before


@pytest.fixture
def native():
    """zarr-python through zarrcore's pipeline, every request run by zarrcore (a fallback
    raises)."""
    with zarr.config.set({"codec_pipeline.path": PATH}), \
            zarrcore.config.set(pipeline_fallback=False):
        yield


def _plain():
    return zarr.config.set({"codec_pipeline.path":
                            "zarr.core.codec_pipeline.BatchedCodecPipeline"})


LAYOUTS = {
    "v3": dict(chunks=(4, 7)),
    "v3-sharded": dict(chunks=(2, 5), shards=(4, 10)),
    "v3-zstd-sharded": dict(chunks=(3, 5), shards=(6, 10),
                            compressors=[{"name": "zstd", "configuration": {"level": 1}}]),
    "v2": dict(chunks=(4, 7), zarr_format=2),
}
DTYPES = ["int32", "float64", "uint8", "bool", "complex64", "datetime64[s]"]


def _values(dtype, shape):
    n = int(np.prod(shape))
    if dtype == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    if dtype.startswith("datetime64"):
        return (np.arange(n) * 1000).astype(dtype).reshape(shape)
    return (np.arange(n) % 251).astype(dtype).reshape(shape)


def _selections(shape):
    """(kind, selection, numpy's equivalent) for each selection kind zarr-python has."""
    rows, cols = shape
    mask = np.zeros(shape, dtype=bool)
    mask[1::3, ::4] = True
    return [
        ("basic", (slice(2, 17, 3), 5), (slice(2, 17, 3), 5)),
        ("basic", (slice(1, None, 2), slice(3, 29, 4)), (slice(1, None, 2), slice(3, 29, 4))),
        ("oindex", ([5, 1, 19, 1], slice(None, None, 6)),
         np.ix_([5, 1, 19, 1], np.arange(cols)[::6])),
        ("oindex", (np.arange(rows) % 4 == 1, [29, 0, 7]),
         np.ix_(np.flatnonzero(np.arange(rows) % 4 == 1), [29, 0, 7])),
        ("vindex", ([5, 1, 19, 7], [3, 2, 29, 3]), ([5, 1, 19, 7], [3, 2, 29, 3])),
        ("mask", mask, mask),
        ("block", (slice(1, 3), 2), None),
    ]


def _get(array, kind, sel):
    return {"basic": lambda: array[sel], "oindex": lambda: array.oindex[sel],
            "vindex": lambda: array.vindex[sel], "mask": lambda: array.vindex[sel],
            "block": lambda: array.blocks[sel]}[kind]()


def _set(array, kind, sel, value):
    if kind == "basic":
        array[sel] = value
    elif kind == "oindex":
        array.oindex[sel] = value
    elif kind in ("vindex", "mask"):
        array.vindex[sel] = value
    else:
        array.blocks[sel] = value


def _block_region(kw, sel):
    chunks = kw.get("shards", kw["chunks"])
    rows, col = sel
    return (slice(rows.start * chunks[0], rows.stop * chunks[0]),
            slice(col * chunks[1], (col + 1) * chunks[1]))


def _readers(path):
    """zarrcore's and plain zarr-python's reads of the array at `path` (tensorstore's are
    the tests of `TS_DTYPES`)."""
    with _plain():
        plain = zarr.open_array(path, mode="r")[...]
    return {"zarrcore": zarrcore.open_array(path, mode="r")[...], "zarr-python": plain}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_what_zarr_python_writes_through_the_pipeline_every_reader_reads(
        native, tmp_path, layout, dtype):
    kw = LAYOUTS[layout]
    shape = (20, 30)
    expected = _values(dtype, shape)
    a = zarr.create_array(str(tmp_path), shape=shape, dtype=dtype, fill_value=0, **kw)
    a[...] = expected
    for kind, sel, np_sel in _selections(shape):
        if kind == "block":
            np_sel = _block_region(kw, sel)
        part = _values(dtype, expected[np_sel].shape)[::-1]
        _set(a, kind, sel, part)
        expected[np_sel] = part
        np.testing.assert_array_equal(_get(a, kind, sel), expected[np_sel], err_msg=kind)
    np.testing.assert_array_equal(a[...], expected)
    for reader, got in _readers(tmp_path).items():
        np.testing.assert_array_equal(got, expected, err_msg=reader)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", ["int16", "float32", "datetime64[ms]"])
def test_zarr_python_reads_through_the_pipeline_what_zarrcore_writes(
        native, tmp_path, layout, dtype):
    kw = LAYOUTS[layout]
    shape = (20, 30)
    expected = _values(dtype, shape)
    zc = zarrcore.create_array(str(tmp_path), shape=shape, dtype=dtype, fill_value=0,
                               **{k: v for k, v in kw.items() if k != "compressors"})
    zc[...] = expected
    a = zarr.open_array(str(tmp_path), mode="r")
    for kind, sel, np_sel in _selections(shape):
        if kind == "block":
            np_sel = _block_region(kw, sel)
        np.testing.assert_array_equal(_get(a, kind, sel), expected[np_sel], err_msg=kind)


def _region(draw, shape):
    """A basic selection of unit-step slices and ints (the region reads and writes that
    `zarr_pipeline._unit_slices` works out), with negative and open ends."""
    sel = []
    for n in shape:
        if draw(st.booleans()):
            sel.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-n, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n, n)))
            sel.append(slice(start, stop))
    return tuple(sel)


@pytest.mark.parametrize("layout", ["v3", "v3-sharded", "v2"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_region_reads_and_writes_match_numpy(tmp_path_factory, layout, data):
    kw = LAYOUTS[layout]
    shape = (19, 23)  # (edge chunks and shards on both axes)
    expected = _values("int32", shape)
    path = str(tmp_path_factory.mktemp("region"))
    with zarr.config.set({"codec_pipeline.path": PATH}), \
            zarrcore.config.set(pipeline_fallback=False):
        a = zarr.create_array(path, shape=shape, dtype="int32", fill_value=-1, **kw)
        a[...] = expected
        sel = _region(data.draw, shape)
        np.testing.assert_array_equal(a[sel], expected[sel])
        value = -np.arange(expected[sel].size, dtype="int32").reshape(expected[sel].shape)
        a[sel] = value
        expected[sel] = value
        np.testing.assert_array_equal(a[...], expected)
    np.testing.assert_array_equal(zarrcore.open_array(path, mode="r")[...], expected)


# -- tensorstore, both ways --------------------------------------------------------------------
# (tensorstore has no datetime64: zarr-python's v3 extension type, nor v2's "<M8".)
TS_DTYPES = ["int16", "float64", "bool", "complex64"]


def _tensorstore():
    return pytest.importorskip("tensorstore", reason="tensorstore, a peer of the interop "
                                                     "matrix: `make newest-test` installs it")


def _ts_spec(path, kw, dtype, create=False):
    """tensorstore's spec of the array at `path` of the layout `kw` (LAYOUTS) and `dtype`,
    as the array zarr-python's create_array makes of them."""
    spec = {"driver": "zarr" if kw.get("zarr_format") == 2 else "zarr3",
            "kvstore": {"driver": "file", "path": str(path)}}
    if not create:
        return spec
    shape, chunks = [20, 30], list(kw.get("shards", kw["chunks"]))
    compressors = kw.get("compressors", [])
    # (0 as tensorstore's JSON of each type has it; v2's complex as its bytes, base64.)
    fill = {"bool": False, "complex64": [0.0, 0.0]}.get(dtype, 0)
    if kw.get("zarr_format") == 2:
        spec["metadata"] = {"shape": shape, "chunks": chunks, "dtype": np.dtype(dtype).str,
                            "compressor": None, "order": "C",
                            "fill_value": "AAAAAAAAAAA=" if dtype == "complex64" else fill}
    else:
        little = {"name": "bytes", "configuration": {"endian": "little"}}
        codecs = [little, *compressors]
        if "shards" in kw:
            codecs = [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": list(kw["chunks"]), "codecs": codecs,
                "index_codecs": [little, {"name": "crc32c"}]}}]
        spec["metadata"] = {"shape": shape, "data_type": np.dtype(dtype).name,
                            "chunk_grid": {"name": "regular",
                                           "configuration": {"chunk_shape": chunks}},
                            "codecs": codecs, "fill_value": fill}
    return {**spec, "create": True}


def _ts_get(t, kind, sel, kw):
    """tensorstore's read of a selection of `_selections`."""
    if kind == "basic":
        return t[sel].read().result()
    if kind == "oindex":
        rows, cols = sel
        return t.oindex[np.flatnonzero(rows) if np.asarray(rows).dtype == bool else rows,
                        cols].read().result()
    if kind == "vindex":
        return t.vindex[sel].read().result()
    if kind == "mask":
        return t.vindex[np.nonzero(sel)].read().result()
    return t[_block_region(kw, sel)].read().result()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", TS_DTYPES)
def test_tensorstore_reads_what_zarr_python_writes_through_the_pipeline(
        native, tmp_path, layout, dtype):
    ts = _tensorstore()
    kw = LAYOUTS[layout]
    expected = _values(dtype, (20, 30))
    a = zarr.create_array(str(tmp_path), shape=(20, 30), dtype=dtype, fill_value=0, **kw)
    a[...] = expected
    a[3:11, 4:19] = expected[3:11, 4:19][::-1]  # (parts of chunks and shards)
    expected[3:11, 4:19] = expected[3:11, 4:19][::-1]
    t = ts.open(_ts_spec(tmp_path, kw, dtype)).result()
    np.testing.assert_array_equal(t.read().result(), expected)
    for kind, sel, np_sel in _selections((20, 30)):
        if kind == "block":
            np_sel = _block_region(kw, sel)
        np.testing.assert_array_equal(_ts_get(t, kind, sel, kw), expected[np_sel],
                                      err_msg=kind)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", TS_DTYPES)
def test_zarr_python_reads_through_the_pipeline_what_tensorstore_writes(
        native, tmp_path, layout, dtype):
    ts = _tensorstore()
    kw = LAYOUTS[layout]
    expected = _values(dtype, (20, 30))
    t = ts.open(_ts_spec(tmp_path, kw, dtype, create=True)).result()
    t.write(expected).result()
    t[3:11, 4:19].write(expected[3:11, 4:19][::-1]).result()
    expected[3:11, 4:19] = expected[3:11, 4:19][::-1]
    a = zarr.open_array(str(tmp_path), mode="r")
    np.testing.assert_array_equal(a[...], expected)
    for kind, sel, np_sel in _selections((20, 30)):
        if kind == "block":
            np_sel = _block_region(kw, sel)
        np.testing.assert_array_equal(_get(a, kind, sel), expected[np_sel], err_msg=kind)


# (zarr-python's ZipStore appends a rewritten chunk under the same name; zipfile warns.)
@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")
@pytest.mark.parametrize("store_kind", ["memory", "zip", "local"])
def test_strings_and_stores_other_than_a_directory(native, tmp_path, store_kind):
    store = {"memory": lambda: MemoryStore(), "local": lambda: LocalStore(tmp_path),
             "zip": lambda: ZipStore(tmp_path / "a.zip", mode="w")}[store_kind]()
    a = zarr.create_array(store, shape=(9,), chunks=(4,), dtype=str)
    words = np.array(["a", "", "ccc", "dddd", "é", "ff", "g", "hh", "iii"], dtype=object)
    a[...] = words
    a[2:7] = ["x", "y", "z", "w", "v"]
    words[2:7] = ["x", "y", "z", "w", "v"]
    assert list(a[...]) == list(words)
    assert list(a.vindex[[8, 0, 4]]) == list(words[[8, 0, 4]])
    if store_kind == "zip":
        store.close()


@pytest.mark.parametrize("fmt", [2, 3])
def test_zip_all_fill_chunks_as_zarr_python(native, tmp_path, fmt):
    """Only the fill value written to a chunk never stored leaves nothing to delete in a zip
    (zarr-python's ZipStore deletes a missing key silently); a stored one cannot be
    deleted: NotImplementedError, as zarr-python's own pipeline raises."""
    with ZipStore(tmp_path / "a.zip", mode="w") as store:
        a = zarr.create_array(store, shape=(8,), chunks=(4,), dtype="i4", fill_value=7,
                              zarr_format=fmt, compressors=None)
        a[4:] = 7
        a[:4] = [1, 2, 3, 4]
        with pytest.raises(NotImplementedError):
            a[:4] = 7
        assert a[...].tolist() == [1, 2, 3, 4, 7, 7, 7, 7]
    with zipfile.ZipFile(tmp_path / "a.zip") as zf:
        assert set(zf.namelist()) & {"0", "c/0", "1", "c/1"} == ({"0"} if fmt == 2 else {"c/0"})


def test_structured_arrays_and_their_fields(tmp_path):
    dtype = np.dtype([("a", ">i4"), ("b", "<f8")])
    values = np.array([(i, i / 2) for i in range(6)], dtype=dtype)
    with zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.create_array(str(tmp_path), shape=(6,), chunks=(4,), dtype=dtype)
        with zarrcore.config.set(pipeline_fallback=False):
            a[...] = values  # (zarrcore casts fields of either byte order)
            np.testing.assert_array_equal(a[1:5], values[1:5])
            # (The batch does not name the field; zarr-python's own pipeline gets it.)
            with pytest.raises(PipelineFallbackError, match="by fields"):
                a.get_basic_selection(slice(None), fields="b")


def test_missing_chunks_are_reported_as_zarr_python_does(native):
    store = MemoryStore()
    a = zarr.create_array(store, shape=(8, 8), chunks=(4, 4), dtype="i4", fill_value=7)
    a[:4, :4] = 1
    with zarr.config.set({"array.read_missing_chunks": False}):
        a = zarr.open_array(store)  # (arrays take the setting when opened)
        np.testing.assert_array_equal(a[:4, :4], 1)
        with pytest.raises(ZarrChunkNotFoundError, match="c/1/1"):
            a[...]
    np.testing.assert_array_equal(zarr.open_array(store)[4:, :], 7)  # (filled)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_values_broadcast_over_several_chunks_as_numpy_does(native, zarr_format):
    """A value with axes of length 1 (or a scalar) is broadcast over the selection, as numpy
    does, across chunks too (zarr-python's own pipeline fails once it spans two chunks), by
    zarrcore's pipeline itself; one that does not broadcast it leaves to zarr-python's."""
    a = zarr.create_array(MemoryStore(), shape=(5, 6), chunks=(2, 2), dtype="i4",
                          fill_value=-1, zarr_format=zarr_format)
    expected = np.full((5, 6), -1, dtype="i4")
    for key, value in [((slice(0, 5), slice(1, 2)), np.array([[3]], dtype="i4")),
                       ((slice(1, 4), slice(0, 6)), np.arange(6, dtype="i4")[None, :]),
                       ((slice(0, 5), 4), np.array([9], dtype="i4")),
                       ((slice(3, 5), slice(2, 6)), np.int32(8))]:
        a[key] = value
        expected[key] = value
        np.testing.assert_array_equal(a[...], expected)
    with pytest.raises(PipelineFallbackError, match="not one orthogonal"):
        a[0:2, 0:3] = np.zeros((2, 6), dtype="i4")
    np.testing.assert_array_equal(a[...], expected)


def test_the_pipeline_reports_each_chunks_status(native):
    store = MemoryStore()
    a = zarr.create_array(store, shape=(8,), chunks=(4,), dtype="i4")
    a[:4] = 1
    pipeline = a._async_array.codec_pipeline
    assert isinstance(pipeline, ZarrcorePipeline)
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.storage import StorePath

    chunk_spec = ArraySpec(shape=(4,), dtype=a._async_array.metadata.data_type, fill_value=0,
                           config=ArrayConfig.from_dict({"read_missing_chunks": False}),
                           prototype=default_buffer_prototype())
    out = default_buffer_prototype().nd_buffer.empty(shape=(8,), dtype=np.dtype("i4"))
    batch = [(StorePath(store, f"c/{i}"), chunk_spec, (slice(0, 4),), (slice(4 * i, 4 * i + 4),),
              True) for i in range(2)]
    results = zarr.core.sync.sync(pipeline.read(batch, out))
    assert [r["status"] for r in results] == ["present", "missing"]
    np.testing.assert_array_equal(out.as_numpy_array(), [1] * 4 + [0] * 4)


@pytest.mark.parametrize("write_empty", [False, True])
def test_write_empty_chunks_keeps_its_meaning(native, write_empty):
    store = MemoryStore()
    a = zarr.create_array(store, shape=(8,), chunks=(4,), dtype="i4", fill_value=0,
                          config={"write_empty_chunks": write_empty})
    a[...] = 0
    a[4:] = 5
    stored = sorted(k for k in store._store_dict if k.startswith("c/"))
    assert stored == (["c/0", "c/1"] if write_empty else ["c/1"])
    with zarr.config.set({"array.write_empty_chunks": write_empty}):
        b = zarr.open_array(store)
        b[4:] = 0
    assert ("c/1" in store._store_dict) == write_empty


@pytest.fixture
def run_settings(monkeypatch):
    """What the engine runs each request with, as it hands it on: the coalesce limits of
    shard reads, the threads of compiled jobs and the requests in flight of store calls and
    of reads by one version of each shard (a list of (what, value), cleared by the test)."""
    seen = []
    coalesce, fan_out = zarrcore.engine.shard_ranges.coalesce, zarrcore.engine.shard_ranges.fan_out
    run_workers = zarrcore.engine.fetched.run_workers
    get_many = zarrcore.storage.memory.MemoryStore.get_many

    def coalesce_spy(offsets, lengths, gap, most):
        seen.append(("coalesce", (gap, most)))
        return coalesce(offsets, lengths, gap, most)

    def run_workers_spy(work, ntasks, stop, workers=None):
        seen.append(("threads", workers))
        return run_workers(work, ntasks, stop, workers)

    def get_many_spy(self, requests, concurrency=None):
        seen.append(("in flight", concurrency))
        return get_many(self, requests, concurrency)

    def fan_out_spy(call, items, limit, **kwargs):
        seen.append(("in flight", limit))
        return fan_out(call, items, limit, **kwargs)

    monkeypatch.setattr(zarrcore.engine.shard_ranges, "coalesce", coalesce_spy)
    for runners in (zarrcore.engine.directory, zarrcore.engine.fetched):
        monkeypatch.setattr(runners, "run_workers", run_workers_spy)
    monkeypatch.setattr(zarrcore.storage.memory.MemoryStore, "get_many", get_many_spy)
    monkeypatch.setattr(zarrcore.engine.shard_ranges, "fan_out", fan_out_spy)
    return seen


def _laid_out(store, shard_grid):
    """The stored inner chunks of the shard "c/0/0" (16-byte index entries, crc32c) in the
    order their bytes lie."""
    data = store._store_dict["c/0/0"].to_bytes()
    n = int(np.prod(shard_grid))
    offsets = np.frombuffer(data[-16 * n - 4:-4], "<u8")[::2].reshape(shard_grid)
    stored = [c for c in np.ndindex(*shard_grid) if offsets[c] != 2**64 - 1]
    return sorted(stored, key=lambda c: offsets[c])


def test_arrays_of_different_zarr_settings_keep_their_own(native, run_settings):
    from zarr.codecs import ShardingCodec

    # Two arrays in one process, used in turn: each request runs with its own array's
    # coalesce limits and write order and the zarr-python config around it.
    arrays = []
    for order, gap, most, in_flight, threads in [("morton", 5, 4096, 3, 2),
                                                  ("lexicographic", 1000, 1 << 20, 7, None)]:
        a = zarr.create_array(
            MemoryStore(), shape=(8, 8), chunks=(8, 8), dtype="i4", fill_value=0,
            serializer=ShardingCodec(chunk_shape=(2, 2), subchunk_write_order=order),
            compressors=None, config={"sharding_coalesce_max_gap_bytes": gap,
                                      "sharding_coalesce_max_bytes": most})
        arrays.append((a, order, (gap, most), in_flight, threads))
    expected = [np.zeros((8, 8), "i4"), np.zeros((8, 8), "i4")]
    for turn in range(3):
        for k, (a, _, limits, in_flight, threads) in enumerate(arrays):
            with zarr.config.set({"async.concurrency": in_flight,
                                  "threading.max_workers": threads}):
                a[2 * turn:2 * turn + 2, 2:6] = 10 * k + turn + 1  # (part of the shard)
                expected[k][2 * turn:2 * turn + 2, 2:6] = 10 * k + turn + 1
                run_settings.clear()
                # (Two inner chunks of sixteen: the index, then their byte ranges.)
                np.testing.assert_array_equal(a[2 * turn:2 * turn + 2, 0:4],
                                              expected[k][2 * turn:2 * turn + 2, 0:4])
            assert dict(run_settings) == {
                "coalesce": limits, "in flight": in_flight,
                "threads": zarrcore.config.num_threads if threads is None else threads}, k
    for (a, order, *_), values in zip(arrays, expected):
        np.testing.assert_array_equal(a[...], values)
        laid_out = _laid_out(a.store, (4, 4))
        assert len(laid_out) == 6  # (rows 0 to 5, columns 2 to 5: 3 by 2 inner chunks)
        assert laid_out == [c for c in ShardingCodec(chunk_shape=(2, 2))._subchunk_order_iter(
            (4, 4), order) if c in laid_out], order


def test_array_options_fall_back_to_zarrcore_config():
    a = zarrcore.create_array({}, shape=(8,), chunks=(2,), shards=(8,), dtype="i4")
    own = a.with_config({"coalesce_gap_bytes": 7, "io_concurrency": 5})
    with zarrcore.config.set(coalesce_gap_bytes=11, coalesce_max_bytes=99, io_concurrency=13,
                             shard_write_order="morton"):
        options = own.chunk_engine.options
        assert (options.coalesce_gap_bytes, options.coalesce_max_bytes) == (7, 99)
        assert (options.io_concurrency, options.shard_write_order) == (5, "morton")
        assert a.chunk_engine.options is zarrcore.config  # (it sets none)
    assert own.config["coalesce_gap_bytes"] == 7 and "num_threads" not in own.config
    with pytest.raises(ValueError, match="io_concurrency must be >= 1"):
        a.with_config({"io_concurrency": 0})
    with pytest.raises(ValueError, match="shard_write_order"):
        a.with_config({"shard_write_order": "F"})


def test_coalescing_stops_at_the_most_bytes():
    from zarrcore.codecs.sharding import coalesce

    offsets, lengths = [0, 10, 20, 30, 1000], [10, 10, 10, 10, 10]
    starts, stops, group = coalesce(offsets, lengths, 100, None)
    assert (list(starts), list(stops), list(group)) == ([0, 1000], [40, 1010], [0, 0, 0, 0, 1])
    starts, stops, group = coalesce(offsets, lengths, 100, 25)
    assert (list(starts), list(stops), list(group)) == (
        [0, 20, 1000], [20, 40, 1010], [0, 0, 1, 1, 2])


@pytest.mark.parametrize("wrapped", [False, True])
def test_resizes_by_zarr_python_are_followed(native, wrapped):
    # (A wrapper store is read through zarr-python's event loop, which runs the pipeline.)
    store = LoggingStore(MemoryStore()) if wrapped else MemoryStore()
    a = zarr.create_array(store, shape=(10,), chunks=(4,), dtype="i4", fill_value=0)
    a[...] = np.arange(10)
    a.resize((14,))
    a[9:14] = 7
    np.testing.assert_array_equal(a[...], list(range(9)) + [7] * 5)
    a.resize((6,))
    a[4:6] = 1  # (the last chunk, whole within the new shape)
    np.testing.assert_array_equal(a[...], [0, 1, 2, 3, 1, 1])
    a.append(np.array([5, 5], dtype="i4"))
    np.testing.assert_array_equal(a[...], [0, 1, 2, 3, 1, 1, 5, 5])


def test_shards_keep_cells_past_a_shrunk_shape_as_zarr_python_does(native):
    a = zarr.create_array(MemoryStore(), shape=(4,), chunks=(2,), shards=(4,), dtype="i2",
                          fill_value=0)
    a[...] = [1, 2, 3, 4]
    a.resize((2,))
    a[...] = [9, 9]
    a.resize((4,))
    np.testing.assert_array_equal(a[...], [9, 9, 3, 4])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarrays_zarr_engine_through_the_pipeline(native, tmp_path, zarr_format):
    xr = pytest.importorskip("xarray", reason="xarray's zarr engine")
    ds = xr.Dataset({"t": (("time", "x"), np.arange(60.0).reshape(6, 10)),
                     "name": (("x",), np.array([f"n{i}" for i in range(10)], dtype=object))},
                    coords={"time": np.arange(6), "x": np.arange(10) * 2})
    path = str(tmp_path / "ds.zarr")
    ds.isel(time=slice(0, 4)).to_zarr(path, zarr_format=zarr_format, consolidated=False,
                                      encoding={"t": {"chunks": (3, 4)}})
    # (appending writes part of the last chunk along time)
    ds.isel(time=slice(4, 6)).to_zarr(path, append_dim="time", consolidated=False)
    got = xr.open_zarr(path, consolidated=False).load()
    xr.testing.assert_identical(got, ds)
    np.testing.assert_array_equal(zarrcore.open_array(path, path="t")[...], ds["t"].values)


def test_arrays_pickle_with_the_pipeline(native, tmp_path):
    a = zarr.create_array(str(tmp_path), shape=(6,), chunks=(2,), shards=(4,), dtype="i4")
    a[...] = np.arange(6)
    copy = pickle.loads(pickle.dumps(a))
    assert isinstance(copy._async_array.codec_pipeline, ZarrcorePipeline)
    copy[1:3] = -1
    np.testing.assert_array_equal(a[...], [0, -1, -1, 3, 4, 5])


# -- what falls back --------------------------------------------------------------------------
class _Identity(BytesBytesCodec):  # a codec zarrcore does not know
    is_fixed_size = True

    def __init__(self):
        pass

    @classmethod
    def from_dict(cls, data):
        return cls()

    def to_dict(self):
        return {"name": "zarrcore-test-identity"}

    def compute_encoded_size(self, input_byte_length, chunk_spec):
        return input_byte_length

    async def _decode_single(self, chunk_bytes, chunk_spec):
        return chunk_bytes

    async def _encode_single(self, chunk_bytes, chunk_spec):
        return chunk_bytes


def test_a_codec_zarrcore_does_not_know_falls_back_or_raises():
    register_codec("zarrcore-test-identity", _Identity)
    with zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.create_array(MemoryStore(), shape=(6,), chunks=(3,), dtype="i4",
                              compressors=[_Identity()])
        a[...] = np.arange(6)  # (zarr-python's pipeline)
        np.testing.assert_array_equal(a[...], np.arange(6))
        with zarrcore.config.set(pipeline_fallback=False), \
                pytest.raises(PipelineFallbackError, match="registered in zarr-python"):
            a[...]
    assert set(FALLBACKS) == {"buffer", "metadata", "codec", "store", "selection", "fields",
                              "write_order", "unprotected"}


def test_the_fallback_error_names_its_cause_and_the_array():
    register_codec("zarrcore-test-identity", _Identity)
    with zarr.config.set({"codec_pipeline.path": PATH}):
        group = zarr.open_group(MemoryStore())
        a = group.create_array("grid/temperature", shape=(6,), chunks=(3,), dtype="i4",
                               compressors=[_Identity()])
        structured = group.create_array("grid/pairs", shape=(4,), chunks=(4,),
                                        dtype=[("a", "<i4"), ("b", "<f8")])
        with zarrcore.config.set(pipeline_fallback=False):
            with pytest.raises(PipelineFallbackError) as codec:
                a[...]
            with pytest.raises(PipelineFallbackError) as fields:
                structured.get_basic_selection(slice(None), fields="b")
    # The codec's class, and the array (its chunk's key where the path is not parsed yet).
    assert f"{__name__}._Identity" in str(codec.value)
    assert "'grid/temperature/c/0'" in str(codec.value)
    assert "array 'grid/pairs'" in str(fields.value) and "('a', 'b')" in str(fields.value)
    for error in (codec, fields):
        assert "pipeline_fallback=True" in str(error.value)


def test_the_status_says_whether_the_pipeline_runs_an_array_and_what_fell_back(tmp_path):
    with _plain():
        plain = zarr.create_array(MemoryStore(), shape=(6,), chunks=(3,), dtype="i4")
    status = pipeline_status(plain)
    assert status[:2] == (False, "zarr.core.codec_pipeline.BatchedCodecPipeline")
    assert "codec_pipeline.path" in status.reason and PATH in status.reason
    from zarr.core.buffer import BufferPrototype, cpu

    class OwnBuffer(cpu.Buffer):
        pass

    own = BufferPrototype(buffer=OwnBuffer, nd_buffer=cpu.NDBuffer)
    register_codec("zarrcore-test-identity", _Identity)
    with zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.create_array(str(tmp_path / "a"), shape=(6,), chunks=(3,), dtype="i4")
        a[...] = np.arange(6)
        np.testing.assert_array_equal(a[1:5], np.arange(1, 5))
        assert pipeline_status(a) == (True, PATH, None, {}, None)
        a.get_basic_selection(slice(1, 5), prototype=own)  # (zarr-python's pipeline reads it)
        a.get_basic_selection(slice(2), prototype=own)
        status = pipeline_status(a)
        assert status.active and status.reason is None and status.fallbacks == {"buffer": 2}
        assert "'c/0'" in status.last_fallback and "OwnBuffer" in status.last_fallback
        assert pipeline_status(a.async_array) == status
        foreign = zarr.create_array(MemoryStore(), shape=(6,), chunks=(3,), dtype="i4",
                                    compressors=[_Identity()])
    status = pipeline_status(foreign)
    assert status[:2] == (False, PATH) and f"{__name__}._Identity" in status.reason
    assert "registered in zarr-python" in status.reason
    with pytest.raises(TypeError, match="zarr-python Array"):
        pipeline_status(zarrcore.create_array({}, shape=(2,), dtype="i4"))


@pytest.mark.parametrize("read", ["basic", "orthogonal", "coordinate"])
def test_a_read_only_out_through_the_pipeline_is_refused_untouched(native, read):
    from zarr.core.buffer import cpu

    a = zarr.create_array(MemoryStore(), shape=(6, 4), chunks=(2, 2), dtype="i4")
    a[...] = np.arange(24).reshape(6, 4)
    raw = bytes(4 * 4 * 4 if read != "coordinate" else 4 * 4)
    shape = (4, 4) if read != "coordinate" else (4,)
    out = cpu.NDBuffer.from_numpy_array(np.frombuffer(raw, "i4").reshape(shape))
    call = {"basic": lambda: a.get_basic_selection(np.s_[1:5], out=out),
            "orthogonal": lambda: a.get_orthogonal_selection(([4, 0, 1, 5], slice(None)),
                                                             out=out),
            "coordinate": lambda: a.get_coordinate_selection(([0, 2, 4, 5], [0, 1, 2, 3]),
                                                             out=out)}[read]
    with pytest.raises(ValueError, match="read-only"):
        call()
    assert raw == bytes(len(raw))


def test_a_codec_class_registered_in_zarrs_config_runs_as_it_is():
    from zarr.codecs import ZstdCodec

    calls = []

    class CountingZstd(ZstdCodec):
        async def _encode_single(self, chunk_bytes, chunk_spec):
            calls.append(chunk_spec.shape)
            return await super()._encode_single(chunk_bytes, chunk_spec)

    register_codec("zstd", CountingZstd)
    try:
        with zarr.config.set({"codec_pipeline.path": PATH,
                              "codecs.zstd": f"{__name__}.{CountingZstd.__qualname__}"}):
            a = zarr.create_array(MemoryStore(), shape=(6,), chunks=(3,), dtype="i4",
                                  compressors=[{"name": "zstd", "configuration": {"level": 1}}])
            a[...] = np.arange(6)  # (zarr-python's pipeline, with the class as registered)
            assert calls == [(3,), (3,)]
            np.testing.assert_array_equal(a[...], np.arange(6))
            with zarrcore.config.set(pipeline_fallback=False), \
                    pytest.raises(PipelineFallbackError, match="registered in zarr-python"):
                a[...]
    finally:
        register_codec("zstd", ZstdCodec)


def test_a_buffer_prototype_of_other_classes_falls_back():
    from zarr.core.buffer import BufferPrototype, cpu

    class OwnBuffer(cpu.Buffer):
        pass

    with zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.create_array(MemoryStore(), shape=(6,), chunks=(3,), dtype="i4")
        a[...] = np.arange(6)
        own = BufferPrototype(buffer=OwnBuffer, nd_buffer=cpu.NDBuffer)
        np.testing.assert_array_equal(a.get_basic_selection(slice(1, 5), prototype=own),
                                      np.arange(1, 5))
        with zarrcore.config.set(pipeline_fallback=False), \
                pytest.raises(PipelineFallbackError, match="custom buffer"):
            a.get_basic_selection(slice(1, 5), prototype=own)


def test_a_moved_local_store_is_read_where_it_went(native, tmp_path):
    import asyncio

    store = LocalStore(tmp_path / "origin")
    a = zarr.create_array(store, data=np.arange(8), chunks=(3,))
    np.testing.assert_array_equal(a[...], np.arange(8))
    asyncio.run(store.move(tmp_path / "moved"))
    np.testing.assert_array_equal(a[...], np.arange(8))
    a[2:5] = -1
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "moved"))[...],
                                  [0, 1, -1, -1, -1, 5, 6, 7])


def test_a_zip_in_a_file_object_is_read_through_zarr_pythons_store(native, tmp_path):
    path = tmp_path / "a.zip"
    with ZipStore(path, mode="w") as store:
        zarr.create_array(store, data=np.arange(8), chunks=(3,))
    with open(path, "rb") as f:
        store = ZipStore(f, mode="r")
        np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], np.arange(8))


def test_errors_of_zarr_pythons_own_store_come_through_as_it_raised_them(native):
    class Refusing(MemoryStore):
        async def set(self, key, value):
            if "/c/" in f"/{key}":
                raise PermissionError(f"refused {key}")
            await super().set(key, value)

    a = zarr.create_array(Refusing(), shape=(6,), chunks=(3,), dtype="i4")
    with pytest.raises(PermissionError, match="refused"):
        a[...] = np.arange(6)


@pytest.mark.parametrize("order", ["morton", "lexicographic", "colexicographic"])
def test_shards_are_laid_out_in_zarr_pythons_subchunk_write_order(order):
    from zarr.codecs import ShardingCodec

    codec = ShardingCodec(chunk_shape=(2, 2), subchunk_write_order=order)
    with zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.create_array(MemoryStore(), shape=(6, 4), dtype="u1", serializer=codec,
                              chunks=(6, 4), compressors=None, fill_value=0)
        # (zarrcore writes C and Morton orders only: colexicographic shards fall back.)
        falls_back = order == "colexicographic"
        with zarrcore.config.set(pipeline_fallback=falls_back):
            if falls_back:
                with zarrcore.config.set(pipeline_fallback=False), \
                        pytest.raises(PipelineFallbackError, match="colexicographic"):
                    a[...] = 1
            a[...] = np.arange(24).reshape(6, 4) + 1
    index = np.frombuffer(a.store._store_dict["c/0/0"].to_bytes()[-16 * 6 - 4:-4], "<u8")
    offsets = index[::2].reshape(3, 2)
    laid_out = sorted(np.ndindex(3, 2), key=lambda c: offsets[c])
    assert laid_out == list(codec._subchunk_order_iter((3, 2), order))


def test_a_read_only_store_raises_zarr_pythons_error(native, tmp_path):
    zarr.create_array(str(tmp_path), shape=(4,), chunks=(2,), dtype="i4")[...] = 1
    a = zarr.open_array(LocalStore(tmp_path, read_only=True))
    np.testing.assert_array_equal(a[...], 1)
    with pytest.raises(ValueError, match="read-only"):
        a[:1] = 2


# -- concurrent partial writes of shared shards ---------------------------------------------------
ROWS, WRITERS = 8, 8


def _create_shared(path):
    # One shard holds every writer's column: each write is part of the same shard.
    zarr.create_array(path, shape=(ROWS, WRITERS), chunks=(ROWS, 1), shards=(ROWS, WRITERS),
                      dtype="i4", fill_value=-1)


def _write_column(path, column, rounds):
    """Write column `column` of the shared array `rounds` times, each time with its round."""
    a = zarr.open_array(path)
    assert isinstance(a._async_array.codec_pipeline, ZarrcorePipeline)
    for r in range(rounds):
        a[:, column] = r * 100 + column


def test_threads_writing_parts_of_one_shard_lose_nothing(native, tmp_path):
    path = str(tmp_path)
    _create_shared(path)
    threads = [threading.Thread(target=_write_column, args=(path, c, 10)) for c in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = zarrcore.open_array(path)[...]
    np.testing.assert_array_equal(got, np.broadcast_to(900 + np.arange(WRITERS), got.shape))


@pytest.fixture
def entry_point(tmp_path_factory, monkeypatch):
    """The package's `zarr.codec_pipeline` entry point (pyproject.toml) as installing it
    registers it, on the path of processes started from here."""
    site = tmp_path_factory.mktemp("site")
    info = site / "zarrcore_pipeline_entry-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zarrcore-pipeline-entry\n"
                                   "Version: 0\n")
    (info / "entry_points.txt").write_text(
        "[zarr.codec_pipeline]\nzarrcore = zarrcore.zarr_pipeline:ZarrcorePipeline\n")
    root = os.path.dirname(os.path.dirname(zarrcore.__file__))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), root]))
    monkeypatch.setenv("ZARR_CODEC_PIPELINE__PATH", PATH)
    monkeypatch.syspath_prepend(str(site))
    return site


def test_the_entry_point_resolves_the_pipeline_in_a_new_process(entry_point):
    code = ("import sys, zarr.registry; cls = zarr.registry.get_pipeline_class(); "
            "print(cls.__module__ + '.' + cls.__qualname__, 'zarrcore.zarr_pipeline' in "
            "sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)
    assert found.stdout.split() == [PATH, "True"]


def _write_columns_in_child(path, columns, rounds):
    import zarr as child_zarr

    # (The pipeline comes from ZARR_CODEC_PIPELINE__PATH and the entry point alone.)
    assert child_zarr.config.get("codec_pipeline.path") == PATH
    a = child_zarr.open_array(path)
    assert type(a._async_array.codec_pipeline).__name__ == "ZarrcorePipeline"
    for r in range(rounds):
        for column in columns:
            a[:, column] = r * 100 + column


def test_processes_writing_parts_of_one_shard_lose_nothing(entry_point, tmp_path):
    path = str(tmp_path / "a")
    _create_shared(path)
    context = multiprocessing.get_context("spawn")
    # (Every writer's column, four processes writing two each: spawning costs seconds.)
    workers = [context.Process(target=_write_columns_in_child, args=(path, (c, c + 4), 5))
               for c in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0] * 4
    got = zarrcore.open_array(path)[...]
    np.testing.assert_array_equal(got, np.broadcast_to(400 + np.arange(WRITERS), got.shape))


# -- concurrent partial writes of one shard on S3 (moto) -----------------------------------------
def _zarr_s3_store(endpoint, bucket, kind):
    """zarr-python's store of `bucket` on the S3 server at `endpoint`: its ObjectStore over
    obstore's S3Store, or its FsspecStore over s3fs."""
    from servers import S3_CREDENTIALS

    if kind == "obstore":
        from obstore.store import S3Store
        from zarr.storage import ObjectStore

        return ObjectStore(S3Store(bucket, endpoint=endpoint, client_options={"allow_http": True},
                                   **S3_CREDENTIALS))
    import s3fs
    from zarr.storage import FsspecStore

    fs = s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=endpoint,
                           client_kwargs={"region_name": "us-east-1"}, asynchronous=True,
                           use_listings_cache=False, skip_instance_cache=True)
    return FsspecStore(fs, path=bucket)


def _write_cells(store, column, errors):
    """Write each cell of column `column` of the shared array, one partial write of its shard
    each (ROWS of them), through zarr-python; an exception goes to `errors`."""
    try:
        a = zarr.open_array(store)
        assert isinstance(a._async_array.codec_pipeline, ZarrcorePipeline)
        for row in range(ROWS):
            a[row, column] = 100 * row + column
    except BaseException as e:  # (re-raised by the test)
        errors.append(e)


def _cells_lost(got):
    return int(np.count_nonzero(got != 100 * np.arange(ROWS)[:, None] + np.arange(WRITERS)))


@pytest.fixture
def set_if_calls(monkeypatch):
    """The keys of the conditional writes (ObjectStore.set_if) zarrcore makes."""
    from zarrcore.storage.objectstore import ObjectStore

    keys, set_if = [], ObjectStore.set_if

    def spy(self, key, value, version):
        keys.append(key)
        return set_if(self, key, value, version)

    monkeypatch.setattr(ObjectStore, "set_if", spy)
    return keys


def test_threads_writing_cells_of_one_shard_on_s3_lose_nothing(native, s3_bucket, set_if_calls):
    server, bucket = s3_bucket
    store = _zarr_s3_store(server.endpoint, bucket, "obstore")
    _create_shared(store)
    errors = []
    threads = [threading.Thread(target=_write_cells, args=(store, c, errors))
               for c in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # Every partial write was a conditional PUT of the shard (If-Match its ETag), those that
    # lost to another writer tried again.
    assert len(set_if_calls) >= ROWS * WRITERS and set(set_if_calls) == {"c/0/0"}
    with _plain():
        got = zarr.open_array(store, mode="r")[...]
    assert _cells_lost(got) == 0


def _write_cells_in_child(endpoint, bucket, columns):
    import zarr as child_zarr

    assert child_zarr.config.get("codec_pipeline.path") == PATH
    errors = []
    for column in columns:
        _write_cells(_zarr_s3_store(endpoint, bucket, "obstore"), column, errors)
    if errors:
        raise errors[0]


def test_processes_writing_cells_of_one_shard_on_s3_lose_nothing(entry_point, s3_bucket):
    server, bucket = s3_bucket
    store = _zarr_s3_store(server.endpoint, bucket, "obstore")
    with zarr.config.set({"codec_pipeline.path": PATH}):
        _create_shared(store)
    context = multiprocessing.get_context("spawn")
    # (Two processes writing four columns each, one after another: spawning costs seconds.)
    workers = [context.Process(target=_write_cells_in_child,
                               args=(server.endpoint, bucket, range(c, WRITERS, 2)))
               for c in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0] * 2
    with _plain():
        got = zarr.open_array(store, mode="r")[...]
    assert _cells_lost(got) == 0


@pytest.mark.parametrize("kind", ["fsspec", "obstore-local"])
def test_partial_writes_to_stores_without_conditional_writes_are_not_silent(s3_bucket, kind,
                                                                            tmp_path):
    # (s3fs has no conditional PUTs; obstore's LocalStore none that zarrcore uses, and no
    # locks: zarrcore's pipeline cannot keep concurrent writers' updates to one chunk there.)
    if kind == "fsspec":
        pytest.importorskip("s3fs", reason="zarr-python's FsspecStore on S3 needs s3fs")
        server, bucket = s3_bucket
        store = _zarr_s3_store(server.endpoint, bucket, "fsspec")
    else:
        from obstore.store import LocalStore as ObstoreLocalStore
        from zarr.storage import ObjectStore

        store = ObjectStore(ObstoreLocalStore(str(tmp_path)))
    with zarr.config.set({"codec_pipeline.path": PATH}):
        a = zarr.create_array(store, shape=(4, 4), chunks=(2, 2), shards=(4, 4), dtype="i4",
                              fill_value=0)
        with zarrcore.config.set(pipeline_fallback=False):
            a[...] = 1  # (whole shards need no protection)
            with pytest.raises(PipelineFallbackError, match="neither locks nor conditional"):
                a[0, 0] = 2
        # zarr-python's pipeline writes it, unprotected: said so.
        with pytest.warns(RuntimeWarning, match="concurrent writer's update .* could be lost"):
            a[0, 0] = 3
        with zarrcore.config.set(unsafe_partial_writes=True):
            a[0, 1] = 4  # (zarrcore writes it, as told)
        np.testing.assert_array_equal(a[0], [3, 4, 1, 1])
