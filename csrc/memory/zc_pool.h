/* A process-wide cache of large page-aligned blocks for output arrays.
 *
 * Fresh anonymous memory costs a page fault and a kernel zeroing per page on first write,
 * which for a whole-array read is a third of the time. Blocks given back are kept (up to a
 * byte limit) and handed out again for the next request of the same rounded size. The most
 * recent 32 MiB of them stay resident; older and larger ones are marked MADV_FREE, so the
 * kernel may still reclaim them under pressure. */
#ifndef ZC_POOL_H
#define ZC_POOL_H

#include <stddef.h>

/* The block size a request of `size` bytes takes (a multiple of the page, or of 2 MiB). */
size_t zc_pool_block_size(size_t size);

/* A block of zc_pool_block_size(size) bytes, kept or new; NULL when out of memory. Its
 * contents are unspecified. */
void *zc_pool_take(size_t size);

/* A kept block of zc_pool_block_size(size) bytes, or NULL when none is kept: a moment under a
 * mutex, never a system call. */
void *zc_pool_take_kept(size_t size);

/* Return a block from zc_pool_take (with the same `size`): kept when the limit allows. */
void zc_pool_give(void *p, size_t size);

/* zc_pool_give where that needs no system call (the block stays resident, nothing is dropped
 * or advised): 1; else 0, and nothing was done. */
int zc_pool_give_kept(void *p, size_t size);

/* Keep at most `bytes` (0: keep nothing); blocks over the new limit are released. */
void zc_pool_set_limit(size_t bytes);

/* The bytes currently kept. */
size_t zc_pool_kept(void);

/* Pieces of shared 2 MiB blocks, for outputs too small for a block of their own yet large
 * enough that faulting them in page by page shows: one huge-page fault serves several
 * outputs. A block goes back to the pool once every piece of it has been given back. */
typedef struct zc_slab zc_slab;

/* `size` bytes (at most 2 MiB, page aligned) and, in `slab`, what to give back; NULL when out
 * of memory. Contents are unspecified. */
void *zc_pool_take_piece(size_t size, zc_slab **slab);

/* Give back one piece of `slab`. */
void zc_pool_give_piece(zc_slab *slab);

#endif
