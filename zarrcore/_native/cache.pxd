# cython: language_level=3
from libc.stdint cimport int64_t
from libc.string cimport memcpy, memset

from zarrcore._native.jobs cimport zc_chunk_cache, zc_chunk_version


cdef extern from "cache/zc_shm_cache.h":
    ctypedef struct zc_shm_cache:
        pass
    enum: ZC_SHM_TAG_MAX
    int zc_shm_cache_set_tag(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                             const void *tag, size_t len) nogil
    size_t zc_shm_cache_tag(zc_shm_cache *s, const int64_t *key, void *tag) nogil
    int zc_shm_cache_get_head(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                              void *dst, size_t n) nogil
    void zc_shm_cache_put_head(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                               const void *data, size_t n) nogil


cdef inline void version_of_digest(const unsigned char *digest, zc_chunk_version *v):
    """The zc_chunk_version a 32-byte digest of a stored object's version is kept as (its
    ctime_ns 0: settled, cached at once)."""
    memset(v, 0, sizeof(zc_chunk_version))
    memcpy(&v.dev, &digest[0], 8)
    memcpy(&v.ino, &digest[8], 8)
    memcpy(&v.size, &digest[16], 8)
    memcpy(&v.mtime_ns, &digest[24], 8)


cdef class ChunkCache:
    cdef zc_chunk_cache *chunks
    cdef zc_chunk_cache *indexes
    cdef zc_shm_cache *shared
    cdef readonly object shared_ref
    cdef size_t chunk_bytes
    cdef readonly int key_len
    cdef _share(self, size_t capacity, size_t chunk_bytes, int key_len, shared, str setting)
    cdef int _shared_key(self, key, int64_t *out) except -1
    cdef readonly object capacity
