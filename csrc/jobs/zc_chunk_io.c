/* Stored chunks decoded into selections; see zc_chunk_io.h. */
#include "jobs/zc_chunk_io.h"

#include <stdlib.h>
#include <string.h>

#include "codecs/zc_zstd.h"
#include "jobs/zc_copy.h"
#include "zc_status.h"

int zc_buf_reserve(zc_buf *b, size_t n)
{
    if (n <= b->cap)
        return ZC_OK;
    unsigned char *p;
    size_t cap = n;
    if (b->slot == ZC_SCRATCH_NONE)
        p = (unsigned char *)realloc(b->p, n ? n : 1);
    else if ((p = zc_scratch_borrow(b->slot, n, &cap)) != NULL && b->p != NULL) {
        memcpy(p, b->p, b->cap);
        zc_scratch_give_back(b->slot, b->p, b->cap);
    }
    if (p == NULL)
        return ZC_ERR_NOMEM;
    b->p = p;
    b->cap = cap;
    return ZC_OK;
}

void zc_buf_free(zc_buf *b)
{
    if (b->slot == ZC_SCRATCH_NONE)
        free(b->p);
    else
        zc_scratch_give_back(b->slot, b->p, b->cap);
    b->p = NULL;
    b->cap = 0;
}

/* Append `v` in decimal at buf[*len] (cap bytes in all, its terminating NUL included):
 * 0, or -1 when it does not fit. By hand: keys are formatted once per chunk, and snprintf
 * took a tenth of the read of a small chunk. */
