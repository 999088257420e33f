/* Files on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "zc_os.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The timestamps of struct stat, in nanoseconds. */
#ifdef __APPLE__
#define ST_MTIME st_mtimespec
#define ST_CTIME st_ctimespec
#else
#define ST_MTIME st_mtim
#define ST_CTIME st_ctim
#endif

int zc_os_open_read(const char *path, int nofollow)
{
    return open(path, nofollow ? O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
                               : O_RDONLY | O_CLOEXEC);
}

int zc_os_open_write(const char *path) { return open(path, O_WRONLY | O_CLOEXEC); }

int zc_os_create(const char *path, unsigned mode)
{
    return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
}

int zc_os_close(int fd) { return close(fd); }

int zc_os_dup(int fd) { return dup(fd); }

ptrdiff_t zc_os_pread(int fd, void *buf, size_t len, uint64_t at)
{
    return pread(fd, buf, len, (off_t)at); /* callers keep `at` within off_t */
}

ptrdiff_t zc_os_write(int fd, const void *buf, size_t len) { return write(fd, buf, len); }

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
    info->kind = S_ISREG(st->st_mode) ? ZC_FILE_REGULAR
                 : S_ISDIR(st->st_mode) ? ZC_FILE_DIRECTORY : ZC_FILE_OTHER;
    info->mtime_ns = (int64_t)st->ST_MTIME.tv_sec * 1000000000LL + st->ST_MTIME.tv_nsec;
    info->ctime_ns = (int64_t)st->ST_CTIME.tv_sec * 1000000000LL + st->ST_CTIME.tv_nsec;
    return 0;
}

int zc_os_fstat(int fd, zc_file_info *info)
{
    struct stat st;
    return fill_info(fstat(fd, &st), &st, info);
}

int zc_os_stat(const char *path, int nofollow, zc_file_info *info)
{
    struct stat st;
    return fill_info(nofollow ? lstat(path, &st) : stat(path, &st), &st, info);
}

int zc_os_rename(const char *from, const char *to) { return rename(from, to); }

int zc_os_unlink(const char *path) { return unlink(path); }

int zc_os_link(const char *existing, const char *name) { return link(existing, name); }

int zc_os_mkdir(const char *path) { return mkdir(path, 0777); }
#endif
