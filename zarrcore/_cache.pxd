# cython: language_level=3
from zarrcore._jobs cimport zc_chunk_cache


cdef class ChunkCache:
    cdef zc_chunk_cache *chunks
    cdef zc_chunk_cache *indexes
    cdef readonly object capacity
