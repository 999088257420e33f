/* zlib's deflate/inflate, driven in chunks because avail_in/avail_out are 32-bit. */
#include "codecs/zc_zlib.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/zc_extern.h"
#include "codecs/zc_inflate.h"
#include "zc_status.h"

#define STEP ((size_t)UINT_MAX)

static int window_bits(int format)
{
    return format == ZC_ZLIB_FORMAT_GZIP ? 16 + 15 : 15;
}

size_t zc_deflate_bound(size_t srclen, int format)
{
    /* zlib's conservative deflateBound, valid for any level and past 4 GiB, plus the
     * largest container header/trailer (gzip: 10 + 8, zlib: 2 + 4). */
    size_t extra = (srclen >> 5) + (srclen >> 7) + (srclen >> 11) + 7 +
                   (format == ZC_ZLIB_FORMAT_GZIP ? 18 : 6);
    if (srclen > SIZE_MAX - extra)
        return 0;
    return srclen + extra;
}

int zc_deflate(const void *src, size_t srclen, void *dst, size_t dstcap, int level, int format,
               size_t *outlen)
{
    if ((src == NULL && srclen) || dst == NULL || outlen == NULL)
        return ZC_ERR_PARAM;
    if (level < 0 || level > 9 || (format != ZC_ZLIB_FORMAT_ZLIB && format != ZC_ZLIB_FORMAT_GZIP))
        return ZC_ERR_PARAM;
    z_stream s;
    memset(&s, 0, sizeof s);
    if (deflateInit2_(&s, level, Z_DEFLATED, window_bits(format), ZC_ZLIB_MEMLEVEL,
                      Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof(z_stream)) != Z_OK)
        return ZC_ERR_NOMEM;
    const unsigned char *in = (const unsigned char *)src;
    unsigned char *out = (unsigned char *)dst;
    size_t in_left = srclen, out_left = dstcap;
    int ret;
    do {
        if (s.avail_in == 0 && in_left) {
            s.next_in = in;
            s.avail_in = (unsigned int)(in_left < STEP ? in_left : STEP);
            in += s.avail_in;
            in_left -= s.avail_in;
        }
        if (s.avail_out == 0) {
            if (out_left == 0) {
                deflateEnd(&s);
                return ZC_ERR_SIZE;
            }
            s.next_out = out;
            s.avail_out = (unsigned int)(out_left < STEP ? out_left : STEP);
            out += s.avail_out;
            out_left -= s.avail_out;
        }
        ret = deflate(&s, in_left ? Z_NO_FLUSH : Z_FINISH);
    } while (ret == Z_OK || ret == Z_BUF_ERROR);
    size_t written = dstcap - out_left - s.avail_out;
    deflateEnd(&s);
    if (ret != Z_STREAM_END)
        return ZC_ERR_PARAM;
    *outlen = written;
    return ZC_OK;
}

/* Growable output: a fixed caller buffer (grow == 0) or a malloc'd one up to `max`. */
typedef struct {
    unsigned char *buf;
    size_t cap, max;
    int grow;
} outbuf;

static int inflate_all(const void *src, size_t srclen, int format, outbuf *o, size_t *outlen)
{
    if (src == NULL)
        return ZC_ERR_PARAM;
    if (format != ZC_ZLIB_FORMAT_ZLIB && format != ZC_ZLIB_FORMAT_GZIP)
        return ZC_ERR_PARAM;
    if (srclen == 0)
        return ZC_ERR_CORRUPT;
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2_(&s, window_bits(format), ZLIB_VERSION, (int)sizeof(z_stream)) != Z_OK)
        return ZC_ERR_NOMEM;
    const unsigned char *in = (const unsigned char *)src;
    size_t in_left = srclen, produced = 0;
    int status = ZC_OK;
    for (;;) {
        if (s.avail_in == 0 && in_left) {
            s.next_in = in;
            s.avail_in = (unsigned int)(in_left < STEP ? in_left : STEP);
            in += s.avail_in;
            in_left -= s.avail_in;
        }
        if (produced == o->cap && o->grow && o->cap < o->max) {
            size_t ncap = o->cap < 65536 ? 65536 : o->cap * 2;
            if (ncap > o->max || ncap < o->cap)
                ncap = o->max;
            unsigned char *nbuf = (unsigned char *)realloc(o->buf, ncap);
            if (nbuf == NULL) {
                status = ZC_ERR_NOMEM;
                break;
            }
            o->buf = nbuf;
            o->cap = ncap;
        }
        /* With the output full, inflate into a 1-byte probe: the stream may still end
         * cleanly, and any byte landing there means the data is larger than allowed. */
        unsigned char probe;
        int full = produced == o->cap;
        size_t room = o->cap - produced;
        s.next_out = full ? &probe : o->buf + produced;
        s.avail_out = full ? 1 : (unsigned int)(room < STEP ? room : STEP);
        unsigned int before_out = s.avail_out, before_in = s.avail_in;
        int r = inflate(&s, Z_NO_FLUSH);
        if (full && s.avail_out == 0) {
            status = ZC_ERR_SIZE;
            break;
        }
        produced += before_out - s.avail_out;
        if (r == Z_STREAM_END) {
            if (s.avail_in == 0 && in_left == 0)
                break;
            /* Another gzip member may follow; a zlib stream must be the whole input. */
            if (format != ZC_ZLIB_FORMAT_GZIP || inflateReset(&s) != Z_OK) {
                status = ZC_ERR_CORRUPT;
                break;
            }
            continue;
        }
        if (r != Z_OK && r != Z_BUF_ERROR) {
            status = ZC_ERR_CORRUPT;
            break;
        }
        int refill = s.avail_in == 0 && in_left > 0;
        if (!refill && s.avail_in == before_in && s.avail_out == before_out) {
            status = ZC_ERR_CORRUPT; /* no progress possible: input ended inside the stream */
            break;
        }
    }
    inflateEnd(&s);
    if (status == ZC_OK)
        *outlen = produced;
    return status;
}

int zc_inflate(const void *src, size_t srclen, void *dst, size_t dstlen, int format)
{
    if (dst == NULL && dstlen)
        return ZC_ERR_PARAM;
    /* zc_inflate.c's decoder is the faster; whatever it refuses, zlib judges, so that every
     * error is zlib's verdict. */
    if (zc_deflate_decode(src, srclen, dst, dstlen, format) == ZC_OK)
        return ZC_OK;
    outbuf o = {(unsigned char *)dst, dstlen, dstlen, 0};
    size_t n = 0;
    int status = inflate_all(src, srclen, format, &o, &n);
    if (status != ZC_OK)
        return status;
    return n == dstlen ? ZC_OK : ZC_ERR_SIZE;
}

int zc_inflate_alloc(const void *src, size_t srclen, size_t maxlen, int format, void **out,
                     size_t *outlen)
{
    if (out == NULL || outlen == NULL)
        return ZC_ERR_PARAM;
    outbuf o = {(unsigned char *)malloc(1), 0, maxlen, 1};
    if (o.buf == NULL)
        return ZC_ERR_NOMEM;
    int status = inflate_all(src, srclen, format, &o, outlen);
    if (status != ZC_OK) {
        free(o.buf);
        return status;
    }
    *out = o.buf;
    return ZC_OK;
}
