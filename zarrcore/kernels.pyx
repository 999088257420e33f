# cython: language_level=3
"""Array kernels in C: byte swapping, strided copies, fill detection, shard indexes.

Thin GIL-free bindings over csrc/. The C kernels take (pointer, item count, itemsize)
so that they can later back numpy ufunc loops directly.
"""
import math

import numpy as np

cimport numpy as cnp
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint64_t

from zarrcore._native.buffers cimport get_buffer
from zarrcore._native.pybytes cimport bytes_data
from zarrcore._native.status cimport (
    ZC_ERR_CHECKSUM, ZC_ERR_CORRUPT, ZC_ERR_NOMEM, ZC_ERR_OVERLAP, ZC_ERR_PARAM, ZC_ERR_SIZE,
    ZC_ERR_UNSUPPORTED, ZC_OK,
)

from zarrcore._native.status import status_error
from zarrcore.errors import ShardIndexError

__all__ = [
    "Status", "byteswap", "copy_region", "crc32c", "fill_equal", "is_fill", "shard_index_pack",
    "shard_index_unpack", "shard_index_validate", "transpose",
]

cnp.import_array()

cdef extern from "codecs/zc_byteswap.h" nogil:
    int zc_byteswap(void *dst, const void *src, size_t n, size_t itemsize)

cdef extern from "jobs/zc_copy.h" nogil:
    int zc_copy_nd(int ndim, const Py_ssize_t *shape, size_t itemsize, const void *src,
                   const Py_ssize_t *src_strides, void *dst, const Py_ssize_t *dst_strides)

cdef extern from "jobs/zc_fill.h" nogil:
    int zc_is_fill(const void *buf, size_t nbytes, const void *pattern, size_t itemsize)
    int zc_is_fill_float(const void *buf, size_t nbytes, const void *pattern, size_t itemsize,
                         size_t floatsize, int swapped)

cdef extern from "codecs/zc_crc32c.h" nogil:
    unsigned int zc_crc32c(unsigned int crc, const void *data, size_t n)
    unsigned int zc_crc32c_portable(unsigned int crc, const void *data, size_t n)

cdef extern from "jobs/zc_shard_index.h" nogil:
    int zc_shard_index_validate(const uint64_t *entries, size_t n, uint64_t data_size, size_t *bad)
    int zc_shard_index_unpack(const void *buf, size_t buflen, size_t n, uint64_t data_size,
                              uint64_t *entries, size_t *bad)
    int zc_shard_index_pack(const uint64_t *entries, size_t n, void *out, size_t outlen)

if (ZC_OK, ZC_ERR_CORRUPT, ZC_ERR_SIZE, ZC_ERR_NOMEM, ZC_ERR_PARAM, ZC_ERR_CHECKSUM,
        ZC_ERR_UNSUPPORTED, ZC_ERR_OVERLAP) != (OK, ERR_CORRUPT, ERR_SIZE, ERR_NOMEM, ERR_PARAM,
                                                ERR_CHECKSUM, ERR_UNSUPPORTED, ERR_OVERLAP):
    raise ImportError("zarrcore.kernels: Status enum out of sync with csrc/zc_status.h")


# ---- C-level API (declared in kernels.pxd) ----------------------------------------------

cdef int byteswap_items(void *dst, const void *src, size_t n, size_t itemsize) noexcept nogil:
    return zc_byteswap(dst, src, n, itemsize)


cdef int copy_strided(int ndim, const Py_ssize_t *shape, size_t itemsize, const void *src,
                      const Py_ssize_t *src_strides, void *dst,
                      const Py_ssize_t *dst_strides) noexcept nogil:
    return zc_copy_nd(ndim, shape, itemsize, src, src_strides, dst, dst_strides)


cdef int is_fill_bytes(const void *buf, size_t nbytes, const void *pattern,
                       size_t itemsize) noexcept nogil:
    return zc_is_fill(buf, nbytes, pattern, itemsize)


cdef int is_fill_floats(const void *buf, size_t nbytes, const void *pattern, size_t itemsize,
                        size_t floatsize, bint swapped) noexcept nogil:
    return zc_is_fill_float(buf, nbytes, pattern, itemsize, floatsize, swapped)


cdef unsigned int crc32c_bytes(unsigned int crc, const void *data, size_t n) noexcept nogil:
    return zc_crc32c(crc, data, n)


