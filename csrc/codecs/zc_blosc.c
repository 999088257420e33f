/* Blosc wrappers that validate the container before c-blosc touches it. */
#include "codecs/zc_blosc.h"

#include <blosc.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "codecs/zc_extern.h"
#include "zc_status.h"

size_t zc_blosc_bound(size_t nbytes)
{
    return nbytes + BLOSC_MAX_OVERHEAD;
}

int zc_blosc_compress(const void *src, size_t srclen, void *dst, size_t dstcap, int clevel,
                      int shuffle, size_t typesize, const char *cname, size_t blocksize,
                      size_t *outlen)
{
    if ((src == NULL && srclen) || dst == NULL || outlen == NULL || cname == NULL)
        return ZC_ERR_PARAM;
    if (clevel < 0 || clevel > 9 || shuffle < 0 || shuffle > 2 || typesize == 0)
        return ZC_ERR_PARAM;
    if (srclen > BLOSC_MAX_BUFFERSIZE || blocksize > (size_t)BLOSC_MAX_BLOCKSIZE)
        return ZC_ERR_SIZE;
    if (dstcap < BLOSC_MAX_OVERHEAD)
        return ZC_ERR_SIZE;
    /* Checked up front: c-blosc would also print a complaint to stderr. */
    if (blosc_compname_to_compcode(cname) < 0)
        return ZC_ERR_UNSUPPORTED;
    /* c-blosc silently treats typesizes above 255 as 1; keep that but make it explicit. */
    if (typesize > BLOSC_MAX_TYPESIZE)
        typesize = 1;
    if (dstcap > (size_t)INT_MAX)
        dstcap = INT_MAX;
    int n = blosc_compress_ctx(clevel, shuffle, typesize, srclen, src ? src : "", dst, dstcap,
                               cname, blocksize, 1);
    if (n == 0)
        return ZC_ERR_SIZE;
    if (n < 0)
        return ZC_ERR_PARAM;
    *outlen = (size_t)n;
    return ZC_OK;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int zc_blosc_decoded_size(const void *src, size_t srclen, size_t *nbytes)
{
    const unsigned char *h = (const unsigned char *)src;
    size_t n = 0;
    if (src == NULL || nbytes == NULL)
        return ZC_ERR_PARAM;
    if (srclen < BLOSC_MIN_HEADER_LENGTH)
        return ZC_ERR_CORRUPT;
    /* Header: version, versionlz, flags, typesize, nbytes, blocksize, cbytes (LE u32).
     * A stored chunk is exactly one blosc buffer, so cbytes must match what we were given. */
    if (le32(h + 12) != srclen || h[3] == 0)
        return ZC_ERR_CORRUPT;
    if (blosc_cbuffer_validate(src, srclen, &n) != 0)
        return ZC_ERR_CORRUPT;
    if (h[2] & BLOSC_MEMCPYED) {
        if (srclen != n + BLOSC_MAX_OVERHEAD)
            return ZC_ERR_CORRUPT;
    } else if (n > 0) {
        /* Compressed buffers carry a 4-byte start offset per block after the header. */
        size_t blocksize = le32(h + 8);
        if (blocksize == 0 || blocksize > n)
            return ZC_ERR_CORRUPT;
        size_t nblocks = n / blocksize + (n % blocksize != 0);
        if (nblocks > (srclen - BLOSC_MIN_HEADER_LENGTH) / 4)
            return ZC_ERR_CORRUPT;
    }
    *nbytes = n;
    return ZC_OK;
}

int zc_blosc_decompress(const void *src, size_t srclen, void *dst, size_t dstlen, int threads)
{
    size_t n;
    int status = zc_blosc_decoded_size(src, srclen, &n);
    if (status != ZC_OK)
        return status;
    if (n != dstlen)
        return ZC_ERR_SIZE;
    if (n == 0)
        return ZC_OK;
    if (dst == NULL)
        return ZC_ERR_PARAM;
    int got = blosc_decompress_ctx(src, dst, dstlen, threads > 1 ? threads : 1);
    if (got < 0)
        return ZC_ERR_CORRUPT;
    return (size_t)got == n ? ZC_OK : ZC_ERR_CORRUPT;
}

void zc_blosc_library_versions(const char **blosc, const char **zstd, const char **lz4,
                               const char **zlib)
{
    *blosc = blosc_get_version_string();
    *zstd = ZSTD_versionString();
    *lz4 = LZ4_versionString();
    *zlib = zlibVersion();
}
