/* Batched chunk reads and writes for a directory store. Threads share one zc_batch and
 * take tasks (chunks) from an atomic counter, so no Python runs per chunk. Reads of chunks
 * with no compressor or zstd stream (zc_chunk_io.c, zc_stream.c): a thread holds bounded
 * buffers only, so reading a whole array takes about the memory of its output. */
#define _GNU_SOURCE
#include "jobs/zc_batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/zc_byteswap.h"
#include "jobs/zc_chunk_io.h"
#include "jobs/zc_copy.h"
#include "codecs/zc_crc32c.h"
#include "jobs/zc_fill.h"
#include "files/zc_key_lock.h"
#include "os/zc_os.h"
#include "memory/zc_pool.h"
#include "memory/zc_scratch.h"
#include "zc_status.h"
#include "codecs/zc_zstd.h"

static size_t chunk_nbytes(const zc_batch *b)
{
    size_t n = b->chain.itemsize;
    for (int d = 0; d < b->ndim; d++)
        n *= (size_t)b->chunk_shape[d];
    return n;
}

int zc_listing_check(const zc_listing *l, int ndim, const int64_t *grid)
{
    if (l->point_start == NULL)
        return ZC_OK;
    if (l->ngroups < 0 || l->local == NULL || l->out_index == NULL || l->point_start[0] != 0)
        return ZC_ERR_PARAM;
    for (int64_t g = 0; g < l->ngroups; g++) {
        if (l->point_start[g + 1] < l->point_start[g])
            return ZC_ERR_PARAM;
        for (int d = 0; l->coords != NULL && d < ndim; d++)
            if (l->coords[g * ndim + d] < 0 || l->coords[g * ndim + d] >= grid[d])
                return ZC_ERR_PARAM;
    }
    return ZC_OK;
}

int zc_listed_piece_check(const zc_listing *l, const zc_piece *p, int64_t C, int64_t extent)
{
    if (l->index == NULL || l->out_index == NULL || p->chunk_step != 0 || p->count < 1 ||
        p->out_start != 0 || p->out_step != 1 || p->chunk_start < 0 ||
        p->chunk_start > l->nindex - p->count || extent > C)
        return ZC_ERR_PARAM;
    const int64_t *at = l->index + p->chunk_start;
    for (int64_t k = 0; k < p->count; k++)
        if (at[k] < 0 || at[k] >= extent)
            return ZC_ERR_PARAM;
    return ZC_OK;
}

void zc_piece_axes(const zc_listing *l, int ndim, const zc_piece *const *p, zc_gather_axis *axes)
{
    for (int d = 0; d < ndim; d++) {
        const int listed = p[d]->chunk_step == 0;
        axes[d] = (zc_gather_axis){
            .start = p[d]->chunk_start, .step = p[d]->chunk_step, .count = p[d]->count,
            .index = listed ? l->index + p[d]->chunk_start : NULL,
            .out_index = listed ? l->out_index + p[d]->chunk_start : NULL};
    }
}

/* Does piece set `p` list positions on some axis? */
static int any_listed(int ndim, const zc_piece *const *p)
{
    for (int d = 0; d < ndim; d++)
        if (p[d]->chunk_step == 0)
            return 1;
    return 0;
}

/* Is the job a read of points (zc_listing)? */
static int by_points(const zc_batch *b)
{
    return b->listing.point_start != NULL;
}

int zc_batch_prepare(zc_batch *b)
{
    if (b->ndim < 0 || b->ndim > ZC_MAX_NDIM || b->chain.itemsize == 0 || b->fill == NULL)
        return ZC_ERR_PARAM;
    if (b->cache != NULL && b->mem == NULL && !zc_chunk_cache_gains(&b->chain))
        b->cache = NULL;
    int64_t n = 1, grid[ZC_MAX_NDIM];
    size_t elems = 1;
    for (int d = 0; d < b->ndim; d++) {
        if (b->chunk_shape[d] <= 0 || b->array_shape[d] < 0 || b->npieces[d] < 0)
            return ZC_ERR_PARAM;
        if (elems > SIZE_MAX / (size_t)b->chunk_shape[d] / b->chain.itemsize)
            return ZC_ERR_SIZE;
        elems *= (size_t)b->chunk_shape[d];
        const int64_t C = b->chunk_shape[d], A = b->array_shape[d];
        grid[d] = A / C + (A % C != 0);
        for (int64_t i = 0; i < b->npieces[d]; i++) {
            const zc_piece *p = &b->pieces[b->piece_offset[d] + i];
            if (p->chunk_step == 0) {
                if (p->chunk_index < 0 || p->chunk_index >= grid[d] ||
                    zc_listed_piece_check(&b->listing, p, C,
                                          A - p->chunk_index * C < C ? A - p->chunk_index * C : C))
                    return ZC_ERR_PARAM;
                continue;
            }
            /* Every piece must stay inside its chunk and inside the array (checked in an
             * order that cannot overflow). */
            if (p->count < 1 || p->chunk_step < 1 || p->chunk_index < 0 || p->chunk_start < 0 ||
                p->chunk_start >= C || (p->count - 1) > (C - 1 - p->chunk_start) / p->chunk_step ||
                p->chunk_index > (A - 1) / C)
                return ZC_ERR_PARAM;
            int64_t last = p->chunk_start + (p->count - 1) * p->chunk_step;
            if (last >= A - p->chunk_index * C)
                return ZC_ERR_PARAM;
        }
        if (b->npieces[d] && n > INT64_MAX / b->npieces[d])
            return ZC_ERR_SIZE;
        n *= b->npieces[d];
    }
    if (zc_listing_check(&b->listing, b->ndim, grid) != ZC_OK ||
        (by_points(b) && b->listing.ngroups && b->listing.coords == NULL))
        return ZC_ERR_PARAM;
    b->ntasks = by_points(b) ? b->listing.ngroups : n;
    b->nsegments = 1;
    b->segments = NULL;
    b->next_task = 0;
    b->next_ahead = 0;
    b->failed = 0;
    b->status = ZC_OK;
    b->sys_errno = 0;
    b->failed_task = -1;
    return ZC_OK;
}

