/* Streaming chunk reads: bounded file blocks, zstd into a bounded window, and a scatter of
 * each decoded byte range of the C-ordered chunk into the selected output region. */
#define _GNU_SOURCE
#include "files/zc_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "codecs/zc_byteswap.h"
#include "codecs/zc_chain.h"
#include "jobs/zc_copy.h"
#include "codecs/zc_crc32c.h"
#include "codecs/zc_extern.h"
#include "os/zc_os.h"
#include "memory/zc_scratch.h"
#include "zc_status.h"
#include "codecs/zc_zstd.h"

#ifdef ZC_SSE2
#include <emmintrin.h>
#endif

/* ZSTD_d_stableOutBuffer (ZSTD_d_experimentalParam2): decode straight into a caller buffer
 * that stays put for the whole frame, with no window buffer inside the context. */
#define ZC_ZSTD_D_STABLE_OUT_BUFFER 1001

/* ---- selection scatter ------------------------------------------------------------------ */

/* memcpy with streaming stores for the 16-byte aligned body (the caller fences). */
static void copy_streaming(char *d, const char *s, size_t n)
{
#ifdef ZC_SSE2
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (n < head + 64) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 16; n -= 16, d += 16, s += 16)
        _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
    memcpy(d, s, n);
#else
    memcpy(d, s, n);
#endif
}

int zc_selection_extent(int ndim, const int64_t *shape, const int64_t *start, const int64_t *step,
                        const int64_t *count, size_t itemsize, size_t *lo, size_t *hi)
{
    if (ndim < 0 || ndim > ZC_MAX_NDIM || itemsize == 0)
        return ZC_ERR_PARAM;
    /* Every index is checked to stay in its axis. */
    size_t cstride = itemsize, first = 0, last = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] < 1 || start[d] < 0 || step[d] < 1 || count[d] < 1 || start[d] >= shape[d] ||
            (count[d] - 1) > (shape[d] - 1 - start[d]) / step[d])
            return ZC_ERR_PARAM;
        first += (size_t)start[d] * cstride;
        last += (size_t)(start[d] + (count[d] - 1) * step[d]) * cstride;
        cstride *= (size_t)shape[d];
    }
    *lo = first;
    *hi = last + itemsize;
    return ZC_OK;
}

int zc_scatter_init(zc_scatter *s, int ndim, const int64_t *shape, const int64_t *start,
                    const int64_t *step, const int64_t *count, size_t itemsize, char *out,
                    const ptrdiff_t *out_strides)
{
    if (s == NULL ||
        zc_selection_extent(ndim, shape, start, step, count, itemsize, &s->lo, &s->hi) != ZC_OK)
        return ZC_ERR_PARAM;
    s->itemsize = itemsize;
    s->out = out;
    s->stream_out = 0;
    /* Simplify, outermost first: unit axes carry no offset; a wholly selected axis folds into
     * the axis outside it when that one is a single index or a step-1 run whose output
     * stride is exactly one inner span. */
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        if (nd > 0 && start[d] == 0 && step[d] == 1 && count[d] == shape[d]) {
            int p = nd - 1;
            if (s->count[p] == 1 ||
                (s->step[p] == 1 && s->out_strides[p] == out_strides[d] * (ptrdiff_t)count[d])) {
                s->shape[p] *= shape[d];
                s->start[p] *= shape[d];
                s->count[p] *= count[d];
                s->step[p] = 1;
                s->out_strides[p] = out_strides[d];
                continue;
            }
        }
        s->shape[nd] = shape[d];
        s->start[nd] = start[d];
        s->step[nd] = step[d];
        s->count[nd] = count[d];
        s->out_strides[nd] = out_strides[d];
        nd++;
    }
    if (nd == 0) {
        s->shape[0] = s->count[0] = s->step[0] = 1;
        s->start[0] = 0;
        s->out_strides[0] = (ptrdiff_t)itemsize;
        nd = 1;
    }
    s->ndim = nd;
    return ZC_OK;
}

