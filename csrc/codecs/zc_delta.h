/* numcodecs' delta filter: each element minus the one before it, the first kept as is. */
#ifndef ZC_DELTA_H
#define ZC_DELTA_H

#include <stddef.h>

#define ZC_DELTA_INT 0   /* two's-complement integers of width 1, 2, 4 or 8, wrapping */
#define ZC_DELTA_FLOAT 1 /* IEEE binary32 (width 4) or binary64 (width 8) */

/* In place over `n` native-endian elements of `width` bytes at `data` (len bytes in all);
 * encode differences, decode running sums, evaluated in the element type as numpy does. */
int zc_delta_encode(void *data, size_t len, size_t n, int kind, size_t width);
int zc_delta_decode(void *data, size_t len, size_t n, int kind, size_t width);

#endif
