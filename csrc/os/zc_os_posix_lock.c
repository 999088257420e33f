/* Advisory locks on POSIX systems: open file description locks, or flock; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "os/zc_os.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>

#ifdef F_OFD_SETLK
static int set(int fd, uint64_t at, short type, int wait)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* l_pid must be 0; l_len 0 from 0: the whole file */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    if (at != ZC_LOCK_WHOLE) {
        fl.l_start = (off_t)at;
        fl.l_len = 1;
    }
    while (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) != 0) {
        if (!wait && (errno == EAGAIN || errno == EACCES))
            return 0;
        if (errno != EINTR)
            return -1;
    }
    return 1;
}

int zc_os_lock(int fd, uint64_t at, int exclusive, int wait)
{
    return set(fd, at, exclusive ? F_WRLCK : F_RDLCK, wait);
}

int zc_os_unlock(int fd, uint64_t at) { return set(fd, at, F_UNLCK, 0) == 1 ? 0 : -1; }
#else
/* No byte-range locks of open files: the whole file for every byte (correct, only coarser). */
static int set(int fd, int op)
{
    while (flock(fd, op) != 0) {
        if ((op & LOCK_NB) && errno == EWOULDBLOCK)
            return 0;
        if (errno != EINTR)
            return -1;
    }
    return 1;
}

int zc_os_lock(int fd, uint64_t at, int exclusive, int wait)
{
    (void)at;
    return set(fd, (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB));
}

int zc_os_unlock(int fd, uint64_t at)
{
    (void)at;
    return set(fd, LOCK_UN) == 1 ? 0 : -1;
}
#endif
#endif
