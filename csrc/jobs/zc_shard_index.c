/* Shard index encoding and validation. */
#include "jobs/zc_shard_index.h"

#include <stdlib.h>

#include "zc_status.h"

typedef struct {
    uint64_t start, end;
    size_t index;
} range;

static int by_start(const void *a, const void *b)
{
    const range *x = (const range *)a, *y = (const range *)b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int zc_shard_index_validate(const uint64_t *entries, size_t n, uint64_t data_size, size_t *bad)
{
    if (bad == NULL || (n && entries == NULL) || n > SIZE_MAX / sizeof(range))
        return ZC_ERR_PARAM;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t off = entries[2 * i], len = entries[2 * i + 1];
        if (off == ZC_SHARD_EMPTY && len == ZC_SHARD_EMPTY)
            continue;
        *bad = i;
        if (off == ZC_SHARD_EMPTY || len == ZC_SHARD_EMPTY)
            return ZC_ERR_CORRUPT;
        if (off > data_size || len > data_size - off)
            return ZC_ERR_SIZE;
        if (len)
            used++;
    }
    if (used < 2)
        return ZC_OK;
    /* Sort the non-empty ranges by start; each must begin at or after every earlier end. */
    range *r = (range *)malloc(used * sizeof(range));
    if (r == NULL)
        return ZC_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t off = entries[2 * i], len = entries[2 * i + 1];
        if (off == ZC_SHARD_EMPTY || len == 0)
            continue;
        r[k].start = off;
        r[k].end = off + len;
        r[k].index = i;
        k++;
    }
    qsort(r, used, sizeof(range), by_start);
    int status = ZC_OK;
    uint64_t reach = r[0].end;
    for (size_t i = 1; i < used; i++) {
        if (r[i].start < reach) {
            *bad = r[i].index;
            status = ZC_ERR_OVERLAP;
            break;
        }
        if (r[i].end > reach)
            reach = r[i].end;
    }
    free(r);
    return status;
}

int zc_shard_index_unpack(const void *buf, size_t buflen, size_t n, uint64_t data_size,
                          uint64_t *entries, size_t *bad)
{
    if (bad == NULL || (n && (buf == NULL || entries == NULL)) || n > SIZE_MAX / 16)
        return ZC_ERR_PARAM;
    if (buflen != 16 * n)
        return ZC_ERR_SIZE;
    const unsigned char *p = (const unsigned char *)buf;
    for (size_t i = 0; i < 2 * n; i++, p += 8) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | p[b];
        entries[i] = v;
    }
    return zc_shard_index_validate(entries, n, data_size, bad);
}

int zc_shard_index_pack(const uint64_t *entries, size_t n, void *out, size_t outlen)
{
    if ((n && (entries == NULL || out == NULL)) || n > SIZE_MAX / 16)
        return ZC_ERR_PARAM;
    if (outlen != 16 * n)
        return ZC_ERR_SIZE;
    unsigned char *p = (unsigned char *)out;
    for (size_t i = 0; i < 2 * n; i++, p += 8)
        for (int b = 0; b < 8; b++)
            p[b] = (unsigned char)(entries[i] >> (8 * b));
    return ZC_OK;
}
