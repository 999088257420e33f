"""What creating or opening an array decides before an Array exists: the modes, shapes, chunk
shapes, data types and codec lists a caller's arguments mean, and the array they describe
(`ArraySpec`: `new_array_spec` of `NewArrayOptions`, `create_spec`, `open_spec`), which
`array.make_array` makes. `creation.py`'s functions and `Array.open`, `Array.create` share
them."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..codecs import ArrayArrayCodec, ArrayBytesCodec, ZstdCodec, codec_from_json
from ..codecs.base import ChunkSpec
from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from ..codecs.v2 import create_metadata_v2, object_data_type
from ..errors import ArrayNotFoundError, MetadataError, NodeNotFoundError, ObjectDataTypeError
from ..metadata import ArrayMetadataV3, ChunkKeyEncoding, dtype_from_numpy
from ..metadata.common import check_attributes
from ..metadata.grid import ChunkGrid, grid_from_spelling, rectilinear_spelling
from ..metadata.v3 import default_codecs
from ..runtime.config import config as global_config
from ..storage import make_store
from .array_config import config_items
from .node import (
    creation_lock,
    ensure_parent_groups,
    existing_node_error,
    node_exists,
    normalize_path,
    read_metadata,
    write_metadata,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import (
        ChunksLike,
        CodecLike,
        CodecsLike,
        NodeMetadata,
        ShapeLike,
        StoreLike,
    )
    from ..storage import Store

__all__ = [
    "ArraySpec",
    "GUESS_MAX_BYTES",
    "GUESS_MIN_BYTES",
    "GUESS_STEP_BYTES",
    "MODES",
    "NewArrayOptions",
    "auto_shard_shape",
    "check_mode",
    "codec_list",
    "create_node",
    "create_spec",
    "data_type_for",
    "fill_value_for",
    "format_for_new",
    "guess_chunks",
    "new_array_spec",
    "normalize_chunks",
    "normalize_shape",
    "open_spec",
    "shard_codecs",
    "split_codecs",
    "store_mode",
]


MODES = ("r", "r+", "a", "w", "w-")


# zarr-python's chunk guess (h5py's): its target grows with the array, by this step per
# tenfold growth past 1 MiB, between the bounds.
GUESS_STEP_BYTES = 256 << 10
GUESS_MIN_BYTES = 128 << 10
GUESS_MAX_BYTES = 64 << 20


def guess_chunks(
    shape: Sequence[int], itemsize: int, max_bytes: int = GUESS_MAX_BYTES
) -> tuple[int, ...]:
    """The chunks zarr-python 3 guesses: a target size of 256 KiB times 2**log10(the array's
    MiB), kept within 128 KiB and `max_bytes`, reached by halving the axes in turn (the first
    first) until the chunk is below the target or within half of it, and below `max_bytes`."""
    chunks = [max(1, s) for s in shape]
    if itemsize <= 0 or not chunks:
        return tuple(chunks)
    total = math.prod(chunks) * itemsize
    target = min(
        max(GUESS_STEP_BYTES * 2 ** math.log10(total / (1 << 20)), GUESS_MIN_BYTES), max_bytes
    )
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


def normalize_shape(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"shape must be non-negative, got {shape}")
    return shape


def normalize_chunks(chunks: ChunksLike, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    if chunks is None or chunks == "auto":
        return guess_chunks(shape, itemsize)
    if isinstance(chunks, (int, np.integer)):
        chunks = (int(chunks),) * len(shape)
    chunks = tuple(int(c) for c in chunks)
    if len(chunks) != len(shape):
        raise ValueError(
            f"chunks {chunks} do not match the {len(shape)} dimensions of shape {shape}"
        )
    # -1 means the whole axis, as in zarr-python.
    chunks = tuple(max(1, s) if c == -1 else c for c, s in zip(chunks, shape))
    if any(c < 1 for c in chunks):
        raise ValueError(f"chunk sizes must be positive, got {chunks}")
    return chunks


def shard_codecs(
    codecs: list[Any],
    chunks: tuple[int, ...],
    shards: Any,
    shape: tuple[int, ...],
    itemsize: int,
    auto_chunks: bool,
) -> tuple[list[Any], tuple[int, ...]]:
    """(codecs, chunk grid shape) of an array sharded as zarr-python 3 writes it: one
    sharding_indexed codec holding `codecs`, and the shards as the grid's chunks.

    `shards` is a shape or {"shape": ..., "index_location": "start"|"end"}.
    """
    index_location = "end"
    if isinstance(shards, dict):
        index_location = shards.get("index_location", "end")
        shards = shards["shape"]
    if isinstance(shards, str) and shards == "auto":
        return (
            [ShardingCodec(chunks, codecs, index_location=index_location)],
            auto_shard_shape(chunks, shape, itemsize),
        )
    shard_shape = normalize_chunks(shards, shape, itemsize)
    if auto_chunks:
        # The largest divisor of each shard side not above the guessed chunk side; chunks
        # of about 1 MiB, as zarr-python aims at inside shards.
        guess = guess_chunks(shard_shape, itemsize, max_bytes=1 << 20)
        chunks = tuple(
            max(d for d in range(1, c + 1) if s % d == 0) for c, s in zip(guess, shard_shape)
        )
    if any(s % c for s, c in zip(shard_shape, chunks)):
        raise ValueError(
            f"the shard shape {shard_shape} must be a multiple of the chunk shape {chunks}"
        )
    return [ShardingCodec(chunks, codecs, index_location=index_location)], shard_shape


def auto_shard_shape(
    chunks: tuple[int, ...], shape: tuple[int, ...], itemsize: int
) -> tuple[int, ...]:
    """The shards of shards="auto", as zarr-python 3.4 sizes them. Without
    `config.target_shard_size_bytes`: two chunks along each axis the array spans more than 8
    chunks of, one along the others. With it: the same number of chunks along every axis,
    the most that keeps a shard within that many bytes and within the array (at least one).
    """
    target = global_config.target_shard_size_bytes
    if target is None:
        return tuple(2 * c if s // c > 8 else c for c, s in zip(chunks, shape))
    chunk_bytes = math.prod(chunks) * itemsize
    if not chunks or not chunk_bytes:
        return chunks
    fits = min(s // c for c, s in zip(chunks, shape))
    per_axis = int((target // chunk_bytes) ** (1 / len(chunks)))  # the float root, then exact:
    while per_axis ** len(chunks) * chunk_bytes > target:
        per_axis -= 1
    while (per_axis + 1) ** len(chunks) * chunk_bytes <= target:
        per_axis += 1
    return tuple(c * max(1, min(per_axis, fits)) for c in chunks)


def format_for_new(zarr_format: int | None) -> int:
    """The format of a node to create: `zarr_format`, else `config.default_zarr_format`."""
    return global_config.default_zarr_format if zarr_format is None else zarr_format


def codec_list(value: Any, default: Iterable[Any], where: str) -> list[Any]:
    """create_array's codecs of one stage (`where`: "filters", "serializer", "compressors"),
    built; "auto" is `default`."""
    if value is None:
        return []
    if isinstance(value, str) and value == "auto":
        return list(default)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return [codec_from_json(v, where) for v in values]


def create_node(store: Store, path: str, metadata: NodeMetadata, overwrite: bool) -> None:
    """Store the metadata of a new node at `path`, with groups at its ancestors that have no
    node. A node there already raises its existing_node_error, unless `overwrite`: then
    it is deleted with everything below it."""
    with store.creation_lock(), creation_lock(store, path):
        if node_exists(store, path):
            if not overwrite:
                raise existing_node_error(store, path)
            store.delete_prefix(path)  # the node's metadata keys too: they lie under `path`/
        # (The ancestors' creation locks, taken under this one: always deeper first.)
        ensure_parent_groups(store, path, metadata.zarr_format)
        write_metadata(store, path, metadata)


def fill_value_for(data_type: Any, fill_value: Any) -> Any:
    if fill_value is None:
        return data_type.default_fill_value()
    return data_type.cast_fill_value(fill_value)


def data_type_for(dtype: Any, zarr_format: int, filters: Any, compressors: Any) -> Any:
    """The DataType of a new array; numpy's object dtype in format 2 takes the one its object
    codec names (as zarr 2 did)."""
    try:
        return dtype_from_numpy(dtype)
    except ObjectDataTypeError:
        if zarr_format != 2:
            raise
        data_type = object_data_type(filters, compressors)
        if data_type is None:
            raise
        return data_type


def split_codecs(codecs: Iterable[Any]) -> dict[str, Any]:
    """A whole v3 codec list as create_array's filters, serializer and compressors."""
    stages: dict[str, list[Any]] = {"filters": [], "serializer": [], "compressors": []}
    for codec in codecs:
        built = codec_from_json(codec)
        stage = (
            "filters"
            if isinstance(built, ArrayArrayCodec)
            else "serializer"
            if isinstance(built, ArrayBytesCodec)
            else "compressors"
        )
        stages[stage].append(built)
    if len(stages["serializer"]) != 1:
        raise ValueError(
            f"codecs must hold one array->bytes codec, got {len(stages['serializer'])}"
        )
    return {**stages, "serializer": stages["serializer"][0]}


