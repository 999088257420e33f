/* Batched decoding and encoding of chunks already in memory: a shard's inner chunks, or the
 * fetched chunks of an unsharded wave (ChunkWaves); see zc_shard_batch.h. */
#include "jobs/zc_shard_batch.h"

#include <stdlib.h>
#include <string.h>

#include "jobs/zc_copy.h"
#include "jobs/zc_fill.h"
#include "os/zc_os.h"
#include "memory/zc_scratch.h"
#include "codecs/zc_shuffle.h"
#include "zc_status.h"

static size_t chunk_nbytes(const zc_shard_job *j)
{
    size_t n = j->chain.itemsize;
    for (int d = 0; d < j->ndim; d++)
        n *= (size_t)j->chunk_shape[d];
    return n;
}

int zc_shard_job_prepare(zc_shard_job *j)
{
    const int points = j->listing.point_start != NULL;
    if (j->ndim < 0 || j->ndim > ZC_MAX_NDIM || j->chain.itemsize == 0 || j->fill == NULL
        || (j->pieces == NULL && !points) || (points && !j->src_by_task)
        || zc_listing_check(&j->listing, j->ndim, j->grid) != ZC_OK)
        return ZC_ERR_PARAM;
    size_t elems = 1;
    int64_t tasks = 1;
    for (int d = 0; d < j->ndim; d++) {
        if (j->chunk_shape[d] <= 0 || j->grid[d] <= 0 || j->npieces[d] < 0)
            return ZC_ERR_PARAM;
        if (elems > SIZE_MAX / (size_t)j->chunk_shape[d] / j->chain.itemsize)
            return ZC_ERR_SIZE;
        elems *= (size_t)j->chunk_shape[d];
        for (int64_t k = 0; k < j->npieces[d]; k++) {
            const zc_piece *p = &j->pieces[j->piece_offset[d] + k];
            const int64_t C = j->chunk_shape[d];
            if (p->chunk_step == 0) {
                if (p->chunk_index < 0 || p->chunk_index >= j->grid[d] ||
                    zc_listed_piece_check(&j->listing, p, C, C))
                    return ZC_ERR_PARAM;
                continue;
            }
            /* Every piece must stay inside its inner chunk and the grid (checked in an order
             * that cannot overflow). */
            if (p->chunk_index < 0 || p->chunk_index >= j->grid[d] || p->count < 1
                || p->chunk_step < 1 || p->chunk_start < 0 || p->chunk_start >= C
                || (p->count - 1) > (C - 1 - p->chunk_start) / p->chunk_step)
                return ZC_ERR_PARAM;
        }
        if (j->npieces[d] && tasks > INT64_MAX / j->npieces[d])
            return ZC_ERR_SIZE;
        tasks *= j->npieces[d];
    }
    j->ntasks = points ? j->listing.ngroups : tasks;
    j->listed = NULL;
    j->nlisted = j->ntasks;
    j->next_task = 0;
    j->failed = 0;
    j->status = ZC_OK;
    j->failed_task = -1;
    return ZC_OK;
}

int zc_shard_job_list(zc_shard_job *j, const int64_t *tasks, int64_t n)
{
    if (n < 0 || (n && tasks == NULL))
        return ZC_ERR_PARAM;
    for (int64_t k = 0; k < n; k++)
        if (tasks[k] < 0 || tasks[k] >= j->ntasks)
            return ZC_ERR_PARAM;
    j->listed = tasks;
    j->nlisted = n;
    j->next_task = 0;
    return ZC_OK;
}

static int64_t next_task(zc_shard_job *j)
{
    if (zc_atomic_load_int(&j->failed, ZC_ACQUIRE))
        return -1;
    int64_t k = zc_atomic_fetch_add_i64(&j->next_task, 1, ZC_ACQ_REL);
    if (k >= j->nlisted)
        return -1;
    return j->listed ? j->listed[k] : k;
}

static void fail(zc_shard_job *j, int64_t t, int status)
{
    int expected = 0;
    if (zc_atomic_cas_int(&j->failed, &expected, 1)) {
        j->status = status;
        j->failed_task = t;
    }
}

/* Geometry of one task: its region's shape, where it starts and how it strides inside the
 * decoded inner chunk and inside the caller's array. */