static void task_pieces(const zc_batch *b, int64_t t, const zc_piece **p)
{
    for (int d = b->ndim - 1; d >= 0; d--) {
        p[d] = &b->pieces[b->piece_offset[d] + t % b->npieces[d]];
        t /= b->npieces[d];
    }
}

static int format_key(const zc_batch *b, const zc_piece **p, char *buf, size_t cap)
{
    int64_t coords[ZC_MAX_NDIM];
    for (int d = 0; d < b->ndim; d++)
        coords[d] = p[d]->chunk_index;
    return zc_key_format(b->key_head, b->sep, b->lead_sep, b->ndim, coords, buf, cap);
}

/* The key of task `t` of a read of points. */
static int points_key(const zc_batch *b, int64_t t, char *buf, size_t cap)
{
    return zc_key_format(b->key_head, b->sep, b->lead_sep, b->ndim,
                         b->listing.coords + t * b->ndim, buf, cap);
}

int zc_batch_task_key(const zc_batch *b, int64_t t, char *buf, size_t cap)
{
    const zc_piece *p[ZC_MAX_NDIM];
    if (t < 0 || t >= b->ntasks)
        return ZC_ERR_PARAM;
    if (by_points(b))
        return points_key(b, t, buf, cap);
    task_pieces(b, t, p);
    return format_key(b, p, buf, cap);
}

static void fail(zc_batch *b, int64_t t, int status, int err)
{
    if (zc_atomic_exchange_int(&b->failed, 1, ZC_ACQ_REL) == 0) {
        b->status = status;
        b->sys_errno = err;
        b->failed_task = t;
    }
}

/* The task's selection inside a chunk buffer at `chunk`: where it starts and its byte strides. */
static char *task_chunk_view(const zc_batch *b, const zc_piece **p, char *chunk, ptrdiff_t *strides)
{
    ptrdiff_t cstride = (ptrdiff_t)b->chain.itemsize;
    for (int d = b->ndim - 1; d >= 0; d--) {
        strides[d] = cstride * p[d]->chunk_step;
        chunk += cstride * p[d]->chunk_start;
        cstride *= b->chunk_shape[d];
    }
    return chunk;
}

/* Where the task's selection lands in the caller's array: its shape, base and byte strides. */
static char *task_out(const zc_batch *b, const zc_piece **p, ptrdiff_t *shape, ptrdiff_t *data_strides)
{
    char *o = b->data;
    for (int d = 0; d < b->ndim; d++) {
        shape[d] = p[d]->count;
        data_strides[d] = b->data_strides[d] * p[d]->out_step;
        o += b->data_strides[d] * p[d]->out_start;
    }
    return o;
}

/* A worker's current run of consecutive tasks. */
typedef struct {
    int64_t next, end;
} task_run;

/* A split chunk (zc_batch_split_writes). */
#define SEGMENT_MIN ((size_t)8 << 20)
/* Blosc chunks from this size decode on blosc threads when threads would idle: starting
 * them costs tens of microseconds, a few per cent of such a chunk's decoding. */
#define BLOSC_SPLIT_MIN ((size_t)4 << 20)
#define MAX_SEGMENTS 64
struct zc_chunk_segments {
    unsigned char *chunk; /* gathered, a zc_pool block */
    unsigned char *out;   /* segment s's compressed bytes at s * seg_cap, spliced in place */
    size_t out_len[MAX_SEGMENTS];
    int not_fill; /* some segment holds other than the fill value */
    int done;     /* segments compressed */
};

