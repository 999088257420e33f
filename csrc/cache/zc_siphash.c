/* SipHash-1-3 and its tree; see zc_siphash.h. The state is four 64-bit words set from the key;
 * each 8-byte word of input is xored into the fourth, mixed by one round and xored into the
 * first; the last 0 to 7 bytes and the length (mod 256) make a final word; three rounds then
 * mix the state, which is folded into the result.
 *
 * A round depends on the one before, so one SipHash keeps a core's units mostly idle; the
 * tree's eight lanes are independent, run interleaved in one loop: with AVX2, as two vectors
 * of four lanes each (an x86-64 CPU that has it, checked at run time), else as plain 64-bit
 * words, four lanes at a time. */
#include "cache/zc_siphash.h"

#include <string.h>

#include "os/zc_os.h"

/* Eight: two AVX2 vectors, so that one's rounds run while the other's wait on their latency
 * (one vector of four lanes ran about 9 GB/s, two 13 on the Zen 3 this was measured on). */
#define LANES 8
#define STRIPE (8 * LANES) /* bytes of input per step of the lanes: a word each */
/* Inputs shorter than this take one SipHash: the lanes' finalization and the hash of their
 * digests cost about 45 rounds (four a lane, thirteen for the last hash), which the vector
 * lanes save back from about 256 bytes, the plain C ones from about 1 KiB (on that Zen 3). */
#define TREE_MIN 512
/* The input of the hash of the digests: the digests, the length and the bytes after the last
 * whole stripe. */
#define TOP_MAX (8 * LANES + 8 + STRIPE - 1)

/* "somepseudorandomlygeneratedbytes", the algorithm's constants. */
#define C0 0x736f6d6570736575ull
#define C1 0x646f72616e646f6dull
#define C2 0x6c7967656e657261ull
#define C3 0x7465646279746573ull

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

