# cython: language_level=3
"""Array handles for compiled code (csrc/jobs/zc_array.c behind zarrcore/array_api.h): the
ArrayHandle that zarrcore.Array.native_handle() makes, the capsule _C_API holding the C
function table, and raise_status, which turns a failed call's status into its exception."""
import math
import os

import numpy as np

cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset, strncpy

from ._native.files cimport FileRoot
from ._native.jobs cimport ZC_BATCH_PATH_MAX, set_up_chain, zc_batch, zc_memstore, zc_shard_io
from ._native.status cimport ZC_MAX_NDIM

from ._native import memory as _memory
from ._native.cache import check_budget
from ._native.status import CALL_ERRNO, status_error
from .errors import (
    ChecksumError, ChunkDecodeError, LockUnavailableError, OutsideStoreError, ReadOnlyError,
    SelectionError, ShardIndexError, StoreError, ZarrcoreError,
)

__all__ = ["ArrayHandle", "CACHE_SETTLE_SECONDS", "dtype_code", "raise_status"]

cnp.import_array()

cdef extern from "jobs/zc_array.h":
    ctypedef struct zc_array_api:
        pass
    ctypedef struct zc_chunk_cache_stats:
        uint64_t hits, misses, inserts, evictions, stale
        size_t used, capacity
        int64_t entries
    zc_array *zc_array_new(const zc_batch *tmpl, const zc_shard_io *shards,
                           const int64_t *write_order, size_t head_len, int read_only,
                           size_t cache_bytes, int dtype)
    void zc_array_cache_stats(zc_array *a, zc_chunk_cache_stats *out)
    void zc_array_close(zc_array *a)
    const zc_array_api *zc_array_api_table()

cdef extern from "zarrcore/array_api.h":
    const zc_array_api *ZarrcoreArrayAPI

cdef extern from "cache/zc_chunk_version.h":
    long long ZC_CHUNK_CACHE_SETTLE_NS

# A file changed less than this many seconds ago is read but not cached (zc_chunk_version.h).
CACHE_SETTLE_SECONDS = ZC_CHUNK_CACHE_SETTLE_NS / 1e9

# The function table for C extensions (zc_import_array_api in zarrcore/array_api.h).
_C_API = PyCapsule_New(<void *>zc_array_api_table(), b"zarrcore.array_api._C_API", NULL)
# And for this module's own calls through the header's wrappers (importing the capsule would
# import this module while it initializes).
ZarrcoreArrayAPI = zc_array_api_table()

# The ZC_ARRAY_DTYPE_* of numpy's (kind, itemsize); kinds S and U take any size.
_DTYPE_CODES = {
    ("b", 1): ZC_ARRAY_DTYPE_BOOL,
    ("i", 1): ZC_ARRAY_DTYPE_INT8, ("i", 2): ZC_ARRAY_DTYPE_INT16,
    ("i", 4): ZC_ARRAY_DTYPE_INT32, ("i", 8): ZC_ARRAY_DTYPE_INT64,
    ("u", 1): ZC_ARRAY_DTYPE_UINT8, ("u", 2): ZC_ARRAY_DTYPE_UINT16,
    ("u", 4): ZC_ARRAY_DTYPE_UINT32, ("u", 8): ZC_ARRAY_DTYPE_UINT64,
    ("f", 2): ZC_ARRAY_DTYPE_FLOAT16, ("f", 4): ZC_ARRAY_DTYPE_FLOAT32,
    ("f", 8): ZC_ARRAY_DTYPE_FLOAT64,
    ("c", 8): ZC_ARRAY_DTYPE_COMPLEX64, ("c", 16): ZC_ARRAY_DTYPE_COMPLEX128,
    ("M", 8): ZC_ARRAY_DTYPE_DATETIME64, ("m", 8): ZC_ARRAY_DTYPE_TIMEDELTA64,
}


def dtype_code(dtype):
    """The ZC_ARRAY_DTYPE_* code of a numpy dtype (zarrcore/array_api.h), with
    ZC_ARRAY_DTYPE_SWAPPED when its items are not in the machine's byte order."""
    dtype = np.dtype(dtype)
    if dtype.kind == "S":
        code = ZC_ARRAY_DTYPE_BYTES
    elif dtype.kind == "U":
        code = ZC_ARRAY_DTYPE_UNICODE
    else:
        # (extension types such as ml_dtypes' are of kind V: OTHER)
        code = _DTYPE_CODES.get((dtype.kind, dtype.itemsize), ZC_ARRAY_DTYPE_OTHER)
    if code != ZC_ARRAY_DTYPE_OTHER and not dtype.isnative:
        code |= ZC_ARRAY_DTYPE_SWAPPED
    return code


