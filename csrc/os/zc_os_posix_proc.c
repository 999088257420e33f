/* The process id, the clock and random bytes on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "os/zc_os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

long zc_os_pid(void) { return (long)getpid(); }

int zc_os_pid_gone(long pid)
{
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

uint64_t zc_os_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* `n` bytes of /dev/urandom: 0, or -1 with errno. */
static int read_urandom(unsigned char *p, size_t n)
{
    int fd;
    do
        fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    while (n > 0) {
        const ssize_t r = read(fd, p, n);
        if (r > 0) {
            p += r, n -= (size_t)r;
        } else if (r == 0 || errno != EINTR) {
            const int e = r == 0 ? EIO : errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    close(fd);
    return 0;
}

int zc_os_random(void *buf, size_t n)
{
    unsigned char *p = (unsigned char *)buf;
#if defined(__linux__) && defined(SYS_getrandom)
    /* The system call itself (Linux 3.17; glibc wraps it from 2.25 only), which needs no
     * descriptor nor /dev; it waits only until the pool is first seeded at boot. */
    while (n > 0) {
        const long r = syscall(SYS_getrandom, p, n, 0u);
        if (r > 0)
            p += r, n -= (size_t)r;
        else if (errno == ENOSYS)
            break; /* (before 3.17) */
        else if (errno != EINTR)
            return -1;
    }
#endif
    return n > 0 ? read_urandom(p, n) : 0;
}
#endif
