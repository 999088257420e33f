"""Top-level functions, named and behaving as in zarr-python 3."""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import nodes
from .array import Array
from .codecs import ZstdCodec
from .codecs.base import ChunkSpec
from .codecs.sharding import ShardingCodec
from .config import config as global_config
from .errors import NodeExistsError, NodeNotFoundError, ObjectDataTypeError
from .group import Group, open_node
from .metadata.common import check_attributes
from .pipeline import CodecChain
from .storage import make_store

if TYPE_CHECKING:
    import numpy.typing as npt

    from ._types import ChunksLike, CodecLike, CodecsLike, ShapeLike, StoreLike
    from .storage import Store

_MODES = ("r", "r+", "a", "w", "w-")
# zarr-python's chunk guess (h5py's): its target grows with the array, by this step per
# tenfold growth past 1 MiB, between the bounds.
GUESS_STEP_BYTES = 256 << 10
GUESS_MIN_BYTES = 128 << 10
GUESS_MAX_BYTES = 64 << 20


def guess_chunks(shape: Sequence[int], itemsize: int,
                 max_bytes: int = GUESS_MAX_BYTES) -> tuple[int, ...]:
    """The chunks zarr-python 3 guesses: a target size of 256 KiB times 2**log10(the array's
    MiB), kept within 128 KiB and `max_bytes`, reached by halving the axes in turn (the first
    first) until the chunk is below the target or within half of it, and below `max_bytes`."""
    chunks = [max(1, s) for s in shape]
    if itemsize <= 0 or not chunks:
        return tuple(chunks)
    total = math.prod(chunks) * itemsize
    target = min(max(GUESS_STEP_BYTES * 2 ** math.log10(total / (1 << 20)), GUESS_MIN_BYTES),
                 max_bytes)
    step = 0
    while True:
        size = math.prod(chunks) * itemsize
        if (size < target or abs(size - target) / target < 0.5) and size < max_bytes:
            break
        if size == itemsize:  # one element is already too large
            break
        axis = step % len(chunks)
        chunks[axis] = math.ceil(chunks[axis] / 2)
        step += 1
    return tuple(chunks)


def _normalize_shape(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"shape must be non-negative, got {shape}")
    return shape


def _normalize_chunks(chunks: ChunksLike, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    if chunks is None or chunks == "auto":
        return guess_chunks(shape, itemsize)
    if isinstance(chunks, (int, np.integer)):
        chunks = (int(chunks),) * len(shape)
    chunks = tuple(int(c) for c in chunks)
    if len(chunks) != len(shape):
        raise ValueError(f"chunks {chunks} do not match the {len(shape)} dimensions of shape {shape}")
    # -1 means the whole axis, as in zarr-python.
    chunks = tuple(max(1, s) if c == -1 else c for c, s in zip(chunks, shape))
    if any(c < 1 for c in chunks):
        raise ValueError(f"chunk sizes must be positive, got {chunks}")
    return chunks


def _shard(codecs: list[Any], chunks: tuple[int, ...], shards: Any, shape: tuple[int, ...],
           itemsize: int, auto_chunks: bool) -> tuple[list[Any], tuple[int, ...]]:
    """(codecs, chunk grid shape) of an array sharded as zarr-python 3 writes it: one
    sharding_indexed codec holding `codecs`, and the shards as the grid's chunks.

    `shards` is a shape or {"shape": ..., "index_location": "start"|"end"}.
    """
    index_location = "end"
    if isinstance(shards, dict):
        index_location = shards.get("index_location", "end")
        shards = shards["shape"]
    shard_shape = _normalize_chunks(shards, shape, itemsize)
    if auto_chunks:
        # The largest divisor of each shard side not above the guessed chunk side; chunks
        # of about 1 MiB, as zarr-python aims at inside shards.
        guess = guess_chunks(shard_shape, itemsize, max_bytes=1 << 20)
        chunks = tuple(max(d for d in range(1, c + 1) if s % d == 0) for c, s in zip(guess, shard_shape))
    if any(s % c for s, c in zip(shard_shape, chunks)):
        raise ValueError(f"the shard shape {shard_shape} must be a multiple of the chunk shape {chunks}")
    return [ShardingCodec(chunks, codecs, index_location=index_location)], shard_shape


def _codec_list(value: Any, default: Iterable[Any]) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str) and value == "auto":
        return list(default)
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _prepare_path(store: Store, path: str, mode_overwrite: bool) -> None:
    if nodes.node_exists(store, path):
        if not mode_overwrite:
            raise NodeExistsError(f"a node already exists at path {path!r} in {store!r}")
        store.delete_prefix(path)  # the node's metadata keys too: they lie under `path`/


def _fill_value_for(data_type: Any, fill_value: Any) -> Any:
    if fill_value is None:
        return data_type.default_fill_value()
    return data_type.cast_fill_value(fill_value)


