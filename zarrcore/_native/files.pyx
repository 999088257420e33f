# cython: language_level=3
"""Bindings for csrc/files/zc_fs.c, zc_temp.c and zc_key_lock.c: the files of a directory store,
opened, replaced, renamed, removed and locked below its root, confined or not. LocalStore
reaches its files only through a FileRoot, and the compiled jobs copy its `root`, so both go
through the same checks."""
import errno as errno_
import os

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.errno cimport EINTR, errno
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport uint64_t

from .pybytes cimport bytes_data
from .status cimport ZC_ERR_IO, ZC_ERR_LOCK, ZC_ERR_NOMEM, ZC_ERR_OUTSIDE, ZC_ERR_SIZE, ZC_OK

from .status import CALL_ERRNO, status_error
from ..errors import LockUnavailableError, OutsideStoreError, StoreError

cdef extern from "os/zc_os.h" nogil:
    int ZC_OPEN_READ, ZC_OPEN_DIRECTORY
    unsigned long long ZC_LOCK_WHOLE
    void zc_os_beneath_by_walking(int on)
    ptrdiff_t zc_os_pread(int fd, void *buf, size_t len, unsigned long long at)
    int zc_os_lock(int fd, unsigned long long at, int exclusive, int wait)

cdef extern from "files/zc_fs.h" nogil:
    int zc_fs_root_open(zc_root *r, const char *path, int confined)
    void zc_fs_root_close(zc_root *r)
    int zc_fs_open(const zc_root *r, const char *path, int how, unsigned mode, int *fd)
    int zc_fs_unlink(const zc_root *r, const char *path)
    int zc_fs_rename(const zc_root *r, const char *src, const char *dst)
    int zc_fs_mkdirs(const zc_root *r, const char *dir)

cdef extern from "files/zc_key_lock.h" nogil:
    const char *ZC_KEY_LOCK_FILE
    enum: ZC_KEY_LOCK_PATH_MAX
    ctypedef struct zc_key_locks:
        int fd
        char file[1]
    int zc_key_locks_open(zc_key_locks *l, const zc_root *root, const char *node_dir)
    void zc_key_locks_file(const zc_root *root, const char *node_dir, char *file, size_t cap)
    void zc_key_locks_close(zc_key_locks *l)
    int zc_key_lock(const zc_key_locks *l, const char *path)
    int zc_key_unlock(const zc_key_locks *l, const char *path)
    int zc_file_lock(const zc_root *root, const char *path, int *fd)
    void zc_file_unlock(int fd)
    int zc_share_like_dir(const zc_root *root, int fd, const char *path)

cdef extern from "files/zc_temp.h" nogil:
    const char *ZC_TEMP_PREFIX
    int zc_temp_remove_stale(const zc_root *r, const char *tmp)

cdef extern from "jobs/zc_chunk_io.h" nogil:
    ctypedef struct zc_file_writer:
        int fd
    int zc_file_writer_open(zc_file_writer *w, const zc_root *root, const char *path)
    int zc_file_writer_write(zc_file_writer *w, const unsigned char *data, size_t len)
    int zc_file_writer_copy(zc_file_writer *w, int src_fd, uint64_t at, size_t len)
    int zc_file_writer_commit(zc_file_writer *w, const zc_key_locks *locks, const char *path)
    void zc_file_writer_abort(zc_file_writer *w)
    int zc_file_replace_locked(const zc_root *root, const zc_key_locks *locks, const char *path,
                               const unsigned char *data, size_t len)

# Names of temporary files (csrc/files/zc_temp.h) start with this; stores never list them.
TEMP_PREFIX = ZC_TEMP_PREFIX.decode()
# The lock file of a node directory, and the end of the name of one beside a hierarchy
# (csrc/files/zc_key_lock.h); stores never list them either.
LOCK_FILE = ZC_KEY_LOCK_FILE.decode()


