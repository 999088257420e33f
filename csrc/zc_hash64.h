/* A fast 64-bit hash of bytes, to tell stored bytes apart from those a cached entry was
 * decoded from (zc_chunk_cache.h). Not a checksum of any format and never stored: its value
 * may differ between builds and machines. */
#ifndef ZC_HASH64_H
#define ZC_HASH64_H

#include <stddef.h>
#include <stdint.h>

/* The hash of `len` bytes at `data`. Two different inputs of one length collide with a
 * probability near 2^-64; inputs of different lengths hash apart through the length too. */
uint64_t zc_hash64(const void *data, size_t len);

#endif
