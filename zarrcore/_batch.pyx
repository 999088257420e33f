# cython: language_level=3
"""Bindings for csrc/zc_batch.c: all chunks of one request as one GIL-free job."""
import os

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.errno cimport errno
from libc.string cimport memset, strncpy

from zarrcore._cache cimport ChunkCache
from zarrcore._files cimport FileRoot
from zarrcore._jobs cimport (
    ZC_BATCH_PATH_MAX, ZC_STREAM_OUT_MIN, check_read_into, set_up_job, stop_claims, zc_batch,
    zc_batch_free, zc_batch_prepare, zc_batch_read_ahead_worker, zc_batch_read_worker,
    zc_batch_reads_ahead, zc_batch_split_reads, zc_batch_split_writes, zc_batch_task_key,
    zc_batch_write_worker, zc_memstore,
)
from zarrcore._status cimport ZC_ERR_LOCK, ZC_OK

from ._status import status_error

cnp.import_array()

cdef extern from "Python.h":
    bytes PyUnicode_EncodeFSDefault(str unicode)


cdef class ChunkBatch:
    """One read or write over a directory store; call `work()` from several threads."""

    cdef zc_batch b
    cdef object _keep, _deferred
    cdef FileRoot _files
    cdef bint _data_writable

    def __init__(self, *, dict settings, FileRoot root=None, str key_head, sep, lead_sep,
                 array_shape, chunk_shape, plans, data, write_empty_chunks=False,
                 str lock_dir="", points=None, ChunkCache cache=None,
                 memory=None):
        """`settings` are CodecChain.native_form(): the chain, fill and item layout (the dict
        itself, read by lookups that take no lock: not unpacked into keywords, which locks it
        on a free-threaded Python, and every thread reading the array shares it). Chunk
        files are reached through `root` (the store's, which `key_head` and `lock_dir` start
        with). Writes replace and delete them under their key lock in `lock_dir` ("": no
        locks). Or chunks are the blobs of `memory` (a MemoryStore's), `key_head` their keys'
        start (a zarrcore._memstore.NativeMemoryMap), locked by its own key locks. A read of points gives `points` (point_start,
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
        keep = set_up_job(&self.b, settings, chunk_shape, plans, <cnp.ndarray?>data,
                          write_empty_chunks, points)
        self.b.stream_out = data.nbytes >= ZC_STREAM_OUT_MIN
        self._data_writable = data.flags.writeable
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
        if not self.b.failed:
            return
        key = self.task_key(self.b.failed_task)[head_len:] if self.b.failed_task >= 0 else "?"
        if self.b.status == ZC_ERR_LOCK and self._files is not None:
            raise self._files.lock_error(<bytes>self.b.lock_dir, key, self.b.sys_errno)
        raise status_error(self.b.status, f"chunk {key!r}: ", sys_errno=self.b.sys_errno)
