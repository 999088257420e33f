/* File access below a directory store's root: every open, create, rename, link, mkdir, unlink
 * and stat of the store's files goes through here.
 *
 * An unconfined root uses paths as they are, with the plain system calls: symlinks are
 * followed wherever they lead, and nothing is paid for confinement.
 *
 * A confined root resolves every path beneath the root's directory descriptor, so no path can
 * lead out of it, however the directories change meanwhile (a directory swapped for a symlink
 * between two calls): opens go through openat2(root, rel, RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) (Linux 5.6 and later), and directory operations through the *at()
 * calls on the parent directory, itself opened that way; the last component of a rename,
 * link, mkdir or unlink is never followed. Symlinks that stay below the root are followed.
 * Where openat2 is missing (older kernels, other systems) the path is walked a component at a
 * time with openat(O_NOFOLLOW), each symlink read and resolved the same way in turn, and a
 * ".." or an absolute target that would leave the root refused. Hard links are not checked:
 * a file hard-linked into the store is the store's file. */
#ifndef ZC_FS_H
#define ZC_FS_H

#include <stddef.h>
#include <sys/stat.h>

#include "zc_status.h"

#ifndef ZC_ERR_IO
#define ZC_ERR_IO (-20)
#endif

/* The root the paths of a store start with. Zero-initialized: unconfined. */
typedef struct {
    int confined;
    int fd;      /* confined: the root directory (owned by whoever made the zc_root) */
    size_t skip; /* confined: the length of "<root>/", which every path starts with */
} zc_root;

/* A place for the *at() calls: the name `name` in the directory `dir` (AT_FDCWD, with `name`
 * the whole path, when unconfined). zc_fs_at_close releases it. */
typedef struct {
    int dir;
    int owned; /* `dir` was opened for it */
    const char *name;
} zc_at;

/* The calls return ZC_OK, ZC_ERR_IO with errno, ZC_ERR_OUTSIDE (confined: the path leads out
 * of the root) or ZC_ERR_SIZE (a path too long). */

/* open(path, flags, mode), O_CLOEXEC added. */
int zc_fs_open(const zc_root *r, const char *path, int flags, int mode, int *fd);

/* The directory of `path` (opened beneath the root when confined) and its last component. */
int zc_fs_at(const zc_root *r, const char *path, zc_at *at);
void zc_fs_at_close(zc_at *at);

/* stat(path) (`follow`) or lstat(path). */
int zc_fs_stat(const zc_root *r, const char *path, struct stat *st, int follow);

int zc_fs_unlink(const zc_root *r, const char *path);
int zc_fs_rename(const zc_root *r, const char *from, const char *to);

/* Make the directory `dir` and the missing ones above it (below the root when confined). */
int zc_fs_mkdirs(const zc_root *r, const char *dir);

/* Resolve confined paths by walking them even where openat2 exists (tests of the fallback). */
void zc_fs_walk_always(int on);

#endif
