/* Gathers by index lists; see zc_gather.h. */
#include "jobs/zc_gather.h"

#include <string.h>

#include "zc_status.h"

/* Copy one item; the common sizes as single moves. */
static inline void copy_item(char *d, const unsigned char *s, size_t itemsize)
{
    switch (itemsize) {
    case 1: *d = (char)*s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, itemsize);
    }
}

static inline int64_t chunk_position(const zc_gather_axis *a, int64_t k)
{
    return a->index ? a->index[k] : a->start + k * a->step;
}

static inline int64_t out_position(const zc_gather_axis *a, int64_t k)
{
    return a->out_index ? a->out_index[k] : k;
}

int zc_gather_nd(int ndim, const int64_t *shape, size_t itemsize, const unsigned char *chunk,
                 const zc_gather_axis *axes, char *dst, const ptrdiff_t *dst_strides)
{
    if (ndim < 0 || ndim > ZC_MAX_NDIM || itemsize == 0)
        return ZC_ERR_PARAM;
    size_t cstride[ZC_MAX_NDIM];
    size_t s = itemsize;
    int empty = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        const zc_gather_axis *a = &axes[d];
        if (shape[d] < 1 || a->count < 0)
            return ZC_ERR_PARAM;
        empty |= a->count == 0;
        if (a->index) {
            for (int64_t k = 0; k < a->count; k++)
                if (a->index[k] < 0 || a->index[k] >= shape[d])
                    return ZC_ERR_PARAM;
        } else if (a->count && (a->start < 0 || a->step < 0 || a->start >= shape[d] ||
                                (a->step &&
                                 (a->count - 1) > (shape[d] - 1 - a->start) / a->step))) {
            return ZC_ERR_PARAM;
        }
        cstride[d] = s;
        s *= (size_t)shape[d];
    }
    if (empty)
        return ZC_OK;
    if (ndim == 0) {
        copy_item(dst, chunk, itemsize);
        return ZC_OK;
    }
    /* Odometer over the outer axes; the last axis is the inner loop. */
    int64_t k[ZC_MAX_NDIM] = {0};
    const int L = ndim - 1;
    const zc_gather_axis *last = &axes[L];
    const ptrdiff_t ds = dst_strides[L];
    for (;;) {
        size_t off = 0;
        char *o = dst;
        for (int d = 0; d < L; d++) {
            off += (size_t)chunk_position(&axes[d], k[d]) * cstride[d];
            o += (ptrdiff_t)out_position(&axes[d], k[d]) * dst_strides[d];
        }
        const unsigned char *row = chunk + off;
        if (last->index == NULL && last->out_index == NULL) {
            const unsigned char *p = row + (size_t)last->start * itemsize;
            const size_t step = (size_t)last->step * itemsize;
            for (int64_t j = 0; j < last->count; j++, o += ds, p += step)
                copy_item(o, p, itemsize);
        } else {
            for (int64_t j = 0; j < last->count; j++)
                copy_item(o + (ptrdiff_t)out_position(last, j) * ds,
                          row + (size_t)chunk_position(last, j) * itemsize, itemsize);
        }
        int d = L - 1;
        while (d >= 0 && ++k[d] == axes[d].count)
            k[d--] = 0;
        if (d < 0)
            return ZC_OK;
    }
}

int zc_gather_fill(int ndim, size_t itemsize, const unsigned char *fill,
                   const zc_gather_axis *axes, char *dst, const ptrdiff_t *dst_strides)
{
    if (ndim < 0 || ndim > ZC_MAX_NDIM)
        return ZC_ERR_PARAM;
    /* A chunk of one item, every position 0. */
    zc_gather_axis one[ZC_MAX_NDIM];
    int64_t shape[ZC_MAX_NDIM];
    for (int d = 0; d < ndim; d++) {
        one[d] = (zc_gather_axis){.count = axes[d].count, .out_index = axes[d].out_index};
        shape[d] = 1;
    }
    return zc_gather_nd(ndim, shape, itemsize, fill, one, dst, dst_strides);
}

int zc_gather_points(const unsigned char *chunk, int64_t nitems, size_t itemsize,
                     const int64_t *local, const int64_t *out_index, int64_t n, char *dst,
                     ptrdiff_t dst_stride)
{
    if (itemsize == 0 || n < 0 || nitems < 1)
        return ZC_ERR_PARAM;
    for (int64_t k = 0; local != NULL && k < n; k++)
        if (local[k] < 0 || local[k] >= nitems)
            return ZC_ERR_PARAM;
    for (int64_t k = 0; k < n; k++)
        copy_item(dst + (out_index ? out_index[k] : k) * dst_stride,
                  chunk + (local ? (size_t)local[k] * itemsize : 0), itemsize);
    return ZC_OK;
}
