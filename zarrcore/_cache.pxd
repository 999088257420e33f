# cython: language_level=3
from libc.stdint cimport uint64_t

from zarrcore._jobs cimport zc_chunk_cache


cdef class ChunkCache:
    cdef zc_chunk_cache *chunks
    cdef zc_chunk_cache *indexes
    cdef readonly object capacity
    cdef int stat_fresh
    cdef uint64_t stat_dev
