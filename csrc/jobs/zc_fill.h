/* Does a buffer consist of one repeated item (the fill value)? */
#ifndef ZC_FILL_H
#define ZC_FILL_H

#include <stddef.h>

/* 1 when every `itemsize`-byte item of `buf` equals `pattern` bytewise, 0 when not,
 * negative status on bad arguments (nbytes must be a multiple of itemsize). */
int zc_is_fill(const void *buf, size_t nbytes, const void *pattern, size_t itemsize);

/* Like zc_is_fill for items made of IEEE floats of `floatsize` 2, 4 or 8 bytes (one for
 * reals, two for complex): a NaN component of the pattern matches a NaN of any payload and
 * sign, other components match bytewise (so -0.0 is not 0.0). `swapped` says the floats
 * are stored in non-native byte order. */
int zc_is_fill_float(const void *buf, size_t nbytes, const void *pattern, size_t itemsize,
                     size_t floatsize, int swapped);

/* zc_is_fill_float on native-order items when `floatsize` is nonzero, else zc_is_fill. */
int zc_is_fill_value(const void *buf, size_t nbytes, const void *pattern, size_t itemsize,
                     size_t floatsize);

#endif