static inline void store_le64(unsigned char *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = zc_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

typedef struct {
    uint64_t v0, v1, v2, v3;
} sip_state;

static inline void sip_init(sip_state *s, uint64_t k0, uint64_t k1)
{
    s->v0 = k0 ^ C0;
    s->v1 = k1 ^ C1;
    s->v2 = k0 ^ C2;
    s->v3 = k1 ^ C3;
}

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

/* The result, after `last` (the input's length mod 256 in its top byte, its last bytes below). */
static inline uint64_t sip_finish(sip_state *s, uint64_t last)
{
    sip_word(s, last);
    s->v2 ^= 0xff;
    sip_round(s);
    sip_round(s);
    sip_round(s);
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
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

static uint64_t siphash13(const zc_siphash_key *key, const unsigned char *p, size_t len)
{
    sip_state s;
    sip_init(&s, key->k0, key->k1);
    const unsigned char *end = p + (len & ~(size_t)7);
    for (; p != end; p += 8)
        sip_word(&s, load_le64(p));
    uint64_t last = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        last |= (uint64_t)p[i] << (8 * i);
    return sip_finish(&s, last);
}

/* The lanes' digests over the `stripes` whole stripes at `p`, as 8-byte little-endian words
 * into `top`. Four lanes at a time: their 16 words of state about fill the registers of
 * x86-64, where eight lanes' would be spilled to memory every round. */
static void lanes_portable(const zc_siphash_key *key, const unsigned char *p, size_t stripes,
                           unsigned char *top)
{
    for (int first = 0; first < LANES; first += 4) {
        sip_state a, b, c, d;
        sip_init(&a, key->k0, key->k1 ^ (uint64_t)(first + 1));
        sip_init(&b, key->k0, key->k1 ^ (uint64_t)(first + 2));
        sip_init(&c, key->k0, key->k1 ^ (uint64_t)(first + 3));
        sip_init(&d, key->k0, key->k1 ^ (uint64_t)(first + 4));
        const unsigned char *w = p + 8 * first;
        for (size_t j = 0; j < stripes; j++, w += STRIPE) {
            sip_word(&a, load_le64(w));
            sip_word(&b, load_le64(w + 8));
            sip_word(&c, load_le64(w + 16));
            sip_word(&d, load_le64(w + 24));
        }
        /* Each lane's input is 8 * stripes bytes: no bytes left over, only its length. */
        const uint64_t last = (uint64_t)(8 * stripes) << 56;
        store_le64(top + 8 * first, sip_finish(&a, last));
        store_le64(top + 8 * first + 8, sip_finish(&b, last));
        store_le64(top + 8 * first + 16, sip_finish(&c, last));
        store_le64(top + 8 * first + 24, sip_finish(&d, last));
    }
}

#if (defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))) || \
    (defined(ZC_MSVC) && defined(_M_X64))
#include <immintrin.h>
#define ZC_HAVE_AVX2_PATH 1
#ifdef ZC_MSVC
#define TARGET_AVX2 /* MSVC compiles every intrinsic without asking */
#else
#define TARGET_AVX2 __attribute__((target("avx2")))
#endif

/* Rotations of each 64-bit element: by 32 and 16 a shuffle of its halves or bytes, one
 * instruction where shifts take three. */
#define ROTL_V(x, r) _mm256_or_si256(_mm256_slli_epi64((x), (r)), _mm256_srli_epi64((x), 64 - (r)))
#define ROTL32_V(x) _mm256_shuffle_epi32((x), _MM_SHUFFLE(2, 3, 0, 1))
#define ROTL16_V(x, bytes) _mm256_shuffle_epi8((x), (bytes))

/* One round of four lanes' states, an element each of v0 to v3 (the scalar sip_round). */
#define ROUND_V(v0, v1, v2, v3, bytes)                  \
    do {                                                \
        v0 = _mm256_add_epi64(v0, v1);                  \
        v1 = _mm256_xor_si256(ROTL_V(v1, 13), v0);      \
        v0 = ROTL32_V(v0);                              \
        v2 = _mm256_add_epi64(v2, v3);                  \
        v3 = _mm256_xor_si256(ROTL16_V(v3, bytes), v2); \
        v0 = _mm256_add_epi64(v0, v3);                  \
        v3 = _mm256_xor_si256(ROTL_V(v3, 21), v0);      \
        v2 = _mm256_add_epi64(v2, v1);                  \
        v1 = _mm256_xor_si256(ROTL_V(v1, 17), v2);      \
        v2 = ROTL32_V(v2);                              \
    } while (0)

#define WORD_V(v0, v1, v2, v3, m, bytes) \
    do {                                 \
        v3 = _mm256_xor_si256(v3, m);    \
        ROUND_V(v0, v1, v2, v3, bytes);  \
        v0 = _mm256_xor_si256(v0, m);    \
    } while (0)

/* The tweaks of lanes first to first + 3 (k1 ^ (i + 1)), element i - first. */
#define TWEAKS_V(first) _mm256_set_epi64x((first) + 4, (first) + 3, (first) + 2, (first) + 1)

/* lanes_portable's digests, lanes 0 to 3 in the vectors a*, 4 to 7 in b*: the two sets'
 * rounds interleave, so each hides the other's latency. x86-64 is little-endian: an
 * element's store is the word's little-endian bytes. */
TARGET_AVX2 static void lanes_avx2(const zc_siphash_key *key, const unsigned char *p,
                                   size_t stripes, unsigned char *top)
{
    /* Within each 8-byte element, byte j of the rotation by 16 is byte j - 2 (mod 8). */
    const __m256i bytes = _mm256_setr_epi8(6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13,
                                           6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13);
    const __m256i v0 = _mm256_set1_epi64x((long long)(key->k0 ^ C0));
    const __m256i v1 = _mm256_set1_epi64x((long long)(key->k1 ^ C1));
    const __m256i v2 = _mm256_set1_epi64x((long long)(key->k0 ^ C2));
    const __m256i v3 = _mm256_set1_epi64x((long long)(key->k1 ^ C3));
    const __m256i ta = TWEAKS_V(0), tb = TWEAKS_V(4);
    __m256i a0 = v0, a1 = _mm256_xor_si256(v1, ta), a2 = v2, a3 = _mm256_xor_si256(v3, ta);
    __m256i b0 = v0, b1 = _mm256_xor_si256(v1, tb), b2 = v2, b3 = _mm256_xor_si256(v3, tb);
    for (size_t j = 0; j < stripes; j++, p += STRIPE) {
        const __m256i ma = _mm256_loadu_si256((const __m256i *)p);
        const __m256i mb = _mm256_loadu_si256((const __m256i *)(p + 32));
        WORD_V(a0, a1, a2, a3, ma, bytes);
        WORD_V(b0, b1, b2, b3, mb, bytes);
    }
    const __m256i last = _mm256_set1_epi64x((long long)((uint64_t)(8 * stripes) << 56));
    WORD_V(a0, a1, a2, a3, last, bytes);
    WORD_V(b0, b1, b2, b3, last, bytes);
    const __m256i ff = _mm256_set1_epi64x(0xff);
    a2 = _mm256_xor_si256(a2, ff);
    b2 = _mm256_xor_si256(b2, ff);
    for (int r = 0; r < 3; r++) {
        ROUND_V(a0, a1, a2, a3, bytes);
        ROUND_V(b0, b1, b2, b3, bytes);
    }
    a0 = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    b0 = _mm256_xor_si256(_mm256_xor_si256(b0, b1), _mm256_xor_si256(b2, b3));
    _mm256_storeu_si256((__m256i *)top, a0);
    _mm256_storeu_si256((__m256i *)(top + 32), b0);
}

static int have_avx2(void)
{
    /* -1 unknown. Threads that race on first use all store the same answer: relaxed atomics
     * make that race defined (and quiet under ThreadSanitizer). */
    static int cached = -1;
    int have = zc_atomic_load_int(&cached, ZC_RELAXED);
    if (have < 0) {
#ifdef ZC_MSVC
        /* AVX2 (leaf 7, EBX bit 5) is usable only where the system saves the vectors' upper
         * halves: OSXSAVE and AVX (leaf 1, ECX bits 27 and 28), and XCR0's SSE and AVX state
         * bits (1 and 2). */
        int regs[4];
        __cpuid(regs, 0);
        have = 0;
        if (regs[0] >= 7) {
            __cpuid(regs, 1);
            if ((regs[2] >> 27 & 1) && (regs[2] >> 28 & 1) && (_xgetbv(0) & 6) == 6) {
                __cpuidex(regs, 7, 0);
                have = regs[1] >> 5 & 1;
            }
        }
#else
        /* (Checks the system's saving of the vectors too.) */
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
        zc_atomic_store_int(&cached, have, ZC_RELAXED);
    }
    return have;
}
#endif

static uint64_t tree(const zc_siphash_key *key, const unsigned char *p, size_t len,
                     int portable)
{
    if (len < TREE_MIN)
        return siphash13(key, p, len);
    const size_t stripes = len / STRIPE, rest = len % STRIPE;
    unsigned char top[TOP_MAX];
#ifdef ZC_HAVE_AVX2_PATH
    if (!portable && have_avx2())
        lanes_avx2(key, p, stripes, top);
    else
        lanes_portable(key, p, stripes, top);
#else
    (void)portable; /* the plain C lanes are the only ones here */
    lanes_portable(key, p, stripes, top);
#endif
    store_le64(top + 8 * LANES, (uint64_t)len);
    memcpy(top + 8 * LANES + 8, p + stripes * STRIPE, rest);
    return siphash13(key, top, 8 * LANES + 8 + rest);
}

uint64_t zc_siphash_tree(const zc_siphash_key *key, const void *data, size_t len)
{
    return tree(key, (const unsigned char *)data, len, 0);
}

uint64_t zc_siphash_tree_portable(const zc_siphash_key *key, const void *data, size_t len)
{
    return tree(key, (const unsigned char *)data, len, 1);
}
