/* Sharded reads and writes on a directory store; see zc_shard_io.h. */
#define _GNU_SOURCE
#include "jobs/zc_shard_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/zc_chunk_io.h"
#include "jobs/zc_copy.h"
#include "codecs/zc_crc32c.h"
#include "jobs/zc_fill.h"
#include "files/zc_key_lock.h"
#include "os/zc_os.h"
#include "jobs/zc_shard_batch.h"
#include "jobs/zc_shard_index.h"
#include "zc_status.h"

#define SLOT_IDLE 0
#define SLOT_LOADING 1
#define SLOT_READY 2

struct zc_shard_slot {
    int state;          /* reads: SLOT_* */
    zc_object obj;      /* reads: the open shard; fd -1 and no blob when not stored, closed, or
                         * not needed (every inner chunk pinned) */
    int64_t remaining;  /* tasks not done yet: the last one closes the shard / writes it */
    const uint64_t *entries;  /* reads: the shard's validated index, 2 per inner chunk */
    zc_chunk_cache_entry *index_pin;  /* entries' cache entry (else they are the slot's own) */
    int pinned;                /* the tasks' cached inner chunks are pinned in io->pins */
    zc_chunk_version version;  /* reads through a cache: the shard's identity */
    int asked_whole;           /* reads: its whole file was asked for ahead (prefetch_ahead) */
    uint64_t asked_through;    /* reads: io->prefetch_total once prefetch_ahead passed it */
};

/* A thread that needs a slot another thread is loading sleeps on `loaded` until the load
 * ends: reading an index from a network file system can take milliseconds. */
struct zc_slot_waits {
    zc_mutex lock;
    zc_cond loaded;
};

/* ---- setup -------------------------------------------------------------------------------- */

/* The axes' shard piece numbers of slot `s` (C order over the piece counts). */
static void slot_runs(const zc_shard_io *io, int64_t s, int64_t *r)
{
    for (int d = io->ndim - 1; d >= 0; d--) {
        r[d] = s % io->npieces[d];
        s /= io->npieces[d];
    }
}

static int64_t run_len(const zc_shard_io *io, int d, int64_t r)
{
    const int64_t *run = io->run + io->run_offset[d];
    return run[r + 1] - run[r];
}

static const zc_piece *shard_piece(const zc_shard_io *io, int d, int64_t r)
{
    return &io->pieces[io->piece_offset[d] + r];
}

/* A listed position: its inner chunk and its place in its piece. */
typedef struct {
    int64_t chunk, at;
} listed_entry;

