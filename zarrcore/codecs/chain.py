"""A chunk's codecs in order (array->array*, array->bytes, bytes->bytes*), resolved for its
spec: how one chunk is encoded and decoded, and whether the compiled batch runs it."""
import math
import sys

import numpy as np

from .. import kernels
from ..config import config, size_with_slack
from ..errors import MetadataError
from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec
from .blosc import SHUFFLES, BloscCodec
from .bytes import BytesCodec
from .crc32c import Crc32cCodec
from .gzip import GzipCodec, ZlibCodec
from .registry import codec_from_json
from .zstd import ZstdCodec


def _naming(where, error):
    """A codec's MetadataError with the metadata key (`where`) in front of its message."""
    return error if where in str(error) else type(error)(f"{where}: {error}")


class CodecChain:
    """An ordered chain array->array* array->bytes bytes->bytes*, resolved for one chunk spec."""

    def __init__(self, codecs, spec, where="codecs"):
        try:
            codecs = [codec_from_json(c, where) for c in codecs]
        except MetadataError as e:
            raise _naming(where, e) from e
        self.array_array, self.bytes_bytes = [], []
        self.array_bytes = None
        for codec in codecs:
            if isinstance(codec, ArrayArrayCodec):
                if self.array_bytes is not None:
                    raise MetadataError(f"{where}: array->array codec {codec.name!r} after array->bytes")
                self.array_array.append(codec)
            elif isinstance(codec, ArrayBytesCodec):
                if self.array_bytes is not None:
                    raise MetadataError(f"{where}: more than one array->bytes codec")
                self.array_bytes = codec
            elif isinstance(codec, BytesBytesCodec):
                if self.array_bytes is None:
                    raise MetadataError(f"{where}: bytes->bytes codec {codec.name!r} before array->bytes")
                self.bytes_bytes.append(codec)
            else:
                raise MetadataError(f"{where}: {codec!r} is not a codec")
        if self.array_bytes is None:
            raise MetadataError(f"{where}: no array->bytes codec (such as 'bytes')")
        self.spec = spec
        try:
            self._resolve(spec)
        except MetadataError as e:
            raise _naming(where, e) from e

    def _resolve(self, spec):
        # Resolve each codec against the spec it sees, in encode order.
        self.array_specs = []
        resolved_aa = []
        for codec in self.array_array:
            codec = codec.resolve(spec)
            resolved_aa.append(codec)
            self.array_specs.append(spec)
            spec = codec.encoded_spec(spec)
        self.array_array = resolved_aa
        self.bytes_spec = spec
        self.array_bytes = self.array_bytes.resolve(spec)
        self.bytes_bytes = [c.resolve(spec) for c in self.bytes_bytes]
        ab, dtype = self.array_bytes, np.dtype(spec.dtype)
        # The bytes->bytes decoders stop near the size the bytes codec needs when it is fixed
        # (a bomb fails fast); else at what config.max_chunk_bytes allows.
        fixed = type(ab) is BytesCodec and not dtype.hasobject and dtype.kind != "T"
        self._unwrap_spec = spec.evolve(max_bytes=size_with_slack(spec.nbytes) if fixed else None)
        # True when the encoded bytes are the chunk's items in their in-memory layout.
        self._raw_items = (
            not self.array_array and type(ab) is BytesCodec and not dtype.hasobject
            and not ab._swap(dtype) and ab._stored_struct(dtype) is None
        )

    @property
    def codecs(self):
        return [*self.array_array, self.array_bytes, *self.bytes_bytes]

    @property
    def verifies_integrity(self):
        """Does decoding check a checksum somewhere along the chain (Codec.verifies_integrity)?
        Every stage decoded before it feeds it, so a changed stored byte fails the check."""
        return any(c.verifies_integrity for c in self.codecs)

    @property
    def max_encoded_bytes(self):
        """The most bytes a valid stored chunk of this chain takes, so a larger stored value is
        refused unread: a shard's index and inner chunks at their most; the limit of the
        bytes->bytes decoders when the bytes codec's output is of fixed size (its slack
        covers what compressors and checksums add); else config.max_stored_bytes."""
        partial = self.partial_codec
        if partial is not None:
            return partial.max_encoded_bytes
        return self._unwrap_spec.max_bytes or config.max_stored_bytes

    def to_json(self):
        return [c.to_json() for c in self.codecs]

    @property
    def decodes_in_place(self):
        """True when decode(out=) writes the chunk straight into `out`."""
        return not self.array_array

    def decode(self, data, out=None):
        """Bytes to a C-ordered chunk of `spec` (written into `out` when given)."""
        for codec in reversed(self.bytes_bytes[1:]):
            data = codec.decode(data, self._unwrap_spec)
        if self.bytes_bytes:
            if out is not None and self._raw_items and out.flags.c_contiguous:
                # The stored bytes are the items as they lie in memory: decompress into `out`.
                self.bytes_bytes[0].decode_into(data, out.reshape(-1).view(np.uint8), self._unwrap_spec)
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

    def encode(self, array):
        for codec, spec in zip(self.array_array, self.array_specs):
            array = codec.encode(array, spec)
        data = self.array_bytes.encode(array, self.bytes_spec)
        for codec in self.bytes_bytes:
            data = codec.encode(data, self.bytes_spec)
        return data

    @property
    def partial_codec(self):
        """The array->bytes codec when it reads and rewrites parts of a stored chunk itself
        (`read_partial`/`merge`, as sharding does); only possible when no other codec
        transforms the chunk as a whole."""
        if self.array_array or self.bytes_bytes:
            return None
        return self.array_bytes if hasattr(self.array_bytes, "read_partial") else None

    def read_into(self, data, selection, target, complete):
        """Put `selection` of the chunk encoded in `data` (None: not stored, so fill) in `target`."""
        if data is None:
            target[...] = self.spec.fill_value
        elif (complete and self.decodes_in_place and target.size == math.prod(self.spec.shape)
              and target.flags.c_contiguous):
            self.decode(data, out=target.reshape(self.spec.shape))
        else:
            kernels.copy_region(self.decode(data)[selection + (Ellipsis,)], target)

    def merge(self, data, selection, part):
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

    def reset_beyond(self, data, bound):
        """The chunk encoded in `data` with what lies at or beyond `bound` (an extent per axis
        from its origin) set to fill; None when all that is fill already."""
        chunk = self.decode(data)
        fill = self.spec.fill_value
        beyond = [(slice(None),) * axis + (slice(b, None),)
                  for axis, (b, n) in enumerate(zip(bound, self.spec.shape)) if b < n]
        if all(kernels.is_fill(chunk[region], fill) for region in beyond):
            return None
        chunk = np.array(chunk, copy=True)
        for region in beyond:
            chunk[region] = fill
        return chunk

    def encode_unless_fill(self, chunk):
        """The encoded chunk, or None when it is all fill and empty chunks are not written."""
        if not self.spec.writes_empty and kernels.is_fill(chunk, self.spec.fill_value):
            return None
        return self.encode(chunk)