def is_lock_file(name):
    """Whether the file name `name` is that of a lock file (csrc/files/zc_key_lock.h)."""
    return name == LOCK_FILE or name.startswith(".") and name.endswith(LOCK_FILE)


# Errors of lock calls that mean the file system has no such locks.
_NO_LOCKS = {errno_.ENOLCK, errno_.EOPNOTSUPP, errno_.ENOSYS}


def resolve_by_walking(bint on):
    """Resolve confined paths by the component walk even where openat2 exists (for tests of
    the fallback, csrc/files/zc_fs.h)."""
    zc_os_beneath_by_walking(on)


cdef Py_ssize_t _read_at(int fd, char *buf, Py_ssize_t size,
                         unsigned long long offset) except -1:
    """Read `size` bytes of the file `fd` from `offset` into `buf` without the GIL; the number
    read (fewer only at its end)."""
    cdef Py_ssize_t got = 0
    cdef ptrdiff_t n = 0
    with nogil:
        while got < size:
            n = zc_os_pread(fd, buf + got, <size_t>(size - got), offset + <unsigned long long>got)
            if n > 0:
                got += n
            elif n == 0 or errno != EINTR:
                break
    if n < 0:
        raise OSError(errno, os.strerror(errno))
    return got


def pread(int fd, Py_ssize_t size, unsigned long long offset):
    """`size` bytes of the file `fd` from `offset` (fewer only at its end), read without the
    GIL through csrc/os/zc_os.h: os.pread for Pythons without it (Windows, where the read moves
    the descriptor's file position)."""
    if size < 0:
        raise ValueError("negative size")
    data = PyBytes_FromStringAndSize(NULL, size)
    cdef Py_ssize_t got = _read_at(fd, bytes_data(data), size, offset)
    return data if got == size else data[:got]


def pread_into(int fd, unsigned char[::1] buffer not None, unsigned long long offset):
    """Fill the writable `buffer` with the bytes of the file `fd` from `offset`, without the
    GIL (as `pread`); the number of bytes read, fewer only at the file's end."""
    if buffer.shape[0] == 0:
        return 0
    return _read_at(fd, <char *>&buffer[0], buffer.shape[0], offset)


def try_lock_whole(int fd):
    """Lock the open file `fd` exclusively, as a whole, if no other open file of it holds such
    a lock (csrc/os/zc_os.h: on Windows one byte far past the data, so readers are not barred):
    True when taken. Closing the file drops it. fcntl.flock for Pythons without fcntl."""
    cdef int st
    with nogil:
        st = zc_os_lock(fd, ZC_LOCK_WHOLE, 1, 0)
    if st < 0:
        raise OSError(errno, os.strerror(errno))
    return st == 1


def unlock_file(int fd):
    """Drop the lock FileRoot.lock_file took on `fd` and close it."""
    zc_file_unlock(fd)


cdef class KeyLock:
    """A key's lock, held on its open lock file until released (FileRoot.lock_key)."""
    cdef zc_key_locks locks
    cdef bytes path

    def __cinit__(self):
        self.locks.fd = -1

    cdef locks_close(self):
        zc_key_locks_close(&self.locks)

    def release(self):
        """Drop the lock and close the file. The explicit unlock matters: a child forked
        meanwhile shares the descriptor, and closing alone would leave the lock held until
        the child exits."""
        zc_key_unlock(&self.locks, self.path)
        zc_key_locks_close(&self.locks)

    def __dealloc__(self):
        zc_key_locks_close(&self.locks)


