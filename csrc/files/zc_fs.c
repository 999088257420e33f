/* File access below a store's root, plain or confined; see zc_fs.h. */
#include "files/zc_fs.h"

#include <errno.h>
#include <string.h>

#define PATH_CAP (4096 + 64)
#define DIR_OPEN (ZC_OPEN_PATH | ZC_OPEN_DIRECTORY)

int zc_fs_root_open(zc_root *r, const char *path, int confined)
{
    size_t len = strlen(path);
    while (len > 0 && zc_os_is_sep(path[len - 1]))
        len--;
    r->skip = len + 1;
    r->confined = 0;
    r->fd = -1;
    if (confined) {
        if ((r->fd = zc_os_open_at(ZC_OS_CWD, path, DIR_OPEN, 0)) < 0)
            return ZC_ERR_IO;
        r->confined = 1;
    }
    return ZC_OK;
}

void zc_fs_root_close(zc_root *r)
{
    if (r->confined)
        zc_os_close(r->fd);
    r->confined = 0;
    r->fd = -1;
}

/* A confined path's part below the root ("." for the root itself). */
static const char *below_root(const zc_root *r, const char *path)
{
    return strlen(path) < r->skip ? "." : path + r->skip;
}

/* The status of a failed confined call. */
static int failed(void)
{
    return errno == EXDEV ? ZC_ERR_OUTSIDE : ZC_ERR_IO;
}

int zc_fs_open(const zc_root *r, const char *path, int how, unsigned mode, int *fd)
{
    if (!r->confined)
        *fd = zc_os_open_at(ZC_OS_CWD, path, how, mode);
    else if ((*fd = zc_os_open_beneath(r->fd, below_root(r, path), how, mode)) < 0)
        return failed();
    return *fd < 0 ? ZC_ERR_IO : ZC_OK;
}

/* zc_fs_at of `rel`, a path below a confined root. */
static int at_below_root(const zc_root *r, const char *rel, zc_at *at)
{
    const char *sep = zc_os_last_sep(rel);
    at->name = sep ? sep + 1 : rel;
    at->dir = r->fd;
    at->owned = 0;
    if (strcmp(at->name, "..") == 0)
        return ZC_ERR_OUTSIDE;
    if (sep == NULL)
        return ZC_OK;
    char dir[PATH_CAP];
    size_t n = (size_t)(sep - rel);
    if (n >= sizeof dir)
        return ZC_ERR_SIZE;
    memcpy(dir, rel, n);
    dir[n] = '\0';
    if ((at->dir = zc_os_open_beneath(r->fd, n ? dir : "/", DIR_OPEN, 0)) < 0)
        return failed();
    at->owned = 1;
    return ZC_OK;
}

/* Refuse a name that is a symlink leading out of the root. (A rename over it or an unlink
 * would only replace or remove the link, but a confined store's keys never resolve outside.) */
static int check_link(const zc_root *r, const char *rel, const zc_at *at)
{
    zc_file_info info;
    if (zc_os_stat_at(at->dir, at->name, 1, &info) != 0 || info.kind != ZC_FILE_LINK)
        return ZC_OK;
    int fd = zc_os_open_beneath(r->fd, rel, ZC_OPEN_PATH, 0);
    if (fd >= 0)
        zc_os_close(fd);
    return fd < 0 && errno == EXDEV ? ZC_ERR_OUTSIDE : ZC_OK;
}

int zc_fs_at(const zc_root *r, const char *path, zc_at *at)
{
    if (r->confined) {
        const char *rel = below_root(r, path);
        int st = at_below_root(r, rel, at);
        if (st == ZC_OK && (st = check_link(r, rel, at)) != ZC_OK)
            zc_fs_at_close(at);
        return st;
    }
    at->dir = ZC_OS_CWD;
    at->owned = 0;
    at->name = path;
    return ZC_OK;
}