/* The next task to take, or -1 when none is left or a thread failed. Workers claim runs of
 * consecutive tasks, so that with many small chunks each works in its own directories
 * rather than both queueing for one directory's lock on every file they create. */
static int64_t next_task(zc_batch *b, task_run *run)
{
    if (zc_atomic_load_int(&b->failed, ZC_ACQUIRE))
        return -1;
    if (run->next >= run->end) {
        const int64_t total = b->ntasks * b->nsegments;
        int64_t len = total / 64 > 1 ? total / 64 : 1;
        run->next = zc_atomic_fetch_add_i64(&b->next_task, len, ZC_ACQ_REL);
        run->end = run->next + len < total ? run->next + len : total;
    }
    return run->next < run->end ? run->next++ : -1;
}

/* Decode the stored chunk `o` (`size` bytes) into the task's selection, whose place in
 * the caller's array is `out` with byte strides `out_strides`. */
static int read_task(const zc_batch *b, zc_chunk_reader *rd, const zc_piece **p, const zc_object *o,
                     size_t size, char *out, const ptrdiff_t *out_strides)
{
    zc_chunk_sel sel = {.ndim = b->ndim, .shape = b->chunk_shape, .out = out,
                        .stream_out = b->stream_out};
    for (int d = 0; d < b->ndim; d++) {
        sel.start[d] = p[d]->chunk_start;
        sel.step[d] = p[d]->chunk_step;
        sel.count[d] = p[d]->count;
        sel.out_strides[d] = out_strides[d];
    }
    zc_gather_axis axes[ZC_MAX_NDIM];
    if (any_listed(b->ndim, p)) {
        zc_piece_axes(&b->listing, b->ndim, p, axes);
        sel.gather = axes;
    }
    if (b->cache == NULL)
        return zc_chunk_read(&b->chain, &sel, o, 0, size, rd);
    int64_t key[ZC_MAX_NDIM + 1];
    for (int d = 0; d < b->ndim; d++)
        key[d] = p[d]->chunk_index;
    key[b->ndim] = 0;
    zc_chunk_version version = {.offset = 0, .nbytes = size};
    if (zc_chunk_version_of(o, &version) != ZC_OK)
        return ZC_ERR_IO;
    return zc_chunk_cache_read(b->cache, key, &version, &b->chain, &sel, o, 0, size, rd);
}

/* Decode the stored chunk `o` (`size` bytes) and gather the points of task `t`. */
static int read_points(const zc_batch *b, zc_chunk_reader *rd, int64_t t, const zc_object *o,
                       size_t size)
{
    const int64_t a = b->listing.point_start[t];
    zc_chunk_sel sel = {.ndim = b->ndim, .shape = b->chunk_shape, .out = b->data,
                        .local = b->listing.local + a, .local_out = b->listing.out_index + a,
                        .npoints = b->listing.point_start[t + 1] - a};
    sel.out_strides[0] = b->data_strides[0];
    return zc_chunk_read(&b->chain, &sel, o, 0, size, rd);
}

/* Fill the selection of task `t` (pieces `p`, region `out` of `shape` by `out_strides`) whose
 * chunk is not stored. */
static int fill_task(const zc_batch *b, int64_t t, const zc_piece **p, const ptrdiff_t *shape,
                     char *out, const ptrdiff_t *out_strides)
{
    static const ptrdiff_t zero[ZC_MAX_NDIM];
    if (by_points(b)) {
        const int64_t a = b->listing.point_start[t];
        return zc_gather_points(b->fill, 1, b->chain.itemsize, NULL, b->listing.out_index + a,
                                b->listing.point_start[t + 1] - a, b->data, b->data_strides[0]);
    }
    if (any_listed(b->ndim, p)) {
        zc_gather_axis axes[ZC_MAX_NDIM];
        zc_piece_axes(&b->listing, b->ndim, p, axes);
        return zc_gather_fill(b->ndim, b->chain.itemsize, b->fill, axes, out, out_strides);
    }
    return zc_copy_nd(b->ndim, shape, b->chain.itemsize, b->fill, zero, out, out_strides);
}

int zc_batch_reads_ahead(const zc_batch *b)
{
    size_t decoded = b->chain.itemsize;
    for (int d = 0; d < b->ndim; d++)
        decoded *= (size_t)b->chunk_shape[d];
    return b->mem == NULL && b->cache == NULL && !by_points(b) && b->ntasks > 1 &&
           b->ntasks <= ZC_BATCH_AHEAD_MAX_TASKS && decoded >= ZC_BATCH_AHEAD_MIN;
}

