/* Sharded reads and writes on a directory store as one GIL-free batch that several threads
 * work through together: every shard and inner chunk a basic selection (or, for reads, an
 * orthogonal one: int arrays as listed pieces) touches, with no Python per shard or per
 * inner chunk.
 *
 * The caller gives the selection as pieces over the shard grid (as zc_batch takes them over
 * its chunk grid); prepare splits each into pieces over the inner chunks. Tasks are inner
 * chunks, grouped by shard ("slot": one combination of the axes' shard pieces, C order).
 *
 * Reads: the first task of a shard to run opens it, reads and checks its index (crc32c,
 * entries inside the data and not overlapping) and keeps the file open for the shard's
 * other tasks; the others wait for that. Each task then reads exactly its inner chunk's
 * bytes and decodes them into the output (zc_chunk_read), or fills its region when the
 * inner chunk or the whole shard is not stored. The last task of a shard closes it.
 *
 * Reading ahead: the tasks' reads are small and each waits for the device in turn, so from a
 * cold page cache the device and the decoding would take turns. The first task of a shard
 * therefore asks the system (zc_object_prefetch) for every inner chunk the read needs as soon
 * as the index is checked, and for the files of the shards after it that the read needs
 * whole, as many as fit in ZC_SHARD_IO_PREFETCH_MAX bytes: the device then works several
 * shards ahead of the decoding, and a shard slower to arrive than to decode (a larger one, a
 * device busy elsewhere) does not stall it.
 *
 * Reads through a cache (zc_chunk_cache.h): a shard file is opened and its index read as
 * without one; the checked index is taken from the index cache when cached of the same
 * identity and index bytes (their zc_chunk_cache_content), and each task reads its inner
 * chunk's bytes and takes the decoded chunk from the cache when cached of those bytes: a
 * file's bytes can change without its identity (a shared memory map), so neither is served on
 * the identity alone. A memory store's blob is named by its version alone: the first task looks up every
 * inner chunk the read needs (at most ZC_SHARD_IO_PIN_MAX of them) at the blob's version
 * (zc_chunk_version_in), and when they and the index are cached the blob is not opened;
 * otherwise it is, and what was pinned is kept only when the open blob is still of that
 * version (else it was replaced meanwhile and is read afresh).
 *
 * Writes: only shards the selection covers wholly (the in-bounds part of edge shards) are
 * written here; the others are flagged in `deferred` for the caller's read-modify-write.
 * Each task gathers and encodes one inner chunk (none when it is all fill and empty chunks
 * are not written); the last task of a shard lays its chunks out in `write_order`, adds the
 * index and replaces the shard file atomically, or deletes it when no chunk is left. The
 * replacement happens under the key lock the Python store takes for its read-modify-writes
 * (zc_key_lock.h, in the lock file of `lock_dir`), so it never lands inside one. */
#ifndef ZC_SHARD_IO_H
#define ZC_SHARD_IO_H

#include <stddef.h>
#include <stdint.h>

#include "jobs/zc_batch.h"
#include "codecs/zc_chain.h"
#include "cache/zc_chunk_cache.h"
#include "files/zc_key_lock.h"
#include "zc_status.h"

#define ZC_SHARD_IO_PATH_MAX ZC_BATCH_PATH_MAX
/* Reads of a memory store through a cache pin the cached inner chunks of shards whose read
 * needs at most this many (more are looked up one at a time: opening the shard is then the
 * lesser cost). */
#define ZC_SHARD_IO_PIN_MAX 64

/* Reads ask the system to start reading at most this many bytes ahead of the decoding: of a
 * shard's inner chunks when its index is loaded, and of the whole shards after it (the rest
 * come as the tasks read them). */
#define ZC_SHARD_IO_PREFETCH_MAX ((uint64_t)64 << 20)

/* What was wrong with a shard's index (zc_shard_io.index_problem). */
#define ZC_SHARD_INDEX_OK 0
#define ZC_SHARD_INDEX_SHORT 1      /* the shard is smaller than its index */
#define ZC_SHARD_INDEX_CHECKSUM 2   /* the index's crc32c does not match */
#define ZC_SHARD_INDEX_ENTRY 3      /* entry failed_inner: status as zc_shard_index_validate */
#define ZC_SHARD_INDEX_IN_INDEX 4   /* entry failed_inner lies inside an index at the start */

typedef struct zc_shard_slot zc_shard_slot;
typedef struct zc_slot_waits zc_slot_waits;