cdef class FileRoot:
    """The root directory of a directory store. Confined, it holds the root's descriptor and
    resolves every path beneath it (csrc/files/zc_fs.h): a path that leads out raises
    OutsideStoreError naming the key. Paths given to its methods are below `path`. Raises
    FileNotFoundError when a confined root does not exist."""

    def __cinit__(self):
        self.root.confined = 0
        self.root.fd = -1

    def __init__(self, path, bint confined):
        self.path = os.fspath(path)
        cdef bytes p = os.fsencode(self.path)
        if zc_fs_root_open(&self.root, p, confined) != ZC_OK:
            raise self._error(ZC_ERR_IO, errno, self.path)

    def __dealloc__(self):
        zc_fs_root_close(&self.root)

    @property
    def confined(self):
        return bool(self.root.confined)

    def key(self, path):
        """The store key of `path`."""
        rel = os.fspath(path)[len(self.path.rstrip("/" + os.sep)) + 1:]
        return rel.replace(os.sep, "/")

    cdef _error(self, int st, int err, path):
        return status_error(st, "", {
            ZC_ERR_OUTSIDE: (OutsideStoreError, f"key {self.key(path)!r} of the confined store "
                             f"{self.path!r} resolves outside the store's root", errno_.EXDEV),
            ZC_ERR_IO: (OSError, None, CALL_ERRNO, path),
            ZC_ERR_SIZE: (OSError, "the file copied from ended before its size", errno_.EIO,
                          path),
            ZC_ERR_NOMEM: (MemoryError, "out of memory"),
            None: (OSError, "path too long", errno_.ENAMETOOLONG, path),
        }, err)

    def open(self, path, bint directory=False):
        """A descriptor of `path` below the root, for reading (a directory: for listing, and
        NotADirectoryError when it is none)."""
        cdef bytes p = os.fsencode(path)
        cdef const char *pp = p
        cdef int how = ZC_OPEN_READ | (ZC_OPEN_DIRECTORY if directory else 0)
        cdef int fd = -1, st
        with nogil:
            st = zc_fs_open(&self.root, pp, how, 0, &fd)
        if st != ZC_OK:
            raise self._error(st, errno, path)
        return fd

    def unlink(self, path):
        cdef bytes p = os.fsencode(path)
        cdef int st = zc_fs_unlink(&self.root, p)
        if st != ZC_OK:
            raise self._error(st, errno, path)

    def mkdirs(self, path):
        """Make the directory `path` and those missing above it."""
        cdef bytes p = os.fsencode(path)
        cdef int st = zc_fs_mkdirs(&self.root, p)
        if st != ZC_OK:
            raise self._error(st, errno, path)

    def rename(self, source, dest):
        """Rename `source` to `dest`, making the directories missing above `dest`."""
        self.mkdirs(os.path.dirname(dest))
        cdef bytes s = os.fsencode(source)
        cdef bytes d = os.fsencode(dest)
        cdef int st = zc_fs_rename(&self.root, s, d)
        if st == ZC_ERR_OUTSIDE:
            raise OutsideStoreError(
                errno_.EXDEV, f"renaming key {self.key(source)!r} to {self.key(dest)!r} of the "
                f"confined store {self.path!r}: a path resolves outside the store's root")
        if st != ZC_OK:
            raise self._error(st, errno, source)

    def replace(self, path, data, shared=False):
        """Replace the file `path` with `data` atomically: written to a locked temporary file
        beside it (csrc/files/zc_temp.h) and renamed over it; missing directories are made.
        `shared`: the file is one others lock (lock_file), so it gets write permission for
        whoever may write its directory."""
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
                st = zc_file_replace_locked(&self.root, &none, pp, &view[0], n)
            else:
                st = zc_file_writer_open(&w, &self.root, pp)
                if st == ZC_OK:
                    st = zc_share_like_dir(&self.root, w.fd, pp)
                    if st != ZC_OK:
                        zc_file_writer_abort(&w)
                if st == ZC_OK:
                    st = zc_file_writer_write(&w, &view[0], n)
                if st == ZC_OK:
                    st = zc_file_writer_commit(&w, &none, pp)
        if st != ZC_OK:
            raise self._error(st, errno, path)

    def replace_copy(self, path, int src_fd, size_t size):
        """As replace (not for a shared file), with the first `size` bytes of the open file
        `src_fd` for data: copied inside the system where it can, not through memory."""
        cdef bytes p = os.fsencode(path)
        cdef const char *pp = p
        cdef zc_key_locks none
        cdef zc_file_writer w
        cdef int st
        none.fd = -1
        with nogil:
            st = zc_file_writer_open(&w, &self.root, pp)
            if st == ZC_OK:
                st = zc_file_writer_copy(&w, src_fd, 0, size)
            if st == ZC_OK:
                st = zc_file_writer_commit(&w, &none, pp)
        if st != ZC_OK:
            raise self._error(st, errno, path)

    def remove_stale_temp(self, path):
        """Remove the temporary file `path` unless a live writer holds it; True when removed."""
        cdef bytes p = os.fsencode(path)
        return zc_temp_remove_stale(&self.root, p) == 1

    def lock_key(self, node_dir, key):
        """Take the lock of `key` (relative to the node directory `node_dir`, in the lock file
        of its hierarchy: csrc/files/zc_key_lock.h), waiting as long as it takes; returns the
        KeyLock that holds it."""
        cdef KeyLock held = KeyLock()
        held.path = os.fsencode(os.path.join(node_dir, key))
        cdef bytes d = os.fsencode(node_dir)
        cdef const char *dp = d
        cdef const char *pp = held.path
        cdef const char *lock_path = held.locks.file
        cdef int st
        with nogil:
            st = zc_key_locks_open(&held.locks, &self.root, dp)
            if st == ZC_OK:
                st = zc_key_lock(&held.locks, pp)
        if st == ZC_OK:
            return held
        err = errno
        lock_file = os.fsdecode(<bytes>lock_path)
        held.locks_close()
        if st != ZC_ERR_LOCK:
            raise self._error(st, err, lock_file)
        raise _lock_error(err, key, lock_file)

    def lock_error(self, node_dir, key, int err):
        """The error of a failed lock of `key` (errno `err`) in the lock file of the node
        directory `node_dir`, which it names."""
        cdef bytes d = os.fsencode(node_dir)
        cdef char file[ZC_KEY_LOCK_PATH_MAX]
        zc_key_locks_file(&self.root, d, file, sizeof(file))
        return _lock_error(err, key, os.fsdecode(<bytes>file))

    def lock_file(self, path, key):
        """Lock the file `path` (of `key`) itself, as it is once locked (csrc/files/zc_key_lock.h),
        waiting as long as it takes; returns the descriptor that holds it, for unlock_file.
        FileNotFoundError when there is no such file."""
        cdef bytes p = os.fsencode(path)
        cdef const char *pp = p
        cdef int fd = -1, st
        with nogil:
            st = zc_file_lock(&self.root, pp, &fd)
        if st == ZC_ERR_IO:
            raise _lock_error(errno, key, path)
        if st != ZC_OK:
            raise self._error(st, errno, path)
        return fd


def _lock_error(err, key, lock_file):
    """The error of a failed lock of `key` in the file `lock_file` (errno `err`)."""
    if err in _NO_LOCKS:
        return LockUnavailableError(
            err, f"cannot lock key {key!r}: the file system of {lock_file!r} does not support "
            f"POSIX locks ({os.strerror(err)})")
    if err in (errno_.EACCES, errno_.EPERM):
        return StoreError(
            err, f"cannot lock key {key!r}: no write permission for {lock_file!r}, which holds "
            "its lock; every user who writes the store needs it (chmod g+w, or o+w)")
    if err == errno_.ENOENT:
        return FileNotFoundError(err, f"cannot lock key {key!r}: {lock_file!r} does not exist")
    if err == errno_.EINVAL:
        return StoreError(err, f"cannot lock key {key!r}: {lock_file!r} is no regular file")
    return StoreError(err, f"cannot lock key {key!r} in {lock_file!r}: {os.strerror(err)}")