void zc_batch_read_ahead_worker(zc_batch *b)
{
    char path[ZC_BATCH_PATH_MAX];
    const zc_piece *p[ZC_MAX_NDIM];
    for (;;) {
        if (zc_atomic_load_int(&b->failed, ZC_ACQUIRE))
            return;
        const int64_t k = zc_atomic_fetch_add_i64(&b->next_ahead, 1, ZC_ACQ_REL);
        if (k >= b->ntasks)
            return;
        if (k < zc_atomic_load_i64(&b->next_task, ZC_ACQUIRE))
            continue; /* a reader has it */
        task_pieces(b, k, p);
        zc_object o;
        size_t size;
        int missing;
        if (format_key(b, p, path, sizeof path) == ZC_OK &&
            zc_object_open(&b->root, NULL, path, &o, &size, &missing) == ZC_OK) {
            /* (the task's own read reports what is wrong) */
            if (!missing)
                zc_object_prefetch(&o, 0, size);
            zc_object_close(&o);
        }
    }
}

void zc_batch_read_worker(zc_batch *b)
{
    zc_chunk_reader rd;
    zc_chunk_reader_init(&rd);
    char path[ZC_BATCH_PATH_MAX];
    const zc_piece *p[ZC_MAX_NDIM];
    int64_t t;
    task_run run = {0, 0};
    const int points = by_points(b);
    while ((t = next_task(b, &run)) >= 0) {
        ptrdiff_t shape[ZC_MAX_NDIM], out_strides[ZC_MAX_NDIM];
        char *out = NULL;
        int st;
        if (points) {
            st = points_key(b, t, path, sizeof path);
        } else {
            task_pieces(b, t, p);
            st = format_key(b, p, path, sizeof path);
            out = task_out(b, p, shape, out_strides);
        }
        if (st != ZC_OK) {
            fail(b, t, st, 0);
            break;
        }
        zc_object o;
        int missing;
        size_t size = 0;
        if ((st = zc_object_open(&b->root, b->mem, path, &o, &size, &missing)) != ZC_OK) {
            fail(b, t, st, errno);
            break;
        }
        if (missing) {
            if ((st = fill_task(b, t, p, shape, out, out_strides)) != ZC_OK) {
                fail(b, t, st, 0);
                break;
            }
            continue;
        }
        errno = 0;
        st = points ? read_points(b, &rd, t, &o, size)
                    : read_task(b, &rd, p, &o, size, out, out_strides);
        int err = errno;
        zc_object_close(&o);
        if (st != ZC_OK) {
            fail(b, t, st, st == ZC_ERR_IO ? err : 0);
            break;
        }
    }
    zc_chunk_reader_free(&rd);
}

/* ---- uncompressed chunks, streamed ---------------------------------------------------------- */

/* Bytes gathered per write() of a streamed chunk: small enough to stay in cache between the
 * gather and the kernel's copy into the page cache. */
#define STREAM_PIECE ((size_t)256 << 10)

/* A whole chunk's region of the caller's array as slabs: the chunk's C-ordered pieces over
 * axes [axis, ndim), each at most STREAM_PIECE bytes. */
typedef struct {
    int axis;
    ptrdiff_t shape[ZC_MAX_NDIM], src_strides[ZC_MAX_NDIM];
    ptrdiff_t slab_strides[ZC_MAX_NDIM];
    const char *src;
    size_t slab;
    int64_t nslabs;
} slab_walk;

/* Set up the walk of task pieces `p`; 0 when even one row of the last axis is larger than
 * STREAM_PIECE (or the array is 0-d). */
static int slab_walk_init(const zc_batch *b, const zc_piece **p, slab_walk *w)
{
    w->src = task_out(b, p, w->shape, w->src_strides);
    size_t bytes = b->chain.itemsize;
    int d = b->ndim;
    while (d > 0 && bytes * (size_t)w->shape[d - 1] <= STREAM_PIECE) {
        w->slab_strides[d - 1] = (ptrdiff_t)bytes;
        bytes *= (size_t)w->shape[d - 1];
        d--;
    }
    if (d == b->ndim)
        return 0;
    w->axis = d;
    w->slab = bytes;
    w->nslabs = 1;
    for (int k = 0; k < d; k++)
        w->nslabs *= w->shape[k];
    return 1;
}

/* Gather slabs from `*k` on into `buf` while they fit in STREAM_PIECE; returns the bytes. */
static size_t slab_gather(const zc_batch *b, const slab_walk *w, int64_t *k, unsigned char *buf)
{
    size_t used = 0;
    for (; *k < w->nslabs && used + w->slab <= STREAM_PIECE; (*k)++) {
        const char *at = w->src;
        for (int64_t i = *k, d = w->axis - 1; d >= 0; d--) {
            at += (i % w->shape[d]) * w->src_strides[d];
            i /= w->shape[d];
        }
        zc_copy_nd(b->ndim - w->axis, w->shape + w->axis, b->chain.itemsize, at,
                   w->src_strides + w->axis, (char *)buf + used, w->slab_strides + w->axis);
        used += w->slab;
    }
    return used;
}

