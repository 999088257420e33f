/* The 32-bit checksums of numcodecs' checksum filters, and their framing. */
#ifndef ZC_CHECKSUMS_H
#define ZC_CHECKSUMS_H

#include <stddef.h>
#include <stdint.h>

/* zlib's crc32, exported by libblosc.a (z_size_t is size_t, uLong unsigned long). */
unsigned long crc32_z(unsigned long crc, const unsigned char *buf, size_t len);

#define ZC_CHECKSUM_CRC32 0
#define ZC_CHECKSUM_ADLER32 1
#define ZC_CHECKSUM_FLETCHER32 2
#define ZC_CHECKSUM_JENKINS_LOOKUP3 3

/* zlib's adler32 (RFC 1950 8.2): `adler` is 1 for a fresh sum. */
uint32_t zc_adler32(uint32_t adler, const void *data, size_t len);

/* Fletcher-32 over big-endian 16-bit words, an odd last byte padded with zero (HDF5's). */
uint32_t zc_fletcher32(const void *data, size_t len);

/* Bob Jenkins' lookup3 `hashlittle` of the concatenation prefix+data (HDF5's). */
uint32_t zc_jenkins_lookup3(const void *prefix, size_t prefixlen, const void *data, size_t len,
                            uint32_t initval);

/* The checksum `algo` of prefix+data. `seed` is the initval of jenkins_lookup3 and ignored by
 * the others (crc32 starts at 0, adler32 at 1 as zlib defines them); only jenkins_lookup3
 * takes a prefix. ZC_ERR_PARAM for an unknown algo or a prefix given to another. */
int zc_checksum32(int algo, uint32_t seed, const void *prefix, size_t prefixlen, const void *data,
                  size_t len, uint32_t *out);

/* Frame `src` with its little-endian checksum before it (at_end 0) or after it (at_end 1)
 * into `dst`, which must hold exactly srclen + 4 bytes and not overlap `src`. */
int zc_checksum_frame(int algo, uint32_t seed, const void *prefix, size_t prefixlen, int at_end,
                      const void *src, size_t srclen, void *dst, size_t dstlen);

/* Verify a framed buffer; on ZC_OK the payload is src[*offset, *offset + srclen - 4).
 * ZC_ERR_CORRUPT when shorter than the checksum, ZC_ERR_CHECKSUM when it does not match
 * (then *stored and *computed hold both values). */
int zc_checksum_verify(int algo, uint32_t seed, const void *prefix, size_t prefixlen, int at_end,
                       const void *src, size_t srclen, size_t *offset, uint32_t *stored,
                       uint32_t *computed);

#endif
