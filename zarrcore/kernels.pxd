# cython: language_level=3
"""C-level entry points of zarrcore.kernels for other Cython modules (`cimport zarrcore.kernels`).

All are nogil and return a status (0 = OK, negative = error, see `Status`) unless noted.
They are exported through the module's C-API capsule, so users need no headers or linking.
"""
from libc.stdint cimport uint64_t

# Mirrors csrc/zc_status.h; kernels.pyx checks the two agree at import.
cpdef enum Status:
    OK = 0
    ERR_CORRUPT = -1
    ERR_SIZE = -2
    ERR_NOMEM = -3
    ERR_PARAM = -4
    ERR_CHECKSUM = -5
    ERR_UNSUPPORTED = -6
    ERR_OVERLAP = -7

# Reverse each of n items of itemsize bytes from src into dst (dst == src: in place).
cdef int byteswap_items(void *dst, const void *src, size_t n, size_t itemsize) noexcept nogil

# Copy a strided array into another of the same shape; pointers address element [0, ..., 0].
cdef int copy_strided(int ndim, const Py_ssize_t *shape, size_t itemsize, const void *src,
                      const Py_ssize_t *src_strides, void *dst,
                      const Py_ssize_t *dst_strides) noexcept nogil

# 1 if every item equals pattern bytewise, 0 if not, negative status on bad arguments.
cdef int is_fill_bytes(const void *buf, size_t nbytes, const void *pattern,
                       size_t itemsize) noexcept nogil

# As is_fill_bytes with NaN == NaN per float component of floatsize 2, 4 or 8 bytes.
cdef int is_fill_floats(const void *buf, size_t nbytes, const void *pattern, size_t itemsize,
                        size_t floatsize, bint swapped) noexcept nogil

# CRC-32C of n bytes continuing from crc (returns the CRC, never fails).
cdef unsigned int crc32c_bytes(unsigned int crc, const void *data, size_t n) noexcept nogil

# Validate n (offset, nbytes) pairs against a shard of data_size bytes; *bad = failing chunk.
cdef int shard_index_check(const uint64_t *entries, size_t n, uint64_t data_size,
                           size_t *bad) noexcept nogil