def _memory_byteorder(dtype):
    order = dtype.byteorder
    if order in ("=", "|"):
        return sys.byteorder
    return "little" if order == "<" else "big"


def batch_settings(chain, dtype, fill_value):
    """Keyword arguments for ChunkBatch when the chain is one it runs natively, else None."""
    if chain.array_array or type(chain.array_bytes) is not BytesCodec or dtype.hasobject:
        return None
    if dtype.fields is not None or dtype.subdtype is not None:
        return None
    compressors = list(chain.bytes_bytes)
    crc = bool(compressors) and type(compressors[-1]) is Crc32cCodec
    if crc:
        compressors.pop()
    if len(compressors) > 1:
        return None
    settings = {"crc32c": crc, "compressor": None}
    if compressors:
        codec = compressors[0]
        if type(codec) is ZstdCodec:
            settings.update(compressor="zstd", clevel=codec.level, checksum=codec.checksum)
        elif type(codec) is BloscCodec:
            settings.update(compressor="blosc", clevel=codec.clevel, cname=codec.cname,
                            shuffle=SHUFFLES.index(codec.shuffle), typesize=codec.typesize,
                            blocksize=codec.blocksize)
        elif type(codec) in (GzipCodec, ZlibCodec):
            settings.update(compressor="gzip" if type(codec) is GzipCodec else "zlib",
                            clevel=codec.level)
        else:
            return None
    itemsize = dtype.itemsize
    swap = (dtype.kind in "biufcmMU" and itemsize > 1
            and chain.array_bytes.endian not in (None, _memory_byteorder(dtype)))
    # Swapped in units: complex parts, UCS4 characters, else whole items.
    unit = itemsize // 2 if dtype.kind == "c" else 4 if dtype.kind == "U" else itemsize
    float_size = itemsize // 2 if dtype.kind == "c" else itemsize if dtype.kind == "f" else 0
    settings.update(
        itemsize=itemsize,
        swap_size=unit if swap else 0,
        fill=np.asarray(fill_value, dtype=dtype).tobytes(),
        fill_floatsize=float_size if _memory_byteorder(dtype) == sys.byteorder else 0,
    )
    return settings
