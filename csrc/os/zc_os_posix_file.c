/* Files on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "os/zc_os.h"
#include "os/zc_os_posix.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* renameat */
#include <stdlib.h> /* realpath */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

/* The timestamps of struct stat, in nanoseconds. */
#ifdef __APPLE__
#define ST_MTIME st_mtimespec
#define ST_CTIME st_ctimespec
#else
#define ST_MTIME st_mtim
#define ST_CTIME st_ctim
#endif

int zc_posix_open_flags(int how)
{
    static const int base[4] = {
        O_RDONLY, O_WRONLY, O_WRONLY | O_CREAT | O_EXCL,
#ifdef O_PATH
        O_PATH, /* search permission on the way is enough */
#else
        O_RDONLY,
#endif
    };
    return base[ZC_OPEN_HOW(how)] | (how & ZC_OPEN_DIRECTORY ? O_DIRECTORY : 0) |
           (how & ZC_OPEN_NOFOLLOW ? O_NOFOLLOW | O_NONBLOCK : 0) | O_CLOEXEC;
}

int zc_os_open_at(int dir, const char *name, int how, unsigned mode)
{
    return openat(ZC_POSIX_DIR(dir), name, zc_posix_open_flags(how), (mode_t)mode);
}

int zc_os_close(int fd) { return close(fd); }

int zc_os_real_path(const char *path, char *out, size_t cap)
{
    char *real = realpath(path, NULL);
    if (real == NULL)
        return -1;
    size_t n = strlen(real);
    if (n >= cap) {
        free(real);
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(out, real, n + 1);
    free(real);
    return 0;
}

int zc_os_dup(int fd) { return dup(fd); }

int zc_os_dup_private(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }

ptrdiff_t zc_os_pread(int fd, void *buf, size_t len, uint64_t at)
{
    return pread(fd, buf, len, (off_t)at); /* callers keep `at` within off_t */
}

/* Linux reads at most the file's read-ahead window (read_ahead_kb, 128 KiB by default) or the
 * device's largest request, whichever is more, of one POSIX_FADV_WILLNEED and drops the rest:
 * a longer range is asked for in pieces no larger than either is anywhere. */
#define PREFETCH_PIECE ((size_t)512 << 10)

void zc_os_prefetch(int fd, uint64_t at, size_t len)
{
#ifdef POSIX_FADV_WILLNEED
    for (size_t done = 0; done < len; done += PREFETCH_PIECE) {
        size_t n = len - done < PREFETCH_PIECE ? len - done : PREFETCH_PIECE;
        (void)posix_fadvise(fd, (off_t)(at + done), (off_t)n, POSIX_FADV_WILLNEED);
    }
#else
    (void)fd, (void)at, (void)len;
#endif
}

ptrdiff_t zc_os_write(int fd, const void *buf, size_t len) { return write(fd, buf, len); }

ptrdiff_t zc_os_copy_range(int in_fd, uint64_t at, int out_fd, size_t len)
{
#if defined(__linux__) && defined(SYS_copy_file_range)
    /* By its system call number: C libraries older than glibc 2.27 have no wrapper. */
    long long off = (long long)at;
    return (ptrdiff_t)syscall(SYS_copy_file_range, in_fd, &off, out_fd, NULL, len, 0u);
#else
    (void)in_fd, (void)at, (void)out_fd, (void)len;
    errno = ENOSYS;
    return -1;
#endif
}

static int fill_info(int r, const struct stat *st, zc_file_info *info)
{
    if (r != 0)
        return -1;
    if (st->st_size < 0) {
        errno = EOVERFLOW;
        return -1;
    }
    info->size = (uint64_t)st->st_size;
    info->dev = (uint64_t)st->st_dev;
    info->ino = (uint64_t)st->st_ino;
    info->nlink = (uint64_t)st->st_nlink;
    info->kind = S_ISREG(st->st_mode)   ? ZC_FILE_REGULAR
                 : S_ISDIR(st->st_mode) ? ZC_FILE_DIRECTORY
                 : S_ISLNK(st->st_mode) ? ZC_FILE_LINK
                                        : ZC_FILE_OTHER;
    info->mtime_ns = (int64_t)st->ST_MTIME.tv_sec * 1000000000LL + st->ST_MTIME.tv_nsec;
    info->ctime_ns = (int64_t)st->ST_CTIME.tv_sec * 1000000000LL + st->ST_CTIME.tv_nsec;
    return 0;
}

int zc_os_fstat(int fd, zc_file_info *info)
{
    struct stat st;
    return fill_info(fstat(fd, &st), &st, info);
}

int zc_os_stat_at(int dir, const char *name, int nofollow, zc_file_info *info)
{
    struct stat st;
    return fill_info(fstatat(ZC_POSIX_DIR(dir), name, &st, nofollow ? AT_SYMLINK_NOFOLLOW : 0),
                     &st, info);
}

int zc_os_rename_at(int from_dir, const char *from, int to_dir, const char *to)
{
    return renameat(ZC_POSIX_DIR(from_dir), from, ZC_POSIX_DIR(to_dir), to);
}

int zc_os_unlink_at(int dir, const char *name) { return unlinkat(ZC_POSIX_DIR(dir), name, 0); }

int zc_os_link_at(int existing_dir, const char *existing, int dir, const char *name)
{
    return linkat(ZC_POSIX_DIR(existing_dir), existing, ZC_POSIX_DIR(dir), name, 0);
}

int zc_os_mkdir_at(int dir, const char *name) { return mkdirat(ZC_POSIX_DIR(dir), name, 0777); }
#endif
