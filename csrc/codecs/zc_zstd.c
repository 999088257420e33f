/* Zstandard through per-thread reusable contexts. */
#include "codecs/zc_zstd.h"

#include <stdint.h>
#include <stdlib.h>

#include "codecs/zc_extern.h"
#include "os/zc_os.h"
#include "zc_status.h"

/* Contexts are costly to create (hundreds of KB of tables), so each thread keeps one of
 * each; the key destructors free them when the thread exits. */
enum { CCTX, DCTX };
static zc_tls_key keys[2];
static zc_once key_once = ZC_ONCE_INIT;
static int keys_ok;

static void ZC_TLS_CALLBACK free_cctx(void *p) { ZSTD_freeCCtx((ZSTD_CCtx *)p); }
static void ZC_TLS_CALLBACK free_dctx(void *p) { ZSTD_freeDCtx((ZSTD_DCtx *)p); }

static void make_keys(void)
{
    keys_ok = zc_tls_create(&keys[CCTX], free_cctx) == 0 &&
              zc_tls_create(&keys[DCTX], free_dctx) == 0;
}

/* The thread's CCTX or DCTX, created on first use; NULL when out of memory. */
static void *thread_ctx(int kind)
{
    zc_once_run(&key_once, make_keys);
    if (!keys_ok)
        return NULL;
    void *c = zc_tls_get(keys[kind]);
    if (c == NULL) {
        c = kind == CCTX ? (void *)ZSTD_createCCtx() : (void *)ZSTD_createDCtx();
        if (c != NULL && zc_tls_set(keys[kind], c) != 0) {
            (kind == CCTX ? free_cctx : free_dctx)(c);
            c = NULL;
        }
    }
    return c;
}

ZSTD_DCtx *zc_zstd_thread_dctx(void)
{
    ZSTD_DCtx *d = (ZSTD_DCtx *)thread_ctx(DCTX);
    if (d != NULL)
        ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
    return d;
}

void zc_zstd_thread_dctx_trim(size_t keep)
{
    zc_once_run(&key_once, make_keys);
    if (!keys_ok)
        return;
    ZSTD_DCtx *d = (ZSTD_DCtx *)zc_tls_get(keys[DCTX]);
    if (d != NULL && ZSTD_sizeof_DCtx(d) > keep && zc_tls_set(keys[DCTX], NULL) == 0)
        ZSTD_freeDCtx(d);
}

size_t zc_zstd_bound(size_t srclen)
{
    size_t b = ZSTD_compressBound(srclen);
    return ZSTD_isError(b) ? 0 : b;
}

/* The thread's compression context, reset and set to `level` and `checksum`. */
static ZSTD_CCtx *thread_cctx(int level, int checksum, int *st)
{
    *st = ZC_OK;
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
        *st = ZC_ERR_PARAM;
        return NULL;
    }
    ZSTD_CCtx *c = (ZSTD_CCtx *)thread_ctx(CCTX);
    if (c == NULL) {
        *st = ZC_ERR_NOMEM;
        return NULL;
    }
    ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0))) {
        *st = ZC_ERR_PARAM;
        return NULL;
    }
    return c;
}

int zc_zstd_compress(const void *src, size_t srclen, void *dst, size_t dstcap, int level,
                     int checksum, size_t *outlen)
{
    if ((src == NULL && srclen) || dst == NULL || outlen == NULL)
        return ZC_ERR_PARAM;
    if (zc_zstd_bound(srclen) == 0)
        return ZC_ERR_SIZE;
    int st;
    ZSTD_CCtx *c = thread_cctx(level, checksum, &st);
    if (c == NULL)
        return st;
    size_t n = ZSTD_compress2(c, dst, dstcap, src ? src : "", srclen);
    if (ZSTD_isError(n))
        return ZC_ERR_SIZE;
    *outlen = n;
    return ZC_OK;
}

int zc_zstd_compress_segment(const void *src, size_t srclen, void *dst, size_t dstcap, int level,
                             size_t frame_len, int first, int last, size_t *outlen)
{
    if (src == NULL || dst == NULL || outlen == NULL || srclen == 0 || srclen > frame_len)
        return ZC_ERR_PARAM;
    int st;
    ZSTD_CCtx *c = thread_cctx(level, 0, &st);
    if (c == NULL)
        return st;
    /* Every segment takes the parameters one call over the whole frame would: the header the
     * first one writes declares the window that all of them keep to. */
    ZSTD_parameters params = ZSTD_getParams(level, frame_len, 0);
    params.fParams = (ZSTD_frameParameters){.contentSizeFlag = 1, .noDictIDFlag = 1};
    size_t n = ZSTD_compressBegin_advanced(c, NULL, 0, params,
                                           first ? frame_len : ZSTD_CONTENTSIZE_UNKNOWN);
    if (!ZSTD_isError(n) && !first) {
        /* Flush the header (into dst, overwritten below) so that the decoder's repeat offsets
         * from the segment before cannot be used here. */
        n = ZSTD_compressContinue(c, dst, dstcap, src, 0);
        ZSTD_invalidateRepCodes(c);
    }
    if (!ZSTD_isError(n))
        n = last ? ZSTD_compressEnd(c, dst, dstcap, src, srclen)
                 : ZSTD_compressContinue(c, dst, dstcap, src, srclen);
    if (ZSTD_isError(n))
        return ZC_ERR_SIZE;
    *outlen = n;
    return ZC_OK;
}