cdef int shard_index_check(const uint64_t *entries, size_t n, uint64_t data_size,
                           size_t *bad) noexcept nogil:
    return zc_shard_index_validate(entries, n, data_size, bad)


# ---- helpers ----------------------------------------------------------------------------

cdef int _check(int status, str what) except -1:
    if status == ZC_OK:
        return 0
    raise status_error(status, what, {
        ZC_ERR_NOMEM: (MemoryError, ""), None: (ValueError, f" (status {status})")})


cdef int _check_out(object out, tuple shape, object dtype) except -1:
    if not isinstance(out, np.ndarray) or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writable C-contiguous array")
    if out.shape != shape or out.dtype != dtype:
        raise ValueError(f"out has shape {out.shape} and dtype {out.dtype}, expected {shape} and {dtype}")
    return 0


cdef int _no_objects(object dtype) except -1:
    if dtype.hasobject or dtype.kind in "OT":
        raise TypeError(f"dtype {dtype} does not hold fixed-size plain data")
    return 0


# ---- Python API -------------------------------------------------------------------------

# ---- numpy ufuncs -----------------------------------------------------------------------
# Legacy-API ufuncs: numpy does the dispatch, casting, broadcasting, out= and overlap
# handling; these inner loops only walk one strided 1-D run, and run without the GIL.

cnp.import_ufunc()

ctypedef struct _ItemKind:
    size_t itemsize   # bytes per element
    size_t unit       # bytes per swapped / compared part (half the item for complex)
    size_t floatsize  # IEEE float part size, 0 for non-floats

cdef enum:
    _NTYPES = 18
cdef _ItemKind _KINDS[_NTYPES]
cdef cnp.PyUFuncGenericFunction _swap_loops[_NTYPES]
cdef cnp.PyUFuncGenericFunction _equal_loops[_NTYPES]
cdef void *_loop_data[_NTYPES]
cdef char _swap_sig[2 * _NTYPES]
cdef char _equal_sig[3 * _NTYPES]


cdef void _byteswap_loop(char **args, cnp.npy_intp *dims, cnp.npy_intp *steps,
                         void *data) noexcept nogil:
    cdef _ItemKind *k = <_ItemKind *>data
    cdef cnp.npy_intp n = dims[0], i
    cdef size_t parts = k.itemsize // k.unit
    if steps[0] == <cnp.npy_intp>k.itemsize and steps[1] == <cnp.npy_intp>k.itemsize:
        # numpy hands over in place (same pointer) or non-overlapping runs only.
        zc_byteswap(args[1], args[0], <size_t>n * parts, k.unit)
        return
    for i in range(n):
        zc_byteswap(args[1] + i * steps[1], args[0] + i * steps[0], parts, k.unit)


cdef void _fill_equal_loop(char **args, cnp.npy_intp *dims, cnp.npy_intp *steps,
                           void *data) noexcept nogil:
    cdef _ItemKind *k = <_ItemKind *>data
    cdef cnp.npy_intp i
    cdef char *a = args[0]
    cdef char *b = args[1]
    cdef char *o = args[2]
    for i in range(dims[0]):
        if k.floatsize:
            o[0] = zc_is_fill_float(a, k.itemsize, b, k.itemsize, k.floatsize, 0) == 1
        else:
            o[0] = zc_is_fill(a, k.itemsize, b, k.itemsize) == 1
        a += steps[0]
        b += steps[1]
        o += steps[2]


cdef void _register_loops():
    """One loop of each ufunc per type; numpy's legacy dispatch cannot take parametric
    datetimes, so those are left to views as int64. Long double types come last."""
    cdef int i
    for i, code in enumerate("?bBhHiIlLqQefdFDgG"):
        dt = np.dtype(code)
        part = dt.itemsize // 2 if dt.kind == "c" else dt.itemsize
        _KINDS[i].itemsize, _KINDS[i].unit = dt.itemsize, part
        _KINDS[i].floatsize = part if dt.kind in "fc" else 0
        _loop_data[i] = &_KINDS[i]
        _swap_loops[i] = <cnp.PyUFuncGenericFunction>_byteswap_loop
        _equal_loops[i] = <cnp.PyUFuncGenericFunction>_fill_equal_loop
        _swap_sig[2 * i] = _swap_sig[2 * i + 1] = <char>dt.num
        _equal_sig[3 * i] = _equal_sig[3 * i + 1] = <char>dt.num
        _equal_sig[3 * i + 2] = <char>cnp.NPY_BOOL


