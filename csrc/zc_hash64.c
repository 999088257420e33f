/* A 64-bit hash of bytes; see zc_hash64.h. Four independent lanes take 8 bytes each per
 * step (an add of the word times an odd constant, a rotate, a multiply): no lane waits on
 * another, so the multiplies overlap and the loop runs near a word per cycle and lane. The
 * lanes are then folded together with the length and the tail, and the result mixed so that
 * every input bit reaches every output bit. */
#include "zc_hash64.h"

#include <string.h>

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

static inline uint64_t step(uint64_t acc, uint64_t word)
{
    return rotl(acc + word * K2, 31) * K1;
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
    if (n >= 32) {
        uint64_t a = K1 + K2, b = K2, c = 0, d = 0 - K1;
        for (; n >= 32; p += 32, n -= 32) {
            a = step(a, load64(p));
            b = step(b, load64(p + 8));
            c = step(c, load64(p + 16));
            d = step(d, load64(p + 24));
        }
        h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + (uint64_t)len;
        h = (h ^ step(0, a)) * K1 + K4;
        h = (h ^ step(0, b)) * K1 + K4;
        h = (h ^ step(0, c)) * K1 + K4;
        h = (h ^ step(0, d)) * K1 + K4;
    }
    for (; n >= 8; p += 8, n -= 8)
        h = rotl(h ^ step(0, load64(p)), 27) * K1 + K4;
    for (; n > 0; p++, n--)
        h = rotl(h ^ (*p * K3), 11) * K1;
    return mix(h);
}
