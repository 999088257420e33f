"""The `zarrcore` xarray engine and zarrcore.xarray.to_zarr, against xarray's own zarr backend:
datasets xarray wrote (formats 2 and 3, sharded, with CF packing, fill values, datetimes,
strings, coordinates and groups) open identically, attributes and encodings included, and
datasets zarrcore writes have the metadata documents xarray writes."""
import functools
import json
import re
import os
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
import pandas as pd  # noqa: E402 (xarray's dependency)
pytest.importorskip("zarr", reason="the comparisons need zarr-python (engine='zarr')")
dask_array = pytest.importorskip("dask.array", reason="chunked datasets need dask")

import zarrcore  # noqa: E402
import zarrcore.xarray as zx  # noqa: E402
from zarrcore.errors import (  # noqa: E402
    LockUnavailableError, MetadataError, ProcessLocalStoreError,
)
from zarrcore.storage import MemoryStore  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::RuntimeWarning")


def make_dataset():
    rng = np.random.default_rng(0)
    temp = rng.normal(280, 5, (6, 4, 5)).astype("float32")
    temp[0, 0, 0] = np.nan
    packed = rng.normal(10, 2, (6, 4, 5))
    packed[0, 1, 1] = np.nan
    ds = xr.Dataset(
        {"temp": (("time", "y", "x"), temp, {"units": "K", "long_name": "temperature"}),
         "packed": (("time", "y", "x"), packed),
         "count": (("y", "x"), np.arange(20, dtype="int16").reshape(4, 5)),
         "name": (("x",), np.array(["a", "bb", "ccc", "d", "eeeee"])),
         "vname": (("y",), np.array(["p", "qq", "", "rrrr"], dtype=object)),
         "flag": (("x",), np.array([True, False, True, True, False])),
         "dur": (("time",), pd.to_timedelta(np.arange(6), "h"))},
        coords={"time": pd.date_range("2000-01-01", periods=6, freq="D"), "y": np.arange(4.0),
                "x": np.arange(5) * 10, "lat": (("y", "x"), rng.random((4, 5))), "scalar": 3.5},
        attrs={"title": "test", "n": 3, "vals": [1, 2]})
    ds["packed"].encoding = {"scale_factor": 0.01, "add_offset": 10.0, "dtype": "int16",
                             "_FillValue": -9999}
    ds["count"].encoding = {"_FillValue": -1}
    return ds


SHARDED = {"temp": {"chunks": (1, 2, 5), "shards": (2, 4, 5)}}
LAYOUTS = {
    "v2": dict(zarr_format=2),
    "v3": dict(zarr_format=3),
    "v3-sharded": dict(zarr_format=3, encoding=SHARDED, chunked=True),
}


def _write_with_xarray(path, layout, **extra):
    options = dict(LAYOUTS[layout])
    ds = make_dataset().chunk({"time": 2}) if options.pop("chunked", False) else make_dataset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", **options, **extra)
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """{layout: path} of datasets xarray wrote, with a group "sub" and "sub/deeper"."""
    root = tmp_path_factory.mktemp("xarray-written")
    paths = {}
    for layout in LAYOUTS:
        path = str(root / f"{layout}.zarr")
        _write_with_xarray(path, layout)
        fmt = LAYOUTS[layout]["zarr_format"]
        # Groups below share the root's dimensions, as a data tree needs.
        sub = make_dataset()[["count"]].assign(extra=("z", np.arange(3.0)))
        sub.attrs = {"level": 1}
        sub.to_zarr(path, group="sub", mode="a", zarr_format=fmt)
        sub[["extra"]].to_zarr(path, group="sub/deeper", mode="a", zarr_format=fmt)
        paths[layout] = path
    return paths


def assert_same_encoding(expected, actual, sharded=False):
    assert expected.keys() == actual.keys()
    for key in expected:
        if key == "preferred_chunks" and sharded and expected.get("shards"):
            # zarrcore prefers whole shards, zarr-python inner chunks.
            continue
        assert type(expected[key]) is type(actual[key]) or key == "dtype", key
        assert expected[key] == actual[key] or (
            _is_nan(expected[key]) and _is_nan(actual[key])), key


def _is_nan(value):
    return isinstance(value, (float, np.floating)) and np.isnan(value)


def assert_same_datasets(expected, actual):
    xr.testing.assert_identical(expected, actual)
    for name in expected.variables:
        assert_same_encoding(expected[name].encoding, actual[name].encoding, sharded=True)


def test_engine_is_registered():
    engines = xr.backends.list_engines()
    assert isinstance(engines.get("zarrcore"), zx.ZarrcoreBackendEntrypoint), (
        "the zarrcore engine is not registered: install zarrcore (pip install -e .)")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("group", [None, "sub", "sub/deeper"])
