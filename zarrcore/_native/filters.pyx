# cython: language_level=3
"""GIL-free bindings to the numcodecs filter kernels in csrc/: checksums, delta, shuffle and
the vlen-utf8 / vlen-bytes framing.

Inputs are any C-contiguous buffers; outputs are new uint8 numpy arrays. Bad input raises
ChunkDecodeError (ChecksumError for a mismatch); callers add the key.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, malloc

from zarrcore._native.buffers cimport get_buffer
from zarrcore._native.pybytes cimport bytes_data, bytes_size
from zarrcore._native.status cimport ZC_ERR_CHECKSUM, ZC_ERR_CORRUPT, ZC_ERR_OVERLAP, ZC_ERR_SIZE, ZC_OK

import numpy as np

from zarrcore._native.status import status_error
from zarrcore.errors import ChecksumError, ChunkDecodeError

cdef extern from "codecs/zc_checksums.h" nogil:
    int ZC_CHECKSUM_CRC32, ZC_CHECKSUM_ADLER32, ZC_CHECKSUM_FLETCHER32, ZC_CHECKSUM_JENKINS_LOOKUP3
    int zc_checksum32(int algo, uint32_t seed, const void *prefix, size_t prefixlen,
                      const void *data, size_t n, uint32_t *out)
    int zc_checksum_frame(int algo, uint32_t seed, const void *prefix, size_t prefixlen,
                          int at_end, const void *src, size_t n, void *dst, size_t dstlen)
    int zc_checksum_verify(int algo, uint32_t seed, const void *prefix, size_t prefixlen,
                           int at_end, const void *src, size_t n, size_t *offset,
                           uint32_t *stored, uint32_t *computed)

cdef extern from "codecs/zc_delta.h" nogil:
    int ZC_DELTA_INT, ZC_DELTA_FLOAT
    int zc_delta_encode(void *data, size_t n, size_t count, int kind, size_t width)
    int zc_delta_decode(void *data, size_t n, size_t count, int kind, size_t width)

cdef extern from "codecs/zc_bitround.h" nogil:
    int zc_bitround(void *data, size_t len, size_t width, unsigned keepbits,
                    unsigned mantissa_bits)

cdef extern from "codecs/zc_packbits.h" nogil:
    int zc_packbits_size(size_t count, unsigned nbits, size_t *size)
    int zc_packbits_encode(const void *src, size_t srclen, size_t unit, size_t count,
                           unsigned first, unsigned nbits, void *dst, size_t dstlen)
    int zc_packbits_decode(const void *src, size_t srclen, size_t unit, size_t count,
                           unsigned first, unsigned nbits, unsigned sign_bits, void *dst,
                           size_t dstlen)

cdef extern from "codecs/zc_vlen.h" nogil:
    int zc_vlen_encoded_size(size_t n, const size_t *lens, size_t *total)
    int zc_vlen_pack(size_t n, const char *const *ptrs, const size_t *lens, void *dst, size_t dstlen)
    int zc_vlen_index(const void *src, size_t srclen, size_t n, size_t *offsets, size_t *lens)

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL

cdef extern from "codecs/zc_shuffle.h" nogil:
    int zc_shuffle(const void *src, void *dst, size_t n, size_t elementsize)
    int zc_unshuffle(const void *src, void *dst, size_t n, size_t elementsize)

ALGORITHMS = {
    "crc32": ZC_CHECKSUM_CRC32,
    "adler32": ZC_CHECKSUM_ADLER32,
    "fletcher32": ZC_CHECKSUM_FLETCHER32,
    "jenkins_lookup3": ZC_CHECKSUM_JENKINS_LOOKUP3,
}


cdef int _algo(str name) except -1:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown checksum {name!r}") from None


_FAILED = {
    ZC_ERR_CORRUPT: (ChunkDecodeError, "buffer too short to hold its checksum"),
    ZC_ERR_SIZE: (ChunkDecodeError, "buffer size does not fit the element size"),
    ZC_ERR_OVERLAP: (ValueError, "input and output overlap"),
    None: (ValueError, "invalid parameters"),
}


cdef int _raise(str what, int status) except -1:
    raise status_error(status, f"{what}: ", _FAILED)


cdef enum _ChecksumOp:
    _SUM, _FRAME, _VERIFY


cdef object _checksum(_ChecksumOp op, str algo, object src, bint at_end, uint32_t seed,
                      object prefix):
    """The checksum `algo` of prefix+src (_SUM), src framed with it (_FRAME) or the payload
    offset of a framed src after checking it (_VERIFY)."""
    cdef Py_buffer view, pview, oview
    cdef uint32_t v = 0, stored = 0, computed = 0
    cdef size_t offset = 0
    cdef int status, a = _algo(algo)
    out = None
    get_buffer(src, &view, PyBUF_SIMPLE, "input")
    try:
        get_buffer(prefix, &pview, PyBUF_SIMPLE, "prefix")
        try:
            if op == _FRAME:
                out = np.empty(view.len + 4, dtype=np.uint8)
                get_buffer(out, &oview, PyBUF_WRITABLE, "out")
            with nogil:
                if op == _SUM:
                    status = zc_checksum32(a, seed, pview.buf, pview.len, view.buf, view.len, &v)
                elif op == _FRAME:
                    status = zc_checksum_frame(a, seed, pview.buf, pview.len, at_end, view.buf,
                                               view.len, oview.buf, oview.len)
                else:
                    status = zc_checksum_verify(a, seed, pview.buf, pview.len, at_end, view.buf,
                                                view.len, &offset, &stored, &computed)
            if op == _FRAME:
                PyBuffer_Release(&oview)
        finally:
            PyBuffer_Release(&pview)
    finally:
        PyBuffer_Release(&view)
    if op == _VERIFY and status == ZC_ERR_CHECKSUM:
        raise ChecksumError(f"{algo}: stored checksum {stored:#010x} does not match computed {computed:#010x}")
    if status != ZC_OK:
        _raise(algo, status)
    return v if op == _SUM else out if op == _FRAME else offset


def checksum32(str algo, src, unsigned int seed=0, prefix=b""):
    """The checksum `algo` of prefix+src (seed: jenkins_lookup3's initval)."""
    return _checksum(_SUM, algo, src, False, seed, prefix)


def checksum_frame(str algo, src, bint at_end, unsigned int seed=0, prefix=b""):
    """src with its 4-byte little-endian checksum before or after it, as a uint8 array."""
    return _checksum(_FRAME, algo, src, at_end, seed, prefix)


def checksum_verify(str algo, src, bint at_end, unsigned int seed=0, prefix=b""):
    """Check a framed buffer; return the payload's byte offset (its length is len(src) - 4)."""
    return _checksum(_VERIFY, algo, src, at_end, seed, prefix)


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
    get_buffer(array, &view, PyBUF_WRITABLE, "array")
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


def bitround(array, unsigned keepbits, unsigned mantissa_bits):
    """Round a writable C-contiguous array of 1-, 2-, 4- or 8-byte units in place to
    `keepbits` bits: of the mantissa in the low `mantissa_bits` (floats), or from the most
    significant set bit (integers: mantissa_bits 0)."""
    cdef Py_buffer view
    cdef int status
    cdef size_t width = array.dtype.itemsize
    get_buffer(array, &view, PyBUF_WRITABLE, "array")
    try:
        with nogil:
            status = zc_bitround(view.buf, view.len, width, keepbits, mantissa_bits)
    finally:
        PyBuffer_Release(&view)
    if status != ZC_OK:
        _raise("bitround", status)
    return array


cdef object _packbits(bint encode, object src, object out, size_t unit, size_t count,
                      unsigned first, unsigned nbits, unsigned sign_bits):
    """Pack (encode) or unpack `count` components between `src` and `out`; returns `out`."""
    cdef Py_buffer view, oview
    cdef int status
    get_buffer(src, &view, PyBUF_SIMPLE, "input")
    try:
        get_buffer(out, &oview, PyBUF_WRITABLE, "out")
        with nogil:
            if encode:
                status = zc_packbits_encode(view.buf, view.len, unit, count, first, nbits,
                                            oview.buf, oview.len)
            else:
                status = zc_packbits_decode(view.buf, view.len, unit, count, first, nbits,
                                            sign_bits, oview.buf, oview.len)
        PyBuffer_Release(&oview)
    finally:
        PyBuffer_Release(&view)
    if status != ZC_OK:
        _raise("packbits", status)
    return out


def packbits_encode(src, size_t unit, unsigned first, unsigned nbits):
    """Bits [first, first + nbits) of each `unit`-byte native component of `src`, packed
    least significant first into a new uint8 array."""
    cdef size_t size = 0
    cdef size_t count = len(memoryview(src).cast("B")) // unit if unit else 0
    cdef int status = zc_packbits_size(count, nbits, &size)
    if status != ZC_OK:
        _raise("packbits", status)
    return _packbits(True, src, np.empty(size, dtype=np.uint8), unit, count, first, nbits, 0)


def packbits_decode(src, size_t unit, size_t count, unsigned first, unsigned nbits,
                    unsigned sign_bits):
    """Invert packbits_encode into `count` components (a new uint8 array of count * unit
    bytes), sign-extended to `sign_bits` bits when that is not 0."""
    if unit not in (1, 2, 4, 8) or count > (<size_t>-1) // 8:
        raise ValueError("packbits: invalid parameters")
    out = np.zeros(count * unit, dtype=np.uint8)
    return _packbits(False, src, out, unit, count, first, nbits, sign_bits)


cdef object _shuffle(object src, size_t elementsize, bint forward):
    cdef Py_buffer view, oview
    cdef int status
    get_buffer(src, &view, PyBUF_SIMPLE, "input")
    try:
        out = np.empty(view.len, dtype=np.uint8)
        get_buffer(out, &oview, PyBUF_WRITABLE, "out")
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


cdef inline bint _numcodecs_missing(object item):
    """None, and numbers equal to 0 (zarr 2.x's fill value), which numcodecs writes empty."""
    return item is None or (isinstance(item, (int, float, np.number, np.bool_)) and item == 0)


def vlen_encode(list items, bint text):
    """Frame `items` (str when `text`, else bytes; None and 0 are empty, as in numcodecs) as
    one uint8 array."""
    cdef Py_ssize_t n = len(items), i, size
    cdef const char **ptrs = <const char **>malloc(max(n, 1) * sizeof(char *))
    cdef size_t *lens = <size_t *>malloc(max(n, 1) * sizeof(size_t))
    cdef size_t total = 0
    cdef Py_buffer oview
    cdef int status
    cdef list keep = []  # bytes made from bytes-like items, alive until packed
    if ptrs == NULL or lens == NULL:
        free(ptrs)
        free(lens)
        raise MemoryError("vlen: out of memory")
    try:
        for i in range(n):
            item = items[i]
            if text and isinstance(item, str):
                ptrs[i] = PyUnicode_AsUTF8AndSize(item, &size)
                lens[i] = size
                continue
            if not text and isinstance(item, (bytearray, memoryview)):
                item = bytes(item)
                keep.append(item)
            if not text and isinstance(item, bytes):
                ptrs[i] = bytes_data(item)
                lens[i] = bytes_size(item)
            elif _numcodecs_missing(item):
                ptrs[i], lens[i] = b"", 0
            else:
                raise TypeError(f"{'vlen-utf8' if text else 'vlen-bytes'}: expected "
                                f"{'str' if text else 'bytes'} items, got {type(item).__name__}")
        status = zc_vlen_encoded_size(n, lens, &total)
        if status != ZC_OK:
            raise ValueError("vlen: too many items or an item too long for 32-bit lengths")
        out = np.empty(total, dtype=np.uint8)
        get_buffer(out, &oview, PyBUF_WRITABLE, "out")
        with nogil:
            status = zc_vlen_pack(n, ptrs, lens, oview.buf, oview.len)
        PyBuffer_Release(&oview)
        if status != ZC_OK:
            _raise("vlen", status)
        return out
    finally:
        free(ptrs)
        free(lens)


def vlen_decode(src, Py_ssize_t count, bint text):
    """The `count` items framed in `src`, as a list of str (text) or bytes."""
    cdef Py_buffer view
    cdef size_t *offsets = NULL
    cdef size_t *lens = NULL
    cdef const char *base
    cdef Py_ssize_t i
    cdef int status
    cdef list items
    what = "vlen-utf8" if text else "vlen-bytes"
    get_buffer(src, &view, PyBUF_SIMPLE, "input")
    try:
        # Each item takes at least its 4-byte length: refuse before allocating from `count`.
        if view.len < 4 or (view.len - 4) // 4 < count:
            raise ChunkDecodeError(f"{what}: {view.len} bytes cannot hold {count} items")
        offsets = <size_t *>malloc(max(count, 1) * sizeof(size_t))
        lens = <size_t *>malloc(max(count, 1) * sizeof(size_t))
        if offsets == NULL or lens == NULL:
            raise MemoryError("vlen: out of memory")
        with nogil:
            status = zc_vlen_index(view.buf, view.len, count, offsets, lens)
        if status != ZC_OK:
            raise status_error(status, f"{what}: ", {
                ZC_ERR_SIZE: (ChunkDecodeError, f"bytes left over after {count} items"),
                None: (ChunkDecodeError,
                       f"corrupt or truncated data ({view.len} bytes, expected {count} items)"),
            })
        base = <const char *>view.buf
        items = [None] * count
        for i in range(count):
            if text:
                try:
                    items[i] = PyUnicode_DecodeUTF8(base + offsets[i], lens[i], "strict")
                except UnicodeDecodeError as e:
                    raise ChunkDecodeError(f"vlen-utf8: item {i} is not valid UTF-8: {e}") from None
            else:
                items[i] = PyBytes_FromStringAndSize(base + offsets[i], lens[i])
        return items
    finally:
        PyBuffer_Release(&view)
        free(offsets)
        free(lens)