static int append_int(char *buf, size_t cap, size_t *len, int64_t v)
{
    char digits[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        digits[n++] = '-';
    if ((size_t)n >= cap - *len)
        return -1;
    while (n)
        buf[(*len)++] = digits[--n];
    buf[*len] = 0;
    return 0;
}

int zc_key_format(const char *head, char sep, int lead_sep, int ndim, const int64_t *coords,
                  char *buf, size_t cap)
{
    size_t len = strlen(head);
    if (len >= cap)
        return ZC_ERR_SIZE;
    memcpy(buf, head, len + 1);
    for (int d = 0; d < ndim; d++) {
        if (d > 0 || lead_sep) {
            if (len + 1 >= cap)
                return ZC_ERR_SIZE;
            buf[len++] = sep;
        }
        if (append_int(buf, cap, &len, coords[d]) != 0)
            return ZC_ERR_SIZE;
    }
    if (ndim == 0 && !lead_sep) {
        /* A 0-d array's only chunk is "0" under the v2 encoding. */
        if (len + 2 > cap)
            return ZC_ERR_SIZE;
        buf[len++] = '0';
        buf[len] = 0;
    }
    return ZC_OK;
}

void zc_chunk_reader_init(zc_chunk_reader *r)
{
    memset(r, 0, sizeof *r);
    r->file.slot = ZC_SCRATCH_READ_FILE;
    r->scratch.slot = ZC_SCRATCH_READ_DECODED;
}

void zc_chunk_reader_free(zc_chunk_reader *r)
{
    zc_buf_free(&r->file);
    zc_buf_free(&r->scratch);
    zc_stream_bufs_free(&r->stream);
}

/* Is the selection the whole chunk, landing on one contiguous C-ordered run? */
static int whole_run(const zc_chunk_sel *s, size_t itemsize)
{
    ptrdiff_t expect = (ptrdiff_t)itemsize;
    for (int d = s->ndim - 1; d >= 0; d--) {
        if (s->start[d] != 0 || s->count[d] != s->shape[d])
            return 0;
        if (s->count[d] > 1 && s->out_strides[d] != expect)
            return 0;
        expect *= (ptrdiff_t)s->count[d];
    }
    return 1;
}

/* Gather the listed selection (`gather` or points) out of `chunk`, a whole decoded chunk. */
static int gather_listed(const zc_chunk_sel *s, size_t itemsize, const unsigned char *chunk)
{
    if (s->local != NULL) {
        int64_t items = 1;
        for (int d = 0; d < s->ndim; d++)
            items *= s->shape[d]; /* (their product in bytes was checked to fit a size_t) */
        return zc_gather_points(chunk, items, itemsize, s->local, s->local_out, s->npoints,
                                s->out, s->out_strides[0]);
    }
    return zc_gather_nd(s->ndim, s->shape, itemsize, chunk, s->gather, s->out, s->out_strides);
}

/* Is `size` over what any valid chunk of the chain stores? Such a chunk is not read. */
static int too_large(const zc_chain *c, size_t size)
{
    return c->max_stored != 0 && size > c->max_stored;
}

int zc_chunk_load(const zc_chain *c, const zc_object *o, uint64_t offset, size_t size,
                  zc_chunk_reader *r)
{
    if (too_large(c, size))
        return ZC_ERR_TOO_LARGE;
    if (zc_buf_reserve(&r->file, size) != ZC_OK)
        return ZC_ERR_NOMEM;
    int st = zc_object_pread(o, r->file.p, size, offset);
    return st == ZC_ERR_SIZE ? ZC_ERR_CORRUPT : st; /* shrunk under us: a truncated chunk */
}

int zc_chunk_read(const zc_chain *c, const zc_chunk_sel *s, const zc_object *o, uint64_t offset,
                  size_t size, zc_chunk_reader *r)
{
    if (s->ndim < 0 || s->ndim > ZC_MAX_NDIM || c->itemsize == 0)
        return ZC_ERR_PARAM;
    size_t n = c->itemsize;
    for (int d = 0; d < s->ndim; d++) {
        if (s->shape[d] < 1 || n > SIZE_MAX / (size_t)s->shape[d])
            return ZC_ERR_PARAM;
        n *= (size_t)s->shape[d];
    }
    if (too_large(c, size))
        return ZC_ERR_TOO_LARGE;
    const int listed = s->gather != NULL || s->local != NULL;
    /* A selection that ends a zstd block or more before its chunk does: the stored bytes read
     * whole, and decoded only up to its end (zc_chain_decode_prefix). */
    size_t lo, end = n; /* (kept for a listing, or a selection that leaves the chunk: refused
                         * below) */
    if (!listed)
        (void)zc_selection_extent(s->ndim, s->shape, s->start, s->step, s->count, c->itemsize,
                                  &lo, &end);
    const int prefix = c->compressor == ZC_COMP_ZSTD && !zc_chain_shuffles(c) &&
                       end <= n - (n < ZC_ZSTD_BLOCK ? n : ZC_ZSTD_BLOCK);
    if (!listed && !prefix && !zc_chain_shuffles(c)
        && (c->compressor == ZC_COMP_NONE || c->compressor == ZC_COMP_ZSTD)) {
        zc_scatter sc;
        int st = zc_scatter_init(&sc, s->ndim, s->shape, s->start, s->step, s->count, c->itemsize,
                                 s->out, s->out_strides);
        if (st != ZC_OK)
            return st;
        sc.stream_out = s->stream_out;
        zc_stream_format f = {
            .zstd = c->compressor == ZC_COMP_ZSTD, .crc32c = c->crc32c, .nbytes = n,
            .itemsize = c->itemsize, .swap_size = c->swap_size, .offset = offset,
        };
        return zc_stream_read(o, size, &f, &sc, &r->stream);
    }
    int st = zc_chunk_load(c, o, offset, size, r);
    if (st != ZC_OK)
        return st;
    if (!listed && whole_run(s, c->itemsize))
        return zc_chain_decode(c, r->file.p, size, s->out, n);
    if (zc_buf_reserve(&r->scratch, n) != ZC_OK)
        return ZC_ERR_NOMEM;
    if ((st = zc_chain_decode_prefix(c, r->file.p, size, r->scratch.p, n, end)) != ZC_OK)
        return st;
    return zc_chunk_sel_copy(s, c->itemsize, r->scratch.p);
}

int zc_chunk_sel_copy(const zc_chunk_sel *s, size_t itemsize, const unsigned char *chunk)
{
    if (s->gather != NULL || s->local != NULL)
        return gather_listed(s, itemsize, chunk);
    /* The selection's view of the decoded chunk, then a strided copy into place. */
    ptrdiff_t shape[ZC_MAX_NDIM], strides[ZC_MAX_NDIM];
    ptrdiff_t cstride = (ptrdiff_t)itemsize;
    size_t at = 0;
    for (int d = s->ndim - 1; d >= 0; d--) {
        if (s->start[d] < 0 || s->step[d] < 1 || s->count[d] < 1 ||
            s->start[d] + (s->count[d] - 1) * s->step[d] >= s->shape[d])
            return ZC_ERR_PARAM;
        shape[d] = (ptrdiff_t)s->count[d];
        strides[d] = cstride * (ptrdiff_t)s->step[d];
        at += (size_t)cstride * (size_t)s->start[d];
        cstride *= (ptrdiff_t)s->shape[d];
    }
    return zc_copy_nd(s->ndim, shape, itemsize, chunk + at, strides, s->out, s->out_strides);
}
