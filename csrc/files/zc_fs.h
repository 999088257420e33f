/* File access below a directory store's root: every open, create, rename, link, mkdir, unlink
 * and stat of the store's files goes through here, and from here through the system layer
 * (zc_os.h).
 *
 * An unconfined root uses paths as they are, with the plain calls: symlinks are followed
 * wherever they lead, and nothing is paid for confinement.
 *
 * A confined root resolves every path beneath the root's directory descriptor, so no path can
 * lead out of it, however the directories change meanwhile (a directory swapped for a symlink
 * between two calls): opens go through zc_os_open_beneath (openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) on Linux 5.6 and later, else a component walk that reads symlinks
 * itself and refuses a ".." or an absolute target that would leave the root), and directory
 * operations through the *at() calls on the parent directory, itself opened that way; the
 * last component of a rename, link, mkdir or unlink is never followed. Symlinks that stay
 * below the root are followed. Hard links are not checked: a file hard-linked into the store
 * is the store's file. On Windows the check comes after the open (zc_os.h, wheels/README.md). */
#ifndef ZC_FS_H
#define ZC_FS_H

#include <stddef.h>

#include "os/zc_os.h"
#include "zc_status.h"

/* The root the paths of a store start with. Zero-initialized: unconfined. */
typedef struct {
    int confined;
    int fd;      /* confined: the root directory (owned by whoever made the zc_root) */
    size_t skip; /* confined: the length of "<root>/", which every path starts with */
} zc_root;

/* A place for the *at() calls of zc_os.h: the name `name` in the directory `dir` (ZC_OS_CWD,
 * with `name` the whole path, when unconfined). zc_fs_at_close releases it. */
typedef struct {
    int dir;
    int owned; /* `dir` was opened for it */
    const char *name;
} zc_at;

/* The calls return ZC_OK, ZC_ERR_IO with errno, ZC_ERR_OUTSIDE (confined: the path leads out
 * of the root) or ZC_ERR_SIZE (a path too long). */

/* Set up `r` for the store directory `path`: confined, with the directory opened (and owned
 * by `r`, zc_fs_root_close releases it). */
int zc_fs_root_open(zc_root *r, const char *path, int confined);
void zc_fs_root_close(zc_root *r);

/* zc_os_open_at of `path` with `how` (ZC_OPEN_*) and `mode`. */
int zc_fs_open(const zc_root *r, const char *path, int how, unsigned mode, int *fd);

/* The directory of `path` (opened beneath the root when confined) and its last component. */
int zc_fs_at(const zc_root *r, const char *path, zc_at *at);
void zc_fs_at_close(zc_at *at);

/* Information on `path`: with `follow` as stat, else as lstat. */
int zc_fs_stat(const zc_root *r, const char *path, zc_file_info *info, int follow);

int zc_fs_unlink(const zc_root *r, const char *path);
int zc_fs_rename(const zc_root *r, const char *from, const char *to);

/* Make the directory `dir` and the missing ones above it (below the root when confined). */
int zc_fs_mkdirs(const zc_root *r, const char *dir);

/* zc_os_share_like_dir of `fd`, a file just created in the directory `dir`. */
int zc_fs_share_like_dir(const zc_root *r, int fd, const char *dir, int mode);

#endif
