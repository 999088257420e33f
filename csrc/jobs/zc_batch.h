/* Batched chunk reads and writes for a directory store: every chunk of a request in one
 * GIL-free job that several threads work through together. */
#ifndef ZC_BATCH_H
#define ZC_BATCH_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "codecs/zc_chain.h"
#include "cache/zc_chunk_cache.h"
#include "files/zc_fs.h"
#include "jobs/zc_gather.h"
#include "files/zc_key_lock.h"
#include "zc_status.h"

#define ZC_BATCH_PATH_MAX 4096

/* One axis of a selection, as pieces that each fall in one chunk. Piece p of axis d covers
 * `count` elements from `chunk_start` by `chunk_step` inside chunk `chunk_index`, and lands
 * at `out_start` by `out_step` in the output. */
typedef struct {
    int64_t chunk_index, chunk_start, chunk_step, count, out_start, out_step;
} zc_piece;

/* Reads of array selections (zc_gather.h), beside or instead of the pieces.
 * Listed pieces: a piece with chunk_step 0 selects the in-chunk positions
 * index[chunk_start .. chunk_start + count) (nindex entries in all), landing at the output
 * positions out_index[chunk_start ..] along its axis (its out_start is 0, its out_step 1).
 * Points (point_start set): the pieces are unused and task t is the chunk at grid coordinates
 * coords[t * ndim ..], whose items local[k] (C-order offsets in the chunk) go to item
 * out_index[k] of the caller's 1-d array, for k in [point_start[t], point_start[t + 1]).
 * The caller checks the output positions against its array. */
typedef struct {
    const int64_t *index;
    int64_t nindex;
    int64_t ngroups;
    const int64_t *coords;
    const int64_t *point_start;
    const int64_t *local;
    const int64_t *out_index;
} zc_listing;

/* Check `l` against a job of `ndim` axes and chunk grid `grid` (coords unchecked when NULL):
 * ZC_OK or ZC_ERR_PARAM. */
int zc_listing_check(const zc_listing *l, int ndim, const int64_t *grid);
/* Check listed piece `p` (chunk_step 0) against its chunk length `C` and `extent`, the
 * in-bounds part of that chunk: ZC_OK or ZC_ERR_PARAM. */
int zc_listed_piece_check(const zc_listing *l, const zc_piece *p, int64_t C, int64_t extent);
/* The gather axes (zc_gather.h) of the pieces p[0..ndim) of a task, listed or strided. */
void zc_piece_axes(const zc_listing *l, int ndim, const zc_piece *const *p, zc_gather_axis *axes);

typedef struct {
    /* Chunk grid and chain. */
    int ndim;
    int64_t array_shape[ZC_MAX_NDIM];
    int64_t chunk_shape[ZC_MAX_NDIM];
    zc_chain chain;
    const unsigned char *fill;  /* itemsize bytes */
    size_t fill_floatsize;  /* 2/4/8: items are floats and a NaN fill matches any NaN; 0: bytewise */
    int write_empty_chunks;
    /* Keys: `key_head` then the coordinates, each preceded by `sep` when `lead_sep`. */
    char key_head[ZC_BATCH_PATH_MAX];
    char sep;
    int lead_sep;
    /* Writes replace and delete chunk files under their key lock in the lock file of this
     * directory, the array's own, as the store's read-modify-writes take it (zc_key_lock.h);
     * "" takes no locks. */
    char lock_dir[ZC_BATCH_PATH_MAX];
    /* The store's root, which key_head and lock_dir start with (zc_fs.h: confined or not). */
    zc_root root;
    /* Chunks live in this memory store rather than files (NULL: files): keys are store keys,
     * locks its key locks, and `root` is unused (zc_chunk_io.h). */
    zc_memstore *mem;
    /* Pieces per axis: axis d's are pieces[piece_offset[d] .. piece_offset[d] + npieces[d]). */
    const zc_piece *pieces;
    int64_t piece_offset[ZC_MAX_NDIM];
    int64_t npieces[ZC_MAX_NDIM];
    int64_t ntasks;
    /* The caller's array (output of reads, input of writes): base and byte strides. */
    char *data;
    ptrdiff_t data_strides[ZC_MAX_NDIM];
    int stream_out;  /* reads: the output outgrows the caches (zc_stream.h's ZC_STREAM_OUT_MIN) */
    /* Reads: decoded chunks are taken from and kept in this cache (NULL: none), keyed by
     * their grid coordinates and 0; prepare drops it for files where it gains nothing
     * (zc_chunk_cache_gains). */
    zc_chunk_cache *cache;
    /* Shared progress and outcome. */
    int64_t next_task;
    int64_t next_ahead;     /* reads: the next task for zc_batch_read_ahead_worker */
    int failed;             /* set once; workers stop taking tasks */
    int status;             /* ZC_* of the first failure */
    int sys_errno;          /* errno when the failure was an I/O error */
    int64_t failed_task;
    /* Writes: tasks that are not whole chunks are left for the caller (flag per task). */
    unsigned char *deferred;
    /* Writes of fewer big zstd chunks than threads (zc_batch_split_writes): each chunk is
     * compressed as `nsegments` segments at once; 1 when chunks are not split. */
    int64_t nsegments;
    struct zc_chunk_segments *segments;
    /* Reads only: index lists and points. */
    zc_listing listing;
} zc_batch;

