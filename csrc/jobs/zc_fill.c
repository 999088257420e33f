/* Fill detection. The bytewise check compares the first item with the pattern and then the
 * buffer with itself shifted by one item: equal overall iff every item equals the first. */
#include "jobs/zc_fill.h"

#include <stdint.h>
#include <string.h>

#include "os/zc_os.h"
#include "zc_status.h"

int zc_is_fill(const void *buf, size_t nbytes, const void *pattern, size_t itemsize)
{
    if (itemsize == 0 || pattern == NULL || (nbytes && buf == NULL) || nbytes % itemsize)
        return ZC_ERR_PARAM;
    if (nbytes == 0)
        return 1;
    const unsigned char *b = (const unsigned char *)buf;
    if (memcmp(b, pattern, itemsize) != 0)
        return 0;
    /* Chunked so both streams of the self-comparison stay in cache and a mismatch stops early. */
    const size_t step = 1 << 16;
    for (size_t off = 0; off < nbytes - itemsize; off += step) {
        size_t len = nbytes - itemsize - off < step ? nbytes - itemsize - off : step;
        if (memcmp(b + off, b + off + itemsize, len) != 0)
            return 0;
    }
    return 1;
}

static uint64_t load(const unsigned char *p, size_t size, int swapped)
{
    uint16_t a;
    uint32_t b;
    uint64_t c;
    switch (size) {
    case 2:
        memcpy(&a, p, 2);
        return swapped ? zc_bswap16(a) : a;
    case 4:
        memcpy(&b, p, 4);
        return swapped ? zc_bswap32(b) : b;
    default:
        memcpy(&c, p, 8);
        return swapped ? zc_bswap64(c) : c;
    }
}

static int is_nan(const unsigned char *p, size_t size, int swapped)
{
    uint64_t v = load(p, size, swapped);
    switch (size) {
    case 2:
        return (v & 0x7C00u) == 0x7C00u && (v & 0x03FFu);
    case 4:
        return (v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu);
    default:
        return (v & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (v & 0x000FFFFFFFFFFFFFull);
    }
}

int zc_is_fill_float(const void *buf, size_t nbytes, const void *pattern, size_t itemsize,
                     size_t floatsize, int swapped)
{
    if (floatsize != 2 && floatsize != 4 && floatsize != 8)
        return ZC_ERR_PARAM;
    if (itemsize == 0 || itemsize % floatsize || itemsize / floatsize > 2 || pattern == NULL)
        return ZC_ERR_PARAM;
    if ((nbytes && buf == NULL) || nbytes % itemsize)
        return ZC_ERR_PARAM;
    const unsigned char *pat = (const unsigned char *)pattern;
    size_t ncomp = itemsize / floatsize;
    int nan[2] = {0, 0}, any_nan = 0;
    for (size_t c = 0; c < ncomp; c++)
        any_nan |= nan[c] = is_nan(pat + c * floatsize, floatsize, swapped);
    if (!any_nan)
        return zc_is_fill(buf, nbytes, pattern, itemsize);
    const unsigned char *b = (const unsigned char *)buf;
    for (size_t off = 0; off < nbytes; off += itemsize) {
        for (size_t c = 0; c < ncomp; c++) {
            const unsigned char *p = b + off + c * floatsize;
            if (nan[c] ? !is_nan(p, floatsize, swapped) : memcmp(p, pat + c * floatsize, floatsize) != 0)
                return 0;
        }
    }
    return 1;
}

int zc_is_fill_value(const void *buf, size_t nbytes, const void *pattern, size_t itemsize,
                     size_t floatsize)
{
    return floatsize ? zc_is_fill_float(buf, nbytes, pattern, itemsize, floatsize, 0)
                     : zc_is_fill(buf, nbytes, pattern, itemsize);
}