typedef struct {
    int64_t chunk;          /* C-order grid index */
    int listed;             /* some axis lists its positions: gathered (zc_gather.h) */
    int complete;           /* covers the whole inner chunk */
    int direct;             /* ... landing on one C-contiguous run of the caller's array */
    ptrdiff_t shape[ZC_MAX_NDIM];
    size_t chunk_offset;
    ptrdiff_t chunk_strides[ZC_MAX_NDIM];
    char *data;
    ptrdiff_t data_strides[ZC_MAX_NDIM];
} task_view;

static void task_geometry(const zc_shard_job *j, int64_t t, task_view *v)
{
    ptrdiff_t item = (ptrdiff_t)j->chain.itemsize, cstride = item, expect = item;
    int64_t grid_stride = 1;
    v->chunk = 0;
    v->listed = 0;
    v->complete = 1;
    v->direct = 1;
    v->chunk_offset = 0;
    v->data = j->data;
    for (int d = j->ndim - 1; d >= 0; d--) {
        const zc_piece *p = &j->pieces[j->piece_offset[d] + t % j->npieces[d]];
        t /= j->npieces[d];
        if (!j->src_by_task) { /* (a job by task may span a grid too large to number) */
            v->chunk += p->chunk_index * grid_stride;
            grid_stride *= j->grid[d];
        }
        v->shape[d] = (ptrdiff_t)p->count;
        v->chunk_strides[d] = cstride * (ptrdiff_t)p->chunk_step;
        v->chunk_offset += (size_t)(cstride * (ptrdiff_t)p->chunk_start);
        cstride *= (ptrdiff_t)j->chunk_shape[d];
        v->data_strides[d] = j->data_strides[d] * (ptrdiff_t)p->out_step;
        v->data += j->data_strides[d] * (ptrdiff_t)p->out_start;
        if (p->chunk_step == 0)
            v->listed = 1;
        if (p->count != j->chunk_shape[d] || p->chunk_step == 0)
            v->complete = v->direct = 0;
        if (p->count > 1 && v->data_strides[d] != expect)
            v->direct = 0;
        expect *= (ptrdiff_t)p->count;
    }
}

/* Set the region of `v` in the caller's array to the fill value. */
static int fill_region(const zc_shard_job *j, const task_view *v)
{
    static const ptrdiff_t zero[ZC_MAX_NDIM];
    return zc_copy_nd(j->ndim, v->shape, j->chain.itemsize, j->fill, zero, v->data, v->data_strides);
}

/* The decoded bytes of the `n`-byte inner chunk `src` (`len` bytes stored), of which the
 * first `need` are read (zc_chain_decode_prefix): `src` itself when it holds the items as they
 * lie in memory, else `*scratch`, a per-thread buffer kept from job to job (no page faults for
 * each), taken on first need. NULL with *st set on failure. */
static const unsigned char *decoded(const zc_shard_job *j, const unsigned char *src, size_t len,
                                    size_t n, size_t need, unsigned char **scratch, int *st)
{
    if (zc_chain_stores_items(&j->chain)) {
        *st = len != n ? ZC_ERR_SIZE : ZC_OK;
        return *st == ZC_OK ? src : NULL;
    }
    if (*scratch == NULL && (*scratch = zc_scratch(ZC_SCRATCH_CHUNK, n ? n : 1)) == NULL) {
        *st = ZC_ERR_NOMEM;
        return NULL;
    }
    *st = zc_chain_decode_prefix(&j->chain, src, len, *scratch, n, need);
    return *st == ZC_OK ? *scratch : NULL;
}

/* Task `t`'s decoded chunk through the job's cache (zc_shard_batch.h): its pinned entry's
 * bytes, or its stored bytes decoded into a new entry (pinned in *made for the caller to
 * unpin); NULL with *st ZC_OK when the task does not go through the cache. */
static const unsigned char *cached(const zc_shard_job *j, int64_t t, size_t n,
                                   zc_chunk_cache_entry **made, int *st)
{
    *made = NULL;
    *st = ZC_OK;
    if (j->cache == NULL || !j->src_by_task)
        return NULL;
    if (j->pins[t] != NULL)
        return zc_chunk_cache_data(j->pins[t]);
    if (j->src[t] == NULL || !j->versioned[t])
        return NULL;
    *st = zc_chunk_cache_decode_bytes(j->cache, j->cache_keys + t * j->cache_key_len,
                                      &j->cache_versions[t], &j->chain, j->src[t],
                                      j->src_len[t], n, made);
    return *st == ZC_OK ? zc_chunk_cache_data(*made) : NULL;
}

