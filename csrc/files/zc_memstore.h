/* An in-memory store that threads without the GIL read and write: keys (strings) mapped to
 * immutable, reference-counted byte blobs, plus exclusive per-key locks for read-modify-writes.
 * zarrcore.storage.MemoryStore keeps its data here (through zarrcore._native.memstore), so Python code
 * and native threads see and lock the same objects.
 *
 * A reader takes a reference to a key's blob and reads it while others replace the key: the
 * blob it holds never changes, and lives until its last reference goes. Every blob stored gets
 * a new version number of its store, so (key, version) names one content for good. */
#ifndef ZC_MEMSTORE_H
#define ZC_MEMSTORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct zc_blob {
    int refs;
    uint64_t version;  /* set when stored: unique among the blobs ever stored in its store */
    size_t len;
    unsigned char data[];
} zc_blob;

/* A blob of `len` bytes (uninitialized), one reference for the caller; NULL when out of
 * memory. */
zc_blob *zc_blob_new(size_t len);
void zc_blob_retain(zc_blob *b);
void zc_blob_release(zc_blob *b);

typedef struct zc_memstore zc_memstore;

/* A new empty store, one reference for the caller; NULL when out of memory. */
zc_memstore *zc_memstore_new(void);
void zc_memstore_retain(zc_memstore *m);
void zc_memstore_release(zc_memstore *m);

/* The blob of `key`, with a reference for the caller, or NULL when there is none. */
zc_blob *zc_memstore_get(zc_memstore *m, const char *key);
/* Store `b` (which gets a new version; the store takes a reference of its own) at `key`, or
 * delete `key` when `b` is NULL: ZC_OK or ZC_ERR_NOMEM. */
int zc_memstore_put(zc_memstore *m, const char *key, zc_blob *b);
size_t zc_memstore_len(zc_memstore *m);
/* The keys now, as a malloc'd array of malloc'd strings (*n of them; free each and the array);
 * ZC_OK or ZC_ERR_NOMEM. */
int zc_memstore_keys(zc_memstore *m, char ***keys, size_t *n);

/* Take (waiting as long as it takes) or drop the lock of `key`. A thread may take a lock it
 * holds again (each take needs its drop), so a write under a read-modify-write's lock takes
 * it again freely. ZC_OK or ZC_ERR_NOMEM; unlocking a key the thread does not hold: ZC_ERR_PARAM. */
int zc_memstore_lock(zc_memstore *m, const char *key);
int zc_memstore_unlock(zc_memstore *m, const char *key);

#endif
