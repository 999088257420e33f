/* A table of decoded chunks in memory shared by the processes of one machine (a data loader's
 * workers), under one byte budget: what one process decoded, the others copy out.
 *
 * Entries are keyed and validated as zc_chunk_cache.h's: a key of int64 values and the
 * zc_chunk_version of the stored bytes, which a reader must match exactly. The memory is one
 * anonymous shared file of fixed size (zc_os_shm_create): slots of chunk_bytes, so the budget
 * holds by construction. A key may live in any of the slots of two sets (of SHM_WAYS slots,
 * picked by two hashes of the key); an insert takes an empty slot there, else the least
 * recently read one.
 *
 * No locks: each slot has a sequence number, odd while a writer owns it. A writer claims a
 * slot by compare-and-swap of an even number to the next odd one, writes, and publishes the
 * next even one; a reader copies out while the number is even and keeps the copy only if the
 * number did not move meanwhile. A process killed at any moment therefore leaves at most the
 * slot it was writing owned by a dead process: readers skip it, and a writer takes it over once
 * its owner is gone (zc_os_pid_gone). Every header field is checked against the file's size
 * on attaching.
 *
 * An entry may carry a tag of at most ZC_SHM_TAG_MAX bytes: the store's own name of the version
 * it was decoded from (an object's ETag), which the version of the entry is a digest of. A
 * process that never read the chunk itself asks the store whether the object still has that
 * version and, if so, reads the entry at it; the tag is only a hint, every entry is still found
 * by its exact version. */
#ifndef ZC_SHM_CACHE_H
#define ZC_SHM_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/zc_chunk_cache.h"
#include "cache/zc_siphash.h"

typedef struct zc_shm_cache zc_shm_cache;

/* The most bytes of an entry's tag. */
#define ZC_SHM_TAG_MAX 96

/* A new table of at most `capacity` bytes of chunks of `chunk_bytes`, keyed by `key_len`
 * (1 to ZC_MAX_NDIM + 1) values, tagged `nonce` (which attaching must name), with a new
 * content key. NULL with *status ZC_ERR_PARAM (no chunk fits, bad key_len), ZC_ERR_NOMEM or
 * ZC_ERR_IO (errno set; ENOSYS where the system shares no anonymous memory). */
zc_shm_cache *zc_shm_cache_create(size_t capacity, size_t chunk_bytes, int key_len,
                                  uint64_t nonce, int *status);
/* The table another process created, opened at `path` (its descriptor, /proc/<pid>/fd/<fd>),
 * checked to be one of `chunk_bytes` chunks, `key_len` keys, tagged `nonce`. NULL with
 * *status ZC_ERR_IO (errno set) or ZC_ERR_PARAM (not such a table). */
zc_shm_cache *zc_shm_cache_attach(const char *path, size_t chunk_bytes, int key_len,
                                  uint64_t nonce, int *status);
/* Unmap (and close the creator's descriptor): the memory goes with the last process. */
void zc_shm_cache_free(zc_shm_cache *s);
/* The creator's descriptor (-1 in a process that attached). */
int zc_shm_cache_fd(const zc_shm_cache *s);
/* The secret key of the content hashes in the table's versions (zc_chunk_cache_content):
 * drawn by the creator, kept in the table's header, the same in every process using it
 * (whoever can open the table can read its entries too: its creator's user). */
const zc_siphash_key *zc_shm_cache_content_key(const zc_shm_cache *s);
/* The counters of every process together; used and entries by a scan of the slots. */
void zc_shm_cache_get_stats(zc_shm_cache *s, zc_chunk_cache_stats *out);

/* Copy the entry of `key` at version `v` into `dst` (chunk_bytes): 1, or 0 when there is
 * none (an entry of the key at another version is dropped as stale). */
int zc_shm_cache_get(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v, void *dst);
/* As zc_shm_cache_get, copying only the selection `sel` (of a chunk of items of `itemsize`)
 * out of the entry with zc_chunk_sel_copy: 1, 0 (none; the selection's memory may then hold
 * anything and must be written again), or a negative status of zc_chunk_sel_copy. */
int zc_shm_cache_get_sel(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                         const zc_chunk_sel *sel, size_t itemsize);
/* Store chunk_bytes at `data` as the entry of `key` at version `v` (best effort: nothing when
 * every candidate slot is being written). */
void zc_shm_cache_put(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                      const void *data);

/* The entries of other things than chunks (a shard's index): zc_shm_cache_get's and _put's
 * of the first `n` bytes (at most chunk_bytes) of an entry, counted neither as hits, misses
 * nor inserts (an eviction is one; the entry counts among the entries and the bytes used). */
int zc_shm_cache_get_head(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                          void *dst, size_t n);
void zc_shm_cache_put_head(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                           const void *data, size_t n);

/* Keep the `len` bytes at `tag` (1 to ZC_SHM_TAG_MAX) with the entry of `key` at version `v`: 1,
 * or 0 when there is no such entry (or it is being written, or `len` is out of range). An entry
 * stored again at any version loses its tag. */
int zc_shm_cache_set_tag(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                         const void *tag, size_t len);
/* Copy the tag of the entry of `key` into `tag` (room for ZC_SHM_TAG_MAX bytes): its length, or
 * 0 when the key has no entry with a tag. Counted neither as a hit nor as a miss. */
size_t zc_shm_cache_tag(zc_shm_cache *s, const int64_t *key, void *tag);

/* For tests: the process of id `pid` stops itself (SIGSTOP) half way through writing its next
 * entry, the slot owned, so that a test can kill it there (0: none). */
void zc_shm_cache_stop_mid_write(zc_shm_cache *s, long pid);

#endif