_register_loops()

# Kept alive for the ufuncs, which point into them.
_BYTESWAP_DOC = b"""byteswap(x, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None)

Reverse the bytes of each element of `x` (of each part for complex), as
`x.byteswap()` does; a numpy ufunc over bool, integer, float and complex arrays (view
datetimes as int64). The loop runs on values in native byte order: for a native array
the result has the bytes of `x.byteswap()`."""
_FILL_EQUAL_DOC = b"""fill_equal(x, fill, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None)

Elementwise: True where `x` equals `fill` bit for bit, except that any NaN equals any
NaN (per part for complex). So -0.0 is not 0.0, and a NaN fill value matches NaNs of
any payload. `is_fill(a, fill)` is this test applied to every element, stopping early.
A numpy ufunc over bool, integer, float and complex arrays (not long double)."""

byteswap = cnp.PyUFunc_FromFuncAndData(
    _swap_loops, _loop_data, _swap_sig, _NTYPES, 1, 1, cnp.PyUFunc_None,
    b"byteswap", _BYTESWAP_DOC, 0)
# The long double types (last two) have no NaN-aware comparison in C: fill_equal omits them.
fill_equal = cnp.PyUFunc_FromFuncAndData(
    _equal_loops, _loop_data, _equal_sig, _NTYPES - 2, 2, 1, cnp.PyUFunc_None,
    b"fill_equal", _FILL_EQUAL_DOC, 0)


def copy_region(src, out=None):
    """`out[...] = src` for arrays of the same shape and dtype with any strides (a strided
    gather/scatter copy); without `out`, a new C-contiguous copy. Returns `out`."""
    s = np.asarray(src)
    d = np.empty(s.shape, dtype=s.dtype) if out is None else out
    if not isinstance(d, np.ndarray) or not d.flags.writeable:
        raise ValueError("copy_region: out must be a writable numpy array")
    if s.shape != d.shape:
        raise ValueError(f"copy_region: shapes differ: {s.shape} vs {d.shape}")
    if s.dtype != d.dtype:
        raise ValueError(f"copy_region: dtypes differ: {s.dtype} vs {d.dtype}")
    if s.dtype.kind in "OT":
        # Variable-length items are references numpy must copy (and count) itself.
        d[...] = s
        return d
    _no_objects(s.dtype)
    if np.may_share_memory(s, d):
        s = s.copy()
    cdef cnp.ndarray cs = s, cd = d
    cdef int status
    with nogil:
        status = zc_copy_nd(cnp.PyArray_NDIM(cs), <Py_ssize_t *>cnp.PyArray_DIMS(cs),
                            cnp.PyArray_ITEMSIZE(cs), cnp.PyArray_DATA(cs),
                            <Py_ssize_t *>cnp.PyArray_STRIDES(cs), cnp.PyArray_DATA(cd),
                            <Py_ssize_t *>cnp.PyArray_STRIDES(cd))
    _check(status, "copy_region: array geometry out of range")
    return d


def transpose(src, axes, out=None):
    """C-contiguous copy of `src.transpose(axes)`, into `out` when given."""
    a = np.asarray(src)
    axes = tuple(int(x) for x in axes)
    if sorted(axes) != list(range(a.ndim)):
        raise ValueError(f"transpose: {axes} is not a permutation of range({a.ndim})")
    view = a.transpose(axes)
    if out is None:
        out = np.empty(view.shape, dtype=a.dtype)
    else:
        _check_out(out, view.shape, a.dtype)
    return copy_region(view, out)


cdef object _fill_pattern(object dtype, object fill_value):
    if dtype.kind == "V" and isinstance(fill_value, (bytes, bytearray, memoryview)):
        raw = bytes(fill_value)
        if len(raw) != dtype.itemsize:
            raise ValueError(f"is_fill: fill value has {len(raw)} bytes, dtype {dtype} needs {dtype.itemsize}")
        return raw
    fill = np.asarray(fill_value, dtype=dtype)
    if fill.shape != () and fill.size != 1:
        raise ValueError(f"is_fill: fill value must be a scalar, got shape {fill.shape}")
    return fill.tobytes()


# numpy >= 1.25 raises the error of an item's comparison (an array item's ValueError) from
# `==` on an object array; before, it gives one False for the whole array, with a
# DeprecationWarning, so array items are looked for first there.
_COMPARISON_RAISES = np.lib.NumpyVersion(np.__version__) >= "1.25.0"


