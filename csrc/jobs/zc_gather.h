/* Gathers out of a decoded C-ordered chunk by index lists: orthogonal selections (per axis a
 * strided run or a list of positions, copied as their cross product) and points (in-chunk
 * item offsets), each landing at listed output positions. Every chunk position is checked
 * against the chunk before anything is written. */
#ifndef ZC_GATHER_H
#define ZC_GATHER_H

#include <stddef.h>
#include <stdint.h>

#include "zc_status.h"

/* One axis of an orthogonal selection of a chunk: `count` positions, index[k] when `index`
 * is given, else start + k * step (step >= 0); the k-th lands at output position
 * out_index[k] when `out_index` is given, else k. */
typedef struct {
    int64_t start, step, count;
    const int64_t *index;
    const int64_t *out_index;
} zc_gather_axis;

/* Copy the cross product of the axes' positions of the C-ordered chunk `chunk` (`shape`,
 * `itemsize`-byte items) to `dst`: the item at the axes' k_0..k_{n-1}-th positions goes to
 * dst + sum o_d * dst_strides[d] (bytes, any sign), o_d the k_d-th output position of axis
 * d. ZC_OK, or ZC_ERR_PARAM when a position falls outside the chunk (nothing is written). */
int zc_gather_nd(int ndim, const int64_t *shape, size_t itemsize, const unsigned char *chunk,
                 const zc_gather_axis *axes, char *dst, const ptrdiff_t *dst_strides);

/* Set every output position of the cross product of `axes` (as zc_gather_nd places them) to
 * the item `fill`. */
int zc_gather_fill(int ndim, size_t itemsize, const unsigned char *fill,
                   const zc_gather_axis *axes, char *dst, const ptrdiff_t *dst_strides);

/* Item local[k] of `chunk` (`nitems` items; local NULL: item 0 for every k) goes to
 * dst + out_index[k] * dst_stride (out_index NULL: k), 0 <= k < n. ZC_OK, or ZC_ERR_PARAM
 * when an offset falls outside the chunk (nothing is written). */
int zc_gather_points(const unsigned char *chunk, int64_t nitems, size_t itemsize,
                     const int64_t *local, const int64_t *out_index, int64_t n, char *dst,
                     ptrdiff_t dst_stride);

#endif
