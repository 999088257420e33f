/* Key locks as byte-range locks of one shared file; see zc_key_lock.h. */
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

#ifndef ZC_ERR_IO
#define ZC_ERR_IO (-20)
#endif

int zc_key_lock_open(const char *lock_dir, int *fd)
{
    char name[4096 + 16];
    int n = snprintf(name, sizeof name, "%s/keys.lock", lock_dir);
    if (n < 0 || (size_t)n >= sizeof name)
        return ZC_ERR_SIZE;
    *fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (*fd < 0 && errno == ENOENT) {
        if (mkdir(lock_dir, 0777) != 0 && errno != EEXIST)
            return ZC_ERR_IO;
        *fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    }
    return *fd < 0 ? ZC_ERR_IO : ZC_OK;
}

int zc_key_lock_open_once(const char *lock_dir, int *fd)
{
    return *fd >= 0 || lock_dir[0] == '\0' ? ZC_OK : zc_key_lock_open(lock_dir, fd);
}

#ifdef F_OFD_SETLKW
static int set_lock(int fd, const char *path, short type)
{
    unsigned char digest[32];
    zc_sha256(path, strlen(path), digest);
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* l_pid must be 0 for these locks */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)((uint32_t)digest[0] << 24 | (uint32_t)digest[1] << 16 |
                         (uint32_t)digest[2] << 8 | digest[3]);
    fl.l_len = 1;
    while (fcntl(fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl) != 0)
        if (errno != EINTR)
            return ZC_ERR_IO;
    return ZC_OK;
}

int zc_key_lock(int fd, const char *path) { return set_lock(fd, path, F_WRLCK); }
int zc_key_unlock(int fd, const char *path) { return set_lock(fd, path, F_UNLCK); }
#else
static int set_flock(int fd, int op)
{
    while (flock(fd, op) != 0)
        if (errno != EINTR)
            return ZC_ERR_IO;
    return ZC_OK;
}

int zc_key_lock(int fd, const char *path) { (void)path; return set_flock(fd, LOCK_EX); }
int zc_key_unlock(int fd, const char *path) { (void)path; return set_flock(fd, LOCK_UN); }
#endif