/* Task `t` of a read with a listing (geometry `v` unless by points): gather its points or
 * its listed pieces, or fill their places when its chunk is not stored. `chunk`: its decoded
 * bytes when the caller has them (from the cache), else NULL. */
static int read_listed(const zc_shard_job *j, int64_t t, const task_view *v, size_t n,
                       unsigned char **scratch, const unsigned char *chunk)
{
    const int64_t s = j->src_by_task || v == NULL ? t : v->chunk;
    const unsigned char *src = chunk != NULL ? chunk : j->src[s];
    const zc_listing *l = &j->listing;
    int st = ZC_OK;
    if (chunk == NULL)
        chunk = src == NULL ? j->fill : decoded(j, src, j->src_len[s], n, n, scratch, &st);
    if (chunk == NULL)
        return st;
    if (l->point_start != NULL) {
        const int64_t a = l->point_start[t];
        return zc_gather_points(chunk, src == NULL ? 1 : (int64_t)(n / j->chain.itemsize),
                                j->chain.itemsize, src == NULL ? NULL : l->local + a,
                                l->out_index + a, l->point_start[t + 1] - a, j->data,
                                j->data_strides[0]);
    }
    const zc_piece *p[ZC_MAX_NDIM];
    int64_t r = t;
    for (int d = j->ndim - 1; d >= 0; d--) {
        p[d] = &j->pieces[j->piece_offset[d] + r % j->npieces[d]];
        r /= j->npieces[d];
    }
    zc_gather_axis axes[ZC_MAX_NDIM];
    zc_piece_axes(l, j->ndim, p, axes);
    if (src == NULL)
        return zc_gather_fill(j->ndim, j->chain.itemsize, j->fill, axes, v->data, v->data_strides);
    return zc_gather_nd(j->ndim, j->chunk_shape, j->chain.itemsize, chunk, axes, v->data,
                        v->data_strides);
}

/* The end of the bytes of `v`'s region in its C-ordered inner chunk: what a decode of the
 * chunk for it must reach. */
static size_t region_end(const zc_shard_job *j, const task_view *v)
{
    size_t end = v->chunk_offset + j->chain.itemsize;
    for (int d = 0; d < j->ndim; d++) {
        if (v->chunk_strides[d] < 0)
            return chunk_nbytes(j);
        end += (size_t)(v->shape[d] - 1) * (size_t)v->chunk_strides[d];
    }
    return end;
}

/* Decode task `t` into `data` on this thread; `scratch` and `planes_taken` as the worker's. */
static int read_task(zc_shard_job *j, int64_t t, size_t n, unsigned char **scratch,
                     int *planes_taken)
{
    int st;
    zc_chunk_cache_entry *made;
    const unsigned char *chunk = cached(j, t, n, &made, &st);
    if (st != ZC_OK)
        return st;
    if (j->listing.point_start != NULL) {
        st = read_listed(j, t, NULL, n, scratch, chunk);
        zc_chunk_cache_unpin(made);
        return st;
    }
    task_view v;
    task_geometry(j, t, &v);
    const int64_t s = j->src_by_task ? t : v.chunk;
    const unsigned char *src = j->src[s];
    if (v.listed) {
        st = read_listed(j, t, &v, n, scratch, chunk);
    } else if (chunk != NULL) {
        st = zc_copy_nd(j->ndim, v.shape, j->chain.itemsize, chunk + v.chunk_offset,
                        v.chunk_strides, v.data, v.data_strides);
    } else if (src == NULL) {
        st = fill_region(j, &v);
    } else if (v.direct) {
        st = zc_chain_decode(&j->chain, src, j->src_len[s], v.data, n);
    } else if (zc_chain_unshuffles_last(&j->chain)) {
        /* Unshuffled straight into the region: no pass through a decoded chunk. */
        const unsigned char *planes;
        *planes_taken = 1;
        st = zc_chain_decode_shuffled(&j->chain, src, j->src_len[s], n, &planes);
        if (st == ZC_OK)
            st = zc_unshuffle_nd(planes, n, j->chain.itemsize, j->ndim, v.shape,
                                 v.chunk_offset, v.chunk_strides, v.data, v.data_strides);
    } else {
        const unsigned char *whole =
            decoded(j, src, j->src_len[s], n, region_end(j, &v), scratch, &st);
        if (whole != NULL)
            st = zc_copy_nd(j->ndim, v.shape, j->chain.itemsize, whole + v.chunk_offset,
                            v.chunk_strides, v.data, v.data_strides);
    }
    zc_chunk_cache_unpin(made);
    return st;
}

