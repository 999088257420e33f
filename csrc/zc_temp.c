/* Temporary files of a directory store; see zc_temp.h. */
#define _GNU_SOURCE
#include "zc_temp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zc_status.h"

#ifndef ZC_ERR_IO
#define ZC_ERR_IO (-20)
#endif

/* Lock the whole file without waiting: 1 taken, 0 someone holds a conflicting lock, -1 with
 * errno when the file system has no such locks. */
static int try_lock(int fd, int exclusive)
{
#ifdef F_OFD_SETLK
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* whole file; l_pid must be 0 */
    fl.l_type = exclusive ? F_WRLCK : F_RDLCK;
    fl.l_whence = SEEK_SET;
    while (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        if (errno == EAGAIN || errno == EACCES)
            return 0;
        if (errno != EINTR)
            return -1;
    }
    return 1;
#else
    while (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return 0;
        if (errno != EINTR)
            return -1;
    }
    return 1;
#endif
}

/* Unique among this process's names with its pid; the clock makes a name from a recycled pid
 * (or another host's same pid) unlikely to meet an old one. */
static void name_parts(uint64_t *id, uint64_t *stamp)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *id = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    *stamp = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) & 0xffffffffffULL;
}

int zc_temp_create(const zc_at *at, char *tmp, size_t cap, int *fd)
{
    const char *path = at->name;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 0;
    *fd = -1;
    for (;;) {
        uint64_t id, stamp;
        name_parts(&id, &stamp);
        int n = snprintf(tmp, cap, "%.*s%s%s%ld-%llx-%llx", dirlen, path, slash ? "/" : "",
                         ZC_TEMP_PREFIX, (long)getpid(), (unsigned long long)stamp,
                         (unsigned long long)id);
        if (n < 0 || (size_t)n >= cap)
            return ZC_ERR_SIZE;
        /* (O_EXCL: a symlink at the name is never followed.) */
        *fd = openat(at->dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (*fd < 0) {
            if (errno == EEXIST)
                continue;
            return ZC_ERR_IO;
        }
        /* A cleaner may find the file unlocked between our open and our lock: it removes it,
         * and we start anew. We see that when our lock fails (the cleaner holds its own), or
         * when the name is gone by the time we hold it (the cleaner was done before). */
        int locked = try_lock(*fd, 1);
        struct stat st;
        if (locked < 0 || (locked == 1 && fstat(*fd, &st) == 0 && st.st_nlink > 0))
            return ZC_OK;
        close(*fd);
        *fd = -1;
    }
}

void zc_temp_unlock(int fd)
{
#ifdef F_OFD_SETLK
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_UNLCK;
    fl.l_whence = SEEK_SET;
    fcntl(fd, F_OFD_SETLK, &fl);
#else
    flock(fd, LOCK_UN);
#endif
}

int zc_temp_remove_stale(const zc_root *r, const char *tmp)
{
    zc_at at;
    if (zc_fs_at(r, tmp, &at) != ZC_OK)
        return 0;
    int fd = openat(at.dir, at.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat held, named;
    int removed = 0;
    /* A shared lock conflicts with a live writer's exclusive one; once we hold it, a writer
     * that has not locked its new file yet fails to and leaves it. */
    if (fd >= 0 && fstat(fd, &held) == 0 && S_ISREG(held.st_mode) && try_lock(fd, 0) == 1 &&
        fstatat(at.dir, at.name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        named.st_ino == held.st_ino && named.st_dev == held.st_dev)
        removed = unlinkat(at.dir, at.name, 0) == 0;
    if (fd >= 0)
        close(fd);
    zc_fs_at_close(&at);
    return removed;
}