# The exception of each ZC_ARRAY_ERR_* status (_status.status_error's entries), whose message
# the handle wrote.
_MEANINGS = {
    ZC_ARRAY_ERR_IO: (StoreError, "", CALL_ERRNO),
    ZC_ARRAY_ERR_LOCK: (LockUnavailableError, "", CALL_ERRNO),
    ZC_ARRAY_ERR_READ_ONLY: (ReadOnlyError, ""),
    ZC_ARRAY_ERR_SELECTION: (SelectionError, ""),
    ZC_ARRAY_ERR_DECODE: (ChunkDecodeError, ""),
    ZC_ARRAY_ERR_CHECKSUM: (ChecksumError, ""),
    ZC_ARRAY_ERR_SHARD_INDEX: (ShardIndexError, ""),
    ZC_ARRAY_ERR_NOMEM: (MemoryError, ""),
    ZC_ARRAY_ERR_OUTSIDE: (OutsideStoreError, ""),
    None: (ZarrcoreError, ""),
}


def raise_status(int status, int sys_errno, message):
    """Raise the exception of a failed array API call: `status` (ZC_ARRAY_ERR_*), the system's
    errno and the message from its zc_array_error."""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    if status != ZC_ARRAY_OK:
        raise status_error(status, message, _MEANINGS, sys_errno)


cdef void _release_capsule(object capsule) noexcept:
    zc_array_release(<zc_array *>PyCapsule_GetPointer(capsule, b"zarrcore.array"))


cdef _check_path(bytes path, int room, what):
    if len(path) >= ZC_BATCH_PATH_MAX - room:
        raise ZarrcoreError(f"{what} {os.fsdecode(path)!r} is too long for native access")


