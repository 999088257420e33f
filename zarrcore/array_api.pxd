# cython: language_level=3
"""The array API for Cython: region reads and writes of a zarrcore.Array without the GIL.

    cimport zarrcore.array_api as za
    za.import_array_api()                      # once, at module level
    handle = array.native_handle()             # a za.ArrayHandle; keep it while you call
    cdef za.zc_array *a = (<za.ArrayHandle>handle).ptr
    cdef za.zc_array_error err
    with nogil:
        status = za.zc_array_read(a, start, shape, NULL, buf, NULL, &err)
    if status != za.ZC_ARRAY_OK:
        za.raise_error(&err)

Build with include_dirs=[zarrcore.get_include()] and the same in Cython's include_path. The
functions are those of zarrcore/array_api.h, which documents them and the handle's lifetime.
"""
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t

cdef extern from "zarrcore/array_api.h":
    int zc_import_array_api() except -1

cdef extern from "zarrcore/array_api.h" nogil:
    int ZC_ARRAY_API_VERSION, ZC_ARRAY_MAX_NDIM, ZC_ARRAY_MESSAGE_MAX
    int ZC_ARRAY_OK, ZC_ARRAY_ERR_CLOSED, ZC_ARRAY_ERR_SELECTION, ZC_ARRAY_ERR_ARGUMENT
    int ZC_ARRAY_ERR_READ_ONLY, ZC_ARRAY_ERR_IO, ZC_ARRAY_ERR_LOCK, ZC_ARRAY_ERR_DECODE
    int ZC_ARRAY_ERR_CHECKSUM, ZC_ARRAY_ERR_SHARD_INDEX, ZC_ARRAY_ERR_NOMEM, ZC_ARRAY_ERR_OUTSIDE
    int ZC_ARRAY_ERR_NOT_IMPORTED

    ctypedef enum zc_array_dtype_code:
        ZC_ARRAY_DTYPE_OTHER, ZC_ARRAY_DTYPE_BOOL
        ZC_ARRAY_DTYPE_INT8, ZC_ARRAY_DTYPE_INT16, ZC_ARRAY_DTYPE_INT32, ZC_ARRAY_DTYPE_INT64
        ZC_ARRAY_DTYPE_UINT8, ZC_ARRAY_DTYPE_UINT16, ZC_ARRAY_DTYPE_UINT32, ZC_ARRAY_DTYPE_UINT64
        ZC_ARRAY_DTYPE_FLOAT16, ZC_ARRAY_DTYPE_FLOAT32, ZC_ARRAY_DTYPE_FLOAT64
        ZC_ARRAY_DTYPE_COMPLEX64, ZC_ARRAY_DTYPE_COMPLEX128
        ZC_ARRAY_DTYPE_DATETIME64, ZC_ARRAY_DTYPE_TIMEDELTA64
        ZC_ARRAY_DTYPE_BYTES, ZC_ARRAY_DTYPE_UNICODE, ZC_ARRAY_DTYPE_SWAPPED

    ctypedef struct zc_array:
        pass

    ctypedef struct zc_array_error:
        int status
        int sys_errno
        char message[512]

    void zc_array_retain(zc_array *a)
    void zc_array_release(zc_array *a)
    int zc_array_is_closed(const zc_array *a)
    int zc_array_ndim(const zc_array *a)
    void zc_array_shape(const zc_array *a, int64_t *out)
    void zc_array_chunk_shape(const zc_array *a, int64_t *out)
    int zc_array_shard_shape(const zc_array *a, int64_t *out)
    size_t zc_array_itemsize(const zc_array *a)
    void zc_array_fill_value(const zc_array *a, void *out)
    int zc_array_dtype(const zc_array *a)
    int zc_array_read(zc_array *a, const int64_t *start, const int64_t *shape,
                      const int64_t *step, void *out, const ptrdiff_t *out_strides,
                      zc_array_error *err)
    int zc_array_write(zc_array *a, const int64_t *start, const int64_t *shape,
                       const int64_t *step, const void *data, const ptrdiff_t *in_strides,
                       zc_array_error *err)
    int zc_array_read_chunk(zc_array *a, const int64_t *coords, void *out, zc_array_error *err)


cdef class ArrayHandle:
    """A handle of one array for compiled code (zarrcore.Array.native_handle())."""
    cdef zc_array *ptr
    cdef readonly object dtype
    cdef readonly str name


cdef inline int import_array_api() except -1:
    """Fetch the function table from zarrcore.array_api._C_API; once per module, with the GIL."""
    return zc_import_array_api()


cdef inline int raise_error(const zc_array_error *err) except -1:
    """Raise the ZarrcoreError subclass of a failed call's `err` (with the GIL)."""
    from zarrcore.array_api import raise_status
    raise_status(err.status, err.sys_errno, <bytes>err.message)
    return -1
