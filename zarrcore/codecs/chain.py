"""A chunk's codecs in order (array->array*, array->bytes, bytes->bytes*), resolved for its
spec: how one chunk is encoded and decoded, and whether the compiled batch runs it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import MetadataError
from ..runtime.config import config, size_with_slack
from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec
from .registry import codec_from_json

if TYPE_CHECKING:
    from .base import BytesLike, NativeForm

__all__ = ["CodecChain"]


def _naming(where: str, error: MetadataError) -> MetadataError:
    """A codec's MetadataError with the metadata key (`where`) in front of its message."""
    return error if where in str(error) else type(error)(f"{where}: {error}")


class CodecChain:
    """An ordered chain array->array* array->bytes bytes->bytes*, resolved for one chunk spec."""

    def __init__(self, codecs: Iterable[object], spec: ChunkSpec, where: str = "codecs") -> None:
        codecs = list(codecs)
        if len(codecs) > config.max_codecs:
            raise MetadataError(
                f"{where}: field 'codecs': {len(codecs)} codecs exceed config.max_codecs "
                f"({config.max_codecs}); raise it with zarrcore.config.set(max_codecs=...) or "
                "ZARRCORE_MAX_CODECS"
            )
        try:
            resolved = [codec_from_json(c, where) for c in codecs]
        except MetadataError as e:
            raise _naming(where, e) from e
        self.array_array: list[ArrayArrayCodec] = []
        self.bytes_bytes: list[BytesBytesCodec] = []
        array_bytes: ArrayBytesCodec | None = None
        for codec in resolved:
            if isinstance(codec, ArrayArrayCodec):
                if array_bytes is not None:
                    raise MetadataError(
                        f"{where}: array->array codec {codec.name!r} after array->bytes"
                    )
                self.array_array.append(codec)
            elif isinstance(codec, ArrayBytesCodec):
                if array_bytes is not None:
                    raise MetadataError(f"{where}: more than one array->bytes codec")
                array_bytes = codec
            elif isinstance(codec, BytesBytesCodec):
                if array_bytes is None:
                    raise MetadataError(
                        f"{where}: bytes->bytes codec {codec.name!r} before array->bytes"
                    )
                self.bytes_bytes.append(codec)
            else:
                raise MetadataError(f"{where}: {codec!r} is not a codec")
        if array_bytes is None:
            raise MetadataError(f"{where}: no array->bytes codec (such as 'bytes')")
        self.array_bytes = array_bytes
        self.spec = spec
        try:
            self._resolve(spec)
        except MetadataError as e:
            raise _naming(where, e) from e

    def _resolve(self, spec: ChunkSpec) -> None:
        # Resolve each codec against the spec it sees, in encode order.
        self.array_specs: list[ChunkSpec] = []
        resolved_aa: list[ArrayArrayCodec] = []
        for codec in self.array_array:
            codec = codec.resolve(spec)
            resolved_aa.append(codec)
            self.array_specs.append(spec)
            spec = codec.encoded_spec(spec)
        self.array_array = resolved_aa
        self.bytes_spec = spec
        self.array_bytes = self.array_bytes.resolve(spec)
        self.bytes_bytes = [c.resolve(spec) for c in self.bytes_bytes]
        # The bytes->bytes decoders stop near the size the array->bytes codec needs when it is
        # fixed (a bomb fails fast): what the bytes->bytes encoders make of it at most, at
        # least that size with slack; else at what config.max_chunk_bytes allows.
        fixed = self.array_bytes.encoded_nbytes(spec)
        bound = None
        if fixed is not None:
            bound = fixed
            for codec in self.bytes_bytes:
                bound = codec.encoded_bound(bound)
            bound = max(bound, size_with_slack(fixed))
        self._unwrap_spec = spec.evolve(max_bytes=bound)
        # True when the encoded bytes are the chunk's items in their in-memory layout.
        self._raw_items = not self.array_array and self.array_bytes.encodes_memory_layout(spec)

    @property
    def codecs(self) -> list[ArrayArrayCodec | ArrayBytesCodec | BytesBytesCodec]:
        return [*self.array_array, self.array_bytes, *self.bytes_bytes]

    def native_form(self) -> NativeForm | None:
        """The settings of the compiled core's chain (zarrcore._native.batch, chunk_jobs:
        ChunkBatch, ChunkWaves, ShardJob) when it runs this chain, else None: the native forms
        of its codecs composed, when each has one and they make a chain the core runs (at most
        one array->array codec, a filter of the items' bytes as they lie in memory, whose form
        then stands for the array->bytes codec's; at most one compressor; a crc32c only last);
        `max_stored` is max_encoded_bytes, beyond which the core refuses a stored chunk
        unread."""
        if len(self.array_array) > 1:
            return None
        if self.array_array:
            form = self.array_array[0].native_form(self.array_specs[0])
            if not self.array_bytes.encodes_memory_layout(self.bytes_spec):
                return None
        else:
            form = self.array_bytes.native_form(self.bytes_spec)
        forms = [c.native_form(self.bytes_spec) for c in self.bytes_bytes]
        # A byte shuffle first of them (numcodecs.shuffle on the serialized items, as HDF5's
        # shuffle filter reaches v3) is the items' shuffle of v2's filter: it joins their form.
        if (
            form is not None
            and forms
            and forms[0] is not None
            and "byte_shuffle" in forms[0]
            and "byte_shuffle" not in form
        ):
            form, forms = {**form, **forms[0]}, forms[1:]
        stages = [stage for stage in forms if stage is not None]
        if form is None or len(stages) < len(forms) or any("byte_shuffle" in s for s in stages):
            return None
        crc32c = bool(stages) and "crc32c" in stages[-1]
        compressors = stages[:-1] if crc32c else stages
        if len(compressors) > 1 or any("crc32c" in s for s in compressors):
            return None
        return {
            "crc32c": crc32c,
            "compressor": None,
            "max_stored": self.max_encoded_bytes,
            **form,
            **(compressors[0] if compressors else {}),
        }

    @property
    def verifies_integrity(self) -> bool:
        """Does decoding check a checksum somewhere along the chain (Codec.verifies_integrity)?
        Every stage decoded before it feeds it, so a changed stored byte fails the check."""
        return any(c.verifies_integrity for c in self.codecs)

    @property
    def max_encoded_bytes(self) -> int:
        """The most bytes a valid stored chunk of this chain takes, so a larger stored value is
        refused unread: a shard's index and inner chunks at their most; the limit of the
        bytes->bytes decoders when the bytes codec's output is of fixed size (what the
        bytes->bytes encoders make of it at most, `BytesBytesCodec.encoded_bound`); else
        config.max_stored_bytes."""
        # (A codec that bounds its stored objects itself reads and rewrites parts of them:
        # only when no other codec transforms the chunk as a whole.)
        bound = None if self.array_array or self.bytes_bytes else self.array_bytes.stored_bound()
        if bound is not None:
            return bound
        return self._unwrap_spec.max_bytes or config.max_stored_bytes

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.codecs]

    @property
    def decodes_in_place(self) -> bool:
        """True when decode(out=) writes the chunk straight into `out`."""
        return not self.array_array

    def decode(self, data: BytesLike, out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]:
        """Bytes to a C-ordered chunk of `spec` (written into `out` when given)."""
        for codec in reversed(self.bytes_bytes[1:]):
            data = codec.decode(data, self._unwrap_spec)
        if self.bytes_bytes:
            if out is not None and self._raw_items and out.flags.c_contiguous:
                # The stored bytes are the items as they lie in memory: decompress into `out`.
                self.bytes_bytes[0].decode_into(
                    data, out.reshape(-1).view(np.uint8), self._unwrap_spec
                )
                return out
            data = self.bytes_bytes[0].decode(data, self._unwrap_spec)
        if self.array_array:
            array = self.array_bytes.decode(data, self.bytes_spec)
            for codec, spec in zip(reversed(self.array_array), reversed(self.array_specs)):
                array = codec.decode(array, spec)
            if out is not None:
                kernels.copy_region(array, out)
                return out
            return array
        return self.array_bytes.decode(data, self.bytes_spec, out=out)

    def encode(self, array: npt.NDArray[Any]) -> BytesLike:
        for codec, spec in zip(self.array_array, self.array_specs):
            array = codec.encode(array, spec)
        data = self.array_bytes.encode(array, self.bytes_spec)
        for codec in self.bytes_bytes:
            data = codec.encode(data, self.bytes_spec)
        return data

    def read_into(
        self,
        data: BytesLike | None,
        selection: tuple[Any, ...],
        target: npt.NDArray[Any],
        complete: bool,
    ) -> None:
        """Put `selection` of the chunk encoded in `data` (None: not stored, so fill) in
        `target`."""
        if data is None:
            target[...] = self.spec.fill_value
        elif (
            complete
            and self.decodes_in_place
            and target.size == math.prod(self.spec.shape)
            and target.flags.c_contiguous
        ):
            self.decode(data, out=target.reshape(self.spec.shape))
        else:
            kernels.copy_region(self.decode(data)[selection + (Ellipsis,)], target)

    def merge(
        self, data: BytesLike | None, selection: tuple[Any, ...], part: npt.NDArray[Any]
    ) -> npt.NDArray[Any]:
        """The chunk encoded in `data` (fill when None) with `selection` set to `part`."""
        if data is None:
            # Not np.full: it turns a bytes fill into an S array first, dropping trailing NULs.
            chunk = np.empty(self.spec.shape, dtype=self.spec.dtype)
            chunk[...] = self.spec.fill_value
        else:
            chunk = self.decode(data)
            if not chunk.flags.writeable:
                chunk = chunk.copy()
        # The Ellipsis makes an all-int selection a 0-d view, so an object `part` is copied
        # item-wise rather than stored whole as one element.
        chunk[selection + (Ellipsis,)] = part
        return chunk

    def reset_beyond(self, data: BytesLike, bound: Iterable[int]) -> npt.NDArray[Any] | None:
        """The chunk encoded in `data` with what lies at or beyond `bound` (an extent per axis
        from its origin) set to fill; None when all that is fill already."""
        chunk = self.decode(data)
        fill = self.spec.fill_value
        beyond = [
            (slice(None),) * axis + (slice(b, None),)
            for axis, (b, n) in enumerate(zip(bound, self.spec.shape))
            if b < n
        ]
        if all(kernels.is_fill(chunk[region], fill) for region in beyond):
            return None
        chunk = np.array(chunk, copy=True)
        for region in beyond:
            chunk[region] = fill
        return chunk

    def encode_unless_fill(self, chunk: npt.NDArray[Any]) -> BytesLike | None:
        """The encoded chunk, or None when it is all fill and empty chunks are not written."""
        if not self.spec.writes_empty and kernels.is_fill(chunk, self.spec.fill_value):
            return None
        return self.encode(chunk)