cdef class ArrayHandle:
    """A snapshot of an array for nogil region reads and writes from compiled code; see
    zarrcore/array_api.h. `read`, `write` and `read_chunk` call the same functions from Python
    (with the GIL released); `capsule()` hands the handle to C code."""

    def __cinit__(self):
        self.ptr = NULL

    def __init__(self, array, cache_bytes=0):
        chunks = array.chunk_engine
        store = chunks.store
        self.name = array.name
        self.dtype = array.dtype
        memory = store.native_memory
        if store.native_root is None and memory is None:
            raise ZarrcoreError(
                f"array {array.name!r}: a native handle needs a local directory store or a "
                f"MemoryStore holding its own data, not {store!r} (memory stores over a dict "
                f"passed in and remote stores are served by a[...])")
        if not chunks.grid.is_regular:
            # (its C planner places chunks by one shape: zc_array.c)
            raise ZarrcoreError(
                f"array {array.name!r}: a native handle needs a regular chunk grid, not the "
                f"{chunks.grid.name!r} chunk_grid of this array (a[...] serves it)")
        settings = chunks.core_settings
        sharding = settings if chunks.sharding is not None else None
        if settings is None:
            names = [c.name for c in chunks.chain.codecs]
            raise ZarrcoreError(
                f"array {array.name!r}: a native handle needs codecs the compiled core runs by "
                f"itself (bytes, at most one of zstd/blosc/gzip/zlib, crc32c; or sharding_indexed "
                f"over those with a little-endian index) and a fixed-size, non-structured data "
                f"type; this array has {names} and {array.dtype}")
        cdef size_t mem = 0
        cdef FileRoot files = None
        if memory is not None:
            # Keys are store keys; the store's key locks are its own (no lock file).
            head = chunks.key_head().encode()
            lock = b""
            head_len = 0
            mem = memory.address
        else:
            head = os.fsencode(chunks.key_head())
            lock = os.fsencode(chunks.node_dir())
            head_len = len(os.fsencode(store.native_root)) + 1
            files = store.files()
        _check_path(head, 64, "store path")
        _check_path(lock, 80, "store path")
        cdef zc_batch b
        cdef zc_shard_io io
        cdef const int64_t[::1] order
        cdef const int64_t *order_ptr = NULL
        cdef const unsigned char[::1] fill
        memset(&b, 0, sizeof(b))
        memset(&io, 0, sizeof(io))
        fill = settings["fill"]
        _, sep, lead_sep = chunks.key_layout
        if sharding is None:
            set_up_chain(&b.chain, settings)
            b.ndim = len(chunks.chunk_shape)
            for d in range(b.ndim):
                b.array_shape[d] = chunks.array_shape[d]
                b.chunk_shape[d] = chunks.chunk_shape[d]
            b.fill = &fill[0]
            b.fill_floatsize = settings["fill_floatsize"]
            b.write_empty_chunks = chunks.spec.writes_empty
            strncpy(b.key_head, head, ZC_BATCH_PATH_MAX - 1)
            strncpy(b.lock_dir, lock, ZC_BATCH_PATH_MAX - 1)
            b.sep = ord(sep)
            b.lead_sep = lead_sep
            if files is not None:
                b.root = files.root  # (zc_array_new takes a descriptor of its own)
            b.mem = <zc_memstore *>mem
        else:
            set_up_chain(&io.chain, settings)
            io.ndim = len(chunks.chunk_shape)
            for d in range(io.ndim):
                io.array_shape[d] = chunks.array_shape[d]
                io.shard_shape[d] = chunks.chunk_shape[d]
                io.chunk_shape[d] = settings["chunk_shape"][d]
            io.fill = &fill[0]
            io.fill_floatsize = settings["fill_floatsize"]
            io.write_empty_chunks = chunks.spec.writes_empty
            io.index_at_start = settings["index_at_start"]
            io.index_crc32c = settings["index_crc32c"]
            strncpy(io.key_head, head, ZC_BATCH_PATH_MAX - 1)
            strncpy(io.lock_dir, lock, ZC_BATCH_PATH_MAX - 1)
            io.sep = ord(sep)
            io.lead_sep = lead_sep
            if files is not None:
                io.root = files.root
            io.mem = <zc_memstore *>mem
            write_order = chunks.sharding.write_order()
            if write_order is not None:
                order = np.ascontiguousarray(write_order, dtype=np.int64)
                order_ptr = &order[0]
        inner = settings["chunk_shape"] if sharding is not None else chunks.chunk_shape
        chunk_bytes = array.dtype.itemsize * math.prod(inner)
        cache_bytes = check_budget(cache_bytes, "cache_bytes", chunk_bytes,
                                   "chunk" if sharding is None else "inner chunk")
        self.ptr = zc_array_new(&b, &io if sharding is not None else NULL, order_ptr, head_len,
                                array.read_only, cache_bytes, dtype_code(array.dtype))
        if self.ptr == NULL:
            raise MemoryError(f"array {array.name!r}: native handle")

    def __reduce__(self):
        # (Cython's own refusal names its pointer field.)
        raise TypeError(
            f"an ArrayHandle cannot be pickled or copied: it holds the native state of one "
            f"process; make a handle in each worker (array.native_handle()) from the array, "
            f"which pickles")

    def __dealloc__(self):
        if self.ptr != NULL:
            zc_array_release(self.ptr)

    def close(self):
        """Make every later call through this handle (and its capsules) fail with
        ZC_ARRAY_ERR_CLOSED; calls already running finish."""
        zc_array_close(self.ptr)

    @property
    def closed(self):
        return bool(zc_array_is_closed(self.ptr))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return f"<zarrcore.array_api.ArrayHandle {self.name!r} {state}>"

    def cache_info(self):
        """The decoded-chunk cache's counters: hits, misses, inserts, evictions, stale (entries
        dropped because the stored chunk changed), entries, used and capacity (bytes); all 0
        without a cache."""
        cdef zc_chunk_cache_stats st
        zc_array_cache_stats(self.ptr, &st)
        return {"hits": st.hits, "misses": st.misses, "inserts": st.inserts,
                "evictions": st.evictions, "stale": st.stale, "entries": st.entries,
                "used": st.used, "capacity": st.capacity}

    def capsule(self):
        """A PyCapsule named "zarrcore.array" holding the `zc_array *`, with a reference of its
        own (dropped when the capsule is freed)."""
        zc_array_retain(self.ptr)
        return PyCapsule_New(<void *>self.ptr, b"zarrcore.array", _release_capsule)

    @property
    def address(self):
        """The `zc_array *` as an integer, valid while this handle lives."""
        return <size_t>self.ptr

    @property
    def shape(self):
        cdef int64_t out[ZC_MAX_NDIM]
        zc_array_shape(self.ptr, out)
        return tuple(int(out[d]) for d in range(zc_array_ndim(self.ptr)))

    @property
    def chunks(self):
        """The chunk shape; the inner chunk shape when sharded."""
        cdef int64_t out[ZC_MAX_NDIM]
        zc_array_chunk_shape(self.ptr, out)
        return tuple(int(out[d]) for d in range(zc_array_ndim(self.ptr)))

    @property
    def shards(self):
        """The shard shape, or None when the array is not sharded."""
        cdef int64_t out[ZC_MAX_NDIM]
        if not zc_array_shard_shape(self.ptr, out):
            return None
        return tuple(int(out[d]) for d in range(zc_array_ndim(self.ptr)))

    @property
    def itemsize(self):
        return zc_array_itemsize(self.ptr)

    @property
    def dtype_code(self):
        """What zc_array_dtype tells C: a ZC_ARRAY_DTYPE_* code (zarrcore/array_api.h)."""
        return zc_array_dtype(self.ptr)

    @property
    def fill_value(self):
        """The fill value, one item of `dtype`."""
        out = np.empty((), self.dtype)
        zc_array_fill_value(self.ptr, cnp.PyArray_DATA(out))
        return out[()]

    def read(self, start, shape, step=None, out=None):
        """The region (items start + i * step along each axis, i < shape) as a new array, or
        read into `out` (any strides)."""
        if out is None:
            out = _memory.empty(tuple(shape), self.dtype)
        _call(self, start, shape, step, out, False)
        return out

    def write(self, start, value, step=None):
        """Write `value` (an array of the region's shape) into the region from `start`."""
        value = np.asarray(value, dtype=self.dtype)
        _call(self, start, value.shape, step, value, True)

    def read_chunk(self, coords):
        """The whole chunk (inner chunk when sharded) at grid `coords`, decoded."""
        out = _memory.empty(self.chunks, self.dtype)
        cdef int64_t c[ZC_MAX_NDIM]
        cdef zc_array_error err
        cdef int st
        cdef void *data = cnp.PyArray_DATA(out)
        _fill_axes(self.ptr, coords, c, "coords")
        with nogil:
            st = zc_array_read_chunk(self.ptr, c, data, &err)
        if st != ZC_ARRAY_OK:
            raise_status(err.status, err.sys_errno, <bytes>err.message)
        return out


