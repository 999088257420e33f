"""Chunk-level access over an array's ChunkEngine: a chunk (an inner chunk of a shard, or a
stored object) named by its grid coordinates, its stored bytes, its encoding and decoding by
the array's codec chains without the store, and stored writes of encoded bytes, checked by
decoding them first and stored through the engine's whole-object and read-modify-write
paths (their key locks and conditional writes)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .._native import memory as _memory
from ..codecs.sharding import partial_codec
from ..errors import (
    ChunkDecodeError,
    DataTypeMismatchError,
    SelectionError,
    ShapeMismatchError,
    ValueTooLargeError,
    ZarrcoreError,
)
from .partial_writes import read_modify_write

if TYPE_CHECKING:
    from ..codecs.base import BytesLike
    from ..codecs.chain import CodecChain
    from ..codecs.sharding import ShardingCodec
    from . import ChunkEngine

__all__ = ["ChunkAccess", "ChunkTarget"]


class ChunkTarget(NamedTuple):
    """One addressed chunk: an unsharded array's chunk, a shard, or an inner chunk."""

    kind: str  # "chunk", "shard" or "inner chunk": how messages name it, with `at`
    at: tuple[int, ...]  # its grid coordinates
    key: str  # the stored object holding it (its shard's key, for an inner chunk)
    chain: CodecChain  # the chain that codes it, resolved for its full shape
    region: tuple[slice, ...]  # the region of the array it holds, cut at the array's end
    shard: ShardingCodec | None  # for an inner chunk: the codec of its shard
    inner: int  # for an inner chunk: its C-order index in its shard

    @property
    def name(self) -> str:
        if self.kind == "inner chunk":
            return f"inner chunk {self.at!r} (shard {self.key!r})"
        return f"{self.kind} {self.at!r} ({self.key!r})"


def _named(error: ZarrcoreError, name: str) -> ZarrcoreError:
    """`error` again with the chunk's `name` in front of its message."""
    return type(error)(f"{name}: {error}")