/* Does the region hold only the fill value? Stops at the first slab that does not. */
static int slab_all_fill(const zc_batch *b, const slab_walk *w, unsigned char *buf)
{
    for (int64_t k = 0; k < w->nslabs;) {
        size_t n = slab_gather(b, w, &k, buf);
        int fill = zc_is_fill_value(buf, n, b->fill, b->chain.itemsize, b->fill_floatsize);
        if (fill <= 0)
            return fill;
    }
    return 1;
}

/* Store an uncompressed chunk wholly inside the array a piece at a time, gathered into a
 * cache-sized buffer and written straight to the temporary file: the chunk crosses memory once
 * less than through a chunk-sized buffer. (Compressed chunks are gathered whole instead: zstd
 * fed piece by piece copies the stream into its own window and matches across the wrap, which
 * costs more than the gather saves.) */
static int write_streamed(const zc_batch *b, const slab_walk *w, const char *path,
                          unsigned char *buf, const zc_key_locks *locks)
{
    if (!b->write_empty_chunks) {
        int fill = slab_all_fill(b, w, buf);
        if (fill < 0)
            return fill;
        if (fill)
            return zc_object_replace(&b->root, b->mem, locks, path, NULL, 0);
    }
    zc_object_writer f;
    int st = zc_object_writer_open(&f, &b->root, b->mem, path);
    uint32_t crc = 0;
    for (int64_t k = 0; st == ZC_OK && k < w->nslabs;) {
        size_t n = slab_gather(b, w, &k, buf);
        if (b->chain.swap_size > 1 &&
            (st = zc_byteswap(buf, buf, n / b->chain.swap_size, b->chain.swap_size)) != ZC_OK) {
            zc_object_writer_abort(&f);
            break;
        }
        if (b->chain.crc32c)
            crc = zc_crc32c(crc, buf, n);
        st = zc_object_writer_write(&f, buf, n);
    }
    if (st == ZC_OK && b->chain.crc32c) {
        unsigned char trailer[4];
        zc_store_le32(trailer, crc);
        st = zc_object_writer_write(&f, trailer, 4);
    }
    return st == ZC_OK ? zc_object_writer_commit(&f, locks, path) : st;
}

/* Does the task's chunk reach past the array's end (`edge`), and does the selection leave
 * some of the chunk's elements inside the array out (`partial`)? */
static void task_coverage(const zc_batch *b, const zc_piece **p, int *edge, int *partial)
{
    *edge = *partial = 0;
    for (int d = 0; d < b->ndim; d++) {
        int64_t lo = p[d]->chunk_index * b->chunk_shape[d];
        int64_t extent = b->array_shape[d] - lo < b->chunk_shape[d] ? b->array_shape[d] - lo
                                                                     : b->chunk_shape[d];
        *edge |= extent < b->chunk_shape[d];
        *partial |= p[d]->count != extent;
    }
}

/* Bytes of compressed output room per segment of a split chunk. */
static size_t segment_cap(const zc_batch *b)
{
    size_t plane = chunk_nbytes(b) / (size_t)b->chunk_shape[0];
    int64_t most = (b->chunk_shape[0] + b->nsegments - 1) / b->nsegments;
    return zc_zstd_bound(plane * (size_t)most);
}

/* Writes take slices and indices only: no listed pieces (prepare lets those in only with
 * an index list), no points. */
static int lists_positions(const zc_batch *b)
{
    return b->listing.index != NULL || by_points(b);
}

int64_t zc_batch_split_writes(zc_batch *b, int nthreads)
{
    if (lists_positions(b))
        return b->ntasks; /* the write workers refuse it */
    if (b->segments != NULL)
        return b->ntasks * b->nsegments; /* split already */
    const size_t n = chunk_nbytes(b);
    int64_t k = b->ntasks ? (nthreads + b->ntasks - 1) / b->ntasks : 1;
    if (k > (int64_t)(n / SEGMENT_MIN))
        k = (int64_t)(n / SEGMENT_MIN);
    if (b->ndim > 0 && k > b->chunk_shape[0])
        k = b->chunk_shape[0];
    if (k > MAX_SEGMENTS)
        k = MAX_SEGMENTS;
    if (k < 2 || b->ndim == 0 || b->chain.compressor != ZC_COMP_ZSTD || b->chain.checksum
        || zc_chain_shuffles(&b->chain))
        return b->ntasks;
    const zc_piece *p[ZC_MAX_NDIM];
    for (int64_t t = 0; t < b->ntasks; t++) {
        int edge, partial;
        task_pieces(b, t, p);
        task_coverage(b, p, &edge, &partial);
        if (edge || partial)
            return b->ntasks;
    }
    b->nsegments = k;
    const size_t cap = segment_cap(b);
    struct zc_chunk_segments *segs = calloc((size_t)b->ntasks, sizeof *segs);
    int ok = segs != NULL && cap != 0 && cap <= (SIZE_MAX - 4) / (size_t)k;
    for (int64_t t = 0; ok && t < b->ntasks; t++) {
        segs[t].chunk = zc_pool_take(n);
        segs[t].out = malloc(cap * (size_t)k + 4); /* + 4: a crc32c trailer */
        ok = segs[t].chunk != NULL && segs[t].out != NULL;
    }
    b->segments = segs;
    if (!ok) { /* not worth failing the write for: store the chunks whole */
        zc_batch_free(b);
        return b->ntasks;
    }
    return b->ntasks * k;
}

