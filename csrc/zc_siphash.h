/* SipHash-1-3 (Aumasson and Bernstein's keyed hash, with one compression round per word and
 * three finalization rounds): a 64-bit hash of bytes under a secret 128-bit key, to tell
 * stored bytes apart from those a cached entry was decoded from (zc_chunk_cache.h). Whoever
 * lacks the key can build no two inputs that hash alike more often than by chance (near
 * 2^-64 a pair), as they could for an unkeyed hash. Hashes are never stored beyond the
 * memory of the processes holding their key. */
#ifndef ZC_SIPHASH_H
#define ZC_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t k0, k1;
} zc_siphash_key;

/* A new key from the system's random source into `key`: 0, or -1 with errno. */
int zc_siphash_key_new(zc_siphash_key *key);

/* The hash of `len` bytes at `data` under `key` (the words read little-endian, as the
 * algorithm is defined, on any machine). */
uint64_t zc_siphash13(const zc_siphash_key *key, const void *data, size_t len);

#endif
