/* File access below a store's root, plain or confined; see zc_fs.h. */
#define _GNU_SOURCE
#include "zc_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#define PATH_CAP (4096 + 64)
#define WALK_MAX_DEPTH 256 /* directories open at once while walking */
#define WALK_MAX_LINKS 40  /* symlinks followed in one path, as the kernel's limit */

/* Directories are opened only to be named in *at() calls and fstat: O_PATH where it exists
 * (search permission is enough), else for reading. */
#ifdef O_PATH
#define DIR_FLAGS (O_PATH | O_DIRECTORY)
#else
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY)
#endif

static int walk_always;

void zc_fs_walk_always(int on)
{
    __atomic_store_n(&walk_always, on, __ATOMIC_RELAXED);
}

/* The fallback resolver: `rel` beneath the directory `root`, one component at a time. No
 * component is ever followed by the kernel (O_NOFOLLOW): a symlink is read and its target
 * put in front of the rest of the path, and the walk goes on from the link's directory. The
 * directories walked into are kept on a stack, so ".." goes back to the one before, and a ".."
 * at the root or an absolute target is refused (EXDEV, as openat2's RESOLVE_BENEATH). */
static int walk(int root, const char *rel, int flags, int mode)
{
    char pending[2 * PATH_CAP], target[PATH_CAP], name[NAME_MAX + 1];
    int dirs[WALK_MAX_DEPTH];
    int depth = 0, links = 0, fd = -1;
    size_t len = strlen(rel);
    if (len >= sizeof pending) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(pending, rel, len + 1);
    const char *p = pending;
    dirs[0] = root;
    for (;;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        const char *next = p + n;
        while (*next == '/')
            next++;
        const int last = *next == '\0';
        if (n > NAME_MAX) {
            errno = ENAMETOOLONG;
            break;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (n == 2 && name[0] == '.' && name[1] == '.') {
            if (depth == 0) {
                errno = EXDEV;
                break;
            }
            close(dirs[depth--]);
            strcpy(name, ".");
        }
        if (n == 0 || strcmp(name, ".") == 0) {
            if (last) {
                fd = openat(dirs[depth], ".", flags | O_CLOEXEC, mode);
                break;
            }
            p = next;
            continue;
        }
        const int cur = dirs[depth];
        const int oflags = (last ? flags : DIR_FLAGS) | O_NOFOLLOW | O_CLOEXEC;
        fd = openat(cur, name, oflags, mode);
        int e = errno;
#ifdef O_PATH
        /* O_PATH | O_NOFOLLOW opens a symlink itself. */
        struct stat st;
        if (fd >= 0 && (oflags & O_PATH) && (fstat(fd, &st) != 0 || S_ISLNK(st.st_mode))) {
            close(fd);
            fd = -1;
            e = ELOOP;
        }
#endif
        if (fd >= 0) {
            if (last)
                break;
            if (depth + 1 == WALK_MAX_DEPTH) {
                close(fd);
                fd = -1;
                errno = ENAMETOOLONG;
                break;
            }
            dirs[++depth] = fd;
            fd = -1;
            p = next;
            continue;
        }
        /* Not opened: follow it if it is a symlink (unless the caller asked not to). */
        ssize_t t = last && (flags & (O_NOFOLLOW | O_EXCL))
                        ? -1
                        : readlinkat(cur, name, target, sizeof target - 1);
        if (t < 0) {
            errno = e;
            break;
        }
        target[t] = '\0';
        if (++links > WALK_MAX_LINKS) {
            errno = ELOOP;
            break;
        }
        if (target[0] == '/') {
            errno = EXDEV;
            break;
        }
        size_t rest = strlen(next);
        if ((size_t)t + 1 + rest >= sizeof pending) {
            errno = ENAMETOOLONG;
            break;
        }
        memmove(pending + t + 1, next, rest + 1);
        memcpy(pending, target, (size_t)t);
        pending[t] = '/';
        p = pending;
    }
    int e = errno;
    while (depth > 0)
        close(dirs[depth--]);
    errno = e;
    return fd;
}

#if defined(__linux__) && defined(SYS_openat2)
struct zc_open_how { /* linux/openat2.h's struct open_how */
    uint64_t flags, mode, resolve;
};
#define ZC_RESOLVE_NO_MAGICLINKS 0x02
#define ZC_RESOLVE_BENEATH 0x08
static int no_openat2; /* the kernel said ENOSYS once */
#endif

/* open `rel` beneath the directory `root`: a descriptor, or -1 with errno (EXDEV: it leads
 * out of `root`). */
static int open_beneath(int root, const char *rel, int flags, int mode)
{
#if defined(__linux__) && defined(SYS_openat2)
    if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&walk_always, __ATOMIC_RELAXED)) {
        struct zc_open_how how = {
            .flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
            .mode = (flags & O_CREAT) ? (uint64_t)mode : 0,
            .resolve = ZC_RESOLVE_BENEATH | ZC_RESOLVE_NO_MAGICLINKS,
        };
        for (int tries = 0;; tries++) {
            long fd = syscall(SYS_openat2, root, rel, &how, sizeof how);
            if (fd >= 0)
                return (int)fd;
            /* EAGAIN: a rename elsewhere raced the lookup of a ".."; try again. */
            if (errno == EAGAIN && tries < 64)
                continue;
            if (errno != ENOSYS)
                return -1;
            __atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED);
            break;
        }
    }