cdef int _fill_axes(const zc_array *a, values, int64_t *out, what) except -1:
    n = zc_array_ndim(a)
    if len(values) != n:
        raise SelectionError(f"{what} {tuple(values)} needs {n} values")
    for d in range(n):
        out[d] = values[d]
    return 0


cdef _call(ArrayHandle h, start, shape, step, data, bint writing):
    """Read (or write) the region of `start`, `shape`, `step` into (from) the array `data`."""
    cdef int64_t s[ZC_MAX_NDIM]
    cdef int64_t n[ZC_MAX_NDIM]
    cdef int64_t k[ZC_MAX_NDIM]
    cdef ptrdiff_t strides[ZC_MAX_NDIM]
    cdef zc_array_error err
    cdef int st
    cdef int ndim = zc_array_ndim(h.ptr)
    _fill_axes(h.ptr, start, s, "start")
    _fill_axes(h.ptr, shape, n, "shape")
    if step is not None:
        _fill_axes(h.ptr, step, k, "step")
    if data.dtype != h.dtype or data.ndim != ndim:
        raise ValueError(f"the buffer must be a {ndim}-d {h.dtype} array")
    if tuple(data.shape) != tuple(shape):
        raise ValueError(f"the buffer has shape {data.shape}, the region {tuple(shape)}")
    if not writing and not data.flags.writeable:
        raise ValueError("the output buffer is read-only")
    for d in range(ndim):
        strides[d] = data.strides[d]
    cdef const int64_t *kp = k if step is not None else NULL
    cdef void *p = cnp.PyArray_DATA(<cnp.ndarray?>data)
    with nogil:
        if writing:
            st = zc_array_write(h.ptr, s, n, kp, p, strides, &err)
        else:
            st = zc_array_read(h.ptr, s, n, kp, p, strides, &err)
    if st != ZC_ARRAY_OK:
        raise_status(err.status, err.sys_errno, <bytes>err.message)
