/* Array handles behind zarrcore/array_api.h: an immutable snapshot of what region reads and
 * writes of one array need, driving the batches of zc_batch.h (chunks) and zc_shard_io.h
 * (shards) on the calling thread, with the region's plan computed here. */
#ifndef ZC_ARRAY_H
#define ZC_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#define ZARRCORE_ARRAY_API_IMPLEMENTATION
#include "zarrcore/array_api.h"

#include "jobs/zc_batch.h"
#include "jobs/zc_shard_io.h"
#include "zc_status.h"

/* The public header, which includes nothing of csrc/, repeats the limit for its users. */
#if ZC_ARRAY_MAX_NDIM != ZC_MAX_NDIM
#error "zarrcore/array_api.h's ZC_ARRAY_MAX_NDIM differs from zc_status.h's ZC_MAX_NDIM"
#endif

/* A handle over chunks described by `tmpl` (geometry, chain, fill, keys, lock_dir; its
 * selection fields are ignored), or over shards by `shards` when not NULL, with the inner
 * chunk layout `write_order` (ninner entries, NULL: C order). Keys in messages drop the
 * first `head_len` bytes of their paths (the store root). Everything is copied. Reads keep
 * up to `cache_bytes` of decoded chunks (inner chunks when sharded) in a cache shared by
 * every thread (zc_chunk_cache.h); 0: none, else at least one chunk. NULL when out of
 * memory or a field is invalid. `dtype` is what zc_array_dtype tells (a zc_array_dtype_code).
 * One reference, for the caller. */
zc_array *zc_array_new(const zc_batch *tmpl, const zc_shard_io *shards, const int64_t *write_order,
                       size_t head_len, int read_only, size_t cache_bytes, int dtype);

/* The cache's counters (all zero without a cache). */
void zc_array_cache_stats(zc_array *a, zc_chunk_cache_stats *out);

/* Later calls fail with ZC_ARRAY_ERR_CLOSED. */
void zc_array_close(zc_array *a);

/* The function table of the capsule zarrcore.array_api._C_API. */
const zc_array_api *zc_array_api_table(void);

#endif
