/* Per-thread scratch buffers that outlive one job.
 *
 * A whole-chunk write needs a chunk-sized buffer (and one for its encoding) per thread. Fresh
 * memory for them costs a page fault and kernel zeroing per page on every call, so each thread
 * keeps its buffers; between jobs they are marked MADV_FREE, so the kernel may reclaim them
 * when memory runs short. */
#ifndef ZC_SCRATCH_H
#define ZC_SCRATCH_H

#include <stddef.h>

/* A chunk, its encoding, and a chunk's bytes shuffled (zc_chain's byte shuffle stage), which
 * zc_scratch hands out; and the buffers of chunk readers (a stored chunk, it decoded, and the
 * blocks, window and whole chunk of streamed reads: zc_chunk_io.h, zc_stream.h), which they
 * borrow (zc_scratch_borrow) and give back when their job ends. ZC_SCRATCH_NONE: a buffer
 * of its own, not kept. */
enum {
    ZC_SCRATCH_NONE,
    ZC_SCRATCH_CHUNK, ZC_SCRATCH_ENCODED, ZC_SCRATCH_SHUFFLED,
    ZC_SCRATCH_READ_FILE, ZC_SCRATCH_READ_DECODED,
    ZC_SCRATCH_STREAM_BLOCK, ZC_SCRATCH_STREAM_WINDOW, ZC_SCRATCH_STREAM_WHOLE,
    ZC_SCRATCH_SLOTS
};

/* Buffers above this are unmapped when the job ends rather than kept. */
#define ZC_SCRATCH_KEEP_MAX ((size_t)256 << 20)
/* Borrowed buffers above this are unmapped when given back: a reader of big chunks pays
 * little for fresh memory beside its decoding, and a thread keeps no chunk-sized buffers. */
#define ZC_SCRATCH_LEND_MAX ((size_t)16 << 20)

/* The calling thread's buffer `slot`, at least `n` bytes, contents unspecified; NULL when
 * out of memory. Valid until the next call for the same slot or zc_scratch_idle. */
unsigned char *zc_scratch(int slot, size_t n);

/* At least `n` bytes (*cap of them), contents unspecified, the caller's until it gives them
 * back: the thread's kept buffer of `slot` when it is that large, else fresh memory. NULL
 * when out of memory. */
unsigned char *zc_scratch_borrow(int slot, size_t n, size_t *cap);

/* Give back `p` (`cap` bytes from zc_scratch_borrow): kept as the thread's buffer of `slot`
 * unless that one is larger or `cap` is over ZC_SCRATCH_LEND_MAX; NULL is ignored. */
void zc_scratch_give_back(int slot, unsigned char *p, size_t cap);

/* The thread's job is done: keep its buffers reclaimable, drop the oversized ones. */
void zc_scratch_idle(void);

#endif