int64_t zc_batch_split_reads(zc_batch *b, int nthreads)
{
    const size_t n = chunk_nbytes(b);
    if (b->chain.compressor == ZC_COMP_BLOSC && b->ntasks > 0 && nthreads > b->ntasks &&
        n >= BLOSC_SPLIT_MIN) {
        /* At most a thread per MiB, so that starting them stays small against the work. */
        int64_t k = nthreads / b->ntasks, most = (int64_t)(n >> 20);
        b->chain.decode_threads = (int)(k < most ? k : most);
    }
    return b->ntasks;
}

void zc_batch_free(zc_batch *b)
{
    if (b->segments != NULL) {
        for (int64_t t = 0; t < b->ntasks; t++) {
            zc_pool_give(b->segments[t].chunk, chunk_nbytes(b));
            free(b->segments[t].out);
        }
        free(b->segments);
        b->segments = NULL;
    }
    b->nsegments = 1;
}

/* Splice the compressed segments of a chunk into one frame and store it, or delete the chunk
 * when it holds only the fill value and empty chunks are not written. */
static int store_segments(const zc_batch *b, struct zc_chunk_segments *cs, const char *path,
                          const zc_key_locks *locks)
{
    if (!b->write_empty_chunks && !zc_atomic_load_int(&cs->not_fill, ZC_ACQUIRE))
        return zc_object_replace(&b->root, b->mem, locks, path, NULL, 0);
    const size_t cap = segment_cap(b);
    size_t m = cs->out_len[0];
    for (int64_t s = 1; s < b->nsegments; s++) {
        memmove(cs->out + m, cs->out + (size_t)s * cap, cs->out_len[s]);
        m += cs->out_len[s];
    }
    if (b->chain.crc32c) {
        zc_store_le32(cs->out + m, zc_crc32c(0, cs->out, m));
        m += 4;
    }
    return zc_object_replace(&b->root, b->mem, locks, path, cs->out, m);
}

/* Gather segment `s` of task `t`'s chunk (a run of planes along the first axis), note whether
 * it holds only the fill value, and compress it. */
static int compress_segment(const zc_batch *b, int64_t t, int64_t s)
{
    struct zc_chunk_segments *cs = &b->segments[t];
    const zc_piece *p[ZC_MAX_NDIM];
    ptrdiff_t shape[ZC_MAX_NDIM], src_strides[ZC_MAX_NDIM];
    ptrdiff_t dst_strides[ZC_MAX_NDIM];
    task_pieces(b, t, p);
    char *src = task_out(b, p, shape, src_strides);
    task_chunk_view(b, p, (char *)cs->chunk, dst_strides);
    const int64_t k = b->nsegments, planes = b->chunk_shape[0];
    const int64_t z0 = s * planes / k, z1 = (s + 1) * planes / k;
    const size_t n = chunk_nbytes(b), len = n / (size_t)planes * (size_t)(z1 - z0);
    unsigned char *seg = cs->chunk + (size_t)dst_strides[0] * (size_t)z0;
    shape[0] = z1 - z0;
    int st = zc_copy_nd(b->ndim, shape, b->chain.itemsize, src + src_strides[0] * z0, src_strides,
                        (char *)seg, dst_strides);
    if (st != ZC_OK)
        return st;
    if (!b->write_empty_chunks) {
        int fill = zc_is_fill_value(seg, len, b->fill, b->chain.itemsize, b->fill_floatsize);
        if (fill < 0)
            return fill;
        if (!fill)
            zc_atomic_store_int(&cs->not_fill, 1, ZC_RELEASE);
    }
    if (b->chain.swap_size > 1 &&
        (st = zc_byteswap(seg, seg, len / b->chain.swap_size, b->chain.swap_size)) != ZC_OK)
        return st;
    const size_t cap = segment_cap(b);
    return zc_zstd_compress_segment(seg, len, cs->out + (size_t)s * cap, cap, b->chain.clevel, n,
                                    s == 0, s == k - 1, &cs->out_len[s]);
}

/* The write worker of a split batch: work items are (chunk, segment); whoever compresses a
 * chunk's last segment stores the chunk. */
