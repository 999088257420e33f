/* Array handles: region reads and writes on the calling thread; see zc_array.h. */
#define _GNU_SOURCE
#include "jobs/zc_array.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/zc_copy.h"
#include "jobs/zc_indexing.h"
#include "files/zc_key_lock.h"
#include "os/zc_os.h"
#include "zc_status.h"
#include "files/zc_stream.h"

struct zc_array {
    int refs;
    int closed;
    int read_only;
    int sharded;
    int dtype;  /* a zc_array_dtype_code */
    size_t head_len;
    zc_batch chunks;     /* unsharded: the chunk batch template */
    zc_shard_io shards;  /* sharded: the shard batch template */
    unsigned char *fill;
    int64_t *write_order;
    zc_chunk_cache *cache;  /* NULL: none */
    zc_chunk_cache *index_cache;  /* sharded with a cache: checked shard indexes (NULL: none) */
};

/* ---- handles ------------------------------------------------------------------------------ */

zc_array *zc_array_new(const zc_batch *tmpl, const zc_shard_io *shards, const int64_t *write_order,
                       size_t head_len, int read_only, size_t cache_bytes, int dtype)
{
    const size_t itemsize = shards ? shards->chain.itemsize : tmpl->chain.itemsize;
    const int ndim = shards ? shards->ndim : tmpl->ndim;
    if (itemsize == 0 || ndim < (shards ? 1 : 0) || ndim > ZC_MAX_NDIM)
        return NULL;
    zc_array *a = (zc_array *)calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    int64_t ninner = 1; /* inner chunks per shard */
    a->refs = 1;
    a->read_only = read_only;
    a->dtype = dtype;
    a->head_len = head_len;
    a->fill = (unsigned char *)malloc(itemsize);
    if (a->fill == NULL)
        goto failed;
    if (shards) {
        a->sharded = 1;
        a->shards = *shards;
        memcpy(a->fill, shards->fill, itemsize);
        a->shards.fill = a->fill;
        a->shards.pieces = NULL;
        a->shards.data = NULL;
        for (int d = 0; d < ndim; d++) {
            const int64_t C = shards->chunk_shape[d], S = shards->shard_shape[d];
            if (C <= 0 || S <= 0 || S % C || shards->array_shape[d] < 0 || S / C > INT64_MAX / ninner)
                goto failed;
            ninner *= S / C;
        }
        if (write_order) {
            if ((uint64_t)ninner > SIZE_MAX / sizeof(int64_t) ||
                (a->write_order = (int64_t *)malloc((size_t)ninner * sizeof(int64_t))) == NULL)
                goto failed;
            memcpy(a->write_order, write_order, (size_t)ninner * sizeof(int64_t));
        }
        a->shards.write_order = a->write_order;
    } else {
        a->chunks = *tmpl;
        memcpy(a->fill, tmpl->fill, itemsize);
        a->chunks.fill = a->fill;
        a->chunks.pieces = NULL;
        a->chunks.data = NULL;
        a->chunks.deferred = NULL;
        a->chunks.segments = NULL;
        for (int d = 0; d < ndim; d++)
            if (tmpl->chunk_shape[d] <= 0 || tmpl->array_shape[d] < 0)
                goto failed;
    }
    if (cache_bytes) {
        const int64_t *C = shards ? shards->chunk_shape : tmpl->chunk_shape;
        size_t chunk_bytes = itemsize;
        for (int d = 0; d < ndim; d++) {
            if ((uint64_t)C[d] > SIZE_MAX / chunk_bytes)
                goto failed;
            chunk_bytes *= (size_t)C[d];
        }
        if ((a->cache = zc_chunk_cache_new(cache_bytes, chunk_bytes, ndim + 1)) == NULL)
            goto failed;
        /* Shard indexes take up to an eighth more, so that reads served from the cache need
         * not read them: none when that holds no index. */
        if (shards && (uint64_t)ninner <= cache_bytes / 8 / 16 &&
            (a->index_cache = zc_chunk_cache_new(cache_bytes / 8, 16 * (size_t)ninner, ndim)) == NULL)
            goto failed;
    }
    /* A confined root's descriptor of its own: the handle may outlive the store. */
    zc_root *root = a->sharded ? &a->shards.root : &a->chunks.root;
    if (root->confined && (root->fd = zc_os_dup_private(root->fd)) < 0)
        goto failed;
    if (a->sharded ? a->shards.mem : a->chunks.mem)
        zc_memstore_retain(a->sharded ? a->shards.mem : a->chunks.mem);
    return a;
failed:
    zc_chunk_cache_free(a->cache);
    zc_chunk_cache_free(a->index_cache);
    free(a->fill);
    free(a->write_order);
    free(a);
    return NULL;
}

