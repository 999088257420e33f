/* Delta coding in place; integer arithmetic is done unsigned so that overflow wraps exactly
 * as numpy's does (and without C's signed-overflow undefined behaviour). */
#include "codecs/zc_delta.h"

#include <stdint.h>

#include "zc_status.h"

/* Encode walks backwards so that each element still sees its original predecessor. */
#define DELTA_LOOPS(T, suffix)                                  \
    static void encode_##suffix(T *a, size_t n)                 \
    {                                                           \
        for (size_t i = n; i > 1; i--)                          \
            a[i - 1] = (T)(a[i - 1] - a[i - 2]);                \
    }                                                           \
    static void decode_##suffix(T *a, size_t n)                 \
    {                                                           \
        for (size_t i = 1; i < n; i++)                          \
            a[i] = (T)(a[i] + a[i - 1]);                        \
    }

DELTA_LOOPS(uint8_t, u8)
DELTA_LOOPS(uint16_t, u16)
DELTA_LOOPS(uint32_t, u32)
DELTA_LOOPS(uint64_t, u64)
DELTA_LOOPS(float, f32)
DELTA_LOOPS(double, f64)

static int check(const void *data, size_t len, size_t n, int kind, size_t width)
{
    if (kind == ZC_DELTA_INT) {
        if (width != 1 && width != 2 && width != 4 && width != 8)
            return ZC_ERR_PARAM;
    } else if (kind == ZC_DELTA_FLOAT) {
        if (width != sizeof(float) && width != sizeof(double))
            return ZC_ERR_PARAM;
    } else {
        return ZC_ERR_PARAM;
    }
    if (n > len / width || n * width != len)
        return ZC_ERR_SIZE;
    if (n > 0 && data == NULL)
        return ZC_ERR_PARAM;
    if (((uintptr_t)data) % width != 0)
        return ZC_ERR_PARAM; /* callers pass numpy-aligned buffers */
    return ZC_OK;
}

static void run(void *data, size_t n, int kind, size_t width, int encode)
{
    if (kind == ZC_DELTA_FLOAT) {
        if (width == sizeof(float))
            encode ? encode_f32(data, n) : decode_f32(data, n);
        else
            encode ? encode_f64(data, n) : decode_f64(data, n);
        return;
    }
    switch (width) {
    case 1: encode ? encode_u8(data, n) : decode_u8(data, n); break;
    case 2: encode ? encode_u16(data, n) : decode_u16(data, n); break;
    case 4: encode ? encode_u32(data, n) : decode_u32(data, n); break;
    default: encode ? encode_u64(data, n) : decode_u64(data, n); break;
    }
}

int zc_delta_encode(void *data, size_t len, size_t n, int kind, size_t width)
{
    int status = check(data, len, n, kind, width);
    if (status == ZC_OK)
        run(data, n, kind, width, 1);
    return status;
}

int zc_delta_decode(void *data, size_t len, size_t n, int kind, size_t width)
{
    int status = check(data, len, n, kind, width);
    if (status == ZC_OK)
        run(data, n, kind, width, 0);
    return status;
}
