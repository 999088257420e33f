"""Creating and opening arrays: zarr-python's top-level functions for them (`create_array`,
`open_array`, `create`, `from_array`, `zeros` and the others, and their `*_like` forms). What
their arguments mean is `array_specs.py`'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .array import Array, make_array
from .array_specs import NewArrayOptions, create_spec, format_for_new, new_array_spec, open_spec

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import ChunksLike, CodecLike, CodecsLike, ShapeLike, StoreLike

__all__ = [
    "array",
    "create",
    "create_array",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "like_kwargs",
    "ones",
    "ones_like",
    "open_array",
    "zeros",
    "zeros_like",
]


# -- creating and opening arrays (zarr-python's top-level functions) ------------------------------


def create_array(
    store: StoreLike = None,
    *,
    name: str | None = None,
    shape: ShapeLike | None = None,
    dtype: npt.DTypeLike | None = None,
    data: npt.ArrayLike | None = None,
    chunks: ChunksLike = None,
    shards: ShapeLike | Mapping[str, Any] | Literal["auto"] | None = None,
    filters: CodecsLike = None,
    serializer: CodecsLike = "auto",
    compressors: CodecsLike = "auto",
    fill_value: Any = None,
    order: Literal["C", "F"] | None = None,
    zarr_format: int | None = 3,
    attributes: Mapping[str, Any] | None = None,
    chunk_key_encoding: Any = None,
    dimension_names: Sequence[str | None] | None = None,
    overwrite: bool = False,
    path: str | None = None,
    config: Mapping[str, Any] | None = None,
    write_data: bool = True,
    storage_options: dict[str, Any] | None = None,
) -> Array:
    """Create an array; `store` is anything make_store takes (a path, a URL, a dict, a Store,
    another library's store), configured by `storage_options` when it is a URL. With `data`,
    the shape and dtype come from it, and its values are written unless `write_data` is
    False.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    name, path : str, optional
        The array's path in the store (`path` wins); groups above it are created.
    shape : int or tuple of int
        The shape (or give `data`).
    dtype : dtype-like, optional
        The data type (default float64), numpy's or zarr's name for it.
    data : array_like, optional
        Values to take the shape and dtype from, and to write.
    chunks : int, tuple of int or "auto", optional
        The chunk shape (inner chunks when sharded); -1 is a whole axis; None or "auto"
        guesses them as zarr-python does (inner chunks: about 1 MiB, dividing the shard).
    shards : tuple of int, dict or "auto", optional
        The shard shape, or {"shape": ..., "index_location": "start" | "end"}; None for
        no sharding (format 3 only); "auto" sizes them as zarr-python 3.4 does
        (`config.target_shard_size_bytes`).
    filters, serializer, compressors : codec, list of codecs, "auto" or None, optional
        The codecs of each stage, as codec objects or v3 JSON (for format 2: numcodecs
        configurations); "auto" is the default (bytes, then zstd level 0).
    fill_value : scalar, optional
        The value of elements never written (default: the type's zero, empty or NaT).
    order : {"C", "F"}, optional
        The memory order of chunks (format 2; default `zarrcore.config.array_order`), which
        reads of it return too; a format 3 array warns and ignores it, as zarr-python does
        (see `config`).
    zarr_format : {2, 3}, optional
        The format to write; None: `config.default_zarr_format`.
    attributes : Mapping, optional
        The array's attributes (strict JSON).
    chunk_key_encoding : dict, optional
        v3: {"name": "default" | "v2", "separator": "/" | "."}; v2: the dimension separator.
    dimension_names : sequence of str or None, optional
        One name (or None) per dimension (format 3).
    overwrite : bool, optional
        Replace a node already at the path.
    config : Mapping, optional
        The array's own settings, as zarr-python's: `write_empty_chunks` and `order`; see
        `Array.with_config`.
    write_data : bool, optional
        Write `data`'s values (True), or only take its shape and dtype.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Array

    Raises
    ------
    TypeError
        Neither `shape` nor `data`.
    ValueError
        Both `data` and `shape` or `dtype`; a negative shape, chunks that do not fit the
        shape, an `order` other than C or F, shards with format 2, another format, or
        dimension names not one per dimension.
    MetadataError
        Codecs, a data type or a fill value that cannot be stored, or sizes over the limits
        of `zarrcore.config` (UnknownCodecError and UnknownDataTypeError are ones).
    NodeExistsError
        A node exists at the path and `overwrite` is False.
    ReadOnlyError
        The store is read-only.
    """
    return make_array(
        new_array_spec(
            NewArrayOptions(
                store,
                name=name,
                shape=shape,
                dtype=dtype,
                data=data,
                chunks=chunks,
                shards=shards,
                filters=filters,
                serializer=serializer,
                compressors=compressors,
                fill_value=fill_value,
                order=order,
                zarr_format=zarr_format,
                attributes=attributes,
                chunk_key_encoding=chunk_key_encoding,
                dimension_names=dimension_names,
                overwrite=overwrite,
                path=path,
                config=config,
                write_data=write_data,
                storage_options=storage_options,
            )
        )
    )


def create(
    shape: ShapeLike,
    *,
    chunks: ChunksLike | bool = None,
    dtype: npt.DTypeLike | None = None,
    compressor: CodecLike | Literal["auto"] = "auto",
    fill_value: Any = None,
    order: Literal["C", "F"] | None = None,
    store: StoreLike = None,
    synchronizer: Any = None,
    overwrite: bool = False,
    path: str | None = None,
    chunk_store: StoreLike = None,
    filters: Iterable[Any] | None = None,
    cache_metadata: bool | None = None,
    cache_attrs: bool | None = None,
    read_only: bool | None = None,
    object_codec: CodecLike | None = None,
    dimension_separator: Literal[".", "/"] | None = None,
    write_empty_chunks: bool | None = None,
    zarr_version: int | None = None,
    zarr_format: int | None = None,
    meta_array: Any = None,
    attributes: Mapping[str, Any] | None = None,
    chunk_shape: ShapeLike | None = None,
    chunk_key_encoding: Any = None,
    codecs: Iterable[Any] | None = None,
    dimension_names: Sequence[str | None] | None = None,
    storage_options: dict[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Array:
    """zarr-python's `create` (the zarr 2 style of creating an array): format 2 arrays take
    one `compressor`, `filters`, `object_codec`, `order` and `dimension_separator`; format 3
    arrays a whole `codecs` list and `chunk_key_encoding`.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    chunks, chunk_shape : int, tuple of int or bool, optional
        The chunk shape; None or True guesses it, False is one chunk.
    dtype : dtype-like, optional
        The data type (default float64).
    compressor : codec, "auto" or None, optional
        Format 2: the compressor ("auto": zstd level 0).
    fill_value : scalar, optional
        The value of elements never written.
    order : {"C", "F"}, optional
        Format 2: the memory order of chunks.
    store : str, os.PathLike, dict, Store or None
        Where to create it (None: a new memory store).
    synchronizer, cache_metadata, cache_attrs, meta_array : optional
        Accepted and ignored, as in zarr-python 3.
    overwrite : bool, optional
        Replace a node already at the path.
    path : str, optional
        The array's path in the store.
    chunk_store : optional
        A separate store for chunks: not supported (as in zarr-python 3).
    filters : list of codecs, optional
        Format 2: numcodecs filters.
    read_only : bool, optional
        Return a read-only handle on the new array.
    object_codec : codec, optional
        Format 2: the object codec of a variable-length or object dtype, put first among the
        filters.
    dimension_separator : {".", "/"}, optional
        Format 2: the chunk key separator.
    write_empty_chunks : bool, optional
        The array's own `write_empty_chunks` setting.
    zarr_version, zarr_format : {2, 3}, optional
        The format (default 3).
    attributes : Mapping, optional
        The array's attributes.
    chunk_key_encoding : dict or tuple, optional
        Format 3: {"name", "separator"} or (name, separator).
    codecs : list of codecs, optional
        Format 3: the whole codec chain (default bytes then zstd).
    dimension_names : sequence of str or None, optional
        Format 3: one name per dimension.
    storage_options : dict, optional
        Options of the store a URL names.
    config : Mapping, optional
        The array's own settings (see `Array.with_config`).
    **kwargs
        Anything else is refused, as a TypeError.

    Returns
    -------
    Array

    Raises
    ------
    ValueError
        Format 2 settings given for format 3 or the other way round, or `zarr_version` and
        `zarr_format` that differ.
    NotImplementedError
        A separate `chunk_store`.
    """
    return make_array(
        create_spec(
            shape,
            chunks=chunks,
            dtype=dtype,
            compressor=compressor,
            fill_value=fill_value,
            order=order,
            store=store,
            synchronizer=synchronizer,
            overwrite=overwrite,
            path=path,
            chunk_store=chunk_store,
            filters=filters,
            cache_metadata=cache_metadata,
            cache_attrs=cache_attrs,
            read_only=read_only,
            object_codec=object_codec,
            dimension_separator=dimension_separator,
            write_empty_chunks=write_empty_chunks,
            zarr_version=zarr_version,
            zarr_format=zarr_format,
            meta_array=meta_array,
            attributes=attributes,
            chunk_shape=chunk_shape,
            chunk_key_encoding=chunk_key_encoding,
            codecs=codecs,
            dimension_names=dimension_names,
            storage_options=storage_options,
            config=config,
            **kwargs,
        )
    )


def open_array(
    store: StoreLike = None,
    *,
    mode: str = "a",
    path: str | None = None,
    zarr_format: int | None = None,
    name: str | None = None,
    storage_options: dict[str, Any] | None = None,
    cache_bytes: int | None = None,
    shared_cache: bool = False,
    recheck_cached_data: bool | str | float = True,
    **kwargs: Any,
) -> Array:
    """Open an existing array, or create one (modes 'w', 'w-', 'a') when `shape` is given.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        As `open` takes it.
    path, name : str, optional
        The array's path in the store (`path` wins).
    zarr_format : {2, 3}, optional
        The format to open or create; None finds it (creates `config.default_zarr_format`'s).
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    cache_bytes : int, optional
        The array's decoded-chunk cache, in bytes (its `config` "cache_bytes"); None takes
        `zarrcore.config.cache_bytes`. See `Array.cache_info`.
    shared_cache : bool, default False
        Keep that cache in memory shared with the processes the array goes to (pickled, or
        inherited by fork: a data loader's workers), all within the one budget, so a chunk
        any of them decoded is a hit for all (its `config` "shared_cache"). Linux only.
    recheck_cached_data : bool, "open" or float, default True
        Which cached chunks (and shard indexes) a read takes from an object store's cache
        without asking the store whether they changed: True, none (every hit costs a
        request); False, all; "open", those found since the array was opened (in this
        process); a time (seconds since the epoch), those found since then (its `config`
        "recheck_cached_data"). Anything else needs mode "r": other writers' changes to the
        chunks cached are not seen.
    **kwargs
        For creating, as `create_array` takes them (`shape`, `dtype`, ...); `config` is the
        array's own settings when it exists too.

    Returns
    -------
    Array

    Raises
    ------
    ValueError
        An unknown mode.
    NodeNotFoundError
        No array there and none to create (ArrayNotFoundError: a group is there).
    NodeExistsError
        Something at the path in mode w- (ContainsArrayError, ContainsGroupError).
    """
    return make_array(
        open_spec(
            store,
            mode=mode,
            path=path,
            zarr_format=zarr_format,
            name=name,
            storage_options=storage_options,
            cache_bytes=cache_bytes,
            shared_cache=shared_cache,
            recheck_cached_data=recheck_cached_data,
            **kwargs,
        )
    )


def _create(store: StoreLike, shape: ShapeLike, kwargs: dict[str, Any]) -> Array:
    # As zarr-python's `create`, which these stand for: the format defaults to
    # config.default_zarr_format (create_array's to 3).
    kwargs.setdefault("zarr_format", None)
    return create_array(store, shape=shape, **kwargs)


def array(data: npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """An array holding `data`, written.

    Parameters
    ----------
    data : array_like
        The values: they give the shape and (unless `dtype` is given) the dtype.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them (`dtype`, `chunks`, `name`, ...).

    Returns
    -------
    Array
    """
    data = np.asanyarray(data)
    kwargs.setdefault("dtype", data.dtype)
    arr = _create(store, data.shape, kwargs)
    arr[...] = data
    return arr


def full(shape: ShapeLike, fill_value: Any, store: StoreLike = None, **kwargs: Any) -> Array:
    """An array of `shape` filled with `fill_value`; nothing is stored until written.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    fill_value : scalar
        The value of every element not written.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them (`dtype`, `chunks`, `name`, ...).

    Returns
    -------
    Array
    """
    return _create(store, shape, {**kwargs, "fill_value": fill_value})


def zeros(shape: ShapeLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """`full` with 0.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them (`dtype`, `chunks`, `name`, ...).

    Returns
    -------
    Array
    """
    return full(shape, 0, store, **kwargs)


def ones(shape: ShapeLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """`full` with 1.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them (`dtype`, `chunks`, `name`, ...).

    Returns
    -------
    Array
    """
    return full(shape, 1, store, **kwargs)


def empty(shape: ShapeLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """`full` with the data type's default fill value.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them (`dtype`, `chunks`, `name`, ...).

    Returns
    -------
    Array
    """
    return _create(store, shape, kwargs)


def like_kwargs(a: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """`kwargs` with what `a` gives a new array like it: its dtype, and its chunks and format
    when an Array (what `kwargs` holds wins)."""
    kwargs.setdefault("dtype", a.dtype)
    if isinstance(a, Array):
        kwargs.setdefault("chunks", a.chunks)
        kwargs.setdefault("zarr_format", a.metadata.zarr_format)  # as zarr-python 3.4
    return kwargs


# The *_like functions: `kwargs`, as `create_array` takes them, override what `a` gives.
def zeros_like(a: Array | npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """`zeros` of the shape and dtype of `a`, and its chunks and format when an Array.

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks and format when an Array.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return _create(store, np.shape(a), {**like_kwargs(a, kwargs), "fill_value": 0})


def ones_like(a: Array | npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """`ones` of the shape and dtype of `a`, and its chunks and format when an Array.

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks and format when an Array.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return _create(store, np.shape(a), {**like_kwargs(a, kwargs), "fill_value": 1})


def empty_like(a: Array | npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """`empty` of the shape and dtype of `a`, and its chunks and format when an Array.

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks and format when an Array.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return _create(store, np.shape(a), like_kwargs(a, kwargs))


def full_like(
    a: Array | npt.ArrayLike, fill_value: Any, store: StoreLike = None, **kwargs: Any
) -> Array:
    """`full` of the shape and dtype of `a`, and its chunks and format when an Array.

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks and format when an Array.
    fill_value : scalar
        The value of every element not written.
    store : StoreLike, optional
        Where the array is created, as `create_array` takes it (None: a new memory store).
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return _create(store, np.shape(a), {**like_kwargs(a, kwargs), "fill_value": fill_value})


# Settings that from_array's "keep" takes from a source Array.
_KEPT = ("chunks", "shards", "filters", "compressors", "serializer")


def from_array(
    store: StoreLike = None,
    *,
    data: Array | npt.ArrayLike,
    write_data: bool = True,
    name: str | None = None,
    chunks: Any = "keep",
    shards: Any = "keep",
    filters: Any = "keep",
    compressors: Any = "keep",
    serializer: Any = "keep",
    fill_value: Any = None,
    order: Literal["C", "F"] | None = None,
    zarr_format: int | None = None,
    attributes: Mapping[str, Any] | None = None,
    chunk_key_encoding: Any = None,
    dimension_names: Sequence[str | None] | None = None,
    overwrite: bool = False,
    config: Mapping[str, Any] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Array:
    """A new array like `data` (an Array, or anything numpy takes), holding its values unless
    `write_data` is False. "keep" takes a setting from a source Array (else the default);
    an Array source also gives the fill value, format, attributes and dimension names.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    data : Array or array_like
        The source; an Array is copied a slab of blocks at a time, never read whole.
    write_data : bool, optional
        Copy the values (True), or only create the array.
    name : str, optional
        The new array's path in the store.
    chunks, shards, filters, compressors, serializer : optional
        As `create_array` takes them, or "keep" (the default).
    fill_value, order, zarr_format, attributes, chunk_key_encoding, dimension_names : optional
        As `create_array` takes them; None takes them from an Array source.
    overwrite : bool, optional
        Replace a node already at the path.
    config : Mapping, optional
        As `create_array` takes it.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Array

    Raises
    ------
    NodeExistsError
        A node exists at the path and `overwrite` is False.
    ValueError, MetadataError
        As `create_array` raises them.
    """
    settings = dict(
        chunks=chunks,
        shards=shards,
        filters=filters,
        compressors=compressors,
        serializer=serializer,
    )
    if isinstance(data, Array):
        source = data
        zarr_format = zarr_format or source.zarr_format
        same_format = zarr_format == source.zarr_format
        for key in _KEPT:
            if isinstance(settings[key], str) and settings[key] == "keep":
                settings[key] = (
                    getattr(source, key) if same_format or key in ("chunks", "shards") else "auto"
                )
        if zarr_format == 2:
            settings.pop("serializer")
            settings["shards"] = None
            settings["compressors"] = settings["compressors"] or None
        if fill_value is None:
            fill_value = source.fill_value
        if attributes is None:
            attributes = dict(source.attrs)
        if dimension_names is None and zarr_format == 3:
            dimension_names = getattr(source.metadata, "dimension_names", None)
        dtype = source.dtype
    else:
        source = np.asanyarray(data)
        zarr_format = format_for_new(zarr_format)
        settings = {
            k: (None if k in ("chunks", "shards") else "auto")
            if isinstance(v, str) and v == "keep"
            else v
            for k, v in settings.items()
        }
        if zarr_format == 2:
            settings.pop("serializer")
        dtype = source.dtype
    if settings.get("filters") == "auto":
        settings["filters"] = None
    array = create_array(
        store,
        name=name,
        shape=source.shape,
        dtype=dtype,
        fill_value=fill_value,
        order=order,
        zarr_format=zarr_format,
        attributes=attributes,
        chunk_key_encoding=chunk_key_encoding,
        dimension_names=dimension_names,
        overwrite=overwrite,
        config=config,
        storage_options=storage_options,
        **settings,
    )
    if write_data:
        array[...] = source  # an Array source streams, block by block
    return array