void zc_array_cache_stats(zc_array *a, zc_chunk_cache_stats *out)
{
    if (a != NULL && out != NULL)
        zc_chunk_cache_get_stats(a->cache, out);
}

/* The calls of the table check their pointers: a NULL handle or output gets the failure
 * value that array_api.h gives each (nothing written), never a crash. */
static void array_retain(zc_array *a)
{
    if (a != NULL)
        zc_atomic_add_int(&a->refs, 1, ZC_RELAXED);
}

static void array_release(zc_array *a)
{
    if (a == NULL || zc_atomic_add_int(&a->refs, -1, ZC_ACQ_REL) != 0)
        return;
    zc_fs_root_close(a->sharded ? &a->shards.root : &a->chunks.root);
    zc_chunk_cache_free(a->cache);
    zc_chunk_cache_free(a->index_cache);
    zc_memstore_release(a->sharded ? a->shards.mem : a->chunks.mem);
    free(a->fill);
    free(a->write_order);
    free(a);
}

void zc_array_close(zc_array *a)
{
    if (a != NULL)
        zc_atomic_store_int(&a->closed, 1, ZC_RELEASE);
}

static int array_is_closed(const zc_array *a)
{
    return a == NULL ? 1 : zc_atomic_load_int(&a->closed, ZC_ACQUIRE);
}

static int array_ndim(const zc_array *a)
{
    if (a == NULL)
        return -1;
    return a->sharded ? a->shards.ndim : a->chunks.ndim;
}

static const int64_t *array_shape_of(const zc_array *a)
{
    return a->sharded ? a->shards.array_shape : a->chunks.array_shape;
}

/* The stored objects' shape: shards when sharded, else chunks. */
static const int64_t *block_shape_of(const zc_array *a)
{
    return a->sharded ? a->shards.shard_shape : a->chunks.chunk_shape;
}

static const int64_t *chunk_shape_of(const zc_array *a)
{
    return a->sharded ? a->shards.chunk_shape : a->chunks.chunk_shape;
}

static size_t array_itemsize(const zc_array *a)
{
    if (a == NULL)
        return 0;
    return a->sharded ? a->shards.chain.itemsize : a->chunks.chain.itemsize;
}

static int array_dtype(const zc_array *a)
{
    return a == NULL ? ZC_ARRAY_DTYPE_OTHER : a->dtype;
}

static void array_shape(const zc_array *a, int64_t *out)
{
    if (a != NULL && out != NULL)
        memcpy(out, array_shape_of(a), (size_t)array_ndim(a) * sizeof(int64_t));
}

static void array_chunk_shape(const zc_array *a, int64_t *out)
{
    if (a != NULL && out != NULL)
        memcpy(out, chunk_shape_of(a), (size_t)array_ndim(a) * sizeof(int64_t));
}

static int array_shard_shape(const zc_array *a, int64_t *out)
{
    if (a == NULL || out == NULL)
        return -1;
    if (!a->sharded)
        return 0;
    memcpy(out, a->shards.shard_shape, (size_t)array_ndim(a) * sizeof(int64_t));
    return 1;
}

static void array_fill_value(const zc_array *a, void *out)
{
    if (a != NULL && out != NULL)
        memcpy(out, a->fill, array_itemsize(a));
}

/* ---- errors ------------------------------------------------------------------------------- */

