/* A keyed 64-bit hash of bytes under a secret 128-bit key, to tell stored bytes apart from
 * those a cached entry was decoded from (zc_chunk_cache.h), built of SipHash-1-3 (Aumasson and
 * Bernstein's keyed hash, with one compression round per word and three finalization rounds).
 * Whoever lacks the key can build no two inputs that hash alike more often than by chance
 * (near 2^-64 a pair), as they could for an unkeyed hash. Hashes are never stored beyond the
 * memory of the processes holding their key.
 *
 * One SipHash runs one dependent chain of rounds, about 3.4 GB/s; a long input is therefore
 * hashed as a tree, whose eight lanes a CPU runs side by side (zc_siphash_tree). */
#ifndef ZC_SIPHASH_H
#define ZC_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t k0, k1;
} zc_siphash_key;

/* A new key from the system's random source into `key`: 0, or -1 with errno. */
int zc_siphash_key_new(zc_siphash_key *key);

/* The hash of the `len` bytes M at `data` under `key` K = (k0, k1), where SipHash(K, X) is
 * SipHash-1-3 with words read little-endian, as the algorithm is defined, on any machine:
 *   - len < 512: SipHash(K, M);
 *   - else, with S = len / 64 stripes of eight 8-byte words: lane i (0 to 7) is the words i,
 *     8 + i, ..., 8 (S - 1) + i of M, and d_i = SipHash((k0, k1 ^ (i + 1)), lane i); the hash
 *     is SipHash(K, d_0 .. d_7 || len || the last len - 64 S bytes of M), d_i and len as
 *     8 bytes little-endian.
 * The lanes' keys differ from K and from one another, so each lane is a keyed hash of its
 * own; the last input holds the length, so it tells inputs of different lengths apart, and
 * no input of under 512 bytes can equal it without the lanes' secret digests. */
uint64_t zc_siphash_tree(const zc_siphash_key *key, const void *data, size_t len);

/* The same, always through the plain C lanes, without the CPU's vector instructions (lets
 * tests cover that path where the vector one runs). */
uint64_t zc_siphash_tree_portable(const zc_siphash_key *key, const void *data, size_t len);

#endif