void zc_fs_at_close(zc_at *at)
{
    if (at->owned) {
        int e = errno;
        zc_os_close(at->dir);
        errno = e;
    }
    at->owned = 0;
}

/* The result `ok` (nonzero: done) of a call on `at`, whose directory is then released. */
static int done_at(zc_at *at, int ok)
{
    zc_fs_at_close(at);
    return ok ? ZC_OK : ZC_ERR_IO;
}

int zc_fs_stat(const zc_root *r, const char *path, zc_file_info *info, int follow)
{
    if (!r->confined)
        return zc_os_stat_at(ZC_OS_CWD, path, !follow, info) == 0 ? ZC_OK : ZC_ERR_IO;
    int st;
    if (follow) {
        int fd;
        if ((st = zc_fs_open(r, path, ZC_OPEN_PATH, 0, &fd)) != ZC_OK)
            return st;
        st = zc_os_fstat(fd, info) == 0 ? ZC_OK : ZC_ERR_IO;
        int e = errno;
        zc_os_close(fd);
        errno = e;
        return st;
    }
    zc_at at;
    if ((st = zc_fs_at(r, path, &at)) != ZC_OK)
        return st;
    return done_at(&at, zc_os_stat_at(at.dir, at.name, 1, info) == 0);
}

int zc_fs_unlink(const zc_root *r, const char *path)
{
    zc_at at;
    int st = zc_fs_at(r, path, &at);
    if (st != ZC_OK)
        return st;
    return done_at(&at, zc_os_unlink_at(at.dir, at.name) == 0);
}

int zc_fs_rename(const zc_root *r, const char *from, const char *to)
{
    zc_at a, b;
    int st = zc_fs_at(r, from, &a);
    if (st != ZC_OK)
        return st;
    if ((st = zc_fs_at(r, to, &b)) == ZC_OK)
        st = done_at(&b, zc_os_rename_at(a.dir, a.name, b.dir, b.name) == 0);
    zc_fs_at_close(&a);
    return st;
}

/* Make the directory `dir` (EEXIST is no failure). */
static int make_dir(const zc_root *r, const char *dir)
{
    if (!r->confined)
        return zc_os_mkdir_at(ZC_OS_CWD, dir) == 0 || errno == EEXIST ? ZC_OK : ZC_ERR_IO;
    zc_at at;
    int st = at_below_root(r, dir, &at);
    if (st != ZC_OK)
        return st;
    return done_at(&at, zc_os_mkdir_at(at.dir, at.name) == 0 || errno == EEXIST);
}

int zc_fs_mkdirs(const zc_root *r, const char *dir)
{
    /* Unconfined, the whole path from its first component below the file system's root;
     * confined, the part below the store's root (each directory made in its parent opened
     * beneath the root). */
    const char *rel = r->confined ? below_root(r, dir) : dir;
    char buf[PATH_CAP];
    size_t len = strlen(rel);
    if (len >= sizeof buf)
        return ZC_ERR_SIZE;
    memcpy(buf, rel, len + 1);
    char *top = buf + (r->confined ? 0 : zc_os_root_length(buf));
    for (char *s = top;; s++) {
        while (*s && !zc_os_is_sep(*s))
            s++;
        const char c = *s;
        *s = '\0';
        int st = s > top ? make_dir(r, buf) : ZC_OK;
        *s = c;
        if (st != ZC_OK || !c)
            return st;
    }
}

int zc_fs_share_like_dir(const zc_root *r, int fd, const char *dir, int mode)
{
    if (!r->confined)
        return zc_os_share_like_dir(fd, ZC_OS_CWD, dir, mode) == 0 ? ZC_OK : ZC_ERR_IO;
    int d, st = zc_fs_open(r, dir, DIR_OPEN, 0, &d);
    if (st != ZC_OK)
        return st;
    st = zc_os_share_like_dir(fd, d, ".", mode) == 0 ? ZC_OK : ZC_ERR_IO;
    int e = errno;
    zc_os_close(d);
    errno = e;
    return st;
}
