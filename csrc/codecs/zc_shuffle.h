/* numcodecs' shuffle filter: byte j of element i moves to position j * count + i. */
#ifndef ZC_SHUFFLE_H
#define ZC_SHUFFLE_H

#include <stddef.h>

/* `src` and `dst` are distinct buffers of `len` bytes, len a multiple of elementsize. */
int zc_shuffle(const void *src, void *dst, size_t len, size_t elementsize);
int zc_unshuffle(const void *src, void *dst, size_t len, size_t elementsize);

/* Unshuffle the `len` bytes of shuffled items of `size` bytes at `planes` straight into an
 * array region: the region of the unshuffled chunk that starts `offset` bytes into it and
 * strides by `strides` (bytes; `shape`, `ndim` dimensions) goes to `dst`, which strides by
 * `dst_strides`. Saves unshuffling the whole chunk into a buffer and copying from there.
 * Offset and strides are multiples of `size`; a region reaching outside the chunk is
 * ZC_ERR_PARAM. */
int zc_unshuffle_nd(const void *planes, size_t len, size_t size, int ndim,
                    const ptrdiff_t *shape, size_t offset, const ptrdiff_t *strides, void *dst,
                    const ptrdiff_t *dst_strides);

#endif
