/* Opening beneath a directory on POSIX systems: openat2 on Linux, else a walk; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "os/zc_os.h"
#include "os/zc_os_posix.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* Directories walked through are opened only to be named in openat: O_PATH where it exists
 * (search permission is enough), else for reading. */
#ifdef O_PATH
#define DIR_FLAGS (O_PATH | O_DIRECTORY)
#else
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY)
#endif

static int walk_always;

void zc_os_beneath_by_walking(int on)
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

int zc_os_open_beneath(int root, const char *rel, int how, unsigned mode)
{
    const int flags = zc_posix_open_flags(how);
#if defined(__linux__) && defined(SYS_openat2)
    if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&walk_always, __ATOMIC_RELAXED)) {
        struct zc_open_how resolve = {
            .flags = (uint64_t)(unsigned)flags,
            .mode = (flags & O_CREAT) ? (uint64_t)mode : 0,
            .resolve = ZC_RESOLVE_BENEATH | ZC_RESOLVE_NO_MAGICLINKS,
        };
        for (int tries = 0;; tries++) {
            long fd = syscall(SYS_openat2, root, rel, &resolve, sizeof resolve);
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
    return walk(root, rel, flags, (int)mode);
}
#endif
