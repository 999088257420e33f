/* crc32 (zlib's, from libblosc.a), adler32, Fletcher-32 and Jenkins lookup3 as HDF5 and
 * numcodecs define them, and the 4-byte little-endian framing numcodecs puts around data. */
#include "codecs/zc_checksums.h"

#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "zc_status.h"

/* zlib's length arguments are size_t (z_size_t), but feed it bounded pieces anyway so that
 * a 32-bit unsigned long build of zlib could never see a truncated length. */
#define ZC_ZLIB_PIECE ((size_t)1 << 30)

static uint32_t zlib_crc32(const unsigned char *p, size_t len)
{
    unsigned long v = 0;
    while (len > 0) {
        size_t n = len < ZC_ZLIB_PIECE ? len : ZC_ZLIB_PIECE;
        v = crc32_z(v, p, n);
        p += n;
        len -= n;
    }
    return (uint32_t)(v & 0xFFFFFFFFUL);
}

#define ADLER_MOD 65521u
/* The most bytes summed in 32 bits before a reduction (zlib's NMAX), in 32-byte steps. */
#define ADLER_BLOCK 5536

static uint32_t adler32_scalar(uint32_t s1, uint32_t s2, const uint8_t *p, size_t len,
                               uint32_t *s2out)
{
    while (len > 0) {
        size_t n = len < ADLER_BLOCK ? len : ADLER_BLOCK;
        len -= n;
        for (; n >= 4; n -= 4, p += 4) {
            s1 += p[0];
            s2 += s1;
            s1 += p[1];
            s2 += s1;
            s1 += p[2];
            s2 += s1;
            s1 += p[3];
            s2 += s1;
        }
        for (; n > 0; n--, p++) {
            s1 += *p;
            s2 += s1;
        }
        s1 %= ADLER_MOD;
        s2 %= ADLER_MOD;
    }
    *s2out = s2;
    return s1;
}

#ifdef __SSE2__
static uint32_t hsum32(__m128i v)
{
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(v);
}
#endif

uint32_t zc_adler32(uint32_t adler, const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    uint32_t s1 = adler & 0xffff, s2 = adler >> 16;
#ifdef __SSE2__
    /* Per 32-byte step: s2 += 32 * s1 + sum (32 - i) * p[i], s1 += sum p[i]; the sums of
     * s1 before each step are kept apart and multiplied by 32 once per block. */
    const __m128i zero = _mm_setzero_si128();
    const __m128i w1 = _mm_setr_epi16(32, 31, 30, 29, 28, 27, 26, 25);
    const __m128i w2 = _mm_setr_epi16(24, 23, 22, 21, 20, 19, 18, 17);
    const __m128i w3 = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
    const __m128i w4 = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
    while (len >= 32) {
        size_t n = len < ADLER_BLOCK ? len & ~(size_t)31 : ADLER_BLOCK;
        len -= n;
        uint64_t s2wide = s2 + (uint64_t)s1 * n;
        __m128i vs1 = zero, vprev = zero, vs2 = zero;
        for (size_t k = 0; k < n; k += 32, p += 32) {
            __m128i a = _mm_loadu_si128((const __m128i *)p);
            __m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
            vprev = _mm_add_epi32(vprev, vs1);
            vs1 = _mm_add_epi32(vs1, _mm_add_epi32(_mm_sad_epu8(a, zero), _mm_sad_epu8(b, zero)));
            vs2 = _mm_add_epi32(vs2, _mm_madd_epi16(_mm_unpacklo_epi8(a, zero), w1));
            vs2 = _mm_add_epi32(vs2, _mm_madd_epi16(_mm_unpackhi_epi8(a, zero), w2));
            vs2 = _mm_add_epi32(vs2, _mm_madd_epi16(_mm_unpacklo_epi8(b, zero), w3));
            vs2 = _mm_add_epi32(vs2, _mm_madd_epi16(_mm_unpackhi_epi8(b, zero), w4));
        }
        s2wide += 32 * (uint64_t)hsum32(vprev) + hsum32(vs2);
        s1 = (uint32_t)((s1 + (uint64_t)hsum32(vs1)) % ADLER_MOD);
        s2 = (uint32_t)(s2wide % ADLER_MOD);
    }
#endif
    s1 = adler32_scalar(s1, s2, p, len, &s2);
    return s2 << 16 | s1;
}