static void write_segments(zc_batch *b)
{
    zc_key_locks locks = ZC_KEY_LOCKS_NONE;
    char path[ZC_BATCH_PATH_MAX];
    const zc_piece *p[ZC_MAX_NDIM];
    task_run run = {0, 0};
    int64_t w;
    while ((w = next_task(b, &run)) >= 0) {
        const int64_t t = w / b->nsegments;
        struct zc_chunk_segments *cs = &b->segments[t];
        int st = compress_segment(b, t, w % b->nsegments);
        if (st != ZC_OK) {
            fail(b, t, st, 0);
            break;
        }
        if (zc_atomic_add_int(&cs->done, 1, ZC_ACQ_REL) < b->nsegments)
            continue;
        task_pieces(b, t, p);
        errno = 0;
        if ((st = format_key(b, p, path, sizeof path)) == ZC_OK)
            st = zc_key_locks_open_once(&locks, &b->root, b->lock_dir);
        if (st == ZC_OK)
            st = store_segments(b, cs, path, &locks);
        if (st != ZC_OK) {
            fail(b, t, st, errno);
            break;
        }
    }
    zc_key_locks_close(&locks);
}

void zc_batch_write_worker(zc_batch *b)
{
    if (lists_positions(b)) {
        fail(b, 0, ZC_ERR_PARAM, 0);
        return;
    }
    if (b->segments != NULL) {
        write_segments(b);
        return;
    }
    size_t n = chunk_nbytes(b);
    /* Stored as is: encoded in the chunk buffer, which has room for the crc32c trailer. */
    const int in_place = b->chain.compressor == ZC_COMP_NONE && !zc_chain_shuffles(&b->chain);
    const size_t cap = zc_chain_encode_bound(&b->chain, n);
    zc_key_locks locks = ZC_KEY_LOCKS_NONE; /* the lock file, opened on first need */
    static const ptrdiff_t zero[1];
    const ptrdiff_t all[1] = {(ptrdiff_t)(n / b->chain.itemsize)};
    const ptrdiff_t item[1] = {(ptrdiff_t)b->chain.itemsize};
    char path[ZC_BATCH_PATH_MAX];
    const zc_piece *p[ZC_MAX_NDIM];
    int64_t t;
    task_run run = {0, 0};
    while ((t = next_task(b, &run)) >= 0) {
        task_pieces(b, t, p);
        int edge, partial;
        task_coverage(b, p, &edge, &partial);
        if (partial) {
            /* Read-modify-write needs the chunk's lock: the caller does those. */
            b->deferred[t] = 1;
            continue;
        }
        int st = format_key(b, p, path, sizeof path);
        if (st != ZC_OK) {
            fail(b, t, st, 0);
            break;
        }
        if ((st = zc_key_locks_open_once(&locks, &b->root, b->lock_dir)) != ZC_OK) {
            fail(b, t, st, errno);
            break;
        }
        slab_walk walk;
        if (in_place && !edge && slab_walk_init(b, p, &walk)) {
            unsigned char *buf = zc_scratch(ZC_SCRATCH_CHUNK, STREAM_PIECE);
            errno = 0;
            st = buf ? write_streamed(b, &walk, path, buf, &locks) : ZC_ERR_NOMEM;
            if (st != ZC_OK) {
                fail(b, t, st, errno);
                break;
            }
            continue;
        }
        /* One chunk and its encoding per thread, kept from job to job (zc_scratch.h). */
        unsigned char *chunk = cap ? zc_scratch(ZC_SCRATCH_CHUNK, in_place ? cap : n) : NULL;
        unsigned char *encoded =
            in_place ? chunk : cap ? zc_scratch(ZC_SCRATCH_ENCODED, cap) : NULL;
        if (chunk == NULL || encoded == NULL) {
            fail(b, t, cap ? ZC_ERR_NOMEM : ZC_ERR_SIZE, 0);
            break;
        }
        /* A chunk past the array's end keeps the fill value there. */
        st = edge ? zc_copy_nd(1, all, b->chain.itemsize, b->fill, zero, chunk, item) : ZC_OK;
        if (st == ZC_OK) {
            ptrdiff_t shape[ZC_MAX_NDIM], src_strides[ZC_MAX_NDIM];
            ptrdiff_t dst_strides[ZC_MAX_NDIM];
            char *src = task_out(b, p, shape, src_strides);
            char *dst = task_chunk_view(b, p, (char *)chunk, dst_strides);
            st = zc_copy_nd(b->ndim, shape, b->chain.itemsize, src, src_strides, dst, dst_strides);
        }
        if (st != ZC_OK) {
            fail(b, t, st, 0);
            break;
        }
        int is_fill = 0;
        if (!b->write_empty_chunks)
            is_fill = zc_is_fill_value(chunk, n, b->fill, b->chain.itemsize, b->fill_floatsize);
        if (is_fill < 0) {
            fail(b, t, is_fill, 0);
            break;
        }
        /* Replaced or deleted under the key's lock, so this lands wholly before or after
         * another writer's read-modify-write of the chunk rather than inside it. */
        if (is_fill) {
            if ((st = zc_object_replace(&b->root, b->mem, &locks, path, NULL, 0)) != ZC_OK) {
                fail(b, t, st, errno);
                break;
            }
            continue;
        }
        size_t len = 0;
        st = zc_chain_encode(&b->chain, chunk, n, encoded, cap, &len);
        if (st == ZC_OK)
            st = zc_object_replace(&b->root, b->mem, &locks, path, encoded, len);
        if (st != ZC_OK) {
            fail(b, t, st, errno);
            break;
        }
    }
    zc_key_locks_close(&locks);
    zc_scratch_idle();
}

