# cython: language_level=3
"""GIL-free bindings to the compressors in csrc/.

Every function takes any C-contiguous buffer. Decoders accept `out`, a writable
C-contiguous buffer of exactly the decoded size, and fill it instead of allocating.
Bad input raises ChunkDecodeError (ChecksumError for checksums); callers add the key.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.object cimport PyObject
from libc.stdlib cimport free

import numpy as np

from zarrcore.errors import ChunkDecodeError

cdef extern from "Python.h":
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char *v, Py_ssize_t n) except NULL
    char* _bytes_data "PyBytes_AS_STRING"(PyObject *o) nogil  # a plain field access
    int _PyBytes_Resize(PyObject **o, Py_ssize_t n) except -1
    void _decref "Py_DECREF"(PyObject *o)
    const Py_ssize_t PY_SSIZE_T_MAX

cdef extern from "zc_status.h":
    int ZC_OK, ZC_ERR_SIZE, ZC_ERR_NOMEM, ZC_ERR_UNSUPPORTED

cdef extern from "zc_crc32c.h" nogil:
    unsigned int zc_crc32c(unsigned int crc, const void *data, size_t n)

cdef extern from "zc_blosc.h" nogil:
    size_t zc_blosc_bound(size_t n)
    int zc_blosc_compress(const void *src, size_t n, void *dst, size_t cap, int clevel, int shuffle,
                          size_t typesize, const char *cname, size_t blocksize, size_t *outlen)
    int zc_blosc_decoded_size(const void *src, size_t n, size_t *nbytes)
    int zc_blosc_decompress(const void *src, size_t n, void *dst, size_t dstlen)

cdef extern from "zc_zstd.h" nogil:
    size_t zc_zstd_bound(size_t n)
    int zc_zstd_compress(const void *src, size_t n, void *dst, size_t cap, int level, int checksum,
                         size_t *outlen)
    int zc_zstd_content_size(const void *src, size_t n, int *known, size_t *size)
    int zc_zstd_decompress(const void *src, size_t n, void *dst, size_t dstlen)
    int zc_zstd_decompress_alloc(const void *src, size_t n, size_t maxlen, void **out, size_t *outlen)

cdef extern from "zc_zlib.h" nogil:
    int ZC_ZLIB_FORMAT_ZLIB, ZC_ZLIB_FORMAT_GZIP
    size_t zc_deflate_bound(size_t n, int fmt)
    int zc_deflate(const void *src, size_t n, void *dst, size_t cap, int level, int fmt, size_t *outlen)
    int zc_inflate(const void *src, size_t n, void *dst, size_t dstlen, int fmt)
    int zc_inflate_alloc(const void *src, size_t n, size_t maxlen, int fmt, void **out, size_t *outlen)

cdef extern from "zc_lz4.h" nogil:
    size_t zc_lz4_bound(size_t n)
    int zc_lz4_compress(const void *src, size_t n, void *dst, size_t cap, int accel, size_t *outlen)
    int zc_lz4_decoded_size(const void *src, size_t n, size_t *nbytes)
    int zc_lz4_decompress(const void *src, size_t n, void *dst, size_t dstlen)


# ---- buffers ----------------------------------------------------------------------------

cdef int _get_buffer(object obj, Py_buffer *view, int flags, str what) except -1:
    try:
        PyObject_GetBuffer(obj, view, flags)
        return 0
    except (BufferError, ValueError) as e:  # numpy reports non-contiguity as ValueError
        err = e
    # numpy exports no buffer for datetime64/timedelta64 arrays; their bytes are plain data.
    if isinstance(obj, np.ndarray) and obj.flags.c_contiguous and not obj.dtype.hasobject:
        PyObject_GetBuffer(obj.reshape(-1).view(np.uint8), view, flags)
        return 0
    raise TypeError(f"{what} must be a {'writable ' if flags & PyBUF_WRITABLE else ''}"
                    f"C-contiguous buffer, got {type(obj).__name__}: {err}") from None


cdef inline int _get_src(object obj, Py_buffer *view) except -1:
    return _get_buffer(obj, view, PyBUF_SIMPLE, "input")


cdef inline int _get_out(object obj, Py_buffer *view) except -1:
    return _get_buffer(obj, view, PyBUF_WRITABLE, "out")


def buffer_nbytes(obj):
    """Size in bytes of a C-contiguous buffer (including numpy datetime arrays)."""
    cdef Py_buffer view
    _get_src(obj, &view)
    n = view.len
    PyBuffer_Release(&view)
    return n


cdef object _adopt(PyObject *raw, Py_ssize_t n):
    """Shrink the fresh bytes `raw` to n and take over its reference (freed on failure)."""
    _PyBytes_Resize(&raw, n)
    result = <object>raw
    _decref(raw)
    return result


cdef object _from_malloc(void *buf, size_t n):
    """Copy a malloc'd result into bytes and free it."""
    try:
        return (<char *>buf)[:n]
    finally:
        free(buf)


