/* numcodecs' LZ4 format: a 4-byte little-endian decoded size, then one LZ4 block. */
#ifndef ZC_LZ4_H
#define ZC_LZ4_H

#include <stddef.h>

/* Worst-case encoded size of `srclen` bytes (0 when srclen exceeds LZ4's limit). */
size_t zc_lz4_bound(size_t srclen);

/* Compress into `dst`; on ZC_OK `*outlen` is the encoded size including the prefix. */
int zc_lz4_compress(const void *src, size_t srclen, void *dst, size_t dstcap, int acceleration,
                    size_t *outlen);

/* Read and sanity-check the size prefix. */
int zc_lz4_decoded_size(const void *src, size_t srclen, size_t *nbytes);

/* Decompress into `dst`, which must be exactly the decoded size. */
int zc_lz4_decompress(const void *src, size_t srclen, void *dst, size_t dstlen);

#endif
