/* CRC-32C: SSE4.2 crc32 instruction when the CPU has it, slicing-by-8 tables otherwise. */
#include "zc_crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

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
    pthread_once(&table_once, build_table);
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define ZC_HAVE_SSE42_PATH 1

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t c, const unsigned char *p, size_t len)
{
    uint64_t c64 = c;
    while (len && ((uintptr_t)p & 7)) {
        c64 = _mm_crc32_u8((uint32_t)c64, *p++);
        len--;
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
    /* -1 unknown; the race on first use is benign, every thread computes the same answer. */
    static volatile int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    return cached;
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