def store_mode(mode: str, path: str) -> str | None:
    """make_store's `mode`: "w" when the node to overwrite is the store's root, so the whole
    store is replaced (a zip is made anew: its members cannot be deleted one by one)."""
    return "w" if mode == "w" and path == "" else None


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


# -- the arrays zarr-python's functions describe ------------------------------------------------


@dataclass
class ArraySpec:
    """An array to make: where it is, its metadata, how it is opened and, when it is `new`,
    how it is stored (`overwrite`) and the values then written (`data`)."""

    store: Store
    path: str
    metadata: NodeMetadata
    read_only: bool = False
    config: Mapping[str, Any] | None = None
    new: bool = False
    overwrite: bool = False
    data: Any = None


@dataclass
class NewArrayOptions:
    """The options of a new array, as `create_array` takes them (see it): what
    `new_array_spec` makes an ArraySpec of."""

    store: StoreLike = None
    _: KW_ONLY
    name: str | None = None
    shape: ShapeLike | None = None
    dtype: npt.DTypeLike | None = None
    data: npt.ArrayLike | None = None
    chunks: ChunksLike = None
    shards: ShapeLike | Mapping[str, Any] | Literal["auto"] | None = None
    filters: CodecsLike = None
    serializer: CodecsLike = "auto"
    compressors: CodecsLike = "auto"
    fill_value: Any = None
    order: Literal["C", "F"] | None = None
    zarr_format: int | None = 3
    attributes: Mapping[str, Any] | None = None
    chunk_key_encoding: Any = None
    dimension_names: Sequence[str | None] | None = None
    overwrite: bool = False
    path: str | None = None
    config: Mapping[str, Any] | None = None
    write_data: bool = True
    storage_options: dict[str, Any] | None = None


