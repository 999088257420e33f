"""The I/O engine: every chunk read and write of an array, run in compiled batches on the pool.

Reads and writes of basic selections on a directory store with a plain chain (bytes,
optionally numcodecs' shuffle filter, at most one compressor, optional trailing crc32c) run
as one compiled batch: native code walks every chunk with no Python per chunk. Sharded
arrays there whose inner chain is such a chain and whose index is little-endian (with or
without crc32c) do the same over every shard and inner chunk (zarrcore._native.shard_io): reads of
any basic selection, writes of the shards a selection covers wholly; partly covered shards
are read-modify-written below under their lock. Orthogonal and point (coordinate, mask)
reads over such chains run in the compiled jobs too: the batch on a directory, ChunkWaves
elsewhere and over the inner chunks of shards, with int-array axes as listed pieces and
points grouped by chunk, gathered in C. Everything else goes chunk by chunk through the
codec objects, whose heavy work is compiled and GIL-free as well.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._native import memory as _memory
from .._native.batch import ChunkBatch
from .._native.cache import ChunkCache
from .._native.chunk_jobs import OneBlocks
from .._native.shard_io import ShardSpec
from ..codecs.base import ENCODED_BOUND, check_chunk_bytes
from ..codecs.chain import CodecChain
from ..codecs.sharding import partial_codec
from ..errors import ChunkNotFoundError, KeyChangedError, SettingValueError, ZarrcoreError
from ..metadata.indexing import BasicIndexer, check_out
from ..runtime.pool import in_turns, parallel_map
from ..storage.base import at_most, bounded, get_at_most, joined
from ..storage.updates import conflict_pause, retry_conflicts
from .cache import SHARD_INDEX_BYTES, ChunkVersions, RecheckPolicy, ShardIndexes, kept_shard_indexes
from .directory import read_chunk_batch, read_shard_batch, write_chunk_batch, write_shard_batch
from .fetched import (
    read_chunk_waves,
    read_each_chunk,
    read_fetched_chunks,
    read_one_block,
    read_shard_waves,
    trimmed,
    write_chunk_waves,
)
from .layout import ArrayLayout, EngineSettings, ObjectPlaces
from .partial_writes import (
    put_locked,
    read_modify_write,
    whole_writes_locked,
    write_no_whole_chunks,
    write_projections,
)
from .planning import (
    Route,
    core_form,
    requests_in_flight,
    selection_boxes,
    stored_bytes_of,
    with_key,
)
from .routes import OpenRoutes, open_routes
from .write_waves import write_part_bytes

if TYPE_CHECKING:
    from ..codecs.base import BytesLike, NativeForm
    from ..metadata import ArrayMetadataV2, ArrayMetadataV3
    from ..metadata.indexing import Indexer
    from ..storage.base import Fetched, Pieces, ReadBytes, Request, Store

__all__ = ["ChunkEngine"]


class ChunkEngine:
    """Reads and writes the chunks of one array in `store`: where its chunks lie, their codec
    chain and fill value (`layout`, an ArrayLayout), by the array's own `settings` (an
    EngineSettings, its cache budget settled), coded by `chain` (that of its largest chunk),
    over the routes open to it there (`routes`, an OpenRoutes) and with its stored objects
    placed for the compiled jobs by `places` (an ObjectPlaces). `from_layout` makes the last
    four, once; `from_metadata` makes an engine from the array's metadata and config.

    `grid` places the chunks; on a rectilinear grid `chunk_shape` is its largest chunk, whose
    chain (`chain`) bounds every stored chunk, and each chunk is coded by the chain of its own
    shape (`chain_at`).
    """

    def __init__(
        self,
        store: Store,
        layout: ArrayLayout,
        settings: EngineSettings,
        chain: CodecChain,
        routes: OpenRoutes,
        places: ObjectPlaces,
    ) -> None:
        self.store, self.layout, self.settings = store, layout, settings
        # Which versions of cached chunks and shard indexes reads take without asking the
        # store (the array's "recheck_cached_data"; "open" is now).
        self.recheck = RecheckPolicy(settings.recheck_cached_data, time.time())
        self.key_prefix, self._chunk_key = layout.key_prefix, layout.chunk_key
        self.chunk_shape, self.array_shape = layout.chunk_shape, layout.array_shape
        self.grid, self.key_layout = layout.grid, layout.key_layout
        self.dtype, self.fill_value = layout.dtype, layout.fill_value
        # The bytes of one stored object (a chunk, or a shard; the largest), decoded.
        self.object_bytes = self.dtype.itemsize * math.prod(self.chunk_shape)
        # How requests run (threads, requests in flight, coalescing, shards' write order):
        # the array's own options, else zarrcore.config's. The engine hands them to every
        # route, store call and codec (through `spec`).
        self.options = settings.options
        self.chain, self.spec, self._where = chain, chain.spec, layout.where
        # The chains of a rectilinear grid's chunk shapes, made when first needed.
        self._chains: dict[tuple[int, ...], CodecChain] = {self.chunk_shape: chain}
        # The sharding codec (None unsharded): it fetches and rewrites only the byte ranges a
        # selection needs.
        self.sharding = partial_codec(chain)
        self.places, self.head_len = places, places.head_len
        # The compiled core's settings per chunk shape (`core_form_at_shape`): a rectilinear
        # grid's requests run one compiled job per chunk shape (planning.job_groups); the
        # routes are those its largest chunk's chain opens, and each job has its shape's form.
        self.core_forms: dict[tuple[int, ...], NativeForm | None] = {self.chunk_shape: routes.form}
        # The routes open to this array in this store, decided once (open_routes); the route
        # modules run what they open, `routes.plan` picks among them per request.
        self.routes = routes
        assert settings.cache_bytes is not None  # (settled: from_layout)
        self.cache = self._chunk_cache(settings.cache_bytes, settings.shared_cache)
        self.shard_indexes = self._shard_indexes()
        # About the bytes of a stored chunk: the last one this or an earlier opening of the
        # array read (until then, the most a valid one takes), by which reads of whole chunks
        # plan their requests (whole_in_flight).
        self.stored_bytes = stored_bytes_of(store, self.key_prefix, chain.max_encoded_bytes)
        # The box (from the origin) outside which no object stored before the array was
        # opened lies: none, unless its Array was opened onto stored data (then its shape).
        self.prior_extent: tuple[int, ...] = (0,) * len(self.array_shape)
        # R0's job templates (`read_selection`), made on first need.
        self._one_chunk: ChunkBatch | None = None
        self._one_blocks: OneBlocks | None = None

    @classmethod
    def from_layout(
        cls, store: Store, layout: ArrayLayout, settings: EngineSettings = EngineSettings()
    ) -> ChunkEngine:
        """The engine of the array of `layout` in `store`, run by `settings`: its codec chain,
        cache budget, places of stored objects and open routes made here, once, then handed
        to the engine."""
        chain = layout.chain_of(layout.chunk_shape, settings)
        if partial_codec(chain) is None:  # (sharding checks its inner chunks itself)
            check_chunk_bytes(layout.chunk_shape, layout.dtype, f"{layout.where}: chunks")
        places = ObjectPlaces(store, layout)
        budget = settings.cache_budget(layout, chain)
        routes = open_routes(store, layout, chain, budget, places)
        return cls(store, layout, replace(settings, cache_bytes=budget), chain, routes, places)

    @classmethod
    def from_metadata(
        cls,
        store: Store,
        path: str,
        metadata: ArrayMetadataV2 | ArrayMetadataV3,
        where: str,
        settings: Mapping[str, Any],
    ) -> ChunkEngine:
        """The engine of the array at `path` in `store` described by `metadata` (whose
        document is `where`), with the array's own `settings` (its config)."""
        return cls.from_layout(
            store,
            ArrayLayout.of_metadata(path, metadata, where),
            EngineSettings.of_config(settings),
        )

    def _shard_indexes(self) -> ShardIndexes | None:
        """The shard indexes reads by byte ranges learn (fetched.read_shard_ranges), for
        stores whose readers keep one version (and say which: RangeReader.version); on a
        regular grid, in the shared table too where the cache is shared between processes,
        else shared by every opening of the array in this process (kept_shard_indexes).
        None where no such read runs."""
        if not (self.routes.shard_ranges and self.store.readers_keep_one_version):
            return None
        assert self.sharding is not None  # (shard_ranges)
        shared = (
            self.cache
            if self.cache is not None
            and self.grid.is_regular
            and (self.cache.shared_ref is not None)
            else None
        )
        ninner = math.prod(s // c for s, c in zip(self.chunk_shape, self.sharding.chunk_shape))
        if shared is None and self.grid.is_regular:
            layout = json.dumps([self.chunk_shape, self.sharding.configuration()])
            array = (self.store.identity, self.key_prefix, layout)
            return kept_shard_indexes(array, SHARD_INDEX_BYTES, ninner)
        return ShardIndexes(SHARD_INDEX_BYTES, shared, ninner)

    def _chunk_cache(self, cache_bytes: int, shared: Any = None) -> ChunkCache | None:
        """The decoded-chunk cache of `cache_bytes` (EngineSettings.cache_budget) that the
        compiled reads of a directory store, or of a MemoryStore's own data, share
        (`routes.chunk_batch`, `routes.shard_batch`), and those of a store with
        `versioned_reads` (zip, object stores): of its chunks (`routes.chunk_waves`), or of its
        shards' inner chunks where the core runs their chain (`routes.shard_ranges` and
        `inner_waves`); of a regular grid, whose chunks all have one shape. None for 0, or when
        no such route is open. Other stores give no identity of their objects to validate
        entries by: they are never cached. With `shared` (the array's "shared_cache": True or
        a SharedCacheRef), its chunks are kept in memory that the machine's processes share
        (ChunkCache), but a MemoryStore's, whose data is the process's own."""
        chunk = self.sharding.chunk_shape if self.sharding is not None else self.chunk_shape
        chunk_bytes = self.dtype.itemsize * math.prod(chunk)
        if shared and not cache_bytes:
            raise SettingValueError(
                f"{self._where}: shared_cache needs a cache budget "
                f"(cache_bytes, or zarrcore.config.cache_bytes)"
            )
        routes = self.routes
        fetched = routes.chunk_waves is not None or routes.shard_ranges and routes.inner_waves
        if (
            not cache_bytes
            or not self.grid.is_regular
            or (
                routes.chunk_batch is None
                and routes.shard_batch is None
                and (not fetched or not self.store.versioned_reads)
            )
        ):
            return None
        # The versions the entries of R4's reads (`routes.chunk_waves`) were decoded from.
        self.versions = ChunkVersions(max(1, cache_bytes // chunk_bytes))
        # (Shard indexes kept beside the entries: those of the batches; fetched reads keep
        # theirs in `shard_indexes`.)
        ninner = (
            math.prod(s // c for s, c in zip(self.chunk_shape, chunk))
            if routes.shard_batch is not None
            else None
        )
        if self.store.native_memory is not None:
            shared = None
        return ChunkCache(
            cache_bytes, chunk_bytes, len(chunk), ninner, shared, f"{self._where}: shared_cache"
        )

    def cache_info(self) -> dict[str, int]:
        """The decoded-chunk cache's counters (ChunkCache.info); all 0 without a cache."""
        if self.cache is None:
            return dict.fromkeys(
                ("hits", "misses", "inserts", "evictions", "stale", "entries", "used", "capacity"),
                0,
            )
        return self.cache.info()

    def shard_spec_for(
        self, shape: Sequence[int], extent: Sequence[int], settings: dict[str, Any]
    ) -> ShardSpec:
        """The ShardSpec of shards of `shape` on an array of `extent` (ObjectPlaces.shard_spec;
        `routes.shard_batch` is that of the array's own shards)."""
        return self.places.shard_spec(shape, extent, settings)

    def chain_at(self, coords: Sequence[int]) -> CodecChain:
        """The codec chain of the chunk (or shard) at grid index `coords`: `chain`, but on a
        rectilinear grid that of the chunk's own shape."""
        if self.grid.is_regular:
            return self.chain
        return self.chain_at_shape(self.grid.chunk_shape_at(coords))

    def core_form_at_shape(self, shape: tuple[int, ...]) -> NativeForm | None:
        """The settings with which the compiled core runs chunks (shards) of `shape` (as
        `core_settings` for the array's chunk shape), kept in `core_forms` once made."""
        forms = self.core_forms
        if shape not in forms:
            forms[shape] = core_form(self.chain_at_shape(shape))
        return forms[shape]

    def chain_at_shape(self, shape: tuple[int, ...]) -> CodecChain:
        """The codec chain of chunks (shards) of `shape`."""
        chain = self._chains.get(shape)
        if chain is None:
            chain = self._chains[shape] = self.layout.chain_of(shape, self.settings)
        return chain

    @property
    def core_settings(self) -> NativeForm | None:
        """The settings with which the compiled core reads and writes this array's stored
        objects by itself (the batches here, native handles): the sharding codec's
        batch_settings when sharded, else the chain's native_form; None when it cannot."""
        return self.core_forms[self.chunk_shape]

    def read_selection(self, selection: Any, fortran: bool) -> Any:
        """`a[selection]` by R0 (Route.ONE_CHUNK), the route `plan` never sees: ints and
        slices (positive steps, Ellipsis, newaxis) that fall in one chunk, or one inner chunk
        when sharded, of an array R1 or R2 reads, read by that route's compiled job on the
        calling thread, GIL released, through the decoded-chunk cache, into a new array (F
        order when `fortran`; a scalar when every axis is given an int); over stores that
        hand over bytes, of one R3 or R4 reads, by one request (`read_one_block`).
        NotImplemented for any other selection: the caller makes an indexer and `read`s
        it."""
        routes = self.routes
        if routes.one_chunk is None:
            return NotImplemented
        if routes.shard_batch is not None:
            return routes.shard_batch.read_one(selection, fortran, self.dtype, self.cache)
        if routes.chunk_batch is None:
            return read_one_block(self, selection, fortran)
        reader = self._one_chunk
        if reader is None:
            _, sep, lead = self.key_layout
            reader = self._one_chunk = ChunkBatch(
                settings=routes.chunk_batch,
                **self.object_places(),
                sep=sep,
                lead_sep=lead,
                array_shape=self.array_shape,
                chunk_shape=self.chunk_shape,
                plans=None,
                data=None,
                cache=self.cache,
                dtype=self.dtype,
            )
        return reader.read_one(selection, fortran, self.options.num_threads, self.head_len)

    def one_blocks(self) -> OneBlocks:
        """The template of R0's jobs over stores that hand over bytes (`read_one_block`), of
        the array's chunks, or inner chunks when sharded; made on first need."""
        blocks = self._one_blocks
        if blocks is None:
            if self.sharding is None:
                form, shape, cache = self.routes.chunk_waves, self.chunk_shape, self.cache
            else:
                form, shape = self.sharding.inner_native_form, self.sharding.chunk_shape
                cache = self.cache if self.store.versioned_reads else None
            assert form is not None  # (routes.one_chunk)
            blocks = self._one_blocks = OneBlocks(form, self.array_shape, shape, self.dtype, cache)
        return blocks

    def node_dir(self) -> str:
        """The array's directory, which locates its chunks' key locks (csrc/files/zc_key_lock.h)."""
        return self.places.node_dir()

    def key_head(self) -> str:
        """The path of its chunk files up to their coordinates (ChunkBatch, ShardSpec); on a
        MemoryStore, the start of their keys."""
        return self.places.key_head()

    def object_places(self) -> dict[str, Any]:
        """What places the stored objects for ChunkBatch and ShardSpec (ObjectPlaces.places)."""
        return self.places.places()

    def key(self, coords: Sequence[int]) -> str:
        rel = self._chunk_key(coords)
        return f"{self.key_prefix}/{rel}" if self.key_prefix else rel

    def note_prior(self, coords: Iterable[Sequence[int]], keys: Sequence[str]) -> None:
        """Tell a store that `conditions_writes` (Store.may_hold) which of the objects at
        `coords` (at `keys`), about to be written whole, may have been stored before the
        array was opened."""
        extent, origin = self.prior_extent, self.grid.origin
        if 0 in extent:
            return  # (none: an array made here)
        self.store.may_hold(
            key for c, key in zip(coords, keys) if all(o < e for o, e in zip(origin(c), extent))
        )

    def whole_requests(self, keys: Iterable[str]) -> list[Request]:
        """Store.get_many requests of the stored chunks at `keys`, each whole but of at most
        one byte more than a valid chunk takes (see `stored_chunk`)."""
        ranges = at_most(self.chain.max_encoded_bytes)
        return [(key, ranges) for key in keys]

    def stored_chunk(self, key: str, parts: Fetched) -> ReadBytes | None:
        """The stored chunk `key` from the result `parts` of its `whole_requests` request, or
        of its ranges (on_arrival.split_ranges), None when not stored; its size noted
        (`stored_bytes`). ValueTooLargeError when it is larger than a valid chunk."""
        data = bounded(
            self.store, key, [joined(parts)], self.chain.max_encoded_bytes, ENCODED_BOUND
        )
        if data is not None:
            self.stored_bytes.nbytes = len(data)
        return data

    def get_stored(self, key: str) -> ReadBytes | None:
        """The stored chunk (or shard) at `key`, None when it is not stored; a value larger
        than a valid chunk is refused (ValueTooLargeError) without being read whole."""
        return get_at_most(self.store, key, self.chain.max_encoded_bytes, ENCODED_BOUND)

    def stored(self, keys: Sequence[str]) -> list[bool]:
        """Whether each chunk (shard) of `keys` is stored, asked of the store in parallel."""
        return parallel_map(self.store.exists, keys, self.options.num_threads)

    def check_stored(self, *indexers: Indexer) -> None:
        """ChunkNotFoundError naming the chunks (shards when sharded) of the `indexers`'
        selections that are not stored, each asked of the store once: a read with
        `read_missing_chunks` False checks them first."""
        keys = list(
            dict.fromkeys(self.key(p.coords) for indexer in indexers for p in indexer.projections())
        )
        missing = [k for k, stored in zip(keys, self.stored(keys)) if not stored]
        if missing:
            named = ", ".join(repr(k) for k in missing[:8]) + (", ..." if missing[8:] else "")
            raise ChunkNotFoundError(
                f"{len(missing)} chunk(s) not stored in {self.store!r}: {named}; "
                f"read_missing_chunks=True (the array's config or zarrcore.config) reads them "
                f"as the fill value"
            )

    # -- reads ---------------------------------------------------------------
    def read(self, indexer: Indexer, out: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Fill `out` (shape indexer.drop_shape, the result's order) with the selection,
        chunks in parallel. A shard replaced by a writer between the reads of its index and
        of its inner chunks (KeyChangedError from a store that keeps one version per read) is
        read again. Every read the compiled code does goes through here: `out` is checked
        (shape, writable) before anything is written into it."""
        check_out(out, indexer.drop_shape, self._where)
        try:  # (the first attempt inline: a small read pays for each Python call)
            return self._read_once(indexer, out)
        except KeyChangedError:
            conflict_pause(0)
        return retry_conflicts(lambda: self._read_once(indexer, out), KeyChangedError, tried=1)

    def _read_once(self, indexer: Indexer, out: npt.NDArray[Any]) -> npt.NDArray[Any]:
        route = self.routes.plan(indexer)
        if route in self._VIEW_ROUTES and indexer.permuted:
            # The codec objects decode into views of a buffer in the indexer's order.
            buffer = _memory.empty(out.shape, out.dtype)
            self._READ_BY_ROUTE[route](self, indexer, buffer)
            indexer.unpermute(buffer, out)
            return out
        self._READ_BY_ROUTE[route](self, indexer, out)
        return out

    def read_many(self, indexers: Sequence[Indexer], outs: Sequence[npt.NDArray[Any]]) -> None:
        """Fill each of `outs` as `read` fills it with the selection of its indexer. Basic
        selections that overlap are read together (planning.selection_boxes): each box
        once, on the pool, each of its chunks fetched and decoded once, then every member
        copied out of it; the rest are read each on its own, concurrently."""
        for indexer, out in in_turns(zip(indexers, outs)):
            check_out(out, indexer.drop_shape, self._where)
        axes = self.grid.axes if self.grid.is_regular else ()
        boxes, alone = selection_boxes(indexers, axes)  # type: ignore[arg-type]
        read: list[npt.NDArray[Any]] = [np.empty(0)] * len(boxes)

        def read_one(job: int) -> None:
            """Box `job`, or (negative) selection `-1 - job` read on its own."""
            if job < 0:
                self.read(indexers[-1 - job], outs[-1 - job])
                return
            region = BasicIndexer(boxes[job].region, self.array_shape, self.grid.axes)
            read[job] = self.read(region, _memory.empty(region.drop_shape, self.dtype))

        # (One box alone reads its chunks over every thread.)
        parallel_map(
            read_one, [*range(len(boxes)), *(-1 - i for i in alone)], self.options.num_threads
        )
        copies = [
            (data, view, outs[i])
            for box, data in zip(boxes, read)
            for i, view in zip(box.members, box.views)
        ]

        def copy_out(part: Sequence[tuple[npt.NDArray[Any], Any, npt.NDArray[Any]]]) -> None:
            for data, view, out in in_turns(part):
                out[...] = data[view]

        step = max(1, -(-len(copies) // (4 * self.options.num_threads)))
        parallel_map(
            copy_out,
            [copies[k : k + step] for k in range(0, len(copies), step)],
            self.options.num_threads,
        )

    # -- writes --------------------------------------------------------------
    def write(self, indexer: Indexer, value: npt.NDArray[Any]) -> None:
        """Write `value` (broadcast to indexer.drop_shape) into the selected chunks: the
        planned route writes the chunks it covers wholly and leaves the projections of the
        others, which are merged here (`_write_projections`)."""
        rest = self._WRITE_BY_ROUTE[self.routes.plan(indexer, writing=True)](self, indexer, value)
        if rest:
            write_projections(self, rest, value)

    def put_many(self, items: Iterable[tuple[str, BytesLike | Pieces | None]]) -> None:
        """Store every (key, encoded chunk or None) of the iterable `items` (see `put`): each
        under its lock on a store with locks, else all together (Store.set_many, which a
        store that streams writes starts uploading as `items` yields them, and one that
        writes in parts sends a large object's parts at once: `write_part_bytes`), as many
        at once as a read of such objects keeps in flight (`requests_in_flight`: over a 40 ms
        link, 125 PUTs of 60 KB took 0.44-0.52 s with 128 in flight, 0.49-0.66 s with 64)."""
        store = self.store
        if whole_writes_locked(self):
            parallel_map(functools.partial(put_locked, self), items, self.options.num_threads)
            return
        deleted: list[str] = []

        def stored() -> Iterator[tuple[str, BytesLike | Pieces]]:
            for key, data in items:
                if data is None:
                    deleted.append(key)
                else:
                    yield key, data

        store.set_many(
            stored(),
            concurrency=requests_in_flight(self, self.object_bytes),
            part_bytes=write_part_bytes(store),
        )
        for key in deleted:
            store.delete(key)

    def put_copy(self, key: str, source: Store, source_key: str) -> None:
        """Store at `key` a copy of `source`'s stored object `source_key`, as put_many stores
        bytes, copied by the store itself where it can (Store.set_copy)."""
        with (
            self.store.lock(key, self.key_prefix)
            if whole_writes_locked(self)
            else contextlib.nullcontext()
        ):
            if not self.store.set_copy(key, source, source_key):
                self.put(key, source.get(source_key))  # (None: deleted since it was listed)

    def reset_outside(self, coords: Sequence[int], kept: Sequence[int]) -> None:
        """Reset what the stored object at `coords` (a chunk, or a shard) holds outside the box
        `kept` (from the array's origin) to fill, as a resize leaves it: delete it when it lies
        wholly outside, else read-modify-write it as partial writes do, so that a concurrent
        write inside `kept` is never lost."""
        key = self.key(coords)
        bound = [k - o for o, k in zip(self.grid.origin(coords), kept)]
        if any(b <= 0 for b in bound):
            self.put_many([(key, None)])
            return
        chain = self.chain_at(coords)
        try:
            read_modify_write(
                self, key, lambda data, keep_empty: trimmed(chain, data, bound, keep_empty)
            )
        except ZarrcoreError as e:
            raise with_key(e, key) from e

    def put(self, key: str, data: BytesLike | None) -> None:
        """Store the encoded chunk `data` at `key`; None (all fill, not written) deletes it
        (on a store that cannot delete, refused only where a chunk is stored)."""
        if data is None:
            self.store.delete(key)
        else:
            self.store.set(key, data)

    # What runs each Route (see `plan`). Writers return the projections they leave.
    _READ_BY_ROUTE = {
        Route.CHUNK_BATCH: read_chunk_batch,
        Route.SHARD_BATCH: read_shard_batch,
        Route.SHARD_WAVES: read_shard_waves,
        Route.CHUNK_WAVES: read_chunk_waves,
        Route.FETCHED_CHUNKS: read_fetched_chunks,
        Route.EACH_CHUNK: read_each_chunk,
    }
    # The routes whose chunks decode into views of the output (ChunkProjection), in the
    # indexer's order; the compiled ones take output positions in the result's order.
    _VIEW_ROUTES = frozenset((Route.FETCHED_CHUNKS, Route.EACH_CHUNK))
    _WRITE_BY_ROUTE = {
        Route.CHUNK_BATCH: write_chunk_batch,
        Route.SHARD_BATCH: write_shard_batch,
        Route.CHUNK_WAVES: write_chunk_waves,
        Route.EACH_CHUNK: write_no_whole_chunks,
    }
