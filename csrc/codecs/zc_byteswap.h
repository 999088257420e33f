/* Byte-order reversal of contiguous runs of fixed-size items. */
#ifndef ZC_BYTESWAP_H
#define ZC_BYTESWAP_H

#include <stddef.h>

/* Reverse the bytes of each of `n` items of `itemsize` bytes from `src` into `dst`
 * (`dst == src` swaps in place; other overlaps are rejected). A complex number is two
 * items of half its size. Fast paths for 2, 4 and 8; any itemsize works. */
int zc_byteswap(void *dst, const void *src, size_t n, size_t itemsize);

#endif