# ---- errors -----------------------------------------------------------------------------

cdef int _encode_failed(str codec, int status) except -1:
    if status == ZC_ERR_NOMEM:
        raise MemoryError(f"{codec}: out of memory")
    if status == ZC_ERR_SIZE:
        raise ValueError(f"{codec}: input too large to compress")
    if status == ZC_ERR_UNSUPPORTED:
        raise ValueError(f"{codec}: compressor not available in this build")
    raise ValueError(f"{codec}: invalid compression parameters")


cdef int _decode_failed(str codec, int status, Py_ssize_t srclen, Py_ssize_t expected) except -1:
    if status == ZC_ERR_NOMEM:
        raise MemoryError(f"{codec}: out of memory while decoding")
    if status == ZC_ERR_SIZE:
        if expected >= 0:
            raise ChunkDecodeError(
                f"{codec}: decoded size of {srclen} encoded bytes differs from the expected {expected}"
            )
        raise ChunkDecodeError(f"{codec}: decoded data of {srclen} encoded bytes is too large")
    if status == ZC_ERR_UNSUPPORTED:
        raise ChunkDecodeError(f"{codec}: data uses a feature not available in this build")
    raise ChunkDecodeError(f"{codec}: corrupt or truncated data ({srclen} bytes)")


# ---- crc32c -----------------------------------------------------------------------------

def crc32c(src, unsigned int value=0):
    """CRC-32C of `src`, continuing from the CRC `value` of preceding data."""
    cdef Py_buffer view
    cdef unsigned int c
    _get_src(src, &view)
    try:
        with nogil:
            c = zc_crc32c(value, view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return c


# ---- blosc ------------------------------------------------------------------------------

def blosc_compress(src, int typesize, int clevel, int shuffle, str cname, int blocksize=0):
    """Blosc-compress `src`; shuffle 0 none, 1 byte, 2 bit."""
    cdef Py_buffer view
    cdef PyObject *raw = NULL
    cdef PyObject *done
    cdef size_t n = 0, cap
    cdef int status
    cdef bytes cname_b = cname.encode("ascii")
    cdef const char *cn = cname_b
    if typesize < 1 or blocksize < 0:
        raise ValueError(f"blosc: invalid typesize {typesize} or blocksize {blocksize}")
    _get_src(src, &view)
    try:
        cap = zc_blosc_bound(view.len)
        raw = _new_bytes(NULL, cap)
        with nogil:
            status = zc_blosc_compress(view.buf, view.len, _bytes_data(raw), cap, clevel, shuffle,
                                       typesize, cn, blocksize, &n)
        if status != ZC_OK:
            _encode_failed("blosc", status)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)
        PyBuffer_Release(&view)


