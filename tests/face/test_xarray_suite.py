"""xarray's own zarr backend tests (xarray.tests.test_backends, shipped with xarray) run
against zarrcore: the classes for a plain directory store and for a zarr-python WrapperStore
without consolidated metadata (formats 2 and 3, through zarr-python's `default_zarr_format`
as xarray parametrizes them) and for DataArrays.

Every write and read of xarray's goes to zarrcore: the classes' hooks (`create_store`, `save`,
`open`), and, while each test runs, `Dataset.to_zarr` and `DataArray.to_zarr` (to
zarrcore.xarray.to_zarr) and the engine "zarr" of `open_dataset`, `open_zarr`,
`open_dataarray` and `open_datatree` (to the engine "zarrcore"). Tests that build stores with
zarr-python itself keep it for that step. Skipped here, each with its reason: tests that fail
with engine="zarr" too."""
import asyncio
import contextlib

import pytest

xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
pytest.importorskip("zarr", reason="xarray's zarr tests need zarr-python")
pytest.importorskip("dask.array", reason="xarray's zarr tests need dask")
xb = pytest.importorskip("xarray.tests.test_backends",
                         reason="this xarray ships no xarray.tests package")

from xarray.backends import plugins  # noqa: E402

import zarrcore.xarray as zx  # noqa: E402
# xarray's fixtures, of test_backends.py and of its tests' conftest.py, that the tests take.
from xarray.tests.conftest import time_unit, use_dask  # noqa: E402,F401
from xarray.tests.test_backends import default_zarr_format, tmp_store  # noqa: E402,F401

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                         "ignore::RuntimeWarning", "ignore::DeprecationWarning")]

@pytest.fixture(autouse=True)
def _skips(request):
    """xarray's `skip_if_param` mark (implemented by its repository's conftest.py, which is
    not shipped): skip when the test's parameters have the given values."""
    callspec = getattr(request.node, "callspec", None)
    for mark in request.node.iter_markers("skip_if_param"):
        kwargs = dict(mark.kwargs)
        reason = kwargs.pop("reason", "")
        if not kwargs.pop("condition", True) or callspec is None:
            continue
        if all(callspec.params.get(k, object()) == v for k, v in kwargs.items()):
            pytest.skip(reason)


def _to_zarr(obj, store=None, chunk_store=None, mode=None, synchronizer=None, group=None,
             encoding=None, **kwargs):
    """Dataset.to_zarr and DataArray.to_zarr, positional arguments included, by zarrcore."""
    if chunk_store is not None or synchronizer is not None:
        raise TypeError("zarrcore.xarray.to_zarr takes no chunk_store or synchronizer")
    return zx.to_zarr(obj, store, mode=mode, group=group, encoding=encoding, **kwargs)


@pytest.fixture(autouse=True)
def _route_to_zarrcore(monkeypatch):
    monkeypatch.setattr(xr.Dataset, "to_zarr", _to_zarr)
    monkeypatch.setattr(xr.DataArray, "to_zarr", _to_zarr)
    get_backend = plugins.get_backend
    monkeypatch.setattr(plugins, "get_backend",
                        lambda engine: get_backend("zarrcore" if engine == "zarr" else engine))


class _ZarrcoreHooks:
    """The hooks of xarray's ZarrBase classes, writing and reading with zarrcore."""

    @contextlib.contextmanager
    def create_store(self, cache_members=False):
        with self.create_zarr_target() as target:
            yield zx.ZarrcoreWritableDataStore.open(target, mode="w", **self.version_kwargs)

    def save(self, dataset, store_target, **kwargs):
        return zx.to_zarr(dataset, store_target, **kwargs, **self.version_kwargs)

    @contextlib.contextmanager
    def open(self, path, **kwargs):
        with xr.open_dataset(path, engine="zarrcore", mode="r", **kwargs,
                             **self.version_kwargs) as ds:
            yield ds

    def test_load_async(self):
        # Run here without pytest-asyncio, which nothing else needs.
        asyncio.run(xb.ZarrBase.test_load_async(self))


class TestZarrcoreDirectoryStore(_ZarrcoreHooks, xb.TestZarrDirectoryStore):
    """xarray's TestZarrDirectoryStore writing and reading with zarrcore."""


class TestZarrcoreNoConsolidatedMetadataSupport(_ZarrcoreHooks,
                                                xb.TestZarrNoConsolidatedMetadataSupport):
    """xarray's tests over its WrapperStore without consolidated metadata (a stand-in for
    Icechunk's), writing and reading with zarrcore through the store's own API."""


class TestZarrcoreDataArrayToZarr(xb.TestDataArrayToZarr):
    """xarray's TestDataArrayToZarr, writing and reading with zarrcore."""