uint32_t zc_fletcher32(const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    size_t words = len / 2;
    uint32_t sum1 = 0, sum2 = 0;

    /* 360 words keep both sums below 2^32 between reductions. */
    while (words > 0) {
        size_t t = words > 360 ? 360 : words;
        words -= t;
        while (t-- > 0) {
            sum1 += ((uint32_t)p[0] << 8) | (uint32_t)p[1];
            sum2 += sum1;
            p += 2;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if (len % 2) {
        sum1 += (uint32_t)p[0] << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    return (sum2 << 16) | sum1;
}

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))
#define MIX(a, b, c)                     \
    do {                                 \
        a -= c; a ^= ROT(c, 4);  c += b; \
        b -= a; b ^= ROT(a, 6);  a += c; \
        c -= b; c ^= ROT(b, 8);  b += a; \
        a -= c; a ^= ROT(c, 16); c += b; \
        b -= a; b ^= ROT(a, 19); a += c; \
        c -= b; c ^= ROT(b, 4);  b += a; \
    } while (0)
#define FINAL(a, b, c)                   \
    do {                                 \
        c ^= b; c -= ROT(b, 14);         \
        a ^= c; a -= ROT(c, 11);         \
        b ^= a; b -= ROT(a, 25);         \
        c ^= b; c -= ROT(b, 16);         \
        a ^= c; a -= ROT(c, 4);          \
        b ^= a; b -= ROT(a, 14);         \
        c ^= b; c -= ROT(b, 24);         \
    } while (0)

/* The bytes [pos, pos + n) of the virtual concatenation p1+p2 (n <= 12), as a pointer into
 * one of them or, when straddling the boundary, a copy in `tmp`. */
static const uint8_t *span(const uint8_t *p1, size_t n1, const uint8_t *p2, size_t pos, size_t n,
                           uint8_t *tmp)
{
    if (pos >= n1)
        return p2 + (pos - n1);
    if (pos + n <= n1)
        return p1 + pos;
    memcpy(tmp, p1 + pos, n1 - pos);
    memcpy(tmp + (n1 - pos), p2, n - (n1 - pos));
    return tmp;
}

static uint32_t le32_at(const uint8_t *k)
{
    return (uint32_t)k[0] | ((uint32_t)k[1] << 8) | ((uint32_t)k[2] << 16) | ((uint32_t)k[3] << 24);
}

uint32_t zc_jenkins_lookup3(const void *prefix, size_t prefixlen, const void *data, size_t len,
                            uint32_t initval)
{
    const uint8_t *p1 = (const uint8_t *)prefix, *p2 = (const uint8_t *)data;
    size_t total = prefixlen + len, pos = 0, rest;
    uint8_t tmp[12], last[12];
    const uint8_t *k;
    uint32_t a, b, c;

    /* The hash seeds with the length truncated to 32 bits, as the reference does. */
    a = b = c = 0xdeadbeefU + (uint32_t)total + initval;
    while (total - pos > 12) {
        k = span(p1, prefixlen, p2, pos, 12, tmp);
        a += le32_at(k);
        b += le32_at(k + 4);
        c += le32_at(k + 8);
        MIX(a, b, c);
        pos += 12;
    }
    rest = total - pos;
    if (rest == 0)
        return c;
    /* Zero-padding the tail to 12 bytes adds exactly what the reference's switch adds. */
    memset(last, 0, sizeof last);
    memcpy(last, span(p1, prefixlen, p2, pos, rest, tmp), rest);
    a += le32_at(last);
    b += le32_at(last + 4);
    c += le32_at(last + 8);
    FINAL(a, b, c);
    return c;
}

int zc_checksum32(int algo, uint32_t seed, const void *prefix, size_t prefixlen, const void *data,
                  size_t len, uint32_t *out)
{
    if (prefixlen > 0 && (algo != ZC_CHECKSUM_JENKINS_LOOKUP3 || prefix == NULL))
        return ZC_ERR_PARAM;
    if (len > 0 && data == NULL)
        return ZC_ERR_PARAM;
    switch (algo) {
    case ZC_CHECKSUM_CRC32:
        *out = zlib_crc32((const unsigned char *)data, len);
        return ZC_OK;
    case ZC_CHECKSUM_ADLER32:
        *out = zc_adler32(1, data, len);
        return ZC_OK;
    case ZC_CHECKSUM_FLETCHER32:
        *out = zc_fletcher32(data, len);
        return ZC_OK;
    case ZC_CHECKSUM_JENKINS_LOOKUP3:
        if (prefixlen > SIZE_MAX - len)
            return ZC_ERR_SIZE;
        *out = zc_jenkins_lookup3(prefix, prefixlen, data, len, seed);
        return ZC_OK;
    default:
        return ZC_ERR_PARAM;
    }
}

int zc_checksum_frame(int algo, uint32_t seed, const void *prefix, size_t prefixlen, int at_end,
                      const void *src, size_t srclen, void *dst, size_t dstlen)
{
    uint8_t *d = (uint8_t *)dst;
    uint8_t *sum_at, *payload_at;
    uint32_t v;
    int status;

    if (srclen > SIZE_MAX - 4 || dstlen != srclen + 4)
        return ZC_ERR_SIZE;
    if (srclen > 0 && (const uint8_t *)src < d + dstlen && d < (const uint8_t *)src + srclen)
        return ZC_ERR_OVERLAP;
    status = zc_checksum32(algo, seed, prefix, prefixlen, src, srclen, &v);
    if (status != ZC_OK)
        return status;
    sum_at = at_end ? d + srclen : d;
    payload_at = at_end ? d : d + 4;
    if (srclen > 0)
        memcpy(payload_at, src, srclen);
    sum_at[0] = (uint8_t)v;
    sum_at[1] = (uint8_t)(v >> 8);
    sum_at[2] = (uint8_t)(v >> 16);
    sum_at[3] = (uint8_t)(v >> 24);
    return ZC_OK;
}

int zc_checksum_verify(int algo, uint32_t seed, const void *prefix, size_t prefixlen, int at_end,
                       const void *src, size_t srclen, size_t *offset, uint32_t *stored,
                       uint32_t *computed)
{
    const uint8_t *s = (const uint8_t *)src;
    size_t payload_off;
    int status;

    if (srclen < 4)
        return ZC_ERR_CORRUPT;
    payload_off = at_end ? 0 : 4;
    *stored = le32_at(at_end ? s + srclen - 4 : s);
    status = zc_checksum32(algo, seed, prefix, prefixlen, s + payload_off, srclen - 4, computed);
    if (status != ZC_OK)
        return status;
    if (*stored != *computed)
        return ZC_ERR_CHECKSUM;
    *offset = payload_off;
    return ZC_OK;
}
