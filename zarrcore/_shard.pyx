# cython: language_level=3
"""Bindings for csrc/zc_shard_batch.c: a shard's inner chunks decoded or encoded as one
GIL-free job that several threads work through together."""
import numpy as np

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset, strncpy

from ._batch import COMPRESSORS
from .errors import ChecksumError, ChunkDecodeError, ZarrcoreError

cdef extern from "zc_status.h":
    int ZC_OK, ZC_ERR_CORRUPT, ZC_ERR_SIZE, ZC_ERR_NOMEM, ZC_ERR_CHECKSUM

cdef extern from "zc_batch.h":
    ctypedef struct zc_piece:
        int64_t chunk_index, chunk_start, chunk_step, count, out_start, out_step

cdef extern from "zc_chain.h":
    ctypedef struct zc_chain:
        size_t itemsize, swap_size
        int compressor, clevel, shuffle, checksum
        size_t typesize, blocksize
        char cname[16]
        int crc32c

cdef extern from "zc_shard_batch.h":
    int ZC_SHARD_MAX_NDIM
    ctypedef struct zc_shard_job:
        zc_chain chain
        int ndim
        int64_t chunk_shape[32]
        int64_t grid[32]
        const unsigned char *fill
        size_t fill_floatsize
        int write_empty_chunks
        const unsigned char *const *src
        const size_t *src_len
        const zc_piece *pieces
        int64_t piece_offset[32]
        int64_t npieces[32]
        int64_t ntasks
        char *data
        Py_ssize_t data_strides[32]
        unsigned char **out
        size_t *out_len
        int failed, status
        int64_t failed_task
    int zc_shard_job_prepare(zc_shard_job *j)
    int64_t zc_shard_task_chunk(const zc_shard_job *j, int64_t t)
    void zc_shard_read_worker(zc_shard_job *j) nogil
    void zc_shard_write_worker(zc_shard_job *j) nogil