def new_array_spec(new: NewArrayOptions) -> ArraySpec:
    """What `create_array` makes of its arguments (see it): the new array's store, path and
    metadata."""
    data, shape, dtype, chunks, shards = new.data, new.shape, new.dtype, new.chunks, new.shards
    if data is not None:
        if shape is not None or dtype is not None:
            raise ValueError("give either data, or shape and dtype")
        data = np.asanyarray(data)
        shape, dtype = data.shape, data.dtype
    if shape is None:
        raise TypeError("create_array needs a shape (or data)")
    dtype = "float64" if dtype is None else dtype
    zarr_format = format_for_new(new.zarr_format)
    check_attributes(new.attributes or {})
    path = normalize_path(new.path if new.path is not None else new.name)
    store = make_store(
        new.store,
        storage_options=new.storage_options,
        mode=store_mode("w" if new.overwrite else "a", path),
    )
    shape = normalize_shape(shape)
    data_type = data_type_for(dtype, zarr_format, new.filters, new.compressors)
    np_dtype = data_type.numpy_dtype
    auto_chunks = chunks is None or (isinstance(chunks, str) and chunks == "auto")
    # Edge lengths per axis (zarr-python 3.4's spelling) of chunks, or of shards.
    grid = None
    shard_shape = shards["shape"] if isinstance(shards, dict) else shards
    if rectilinear_spelling(chunks) or rectilinear_spelling(shard_shape):
        if zarr_format != 3:
            raise ValueError("rectilinear chunk grids need zarr_format=3")
        if shards is not None and rectilinear_spelling(chunks):
            raise ValueError("sharded arrays take rectilinear shards=, and regular chunks=")
        field = "shards" if shards is not None else "chunks"
        grid = grid_from_spelling(shard_shape if shards is not None else chunks, shape, field)
        if isinstance(shards, dict):
            shards = {**shards, "shape": grid.max_chunk_shape}
        elif shards is not None:
            shards = grid.max_chunk_shape
        else:
            chunks = grid.max_chunk_shape
        if grid.is_regular:
            grid = None
    chunks = normalize_chunks(chunks, shape, np_dtype.itemsize)
    if new.order not in (None, "C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {new.order!r}")
    if shards is not None and zarr_format == 2:
        raise ValueError("sharding needs zarr_format=3")
    if new.order is not None and zarr_format == 3:
        warnings.warn(
            "order has no effect on a Zarr format 3 array: its chunks are C order; "
            "the memory order of what reads return is config={'order': ...}",
            RuntimeWarning,
            stacklevel=3,
        )
    metadata: NodeMetadata
    if zarr_format == 2:
        metadata = create_metadata_v2(
            shape=shape,
            data_type=data_type,
            chunks=chunks,
            filters=new.filters,
            compressors=new.compressors,
            fill_value=new.fill_value,
            order=new.order or global_config.array_order,
            attributes=new.attributes or {},
            chunk_key_encoding=new.chunk_key_encoding,
        )
    elif zarr_format == 3:
        metadata = _metadata_v3(new, shape, data_type, chunks, shards, grid, auto_chunks)
    else:
        raise ValueError(f"zarr_format must be 2 or 3, not {zarr_format!r}")
    return ArraySpec(
        store,
        path,
        metadata,
        config=new.config,
        new=True,
        overwrite=new.overwrite,
        data=data if new.write_data else None,
    )


