/* Bit rounding: add half a quantum (less one, plus the kept part's lowest bit, so ties go to
 * even) to the bits being dropped, then clear them. */
#include "codecs/zc_bitround.h"

#include <stdint.h>

#include "os/zc_os.h"
#include "zc_status.h"

/* The number of bits up to the most significant set bit of `v` (0 for 0). */
static unsigned bit_width(uint64_t v)
{
#ifndef ZC_MSVC
    return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
#else
    unsigned n = 0;
    for (unsigned step = 32; step > 0; step /= 2) {
        if (v >> step) {
            v >>= step;
            n += step;
        }
    }
    return n + (unsigned)v;
#endif
}

/* `v` (of `bits` bits) rounded so that only its top `keepbits` of `maxbits` low bits stay. */
static uint64_t round_bits(uint64_t v, unsigned bits, unsigned keepbits, unsigned maxbits)
{
    if (keepbits >= maxbits)
        return v;
    unsigned drop = maxbits - keepbits;
    uint64_t all = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    uint64_t mask = (all >> drop) << drop;
    uint64_t add = ((v >> drop) & 1) + (((uint64_t)1 << (drop - 1)) - 1);
    uint64_t sum = v + add;
    if (sum > all || sum < v) /* carried out of the unit: saturate */
        sum = all;
    return sum & mask;
}

#define BITROUND_LOOP(T, suffix)                                                         \
    static void run_##suffix(T *a, size_t n, unsigned keepbits, unsigned mantissa_bits)  \
    {                                                                                    \
        const unsigned bits = 8 * sizeof(T);                                             \
        for (size_t i = 0; i < n; i++) {                                                 \
            unsigned maxbits = mantissa_bits ? mantissa_bits : bit_width(a[i]);          \
            a[i] = (T)round_bits(a[i], bits, keepbits, maxbits);                         \
        }                                                                                \
    }

BITROUND_LOOP(uint8_t, u8)
BITROUND_LOOP(uint16_t, u16)
BITROUND_LOOP(uint32_t, u32)
BITROUND_LOOP(uint64_t, u64)

int zc_bitround(void *data, size_t len, size_t width, unsigned keepbits,
                unsigned mantissa_bits)
{
    if (width != 1 && width != 2 && width != 4 && width != 8)
        return ZC_ERR_PARAM;
    if (keepbits < 1 || mantissa_bits >= 8 * width)
        return ZC_ERR_PARAM;
    if (len % width != 0)
        return ZC_ERR_SIZE;
    if (len > 0 && (data == NULL || ((uintptr_t)data) % width != 0))
        return ZC_ERR_PARAM; /* callers pass numpy-aligned buffers */
    size_t n = len / width;
    switch (width) {
    case 1: run_u8(data, n, keepbits, mantissa_bits); break;
    case 2: run_u16(data, n, keepbits, mantissa_bits); break;
    case 4: run_u32(data, n, keepbits, mantissa_bits); break;
    default: run_u64(data, n, keepbits, mantissa_bits); break;
    }
    return ZC_OK;
}
