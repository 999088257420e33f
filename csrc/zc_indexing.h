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

/* Linear chunk id of n points given as ndim coordinate arrays idx[d][0..n) (negative values
 * count from the end): ids[i] = C-order index of the point's chunk in the chunk grid.
 * Returns -1, or the first point out of bounds with its axis in *bad_axis. */
int64_t zc_point_chunk_ids(const int64_t *const *idx, int ndim, int64_t n, const int64_t *shape,
                           const int64_t *chunk_shape, int64_t *ids, int *bad_axis);

/* Stable sort of n keys in [0, nkeys): order[k] is the position of the k-th smallest key.
 * Keys already in order cost one pass (*sorted = 1). Otherwise a counting sort when nkeys is
 * small next to n, least-significant-digit radix passes when not. Returns ZC_OK or
 * ZC_ERR_NOMEM. */
int zc_sort_keys(const int64_t *keys, int64_t n, int64_t nkeys, int64_t *order, int *sorted);

/* Runs of equal keys along keys[order[k]]: writes each run's key and start offset, with
 * offsets[ngroups] = n. Both arrays hold n + 1 entries. Returns the number of runs. */
int64_t zc_group_runs(const int64_t *keys, const int64_t *order, int64_t n, int64_t *group_keys,
                      int64_t *offsets);

/* In-chunk coordinates of the sorted points: local[d*n + k] = idx[d][order[k]] mod
 * chunk_shape[d], after wrapping negatives by shape[d]. */
void zc_point_locals(const int64_t *const *idx, int ndim, int64_t n, const int64_t *order,
                     const int64_t *shape, const int64_t *chunk_shape, int64_t *local);

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
