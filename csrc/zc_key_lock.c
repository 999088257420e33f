/* Key locks as byte-range locks of a lock file in each node directory; see zc_key_lock.h. */
#include "zc_key_lock.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zc_os.h"
#include "zc_sha256.h"
#include "zc_status.h"
#include "zc_temp.h"

#ifndef ZC_ERR_IO
#define ZC_ERR_IO (-20)
#endif

int zc_share_like_dir(const zc_root *root, int fd, const char *path)
{
    char dir_path[4096 + 64];
    const char *sep = zc_os_last_sep(path);
    if (sep == NULL) {
        strcpy(dir_path, ".");
    } else {
        size_t n = sep == path ? 1 : (size_t)(sep - path);
        if (n >= sizeof dir_path)
            return ZC_ERR_SIZE;
        memcpy(dir_path, path, n);
        dir_path[n] = 0;
    }
    return zc_fs_share_like_dir(root, fd, dir_path, -1);
}

/* Create the lock file `name` in `dir_path`: written as a temporary file with its final
 * permissions and linked into place, so no one ever opens it with the creator's umask.
 * ZC_OK with *fd (also when another process created it first), or an error. */
static int create_lock_file(const zc_root *root, const char *name, const char *dir_path, int *fd)
{
    zc_file_info dir;
    int st = zc_fs_stat(root, dir_path, &dir, 1);
    if (st == ZC_ERR_IO && errno == ENOENT)
        st = zc_fs_mkdirs(root, dir_path);
    if (st != ZC_OK)
        return st;
    zc_at at;
    if ((st = zc_fs_at(root, name, &at)) != ZC_OK)
        return st;
    char tmp[4096 + 64];
    int t;
    if ((st = zc_temp_create(&at, tmp, sizeof tmp, &t)) != ZC_OK) {
        zc_fs_at_close(&at);
        return st;
    }
    zc_fs_share_like_dir(root, t, dir_path, 0600);
    int linked = zc_os_link_at(at.dir, tmp, at.dir, at.name) == 0, e = errno;
    zc_os_unlink_at(at.dir, tmp);
    if (linked) {
        zc_temp_unlock(t);
        zc_fs_at_close(&at);
        *fd = t;
        return ZC_OK;
    }
    zc_os_close(t);
    *fd = -1;
    if (e != EEXIST) {
        /* No hard links here: create it in place (never through a symlink), then set its
         * permissions. */
        if ((*fd = zc_os_open_at(at.dir, at.name, ZC_OPEN_CREATE, 0600)) >= 0)
            zc_fs_share_like_dir(root, *fd, dir_path, 0600);
        else
            e = errno;
    }
    zc_fs_at_close(&at);
    if (*fd >= 0)
        return ZC_OK;
    if (e != EEXIST) {
        errno = e;
        return ZC_ERR_IO;
    }
    /* Another process created it first. */
    return zc_fs_open(root, name, ZC_OPEN_WRITE, 0, fd);
}

int zc_key_locks_open(zc_key_locks *l, const zc_root *root, const char *node_dir)
{
    char name[4096 + 32];
    size_t len = strlen(node_dir);
    int n = snprintf(name, sizeof name, "%s/%s", node_dir, ZC_KEY_LOCK_FILE);
    if (n < 0 || (size_t)n >= sizeof name || len >= 4096)
        return ZC_ERR_SIZE;
    l->skip = len + 1;
    /* Write-only: a write lock needs nothing more, so a store's writers need no read access. */
    int st = zc_fs_open(root, name, ZC_OPEN_WRITE, 0, &l->fd);
    if (st == ZC_ERR_IO && errno == ENOENT)
        st = create_lock_file(root, name, node_dir, &l->fd);
    return st;
}

int zc_key_locks_open_once(zc_key_locks *l, const zc_root *root, const char *node_dir)
{
    return l->fd >= 0 || node_dir[0] == '\0' ? ZC_OK : zc_key_locks_open(l, root, node_dir);
}

void zc_key_locks_close(zc_key_locks *l)
{
    if (l->fd >= 0)
        zc_os_close(l->fd);
    l->fd = -1;
}

int zc_file_lock(const zc_root *root, const char *path, int *fd)
{
    for (;;) {
        /* Write access: an exclusive POSIX lock needs it (so does flock on NFS). */
        int st = zc_fs_open(root, path, ZC_OPEN_WRITE, 0, fd);
        if (st != ZC_OK)
            return st;
        if (zc_os_lock(*fd, ZC_LOCK_WHOLE, 1, 1) != 1) {
            int e = errno;
            zc_os_close(*fd);
            *fd = -1;
            errno = e;
            return ZC_ERR_IO;
        }
        zc_file_info held, named;
        if (zc_os_fstat(*fd, &held) == 0 && zc_fs_stat(root, path, &named, 1) == ZC_OK &&
            held.dev == named.dev && held.ino == named.ino)
            return ZC_OK;
        /* A new version was renamed over the one locked (or it was removed): lock that. */
        zc_file_unlock(*fd);
    }
}

void zc_file_unlock(int fd)
{
    /* Unlocked explicitly: a child forked meanwhile shares the descriptor. */
    zc_os_unlock(fd, ZC_LOCK_WHOLE);
    zc_os_close(fd);
}

/* The byte of the lock file that stands for `path`: 32 bits of the SHA-256 of its key. */
static uint64_t key_byte(const zc_key_locks *l, const char *path)
{
    const char *key = strlen(path) > l->skip ? path + l->skip : path;
    unsigned char digest[32];
    zc_sha256(key, strlen(key), digest);
    return (uint64_t)digest[0] << 24 | (uint64_t)digest[1] << 16 | (uint64_t)digest[2] << 8 |
           digest[3];
}

int zc_key_lock(const zc_key_locks *l, const char *path)
{
    if (l->fd < 0)
        return ZC_OK;
    return zc_os_lock(l->fd, key_byte(l, path), 1, 1) == 1 ? ZC_OK : ZC_ERR_IO;
}

int zc_key_unlock(const zc_key_locks *l, const char *path)
{
    if (l->fd < 0)
        return ZC_OK;
    return zc_os_unlock(l->fd, key_byte(l, path)) == 0 ? ZC_OK : ZC_ERR_IO;
}
