"""What an array's engine is made from besides its store, each gathered in one place: the
array's chunks as its metadata lays them out (`ArrayLayout.of_metadata`), the settings of its
config it runs by (`EngineSettings.of_config`) and where its stored objects lie in the store
for the compiled jobs (`ObjectPlaces`). ChunkEngine.from_metadata makes the first two,
ChunkEngine.from_layout the rest."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._native.cache import check_budget
from .._native.shard_io import ShardSpec
from ..codecs.base import ChunkSpec
from ..codecs.chain import CodecChain
from ..codecs.sharding import partial_codec
from ..codecs.v2 import codecs_from_v2_metadata
from ..metadata import ArrayMetadataV3
from ..runtime.config import ARRAY_OPTIONS, Options, array_options, config

if TYPE_CHECKING:
    from .._native.files import FileRoot
    from ..metadata import ArrayMetadataV2
    from ..metadata.grid import ChunkGrid
    from ..storage.base import Store

__all__ = ["ArrayLayout", "EngineSettings", "ObjectPlaces"]


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

    def chain_of(self, shape: tuple[int, ...], settings: EngineSettings) -> CodecChain:
        """The codec chain of this array's chunks (shards) of `shape`, run by `settings`."""
        spec = ChunkSpec(
            shape,
            self.dtype,
            self.fill_value,
            write_empty_chunks=settings.write_empty_chunks,
            options=settings.options,
        )
        return CodecChain(self.codecs, spec, self.where)


@dataclass(frozen=True)
class EngineSettings:
    """The settings an array's engine runs by, from the array's config.

    `options`: how requests run (threads, requests in flight, coalescing, shards' write
    order), the array's own, else zarrcore.config's. `write_empty_chunks` (None: the
    config's). `cache_bytes`: the budget of its decoded-chunk cache (None: zarrcore.config's,
    which every array shares; ChunkEngine.from_layout settles it by `cache_budget`).
    `shared_cache`: True or a SharedCacheRef to keep the cache in memory the machine's
    processes share. `recheck_cached_data`: which versions of cached chunks and shard indexes
    reads take without asking the store (RecheckPolicy).
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

    def cache_budget(self, layout: ArrayLayout, chain: CodecChain) -> int:
        """The bytes of decoded chunks the array of `layout` and `chain` may cache: its own
        budget, which must hold an (inner) chunk (check_budget); None takes zarrcore.config's,
        which every array shares: 0 where it holds no chunk."""
        sharding = partial_codec(chain)
        chunk = sharding.chunk_shape if sharding is not None else layout.chunk_shape
        chunk_bytes = layout.dtype.itemsize * math.prod(chunk)
        budget = self.cache_bytes
        if budget is None:
            budget = config.cache_bytes if config.cache_bytes >= chunk_bytes else 0
        else:
            check_budget(
                budget,
                f"{layout.where}: cache_bytes",
                chunk_bytes,
                "chunk" if sharding is None else "inner chunk",
            )
        return budget


class ObjectPlaces:
    """Where an array's stored objects lie in `store`, for the compiled jobs that open them
    themselves (ChunkBatch, ShardSpec). On a directory store: its directory, which locates its
    chunks' key locks (`node_dir`), its chunk files' path head (`key_head`), both fixed and
    asked for by every compiled request, and the length of what the jobs' paths hold before a
    store key (`head_len`: their errors name the key, `raise_error(head_len)`)."""

    def __init__(self, store: Store, layout: ArrayLayout) -> None:
        self.store, self.key_prefix, self.key_layout = store, layout.key_prefix, layout.key_layout
        root, prefix = store.native_root, layout.key_prefix
        self._node_dir = None if root is None else root + ("/" + prefix if prefix else "")
        self._key_head = None if root is None else f"{self._node_dir}/{self.key_layout[0]}"
        self._placed: dict[str, Any] | None = None
        self.head_len = 0 if root is None else len(root) + 1

    def node_dir(self) -> str:
        """The array's directory (directory stores only)."""
        assert self._node_dir is not None  # (directory stores only)
        return self._node_dir

    def key_head(self) -> str:
        """The path of its chunk files up to their coordinates; on a MemoryStore, the start of
        their keys."""
        if self._key_head is None:  # (a MemoryStore's: directories' is set when made)
            self._key_head = (self.key_prefix + "/" if self.key_prefix else "") + self.key_layout[0]
        return self._key_head

    def _file_root(self) -> FileRoot:
        files = self.store.files()
        assert files is not None  # (directory stores only)
        return files

    def places(self) -> dict[str, Any]:
        """The keyword arguments of ChunkBatch and ShardSpec that place the stored objects: the
        files below the store's root and their key locks' directory, or the blobs of its
        memory map (locked by the map's own key locks). Made on first need (a directory may
        not exist before)."""
        objects = self._placed
        if objects is None:
            if self.store.native_root is None:
                objects = {
                    "memory": self.store.native_memory,
                    "key_head": self.key_head(),
                    "lock_dir": "",
                }
            else:
                objects = {
                    "root": self._file_root(),
                    "key_head": self.key_head(),
                    "lock_dir": self.node_dir(),
                }
            self._placed = objects
        return objects

    def shard_spec(
        self, shape: Sequence[int], extent: Sequence[int], settings: dict[str, Any]
    ) -> ShardSpec:
        """The ShardSpec of shards of `shape` on an array of `extent` (directory and memory
        stores); `settings` name the keyword arguments of the compiled jobs."""
        return ShardSpec(
            **self.places(),
            head_len=self.head_len,
            sep=self.key_layout[1],
            lead_sep=self.key_layout[2],
            array_shape=tuple(extent),
            shard_shape=tuple(shape),
            **settings,
        )
