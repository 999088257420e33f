"""Which routes the reads and writes of one array in one store may take (docs/architecture.md
§4, §5), decided once from the array's codec chain and chunk grid and the store's
capabilities (`open_routes`, which ChunkEngine.from_layout calls before the engine is made:
the engine takes the answer). `OpenRoutes.plan` picks one per request; `OpenRoutes.one_chunk`
says which job reads a selection inside one chunk (R0)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..codecs.sharding import partial_codec
from ..metadata.indexing import CoordinateIndexer
from .planning import Route, core_form, selection_kind

if TYPE_CHECKING:
    from .._native.shard_io import ShardSpec
    from ..codecs.base import NativeForm
    from ..codecs.chain import CodecChain
    from ..metadata.grid import ChunkGrid
    from ..metadata.indexing import Indexer
    from ..storage.base import Store
    from .layout import ArrayLayout, ObjectPlaces

__all__ = ["OpenRoutes", "open_routes"]


@dataclass(frozen=True)
class OpenRoutes:
    """The routes open to an array in a store, each with what runs it.

    `chunk_batch` (R1, W1): the ChunkBatch settings of a chain the core runs, its chunks
    reached by the compiled batches themselves (a directory store, or a MemoryStore's own
    blobs when the array keeps a decoded-chunk cache). `shard_batch` (R2, W2): the ShardSpec
    of shards whose index and inner chain the core runs, there. `chunk_waves` (R4, W3): the
    ChunkWaves settings of an unsharded chain the core runs, over stores that hand over bytes
    (Store.get_many). `shard_ranges` (R3): sharded arrays there read by planned byte ranges;
    `inner_waves`: their listed selections too, inner chunks decoded in compiled waves.
    `fetched_chunks` (R5): reads of chunks fetched together, decoded by the codec objects.
    `one_chunk`: the route whose job reads a selection inside one chunk or inner chunk on
    the calling thread (R0: CHUNK_BATCH, SHARD_BATCH, or CHUNK_WAVES and SHARD_WAVES by one
    request), None where R0 is closed. `form`: what the core runs the largest chunk's chain
    with (planning.core_form; None where it cannot).
    """

    ndim: int
    form: NativeForm | None = None
    chunk_batch: NativeForm | None = None
    shard_batch: ShardSpec | None = None
    chunk_waves: NativeForm | None = None
    shard_ranges: bool = False
    inner_waves: bool = False
    fetched_chunks: bool = False
    one_chunk: Route | None = None

    def plan(self, indexer: Indexer, writing: bool = False) -> Route:
        """The route a read, or with `writing` a write, of `indexer`'s selection takes: the
        first open compiled route that takes that kind of selection, else the codec objects.
        Writes give the compiled routes only the chunks they cover wholly; the rest is
        read-modify-written (ChunkEngine.write)."""
        basic, listed = selection_kind(indexer, self.ndim)
        points = isinstance(indexer, CoordinateIndexer)
        if writing:
            listed = basic  # (the compiled writers take ints and slices)
        if self.chunk_batch is not None and listed:
            return Route.CHUNK_BATCH
        if self.shard_batch is not None and (basic or not writing and listed and not points):
            return Route.SHARD_BATCH
        if not writing and (self.shard_ranges and basic or self.inner_waves and listed):
            return Route.SHARD_WAVES
        if self.chunk_waves is not None and listed:
            return Route.CHUNK_WAVES
        if not writing and self.fetched_chunks:
            return Route.FETCHED_CHUNKS
        return Route.EACH_CHUNK


def open_routes(
    store: Store, layout: ArrayLayout, chain: CodecChain, cache_bytes: int, places: ObjectPlaces
) -> OpenRoutes:
    """The routes open to the array of `layout` and codec chain `chain` (its largest chunk's)
    in `store`, keeping a decoded-chunk cache of `cache_bytes`; `places` makes the ShardSpec of
    its shards. Made once, by ChunkEngine.from_layout, which hands them to the engine."""
    grid, chunk_shape, form = layout.grid, layout.chunk_shape, core_form(chain)
    sharding = partial_codec(chain)
    # The compiled batches open the stored objects themselves on a directory store; on a
    # MemoryStore holding its own data too, when a cache is kept (the blobs' versions
    # validate its entries, as native handles do) over a regular grid.
    native = store.native_root is not None or bool(
        cache_bytes and store.native_memory is not None and form is not None and grid.is_regular
    )
    chunk_batch = form if native and sharding is None else None
    shards = (
        places.shard_spec(chunk_shape, layout.array_shape, form)
        if native and sharding is not None and form is not None
        else None
    )
    chunk_waves = form if not native and chunk_shape and sharding is None else None
    # Sharded arrays off a directory are read by planned byte ranges; and those whose inner
    # chain the core runs, listed selections of them too, on any store. Over grids of shards
    # that start on inner chunks' boundaries only (regular ones, and rectilinear ones unless
    # grown by a length the inner chunks do not divide): the inner chunks then lie on one
    # regular grid over the array (`read_shard_waves`).
    aligned = sharding is not None and all(
        b % c == 0 if isinstance(b, int) else not np.any(b.lengths % c)
        for b, c in zip(grid.axes, sharding.chunk_shape)
    )
    shard_ranges = not native and aligned
    inner_waves = aligned and sharding is not None and sharding.inner_native_form is not None
    return OpenRoutes(
        ndim=len(chunk_shape),
        form=form,
        chunk_batch=chunk_batch,
        shard_batch=shards,
        chunk_waves=chunk_waves,
        shard_ranges=shard_ranges,
        inner_waves=inner_waves,
        fetched_chunks=sharding is None and store.native_root is None,
        one_chunk=_one_chunk_route(
            store, grid, chunk_shape, chunk_batch, shards, chunk_waves, shard_ranges and inner_waves
        ),
    )


def _one_chunk_route(
    store: Store,
    grid: ChunkGrid,
    chunk_shape: Sequence[int],
    chunk_batch: Any,
    shards: Any,
    chunk_waves: Any,
    inner_blocks: bool,
) -> Route | None:
    """R0's job: the compiled batches' template on a regular grid of chunks; over stores that
    hand over bytes, one block by one request, of a chunk, or of an inner chunk where the
    shard's index is kept (readers that keep one version)."""
    if not chunk_shape or not grid.is_regular:
        return None
    if shards is not None:
        return Route.SHARD_BATCH
    if chunk_batch is not None:
        return Route.CHUNK_BATCH
    if chunk_waves is not None:
        return Route.CHUNK_WAVES
    if inner_blocks and store.readers_keep_one_version:
        return Route.SHARD_WAVES
    return None
