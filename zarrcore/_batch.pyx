# cython: language_level=3
"""Bindings for csrc/zc_batch.c: all chunks of one request as one GIL-free job."""
import errno as errno_
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

from .errors import ChecksumError, ChunkDecodeError, LockUnavailableError, StoreError, ZarrcoreError

cnp.import_array()

cdef extern from "zc_status.h":
    int ZC_OK, ZC_ERR_CORRUPT, ZC_ERR_SIZE, ZC_ERR_NOMEM, ZC_ERR_CHECKSUM


cdef class ChunkBatch:
    """One read or write over a directory store; call `work()` from several threads."""

    cdef zc_batch b
    cdef object _keep, _deferred

    def __init__(self, *, key_head, sep, lead_sep, array_shape, chunk_shape, plans, data,
                 write_empty_chunks=False, lock_dir="", points=None, **settings):
        """`settings` are pipeline.batch_settings: the chain, fill and item layout. Writes
        replace and delete chunk files under their key lock in `lock_dir` ("": no locks).
        A read of points gives `points` (point_start, local, out_index, coords: see
        zc_listing) instead of `plans`, and `data` 1-d."""
        memset(&self.b, 0, sizeof(zc_batch))
        head = os.fsencode(key_head)
        lock = os.fsencode(lock_dir)
        if len(head) >= ZC_BATCH_PATH_MAX - 64 or len(lock) >= ZC_BATCH_PATH_MAX - 16:
            raise ValueError("store path too long")
        keep = set_up_job(&self.b, settings, chunk_shape, plans, <cnp.ndarray?>data,
                          write_empty_chunks, points)
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
        self._keep = (*keep, data)
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
        with nogil:
            zc_batch_read_worker(&self.b)

    def work_write(self):
        with nogil:
            zc_batch_write_worker(&self.b)

    def deferred(self):
        """Indexes of write tasks that need read-modify-write by the caller."""
        return np.flatnonzero(self._deferred)

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
    const char *ZC_KEY_LOCK_FILE
    ctypedef struct zc_key_locks:
        int fd
        size_t skip
    int zc_key_locks_open(zc_key_locks *l, const char *node_dir)
    void zc_key_locks_close(zc_key_locks *l)
    int zc_key_lock(const zc_key_locks *l, const char *path)
    int zc_key_unlock(const zc_key_locks *l, const char *path)
    int zc_file_lock(const char *path, int *fd)
    void zc_file_unlock(int fd)
    int zc_share_like_dir(int fd, const char *path)

cdef extern from "zc_temp.h" nogil:
    const char *ZC_TEMP_PREFIX
    int zc_temp_remove_stale(const char *tmp)

cdef extern from "zc_chunk_io.h" nogil:
    ctypedef struct zc_file_writer:
        int fd
    int zc_file_writer_open(zc_file_writer *w, const char *path)
    int zc_file_writer_write(zc_file_writer *w, const unsigned char *data, size_t len)
    int zc_file_writer_commit(zc_file_writer *w, const zc_key_locks *locks, const char *path)
    void zc_file_writer_abort(zc_file_writer *w)
    int zc_file_replace_locked(const zc_key_locks *locks, const char *path,
                               const unsigned char *data, size_t len)

# Names of temporary files (csrc/zc_temp.h) start with this; stores never list them.
TEMP_PREFIX = ZC_TEMP_PREFIX.decode()
# The lock file of a node directory (csrc/zc_key_lock.h); stores never list it either.
LOCK_FILE = ZC_KEY_LOCK_FILE.decode()

# Errors of lock calls that mean the file system has no such locks.
_NO_LOCKS = {errno_.ENOLCK, errno_.EOPNOTSUPP, errno_.ENOSYS}


