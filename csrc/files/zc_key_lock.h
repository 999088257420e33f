/* Advisory locks on the keys of a directory store, across threads, processes and hosts.
 *
 * The locks of a hierarchy's keys live beside it, out of every store opened in it: in the file
 * ".<name>" ZC_KEY_LOCK_FILE in the directory above the hierarchy's top, the highest directory
 * reached from the node (the array or group the keys belong to, its symbolic links resolved)
 * through parents that hold a Zarr group's metadata (zarr.json or .zgroup). A key's lock is
 * one byte of that file, at an offset taken from the SHA-256 of the key's path below the top
 * (2^32 stripes), locked as an open file description lock. Every process that reaches the
 * node, by whatever path (a symlink, a store opened at the node or at a group above it,
 * another host of a shared file system), locks the same bytes of the same file, and readers
 * and copies of the store never meet it. Such locks conflict between descriptors even within
 * one process, and the kernel (or the file server) drops them when their descriptor is closed
 * or the process dies. Where open file description locks do not exist the whole file is
 * flocked instead: correct, only coarser.
 *
 * A node directory that holds ZC_KEY_LOCK_FILE itself locks its keys there (by their path below
 * it), as zarrcore did before: so older versions and this one exclude each other. That file is
 * made when the one beside the hierarchy cannot be: its top is a mount point or the file
 * system's root (the directory above may not be shared with other hosts), or its directory
 * refuses the new file (no write permission, a read-only file system). The first lock file a
 * node gets thus decides for good, but for a moment when two processes that decide
 * differently make the first one at once.
 *
 * A lock file is created with write permission for whoever may write the directory it stands
 * for (the hierarchy's top, or the node's: owner, and group and others as the directory's own
 * write bits say, whatever the umask), so every user who can write the store can lock its
 * keys. The one beside a hierarchy is opened without following a symbolic link and only as a
 * regular file; in a confined store (zc_fs.h), a hierarchy whose top lies below the store's
 * root has its directory opened beneath the root.
 *
 * A key whose holder rewrites it only by renaming a new version over it, as the last step
 * under its lock (a group's metadata), can be locked without a lock file: zc_file_lock takes
 * a lock on the file itself and keeps it only once the path still names the locked file, so
 * a waiter that locked a version renamed away meanwhile drops it and locks the new one. The
 * holder's rename thus hands the lock on; everything it wrote before is in place by then. */
#ifndef ZC_KEY_LOCK_H
#define ZC_KEY_LOCK_H

#include <stddef.h>

#include "files/zc_fs.h"

#define ZC_KEY_LOCK_FILE ".zarrcore-locks"

#define ZC_KEY_LOCK_PATH_MAX (4096 + 64)

/* The open lock file of one node directory. `fd` -1: nothing open (and no locks taken). */
typedef struct {
    int fd;
    size_t skip; /* length of "<node directory>/": paths minus this are the node's keys */
    /* The node directory's path below the top of its hierarchy, with a '/' ("" in a lock file
     * of the node's own): what the node's keys are hashed with. */
    char node[4096];
    /* The lock file opened, or the one that could not be (for errors). */
    char file[ZC_KEY_LOCK_PATH_MAX];
} zc_key_locks;

#define ZC_KEY_LOCKS_NONE {-1, 0, "", ""}

/* Open (creating it, and `node_dir` when missing) the lock file of `node_dir`, a directory
 * below `root` (zc_fs.h): ZC_OK, or ZC_ERR_LOCK with errno (EINVAL: the lock file is no regular
 * file), ZC_ERR_OUTSIDE, or ZC_ERR_SIZE for a too long path; `file` names the lock file. */
int zc_key_locks_open(zc_key_locks *l, const zc_root *root, const char *node_dir);

/* The path of the lock file of `node_dir` (as zc_key_locks_open finds it, making it if it can),
 * in `file` of `cap` bytes: for the message of a failed lock. errno is kept. */
void zc_key_locks_file(const zc_root *root, const char *node_dir, char *file, size_t cap);

/* As zc_key_locks_open, on a worker's first need: ZC_OK and nothing done when `l` is open
 * already or `node_dir` is empty (the store takes no locks). */
int zc_key_locks_open_once(zc_key_locks *l, const zc_root *root, const char *node_dir);

void zc_key_locks_close(zc_key_locks *l);

/* Take (waiting as long as it takes) or drop the lock of `path`, a path below the node
 * directory of `l`. Nothing when `l` is not open. ZC_ERR_LOCK with errno on failure (ENOLCK,
 * EOPNOTSUPP or ENOSYS: the file system does not support the locks). */
int zc_key_lock(const zc_key_locks *l, const char *path);
int zc_key_unlock(const zc_key_locks *l, const char *path);
/* The same, by the byte of the lock file that stands for `path` (zc_key_lock_byte; 0 when `l`
 * is not open), for a caller that takes and drops one key's lock: one hash for both. */
uint64_t zc_key_lock_byte(const zc_key_locks *l, const char *path);
int zc_key_lock_at(const zc_key_locks *l, uint64_t byte);
int zc_key_unlock_at(const zc_key_locks *l, uint64_t byte);

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
