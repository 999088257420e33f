/* Sharding index: per inner chunk a little-endian uint64 (offset, nbytes) pair, both
 * 2^64-1 when the chunk is absent. The trailing crc32c belongs to the index codecs. */
#ifndef ZC_SHARD_INDEX_H
#define ZC_SHARD_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define ZC_SHARD_EMPTY UINT64_MAX

/* Check `n` (offset, nbytes) pairs against a shard of `data_size` bytes: each either empty
 * or inside the shard, and no two non-empty byte ranges overlapping. On failure `*bad` is
 * the index of the offending chunk: ZC_ERR_CORRUPT half-empty entry, ZC_ERR_SIZE outside
 * the shard, ZC_ERR_OVERLAP overlap with an earlier-starting chunk. */
int zc_shard_index_validate(const uint64_t *entries, size_t n, uint64_t data_size, size_t *bad);

/* Decode `buflen` bytes (exactly 16 * n) into 2n native uint64 and validate them. */
int zc_shard_index_unpack(const void *buf, size_t buflen, size_t n, uint64_t data_size,
                          uint64_t *entries, size_t *bad);

/* Encode 2n native uint64 as little-endian into `out` of `outlen` (exactly 16 * n) bytes. */
int zc_shard_index_pack(const uint64_t *entries, size_t n, void *out, size_t outlen);

#endif
