# cython: language_level=3
"""Bindings for csrc/zc_batch.c: all chunks of one request as one GIL-free job."""
import os

import numpy as np

from libc.stdint cimport int64_t
from libc.string cimport memset, strncpy
from libc.errno cimport errno

from .errors import ChecksumError, ChunkDecodeError, ZarrcoreError

cdef extern from "zc_status.h":
    int ZC_OK, ZC_ERR_CORRUPT, ZC_ERR_SIZE, ZC_ERR_NOMEM, ZC_ERR_PARAM, ZC_ERR_CHECKSUM

cdef extern from "zc_chain.h":
    ctypedef struct zc_chain:
        size_t itemsize, swap_size
        int compressor, clevel, shuffle, checksum
        size_t typesize, blocksize
        char cname[16]
        int crc32c

cdef extern from "zc_batch.h":
    int ZC_BATCH_MAX_NDIM, ZC_BATCH_PATH_MAX, ZC_ERR_IO
    ctypedef struct zc_piece:
        int64_t chunk_index, chunk_start, chunk_step, count, out_start, out_step
    ctypedef struct zc_batch:
        int ndim
        int64_t array_shape[32]
        int64_t chunk_shape[32]
        zc_chain chain
        const unsigned char *fill
        size_t fill_floatsize
        int write_empty_chunks
        char key_head[4096]
        char sep
        int lead_sep
        const zc_piece *pieces
        int64_t piece_offset[32]
        int64_t npieces[32]
        int64_t ntasks
        char *data
        Py_ssize_t data_strides[32]
        int failed, status, sys_errno
        int64_t failed_task
        unsigned char *deferred
    int zc_batch_prepare(zc_batch *b)
    int zc_batch_task_key(const zc_batch *b, int64_t t, char *buf, size_t cap)
    void zc_batch_read_worker(zc_batch *b) nogil
    void zc_batch_write_worker(zc_batch *b) nogil

COMPRESSORS = {None: 0, "zstd": 1, "blosc": 2, "gzip": 3, "zlib": 4}


cdef class ChunkBatch:
    """One read or write over a directory store; call `work()` from several threads."""

    cdef zc_batch b
    cdef object _keep

    def __init__(self, *, key_head, sep, lead_sep, array_shape, chunk_shape, itemsize,
                 swap_size, compressor, clevel=0, shuffle=0, checksum=False, typesize=0,
                 blocksize=0, cname="", crc32c=False, fill=b"", fill_floatsize=0,
                 write_empty_chunks=False, pieces=(), data=None, data_strides=()):
        memset(&self.b, 0, sizeof(zc_batch))
        ndim = len(chunk_shape)
        if ndim > ZC_BATCH_MAX_NDIM:
            raise ValueError(f"at most {ZC_BATCH_MAX_NDIM} dimensions")
        head = os.fsencode(key_head)
        if len(head) >= ZC_BATCH_PATH_MAX - 64:
            raise ValueError("store path too long")
        if len(fill) != itemsize:
            raise ValueError("fill pattern must be one item")
        self.b.ndim = ndim
        self.b.chain.itemsize = itemsize
        self.b.chain.swap_size = swap_size
        self.b.chain.compressor = COMPRESSORS[compressor]
        self.b.chain.clevel = clevel
        self.b.chain.shuffle = shuffle
        self.b.chain.checksum = checksum
        self.b.chain.typesize = typesize
        self.b.chain.blocksize = blocksize
        cname_b = cname.encode()[:15]
        strncpy(self.b.chain.cname, cname_b, 15)
        self.b.chain.crc32c = crc32c
        self.b.fill_floatsize = fill_floatsize
        self.b.write_empty_chunks = write_empty_chunks
        strncpy(self.b.key_head, head, ZC_BATCH_PATH_MAX - 1)
        self.b.sep = ord(sep)
        self.b.lead_sep = lead_sep
        table = np.ascontiguousarray(np.concatenate(
            [np.asarray(p, dtype=np.int64).reshape(-1, 6) for p in pieces]
            or [np.zeros((0, 6), np.int64)]))
        cdef int64_t[:, ::1] tview = table
        offset = 0
        for d in range(ndim):
            self.b.array_shape[d] = array_shape[d]
            self.b.chunk_shape[d] = chunk_shape[d]
            self.b.piece_offset[d] = offset
            self.b.npieces[d] = len(pieces[d])
            self.b.data_strides[d] = data_strides[d]
            offset += len(pieces[d])
        cdef const unsigned char[::1] fview = fill
        # The caller's array may be a strided or broadcast view: use its base and strides.
        cdef size_t address = data.__array_interface__["data"][0]
        deferred = np.zeros(0, np.uint8)
        self._keep = (table, fill, data, deferred)
        self.b.fill = &fview[0]
        self.b.pieces = <const zc_piece *>&tview[0, 0] if table.shape[0] else NULL
        self.b.data = <char *>address
        if zc_batch_prepare(&self.b) != ZC_OK:
            raise ValueError("invalid chunk batch")
        deferred = np.zeros(self.b.ntasks, np.uint8)
        cdef unsigned char[::1] defview = deferred
        self.b.deferred = &defview[0] if self.b.ntasks else NULL
        self._keep = (table, fill, data, deferred)

    @property
    def ntasks(self):
        return self.b.ntasks

    def work_read(self):
        with nogil:
            zc_batch_read_worker(&self.b)

    def work_write(self):
        with nogil:
            zc_batch_write_worker(&self.b)

    def deferred(self):
        """Indexes of write tasks that need read-modify-write by the caller."""
        return np.flatnonzero(self._keep[3])

    def task_key(self, int64_t t):
        cdef char buf[4096]
        if zc_batch_task_key(&self.b, t, buf, sizeof(buf)) != ZC_OK:
            raise ValueError(f"no task {t}")
        return os.fsdecode(bytes(buf))

    def raise_error(self, head_len):
        """Raise the first failure as a ZarrcoreError (or OSError) naming its chunk key."""
        if not self.b.failed:
            return
        key = self.task_key(self.b.failed_task)[head_len:] if self.b.failed_task >= 0 else "?"
        st = self.b.status
        if st == ZC_ERR_IO:
            raise OSError(self.b.sys_errno, f"chunk {key!r}: {os.strerror(self.b.sys_errno)}")
        if st == ZC_ERR_CHECKSUM:
            raise ChecksumError(f"chunk {key!r}: crc32c checksum mismatch")
        if st == ZC_ERR_NOMEM:
            raise MemoryError(f"chunk {key!r}: out of memory")
        if st in (ZC_ERR_CORRUPT, ZC_ERR_SIZE):
            raise ChunkDecodeError(f"chunk {key!r}: data is truncated, oversized or corrupt")
        raise ZarrcoreError(f"chunk {key!r}: failed with status {st}")