def _same_item(item, fill_value):
    if type(item) is not type(fill_value):
        return False
    try:
        return bool(item == fill_value)
    except ValueError:  # an array item
        return False


def is_fill(arr, fill_value):
    """True when every element of `arr` equals `fill_value`.

    Compares bytes (so -0.0 is not 0.0, structured types work); a NaN fill matches NaNs
    of any payload, per component for complex.
    """
    a = np.ascontiguousarray(arr)
    dtype = a.dtype
    if dtype.kind in "OT":
        # Variable-length items (vlen-utf8/vlen-bytes) have no fixed bytes; compare values,
        # the fill as a 0-d array of the same dtype: a bare bytes fill would become an S
        # array first and lose its trailing NULs.
        if not _COMPARISON_RAISES and dtype.kind == "O" and any(
            isinstance(x, np.ndarray) for x in a.flat
        ):
            return all(_same_item(x, fill_value) for x in a.flat)
        try:
            return bool((a == np.asarray(fill_value, dtype=dtype)).all())
        except ValueError:
            # Array items (vlen-array) compare element-wise: compare each item on its own.
            return all(_same_item(x, fill_value) for x in a.flat)
    _no_objects(dtype)
    cdef bytes pattern = _fill_pattern(dtype, fill_value)
    cdef const char *pat = pattern
    cdef size_t itemsize = dtype.itemsize
    cdef size_t floatsize = 0
    cdef bint swapped = not dtype.isnative
    cdef size_t nbytes = a.nbytes
    cdef const void *data = cnp.PyArray_DATA(a)
    cdef int result
    # numpy's floats only: ml_dtypes' (float8_e5m2 is of kind "f") have other NaNs.
    if issubclass(dtype.type, np.floating):
        floatsize = itemsize
    elif issubclass(dtype.type, np.complexfloating):
        floatsize = itemsize // 2
    if floatsize > 8:
        # long double: x87 layout with padding, no portable bit test; numpy knows it.
        part = dtype if dtype.kind == "f" else np.dtype(np.longdouble).newbyteorder(dtype.byteorder)
        fill = np.frombuffer(pattern, dtype=part)
        nan = np.isnan(fill)
        if nan.any():
            vals = a.view(part).reshape(-1, fill.size)
            same = (vals == fill) & (np.signbit(vals) == np.signbit(fill))
            return bool(np.where(nan, np.isnan(vals), same).all())
        floatsize = 0
    with nogil:
        if floatsize:
            result = zc_is_fill_float(data, nbytes, pat, itemsize, floatsize, swapped)
        else:
            result = zc_is_fill(data, nbytes, pat, itemsize)
    if result < 0:
        _check(result, "is_fill: bad arguments")
    return result == 1


def crc32c(data, value=0, out=None):
    """CRC-32C of each row of `data` along its last axis (the raw bytes of its items, any
    fixed-size dtype; a bytes-like object is one row), continuing from the CRCs `value`
    (broadcast over the rows). Returns uint32 of shape `data.shape[:-1]` (a scalar for one
    row), or `out`, a C-contiguous uint32 array of that shape."""
    a = np.asarray(data) if isinstance(data, np.ndarray) else _bytes_like(data)
    _no_objects(a.dtype)
    shape = a.shape[:-1]
    a = np.ascontiguousarray(a)
    cdef Py_ssize_t nrows = math.prod(shape), r
    cdef size_t rowbytes = a.nbytes // nrows if nrows else 0
    start = np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=np.uint32), shape))
    result = np.empty(shape, dtype=np.uint32) if out is None else out
    _check_out(result, shape, np.dtype(np.uint32))
    cdef const unsigned char *src = <const unsigned char *>cnp.PyArray_DATA(a)
    cdef const unsigned int *v = <const unsigned int *>cnp.PyArray_DATA(start)
    cdef unsigned int *o = <unsigned int *>cnp.PyArray_DATA(result)
    with nogil:
        for r in range(nrows):
            o[r] = zc_crc32c(v[r], src + r * rowbytes, rowbytes)
    return result[()] if out is None and not shape else result


cdef object _bytes_like(object data):
    """A buffer's bytes as a 1-D uint8 array (a copy only when it is not contiguous)."""
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except ValueError:
        return np.frombuffer(bytes(memoryview(data)), dtype=np.uint8)