int zc_zstd_content_size(const void *src, size_t srclen, int *known, size_t *size)
{
    if (src == NULL || known == NULL || size == NULL)
        return ZC_ERR_PARAM;
    if (srclen == 0)
        return ZC_ERR_CORRUPT;
    unsigned long long n = ZSTD_findDecompressedSize(src, srclen);
    if (n == ZSTD_CONTENTSIZE_ERROR)
        return ZC_ERR_CORRUPT;
    if (n == ZSTD_CONTENTSIZE_UNKNOWN) {
        *known = 0;
        *size = 0;
        return ZC_OK;
    }
    /* A 4-byte RLE block regenerates at most 128 KiB, so no valid input expands more than
     * 32768:1; larger claims are garbage and must not drive an allocation. */
    if (n / 32768 > (unsigned long long)srclen || n > (unsigned long long)SIZE_MAX)
        return ZC_ERR_CORRUPT;
    *known = 1;
    *size = (size_t)n;
    return ZC_OK;
}

int zc_zstd_decompress(const void *src, size_t srclen, void *dst, size_t dstlen)
{
    if (src == NULL || (dst == NULL && dstlen))
        return ZC_ERR_PARAM;
    if (srclen == 0)
        return ZC_ERR_CORRUPT;
    ZSTD_DCtx *d = zc_zstd_thread_dctx();
    if (d == NULL)
        return ZC_ERR_NOMEM;
    /* One-shot decoding also handles frames without a content size, concatenated and
     * skippable frames, and stops with an error rather than write past dstlen. */
    char dummy;
    size_t n = ZSTD_decompressDCtx(d, dst ? dst : &dummy, dstlen, src, srclen);
    if (ZSTD_isError(n)) {
        /* "dst too small" is the decoded size disagreeing with ours; anything else is damage. */
        int known;
        size_t size;
        if (zc_zstd_content_size(src, srclen, &known, &size) == ZC_OK && known && size != dstlen)
            return ZC_ERR_SIZE;
        return ZC_ERR_CORRUPT;
    }
    return n == dstlen ? ZC_OK : ZC_ERR_SIZE;
}

int zc_zstd_decompress_prefix(const void *src, size_t srclen, void *dst, size_t dstlen,
                              size_t need)
{
    const unsigned char *p = (const unsigned char *)src;
    /* RFC 8878: the magic number, then the frame header descriptor, whose bit 2 is the
     * content checksum flag. */
    if (need >= dstlen || src == NULL || dst == NULL || srclen < 5 || p[0] != 0x28 ||
        p[1] != 0xB5 || p[2] != 0x2F || p[3] != 0xFD || (p[4] & 4) ||
        ZSTD_getFrameContentSize(src, srclen) != (unsigned long long)dstlen ||
        ZSTD_findFrameCompressedSize(src, srclen) != srclen)
        return zc_zstd_decompress(src, srclen, dst, dstlen);
    ZSTD_DCtx *d = zc_zstd_thread_dctx();
    if (d == NULL)
        return ZC_ERR_NOMEM;
    if (ZSTD_isError(ZSTD_decompressBegin(d)))
        return ZC_ERR_CORRUPT;
    size_t at = 0, made = 0;
    while (made < need) {
        size_t k = ZSTD_nextSrcSizeToDecompress(d);
        if (k == 0 || k > srclen - at)
            return ZC_ERR_CORRUPT; /* the frame ended (or its input did) short of its size */
        size_t got = ZSTD_decompressContinue(d, (char *)dst + made, dstlen - made, p + at, k);
        if (ZSTD_isError(got))
            return ZC_ERR_CORRUPT;
        at += k;
        made += got;
    }
    return ZC_OK;
}

int zc_zstd_decompress_alloc(const void *src, size_t srclen, size_t maxlen, void **out,
                             size_t *outlen)
{
    if (src == NULL || out == NULL || outlen == NULL)
        return ZC_ERR_PARAM;
    if (srclen == 0)
        return ZC_ERR_CORRUPT;
    ZSTD_DCtx *d = zc_zstd_thread_dctx();
    if (d == NULL)
        return ZC_ERR_NOMEM;

    size_t cap = ZSTD_DStreamOutSize();
    if (cap > maxlen)
        cap = maxlen;
    char *buf = (char *)malloc(cap ? cap : 1);
    if (buf == NULL)
        return ZC_ERR_NOMEM;
    ZSTD_inBuffer in = {src, srclen, 0};
    ZSTD_outBuffer ob = {buf, cap, 0};
    size_t ret = 0;
    int status = ZC_OK;
    for (;;) {
        if (ob.pos == ob.size) {
            if (ob.size >= maxlen) {
                /* Full at the limit: fine only if nothing more is left to come. */
                if (in.pos == in.size && ret == 0)
                    break;
                status = ZC_ERR_SIZE;
                break;
            }
            size_t ncap = ob.size > maxlen / 2 ? maxlen : ob.size * 2;
            char *nbuf = (char *)realloc(buf, ncap);
            if (nbuf == NULL) {
                status = ZC_ERR_NOMEM;
                break;
            }
            buf = nbuf;
            ob.dst = buf;
            ob.size = ncap;
        }
        size_t before_in = in.pos, before_out = ob.pos;
        ret = ZSTD_decompressStream(d, &ob, &in);
        if (ZSTD_isError(ret)) {
            status = ZC_ERR_CORRUPT;
            break;
        }
        /* ret == 0 means a frame just ended; the next call starts the next frame. */
        if (in.pos == in.size && ret == 0)
            break;
        if (in.pos == in.size && ob.pos < ob.size && in.pos == before_in && ob.pos == before_out) {
            status = ZC_ERR_CORRUPT; /* input exhausted mid-frame: truncated */
            break;
        }
    }
    if (status != ZC_OK) {
        free(buf);
        return status;
    }
    *out = buf;
    *outlen = ob.pos;
    return ZC_OK;
}