def _metadata_v3(
    new: NewArrayOptions,
    shape: tuple[int, ...],
    data_type: Any,
    chunks: tuple[int, ...],
    shards: Any,
    grid: ChunkGrid | None,
    auto_chunks: bool,
) -> ArrayMetadataV3:
    """The metadata of a new format 3 array of `new`'s codecs, chunk key encoding and
    dimension names (`new_array_spec` has checked the rest, into the other arguments)."""
    np_dtype = data_type.numpy_dtype
    fill = fill_value_for(data_type, new.fill_value)
    codecs = [
        *codec_list(new.filters, [], "filters"),
        *codec_list(new.serializer, default_codecs(data_type), "serializer"),
        *codec_list(new.compressors, [ZstdCodec(level=0, checksum=False)], "compressors"),
    ]
    if shards is not None:
        codecs, chunks = shard_codecs(codecs, chunks, shards, shape, np_dtype.itemsize, auto_chunks)
        inner = codecs[0].chunk_shape
        for d, axis in enumerate(grid.axes if grid else ()):
            if not isinstance(axis, int) and np.any(axis.lengths % inner[d]):
                raise ValueError(
                    f"the shards' edge lengths {axis.to_json()} along axis "
                    f"{d} must be multiples of the chunk length {inner[d]}"
                )
    chain = CodecChain(codecs, ChunkSpec(chunks, np_dtype, fill))
    chunk_key_encoding = new.chunk_key_encoding
    if isinstance(chunk_key_encoding, dict) or chunk_key_encoding is None:
        cke_json = dict(chunk_key_encoding or {"name": "default"})
        # zarr-python's form puts the separator beside the name.
        if "separator" in cke_json and "configuration" not in cke_json:
            cke_json["configuration"] = {"separator": cke_json.pop("separator")}
        cke = ChunkKeyEncoding.from_json(cke_json, "chunk_key_encoding")
    else:
        cke = chunk_key_encoding
    dimension_names = new.dimension_names
    if dimension_names is not None:
        dimension_names = tuple(dimension_names)
        if len(dimension_names) != len(shape):
            raise MetadataError(
                f"dimension_names {list(dimension_names)!r}: expected one name (or None) per "
                f"dimension, {len(shape)} for shape {tuple(shape)}, not {len(dimension_names)}"
            )
    return ArrayMetadataV3(
        shape=shape,
        data_type=data_type,
        chunk_shape=chunks,
        chunk_key_encoding=cke,
        fill_value=fill,
        codecs=chain.to_json(),
        attributes=dict(new.attributes or {}),
        dimension_names=dimension_names,
        storage_transformers=[],
        extra={},
        chunk_grid=grid,
    )