int zc_scatter_run(const zc_scatter *s, char **dst, size_t *lo, size_t *len)
{
    if (s->ndim != 1 || (s->count[0] > 1 && (s->step[0] != 1 ||
                                              s->out_strides[0] != (ptrdiff_t)s->itemsize)))
        return 0;
    *dst = s->out;
    *lo = s->lo;
    *len = s->hi - s->lo;
    return 1;
}

void zc_scatter_range(const zc_scatter *s, const void *src, size_t off, size_t len)
{
    size_t a = off > s->lo ? off : s->lo;
    size_t b = off + len < s->hi ? off + len : s->hi;
    if (a >= b)
        return;
    const size_t is = s->itemsize;
    const char *base = (const char *)src - off; /* chunk byte x is at base + x (x in range) */
    const int L = s->ndim - 1;
    const int64_t R = s->shape[L], st = s->start[L], sp = s->step[L], cn = s->count[L];
    const ptrdiff_t os = s->out_strides[L];
    /* Unit steps and a contiguous output row: a row wholly inside the range is one memcpy. */
    int unit = sp == 1 && os == (ptrdiff_t)is;
    for (int d = 0; d < L && unit; d++)
        unit = s->step[d] == 1;
    const int64_t e0 = (int64_t)(a / is), e1 = (int64_t)((b + is - 1) / is);
    int64_t r = e0 / R;
    const int64_t rlast = (e1 - 1) / R;
    int64_t idx[ZC_MAX_NDIM];
    int64_t t = r;
    for (int d = L - 1; d >= 0; d--) {
        idx[d] = t % s->shape[d];
        t /= s->shape[d];
    }
    for (;;) {
        /* Is row r selected, and where does it land? */
        char *o = s->out;
        int d = 0;
        for (; d < L; d++) {
            int64_t i = idx[d] - s->start[d];
            if (i < 0)
                break;
            if (s->step[d] != 1) {
                if (i % s->step[d])
                    break;
                i /= s->step[d];
            }
            if (i >= s->count[d])
                break;
            o += i * s->out_strides[d];
        }
        if (d == L && unit && r * R >= e0 && r * R + R <= e1) {
            /* This row and the plane's next selected rows wholly in range, in one tight loop. */
            int64_t more = 0;
            if (L > 0) {
                more = s->start[L - 1] + s->count[L - 1] - 1 - idx[L - 1];
                if (more > e1 / R - 1 - r)
                    more = e1 / R - 1 - r;
            }
            const char *from = base + (size_t)(r * R + st) * is;
            const size_t rowbytes = (size_t)cn * is, srow = (size_t)R * is;
            const ptrdiff_t orow = L > 0 ? s->out_strides[L - 1] : 0;
            if (s->stream_out)
                for (int64_t k = 0; k <= more; k++, o += orow, from += srow)
                    copy_streaming(o, from, rowbytes);
            else
                for (int64_t k = 0; k <= more; k++, o += orow, from += srow)
                    memcpy(o, from, rowbytes);
            r += more;
            if (L > 0)
                idx[L - 1] += more;
        } else if (d == L) {
            int64_t row = r * R;
            int64_t ra = (e0 > row ? e0 : row) - row;
            int64_t rb = (e1 < row + R ? e1 : row + R) - row;
            int64_t k0 = ra <= st ? 0 : (ra - st + sp - 1) / sp;
            int64_t k1 = rb <= st ? 0 : (rb - st + sp - 1) / sp;
            if (k1 > cn)
                k1 = cn;
            if (k0 < k1)
                zc_copy_items(o + k0 * os, os, base + (size_t)(row + st + k0 * sp) * is,
                              (ptrdiff_t)(sp * (int64_t)is), k1 - k0, is);
        }
        if (r == rlast)
            break;
        r++;
        for (d = L - 1; d >= 0 && ++idx[d] == s->shape[d]; d--)
            idx[d] = 0;
    }
#ifdef ZC_SSE2
    if (s->stream_out)
        _mm_sfence(); /* streaming stores are weakly ordered: done before anyone reads them */
#endif
}

/* ---- file reading ------------------------------------------------------------------------- */

