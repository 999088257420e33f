/* The vlen-utf8 / vlen-bytes layout: a little-endian uint32 item count, then per item a
 * little-endian uint32 byte length and the bytes. */
#ifndef ZC_VLEN_H
#define ZC_VLEN_H

#include <stddef.h>

/* Encoded size of `n` items of the given lengths; ZC_ERR_SIZE when a count or a length does
 * not fit 32 bits or the total overflows. */
int zc_vlen_encoded_size(size_t n, const size_t *lens, size_t *total);

/* Write the items into `dst`, which must hold exactly the encoded size. */
int zc_vlen_pack(size_t n, const char *const *ptrs, const size_t *lens, void *dst, size_t dstlen);

/* Check that `src` holds exactly `n` items and no more bytes; on ZC_OK item i is
 * src[offsets[i], offsets[i] + lens[i]). ZC_ERR_CORRUPT names a bad count or a length that
 * runs past the end, ZC_ERR_SIZE trailing bytes. */
int zc_vlen_index(const void *src, size_t srclen, size_t n, size_t *offsets, size_t *lens);

#endif
