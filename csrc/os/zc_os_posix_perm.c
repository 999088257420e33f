/* Permissions of new shared files on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "os/zc_os.h"
#include "os/zc_os_posix.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

int zc_os_share_like_dir(int fd, int dir, const char *dir_name, int mode)
{
    struct stat d, f;
    if (fstatat(ZC_POSIX_DIR(dir), dir_name, &d, 0) != 0)
        return -1;
    if (mode < 0) {
        /* In a sticky directory others may not replace the file either: nothing to share. */
        if (d.st_mode & S_ISVTX)
            return 0;
        if (fstat(fd, &f) != 0)
            return -1;
        mode = (int)(f.st_mode & 0777);
    }
    if (d.st_mode & S_IWGRP)
        mode |= 0060;
    if (d.st_mode & S_IWOTH)
        mode |= 0006;
    if (d.st_gid != getegid() && fchown(fd, (uid_t)-1, d.st_gid) != 0)
        errno = 0;
    fchmod(fd, (mode_t)mode);
    return 0;
}
#endif
