/* A process-wide cache of large page-aligned blocks for output arrays.
 *
 * Fresh anonymous memory costs a page fault and a kernel zeroing per page on first write,
 * which for a whole-array read is a third of the time. Blocks given back are kept (up to a
 * byte limit, marked MADV_FREE so the kernel may still reclaim them under pressure) and
 * handed out again for the next request of the same rounded size. */
#ifndef ZC_POOL_H
#define ZC_POOL_H

#include <stddef.h>

/* The block size a request of `size` bytes takes (a multiple of the page, or of 2 MiB). */
size_t zc_pool_block_size(size_t size);

/* A block of zc_pool_block_size(size) bytes, kept or new; NULL when out of memory. Its
 * contents are unspecified. */
void *zc_pool_take(size_t size);

/* Return a block from zc_pool_take (with the same `size`): kept when the limit allows. */
void zc_pool_give(void *p, size_t size);

/* Keep at most `bytes` (0: keep nothing); blocks over the new limit are released. */
void zc_pool_set_limit(size_t bytes);

/* The bytes currently kept. */
size_t zc_pool_kept(void);

#endif