void zc_stream_bufs_free(zc_stream_bufs *b)
{
    zc_scratch_give_back(ZC_SCRATCH_STREAM_BLOCK, b->block, ZC_STREAM_BLOCK);
    zc_scratch_give_back(ZC_SCRATCH_STREAM_WINDOW, b->window, ZC_STREAM_WINDOW);
    zc_scratch_give_back(ZC_SCRATCH_STREAM_WHOLE, b->whole, ZC_STREAM_WHOLE);
    b->block = b->window = b->whole = NULL;
}

/* The buffer `*p` of `size` (a ZC_STREAM_* size, whole pages: it is borrowed whole, see
 * zc_buf) from the thread's kept one of `slot`, on first use. */
static int get_buf(unsigned char **p, size_t size, int slot)
{
    size_t cap;
    if (*p == NULL)
        *p = zc_scratch_borrow(slot, size, &cap);
    return *p ? ZC_OK : ZC_ERR_NOMEM;
}

/* Compare the crc32c `crc` of the payload (the chunk less its last 4 bytes) with the trailer. */
static int check_trailer(const zc_object *o, size_t fsize, const zc_stream_format *f, uint32_t crc)
{
    unsigned char t[4];
    int st = zc_object_pread(o, t, 4, f->offset + fsize - 4);
    if (st == ZC_ERR_SIZE)
        return ZC_ERR_CORRUPT;
    if (st != ZC_OK)
        return st;
    return crc == zc_load_le32(t) ? ZC_OK : ZC_ERR_CHECKSUM;
}

/* After a decode failure `st`: when the chunk carries a crc32c that does not match, the
 * damage is reported as a checksum mismatch, as a check before decoding would have. */
static int prefer_checksum(const zc_object *o, size_t fsize, const zc_stream_format *f, zc_stream_bufs *bufs,
                           int st)
{
    if (!f->crc32c || fsize < 4 || (st != ZC_ERR_SIZE && st != ZC_ERR_CORRUPT))
        return st;
    if (get_buf(&bufs->block, ZC_STREAM_BLOCK, ZC_SCRATCH_STREAM_BLOCK) != ZC_OK)
        return st;
    uint32_t crc = 0;
    for (size_t at = 0, plen = fsize - 4; at < plen;) {
        size_t n = plen - at < ZC_STREAM_BLOCK ? plen - at : ZC_STREAM_BLOCK;
        if (zc_object_pread(o, bufs->block, n, f->offset + at) != ZC_OK)
            return st;
        crc = zc_crc32c(crc, bufs->block, n);
        at += n;
    }
    return check_trailer(o, fsize, f, crc) == ZC_ERR_CHECKSUM ? ZC_ERR_CHECKSUM : st;
}

/* Block size for `itemsize`: whole items, so swaps and scatters never split one. */
static size_t item_block(size_t cap, size_t itemsize)
{
    return cap >= itemsize ? cap / itemsize * itemsize : itemsize;
}

static int swap(const zc_stream_format *f, void *p, size_t len)
{
    if (f->swap_size > 1 && len)
        return zc_byteswap(p, p, len / f->swap_size, f->swap_size);
    return ZC_OK;
}

