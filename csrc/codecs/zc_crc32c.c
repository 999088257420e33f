/* CRC-32C: SSE4.2 crc32 instruction when the CPU has it, slicing-by-8 tables otherwise. */
#include "codecs/zc_crc32c.h"

#include <string.h>

#include "os/zc_os.h"

#define POLY 0x82F63B78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static zc_once table_once = ZC_ONCE_INIT;

static void build_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
}

static uint32_t crc_portable(uint32_t c, const unsigned char *p, size_t len)
{
    zc_once_run(&table_once, build_table);
    while (len && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xFF];
        len--;
    }
    while (len >= 8) {
        /* Assemble little-endian words byte by byte so the code is endian-neutral. */
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
            table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
            table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xFF];
    return c;
}

#if (defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))) || \
    (defined(ZC_MSVC) && defined(_M_X64))
#include <nmmintrin.h>
#define ZC_HAVE_SSE42_PATH 1
#ifdef ZC_MSVC
#define TARGET_SSE42 /* MSVC compiles every intrinsic without asking */
#else
/* clang wants crc32 named besides sse4.2 for the _mm_crc32_* intrinsics; GCC takes both. */
#define TARGET_SSE42 __attribute__((target("sse4.2,crc32")))
#endif

/* The crc32 instruction has 3-cycle latency but 1-cycle throughput, so long inputs run
 * three independent lanes and merge them: for the raw (uninverted) CRC register,
 * crc(x, A||B) = Z_|B|(crc(x, A)) ^ crc(0, B), where Z_n advances over n zero bytes and is
 * linear, hence a table lookup per byte of the register. */
#define LONG_LANE 8192
#define SHORT_LANE 256
static uint32_t zeros_long[4][256], zeros_short[4][256];
static zc_once zeros_once = ZC_ONCE_INIT;

static void build_zeros_table(uint32_t t[4][256], size_t n)
{
    uint32_t col[32];
    for (int i = 0; i < 32; i++) {
        uint32_t c = 1u << i;
        for (size_t k = 0; k < n; k++)
            c = (c >> 8) ^ table[0][c & 0xFF];
        col[i] = c;
    }
    for (int j = 0; j < 4; j++)
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int k = 0; k < 8; k++)
                if (b >> k & 1)
                    v ^= col[8 * j + k];
            t[j][b] = v;
        }
}

static void build_zeros(void)
{
    zc_once_run(&table_once, build_table);
    build_zeros_table(zeros_long, LONG_LANE);
    build_zeros_table(zeros_short, SHORT_LANE);
}

static uint32_t shift(uint32_t t[4][256], uint32_t c)
{
    return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
}

TARGET_SSE42 static uint64_t lanes3(uint64_t c0, const unsigned char *p, size_t lane,
                                    uint32_t t[4][256])
{
    uint64_t c1 = 0, c2 = 0, a, b, c;
    const unsigned char *end = p + lane;
    while (p < end) {
        memcpy(&a, p, 8);
        memcpy(&b, p + lane, 8);
        memcpy(&c, p + 2 * lane, 8);
        c0 = _mm_crc32_u64(c0, a);
        c1 = _mm_crc32_u64(c1, b);
        c2 = _mm_crc32_u64(c2, c);
        p += 8;
    }
    c0 = shift(t, (uint32_t)c0) ^ (uint32_t)c1;
    return shift(t, (uint32_t)c0) ^ (uint32_t)c2;
}

TARGET_SSE42 static uint32_t crc_sse42(uint32_t c, const unsigned char *p, size_t len)
{
    uint64_t c64 = c;
    while (len && ((uintptr_t)p & 7)) {
        c64 = _mm_crc32_u8((uint32_t)c64, *p++);
        len--;
    }
    if (len >= 3 * SHORT_LANE)
        zc_once_run(&zeros_once, build_zeros);
    while (len >= 3 * LONG_LANE) {
        c64 = lanes3(c64, p, LONG_LANE, zeros_long);
        p += 3 * LONG_LANE;
        len -= 3 * LONG_LANE;
    }
    while (len >= 3 * SHORT_LANE) {
        c64 = lanes3(c64, p, SHORT_LANE, zeros_short);
        p += 3 * SHORT_LANE;
        len -= 3 * SHORT_LANE;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len--)
        c = _mm_crc32_u8(c, *p++);
    return c;
}

static int have_sse42(void)
{
    /* -1 unknown. Threads that race on first use all store the same answer: relaxed atomics
     * make that race defined (and quiet under ThreadSanitizer). */
    static int cached = -1;
    int have = zc_atomic_load_int(&cached, ZC_RELAXED);
    if (have < 0) {
#ifdef ZC_MSVC
        int regs[4];
        __cpuid(regs, 1);
        have = regs[2] >> 20 & 1; /* ECX bit 20: SSE4.2 */
#else
        __builtin_cpu_init();
        have = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
        zc_atomic_store_int(&cached, have, ZC_RELAXED);
    }
    return have;
}
#endif

uint32_t zc_crc32c(uint32_t crc, const void *data, size_t len)
{
    uint32_t c = ~crc;
    if (data == NULL || len == 0)
        return crc;
#ifdef ZC_HAVE_SSE42_PATH
    if (have_sse42())
        return ~crc_sse42(c, (const unsigned char *)data, len);
#endif
    return ~crc_portable(c, (const unsigned char *)data, len);
}

uint32_t zc_crc32c_portable(uint32_t crc, const void *data, size_t len)
{
    if (data == NULL || len == 0)
        return crc;
    return ~crc_portable(~crc, (const unsigned char *)data, len);
}
