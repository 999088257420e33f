"""The Array: a chunked N-d array in a store, read and written with numpy semantics."""

from __future__ import annotations

import concurrent.futures
import itertools
import math
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._native import memory as _memory
from ..array_api import ArrayHandle
from ..codecs import codec_from_v2
from ..codecs.sharding import ShardingCodec
from ..engine import ChunkEngine
from ..errors import SelectionError, SettingValueError, ShapeMismatchError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..metadata.grid import AxisChunks, ChunkGrid
from ..metadata.indexing import numpy_indexer, pop_fields
from ..runtime import background
from ..runtime.config import config as global_config
from .array_chunks import ChunkMethods
from .array_config import array_config, config_items
from .array_selection import SelectionMethods
from .array_specs import ArraySpec, create_node, create_spec, open_spec
from .node import METADATA_KEYS, V2_ARRAY_KEY, V3_KEY, Node, join

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..codecs.base import Codec
    from ..metadata.types import Fields, NodeMetadata, Selection, ShapeLike, StoreLike
    from ..storage import Store

__all__ = ["Array", "make_array", "storage_block"]

# Up to this many storage blocks outside a kept region, a resize checks each; beyond, it lists
# the array's stored blocks instead.
_ENUMERATE_BLOCKS_MAX = 16384
# numpy.exceptions is numpy >= 1.25's; numpy 2 has AxisError only there, numpy 1.24 only at the
# top level.
_AXIS_ERROR: type[Exception] = getattr(getattr(np, "exceptions", np), "AxisError")


