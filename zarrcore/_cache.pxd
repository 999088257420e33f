# cython: language_level=3
from libc.stdint cimport int64_t

from zarrcore._jobs cimport zc_chunk_cache, zc_chunk_version


cdef extern from "zc_shm_cache.h":
    ctypedef struct zc_shm_cache:
        pass
    enum: ZC_SHM_TAG_MAX
    int zc_shm_cache_set_tag(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                             const void *tag, size_t len) nogil
    size_t zc_shm_cache_tag(zc_shm_cache *s, const int64_t *key, void *tag) nogil


cdef class ChunkCache:
    cdef zc_chunk_cache *chunks
    cdef zc_chunk_cache *indexes
    cdef zc_shm_cache *shared
    cdef readonly object shared_ref
    cdef _share(self, size_t capacity, size_t chunk_bytes, int key_len, shared, str setting)
    cdef readonly object capacity
