# cython: language_level=3
"""Bindings for csrc/zc_shard_batch.c: a shard's inner chunks decoded or encoded as one
GIL-free job that several threads work through together."""
cimport numpy as cnp
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from zarrcore._jobs cimport (
    set_up_job, zc_shard_job, zc_shard_job_prepare, zc_shard_read_worker, zc_shard_task_chunk,
    zc_shard_write_worker,
)

from ._batch import status_error

cnp.import_array()

cdef extern from "zc_status.h":
    int ZC_OK


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

    def __init__(self, settings, chunk_shape, grid, src, plans, data, write_empty_chunks=False):
        keep = set_up_job(&self.j, settings, chunk_shape, plans, <cnp.ndarray?>data,
                          write_empty_chunks)
        for d in range(self.j.ndim):
            self.j.grid[d] = grid[d]
        self._keep = (*keep, data, src)
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
        exc = status_error(self.j.status)
        return exc, zc_shard_task_chunk(&self.j, self.j.failed_task)
