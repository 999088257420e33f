"""What creating and opening a node decides before it touches an Array or a Group: the
modes, shapes, chunk shapes, data types and codec lists a caller's arguments mean."""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np


from .node import (
    creation_lock, ensure_parent_groups, existing_node_error, node_exists, write_metadata,
)
from ..config import config
from ..codecs import ArrayArrayCodec, ArrayBytesCodec, codec_from_json
from ..codecs.sharding import ShardingCodec
from ..codecs.v2 import object_data_type
from ..errors import ObjectDataTypeError
from ..metadata import dtype_from_numpy

if TYPE_CHECKING:
    from .._types import ChunksLike, NodeMetadata, ShapeLike
    from ..storage import Store


MODES = ("r", "r+", "a", "w", "w-")


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
            f"chunks {chunks} do not match the {len(shape)} dimensions of shape {shape}")
    # -1 means the whole axis, as in zarr-python.
    chunks = tuple(max(1, s) if c == -1 else c for c, s in zip(chunks, shape))
    if any(c < 1 for c in chunks):
        raise ValueError(f"chunk sizes must be positive, got {chunks}")
    return chunks


def shard_codecs(codecs: list[Any], chunks: tuple[int, ...], shards: Any, shape: tuple[int, ...],
           itemsize: int, auto_chunks: bool) -> tuple[list[Any], tuple[int, ...]]:
    """(codecs, chunk grid shape) of an array sharded as zarr-python 3 writes it: one
    sharding_indexed codec holding `codecs`, and the shards as the grid's chunks.

    `shards` is a shape or {"shape": ..., "index_location": "start"|"end"}.
    """
    index_location = "end"
    if isinstance(shards, dict):
        index_location = shards.get("index_location", "end")
        shards = shards["shape"]
    if isinstance(shards, str) and shards == "auto":
        return ([ShardingCodec(chunks, codecs, index_location=index_location)],
                auto_shard_shape(chunks, shape, itemsize))
    shard_shape = normalize_chunks(shards, shape, itemsize)
    if auto_chunks:
        # The largest divisor of each shard side not above the guessed chunk side; chunks
        # of about 1 MiB, as zarr-python aims at inside shards.
        guess = guess_chunks(shard_shape, itemsize, max_bytes=1 << 20)
        chunks = tuple(max(d for d in range(1, c + 1) if s % d == 0)
                       for c, s in zip(guess, shard_shape))
    if any(s % c for s, c in zip(shard_shape, chunks)):
        raise ValueError(
            f"the shard shape {shard_shape} must be a multiple of the chunk shape {chunks}")
    return [ShardingCodec(chunks, codecs, index_location=index_location)], shard_shape


def auto_shard_shape(chunks: tuple[int, ...], shape: tuple[int, ...],
                     itemsize: int) -> tuple[int, ...]:
    """The shards of shards="auto", as zarr-python 3.4 sizes them. Without
    `config.target_shard_size_bytes`: two chunks along each axis the array spans more than 8
    chunks of, one along the others. With it: the same number of chunks along every axis,
    the most that keeps a shard within that many bytes and within the array (at least one).
    """
    target = config.target_shard_size_bytes
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
    return config.default_zarr_format if zarr_format is None else zarr_format


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
        stage = ("filters" if isinstance(built, ArrayArrayCodec) else
                 "serializer" if isinstance(built, ArrayBytesCodec) else "compressors")
        stages[stage].append(built)
    if len(stages["serializer"]) != 1:
        raise ValueError(
            f"codecs must hold one array->bytes codec, got {len(stages['serializer'])}")
    return {**stages, "serializer": stages["serializer"][0]}


def store_mode(mode: str, path: str) -> str | None:
    """make_store's `mode`: "w" when the node to overwrite is the store's root, so the whole
    store is replaced (a zip is made anew: its members cannot be deleted one by one)."""
    return "w" if mode == "w" and path == "" else None


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