def blosc_decoded_size(src):
    """Decoded size recorded in a validated blosc header."""
    cdef Py_buffer view
    cdef size_t n = 0
    cdef int status
    _get_src(src, &view)
    try:
        status = zc_blosc_decoded_size(view.buf, view.len, &n)
        if status != ZC_OK:
            _decode_failed("blosc", status, view.len, -1)
        return n
    finally:
        PyBuffer_Release(&view)


def blosc_decompress(src, out=None):
    """Decompress a blosc buffer into `out` (returned) or new bytes."""
    cdef Py_buffer view, oview
    cdef PyObject *raw = NULL
    cdef PyObject *done
    cdef size_t n = 0
    cdef int status
    _get_src(src, &view)
    try:
        if out is not None:
            _get_out(out, &oview)
            try:
                with nogil:
                    status = zc_blosc_decompress(view.buf, view.len, oview.buf, oview.len)
                if status != ZC_OK:
                    _decode_failed("blosc", status, view.len, oview.len)
            finally:
                PyBuffer_Release(&oview)
            return out
        status = zc_blosc_decoded_size(view.buf, view.len, &n)
        if status != ZC_OK:
            _decode_failed("blosc", status, view.len, -1)
        raw = _new_bytes(NULL, n)
        with nogil:
            status = zc_blosc_decompress(view.buf, view.len, _bytes_data(raw), n)
        if status != ZC_OK:
            _decode_failed("blosc", status, view.len, n)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)
        PyBuffer_Release(&view)


# ---- zstd -------------------------------------------------------------------------------

def zstd_compress(src, int level, bint checksum):
    """Compress `src` as one zstd frame (content size recorded)."""
    cdef Py_buffer view
    cdef PyObject *raw = NULL
    cdef PyObject *done
    cdef size_t n = 0, cap
    cdef int status
    _get_src(src, &view)
    try:
        cap = zc_zstd_bound(view.len)
        if cap == 0:
            _encode_failed("zstd", ZC_ERR_SIZE)
        raw = _new_bytes(NULL, cap)
        with nogil:
            status = zc_zstd_compress(view.buf, view.len, _bytes_data(raw), cap, level, checksum, &n)
        if status != ZC_OK:
            _encode_failed("zstd", status)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)
        PyBuffer_Release(&view)


def zstd_decompress(src, out=None):
    """Decompress all zstd frames of `src` (with or without content size) into `out` or bytes."""
    cdef Py_buffer view, oview
    cdef PyObject *raw = NULL
    cdef PyObject *done
    cdef void *buf = NULL
    cdef size_t n = 0
    cdef int status, known = 0
    _get_src(src, &view)
    try:
        if out is not None:
            _get_out(out, &oview)
            try:
                with nogil:
                    status = zc_zstd_decompress(view.buf, view.len, oview.buf, oview.len)
                if status != ZC_OK:
                    _decode_failed("zstd", status, view.len, oview.len)
            finally:
                PyBuffer_Release(&oview)
            return out
        status = zc_zstd_content_size(view.buf, view.len, &known, &n)
        if status != ZC_OK:
            _decode_failed("zstd", status, view.len, -1)
        if not known:
            with nogil:
                status = zc_zstd_decompress_alloc(view.buf, view.len, PY_SSIZE_T_MAX, &buf, &n)
            if status != ZC_OK:
                _decode_failed("zstd", status, view.len, -1)
            return _from_malloc(buf, n)
        raw = _new_bytes(NULL, n)
        with nogil:
            status = zc_zstd_decompress(view.buf, view.len, _bytes_data(raw), n)
        if status != ZC_OK:
            _decode_failed("zstd", status, view.len, n)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)
        PyBuffer_Release(&view)


# ---- gzip / zlib ------------------------------------------------------------------------

