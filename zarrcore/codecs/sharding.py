"""The sharding_indexed codec: many inner chunks in one stored object, located by an index.

A shard is the encoded inner chunks, in any order, plus an index before or after them: per
inner chunk (C order) a uint64 pair (offset, nbytes), both 2**64-1 for an empty chunk,
encoded with the index codecs (normally little-endian bytes and a crc32c).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Union, overload

import numpy as np
import numpy.typing as npt

from .. import kernels
from .._native import chunk_jobs as _chunk_jobs
from ..errors import ChunkDecodeError, MetadataError, SelectionError, ShardIndexError, ZarrcoreError
from ..metadata.indexing import BasicIndexer, ChunkProjection, is_basic_selection
from ..runtime.byte_ranges import coalesce_spans
from ..runtime.config import config
from ..runtime.pool import parallel_map, run_workers
from ..storage.base import get_at_most
from .base import ENCODED_BOUND, ArrayBytesCodec, ChunkSpec, check_chunk_bytes
from .chain import CodecChain
from .registry import codec_from_json, register_codec

if TYPE_CHECKING:
    from ..runtime.config import Options
    from ..storage.base import RangeReader, Store
    from .base import BytesLike, CodecJSON, NativeForm

__all__ = [
    "Blobs",
    "EMPTY",
    "Entries",
    "Int64s",
    "LITTLE_BYTES",
    "MAX_NESTING",
    "ShardingCodec",
    "WHOLE_READ_SHARE",
    "coalesce",
    "morton_order",
    "partial_codec",
]

#: Per inner chunk (C order) its encoded bytes, None when it is not stored.
Blobs = list[Union["BytesLike", None]]
#: Index entries: an (n, 2) uint64 array of (offset, nbytes) per inner chunk.
Entries = npt.NDArray[np.uint64]
Int64s = npt.NDArray[np.int64]

EMPTY = 2**64 - 1
LITTLE_BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
# A read touching at least this share of a shard's inner chunks fetches the whole object once.
WHOLE_READ_SHARE = 0.5
# Sharding inside sharding deeper than this is refused (each level is a codec chain to build).
MAX_NESTING = 8


def morton_order(shape: Sequence[int]) -> Int64s:
    """C-order linear indices of a grid of `shape`, sorted by compressed Morton (Z-order) code."""
    coords = np.indices(shape, dtype=np.uint64).reshape(len(shape), -1)
    bits = [(int(s) - 1).bit_length() for s in shape]
    code = np.zeros(coords.shape[1], dtype=np.uint64)
    out_bit = 0
    for bit in range(max(bits, default=0)):
        for dim, nbits in enumerate(bits):
            if bit < nbits:
                code |= ((coords[dim] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(out_bit)
                out_bit += 1
    return np.argsort(code, kind="stable")


def _nesting(codecs: Iterable[object]) -> int:
    """Levels of sharding_indexed in the codec list `codecs` (JSON or codec objects), counted
    without recursion so that hostile metadata cannot exhaust the stack; stops past
    MAX_NESTING."""
    depth, level = 0, list(codecs)
    while depth <= MAX_NESTING:
        inner: list[object] = []
        for codec in level:
            if isinstance(codec, ShardingCodec):
                inner += [*codec.codecs, *codec.index_codecs]
            elif (
                isinstance(codec, dict)
                and codec.get("name") == ShardingCodec.name
                and isinstance(codec.get("configuration"), dict)
            ):
                for key in ("codecs", "index_codecs"):
                    value = codec["configuration"].get(key)
                    inner += value if isinstance(value, (list, tuple)) else []
        if not inner:
            return depth
        depth += 1
        level = inner
    return depth


def _stored(blobs: Blobs) -> dict[int, BytesLike]:
    """{index: blob} of the inner chunks stored in the list `blobs` (None: not stored)."""
    return {i: blob for i, blob in enumerate(blobs) if blob is not None}


def _inner_error(error: Exception, coords: tuple[int, ...]) -> Exception:
    return type(error)(f"inner chunk {coords}: {error}")


class _Whole:
    """A shard held in memory."""

    def __init__(self, data: BytesLike) -> None:
        self.view = memoryview(data).cast("B")
        self.size: int | None = self.view.nbytes

    def get(self, start: int | None, stop: int | None) -> memoryview:
        return self.view[start:stop]

    def fetch(self, spans: Sequence[Sequence[int]]) -> list[memoryview]:
        return [self.view[o : o + n] for o, n in spans]


class _Ranged:
    """A stored shard read by byte ranges (Store.reader: one version of it throughout where the
    store can; else its size may be unknown, and ranges past its end come back short)."""

    def __init__(self, reader: RangeReader, options: Options) -> None:
        self.reader, self.options = reader, options
        self.size = reader.size

    def get(self, start: int | None, stop: int | None) -> BytesLike | None:
        data = self.reader.get_ranges([(start, stop)])
        return None if data is None else data[0]

    def fetch(self, spans: Sequence[Sequence[int]]) -> list[memoryview]:
        """The bytes of each (offset, nbytes) span; spans close together share one request."""
        if not spans:
            return []
        offsets, lengths = np.asarray(spans, dtype=np.uint64).T
        starts, stops, group = coalesce(
            offsets, lengths, self.options.coalesce_gap_bytes, self.options.coalesce_max_bytes
        )
        datas = self.reader.get_ranges(list(zip(starts.tolist(), stops.tolist())))
        if datas is None:
            raise ShardIndexError("shard was deleted while being read")
        views = [memoryview(data).cast("B") for data in datas]
        return [
            views[g][o - starts[g] : o - starts[g] + n] for g, (o, n) in zip(group.tolist(), spans)
        ]


#: A shard being read: held whole, or read by byte ranges.
_Shard = Union[_Whole, _Ranged]


def coalesce(
    offsets: npt.ArrayLike, lengths: npt.ArrayLike, gap: int, most: int | None
) -> tuple[Int64s, Int64s, Int64s]:
    """Group a shard's byte spans (uint64 `offsets` and `lengths`, from its index) into
    requests by `coalesce_spans` with an array's limits (config.array_options): (starts,
    stops, group). ShardIndexError for a span that no store could hold."""
    unsigned = np.asarray(offsets, dtype=np.uint64)
    unsigned_ends = unsigned + np.asarray(lengths, dtype=np.uint64)
    if unsigned.size and (unsigned_ends.max() >= 2**62 or (unsigned_ends < unsigned).any()):
        raise ShardIndexError("a shard index entry reaches past any possible end of the shard")
    return coalesce_spans(unsigned.astype(np.int64), unsigned_ends.astype(np.int64), gap, most)


class ShardingCodec(ArrayBytesCodec):
    """Array->bytes codec storing a chunk ("shard") as separately encoded inner chunks.

    The array's option `shard_write_order` ("C" or "morton", config.Options) sets the order of
    the inner chunks' bytes in written shards; it is not part of the metadata, as the spec
    requires.
    """

    name = "sharding_indexed"

    def __init__(
        self,
        chunk_shape: Sequence[int],
        codecs: Sequence[object] = (LITTLE_BYTES,),
        index_codecs: Sequence[object] = (LITTLE_BYTES, {"name": "crc32c"}),
        index_location: str = "end",
    ) -> None:
        if (
            isinstance(chunk_shape, (str, bytes))
            or not all(
                isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 1
                for c in chunk_shape
            )
            or not len(chunk_shape)
        ):
            raise MetadataError(
                f"sharding_indexed: chunk_shape {chunk_shape!r} must be positive integers"
            )
        if index_location not in ("start", "end"):
            raise MetadataError(
                f"sharding_indexed: index_location must be 'start' or 'end', not {index_location!r}"
            )
        if _nesting([*codecs, *index_codecs]) >= MAX_NESTING:
            raise MetadataError(f"sharding_indexed: nested more than {MAX_NESTING} levels deep")
        self.chunk_shape = tuple(int(c) for c in chunk_shape)
        self.codecs = tuple(codec_from_json(c, "sharding_indexed codecs") for c in codecs)
        self.index_codecs = tuple(
            codec_from_json(c, "sharding_indexed index_codecs") for c in index_codecs
        )
        self.index_location = index_location

    @property
    def verifies_integrity(self) -> bool:
        """Do the inner chunks carry a checksum? (The index's covers the index only; a
        damaged index entry points the inner chunk's check at other bytes.)"""
        return any(c.verifies_integrity for c in self.codecs)

    def configuration(self) -> CodecJSON:
        return {
            "chunk_shape": list(self.chunk_shape),
            "codecs": [c.to_json() for c in self.codecs],
            "index_codecs": [c.to_json() for c in self.index_codecs],
            "index_location": self.index_location,
        }

    def resolve(self, spec: ChunkSpec) -> ShardingCodec:
        """A copy bound to the shard `spec`, with inner and index codec chains built."""
        shard_shape = tuple(spec.shape)
        if len(shard_shape) != len(self.chunk_shape) or any(
            s % c for s, c in zip(shard_shape, self.chunk_shape)
        ):
            raise MetadataError(
                f"sharding_indexed: inner chunk shape {self.chunk_shape} does not evenly divide "
                f"the shard shape {shard_shape}"
            )
        grid = tuple(s // c for s, c in zip(shard_shape, self.chunk_shape))
        # Checked before anything is allocated from these sizes.
        check_chunk_bytes(self.chunk_shape, spec.dtype, "sharding_indexed: inner chunks")
        n = math.prod(grid)
        if n > config.max_shard_index_entries:
            raise MetadataError(
                f"sharding_indexed: {n} inner chunks per shard (grid {grid}) exceed "
                f"config.max_shard_index_entries ({config.max_shard_index_entries}); raise it with "
                f"zarrcore.config.set(max_shard_index_entries=...) or "
                f"ZARRCORE_MAX_SHARD_INDEX_ENTRIES"
            )
        inner = CodecChain(
            self.codecs, spec.evolve(shape=self.chunk_shape), "sharding_indexed codecs"
        )
        index_spec = ChunkSpec(grid + (2,), np.dtype("uint64"), EMPTY)
        index = CodecChain(self.index_codecs, index_spec, "sharding_indexed index_codecs")
        if index.array_bytes.name != "bytes" or any(c.name != "crc32c" for c in index.bytes_bytes):
            raise MetadataError(
                "sharding_indexed: index_codecs must have a fixed encoded size "
                "(the bytes codec, and bytes->bytes codecs other than crc32c "
                "are not allowed)"
            )
        codec = ShardingCodec(self.chunk_shape, inner.codecs, index.codecs, self.index_location)
        codec._bind(spec, inner, index, grid)
        return codec

    def _bind(
        self, spec: ChunkSpec, inner: CodecChain, index: CodecChain, grid: tuple[int, ...]
    ) -> None:
        self._spec, self._inner, self._index, self._grid = spec, inner, index, grid
        self._n = math.prod(grid)
        self._strides = tuple(math.prod(grid[d + 1 :]) for d in range(len(grid)))
        # The recommended little-endian layout goes through the compiled pack/unpack kernels.
        endian = index.array_bytes.configuration().get("endian", "little")
        self._packed_index = not index.array_array and endian == "little"
        # A uint64 pair per inner chunk, and a 4-byte crc32c per checksum codec. Nothing here
        # is proportional to the number of inner chunks: opening stays cheap for any shard.
        self._index_size = 16 * self._n + 4 * len(index.bytes_bytes)
        self._morton: Int64s | None = None
        self._morton_rank: Int64s | None = None
        # Inner chains the core runs by itself (bytes, one compressor, crc32c) decode and
        # encode as one compiled job; others (transpose, nested sharding...) chunk by chunk.
        self._native = inner.native_form()

    @property
    def inner(self) -> CodecChain:
        """The CodecChain of the inner chunks (of a resolved codec)."""
        return self._inner

    @property
    def grid(self) -> tuple[int, ...]:
        """The number of inner chunks per shard along each axis (of a resolved codec)."""
        return self._grid

    @property
    def ninner(self) -> int:
        """The number of inner chunks per shard (of a resolved codec)."""
        return self._n

    def reads_whole(self, ntouched: int) -> bool:
        """Is a shard of which a read touches `ntouched` inner chunks fetched whole, in one
        request (when that is at least WHOLE_READ_SHARE of them), rather than its index and
        then the inner chunks' byte ranges (grouped by `coalesce`)? Asked by read_partial and
        by the engine's shard waves alike."""
        return ntouched >= WHOLE_READ_SHARE * self._n

    @property
    def inner_native_form(self) -> NativeForm | None:
        """The inner chain's CodecChain.native_form: None when the core does not run it."""
        return self._native

    @property
    def max_encoded_bytes(self) -> int:
        """The most bytes a valid shard takes: its index and every inner chunk at its most."""
        return self._index_size + self._n * self._inner.max_encoded_bytes

    def stored_bound(self) -> int:
        return self.max_encoded_bytes

    def batch_settings(self) -> NativeForm | None:
        """Settings of the native sharded batch over a directory store (zarrcore._native.shard_io)
        when it runs this codec: an inner chain the core runs and a little-endian index with
        or without a crc32c. None otherwise."""
        index_tail = [c.name for c in self._index.bytes_bytes]
        if self._native is None or not self._packed_index or index_tail not in ([], ["crc32c"]):
            return None
        return dict(
            self._native,
            chunk_shape=self.chunk_shape,
            index_at_start=self.index_location == "start",
            index_crc32c=bool(index_tail),
        )

    def write_order(self) -> Int64s | None:
        """C-order indices of the inner chunks in the order written shards lay them out
        (the array's Options.shard_write_order); None for C order."""
        if self._spec.options.shard_write_order == "C":
            return None
        if self._morton is None:
            self._morton = morton_order(self._grid)
        return self._morton

    def _layout(self, indices: Sequence[int]) -> Int64s:
        """The inner chunk indices `indices` in the order written shards lay them out."""
        ordered = np.sort(np.asarray(indices, dtype=np.int64))
        order = self.write_order()
        if order is None:
            return ordered
        if self._morton_rank is None:
            rank = np.empty(self._n, dtype=np.int64)
            rank[order] = np.arange(self._n, dtype=np.int64)
            self._morton_rank = rank
        return ordered[np.argsort(self._morton_rank[ordered], kind="stable")]

    # -- index -------------------------------------------------------------------------------
    def _encode_index(self, entries: Entries) -> BytesLike:
        if not self._packed_index:
            return self._index.encode(entries.reshape(self._index.spec.shape))
        data: BytesLike = kernels.shard_index_pack(entries)
        for codec in self._index.bytes_bytes:
            data = codec.encode(data, self._index.bytes_spec)
        return data

    def index_range(self) -> tuple[int, int | None]:
        """The (start, stop) byte range of a shard's index, as Store.get_ranges takes it."""
        if self.index_location == "start":
            return (0, self._index_size)
        return (-self._index_size, None)

    @overload
    def _read_index(self, shard: _Whole) -> Entries: ...

    @overload
    def _read_index(self, shard: _Shard) -> Entries | None: ...

    def _read_index(self, shard: _Shard) -> Entries | None:
        """The validated (n, 2) uint64 entries of `shard`, None when it is not stored."""
        data = shard.get(*self.index_range())
        return None if data is None else self.parse_index(data, shard.size)

    def parse_index(self, data: BytesLike, size: int | None = None) -> Entries:
        """The validated (n, 2) uint64 entries of the index bytes `data` of a shard of `size`
        bytes (None: not known, so entries past its end show only when read)."""
        isz = self._index_size
        at_start = self.index_location == "start"
        if len(data) < isz:
            raise ShardIndexError(f"shard is {len(data)} bytes, shorter than its {isz}-byte index")
        # Offsets count from the shard's first byte: with the index at the start they are checked
        # against the whole size here, and against the index's end below. A ranged read may
        # not know the size: entries past the end show as short reads in _blobs.
        if size is None:
            data_size = EMPTY - 1
        else:
            data_size = size if at_start else size - isz
        try:
            entries: Entries
            if self._packed_index:
                for codec in reversed(self._index.bytes_bytes):
                    data = codec.decode(data, self._index.bytes_spec)
                entries = kernels.shard_index_unpack(data, self._n, data_size)
            else:
                entries = self._index.decode(data).reshape(self._n, 2)
                kernels.shard_index_validate(entries, data_size)
        except ShardIndexError as e:
            raise ShardIndexError(
                f"{e} (inner chunks in C order over the {self._grid} grid)"
            ) from e
        except ChunkDecodeError as e:  # a bad checksum, chiefly
            raise type(e)(f"shard index: {e}") from e
        if at_start:
            inside = (entries[:, 0] < isz) & (entries[:, 1] > 0) & (entries[:, 1] != EMPTY)
            if inside.any():
                i = int(np.flatnonzero(inside)[0])
                raise ShardIndexError(
                    f"shard index entry of inner chunk {self.coords(i)} (offset {entries[i, 0]}, "
                    f"nbytes {entries[i, 1]}): overlaps the {isz}-byte index at the shard's start"
                )
        # An inner chunk larger than a valid one is refused before its bytes are fetched.
        limit = self._inner.max_encoded_bytes
        oversized = (entries[:, 1] > limit) & (entries[:, 1] != EMPTY)
        if oversized.any():
            i = int(np.flatnonzero(oversized)[0])
            raise ShardIndexError(
                f"shard index entry of inner chunk {self.coords(i)} (offset {entries[i, 0]}, "
                f"nbytes {entries[i, 1]}): more than the {limit} bytes {ENCODED_BOUND}"
            )
        return entries

    def coords(self, i: int) -> tuple[int, ...]:
        """The grid coordinates of the inner chunk at C-order index `i`."""
        return tuple(int(c) for c in np.unravel_index(i, self._grid))

    def _blobs(self, shard: _Shard | None, indices: Sequence[int]) -> Blobs:
        """Encoded bytes of the inner chunks `indices` (None for empty ones) from `shard`."""
        entries = None if shard is None else self._read_index(shard)
        if shard is None or entries is None:
            return [None] * len(indices)
        rows = entries.tolist()
        stored = [i for i in indices if rows[i][0] != EMPTY]
        found: dict[int, BytesLike] = dict(zip(stored, shard.fetch([rows[i] for i in stored])))
        for i, blob in found.items():
            if len(blob) != rows[i][1]:
                raise ShardIndexError(
                    f"shard index entry of inner chunk {self.coords(i)} (offset {rows[i][0]}, "
                    f"nbytes {rows[i][1]}): reaches past the end of the shard"
                )
        return [found.get(i) for i in indices]

    def _indexer(self, selection: Any) -> BasicIndexer:
        return BasicIndexer(selection, self._spec.shape, self.chunk_shape)

    def _box(self, selection: Any) -> tuple[tuple[slice, ...], tuple[Any, ...]]:
        """(box, inner) for an array selection of the shard: `box` a slice per axis spanning
        what it selects, `inner` the same selection relative to the box; so that memory goes
        with the selection's extent, not with the shard's declared size."""
        items = selection if isinstance(selection, tuple) else (selection,)
        if len(items) != len(self._spec.shape):
            raise SelectionError(f"shard selection {selection!r} does not have one item per axis")
        box: list[slice] = []
        inner: list[Any] = []
        for item, n in zip(items, self._spec.shape):
            if isinstance(item, slice):
                start, stop, step = item.indices(n)
                if step > 0 and start < stop:
                    box.append(slice(start, stop))
                    inner.append(slice(0, stop - start, step))
                else:
                    box.append(slice(0, n))
                    inner.append(item)
                continue
            index = np.asarray(item)
            if index.dtype.kind not in "iu":
                raise SelectionError(f"shard selection {selection!r}: expected integer arrays")
            if index.size == 0:
                box.append(slice(0, 0))
                inner.append(index)
                continue
            lo, hi = int(index.min()), int(index.max()) + 1
            if lo < 0 or hi > n:
                raise SelectionError(f"shard selection {selection!r} is outside the shard")
            box.append(slice(lo, hi))
            inner.append(index - lo)
        return tuple(box), tuple(inner)

    def _touched(self, indexer: BasicIndexer) -> list[int]:
        """C-order grid indices of the inner chunks `indexer` touches, in projection order."""
        index: Int64s = np.zeros((), dtype=np.int64)
        for pieces, stride in zip(indexer.dim_pieces, self._strides):
            index = np.add.outer(index, np.array([p[0] for p in pieces], dtype=np.int64) * stride)
        touched: list[int] = index.ravel().tolist()
        return touched

    def _native_job(
        self, native: NativeForm, indexer: BasicIndexer, src: Blobs, data: npt.NDArray[Any]
    ) -> _chunk_jobs.ShardJob:
        """A compiled job of the inner chain's `native` form over the inner chunks `indexer`
        touches, `data` the caller's array."""
        return _chunk_jobs.ShardJob(
            native, self.chunk_shape, self._grid, src, indexer.plans, data, self._spec.writes_empty
        )

    def _run(self, job: _chunk_jobs.ShardJob, work: Callable[[], None]) -> None:
        run_workers(work, job.ntasks, job.stop, self._spec.options.num_threads)
        failure = job.error()
        if failure is not None:
            error, i = failure
            raise _inner_error(error, self.coords(i)) from None

    # -- reads -------------------------------------------------------------------------------
    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        if out is None:
            out = np.empty(self._spec.shape, dtype=self._spec.dtype)
        self._read(_Whole(data), self._indexer(Ellipsis), out)
        return out

    def read_partial(self, store: Store, key: str, selection: Any, out: npt.NDArray[Any]) -> None:
        """Fill `out` with `selection` of the shard stored at `key`, fetching only the index and
        the inner chunks needed (or the whole object once when most of it is needed)."""
        if not is_basic_selection(selection):
            # Array selections: read the box they span (only its inner chunks), let numpy pick.
            box, inner = self._box(selection)
            region = np.empty(
                BasicIndexer(box, self._spec.shape, self.chunk_shape).shape, dtype=self._spec.dtype
            )
            self.read_partial(store, key, box, region)
            out[...] = region[inner]
            return
        indexer = self._indexer(selection)
        if self.reads_whole(math.prod(len(p) for p in indexer.dim_pieces)):
            data = get_at_most(store, key, self.max_encoded_bytes, ENCODED_BOUND)
            shard = None if data is None else _Whole(data)
            self._read(shard, indexer, out)
            return
        # One version of the shard throughout: a writer may replace it between the reads of
        # its index and of its inner chunks.
        with store.reader(key) as reader:
            self._read(
                None if reader is None else _Ranged(reader, self._spec.options), indexer, out
            )

    def _read(self, shard: _Shard | None, indexer: BasicIndexer, out: npt.NDArray[Any]) -> None:
        touched = self._touched(indexer)
        self._read_blobs(indexer, touched, self._blobs(shard, touched), out)

    def _read_blobs(
        self, indexer: BasicIndexer, touched: Sequence[int], blobs: Blobs, out: npt.NDArray[Any]
    ) -> None:
        """Fill `out` with `indexer`'s selection from `blobs`, the encoded inner chunks
        `touched` (None for empty ones)."""
        if all(blob is None for blob in blobs):
            out[...] = self._spec.fill_value
            return
        native = self._native
        if native is not None:
            src: Blobs = [None] * self._n
            for i, blob in zip(touched, blobs):
                src[i] = blob
            job = self._native_job(native, indexer, src, out)
            self._run(job, job.work_read)
            return

        def work(item: tuple[ChunkProjection, BytesLike | None]) -> None:
            p, blob = item
            try:
                self._inner.read_into(
                    blob, p.chunk_selection, out[p.out_selection + (Ellipsis,)], p.complete
                )
            except ZarrcoreError as e:
                raise _inner_error(e, p.coords) from e

        # Inner chunks decode in parallel, GIL released, straight into `out` when contiguous there.
        parallel_map(work, zip(indexer.projections(), blobs), self._spec.options.num_threads)

    def read_inner(self, store: Store, key: str, i: int) -> BytesLike | None:
        """The stored bytes of inner chunk `i` (C order) of the shard at `key`, from one
        version of it: its index, then that chunk's byte range. None when the shard or the
        inner chunk is not stored."""
        with store.reader(key) as reader:
            if reader is None:
                return None
            return self._blobs(_Ranged(reader, self._spec.options), [i])[0]

    def with_inner(self, data: BytesLike | None, i: int, blob: BytesLike) -> bytes:
        """The shard `data` (None: not stored) with inner chunk `i` (C order) stored as the
        encoded bytes `blob`; the other inner chunks keep their bytes."""
        blobs: Blobs = (
            [None] * self._n if data is None else self._blobs(_Whole(data), range(self._n))
        )
        blobs[i] = blob
        return self._assemble(_stored(blobs))

    def check(
        self, data: BytesLike, max_bytes: int = 64 << 20
    ) -> tuple[list[tuple[tuple[int, ...] | None, str]], list[tuple[int, ...]]]:
        """Check the shard `data` whole: its index (bounds, overlaps, checksum: a bad one raises
        ShardIndexError or ChecksumError), then every inner chunk decoded, slabs of inner
        chunks of about `max_bytes` at a time. Returns (damaged, empty): (coords, error) of
        each inner chunk that does not decode (coords None: a slab failed as a whole), and the
        coords of the inner chunks not stored."""
        shard = _Whole(data)
        entries = self._read_index(shard)
        empty = [self.coords(i) for i in np.flatnonzero(entries[:, 0] == EMPTY).tolist()]
        rows, inner = self._grid[0], self.chunk_shape
        row_bytes = self._spec.dtype.itemsize * math.prod(self._spec.shape) // rows
        step = max(1, max_bytes // max(row_bytes, 1))
        per_row = self._n // rows
        damaged: list[tuple[tuple[int, ...] | None, str]] = []
        for start in range(0, rows, step):
            stop = min(rows, start + step)
            selection = (slice(start * inner[0], stop * inner[0]),) + (slice(None),) * (
                len(inner) - 1
            )
            indexer = self._indexer(selection)
            try:
                self._read(shard, indexer, np.empty(indexer.shape, dtype=self._spec.dtype))
            except ZarrcoreError as slab_error:
                # Decode the slab's chunks one by one to name every damaged one.
                found = len(damaged)
                for i in range(start * per_row, stop * per_row):
                    offset, nbytes = entries[i].tolist()
                    if offset == EMPTY:
                        continue
                    try:
                        self._inner.decode(shard.get(offset, offset + nbytes))
                    except ZarrcoreError as e:
                        damaged.append((self.coords(i), str(e)))
                if len(damaged) == found:
                    damaged.append((None, str(slab_error)))
        return damaged, empty

    # -- writes ------------------------------------------------------------------------------
    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> bytes:
        blobs: Blobs = [None] * self._n
        self._update(blobs, Ellipsis, array)
        return self._assemble(_stored(blobs))

    def merge(
        self,
        data: BytesLike | None,
        selection: Any,
        value: npt.NDArray[Any],
        keep_empty: bool = False,
    ) -> bytes | None:
        """The shard `data` (None: not stored) with `selection` set to `value`: only the inner
        chunks it touches are re-encoded, the others keep their bytes. None when no inner
        chunk is left, unless `keep_empty` (then a shard of only its index)."""
        blobs: Blobs = (
            [None] * self._n if data is None else self._blobs(_Whole(data), range(self._n))
        )
        if is_basic_selection(selection):
            self._update(blobs, selection, value)
        else:
            # Array selections: rewrite the box they span (only its inner chunks).
            box, inner = self._box(selection)
            indexer = self._indexer(box)
            region = np.empty(indexer.shape, dtype=self._spec.dtype)
            touched = self._touched(indexer)
            self._read_blobs(indexer, touched, [blobs[i] for i in touched], region)
            region[inner] = value
            self._update(blobs, box, region)
        if not keep_empty and all(b is None for b in blobs):
            return None
        return self._assemble(_stored(blobs))

    def pieces(
        self, value: npt.NDArray[Any], keep_empty: bool, wave_chunks: int
    ) -> Iterator[BytesLike] | None:
        """The bytes of a shard holding `value` (the shard's shape) in pieces, made as they
        are taken: the inner chunks encoded in waves of about `wave_chunks` (in parallel,
        each wave a box of them consecutive in C order), then the index. Nothing when no
        inner chunk is stored, unless `keep_empty`. None where shards are not laid out in C
        order with the index last, so that no piece can go before the last is encoded."""
        if self.index_location == "start" or self.write_order() is not None:
            return None
        return self._pieces(value, keep_empty, wave_chunks)

    def _pieces(
        self, value: npt.NDArray[Any], keep_empty: bool, wave_chunks: int
    ) -> Iterator[BytesLike]:
        grid, chunk = self._grid, self.chunk_shape
        # The first axis along which runs of `step` rows of the later axes' chunks make a
        # wave: the axes before it take one index at a time.
        axis = next(a for a in range(len(grid)) if math.prod(grid[a + 1 :]) <= wave_chunks)
        row = math.prod(grid[axis + 1 :])  # (inner chunks of one index along `axis`)
        step = max(1, wave_chunks // row)
        blobs: Blobs = [None] * self._n
        entries = np.full((self._n, 2), EMPTY, dtype=np.uint64)

        def encoded_in_waves() -> Iterator[int]:
            first = 0
            for lead in itertools.product(*(range(g) for g in grid[:axis])):
                for start in range(0, grid[axis], step):
                    stop = min(start + step, grid[axis])
                    box = (
                        *(slice(i * c, (i + 1) * c) for i, c in zip(lead, chunk)),
                        slice(start * chunk[axis], stop * chunk[axis]),
                        *(slice(None),) * (len(grid) - axis - 1),
                    )
                    self._update(blobs, box, value[box])
                    last = first + (stop - start) * row
                    for i in range(first, last):
                        yield i
                        blobs[i] = None  # (handed on: not held until the shard ends)
                    first = last

        yield from self._placed(encoded_in_waves(), blobs, entries, 0)
        if keep_empty or (entries[:, 0] != EMPTY).any():
            yield self._encode_index(entries)

    def trim(
        self, data: BytesLike, bound: Sequence[int], keep_empty: bool = False
    ) -> BytesLike | None:
        """The shard `data` with everything at or beyond `bound` (an extent per axis from the
        shard's origin) reset to fill, as a shrinking resize leaves it: inner chunks wholly
        beyond it leave the index, those across it are decoded, cut and encoded again, and the
        rest keep their bytes. `data` itself when nothing changes; None when no inner chunk is
        left, unless `keep_empty` (then a shard of only its index). Memory goes with the stored
        inner chunks, never with the shard's declared size."""
        entries = self._read_index(_Whole(data))
        stored = np.flatnonzero(entries[:, 0] != EMPTY)
        chunk = np.array(self.chunk_shape, dtype=np.int64)
        starts = np.stack(np.unravel_index(stored, self._grid), axis=-1).astype(np.int64) * chunk
        limit = np.minimum(np.array(bound, dtype=np.int64), np.array(self._spec.shape))
        beyond = (starts >= limit).any(axis=1)
        across = ~beyond & (starts + chunk > limit).any(axis=1)
        if not beyond.any() and not across.any():
            return data
        view = memoryview(data)
        blobs: dict[int, BytesLike] = {}
        for i, (offset, nbytes) in zip(stored.tolist(), entries[stored].tolist()):
            blobs[i] = view[offset : offset + nbytes]
        for i in stored[beyond].tolist():
            del blobs[i]
        for i, inner_bound in zip(stored[across].tolist(), (limit - starts[across]).tolist()):
            try:
                value = self._inner.reset_beyond(blobs[i], inner_bound)
                if value is None:
                    continue
                blob = self._inner.encode_unless_fill(value)
            except ZarrcoreError as e:
                raise _inner_error(e, self.coords(i)) from e
            if blob is None:
                del blobs[i]
            else:
                blobs[i] = blob
        return self._assemble(blobs) if blobs or keep_empty else None

    def _update(self, blobs: Blobs, selection: Any, value: npt.NDArray[Any]) -> None:
        """Re-encode, in parallel, the inner chunks `selection` touches, into `blobs`."""
        indexer = self._indexer(selection)
        native = self._native
        if native is not None:
            job = self._native_job(native, indexer, blobs, value)
            self._run(job, job.work_write)
            for i, data in job.encoded():
                blobs[i] = data
            return

        def work(item: tuple[ChunkProjection, int]) -> None:
            p, i = item
            part = value[p.out_selection + (Ellipsis,)]
            try:
                if p.complete:
                    chunk = np.ascontiguousarray(part).reshape(self.chunk_shape)
                else:
                    chunk = self._inner.merge(blobs[i], p.chunk_selection, part)
                blobs[i] = self._inner.encode_unless_fill(chunk)
            except ZarrcoreError as e:
                raise _inner_error(e, p.coords) from e

        parallel_map(
            work, zip(indexer.projections(), self._touched(indexer)), self._spec.options.num_threads
        )

    @staticmethod
    def _placed(
        order: Iterable[int], blobs: Blobs | dict[int, BytesLike], entries: Entries, offset: int
    ) -> Iterator[BytesLike]:
        """The stored inner chunks of `blobs` in `order` (C-order indices), laid out one after
        another from `offset`: each one's (offset, nbytes) noted in `entries` as it is taken."""
        for i in order:
            blob = blobs[i]
            if blob is None:
                continue
            nbytes = memoryview(blob).nbytes
            entries[i] = (offset, nbytes)
            offset += nbytes
            yield blob

    def _assemble(self, blobs: dict[int, BytesLike]) -> bytes:
        """The shard bytes of the inner chunks `blobs` ({C-order index: encoded bytes}): laid
        out in the configured write order, with the index."""
        entries = np.full((self._n, 2), EMPTY, dtype=np.uint64)
        at_start = self.index_location == "start"
        order = self._layout(list(blobs)).tolist()
        parts = list(self._placed(order, blobs, entries, self._index_size if at_start else 0))
        index = self._encode_index(entries)
        pieces = [index, *parts] if at_start else [*parts, index]
        return b"".join(pieces)


register_codec(ShardingCodec)


def partial_codec(chain: CodecChain) -> ShardingCodec | None:
    """The array->bytes codec of `chain` when it reads and rewrites parts of a stored chunk
    itself (`read_partial`, `merge`, `trim`: sharding); only possible when no other codec
    transforms the chunk as a whole."""
    if chain.array_array or chain.bytes_bytes:
        return None
    codec = chain.array_bytes
    return codec if isinstance(codec, ShardingCodec) else None
