"""The Array: a chunked N-d array in a store, read and written with numpy semantics."""
from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _memory, nodes
from .codecs import codec_from_v2
from .codecs.sharding import ShardingCodec
from .errors import SelectionError, ShapeMismatchError
from .indexing import (
    BasicIndexer, BlockIndexer, OrthogonalIndexer, coordinate_indexer, mask_indexer,
    numpy_indexer, pop_fields,
)
from .pipeline import ChunkStore

if TYPE_CHECKING:
    import numpy.typing as npt

    from ._types import NodeMetadata, Selection, ShapeLike, StoreLike
    from .codecs.base import Codec
    from .storage import Store

    Fields = str | Sequence[str] | None


# Up to this many storage blocks outside a kept region, a resize checks each; beyond, it lists
# the array's stored blocks instead.
_ENUMERATE_BLOCKS_MAX = 16384


def format_bytes(n: float) -> str:  # type: ignore[return]  # the last unit returns
    """`n` bytes as 512 B, 1.5 KiB, 32.0 MiB..."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


class Array(nodes.Node):
    """A Zarr array. Index it like numpy: `a[...]`, `a[2:10, 5] = 1`."""

    kind = "array"

    def __init__(self, store: Store, path: str, metadata: NodeMetadata,
                 read_only: bool = False, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(store, path, metadata, read_only)
        self._config = _array_config(config)
        self._set_metadata(metadata)

    def _set_metadata(self, metadata: NodeMetadata) -> None:
        self._metadata = metadata
        self._chunks = self._make_chunk_store(metadata)

    _apply_metadata = _set_metadata

    def _make_chunk_store(self, metadata: Any) -> ChunkStore:
        if metadata.zarr_format == 3:
            codecs = metadata.codecs
            where = nodes.join(self._path, nodes.V3_KEY)
        else:
            from .codecs.v2 import codecs_from_v2_metadata

            where = nodes.join(self._path, nodes.V2_ARRAY_KEY)
            codecs = codecs_from_v2_metadata(metadata, where)
        return ChunkStore(
            self._store, self._path, metadata.chunk_key, metadata.chunk_shape,
            metadata.dtype, self._read_fill_value(metadata), codecs, where,
            key_layout=self._key_layout(metadata), array_shape=metadata.shape,
            write_empty_chunks=self._config["write_empty_chunks"],
        )

    @staticmethod
    def _key_layout(metadata: Any) -> tuple[str, str, bool]:
        """(head, separator, leading separator) of the chunk keys; see ChunkStore."""
        if metadata.zarr_format == 2:
            return "", metadata.dimension_separator, False
        encoding = metadata.chunk_key_encoding
        if encoding.name == "default":
            return "c", encoding.separator, True
        return "", encoding.separator, False

    @staticmethod
    def _read_fill_value(metadata: Any) -> Any:
        # v2 `null` means undefined; read it as the type's default (zero, NaT, empty) as
        # zarr-python does.
        if metadata.fill_value is None:
            return metadata.data_type.default_fill_value()
        return metadata.fill_value

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
    def _sharding(self) -> ShardingCodec | None:
        """The sharding codec when it is the array's only codec (zarr-python's definition): the
        chain's partial codec, the one codec that reads and rewrites parts of stored objects."""
        return self._chunks.partial

    @property
    def chunks(self) -> tuple[int, ...]:
        """The chunk shape; the inner chunk shape when sharded."""
        sharding = self._sharding
        return sharding.chunk_shape if sharding else tuple(self._metadata.chunk_shape)

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape, or None when the array is not sharded."""
        return tuple(self._metadata.chunk_shape) if self._sharding else None

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
        if self._metadata.zarr_format == 2:
            return str(self._metadata.order)
        return str(self._config["order"])

    @property
    def codecs(self) -> tuple[Codec, ...]:
        """The codec chain of the stored objects (for a sharded array, the sharding codec)."""
        return self._chunks.chain.codecs

    def _codec_stages(self) -> Any:
        """The chain whose stages filters, serializer and compressors report: the inner chain
        when sharded, as zarr-python reports them."""
        sharding = self._sharding
        return sharding.inner if sharding else self._chunks.chain

    @property
    def filters(self) -> tuple[Codec, ...]:
        """The array->array codecs (v3), or the v2 filters, as codec objects."""
        if self.zarr_format == 2:
            return tuple(codec_from_v2(f, "filters") for f in self._metadata.filters or ())
        return tuple(self._codec_stages().array_array)

    @property
    def serializer(self) -> Codec | None:
        """The array->bytes codec (v3); None for v2, which has none."""
        return None if self.zarr_format == 2 else self._codec_stages().array_bytes

    @property
    def compressors(self) -> tuple[Codec, ...]:
        """The bytes->bytes codecs (v3), or the v2 compressor, as codec objects."""
        if self.zarr_format == 2:
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
            raise TypeError("`compressor` is not available for Zarr format 3 arrays; use `compressors`")
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
        from .api import open_array

        return open_array(store, mode="r+")

    @classmethod
    def create(cls, store: StoreLike, *, shape: ShapeLike, dtype: npt.DTypeLike, **kwargs: Any) -> Array:
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
        from .api import create

        warnings.warn("Array.create is deprecated in zarr-python 3; use zarrcore.create_array",
                      DeprecationWarning, stacklevel=2)
        return create(shape, dtype=dtype, store=store, **kwargs)

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """The number of chunks (inner chunks when sharded) along each axis."""
        return tuple(math.ceil(s / c) for s, c in zip(self.shape, self.chunks))

    @property
    def nchunks(self) -> int:
        """The number of chunks (inner chunks when sharded) in the grid."""
        return math.prod(self.cdata_shape)

    def _stored_chunk_keys(self) -> list[str]:
        meta = set(nodes.METADATA_KEYS)
        head = self._path + "/" if self._path else ""
        return [k for k in self._store.list_prefix(self._path) if k[len(head):] not in meta]

    @property
    def nchunks_initialized(self) -> int:
        """Stored chunks; for a sharded array, stored shards times chunks per shard."""
        per_shard = math.prod(self.shards) // math.prod(self.chunks) if self.shards else 1
        return len(self._stored_chunk_keys()) * per_shard

    def nbytes_stored(self) -> int:
        """The bytes of the array's stored chunks or shards (its metadata not counted).

        Returns
        -------
        int
            The sum of their sizes, from a listing of the store.
        """
        return sum(self._store.getsize(k) or 0 for k in self._stored_chunk_keys())

    @property
    def info(self) -> ArrayInfo:
        """A printable summary of the array from its metadata alone (see ArrayInfo); as in
        zarr-python, `info_complete()` adds what needs a listing of the store."""
        return ArrayInfo(self, complete=False)

    def info_complete(self) -> ArrayInfo:
        """The summary with what needs a listing of the store: stored bytes, storage ratio and
        chunks initialized.

        Returns
        -------
        ArrayInfo
        """
        return ArrayInfo(self, complete=True)

    @property
    def config(self) -> dict[str, Any]:
        """This array's own settings: `write_empty_chunks` (None: follow zarrcore.config) and
        `order` (the memory order of what reads of a v3 array return)."""
        return dict(self._config)

    def with_config(self, config: Mapping[str, Any]) -> Array:
        """The same array with some of its own settings changed (as zarr-python's).

        Parameters
        ----------
        config : Mapping
            `write_empty_chunks`: store chunks that hold only the fill value (True) or leave
            them out (False); None follows `zarrcore.config`. `order`: "C" or "F", the
            memory order of the arrays reads return (v3; a v2 array's stored order decides
            for it, as in zarr-python); None takes `zarrcore.config.array_order`.

        Returns
        -------
        Array
            A new handle on the same stored array; this one keeps its settings.

        Raises
        ------
        TypeError
            An unknown setting.
        """
        return type(self)(self._store, self._path, self._metadata, self._read_only,
                          {**self._config, **_config_items(config)})

    def __len__(self) -> int:
        """The length of the first axis; TypeError for a 0-d array."""
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __reduce__(self) -> tuple[Any, ...]:
        # The chunk store holds compiled job state that does not pickle; it is rebuilt from
        # the metadata, so processes and task schedulers can ship arrays.
        return type(self), (self._store, self._path, self._metadata, self._read_only,
                            self._config)

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        # The same array (store, path, metadata) tokenizes alike in every process.
        return (type(self).__name__, type(self._store).__name__, self._store.identity,
                self._path, self._metadata.to_json())

    def __repr__(self) -> str:
        return f"<zarrcore.Array {self._store!r}{self.name} shape={self.shape} dtype={self.dtype}>"

    def __array__(self, dtype: npt.DTypeLike | None = None,
                  copy: bool | None = None) -> np.ndarray:
        """The whole array read into numpy (`numpy.asarray(a)`); ValueError when `copy` is False."""
        if copy is False:
            raise ValueError("a zarrcore Array is read into a new numpy array: it cannot be "
                             "viewed without a copy (copy=False)")
        data = self[...]
        return data if dtype is None else data.astype(dtype, copy=False)

    # -- numpy's protocols -------------------------------------------------------
    # A zarrcore Array is a duck array (NEP 13 and 18): numpy's functions, ufuncs and the
    # arithmetic operators read it whole and give numpy arrays, so libraries that keep duck
    # arrays as they are (xarray) hold the Array unread and index it for what they need.
    # `==` and `!=` stay the identity of the handle, as for every node.

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if any(isinstance(o, Array) for o in kwargs.get("out", ())):
            return NotImplemented  # an Array is no buffer to compute into
        return _apply(getattr(ufunc, method), inputs, kwargs,
                      _foreign_types(inputs + tuple(kwargs.get("out", ()))))

    def __array_function__(self, func: Callable[..., Any], types: Any, args: Any,
                           kwargs: Any) -> Any:
        foreign = [t for t in types if not issubclass(t, (Array, np.ndarray))]
        if not foreign:
            metadata_only = _METADATA_FUNCTIONS.get(func)
            if metadata_only is not None:
                return metadata_only(*args, **kwargs)
        return _apply(func, args, kwargs, foreign)

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
        fields, selection = pop_fields(selection)
        return self._read(numpy_indexer(selection, self.shape, self._grid), fields=fields)

    def __setitem__(self, selection: Selection, value: npt.ArrayLike) -> None:
        """numpy's `x[selection] = value`: `value` broadcasts to the selection.

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
        self._write(numpy_indexer(selection, self.shape, self._grid), value, fields)

    @property
    def _grid(self) -> tuple[int, ...]:
        """The shape of the stored objects the pipeline reads: shards when sharded."""
        return self._chunks.chunk_shape

    @property
    def oindex(self) -> _Selector:
        """Orthogonal selection: `a.oindex[[0, 2], 1:5]` (one int, slice or array per axis)."""
        return _Selector(self.get_orthogonal_selection, self.set_orthogonal_selection)

    @property
    def vindex(self) -> _Selector:
        """Vectorized selection, as numpy's advanced indexing: `a.vindex[rows, cols]`, or a
        boolean mask `a.vindex[mask]`."""
        return _Selector(self._get_vectorized, self._set_vectorized)

    @property
    def blocks(self) -> _Selector:
        """Selection by storage block (shard when sharded, else chunk): `a.blocks[1, :2]`."""
        return _Selector(self.get_block_selection, self.set_block_selection)

    def _get_vectorized(self, selection: Selection, out: np.ndarray | None = None,
                        fields: Fields = None) -> Any:
        return self._read(numpy_indexer(selection, self.shape, self._grid), out, fields)

    def _set_vectorized(self, selection: Selection, value: npt.ArrayLike,
                        fields: Fields = None) -> None:
        self._write(numpy_indexer(selection, self.shape, self._grid), value, fields)

    def get_basic_selection(self, selection: Selection = Ellipsis,
                            out: np.ndarray | None = None, fields: Fields = None) -> Any:
        """Read a basic selection: ints and slices.

        Parameters
        ----------
        selection : int, slice, Ellipsis or tuple of them
            One per axis (Ellipsis fills the rest); steps may be negative.
        out : numpy.ndarray, optional
            An array of the selection's shape to read into (and return).
        fields : str or list of str, optional
            Fields of a structured dtype to read.

        Returns
        -------
        numpy.ndarray or scalar
            The values (`out` when given; a scalar for a 0-d result).

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `out` is not of the selection's shape.
        """
        return self._read(BasicIndexer(selection, self.shape, self._grid), out, fields)

    def set_basic_selection(self, selection: Selection, value: npt.ArrayLike,
                            fields: Fields = None) -> None:
        """Write a basic selection: ints and slices.

        Parameters
        ----------
        selection : int, slice, Ellipsis or tuple of them
            One per axis (Ellipsis fills the rest); steps may be negative.
        value : array_like
            Broadcast to the selection's shape and cast to the array's dtype.
        fields : str or list of str, optional
            Fields of a structured dtype to write; the others keep their stored values.

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `value` does not broadcast to the selection's shape; nothing is written.
        ReadOnlyError
            The array is read-only.
        """
        self._write(BasicIndexer(selection, self.shape, self._grid), value, fields)

    def get_orthogonal_selection(self, selection: Selection, out: np.ndarray | None = None,
                                 fields: Fields = None) -> Any:
        """Read an orthogonal selection (as `a.oindex[...]`).

        Parameters
        ----------
        selection : int, slice, int array, bool array or tuple of them
            One per axis; each axis is selected on its own (as `numpy.ix_`).
        out : numpy.ndarray, optional
            An array of the selection's shape to read into (and return).
        fields : str or list of str, optional
            Fields of a structured dtype to read.

        Returns
        -------
        numpy.ndarray or scalar
            The values (`out` when given; a scalar for a 0-d result).

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `out` is not of the selection's shape.
        """
        return self._read(OrthogonalIndexer(selection, self.shape, self._grid), out, fields)

    def set_orthogonal_selection(self, selection: Selection, value: npt.ArrayLike,
                                 fields: Fields = None) -> None:
        """Write an orthogonal selection (as `a.oindex[...] = value`).

        Parameters
        ----------
        selection : int, slice, int array, bool array or tuple of them
            One per axis; each axis is selected on its own (as `numpy.ix_`).
        value : array_like
            Broadcast to the selection's shape and cast to the array's dtype.
        fields : str or list of str, optional
            Fields of a structured dtype to write; the others keep their stored values.

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `value` does not broadcast to the selection's shape; nothing is written.
        ReadOnlyError
            The array is read-only.
        """
        self._write(OrthogonalIndexer(selection, self.shape, self._grid), value, fields)

    def get_coordinate_selection(self, selection: Selection, out: np.ndarray | None = None,
                                 fields: Fields = None) -> Any:
        """Read points given by their coordinates (as `a.vindex[...]`).

        Parameters
        ----------
        selection : tuple of int arrays
            One array of coordinates per axis, broadcast together: the points to read.
        out : numpy.ndarray, optional
            An array of the selection's shape to read into (and return).
        fields : str or list of str, optional
            Fields of a structured dtype to read.

        Returns
        -------
        numpy.ndarray or scalar
            The values (`out` when given; a scalar for a 0-d result).

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `out` is not of the selection's shape.
        """
        return self._read(coordinate_indexer(selection, self.shape, self._grid), out, fields)

    def set_coordinate_selection(self, selection: Selection, value: npt.ArrayLike,
                                 fields: Fields = None) -> None:
        """Write points given by their coordinates (as `a.vindex[...] = value`).

        Parameters
        ----------
        selection : tuple of int arrays
            One array of coordinates per axis, broadcast together: the points to read.
        value : array_like
            Broadcast to the selection's shape and cast to the array's dtype.
        fields : str or list of str, optional
            Fields of a structured dtype to write; the others keep their stored values.

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `value` does not broadcast to the selection's shape; nothing is written.
        ReadOnlyError
            The array is read-only.
        """
        self._write(coordinate_indexer(selection, self.shape, self._grid), value, fields)

    def get_mask_selection(self, mask: npt.ArrayLike, out: np.ndarray | None = None,
                           fields: Fields = None) -> Any:
        """Read the elements where a boolean mask is true.

        Parameters
        ----------
        mask : bool array
            A mask of the array's shape: its true elements, in C order.
        out : numpy.ndarray, optional
            An array of the selection's shape to read into (and return).
        fields : str or list of str, optional
            Fields of a structured dtype to read.

        Returns
        -------
        numpy.ndarray or scalar
            The values (`out` when given; a scalar for a 0-d result).

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `out` is not of the selection's shape.
        """
        return self._read(mask_indexer(mask, self.shape, self._grid), out, fields)

    def set_mask_selection(self, mask: npt.ArrayLike, value: npt.ArrayLike,
                           fields: Fields = None) -> None:
        """Write the elements where a boolean mask is true.

        Parameters
        ----------
        mask : bool array
            A mask of the array's shape: its true elements, in C order.
        value : array_like
            Broadcast to the selection's shape and cast to the array's dtype.
        fields : str or list of str, optional
            Fields of a structured dtype to write; the others keep their stored values.

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `value` does not broadcast to the selection's shape; nothing is written.
        ReadOnlyError
            The array is read-only.
        """
        self._write(mask_indexer(mask, self.shape, self._grid), value, fields)

    def get_block_selection(self, selection: Selection, out: np.ndarray | None = None,
                            fields: Fields = None) -> Any:
        """Read whole storage blocks (as `a.blocks[...]`).

        Parameters
        ----------
        selection : int, slice or tuple of them
            Storage blocks (shards when sharded, else chunks) per axis.
        out : numpy.ndarray, optional
            An array of the selection's shape to read into (and return).
        fields : str or list of str, optional
            Fields of a structured dtype to read.

        Returns
        -------
        numpy.ndarray or scalar
            The values (`out` when given; a scalar for a 0-d result).

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `out` is not of the selection's shape.
        """
        indexer = BlockIndexer(selection, self.shape, self.shards or self.chunks, self._grid)
        return self._read(indexer, out, fields)

    def set_block_selection(self, selection: Selection, value: npt.ArrayLike,
                            fields: Fields = None) -> None:
        """Write whole storage blocks (as `a.blocks[...] = value`).

        Parameters
        ----------
        selection : int, slice or tuple of them
            Storage blocks (shards when sharded, else chunks) per axis.
        value : array_like
            Broadcast to the selection's shape and cast to the array's dtype.
        fields : str or list of str, optional
            Fields of a structured dtype to write; the others keep their stored values.

        Raises
        ------
        SelectionError
            A selection that does not fit the array (an IndexError).
        ShapeMismatchError
            `value` does not broadcast to the selection's shape; nothing is written.
        ReadOnlyError
            The array is read-only.
        """
        indexer = BlockIndexer(selection, self.shape, self.shards or self.chunks, self._grid)
        self._write(indexer, value, fields)

    def _fill_buffer(self, indexer: Any, buffer: np.ndarray) -> np.ndarray:
        """Read the selection into `buffer` (shape indexer.drop_shape), in the indexer's order."""
        if buffer.size:
            self._chunks.read(indexer, buffer)
        return buffer

    def _check_fields(self, fields: str | Sequence[str]) -> None:
        names = self.dtype.names or ()
        for field in [fields] if isinstance(fields, str) else fields:
            if field not in names:
                raise SelectionError(
                    f"array {self.name!r} of dtype {self.dtype} has no field {field!r}"
                    + ("" if names else " (it is not a structured array)"))

    def _read(self, indexer: Any, out: np.ndarray | None = None, fields: Fields = None) -> Any:
        """The selection as a new array (a scalar when 0-d), or written into `out`."""
        if fields is not None:
            self._check_fields(fields)
        if out is not None and out.shape != indexer.shape:
            raise ShapeMismatchError(
                f"array {self.name!r}: out has shape {out.shape}, selection has shape {indexer.shape}")
        if out is not None and fields is None and not indexer.permuted and out.dtype == self.dtype:
            view = out.reshape(indexer.drop_shape)
            # Chunks decode straight into the caller's array when it reshapes without a copy.
            if np.may_share_memory(view, out) or not out.size:
                self._fill_buffer(indexer, view)
                return out
        buffer = self._fill_buffer(indexer, _memory.empty(indexer.drop_shape, self.dtype))
        data = indexer.unpermute(buffer).reshape(indexer.shape)
        if fields is not None:
            data = data[fields]
        if out is not None:
            out[...] = data
            return out
        if indexer.scalar:
            return data[()]
        return np.asfortranarray(data) if self.order == "F" else data

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
            value = np.broadcast_to(value, indexer.shape).reshape(indexer.drop_shape)
        except ValueError:
            raise ShapeMismatchError(
                f"array {self.name!r}: could not broadcast value of shape {value.shape} to "
                f"selection shape {indexer.shape}") from None
        if indexer.nitems:
            self._chunks.write(indexer, indexer.permute(value))

    def native_handle(self, cache_bytes: int = 0) -> Any:
        """A handle for reading and writing regions of this array from compiled code, on
        threads without the GIL (zarrcore/array_api.h, zarrcore/array_api.pxd).

        It is a snapshot of the array's shape, chunking, codecs and
        write_empty_chunks now.

        Parameters
        ----------
        cache_bytes : int, default 0
            Keep up to this many bytes of decoded chunks (inner chunks when sharded) for
            the handle's reads, shared by all its threads; 0: no cache. A cached chunk is
            used only while its file is unchanged (README, "From compiled code").

        Returns
        -------
        zarrcore.array_api.ArrayHandle
            The handle; close it (or leave its ``with`` block) once no thread uses it.

        Raises
        ------
        ZarrcoreError
            The compiled core cannot serve the array alone (its store or its codecs).
        ValueError
            `cache_bytes` is neither 0 nor at least one (inner) chunk's decoded size.
        """
        from .array_api import ArrayHandle

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
        if any(n > o for n, o in zip(new_shape, old_shape)):
            self._clear_outside(old_shape, new_shape)
        self._store_metadata(current.evolve(shape=new_shape))
        if any(n < o for n, o in zip(new_shape, old_shape)):
            self._clear_outside(new_shape, old_shape)

    def _clear_outside(self, kept: tuple[int, ...], extent: tuple[int, ...]) -> None:
        """Leave no stored data outside the box `kept` (from the origin): the storage blocks
        (shards or chunks) wholly outside it are deleted, the rest of those partly outside
        reset to fill (ChunkStore.reset_outside). Looks at the blocks over `extent` that reach
        outside `kept` when they are few, else at every stored block."""
        for coords in self._blocks_outside(kept, extent):
            self._chunks.reset_outside(coords, kept)

    def _blocks_outside(self, kept: tuple[int, ...],
                        extent: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """Coordinates of stored blocks that may hold data outside the box `kept`."""
        grid = self._grid
        counts = [-(-e // g) for e, g in zip(extent, grid)]
        inside = [min(k // g, n) for k, g, n in zip(kept, grid, counts)]
        if math.prod(counts) - math.prod(inside) <= _ENUMERATE_BLOCKS_MAX:
            for axis in range(self.ndim):
                # Inside on the axes before `axis`, outside on it, anywhere after it.
                ranges = ([range(n) for n in inside[:axis]] + [range(inside[axis], counts[axis])]
                          + [range(n) for n in counts[axis + 1:]])
                for coords in itertools.product(*ranges):
                    if self._store.exists(self._chunks.key(coords)):
                        yield coords
            return
        head = len(self._path) + 1 if self._path else 0
        for key in self._stored_chunk_keys():
            coords = tuple(int(c) for c in re.findall(r"\d+", key[head:]))
            if len(coords) != self.ndim or self._chunks.key(coords) != key:
                continue
            if any((c + 1) * g > k for c, g, k in zip(coords, grid, kept)):
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
            raise np.exceptions.AxisError(axis, self.ndim)
        with self._metadata_update() as current:
            shape = tuple(current.shape)
            others = [s for i, s in enumerate(shape) if i != axis]
            if [s for i, s in enumerate(data.shape) if i != axis] != others:
                raise ValueError(
                    f"data of shape {data.shape} does not match the array's shape {shape} "
                    f"off axis {axis}"
                )
            old = shape[axis]
            new_shape = shape[:axis] + (old + data.shape[axis],) + shape[axis + 1:]
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
        blocks = self.shards or self.chunks
        grid = [-(-s // b) for s, b in zip(self.shape, blocks)]
        for coords in itertools.product(*(range(n) for n in grid)):
            yield coords, tuple(
                slice(c * b, min((c + 1) * b, s)) for c, b, s in zip(coords, blocks, self.shape)
            )


def _read_arrays(value: Any) -> Any:
    """`value` with every Array in it (also in lists, tuples and dicts) read into numpy."""
    if isinstance(value, Array):
        return value[...]
    if isinstance(value, (list, tuple)):
        return type(value)(_read_arrays(v) for v in value)
    if isinstance(value, dict):
        return {k: _read_arrays(v) for k, v in value.items()}
    return value


def _foreign_types(values: Sequence[Any]) -> list[type]:
    """The types of `values` other than Array and numpy's that override ufuncs themselves."""
    return [type(v) for v in values if not isinstance(v, (Array, np.ndarray, np.generic))
            and hasattr(type(v), "__array_ufunc__")]


def _apply(func: Callable[..., Any], args: Any, kwargs: Any, foreign: Sequence[type]) -> Any:
    """`func` of `args` with the Arrays read; with dask arrays among them, the Arrays become
    dask arrays too (the result stays lazy); NotImplemented for other foreign types, which
    then take their own turn."""
    if not foreign:
        return func(*_read_arrays(args), **_read_arrays(kwargs))
    if all(hasattr(t, "__dask_graph__") for t in foreign):
        from .dask import arrays_as_dask

        return func(*arrays_as_dask(args), **arrays_as_dask(kwargs))
    return NotImplemented


def _shape_of(a: Any) -> tuple[int, ...]:
    return a.shape if isinstance(a, Array) else np.shape(a)


# numpy functions that need an Array's metadata, never its data.
_METADATA_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.shape: _shape_of,
    np.ndim: lambda a: len(_shape_of(a)),
    np.size: lambda a, axis=None: (math.prod(_shape_of(a)) if axis is None
                                   else _shape_of(a)[axis]),
    np.result_type: lambda *args: np.result_type(
        *(a.dtype if isinstance(a, Array) else a for a in args)),
}


def _binary_operator(ufunc: np.ufunc, name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def forward(self: Array, other: Any) -> Any:
        return ufunc(self, other)

    def reflected(self: Array, other: Any) -> Any:
        return ufunc(other, self)

    forward.__name__, reflected.__name__ = f"__{name}__", f"__r{name}__"
    return forward, reflected


for _ufunc, _name in [(np.add, "add"), (np.subtract, "sub"), (np.multiply, "mul"),
                      (np.true_divide, "truediv"), (np.floor_divide, "floordiv"),
                      (np.remainder, "mod"), (np.power, "pow"), (np.matmul, "matmul"),
                      (np.bitwise_and, "and"), (np.bitwise_or, "or"), (np.bitwise_xor, "xor"),
                      (np.left_shift, "lshift"), (np.right_shift, "rshift")]:
    _forward, _reflected = _binary_operator(_ufunc, _name)
    setattr(Array, _forward.__name__, _forward)
    setattr(Array, _reflected.__name__, _reflected)
for _ufunc, _name in [(np.less, "lt"), (np.less_equal, "le"), (np.greater, "gt"),
                      (np.greater_equal, "ge")]:
    setattr(Array, f"__{_name}__", _binary_operator(_ufunc, _name)[0])
for _ufunc, _name in [(np.negative, "neg"), (np.positive, "pos"), (np.absolute, "abs"),
                      (np.invert, "invert")]:
    setattr(Array, f"__{_name}__", lambda self, _ufunc=_ufunc: _ufunc(self))


class _Selector:
    """`a.oindex`, `a.vindex`, `a.blocks`: square brackets over a get/set selection method."""

    def __init__(self, get: Callable[..., Any], set: Callable[..., None]) -> None:
        self._get, self._set = get, set

    def __getitem__(self, selection: Selection) -> Any:
        """Read the selection."""
        fields, selection = pop_fields(selection)
        return self._get(selection, fields=fields)

    def __setitem__(self, selection: Selection, value: npt.ArrayLike) -> None:
        """Write `value` to the selection."""
        fields, selection = pop_fields(selection)
        self._set(selection, value, fields=fields)


class ArrayInfo:
    """A printable summary of an array; `complete` adds what needs a listing of the store."""

    def __init__(self, array: Array, complete: bool = True) -> None:
        self._array = array
        self._complete = complete

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready values; codecs as the node's metadata names them (numcodecs
        configurations for format 2).

        Returns
        -------
        dict
            name, type, zarr_format, data_type, shape, chunk_shape, shard_shape, order,
            fill_value, the codecs, nbytes and nchunks; when complete, nbytes_stored,
            storage_ratio and nchunks_initialized too.
        """
        a = self._array
        meta: Any = a.metadata
        if a.zarr_format == 2:
            codecs = {"filters": meta.filters, "compressor": meta.compressor}
        else:
            codecs = {"codecs": [c.to_json() for c in a.codecs]}
        out = {
            "name": a.name, "type": "Array", "zarr_format": a.zarr_format,
            "data_type": str(a.dtype), "shape": list(a.shape), "chunk_shape": list(a.chunks),
            "shard_shape": None if a.shards is None else list(a.shards), "order": a.order,
            "fill_value": meta.data_type.fill_value_to_json(meta.fill_value, a.zarr_format),
            **codecs, "nbytes": a.nbytes, "nchunks": a.nchunks,
        }
        if self._complete:
            stored = a.nbytes_stored()
            out.update(nbytes_stored=stored, storage_ratio=a.nbytes / stored if stored else None,
                       nchunks_initialized=a.nchunks_initialized)
        return out

    def __repr__(self) -> str:
        d = self.to_dict()
        codecs = ([("Filters", d["filters"]), ("Compressor", d["compressor"])] if "filters" in d
                  else [("Codecs", d["codecs"])])
        rows = [
            ("Type", "Array"),
            ("Zarr format", d["zarr_format"]),
            ("Data type", self._array.dtype),
            ("Shape", self._array.shape),
            ("Chunk shape", self._array.chunks),
            ("Shard shape", self._array.shards),
            ("Order", d["order"]),
            ("Fill value", self._array.fill_value),
            *codecs,
            ("No. bytes", f"{d['nbytes']} ({format_bytes(d['nbytes'])})"),
        ]
        if self._complete:
            stored = d["nbytes_stored"]
            rows += [
                ("No. bytes stored", f"{stored} ({format_bytes(stored)})"),
                ("Storage ratio", f"{d['storage_ratio']:.1f}" if stored else "-"),
                ("Chunks initialized", f"{d['nchunks_initialized']}/{d['nchunks']}"),
            ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}} : {v}" for k, v in rows)

    __str__ = __repr__


def _config_items(config: Any) -> dict[str, Any]:
    """The settings given in zarr-python's ArrayConfig form: a dict, or an object with such
    attributes."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    return {name: getattr(config, name) for name in ("write_empty_chunks", "order")
            if hasattr(config, name)}


def _array_config(config: Any) -> dict[str, Any]:
    """An array's own settings, checked, from `_config_items`' forms; an order not given is
    zarrcore.config's now (zarr-python's "array.order" when the array is opened)."""
    config = _config_items(config)
    unknown = set(config) - {"write_empty_chunks", "order"}
    if unknown:
        raise TypeError(f"unknown array config {sorted(unknown)}")
    write_empty = config.get("write_empty_chunks")
    order = config.get("order")
    if order not in (None, "C", "F"):
        raise ValueError(f"array config: order must be 'C' or 'F', not {order!r}")
    if order is None:
        from .config import config as global_config

        order = global_config.array_order
    return {"write_empty_chunks": None if write_empty is None else bool(write_empty), "order": order}