class ChunkAccess:
    """The chunk-level calls of one array (Array.get_chunk and the others), made per
    ChunkEngine: they are made again with it whenever the metadata changes."""

    def __init__(self, engine: ChunkEngine) -> None:
        self.engine = engine
        sharding = engine.sharding
        self.inner_shape = None if sharding is None else sharding.chunk_shape
        ndim = len(engine.array_shape)
        # The grid's extent, in chunks: of the stored objects, and of the chunks `target`
        # addresses without `shard` (inner chunks when sharded).
        self.stored_counts = engine.grid.grid_shape
        self.counts = (
            self.stored_counts
            if sharding is None
            else tuple(-(-n // c) for n, c in zip(engine.array_shape, sharding.chunk_shape))
        )
        # The chains of chunks of the full shape, for `encode_chunk` and `decode_chunk` without
        # coordinates: the first chunk's (its inner chunks' when sharded), or its shard's.
        first = engine.chain_at((0,) * ndim)
        self.first_chains = {True: first, False: first if sharding is None else sharding.inner}

    def target(self, coords: Sequence[int], shard: bool) -> ChunkTarget:
        """The chunk at grid coordinates `coords`: on a sharded array an inner chunk (in the
        grid of `Array.chunks`), or with `shard` the shard; else the chunk. SelectionError
        naming the coordinates when they do not fit the grid."""
        engine = self.engine
        ndim = len(engine.array_shape)
        try:
            at = tuple([operator.index(c) for c in coords if not isinstance(c, (bool, np.bool_))])
        except TypeError:
            at = ()
        if len(at) != ndim or len(at) != len(coords):
            raise SelectionError(
                f"chunk coordinates {tuple(coords)!r}: expected {ndim} integers, one per axis"
            )
        inner = self.inner_shape
        stored = shard or inner is None
        counts = self.stored_counts if stored else self.counts
        for c, n in zip(at, counts):
            if not 0 <= c < n:
                kind = "shard" if stored and inner is not None else "chunk"
                raise SelectionError(
                    f"{kind} coordinates {at!r} are outside the grid of {counts!r} {kind}s"
                )
        grid = engine.grid
        if stored:
            kind = "shard" if inner is not None else "chunk"
            return ChunkTarget(
                kind, at, engine.key(at), engine.chain_at(at), grid.region(at), None, 0
            )
        assert inner is not None
        origin = [c * n for c, n in zip(at, inner)]
        shard_at = tuple(grid.chunks_within(d, o) for d, o in enumerate(origin))
        codec = partial_codec(engine.chain_at(shard_at))
        assert codec is not None  # (a sharded array's chains all shard)
        local = [(o - s) // n for o, s, n in zip(origin, grid.origin(shard_at), inner)]
        index = int(np.ravel_multi_index(local, codec.grid)) if local else 0
        region = tuple(
            slice(o, min(o + n, extent)) for o, n, extent in zip(origin, inner, engine.array_shape)
        )
        return ChunkTarget(
            "inner chunk", at, engine.key(shard_at), codec.inner, region, codec, index
        )

    # -- reads ---------------------------------------------------------------------------
    def stored_bytes(self, t: ChunkTarget) -> bytes | None:
        """The chunk's stored bytes as they are; None when it is not stored."""
        try:
            if t.shard is None:
                data = self.engine.get_stored(t.key)
            else:
                data = t.shard.read_inner(self.engine.store, t.key, t.inner)
        except ZarrcoreError as e:
            raise _named(e, t.name) from e
        return data if data is None or type(data) is bytes else bytes(data)

    def decode(
        self, t: ChunkTarget | None, data: BytesLike, chain: CodecChain, cut: bool = False
    ) -> npt.NDArray[Any]:
        """The chunk `t` (None: any chunk of `chain`'s full shape) encoded in `data`, of its
        full shape, or with `cut` the part inside the array; ChunkDecodeError (or a
        subclass) naming it when `data` does not decode."""
        name = "chunk" if t is None else t.name
        try:
            nbytes = memoryview(data).nbytes
        except TypeError:
            raise TypeError(f"{name}: data must be bytes-like, not {type(data).__name__}") from None
        if nbytes > chain.max_encoded_bytes:
            raise ValueTooLargeError(
                f"{name}: {nbytes} bytes, more than the {chain.max_encoded_bytes} any valid "
                f"encoding of it takes"
            )
        out = _memory.empty(chain.spec.shape, chain.spec.dtype)
        try:
            chunk = chain.decode(data, out=out)
        except ZarrcoreError as e:
            raise _named(e, name) from e
        if cut and t is not None and chunk.shape != self.region_shape(t):
            return chunk[self.inside(t)]
        return chunk

    @staticmethod
    def region_shape(t: ChunkTarget) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in t.region)

    def inside(self, t: ChunkTarget) -> tuple[slice, ...]:
        """The part of the chunk's full shape that lies inside the array."""
        return tuple(slice(0, s.stop - s.start) for s in t.region)

    # -- encodings -----------------------------------------------------------------------
    def fitted(
        self, t: ChunkTarget | None, value: npt.ArrayLike, chain: CodecChain
    ) -> npt.NDArray[Any]:
        """`value` as a C-contiguous chunk of `chain`'s full shape and the array's dtype: of
        that shape, or of the part of `t` inside the array (the rest then fill).
        DataTypeMismatchError for a dtype that does not cast safely, ShapeMismatchError for
        another shape."""
        spec = chain.spec
        name = "chunk" if t is None else t.name
        array = np.asarray(value)
        if array.dtype != spec.dtype and not np.can_cast(array.dtype, spec.dtype, "safe"):
            raise DataTypeMismatchError(
                f"{name}: value of dtype {array.dtype} does not cast safely to the array's "
                f"{spec.dtype}"
            )
        if array.shape == spec.shape:
            return np.ascontiguousarray(array, dtype=spec.dtype)
        if t is not None and array.shape == self.region_shape(t):
            # Not np.full: it turns a bytes fill into an S array first, dropping trailing NULs.
            chunk = np.empty(spec.shape, dtype=spec.dtype)
            chunk[...] = spec.fill_value
            chunk[self.inside(t)] = array
            return chunk
        shapes = (
            f"{spec.shape}"
            if t is None
            else f"{spec.shape} or, inside the array, {self.region_shape(t)}"
        )
        raise ShapeMismatchError(f"{name}: value of shape {array.shape}, expected {shapes}")

    def encode(self, t: ChunkTarget | None, value: npt.ArrayLike, chain: CodecChain) -> bytes:
        """The bytes `chain` encodes `value` (see `fitted`) into, all-fill chunks included."""
        chunk = self.fitted(t, value, chain)
        try:
            data = chain.encode(chunk)
        except ZarrcoreError as e:
            raise _named(e, "chunk" if t is None else t.name) from e
        return data if type(data) is bytes else bytes(data)

    # -- writes --------------------------------------------------------------------------
    def check(self, t: ChunkTarget, data: BytesLike) -> None:
        """Decode `data` as the chunk `t` would be, raising as `decode` does when it fails; a
        shard is checked whole (index, then every inner chunk), slab by slab."""
        codec = partial_codec(t.chain)
        if codec is None:
            self.decode(t, data, t.chain)
            return
        if memoryview(data).nbytes > t.chain.max_encoded_bytes:
            self.decode(t, data, t.chain)  # (refuses it, as any oversized value)
        try:
            damaged, _ = codec.check(data)
        except ZarrcoreError as e:
            raise _named(e, t.name) from e
        if damaged:
            where, why = damaged[0]
            raise ChunkDecodeError(
                f"{t.name}: inner chunk {where}: {why}" if where is not None else f"{t.name}: {why}"
            )

    def store_bytes(self, t: ChunkTarget, data: BytesLike) -> None:
        """Store the encoded bytes `data` as the chunk `t`, once they decode (`check`): a
        stored object as the engine stores whole ones (ChunkEngine.put_many: under its key
        lock where partial writes lock); an inner chunk by a read-modify-write of its shard
        (partial_writes.read_modify_write: conditional or locked), the shard's other inner
        chunks kept as stored."""
        self.check(t, data)
        engine = self.engine
        if t.shard is None:
            engine.put_many([(t.key, data)])
            return
        shard, i = t.shard, t.inner
        try:
            read_modify_write(
                engine, t.key, lambda stored, keep_empty: shard.with_inner(stored, i, data)
            )
        except ZarrcoreError as e:
            raise _named(e, t.name) from e
