"""zarrcore for xarray: the `zarrcore` engine (`xr.open_dataset(path, engine="zarrcore")`)
and `to_zarr`, which writes datasets as xarray's own `Dataset.to_zarr` lays them out."""

from .backend import ZarrcoreBackendArray, ZarrcoreBackendEntrypoint, ZarrcoreDataStore
from .writer import ZarrcoreWritableDataStore, to_zarr

__all__ = [
    "ZarrcoreBackendArray",
    "ZarrcoreBackendEntrypoint",
    "ZarrcoreDataStore",
    "ZarrcoreWritableDataStore",
    "to_zarr",
]
