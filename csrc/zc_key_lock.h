/* Advisory locks on the keys of a directory store, across threads, processes and hosts.
 *
 * The locks of a node's keys live with the node: in the file ZC_KEY_LOCK_FILE of the node's
 * directory (the array or group the keys belong to). A key's lock is one byte of that file, at
 * an offset taken from the SHA-256 of the key's path relative to that directory (2^32
 * stripes), locked as an open file description lock. Every process that reaches the node, by
 * whatever path (a symlink, another store root above it, another host of a shared file
 * system), locks the same bytes of the same file. Such locks conflict between descriptors even
 * within one process, and the kernel (or the file server) drops them when their descriptor is
 * closed or the process dies. Where open file description locks do not exist the whole file
 * is flocked instead: correct, only coarser.
 *
 * The lock file is created with write permission for whoever may write the directory (owner,
 * and group and others as the directory's own write bits say, whatever the umask), so every
 * user who can write the store can lock its keys.
 *
 * A key whose holder rewrites it only by renaming a new version over it, as the last step
 * under its lock (a group's metadata), can be locked without a lock file: zc_file_lock takes
 * a lock on the file itself and keeps it only once the path still names the locked file, so
 * a waiter that locked a version renamed away meanwhile drops it and locks the new one. The
 * holder's rename thus hands the lock on; everything it wrote before is in place by then.
 * Groups need this: zarr-python lists a group's directory as its members and warns about
 * every file it does not know, which a lock file there would be. */
#ifndef ZC_KEY_LOCK_H
#define ZC_KEY_LOCK_H

#include <stddef.h>

#include "zc_fs.h"

#define ZC_KEY_LOCK_FILE ".zarrcore-locks"

/* An open lock file of one node directory. `fd` -1: nothing open (and no locks taken). */
typedef struct {
    int fd;
    size_t skip; /* length of "<node directory>/": paths minus this are the hashed keys */
} zc_key_locks;

#define ZC_KEY_LOCKS_NONE {-1, 0}

/* Open (creating it, and `node_dir` when missing) the lock file of `node_dir`, a directory
 * below `root` (zc_fs.h): ZC_OK, or ZC_ERR_IO with errno, ZC_ERR_OUTSIDE, or ZC_ERR_SIZE for a
 * too long `node_dir`. */
int zc_key_locks_open(zc_key_locks *l, const zc_root *root, const char *node_dir);

/* As zc_key_locks_open, on a worker's first need: ZC_OK and nothing done when `l` is open
 * already or `node_dir` is empty (the store takes no locks). */
int zc_key_locks_open_once(zc_key_locks *l, const zc_root *root, const char *node_dir);

void zc_key_locks_close(zc_key_locks *l);

/* Take (waiting as long as it takes) or drop the lock of `path`, a path below the node
 * directory of `l`. Nothing when `l` is not open. ZC_ERR_IO with errno on failure (ENOLCK,
 * EOPNOTSUPP or ENOSYS: the file system does not support the locks). */
int zc_key_lock(const zc_key_locks *l, const char *path);
int zc_key_unlock(const zc_key_locks *l, const char *path);

/* Take (waiting as long as it takes) an exclusive lock on the file `path` (below `root`)
 * itself, as it is once the lock is held: ZC_OK with *fd holding it, or ZC_ERR_IO with errno
 * (ENOENT: there is no such file), or ZC_ERR_OUTSIDE. The file must be writable by the
 * caller. zc_file_unlock drops it. */
int zc_file_lock(const zc_root *root, const char *path, int *fd);

/* Give `fd`, a new version of the file `path` that others take zc_file_lock on, write
 * permission for whoever may write its directory, as lock files get; in a sticky directory
 * (where others may not replace the file either) it keeps its mode. ZC_OK, or an error. */
int zc_share_like_dir(const zc_root *root, int fd, const char *path);
void zc_file_unlock(int fd);

#endif
