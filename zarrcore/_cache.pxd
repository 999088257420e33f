# cython: language_level=3
from zarrcore._jobs cimport zc_chunk_cache


cdef extern from "zc_shm_cache.h":
    ctypedef struct zc_shm_cache:
        pass


cdef class ChunkCache:
    cdef zc_chunk_cache *chunks
    cdef zc_chunk_cache *indexes
    cdef zc_shm_cache *shared
    cdef readonly object shared_ref
    cdef _share(self, size_t capacity, size_t chunk_bytes, int key_len, shared, str setting)
    cdef readonly object capacity
