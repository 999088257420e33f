"""What an array's engine is made from besides its store, each gathered in one place: the
array's chunks as its metadata lays them out (`ArrayLayout.of_metadata`) and the settings of
its config it runs by (`EngineSettings.of_config`). ChunkEngine.from_metadata makes both."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..codecs.v2 import codecs_from_v2_metadata
from ..metadata import ArrayMetadataV3
from ..runtime.config import ARRAY_OPTIONS, Options, array_options, config

if TYPE_CHECKING:
    from ..metadata import ArrayMetadataV2
    from ..metadata.grid import ChunkGrid

__all__ = ["ArrayLayout", "EngineSettings"]


@dataclass(frozen=True)
class ArrayLayout:
    """An array's chunks as its metadata lays them out in a store.

    Their keys: `key_prefix` (the array's path) then `chunk_key(coords)`; `key_layout` is
    (head, separator, leading separator) of the chunk key encoding, e.g. ("c", "/", True) for
    v3 default keys "c/1/2", ("", ".", False) for v2 keys "1.2". `grid` places the chunks over
    `array_shape`; on a rectilinear grid `chunk_shape` is its largest chunk. Their items are
    of `dtype`, a missing chunk reads as `fill_value`, and `codecs` (objects or their JSON)
    code them. `where` names the metadata document in errors.
    """

    key_prefix: str
    chunk_key: Callable[[Sequence[int]], str]
    key_layout: tuple[str, str, bool]
    chunk_shape: tuple[int, ...]
    array_shape: tuple[int, ...]
    grid: ChunkGrid
    dtype: np.dtype[Any]
    fill_value: Any
    codecs: tuple[object, ...]
    where: str

    @classmethod
    def of_metadata(
        cls, path: str, metadata: ArrayMetadataV2 | ArrayMetadataV3, where: str
    ) -> ArrayLayout:
        """The layout of the array at `path` described by `metadata` (whose document is
        `where`): v3's codecs, or those v2's compressor and filters stand for."""
        if isinstance(metadata, ArrayMetadataV3):
            assert metadata.codecs is not None  # (set by __post_init__)
            codecs = tuple(metadata.codecs)
        else:
            codecs = tuple(codecs_from_v2_metadata(metadata, where))
        return cls(
            key_prefix=path,
            chunk_key=metadata.chunk_key,
            key_layout=metadata.key_layout,
            chunk_shape=tuple(metadata.chunk_shape),
            array_shape=tuple(metadata.shape),
            grid=metadata.grid,
            dtype=metadata.dtype,
            fill_value=metadata.read_fill_value,
            codecs=codecs,
            where=where,
        )


@dataclass(frozen=True)
class EngineSettings:
    """The settings an array's engine runs by, from the array's config.

    `options`: how requests run (threads, requests in flight, coalescing, shards' write
    order), the array's own, else zarrcore.config's. `write_empty_chunks` (None: the
    config's). `cache_bytes`: the budget of its decoded-chunk cache (None: zarrcore.config's,
    which every array shares). `shared_cache`: True or a SharedCacheRef to keep the cache in
    memory the machine's processes share. `recheck_cached_data`: which versions of cached
    chunks and shard indexes reads take without asking the store (RecheckPolicy).
    """

    options: Options = config
    write_empty_chunks: bool | None = None
    cache_bytes: int | None = None
    shared_cache: Any = None
    recheck_cached_data: Any = True

    @classmethod
    def of_config(cls, settings: Mapping[str, Any]) -> EngineSettings:
        """The engine's settings among an array's `settings` (its config)."""
        return cls(
            write_empty_chunks=settings["write_empty_chunks"],
            cache_bytes=settings.get("cache_bytes"),
            shared_cache=settings.get("shared_cache"),
            recheck_cached_data=settings.get("recheck_cached_data", True),
            options=array_options({k: v for k, v in settings.items() if k in ARRAY_OPTIONS}),
        )