#endif
    return walk(root, rel, flags, mode);
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

int zc_fs_open(const zc_root *r, const char *path, int flags, int mode, int *fd)
{
    if (!r->confined)
        *fd = open(path, flags | O_CLOEXEC, mode);
    else if ((*fd = open_beneath(r->fd, below_root(r, path), flags, mode)) < 0)
        return failed();
    return *fd < 0 ? ZC_ERR_IO : ZC_OK;
}

/* zc_fs_at of `rel`, a path below a confined root. */
static int at_below_root(const zc_root *r, const char *rel, zc_at *at)
{
    const char *slash = strrchr(rel, '/');
    at->name = slash ? slash + 1 : rel;
    at->dir = r->fd;
    at->owned = 0;
    if (strcmp(at->name, "..") == 0)
        return ZC_ERR_OUTSIDE;
    if (slash == NULL)
        return ZC_OK;
    char dir[PATH_CAP];
    size_t n = (size_t)(slash - rel);
    if (n >= sizeof dir)
        return ZC_ERR_SIZE;
    memcpy(dir, rel, n);
    dir[n] = '\0';
    if ((at->dir = open_beneath(r->fd, n ? dir : "/", DIR_FLAGS, 0)) < 0)
        return failed();
    at->owned = 1;
    return ZC_OK;
}

/* Refuse a name that is a symlink leading out of the root. (A rename over it or an unlink
 * would only replace or remove the link, but a confined store's keys never resolve outside.) */
static int check_link(const zc_root *r, const char *rel, const zc_at *at)
{
    struct stat st;
    if (fstatat(at->dir, at->name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode))
        return ZC_OK;
    int fd = open_beneath(r->fd, rel, DIR_FLAGS & ~O_DIRECTORY, 0);
    if (fd >= 0)
        close(fd);
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
    at->dir = AT_FDCWD;
    at->owned = 0;
    at->name = path;
    return ZC_OK;
}

void zc_fs_at_close(zc_at *at)
{
    if (at->owned) {
        int e = errno;
        close(at->dir);
        errno = e;
    }
    at->owned = 0;
}

int zc_fs_stat(const zc_root *r, const char *path, struct stat *st, int follow)
{
    if (!r->confined)
        return (follow ? stat(path, st) : lstat(path, st)) == 0 ? ZC_OK : ZC_ERR_IO;
    int s, e;
    if (follow) {
        int fd;
        if ((s = zc_fs_open(r, path, DIR_FLAGS & ~O_DIRECTORY, 0, &fd)) != ZC_OK)
            return s;
        s = fstat(fd, st) == 0 ? ZC_OK : ZC_ERR_IO;
        e = errno;
        close(fd);
    } else {
        zc_at at;
        if ((s = zc_fs_at(r, path, &at)) != ZC_OK)
            return s;
        s = fstatat(at.dir, at.name, st, AT_SYMLINK_NOFOLLOW) == 0 ? ZC_OK : ZC_ERR_IO;
        e = errno;
        zc_fs_at_close(&at);
    }
    errno = e;
    return s;
}

int zc_fs_unlink(const zc_root *r, const char *path)
{
    zc_at at;
    int s = zc_fs_at(r, path, &at);
    if (s != ZC_OK)
        return s;
    s = unlinkat(at.dir, at.name, 0) == 0 ? ZC_OK : ZC_ERR_IO;
    zc_fs_at_close(&at);
    return s;
}

int zc_fs_rename(const zc_root *r, const char *from, const char *to)
{
    zc_at a, b;
    int s = zc_fs_at(r, from, &a);
    if (s != ZC_OK)
        return s;
    if ((s = zc_fs_at(r, to, &b)) == ZC_OK) {
        s = renameat(a.dir, a.name, b.dir, b.name) == 0 ? ZC_OK : ZC_ERR_IO;
        zc_fs_at_close(&b);
    }
    zc_fs_at_close(&a);
    return s;
}

int zc_fs_mkdirs(const zc_root *r, const char *dir)
{
    /* Unconfined, the whole path from its first component; confined, the part below the root
     * (each directory made in its parent opened beneath the root). */
    const char *rel = r->confined ? below_root(r, dir) : dir;
    char buf[PATH_CAP];
    size_t len = strlen(rel);
    if (len >= sizeof buf)
        return ZC_ERR_SIZE;
    memcpy(buf, rel, len + 1);
    for (char *s = strchr(buf + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        int st = ZC_OK;
        if (r->confined) {
            zc_at at;
            if ((st = at_below_root(r, buf, &at)) == ZC_OK) {
                st = mkdirat(at.dir, at.name, 0777) == 0 || errno == EEXIST ? ZC_OK : ZC_ERR_IO;
                zc_fs_at_close(&at);
            }
        } else if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            st = ZC_ERR_IO;
        }
        if (s)
            *s = '/';
        if (st != ZC_OK || !s)
            return st;
    }
}
