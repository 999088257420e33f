/* Byte shuffle and unshuffle, numcodecs' layout (the same as blosc's, without blocks). */
#include "zc_shuffle.h"

#include <stdint.h>
#include <string.h>

#include "zc_status.h"

static int check(const void *src, const void *dst, size_t len, size_t elementsize)
{
    const uint8_t *s = (const uint8_t *)src, *d = (const uint8_t *)dst;
    if (elementsize == 0 || len % elementsize != 0)
        return ZC_ERR_SIZE;
    if (len > 0 && (src == NULL || dst == NULL))
        return ZC_ERR_PARAM;
    if (len > 0 && s < d + len && d < s + len)
        return ZC_ERR_OVERLAP;
    return ZC_OK;
}

int zc_shuffle(const void *src, void *dst, size_t len, size_t elementsize)
{
    const uint8_t *s = (const uint8_t *)src;
    uint8_t *d = (uint8_t *)dst;
    size_t count;
    int status = check(src, dst, len, elementsize);
    if (status != ZC_OK)
        return status;
    if (elementsize == 1) {
        if (len > 0)
            memcpy(d, s, len);
        return ZC_OK;
    }
    count = len / elementsize;
    for (size_t j = 0; j < elementsize; j++) {
        uint8_t *out = d + j * count;
        const uint8_t *in = s + j;
        for (size_t i = 0; i < count; i++)
            out[i] = in[i * elementsize];
    }
    return ZC_OK;
}

int zc_unshuffle(const void *src, void *dst, size_t len, size_t elementsize)
{
    const uint8_t *s = (const uint8_t *)src;
    uint8_t *d = (uint8_t *)dst;
    size_t count;
    int status = check(src, dst, len, elementsize);
    if (status != ZC_OK)
        return status;
    if (elementsize == 1) {
        if (len > 0)
            memcpy(d, s, len);
        return ZC_OK;
    }
    count = len / elementsize;
    for (size_t j = 0; j < elementsize; j++) {
        const uint8_t *in = s + j * count;
        uint8_t *out = d + j;
        for (size_t i = 0; i < count; i++)
            out[i * elementsize] = in[i];
    }
    return ZC_OK;
}