def _crc32c_portable(buf, unsigned int value=0):
    """crc32c through the table fallback even on SSE4.2 machines (for tests)."""
    cdef Py_buffer view
    cdef unsigned int c
    get_buffer(buf, &view, PyBUF_SIMPLE, "input")
    try:
        with nogil:
            c = zc_crc32c_portable(value, view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return c


# ---- shard index ------------------------------------------------------------------------

cdef int _shard_failed(int status, size_t bad, object entries, uint64_t data_size) except -1:
    where = ""
    if status not in (ZC_ERR_NOMEM, ZC_ERR_PARAM):  # (`bad` names an entry)
        offset, nbytes = (int(v) for v in entries[bad])
        where = f"shard index entry of inner chunk {bad} (offset {offset}, nbytes {nbytes}): "
    raise status_error(status, where, {
        ZC_ERR_NOMEM: (MemoryError, "shard index validation"),
        ZC_ERR_PARAM: (ValueError, "shard index: invalid arguments"),
        ZC_ERR_CORRUPT: (ShardIndexError, "only one of offset/nbytes marks the chunk empty"),
        ZC_ERR_SIZE: (ShardIndexError, f"reaches past the {data_size}-byte shard"),
        ZC_ERR_OVERLAP: (ShardIndexError, "overlaps another chunk"),
        None: (ShardIndexError, f"invalid (status {status})"),
    })


cdef cnp.ndarray _entries_array(entries):
    a = np.ascontiguousarray(entries, dtype=np.uint64)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"shard index entries must have shape (n, 2), got {a.shape}")
    return a


def shard_index_validate(entries, shard_data_size):
    """Raise ShardIndexError unless every (offset, nbytes) row is empty (both 2**64-1) or
    lies inside a shard of `shard_data_size` bytes, with no two chunks overlapping."""
    cdef cnp.ndarray a = _entries_array(entries)
    cdef uint64_t size = shard_data_size
    cdef size_t bad = 0
    cdef int status
    with nogil:
        status = zc_shard_index_validate(<uint64_t *>cnp.PyArray_DATA(a), a.shape[0], size, &bad)
    if status != ZC_OK:
        _shard_failed(status, bad, a, size)


def shard_index_unpack(buf, Py_ssize_t n_chunks, shard_data_size, out=None):
    """Decode and validate a little-endian (offset, nbytes) index (crc32c already removed)
    into a uint64 array of shape (n_chunks, 2): a new one, or `out` (C-contiguous)."""
    cdef Py_buffer view
    cdef uint64_t size = shard_data_size
    cdef size_t bad = 0
    cdef int status
    if n_chunks < 0:
        raise ValueError(f"shard index: negative chunk count {n_chunks}")
    cdef cnp.ndarray entries = np.empty((n_chunks, 2), dtype=np.uint64) if out is None else out
    _check_out(entries, (n_chunks, 2), np.dtype(np.uint64))
    get_buffer(buf, &view, PyBUF_SIMPLE, "input")
    try:
        if view.len != 16 * n_chunks:
            raise ShardIndexError(
                f"shard index is {view.len} bytes, expected {16 * n_chunks} for {n_chunks} chunks"
            )
        with nogil:
            status = zc_shard_index_unpack(view.buf, view.len, n_chunks, size,
                                           <uint64_t *>cnp.PyArray_DATA(entries), &bad)
    finally:
        PyBuffer_Release(&view)
    if status != ZC_OK:
        _shard_failed(status, bad, entries, size)
    return entries


def shard_index_pack(entries, out=None):
    """Encode uint64 (offset, nbytes) rows of shape (n, 2) as little-endian bytes: a new
    bytes object, or into `out`, a C-contiguous uint8 array of 16 * n bytes."""
    cdef cnp.ndarray a = _entries_array(entries)
    cdef Py_ssize_t n = a.shape[0]
    cdef char *p
    if out is None:
        out = PyBytes_FromStringAndSize(NULL, 16 * n)
        p = bytes_data(out)
    else:
        _check_out(out, (16 * n,), np.dtype(np.uint8))
        p = <char *>cnp.PyArray_DATA(out)
    cdef int status
    with nogil:
        status = zc_shard_index_pack(<uint64_t *>cnp.PyArray_DATA(a), n, p, 16 * n)
    _check(status, "shard_index_pack")
    return out
