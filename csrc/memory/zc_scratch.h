/* Per-thread scratch buffers that outlive one job.
 *
 * A whole-chunk write needs a chunk-sized buffer (and one for its encoding) per thread. Fresh
 * memory for them costs a page fault and kernel zeroing per page on every call, so each thread
 * keeps its buffers; between jobs they are marked MADV_FREE, so the kernel may reclaim them
 * when memory runs short. */
#ifndef ZC_SCRATCH_H
#define ZC_SCRATCH_H

#include <stddef.h>

/* A chunk, its encoding, and a chunk's bytes shuffled (zc_chain's byte shuffle stage). */
enum { ZC_SCRATCH_CHUNK, ZC_SCRATCH_ENCODED, ZC_SCRATCH_SHUFFLED, ZC_SCRATCH_SLOTS };

/* Buffers above this are unmapped when the job ends rather than kept. */
#define ZC_SCRATCH_KEEP_MAX ((size_t)256 << 20)

/* The calling thread's buffer `slot`, at least `n` bytes, contents unspecified; NULL when
 * out of memory. Valid until the next call for the same slot or zc_scratch_idle. */
unsigned char *zc_scratch(int slot, size_t n);

/* The thread's job is done: keep its buffers reclaimable, drop the oversized ones. */
void zc_scratch_idle(void);

#endif
