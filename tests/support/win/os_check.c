/* The Windows side of csrc/os/zc_os.h exercised where it differs most from POSIX: built by
 * wheels/wincheck.py and run under Wine. Prints one line per failed check; exits 1 if any. */
#include "os/zc_os_win.h" /* first: it sets the Windows version */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h> /* CreateThread: csrc/ itself starts no threads */

#include "files/zc_fs.h"
#include "files/zc_key_lock.h"
#include "files/zc_memstore.h"
#include "os/zc_os.h"
#include "files/zc_sha256.h"
#include "zc_status.h"
#include "files/zc_temp.h"

static int failures;
static const zc_root plain; /* paths as they are */

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("FAILED line %d: %s\n", __LINE__, #cond);                                  \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

static int destroyed;
static void ZC_TLS_CALLBACK destroy(void *p) { destroyed += p != NULL; }
static int once_runs;
static void once_body(void) { once_runs++; }

/* A new temporary file beside `path` (its name in `tmp`), as the store's writers make them. */
static int temp_beside(const char *path, char *tmp, size_t cap, int *fd)
{
    zc_at at;
    zc_fs_at(&plain, path, &at);
    return zc_temp_create(&at, tmp, cap, fd);
}

/* A second thread taking a memory store's key lock that the main thread holds: it must wait
 * on the store's condition variable until the main thread lets go. */
typedef struct {
    zc_memstore *store;
    int taken;
    zc_thread_id id;
} locker;

static DWORD WINAPI take_key_lock(LPVOID arg)
{
    locker *l = (locker *)arg;
    l->id = zc_thread_self();
    if (zc_memstore_lock(l->store, "c/0") == ZC_OK) {
        zc_atomic_store_int(&l->taken, 1, ZC_RELEASE);
        zc_memstore_unlock(l->store, "c/0");
    }
    return 0;
}

static void write_file(const char *path, const char *text)
{
    char tmp[512];
    int fd;
    CHECK(temp_beside(path, tmp, sizeof tmp, &fd) == ZC_OK);
    CHECK(zc_os_write(fd, text, strlen(text)) == (ptrdiff_t)strlen(text));
    zc_os_close(fd);
    CHECK(zc_os_rename_at(ZC_OS_CWD, tmp, ZC_OS_CWD, path) == 0);
}

/* A confined root at `dir`: files below it open, paths out of it (by "..", or through a
 * directory symbolic link where Wine can make one) are refused after the open. */
static void check_confined(const char *base, const char *dir)
{
    zc_root root;
    char path[600], out[600], link[600];
    CHECK(zc_fs_root_open(&root, dir, 1) == ZC_OK);
    snprintf(out, sizeof out, "%s/outside", base);
    write_file(out, "secret");
    snprintf(path, sizeof path, "%s/inside", dir);
    write_file(path, "mine");
    int fd = -1;
    CHECK(zc_fs_open(&root, path, ZC_OPEN_READ, 0, &fd) == ZC_OK && fd >= 0);
    zc_os_close(fd);
    snprintf(path, sizeof path, "%s/../../../outside", dir); /* dir is three below base */
    CHECK(zc_fs_open(&root, path, ZC_OPEN_READ, 0, &fd) == ZC_ERR_OUTSIDE);
    /* Lock files made below the root: directories made, temporary file linked into place. */
    zc_key_locks l = ZC_KEY_LOCKS_NONE;
    snprintf(path, sizeof path, "%s/x/y", dir);
    CHECK(zc_key_locks_open(&l, &root, path) == ZC_OK);
    zc_key_locks_close(&l);
    snprintf(link, sizeof link, "%s/out", dir);
    wchar_t *wl = zc_win_wide(link), *wt = zc_win_wide(base);
    if (CreateSymbolicLinkW(wl, wt, SYMBOLIC_LINK_FLAG_DIRECTORY | 0x2 /* unprivileged */)) {
        /* Windows resolves links in final paths; Wine reports the path opened by. */
        int via = zc_os_open_at(ZC_OS_CWD, link, ZC_OPEN_PATH | ZC_OPEN_DIRECTORY, 0);
        int at_base = zc_os_open_at(ZC_OS_CWD, base, ZC_OPEN_PATH | ZC_OPEN_DIRECTORY, 0);
        wchar_t *fv = zc_win_final_path(zc_win_handle(via));
        wchar_t *fb = zc_win_final_path(zc_win_handle(at_base));
        if (fv != NULL && fb != NULL && wcscmp(fv, fb) == 0) {
            snprintf(path, sizeof path, "%s/outside", link);
            CHECK(zc_fs_open(&root, path, ZC_OPEN_READ, 0, &fd) == ZC_ERR_OUTSIDE);
            CHECK(zc_fs_unlink(&root, path) == ZC_ERR_OUTSIDE);
        } else {
            printf("note: final paths do not resolve links here\n");
        }
        free(fv);
        free(fb);
        zc_os_close(via);
        zc_os_close(at_base);
        RemoveDirectoryW(wl);
    } else {
        printf("note: no directory symbolic links here (error %lu)\n", GetLastError());
    }
    free(wl);
    free(wt);
    zc_file_info info;
    CHECK(zc_os_stat_at(ZC_OS_CWD, out, 0, &info) == 0 && info.size == 6);
    zc_fs_root_close(&root);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        printf("usage: os_check DIRECTORY\n");
        return 2;
    }
    char dir[400], path[512], lockdir[512];
    snprintf(dir, sizeof dir, "%s/d\xc3\xa9j\xc3\xa0/a\\b", argv[1]); /* UTF-8, both separators */
    CHECK(zc_fs_mkdirs(&plain, dir) == ZC_OK);
    zc_file_info info;
    CHECK(zc_os_stat_at(ZC_OS_CWD, dir, 0, &info) == 0 && info.kind == ZC_FILE_DIRECTORY);
    snprintf(path, sizeof path, "%s/zarr.json", dir);

    /* Replacement while a reader holds the old version open: the reader keeps its bytes.
     * Systems without POSIX-semantics renames (before Windows 10 1607, other file systems
     * than NTFS, Wine) refuse it until the reader is done. */
    write_file(path, "old");
    int reader = zc_os_open_at(ZC_OS_CWD, path, ZC_OPEN_READ, 0);
    CHECK(reader >= 0);
    char tmp[512], buf[8] = {0};
    int t;
    CHECK(temp_beside(path, tmp, sizeof tmp, &t) == ZC_OK);
    CHECK(zc_os_write(t, "new!", 4) == 4);
    if (zc_os_rename_at(ZC_OS_CWD, tmp, ZC_OS_CWD, path) == 0) {
        CHECK(zc_os_pread(reader, buf, sizeof buf, 0) == 3 && memcmp(buf, "old", 3) == 0);
        zc_os_close(reader);
    } else {
        printf("note: no rename over open files here (errno %d)\n", errno);
        CHECK(errno == EACCES);
        zc_os_close(reader);
        CHECK(zc_os_rename_at(ZC_OS_CWD, tmp, ZC_OS_CWD, path) == 0);
    }
    zc_os_close(t);
    reader = zc_os_open_at(ZC_OS_CWD, path, ZC_OPEN_READ, 0);
    CHECK(zc_os_fstat(reader, &info) == 0 && info.size == 4 && info.kind == ZC_FILE_REGULAR);
    CHECK(zc_os_pread(reader, buf, 2, 2) == 2 && memcmp(buf, "w!", 2) == 0);
    CHECK(zc_os_pread(reader, buf, 2, 4) == 0);

    /* A whole-file lock excludes other lockers, not readers. */
    int held;
    CHECK(zc_file_lock(&plain, path, &held) == ZC_OK);
    int other = zc_os_open_at(ZC_OS_CWD, path, ZC_OPEN_WRITE, 0);
    CHECK(zc_os_lock(other, ZC_LOCK_WHOLE, 1, 0) == 0);
    CHECK(zc_os_pread(reader, buf, 4, 0) == 4);
    zc_file_unlock(held);
    CHECK(zc_os_lock(other, ZC_LOCK_WHOLE, 1, 0) == 1);
    CHECK(zc_os_unlock(other, ZC_LOCK_WHOLE) == 0);
    zc_os_close(other);
    zc_os_close(reader);

    /* Key locks: per open file, even within one process; another key is free. */
    snprintf(lockdir, sizeof lockdir, "%s/new/node", dir);
    zc_key_locks a = ZC_KEY_LOCKS_NONE, b = ZC_KEY_LOCKS_NONE;
    CHECK(zc_key_locks_open(&a, &plain, lockdir) == ZC_OK && zc_key_locks_open(&b, &plain, lockdir) == ZC_OK);
    char key[600];
    snprintf(key, sizeof key, "%s/c/0/0", lockdir);
    CHECK(zc_key_lock(&a, key) == ZC_OK);
    int dup = zc_os_dup(a.fd);
    zc_os_close(dup); /* closing a duplicate keeps the lock */
    unsigned char digest[32];
    zc_sha256("c/0/0", 5, digest);
    uint64_t byte = (uint64_t)digest[0] << 24 | digest[1] << 16 | digest[2] << 8 | digest[3];
    CHECK(zc_os_lock(b.fd, byte, 1, 0) == 0);
    CHECK(zc_os_lock(b.fd, byte ^ 1, 1, 0) == 1 && zc_os_unlock(b.fd, byte ^ 1) == 0);
    CHECK(zc_key_unlock(&a, key) == ZC_OK);
    CHECK(zc_key_lock(&b, key) == ZC_OK && zc_key_unlock(&b, key) == ZC_OK);
    zc_key_locks_close(&a);
    zc_key_locks_close(&b);

    /* A live writer's temporary file stays; a dead one's goes. */
    CHECK(temp_beside(path, tmp, sizeof tmp, &t) == ZC_OK);
    CHECK(zc_temp_remove_stale(&plain, tmp) == 0);
    zc_os_close(t);
    CHECK(zc_temp_remove_stale(&plain, tmp) == 1);
    CHECK(zc_os_stat_at(ZC_OS_CWD, tmp, 0, &info) != 0);

    /* Missing files, and directories opened as open(2) does. */
    CHECK(zc_os_open_at(ZC_OS_CWD, "no/such/file", ZC_OPEN_READ, 0) < 0);
    int d = zc_os_open_at(ZC_OS_CWD, dir, ZC_OPEN_READ, 0);
    CHECK(d >= 0 && zc_os_fstat(d, &info) == 0 && info.kind == ZC_FILE_DIRECTORY);
    zc_os_close(d);
    CHECK(zc_os_unlink_at(ZC_OS_CWD, path) == 0 && zc_os_stat_at(ZC_OS_CWD, path, 0, &info) != 0);
    check_confined(argv[1], dir);

    /* Memory, aligned; threads' helpers. */
    size_t huge = (size_t)2 << 20;
    char *m = (char *)zc_mem_map(4 * huge, huge);
    CHECK(m != NULL && ((uintptr_t)m & (huge - 1)) == 0);
    m[0] = m[4 * huge - 1] = 1;
    zc_mem_advise_free(m, 4 * huge);
    zc_mem_unmap(m, 4 * huge);
    zc_once once = ZC_ONCE_INIT;
    zc_once_run(&once, once_body);
    zc_once_run(&once, once_body);
    CHECK(once_runs == 1);
    zc_tls_key k;
    CHECK(zc_tls_create(&k, destroy) == 0 && zc_tls_set(k, &k) == 0 && zc_tls_get(k) == &k);
    zc_mutex mu = ZC_MUTEX_INIT;
    zc_mutex_lock(&mu);
    zc_mutex_unlock(&mu);
    int counter = 0, seen = 1;
    CHECK(zc_atomic_add_int(&counter, 2, ZC_ACQ_REL) == 2 && !zc_atomic_cas_int(&counter, &seen, 5) &&
          seen == 2 && zc_atomic_cas_int(&counter, &seen, 5) && counter == 5);
    int64_t total = 5;
    CHECK(zc_atomic_add_i64(&total, -7, ZC_RELAXED) == -2 && zc_atomic_load_i64(&total, ZC_RELAXED) == -2);
    zc_mutex made;
    zc_mutex_init(&made);
    zc_mutex_lock(&made);
    zc_mutex_unlock(&made);
    zc_mutex_destroy(&made);

    /* A file's times, on zc_os_time_ns's clock. */
    write_file(path, "times");
    uint64_t now = zc_os_time_ns();
    CHECK(zc_os_stat_at(ZC_OS_CWD, path, 0, &info) == 0 && info.mtime_ns > 0 &&
          info.ctime_ns >= info.mtime_ns);
    CHECK(info.mtime_ns <= (int64_t)now + 1000000000LL && info.mtime_ns >= (int64_t)now - 60000000000LL);
    CHECK(zc_os_unlink_at(ZC_OS_CWD, path) == 0);

    /* Key locks of a memory store: taken again by their holder, waited for by others. */
    locker l = {zc_memstore_new(), 0, 0};
    CHECK(l.store != NULL);
    CHECK(zc_memstore_lock(l.store, "c/0") == ZC_OK && zc_memstore_lock(l.store, "c/0") == ZC_OK);
    HANDLE th = CreateThread(NULL, 0, take_key_lock, &l, 0, NULL);
    CHECK(th != NULL);
    Sleep(100);
    CHECK(zc_atomic_load_int(&l.taken, ZC_ACQUIRE) == 0);
    CHECK(zc_memstore_unlock(l.store, "c/0") == ZC_OK);
    Sleep(50);
    CHECK(zc_atomic_load_int(&l.taken, ZC_ACQUIRE) == 0);
    CHECK(zc_memstore_unlock(l.store, "c/0") == ZC_OK);
    WaitForSingleObject(th, INFINITE);
    CloseHandle(th);
    CHECK(zc_atomic_load_int(&l.taken, ZC_ACQUIRE) == 1);
    CHECK(!zc_thread_equal(l.id, zc_thread_self()) && zc_thread_equal(zc_thread_self(), zc_thread_self()));
    CHECK(zc_memstore_unlock(l.store, "c/0") == ZC_ERR_PARAM); /* not held */
    zc_memstore_release(l.store);

    int64_t big;
    CHECK(zc_mul_overflow_i64((int64_t)1 << 40, (int64_t)1 << 30, &big));
    CHECK(zc_bswap32(0x11223344u) == 0x44332211u);
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