def _data_type(dtype: Any, zarr_format: int, filters: Any, compressors: Any) -> Any:
    """The DataType of a new array; numpy's object dtype in format 2 takes the one its object
    codec names (as zarr 2 did)."""
    from .metadata import dtype_from_numpy

    try:
        return dtype_from_numpy(dtype)
    except ObjectDataTypeError:
        if zarr_format != 2:
            raise
        from .codecs.v2 import object_data_type

        data_type = object_data_type(filters, compressors)
        if data_type is None:
            raise
        return data_type


def create_array(store: StoreLike = None, *, name: str | None = None,
                 shape: ShapeLike | None = None, dtype: npt.DTypeLike | None = None,
                 data: npt.ArrayLike | None = None, chunks: ChunksLike = None,
                 shards: ShapeLike | Mapping[str, Any] | None = None, filters: CodecsLike = None,
                 serializer: CodecLike | Literal["auto"] = "auto", compressors: CodecsLike = "auto",
                 fill_value: Any = None, order: Literal["C", "F"] | None = None,
                 zarr_format: int = 3, attributes: Mapping[str, Any] | None = None,
                 chunk_key_encoding: Any = None,
                 dimension_names: Sequence[str | None] | None = None, overwrite: bool = False,
                 path: str | None = None, config: Mapping[str, Any] | None = None,
                 write_data: bool = True, storage_options: dict[str, Any] | None = None) -> Array:
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
    shards : tuple of int or dict, optional
        The shard shape, or {"shape": ..., "index_location": "start" | "end"}; None for
        no sharding (format 3 only).
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
        The format to write.
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
    if data is not None:
        if shape is not None or dtype is not None:
            raise ValueError("give either data, or shape and dtype")
        data = np.asanyarray(data)
        shape, dtype = data.shape, data.dtype
    if shape is None:
        raise TypeError("create_array needs a shape (or data)")
    dtype = "float64" if dtype is None else dtype
    from .metadata import ArrayMetadataV3, ChunkKeyEncoding
    from .metadata.v3 import default_codecs

    check_attributes(attributes or {})
    path = nodes.normalize_path(path if path is not None else name)
    store = make_store(store, storage_options=storage_options,
                       mode=_store_mode("w" if overwrite else "a", path))
    shape = _normalize_shape(shape)
    data_type = _data_type(dtype, zarr_format, filters, compressors)
    np_dtype = data_type.numpy_dtype
    auto_chunks = chunks is None or (isinstance(chunks, str) and chunks == "auto")
    chunks = _normalize_chunks(chunks, shape, np_dtype.itemsize)
    if order not in (None, "C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    if shards is not None and zarr_format == 2:
        raise ValueError("sharding needs zarr_format=3")
    if order is not None and zarr_format == 3:
        warnings.warn("order has no effect on a Zarr format 3 array: its chunks are C order; "
                      "the memory order of what reads return is config={'order': ...}",
                      RuntimeWarning, stacklevel=2)
    if zarr_format == 2:
        from .codecs.v2 import create_metadata_v2

        metadata = create_metadata_v2(
            shape=shape, data_type=data_type, chunks=chunks, filters=filters,
            compressors=compressors, fill_value=fill_value, order=order or global_config.array_order,
            attributes=attributes or {}, chunk_key_encoding=chunk_key_encoding,
        )
    elif zarr_format == 3:
        fill = _fill_value_for(data_type, fill_value)
        serializers = _codec_list(serializer, default_codecs(data_type))
        codecs = [
            *_codec_list(filters, []),
            *serializers,
            *_codec_list(compressors, [ZstdCodec(level=0, checksum=False)]),
        ]
        if shards is not None:
            codecs, chunks = _shard(codecs, chunks, shards, shape, np_dtype.itemsize, auto_chunks)
        chain = CodecChain(codecs, ChunkSpec(chunks, np_dtype, fill))
        if isinstance(chunk_key_encoding, dict) or chunk_key_encoding is None:
            cke_json = dict(chunk_key_encoding or {"name": "default"})
            # zarr-python's form puts the separator beside the name.
            if "separator" in cke_json and "configuration" not in cke_json:
                cke_json["configuration"] = {"separator": cke_json.pop("separator")}
            cke = ChunkKeyEncoding.from_json(cke_json, "chunk_key_encoding")
        else:
            cke = chunk_key_encoding
        if dimension_names is not None:
            dimension_names = tuple(dimension_names)
            if len(dimension_names) != len(shape):
                raise ValueError("dimension_names must have one entry per dimension")
        metadata = ArrayMetadataV3(
            shape=shape, data_type=data_type, chunk_shape=chunks, chunk_key_encoding=cke,
            fill_value=fill, codecs=chain.to_json(), attributes=dict(attributes or {}),
            dimension_names=dimension_names, storage_transformers=[], extra={},
        )
    else:
        raise ValueError(f"zarr_format must be 2 or 3, not {zarr_format!r}")
    # (Checks codecs and limits before anything is written.)
    array = Array(store, path, metadata, config=config)
    _prepare_path(store, path, overwrite)
    nodes.ensure_parent_groups(store, path, zarr_format)
    nodes.write_metadata(store, path, metadata)
    if data is not None and write_data:
        array[...] = data
    return array


def _split_codecs(codecs: Iterable[Any]) -> dict[str, Any]:
    """A whole v3 codec list as create_array's filters, serializer and compressors."""
    from .codecs import ArrayArrayCodec, ArrayBytesCodec, codec_from_json

    stages: dict[str, list[Any]] = {"filters": [], "serializer": [], "compressors": []}
    for codec in codecs:
        built = codec_from_json(codec.to_dict() if hasattr(codec, "to_dict") else codec)
        stage = ("filters" if isinstance(built, ArrayArrayCodec) else
                 "serializer" if isinstance(built, ArrayBytesCodec) else "compressors")
        stages[stage].append(built)
    if len(stages["serializer"]) != 1:
        raise ValueError(f"codecs must hold one array->bytes codec, got {len(stages['serializer'])}")
    return {**stages, "serializer": stages["serializer"][0]}


def create(shape: ShapeLike, *, chunks: ChunksLike | bool = None, dtype: npt.DTypeLike | None = None,
           compressor: CodecLike | Literal["auto"] = "auto", fill_value: Any = None,
           order: Literal["C", "F"] | None = None, store: StoreLike = None,
           synchronizer: Any = None, overwrite: bool = False, path: str | None = None,
           chunk_store: StoreLike = None, filters: Iterable[Any] | None = None,
           cache_metadata: bool | None = None, cache_attrs: bool | None = None,
           read_only: bool | None = None, object_codec: CodecLike | None = None,
           dimension_separator: Literal[".", "/"] | None = None,
           write_empty_chunks: bool | None = None, zarr_version: int | None = None,
           zarr_format: int | None = None, meta_array: Any = None,
           attributes: Mapping[str, Any] | None = None, chunk_shape: ShapeLike | None = None,
           chunk_key_encoding: Any = None, codecs: Iterable[Any] | None = None,
           dimension_names: Sequence[str | None] | None = None,
           storage_options: dict[str, Any] | None = None,
           config: Mapping[str, Any] | None = None, **kwargs: Any) -> Array:
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
    if kwargs:
        raise TypeError(f"create() got unexpected keyword arguments {sorted(kwargs)}")
    if zarr_version is not None and zarr_format is not None and zarr_version != zarr_format:
        raise ValueError(f"zarr_version {zarr_version} and zarr_format {zarr_format} differ")
    zarr_format = zarr_format or zarr_version or 3
    if chunk_store is not None:
        raise NotImplementedError("a separate chunk_store is not supported")
    chunks = chunk_shape if chunk_shape is not None else chunks
    if chunks is True:
        chunks = None
    elif chunks is False:
        chunks = _normalize_shape(shape)
    array_config = {**(config or {}), **({} if write_empty_chunks is None else
                                         {"write_empty_chunks": write_empty_chunks})}
    common = dict(shape=shape, chunks=chunks, dtype=dtype, fill_value=fill_value, store=store,
                  path=path, overwrite=overwrite, attributes=attributes, config=array_config,
                  storage_options=storage_options, zarr_format=zarr_format)
    if zarr_format == 2:
        if codecs is not None or chunk_key_encoding is not None or dimension_names is not None:
            raise ValueError("codecs, chunk_key_encoding and dimension_names are for zarr_format 3; "
                             "format 2 takes compressor, filters and dimension_separator")
        filters = list(filters or [])
        if object_codec is not None:
            filters.insert(0, object_codec)
        array = create_array(**common, filters=filters or None, compressors=compressor,
                             order=order, chunk_key_encoding=dimension_separator)
    else:
        for name, value in (("compressor", None if compressor == "auto" else compressor),
                            ("filters", filters), ("object_codec", object_codec),
                            ("dimension_separator", dimension_separator), ("order", order)):
            if value is not None:
                raise ValueError(f"{name} is for zarr_format 2; format 3 takes codecs (and "
                                 f"chunk_key_encoding, config={{'order': ...}})")
        if isinstance(chunk_key_encoding, tuple):
            chunk_key_encoding = {"name": chunk_key_encoding[0], "separator": chunk_key_encoding[1]}
        stages = {} if codecs is None else _split_codecs(codecs)
        array = create_array(**common, chunk_key_encoding=chunk_key_encoding,
                             dimension_names=dimension_names, **stages)
    return Array(array.store, array.path, array.metadata, read_only=True,
                 config=array_config) if read_only else array


def print_debug_info() -> None:
    """Print the versions of Python, zarrcore and the packages it uses or interoperates with,
    for bug reports (as zarr-python's)."""
    import importlib.metadata
    import platform

    print(f"platform: {platform.platform()}")
    print(f"python: {platform.python_version()}")
    for package in ("zarrcore", "numpy", "blosc", "numcodecs", "msgpack", "pcodec", "zfpy",
                    "obstore", "fsspec", "xarray", "dask", "zarr"):
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        print(f"{package}: {version}")


def _create_group(store: Store, path: str, zarr_format: int,
                  attributes: Mapping[str, Any] | None, overwrite: bool) -> Group:
    from .metadata import GroupMetadataV3
    from .metadata.v2 import GroupMetadataV2

    check_attributes(attributes or {})
    if zarr_format == 3:
        metadata = GroupMetadataV3(attributes=dict(attributes or {}))
    elif zarr_format == 2:
        metadata = GroupMetadataV2(attributes=dict(attributes or {}))
    else:
        raise ValueError(f"zarr_format must be 2 or 3, not {zarr_format!r}")
    _prepare_path(store, path, overwrite)
    nodes.ensure_parent_groups(store, path, zarr_format)
    nodes.write_metadata(store, path, metadata)
    return Group(store, path, metadata)


def _store_mode(mode: str, path: str) -> str | None:
    """make_store's `mode`: "w" when the node to overwrite is the store's root, so the whole
    store is replaced (a zip is made anew: its members cannot be deleted one by one)."""
    return "w" if mode == "w" and path == "" else None


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")


def open(store: StoreLike = None, *, mode: str = "a", path: str | None = None,
         zarr_format: int | None = None, storage_options: dict[str, Any] | None = None,
         **kwargs: Any) -> Array | Group:
    """Open the array or group at `path`; with mode 'w'/'w-'/'a' and a `shape`, create an array.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        r: read only, must exist; r+: must exist; a: open, or create a group (an array when
        `shape` is given); w: create, replacing what is there; w-: create, must not exist.
    path : str, optional
        The node's path in the store.
    zarr_format : {2, 3}, optional
        The format to open or create; None finds it (creates format 3).
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    **kwargs
        For creating: as `create_array` (with `shape`) or `open_group` takes them.

    Returns
    -------
    Array or Group

    Raises
    ------
    ValueError
        An unknown mode.
    NodeNotFoundError
        Nothing at `path` in modes r and r+.
    NodeExistsError
        Something at `path` in mode w-.
    """
    _check_mode(mode)
    npath = nodes.normalize_path(path)
    store_ = make_store(store, read_only=(mode == "r"), storage_options=storage_options,
                        mode=_store_mode(mode, npath))
    if "shape" in kwargs:
        return open_array(store_, mode=mode, path=npath, zarr_format=zarr_format, **kwargs)
    if mode in ("w", "w-"):
        return open_group(store_, mode=mode, path=npath, zarr_format=zarr_format, **kwargs)
    try:
        return open_node(store_, npath, zarr_format, read_only=(mode == "r"), use_consolidated=None)
    except NodeNotFoundError:
        if mode == "a":
            return open_group(store_, mode=mode, path=npath, zarr_format=zarr_format, **kwargs)
        raise


def open_array(store: StoreLike = None, *, mode: str = "a", path: str | None = None,
               zarr_format: int | None = None, name: str | None = None,
               storage_options: dict[str, Any] | None = None, **kwargs: Any) -> Array:
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
        The format to open or create; None finds it (creates format 3).
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    **kwargs
        For creating, as `create_array` takes them (`shape`, `dtype`, ...).

    Returns
    -------
    Array

    Raises
    ------
    ValueError
        An unknown mode.
    NodeNotFoundError
        No array there (nothing, or a group) and none to create.
    NodeExistsError
        Something at the path in mode w-.
    """
    _check_mode(mode)
    path = nodes.normalize_path(path if path is not None else name)
    store = make_store(store, read_only=(mode == "r"), storage_options=storage_options,
                       mode=_store_mode(mode, path))
    if mode in ("w", "w-"):
        return create_array(store, name=path, overwrite=(mode == "w"),
                            zarr_format=zarr_format or 3, **kwargs)
    try:
        node = open_node(store, path, zarr_format, read_only=(mode == "r"))
    except NodeNotFoundError:
        if mode == "a" and "shape" in kwargs:
            return create_array(store, name=path, zarr_format=zarr_format or 3, **kwargs)
        raise
    if not isinstance(node, Array):
        raise NodeNotFoundError(f"the node at path {path!r} is a group, not an array")
    return node


def open_group(store: StoreLike = None, *, mode: str = "a", path: str | None = None,
               zarr_format: int | None = None, attributes: Mapping[str, Any] | None = None,
               use_consolidated: bool | None = None,
               storage_options: dict[str, Any] | None = None) -> Group:
    """Open a group, creating it in modes 'a', 'w' and 'w-'.

    With consolidated metadata (used when present if `use_consolidated` is None, required
    when True, ignored when False) members are opened without reading their metadata.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        As `open` takes it.
    path : str, optional
        The group's path in the store.
    zarr_format : {2, 3}, optional
        The format to open or create; None finds it (creates format 3).
    attributes : Mapping, optional
        Attributes of a group created here.
    use_consolidated : bool or None, optional
        Use consolidated metadata when present (None), require it (True) or ignore it.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Group

    Raises
    ------
    ValueError
        An unknown mode.
    NodeNotFoundError
        No group there (nothing, or an array) in modes r and r+; an array there in mode a.
    NodeExistsError
        Something at the path in mode w-.
    MetadataError
        `use_consolidated` is True and the group has no consolidated metadata.
    """
    _check_mode(mode)
    path = nodes.normalize_path(path)
    store = make_store(store, read_only=(mode == "r"), storage_options=storage_options,
                       mode=_store_mode(mode, path))
    if mode in ("w", "w-"):
        return _create_group(store, path, zarr_format or 3, attributes, mode == "w")
    try:
        node = open_node(store, path, zarr_format, read_only=(mode == "r"),
                         use_consolidated=use_consolidated)
    except NodeNotFoundError:
        if mode == "a":
            return _create_group(store, path, zarr_format or 3, attributes, False)
        raise
    if not isinstance(node, Group):
        raise NodeNotFoundError(f"the node at path {path!r} is an array, not a group")
    return node


def group(store: StoreLike = None, *, overwrite: bool = False, path: str | None = None,
          zarr_format: int = 3, attributes: Mapping[str, Any] | None = None,
          storage_options: dict[str, Any] | None = None) -> Group:
    """Create a group (or open the existing one when not overwriting).

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    overwrite : bool, optional
        Replace whatever is at `path` (open_group's mode w), else mode a.
    path : str, optional
        The group's path in the store.
    zarr_format : {2, 3}, optional
        The format of a new group.
    attributes : Mapping, optional
        Attributes of a new group.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Group

    Raises
    ------
    NodeNotFoundError
        An array is at `path` and `overwrite` is False.
    """
    mode = "w" if overwrite else "a"
    return open_group(store, mode=mode, path=path, zarr_format=zarr_format, attributes=attributes,
                      storage_options=storage_options)


def create_group(store: StoreLike = None, *, path: str | None = None, zarr_format: int = 3,
                 attributes: Mapping[str, Any] | None = None, overwrite: bool = False,
                 storage_options: dict[str, Any] | None = None) -> Group:
    """Create a group.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    path : str, optional
        The group's path in the store; groups above it are created.
    zarr_format : {2, 3}, optional
        The format to write.
    attributes : Mapping, optional
        The group's attributes (strict JSON).
    overwrite : bool, optional
        Replace a node already at `path`.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    Group

    Raises
    ------
    NodeExistsError
        A node exists at `path` and `overwrite` is False.
    ValueError
        A format other than 2 or 3.
    """
    path = nodes.normalize_path(path)
    store = make_store(store, storage_options=storage_options,
                       mode=_store_mode("w" if overwrite else "a", path))
    return _create_group(store, path, zarr_format, attributes, overwrite)


def array(data: npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """Create an array holding `data`.

    Parameters
    ----------
    data : array_like
        The values; they give the shape and (unless `dtype` is given) the dtype.
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them.

    Returns
    -------
    Array
    """
    data = np.asanyarray(data)
    kwargs.setdefault("dtype", data.dtype)
    arr = create_array(store, shape=data.shape, **kwargs)
    arr[...] = data
    return arr


def full(shape: ShapeLike, fill_value: Any, store: StoreLike = None, **kwargs: Any) -> Array:
    """create_array with `fill_value`; nothing is stored until written.

    Parameters
    ----------
    shape : int or tuple of int
    fill_value : scalar
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them.

    Returns
    -------
    Array
    """
    return create_array(store, shape=shape, fill_value=fill_value, **kwargs)


def zeros(shape: ShapeLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """create_array with fill value 0; nothing is stored until written.

    Parameters
    ----------
    shape : int or tuple of int
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them.

    Returns
    -------
    Array
    """
    return create_array(store, shape=shape, fill_value=0, **kwargs)


def ones(shape: ShapeLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """create_array with fill value 1; nothing is stored until written.

    Parameters
    ----------
    shape : int or tuple of int
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them.

    Returns
    -------
    Array
    """
    return create_array(store, shape=shape, fill_value=1, **kwargs)


def empty(shape: ShapeLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """create_array with the data type's default fill value.

    Parameters
    ----------
    shape : int or tuple of int
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them.

    Returns
    -------
    Array
    """
    return create_array(store, shape=shape, **kwargs)


def _like_kwargs(a: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("dtype", a.dtype)
    if isinstance(a, Array):
        kwargs.setdefault("chunks", a.chunks)
    return kwargs


def zeros_like(a: Array | npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """zeros of the shape and dtype of `a` (and its chunks when an Array).

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks when an Array.
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return zeros(np.shape(a), store, **_like_kwargs(a, kwargs))


def ones_like(a: Array | npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """ones of the shape and dtype of `a` (and its chunks when an Array).

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks when an Array.
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return ones(np.shape(a), store, **_like_kwargs(a, kwargs))


def empty_like(a: Array | npt.ArrayLike, store: StoreLike = None, **kwargs: Any) -> Array:
    """empty of the shape and dtype of `a` (and its chunks when an Array).

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks when an Array.
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return empty(np.shape(a), store, **_like_kwargs(a, kwargs))


def full_like(a: Array | npt.ArrayLike, fill_value: Any, store: StoreLike = None,
              **kwargs: Any) -> Array:
    """full of the shape and dtype of `a` (and its chunks when an Array).

    Parameters
    ----------
    a : Array or array_like
        The model: its shape and dtype, and its chunks when an Array.
    fill_value : scalar
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    **kwargs
        As `create_array` takes them; they override what `a` gives.

    Returns
    -------
    Array
    """
    return full(np.shape(a), fill_value, store, **_like_kwargs(a, kwargs))


# -- zarr-python's convenience functions ------------------------------------------------------

# Settings that from_array's "keep" takes from a source Array.
_KEPT = ("chunks", "shards", "filters", "compressors", "serializer")


def from_array(store: StoreLike = None, *, data: Array | npt.ArrayLike, write_data: bool = True,
               name: str | None = None, chunks: Any = "keep", shards: Any = "keep",
               filters: Any = "keep", compressors: Any = "keep", serializer: Any = "keep",
               fill_value: Any = None, order: Literal["C", "F"] | None = None,
               zarr_format: int | None = None, attributes: Mapping[str, Any] | None = None,
               chunk_key_encoding: Any = None, dimension_names: Sequence[str | None] | None = None,
               overwrite: bool = False, config: Mapping[str, Any] | None = None,
               storage_options: dict[str, Any] | None = None) -> Array:
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
    settings = dict(chunks=chunks, shards=shards, filters=filters, compressors=compressors,
                    serializer=serializer)
    if isinstance(data, Array):
        source = data
        zarr_format = zarr_format or source.zarr_format
        same_format = zarr_format == source.zarr_format
        for key in _KEPT:
            if isinstance(settings[key], str) and settings[key] == "keep":
                settings[key] = getattr(source, key) if same_format or key in ("chunks", "shards") else "auto"
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
        zarr_format = zarr_format or 3
        settings = {k: (None if k in ("chunks", "shards") else "auto")
                    if isinstance(v, str) and v == "keep" else v for k, v in settings.items()}
        if zarr_format == 2:
            settings.pop("serializer")
        dtype = source.dtype
    if settings.get("filters") == "auto":
        settings["filters"] = None
    array = create_array(store, name=name, shape=source.shape, dtype=dtype,
                         fill_value=fill_value, order=order, zarr_format=zarr_format,
                         attributes=attributes, chunk_key_encoding=chunk_key_encoding,
                         dimension_names=dimension_names, overwrite=overwrite, config=config,
                         storage_options=storage_options, **settings)
    if write_data:
        _copy_values(source, array)
    return array


def _copy_values(source: Any, dest: Array, slab_bytes: int = 256 << 20) -> None:
    """dest[...] = source[...], a slab of whole destination blocks along axis 0 at a time, so
    an Array source is never read whole."""
    if not isinstance(source, Array) or dest.ndim == 0:
        dest[...] = source[...]
        return
    block = (dest.shards or dest.chunks)[0]
    row_bytes = dest.nbytes // max(dest.shape[0], 1)
    step = max(block, slab_bytes // max(row_bytes, 1) // block * block)
    for start in range(0, dest.shape[0], step):
        dest[start:start + step] = source[start:start + step]


def save_array(store: StoreLike, arr: npt.ArrayLike, *, zarr_format: int | None = None,
               path: str | None = None, **kwargs: Any) -> None:
    """Store the array-like `arr` as an array at `path`, replacing what is there.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    arr : array_like
        The values.
    zarr_format : {2, 3}, optional
        The format to write (default 3).
    path : str, optional
        The array's path in the store.
    **kwargs
        As `create_array` takes them.
    """
    data = np.asanyarray(arr)
    array(data, store, name=path, overwrite=True, zarr_format=zarr_format or 3, **kwargs)


def save_group(store: StoreLike, *args: npt.ArrayLike, zarr_format: int | None = None,
               path: str | None = None, storage_options: dict[str, Any] | None = None,
               **arrays: npt.ArrayLike) -> None:
    """Store each positional array as `arr_0`, `arr_1`... and each keyword array under its
    name, in a group at `path`.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    *args : array_like
        Arrays stored as `arr_0`, `arr_1`...
    zarr_format : {2, 3}, optional
        The format to write (default 3).
    path : str, optional
        The group's path in the store; what is there is replaced.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    **arrays : array_like
        Arrays stored under their keyword.

    Raises
    ------
    ValueError
        No array given.
    """
    if not args and not arrays:
        raise ValueError("save_group needs at least one array")
    named = {f"arr_{i}": a for i, a in enumerate(args)} | arrays
    grp = open_group(store, mode="w", path=path, zarr_format=zarr_format or 3,
                     storage_options=storage_options)
    for name, value in named.items():
        grp[name] = np.asanyarray(value)


def save(store: StoreLike, *args: npt.ArrayLike, zarr_format: int | None = None,
         path: str | None = None, storage_options: dict[str, Any] | None = None,
         **arrays: npt.ArrayLike) -> None:
    """save_array for one positional array, else save_group.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    *args : array_like
        One array, or arrays for a group.
    zarr_format : {2, 3}, optional
        The format to write (default 3).
    path : str, optional
        The node's path in the store.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).
    **arrays : array_like
        Arrays for a group, by name.
    """
    if len(args) == 1 and not arrays:
        save_array(store, args[0], zarr_format=zarr_format, path=path,
                   storage_options=storage_options)
    else:
        save_group(store, *args, zarr_format=zarr_format, path=path,
                   storage_options=storage_options, **arrays)


class GroupArrays:
    """What load returns for a group: its arrays by name, each read when asked for."""

    def __init__(self, group: Group) -> None:
        self._group = group
        self._names = group.array_keys()

    def __getitem__(self, name: str) -> Any:
        """The array `name` read whole; KeyError when the group has no such array."""
        if name not in self._names:
            raise KeyError(name)
        return self._group[name][...]  # type: ignore[index]  # names of arrays only

    def __iter__(self) -> Iterator[str]:
        """The array names."""
        return iter(self._names)

    def __len__(self) -> int:
        """The number of arrays."""
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        """Is `name` one of the arrays?"""
        return name in self._names

    def keys(self) -> list[str]:
        """The array names.

        Returns
        -------
        list of str
        """
        return list(self._names)

    def items(self) -> Iterator[tuple[str, Any]]:
        """(name, values) of each array, each read when reached.

        Returns
        -------
        iterator of (str, numpy.ndarray)
        """
        return ((name, self[name]) for name in self._names)

    def values(self) -> Iterator[Any]:
        """The values of each array, each read when reached.

        Returns
        -------
        iterator of numpy.ndarray
        """
        return (self[name] for name in self._names)

    def __repr__(self) -> str:
        return f"<zarrcore.GroupArrays {self._names}>"


def load(store: StoreLike, path: str | None = None,
         zarr_format: int | None = None,
         storage_options: dict[str, Any] | None = None) -> np.ndarray | GroupArrays:
    """The array at `path` as a numpy array; for a group, a GroupArrays mapping that reads
    each of its arrays when asked for it.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    path : str, optional
        The node's path in the store.
    zarr_format : {2, 3}, optional
        The node's format; None finds it.
    storage_options : dict, optional
        Options of the store a URL names (credentials, endpoint, timeouts...).

    Returns
    -------
    numpy.ndarray or GroupArrays

    Raises
    ------
    NodeNotFoundError
        Nothing at `path`.
    """
    node = open(store, mode="r", path=path, zarr_format=zarr_format,
                storage_options=storage_options)
    return node[...] if isinstance(node, Array) else GroupArrays(node)


def tree(grp: Group, expand: bool | None = None, level: int | None = None) -> str:
    """grp.tree(): a text drawing of the hierarchy below the group.

    Parameters
    ----------
    grp : Group
    expand, level : optional
        zarr-python's options; accepted, not used (the whole hierarchy is drawn).

    Returns
    -------
    str
    """
    return grp.tree()


def open_like(a: Array | npt.ArrayLike, path: StoreLike, **kwargs: Any) -> Array:
    """Open (or create) the array at `path` with the shape, dtype and chunks of `a`, and its
    fill value when `a` is an Array.

    Parameters
    ----------
    a : Array or array_like
        The model.
    path : str, os.PathLike, dict or Store
        Where the array is (the store argument of `open_array`).
    **kwargs
        As `open_array` takes them; they override what `a` gives (mode "a" by default).

    Returns
    -------
    Array
    """
    like = _like_kwargs(a, dict(kwargs))
    if isinstance(a, Array):
        like.setdefault("fill_value", a.fill_value)
    like.setdefault("mode", "a")
    return open_array(path, shape=np.shape(a), **like)


def create_hierarchy(*, store: StoreLike, nodes: Mapping[str, Any],
                     overwrite: bool = False) -> Iterator[tuple[str, Array | Group]]:
    """Create a node for each {path: metadata} of `nodes` (zarrcore's or zarr-python's metadata
    objects), with the groups above them; yields (path, Array or Group) as each is made.

    Parameters
    ----------
    store : str, os.PathLike, dict, Store or None
        A directory path, a URL, a dict (kept in memory), a Store (or another library's
        store), or None for a new memory store.
    nodes : Mapping
        Metadata by path: zarrcore's metadata objects, or zarr-python's.
    overwrite : bool, optional
        Replace nodes already at those paths.

    Yields
    ------
    tuple of (str, Array or Group)

    Raises
    ------
    NodeExistsError
        A node exists at one of the paths and `overwrite` is False.
    TypeError
        A value of `nodes` that is no metadata object.
    """
    from . import nodes as node_io
    from .metadata import GroupMetadataV3
    from .metadata.v2 import GroupMetadataV2

    store = make_store(store)
    specs = {node_io.normalize_path(p): m for p, m in nodes.items()}
    for path, metadata in sorted(specs.items(), key=lambda item: item[0].count("/")):
        metadata = _zarrcore_metadata(metadata, path)
        if node_io.node_exists(store, path):
            if not overwrite:
                raise NodeExistsError(f"a node exists at {path!r}; pass overwrite=True")
            for key in list(store.list_prefix(path)):
                store.delete(key)
        node_io.ensure_parent_groups(store, path, metadata.zarr_format)
        node_io.write_metadata(store, path, metadata)
        is_group = isinstance(metadata, (GroupMetadataV3, GroupMetadataV2))
        yield path, (Group if is_group else Array)(store, path, metadata)


def _zarrcore_metadata(metadata: Any, path: str) -> Any:
    """zarrcore metadata from zarrcore's own or zarr-python's metadata object (read from the
    documents it would store)."""
    from .metadata.common import MetadataDocument
    from .storage import MemoryStore

    if isinstance(metadata, MetadataDocument):
        return metadata
    if not hasattr(metadata, "to_buffer_dict"):
        raise TypeError(f"nodes[{path!r}]: expected array or group metadata, got {metadata!r}")
    from zarr.core.buffer import default_buffer_prototype

    buffers = metadata.to_buffer_dict(default_buffer_prototype())
    documents = MemoryStore({key: buffer.to_bytes() for key, buffer in buffers.items()})
    return nodes.read_metadata(documents, "")


def copy_store(source: StoreLike | Array | Group, dest: StoreLike, source_path: str = "",
               dest_path: str = "", if_exists: str = "raise") -> tuple[int, int, int]:
    """Copy the stored keys below `source_path` to `dest_path`, byte for byte (zarr 2's
    copy_store); `if_exists="replace"` replaces a node at the destination. Returns
    (keys copied, keys skipped, bytes copied).

    Parameters
    ----------
    source : str, os.PathLike, dict, Store, Array or Group
    dest : str, os.PathLike, dict or Store
    source_path, dest_path : str, optional
        Paths below `source` and `dest`.
    if_exists : {"raise", "replace"}, optional
        What to do about a node at the destination.

    Returns
    -------
    tuple of int
        Keys copied, keys skipped (always 0) and bytes copied.

    Raises
    ------
    ValueError
        Another `if_exists`, or source and destination are the same place.
    NodeExistsError
        A node at the destination with `if_exists="raise"`.
    """
    from .tools.copy import copy

    if if_exists not in ("raise", "replace"):
        raise ValueError(f"if_exists must be 'raise' or 'replace', not {if_exists!r}")
    report = copy(source, dest, source_path=source_path, dest_path=dest_path,
                  overwrite=if_exists == "replace", progress=False)
    return report.keys, 0, report.nbytes


def copy_all(source: Group, dest: Group, if_exists: str = "raise") -> tuple[int, ...]:
    """Copy every member of the group `source` into the group `dest`, byte for byte. Returns
    (keys copied, keys skipped, bytes copied).

    Parameters
    ----------
    source, dest : Group
    if_exists : {"raise", "replace"}, optional
        As `copy_store` takes it, for each member.

    Returns
    -------
    tuple of int
        Keys copied, keys skipped (always 0) and bytes copied.

    Raises
    ------
    TypeError
        `source` or `dest` is not a Group.
    NodeExistsError
        A member exists in `dest` with `if_exists="raise"`.
    """
    if not isinstance(source, Group) or not isinstance(dest, Group):
        raise TypeError("copy_all copies from a Group into a Group")
    totals = [0, 0, 0]
    for name in source.keys():
        counts = copy_store(source.store, dest.store, nodes.join(source.path, name),
                            nodes.join(dest.path, name), if_exists)
        totals = [t + c for t, c in zip(totals, counts)]
    return tuple(totals)
