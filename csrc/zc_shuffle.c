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

/* Byte j of each of the `count` elements: strided by elementsize in the elements, plane j
 * (contiguous from j * count) in the shuffled form. `shuffle` moves it from the elements to
 * the plane, else back. */
static inline int move_bytes(const void *src, void *dst, size_t len, size_t elementsize,
                             int shuffle)
{
    const uint8_t *s = (const uint8_t *)src;
    uint8_t *d = (uint8_t *)dst;
    int status = check(src, dst, len, elementsize);
    if (status != ZC_OK)
        return status;
    if (elementsize == 1) {
        if (len > 0)
            memcpy(d, s, len);
        return ZC_OK;
    }
    const size_t count = len / elementsize;
    /* Strides and plane starts of source and destination (constants once inlined). */
    const size_t ss = shuffle ? elementsize : 1, ds = shuffle ? 1 : elementsize;
    const size_t sj = shuffle ? 1 : count, dj = shuffle ? count : 1;
    for (size_t j = 0; j < elementsize; j++) {
        const uint8_t *in = s + j * sj;
        uint8_t *out = d + j * dj;
        for (size_t i = 0; i < count; i++)
            out[i * ds] = in[i * ss];
    }
    return ZC_OK;
}

int zc_shuffle(const void *src, void *dst, size_t len, size_t elementsize)
{
    return move_bytes(src, dst, len, elementsize, 1);
}

int zc_unshuffle(const void *src, void *dst, size_t len, size_t elementsize)
{
    return move_bytes(src, dst, len, elementsize, 0);
}
