# cython: language_level=3
"""Output arrays on kept memory blocks (csrc/memory/zc_pool.c), so repeated large reads skip the
page faults and kernel zeroing of fresh memory."""

import numpy as np

cimport numpy as cnp
from cpython.buffer cimport PyBuffer_FillInfo
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    object PyArray_NewFromDescr(PyTypeObject *subtype, cnp.dtype descr, int nd,
                                cnp.npy_intp *dims, cnp.npy_intp *strides, void *data, int flags,
                                object obj)

cdef extern from "memory/zc_pool.h" nogil:
    void *zc_pool_take(size_t size)
    void *zc_pool_take_kept(size_t size)
    void zc_pool_give(void *p, size_t size)
    int zc_pool_give_kept(void *p, size_t size)
    void zc_pool_set_limit(size_t nbytes)
    size_t zc_pool_kept()
    ctypedef struct zc_slab
    void *zc_pool_take_piece(size_t size, zc_slab **slab)
    void zc_pool_give_piece(zc_slab *slab)

# From here an output has a pool block of its own.
POOL_MIN_BYTES = 1 << 20
# From here to POOL_MIN_BYTES an output is a piece of a shared huge-page block.
PIECE_MIN_BYTES = 256 << 10
# From here to PIECE_MIN_BYTES an output has a (page-rounded) block of its own. From malloc it
# would be mapped afresh, or given back to the system and faulted in again, read after read
# until the process happened to free something large (which raises glibc's thresholds): a
# fresh process paid faults that a warmed one did not. Not a piece: a live one would keep
# more than 8 times itself. Smaller outputs come from numpy: their few pages cost little
# beside a read.
BLOCK_MIN_BYTES = 16 << 10

# Whether the pool keeps freed blocks (set_limit): where it keeps none, a block of its own
# costs a mapping per read, more than malloc's memory, which outputs below PIECE_MIN_BYTES
# then are.
cdef bint _keeping = True


cdef class _Block:
    """`size` bytes of a pool block; the block goes back to the pool when this is freed, that
    is once no array (or view) uses it any more."""

    cdef void *p
    cdef size_t size
    cdef zc_slab *slab  # set when the block is a piece of a shared one

    def __cinit__(self, size_t size, bint piece=False):
        # A piece, or a kept block, is a moment's work under a mutex: keeping the GIL spares
        # a handover to another thread and the wait to get it back (over a 5 ms link, one in
        # ten of a whole read's futex calls were that). Only mapping a block releases it.
        if piece:
            self.p = zc_pool_take_piece(size, &self.slab)
        else:
            self.p = zc_pool_take_kept(size)
            if self.p == NULL:
                with nogil:
                    self.p = zc_pool_take(size)
        if self.p == NULL:
            raise MemoryError(f"cannot allocate {size} bytes")
        self.size = size

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.p, <Py_ssize_t>self.size, 0, flags)

    def __dealloc__(self):
        if self.p == NULL:
            return
        if self.slab != NULL:
            zc_pool_give_piece(self.slab)
            return
        if zc_pool_give_kept(self.p, self.size):
            return  # (as a kept block is taken: see __cinit__)
        with nogil:
            zc_pool_give(self.p, self.size)


def empty(shape, dtype):
    """An uninitialised C-ordered array, on a pool block from BLOCK_MIN_BYTES."""
    cdef cnp.dtype descr = np.dtype(dtype)
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    cdef int ndim = len(shape), d
    if ndim > cnp.NPY_MAXDIMS:
        return np.empty(shape, dtype=descr)  # numpy says what is wrong
    cdef object count = 1
    for d in range(ndim):
        dims[d] = shape[d]
        count *= shape[d]
    nbytes = count * descr.itemsize
    if (nbytes < BLOCK_MIN_BYTES or descr.hasobject
            or not _keeping and nbytes < PIECE_MIN_BYTES):
        return np.empty(shape, dtype=descr)
    block = _Block(nbytes, PIECE_MIN_BYTES <= nbytes < POOL_MIN_BYTES)
    Py_INCREF(descr)  # PyArray_NewFromDescr steals it
    out = PyArray_NewFromDescr(<PyTypeObject *>np.ndarray, descr, ndim, dims, NULL,
                               (<_Block>block).p, cnp.NPY_ARRAY_CARRAY, None)
    cnp.set_array_base(out, block)
    return out


def set_limit(size_t nbytes):
    """Keep at most `nbytes` of freed blocks for reuse (0: none)."""
    global _keeping
    _keeping = nbytes > 0
    with nogil:
        zc_pool_set_limit(nbytes)


def kept_bytes():
    """Bytes of freed blocks kept for reuse now."""
    return zc_pool_kept()
