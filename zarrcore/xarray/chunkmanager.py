"""xarray's chunk manager of zarrcore Arrays, so that `xr.DataArray(array)` holds the Array
unread: xarray takes a duck array with `chunks` for a lazy (chunked) one and asks its chunk
manager to compute it (`.load()`, `.compute()`, `.values` of a dataset). Computing reads the
Arrays and needs nothing else; everything else (chunking, apply_ufunc with
dask="parallelized", map_blocks) works on a dask array over each Array, one task per shard or
chunk (zarrcore.dask.from_zarr), and needs dask."""
from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint

from ..array import Array, arrays_as_dask


def _block_sizes(array):
    """Dask-style chunks of `array`: per axis, the sizes of its shards (or chunks)."""
    block = array.shards or array.chunks
    return tuple(tuple([b] * (n // b) + ([n % b] if n % b else [])) or (0,)
                 for n, b in zip(array.shape, block))


def _dask_manager():
    try:
        from xarray.namedarray.daskmanager import DaskManager

        return DaskManager()
    except ImportError as e:
        raise ImportError("this operation on a zarrcore-backed xarray object needs dask "
                          "(pip install 'zarrcore[xarray]')") from e


def _on_dask(name, as_dask=True):
    """The DaskManager method `name`, with every zarrcore Array among its arguments taken
    as a dask array (unless not `as_dask`)."""
    def method(self, *args, **kwargs):
        if as_dask:
            args = arrays_as_dask(args)
        return getattr(_dask_manager(), name)(*args, **kwargs)

    method.__name__ = name
    return method


class ZarrcoreChunkManager(ChunkManagerEntrypoint):
    """zarrcore Arrays for xarray: computed by reading them, and otherwise handed to dask."""

    available = True

    def __init__(self):
        self.array_cls = Array

    def is_chunked_array(self, data):
        return isinstance(data, Array)

    def chunks(self, data):
        return _block_sizes(data)

    def compute(self, *data, **kwargs):
        """The Arrays read into numpy (xarray never mixes them with other chunked types)."""
        return tuple(d[...] for d in data)

    normalize_chunks = _on_dask("normalize_chunks", as_dask=False)
    from_array = _on_dask("from_array", as_dask=False)
    get_auto_chunk_size = _on_dask("get_auto_chunk_size", as_dask=False)
    shuffle = _on_dask("shuffle")
    persist = _on_dask("persist")
    rechunk = _on_dask("rechunk")
    reduction = _on_dask("reduction")
    scan = _on_dask("scan")
    apply_gufunc = _on_dask("apply_gufunc")
    map_blocks = _on_dask("map_blocks")
    blockwise = _on_dask("blockwise")
    unify_chunks = _on_dask("unify_chunks")
    store = _on_dask("store")

    @property
    def array_api(self):
        return _dask_manager().array_api
