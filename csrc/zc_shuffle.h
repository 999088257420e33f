/* numcodecs' shuffle filter: byte j of element i moves to position j * count + i. */
#ifndef ZC_SHUFFLE_H
#define ZC_SHUFFLE_H

#include <stddef.h>

/* `src` and `dst` are distinct buffers of `len` bytes, len a multiple of elementsize. */
int zc_shuffle(const void *src, void *dst, size_t len, size_t elementsize);
int zc_unshuffle(const void *src, void *dst, size_t len, size_t elementsize);

#endif
