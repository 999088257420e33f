"""The Array: a chunked N-d array in a store, read and written with numpy semantics."""
import math

import numpy as np

from . import nodes
from .codecs.sharding import ShardingCodec
from .errors import ReadOnlyError
from .indexing import BasicIndexer, is_basic_selection
from .pipeline import ChunkStore


def _format_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


class Array:
    """A Zarr array. Index it like numpy: `a[...]`, `a[2:10, 5] = 1`."""

    def __init__(self, store, path, metadata, read_only=False):
        self._store = store
        self._path = path
        self._read_only = read_only or store.read_only
        self._set_metadata(metadata)

    def _set_metadata(self, metadata):
        self._metadata = metadata
        self._chunks = self._make_chunk_store(metadata)

    def _make_chunk_store(self, metadata):
        if metadata.zarr_format == 3:
            codecs = metadata.codecs
            where = nodes.join(self._path, nodes.V3_KEY)
        else:
            from .codecs.v2 import codecs_from_v2_metadata

            codecs = codecs_from_v2_metadata(metadata)
            where = nodes.join(self._path, nodes.V2_ARRAY_KEY)
        return ChunkStore(
            self._store, self._path, metadata.chunk_key, metadata.chunk_shape,
            metadata.dtype, self._read_fill_value(metadata), codecs, where,
            key_layout=self._key_layout(metadata), array_shape=metadata.shape,
        )

    @staticmethod
    def _key_layout(metadata):
        """(head, separator, leading separator) of the chunk keys; see ChunkStore."""
        if metadata.zarr_format == 2:
            return "", metadata.dimension_separator, False
        encoding = metadata.chunk_key_encoding
        if encoding.name == "default":
            return "c", encoding.separator, True
        return "", encoding.separator, False

    @staticmethod
    def _read_fill_value(metadata):
        # v2 `null` means undefined; read it as zeros as the peers do.
        if metadata.fill_value is None:
            return np.zeros((), dtype=metadata.dtype)[()]
        return metadata.fill_value

    # -- properties -----------------------------------------------------------
    @property
    def metadata(self):
        return self._metadata

    @property
    def store(self):
        return self._store

    @property
    def path(self):
        return self._path

    @property
    def name(self):
        return "/" + self._path

    @property
    def basename(self):
        return self._path.rsplit("/", 1)[-1]

    @property
    def read_only(self):
        return self._read_only

    @property
    def zarr_format(self):
        return self._metadata.zarr_format

    @property
    def shape(self):
        return tuple(self._metadata.shape)

    @property
    def dtype(self):
        return self._metadata.dtype

    @property
    def _sharding(self):
        """The sharding codec when it is the array's only codec (zarr-python's definition)."""
        codec = self._chunks.partial
        return codec if isinstance(codec, ShardingCodec) else None

    @property
    def chunks(self):
        """The chunk shape; the inner chunk shape when sharded."""
        sharding = self._sharding
        return sharding.chunk_shape if sharding else tuple(self._metadata.chunk_shape)

    @property
    def shards(self):
        """The shard shape, or None when the array is not sharded."""
        return tuple(self._metadata.chunk_shape) if self._sharding else None

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def fill_value(self):
        return self._metadata.fill_value

    @property
    def order(self):
        return getattr(self._metadata, "order", "C")

    @property
    def attrs(self):
        return nodes.Attributes(self)

    @property
    def codecs(self):
        return self._chunks.chain.codecs

    @property
    def cdata_shape(self):
        return tuple(math.ceil(s / c) for s, c in zip(self.shape, self.chunks))

    @property
    def nchunks(self):
        return math.prod(self.cdata_shape)

    def _stored_chunk_keys(self):
        meta = set(nodes.METADATA_KEYS)
        head = self._path + "/" if self._path else ""
        return [k for k in self._store.list_prefix(self._path) if k[len(head):] not in meta]

    @property
    def nchunks_initialized(self):
        """Stored chunks; for a sharded array, stored shards times chunks per shard."""
        per_shard = math.prod(self.shards) // math.prod(self.chunks) if self.shards else 1
        return len(self._stored_chunk_keys()) * per_shard

    def nbytes_stored(self):
        return sum(self._store.getsize(k) or 0 for k in self._stored_chunk_keys())

    @property
    def info(self):
        return ArrayInfo(self)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        return f"<zarrcore.Array {self._store!r}{self.name} shape={self.shape} dtype={self.dtype}>"

    def __array__(self, dtype=None, copy=None):
        data = self[...]
        return data if dtype is None else data.astype(dtype, copy=False)

    # -- metadata updates -----------------------------------------------------
    def _update_attributes(self, attributes):
        self._check_writable()
        self._metadata = self._metadata.evolve(attributes=attributes)
        nodes.write_metadata(self._store, self._path, self._metadata)

    def _check_writable(self):
        if self._read_only:
            raise ReadOnlyError(f"array {self.name!r} is read-only")

    # -- selection ------------------------------------------------------------
    def __getitem__(self, selection):
        if is_basic_selection(selection):
            return self.get_basic_selection(selection)
        raise IndexError(f"unsupported selection {selection!r}")

    def __setitem__(self, selection, value):
        if is_basic_selection(selection):
            return self.set_basic_selection(selection, value)
        raise IndexError(f"unsupported selection {selection!r}")

    def get_basic_selection(self, selection=Ellipsis, out=None):
        indexer = BasicIndexer(selection, self.shape, self._chunks.chunk_shape)
        return self._read(indexer, out)

    def set_basic_selection(self, selection, value):
        indexer = BasicIndexer(selection, self.shape, self._chunks.chunk_shape)
        self._write(indexer, value)

    def _read(self, indexer, out=None):
        if out is None:
            result = np.empty(indexer.drop_shape, dtype=self.dtype)
        else:
            if out.shape != indexer.shape:
                raise ValueError(f"out has shape {out.shape}, selection has shape {indexer.shape}")
            result = out.reshape(indexer.drop_shape)
            if not np.shares_memory(result, out):
                raise ValueError("out must be reshapeable without a copy")
        if result.size:
            self._chunks.read(indexer, result)
        if out is not None:
            return out
        result = result.reshape(indexer.shape)
        return result[()] if result.ndim == 0 else result

    def _write(self, indexer, value):
        self._check_writable()
        value = np.asarray(value)
        if value.dtype != self.dtype:
            # As numpy's own assignment casts: unsafe, but impossible conversions raise.
            value = value.astype(self.dtype)
        try:
            value = np.broadcast_to(value, indexer.shape).reshape(indexer.drop_shape)
        except ValueError:
            raise ValueError(
                f"could not broadcast value of shape {value.shape} to selection shape {indexer.shape}"
            ) from None
        if indexer.nitems:
            self._chunks.write(indexer, value)


class ArrayInfo:
    """A printable summary of an array."""

    def __init__(self, array):
        self._array = array

    def __repr__(self):
        a = self._array
        stored = a.nbytes_stored()
        rows = [
            ("Type", "Array"),
            ("Zarr format", a.zarr_format),
            ("Data type", a.dtype),
            ("Shape", a.shape),
            ("Chunk shape", a.chunks),
            ("Shard shape", a.shards),
            ("Order", a.order),
            ("Fill value", a.fill_value),
            ("Codecs", [c.to_json() for c in a.codecs]),
            ("No. bytes", f"{a.nbytes} ({_format_bytes(a.nbytes)})"),
            ("No. bytes stored", f"{stored} ({_format_bytes(stored)})"),
            ("Storage ratio", f"{a.nbytes / stored:.1f}" if stored else "-"),
            ("Chunks initialized", f"{a.nchunks_initialized}/{a.nchunks}"),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}} : {v}" for k, v in rows)

    __str__ = __repr__
