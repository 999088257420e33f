/* SipHash-1-3; see zc_siphash.h. The state is four 64-bit words set from the key; each 8-byte
 * word of input is xored into the third, mixed by one round and xored into the first; the
 * last 0 to 7 bytes and the length (mod 256) make a final word; three rounds then mix the
 * state, which is folded into the result. */
#include "zc_siphash.h"

#include <string.h>

#include "zc_os.h"

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* The little-endian word at p (any alignment). */
static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = zc_bswap64(v);
#endif
    return v;
}

typedef struct {
    uint64_t v0, v1, v2, v3;
} sip_state;

static inline void sip_round(sip_state *s)
{
    s->v0 += s->v1;
    s->v1 = rotl(s->v1, 13) ^ s->v0;
    s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotl(s->v3, 16) ^ s->v2;
    s->v0 += s->v3;
    s->v3 = rotl(s->v3, 21) ^ s->v0;
    s->v2 += s->v1;
    s->v1 = rotl(s->v1, 17) ^ s->v2;
    s->v2 = rotl(s->v2, 32);
}

static inline void sip_word(sip_state *s, uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    s->v0 ^= m;
}

int zc_siphash_key_new(zc_siphash_key *key)
{
    unsigned char bytes[16];
    if (zc_os_random(bytes, sizeof bytes) != 0)
        return -1;
    key->k0 = load_le64(bytes);
    key->k1 = load_le64(bytes + 8);
    return 0;
}

uint64_t zc_siphash13(const zc_siphash_key *key, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    /* "somepseudorandomlygeneratedbytes", the algorithm's constants. */
    sip_state s = {key->k0 ^ 0x736f6d6570736575ull, key->k1 ^ 0x646f72616e646f6dull,
                   key->k0 ^ 0x6c7967656e657261ull, key->k1 ^ 0x7465646279746573ull};
    const unsigned char *end = p + (len & ~(size_t)7);
    for (; p != end; p += 8)
        sip_word(&s, load_le64(p));
    uint64_t last = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        last |= (uint64_t)p[i] << (8 * i);
    sip_word(&s, last);
    s.v2 ^= 0xff;
    sip_round(&s);
    sip_round(&s);
    sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
