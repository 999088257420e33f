"""xarray's chunk manager of zarrcore Arrays, so that `xr.DataArray(array)` holds the Array
unread: xarray takes a duck array with `chunks` for a lazy (chunked) one and asks its chunk
manager to compute it (`.load()`, `.compute()`, `.values` of a dataset). Computing reads the
Arrays; everything else (chunking, apply_ufunc with dask="parallelized", map_blocks) works on
a dask array over each Array, one task per shard or chunk (zarrcore.dask.from_zarr)."""
from xarray.namedarray.daskmanager import DaskManager
from xarray.namedarray.utils import module_available

from ..array import Array
from ..dask import arrays_as_dask


class ZarrcoreChunkManager(DaskManager):
    """zarrcore Arrays for xarray: computed by reading them, and otherwise handed to dask."""

    # Only with dask: without it xarray would pick this manager for every `chunks=` request.
    available = module_available("dask")

    def __init__(self):
        super().__init__()
        self.array_cls = Array

    def is_chunked_array(self, data):
        return isinstance(data, Array)

    def chunks(self, data):
        return arrays_as_dask(data).chunks

    def compute(self, *data, **kwargs):
        """The Arrays read into numpy (xarray never mixes them with other chunked types)."""
        return tuple(d[...] for d in data)

    def persist(self, *data, **kwargs):
        return super().persist(*arrays_as_dask(data), **kwargs)

    def rechunk(self, data, chunks, **kwargs):
        return super().rechunk(arrays_as_dask(data), chunks, **kwargs)

    def reduction(self, arr, *args, **kwargs):
        return super().reduction(arrays_as_dask(arr), *args, **kwargs)

    def scan(self, func, binop, ident, arr, *args, **kwargs):
        return super().scan(func, binop, ident, arrays_as_dask(arr), *args, **kwargs)

    def apply_gufunc(self, func, signature, *args, **kwargs):
        return super().apply_gufunc(func, signature, *arrays_as_dask(args), **kwargs)

    def map_blocks(self, func, *args, **kwargs):
        return super().map_blocks(func, *arrays_as_dask(args), **kwargs)

    def blockwise(self, func, out_ind, *args, **kwargs):
        return super().blockwise(func, out_ind, *arrays_as_dask(args), **kwargs)

    def unify_chunks(self, *args, **kwargs):
        return super().unify_chunks(*arrays_as_dask(args), **kwargs)

    def store(self, sources, targets, **kwargs):
        return super().store(arrays_as_dask(sources), targets, **kwargs)
