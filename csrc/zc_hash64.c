/* A 64-bit hash of bytes; see zc_hash64.h. Four independent lanes take 16 bytes each per
 * step: one 64 x 64 -> 128-bit multiply of the two words (each first mixed with a constant,
 * the second with the lane's state) folded to 64 bits, plus the state rotated and both
 * words added in. The multiply mixes; the added terms keep every input bit in the state
 * even where a factor happens to be zero, and the rotation keeps the order of the steps. No
 * lane waits on another, so the loop runs at about a multiply per 16 bytes. The lanes are
 * then folded together with the length and the tail, and the result mixed so that every
 * input bit reaches every output bit. */
#include "zc_hash64.h"

#include <string.h>

#if !defined(__SIZEOF_INT128__) && defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
#include <intrin.h>
#endif

/* Odd constants with about half their bits set, spread over the word. */
#define K1 0x9e3779b97f4a7c15ull
#define K2 0xd6e8feb86659fd93ull
#define K3 0xff51afd7ed558ccdull
#define K4 0xc4ceb9fe1a85ec53ull

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* The word at p (any alignment) in the machine's byte order: hashes are never stored. */
static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The 128-bit product of a and b, its halves xored together. */
static inline uint64_t mul_fold(uint64_t a, uint64_t b)
{
#if defined(__SIZEOF_INT128__)
    const unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#elif defined(_MSC_VER) && defined(_M_X64)
    uint64_t hi;
    const uint64_t lo = _umul128(a, b, &hi);
    return lo ^ hi;
#elif defined(_MSC_VER) && defined(_M_ARM64)
    return (a * b) ^ __umulh(a, b);
#else
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    const uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return (a * b) ^ hi;
#endif
}

static inline uint64_t step(uint64_t acc, uint64_t w0, uint64_t w1)
{
    return mul_fold(w0 ^ K1, w1 ^ K2 ^ acc) + rotl(acc, 29) + w0 + rotl(w1, 32);
}

static inline uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= K3;
    h ^= h >> 33;
    h *= K4;
    h ^= h >> 33;
    return h;
}

uint64_t zc_hash64(const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    size_t n = len;
    uint64_t h = K4 ^ (uint64_t)len;
    if (n >= 64) {
        uint64_t a = K1, b = K2, c = K3, d = K4;
        for (; n >= 64; p += 64, n -= 64) {
            a = step(a, load64(p), load64(p + 8));
            b = step(b, load64(p + 16), load64(p + 24));
            c = step(c, load64(p + 32), load64(p + 40));
            d = step(d, load64(p + 48), load64(p + 56));
        }
        h = mix(h ^ a) * K1 + rotl(mix(b), 17);
        h = mix(h ^ c) * K2 + rotl(mix(d), 41);
    }
    for (; n >= 16; p += 16, n -= 16)
        h = step(h, load64(p), load64(p + 16 - 8));
    if (n > 0) {
        unsigned char tail[16] = {0};
        memcpy(tail, p, n);
        h = step(h, load64(tail), load64(tail + 8)); /* (the length is in h) */
    }
    return mix(h);
}
