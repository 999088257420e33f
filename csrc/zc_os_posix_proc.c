/* The process id and the clock on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "zc_os.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

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
#endif
