/* A byte-bounded cache of decoded chunks (inner chunks of shards, or whole chunks), shared by
 * every thread reading through one array handle.
 *
 * Keys are the stored object's grid coordinates plus the inner chunk's index in it (0 for an
 * unsharded chunk). Each entry remembers the version of the stored bytes it was decoded from
 * (zc_chunk_version.h, which decides when an entry is valid) and is served only to a reader
 * that found that same version (zc_chunk_version_same), so it never hands out data the store
 * no longer holds. A file's version holds a hash of its bytes, which a hit reads and hashes:
 * a hit saves the decode, not the read. A file whose ctime is recent
 * (zc_chunk_version_settled) is read but not cached.
 *
 * The table is split into independently locked parts by key hash, each with its own least
 * recently used list; the byte budget is the whole cache's, and an insert evicts the least
 * recently used entries of its own part first, then of the others. Entries are reference
 * counted, so an evicted entry stays valid for the readers copying out of it. Entries' bytes
 * are slots of 2 MiB blocks, backed by huge pages where the system allows, kept until the
 * cache is freed: at most the budget plus the entries evicted while still pinned.
 *
 * The same structure keeps other fixed-size records of stored objects validated the same way
 * (the checked index of a shard). */
#ifndef ZC_CHUNK_CACHE_H
#define ZC_CHUNK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/zc_chunk_version.h"
#include "codecs/zc_chain.h"
#include "jobs/zc_chunk_io.h"

typedef struct zc_chunk_cache zc_chunk_cache;

typedef struct {
    uint64_t hits, misses, inserts, evictions, stale;
    size_t used, capacity;
    int64_t entries;
} zc_chunk_cache_stats;

/* A cache of at most `capacity` bytes of decoded chunks of `chunk_bytes` each, keyed by
 * `key_len` int64 values, with a secret key of its own drawn from the system's random
 * source. NULL when out of memory, `capacity` holds no chunk or no key could be drawn (errno
 * set then). */
zc_chunk_cache *zc_chunk_cache_new(size_t capacity, size_t chunk_bytes, int key_len);
void zc_chunk_cache_free(zc_chunk_cache *c);
void zc_chunk_cache_get_stats(zc_chunk_cache *c, zc_chunk_cache_stats *out);

/* Keep the entries of `c` in `shared` (zc_shm_cache.h), with the other processes using it,
 * instead of in `c` (called before any use; `shared` outlives `c`). Its reads and counters are
 * then the table's, and so is the key of its content hashes; `c` pins copies of found entries
 * for their readers. Only for versions that mean the same in every process: files' and
 * stores' (not memory blobs'). */
struct zc_shm_cache;
void zc_chunk_cache_share(zc_chunk_cache *c, struct zc_shm_cache *shared);

/* The content of a version of the `len` stored bytes at `data` (zc_chunk_version): their
 * keyed hash (SipHash-1-3 lanes of a tree, zc_siphash_tree) under the secret key of `c`, or of
 * its shared table, which every process using the table holds. */
uint64_t zc_chunk_cache_content(const zc_chunk_cache *c, const void *data, size_t len);

/* Do reads of files gain from a cache of chunks of `chain`? Not where the stored bytes are
 * the decoded items (zc_chain_stores_items): a hit reads and hashes them, more work than a
 * read without a cache, which copies them into place. The batches (zc_batch.h,
 * zc_shard_io.h) read such files without their cache. (A blob's hit reads nothing: no
 * dearer than its read.) */
static inline int zc_chunk_cache_gains(const zc_chain *chain)
{
    return !zc_chain_stores_items(chain);
}

/* A cached entry, pinned: its bytes stay valid until unpinned, even once evicted. */
typedef struct zc_chunk_cache_entry zc_chunk_cache_entry;

/* The entry of `key` at version `v`, pinned, or NULL (an entry of another version is dropped:
 * the stored bytes changed). Counted as a hit or a miss. */
zc_chunk_cache_entry *zc_chunk_cache_find(zc_chunk_cache *c, const int64_t *key,
                                          const zc_chunk_version *v);
/* The entry's chunk_bytes bytes. */
const unsigned char *zc_chunk_cache_data(const zc_chunk_cache_entry *e);
void zc_chunk_cache_unpin(zc_chunk_cache_entry *e);

/* Keep a copy of chunk_bytes bytes at `data` as the entry of `key` at version `v`, when `v`
 * is settled: ZC_OK (also when not settled) or ZC_ERR_NOMEM. */
int zc_chunk_cache_keep(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                        const void *data);

/* Decode the chunk stored as bytes [offset, offset + size) of `o`, of version `v` (its
 * content left to this call), into the selection `s` as zc_chunk_read does, through the
 * cache: a file's bytes are read (into r->file) and hashed into the version's content; a
 * cached entry of key `key` at that version is copied from; otherwise the whole chunk is
 * decoded into a new entry (cached when `v` is settled) and the selection copied from it. */
int zc_chunk_cache_read(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                        const zc_chain *chain, const zc_chunk_sel *s, const zc_object *o,
                        uint64_t offset, size_t size, zc_chunk_reader *r);
/* Decode the stored chunk `src` (`len` bytes) of version `v` into a new entry of `key`,
 * cached when `v` is settled, pinned for the caller in *out (unpin it). ZC_OK, ZC_ERR_PARAM
 * (the chain's chunks are not chunk_bytes), ZC_ERR_NOMEM or the decoder's status. */
int zc_chunk_cache_decode_bytes(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                                const zc_chain *chain, const unsigned char *src, size_t len,
                                size_t nbytes, zc_chunk_cache_entry **out);
/* As zc_chunk_cache_read after zc_chunk_cache_find found no entry, for a blob `o` (whose
 * version needs no content): decode into a new one. */
int zc_chunk_cache_decode(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                          const zc_chain *chain, const zc_chunk_sel *s, const zc_object *o,
                          uint64_t offset, size_t size, zc_chunk_reader *r);

#endif