def lock_key(node_dir, key):
    """Take the lock of `key` (relative to the node directory `node_dir`, whose lock file
    holds it: csrc/zc_key_lock.h), waiting as long as it takes; returns the descriptor that
    holds it, for unlock_key."""
    cdef bytes p = os.fsencode(os.path.join(node_dir, key))
    cdef bytes d = os.fsencode(node_dir)
    cdef const char *dp = d
    cdef const char *pp = p
    cdef zc_key_locks locks
    cdef int st
    locks.fd = -1
    with nogil:
        st = zc_key_locks_open(&locks, dp)
        if st == ZC_OK:
            st = zc_key_lock(&locks, pp)
    if st == ZC_OK:
        return locks.fd
    err = errno
    zc_key_locks_close(&locks)
    lock_file = os.path.join(node_dir, LOCK_FILE)
    if st != ZC_ERR_IO:
        raise ValueError(f"lock file path too long: {lock_file!r}")
    raise _lock_error(err, key, lock_file)


def _lock_error(err, key, lock_file):
    """The error of a failed lock of `key` in the file `lock_file` (errno `err`)."""
    if err in _NO_LOCKS:
        return LockUnavailableError(
            err, f"cannot lock key {key!r}: the file system of {lock_file!r} does not support "
            f"POSIX locks ({os.strerror(err)})")
    if err == errno_.EACCES:
        return PermissionError(
            err, f"cannot lock key {key!r}: no write permission for {lock_file!r}, which holds "
            "its lock; every user who writes the store needs it (chmod g+w, or o+w)")
    if err == errno_.ENOENT:
        return FileNotFoundError(err, f"cannot lock key {key!r}: {lock_file!r} does not exist")
    return OSError(err, f"cannot lock key {key!r} in {lock_file!r}: {os.strerror(err)}")


def unlock_key(int fd, node_dir, key):
    """Drop the lock of `key` held on `fd` and close it. The explicit unlock matters: a
    child forked meanwhile shares the descriptor, and closing alone would leave the lock held
    until the child exits."""
    cdef bytes p = os.fsencode(os.path.join(node_dir, key))
    cdef zc_key_locks locks
    locks.fd = fd
    locks.skip = len(os.fsencode(node_dir)) + 1
    zc_key_unlock(&locks, p)
    zc_key_locks_close(&locks)


def lock_file(path, key):
    """Lock the file `path` (of `key`) itself, as it is once locked (csrc/zc_key_lock.h),
    waiting as long as it takes; returns the descriptor that holds it, for unlock_file.
    FileNotFoundError when there is no such file."""
    cdef bytes p = os.fsencode(path)
    cdef const char *pp = p
    cdef int fd = -1, st
    with nogil:
        st = zc_file_lock(pp, &fd)
    if st != ZC_OK:
        raise _lock_error(errno, key, path)
    return fd


def unlock_file(int fd):
    """Drop the lock lock_file took on `fd` and close it."""
    zc_file_unlock(fd)


def replace_file(path, data, shared=False):
    """Replace the file `path` with `data` atomically: written to a locked temporary file beside
    it (csrc/zc_temp.h) and renamed over it; missing directories are made. `shared`: the file
    is one others lock (zc_file_lock), so it gets write permission for whoever may write its
    directory."""
    cdef bytes p = os.fsencode(path)
    cdef const char *pp = p
    cdef const unsigned char[::1] view = memoryview(data).cast("B") if len(data) else b"\0"
    cdef size_t n = len(data)
    cdef zc_key_locks none
    cdef zc_file_writer w
    cdef bint share = shared
    cdef int st
    none.fd = -1
    with nogil:
        if not share:
            st = zc_file_replace_locked(&none, pp, &view[0], n)
        else:
            st = zc_file_writer_open(&w, pp)
            if st == ZC_OK:
                st = zc_share_like_dir(w.fd, pp)
                if st != ZC_OK:
                    zc_file_writer_abort(&w)
            if st == ZC_OK:
                st = zc_file_writer_write(&w, &view[0], n)
            if st == ZC_OK:
                st = zc_file_writer_commit(&w, &none, pp)
    if st == ZC_OK:
        return
    if st == ZC_ERR_IO:
        err = errno
        raise OSError(err, os.strerror(err), path)
    raise ValueError(f"path too long: {path!r}")


def remove_stale_temp(path):
    """Remove the temporary file `path` unless a live writer holds it; True when removed."""
    cdef bytes p = os.fsencode(path)
    return zc_temp_remove_stale(p) == 1


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
