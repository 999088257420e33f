/* The version of stored bytes that a cached entry is kept at (zc_chunk_cache.h, and the table
 * shared between processes, zc_shm_cache.h), and the one place that decides whether an entry
 * is valid for what a reader found (zc_chunk_version_same) and whether bytes of a version may
 * be cached at all (zc_chunk_version_settled); the caches and the jobs ask these.
 *
 * For a file the version is its device, inode, size, mtime and ctime (nanoseconds), the
 * chunk's byte range in it, and a hash of the bytes in that range keyed with a secret of the
 * cache (zc_chunk_cache_content: no one without the key can make other bytes hash alike),
 * which a hit reads and hashes: a file's times do not change for every write (stores through
 * a shared memory map to a page already dirty, on tmpfs to any page; whole-second stamps), its
 * bytes do. A memory blob's version names its bytes for good (every write stores a new blob);
 * versions a store gives (zc_shard_batch.h's, a digest of the store's own) are the store's
 * word. A file whose ctime is recent is read but not cached. */
#ifndef ZC_CHUNK_VERSION_H
#define ZC_CHUNK_VERSION_H

#include <stdint.h>

#include "files/zc_memstore.h"
#include "files/zc_object.h"

/* A file's ctime must be at least this old before chunks decoded from it are cached. The
 * content hash alone keeps entries right (a file's times are no proof: see above); this keeps
 * files still being written from churning the cache. */
#define ZC_CHUNK_CACHE_SETTLE_NS 1000000000LL

/* The version of stored bytes: equal versions mean equal bytes. */
typedef struct {
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns;
    uint64_t offset, nbytes;  /* the chunk's bytes in the object */
    uint64_t content;         /* a file's: zc_chunk_cache_content of those bytes (else 0) */
} zc_chunk_version;

/* The identity of the open object `o` into `v` (offset and nbytes left as they are, content
 * 0): a file's zc_os_fstat, or a memory blob's version (settled at once: it never changes).
 * ZC_OK or ZC_ERR_IO. */
int zc_chunk_version_of(const zc_object *o, zc_chunk_version *v);

/* The version of the blob stored at `path` in `mem` into `v` without opening it: 1 with `v`
 * set, 0 when nothing is stored there. (A file's version needs its bytes: it is opened.) */
int zc_chunk_version_in(zc_memstore *mem, const char *path, zc_chunk_version *v);

/* Are `a` and `b` the same version (equal stored bytes)? An entry kept at one is served only
 * to a reader that found the other; one of another version is stale. */
int zc_chunk_version_same(const zc_chunk_version *a, const zc_chunk_version *b);

/* May chunks of version `v` be cached: is its ctime settled (ZC_CHUNK_CACHE_SETTLE_NS)? */
int zc_chunk_version_settled(const zc_chunk_version *v);

#endif