def test_open_dataset_equals_engine_zarr(written, layout, group):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = xr.open_dataset(written[layout], engine="zarr", group=group)
    actual = xr.open_dataset(written[layout], engine="zarrcore", group=group)
    assert_same_datasets(expected, actual)
    assert_same_datasets(expected.load(), actual.load())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_decoding_options_pass_to_xarray(written, layout):
    options = dict(mask_and_scale=False, decode_times=False, decode_timedelta=False,
                   decode_coords=False, drop_variables=["vname"], concat_characters=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = xr.open_dataset(written[layout], engine="zarr", **options)
    assert_same_datasets(expected, xr.open_dataset(written[layout], engine="zarrcore", **options))


def test_sharded_encoding_and_preferred_chunks(written):
    ds = xr.open_dataset(written["v3-sharded"], engine="zarrcore")
    assert ds.temp.encoding["chunks"] == (1, 2, 5)
    assert ds.temp.encoding["shards"] == (2, 4, 5)
    assert ds.temp.encoding["preferred_chunks"] == {"time": 2, "y": 4, "x": 5}
    chunked = xr.open_dataset(written["v3-sharded"], engine="zarrcore", chunks={})
    assert chunked.temp.chunks == ((2, 2, 2), (4,), (5,))
    xr.testing.assert_identical(chunked.load(), ds.load())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_open_datatree_and_groups_equal_engine_zarr(written, layout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = xr.open_groups(written[layout], engine="zarr")
        expected_tree = xr.open_datatree(written[layout], engine="zarr")
    actual = xr.open_groups(written[layout], engine="zarrcore")
    assert sorted(actual) == sorted(expected) == ["/", "/sub", "/sub/deeper"]
    for path in expected:
        assert_same_datasets(expected[path], actual[path])
    tree = xr.open_datatree(written[layout], engine="zarrcore")
    xr.testing.assert_identical(expected_tree, tree)
    sub = xr.open_groups(written[layout], engine="zarrcore", group="sub")
    assert sorted(sub) == ["/", "/deeper"]


def test_opens_zarrcore_groups_and_stores(written):
    expected = xr.open_dataset(written["v3"], engine="zarrcore")
    group = zarrcore.open_group(written["v3"], mode="r")
    xr.testing.assert_identical(expected, xr.open_dataset(group, engine="zarrcore"))
    xr.testing.assert_identical(expected, xr.open_dataset(group.store, engine="zarrcore"))
    xr.testing.assert_identical(
        expected["count"], xr.open_dataset(group, engine="zarrcore", group="sub")["count"])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("group", [None, "sub"])
def test_open_zarr_takes_zarrcore_groups(written, layout, group):
    path = written[layout]
    expected = xr.open_zarr(path, group=group).load()
    root = zarrcore.open_group(path, mode="r")
    node = root[group] if group else root
    # A group in a directory is that directory's path.
    xr.testing.assert_identical(expected, xr.open_zarr(node).load())
    assert xr.open_dataset(node, engine="zarrcore").encoding["source"] == os.fspath(node)
    # Any group or store through zarr-python's view of zarrcore's store.
    zstore = zarrcore.storage.as_zarr_store(node)
    xr.testing.assert_identical(expected, xr.open_zarr(zstore).load())
    xr.testing.assert_identical(
        expected, xr.open_zarr(zarrcore.storage.as_zarr_store(root.store), group=group).load())


def test_open_zarr_groups_in_memory_need_the_store_view(written):
    source = zarrcore.open_group(written["v3"], mode="r")
    group = zarrcore.open_group({}, mode="w")
    zarrcore.copy_store(source, group.store, if_exists="replace")
    with pytest.raises(TypeError, match="as_zarr_store"):
        xr.open_zarr(group)
    expected = xr.open_zarr(written["v3"]).load()
    xr.testing.assert_identical(
        expected, xr.open_zarr(zarrcore.storage.as_zarr_store(group)).load())
    # Written by xarray through the view, read by zarrcore.
    target = zarrcore.storage.MemoryStore()
    expected.to_zarr(zarrcore.storage.as_zarr_store(target), mode="w", zarr_format=3)
    xr.testing.assert_identical(expected, xr.open_dataset(target, engine="zarrcore").load())


def test_zarr_python_store_view_byte_ranges():
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    store = zarrcore.storage.MemoryStore({"g/k": b"0123456789", "g/sub/x": b"", "other": b"o"})
    zarrcore.open_group(store, path="g", mode="w")
    view = zarrcore.storage.as_zarr_store(store)
    proto = default_buffer_prototype()
    get = lambda key, r=None: sync(view.get(key, proto, r))  # noqa: E731
    assert get("g/k").to_bytes() == b"0123456789"
    assert get("g/k", RangeByteRequest(2, 5)).to_bytes() == b"234"
    assert get("g/k", OffsetByteRequest(7)).to_bytes() == b"789"
    assert get("g/k", SuffixByteRequest(3)).to_bytes() == b"789"
    assert get("g/k", SuffixByteRequest(0)).to_bytes() == b""
    assert get("missing") is None

    async def listing(it):
        return sorted([k async for k in it])

    rooted = zarrcore.storage.as_zarr_store(zarrcore.open_group(store, path="g"))
    assert sync(listing(rooted.list())) == ["k", "sub/x", "zarr.json"]
    assert sync(listing(rooted.list_prefix("sub/"))) == ["sub/x"]
    assert sync(listing(rooted.list_dir(""))) == ["k", "sub", "zarr.json"]
    assert sync(listing(view.list_prefix(""))) == [
        "g/k", "g/sub/x", "g/zarr.json", "other", "zarr.json"]
    ro = rooted.with_read_only(True)
    with pytest.raises(ValueError):
        sync(ro.set("k", proto.buffer.from_bytes(b"x")))
    sync(rooted.set("new", proto.buffer.from_bytes(b"n")))
    assert store.get("g/new") == b"n"


class CountingStore(MemoryStore):
    """A memory store that records the chunk keys read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads = []

    def _record(self, key):
        if not key.rsplit("/", 1)[-1].startswith((".z", "zarr.json")):
            self.reads.append(key)

    def get(self, key, start=None, stop=None):
        self._record(key)
        return super().get(key, start, stop)

    def get_many(self, requests, concurrency=None):
        for key, _ in requests:
            self._record(key)
        return super().get_many(requests, concurrency)

    @property
    def reader(self):
        parent = super().reader

        def reader(key):
            self._record(key)
            return parent(key)
        return reader


def test_indexing_reads_only_the_chunks_selected():
    store = CountingStore()
    data = np.arange(40 * 30, dtype="float32").reshape(40, 30)
    ds = xr.Dataset({"v": (("a", "b"), data)})
    zx.to_zarr(ds, store, mode="w", encoding={"v": {"chunks": (10, 10)}})
    opened = xr.open_dataset(store, engine="zarrcore")
    store.reads.clear()
    assert float(opened.v[5, 7]) == data[5, 7]  # basic
    assert set(store.reads) == {"v/c/0/0"}
    store.reads.clear()
    got = opened.v.isel(a=[1, 35], b=[2, 25]).values  # outer
    np.testing.assert_array_equal(got, data[np.ix_([1, 35], [2, 25])])
    assert set(store.reads) == {"v/c/0/0", "v/c/0/2", "v/c/3/0", "v/c/3/2"}
    store.reads.clear()
    points = opened.v.isel(a=xr.DataArray([1, 35], dims="p"), b=xr.DataArray([2, 25], dims="p"))
    np.testing.assert_array_equal(points.values, data[[1, 35], [2, 25]])  # vectorized
    assert set(store.reads) == {"v/c/0/0", "v/c/3/2"}


def test_data_arrays_hold_zarrcore_arrays_unread():
    store = CountingStore()
    data = np.arange(40 * 30, dtype="float32").reshape(40, 30)
    a = zarrcore.create_array(store, name="v", shape=data.shape, chunks=(10, 10), dtype=data.dtype)
    a[...] = data
    store.reads.clear()
    da = xr.DataArray(a, dims=("a", "b"), coords={"a": np.arange(40) * 2}, name="v")
    assert da.variable._data is a and store.reads == []
    repr(da)
    assert store.reads == []
    # Selections reach zarrcore as selections (basic, outer, vectorized).
    assert float(da[5, 7]) == data[5, 7]
    assert set(store.reads) == {"v/c/0/0"}
    store.reads.clear()
    np.testing.assert_array_equal(da.isel(a=[1, 35], b=[2, 25]), data[np.ix_([1, 35], [2, 25])])
    assert set(store.reads) == {"v/c/0/0", "v/c/0/2", "v/c/3/0", "v/c/3/2"}
    store.reads.clear()
    points = da.isel(a=xr.DataArray([1, 35], dims="p"), b=xr.DataArray([2, 25], dims="p"))
    np.testing.assert_array_equal(points, data[[1, 35], [2, 25]])
    assert set(store.reads) == {"v/c/0/0", "v/c/3/2"}
    store.reads.clear()
    np.testing.assert_array_equal(da.sel(a=slice(20, 38)).values, data[10:20])
    assert set(store.reads) == {"v/c/1/0", "v/c/1/1", "v/c/1/2"}
    # Reductions, arithmetic, loading and computing read it.
    assert float(da.mean()) == pytest.approx(data.mean())
    np.testing.assert_allclose(da.sum("b").values, data.sum(1))
    np.testing.assert_array_equal((da * 2 + 1).values, data * 2 + 1)
    computed = da.compute()
    assert type(computed.data) is np.ndarray and da.variable._data is a
    np.testing.assert_array_equal(computed, data)
    ds = xr.Dataset({"v": da, "w": da + 1})
    assert type(ds.load().v.data) is np.ndarray
    # Dask takes over when asked, reading nothing until computed.
    store.reads.clear()
    chunked = xr.DataArray(a, dims=("a", "b")).chunk({"a": 20})
    assert chunked.data.chunks == ((20, 20), (30,)) and store.reads == []
    np.testing.assert_array_equal(chunked.values, data)
    mapped = xr.apply_ufunc(np.negative, xr.DataArray(a, dims=("a", "b")), dask="parallelized")
    np.testing.assert_array_equal(mapped.values, -data)


def test_data_arrays_of_zarrcore_arrays_compute_without_dask(monkeypatch):
    from zarrcore.xarray import chunkmanager

    def no_dask():
        raise ImportError("this operation on a zarrcore-backed xarray object needs dask")

    monkeypatch.setattr(chunkmanager, "_dask_manager", no_dask)
    data = np.arange(5 * 6, dtype="int16").reshape(5, 6)
    a = zarrcore.create_array(MemoryStore(), shape=data.shape, chunks=(2, 4), dtype=data.dtype)
    a[...] = data
    manager = chunkmanager.ZarrcoreChunkManager()
    assert manager.chunks(a) == ((2, 2, 1), (4, 2))
    da = xr.DataArray(a, dims=("y", "x"))
    np.testing.assert_array_equal(da.load().values, data)
    np.testing.assert_array_equal(xr.Dataset({"v": da}).compute().v.values, data)
    with pytest.raises(ImportError, match="needs dask"):
        manager.rechunk(a, (1, 1))


def test_missing_dimension_names_raise(tmp_path):
    zarrcore.open_group(str(tmp_path / "g.zarr"), mode="w").create_array(
        "v", shape=(3,), dtype="int8")
    with pytest.raises(MetadataError, match="dimension_names"):
        xr.open_dataset(str(tmp_path / "g.zarr"), engine="zarrcore")
    zarrcore.open_group(str(tmp_path / "h.zarr"), mode="w", zarr_format=2).create_array(
        "v", shape=(3,), dtype="int8")
    with pytest.raises(MetadataError, match="_ARRAY_DIMENSIONS"):
        xr.open_dataset(str(tmp_path / "h.zarr"), engine="zarrcore")


# -- writing ----------------------------------------------------------------------------

def _v2_documents(docs):
    """`docs` without what zarr-python adds to v2 hierarchies beyond the format: an empty
    `.zattrs` (the same as none) and a `consolidated_metadata` field in the `.zgroup`
    entries of `.zmetadata`."""
    docs = {k: v for k, v in docs.items() if not (k.endswith(".zattrs") and v == {})}
    for doc in docs.values():
        if "zarr_consolidated_format" in doc:
            doc["metadata"] = {k: v for k, v in _v2_documents(doc["metadata"]).items()}
    for key, doc in docs.items():
        if key.endswith(".zgroup"):
            doc.pop("consolidated_metadata", None)
    return docs


def metadata_documents(path):
    """{key: parsed JSON} of every metadata document below `path`, and the chunk keys."""
    docs, chunks = {}, set()
    for root, _, files in os.walk(path):
        for name in files:
            key = os.path.relpath(os.path.join(root, name), path)
            if name in ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"):
                with open(os.path.join(root, name)) as f:
                    docs[key] = json.load(f)
            elif not name.startswith(".zarrcore"):
                chunks.add(key)
    return _v2_documents(docs), chunks


def assert_same_layout(expected_path, actual_path):
    expected, expected_chunks = metadata_documents(expected_path)
    actual, actual_chunks = metadata_documents(actual_path)
    assert expected == actual
    assert expected_chunks == actual_chunks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.testing.assert_identical(xr.open_zarr(expected_path).load(),
                                    xr.open_zarr(actual_path).load())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("group", [None, "sub"])
def test_to_zarr_writes_xarrays_layout(tmp_path, layout, group):
    expected = _write_with_xarray(str(tmp_path / "xarray.zarr"), layout, group=group)
    options = dict(LAYOUTS[layout])
    ds = make_dataset().chunk({"time": 2}) if options.pop("chunked", False) else make_dataset()
    result = zx.to_zarr(ds, str(tmp_path / "zarrcore.zarr"), mode="w", group=group, **options)
    assert isinstance(result, zarrcore.Group)
    assert_same_layout(expected, str(tmp_path / "zarrcore.zarr"))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_to_zarr_appends_as_xarray(tmp_path, zarr_format):
    ds = make_dataset()
    paths = [str(tmp_path / "xarray.zarr"), str(tmp_path / "zarrcore.zarr")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.isel(time=slice(0, 4)).to_zarr(paths[0], mode="w", zarr_format=zarr_format)
        ds.isel(time=slice(4, None)).to_zarr(paths[0], append_dim="time")
    zx.to_zarr(ds.isel(time=slice(0, 4)), paths[1], mode="w", zarr_format=zarr_format)
    zx.to_zarr(ds.isel(time=slice(4, None)), paths[1], append_dim="time")
    assert_same_layout(*paths)
    appended = xr.open_dataset(paths[1], engine="zarrcore")
    assert appended.sizes["time"] == 6
    np.testing.assert_array_equal(appended.time.values, ds.time.values)


@pytest.mark.parametrize("region", [{"time": slice(2, 4)}, "auto"])
def test_to_zarr_writes_regions_as_xarray(tmp_path, region):
    ds = make_dataset()
    update = ds[["temp", "packed"]].isel(time=slice(2, 4)).copy(deep=True)
    update["temp"][...] = -1.0
    update = update.drop_vars(["lat", "scalar"] + ([] if region == "auto" else ["x", "y"]))
    paths = [str(tmp_path / "xarray.zarr"), str(tmp_path / "zarrcore.zarr")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(paths[0], mode="w")
        update.to_zarr(paths[0], region=region)
    zx.to_zarr(ds, paths[1], mode="w")
    zx.to_zarr(update, paths[1], region=region)
    assert_same_layout(*paths)
    temp = xr.open_dataset(paths[1], engine="zarrcore").temp.values
    assert (temp[2:4] == -1).all() and not (temp[:2] == -1).any()


def test_to_zarr_modes(tmp_path):
    ds = make_dataset()
    path = str(tmp_path / "d.zarr")
    zx.to_zarr(ds, path)
    with pytest.raises(zarrcore.errors.NodeExistsError):
        zx.to_zarr(ds, path)  # the default mode is w-
    with pytest.raises(ValueError, match="r\\+"):
        zx.to_zarr(ds.rename({"temp": "other"}), path, mode="r+")
    with pytest.raises(ValueError, match="exist already"):
        zx.to_zarr(ds, path, mode="a", encoding={"temp": {"chunks": (1, 1, 1)}})
    zx.to_zarr(ds[["count"]].rename({"count": "more"}), path, mode="a")
    opened = xr.open_dataset(path, engine="zarrcore")
    assert {"temp", "more"} <= set(opened.data_vars)


def test_to_zarr_compute_false_defers_dask_writes(tmp_path):
    ds = make_dataset().chunk({"time": 3})
    path = str(tmp_path / "d.zarr")
    delayed = zx.to_zarr(ds, path, mode="w", compute=False)
    assert np.isnan(xr.open_dataset(path, engine="zarrcore").temp.values).all()
    delayed.compute()
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarrcore").load(),
                                xr.open_dataset(path, engine="zarr").load())


def _outcome(write):
    """"ok", or the type of the error `write()` raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write()
    except Exception as e:  # noqa: BLE001  (the comparison is of the outcome)
        return type(e).__name__
    return "ok"


SAFE_CHUNK_CASES = {
    # name: (dask chunks along "a", encoding of "v", extra to_zarr arguments)
    "aligned": (4, {"chunks": (4,)}, {}),
    "split-chunks": (3, {"chunks": (4,)}, {}),
    "split-shards": (2, {"chunks": (2,), "shards": (4,)}, {}),
    "split-unsafe": (3, {"chunks": (4,)}, {"safe_chunks": False}),
    "split-aligned": (3, {"chunks": (4,)}, {"align_chunks": True}),
    "shards-aligned": (3, {"chunks": (2,), "shards": (4,)}, {"align_chunks": True}),
}


@pytest.mark.parametrize("case", SAFE_CHUNK_CASES)
def test_to_zarr_safe_and_aligned_chunks_as_xarray(tmp_path, case):
    size, enc, extra = SAFE_CHUNK_CASES[case]
    ds = xr.Dataset({"v": (("a",), np.arange(14.0))}).chunk({"a": size})
    paths = {name: str(tmp_path / f"{name}.zarr") for name in ("xarray", "zarrcore")}
    outcomes = {
        "xarray": _outcome(lambda: ds.to_zarr(paths["xarray"], mode="w", zarr_format=3,
                                              encoding={"v": enc}, **extra)),
        "zarrcore": _outcome(lambda: zx.to_zarr(ds, paths["zarrcore"], mode="w", zarr_format=3,
                                                encoding={"v": enc}, **extra)),
    }
    assert outcomes["zarrcore"] == outcomes["xarray"]
    if extra.get("safe_chunks") is False:
        # xarray's tasks may lose each other's updates of a shared chunk; zarrcore's lock it.
        assert metadata_documents(paths["xarray"])[0] == metadata_documents(paths["zarrcore"])[0]
        xr.testing.assert_identical(ds.load(), xr.open_zarr(paths["zarrcore"]).load())
    elif outcomes["xarray"] == "ok":
        assert_same_layout(paths["xarray"], paths["zarrcore"])
    else:  # refused before anything of the variable is written
        assert not os.path.exists(os.path.join(paths["zarrcore"], "v"))


@pytest.mark.parametrize("region", [slice(2, 10), slice(4, 12), slice(4, 14)])
@pytest.mark.parametrize("align", [False, True])
def test_to_zarr_region_chunks_as_xarray(tmp_path, region, align):
    ds = xr.Dataset({"v": (("a",), np.arange(14.0))})
    part = ds.isel(a=region).chunk({"a": 4})
    outcomes = {}
    for name, write in [("xarray", lambda p: part.to_zarr(p, region={"a": region},
                                                           align_chunks=align)),
                        ("zarrcore", lambda p: zx.to_zarr(part, p, region={"a": region},
                                                          align_chunks=align))]:
        path = str(tmp_path / f"{name}.zarr")
        ds.to_zarr(path, mode="w", zarr_format=3, encoding={"v": {"chunks": (4,)}})
        outcomes[name] = _outcome(lambda: write(path))
    assert outcomes["zarrcore"] == outcomes["xarray"]
    if outcomes["xarray"] == "ok":
        assert_same_layout(str(tmp_path / "xarray.zarr"), str(tmp_path / "zarrcore.zarr"))


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("write_empty", [None, False, True])
def test_to_zarr_write_empty_chunks_as_xarray(tmp_path, zarr_format, write_empty):
    data = np.full(12, np.nan)
    data[:4] = 1.0
    ds = xr.Dataset({"v": (("a",), data)})
    more = xr.Dataset({"v": (("a",), np.full(4, np.nan))})
    enc = {"v": {"chunks": (4,)}}
    args = {} if write_empty is None else {"write_empty_chunks": write_empty}
    for name, write in [("xarray", lambda d, p, **k: d.to_zarr(p, **k)),
                        ("zarrcore", lambda d, p, **k: zx.to_zarr(d, p, **k))]:
        path = str(tmp_path / f"{name}.zarr")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write(ds, path, mode="w", zarr_format=zarr_format, encoding=enc, **args)
            write(more, path, append_dim="a", **args)  # existing arrays too
    assert_same_layout(str(tmp_path / "xarray.zarr"), str(tmp_path / "zarrcore.zarr"))
    # The argument and the encoding must agree, as in xarray.
    clash = {"v": {"chunks": (4,), "write_empty_chunks": not write_empty}}
    if write_empty is not None:
        with pytest.raises(ValueError):
            zx.to_zarr(ds, str(tmp_path / "clash.zarr"), mode="w", encoding=clash, **args)


def test_to_zarr_shared_shards_need_locks():
    class NoLockStore(MemoryStore):
        """Declares no locks (as an object store without conditional writes)."""

        supports_locks = False

    ds = xr.Dataset({"v": (("a",), np.arange(12.0))}).chunk({"a": 3})
    # (Updating the group's attributes there needs the opt-in; shards shared by tasks are
    # refused even with it.)
    with zarrcore.config.set(unsafe_partial_writes=True):
        with pytest.raises(LockUnavailableError, match="rechunk"):
            zx.to_zarr(ds, NoLockStore(), mode="w", zarr_format=3, safe_chunks=False,
                       encoding={"v": {"chunks": (2,), "shards": (4,)}})
        store = NoLockStore()
        zx.to_zarr(ds.chunk({"a": 4}), store, mode="w", zarr_format=3,
                   encoding={"v": {"chunks": (2,), "shards": (4,)}})
    np.testing.assert_array_equal(xr.open_dataset(store, engine="zarrcore").v, np.arange(12.0))


# -- distributed --------------------------------------------------------------------------

def test_dask_datasets_round_trip(tmp_path, dask_scheduler):
    rng = np.random.default_rng(1)
    ds = xr.Dataset({"a": (("t", "x"), rng.random((40, 30)).astype("float32")),
                     "b": (("t", "x"), rng.integers(-99, 99, (40, 30)).astype("int16"))})
    path = str(tmp_path / "d.zarr")
    # Tasks of 8 rows share the shards of 10 (safe_chunks off): every one must land.
    zx.to_zarr(ds.chunk({"t": 8}), path, mode="w", zarr_format=3, safe_chunks=False,
               encoding={"a": {"chunks": (5, 30), "shards": (10, 30)}})
    opened = xr.open_dataset(path, engine="zarrcore", chunks={})
    assert opened.a.chunks == ((10, 10, 10, 10), (30,))
    means = opened.mean().compute()
    xr.testing.assert_identical(opened.load(), ds)
    np.testing.assert_allclose(means.a, ds.a.mean(), rtol=1e-6)
    np.testing.assert_allclose(means.b, ds.b.mean())


def test_to_zarr_refuses_memory_stores_for_tasks_in_other_processes():
    """The processes scheduler's tasks would write copies of the dict: refused before any
    array is made. Under threads the same write lands."""
    import dask

    ds = xr.Dataset({"v": ("x", np.arange(12.0))}).chunk({"x": 4})
    store = {}
    with dask.config.set(scheduler="processes"):
        with pytest.raises(ProcessLocalStoreError, match="this process only"):
            zx.to_zarr(ds, store, mode="w")
    assert not [k for k in store if "/" in k]  # no variable's array
    with dask.config.set(scheduler="threads"):
        zx.to_zarr(ds, store, mode="w")
    np.testing.assert_array_equal(xr.open_dataset(store, engine="zarrcore").v, np.arange(12.0))


# -- parity with xarray's zarr backend (its own suite: test_xarray_suite.py) -----------

@pytest.mark.parametrize("zarr_format", [2, 3])
def test_new_stores_take_zarr_pythons_default_format(tmp_path, zarr_format):
    """xarray's users choose the format of new stores with zarr-python's setting; appending
    keeps the format the store has."""
    import zarr

    ds = xr.Dataset({"v": ("x", np.arange(3))})
    with zarr.config.set(default_zarr_format=zarr_format):
        zx.to_zarr(ds, str(tmp_path / "d.zarr"))
        store = zx.ZarrcoreWritableDataStore.open(str(tmp_path / "s.zarr"), mode="w")
        assert store.ds.zarr_format == zarr_format
    with zarr.config.set(default_zarr_format=5 - zarr_format):
        zx.to_zarr(ds.rename({"v": "w"}), str(tmp_path / "d.zarr"), mode="a")
    assert zarrcore.open_group(str(tmp_path / "d.zarr")).zarr_format == zarr_format
    assert zarrcore.open_array(str(tmp_path / "d.zarr"), path="w").zarr_format == zarr_format


def test_load_async_reads(written):
    import asyncio

    ds = xr.open_dataset(written["v3-sharded"], engine="zarrcore")
    loaded = asyncio.run(ds.load_async())
    assert all(v._in_memory for v in loaded.variables.values())
    xr.testing.assert_identical(loaded, xr.open_dataset(written["v3-sharded"],
                                                        engine="zarrcore").load())


@pytest.mark.parametrize("name", [0, (4, 5), True, ""])
def test_to_zarr_refuses_names_as_xarray(tmp_path, name):
    """Only None and non-empty strings name variables: stored as strings, 0 and "0" would be
    the same variable."""
    ds = xr.Dataset({name: xr.DataArray(np.zeros((2, 2)))})
    with pytest.raises((TypeError, ValueError)) as expected:
        ds.to_zarr(str(tmp_path / "xarray.zarr"))
    with pytest.raises(type(expected.value), match=re.escape(repr(name))):
        zx.to_zarr(ds, str(tmp_path / "zarrcore.zarr"))
    assert not os.path.exists(tmp_path / "zarrcore.zarr")


def test_to_zarr_writes_a_variable_named_none(tmp_path):
    ds = xr.Dataset({None: (("x", "y"), [[0, 1], [2, 3]])})
    zx.to_zarr(ds, str(tmp_path / "d.zarr"))
    xr.testing.assert_identical(xr.open_dataset(str(tmp_path / "d.zarr"), engine="zarrcore"), ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.testing.assert_identical(xr.open_zarr(str(tmp_path / "d.zarr")).load(), ds)


@pytest.mark.parametrize("name", [None, "test", "x"])
def test_to_zarr_writes_data_arrays_as_xarray(tmp_path, name):
    """DataArrays as DataArray.to_zarr writes them, with xarray's reserved names when unnamed
    or named as a coordinate; compute=False gives a Delayed, as xarray's."""
    da = xr.DataArray(np.arange(12).reshape(3, 4), dims=["x", "y"], name=name,
                      coords={"x": [10, 20, 30]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        da.to_zarr(str(tmp_path / "xarray.zarr"))
    delayed = zx.to_zarr(da, str(tmp_path / "zarrcore.zarr"), compute=False)
    delayed.compute()
    assert_same_layout(str(tmp_path / "xarray.zarr"), str(tmp_path / "zarrcore.zarr"))
    xr.testing.assert_identical(
        xr.open_dataarray(str(tmp_path / "zarrcore.zarr"), engine="zarrcore"), da)


def _append_data():
    return xr.Dataset({"u": ("x", np.arange(5))}), xr.Dataset({"u": ("x", [10, 11])})


# (write, expected words) pairs: each raises what xarray's own to_zarr raises, with its words.
WRITE_ERRORS = {
    "r+ new variable": (lambda to, d1, d2: to(d2.rename({"u": "w"}), mode="r+"),
                        "dataset contains non-pre-existing variables"),
    "append_dim unknown": (lambda to, d1, d2: to(d2, append_dim="nope"),
                           "does not match any existing dataset dimensions"),
    "encoding of an existing variable": (
        lambda to, d1, d2: to(d2, append_dim="x", encoding={"u": {"chunks": (1,)}}),
        "but encoding was provided"),
    "region not a dict": (lambda to, d1, d2: to(d2, region=slice(None)), "must be a dict"),
    "region not slices": (lambda to, d1, d2: to(d2, region={"x": [0, 1]}),
                          "must be slice objects"),
    "region with a step": (lambda to, d1, d2: to(d2, region={"x": slice(None, None, 2)}),
                           "step on all slices"),
    "region of no dimension": (lambda to, d1, d2: to(d1, region={"y": slice(None)}),
                               "are not in Dataset dimensions"),
    "region missing a variable": (
        lambda to, d1, d2: to(d2.assign(v=2), region={"x": slice(2)}),
        "must have at least one dimension in common"),
    "region and append_dim": (
        lambda to, d1, d2: to(d1, region={"x": slice(None)}, append_dim="x"),
        "cannot list the same dimension in both"),
    "dataset attribute": (
        lambda to, d1, d2: to(d1.assign_attrs(bad=xr.DataArray()), mode="a"),
        r"Invalid attribute in Dataset\.attrs\."),
    "variable attribute": (
        lambda to, d1, d2: to(d1.assign(w=("x", np.arange(5), {"bad": xr.DataArray()})),
                              mode="a"),
        r"Invalid attribute in Dataset\.attrs\."),
}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("case", WRITE_ERRORS)
def test_to_zarr_errors_as_xarray(tmp_path, case, zarr_format):
    write, words = WRITE_ERRORS[case]
    data, data2 = _append_data()
    errors = []
    for name, to_zarr in [("xarray", xr.Dataset.to_zarr), ("zarrcore", zx.to_zarr)]:
        path = str(tmp_path / f"{name}.zarr")
        to_zarr(data, path, zarr_format=zarr_format)
        with pytest.raises(Exception, match=words) as raised:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                write(lambda ds, **kw: to_zarr(ds, path, zarr_format=zarr_format, **kw),
                      data, data2)
        errors.append(raised.value)
    assert isinstance(errors[1], type(errors[0])), errors
    xr.testing.assert_identical(xr.open_dataset(str(tmp_path / "zarrcore.zarr"),
                                                engine="zarrcore"), data)


def test_attribute_errors_are_zarrcore_errors(tmp_path):
    ds = xr.Dataset(attrs={"bad": {1, 2}})
    with pytest.raises(zarrcore.errors.AttributeTypeError) as raised:
        zx.to_zarr(ds, str(tmp_path / "d.zarr"))
    assert isinstance(raised.value, (MetadataError, TypeError))


def test_reading_without_consolidated_metadata_warns_as_xarray(tmp_path):
    """consolidated=None falls back to reading every member's metadata, with engine="zarr"'s
    RuntimeWarning; consolidated=False asks for that and does not warn."""
    ds = xr.Dataset({"v": ("x", np.arange(3))})
    zx.to_zarr(ds, str(tmp_path / "d.zarr"), consolidated=False)
    with pytest.warns(RuntimeWarning, match="Failed to open Zarr store with consolidated"):
        xr.open_dataset(str(tmp_path / "d.zarr"), engine="zarrcore")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.open_dataset(str(tmp_path / "d.zarr"), engine="zarrcore", consolidated=False)
        zx.to_zarr(ds, str(tmp_path / "c.zarr"))
        xr.open_dataset(str(tmp_path / "c.zarr"), engine="zarrcore")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_dump_to_store_writes_and_decode_cf_reads(tmp_path, zarr_format):
    """xarray's own functions write into and read from ZarrcoreWritableDataStore; a v2 array
    without _ARRAY_DIMENSIONS is a KeyError, as in engine="zarr"."""
    ds = make_dataset().drop_vars("packed")  # (lossy: packed in int16)
    store = zx.ZarrcoreWritableDataStore.open(str(tmp_path / "d.zarr"), mode="w",
                                              zarr_format=zarr_format)
    ds.dump_to_store(store)
    with xr.decode_cf(store) as actual:
        xr.testing.assert_allclose(ds, actual)
    if zarr_format == 2:
        array = store.ds["count"]
        attrs = dict(array.attrs)
        del attrs["_ARRAY_DIMENSIONS"]
        array.attrs.put(attrs)
        with pytest.raises(KeyError, match="_ARRAY_DIMENSIONS") as raised:
            xr.decode_cf(store)
        assert isinstance(raised.value, MetadataError)


@pytest.mark.parametrize("dtype", [int, float])
def test_v2_fill_value_is_the_mask_value_as_with_engine_zarr(tmp_path, dtype):
    """A format 2 fill value is the mask value (_FillValue) whatever use_zarr_fill_value_as_mask
    says, as engine="zarr" reads it (pydata/xarray#10269); xarray's
    test_zarr_fill_value_setting[2-*] checks the same through unwritten chunks."""
    zeros = dask_array.from_array(np.array([0, 0, 0], dtype=dtype), chunks=3)
    ds = xr.Dataset({"v": ("x", zeros)})
    for engine, write in (("zarr", ds.to_zarr), ("zarrcore", functools.partial(zx.to_zarr, ds))):
        path = str(tmp_path / f"{engine}.zarr")
        write(path, zarr_format=2, compute=False, consolidated=False,
              encoding={"v": {"_FillValue": -1}})
    for options in ({"mask_and_scale": False, "use_zarr_fill_value_as_mask": False},
                    {"mask_and_scale": False}, {"use_zarr_fill_value_as_mask": False}, {}):
        theirs = xr.open_dataset(str(tmp_path / "zarr.zarr"), engine="zarr", consolidated=False,
                                 **options)
        ours = xr.open_dataset(str(tmp_path / "zarrcore.zarr"), engine="zarrcore",
                               consolidated=False, **options)
        xr.testing.assert_identical(ours, theirs)
        assert ours.v.encoding.get("_FillValue") == theirs.v.encoding.get("_FillValue")
        if options.get("mask_and_scale") is False:
            assert ours.v.attrs["_FillValue"] == -1
            np.testing.assert_array_equal(ours.v.values, [-1, -1, -1])
        else:
            assert np.isnan(ours.v.values).all()


@pytest.mark.parametrize("as_objects", [True, False])
def test_v2_encodings_written_as_format_3_as_convert_writes_them(tmp_path, as_objects):
    """A dataset read from format 2 keeps its numcodecs encodings; format 3 gets the codecs
    `convert` gives those arrays (the spec's blosc, not numcodecs.blosc), whether the encodings
    are numcodecs objects or their configurations (without numcodecs)."""
    ds = xr.Dataset({"t": (("x", "y"), np.arange(20.0).reshape(4, 5)),
                     "n": ("x", np.arange(4) * 3)})
    v2 = str(tmp_path / "v2.zarr")
    zx.to_zarr(ds, v2, zarr_format=2, encoding={
        "n": {"filters": [{"id": "delta", "dtype": "<i8"}],
              "compressors": [{"id": "zstd", "level": 2}]}})
    source = xr.open_dataset(v2, engine="zarrcore")
    if not as_objects:
        for v in source.variables.values():
            for key in ("filters", "compressors"):
                v.encoding[key] = [c.get_config() for c in v.encoding.get(key) or ()]
    zx.to_zarr(source, str(tmp_path / "v3.zarr"), zarr_format=3)
    zarrcore.convert(v2, str(tmp_path / "converted.zarr"), zarr_format=3, progress=False)
    for name in ("t", "n"):
        written = zarrcore.open_array(str(tmp_path / "v3.zarr"), path=name).metadata.codecs
        converted = zarrcore.open_array(str(tmp_path / "converted.zarr"),
                                        path=name).metadata.codecs
        assert written == converted
    assert [c["name"] for c in written] == ["numcodecs.delta", "bytes", "zstd"]
    t = zarrcore.open_array(str(tmp_path / "v3.zarr"), path="t").metadata.codecs
    assert t[-1]["name"] == "blosc" and t[-1]["configuration"]["cname"] == "lz4"
    xr.testing.assert_identical(xr.open_dataset(str(tmp_path / "v3.zarr"), engine="zarrcore"),
                                source)


def test_v2_encoding_without_a_format_3_form_names_the_variable(tmp_path):
    ds = xr.Dataset({"n": ("x", np.arange(4))})
    # A value filter after a byte filter: format 3 puts byte codecs after the serializer.
    ds.n.encoding["filters"] = [{"id": "shuffle", "elementsize": 8},
                                {"id": "delta", "dtype": "<i8"}]
    with pytest.raises(MetadataError, match=r"variable 'n': .*'delta' after a byte filter.*"
                                            r"ds\.drop_encoding\(\)"):
        zx.to_zarr(ds, str(tmp_path / "v3.zarr"), zarr_format=3)
    zx.to_zarr(ds.drop_encoding(), str(tmp_path / "v3.zarr"), zarr_format=3, mode="w")