/* ---- read-modify-write of a partly covered chunk -------------------------------------------- */

int zc_batch_rewrite_task(zc_batch *b, int64_t t, zc_key_locks *locks)
{
    static const ptrdiff_t zero[1];
    const zc_piece *p[ZC_MAX_NDIM];
    char path[ZC_BATCH_PATH_MAX];
    const size_t n = chunk_nbytes(b), cap = zc_chain_encode_bound(&b->chain, n);
    unsigned char *stored = NULL, *chunk = NULL, *encoded = NULL;
    zc_object o;
    int missing = 0, locked = 0, st, err = 0;
    size_t size = 0;
    if (lists_positions(b)) {
        st = ZC_ERR_PARAM;
        goto done;
    }
    task_pieces(b, t, p);
    if ((st = format_key(b, p, path, sizeof path)) != ZC_OK)
        goto done;
    errno = 0;
    if ((st = zc_key_locks_open_once(locks, &b->root, b->lock_dir)) != ZC_OK ||
        (st = zc_object_lock(b->mem, locks, path)) != ZC_OK) {
        err = errno;
        goto done;
    }
    locked = 1;
    chunk = (unsigned char *)malloc(n ? n : 1);
    encoded = (unsigned char *)malloc(cap ? cap : 1);
    if (chunk == NULL || encoded == NULL || cap == 0) {
        st = cap ? ZC_ERR_NOMEM : ZC_ERR_SIZE;
        goto done;
    }
    if ((st = zc_object_open(&b->root, b->mem, path, &o, &size, &missing)) != ZC_OK) {
        err = errno;
        goto done;
    }
    if (missing) {
        const ptrdiff_t all[1] = {(ptrdiff_t)(n / b->chain.itemsize)};
        const ptrdiff_t item[1] = {(ptrdiff_t)b->chain.itemsize};
        st = zc_copy_nd(1, all, b->chain.itemsize, b->fill, zero, chunk, item);
    } else {
        /* A stored chunk larger than any encoding of it could be is not one. */
        if (size > cap + ((size_t)1 << 20))
            st = ZC_ERR_SIZE;
        else if ((stored = (unsigned char *)malloc(size ? size : 1)) == NULL)
            st = ZC_ERR_NOMEM;
        else if ((st = zc_object_pread(&o, stored, size, 0)) == ZC_ERR_IO)
            err = errno;
        if (st == ZC_OK)
            st = zc_chain_decode(&b->chain, stored, size, chunk, n);
        zc_object_close(&o);
    }
    if (st != ZC_OK)
        goto done;
    ptrdiff_t shape[ZC_MAX_NDIM], src_strides[ZC_MAX_NDIM];
    ptrdiff_t dst_strides[ZC_MAX_NDIM];
    char *src = task_out(b, p, shape, src_strides);
    char *dst = task_chunk_view(b, p, (char *)chunk, dst_strides);
    if ((st = zc_copy_nd(b->ndim, shape, b->chain.itemsize, src, src_strides, dst,
                         dst_strides)) != ZC_OK)
        goto done;
    int is_fill = 0;
    if (!b->write_empty_chunks &&
        (is_fill = zc_is_fill_value(chunk, n, b->fill, b->chain.itemsize, b->fill_floatsize)) < 0) {
        st = is_fill;
        goto done;
    }
    /* The key's lock is held here already: replaced without taking it again (a memory
     * store's lock is taken again by its holder freely). */
    const zc_key_locks held = ZC_KEY_LOCKS_NONE;
    size_t len = 0;
    errno = 0;
    if (is_fill)
        st = zc_object_replace(&b->root, b->mem, &held, path, NULL, 0);
    else if ((st = zc_chain_encode(&b->chain, chunk, n, encoded, cap, &len)) == ZC_OK)
        st = zc_object_replace(&b->root, b->mem, &held, path, encoded, len);
    err = errno;
done:
    if (locked)
        zc_object_unlock(b->mem, locks, path);
    free(stored);
    free(chunk);
    free(encoded);
    if (st != ZC_OK)
        fail(b, t, st, st == ZC_ERR_IO || st == ZC_ERR_LOCK ? err : 0);
    return st;
}