static int set_error(zc_array_error *err, int status, int sys_errno, const char *fmt, ...)
{
    if (err != NULL) {
        err->status = status;
        err->sys_errno = sys_errno;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* The store key of `path` (a path below the store root), for messages. */
static const char *store_key(const zc_array *a, const char *path)
{
    return strlen(path) > a->head_len ? path + a->head_len : path;
}

/* The error of a failed lock of `key` in the lock file of `lock_dir` (below `root`), which
 * it names: one the file system refuses, or I/O. */
static int lock_error(zc_array_error *err, const zc_root *root, const char *lock_dir,
                      const char *key, int e)
{
    char file[ZC_KEY_LOCK_PATH_MAX];
    zc_key_locks_file(root, lock_dir, file, sizeof file);
    if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS)
        return set_error(err, ZC_ARRAY_ERR_LOCK, e,
                         "chunk '%s': cannot lock it: the file system of '%s' does not support "
                         "POSIX locks (%s)", key, file, strerror(e));
    return set_error(err, ZC_ARRAY_ERR_IO, e, "chunk '%s': cannot lock it in '%s': %s", key, file,
                     strerror(e));
}

/* The error of kernel status `st` on `key` (`where`: "" or "inner chunk (i, j): "), whose
 * lock is in the lock file of `lock_dir`. */
static int status_error(zc_array_error *err, int st, int e, const char *key, const char *where,
                        const zc_root *root, const char *lock_dir)
{
    switch (st) {
    case ZC_ERR_IO:
        return set_error(err, ZC_ARRAY_ERR_IO, e, "chunk '%s': %s", key, strerror(e));
    case ZC_ERR_LOCK:
        return lock_error(err, root, lock_dir, key, e);
    case ZC_ERR_OUTSIDE:
        return set_error(err, ZC_ARRAY_ERR_OUTSIDE, 0,
                         "key '%s' of the confined store leads outside the store's root", key);
    case ZC_ERR_CHECKSUM:
        return set_error(err, ZC_ARRAY_ERR_CHECKSUM, 0, "chunk '%s': %scrc32c checksum mismatch",
                         key, where);
    case ZC_ERR_NOMEM:
        return set_error(err, ZC_ARRAY_ERR_NOMEM, 0, "chunk '%s': %sout of memory", key, where);
    case ZC_ERR_CORRUPT:
    case ZC_ERR_SIZE:
        return set_error(err, ZC_ARRAY_ERR_DECODE, 0,
                         "chunk '%s': %sdata is truncated, oversized or corrupt", key, where);
    case ZC_ERR_TOO_LARGE: /* (ZC_ARRAY_ERR_DECODE: the published statuses stay as they are) */
        return set_error(err, ZC_ARRAY_ERR_DECODE, 0, "chunk '%s': %s" ZC_TOO_LARGE_TEXT, key,
                         where);
    default:
        return set_error(err, ZC_ARRAY_ERR_DECODE, 0, "chunk '%s': %sfailed with status %d", key,
                         where, st);
    }
}

static int batch_error(const zc_array *a, const zc_batch *b, zc_array_error *err)
{
    char path[ZC_BATCH_PATH_MAX] = "?";
    if (b->failed_task >= 0)
        zc_batch_task_key(b, b->failed_task, path, sizeof path);
    return status_error(err, b->status, b->sys_errno, store_key(a, path), "", &b->root,
                        b->lock_dir);
}

/* "(i, j, k)" of C-order inner chunk `i` of a shard's grid. */
static void inner_coords(const zc_shard_io *io, int64_t i, char *buf, size_t cap)
{
    int64_t c[ZC_MAX_NDIM];
    for (int d = io->ndim - 1; d >= 0; d--) {
        c[d] = i % io->grid[d];
        i /= io->grid[d];
    }
    size_t len = 0;
    for (int d = 0; d < io->ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? ", " : "(", (long long)c[d]);
    if (len < cap)
        snprintf(buf + len, cap - len, io->ndim == 1 ? ",)" : ")");
}

static int shard_error(const zc_array *a, const zc_shard_io *io, zc_array_error *err)
{
    char path[ZC_SHARD_IO_PATH_MAX] = "?", inner[256] = "", where[300] = "";
    if (io->failed_slot >= 0)
        zc_shard_io_slot_key(io, io->failed_slot, path, sizeof path);
    const char *key = store_key(a, path);
    if (io->failed_inner >= 0) {
        inner_coords(io, io->failed_inner, inner, sizeof inner);
        snprintf(where, sizeof where, "inner chunk %s: ", inner);
    }
    const int st = io->status;
    const unsigned long long off = io->failed_entry[0], len = io->failed_entry[1];
    switch (io->index_problem) {
    case ZC_SHARD_INDEX_SHORT:
        return set_error(err, ZC_ARRAY_ERR_SHARD_INDEX, 0,
                         "chunk '%s': shard is %llu bytes, shorter than its %lld-byte index", key,
                         (unsigned long long)io->failed_size,
                         (long long)(16 * io->ninner + 4 * io->index_crc32c));
    case ZC_SHARD_INDEX_CHECKSUM:
        return set_error(err, ZC_ARRAY_ERR_CHECKSUM, 0,
                         "chunk '%s': shard index: crc32c checksum mismatch", key);
    case ZC_SHARD_INDEX_ENTRY:
    case ZC_SHARD_INDEX_IN_INDEX:
        return set_error(err, ZC_ARRAY_ERR_SHARD_INDEX, 0,
                         "chunk '%s': shard index entry of inner chunk %s (offset %llu, nbytes "
                         "%llu): %s", key, inner, off, len,
                         io->index_problem == ZC_SHARD_INDEX_IN_INDEX
                             ? "overlaps the index at the shard's start"
                         : st == ZC_ERR_CORRUPT ? "only one of offset/nbytes marks the chunk empty"
                         : st == ZC_ERR_SIZE    ? "reaches past the end of the shard"
                         : st == ZC_ERR_OVERLAP ? "overlaps another chunk"
                                                : "invalid");
    default:
        return status_error(err, st, io->sys_errno, key, where, &io->root, io->lock_dir);
    }
}

/* ---- regions ------------------------------------------------------------------------------ */

/* A region's plan: per axis, pieces over the grid of stored objects (as zc_batch takes them). */
typedef struct {
    zc_piece *pieces;
    int64_t piece_offset[ZC_MAX_NDIM], npieces[ZC_MAX_NDIM];
    ptrdiff_t strides[ZC_MAX_NDIM];
    int64_t nitems;
    size_t nbytes;
} region_plan;

/* Check the region against the array and lay it out as pieces over the grid of stored
 * objects; `strides` NULL: C-contiguous. ZC_ARRAY_OK (nitems 0: nothing to do), or an error. */
static int plan_region(const zc_array *a, const int64_t *start, const int64_t *shape,
                       const int64_t *step, const ptrdiff_t *strides, region_plan *plan,
                       zc_array_error *err)
{
    const int ndim = array_ndim(a);
    const int64_t *A = array_shape_of(a), *B = block_shape_of(a);
    const size_t itemsize = array_itemsize(a);
    plan->pieces = NULL;
    plan->nitems = 1;
    if (ndim > 0 && (start == NULL || shape == NULL))
        return set_error(err, ZC_ARRAY_ERR_ARGUMENT, 0, "start and shape must not be NULL");
    int64_t total = 0;
    for (int d = 0; d < ndim; d++) {
        const int64_t s = start[d], n = shape[d], k = step ? step[d] : 1;
        if (k < 1)
            return set_error(err, ZC_ARRAY_ERR_SELECTION, 0,
                             "axis %d: step %lld is not positive", d, (long long)k);
        if (s < 0 || n < 0 || (n > 0 && (s >= A[d] || (n - 1) > (A[d] - 1 - s) / k)))
            return set_error(err, ZC_ARRAY_ERR_SELECTION, 0,
                             "axis %d: region from %lld, %lld items by %lld, is outside the array "
                             "of length %lld", d, (long long)s, (long long)n, (long long)k,
                             (long long)A[d]);
        const int64_t blocks = A[d] / B[d] + (A[d] % B[d] != 0);
        total += n < blocks ? n : blocks;
        if (n == 0)
            plan->nitems = 0;
    }
    if (plan->nitems == 0)
        return ZC_ARRAY_OK;
    /* C-contiguous strides unless given; the bytes the region spans in that layout. */
    size_t bytes = itemsize;
    for (int d = ndim - 1; d >= 0; d--) {
        plan->strides[d] = strides ? strides[d] : (ptrdiff_t)bytes;
        if ((uint64_t)shape[d] > SIZE_MAX / bytes)
            return set_error(err, ZC_ARRAY_ERR_SELECTION, 0, "region too large");
        bytes *= (size_t)shape[d];
    }
    plan->nbytes = bytes;
    /* zc_slice_chunks' columns, then the pieces. */
    const size_t per = 4 * sizeof(int64_t) + 1;
    if ((uint64_t)total > SIZE_MAX / (per + sizeof(zc_piece)))
        return set_error(err, ZC_ARRAY_ERR_NOMEM, 0, "region too large");
    unsigned char *cols = (unsigned char *)malloc((size_t)(total ? total : 1) * per);
    plan->pieces = (zc_piece *)malloc((size_t)(total ? total : 1) * sizeof(zc_piece));
    if (cols == NULL || plan->pieces == NULL) {
        free(cols);
        free(plan->pieces);
        plan->pieces = NULL;
        return set_error(err, ZC_ARRAY_ERR_NOMEM, 0, "out of memory");
    }
    int64_t k = 0;
    for (int d = 0; d < ndim; d++) {
        const int64_t n = shape[d], most = total;
        int64_t *chunk = (int64_t *)cols, *first = chunk + most, *count = first + most,
                *out_first = count + most;
        uint8_t *complete = (uint8_t *)(out_first + most);
        int64_t m = zc_slice_chunks(start[d], step ? step[d] : 1, n, B[d], A[d], chunk, first,
                                    count, out_first, complete);
        plan->piece_offset[d] = k;
        plan->npieces[d] = m;
        for (int64_t i = 0; i < m; i++, k++) {
            zc_piece *p = &plan->pieces[k];
            p->chunk_index = chunk[i];
            p->chunk_start = first[i];
            p->chunk_step = step ? step[d] : 1;
            p->count = count[i];
            p->out_start = out_first[i];
            p->out_step = 1;
        }
    }
    free(cols);
    return ZC_ARRAY_OK;
}

/* A call may go ahead: the handle is open, and the arguments are there. */
static int check_call(const zc_array *a, const void *data, int writing, zc_array_error *err)
{
    if (a == NULL || data == NULL)
        return set_error(err, ZC_ARRAY_ERR_ARGUMENT, 0, "the handle and buffer must not be NULL");
    if (array_is_closed(a))
        return set_error(err, ZC_ARRAY_ERR_CLOSED, 0, "the array handle is closed");
    if (writing && a->read_only)
        return set_error(err, ZC_ARRAY_ERR_READ_ONLY, 0, "the array is read-only");
    return ZC_ARRAY_OK;
}

static int run_chunks(zc_array *a, region_plan *plan, char *data, int writing, zc_array_error *err)
{
    zc_batch b = a->chunks;
    b.pieces = plan->pieces;
    memcpy(b.piece_offset, plan->piece_offset, sizeof b.piece_offset);
    memcpy(b.npieces, plan->npieces, sizeof b.npieces);
    memcpy(b.data_strides, plan->strides, sizeof b.data_strides);
    b.data = data;
    b.stream_out = !writing && plan->nbytes >= ZC_STREAM_OUT_MIN;
    b.cache = writing ? NULL : a->cache;
    if (zc_batch_prepare(&b) != ZC_OK)
        return set_error(err, ZC_ARRAY_ERR_ARGUMENT, 0, "invalid region plan");
    if (!writing) {
        zc_batch_read_worker(&b);
        return b.failed ? batch_error(a, &b, err) : ZC_ARRAY_OK;
    }
    if ((b.deferred = (unsigned char *)calloc((size_t)(b.ntasks ? b.ntasks : 1), 1)) == NULL)
        return set_error(err, ZC_ARRAY_ERR_NOMEM, 0, "out of memory");
    zc_batch_write_worker(&b);
    /* Chunks the region covers only in part: read-modify-written here, under their lock. */
    zc_key_locks locks = ZC_KEY_LOCKS_NONE;
    for (int64_t t = 0; !b.failed && t < b.ntasks; t++)
        if (b.deferred[t])
            zc_batch_rewrite_task(&b, t, &locks);
    zc_key_locks_close(&locks);
    free(b.deferred);
    zc_batch_free(&b);
    return b.failed ? batch_error(a, &b, err) : ZC_ARRAY_OK;
}

static int run_shards(zc_array *a, region_plan *plan, char *data, int writing, zc_array_error *err)
{
    zc_shard_io io = a->shards;
    io.pieces = plan->pieces;
    memcpy(io.piece_offset, plan->piece_offset, sizeof io.piece_offset);
    memcpy(io.npieces, plan->npieces, sizeof io.npieces);
    memcpy(io.data_strides, plan->strides, sizeof io.data_strides);
    io.data = data;
    io.stream_out = !writing && plan->nbytes >= ZC_STREAM_OUT_MIN;
    io.writing = writing;
    io.cache = writing ? NULL : a->cache;
    io.index_cache = writing ? NULL : a->index_cache;
    int st = zc_shard_io_prepare(&io);
    if (st != ZC_OK) {
        zc_shard_io_free(&io);
        return st == ZC_ERR_NOMEM ? set_error(err, ZC_ARRAY_ERR_NOMEM, 0, "out of memory")
                                  : set_error(err, ZC_ARRAY_ERR_ARGUMENT, 0,
                                              "invalid region plan (status %d)", st);
    }
    if (!writing) {
        zc_shard_io_read_worker(&io);
    } else {
        zc_shard_io_write_worker(&io);
        /* Shards the region covers only in part: read-modify-written here, under their lock. */
        zc_key_locks locks = ZC_KEY_LOCKS_NONE;
        for (int64_t s = 0; !io.failed && s < io.nslots; s++)
            if (io.deferred[s])
                zc_shard_io_rewrite_slot(&io, s, &locks);
        zc_key_locks_close(&locks);
    }
    zc_shard_io_close_files(&io);
    st = io.failed ? shard_error(a, &io, err) : ZC_ARRAY_OK;
    zc_shard_io_free(&io);
    return st;
}

static int region_io(zc_array *a, const int64_t *start, const int64_t *shape, const int64_t *step,
                     char *data, const ptrdiff_t *strides, int writing, zc_array_error *err)
{
    int st = check_call(a, data, writing, err);
    if (st != ZC_ARRAY_OK)
        return st;
    region_plan plan;
    if ((st = plan_region(a, start, shape, step, strides, &plan, err)) != ZC_ARRAY_OK ||
        plan.nitems == 0)
        return st;
    st = a->sharded ? run_shards(a, &plan, data, writing, err)
                    : run_chunks(a, &plan, data, writing, err);
    free(plan.pieces);
    return st;
}

static int array_read(zc_array *a, const int64_t *start, const int64_t *shape,
                      const int64_t *step, void *out, const ptrdiff_t *out_strides,
                      zc_array_error *err)
{
    return region_io(a, start, shape, step, (char *)out, out_strides, 0, err);
}

static int array_write(zc_array *a, const int64_t *start, const int64_t *shape,
                       const int64_t *step, const void *in, const ptrdiff_t *in_strides,
                       zc_array_error *err)
{
    /* Writes only read from `in`. */
    return region_io(a, start, shape, step, (char *)in, in_strides, 1, err);
}

static int array_read_chunk(zc_array *a, const int64_t *coords, void *out, zc_array_error *err)
{
    int st = check_call(a, out, 0, err);
    if (st != ZC_ARRAY_OK)
        return st;
    const int ndim = array_ndim(a);
    const int64_t *A = array_shape_of(a), *C = chunk_shape_of(a);
    const size_t itemsize = array_itemsize(a);
    int64_t start[ZC_MAX_NDIM], shape[ZC_MAX_NDIM];
    ptrdiff_t full[ZC_MAX_NDIM], strides[ZC_MAX_NDIM];
    static const ptrdiff_t zero[ZC_MAX_NDIM];
    if (ndim > 0 && coords == NULL)
        return set_error(err, ZC_ARRAY_ERR_ARGUMENT, 0, "coords must not be NULL");
    ptrdiff_t stride = (ptrdiff_t)itemsize;
    for (int d = ndim - 1; d >= 0; d--) {
        const int64_t grid = A[d] / C[d] + (A[d] % C[d] != 0);
        if (coords[d] < 0 || coords[d] >= grid)
            return set_error(err, ZC_ARRAY_ERR_SELECTION, 0,
                             "axis %d: chunk %lld is outside the grid of %lld chunks", d,
                             (long long)coords[d], (long long)grid);
        start[d] = coords[d] * C[d];
        shape[d] = A[d] - start[d] < C[d] ? A[d] - start[d] : C[d];
        full[d] = (ptrdiff_t)C[d];
        strides[d] = stride;
        stride *= (ptrdiff_t)C[d];
    }
    /* Past the array's end the chunk holds the fill value. */
    if ((st = zc_copy_nd(ndim, full, itemsize, a->fill, zero, out, strides)) != ZC_OK)
        return set_error(err, ZC_ARRAY_ERR_ARGUMENT, 0, "bad chunk geometry (status %d)", st);
    return array_read(a, start, shape, NULL, out, strides, err);
}

static const zc_array_api table = {
    .version = ZC_ARRAY_API_VERSION,
    .size = sizeof(zc_array_api),
    .retain = array_retain,
    .release = array_release,
    .is_closed = array_is_closed,
    .ndim = array_ndim,
    .shape = array_shape,
    .chunk_shape = array_chunk_shape,
    .shard_shape = array_shard_shape,
    .itemsize = array_itemsize,
    .fill_value = array_fill_value,
    .read = array_read,
    .write = array_write,
    .read_chunk = array_read_chunk,
    .dtype = array_dtype,
};

const zc_array_api *zc_array_api_table(void)
{
    return &table;
}
