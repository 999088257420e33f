/* The registry's bitround codec: numbers rounded to `keepbits` significant bits, to nearest
 * with ties to even, on their bit patterns. */
#ifndef ZC_BITROUND_H
#define ZC_BITROUND_H

#include <stddef.h>

/* In place over the native-endian `width`-byte units (1, 2, 4 or 8) at `data` (`len` bytes,
 * a multiple of width). mantissa_bits > 0: floats whose mantissa takes the low mantissa_bits
 * bits (< 8 * width); 0: integers, rounded from their most significant set bit. An addition
 * that would carry out of the unit saturates, as the registry's writers do. keepbits >= 1. */
int zc_bitround(void *data, size_t len, size_t width, unsigned keepbits,
                unsigned mantissa_bits);

#endif
