# cython: language_level=3
"""The data of a MemoryStore in C (csrc/files/zc_memstore.h): a mapping of keys to bytes that threads
without the GIL (array handles) read, write and lock as well as Python code."""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint64_t
from libc.stdlib cimport free
from libc.string cimport memcpy

from zarrcore._native.status cimport ZC_OK

cdef extern from "files/zc_memstore.h" nogil:
    ctypedef struct zc_blob:
        uint64_t version
        size_t len
        unsigned char *data
    zc_blob *zc_blob_new(size_t len)
    void zc_blob_release(zc_blob *b)
    ctypedef struct zc_memstore:
        pass
    zc_memstore *zc_memstore_new()
    void zc_memstore_retain(zc_memstore *m)
    void zc_memstore_release(zc_memstore *m)
    zc_blob *zc_memstore_get(zc_memstore *m, const char *key)
    int zc_memstore_put(zc_memstore *m, const char *key, zc_blob *b)
    size_t zc_memstore_len(zc_memstore *m)
    int zc_memstore_keys(zc_memstore *m, char ***keys, size_t *n)
    int zc_memstore_lock(zc_memstore *m, const char *key)
    int zc_memstore_unlock(zc_memstore *m, const char *key)


cdef bytes _key(key):
    if not isinstance(key, str):
        raise TypeError(f"keys are str, not {type(key).__name__}")
    cdef bytes k = key.encode("utf-8")
    if b"\0" in k:
        raise ValueError(f"key {key!r} holds a NUL character")
    return k


cdef class NativeMemoryMap:
    """A dict-like mapping of str keys to bytes, kept in C so that array handles read and
    write it from threads without the GIL; `lock(key)` is the lock those threads take for a
    key's read-modify-write. Values are copied in and out."""

    cdef zc_memstore *m

    def __cinit__(self, *args, **kwargs):
        self.m = zc_memstore_new()
        if self.m == NULL:
            raise MemoryError("memory store")

    def __init__(self, items=None):
        if items is not None:
            for key, value in dict(items).items():
                self[key] = value

    def __dealloc__(self):
        zc_memstore_release(self.m)

    def __reduce__(self):
        return NativeMemoryMap, (dict(self.items()),)

    @property
    def address(self):
        """The `zc_memstore *`, valid while this mapping lives (handles take a reference)."""
        return <size_t>self.m

    def __getitem__(self, key):
        cdef bytes k = _key(key)
        cdef const char *kp = k
        cdef zc_blob *b
        with nogil:
            b = zc_memstore_get(self.m, kp)
        if b == NULL:
            raise KeyError(key)
        try:
            return PyBytes_FromStringAndSize(<const char *>b.data, b.len)
        finally:
            zc_blob_release(b)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __setitem__(self, key, value):
        cdef bytes k = _key(key)
        cdef const unsigned char[::1] view = memoryview(value).cast("B") if len(value) else None
        cdef size_t n = len(view) if view is not None else 0
        cdef zc_blob *b = zc_blob_new(n)
        cdef int st
        if b == NULL:
            raise MemoryError(f"memory store: {key!r}")
        if n:
            memcpy(b.data, &view[0], n)
        cdef const char *kp = k
        with nogil:
            st = zc_memstore_put(self.m, kp, b)
        zc_blob_release(b)
        if st != ZC_OK:
            raise MemoryError(f"memory store: {key!r}")

    def __delitem__(self, key):
        if self.pop(key, None) is None:
            raise KeyError(key)

    def pop(self, key, default=None):
        value = self.get(key)
        if value is None:
            return default
        cdef bytes k = _key(key)
        cdef const char *kp = k
        with nogil:
            zc_memstore_put(self.m, kp, NULL)
        return value

    def __contains__(self, key):
        if not isinstance(key, str):
            return False
        cdef bytes k = _key(key)
        cdef const char *kp = k
        cdef zc_blob *b
        with nogil:
            b = zc_memstore_get(self.m, kp)
        zc_blob_release(b)
        return b != NULL

    def keys(self):
        """The keys now (a list: the mapping may change while it is used)."""
        cdef char **keys = NULL
        cdef size_t n = 0
        if zc_memstore_keys(self.m, &keys, &n) != ZC_OK:
            raise MemoryError("memory store keys")
        try:
            return [keys[i].decode("utf-8") for i in range(n)]
        finally:
            for i in range(n):
                free(keys[i])
            free(keys)

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return zc_memstore_len(self.m)

    def items(self):
        return [(k, v) for k in self.keys() if (v := self.get(k)) is not None]

    def values(self):
        return [v for _, v in self.items()]

    def clear(self):
        for key in self.keys():
            self.pop(key)

    def lock(self, key):
        """Hold `key`'s lock, which array handles take for their read-modify-writes; waits
        with the GIL released."""
        return _HeldKey(self, _key(key))


cdef class _HeldKey:
    """NativeMemoryMap.lock's context manager. A class rather than a contextlib generator:
    every write of a chunk takes one, and on a free-threaded CPython 3.13 making a
    _GeneratorContextManager queues the writing threads on the interpreter's type lock."""
    cdef NativeMemoryMap store
    cdef bytes key

    def __cinit__(self, NativeMemoryMap store, bytes key):
        self.store, self.key = store, key

    def __enter__(self):
        cdef const char *kp = self.key
        cdef int st
        with nogil:
            st = zc_memstore_lock(self.store.m, kp)
        if st != ZC_OK:
            raise MemoryError(f"memory store: lock of {self.key.decode()!r}")

    def __exit__(self, *exc):
        cdef const char *kp = self.key
        with nogil:
            zc_memstore_unlock(self.store.m, kp)
