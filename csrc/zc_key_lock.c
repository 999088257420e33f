/* Key locks as byte-range locks of a lock file in each node directory; see zc_key_lock.h. */
#define _GNU_SOURCE
#include "zc_key_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zc_sha256.h"
#include "zc_status.h"
#include "zc_temp.h"

#ifndef ZC_ERR_IO
#define ZC_ERR_IO (-20)
#endif

/* Give a new file `mode` plus write permission for whoever may write its directory, whatever
 * the umask, and the directory's group (best effort: only a member of that group may). */
static void share_like_dir(int fd, const struct stat *dir, mode_t mode)
{
    if (dir->st_mode & S_IWGRP)
        mode |= 0060;
    if (dir->st_mode & S_IWOTH)
        mode |= 0006;
    if (dir->st_gid != getegid() && fchown(fd, (uid_t)-1, dir->st_gid) != 0)
        errno = 0;
    fchmod(fd, mode);
}

int zc_share_like_dir(const zc_root *root, int fd, const char *path)
{
    char dir_path[4096 + 64];
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        strcpy(dir_path, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir_path)
            return ZC_ERR_SIZE;
        memcpy(dir_path, path, n);
        dir_path[n] = 0;
    }
    struct stat dir, file;
    int st = zc_fs_stat(root, dir_path, &dir, 1);
    if (st != ZC_OK)
        return st;
    if (fstat(fd, &file) != 0)
        return ZC_ERR_IO;
    if (!(dir.st_mode & S_ISVTX))
        share_like_dir(fd, &dir, file.st_mode & 0777);
    return ZC_OK;
}

/* Create the lock file `name` in `dir_path`: written as a temporary file with its final
 * permissions and linked into place, so no one ever opens it with the creator's umask.
 * ZC_OK with *fd (also when another process created it first), or an error. */
static int create_lock_file(const zc_root *root, const char *name, const char *dir_path, int *fd)
{
    struct stat dir;
    int st = zc_fs_stat(root, dir_path, &dir, 1);
    if (st == ZC_ERR_IO && errno == ENOENT) {
        if ((st = zc_fs_mkdirs(root, dir_path)) == ZC_OK)
            st = zc_fs_stat(root, dir_path, &dir, 1);
    }
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
    share_like_dir(t, &dir, 0600);
    int linked = linkat(at.dir, tmp, at.dir, at.name, 0) == 0, e = errno;
    unlinkat(at.dir, tmp, 0);
    if (linked) {
        zc_temp_unlock(t);
        zc_fs_at_close(&at);
        *fd = t;
        return ZC_OK;
    }
    close(t);
    *fd = -1;
    if (e != EEXIST) {
        /* No hard links here: create it in place (O_EXCL: never through a symlink), then set
         * its permissions. */
        if ((*fd = openat(at.dir, at.name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0)
            share_like_dir(*fd, &dir, 0600);
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
    return zc_fs_open(root, name, O_WRONLY, 0, fd);
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
    int st = zc_fs_open(root, name, O_WRONLY, 0, &l->fd);
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
        close(l->fd);
    l->fd = -1;
}

/* Lock (F_WRLCK) or unlock (F_UNLCK) all of the file `fd`, waiting for the lock. */
static int set_whole_file_lock(int fd, short type)
{
#ifdef F_OFD_SETLKW
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* whole file; l_pid must be 0 */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    while (fcntl(fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl) != 0)
#else
    while (flock(fd, type == F_UNLCK ? LOCK_UN : LOCK_EX) != 0)
#endif
        if (errno != EINTR)
            return ZC_ERR_IO;
    return ZC_OK;
}

int zc_file_lock(const zc_root *root, const char *path, int *fd)
{
    for (;;) {
        /* Write access: an exclusive POSIX lock needs it (so does flock on NFS). */
        int st = zc_fs_open(root, path, O_WRONLY, 0, fd);
        if (st != ZC_OK)
            return st;
        if (set_whole_file_lock(*fd, F_WRLCK) != ZC_OK) {
            int e = errno;
            close(*fd);
            *fd = -1;
            errno = e;
            return ZC_ERR_IO;
        }
        struct stat held, named;
        if (fstat(*fd, &held) == 0 && zc_fs_stat(root, path, &named, 1) == ZC_OK &&
            held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino)
            return ZC_OK;
        /* A new version was renamed over the one locked (or it was removed): lock that. */
        zc_file_unlock(*fd);
    }
}

void zc_file_unlock(int fd)
{
    /* Unlocked explicitly: a child forked meanwhile shares the descriptor. */
    set_whole_file_lock(fd, F_UNLCK);
    close(fd);
}

#ifdef F_OFD_SETLKW
static int set_lock(const zc_key_locks *l, const char *path, short type)
{
    if (l->fd < 0)
        return ZC_OK;
    const char *key = strlen(path) > l->skip ? path + l->skip : path;
    unsigned char digest[32];
    zc_sha256(key, strlen(key), digest);
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* l_pid must be 0 for these locks */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)((uint32_t)digest[0] << 24 | (uint32_t)digest[1] << 16 |
                         (uint32_t)digest[2] << 8 | digest[3]);
    fl.l_len = 1;
    while (fcntl(l->fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl) != 0)
        if (errno != EINTR)
            return ZC_ERR_IO;
    return ZC_OK;
}

int zc_key_lock(const zc_key_locks *l, const char *path) { return set_lock(l, path, F_WRLCK); }
int zc_key_unlock(const zc_key_locks *l, const char *path) { return set_lock(l, path, F_UNLCK); }
#else
static int set_flock(const zc_key_locks *l, int op)
{
    if (l->fd < 0)
        return ZC_OK;
    while (flock(l->fd, op) != 0)
        if (errno != EINTR)
            return ZC_ERR_IO;
    return ZC_OK;
}

int zc_key_lock(const zc_key_locks *l, const char *path) { (void)path; return set_flock(l, LOCK_EX); }
int zc_key_unlock(const zc_key_locks *l, const char *path) { (void)path; return set_flock(l, LOCK_UN); }
#endif
