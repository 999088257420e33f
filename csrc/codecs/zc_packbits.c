/* Bit packing through a 64-bit window, at most 32 bits moved at a time. */
#include "codecs/zc_packbits.h"

#include <stdint.h>
#include <string.h>

#include "zc_status.h"

int zc_packbits_size(size_t count, unsigned nbits, size_t *size)
{
    if (nbits < 1 || nbits > 64)
        return ZC_ERR_PARAM;
    if (count > (SIZE_MAX - 7) / nbits)
        return ZC_ERR_SIZE;
    *size = (count * nbits + 7) / 8;
    return ZC_OK;
}

/* `unpacked` and `packed` are the lengths of the components and of the bit stream. */
static int check(size_t unit, size_t count, unsigned first, unsigned nbits, size_t unpacked,
                 size_t packed)
{
    size_t expect;
    int status = zc_packbits_size(count, nbits, &expect);
    if (status != ZC_OK)
        return status;
    if (unit != 1 && unit != 2 && unit != 4 && unit != 8)
        return ZC_ERR_PARAM;
    if (first >= 8 * unit || nbits > 8 * unit - first)
        return ZC_ERR_PARAM;
    if (count > SIZE_MAX / unit || unpacked != count * unit || packed != expect)
        return ZC_ERR_SIZE;
    return ZC_OK;
}

static uint64_t load(const unsigned char *p, size_t unit)
{
    switch (unit) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void store(unsigned char *p, size_t unit, uint64_t v)
{
    switch (unit) {
    case 1: *p = (unsigned char)v; break;
    case 2: { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); break; }
    case 4: { uint32_t w = (uint32_t)v; memcpy(p, &w, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

static uint64_t low_bits(unsigned n)
{
    return n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;
}

int zc_packbits_encode(const void *src, size_t srclen, size_t unit, size_t count,
                       unsigned first, unsigned nbits, void *dst, size_t dstlen)
{
    int status = check(unit, count, first, nbits, srclen, dstlen);
    if (status != ZC_OK)
        return status;
    const unsigned char *in = src;
    unsigned char *out = dst;
    if (nbits == 1 && unit == 1) { /* bool and single bits: eight values a byte */
        memset(out, 0, dstlen);
        for (size_t i = 0; i < count; i++)
            out[i / 8] |= (unsigned char)(((in[i] >> first) & 1u) << (i % 8));
        return ZC_OK;
    }
    size_t at = 0;         /* bytes written */
    uint64_t window = 0;   /* pending bits, the oldest lowest */
    unsigned pending = 0;  /* < 8 between components */
    for (size_t i = 0; i < count; i++) {
        uint64_t v = (load(in + i * unit, unit) >> first) & low_bits(nbits);
        for (unsigned done = 0; done < nbits;) {
            unsigned take = nbits - done > 32 ? 32 : nbits - done;
            window |= ((v >> done) & low_bits(take)) << pending;
            pending += take;
            done += take;
            while (pending >= 8) {
                out[at++] = (unsigned char)window;
                window >>= 8;
                pending -= 8;
            }
        }
    }
    if (pending > 0)
        out[at++] = (unsigned char)window;
    return at == dstlen ? ZC_OK : ZC_ERR_SIZE;
}

int zc_packbits_decode(const void *src, size_t srclen, size_t unit, size_t count,
                       unsigned first, unsigned nbits, unsigned sign_bits, void *dst,
                       size_t dstlen)
{
    int status = check(unit, count, first, nbits, dstlen, srclen);
    if (status != ZC_OK)
        return status;
    if (sign_bits > 8 * unit || (sign_bits > 0 && sign_bits < first + nbits))
        return ZC_ERR_PARAM;
    const unsigned char *in = src;
    unsigned char *out = dst;
    if (nbits == 1 && unit == 1 && sign_bits == 0) {
        for (size_t i = 0; i < count; i++)
            out[i] = (unsigned char)(((in[i / 8] >> (i % 8)) & 1u) << first);
        return ZC_OK;
    }
    size_t at = 0;         /* bytes read */
    uint64_t window = 0;
    unsigned pending = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t v = 0;
        for (unsigned done = 0; done < nbits;) {
            unsigned take = nbits - done > 32 ? 32 : nbits - done;
            while (pending < take) {
                window |= (uint64_t)in[at++] << pending;
                pending += 8;
            }
            v |= (window & low_bits(take)) << done;
            window >>= take;
            pending -= take;
            done += take;
        }
        v <<= first;
        unsigned top = first + nbits - 1;
        if (sign_bits > 0 && ((v >> top) & 1))
            v |= low_bits(sign_bits) & ~low_bits(top + 1);
        store(out + i * unit, unit, v);
    }
    return ZC_OK;
}
