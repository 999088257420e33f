/* Chunks already in memory (the inner chunks of one shard, or a wave of fetched unsharded
 * chunks) decoded or encoded as one GIL-free job that several threads
 * work through together, taking inner chunks from an atomic counter. */
#ifndef ZC_SHARD_BATCH_H
#define ZC_SHARD_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "jobs/zc_batch.h"
#include "codecs/zc_chain.h"
#include "cache/zc_chunk_cache.h"
#include "zc_status.h"

typedef struct {
    zc_chain chain;
    int ndim;
    int64_t chunk_shape[ZC_MAX_NDIM];
    int64_t grid[ZC_MAX_NDIM];    /* inner chunks per shard along each axis */
    const unsigned char *fill;          /* itemsize bytes */
    size_t fill_floatsize;              /* compare floats NaN-aware (0: bytewise) */
    int write_empty_chunks;
    /* Encoded inner chunks by C-order index in the grid (by task number when `src_by_task`);
     * src[i] NULL: not stored. */
    const unsigned char *const *src;
    const size_t *src_len;
    int src_by_task;
    /* The selection: pieces per axis as in zc_batch; tasks are their C-order product. */
    const zc_piece *pieces;
    int64_t piece_offset[ZC_MAX_NDIM];
    int64_t npieces[ZC_MAX_NDIM];
    int64_t ntasks;
    /* When set, the workers run only these `nlisted` tasks (say, those whose bytes have
     * arrived), each once; zc_shard_job_list sets them. */
    const int64_t *listed;
    int64_t nlisted;
    /* The caller's array: output of reads, input of writes. */
    char *data;
    ptrdiff_t data_strides[ZC_MAX_NDIM];
    /* Writes: per task the malloc'ed encoding (NULL: all fill, leave the chunk out). */
    unsigned char **out;
    size_t *out_len;
    /* Shared progress and outcome. */
    int64_t next_task;
    int failed;
    int status;
    int64_t failed_task;
    /* Reads only: index lists, and points (with `src_by_task`; coords unused), as zc_batch. */
    zc_listing listing;
    /* Reads by task (`src_by_task`) through a cache (NULL: none): task t copies out of
     * pins[t] when set, else decodes src[t] into a new entry of key cache_keys[t] (its
     * key_len values) at version cache_versions[t] when versioned[t], kept when settled. */
    zc_chunk_cache *cache;
    const int64_t *cache_keys;
    const zc_chunk_version *cache_versions;
    const unsigned char *versioned;
    zc_chunk_cache_entry *const *pins;
    int cache_key_len;
} zc_shard_job;

/* Validate the job (its listing too) and count its tasks; ZC_OK or ZC_ERR_PARAM / ZC_ERR_SIZE. */
int zc_shard_job_prepare(zc_shard_job *j);
/* Let the next run of the workers take only the `n` tasks `tasks` (each < ntasks, none
 * twice; the caller keeps the list); `out`/`out_len` stay indexed by task number.
 * ZC_OK or ZC_ERR_PARAM. */
int zc_shard_job_list(zc_shard_job *j, const int64_t *tasks, int64_t n);
/* C-order grid index of the inner chunk of task `t` (0 in a job with `src_by_task`). */
int64_t zc_shard_task_chunk(const zc_shard_job *j, int64_t t);
/* Decode tasks into `data` until none are left (empty inner chunks read as fill). */
void zc_shard_read_worker(zc_shard_job *j);
/* Decode task `t` alone on the calling thread, as a worker would (tasks on several threads
 * at once, each its own): a chunk decoded as soon as its bytes arrive. The job's shared
 * progress and outcome are left alone; its status is returned. */
int zc_shard_read_one(zc_shard_job *j, int64_t t);
/* Encode tasks from `data` until none are left; partly covered inner chunks start from their
 * stored bytes (or fill). A job with a listing fails with ZC_ERR_PARAM. */
void zc_shard_write_worker(zc_shard_job *j);

#endif
