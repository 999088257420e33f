/* vlen-utf8 / vlen-bytes framing; every length is checked against the buffer before use. */
#include "codecs/zc_vlen.h"

#include <stdint.h>
#include <string.h>

#include "zc_status.h"

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void store_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

int zc_vlen_encoded_size(size_t n, const size_t *lens, size_t *total)
{
    size_t t = 4;
    if (n > UINT32_MAX)
        return ZC_ERR_SIZE;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] > UINT32_MAX || lens[i] > SIZE_MAX - 4 - t)
            return ZC_ERR_SIZE;
        t += 4 + lens[i];
    }
    *total = t;
    return ZC_OK;
}

int zc_vlen_pack(size_t n, const char *const *ptrs, const size_t *lens, void *dst, size_t dstlen)
{
    uint8_t *d = (uint8_t *)dst;
    size_t total, pos = 4;
    int status = zc_vlen_encoded_size(n, lens, &total);
    if (status != ZC_OK)
        return status;
    if (dstlen != total)
        return ZC_ERR_SIZE;
    store_le32(d, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        store_le32(d + pos, (uint32_t)lens[i]);
        pos += 4;
        if (lens[i] > 0) {
            if (ptrs[i] == NULL)
                return ZC_ERR_PARAM;
            memcpy(d + pos, ptrs[i], lens[i]);
        }
        pos += lens[i];
    }
    return ZC_OK;
}

int zc_vlen_index(const void *src, size_t srclen, size_t n, size_t *offsets, size_t *lens)
{
    const uint8_t *s = (const uint8_t *)src;
    size_t pos = 4;
    if (srclen < 4 || load_le32(s) != n)
        return ZC_ERR_CORRUPT;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        if (srclen - pos < 4)
            return ZC_ERR_CORRUPT;
        len = load_le32(s + pos);
        pos += 4;
        if (srclen - pos < len)
            return ZC_ERR_CORRUPT;
        offsets[i] = pos;
        lens[i] = len;
        pos += len;
    }
    return pos == srclen ? ZC_OK : ZC_ERR_SIZE;
}
