# cython: language_level=3
"""Bindings for csrc/jobs/zc_batch.c: all chunks of one request as one GIL-free job."""
import os

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.errno cimport errno
from libc.string cimport memset, strncpy

from zarrcore._native.cache cimport ChunkCache
from zarrcore._native.files cimport FileRoot
from zarrcore._native.indexing cimport one_block
from zarrcore._native.jobs cimport (
    ZC_BATCH_PATH_MAX, ZC_STREAM_OUT_MIN, check_read_into, set_up_job, stop_claims, zc_batch,
    zc_batch_free, zc_batch_prepare, zc_batch_read_ahead_worker, zc_batch_read_worker,
    zc_batch_reads_ahead, zc_batch_split_reads, zc_batch_split_writes, zc_batch_task_key,
    zc_batch_write_worker, zc_memstore, zc_piece, set_up_one_block,
)
from zarrcore._native.status cimport ZC_ERR_LOCK, ZC_MAX_NDIM, ZC_OK

from . import memory as _memory
from .status import status_error

cnp.import_array()

cdef extern from "Python.h":
    bytes PyUnicode_EncodeFSDefault(str unicode)


cdef class ChunkBatch:
    """One read or write over a directory store; call `work()` from several threads."""

    cdef zc_batch b
    cdef object _keep, _deferred, _dtype
    cdef FileRoot _files
    cdef bint _data_writable

    def __init__(self, *, dict settings, FileRoot root=None, str key_head, sep, lead_sep,
                 array_shape, chunk_shape, plans, data, write_empty_chunks=False,
                 str lock_dir="", points=None, ChunkCache cache=None,
                 memory=None, dtype=None):
        """`settings` are CodecChain.native_form(): the chain, fill and item layout (the dict
        itself, read by lookups that take no lock: not unpacked into keywords, which locks it
        on a free-threaded Python, and every thread reading the array shares it). Chunk
        files are reached through `root` (the store's, which `key_head` and `lock_dir` start
        with). Writes replace and delete them under their key lock in `lock_dir` ("": no
        locks). Or chunks are the blobs of `memory` (a MemoryStore's), `key_head` their keys'
        start (a zarrcore._native.memstore.NativeMemoryMap), locked by its own key locks. A read of points gives `points` (point_start,
        local, out_index, coords: see zc_listing) instead of `plans`, and `data` 1-d. Reads of
        `plans` go through `cache` when given."""
        if (root is None) == (memory is None):
            raise ValueError("chunks are files below a root or blobs of a memory map")
        memset(&self.b, 0, sizeof(zc_batch))
        # (os.fsencode in C: no Python call.)
        head = PyUnicode_EncodeFSDefault(key_head)
        lock = PyUnicode_EncodeFSDefault(lock_dir)
        if len(head) >= ZC_BATCH_PATH_MAX - 64 or len(lock) >= ZC_BATCH_PATH_MAX - 16:
            raise ValueError("store path too long")
        cdef cnp.ndarray array = data  # (None for a template)
        keep = set_up_job(&self.b, settings, chunk_shape, plans, array, write_empty_chunks,
                          points)
        self.b.stream_out = data is not None and data.nbytes >= ZC_STREAM_OUT_MIN
        # (A template reads only into arrays of its own: read_one.)
        self._data_writable = data is None or data.flags.writeable
        strncpy(self.b.key_head, head, ZC_BATCH_PATH_MAX - 1)
        strncpy(self.b.lock_dir, lock, ZC_BATCH_PATH_MAX - 1)
        self.b.sep = ord(sep)
        self.b.lead_sep = lead_sep
        if root is not None:
            self.b.root = root.root
        else:
            self.b.mem = <zc_memstore *><size_t>memory.address
        self._files = root
        if cache is not None:
            self.b.cache = cache.chunks
        for d in range(self.b.ndim):
            self.b.array_shape[d] = array_shape[d]
        if data is None:
            self._keep = (*keep, root, cache, memory)
            self._dtype = dtype
            return
        if zc_batch_prepare(&self.b) != ZC_OK:
            raise ValueError("invalid chunk batch")
        deferred = np.zeros(self.b.ntasks, np.uint8)
        cdef unsigned char[::1] defview = deferred
        self.b.deferred = &defview[0] if self.b.ntasks else NULL
        self._keep = (*keep, data, root, cache, memory)
        self._deferred = deferred

    def __dealloc__(self):
        zc_batch_free(&self.b)

    @property
    def ntasks(self):
        return self.b.ntasks

    def split_writes(self, int nthreads):
        """Before writing on `nthreads` threads: let them compress big chunks together when
        there are fewer chunks than threads. Returns the work items (for `work_write`)."""
        return zc_batch_split_writes(&self.b, nthreads)

    def split_reads(self, int nthreads):
        """Before reading on `nthreads` threads: let them decode big blosc chunks together when
        there are fewer chunks than threads. Returns the work items (for `work_read`)."""
        return zc_batch_split_reads(&self.b, nthreads)

    def work_read(self):
        check_read_into(self._data_writable)
        with nogil:
            zc_batch_read_worker(&self.b)

    @property
    def reads_ahead(self):
        """Does this read gain from helpers calling `work_read_ahead` (zc_batch.h)?"""
        return bool(zc_batch_reads_ahead(&self.b))

    def work_read_ahead(self):
        """Ask the system ahead for the chunk files the readers have not reached."""
        with nogil:
            zc_batch_read_ahead_worker(&self.b)

    def work_write(self):
        with nogil:
            zc_batch_write_worker(&self.b)

    def stop(self):
        """Let the workers take no further chunk: those in progress are finished (Ctrl-C)."""
        stop_claims(&self.b.failed)

    def deferred(self):
        """Indexes of write tasks that need read-modify-write by the caller, a list (a loop in
        C: most writes have none, and small ones pay for every Python call)."""
        cdef int64_t t
        return [t for t in range(self.b.ntasks) if self.b.deferred[t]]

    def task_key(self, int64_t t):
        cdef char buf[4096]
        if zc_batch_task_key(&self.b, t, buf, sizeof(buf)) != ZC_OK:
            raise ValueError(f"no task {t}")
        return os.fsdecode(bytes(buf))

    def raise_error(self, head_len):
        """Raise the first failure as a ZarrcoreError (StoreError for I/O) naming its chunk key."""
        if self.b.failed:
            _raise_failure(&self.b, self._files, head_len)

    def read_one(self, selection, bint fortran, int nthreads, Py_ssize_t head_len):
        """`array[selection]` as a new array (a scalar when every axis is given an int), in F
        order when `fortran`, when `selection` is ints and slices that fall in one chunk
        (_indexing.one_block), read by this template's job on the calling thread, GIL
        released; NotImplemented for any other selection. Errors as `raise_error`'s."""
        cdef int64_t first[ZC_MAX_NDIM]
        cdef int64_t step[ZC_MAX_NDIM]
        cdef int64_t count[ZC_MAX_NDIM]
        cdef int result_axis[ZC_MAX_NDIM + 1]
        cdef zc_piece pieces[ZC_MAX_NDIM]
        cdef int ndim = self.b.ndim
        shape = one_block(selection, ndim, self.b.array_shape, self.b.chunk_shape, first, step,
                          count, result_axis)
        if shape is None:
            return NotImplemented
        out = _memory.empty(shape[::-1], self._dtype).T if fortran else _memory.empty(
            shape, self._dtype)
        cdef cnp.ndarray array = out
        cdef zc_batch b = self.b
        set_up_one_block(pieces, ndim, b.chunk_shape, first, step, count, result_axis, array,
                         b.piece_offset, b.npieces, b.data_strides)
        b.pieces = pieces
        b.data = <char *>cnp.PyArray_DATA(array)
        b.stream_out = cnp.PyArray_NBYTES(array) >= ZC_STREAM_OUT_MIN
        if zc_batch_prepare(&b) != ZC_OK:
            raise ValueError("invalid chunk batch")
        zc_batch_split_reads(&b, nthreads)
        with nogil:
            zc_batch_read_worker(&b)
        zc_batch_free(&b)
        if b.failed:
            _raise_failure(&b, self._files, head_len)
        return out[()] if result_axis[ndim] == -2 else out


cdef _raise_failure(zc_batch *b, FileRoot files, head_len):
    """Raise the failure of `b` as a ZarrcoreError (StoreError for I/O) naming its chunk key
    (its path past `head_len`)."""
    cdef char buf[4096]
    key = "?"
    if b.failed_task >= 0 and zc_batch_task_key(b, b.failed_task, buf, sizeof(buf)) == ZC_OK:
        key = os.fsdecode(bytes(buf))[head_len:]
    if b.status == ZC_ERR_LOCK and files is not None:
        raise files.lock_error(<bytes>b.lock_dir, key, b.sys_errno)
    raise status_error(b.status, f"chunk {key!r}: ", sys_errno=b.sys_errno)