/* Stored bytes are the chunk. */
static int read_plain(const zc_object *o, size_t fsize, const zc_stream_format *f, const zc_scatter *s,
                      zc_stream_bufs *bufs)
{
    const size_t n = f->nbytes;
    const size_t plen = fsize - (f->crc32c ? 4 : 0);
    if (plen != n)
        return ZC_ERR_SIZE;
    char *dst = NULL;
    size_t lo, len;
    int run = zc_scatter_run(s, &dst, &lo, &len);
    int st;
    if (run && !f->crc32c) {
        /* One run and nothing to verify: read just it, into place. */
        if ((st = zc_object_pread(o, dst, len, f->offset + lo)) != ZC_OK)
            return st;
        return swap(f, dst, len);
    }
    uint32_t crc = 0;
    if (run && lo == 0 && len == n) {
        /* The whole chunk into place, checksummed block by block while cache-hot. */
        size_t bs = item_block(ZC_STREAM_BLOCK, f->itemsize);
        for (size_t at = 0; at < n; at += bs) {
            size_t k = n - at < bs ? n - at : bs;
            if ((st = zc_object_pread(o, dst + at, k, f->offset + at)) != ZC_OK)
                return st;
            crc = zc_crc32c(crc, dst + at, k);
            if ((st = swap(f, dst + at, k)) != ZC_OK)
                return st;
        }
        return check_trailer(o, fsize, f, crc);
    }
    if ((st = get_buf(&bufs->block, ZC_STREAM_BLOCK, ZC_SCRATCH_STREAM_BLOCK)) != ZC_OK)
        return st;
    size_t bs = item_block(ZC_STREAM_BLOCK, f->itemsize);
    /* Without a checksum only the selection's extent is read. */
    size_t from = f->crc32c ? 0 : s->lo, to = f->crc32c ? n : s->hi;
    for (size_t at = from; at < to; at += bs) {
        size_t k = to - at < bs ? to - at : bs;
        if ((st = zc_object_pread(o, bufs->block, k, f->offset + at)) != ZC_OK)
            return st;
        if (f->crc32c)
            crc = zc_crc32c(crc, bufs->block, k);
        if (at < s->hi && at + k > s->lo) {
            if ((st = swap(f, bufs->block, k)) != ZC_OK)
                return st;
            zc_scatter_range(s, bufs->block, at, k);
        }
    }
    return f->crc32c ? check_trailer(o, fsize, f, crc) : ZC_OK;
}

/* A small zstd chunk in one block (ZC_STREAM_WHOLE): read, decode and scatter at once. */
static int read_zstd_whole(const zc_object *o, size_t plen, const zc_stream_format *f, const zc_scatter *s,
                           zc_stream_bufs *bufs)
{
    int st = zc_object_pread(o, bufs->block, plen, f->offset);
    if (st != ZC_OK)
        return st == ZC_ERR_SIZE ? ZC_ERR_CORRUPT : st; /* the file shrank under us */
    uint32_t crc = f->crc32c ? zc_crc32c(0, bufs->block, plen) : 0;
    if ((st = get_buf(&bufs->whole, ZC_STREAM_WHOLE, ZC_SCRATCH_STREAM_WHOLE)) != ZC_OK ||
        (st = zc_zstd_decompress(bufs->block, plen, bufs->whole, f->nbytes)) != ZC_OK)
        return st;
    if (f->crc32c && (st = check_trailer(o, plen + 4, f, crc)) != ZC_OK)
        return st;
    if ((st = swap(f, bufs->whole, f->nbytes)) == ZC_OK)
        zc_scatter_range(s, bufs->whole, 0, f->nbytes);
    return st;
}

