# cython: language_level=3
from libc.stdint cimport int64_t

cdef object one_block(object selection, int ndim, const int64_t *shape, const int64_t *block,
                      int64_t *first, int64_t *step, int64_t *count, int *result_axis)
