/* Chunk-grid projection kernels: plain loops over int64 index arrays, no allocation except
 * the sort's workspace. */
#include "jobs/zc_indexing.h"

#include <stdlib.h>
#include <string.h>

#include "os/zc_os.h"
#include "zc_status.h"

#define ZC_MAX_DIMS 64
#define RADIX_BITS 16
#define RADIX_BINS ((int64_t)1 << RADIX_BITS)

/* ceil(a / b) for b > 0, with no overflow for any a (a + b - 1 could pass INT64_MAX). */
static int64_t ceil_div(int64_t a, int64_t b) { return a > 0 ? a / b + (a % b != 0) : 0; }

int64_t zc_slice_chunks(int64_t start, int64_t step, int64_t n, int64_t chunk_len,
                        int64_t dim_len, int64_t *chunk, int64_t *first, int64_t *count,
                        int64_t *out_first, uint8_t *complete)
{
    int64_t k = 0, j0 = 0;
    while (j0 < n) {
        /* The chunk holding element j0, and the elements j0..j1 that fall in it. */
        int64_t c = (start + j0 * step) / chunk_len;
        int64_t lo = c * chunk_len;
        /* lo + chunk_len may pass INT64_MAX in the last chunk of an axis near 2**63 long. */
        int64_t hi = chunk_len < dim_len - lo ? lo + chunk_len : dim_len;
        int64_t j1 = ceil_div(hi - start, step);
        if (j1 > n)
            j1 = n;
        chunk[k] = c;
        first[k] = start + j0 * step - lo;
        count[k] = j1 - j0;
        out_first[k] = j0;
        /* Distinct positions: covering the chunk means the count equals its extent. */
        complete[k] = (j1 - j0) == (hi - lo);
        k++;
        j0 = j1;
    }
    return k;
}

/* Division by the chunk shape through floating reciprocals: a multiply instead of a
 * division, exact after a one-step correction while values stay below 2**52 (plain
 * division beyond, flagged by inv = 0). */
typedef struct {
    int ndim;
    const int64_t *shape, *chunk;
    double inv[ZC_MAX_DIMS];
} divider;

static void divider_init(divider *dv, int ndim, const int64_t *shape, const int64_t *chunk)
{
    dv->ndim = ndim;
    dv->shape = shape;
    dv->chunk = chunk;
    for (int d = 0; d < ndim; d++)
        dv->inv[d] = shape[d] < ((int64_t)1 << 52) ? 1.0 / (double)chunk[d] : 0.0;
}

/* Quotient of in-bounds v >= 0 by chunk[d], its remainder in *rem. */
static inline int64_t divmod(const divider *dv, int d, int64_t v, int64_t *rem)
{
    int64_t c = dv->chunk[d];
    if (dv->inv[d] == 0.0) {
        *rem = v % c;
        return v / c;
    }
    int64_t q = (int64_t)((double)v * dv->inv[d]);
    int64_t r = v - q * c;
    if (r < 0) {
        q--;
        r += c;
    } else if (r >= c) {
        q++;
        r -= c;
    }
    *rem = r;
    return q;
}

/* In-chunk coordinate along axis d of a coordinate known to be in bounds. */
static inline int64_t local_of(const divider *dv, int d, int64_t v)
{
    int64_t r;
    divmod(dv, d, v < 0 ? v + dv->shape[d] : v, &r);
    return r;
}

int64_t zc_point_chunk_ids(const int64_t *const *idx, int ndim, int64_t n, const int64_t *shape,
                           const int64_t *chunk_shape, int64_t *ids, int *bad_axis)
{
    int64_t grid[ZC_MAX_DIMS], r;
    divider dv;
    divider_init(&dv, ndim, shape, chunk_shape);
    for (int d = 0; d < ndim; d++)
        grid[d] = ceil_div(shape[d], chunk_shape[d]);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = 0;
        for (int d = 0; d < ndim; d++) {
            int64_t v = idx[d][i];
            if (v < 0)
                v += shape[d];
            if (v < 0 || v >= shape[d]) {
                *bad_axis = d;
                return i;
            }
            id = id * grid[d] + divmod(&dv, d, v, &r);
        }
        ids[i] = id;
    }
    return -1;
}

