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

static int make_dirs(char *path)
{
    for (char *s = strchr(path + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = 0;
        int r = mkdir(path, 0777);
        if (s)
            *s = '/';
        if (r != 0 && errno != EEXIST)
            return -1;
        if (!s)
            return 0;
    }
}

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

int zc_share_like_dir(int fd, const char *path)
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
    if (stat(dir_path, &dir) != 0 || fstat(fd, &file) != 0)
        return ZC_ERR_IO;
    if (!(dir.st_mode & S_ISVTX))
        share_like_dir(fd, &dir, file.st_mode & 0777);
    return ZC_OK;
}

/* Create the lock file `name` in `dir_path`: written as a temporary file with its final
 * permissions and linked into place, so no one ever opens it with the creator's umask.
 * ZC_OK with *fd (also when another process created it first), or ZC_ERR_IO. */
static int create_lock_file(const char *name, char *dir_path, int *fd)
{
    struct stat dir;
    if (stat(dir_path, &dir) != 0) {
        if (errno != ENOENT || make_dirs(dir_path) != 0 || stat(dir_path, &dir) != 0)
            return ZC_ERR_IO;
    }
    char tmp[4096 + 64];
    int t, st = zc_temp_create(name, tmp, sizeof tmp, &t);
    if (st != ZC_OK)
        return st;
    share_like_dir(t, &dir, 0600);
    int linked = link(tmp, name) == 0, e = errno;
    unlink(tmp);
    if (linked) {
        zc_temp_unlock(t);
        *fd = t;
        return ZC_OK;
    }
    close(t);
    if (e == EEXIST) {
        *fd = open(name, O_WRONLY | O_CLOEXEC);
        return *fd < 0 ? ZC_ERR_IO : ZC_OK;
    }
    /* No hard links here: create it in place, then set its permissions. */
    *fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (*fd >= 0) {
        share_like_dir(*fd, &dir, 0600);
        return ZC_OK;
    }
    if (errno == EEXIST)
        *fd = open(name, O_WRONLY | O_CLOEXEC);
    return *fd < 0 ? ZC_ERR_IO : ZC_OK;
}

int zc_key_locks_open(zc_key_locks *l, const char *node_dir)
{
    char name[4096 + 32], dir[4096];
    size_t len = strlen(node_dir);
    int n = snprintf(name, sizeof name, "%s/%s", node_dir, ZC_KEY_LOCK_FILE);
    if (n < 0 || (size_t)n >= sizeof name || len >= sizeof dir)
        return ZC_ERR_SIZE;
    l->skip = len + 1;
    /* Write-only: a write lock needs nothing more, so a store's writers need no read access. */
    l->fd = open(name, O_WRONLY | O_CLOEXEC);
    if (l->fd >= 0)
        return ZC_OK;
    if (errno != ENOENT)
        return ZC_ERR_IO;
    memcpy(dir, node_dir, len + 1);
    return create_lock_file(name, dir, &l->fd);
}

int zc_key_locks_open_once(zc_key_locks *l, const char *node_dir)
{
    return l->fd >= 0 || node_dir[0] == '\0' ? ZC_OK : zc_key_locks_open(l, node_dir);
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

int zc_file_lock(const char *path, int *fd)
{
    for (;;) {
        /* Write access: an exclusive POSIX lock needs it (so does flock on NFS). */
        *fd = open(path, O_WRONLY | O_CLOEXEC);
        if (*fd < 0)
            return ZC_ERR_IO;
        if (set_whole_file_lock(*fd, F_WRLCK) != ZC_OK) {
            int e = errno;
            close(*fd);
            *fd = -1;
            errno = e;
            return ZC_ERR_IO;
        }
        struct stat held, named;
        if (fstat(*fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
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
