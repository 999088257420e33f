/* Projection of index selections onto a regular chunk grid, and grouping of points by chunk. */
#ifndef ZC_INDEXING_H
#define ZC_INDEXING_H

#include <stdint.h>

/* Chunks of one axis met by the positions start + j*step, 0 <= j < n (step > 0, all in
 * [0, dim_len)). For the k-th chunk touched: its index chunk[k], the first in-chunk position
 * first[k], the element count count[k], the first output position out_first[k], and
 * complete[k] = 1 when every element of that chunk is selected. The arrays hold
 * min(n, number of chunks) entries. Returns the number of chunks touched. */
int64_t zc_slice_chunks(int64_t start, int64_t step, int64_t n, int64_t chunk_len,
                        int64_t dim_len, int64_t *chunk, int64_t *first, int64_t *count,
                        int64_t *out_first, uint8_t *complete);

/* Chunk of n points given as ndim coordinate arrays idx[d][0..n) (negative values count
 * from the end): ids[i] = C-order index of the point's chunk in the chunk grid. Returns -1,
 * or the first point out of bounds with its axis in *bad_axis. */
int64_t zc_point_chunk_ids(const int64_t *const *idx, int ndim, int64_t n, const int64_t *shape,
                           const int64_t *chunk_shape, int64_t *ids, int *bad_axis);

/* In-chunk coordinates of in-bounds points: local[d*n + k] for point order[k] (point k when
 * order is NULL). */
void zc_point_locals(const int64_t *const *idx, int ndim, int64_t n, const int64_t *order,
                     const int64_t *shape, const int64_t *chunk_shape, int64_t *local);

/* 1 when keys[0..n) never decrease, else 0. */
int zc_ascending(const int64_t *keys, int64_t n);

/* Runs of equal values in sorted_keys[0..n): writes each run's key and start offset, with
 * offsets[ngroups] = n. Returns the number of runs. */
int64_t zc_group_runs(const int64_t *sorted_keys, int64_t n, int64_t *group_keys,
                      int64_t *offsets);

/* Stable sort of n in-bounds points (idx as for zc_point_chunk_ids) by their chunk ids
 * `keys` in [0, nkeys): order[k] is the position of the k-th point and local[d*n + k] its
 * in-chunk coordinates; the runs of equal keys as zc_group_runs writes them. A counting sort
 * when nkeys is small next to n, least-significant-digit radix passes when not. group_keys
 * and offsets hold min(n, nkeys) + 1 entries. Returns the number of runs, or ZC_ERR_NOMEM. */
int64_t zc_sort_points(const int64_t *keys, int64_t n, int64_t nkeys,
                       const int64_t *const *idx, int ndim, const int64_t *shape,
                       const int64_t *chunk_shape, int64_t *order, int64_t *local,
                       int64_t *group_keys, int64_t *offsets);

/* Flags of each group (sorted points offsets[g]..offsets[g+1] of local, chunk grid
 * coordinates coords[g*ndim..]): ZC_GROUP_COMPLETE when the points enumerate the chunk's
 * in-bounds region in C order, exactly once each. When step is given (one axis),
 * ZC_GROUP_PROGRESSION marks groups whose positions ascend by a constant step[g] > 0. */
#define ZC_GROUP_COMPLETE 1
#define ZC_GROUP_PROGRESSION 2
void zc_group_flags(const int64_t *local, int64_t n, int ndim, const int64_t *offsets,
                    int64_t ngroups, const int64_t *coords, const int64_t *shape,
                    const int64_t *chunk_shape, uint8_t *flags, int64_t *step);

/* Grid coordinates of linear chunk ids: coords[g*ndim + d]. */
void zc_unravel(const int64_t *ids, int64_t n, int ndim, const int64_t *grid_shape,
                int64_t *coords);

#endif
