# cython: language_level=3
"""GIL-free bindings to the numcodecs filter kernels in csrc/: checksums, delta, shuffle.

Inputs are any C-contiguous buffers; outputs are new uint8 numpy arrays. Bad input raises
ChunkDecodeError (ChecksumError for a mismatch); callers add the key.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint32_t

import numpy as np

from zarrcore.errors import ChecksumError, ChunkDecodeError

cdef extern from "zc_status.h":
    int ZC_OK, ZC_ERR_CORRUPT, ZC_ERR_SIZE, ZC_ERR_PARAM, ZC_ERR_CHECKSUM, ZC_ERR_OVERLAP

cdef extern from "zc_checksums.h" nogil:
    int ZC_CHECKSUM_CRC32, ZC_CHECKSUM_ADLER32, ZC_CHECKSUM_FLETCHER32, ZC_CHECKSUM_JENKINS_LOOKUP3
    int zc_checksum32(int algo, uint32_t seed, const void *prefix, size_t prefixlen,
                      const void *data, size_t n, uint32_t *out)
    int zc_checksum_frame(int algo, uint32_t seed, const void *prefix, size_t prefixlen,
                          int at_end, const void *src, size_t n, void *dst, size_t dstlen)
    int zc_checksum_verify(int algo, uint32_t seed, const void *prefix, size_t prefixlen,
                           int at_end, const void *src, size_t n, size_t *offset,
                           uint32_t *stored, uint32_t *computed)

cdef extern from "zc_delta.h" nogil:
    int ZC_DELTA_INT, ZC_DELTA_FLOAT
    int zc_delta_encode(void *data, size_t n, size_t count, int kind, size_t width)
    int zc_delta_decode(void *data, size_t n, size_t count, int kind, size_t width)

cdef extern from "zc_shuffle.h" nogil:
    int zc_shuffle(const void *src, void *dst, size_t n, size_t elementsize)
    int zc_unshuffle(const void *src, void *dst, size_t n, size_t elementsize)

ALGORITHMS = {
    "crc32": ZC_CHECKSUM_CRC32,
    "adler32": ZC_CHECKSUM_ADLER32,
    "fletcher32": ZC_CHECKSUM_FLETCHER32,
    "jenkins_lookup3": ZC_CHECKSUM_JENKINS_LOOKUP3,
}


cdef int _get(object obj, Py_buffer *view, int flags) except -1:
    try:
        PyObject_GetBuffer(obj, view, flags)
    except BufferError as e:
        raise TypeError(f"expected a C-contiguous buffer, got {type(obj).__name__}: {e}") from None
    return 0


cdef int _algo(str name) except -1:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown checksum {name!r}") from None


cdef int _raise(str what, int status) except -1:
    if status == ZC_ERR_CORRUPT:
        raise ChunkDecodeError(f"{what}: buffer too short to hold its checksum")
    if status == ZC_ERR_SIZE:
        raise ChunkDecodeError(f"{what}: buffer size does not fit the element size")
    if status == ZC_ERR_OVERLAP:
        raise ValueError(f"{what}: input and output overlap")
    raise ValueError(f"{what}: invalid parameters")


def checksum32(str algo, src, unsigned int seed=0, prefix=b""):
    """The checksum `algo` of prefix+src (seed: jenkins_lookup3's initval)."""
    cdef Py_buffer view, pview
    cdef uint32_t v = 0
    cdef int status, a = _algo(algo)
    _get(src, &view, PyBUF_SIMPLE)
    try:
        _get(prefix, &pview, PyBUF_SIMPLE)
        try:
            with nogil:
                status = zc_checksum32(a, seed, pview.buf, pview.len, view.buf, view.len, &v)
        finally:
            PyBuffer_Release(&pview)
    finally:
        PyBuffer_Release(&view)
    if status != ZC_OK:
        _raise(algo, status)
    return v


def checksum_frame(str algo, src, bint at_end, unsigned int seed=0, prefix=b""):
    """src with its 4-byte little-endian checksum before or after it, as a uint8 array."""
    cdef Py_buffer view, pview, oview
    cdef int status, a = _algo(algo)
    _get(src, &view, PyBUF_SIMPLE)
    try:
        _get(prefix, &pview, PyBUF_SIMPLE)
        try:
            out = np.empty(view.len + 4, dtype=np.uint8)
            _get(out, &oview, PyBUF_WRITABLE)
            with nogil:
                status = zc_checksum_frame(a, seed, pview.buf, pview.len, at_end, view.buf,
                                           view.len, oview.buf, oview.len)
            PyBuffer_Release(&oview)
        finally:
            PyBuffer_Release(&pview)
    finally:
        PyBuffer_Release(&view)
    if status != ZC_OK:
        _raise(algo, status)
    return out


def checksum_verify(str algo, src, bint at_end, unsigned int seed=0, prefix=b""):
    """Check a framed buffer; return the payload's byte offset (its length is len(src) - 4)."""
    cdef Py_buffer view, pview
    cdef size_t offset = 0
    cdef uint32_t stored = 0, computed = 0
    cdef int status, a = _algo(algo)
    _get(src, &view, PyBUF_SIMPLE)
    try:
        _get(prefix, &pview, PyBUF_SIMPLE)
        with nogil:
            status = zc_checksum_verify(a, seed, pview.buf, pview.len, at_end, view.buf, view.len,
                                        &offset, &stored, &computed)
        PyBuffer_Release(&pview)  # nothing between acquiring and releasing can raise
    finally:
        PyBuffer_Release(&view)
    if status == ZC_ERR_CHECKSUM:
        raise ChecksumError(f"{algo}: stored checksum {stored:#010x} does not match computed {computed:#010x}")
    if status != ZC_OK:
        _raise(algo, status)
    return offset


cdef int _delta(object array, bint encode) except -1:
    cdef Py_buffer view
    cdef int status, kind
    cdef size_t count = array.size, width = array.dtype.itemsize
    if array.dtype.kind in "iu":
        kind = ZC_DELTA_INT
    elif array.dtype.kind == "f":
        kind = ZC_DELTA_FLOAT
    else:
        raise ValueError(f"delta: unsupported data type {array.dtype}")
    if not array.dtype.isnative:
        raise ValueError(f"delta: data type {array.dtype} is not in native byte order")
    _get(array, &view, PyBUF_WRITABLE)
    try:
        with nogil:
            if encode:
                status = zc_delta_encode(view.buf, view.len, count, kind, width)
            else:
                status = zc_delta_decode(view.buf, view.len, count, kind, width)
    finally:
        PyBuffer_Release(&view)
    if status != ZC_OK:
        _raise("delta", status)
    return 0


def delta_encode(array):
    """Replace a writable C-contiguous native int/float array by its differences."""
    _delta(array, True)
    return array


def delta_decode(array):
    """Replace a writable C-contiguous native int/float array by its running sums."""
    _delta(array, False)
    return array


cdef object _shuffle(object src, size_t elementsize, bint forward):
    cdef Py_buffer view, oview
    cdef int status
    _get(src, &view, PyBUF_SIMPLE)
    try:
        out = np.empty(view.len, dtype=np.uint8)
        _get(out, &oview, PyBUF_WRITABLE)
        with nogil:
            if forward:
                status = zc_shuffle(view.buf, oview.buf, view.len, elementsize)
            else:
                status = zc_unshuffle(view.buf, oview.buf, view.len, elementsize)
        PyBuffer_Release(&oview)
    finally:
        PyBuffer_Release(&view)
    if status != ZC_OK:
        _raise("shuffle", status)
    return out


def shuffle(src, size_t elementsize):
    """Byte-shuffle `src` (length a multiple of elementsize) into a new uint8 array."""
    return _shuffle(src, elementsize, True)


def unshuffle(src, size_t elementsize):
    """Invert `shuffle` into a new uint8 array."""
    return _shuffle(src, elementsize, False)
