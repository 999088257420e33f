/* Helpers shared by the POSIX implementations of zc_os.h (zc_os_posix_*.c), and nothing else. */
#ifndef ZC_OS_POSIX_H
#define ZC_OS_POSIX_H
#ifndef _WIN32

#include <fcntl.h>

/* A zc_os.h directory as the *at() calls take it. */
#define ZC_POSIX_DIR(dir) ((dir) == ZC_OS_CWD ? AT_FDCWD : (dir))

/* open(2)'s flags for zc_os.h's ZC_OPEN_* `how`, O_CLOEXEC included. */
int zc_posix_open_flags(int how);

#endif
#endif
