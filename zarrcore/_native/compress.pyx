# cython: language_level=3
"""GIL-free bindings to the compressors in csrc/.

Every function takes any C-contiguous buffer. Decoders accept `out`, a writable
C-contiguous buffer of exactly the decoded size, and fill it instead of allocating; or
`max_size`, past which they fail instead of allocating more.
Bad input raises ChunkDecodeError (ChecksumError for checksums); callers add the key.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release
from cpython.object cimport PyObject
from libc.stdlib cimport free
from libc.string cimport memset

from zarrcore._native.buffers cimport get_buffer
from zarrcore._native.pybytes cimport bytes_data_raw, bytes_shrink
from zarrcore._native.status cimport ZC_ERR_NOMEM, ZC_ERR_SIZE, ZC_ERR_UNSUPPORTED, ZC_OK

from zarrcore._native.status import status_error
from zarrcore.errors import ChunkDecodeError

cdef extern from "Python.h":
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char *v, Py_ssize_t n) except NULL
    void _decref "Py_DECREF"(PyObject *o)
    const Py_ssize_t PY_SSIZE_T_MAX

cdef extern from "codecs/zc_crc32c.h" nogil:
    unsigned int zc_crc32c(unsigned int crc, const void *data, size_t n)

cdef extern from "codecs/zc_blosc.h" nogil:
    size_t zc_blosc_bound(size_t n)
    int zc_blosc_compress(const void *src, size_t n, void *dst, size_t cap, int clevel, int shuffle,
                          size_t typesize, const char *cname, size_t blocksize, size_t *outlen)
    int zc_blosc_decoded_size(const void *src, size_t n, size_t *nbytes)
    int zc_blosc_decompress(const void *src, size_t n, void *dst, size_t dstlen, int threads)
    void zc_blosc_library_versions(const char **blosc, const char **zstd, const char **lz4,
                                   const char **zlib)

cdef extern from "codecs/zc_zstd.h" nogil:
    size_t zc_zstd_bound(size_t n)
    int zc_zstd_compress(const void *src, size_t n, void *dst, size_t cap, int level, int checksum,
                         size_t *outlen)
    int zc_zstd_content_size(const void *src, size_t n, int *known, size_t *size)
    int zc_zstd_decompress(const void *src, size_t n, void *dst, size_t dstlen)
    int zc_zstd_decompress_alloc(const void *src, size_t n, size_t maxlen, void **out, size_t *outlen)

cdef extern from "codecs/zc_zlib.h" nogil:
    int ZC_ZLIB_FORMAT_ZLIB, ZC_ZLIB_FORMAT_GZIP
    size_t zc_deflate_bound(size_t n, int fmt)
    int zc_deflate(const void *src, size_t n, void *dst, size_t cap, int level, int fmt, size_t *outlen)
    int zc_inflate(const void *src, size_t n, void *dst, size_t dstlen, int fmt)
    int zc_inflate_alloc(const void *src, size_t n, size_t maxlen, int fmt, void **out, size_t *outlen)

cdef extern from "codecs/zc_inflate.h" nogil:
    int zc_deflate_decode(const void *src, size_t n, void *dst, size_t dstlen, int fmt)

cdef extern from "codecs/zc_lz4.h" nogil:
    size_t zc_lz4_bound(size_t n)
    int zc_lz4_compress(const void *src, size_t n, void *dst, size_t cap, int accel, size_t *outlen)
    int zc_lz4_decoded_size(const void *src, size_t n, size_t *nbytes)
    int zc_lz4_decompress(const void *src, size_t n, void *dst, size_t dstlen)


# ---- buffers ----------------------------------------------------------------------------

cdef inline int _get_src(object obj, Py_buffer *view) except -1:
    return get_buffer(obj, view, PyBUF_SIMPLE, "input")


cdef inline int _get_out(object obj, Py_buffer *view) except -1:
    return get_buffer(obj, view, PyBUF_WRITABLE, "out")


def buffer_nbytes(obj):
    """Size in bytes of a C-contiguous buffer (including numpy datetime arrays)."""
    cdef Py_buffer view
    _get_src(obj, &view)
    n = view.len
    PyBuffer_Release(&view)
    return n


cdef object _adopt(PyObject *raw, Py_ssize_t n):
    """Shrink the fresh bytes `raw` to n and take over its reference (freed on failure)."""
    bytes_shrink(&raw, n)
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

_ENCODE_FAILED = {
    ZC_ERR_NOMEM: (MemoryError, "out of memory"),
    ZC_ERR_SIZE: (ValueError, "input too large to compress"),
    ZC_ERR_UNSUPPORTED: (ValueError, "compressor not available in this build"),
    None: (ValueError, "invalid compression parameters"),
}


cdef int _encode_failed(str codec, int status) except -1:
    raise status_error(status, f"{codec}: ", _ENCODE_FAILED)


cdef int _decode_failed(str codec, int status, Py_ssize_t srclen, Py_ssize_t expected) except -1:
    if expected >= 0:
        size = f"decoded size of {srclen} encoded bytes differs from the expected {expected}"
    else:
        size = f"decoded data of {srclen} encoded bytes is too large"
    raise status_error(status, f"{codec}: ", {
        ZC_ERR_NOMEM: (MemoryError, "out of memory while decoding"),
        ZC_ERR_SIZE: (ChunkDecodeError, size),
        ZC_ERR_UNSUPPORTED: (ChunkDecodeError, "data uses a feature not available in this build"),
        None: (ChunkDecodeError, f"corrupt or truncated data ({srclen} bytes)"),
    })


def library_versions():
    """{library: version} of c-blosc and the zstd, lz4 and zlib it bundles, as the linked
    libraries report them: what the wheels' SBOM names."""
    cdef const char *versions[4]
    zc_blosc_library_versions(&versions[0], &versions[1], &versions[2], &versions[3])
    return {name: versions[i].decode("ascii")
            for i, name in enumerate(("c-blosc", "zstd", "lz4", "zlib"))}


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


