/* LZ4 block codec with numcodecs' size prefix. */
#include "codecs/zc_lz4.h"

#include <stdint.h>

#include "codecs/zc_extern.h"
#include "zc_status.h"

#define PREFIX 4

size_t zc_lz4_bound(size_t srclen)
{
    if (srclen > LZ4_MAX_INPUT_SIZE)
        return 0;
    return (size_t)LZ4_compressBound((int)srclen) + PREFIX;
}

int zc_lz4_compress(const void *src, size_t srclen, void *dst, size_t dstcap, int acceleration,
                    size_t *outlen)
{
    if ((src == NULL && srclen) || dst == NULL || outlen == NULL)
        return ZC_ERR_PARAM;
    if (srclen > LZ4_MAX_INPUT_SIZE)
        return ZC_ERR_SIZE;
    if (dstcap < PREFIX)
        return ZC_ERR_SIZE;
    size_t room = dstcap - PREFIX;
    if (room > (size_t)INT32_MAX)
        room = INT32_MAX;
    unsigned char *d = (unsigned char *)dst;
    int n = LZ4_compress_fast(src ? (const char *)src : "", (char *)d + PREFIX, (int)srclen,
                              (int)room, acceleration < 1 ? 1 : acceleration);
    if (n <= 0)
        return ZC_ERR_SIZE;
    uint32_t len = (uint32_t)srclen;
    d[0] = (unsigned char)len;
    d[1] = (unsigned char)(len >> 8);
    d[2] = (unsigned char)(len >> 16);
    d[3] = (unsigned char)(len >> 24);
    *outlen = (size_t)n + PREFIX;
    return ZC_OK;
}

int zc_lz4_decoded_size(const void *src, size_t srclen, size_t *nbytes)
{
    const unsigned char *s = (const unsigned char *)src;
    if (src == NULL || nbytes == NULL)
        return ZC_ERR_PARAM;
    if (srclen <= PREFIX)
        return ZC_ERR_CORRUPT;
    uint32_t n = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
    /* LZ4 never expands a block more than 255:1, and no block exceeds LZ4's input limit;
     * this rejects garbage prefixes before anything is allocated. */
    if (n > LZ4_MAX_INPUT_SIZE || (uint64_t)n > (uint64_t)(srclen - PREFIX) * 255 + 16)
        return ZC_ERR_CORRUPT;
    *nbytes = n;
    return ZC_OK;
}

int zc_lz4_decompress(const void *src, size_t srclen, void *dst, size_t dstlen)
{
    size_t n;
    int status = zc_lz4_decoded_size(src, srclen, &n);
    if (status != ZC_OK)
        return status;
    if (n != dstlen)
        return ZC_ERR_SIZE;
    if (srclen - PREFIX > (size_t)INT32_MAX || (dst == NULL && dstlen))
        return ZC_ERR_CORRUPT;
    char dummy;
    int got = LZ4_decompress_safe((const char *)src + PREFIX, dst ? (char *)dst : &dummy,
                                  (int)(srclen - PREFIX), (int)dstlen);
    return got >= 0 && (size_t)got == dstlen ? ZC_OK : ZC_ERR_CORRUPT;
}