void zc_shard_read_worker(zc_shard_job *j)
{
    size_t n = chunk_nbytes(j);
    unsigned char *scratch = NULL;
    int planes_taken = 0; /* zc_chain_decode_shuffled took this thread's scratch */
    int64_t t;
    while ((t = next_task(j)) >= 0) {
        int st = read_task(j, t, n, &scratch, &planes_taken);
        if (st != ZC_OK) {
            fail(j, t, st);
            break;
        }
    }
    if (scratch != NULL || planes_taken)
        zc_scratch_idle();
}

int zc_shard_read_one(zc_shard_job *j, int64_t t)
{
    if (t < 0 || t >= j->ntasks)
        return ZC_ERR_PARAM;
    unsigned char *scratch = NULL;
    int planes_taken = 0;
    int st = read_task(j, t, chunk_nbytes(j), &scratch, &planes_taken);
    if (scratch != NULL || planes_taken)
        zc_scratch_idle();
    return st;
}

void zc_shard_write_worker(zc_shard_job *j)
{
    if (j->listing.index != NULL || j->listing.point_start != NULL) {
        fail(j, 0, ZC_ERR_PARAM);
        return;
    }
    size_t n = chunk_nbytes(j), items = n / j->chain.itemsize;
    const size_t cap = zc_chain_encode_bound(&j->chain, n);
    /* Without a compressor the encoding is the chunk's own bytes (swapped in place, with a
     * checksum after them): the chunk is assembled in its output buffer, saving a copy. Else
     * in the thread's scratch buffer, kept across waves and jobs (no page faults anew). */
    const int in_place = j->chain.compressor == ZC_COMP_NONE;
    unsigned char *scratch = NULL;
    static const ptrdiff_t zero[1];
    const ptrdiff_t all[1] = {(ptrdiff_t)items}, step[1] = {(ptrdiff_t)j->chain.itemsize};
    int64_t t;
    while ((t = next_task(j)) >= 0) {
        task_view v;
        task_geometry(j, t, &v);
        int st = ZC_OK;
        j->out[t] = NULL;
        j->out_len[t] = 0;
        unsigned char *chunk = NULL;
        if (cap == 0)
            st = ZC_ERR_SIZE;
        else if (in_place)
            chunk = j->out[t] = (unsigned char *)malloc(cap);
        else
            chunk = scratch != NULL ? scratch : (scratch = zc_scratch(ZC_SCRATCH_CHUNK, n ? n : 1));
        if (st == ZC_OK && chunk == NULL)
            st = ZC_ERR_NOMEM;
        if (st == ZC_OK && !v.complete) {
            /* Merge into the stored inner chunk, or into fill when there is none. */
            const int64_t s = j->src_by_task ? t : v.chunk;
            const unsigned char *src = j->src[s];
            st = src ? zc_chain_decode(&j->chain, src, j->src_len[s], chunk, n)
                     : zc_copy_nd(1, all, j->chain.itemsize, j->fill, zero, chunk, step);
        }
        if (st == ZC_OK)
            st = zc_copy_nd(j->ndim, v.shape, j->chain.itemsize, v.data, v.data_strides,
                            chunk + v.chunk_offset, v.chunk_strides);
        int is_fill = 0;
        if (st == ZC_OK && !j->write_empty_chunks) {
            is_fill = zc_is_fill_value(chunk, n, j->fill, j->chain.itemsize, j->fill_floatsize);
            if (is_fill < 0)
                st = is_fill;
        }
        if (st == ZC_OK && is_fill) {
            free(j->out[t]);
            j->out[t] = NULL;
        } else if (st == ZC_OK) {
            if (!in_place && (j->out[t] = (unsigned char *)malloc(cap)) == NULL)
                st = ZC_ERR_NOMEM;
            else
                st = zc_chain_encode(&j->chain, chunk, n, j->out[t], cap, &j->out_len[t]);
        }
        if (st != ZC_OK) {
            fail(j, t, st);
            break;
        }
    }
    if (scratch != NULL)
        zc_scratch_idle();
}

int64_t zc_shard_task_chunk(const zc_shard_job *j, int64_t t)
{
    if (j->src_by_task)
        return 0;
    task_view v;
    task_geometry(j, t, &v);
    return v.chunk;
}