# ---- one encode and one decode path for every compressor ----------------------------------

cdef enum _Codec:
    _BLOSC, _ZSTD, _DEFLATE, _LZ4

cdef struct _Params:
    _Codec codec
    int level       # blosc clevel, zstd/deflate level, lz4 acceleration
    int fmt         # deflate: ZC_ZLIB_FORMAT_GZIP or ZC_ZLIB_FORMAT_ZLIB
    bint checksum   # zstd
    int shuffle     # blosc, and its typesize, blocksize and cname
    size_t typesize, blocksize
    const char *cname


cdef inline _Params _params(_Codec codec, int fmt=0) noexcept:
    """Parameters of `codec` with every setting zero."""
    cdef _Params p
    memset(&p, 0, sizeof(p))
    p.codec = codec
    p.fmt = fmt
    return p


cdef size_t _bound(const _Params *p, size_t n) noexcept nogil:
    if p.codec == _BLOSC:
        return zc_blosc_bound(n)
    if p.codec == _ZSTD:
        return zc_zstd_bound(n)
    if p.codec == _DEFLATE:
        return zc_deflate_bound(n, p.fmt)
    return zc_lz4_bound(n)


cdef int _encode(const _Params *p, const void *src, size_t n, void *dst, size_t cap,
                 size_t *outlen) noexcept nogil:
    if p.codec == _BLOSC:
        return zc_blosc_compress(src, n, dst, cap, p.level, p.shuffle, p.typesize, p.cname,
                                 p.blocksize, outlen)
    if p.codec == _ZSTD:
        return zc_zstd_compress(src, n, dst, cap, p.level, p.checksum, outlen)
    if p.codec == _DEFLATE:
        return zc_deflate(src, n, dst, cap, p.level, p.fmt, outlen)
    return zc_lz4_compress(src, n, dst, cap, p.level, outlen)