cdef object _deflate(str codec, object src, int level, int fmt):
    cdef Py_buffer view
    cdef PyObject *raw = NULL
    cdef PyObject *done
    cdef size_t n = 0, cap
    cdef int status
    if not 0 <= level <= 9:
        raise ValueError(f"{codec}: level must be 0-9, got {level}")
    _get_src(src, &view)
    try:
        cap = zc_deflate_bound(view.len, fmt)
        if cap == 0:
            _encode_failed(codec, ZC_ERR_SIZE)
        raw = _new_bytes(NULL, cap)
        with nogil:
            status = zc_deflate(view.buf, view.len, _bytes_data(raw), cap, level, fmt, &n)
        if status != ZC_OK:
            _encode_failed(codec, status)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)
        PyBuffer_Release(&view)


cdef object _inflate(str codec, object src, object out, int fmt):
    cdef Py_buffer view, oview
    cdef void *buf = NULL
    cdef size_t n = 0
    cdef int status
    _get_src(src, &view)
    try:
        if out is not None:
            _get_out(out, &oview)
            try:
                with nogil:
                    status = zc_inflate(view.buf, view.len, oview.buf, oview.len, fmt)
                if status != ZC_OK:
                    _decode_failed(codec, status, view.len, oview.len)
            finally:
                PyBuffer_Release(&oview)
            return out
        with nogil:
            status = zc_inflate_alloc(view.buf, view.len, PY_SSIZE_T_MAX, fmt, &buf, &n)
        if status != ZC_OK:
            _decode_failed(codec, status, view.len, -1)
        return _from_malloc(buf, n)
    finally:
        PyBuffer_Release(&view)


def gzip_compress(src, int level):
    """Compress `src` as one gzip (RFC 1952) member."""
    return _deflate("gzip", src, level, ZC_ZLIB_FORMAT_GZIP)


def gzip_decompress(src, out=None):
    """Decompress one or more concatenated gzip members into `out` or bytes."""
    return _inflate("gzip", src, out, ZC_ZLIB_FORMAT_GZIP)


def zlib_compress(src, int level):
    """Compress `src` as a zlib (RFC 1950) stream."""
    return _deflate("zlib", src, level, ZC_ZLIB_FORMAT_ZLIB)


def zlib_decompress(src, out=None):
    """Decompress a zlib stream into `out` or bytes."""
    return _inflate("zlib", src, out, ZC_ZLIB_FORMAT_ZLIB)


# ---- lz4 --------------------------------------------------------------------------------

def lz4_compress(src, int acceleration=1):
    """Compress `src` in numcodecs' LZ4 format (size prefix + block)."""
    cdef Py_buffer view
    cdef PyObject *raw = NULL
    cdef PyObject *done
    cdef size_t n = 0, cap
    cdef int status
    _get_src(src, &view)
    try:
        cap = zc_lz4_bound(view.len)
        if cap == 0:
            _encode_failed("lz4", ZC_ERR_SIZE)
        raw = _new_bytes(NULL, cap)
        with nogil:
            status = zc_lz4_compress(view.buf, view.len, _bytes_data(raw), cap, acceleration, &n)
        if status != ZC_OK:
            _encode_failed("lz4", status)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)
        PyBuffer_Release(&view)


def lz4_decompress(src, out=None):
    """Decompress numcodecs LZ4 data into `out` or bytes."""
    cdef Py_buffer view, oview
    cdef PyObject *raw = NULL
    cdef PyObject *done
    cdef size_t n = 0
    cdef int status
    _get_src(src, &view)
    try:
        if out is not None:
            _get_out(out, &oview)
            try:
                with nogil:
                    status = zc_lz4_decompress(view.buf, view.len, oview.buf, oview.len)
                if status != ZC_OK:
                    _decode_failed("lz4", status, view.len, oview.len)
            finally:
                PyBuffer_Release(&oview)
            return out
        status = zc_lz4_decoded_size(view.buf, view.len, &n)
        if status != ZC_OK:
            _decode_failed("lz4", status, view.len, -1)
        raw = _new_bytes(NULL, n)
        with nogil:
            status = zc_lz4_decompress(view.buf, view.len, _bytes_data(raw), n)
        if status != ZC_OK:
            _decode_failed("lz4", status, view.len, n)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)
        PyBuffer_Release(&view)
