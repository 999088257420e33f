"""The chunk-level methods of Array (docs/guide/chunks.md): one chunk's stored bytes or values
by its grid coordinates, and its encoding and decoding without the store. The work is done
by zarrcore.engine.chunk_access over the array's ChunkEngine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..engine.chunk_access import ChunkAccess, ChunkTarget

if TYPE_CHECKING:
    from ..codecs.base import BytesLike
    from ..engine import ChunkEngine

__all__ = ["ChunkMethods"]


class ChunkMethods:
    """Array's chunk-level calls. Coordinates index the grid of `Array.chunks`: chunks, or
    inner chunks on a sharded array; `shard=True` addresses the stored objects instead (the
    shards; on an unsharded array the chunks themselves)."""

    _chunk_access: ChunkAccess | None = None

    if TYPE_CHECKING:  # (what Array gives the methods)

        @property
        def chunk_engine(self) -> ChunkEngine: ...
        def _check_writable(self) -> None: ...
        def __getitem__(self, selection: Any) -> Any: ...
        def __setitem__(self, selection: Any, value: Any) -> None: ...

    def _access(self) -> ChunkAccess:
        access = self._chunk_access
        engine = self.chunk_engine
        if access is None or access.engine is not engine:  # (made again with the metadata)
            access = self._chunk_access = ChunkAccess(engine)
        return access

    def _target(self, coords: Sequence[int], shard: bool) -> ChunkTarget:
        return self._access().target(coords, shard)

    def get_chunk(self, coords: Sequence[int], *, shard: bool = False) -> npt.NDArray[Any]:
        """The values of the chunk at grid coordinates `coords`: the fill value where it is
        not stored. An edge chunk is cut at the array's end, as `a[region]` is.

        Parameters
        ----------
        coords : sequence of int
            One index per axis in the grid of `chunks` (inner chunks when sharded).
        shard : bool, optional
            Address the stored objects (shards) instead.

        Returns
        -------
        numpy.ndarray
            `a[region]` of the chunk's region, read as the array reads it.

        Raises
        ------
        SelectionError
            `coords` outside the grid (an IndexError).
        ChunkDecodeError
            The stored chunk does not decode.
        """
        region = self._target(coords, shard).region
        value = self[region if region else Ellipsis]
        return value if isinstance(value, np.ndarray) else np.asarray(value)

    def get_chunk_bytes(self, coords: Sequence[int], *, shard: bool = False) -> bytes | None:
        """The stored bytes of the chunk at `coords`, exactly as stored; None when it is not
        stored. An inner chunk's come from its shard's index and its byte range only.

        Parameters
        ----------
        coords : sequence of int
            One index per axis in the grid of `chunks` (inner chunks when sharded).
        shard : bool, optional
            Address the stored objects (shards) instead.

        Returns
        -------
        bytes or None
            The stored bytes, or None.

        Raises
        ------
        SelectionError
            `coords` outside the grid.
        ShardIndexError
            The index of its shard is damaged (inner chunks).
        """
        access = self._access()
        return access.stored_bytes(access.target(coords, shard))

    def encode_chunk(
        self, value: npt.ArrayLike, coords: Sequence[int] | None = None, *, shard: bool = False
    ) -> bytes:
        """The bytes the array's codecs encode `value` into as the chunk at `coords`, without
        touching the store (an all-fill chunk is encoded too).

        Parameters
        ----------
        value : array_like
            The chunk's values: of the full chunk shape, or (with `coords`) of the chunk's
            part inside the array, the rest then the fill value. Its dtype must cast safely
            to the array's.
        coords : sequence of int, optional
            Which chunk; needed for an edge chunk cut at the array's end, and on a
            rectilinear grid. None: a chunk of the full shape (the first chunk's chain).
        shard : bool, optional
            Address the stored objects (shards) instead.

        Returns
        -------
        bytes
            The encoded chunk.

        Raises
        ------
        DataTypeMismatchError
            A dtype that does not cast safely (a TypeError).
        ShapeMismatchError
            Another shape (a ValueError).
        ChunkEncodeError
            Values the codecs cannot represent.
        """
        access = self._access()
        if coords is None:
            return access.encode(None, value, access.first_chains[shard])
        t = access.target(coords, shard)
        return access.encode(t, value, t.chain)

    def decode_chunk(
        self, data: BytesLike, coords: Sequence[int] | None = None, *, shard: bool = False
    ) -> npt.NDArray[Any]:
        """The values the array's codecs decode `data` into, without touching the store.

        Parameters
        ----------
        data : bytes-like
            A chunk's encoded bytes (as `get_chunk_bytes` or `encode_chunk` give them).
        coords : sequence of int, optional
            Which chunk: its part inside the array is returned (an edge chunk is cut at the
            array's end). None: the full chunk shape (the first chunk's chain).
        shard : bool, optional
            Address the stored objects (shards) instead.

        Returns
        -------
        numpy.ndarray
            The decoded values.

        Raises
        ------
        ChunkDecodeError
            Bytes that do not decode: a bad checksum (ChecksumError), a wrong size, garbage;
            more bytes than any valid chunk takes (ValueTooLargeError).
        """
        access = self._access()
        if coords is None:
            return access.decode(None, data, access.first_chains[shard])
        t = access.target(coords, shard)
        return access.decode(t, data, t.chain, cut=True)

    def set_chunk(
        self, coords: Sequence[int], value: npt.ArrayLike, *, shard: bool = False
    ) -> None:
        """Write `value` as the whole chunk at `coords`, as `a[region] = value` writes it
        (the same roads, locks and conditional writes; an all-fill chunk is deleted unless
        `write_empty_chunks`). An inner chunk is written by a read-modify-write of its shard.

        Parameters
        ----------
        coords : sequence of int
            One index per axis in the grid of `chunks` (inner chunks when sharded).
        value : array_like
            Of the full chunk shape (what lies beyond the array's end is dropped), or of its
            part inside the array; its dtype must cast safely to the array's.
        shard : bool, optional
            Address the stored objects (shards) instead.

        Raises
        ------
        ReadOnlyError
            The array is read-only.
        SelectionError
            `coords` outside the grid.
        DataTypeMismatchError
            A dtype that does not cast safely.
        ShapeMismatchError
            Another shape.
        """
        self._check_writable()
        access = self._access()
        t = access.target(coords, shard)
        chunk = access.fitted(t, value, t.chain)
        self[t.region if t.region else Ellipsis] = chunk[access.inside(t)]

    def set_chunk_bytes(
        self, coords: Sequence[int], data: BytesLike, *, shard: bool = False
    ) -> None:
        """Store the encoded bytes `data` as the chunk at `coords`, as they are, once they
        decode as that chunk (shape, dtype, sizes and checksums checked by its codecs; a
        shard's index and every inner chunk). A chunk or shard replaces the stored object
        under the locks whole writes take; an inner chunk goes into its shard by a
        read-modify-write (conditional or locked, as partial writes), its other inner
        chunks kept.

        Parameters
        ----------
        coords : sequence of int
            One index per axis in the grid of `chunks` (inner chunks when sharded).
        data : bytes-like
            The encoded chunk (or shard).
        shard : bool, optional
            Address the stored objects (shards) instead.

        Raises
        ------
        ReadOnlyError
            The array is read-only.
        SelectionError
            `coords` outside the grid.
        ChunkDecodeError
            `data` does not decode as that chunk (nothing is stored).
        """
        self._check_writable()
        access = self._access()
        access.store_bytes(access.target(coords, shard), data)
