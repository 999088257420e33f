/* Decode and encode through a zc_chain; see zc_chain.h. */
#include "codecs/zc_chain.h"

#include <string.h>

#include "codecs/zc_blosc.h"
#include "codecs/zc_byteswap.h"
#include "codecs/zc_crc32c.h"
#include "memory/zc_scratch.h"
#include "codecs/zc_shuffle.h"
#include "zc_status.h"
#include "codecs/zc_zlib.h"
#include "codecs/zc_zstd.h"

uint32_t zc_load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void zc_store_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The stored bytes' crc32c checked and their compressor run: `n` bytes at `dst`, which is
 * `src` itself (with `*dst` NULL on entry) when there is no compressor; of zstd, at least the
 * first `need` of them. */
static int decompress(const zc_chain *c, const unsigned char *src, size_t len,
                      const unsigned char **dst, size_t n, size_t need)
{
    if (src == NULL)
        src = (const unsigned char *)""; /* an empty chunk: corrupt, not a bad parameter */
    if (c->crc32c) {
        if (len < 4)
            return ZC_ERR_CORRUPT;
        len -= 4;
        if (zc_crc32c(0, src, len) != zc_load_le32(src + len))
            return ZC_ERR_CHECKSUM;
    }
    unsigned char *out = (unsigned char *)*dst;
    switch (c->compressor) {
    case ZC_COMP_NONE:
        if (len != n)
            return ZC_ERR_SIZE;
        if (out == NULL)
            *dst = src;
        else
            memcpy(out, src, n);
        return ZC_OK;
    case ZC_COMP_ZSTD: return zc_zstd_decompress_prefix(src, len, out, n, need);
    case ZC_COMP_BLOSC: return zc_blosc_decompress(src, len, out, n, c->decode_threads);
    case ZC_COMP_GZIP: return zc_inflate(src, len, out, n, ZC_ZLIB_FORMAT_GZIP);
    case ZC_COMP_ZLIB: return zc_inflate(src, len, out, n, ZC_ZLIB_FORMAT_ZLIB);
    default: return ZC_ERR_PARAM;
    }
}

/* Shuffled bytes are decompressed into this thread's scratch (taken unless `*planes` is
 * the stored bytes, without a compressor). */
static int decompress_shuffled(const zc_chain *c, const unsigned char *src, size_t len,
                               size_t n, const unsigned char **planes)
{
    if (n % c->byte_shuffle != 0)
        return ZC_ERR_SIZE;
    *planes = NULL;
    if (c->compressor != ZC_COMP_NONE && (*planes = zc_scratch(ZC_SCRATCH_SHUFFLED, n)) == NULL)
        return ZC_ERR_NOMEM;
    return decompress(c, src, len, planes, n, n);
}

int zc_chain_decode(const zc_chain *c, const unsigned char *src, size_t len, void *out, size_t n)
{
    return zc_chain_decode_prefix(c, src, len, out, n, n);
}

int zc_chain_decode_prefix(const zc_chain *c, const unsigned char *src, size_t len, void *out,
                           size_t n, size_t need)
{
    int st;
    if (need > n)
        need = n;
    if (zc_chain_shuffles(c)) {
        const unsigned char *planes;
        if ((st = decompress_shuffled(c, src, len, n, &planes)) == ZC_OK)
            st = zc_unshuffle(planes, out, n, c->byte_shuffle);
    } else {
        const unsigned char *dst = (const unsigned char *)out;
        st = decompress(c, src, len, &dst, n, need);
    }
    if (st == ZC_OK && c->swap_size > 1) {
        /* (whole items: the prefix rounded up, within the chunk) */
        size_t swapped = (need + c->swap_size - 1) / c->swap_size;
        st = zc_byteswap(out, out, swapped < n / c->swap_size ? swapped : n / c->swap_size,
                         c->swap_size);
    }
    return st;
}

int zc_chain_decode_shuffled(const zc_chain *c, const unsigned char *src, size_t len, size_t n,
                             const unsigned char **planes)
{
    if (!zc_chain_unshuffles_last(c))
        return ZC_ERR_PARAM;
    return decompress_shuffled(c, src, len, n, planes);
}

size_t zc_chain_encode_bound(const zc_chain *c, size_t n)
{
    size_t bound;
    switch (c->compressor) {
    case ZC_COMP_NONE: bound = n; break;
    case ZC_COMP_ZSTD: bound = zc_zstd_bound(n); break;
    case ZC_COMP_BLOSC: bound = zc_blosc_bound(n); break;
    case ZC_COMP_GZIP: bound = zc_deflate_bound(n, ZC_ZLIB_FORMAT_GZIP); break;
    case ZC_COMP_ZLIB: bound = zc_deflate_bound(n, ZC_ZLIB_FORMAT_ZLIB); break;
    default: return 0;
    }
    if ((bound == 0 && n) || bound > SIZE_MAX - 4)
        return 0;
    return bound + 4;
}

int zc_chain_encode(const zc_chain *c, unsigned char *chunk, size_t n, unsigned char *dst,
                    size_t cap, size_t *outlen)
{
    size_t bound = zc_chain_encode_bound(c, n);
    if (bound == 0 || cap < bound)
        return ZC_ERR_SIZE;
    int st = ZC_OK;
    if (c->swap_size > 1 && (st = zc_byteswap(chunk, chunk, n / c->swap_size, c->swap_size)) != ZC_OK)
        return st;
    /* The compressor's input: the chunk, or its bytes shuffled into this thread's scratch. */
    const unsigned char *in = chunk;
    if (c->byte_shuffle > 1) {
        unsigned char *shuffled;
        if (n % c->byte_shuffle != 0)
            return ZC_ERR_SIZE;
        if ((shuffled = zc_scratch(ZC_SCRATCH_SHUFFLED, n)) == NULL)
            return ZC_ERR_NOMEM;
        if ((st = zc_shuffle(chunk, shuffled, n, c->byte_shuffle)) != ZC_OK)
            return st;
        in = shuffled;
    }
    size_t room = bound - 4, m = 0;
    switch (c->compressor) {
    case ZC_COMP_NONE:
        if (dst != in)
            memcpy(dst, in, n);
        m = n;
        break;
    case ZC_COMP_ZSTD: st = zc_zstd_compress(in, n, dst, room, c->clevel, c->checksum, &m); break;
    case ZC_COMP_BLOSC:
        st = zc_blosc_compress(in, n, dst, room, c->clevel, c->shuffle, c->typesize, c->cname,
                               c->blocksize, &m);
        break;
    case ZC_COMP_GZIP: st = zc_deflate(in, n, dst, room, c->clevel, ZC_ZLIB_FORMAT_GZIP, &m); break;
    case ZC_COMP_ZLIB: st = zc_deflate(in, n, dst, room, c->clevel, ZC_ZLIB_FORMAT_ZLIB, &m); break;
    default: return ZC_ERR_PARAM;
    }
    if (st != ZC_OK)
        return st;
    if (c->crc32c) {
        zc_store_le32(dst + m, zc_crc32c(0, dst, m));
        m += 4;
    }
    *outlen = m;
    return ZC_OK;
}
