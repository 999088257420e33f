/* A whole-buffer DEFLATE decoder (RFC 1951) in zlib (RFC 1950) and gzip (RFC 1952)
 * containers. */
#ifndef ZC_INFLATE_H
#define ZC_INFLATE_H

#include <stddef.h>

/* Decode `src` (format ZC_ZLIB_FORMAT_ZLIB or _GZIP of zc_zlib.h; gzip may be several
 * concatenated members) into `dst`, which must come out exactly `dstlen` bytes long.
 * ZC_OK, or ZC_ERR_CORRUPT for anything it cannot prove valid (including valid streams it
 * does not take, and a wrong size): zc_inflate then asks zlib for the verdict. Never reads
 * or writes outside src[0, srclen) and dst[0, dstlen); dst holds garbage after an error. */
int zc_deflate_decode(const void *src, size_t srclen, void *dst, size_t dstlen, int format);

#endif