cdef class ShardJob:
    """Decode (`work_read`) or encode (`work_write`) the inner chunks a selection touches.

    `settings` is pipeline.batch_settings of the inner chain; `src` holds, per C-order inner
    chunk, its encoded bytes or None; `pieces` are the selection's per-axis pieces and `data`
    the caller's array (with `data_strides` per shard axis, 0 for integer-indexed ones).
    """

    cdef zc_shard_job j
    cdef Py_buffer *views
    cdef Py_ssize_t nviews
    cdef object _keep

    def __cinit__(self):
        memset(&self.j, 0, sizeof(zc_shard_job))
        self.views = NULL
        self.nviews = 0

    def __init__(self, settings, chunk_shape, grid, src, pieces, data, data_strides,
                 write_empty_chunks=False):
        ndim = len(chunk_shape)
        if ndim > ZC_SHARD_MAX_NDIM:
            raise ValueError(f"at most {ZC_SHARD_MAX_NDIM} dimensions")
        fill = settings["fill"]
        if len(fill) != settings["itemsize"]:
            raise ValueError("fill pattern must be one item")
        c = &self.j.chain
        c.itemsize = settings["itemsize"]
        c.swap_size = settings["swap_size"]
        c.compressor = COMPRESSORS[settings["compressor"]]
        c.clevel = settings.get("clevel", 0)
        c.shuffle = settings.get("shuffle", 0)
        c.checksum = settings.get("checksum", False)
        c.typesize = settings.get("typesize", 0)
        c.blocksize = settings.get("blocksize", 0)
        strncpy(c.cname, settings.get("cname", "").encode()[:15], 15)
        c.crc32c = settings["crc32c"]
        self.j.ndim = ndim
        self.j.fill_floatsize = settings["fill_floatsize"]
        self.j.write_empty_chunks = write_empty_chunks
        table = np.ascontiguousarray(np.concatenate(
            [np.asarray(p, dtype=np.int64).reshape(-1, 6) for p in pieces]
            or [np.zeros((0, 6), np.int64)]))
        cdef int64_t[:, ::1] tview = table
        offset = 0
        for d in range(ndim):
            self.j.chunk_shape[d] = chunk_shape[d]
            self.j.grid[d] = grid[d]
            self.j.piece_offset[d] = offset
            self.j.npieces[d] = len(pieces[d])
            self.j.data_strides[d] = data_strides[d]
            offset += len(pieces[d])
        cdef const unsigned char[::1] fview = fill
        self.j.fill = &fview[0]
        self.j.pieces = <const zc_piece *>&tview[0, 0] if table.shape[0] else NULL
        # The caller's array may be a strided or broadcast view: use its base and strides.
        cdef size_t address = data.__array_interface__["data"][0]
        self.j.data = <char *>address
        self._keep = (table, fill, data, src)
        self._hold(src)
        if zc_shard_job_prepare(&self.j) != ZC_OK:
            raise ValueError("invalid shard job")
        self.j.out = <unsigned char **>calloc(max(self.j.ntasks, 1), sizeof(unsigned char *))
        self.j.out_len = <size_t *>calloc(max(self.j.ntasks, 1), sizeof(size_t))
        if self.j.out == NULL or self.j.out_len == NULL:
            raise MemoryError("shard job")

    cdef _hold(self, src):
        """Pin every encoded inner chunk's buffer for the job's lifetime."""
        cdef Py_ssize_t n = len(src)
        cdef const unsigned char **ptrs = <const unsigned char **>calloc(max(n, 1), sizeof(unsigned char *))
        cdef size_t *lens = <size_t *>calloc(max(n, 1), sizeof(size_t))
        self.views = <Py_buffer *>calloc(max(n, 1), sizeof(Py_buffer))
        self.j.src, self.j.src_len = ptrs, lens
        if self.views == NULL or ptrs == NULL or lens == NULL:
            raise MemoryError("shard job")
        for i, blob in enumerate(src):
            if blob is None:
                continue
            PyObject_GetBuffer(blob, &self.views[i], PyBUF_SIMPLE)
            self.nviews = i + 1
            # A zero-length encoding still counts as stored: point it somewhere non-NULL.
            ptrs[i] = <const unsigned char *>self.views[i].buf if self.views[i].len else <const unsigned char *>self.j.fill
            lens[i] = self.views[i].len

    def __dealloc__(self):
        for i in range(self.nviews):
            if self.j.src[i] != NULL:  # set once the buffer is held
                PyBuffer_Release(&self.views[i])
        free(self.views)
        free(<void *>self.j.src)
        free(<void *>self.j.src_len)
        if self.j.out != NULL:
            for t in range(self.j.ntasks):
                free(self.j.out[t])
        free(self.j.out)
        free(self.j.out_len)

    @property
    def ntasks(self):
        return self.j.ntasks

    def work_read(self):
        with nogil:
            zc_shard_read_worker(&self.j)

    def work_write(self):
        with nogil:
            zc_shard_write_worker(&self.j)

    def encoded(self):
        """(inner chunk index, bytes or None when all fill) per task, after `work_write`."""
        out = []
        for t in range(self.j.ntasks):
            data = None
            if self.j.out[t] != NULL:
                data = PyBytes_FromStringAndSize(<char *>self.j.out[t], self.j.out_len[t])
                free(self.j.out[t])
                self.j.out[t] = NULL
            out.append((zc_shard_task_chunk(&self.j, t), data))
        return out

    def error(self):
        """None, or (exception, inner chunk index) of the first failure."""
        if not self.j.failed:
            return None
        st = self.j.status
        if st == ZC_ERR_CHECKSUM:
            exc = ChecksumError("crc32c checksum mismatch")
        elif st == ZC_ERR_NOMEM:
            exc = MemoryError("out of memory")
        elif st in (ZC_ERR_CORRUPT, ZC_ERR_SIZE):
            exc = ChunkDecodeError("data is truncated, oversized or corrupt")
        else:
            exc = ZarrcoreError(f"failed with status {st}")
        return exc, zc_shard_task_chunk(&self.j, self.j.failed_task)
