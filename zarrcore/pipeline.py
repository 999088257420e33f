"""The read/write pipeline: a codec chain per array, and chunk batches run on the thread pool."""
import numpy as np

from . import kernels
from .codecs import codec_from_json
from .codecs.base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec
from .config import config, parallel_map
from .errors import MetadataError, ZarrcoreError


def _with_key(error, key):
    """Re-raise a codec error with the store key in front of its message."""
    return type(error)(f"chunk {key!r}: {error}")


class CodecChain:
    """An ordered chain array->array* array->bytes bytes->bytes*, resolved for one chunk spec."""

    def __init__(self, codecs, spec, where="codecs"):
        codecs = [codec_from_json(c, where) for c in codecs]
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

    @property
    def codecs(self):
        return [*self.array_array, self.array_bytes, *self.bytes_bytes]

    def to_json(self):
        return [c.to_json() for c in self.codecs]

    @property
    def decodes_in_place(self):
        """True when decode(out=) writes the chunk straight into `out`."""
        return not self.array_array

    def decode(self, data, out=None):
        """Bytes to a C-ordered chunk of `spec` (written into `out` when given)."""
        for codec in reversed(self.bytes_bytes[1:]):
            data = codec.decode(data, self.bytes_spec)
        if self.bytes_bytes:
            data = self.bytes_bytes[0].decode(data, self.bytes_spec)
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


class ChunkStore:
    """Reads and writes the chunks of one array: keys, codec chain, fill value."""

    def __init__(self, store, key_prefix, chunk_key, chunk_shape, dtype, fill_value, codecs, where):
        self.store = store
        self.key_prefix = key_prefix
        self._chunk_key = chunk_key
        self.chunk_shape = tuple(chunk_shape)
        self.dtype = dtype
        self.fill_value = fill_value
        self.spec = ChunkSpec(self.chunk_shape, dtype, fill_value)
        self.chain = CodecChain(codecs, self.spec, where)

    def key(self, coords):
        rel = self._chunk_key(coords)
        return f"{self.key_prefix}/{rel}" if self.key_prefix else rel

    def decode(self, data, key, out=None):
        try:
            return self.chain.decode(data, out=out)
        except ZarrcoreError as e:
            raise _with_key(e, key) from e

    def read_chunk(self, coords):
        """The decoded chunk, or None when it is not stored."""
        key = self.key(coords)
        data = self.store.get(key)
        return None if data is None else self.decode(data, key)

    def fill_chunk(self):
        return np.full(self.chunk_shape, self.fill_value, dtype=self.dtype)

    # -- reads ---------------------------------------------------------------
    def read(self, indexer, out):
        """Fill `out` (shape indexer.drop_shape) with the selection, chunks in parallel."""
        size = int(np.prod(self.chunk_shape, dtype=np.int64))

        def work(p):
            key = self.key(p.coords)
            data = self.store.get(key)
            target = out[p.out_selection + (Ellipsis,)]
            if data is None:
                target[...] = self.fill_value
                return
            if (p.complete and self.chain.decodes_in_place and target.size == size
                    and target.flags.c_contiguous):
                self.decode(data, key, out=target.reshape(self.chunk_shape))
                return
            chunk = self.decode(data, key)
            kernels.copy_region(chunk[p.chunk_selection + (Ellipsis,)], target)

        parallel_map(work, indexer.projections())
        return out

    # -- writes --------------------------------------------------------------
    def write(self, indexer, value):
        """Write `value` (broadcast to indexer.drop_shape) into the selected chunks."""
        size = int(np.prod(self.chunk_shape, dtype=np.int64))

        def work(p):
            key = self.key(p.coords)
            part = value[p.out_selection + (Ellipsis,)]
            if p.complete and part.size == size:
                chunk = np.ascontiguousarray(part).reshape(self.chunk_shape)
                self.store_chunk(key, chunk)
                return
            # Read-modify-write: hold the key's lock so concurrent writers do not lose updates.
            with self.store.lock(key):
                data = None if p.complete else self.store.get(key)
                chunk = self.fill_chunk() if data is None else self.decode(data, key)
                if not chunk.flags.writeable:
                    chunk = chunk.copy()
                chunk[p.chunk_selection] = part
                self.store_chunk(key, chunk)

        parallel_map(work, indexer.projections())

    def store_chunk(self, key, chunk):
        if not config.write_empty_chunks and kernels.is_fill(chunk, self.fill_value):
            self.store.delete(key)
        else:
            self.store.set(key, self.chain.encode(chunk))
