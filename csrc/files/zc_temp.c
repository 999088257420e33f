/* Temporary files of a directory store; see zc_temp.h. */
#include "files/zc_temp.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "os/zc_os.h"
#include "zc_status.h"

/* Unique among this process's names with its pid; the clock makes a name from a recycled pid
 * (or another host's same pid) unlikely to meet an old one. */
static void name_parts(uint64_t *id, uint64_t *stamp)
{
    static int64_t counter;
    *id = (uint64_t)zc_atomic_add_i64(&counter, 1, ZC_RELAXED);
    *stamp = zc_os_time_ns() & 0xffffffffffULL;
}

int zc_temp_create(const zc_at *at, char *tmp, size_t cap, int *fd)
{
    const char *path = at->name;
    const char *sep = zc_os_last_sep(path);
    int dirlen = sep ? (int)(sep - path) : 0;
    *fd = -1;
    for (;;) {
        uint64_t id, stamp;
        name_parts(&id, &stamp);
        int n = snprintf(tmp, cap, "%.*s%s%s%ld-%llx-%llx", dirlen, path, sep ? "/" : "",
                         ZC_TEMP_PREFIX, zc_os_pid(), (unsigned long long)stamp,
                         (unsigned long long)id);
        if (n < 0 || (size_t)n >= cap)
            return ZC_ERR_SIZE;
        *fd = zc_os_open_at(at->dir, tmp, ZC_OPEN_CREATE, 0666);
        if (*fd < 0) {
            if (errno == EEXIST)
                continue;
            return ZC_ERR_IO;
        }
        /* A cleaner may find the file unlocked between our open and our lock: it removes it,
         * and we start anew. We see that when our lock fails (the cleaner holds its own), or
         * when the name is gone by the time we hold it (the cleaner was done before). */
        int locked = zc_os_lock(*fd, ZC_LOCK_WHOLE, 1, 0);
        zc_file_info st;
        if (locked < 0 || (locked == 1 && zc_os_fstat(*fd, &st) == 0 && st.nlink > 0))
            return ZC_OK;
        zc_os_close(*fd);
        *fd = -1;
    }
}

void zc_temp_unlock(int fd) { zc_os_unlock(fd, ZC_LOCK_WHOLE); }

int zc_temp_remove_stale(const zc_root *r, const char *tmp)
{
    zc_at at;
    if (zc_fs_at(r, tmp, &at) != ZC_OK)
        return 0;
    int fd = zc_os_open_at(at.dir, at.name, ZC_OPEN_READ | ZC_OPEN_NOFOLLOW, 0);
    zc_file_info held, named;
    int removed = 0;
    /* A shared lock conflicts with a live writer's exclusive one; once we hold it, a writer
     * that has not locked its new file yet fails to and leaves it. */
    if (fd >= 0 && zc_os_fstat(fd, &held) == 0 && held.kind == ZC_FILE_REGULAR &&
        zc_os_lock(fd, ZC_LOCK_WHOLE, 0, 0) == 1 && zc_os_stat_at(at.dir, at.name, 1, &named) == 0 &&
        named.ino == held.ino && named.dev == held.dev)
        removed = zc_os_unlink_at(at.dir, at.name) == 0;
    if (fd >= 0)
        zc_os_close(fd);
    zc_fs_at_close(&at);
    return removed;
}