/* Stored bytes are zstd frames whose concatenated content is the chunk. */
static int read_zstd(const zc_object *o, size_t fsize, const zc_stream_format *f, const zc_scatter *s,
                     zc_stream_bufs *bufs)
{
    const size_t n = f->nbytes;
    const size_t plen = fsize - (f->crc32c ? 4 : 0);
    if (plen == 0)
        return ZC_ERR_CORRUPT;
    int st;
    if ((st = get_buf(&bufs->block, ZC_STREAM_BLOCK, ZC_SCRATCH_STREAM_BLOCK)) != ZC_OK)
        return st;
    char *dst = NULL;
    size_t lo, len;
    /* The whole chunk on one run of the output: decode into it (it is zstd's window too). */
    int direct = zc_scatter_run(s, &dst, &lo, &len) && lo == 0 && len == n;
    if (!direct && n <= ZC_STREAM_WHOLE && plen <= ZC_STREAM_BLOCK)
        return read_zstd_whole(o, plen, f, s, bufs);
    if (!direct &&
        (st = get_buf(&bufs->window, ZC_STREAM_WINDOW, ZC_SCRATCH_STREAM_WINDOW)) != ZC_OK)
        return st;
    ZSTD_DCtx *d = zc_zstd_thread_dctx();
    if (d == NULL)
        return ZC_ERR_NOMEM;
    /* If the context refuses, buffered mode into the same output works as well. */
    ZSTD_DCtx_setParameter(d, ZC_ZSTD_D_STABLE_OUT_BUFFER, direct);
    const size_t ws = item_block(ZC_STREAM_WINDOW, f->itemsize);
    ZSTD_outBuffer out = {direct ? (void *)dst : (void *)bufs->window, direct ? n : (ws < n ? ws : n), 0};
    ZSTD_inBuffer in = {bufs->block, 0, 0};
    size_t flushed = 0; /* window mode: chunk bytes already scattered */
    size_t at = 0;      /* payload bytes read */
    uint32_t crc = 0;
    st = ZC_OK;
    for (;;) {
        if (in.pos == in.size && at < plen) {
            size_t k = plen - at < ZC_STREAM_BLOCK ? plen - at : ZC_STREAM_BLOCK;
            if ((st = zc_object_pread(o, bufs->block, k, f->offset + at)) != ZC_OK) {
                if (st == ZC_ERR_SIZE)
                    st = ZC_ERR_CORRUPT; /* the file shrank under us */
                break;
            }
            if (f->crc32c)
                crc = zc_crc32c(crc, bufs->block, k);
            at += k;
            in.size = k;
            in.pos = 0;
        }
        if (!direct && out.pos == out.size && out.size) {
            /* A full window (whole items): swap, scatter, start the next. */
            if (flushed < s->hi && flushed + out.pos > s->lo) {
                if ((st = swap(f, out.dst, out.pos)) != ZC_OK)
                    break;
                zc_scatter_range(s, out.dst, flushed, out.pos);
            }
            flushed += out.pos;
            out.pos = 0;
            out.size = n - flushed < ws ? n - flushed : ws;
        }
        size_t ip = in.pos, op = out.pos;
        size_t ret = ZSTD_decompressStream(d, &out, &in);
        if (ZSTD_isError(ret)) {
            st = ZC_ERR_CORRUPT;
            break;
        }
        if (ret == 0 && in.pos == in.size && at == plen)
            break; /* every frame ended and flushed, all input used */
        if (in.pos == ip && out.pos == op) {
            /* Stuck: with no room left the content is longer than the chunk; with room, the
             * input ended inside a frame. */
            st = out.pos == out.size ? ZC_ERR_SIZE : ZC_ERR_CORRUPT;
            break;
        }
    }
    if (st == ZC_OK) {
        size_t total = (direct ? 0 : flushed) + out.pos;
        if (total != n)
            st = ZC_ERR_SIZE;
        else if (direct)
            st = swap(f, dst, n);
        else if (out.pos && flushed < s->hi && flushed + out.pos > s->lo &&
                 (st = swap(f, out.dst, out.pos)) == ZC_OK)
            zc_scatter_range(s, out.dst, flushed, out.pos);
    }
    int err = errno;
    zc_zstd_thread_dctx_trim(ZC_STREAM_DCTX_KEEP);
    errno = err;
    if (st == ZC_OK && f->crc32c)
        st = check_trailer(o, fsize, f, crc);
    return st;
}

int zc_stream_read(const zc_object *o, size_t fsize, const zc_stream_format *f, const zc_scatter *s,
                   zc_stream_bufs *bufs)
{
    if (f == NULL || s == NULL || bufs == NULL || f->itemsize == 0 || f->nbytes % f->itemsize ||
        s->hi > f->nbytes || (f->swap_size > 1 && f->itemsize % f->swap_size) ||
        fsize > (uint64_t)INT64_MAX || f->offset > (uint64_t)INT64_MAX - fsize)
        return ZC_ERR_PARAM;
    if (f->crc32c && fsize < 4)
        return ZC_ERR_CORRUPT;
    int st = f->zstd ? read_zstd(o, fsize, f, s, bufs) : read_plain(o, fsize, f, s, bufs);
    return prefer_checksum(o, fsize, f, bufs, st);
}
