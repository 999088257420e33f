# cython: language_level=3
"""Bindings for csrc/zc_batch.c: all chunks of one request as one GIL-free job."""
import os

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.errno cimport errno
from libc.string cimport memset, strncpy

from zarrcore._jobs cimport (
    ZC_BATCH_PATH_MAX, ZC_ERR_IO, ZC_STREAM_OUT_MIN, set_up_job, zc_batch, zc_batch_free,
    zc_batch_prepare, zc_batch_read_worker, zc_batch_split_reads, zc_batch_split_writes,
    zc_batch_task_key, zc_batch_write_worker,
)

from .errors import ChecksumError, ChunkDecodeError, StoreError, ZarrcoreError

cnp.import_array()

cdef extern from "zc_status.h":
    int ZC_OK, ZC_ERR_CORRUPT, ZC_ERR_SIZE, ZC_ERR_NOMEM, ZC_ERR_CHECKSUM


cdef class ChunkBatch:
    """One read or write over a directory store; call `work()` from several threads."""

    cdef zc_batch b
    cdef object _keep

    def __init__(self, *, key_head, sep, lead_sep, array_shape, chunk_shape, plans, data,
                 write_empty_chunks=False, lock_dir="", **settings):
        """`settings` are pipeline.batch_settings: the chain, fill and item layout. Writes
        replace and delete chunk files under their key lock in `lock_dir` ("": no locks)."""
        memset(&self.b, 0, sizeof(zc_batch))
        head = os.fsencode(key_head)
        lock = os.fsencode(lock_dir)
        if len(head) >= ZC_BATCH_PATH_MAX - 64 or len(lock) >= ZC_BATCH_PATH_MAX - 16:
            raise ValueError("store path too long")
        keep = set_up_job(&self.b, settings, chunk_shape, plans, <cnp.ndarray?>data,
                          write_empty_chunks)
        self.b.stream_out = data.nbytes >= ZC_STREAM_OUT_MIN
        strncpy(self.b.key_head, head, ZC_BATCH_PATH_MAX - 1)
        strncpy(self.b.lock_dir, lock, ZC_BATCH_PATH_MAX - 1)
        self.b.sep = ord(sep)
        self.b.lead_sep = lead_sep
        for d in range(self.b.ndim):
            self.b.array_shape[d] = array_shape[d]
        if zc_batch_prepare(&self.b) != ZC_OK:
            raise ValueError("invalid chunk batch")
        deferred = np.zeros(self.b.ntasks, np.uint8)
        cdef unsigned char[::1] defview = deferred
        self.b.deferred = &defview[0] if self.b.ntasks else NULL
        self._keep = (*keep, data, deferred)

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
        """Raise the first failure as a ZarrcoreError (StoreError for I/O) naming its chunk key."""
        if not self.b.failed:
            return
        key = self.task_key(self.b.failed_task)[head_len:] if self.b.failed_task >= 0 else "?"
        st = self.b.status
        if st == ZC_ERR_IO:
            raise StoreError(self.b.sys_errno, f"chunk {key!r}: {os.strerror(self.b.sys_errno)}")
        raise status_error(st, f"chunk {key!r}: ")


cdef extern from "zc_key_lock.h" nogil:
    int zc_key_lock_open(const char *lock_dir, int *fd)
    int zc_key_lock(int fd, const char *path)
    int zc_key_unlock(int fd, const char *path)


def lock_key(lock_dir, path):
    """Take the key lock of `path` (csrc/zc_key_lock.h), waiting as long as it takes; returns
    the descriptor that holds it, for unlock_key."""
    cdef bytes d = os.fsencode(lock_dir), p = os.fsencode(path)
    cdef const char *dp = d
    cdef const char *pp = p
    cdef int fd = -1, st
    with nogil:
        st = zc_key_lock_open(dp, &fd)
        if st == ZC_OK:
            st = zc_key_lock(fd, pp)
    if st == ZC_OK:
        return fd
    if st == ZC_ERR_IO:
        err = errno
        if fd >= 0:
            os.close(fd)
        raise OSError(err, f"key lock for {os.fsdecode(p)!r}: {os.strerror(err)}")
    raise ValueError(f"lock directory path too long: {lock_dir!r}")


def unlock_key(int fd, path):
    """Drop the key lock of `path` held on `fd` and close it. The explicit unlock matters: a
    child forked meanwhile shares the descriptor, and closing alone would leave the lock held
    until the child exits."""
    cdef bytes p = os.fsencode(path)
    zc_key_unlock(fd, p)
    os.close(fd)


def status_error(int st, str where=""):
    """The exception for the ZC_* status `st` of a failed job (not ZC_ERR_IO), its message
    starting with `where`."""
    if st == ZC_ERR_CHECKSUM:
        return ChecksumError(f"{where}crc32c checksum mismatch")
    if st == ZC_ERR_NOMEM:
        return MemoryError(f"{where}out of memory")
    if st in (ZC_ERR_CORRUPT, ZC_ERR_SIZE):
        return ChunkDecodeError(f"{where}data is truncated, oversized or corrupt")
    return ZarrcoreError(f"{where}failed with status {st}")
