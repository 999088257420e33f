/* Deflate streams: gzip (RFC 1952) and zlib (RFC 1950) containers. */
#ifndef ZC_ZLIB_H
#define ZC_ZLIB_H

#include <stddef.h>

#define ZC_ZLIB_FORMAT_ZLIB 0
#define ZC_ZLIB_FORMAT_GZIP 1

/* Worst-case compressed size of `srclen` bytes in `format` (0 when too large). */
size_t zc_deflate_bound(size_t srclen, int format);

/* Compress at `level` (0-9) into `dst`; on ZC_OK `*outlen` is the stream size. */
int zc_deflate(const void *src, size_t srclen, void *dst, size_t dstcap, int level, int format,
               size_t *outlen);

/* Decompress into `dst`, which must be exactly the decoded size. gzip input may be several
 * concatenated members; a zlib stream must be a single one. */
int zc_inflate(const void *src, size_t srclen, void *dst, size_t dstlen, int format);

/* Decompress into a malloc'd buffer of at most `maxlen` bytes; on ZC_OK the caller frees
 * `*out` (non-NULL even when `*outlen` is 0). */
int zc_inflate_alloc(const void *src, size_t srclen, size_t maxlen, int format, void **out,
                     size_t *outlen);

#endif