/* Fill in ntasks and validate the piece tables and listing; ZC_OK or ZC_ERR_PARAM. */
int zc_batch_prepare(zc_batch *b);
/* Before a write that `nthreads` threads will work through: when there are fewer chunks than
 * threads, all whole and zstd-compressed without a zstd checksum, split each chunk of 16 MiB
 * or more along its first axis so that the threads compress it together (one frame, spliced
 * from segments; zc_zstd_compress_segment). Returns the work items to spread over threads. */
int64_t zc_batch_split_writes(zc_batch *b, int nthreads);

/* Before a read that `nthreads` threads will work through: when there are fewer blosc chunks
 * of 4 MiB or more than threads, each is decoded on blosc threads of its own, so that the
 * threads left idle share it. Returns the work items to spread over threads. */
int64_t zc_batch_split_reads(zc_batch *b, int nthreads);

/* Release what zc_batch_split_writes took. */
void zc_batch_free(zc_batch *b);

/* The relative-to-head key of task `t` written into `buf` (for error messages). */
int zc_batch_task_key(const zc_batch *b, int64_t t, char *buf, size_t cap);
/* Work through read tasks until none are left; call from several threads at once. Chunks
 * with no compressor or zstd (each with or without crc32c) are streamed through bounded
 * per-thread buffers; blosc/gzip/zlib chunks are decoded whole, into a per-thread scratch
 * buffer taken on first need unless the selection is one contiguous run of the output. */
void zc_batch_read_worker(zc_batch *b);
/* Does a read gain from zc_batch_read_ahead_worker? Files, no cache, a selection (not
 * points) of at most ZC_BATCH_AHEAD_MAX_TASKS chunks of ZC_BATCH_AHEAD_MIN decoded bytes or
 * more: the few large chunks of a batch of samples, which from a cold page cache the readers
 * would wait for one file per thread. */
#define ZC_BATCH_AHEAD_MAX_TASKS 256
#define ZC_BATCH_AHEAD_MIN ((size_t)64 << 10)
int zc_batch_reads_ahead(const zc_batch *b);
/* Beside the readers (zc_batch_read_worker), on threads of their own: take the tasks the
 * readers have not reached and ask the system to read their chunk files (open, fadvise
 * WILLNEED, close), so that the device works on as many files at once as there are readers
 * and helpers. Returns once every task is reached, or the read failed or was stopped. */
void zc_batch_read_ahead_worker(zc_batch *b);
/* Work through write tasks until none are left; call from several threads at once. */
void zc_batch_write_worker(zc_batch *b);

/* Read-modify-write task `t` (one the write workers deferred: it covers part of its chunk) on
 * the calling thread: under the chunk's key lock in `locks` (opened on first need from
 * lock_dir), decode the stored chunk (or start from fill), copy the task's part in, and
 * replace the chunk atomically (or delete it when it is all fill and empty chunks are not
 * written). A failure is recorded as the workers record theirs; returns its status. */
int zc_batch_rewrite_task(zc_batch *b, int64_t t, zc_key_locks *locks);

#endif