typedef struct {
    /* Geometry and codecs. */
    int ndim;
    int64_t array_shape[ZC_MAX_NDIM];
    int64_t shard_shape[ZC_MAX_NDIM];
    int64_t chunk_shape[ZC_MAX_NDIM];  /* inner chunks; divides shard_shape */
    zc_chain chain;                             /* of the inner chunks */
    const unsigned char *fill;                  /* itemsize bytes */
    size_t fill_floatsize;                      /* as zc_batch */
    int write_empty_chunks;
    int index_at_start;                         /* else at the end */
    int index_crc32c;                           /* the index is followed by its crc32c */
    const int64_t *write_order;                 /* writes: inner chunk layout order, NULL: C */
    /* Keys of shards, as zc_batch's keys of chunks; lock_dir "" takes no locks. */
    char key_head[ZC_SHARD_IO_PATH_MAX];
    char sep;
    int lead_sep;
    char lock_dir[ZC_SHARD_IO_PATH_MAX];
    zc_root root; /* as zc_batch's */
    /* Shards live in this memory store rather than files (NULL: files), as zc_batch's. */
    zc_memstore *mem;
    /* The selection as pieces over the shard grid (zc_piece, as in zc_batch). Reads also
     * take listed pieces (chunk_step 0) as zc_batch does, their positions in the shard in
     * `listing.index` (any order: prepare groups them by inner chunk); not points. */
    const zc_piece *pieces;
    zc_listing listing;
    int64_t piece_offset[ZC_MAX_NDIM];
    int64_t npieces[ZC_MAX_NDIM];
    /* The caller's array (output of reads, input of writes): base and byte strides. */
    char *data;
    ptrdiff_t data_strides[ZC_MAX_NDIM];
    int stream_out;  /* reads: the output outgrows the caches (zc_stream.h's ZC_STREAM_OUT_MIN) */
    int writing;
    /* Reads: decoded inner chunks are taken from and kept in this cache (NULL: none), keyed
     * by the shard's grid coordinates and the inner chunk's C-order index; prepare drops it
     * and index_cache for files where it gains nothing (zc_chunk_cache_gains). */
    zc_chunk_cache *cache;
    /* Reads with a cache: checked shard indexes (16 * ninner bytes, 2 uint64 per inner
     * chunk) are taken from and kept in this one (NULL: none), keyed by the shard's grid
     * coordinates. */
    zc_chunk_cache *index_cache;

    /* Set up by zc_shard_io_prepare, released by zc_shard_io_free. */
    int64_t grid[ZC_MAX_NDIM];  /* inner chunks per shard along each axis */
    int64_t ninner;                      /* inner chunks per shard */
    zc_piece *inner;                     /* inner pieces, all axes */
    int64_t *inner_index;                /* listed positions in their inner chunk (NULL: none) */
    int64_t *inner_out;                  /* and their output positions, in the same order */
    int64_t *run;                        /* per axis: shard piece r's inner pieces start at
                                          * inner[run[run_offset[d] + r]], end at r + 1's */
    int64_t run_offset[ZC_MAX_NDIM];
    int64_t nslots;
    int64_t *task_start;                 /* nslots + 1: slot s has tasks [task_start[s], ..[s+1]) */
    zc_shard_slot *slots;
    zc_slot_waits *waits;                /* reads: where threads wait for a slot's load */
    unsigned char *deferred;             /* writes: per slot, left for the caller */
    zc_chunk_cache_entry **pins;         /* reads with a cache: per task, its pinned chunk */
    unsigned char **out;                 /* writes: per task, the encoded inner chunk */
    size_t *out_len;
    int64_t ntasks;

    /* Shared progress and outcome. */
    int64_t next_task;
    int64_t next_ahead;        /* reads: the next slot for zc_shard_io_read_ahead_worker */
    int prefetching;           /* reads: a thread is asking for shards ahead (1) */
    int64_t prefetch_next;     /* reads: the first slot not yet considered for that */
    uint64_t prefetch_total;   /* reads: the bytes of whole shards asked for so far */
    int failed;
    int status;             /* ZC_* of the first failure */
    int sys_errno;          /* with ZC_ERR_IO */
    int index_problem;      /* ZC_SHARD_INDEX_*: the failure is in the shard's index */
    int64_t failed_slot;    /* -1: none */
    int64_t failed_inner;   /* C-order inner chunk in its shard, -1: the shard as a whole */
    uint64_t failed_size;   /* the shard's size (ZC_SHARD_INDEX_SHORT) */
    uint64_t failed_entry[2];  /* the offending index entry (ZC_SHARD_INDEX_ENTRY/IN_INDEX) */
} zc_shard_io;

/* Validate the job and set up its pieces, slots and tasks: ZC_OK, ZC_ERR_PARAM,
 * ZC_ERR_SIZE or ZC_ERR_NOMEM. Call zc_shard_io_free afterwards in every case. */
int zc_shard_io_prepare(zc_shard_io *io);
/* Close files left open by a failed read and free what prepare and the workers allocated. */
void zc_shard_io_free(zc_shard_io *io);
/* Close files a failed read left open (the job keeps its tables). */
void zc_shard_io_close_files(zc_shard_io *io);
/* The shard key of slot `s` (path below key_head's directory, as zc_batch_task_key). */
int zc_shard_io_slot_key(const zc_shard_io *io, int64_t s, char *buf, size_t cap);
/* Shard grid coordinates of slot `s`. */
int zc_shard_io_slot_coords(const zc_shard_io *io, int64_t s, int64_t *coords);
/* Does a read gain from zc_shard_io_read_ahead_worker? Files, no cache, more than one shard
 * and at most ZC_SHARD_IO_AHEAD_MAX_TASKS inner chunks: a batch of samples from many
 * shards, whose indexes and inner chunks a cold page cache would give one shard per reader
 * at a time. */
#define ZC_SHARD_IO_AHEAD_MAX_TASKS 256
int zc_shard_io_reads_ahead(const zc_shard_io *io);
/* Beside the readers, on threads of their own: load the shards no reader has reached (open,
 * read and check the index, ask the system for the inner chunks the read needs), so that the
 * device works on as many shards at once as there are readers and helpers. Returns once
 * every shard is reached, or the read failed or was stopped. */
void zc_shard_io_read_ahead_worker(zc_shard_io *io);
/* Work through read or write tasks until none are left; call from several threads. */
void zc_shard_io_read_worker(zc_shard_io *io);
void zc_shard_io_write_worker(zc_shard_io *io);
/* Read-modify-write slot `s` of a write (one prepare deferred: it covers part of its shard)
 * on the calling thread: under the shard's key lock in `locks` (opened on first need from
 * lock_dir), read the whole shard and check its index, decode and merge the inner chunks the
 * selection touches (or start them from fill), keep the others' bytes, and replace the shard
 * atomically (deleted when no inner chunk is left). A failure is recorded as the workers
 * record theirs; returns its status. */
int zc_shard_io_rewrite_slot(zc_shard_io *io, int64_t s, zc_key_locks *locks);

#endif