cdef int _decoded_size(const _Params *p, const void *src, size_t n, int *known,
                       size_t *size) noexcept nogil:
    """The decoded size when the encoding records it (*known = 1), else *known = 0."""
    known[0] = 1
    if p.codec == _BLOSC:
        return zc_blosc_decoded_size(src, n, size)
    if p.codec == _ZSTD:
        return zc_zstd_content_size(src, n, known, size)
    if p.codec == _LZ4:
        return zc_lz4_decoded_size(src, n, size)
    known[0] = 0
    return ZC_OK


cdef int _decode(const _Params *p, const void *src, size_t n, void *dst,
                 size_t dstlen) noexcept nogil:
    if p.codec == _BLOSC:
        return zc_blosc_decompress(src, n, dst, dstlen, 1)
    if p.codec == _ZSTD:
        return zc_zstd_decompress(src, n, dst, dstlen)
    if p.codec == _DEFLATE:
        return zc_inflate(src, n, dst, dstlen, p.fmt)
    return zc_lz4_decompress(src, n, dst, dstlen)


cdef int _decode_alloc(const _Params *p, const void *src, size_t n, size_t maxlen, void **out,
                       size_t *outlen) noexcept nogil:
    """Decode data of unknown decoded size (zstd, deflate) into a malloc'd buffer."""
    if p.codec == _ZSTD:
        return zc_zstd_decompress_alloc(src, n, maxlen, out, outlen)
    return zc_inflate_alloc(src, n, maxlen, p.fmt, out, outlen)


cdef object _to_new_bytes(str codec, const Py_buffer *view, const _Params *p, size_t cap,
                          bint encode):
    """`view` encoded (into at most `cap` bytes) or decoded (into exactly `cap`) as new bytes."""
    cdef PyObject *raw = _new_bytes(NULL, cap)
    cdef PyObject *done
    cdef char *dst = bytes_data_raw(raw)
    cdef size_t n = cap
    cdef int status
    try:
        with nogil:
            if encode:
                status = _encode(p, view.buf, view.len, dst, cap, &n)
            else:
                status = _decode(p, view.buf, view.len, dst, cap)
        if status != ZC_OK:
            if encode:
                _encode_failed(codec, status)
            _decode_failed(codec, status, view.len, cap)
        done, raw = raw, NULL
        return _adopt(done, n)
    finally:
        if raw != NULL:
            _decref(raw)


cdef object _compress(str codec, object src, _Params p):
    """`src` encoded as `p` says, as new bytes."""
    cdef Py_buffer view
    cdef size_t cap
    _get_src(src, &view)
    try:
        cap = _bound(&p, view.len)
        if cap == 0:
            _encode_failed(codec, ZC_ERR_SIZE)
        return _to_new_bytes(codec, &view, &p, cap, True)
    finally:
        PyBuffer_Release(&view)


cdef object _decompress(str codec, object src, object out, _Params p, object max_size):
    """`src` decoded into `out` (returned) or new bytes of at most `max_size` (None: no
    limit), checked before the decoded data is allocated or produced in full."""
    cdef Py_buffer view, oview
    cdef void *buf = NULL
    cdef size_t n = 0, limit = PY_SSIZE_T_MAX if max_size is None else max_size
    cdef int status, known = 0
    _get_src(src, &view)
    try:
        if out is not None:
            _get_out(out, &oview)
            try:
                with nogil:
                    status = _decode(&p, view.buf, view.len, oview.buf, oview.len)
                if status != ZC_OK:
                    _decode_failed(codec, status, view.len, oview.len)
            finally:
                PyBuffer_Release(&oview)
            return out
        status = _decoded_size(&p, view.buf, view.len, &known, &n)
        if status != ZC_OK:
            _decode_failed(codec, status, view.len, -1)
        if known and n > limit:
            raise ChunkDecodeError(f"{codec}: the data declares {n} decoded bytes, more than "
                                   f"the {limit} this chunk may hold")
        if known:
            return _to_new_bytes(codec, &view, &p, n, False)
        with nogil:
            status = _decode_alloc(&p, view.buf, view.len, limit, &buf, &n)
        if status != ZC_OK:
            _decode_failed(codec, status, view.len, -1)
        return _from_malloc(buf, n)
    finally:
        PyBuffer_Release(&view)