class Array(SelectionMethods, ChunkMethods, Node):
    """A Zarr array. Index it like numpy: `a[...]`, `a[2:10, 5] = 1`."""

    kind = "array"
    _metadata: ArrayMetadataV3 | ArrayMetadataV2

    # -- faces ------------------------------------------------------------------------
    # What other objects make of an array is theirs, in the modules above this one, which
    # import it and give Array these attributes (zarrcore.nodes imports them all): `lazy`
    # (views.py), `async_array` (async_nodes.py), `info` and `info_complete` (info.py),
    # numpy's `__array_ufunc__` and `__array_function__` (array_dask.py), and `_streamed`,
    # the copy of an Array assigned to a region (streaming.py).
    if TYPE_CHECKING:
        lazy: Any  # views.LazyArray
        async_array: Any  # async_nodes.AsyncArray
        info: Any  # info.ArrayInfo
        info_complete: Any  # () -> info.ArrayInfo
        __array_ufunc__: Any
        __array_function__: Any
        _streamed: Any  # (selection, value, fields) -> bool

    def __init__(
        self,
        store: Store,
        path: str,
        metadata: NodeMetadata,
        read_only: bool = False,
        config: Mapping[str, Any] | None = None,
        *,
        stored_before: bool = False,
    ) -> None:
        super().__init__(store, path, metadata, read_only)
        self._config = array_config(config)
        if "recheck_cached_data" in self._config and not self._read_only:
            # (Its own writes would not be seen by its reads of chunks cached before them.)
            raise SettingValueError(
                f"array {path!r}: recheck_cached_data other than True "
                f"needs an array opened read-only (mode='r')"
            )
        # (Read by every read; dict.get would lock the dict shared by all reading threads on a
        # free-threaded Python.)
        self._read_missing: bool | None = self._config.get("read_missing_chunks")
        self._apply_metadata(metadata)
        if stored_before:  # (opened onto data others stored: ChunkEngine.prior_extent)
            self._engine.prior_extent = self.shape

    def _apply_metadata(self, metadata: NodeMetadata) -> None:
        super()._apply_metadata(metadata)
        where = join(self._path, V3_KEY if metadata.zarr_format == 3 else V2_ARRAY_KEY)
        before = self.__dict__.get("_engine")
        self._engine = ChunkEngine.from_metadata(
            self._store, self._path, self._metadata, where, self._config
        )
        if before is not None:  # (a new shape: what was stored before it was opened stays)
            self._engine.prior_extent = before.prior_extent
        self._fortran = self.order == "F"

    # -- properties -----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape; setting it resizes the array (`resize`), as in zarr-python."""
        return tuple(self._metadata.shape)

    @shape.setter
    def shape(self, value: ShapeLike) -> None:
        self.resize(value)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype of its elements."""
        return self._metadata.dtype

    @property
    def chunk_engine(self) -> ChunkEngine:
        """The ChunkEngine reading and writing this array's chunks (or shards): its store, key
        layout, codec chain and shapes, from which native handles are built."""
        return self._engine

    @property
    def _sharding(self) -> ShardingCodec | None:
        """The sharding codec when it is the array's only codec (zarr-python's definition): the
        chain's partial codec, the one codec that reads and rewrites parts of stored objects."""
        return self._engine.sharding

    @property
    def chunks(self) -> Any:
        """The chunk shape; the inner chunk shape when sharded. On a rectilinear grid of
        chunks, per axis the edge lengths of its chunks within the shape (dask's form)."""
        sharding = self._sharding
        return sharding.chunk_shape if sharding else self._block_shape()

    @property
    def shards(self) -> Any:
        """The shard shape (per axis its shards' edge lengths on a rectilinear grid of
        shards), or None when the array is not sharded."""
        return self._block_shape() if self._sharding else None

    def _block_shape(self) -> Any:
        """The shape of the stored blocks, or per axis their edge lengths when rectilinear."""
        grid = self._engine.grid
        if grid.is_regular:
            return tuple(self._metadata.chunk_shape)
        return tuple(grid.edge_lengths(d) for d in range(self.ndim))

    @property
    def chunk_grid(self) -> ChunkGrid:
        """Where each stored block (chunk, or shard when sharded) lies (metadata/grid.py)."""
        return self._engine.grid

    @property
    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The sizes along each axis of the chunks reads decode (inner chunks when sharded),
        the last cut to the shape: dask's form of chunks (zarr-python 3.4's). Sharded, each
        shard is tiled on its own, so a rectilinear grid of shards gives its true cuts."""
        sharding, stored = self._sharding, self.write_chunk_sizes
        if not sharding:
            return stored
        return tuple(
            tuple(min(inner, edge - start) for edge in edges for start in range(0, edge, inner))
            for edges, inner in zip(stored, sharding.chunk_shape)
        )

    @property
    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The sizes along each axis of the stored chunks (shards when sharded), the last
        cut to the shape (zarr-python 3.4's); on a rectilinear grid, its edge lengths."""
        grid = self._engine.grid
        return tuple(grid.edge_lengths(d) for d in range(self.ndim))

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """The bytes of all elements, decoded (stored or not)."""
        return self.size * self.dtype.itemsize

    @property
    def fill_value(self) -> Any:
        """The value of elements never written, as stored in the metadata (None: undefined, v2)."""
        return self._metadata.fill_value

    @property
    def order(self) -> str:
        """The memory order of the arrays reads return, as zarr-python's: a v2 array's stored
        `order`; for v3, the array's `config` order (unless set, `zarrcore.config.array_order`
        when the array was opened)."""
        if isinstance(self._metadata, ArrayMetadataV2):
            return str(self._metadata.order)
        return str(self._config["order"])

    @property
    def codecs(self) -> Sequence[Codec]:
        """The codec chain of the stored objects (for a sharded array, the sharding codec)."""
        return self._engine.chain.codecs

    def _codec_stages(self) -> Any:
        """The chain whose stages filters, serializer and compressors report: the inner chain
        when sharded, as zarr-python reports them."""
        sharding = self._sharding
        return sharding.inner if sharding else self._engine.chain

    @property
    def filters(self) -> tuple[Codec, ...]:
        """The array->array codecs (v3), or the v2 filters, as codec objects."""
        if isinstance(self._metadata, ArrayMetadataV2):
            return tuple(codec_from_v2(f, "filters") for f in self._metadata.filters or ())
        return tuple(self._codec_stages().array_array)

    @property
    def serializer(self) -> Codec | None:
        """The array->bytes codec (v3); None for v2, which has none."""
        return None if self.zarr_format == 2 else self._codec_stages().array_bytes

    @property
    def compressors(self) -> tuple[Codec, ...]:
        """The bytes->bytes codecs (v3), or the v2 compressor, as codec objects."""
        if isinstance(self._metadata, ArrayMetadataV2):
            compressor = self._metadata.compressor
            return () if compressor is None else (codec_from_v2(compressor, "compressor"),)
        return tuple(self._codec_stages().bytes_bytes)

    @property
    def compressor(self) -> Codec | None:
        """A v2 array's compressor (None when it has none), as zarr-python's deprecated
        `compressor`; `compressors` is the form for both formats.

        Raises
        ------
        TypeError
            A v3 array, which has `compressors` instead.
        """
        if self.zarr_format != 2:
            raise TypeError(
                "`compressor` is not available for Zarr format 3 arrays; use `compressors`"
            )
        compressors = self.compressors
        return compressors[0] if compressors else None

    @classmethod
    def open(cls, store: StoreLike) -> Array:
        """The array stored at the root of `store` (zarr-python's `Array.open`).

        Parameters
        ----------
        store : str, os.PathLike, dict, Store
            A directory path, a URL, a dict or a Store (or another library's store).

        Returns
        -------
        Array

        Raises
        ------
        NodeNotFoundError
            No array is there (a group is a NodeTypeError).
        """
        return make_array(open_spec(store, mode="r+"))

    @classmethod
    def create(
        cls, store: StoreLike, *, shape: ShapeLike, dtype: npt.DTypeLike, **kwargs: Any
    ) -> Array:
        """zarr-python's deprecated `Array.create`: `zarrcore.create` with `store`.

        Parameters
        ----------
        store : str, os.PathLike, dict, Store
            Where to create the array.
        shape : int or tuple of int
        dtype : dtype-like
        **kwargs
            As `zarrcore.create` takes them (`chunk_shape`, `codecs`, `compressor`, ...).

        Returns
        -------
        Array
        """
        warnings.warn(
            "Array.create is deprecated in zarr-python 3; use zarrcore.create_array",
            DeprecationWarning,
            stacklevel=2,
        )
        return make_array(create_spec(shape, dtype=dtype, store=store, **kwargs))

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """The number of chunks (inner chunks when sharded) along each axis."""
        grid = self._engine.grid
        if grid.is_regular:
            return tuple(math.ceil(s / c) for s, c in zip(self.shape, self.chunks))
        if not self._sharding:
            return grid.grid_shape
        return tuple(grid.inner_chunks(d, c) for d, c in enumerate(self.chunks))

    @property
    def nchunks(self) -> int:
        """The number of chunks (inner chunks when sharded) in the grid."""
        return math.prod(self.cdata_shape)

    def _stored_chunk_keys(self) -> list[str]:
        meta = set(METADATA_KEYS)
        head = self._path + "/" if self._path else ""
        return [k for k in self._store.list_prefix(self._path) if k[len(head) :] not in meta]

    @property
    def nchunks_initialized(self) -> int:
        """Stored chunks; for a sharded array, stored shards times chunks per shard."""
        sharding = self._sharding
        if sharding is None:
            return len(self._stored_chunk_keys())
        grid = self._engine.grid
        return sum(
            math.prod(s // c for s, c in zip(grid.chunk_shape_at(coords), sharding.chunk_shape))
            for coords in self._stored_block_coords()
        )

    def nbytes_stored(self) -> int:
        """The bytes of the array's stored chunks or shards (its metadata not counted).

        Returns
        -------
        int
            The sum of their sizes, from a listing of the store.
        """
        return sum(self._store.getsize(k) or 0 for k in self._stored_chunk_keys())

    @property
    def config(self) -> dict[str, Any]:
        """This array's own settings: `write_empty_chunks` (None: follow zarrcore.config),
        `read_missing_chunks`, `cache_bytes` and the options of config.ARRAY_OPTIONS when
        given (else zarrcore.config's apply) and `order` (the memory order of what reads of a
        v3 array return)."""
        return dict(self._config)

    def with_config(self, config: Mapping[str, Any]) -> Array:
        """The same array with some of its own settings changed (as zarr-python's).

        Parameters
        ----------
        config : Mapping
            `write_empty_chunks`: store chunks that hold only the fill value (True) or leave
            them out (False); None follows `zarrcore.config`. `read_missing_chunks`: read
            chunks that are not stored as the fill value (True), or raise
            ChunkNotFoundError naming them (False); None follows `zarrcore.config`.
            `order`: "C" or "F", the memory order of the arrays reads return (v3; a v2
            array's stored order decides for it, as in zarr-python); None takes
            `zarrcore.config.array_order`. `cache_bytes`: the budget of the new handle's
            decoded-chunk cache (`cache_info`); None takes `zarrcore.config.cache_bytes`.
            `io_concurrency`, `num_threads` (at most zarrcore.config's, the pool's),
            `coalesce_gap_bytes`, `coalesce_max_bytes` and `shard_write_order`: how this
            handle's reads and writes run, as zarrcore.config's options of those names; None
            (or not given) follows zarrcore.config.

        Returns
        -------
        Array
            A new handle on the same stored array; this one keeps its settings.

        Raises
        ------
        TypeError
            An unknown setting.
        """
        other = type(self)(
            self._store,
            self._path,
            self._metadata,
            self._read_only,
            {**self._config, **config_items(config)},
        )
        other._engine.prior_extent = self._engine.prior_extent  # (the same stored objects)
        return other

    def __len__(self) -> int:
        """The length of the first axis; TypeError for a 0-d array."""
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __reduce__(self) -> tuple[Any, ...]:
        # The engine holds compiled job state that does not pickle; it is rebuilt from
        # the metadata, so processes and task schedulers can ship arrays.
        # A shared cache travels as where its table is (SharedCacheRef), for the process
        # that unpickles to read through the same one.
        # "open" travels as the time it stands for: a worker's reads trust what any process
        # found since the array was opened, as a forked worker's do.
        ref = None if self._engine.cache is None else self._engine.cache.shared_ref
        config = dict(self._config)
        if ref is not None:
            config["shared_cache"] = ref
        if config.get("recheck_cached_data") == "open":
            config["recheck_cached_data"] = self._engine.recheck.since
        # And what was stored before it was opened (ChunkEngine.prior_extent): a worker
        # writing an array made for it writes new objects as new.
        state = self._engine.prior_extent
        return type(self), (self._store, self._path, self._metadata, self._read_only, config), state

    def __setstate__(self, prior_extent: tuple[int, ...]) -> None:
        self._engine.prior_extent = prior_extent

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        # The same array (store, path, metadata) tokenizes alike in every process.
        return (
            type(self).__name__,
            type(self._store).__name__,
            self._store.identity,
            self._path,
            self._metadata.to_json(),
        )

    def __repr__(self) -> str:
        return f"<zarrcore.Array {self._store!r}{self.name} shape={self.shape} dtype={self.dtype}>"

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        """The whole array read into numpy (`numpy.asarray(a)`); ValueError when `copy` is False."""
        if copy is False:
            raise ValueError(
                "a zarrcore Array is read into a new numpy array: it cannot be "
                "viewed without a copy (copy=False)"
            )
        data: np.ndarray = self[...]
        return data if dtype is None else data.astype(dtype, copy=False)

    # -- selection ------------------------------------------------------------
    def __getitem__(self, selection: Selection) -> Any:
        """numpy's `x[selection]`: basic, advanced (int or bool arrays) and mixed selections;
        field names select fields of a structured dtype.

        Returns
        -------
        numpy.ndarray or scalar
            A new array (a scalar when the result is 0-d).

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError), or a field it lacks.
        """
        if self._engine.routes.one_chunk is not None and self.reads_missing_as_fill:
            data = self._engine.read_selection(selection, self._fortran)
            if data is not NotImplemented:
                return data
        fields, selection = pop_fields(selection)
        return self._read(numpy_indexer(selection, self.shape, self._grid), fields=fields)

    def __setitem__(self, selection: Selection, value: npt.ArrayLike) -> None:
        """numpy's `x[selection] = value`: `value` broadcasts to the selection. An Array
        `value` of the shape of a region (step-1 slices) is copied a block at a time, never
        read whole (`streaming.copy_into`).

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `value` does not broadcast to the selection; nothing is written.
        ReadOnlyError
            The array is read-only.
        """
        fields, selection = pop_fields(selection)
        if not self._streamed(selection, value, fields):
            self._write(numpy_indexer(selection, self.shape, self._grid), value, fields)

    @property
    def _grid(self) -> tuple[AxisChunks, ...]:
        """Per axis the stored objects the engine reads (shards when sharded): their length,
        or their boundaries on a rectilinear grid."""
        return self._engine.grid.axes

    def _fill_buffer(self, indexer: Any, buffer: np.ndarray) -> np.ndarray:
        """Read the selection into `buffer` (shape indexer.drop_shape), in the result's order."""
        if buffer.size:
            if not self.reads_missing_as_fill:
                self._engine.check_stored(indexer)
            self._engine.read(indexer, buffer)
        return buffer

    @property
    def reads_missing_as_fill(self) -> bool:
        """Do reads fill where a chunk is not stored (`read_missing_chunks`), or raise?"""
        read_missing = self._read_missing
        return bool(global_config.read_missing_chunks if read_missing is None else read_missing)

    def _check_fields(self, fields: str | Sequence[str]) -> None:
        names = self.dtype.names or ()
        for field in [fields] if isinstance(fields, str) else fields:
            if field not in names:
                raise SelectionError(
                    f"array {self.name!r} of dtype {self.dtype} has no field {field!r}"
                    + ("" if names else " (it is not a structured array)")
                )

    def _read(self, indexer: Any, out: np.ndarray | None = None, fields: Fields = None) -> Any:
        """The selection as a new array (a scalar when 0-d), or written into `out`."""
        if fields is not None:
            self._check_fields(fields)
        if out is not None:
            self._check_out(out, indexer.shape)
        if out is not None and fields is None and out.dtype == self.dtype:
            view = out.reshape(indexer.drop_shape)
            # Chunks decode straight into the caller's array when it reshapes without a copy.
            if np.may_share_memory(view, out) or not out.size:
                self._fill_buffer(indexer, view)
                return out
        buffer = self._fill_buffer(indexer, _memory.empty(indexer.drop_shape, self.dtype))
        return self._result(indexer, buffer, out, fields)

    def _result(
        self, indexer: Any, buffer: np.ndarray, out: np.ndarray | None = None, fields: Fields = None
    ) -> Any:
        """What `_read` returns of the selection read into `buffer` (indexer.drop_shape)."""
        data: Any = buffer.reshape(indexer.shape)  # (numpy's stubs refuse a list of fields)
        if fields is not None:
            data = data[fields]
        if out is not None:
            out[...] = data
            return out
        if indexer.scalar:
            return data[()]
        # (asfortranarray makes a 0-d array 1-d)
        return np.asfortranarray(data) if self._fortran and data.ndim else data

    def _write(self, indexer: Any, value: Any, fields: Fields = None) -> None:
        self._check_writable()
        if fields is not None:
            self._check_fields(fields)
            # Other fields keep their stored values: read the selection, set the fields, write.
            current = self._read(indexer)
            current = np.array(current, dtype=self.dtype, ndmin=0, copy=True)
            current[fields] = value  # type: ignore[index]  # a list of names is one too
            value = current
        # As numpy's own assignment casts: unsafe, but impossible conversions raise.
        value = self._metadata.data_type.cast_array(value)
        try:
            if value.shape != indexer.shape:  # (broadcast_to is six Python calls)
                value = np.broadcast_to(value, indexer.shape)
            value = value.reshape(indexer.drop_shape)
        except ValueError:
            raise ShapeMismatchError(
                f"array {self.name!r}: could not broadcast value of shape {value.shape} to "
                f"selection shape {indexer.shape}"
            ) from None
        if indexer.nitems:
            self._engine.write(indexer, indexer.permute(value))

    def read_future(self, selection: Selection = Ellipsis) -> concurrent.futures.Future[Any]:
        """Start reading `a[selection]` in the background and return at once: the read of
        the next batch while this one is used.

        The read runs on the shared pool (as many at once as it has threads, the others
        queued). `future.result()` waits for the data; `future.cancel()` stops the read
        between chunks, even while it runs, and returns once no work of it is left running.
        An error is raised by `result()`.

        Parameters
        ----------
        selection : selection, optional
            As `a[selection]` takes it (the whole array by default).

        Returns
        -------
        concurrent.futures.Future
            Its result is what `a[selection]` returns.
        """
        return background.start(self.__getitem__, selection)

    def write_future(
        self, selection: Selection, value: npt.ArrayLike
    ) -> concurrent.futures.Future[None]:
        """Start `a[selection] = value` in the background and return at once.

        `value` is read while the write runs: do not change it before the future is done.
        `future.cancel()` stops the write between chunks, even while it runs, and returns
        once the chunks in progress are written whole: each chunk is then left as it was or
        written whole, and nothing of the write lands after `cancel()` returns.

        Parameters
        ----------
        selection : selection
            As `a[selection] = value` takes it.
        value : array_like
            Broadcast to the selection.

        Returns
        -------
        concurrent.futures.Future
            Done (result None) once every chunk is stored.
        """
        return background.start(self.__setitem__, selection, value)

    def cache_info(self) -> dict[str, int]:
        """The counters of the array's decoded-chunk cache (`cache_bytes`), which every thread
        reading through this handle shares: hits, misses, inserts, evictions, stale (entries
        dropped because the stored chunk or shard changed), entries, used and capacity
        (bytes); all 0 without a cache.

        The cache serves reads of arrays with a regular chunk grid and codecs the compiled
        core runs, whose budget holds at least one (inner) chunk, on a local directory or a
        MemoryStore holding its own data (sharded or not), and unsharded arrays on a store
        that gives versions of its values (`Store.versioned_reads`: zip, object stores). An
        entry is served only for the stored bytes it was decoded from: a file's chunk bytes
        (a shard's index and inner chunk), which every hit reads and compares by a hash
        keyed with a random secret of the cache (of the shared table with `shared_cache`),
        the file's identity (device, inode, size, times) only a first filter, as writes
        through a shared memory map or on file systems with whole-second times leave those
        alone (a file changed within the last second is read but not cached); a memory
        blob's version (every write stores a new one); a zip member's place, sizes and CRC
        in the zip file as opened (its device, inode, size and times); an object's strong
        ETag (a HEAD finding that ETag unchanged). So entries are
        never served stale, and a hit saves the decode; on a directory, not the read
        (:ref:`cache-guarantees`). Other stores (fsspec, references, a MemoryStore
        over a dict passed in), and sharded arrays on zip and object stores, are not cached:
        capacity 0. On a directory, chunks stored as the items lie in memory (no
        compressor, checksum, filter or byte swap) are read without the cache, whose
        counters then stay 0: a hit would cost more than the read.

        Returns
        -------
        dict
        """
        return self._engine.cache_info()

    def native_handle(self, cache_bytes: int = 0) -> ArrayHandle:
        """A handle for reading and writing regions of this array from compiled code, on
        threads without the GIL (zarrcore/array_api.h, zarrcore/array_api.pxd).

        It is a snapshot of the array's shape, chunking, codecs and
        write_empty_chunks now.

        Parameters
        ----------
        cache_bytes : int, default 0
            Keep up to this many bytes of decoded chunks (inner chunks when sharded) for
            the handle's reads, shared by all its threads; 0: no cache. A cached chunk is
            used only while its stored bytes are unchanged: every hit reads them and compares
            their hash, so it saves the decode, not the read; chunk files stored as the items
            lie in memory are read without it (:ref:`handle-cache`).

        Returns
        -------
        zarrcore.array_api.ArrayHandle
            The handle; close it (or leave its ``with`` block) once no thread uses it.

        Raises
        ------
        ZarrcoreError
            The compiled core cannot serve the array alone (its store, its codecs, or a
            rectilinear chunk grid).
        ValueError
            `cache_bytes` is neither 0 nor at least one (inner) chunk's decoded size.
        """
        return ArrayHandle(self, cache_bytes)

    # -- shape changes and chunk iteration --------------------------------------
    def resize(self, *new_shape: Any) -> None:
        """Change the shape. What a smaller shape cuts off is gone: growing again shows the fill
        value there.

        Serialised with every other metadata update of the array, across threads and processes
        (the shape and attributes are read anew under the lock), and safe to interrupt: the
        shape changes in one atomic write of the metadata, and every other write changes only
        what the shape stored at that moment does not show. Before the metadata write, stored
        data outside the old shape is reset to fill (data that a smaller shape cut off, or that
        an interrupted resize or a writer with an outdated shape left there); after it, chunks
        outside the new shape are deleted and the cut-off part of its boundary chunks reset,
        or left for the next growing resize to reset if interrupted. A kill or a failed write
        at any step leaves the old array in the old shape or the new one in the new shape.
        Boundary chunks and shards are reset by the read-modify-write partial writes use
        (conditional writes on object stores), so a concurrent write inside both shapes is
        kept.

        Parameters
        ----------
        *new_shape : int or tuple of int
            The new shape, as one tuple or as one int per axis.

        Raises
        ------
        ValueError
            A shape of another number of dimensions, or a negative side.
        ReadOnlyError
            The array is read-only.
        """
        if len(new_shape) == 1 and not isinstance(new_shape[0], (int, np.integer)):
            new_shape = new_shape[0]
        new_shape = tuple(int(s) for s in new_shape)
        with self._metadata_update() as current:
            self._resize_locked(current, new_shape)

    def _resize_locked(self, current: Any, new_shape: tuple[int, ...]) -> None:
        """resize with the metadata lock held and `current` the stored metadata."""
        old_shape = tuple(current.shape)
        if len(new_shape) != len(old_shape) or any(s < 0 for s in new_shape):
            raise ValueError(f"new shape {new_shape} does not fit a {len(old_shape)}-d array")
        # Each step changes only what the shape stored at that moment does not show, so an
        # interrupted resize leaves the old array or the new one.
        # A rectilinear grid keeps its chunks and gains one reaching a grown extent: the new
        # shape's grid holds every chunk of the old one.
        resized = current.evolve(shape=new_shape)
        if any(n > o for n, o in zip(new_shape, old_shape)):
            self._clear_outside(old_shape, new_shape, resized.grid)
        self._store_metadata(resized)
        if any(n < o for n, o in zip(new_shape, old_shape)):
            self._clear_outside(new_shape, old_shape, resized.grid)

    def _clear_outside(
        self, kept: tuple[int, ...], extent: tuple[int, ...], grid: ChunkGrid
    ) -> None:
        """Leave no stored data outside the box `kept` (from the origin): the storage blocks
        (shards or chunks of `grid`) wholly outside it are deleted, the rest of those partly
        outside reset to fill (ChunkEngine.reset_outside). Looks at the blocks over `extent`
        that reach outside `kept` when they are few, else at every stored block."""
        for coords in self._blocks_outside(kept, extent, grid):
            self._engine.reset_outside(coords, kept)

    def _blocks_outside(
        self, kept: tuple[int, ...], extent: tuple[int, ...], grid: ChunkGrid
    ) -> Iterator[tuple[int, ...]]:
        """Coordinates of stored blocks of `grid` that may hold data outside the box `kept`."""
        counts = list(grid.resized(extent).grid_shape)
        inside = [min(grid.chunks_within(d, k), n) for d, (k, n) in enumerate(zip(kept, counts))]
        if math.prod(counts) - math.prod(inside) <= _ENUMERATE_BLOCKS_MAX:
            for axis in range(self.ndim):
                # Inside on the axes before `axis`, outside on it, anywhere after it.
                ranges = (
                    [range(n) for n in inside[:axis]]
                    + [range(inside[axis], counts[axis])]
                    + [range(n) for n in counts[axis + 1 :]]
                )
                if not all(ranges):
                    continue  # (product() would list the others first: 10**9 chunks, say)
                for coords in itertools.product(*ranges):
                    if self._store.exists(self._engine.key(coords)):
                        yield coords
            return
        for coords in self._stored_block_coords():
            ends = [grid.chunk_end(d, c) for d, c in enumerate(coords)]
            if any(e is None or e > k for e, k in zip(ends, kept)):
                yield coords

    def _stored_block_coords(self) -> Iterator[tuple[int, ...]]:
        """The grid indices of the stored blocks (chunks, or shards), from a listing."""
        head = len(self._path) + 1 if self._path else 0
        for key in self._stored_chunk_keys():
            coords = tuple(int(c) for c in re.findall(r"\d+", key[head:]))
            if len(coords) == self.ndim and self._engine.key(coords) == key:
                yield coords

    def append(self, data: npt.ArrayLike, axis: int = 0) -> tuple[int, ...]:
        """Grow `axis` by `data`'s length along it and write `data` there; the new shape.
        Concurrent appends (threads or processes) each get their own region: the growth and
        the write happen under the array's metadata lock.

        Parameters
        ----------
        data : array_like
            Of the array's shape on every other axis.
        axis : int, optional
            The axis to grow (negative counts from the end).

        Returns
        -------
        tuple of int
            The new shape.

        Raises
        ------
        ValueError
            `data` does not match the array's shape off `axis`.
        numpy.exceptions.AxisError
            No such axis.
        ReadOnlyError
            The array is read-only.
        """
        data = np.asarray(data)
        if data.ndim != self.ndim:
            raise ValueError(f"data has {data.ndim} dimensions, the array {self.ndim}")
        axis = axis + self.ndim if axis < 0 else axis
        if not 0 <= axis < self.ndim:
            raise _AXIS_ERROR(axis, self.ndim)
        with self._metadata_update() as current:
            shape = tuple(current.shape)
            others = [s for i, s in enumerate(shape) if i != axis]
            if [s for i, s in enumerate(data.shape) if i != axis] != others:
                raise ValueError(
                    f"data of shape {data.shape} does not match the array's shape {shape} "
                    f"off axis {axis}"
                )
            old = shape[axis]
            new_shape = shape[:axis] + (old + data.shape[axis],) + shape[axis + 1 :]
            self._resize_locked(current, new_shape)
            self[(slice(None),) * axis + (slice(old, None),)] = data
        return new_shape

    def iter_chunks(self) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
        """Yield (block coordinates, region as a tuple of slices) for every storage block (shard
        when sharded, else chunk) in C order; `a[region]` is that block's data.

        Yields
        ------
        tuple of (tuple of int, tuple of slice)
            A block's coordinates in the grid, and the region of the array it holds.
        """
        grid = self._engine.grid
        for coords in grid.chunks():
            yield coords, grid.region(coords)


def make_array(spec: ArraySpec) -> Array:
    """The Array `spec` describes; a new one's metadata stored (`create_node`), then its data
    written."""
    # (Made first: it checks codecs and limits before anything is written.)
    array = Array(
        spec.store,
        spec.path,
        spec.metadata,
        read_only=spec.read_only,
        config=spec.config,
        stored_before=not spec.new,
    )
    if spec.new:
        create_node(spec.store, spec.path, spec.metadata, spec.overwrite)
        if spec.data is not None:
            array[...] = spec.data
    return array


def storage_block(array: Array) -> tuple[int, ...]:
    """The shape of what `array` stores whole: the shard shape when sharded, else the chunk
    shape."""
    return tuple(array.shards or array.chunks)


def _binary_operator(ufunc: np.ufunc, name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def forward(self: Array, other: Any) -> Any:
        return ufunc(self, other)

    def reflected(self: Array, other: Any) -> Any:
        return ufunc(other, self)

    forward.__name__, reflected.__name__ = f"__{name}__", f"__r{name}__"
    return forward, reflected


for _ufunc, _name in [
    (np.add, "add"),
    (np.subtract, "sub"),
    (np.multiply, "mul"),
    (np.true_divide, "truediv"),
    (np.floor_divide, "floordiv"),
    (np.remainder, "mod"),
    (np.power, "pow"),
    (np.matmul, "matmul"),
    (np.bitwise_and, "and"),
    (np.bitwise_or, "or"),
    (np.bitwise_xor, "xor"),
    (np.left_shift, "lshift"),
    (np.right_shift, "rshift"),
]:
    _forward, _reflected = _binary_operator(_ufunc, _name)
    setattr(Array, _forward.__name__, _forward)
    setattr(Array, _reflected.__name__, _reflected)
for _ufunc, _name in [
    (np.less, "lt"),
    (np.less_equal, "le"),
    (np.greater, "gt"),
    (np.greater_equal, "ge"),
]:
    setattr(Array, f"__{_name}__", _binary_operator(_ufunc, _name)[0])
for _ufunc, _name in [
    (np.negative, "neg"),
    (np.positive, "pos"),
    (np.absolute, "abs"),
    (np.invert, "invert"),
]:
    setattr(Array, f"__{_name}__", lambda self, _ufunc=_ufunc: _ufunc(self))
