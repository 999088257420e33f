/* SHA-256 (FIPS 180-4), for names the Python layer derives with hashlib.sha256: the lock
 * file of a store key (zarrcore/storage/local.py). */
#ifndef ZC_SHA256_H
#define ZC_SHA256_H

#include <stddef.h>

/* The digest of `len` bytes at `data` into `out`. */
void zc_sha256(const void *data, size_t len, unsigned char out[32]);

/* The digest as 64 lowercase hex digits and a NUL into `hex`. */
void zc_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