static int by_chunk(const void *a, const void *b)
{
    const listed_entry *x = (const listed_entry *)a, *y = (const listed_entry *)b;
    if (x->chunk != y->chunk)
        return x->chunk < y->chunk ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Make listed inner piece `q` a strided one when its positions and their output positions
 * both ascend evenly (one position, as when a sample is an inner chunk, always does): such
 * a chunk decodes straight into the output (zc_chunk_read's stream) rather than through a
 * gather. */
static void as_strided(const zc_shard_io *io, zc_piece *q)
{
    const int64_t *at = io->inner_index + q->chunk_start, *to = io->inner_out + q->chunk_start;
    const int64_t step = q->count > 1 ? at[1] - at[0] : 1;
    const int64_t out_step = q->count > 1 ? to[1] - to[0] : 1;
    if (step < 1 || out_step < 1)
        return;
    for (int64_t i = 2; i < q->count; i++)
        if (at[i] - at[i - 1] != step || to[i] - to[i - 1] != out_step)
            return;
    *q = (zc_piece){.chunk_index = q->chunk_index, .chunk_start = at[0], .chunk_step = step,
                    .count = q->count, .out_start = to[0], .out_step = out_step};
}

/* Split listed shard piece `p` of axis d into one listed piece per inner chunk it touches:
 * its positions grouped by inner chunk (their order kept within each), written to
 * inner_index (positions in the inner chunk) and inner_out (their output positions) at the
 * piece's place, so that each inner chunk is decoded once. `order` has room for the piece. */
static int64_t split_listed(zc_shard_io *io, int d, const zc_piece *p, zc_piece *out,
                            listed_entry *order)
{
    const int64_t C = io->chunk_shape[d], G = io->grid[d], first = p->chunk_start;
    const int64_t *at = io->listing.index + first, *to = io->listing.out_index + first;
    int sorted = 1;
    for (int64_t i = 0; i < p->count; i++) {
        order[i] = (listed_entry){.chunk = at[i] / C, .at = i};
        sorted &= i == 0 || order[i].chunk >= order[i - 1].chunk;
    }
    if (!sorted)
        qsort(order, (size_t)p->count, sizeof *order, by_chunk);
    int64_t k = 0;
    for (int64_t i = 0; i < p->count; i++) {
        const listed_entry e = order[i];
        io->inner_index[first + i] = at[e.at] - e.chunk * C;
        io->inner_out[first + i] = to[e.at];
        if (i && e.chunk == order[i - 1].chunk) {
            out[k - 1].count++;
            continue;
        }
        if (k)
            as_strided(io, &out[k - 1]);
        out[k++] = (zc_piece){.chunk_index = p->chunk_index * G + e.chunk,
                              .chunk_start = first + i, .chunk_step = 0, .count = 1,
                              .out_start = 0, .out_step = 1};
    }
    if (k)
        as_strided(io, &out[k - 1]);
    return k;
}

/* Split shard piece `p` of axis d at inner chunk boundaries into `out`; returns the count. */
static int64_t split_piece(zc_shard_io *io, int d, const zc_piece *p, zc_piece *out,
                           listed_entry *order)
{
    const int64_t C = io->chunk_shape[d], G = io->grid[d];
    int64_t k = 0;
    if (p->chunk_step == 0)
        return split_listed(io, d, p, out, order);
    for (int64_t i = 0; i < p->count;) {
        int64_t pos = p->chunk_start + i * p->chunk_step, j = pos / C;
        /* The first element past inner chunk j, or the piece's end (a ceiling division
         * that cannot overflow on a shard axis near 2**63 long). */
        int64_t past = (j + 1) * C - p->chunk_start;
        int64_t next = past / p->chunk_step + (past % p->chunk_step != 0);
        if (next > p->count)
            next = p->count;
        zc_piece q = {.chunk_index = p->chunk_index * G + j, .chunk_start = pos - j * C,
                      .chunk_step = p->chunk_step, .count = next - i,
                      .out_start = p->out_start + i * p->out_step, .out_step = p->out_step};
        out[k++] = q;
        i = next;
    }
    return k;
}

/* Does shard piece `p` of axis d cover the shard's in-bounds extent? */
static int piece_complete(const zc_shard_io *io, int d, const zc_piece *p)
{
    int64_t lo = p->chunk_index * io->shard_shape[d];
    int64_t extent = io->array_shape[d] - lo < io->shard_shape[d] ? io->array_shape[d] - lo
                                                                  : io->shard_shape[d];
    /* Prepare checked the piece stays inside, so this many items are all of them. */
    return p->count == extent;
}

static void reset_outcome(zc_shard_io *io)
{
    io->next_task = 0;
    io->next_ahead = 0;
    io->prefetching = 0;
    io->prefetch_next = 0;
    io->prefetch_total = 0;
    io->failed = 0;
    io->status = ZC_OK;
    io->sys_errno = 0;
    io->index_problem = ZC_SHARD_INDEX_OK;
    io->failed_slot = -1;
    io->failed_inner = -1;
    io->failed_size = 0;
    io->failed_entry[0] = io->failed_entry[1] = 0;
}

/* No buffers held: what prepare starts from and free leaves behind. */
static void forget_buffers(zc_shard_io *io)
{
    io->inner = NULL;
    io->inner_index = NULL;
    io->inner_out = NULL;
    io->run = NULL;
    io->task_start = NULL;
    io->slots = NULL;
    io->waits = NULL;
    io->deferred = NULL;
    io->pins = NULL;
    io->out = NULL;
    io->out_len = NULL;
    io->nslots = io->ntasks = 0;
}

int zc_shard_io_prepare(zc_shard_io *io)
{
    forget_buffers(io);
    reset_outcome(io);
    if (io->ndim < 1 || io->ndim > ZC_MAX_NDIM || io->chain.itemsize == 0 ||
        io->fill == NULL || io->listing.point_start != NULL || io->listing.nindex < 0)
        return ZC_ERR_PARAM;
    if (io->cache != NULL && io->mem == NULL && !zc_chunk_cache_gains(&io->chain))
        io->cache = io->index_cache = NULL;
    size_t elems = 1;
    int64_t ninner = 1, nslots = 1, ninner_pieces = 0, npieces = 0, longest_listed = 0;
    for (int d = 0; d < io->ndim; d++) {
        const int64_t C = io->chunk_shape[d], S = io->shard_shape[d];
        if (C <= 0 || S <= 0 || S % C || io->array_shape[d] < 0 || io->npieces[d] < 0 ||
            (io->npieces[d] && io->pieces == NULL))
            return ZC_ERR_PARAM;
        if (elems > SIZE_MAX / (size_t)C / io->chain.itemsize)
            return ZC_ERR_SIZE;
        elems *= (size_t)C;
        io->grid[d] = S / C;
        if (ninner > INT64_MAX / io->grid[d])
            return ZC_ERR_SIZE;
        ninner *= io->grid[d];
        for (int64_t k = 0; k < io->npieces[d]; k++) {
            const zc_piece *p = shard_piece(io, d, k);
            if (p->chunk_step == 0) {
                /* Listed (reads): its positions inside its shard and the array. */
                if (io->writing || p->chunk_index < 0 ||
                    p->chunk_index > (io->array_shape[d] - 1) / S ||
                    zc_listed_piece_check(&io->listing, p, S,
                                          io->array_shape[d] - p->chunk_index * S < S
                                              ? io->array_shape[d] - p->chunk_index * S : S) != ZC_OK)
                    return ZC_ERR_PARAM;
                /* One inner piece per inner chunk it touches (split_listed). */
                ninner_pieces += p->count < io->grid[d] ? p->count : io->grid[d];
                if (p->count > longest_listed)
                    longest_listed = p->count;
                continue;
            }
            /* Every piece must stay inside its shard and inside the array. */
            if (p->count < 1 || p->chunk_step < 1 || p->chunk_index < 0 || p->chunk_start < 0 ||
                p->chunk_start >= S || (p->count - 1) > (S - 1 - p->chunk_start) / p->chunk_step ||
                p->chunk_index > (io->array_shape[d] - 1) / S)
                return ZC_ERR_PARAM;
            int64_t last = p->chunk_start + (p->count - 1) * p->chunk_step;
            if (last >= io->array_shape[d] - p->chunk_index * S)
                return ZC_ERR_PARAM;
            /* A piece touches at most min(count, grid) inner chunks. */
            ninner_pieces += p->count < io->grid[d] ? p->count : io->grid[d];
        }
        npieces += io->npieces[d];
        if (io->npieces[d] && nslots > INT64_MAX / io->npieces[d])
            return ZC_ERR_SIZE;
        nslots *= io->npieces[d];
    }
    if ((uint64_t)ninner > (SIZE_MAX - 4) / 16 || (uint64_t)ninner_pieces > SIZE_MAX / sizeof(zc_piece))
        return ZC_ERR_SIZE;
    io->ninner = ninner;
    io->inner = (zc_piece *)malloc((size_t)(ninner_pieces ? ninner_pieces : 1) * sizeof(zc_piece));
    io->run = (int64_t *)malloc((size_t)(npieces + io->ndim) * sizeof(int64_t));
    if (io->inner == NULL || io->run == NULL)
        return ZC_ERR_NOMEM;
    listed_entry *order = NULL;
    if (longest_listed) {
        const size_t n = (size_t)io->listing.nindex;
        io->inner_index = (int64_t *)malloc(n * sizeof(int64_t));
        io->inner_out = (int64_t *)malloc(n * sizeof(int64_t));
        order = (listed_entry *)malloc((size_t)longest_listed * sizeof *order);
        if (io->inner_index == NULL || io->inner_out == NULL || order == NULL) {
            free(order);
            return ZC_ERR_NOMEM;
        }
    }
    int64_t k = 0, ro = 0;
    for (int d = 0; d < io->ndim; d++) {
        io->run_offset[d] = ro;
        for (int64_t r = 0; r < io->npieces[d]; r++) {
            io->run[ro + r] = k;
            k += split_piece(io, d, shard_piece(io, d, r), io->inner + k, order);
        }
        io->run[ro + io->npieces[d]] = k;
        ro += io->npieces[d] + 1;
    }
    free(order);
    if (io->writing && io->write_order) {
        /* The layout order must name every inner chunk once. */
        unsigned char *seen = (unsigned char *)calloc((size_t)ninner, 1);
        if (seen == NULL)
            return ZC_ERR_NOMEM;
        int ok = 1;
        for (int64_t i = 0; i < ninner && ok; i++) {
            int64_t c = io->write_order[i];
            ok = c >= 0 && c < ninner && !seen[c];
            if (ok)
                seen[c] = 1;
        }
        free(seen);
        if (!ok)
            return ZC_ERR_PARAM;
    }
    io->nslots = nslots;
    io->slots = (zc_shard_slot *)calloc((size_t)(nslots ? nslots : 1), sizeof(zc_shard_slot));
    io->task_start = (int64_t *)malloc((size_t)(nslots + 1) * sizeof(int64_t));
    io->deferred = (unsigned char *)calloc((size_t)(nslots ? nslots : 1), 1);
    if (io->slots == NULL || io->task_start == NULL || io->deferred == NULL)
        return ZC_ERR_NOMEM;
    if (!io->writing) {
        if ((io->waits = (zc_slot_waits *)malloc(sizeof *io->waits)) == NULL)
            return ZC_ERR_NOMEM;
        zc_mutex_init(&io->waits->lock);
        zc_cond_init(&io->waits->loaded);
    }
    int64_t tasks = 0, r[ZC_MAX_NDIM];
    for (int64_t s = 0; s < nslots; s++) {
        slot_runs(io, s, r);
        int64_t n = 1;
        for (int d = 0; d < io->ndim; d++) {
            n *= run_len(io, d, r[d]);
            if (io->writing && !piece_complete(io, d, shard_piece(io, d, r[d])))
                io->deferred[s] = 1;
        }
        if (io->deferred[s])
            n = 0; /* partly covered: the caller's read-modify-write */
        io->slots[s].obj.fd = -1;
        io->slots[s].remaining = n;
        io->task_start[s] = tasks;
        tasks += n;
    }
    io->task_start[nslots] = tasks;
    io->ntasks = tasks;
    if (!io->writing && io->cache != NULL &&
        (io->pins = (zc_chunk_cache_entry **)calloc((size_t)(tasks ? tasks : 1),
                                                    sizeof *io->pins)) == NULL)
        return ZC_ERR_NOMEM;
    if (io->writing) {
        io->out = (unsigned char **)calloc((size_t)(tasks ? tasks : 1), sizeof(unsigned char *));
        io->out_len = (size_t *)calloc((size_t)(tasks ? tasks : 1), sizeof(size_t));
        if (io->out == NULL || io->out_len == NULL)
            return ZC_ERR_NOMEM;
    }
    return ZC_OK;
}

/* Drop the slot's index, cached or its own. */
static void drop_index(zc_shard_slot *slot)
{
    if (slot->index_pin != NULL)
        zc_chunk_cache_unpin(slot->index_pin);
    else
        free((void *)slot->entries);
    slot->index_pin = NULL;
    slot->entries = NULL;
}

static void release_slot(zc_shard_slot *slot)
{
    zc_object_close(&slot->obj);
    drop_index(slot);
}

static void unpin_task(zc_shard_io *io, int64_t t)
{
    if (io->pins != NULL && io->pins[t] != NULL) {
        zc_chunk_cache_unpin(io->pins[t]);
        io->pins[t] = NULL;
    }
}

void zc_shard_io_close_files(zc_shard_io *io)
{
    for (int64_t s = 0; io->slots && s < io->nslots; s++)
        release_slot(&io->slots[s]);
    for (int64_t t = 0; io->pins && t < io->ntasks; t++)
        unpin_task(io, t);
}

void zc_shard_io_free(zc_shard_io *io)
{
    zc_shard_io_close_files(io);
    if (io->out)
        for (int64_t t = 0; t < io->ntasks; t++)
            free(io->out[t]);
    free(io->out);
    free(io->out_len);
    free(io->inner);
    free(io->inner_index);
    free(io->inner_out);
    free(io->run);
    free(io->task_start);
    free(io->slots);
    if (io->waits != NULL) {
        zc_cond_destroy(&io->waits->loaded);
        zc_mutex_destroy(&io->waits->lock);
        free(io->waits);
    }
    free(io->deferred);
    free(io->pins);
    forget_buffers(io);
}

int zc_shard_io_slot_coords(const zc_shard_io *io, int64_t s, int64_t *coords)
{
    int64_t r[ZC_MAX_NDIM];
    if (s < 0 || s >= io->nslots)
        return ZC_ERR_PARAM;
    slot_runs(io, s, r);
    for (int d = 0; d < io->ndim; d++)
        coords[d] = shard_piece(io, d, r[d])->chunk_index;
    return ZC_OK;
}

int zc_shard_io_slot_key(const zc_shard_io *io, int64_t s, char *buf, size_t cap)
{
    int64_t coords[ZC_MAX_NDIM];
    int st = zc_shard_io_slot_coords(io, s, coords);
    if (st != ZC_OK)
        return st;
    return zc_key_format(io->key_head, io->sep, io->lead_sep, io->ndim, coords, buf, cap);
}

/* ---- tasks -------------------------------------------------------------------------------- */

static int64_t next_task(zc_shard_io *io)
{
    if (zc_atomic_load_int(&io->failed, ZC_ACQUIRE))
        return -1;
    int64_t t = zc_atomic_fetch_add_i64(&io->next_task, 1, ZC_ACQ_REL);
    return t < io->ntasks ? t : -1;
}

typedef struct {
    int status, err, problem;
    int64_t inner;
    uint64_t size, entry[2];
} failure;

static void fail(zc_shard_io *io, int64_t s, const failure *f)
{
    if (zc_atomic_exchange_int(&io->failed, 1, ZC_ACQ_REL) == 0) {
        io->status = f->status;
        io->sys_errno = f->status == ZC_ERR_IO || f->status == ZC_ERR_LOCK ? f->err : 0;
        io->index_problem = f->problem;
        io->failed_slot = s;
        io->failed_inner = f->inner;
        io->failed_size = f->size;
        io->failed_entry[0] = f->entry[0];
        io->failed_entry[1] = f->entry[1];
    }
}

static void fail_simple(zc_shard_io *io, int64_t s, int64_t inner, int status, int err)
{
    failure f = {.status = status, .err = err, .inner = inner};
    fail(io, s, &f);
}

/* The slot task `t` belongs to (tasks are grouped by slot, slots in order). */
static int64_t task_slot(const zc_shard_io *io, int64_t t)
{
    int64_t lo = 0, hi = io->nslots - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (io->task_start[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* One task's inner chunk and its region in the caller's array. */
typedef struct {
    const zc_piece *p[ZC_MAX_NDIM];  /* inner pieces per axis */
    int64_t lin;                              /* C-order inner chunk in the shard */
    int edge;                                 /* the inner chunk reaches past the array */
    ptrdiff_t shape[ZC_MAX_NDIM];
    char *data;                               /* where the region starts in the caller's array */
    ptrdiff_t data_strides[ZC_MAX_NDIM];
} task_view;

static void task_geometry(const zc_shard_io *io, int64_t t, int64_t s, task_view *v)
{
    int64_t r[ZC_MAX_NDIM];
    slot_runs(io, s, r);
    int64_t l = t - io->task_start[s], stride = 1;
    v->lin = 0;
    v->edge = 0;
    v->data = io->data;
    for (int d = io->ndim - 1; d >= 0; d--) {
        int64_t n = run_len(io, d, r[d]);
        const zc_piece *p = &io->inner[io->run[io->run_offset[d] + r[d]] + l % n];
        l /= n;
        v->p[d] = p;
        v->lin += (p->chunk_index - shard_piece(io, d, r[d])->chunk_index * io->grid[d]) * stride;
        stride *= io->grid[d];
        /* (chunk_index + 1) * chunk_shape could pass INT64_MAX on an axis near 2**63 long. */
        v->edge |= io->chunk_shape[d] > io->array_shape[d] - p->chunk_index * io->chunk_shape[d];
        v->shape[d] = (ptrdiff_t)p->count;
        v->data_strides[d] = io->data_strides[d] * (ptrdiff_t)p->out_step;
        v->data += io->data_strides[d] * (ptrdiff_t)p->out_start;
    }
}

/* The index's bytes: 16 per inner chunk (prepare checked this fits), then the crc32c. */
static void index_size(const zc_shard_io *io, size_t *raw, size_t *total)
{
    *raw = 16 * (size_t)io->ninner;
    *total = *raw + (io->index_crc32c ? 4 : 0);
}

/* ---- reads -------------------------------------------------------------------------------- */

/* Check the index bytes `index` of a shard of `size` bytes (its crc32c, and entries inside
 * the data and not overlapping) into `entries`, 2 per inner chunk; on failure `f` says why. */
static int check_index(const zc_shard_io *io, const unsigned char *index, size_t size,
                       uint64_t *entries, failure *f)
{
    size_t raw, isz;
    index_size(io, &raw, &isz);
    *f = (failure){.status = ZC_OK, .inner = -1};
    if (io->index_crc32c && zc_crc32c(0, index, raw) != zc_load_le32(index + raw)) {
        *f = (failure){.status = ZC_ERR_CHECKSUM, .problem = ZC_SHARD_INDEX_CHECKSUM, .inner = -1};
        return f->status;
    }
    /* Offsets count from the shard's first byte: with the index at the start they are
     * checked against the whole size here and against the index's end below. */
    size_t bad = 0;
    int st = zc_shard_index_unpack(index, raw, (size_t)io->ninner,
                                   io->index_at_start ? size : size - isz, entries, &bad);
    if (st == ZC_ERR_CORRUPT || st == ZC_ERR_SIZE || st == ZC_ERR_OVERLAP) {
        *f = (failure){.status = st, .problem = ZC_SHARD_INDEX_ENTRY, .inner = (int64_t)bad,
                       .entry = {entries[2 * bad], entries[2 * bad + 1]}};
        return st;
    }
    if (st != ZC_OK) {
        f->status = st;
        return st;
    }
    if (io->index_at_start) {
        for (int64_t i = 0; i < io->ninner; i++) {
            uint64_t off = entries[2 * i], len = entries[2 * i + 1];
            if (off != ZC_SHARD_EMPTY && len != 0 && off < isz) {
                *f = (failure){.status = ZC_ERR_OVERLAP, .problem = ZC_SHARD_INDEX_IN_INDEX,
                               .inner = i, .entry = {off, len}};
                return f->status;
            }
        }
    }
    return ZC_OK;
}

/* The failure of a shard of `size` bytes, smaller than its index. */
static failure short_shard(uint64_t size)
{
    return (failure){.status = ZC_ERR_SIZE, .problem = ZC_SHARD_INDEX_SHORT, .inner = -1,
                     .size = size};
}

/* The version of the index of a shard of version `v`. */
static zc_chunk_version index_version(const zc_shard_io *io, const zc_chunk_version *v)
{
    size_t raw, isz;
    index_size(io, &raw, &isz);
    zc_chunk_version iv = *v;
    iv.offset = io->index_at_start || v->size < isz ? 0 : v->size - isz;
    iv.nbytes = isz;
    return iv;
}

/* Take slot `s`'s index from the index cache at the slot's version, of index bytes hashing
 * to `content` (a file's; 0 for a blob); 1 when it was there. */
static int cached_index(zc_shard_io *io, int64_t s, uint64_t content)
{
    zc_shard_slot *slot = &io->slots[s];
    int64_t key[ZC_MAX_NDIM];
    zc_shard_io_slot_coords(io, s, key);
    zc_chunk_version iv = index_version(io, &slot->version);
    iv.content = content;
    if ((slot->index_pin = zc_chunk_cache_find(io->index_cache, key, &iv)) == NULL)
        return 0;
    slot->entries = (const uint64_t *)zc_chunk_cache_data(slot->index_pin);
    return 1;
}

/* The version of inner chunk `lin` of slot `slot`'s shard. */
static zc_chunk_version chunk_version(const zc_shard_slot *slot, int64_t lin)
{
    zc_chunk_version v = slot->version;
    v.offset = slot->entries[2 * lin];
    v.nbytes = slot->entries[2 * lin + 1];
    return v;
}

/* Pin the cached inner chunks that slot `s`'s tasks read, at the slot's version; 1 when every
 * stored one is cached. */
static int pin_chunks(zc_shard_io *io, int64_t s)
{
    zc_shard_slot *slot = &io->slots[s];
    int64_t key[ZC_MAX_NDIM + 1];
    zc_shard_io_slot_coords(io, s, key);
    int all = 1;
    for (int64_t t = io->task_start[s]; t < io->task_start[s + 1]; t++) {
        task_view v;
        task_geometry(io, t, s, &v);
        if (slot->entries[2 * v.lin] == ZC_SHARD_EMPTY)
            continue;
        key[io->ndim] = v.lin;
        const zc_chunk_version cv = chunk_version(slot, v.lin);
        if ((io->pins[t] = zc_chunk_cache_find(io->cache, key, &cv)) == NULL)
            all = 0;
    }
    slot->pinned = 1;
    return all;
}

/* Forget what slot `s` took from the caches at a version the shard no longer has. */
static void forget_cached(zc_shard_io *io, int64_t s)
{
    drop_index(&io->slots[s]);
    for (int64_t t = io->task_start[s]; t < io->task_start[s + 1]; t++)
        unpin_task(io, t);
    io->slots[s].pinned = 0;
}

/* Open slot `s`'s shard and read, check and keep its index; failures are recorded. Through a
 * cache, a blob is not opened when its index and the inner chunks the read needs are cached
 * at the version its key has; a file's index is read and hashed, and taken from the index
 * cache only when cached of those bytes (zc_shard_io.h). */
static int load_shard(zc_shard_io *io, int64_t s, zc_buf *buf)
{
    zc_shard_slot *slot = &io->slots[s];
    char path[ZC_SHARD_IO_PATH_MAX];
    int st = zc_shard_io_slot_key(io, s, path, sizeof path);
    if (st != ZC_OK) {
        fail_simple(io, s, -1, st, 0);
        return st;
    }
    const int pin = io->cache != NULL && io->mem != NULL &&
                    io->task_start[s + 1] - io->task_start[s] <= ZC_SHARD_IO_PIN_MAX;
    if (pin && io->index_cache != NULL &&
        zc_chunk_version_in(io->mem, path, &slot->version) && cached_index(io, s, 0) &&
        pin_chunks(io, s))
        return ZC_OK;
    zc_object o;
    int missing;
    size_t size = 0;
    if ((st = zc_object_open(&io->root, io->mem, path, &o, &size, &missing)) != ZC_OK) {
        forget_cached(io, s);
        fail_simple(io, s, -1, st, errno);
        return st;
    }
    if (missing) {
        forget_cached(io, s);
        return ZC_OK; /* every inner chunk reads as fill */
    }
    if (io->cache != NULL) {
        zc_chunk_version opened = {0}; /* the whole shard: no byte range */
        if (zc_chunk_version_of(&o, &opened) != ZC_OK) {
            forget_cached(io, s);
            fail_simple(io, s, -1, ZC_ERR_IO, errno);
            zc_object_close(&o);
            return ZC_ERR_IO;
        }
        if (slot->index_pin != NULL && zc_chunk_version_same(&opened, &slot->version)) {
            slot->obj = o; /* the shard the cached index and chunks came from */
            return ZC_OK;
        }
        /* Replaced since its key was looked at (or never looked at): read it afresh. */
        forget_cached(io, s);
        slot->version = opened;
        if (o.blob != NULL && io->index_cache != NULL && cached_index(io, s, 0)) {
            slot->obj = o;
            if (pin)
                pin_chunks(io, s);
            return ZC_OK;
        }
    }
    size_t raw, isz;
    index_size(io, &raw, &isz);
    failure f = {.status = ZC_OK, .inner = -1};
    uint64_t *entries = NULL;
    if (size < isz) {
        f = short_shard(size);
        goto failed;
    }
    if (zc_buf_reserve(buf, isz) != ZC_OK) {
        f.status = ZC_ERR_NOMEM;
        goto failed;
    }
    if ((st = zc_object_pread(&o, buf->p, isz, io->index_at_start ? 0 : size - isz)) != ZC_OK) {
        /* A shard that shrank under us is short. */
        f = st == ZC_ERR_SIZE ? short_shard(size)
                              : (failure){.status = st, .err = errno, .inner = -1};
        goto failed;
    }
    uint64_t content = 0;
    if (io->index_cache != NULL && o.blob == NULL) {
        /* A file's bytes can change under the same identity: the index must be of these. */
        content = zc_chunk_cache_content(io->index_cache, buf->p, isz);
        if (cached_index(io, s, content)) {
            slot->obj = o;
            return ZC_OK;
        }
    }
    if ((entries = (uint64_t *)malloc(raw ? raw : 1)) == NULL) {
        f.status = ZC_ERR_NOMEM;
        goto failed;
    }
    if (check_index(io, buf->p, size, entries, &f) != ZC_OK)
        goto failed;
    if (io->index_cache != NULL) {
        int64_t key[ZC_MAX_NDIM];
        zc_shard_io_slot_coords(io, s, key);
        zc_chunk_version iv = index_version(io, &slot->version);
        iv.content = content;
        /* Out of memory only leaves it uncached. */
        (void)zc_chunk_cache_keep(io->index_cache, key, &iv, entries);
    }
    slot->entries = entries;
    slot->obj = o;
    if (pin)
        pin_chunks(io, s);
    return ZC_OK;
failed:
    free(entries);
    zc_object_close(&o);
    fail(io, s, &f);
    return f.status;
}

/* Ask the system to start reading the stored inner chunks slot `s`'s tasks read (those not
 * pinned in the cache), up to ZC_SHARD_IO_PREFETCH_MAX bytes: a cold shard then arrives as
 * one deep queue of reads while the tasks decode, rather than one inner chunk at a time as
 * each task asks (two at once on two threads), waiting on the device between decodes.
 * Runs of chunks stored back to back are asked for together. Nothing for a single task. */
static void prefetch_chunks(const zc_shard_io *io, int64_t s)
{
    const zc_shard_slot *slot = &io->slots[s];
    if (slot->obj.fd < 0 || slot->entries == NULL ||
        io->task_start[s + 1] - io->task_start[s] < 2 ||
        zc_atomic_load_int(&slot->asked_whole, ZC_ACQUIRE))
        return;
    uint64_t lo = 0, hi = 0, budget = ZC_SHARD_IO_PREFETCH_MAX;
    for (int64_t t = io->task_start[s]; t < io->task_start[s + 1] && budget > 0; t++) {
        if (io->pins != NULL && io->pins[t] != NULL)
            continue;
        task_view v;
        task_geometry(io, t, s, &v);
        uint64_t off = slot->entries[2 * v.lin], len = slot->entries[2 * v.lin + 1];
        if (off == ZC_SHARD_EMPTY || len == 0)
            continue;
        if (len > budget)
            len = budget;
        budget -= len;
        if (off == hi && hi > lo) {
            hi += len; /* (load_shard checked every entry lies inside the file) */
            continue;
        }
        zc_object_prefetch(&slot->obj, lo, (size_t)(hi - lo));
        lo = off;
        hi = off + len;
    }
    zc_object_prefetch(&slot->obj, lo, (size_t)(hi - lo));
}

/* Does the read need the whole shard of slot `s` (every axis's piece covers it)? */
static int slot_whole(const zc_shard_io *io, int64_t s)
{
    int64_t r[ZC_MAX_NDIM];
    slot_runs(io, s, r);
    for (int d = 0; d < io->ndim; d++)
        if (!piece_complete(io, d, shard_piece(io, d, r[d])))
            return 0;
    return 1;
}

/* Ask the system to start reading the files of the shards after slot `s` that the read needs
 * whole, in order, while the bytes asked for past slot s stay within ZC_SHARD_IO_PREFETCH_MAX
 * (a shard that does not fit waits for a later call; the first after s is asked for up to
 * that much when it alone is larger). Called once slot s is loaded, so the device works
 * several shards ahead of the decoding and a shard's index is at hand when its first task
 * comes. One thread extends the window at a time: another finding it busy leaves it be. */
static void prefetch_ahead(zc_shard_io *io, int64_t s)
{
    int idle = 0;
    if (io->cache != NULL || io->mem != NULL || !zc_atomic_cas_int(&io->prefetching, &idle, 1))
        return;
    int64_t k = io->prefetch_next;
    for (; k <= s; k++) /* (loaded already or loading: nothing to ask for) */
        io->slots[k].asked_through = io->prefetch_total;
    /* The bytes asked for the slots in (s, k). */
    uint64_t ahead = io->prefetch_total - io->slots[s].asked_through;
    for (; k < io->nslots; k++) {
        zc_shard_slot *slot = &io->slots[k];
        char path[ZC_SHARD_IO_PATH_MAX];
        zc_object o;
        size_t size;
        int missing;
        if (slot_whole(io, k) && zc_shard_io_slot_key(io, k, path, sizeof path) == ZC_OK &&
            zc_object_open(&io->root, NULL, path, &o, &size, &missing) == ZC_OK) {
            /* (the slot's own load reports what is wrong) */
            uint64_t want = missing ? 0 : size;
            if (want > ZC_SHARD_IO_PREFETCH_MAX - ahead) {
                if (ahead > 0) {
                    zc_object_close(&o);
                    break; /* the window is full */
                }
                want = ZC_SHARD_IO_PREFETCH_MAX;
            }
            zc_object_prefetch(&o, 0, (size_t)want);
            zc_object_close(&o);
            ahead += want;
            io->prefetch_total += want;
            zc_atomic_store_int(&slot->asked_whole, !missing && want == size, ZC_RELEASE);
        }
        slot->asked_through = io->prefetch_total;
    }
    io->prefetch_next = k;
    zc_atomic_store_int(&io->prefetching, 0, ZC_RELEASE);
}

/* Wake the threads waiting in slot_ready: the load ended, ready or failed (io->failed). */
static void end_load(zc_shard_io *io)
{
    /* (taking the lock orders this after a waiter's check of the state, made under it) */
    zc_mutex_lock(&io->waits->lock);
    zc_mutex_unlock(&io->waits->lock);
    zc_cond_broadcast(&io->waits->loaded);
}

/* Load slot `s`, which the caller moved from SLOT_IDLE to SLOT_LOADING, and make it ready. */
static int load_slot(zc_shard_io *io, int64_t s, zc_buf *buf)
{
    int st = load_shard(io, s, buf);
    if (st == ZC_OK) {
        prefetch_chunks(io, s); /* (before the others start on the slot's pins) */
        zc_atomic_store_int(&io->slots[s].state, SLOT_READY, ZC_RELEASE);
    }
    end_load(io);
    if (st == ZC_OK)
        prefetch_ahead(io, s);
    return st;
}

/* Make slot `s` ready: load it, or wait while another thread does. */
static int slot_ready(zc_shard_io *io, int64_t s, zc_buf *buf)
{
    zc_shard_slot *slot = &io->slots[s];
    int state = zc_atomic_load_int(&slot->state, ZC_ACQUIRE);
    if (state == SLOT_READY)
        return ZC_OK;
    int expected = SLOT_IDLE;
    if (state == SLOT_IDLE && zc_atomic_cas_int(&slot->state, &expected, SLOT_LOADING))
        return load_slot(io, s, buf);
    /* Another thread reads the index: wait until it is ready or the read failed. */
    int ready;
    zc_mutex_lock(&io->waits->lock);
    while (!(ready = zc_atomic_load_int(&slot->state, ZC_ACQUIRE) == SLOT_READY) &&
           !zc_atomic_load_int(&io->failed, ZC_ACQUIRE))
        zc_cond_wait(&io->waits->loaded, &io->waits->lock);
    zc_mutex_unlock(&io->waits->lock);
    return ready ? ZC_OK : ZC_ERR_PARAM;
}

/* The gather axes of a task with listed pieces into `axes` (their positions in the inner
 * chunk); 0, axes unset, when it has none. */
static int task_gather(const zc_shard_io *io, const task_view *v, zc_gather_axis *axes)
{
    int listed = 0;
    for (int d = 0; d < io->ndim; d++)
        listed |= v->p[d]->chunk_step == 0;
    if (!listed)
        return 0;
    const zc_listing inner = {.index = io->inner_index, .nindex = io->listing.nindex,
                              .out_index = io->inner_out};
    zc_piece_axes(&inner, io->ndim, v->p, axes);
    return 1;
}

int zc_shard_io_reads_ahead(const zc_shard_io *io)
{
    return !io->writing && io->mem == NULL && io->cache == NULL && io->nslots > 1 &&
           io->ntasks <= ZC_SHARD_IO_AHEAD_MAX_TASKS;
}

void zc_shard_io_read_ahead_worker(zc_shard_io *io)
{
    zc_buf index = {0};
    while (!zc_atomic_load_int(&io->failed, ZC_ACQUIRE)) {
        const int64_t s = zc_atomic_fetch_add_i64(&io->next_ahead, 1, ZC_ACQ_REL);
        if (s >= io->nslots)
            break;
        int expected = SLOT_IDLE; /* (a slot a reader is at already is left to it) */
        if (zc_atomic_cas_int(&io->slots[s].state, &expected, SLOT_LOADING) &&
            load_slot(io, s, &index) != ZC_OK)
            break;
    }
    zc_buf_free(&index);
}

void zc_shard_io_read_worker(zc_shard_io *io)
{
    static const ptrdiff_t zero[ZC_MAX_NDIM];
    zc_chunk_reader rd;
    zc_chunk_reader_init(&rd);
    zc_buf index = {0};
    int64_t t;
    while ((t = next_task(io)) >= 0) {
        int64_t s = task_slot(io, t);
        zc_shard_slot *slot = &io->slots[s];
        if (slot_ready(io, s, &index) != ZC_OK)
            break;
        task_view v;
        task_geometry(io, t, s, &v);
        zc_gather_axis axes[ZC_MAX_NDIM];
        const int listed = task_gather(io, &v, axes);
        int st;
        if (slot->entries == NULL || slot->entries[2 * v.lin] == ZC_SHARD_EMPTY) {
            st = listed ? zc_gather_fill(io->ndim, io->chain.itemsize, io->fill, axes, v.data,
                                         v.data_strides)
                        : zc_copy_nd(io->ndim, v.shape, io->chain.itemsize, io->fill, zero,
                                     v.data, v.data_strides);
        } else {
            zc_chunk_sel sel = {.ndim = io->ndim, .shape = io->chunk_shape, .out = v.data,
                                .stream_out = io->stream_out, .gather = listed ? axes : NULL};
            for (int d = 0; d < io->ndim; d++) {
                sel.start[d] = v.p[d]->chunk_start;
                sel.step[d] = v.p[d]->chunk_step;
                sel.count[d] = v.p[d]->count;
                sel.out_strides[d] = v.data_strides[d];
            }
            /* load_shard checked the entry lies inside the file. */
            const uint64_t off = slot->entries[2 * v.lin], len = slot->entries[2 * v.lin + 1];
            errno = 0;
            if (io->cache == NULL) {
                st = zc_chunk_read(&io->chain, &sel, &slot->obj, off, (size_t)len, &rd);
            } else if (io->pins[t] != NULL) {
                st = zc_chunk_sel_copy(&sel, io->chain.itemsize, zc_chunk_cache_data(io->pins[t]));
                unpin_task(io, t);
            } else {
                int64_t key[ZC_MAX_NDIM + 1];
                zc_shard_io_slot_coords(io, s, key);
                key[io->ndim] = v.lin;
                const zc_chunk_version cv = chunk_version(slot, v.lin);
                /* A pinned slot looked every chunk up already: this one is not cached. */
                st = slot->pinned ? zc_chunk_cache_decode(io->cache, key, &cv, &io->chain, &sel,
                                                          &slot->obj, off, (size_t)len, &rd)
                                  : zc_chunk_cache_read(io->cache, key, &cv, &io->chain, &sel,
                                                        &slot->obj, off, (size_t)len, &rd);
            }
        }
        if (st != ZC_OK) {
            fail_simple(io, s, v.lin, st, errno);
            break;
        }
        if (zc_atomic_add_i64(&slot->remaining, -1, ZC_ACQ_REL) == 0)
            release_slot(slot);
    }
    zc_chunk_reader_free(&rd);
    zc_buf_free(&index);
}

/* ---- writes ------------------------------------------------------------------------------- */

/* Per-thread buffers of a write worker, taken on first need. */
typedef struct {
    zc_buf chunk, encoded, index;
    const unsigned char **blob;  /* per inner chunk of a shard: its encoding, NULL for none */
    size_t *blob_len;
    uint64_t *entries;           /* 2 per inner chunk */
} writer;

/* Take the writer's per-shard tables and mark every inner chunk empty. */
static int writer_reset(const zc_shard_io *io, writer *w)
{
    const int64_t n = io->ninner;
    if (w->blob == NULL &&
        (w->blob = (const unsigned char **)malloc((size_t)n * sizeof *w->blob)) == NULL)
        return ZC_ERR_NOMEM;
    if (w->blob_len == NULL && (w->blob_len = (size_t *)malloc((size_t)n * sizeof(size_t))) == NULL)
        return ZC_ERR_NOMEM;
    if (w->entries == NULL && (w->entries = (uint64_t *)malloc((size_t)n * 16)) == NULL)
        return ZC_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) {
        w->blob[i] = NULL;
        w->blob_len[i] = 0;
    }
    return ZC_OK;
}

static void writer_free(writer *w)
{
    zc_buf_free(&w->chunk);
    zc_buf_free(&w->encoded);
    zc_buf_free(&w->index);
    free(w->blob);
    free(w->blob_len);
    free(w->entries);
}

/* Store the shard at `path` holding the inner chunks w->blob: laid out in the write order,
 * with the index; deleted when it holds none. Replaced under the key lock in `locks` (not
 * open: no lock taken). The encoded chunks go to the file as they are, one write each, with no
 * shard-sized copy. */
static int store_shard(const zc_shard_io *io, const char *path, writer *w,
                       const zc_key_locks *locks)
{
    const int64_t n = io->ninner;
    size_t raw, isz;
    index_size(io, &raw, &isz);
    for (int64_t i = 0; i < n; i++)
        w->entries[2 * i] = w->entries[2 * i + 1] = ZC_SHARD_EMPTY;
    /* Offsets in the layout order; the index follows the chunks or precedes them. */
    size_t pos = io->index_at_start ? isz : 0;
    int any = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = io->write_order ? io->write_order[k] : k;
        if (w->blob[i] == NULL)
            continue;
        if (w->blob_len[i] > SIZE_MAX - isz - pos)
            return ZC_ERR_SIZE;
        w->entries[2 * i] = pos;
        w->entries[2 * i + 1] = w->blob_len[i];
        pos += w->blob_len[i];
        any = 1;
    }
    if (!any) /* nothing but fill: no shard */
        return zc_object_replace(&io->root, io->mem, locks, path, NULL, 0);
    if (zc_buf_reserve(&w->index, isz) != ZC_OK)
        return ZC_ERR_NOMEM;
    int st = zc_shard_index_pack(w->entries, (size_t)n, w->index.p, raw);
    if (st != ZC_OK)
        return st;
    if (io->index_crc32c)
        zc_store_le32(w->index.p + raw, zc_crc32c(0, w->index.p, raw));
    zc_object_writer f;
    if ((st = zc_object_writer_open(&f, &io->root, io->mem, path)) != ZC_OK)
        return st;
    if (io->index_at_start && (st = zc_object_writer_write(&f, w->index.p, isz)) != ZC_OK)
        return st;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = io->write_order ? io->write_order[k] : k;
        if (w->blob[i] != NULL &&
            (st = zc_object_writer_write(&f, w->blob[i], w->blob_len[i])) != ZC_OK)
            return st;
    }
    if (!io->index_at_start && (st = zc_object_writer_write(&f, w->index.p, isz)) != ZC_OK)
        return st;
    return zc_object_writer_commit(&f, locks, path);
}

/* Every task of slot `s` is done: store the shard of their encoded chunks. */
static int write_shard(zc_shard_io *io, int64_t s, writer *w, const zc_key_locks *locks)
{
    int st = writer_reset(io, w);
    if (st != ZC_OK)
        return st;
    for (int64_t t = io->task_start[s]; t < io->task_start[s + 1]; t++) {
        task_view v;
        task_geometry(io, t, s, &v);
        w->blob[v.lin] = io->out[t];
        w->blob_len[v.lin] = io->out_len[t];
    }
    char path[ZC_SHARD_IO_PATH_MAX];
    if ((st = zc_shard_io_slot_key(io, s, path, sizeof path)) == ZC_OK)
        st = store_shard(io, path, w, locks);
    for (int64_t t = io->task_start[s]; t < io->task_start[s + 1]; t++) {
        free(io->out[t]);
        io->out[t] = NULL;
    }
    return st;
}

void zc_shard_io_write_worker(zc_shard_io *io)
{
    static const ptrdiff_t zero[1];
    writer w;
    memset(&w, 0, sizeof w);
    size_t n = io->chain.itemsize;
    for (int d = 0; d < io->ndim; d++)
        n *= (size_t)io->chunk_shape[d];
    const ptrdiff_t all[1] = {(ptrdiff_t)(n / io->chain.itemsize)};
    const ptrdiff_t item[1] = {(ptrdiff_t)io->chain.itemsize};
    zc_key_locks locks = ZC_KEY_LOCKS_NONE; /* the lock file, opened on first need */
    int64_t t;
    while ((t = next_task(io)) >= 0) {
        int64_t s = task_slot(io, t);
        task_view v;
        task_geometry(io, t, s, &v);
        int st = zc_buf_reserve(&w.chunk, n);
        /* An inner chunk past the array's end keeps the fill value there. */
        if (st == ZC_OK && v.edge)
            st = zc_copy_nd(1, all, io->chain.itemsize, io->fill, zero, w.chunk.p, item);
        if (st == ZC_OK) {
            /* Whole shards only: every piece starts at 0 by 1, so the region is a corner. */
            ptrdiff_t strides[ZC_MAX_NDIM], cstride = (ptrdiff_t)io->chain.itemsize;
            size_t at = 0;
            for (int d = io->ndim - 1; d >= 0; d--) {
                strides[d] = cstride * (ptrdiff_t)v.p[d]->chunk_step;
                at += (size_t)cstride * (size_t)v.p[d]->chunk_start;
                cstride *= (ptrdiff_t)io->chunk_shape[d];
            }
            st = zc_copy_nd(io->ndim, v.shape, io->chain.itemsize, v.data, v.data_strides,
                            w.chunk.p + at, strides);
        }
        int is_fill = 0;
        if (st == ZC_OK && !io->write_empty_chunks) {
            is_fill = zc_is_fill_value(w.chunk.p, n, io->fill, io->chain.itemsize,
                                       io->fill_floatsize);
            if (is_fill < 0)
                st = is_fill;
        }
        if (st == ZC_OK && !is_fill) {
            size_t cap = zc_chain_encode_bound(&io->chain, n), len = 0;
            st = cap ? zc_buf_reserve(&w.encoded, cap) : ZC_ERR_SIZE;
            if (st == ZC_OK)
                st = zc_chain_encode(&io->chain, w.chunk.p, n, w.encoded.p, cap, &len);
            /* Kept at its encoded size until the shard's last chunk is done. */
            if (st == ZC_OK && (io->out[t] = (unsigned char *)malloc(len ? len : 1)) == NULL)
                st = ZC_ERR_NOMEM;
            if (st == ZC_OK) {
                memcpy(io->out[t], w.encoded.p, len);
                io->out_len[t] = len;
            }
        }
        if (st != ZC_OK) {
            fail_simple(io, s, v.lin, st, 0);
            break;
        }
        if (zc_atomic_add_i64(&io->slots[s].remaining, -1, ZC_ACQ_REL) == 0) {
            errno = 0;
            if ((st = zc_key_locks_open_once(&locks, &io->root, io->lock_dir)) != ZC_OK ||
                (st = write_shard(io, s, &w, &locks)) != ZC_OK) {
                fail_simple(io, s, -1, st, errno);
                break;
            }
        }
    }
    zc_key_locks_close(&locks);
    writer_free(&w);
}

/* ---- read-modify-write of a partly covered shard ------------------------------------------- */

/* Read slot `s`'s whole shard at `path` into `*data` (NULL when it is not stored) and its
 * checked index into `entries`; failures are recorded. */
static int read_whole_shard(zc_shard_io *io, int64_t s, const char *path, unsigned char **data,
                            uint64_t *entries)
{
    zc_object o;
    int missing;
    size_t size = 0, raw, isz;
    index_size(io, &raw, &isz);
    *data = NULL;
    int st = zc_object_open(&io->root, io->mem, path, &o, &size, &missing);
    failure f = {.status = st, .err = errno, .inner = -1};
    if (st != ZC_OK || missing)
        goto done;
    if (size < isz)
        f = short_shard(size);
    else if ((*data = (unsigned char *)malloc(size)) == NULL)
        f.status = ZC_ERR_NOMEM;
    else if ((st = zc_object_pread(&o, *data, size, 0)) != ZC_OK)
        f = st == ZC_ERR_SIZE ? short_shard(size) : (failure){.status = st, .err = errno, .inner = -1};
    else
        check_index(io, *data + (io->index_at_start ? 0 : size - isz), size, entries, &f);
    zc_object_close(&o);
done:
    if (f.status != ZC_OK)
        fail(io, s, &f);
    return f.status;
}

int zc_shard_io_rewrite_slot(zc_shard_io *io, int64_t s, zc_key_locks *locks)
{
    char path[ZC_SHARD_IO_PATH_MAX];
    writer w;
    memset(&w, 0, sizeof w);
    zc_shard_job j;
    memset(&j, 0, sizeof j);
    unsigned char *shard = NULL;
    zc_piece *pieces = NULL;
    int locked = 0, st;
    if ((st = zc_shard_io_slot_key(io, s, path, sizeof path)) != ZC_OK) {
        fail_simple(io, s, -1, st, 0);
        return st;
    }
    errno = 0;
    if ((st = zc_key_locks_open_once(locks, &io->root, io->lock_dir)) != ZC_OK ||
        (st = zc_object_lock(io->mem, locks, path)) != ZC_OK) {
        fail_simple(io, s, -1, st, errno);
        return st;
    }
    locked = 1;
    if ((st = writer_reset(io, &w)) != ZC_OK) {
        fail_simple(io, s, -1, st, 0);
        goto done;
    }
    if ((st = read_whole_shard(io, s, path, &shard, w.entries)) != ZC_OK)
        goto done;
    for (int64_t i = 0; shard != NULL && i < io->ninner; i++) {
        if (w.entries[2 * i] != ZC_SHARD_EMPTY) {
            w.blob[i] = shard + w.entries[2 * i];
            w.blob_len[i] = (size_t)w.entries[2 * i + 1];
        }
    }
    /* The slot's inner pieces, numbered within the shard's grid: one job over its chunks. */
    int64_t r[ZC_MAX_NDIM], total = 0;
    slot_runs(io, s, r);
    for (int d = 0; d < io->ndim; d++)
        total += run_len(io, d, r[d]);
    if ((pieces = (zc_piece *)malloc((size_t)total * sizeof *pieces)) == NULL) {
        fail_simple(io, s, -1, st = ZC_ERR_NOMEM, 0);
        goto done;
    }
    j.chain = io->chain;
    j.ndim = io->ndim;
    j.fill = io->fill;
    j.fill_floatsize = io->fill_floatsize;
    j.write_empty_chunks = io->write_empty_chunks;
    j.src = w.blob;
    j.src_len = w.blob_len;
    j.pieces = pieces;
    j.data = io->data;
    for (int d = 0, k = 0; d < io->ndim; d++) {
        const zc_piece *inner = io->inner + io->run[io->run_offset[d] + r[d]];
        const int64_t first = shard_piece(io, d, r[d])->chunk_index * io->grid[d];
        j.chunk_shape[d] = io->chunk_shape[d];
        j.grid[d] = io->grid[d];
        j.data_strides[d] = io->data_strides[d];
        j.piece_offset[d] = k;
        j.npieces[d] = run_len(io, d, r[d]);
        for (int64_t i = 0; i < j.npieces[d]; i++, k++) {
            pieces[k] = inner[i];
            pieces[k].chunk_index -= first;
        }
    }
    if ((st = zc_shard_job_prepare(&j)) == ZC_OK) {
        j.out = (unsigned char **)calloc((size_t)(j.ntasks ? j.ntasks : 1), sizeof *j.out);
        j.out_len = (size_t *)calloc((size_t)(j.ntasks ? j.ntasks : 1), sizeof(size_t));
        st = j.out && j.out_len ? ZC_OK : ZC_ERR_NOMEM;
    }
    if (st != ZC_OK) {
        fail_simple(io, s, -1, st, 0);
        goto done;
    }
    /* Decode, merge and encode the touched inner chunks; the others keep their bytes. */
    zc_shard_write_worker(&j);
    if (j.failed) {
        fail_simple(io, s, zc_shard_task_chunk(&j, j.failed_task), st = j.status, 0);
        goto done;
    }
    for (int64_t t = 0; t < j.ntasks; t++) {
        int64_t i = zc_shard_task_chunk(&j, t);
        w.blob[i] = j.out[t];
        w.blob_len[i] = j.out_len[t];
    }
    /* The key's lock is held here already: replaced without taking it again. */
    const zc_key_locks held = ZC_KEY_LOCKS_NONE;
    errno = 0;
    if ((st = store_shard(io, path, &w, &held)) != ZC_OK)
        fail_simple(io, s, -1, st, errno);
done:
    if (locked)
        zc_object_unlock(io->mem, locks, path);
    for (int64_t t = 0; j.out != NULL && t < j.ntasks; t++)
        free(j.out[t]);
    free(j.out);
    free(j.out_len);
    free(pieces);
    free(shard);
    writer_free(&w);
    return st;
}
