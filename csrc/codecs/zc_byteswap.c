/* Byte swapping with compiler bswap builtins; memcpy keeps unaligned access legal. */
#include "codecs/zc_byteswap.h"

#include <stdint.h>
#include <string.h>

#include "os/zc_os.h"
#include "zc_status.h"

#define SWAP_LOOP(T, BSWAP)                       \
    for (size_t i = 0; i < n; i++) {              \
        T v;                                      \
        memcpy(&v, s + i * sizeof(T), sizeof(T)); \
        v = BSWAP(v);                             \
        memcpy(d + i * sizeof(T), &v, sizeof(T)); \
    }

int zc_byteswap(void *dst, const void *src, size_t n, size_t itemsize)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    if (itemsize == 0 || (n && (dst == NULL || src == NULL)))
        return ZC_ERR_PARAM;
    if (n > SIZE_MAX / itemsize)
        return ZC_ERR_SIZE;
    size_t total = n * itemsize;
    /* In-place is fine item by item; a partial overlap would read already-swapped bytes. */
    if (d != s && d < s + total && s < d + total)
        return ZC_ERR_PARAM;
    switch (itemsize) {
    case 1:
        if (d != s)
            memcpy(d, s, total);
        break;
    case 2:
        SWAP_LOOP(uint16_t, zc_bswap16)
        break;
    case 4:
        SWAP_LOOP(uint32_t, zc_bswap32)
        break;
    case 8:
        SWAP_LOOP(uint64_t, zc_bswap64)
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            unsigned char *di = d + i * itemsize;
            const unsigned char *si = s + i * itemsize;
            /* a <= b includes the middle byte of odd sizes, which out-of-place must copy. */
            for (size_t a = 0; a <= (itemsize - 1) / 2; a++) {
                size_t b = itemsize - 1 - a;
                unsigned char t = si[a];
                di[a] = si[b];
                di[b] = t;
            }
        }
    }
    return ZC_OK;
}
