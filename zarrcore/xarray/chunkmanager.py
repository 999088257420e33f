"""xarray's chunk manager of zarrcore Arrays, so that `xr.DataArray(array)` holds the Array
unread: xarray takes a duck array with `chunks` for a lazy (chunked) one and asks its chunk
manager to compute it (`.load()`, `.compute()`, `.values` of a dataset). Computing reads the
Arrays and needs nothing else; everything else (chunking, apply_ufunc with
dask="parallelized", map_blocks) works on a dask array over each Array, one task per shard or
chunk (zarrcore.dask.from_zarr), and needs dask."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint

from ..nodes.array import Array, storage_block
from ..nodes.array_dask import arrays_as_dask

__all__ = ["ZarrcoreChunkManager"]


def _block_sizes(array: Array) -> tuple[tuple[int, ...], ...]:
    """Dask-style chunks of `array`: per axis, the sizes of its shards (or chunks)."""
    block = storage_block(array)
    return tuple(
        tuple([b] * (n // b) + ([n % b] if n % b else [])) or (0,)
        for n, b in zip(array.shape, block)
    )


def _dask_manager() -> Any:
    try:
        from xarray.namedarray.daskmanager import DaskManager

        return DaskManager()
    except ImportError as e:
        raise ImportError(
            "this operation on a zarrcore-backed xarray object needs dask "
            "(pip install 'zarrcore[xarray]')"
        ) from e


def _on_dask(name: str, as_dask: bool = True) -> Callable[..., Any]:
    """The DaskManager method `name`, with every zarrcore Array among its arguments taken
    as a dask array (unless not `as_dask`)."""

    def method(self: ZarrcoreChunkManager, *args: Any, **kwargs: Any) -> Any:
        if as_dask:
            args = arrays_as_dask(args)
        return getattr(_dask_manager(), name)(*args, **kwargs)

    method.__name__ = name
    return method


# (Any: a zarrcore Array is not one of xarray's ChunkedArrayMixinProtocol, which needs
# dask's rechunk; xarray takes it by `is_chunked_array`.)
class ZarrcoreChunkManager(ChunkManagerEntrypoint[Any]):
    """zarrcore Arrays for xarray: computed by reading them, and otherwise handed to dask."""

    available = True

    def __init__(self) -> None:
        self.array_cls = Array

    def is_chunked_array(self, data: Any) -> bool:
        return isinstance(data, Array)

    def chunks(self, data: Array) -> tuple[tuple[int, ...], ...]:
        return _block_sizes(data)

    def compute(self, *data: Array, **kwargs: Any) -> tuple[np.ndarray[Any, Any], ...]:
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
    def array_api(self) -> Any:
        return _dask_manager().array_api