# ---- blosc ------------------------------------------------------------------------------

def blosc_compress(src, int typesize, int clevel, int shuffle, str cname, int blocksize=0):
    """Blosc-compress `src`; shuffle 0 none, 1 byte, 2 bit."""
    cdef bytes cname_b = cname.encode("ascii")
    cdef _Params p = _params(_BLOSC)
    if typesize < 1 or blocksize < 0:
        raise ValueError(f"blosc: invalid typesize {typesize} or blocksize {blocksize}")
    p.level, p.shuffle, p.typesize, p.blocksize, p.cname = clevel, shuffle, typesize, blocksize, cname_b
    return _compress("blosc", src, p)


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


def blosc_decompress(src, out=None, max_size=None):
    """Decompress a blosc buffer into `out` (returned) or new bytes."""
    return _decompress("blosc", src, out, _params(_BLOSC), max_size)


# ---- zstd -------------------------------------------------------------------------------

def zstd_compress(src, int level, bint checksum):
    """Compress `src` as one zstd frame (content size recorded)."""
    cdef _Params p = _params(_ZSTD)
    p.level, p.checksum = level, checksum
    return _compress("zstd", src, p)


def zstd_decompress(src, out=None, max_size=None):
    """Decompress all zstd frames of `src` (with or without content size) into `out` or bytes."""
    return _decompress("zstd", src, out, _params(_ZSTD), max_size)


# ---- gzip / zlib ------------------------------------------------------------------------

cdef object _deflate(str codec, object src, int level, int fmt):
    cdef _Params p = _params(_DEFLATE, fmt)
    if not 0 <= level <= 9:
        raise ValueError(f"{codec}: level must be 0-9, got {level}")
    p.level = level
    return _compress(codec, src, p)


def gzip_compress(src, int level):
    """Compress `src` as one gzip (RFC 1952) member."""
    return _deflate("gzip", src, level, ZC_ZLIB_FORMAT_GZIP)


def gzip_decompress(src, out=None, max_size=None):
    """Decompress one or more concatenated gzip members into `out` or bytes."""
    return _decompress("gzip", src, out, _params(_DEFLATE, ZC_ZLIB_FORMAT_GZIP), max_size)


def zlib_compress(src, int level):
    """Compress `src` as a zlib (RFC 1950) stream."""
    return _deflate("zlib", src, level, ZC_ZLIB_FORMAT_ZLIB)


def zlib_decompress(src, out=None, max_size=None):
    """Decompress a zlib stream into `out` or bytes."""
    return _decompress("zlib", src, out, _params(_DEFLATE, ZC_ZLIB_FORMAT_ZLIB), max_size)


def deflate_decode(src, out, bint gzip):
    """Decode a zlib (gzip: True, gzip members) stream into `out`, exactly its decoded size,
    by zarrcore's own DEFLATE decoder alone: True when it did, False when it refused (the
    *_decompress functions then ask zlib for the verdict)."""
    cdef Py_buffer view, oview
    cdef int status
    _get_src(src, &view)
    try:
        _get_out(out, &oview)
        try:
            with nogil:
                status = zc_deflate_decode(view.buf, view.len, oview.buf, oview.len,
                                           ZC_ZLIB_FORMAT_GZIP if gzip else ZC_ZLIB_FORMAT_ZLIB)
        finally:
            PyBuffer_Release(&oview)
    finally:
        PyBuffer_Release(&view)
    return status == ZC_OK


# ---- lz4 --------------------------------------------------------------------------------

def lz4_compress(src, int acceleration=1):
    """Compress `src` in numcodecs' LZ4 format (size prefix + block)."""
    cdef _Params p = _params(_LZ4)
    p.level = acceleration
    return _compress("lz4", src, p)


def lz4_decompress(src, out=None, max_size=None):
    """Decompress numcodecs LZ4 data into `out` or bytes."""
    return _decompress("lz4", src, out, _params(_LZ4), max_size)
