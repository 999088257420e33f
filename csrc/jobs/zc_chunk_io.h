/* One stored chunk into memory: key paths, and decoding a chunk (a whole stored object or a
 * byte range of one, as in a shard: zc_object.h) into a selection of the caller's array.
 * Shared by the array batch (zc_batch.c) and the shard batch (zc_shard_io.c). */
#ifndef ZC_CHUNK_IO_H
#define ZC_CHUNK_IO_H

#include <stddef.h>
#include <stdint.h>

#include "codecs/zc_chain.h"
#include "jobs/zc_gather.h"
#include "files/zc_object.h"
#include "files/zc_stream.h"
#include "memory/zc_scratch.h"
#include "zc_status.h"

/* A scratch buffer that grows; one per worker thread and purpose. */
/* A growable buffer of a job: malloc'd (`slot` ZC_SCRATCH_NONE: zero-initialize), or
 * borrowed from the thread's kept buffer of a zc_scratch slot and given back when freed. A
 * reader's buffers are borrowed: from malloc, each job's were a fresh mapping, faulted in
 * page by page, wherever glibc's thresholds are fixed (dask's nanny fixes them for its
 * workers with MALLOC_TRIM_THRESHOLD_). */
typedef struct {
    unsigned char *p;
    size_t cap;
    int slot;
} zc_buf;

/* Grow `b` to hold at least `n` bytes, keeping what it holds. */
int zc_buf_reserve(zc_buf *b, size_t n);

/* Give `b`'s memory back; it is empty again. */
void zc_buf_free(zc_buf *b);

/* The path `head` followed by the coordinates, each preceded by `sep` (the first one only
 * when `lead_sep`); a 0-d key without `lead_sep` is "0" (v2). ZC_ERR_SIZE when it does not
 * fit in `cap`. */
int zc_key_format(const char *head, char sep, int lead_sep, int ndim, const int64_t *coords,
                  char *buf, size_t cap);

/* A selection of a C-ordered chunk of `shape`: on axis d `count[d]` items from `start[d]`
 * by `step[d]` (>= 1), landing at `out` + k * out_strides[d] (bytes, any sign). With
 * `gather` set instead, the cross product of its axes (zc_gather_nd); with `local` set, the
 * points: items local[k] (C-order offsets in the chunk) land at
 * `out` + local_out[k] * out_strides[0], 0 <= k < npoints (zc_gather_points). */
typedef struct {
    int ndim;
    const int64_t *shape;
    int64_t start[ZC_MAX_NDIM], step[ZC_MAX_NDIM], count[ZC_MAX_NDIM];
    const zc_gather_axis *gather;
    const int64_t *local, *local_out;
    int64_t npoints;
    char *out;
    ptrdiff_t out_strides[ZC_MAX_NDIM];
    int stream_out;  /* the output outgrows the caches (zc_stream.h's ZC_STREAM_OUT_MIN) */
} zc_chunk_sel;

/* Per-thread buffers of chunk reads, taken on first need; zero-initialize, free when done. */
typedef struct {
    zc_buf file, scratch;   /* whole-chunk path (blosc, gzip, zlib) */
    zc_stream_bufs stream;  /* streamed path (no compressor, zstd): bounded blocks */
} zc_chunk_reader;

/* An empty reader whose buffers are borrowed from the thread's (zc_scratch.h). */
void zc_chunk_reader_init(zc_chunk_reader *r);

void zc_chunk_reader_free(zc_chunk_reader *r);

/* Read the chunk stored as bytes [offset, offset + size) of `o` into r->file: ZC_OK,
 * ZC_ERR_TOO_LARGE (over the chain's max_stored, not read), ZC_ERR_CORRUPT (the object is
 * shorter), ZC_ERR_NOMEM or ZC_ERR_IO. */
int zc_chunk_load(const zc_chain *c, const zc_object *o, uint64_t offset, size_t size,
                  zc_chunk_reader *r);

/* Decode the chunk stored as bytes [offset, offset + size) of `o` into the selection.
 * Index lists and points are gathered from the whole decoded chunk (zc_gather.h). Otherwise
 * no compressor and zstd stream through bounded buffers; the other compressors decode the
 * whole chunk, into the output when the selection is the whole chunk on one contiguous run
 * of it, else into the reader's chunk-sized scratch buffer and from there into place. */
int zc_chunk_read(const zc_chain *c, const zc_chunk_sel *s, const zc_object *o, uint64_t offset,
                  size_t size, zc_chunk_reader *r);

/* Copy the selection out of `chunk`, a whole decoded chunk (C order, s->shape items of
 * `itemsize` bytes): ZC_OK, or ZC_ERR_PARAM when the selection leaves the chunk. */
int zc_chunk_sel_copy(const zc_chunk_sel *s, size_t itemsize, const unsigned char *chunk);

#endif