void zc_point_locals(const int64_t *const *idx, int ndim, int64_t n, const int64_t *order,
                     const int64_t *shape, const int64_t *chunk_shape, int64_t *local)
{
    divider dv;
    divider_init(&dv, ndim, shape, chunk_shape);
    for (int d = 0; d < ndim; d++) {
        int64_t *row = local + (int64_t)d * n;
        if (order == NULL)
            for (int64_t k = 0; k < n; k++)
                row[k] = local_of(&dv, d, idx[d][k]);
        else
            for (int64_t k = 0; k < n; k++)
                row[k] = local_of(&dv, d, idx[d][order[k]]);
    }
}

int zc_ascending(const int64_t *keys, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (keys[i - 1] > keys[i])
            return 0;
    return 1;
}

int64_t zc_group_runs(const int64_t *sorted_keys, int64_t n, int64_t *group_keys,
                      int64_t *offsets)
{
    int64_t g = 0;
    for (int64_t k = 0; k < n; k++) {
        if (g == 0 || sorted_keys[k] != group_keys[g - 1]) {
            group_keys[g] = sorted_keys[k];
            offsets[g] = k;
            g++;
        }
    }
    offsets[g] = n;
    return g;
}

/* The scatter pass reads the points in sequence and writes each chunk's run in sequence:
 * cheaper than gathering the in-chunk coordinates afterwards, which would read at random. */
static int64_t counting_sort(const int64_t *keys, int64_t n, int64_t nkeys,
                             const int64_t *const *idx, const divider *dv, int64_t *order,
                             int64_t *local, int64_t *group_keys, int64_t *offsets)
{
    int64_t *bins = calloc((size_t)nkeys + 1, sizeof(int64_t));
    if (bins == NULL)
        return ZC_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++)
        bins[keys[i] + 1]++;
    int64_t g = 0;
    for (int64_t b = 0; b < nkeys; b++) {
        if (bins[b + 1]) {
            group_keys[g] = b;
            offsets[g++] = bins[b];
        }
        bins[b + 1] += bins[b];
    }
    offsets[g] = n;
    for (int64_t i = 0; i < n; i++) {
        int64_t at = bins[keys[i]]++;
        order[at] = i;
        for (int d = 0; d < dv->ndim; d++)
            local[(int64_t)d * n + at] = local_of(dv, d, idx[d][i]);
    }
    free(bins);
    return g;
}

/* Passes over 16-bit digits, moving (key, position) pairs so no pass reads at random. */
static int64_t radix_sort(const int64_t *keys, int64_t n, int64_t nkeys, int64_t *order,
                          int64_t *group_keys, int64_t *offsets)
{
    int64_t *bins = malloc((size_t)(RADIX_BINS + 1) * sizeof(int64_t));
    int64_t *tmp = malloc((size_t)n * 3 * sizeof(int64_t));
    if (bins == NULL || tmp == NULL) {
        free(bins);
        free(tmp);
        return ZC_ERR_NOMEM;
    }
    int64_t *src_pos = order, *src_key = tmp, *dst_pos = tmp + n, *dst_key = tmp + 2 * n;
    for (int64_t i = 0; i < n; i++) {
        src_pos[i] = i;
        src_key[i] = keys[i];
    }
    for (int shift = 0; shift < 64 && ((nkeys - 1) >> shift) > 0; shift += RADIX_BITS) {
        memset(bins, 0, (size_t)(RADIX_BINS + 1) * sizeof(int64_t));
        for (int64_t i = 0; i < n; i++)
            bins[((src_key[i] >> shift) & (RADIX_BINS - 1)) + 1]++;
        for (int64_t b = 0; b < RADIX_BINS; b++)
            bins[b + 1] += bins[b];
        for (int64_t i = 0; i < n; i++) {
            int64_t at = bins[(src_key[i] >> shift) & (RADIX_BINS - 1)]++;
            dst_pos[at] = src_pos[i];
            dst_key[at] = src_key[i];
        }
        int64_t *swap = src_pos;
        src_pos = dst_pos;
        dst_pos = swap;
        swap = src_key;
        src_key = dst_key;
        dst_key = swap;
    }
    if (src_pos != order)
        memcpy(order, src_pos, (size_t)n * sizeof(int64_t));
    int64_t g = zc_group_runs(src_key, n, group_keys, offsets);
    free(bins);
    free(tmp);
    return g;
}

