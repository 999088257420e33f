/* Streaming chunk reads: a stored chunk is read from its file in bounded blocks and (for
 * zstd) decompressed into a bounded window, and each decoded byte range of the C-ordered
 * chunk is scattered straight into the selected region of the output. No buffer the size of
 * a chunk is ever needed; a chunk whose selection is one contiguous run of the output is
 * read or decompressed straight into it. */
#ifndef ZC_STREAM_H
#define ZC_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "files/zc_object.h"
#include "zc_status.h"

/* Bounded per-thread buffers: file blocks and the decompressed window (bytes). Larger ones
 * measured no faster; the window is one zstd block. Streaming zstd also keeps its history
 * (the frame's window, 2 MiB at the default level for big chunks) in the thread's context. */
#define ZC_STREAM_BLOCK (1u << 18)
#define ZC_STREAM_WINDOW (1u << 17)
/* A zstd chunk of at most this many bytes, stored in at most one block, is decoded in one
 * call into a per-thread buffer and scattered from there: no copy out of zstd's own stream
 * buffer, which the windowed path pays. */
#define ZC_STREAM_WHOLE (1u << 20)
/* The thread's zstd context (zc_zstd_thread_dctx) is dropped after a streamed chunk when it
 * holds more than this (frames with huge windows), so an idle thread never keeps much. */
#define ZC_STREAM_DCTX_KEEP (16u << 20)

/* A selection of a C-ordered chunk of `shape` items of `itemsize` bytes: on axis d,
 * `count[d]` indices from `start[d]` by `step[d]` (>= 1), the k-th of which lands at byte
 * offset k * out_strides[d] from `out` (any sign). Axes are simplified on init: unit axes
 * dropped, wholly selected axes merged into the axis outside them where the output allows. */
typedef struct {
    int ndim;                           /* >= 1 after init */
    size_t itemsize;
    int64_t shape[ZC_MAX_NDIM];
    int64_t start[ZC_MAX_NDIM];
    int64_t step[ZC_MAX_NDIM];
    int64_t count[ZC_MAX_NDIM];
    ptrdiff_t out_strides[ZC_MAX_NDIM];
    char *out;                          /* where the first selected item goes */
    size_t lo, hi;                      /* chunk bytes [lo, hi) hold every selected item */
    int stream_out;                     /* rows go out with streaming stores (see below) */
} zc_scatter;

/* An output at least this large outgrows the caches: rows scattered into it are written with
 * streaming (non-temporal) stores, which skip reading each destination line first and halve
 * the memory traffic (2.4x faster for 128-byte rows of a 256 MiB output, measured). */
#define ZC_STREAM_OUT_MIN (8u << 20)

/* The bytes [*lo, *hi) of a C-ordered chunk of `shape` that the selection (start, step, count
 * per axis) reaches from its first item to its last; ZC_ERR_PARAM when it leaves the chunk. */
int zc_selection_extent(int ndim, const int64_t *shape, const int64_t *start, const int64_t *step,
                        const int64_t *count, size_t itemsize, size_t *lo, size_t *hi);

/* Set up `s` (stream_out off); ZC_OK, or ZC_ERR_PARAM when the selection leaves the chunk. */
int zc_scatter_init(zc_scatter *s, int ndim, const int64_t *shape, const int64_t *start,
                    const int64_t *step, const int64_t *count, size_t itemsize, char *out,
                    const ptrdiff_t *out_strides);

/* Is the selection one run of chunk bytes [*lo, *lo + *len) landing on one increasing
 * contiguous run of the output at *dst? */
int zc_scatter_run(const zc_scatter *s, char **dst, size_t *lo, size_t *len);

/* `src` holds chunk bytes [off, off + len) (both multiples of itemsize): copy every selected
 * item among them to its place in the output. Nothing outside the selection is written. */
void zc_scatter_range(const zc_scatter *s, const void *src, size_t off, size_t len);

/* How a chunk is stored: its bytes (swapped by `swap_size` units when the stored order is
 * not memory order), optionally zstd frames, optionally followed by a crc32c of the rest
 * (4 bytes, little-endian). */
typedef struct {
    int zstd;
    int crc32c;
    size_t nbytes;      /* decoded chunk size */
    size_t itemsize;
    size_t swap_size;   /* 0 or 1: no swap */
    uint64_t offset;    /* where the stored chunk starts in its file (inner chunks of a shard) */
} zc_stream_format;

/* A thread's block, window and whole-chunk buffers, allocated on first use; zero-initialize, then
 * zc_stream_bufs_free when done. */
typedef struct {
    unsigned char *block, *window, *whole;
} zc_stream_bufs;

void zc_stream_bufs_free(zc_stream_bufs *b);

/* Decode the chunk stored in the open object `o` (`fsize` bytes from f->offset) into the
 * selection `s`. ZC_OK; ZC_ERR_SIZE / ZC_ERR_CORRUPT for a chunk whose decoded size is not
 * nbytes or whose bytes are not valid; ZC_ERR_CHECKSUM when the crc32c does not match
 * (reported in preference to the others); ZC_ERR_IO with errno set; ZC_ERR_NOMEM. */
int zc_stream_read(const zc_object *o, size_t fsize, const zc_stream_format *f,
                   const zc_scatter *s, zc_stream_bufs *bufs);

#endif
