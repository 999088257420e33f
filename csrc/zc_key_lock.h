/* Advisory locks on the keys of a directory store, across threads and processes.
 *
 * A key's lock is one byte of the shared file "<lock_dir>/keys.lock", at an offset taken from
 * the SHA-256 of the key's path (2^32 stripes), locked as an open file description lock.
 * Such locks conflict between descriptors even within one process, and the kernel drops them
 * when their descriptor is closed or the process dies. A writer opens the file once and then
 * pays one system call to take and one to drop each key's lock. Where open file description
 * locks do not exist the whole file is flocked instead: correct, only coarser. */
#ifndef ZC_KEY_LOCK_H
#define ZC_KEY_LOCK_H

/* Open (creating it and `lock_dir` when missing) the lock file: ZC_OK with *fd, or ZC_ERR_IO
 * with errno, or ZC_ERR_SIZE for a too long `lock_dir`. */
int zc_key_lock_open(const char *lock_dir, int *fd);

/* As zc_key_lock_open, on a worker's first need: ZC_OK and nothing done when *fd is open
 * already (>= 0) or `lock_dir` is empty (the store takes no locks). */
int zc_key_lock_open_once(const char *lock_dir, int *fd);

/* Take (waiting as long as it takes) or drop the lock of `path` on descriptor `fd`. */
int zc_key_lock(int fd, const char *path);
int zc_key_unlock(int fd, const char *path);

#endif