int64_t zc_sort_points(const int64_t *keys, int64_t n, int64_t nkeys,
                       const int64_t *const *idx, int ndim, const int64_t *shape,
                       const int64_t *chunk_shape, int64_t *order, int64_t *local,
                       int64_t *group_keys, int64_t *offsets)
{
    divider dv;
    divider_init(&dv, ndim, shape, chunk_shape);
    /* One counting pass is cheapest while its bins stay small next to the data. */
    if (nkeys <= 4 * n + RADIX_BINS)
        return counting_sort(keys, n, nkeys, idx, &dv, order, local, group_keys, offsets);
    int64_t g = radix_sort(keys, n, nkeys, order, group_keys, offsets);
    if (g >= 0)
        zc_point_locals(idx, ndim, n, order, shape, chunk_shape, local);
    return g;
}

/* Whether the group's points are the chunk's in-bounds region in C order, once each. */
static int group_complete(const int64_t *local, int64_t n, int ndim, int64_t a, int64_t b,
                          const int64_t *coords, const int64_t *shape, const int64_t *chunk_shape)
{
    int64_t extent[ZC_MAX_DIMS], pos[ZC_MAX_DIMS], size = 1;
    for (int d = 0; d < ndim; d++) {
        int64_t lo = coords[d] * chunk_shape[d];
        extent[d] = shape[d] - lo < chunk_shape[d] ? shape[d] - lo : chunk_shape[d];
        if (zc_mul_overflow_i64(size, extent[d], &size))
            return 0; /* more elements than any group of points can hold */
        pos[d] = 0;
    }
    if (b - a != size)
        return 0;
    for (int64_t k = a; k < b; k++) {
        for (int d = 0; d < ndim; d++)
            if (local[(int64_t)d * n + k] != pos[d])
                return 0;
        for (int d = ndim - 1; d >= 0; d--) {
            if (++pos[d] < extent[d])
                break;
            pos[d] = 0;
        }
    }
    return 1;
}

void zc_group_flags(const int64_t *local, int64_t n, int ndim, const int64_t *offsets,
                    int64_t ngroups, const int64_t *coords, const int64_t *shape,
                    const int64_t *chunk_shape, uint8_t *flags, int64_t *step)
{
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t a = offsets[g], b = offsets[g + 1];
        uint8_t f = 0;
        if (group_complete(local, n, ndim, a, b, coords + g * ndim, shape, chunk_shape))
            f |= ZC_GROUP_COMPLETE;
        if (step != NULL) {
            int64_t s = b - a > 1 ? local[a + 1] - local[a] : 1;
            for (int64_t k = a + 2; k < b && s > 0; k++)
                if (local[k] - local[k - 1] != s)
                    s = 0;
            step[g] = s > 0 ? s : 0;
            if (s > 0)
                f |= ZC_GROUP_PROGRESSION;
        }
        flags[g] = f;
    }
}

void zc_unravel(const int64_t *ids, int64_t n, int ndim, const int64_t *grid_shape,
                int64_t *coords)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t id = ids[i];
        for (int d = ndim - 1; d >= 0; d--) {
            coords[i * ndim + d] = id % grid_shape[d];
            id /= grid_shape[d];
        }
    }
}
