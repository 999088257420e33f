/* The registry's packbits codec: bits [first, first + nbits) of each component, packed one
 * after another into a bit stream, least significant bit first within each byte. */
#ifndef ZC_PACKBITS_H
#define ZC_PACKBITS_H

#include <stddef.h>

/* The bytes `count` components of `nbits` bits pack into (rounded up to whole bytes); 0 and
 * ZC_ERR_SIZE when that overflows. */
int zc_packbits_size(size_t count, unsigned nbits, size_t *size);

/* Pack `count` native-endian components of `unit` bytes (1, 2, 4 or 8) at `src` (`srclen`
 * bytes: count * unit) into `dst` (`dstlen` bytes: zc_packbits_size); padding bits are 0. */
int zc_packbits_encode(const void *src, size_t srclen, size_t unit, size_t count,
                       unsigned first, unsigned nbits, void *dst, size_t dstlen);

/* Invert zc_packbits_encode: each component gets its bits back at `first`, and when
 * `sign_bits` > 0 the top one copied up to bit sign_bits - 1 (a signed integer of that many
 * bits); other bits are 0. */
int zc_packbits_decode(const void *src, size_t srclen, size_t unit, size_t count,
                       unsigned first, unsigned nbits, unsigned sign_bits, void *dst,
                       size_t dstlen);

#endif
