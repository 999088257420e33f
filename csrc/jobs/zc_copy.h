/* N-dimensional strided copy between two buffers holding arrays of the same shape. */
#ifndef ZC_COPY_H
#define ZC_COPY_H

#include <stddef.h>

#define ZC_MAX_DIMS 64

/* Byte offsets, relative to the first element, of the lowest and one-past-highest byte an
 * array of `shape`/`strides` touches; lets callers check a view fits inside its buffer. */
int zc_strided_extent(int ndim, const ptrdiff_t *shape, const ptrdiff_t *strides, size_t itemsize,
                      ptrdiff_t *lo, ptrdiff_t *hi);

/* Copy every item of the `src` array into the `dst` array (same shape, any byte strides,
 * including negative and zero for src). `src` and `dst` point at element [0, ..., 0].
 * Contiguous inner runs go through memcpy. A transpose is a copy whose src strides are
 * permuted. The buffers must not overlap. */
int zc_copy_nd(int ndim, const ptrdiff_t *shape, size_t itemsize, const void *src,
               const ptrdiff_t *src_strides, void *dst, const ptrdiff_t *dst_strides);

/* The 1-d case without checks: `n` items from `src` by byte stride `ss` to `dst` by `ds`
 * (one memcpy when both are contiguous). */
void zc_copy_items(char *dst, ptrdiff_t ds, const char *src, ptrdiff_t ss, ptrdiff_t n,
                   size_t itemsize);

#endif