def create_spec(
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
) -> ArraySpec:
    """What `create` makes of its arguments (see it): a new array, read-only when
    `read_only`."""
    if kwargs:
        raise TypeError(f"create() got unexpected keyword arguments {sorted(kwargs)}")
    if zarr_version is not None and zarr_format is not None and zarr_version != zarr_format:
        raise ValueError(f"zarr_version {zarr_version} and zarr_format {zarr_format} differ")
    zarr_format = format_for_new(zarr_format or zarr_version)
    if chunk_store is not None:
        raise NotImplementedError("a separate chunk_store is not supported")
    chunks = chunk_shape if chunk_shape is not None else chunks
    if chunks is True:
        chunks = None
    elif chunks is False:
        chunks = normalize_shape(shape)
    array_config = {
        **(config or {}),
        **({} if write_empty_chunks is None else {"write_empty_chunks": write_empty_chunks}),
    }
    common = dict(
        shape=shape,
        chunks=chunks,
        dtype=dtype,
        fill_value=fill_value,
        store=store,
        path=path,
        overwrite=overwrite,
        attributes=attributes,
        config=array_config,
        storage_options=storage_options,
        zarr_format=zarr_format,
    )
    if zarr_format == 2:
        if codecs is not None or chunk_key_encoding is not None or dimension_names is not None:
            raise ValueError(
                "codecs, chunk_key_encoding and dimension_names are for "
                "zarr_format 3; format 2 takes compressor, filters and "
                "dimension_separator"
            )
        filters = list(filters or [])
        if object_codec is not None:
            filters.insert(0, object_codec)
        spec = new_array_spec(
            NewArrayOptions(
                **common,
                filters=filters or None,
                compressors=compressor,
                order=order,
                chunk_key_encoding=dimension_separator,
            )
        )
    else:
        for name, value in (
            ("compressor", None if compressor == "auto" else compressor),
            ("filters", filters),
            ("object_codec", object_codec),
            ("dimension_separator", dimension_separator),
            ("order", order),
        ):
            if value is not None:
                raise ValueError(
                    f"{name} is for zarr_format 2; format 3 takes codecs (and "
                    f"chunk_key_encoding, config={{'order': ...}})"
                )
        if isinstance(chunk_key_encoding, tuple):
            chunk_key_encoding = {"name": chunk_key_encoding[0], "separator": chunk_key_encoding[1]}
        stages = {} if codecs is None else split_codecs(codecs)
        spec = new_array_spec(
            NewArrayOptions(
                **common,
                chunk_key_encoding=chunk_key_encoding,
                dimension_names=dimension_names,
                **stages,
            )
        )
    spec.read_only = bool(read_only)
    return spec


def open_spec(
    store: StoreLike = None,
    *,
    mode: str = "a",
    path: str | None = None,
    zarr_format: int | None = None,
    name: str | None = None,
    storage_options: dict[str, Any] | None = None,
    cache_bytes: int | None = None,
    shared_cache: bool = False,
    recheck_cached_data: Any = True,
    **kwargs: Any,
) -> ArraySpec:
    """What `open_array` makes of its arguments (see it): an existing array, or a new one."""
    check_mode(mode)
    if cache_bytes is not None:
        kwargs["config"] = {**config_items(kwargs.get("config")), "cache_bytes": cache_bytes}
    if shared_cache is not False:
        kwargs["config"] = {**config_items(kwargs.get("config")), "shared_cache": shared_cache}
    if recheck_cached_data is not True:
        kwargs["config"] = {
            **config_items(kwargs.get("config")),
            "recheck_cached_data": recheck_cached_data,
        }
    path = normalize_path(path if path is not None else name)
    store = make_store(
        store, read_only=(mode == "r"), storage_options=storage_options, mode=store_mode(mode, path)
    )
    if mode in ("w", "w-"):
        return new_array_spec(
            NewArrayOptions(
                store,
                name=path,
                overwrite=(mode == "w"),
                zarr_format=format_for_new(zarr_format),
                **kwargs,
            )
        )
    try:
        metadata = read_metadata(store, path, zarr_format)
    except NodeNotFoundError:
        if mode == "a" and "shape" in kwargs:
            return new_array_spec(
                NewArrayOptions(store, name=path, zarr_format=format_for_new(zarr_format), **kwargs)
            )
        raise
    if metadata.node_type != "array":
        raise ArrayNotFoundError(f"the node at path {path!r} is a group, not an array")
    return ArraySpec(store, path, metadata, read_only=(mode == "r"), config=kwargs.get("config"))
