/* What csrc/ needs of the operating system and the compiler, for POSIX systems (Linux, macOS)
 * and Windows.
 *
 * POSIX maps straight onto the system calls the code made before this layer existed: threads
 * and atomics are macros over pthreads and GCC/Clang builtins, the rest thin functions in
 * zc_os_posix_*.c. Windows (MSVC or MinGW) is in zc_os_win_*.c. Every file compiles on every
 * system and is empty where it does not belong, so a build simply compiles every
 * file of csrc/.
 *
 * Descriptors are ints: POSIX descriptors, or on Windows C runtime descriptors over handles
 * opened with every sharing mode, so a file that one thread reads can still be renamed over or
 * removed by another, as on POSIX. Paths are UTF-8 (Windows turns them into UTF-16 for its
 * wide API; '/' and '\\' both separate there). Failures return -1 and set errno (on Windows
 * translated from GetLastError). */
#ifndef ZC_OS_H
#define ZC_OS_H

#include <stddef.h>
#include <stdint.h>

/* ZC_MSVC: MSVC's intrinsics instead of GCC's builtins. wheels/wincheck.py also sets it for
 * MinGW, whose headers have the same intrinsics, to run those branches under Wine. */
#if defined(_MSC_VER) && !defined(__clang__) && !defined(ZC_MSVC)
#define ZC_MSVC 1
#endif
#ifdef ZC_MSVC
#include <intrin.h>
#include <stdlib.h>
#endif

/* ---- Atomics on int and int64_t, with the orders of GCC's __atomic builtins. MSVC gets
 * interlocked operations, full barriers whatever the order asked. ---- */
#ifndef ZC_MSVC
#define ZC_RELAXED __ATOMIC_RELAXED
#define ZC_ACQUIRE __ATOMIC_ACQUIRE
#define ZC_RELEASE __ATOMIC_RELEASE
#define ZC_ACQ_REL __ATOMIC_ACQ_REL
#define zc_atomic_load_int(p, order) __atomic_load_n((p), (order))
#define zc_atomic_store_int(p, v, order) __atomic_store_n((p), (v), (order))
#define zc_atomic_add_int(p, v, order) __atomic_add_fetch((p), (v), (order))
#define zc_atomic_exchange_int(p, v, order) __atomic_exchange_n((p), (v), (order))
/* Compare *p with *expected: equal, store `desired` and return 1; else *expected = *p, 0. */
#define zc_atomic_cas_int(p, expected, desired)                                                \
    __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL,               \
                                __ATOMIC_ACQUIRE)
#define zc_atomic_load_i64(p, order) __atomic_load_n((p), (order))
#define zc_atomic_add_i64(p, v, order) __atomic_add_fetch((p), (v), (order))
#define zc_atomic_fetch_add_i64(p, v, order) __atomic_fetch_add((p), (v), (order))
#define zc_atomic_store_i64(p, v, order) __atomic_store_n((p), (v), (order))
/* As zc_atomic_cas_int, on int64_t. */
#define zc_atomic_cas_i64(p, expected, desired)                                                \
    __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL,               \
                                __ATOMIC_ACQUIRE)
/* A full barrier: memory accesses before it are ordered before those after it (a seqlock's
 * readers and writers). */
#define zc_atomic_fence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#else
#define ZC_RELAXED 0
#define ZC_ACQUIRE 2
#define ZC_RELEASE 3
#define ZC_ACQ_REL 4
/* int and long are both 32 bits on Windows. */
static __inline int zc_atomic_load_int(const int *p, int order)
{
    (void)order;
    return (int)_InterlockedCompareExchange((volatile long *)p, 0, 0);
}
static __inline void zc_atomic_store_int(int *p, int v, int order)
{
    (void)order;
    _InterlockedExchange((volatile long *)p, (long)v);
}
static __inline int zc_atomic_add_int(int *p, int v, int order)
{
    (void)order;
    return (int)_InterlockedExchangeAdd((volatile long *)p, (long)v) + v;
}
static __inline int zc_atomic_exchange_int(int *p, int v, int order)
{
    (void)order;
    return (int)_InterlockedExchange((volatile long *)p, (long)v);
}
static __inline int zc_atomic_cas_int(int *p, int *expected, int desired)
{
    long seen = _InterlockedCompareExchange((volatile long *)p, (long)desired, (long)*expected);
    if (seen == (long)*expected)
        return 1;
    *expected = (int)seen;
    return 0;
}
static __inline int64_t zc_atomic_load_i64(const int64_t *p, int order)
{
    (void)order;
    return _InterlockedCompareExchange64((volatile __int64 *)p, 0, 0);
}
static __inline int64_t zc_atomic_fetch_add_i64(int64_t *p, int64_t v, int order)
{
    (void)order;
    return _InterlockedExchangeAdd64((volatile __int64 *)p, v);
}
static __inline int64_t zc_atomic_add_i64(int64_t *p, int64_t v, int order)
{
    return zc_atomic_fetch_add_i64(p, v, order) + v;
}
static __inline void zc_atomic_store_i64(int64_t *p, int64_t v, int order)
{
    (void)order;
    _InterlockedExchange64((volatile __int64 *)p, v);
}
static __inline int zc_atomic_cas_i64(int64_t *p, int64_t *expected, int64_t desired)
{
    __int64 seen = _InterlockedCompareExchange64((volatile __int64 *)p, desired, *expected);
    if (seen == *expected)
        return 1;
    *expected = seen;
    return 0;
}
static __inline void zc_atomic_fence(void)
{
    volatile long x = 0; /* an interlocked operation is a full barrier */
    _InterlockedOr(&x, 0);
}
#endif

/* ---- Byte order, overflow checks, prefetch ---- */
#ifndef ZC_MSVC
#define zc_bswap16(x) __builtin_bswap16(x)
#define zc_bswap32(x) __builtin_bswap32(x)
#define zc_bswap64(x) __builtin_bswap64(x)
/* *r = a * b; 1 when that overflows int64_t (ptrdiff_t on 64-bit systems). */
#define zc_mul_overflow_i64(a, b, r) __builtin_mul_overflow((a), (b), (r))
#define zc_prefetch(p) __builtin_prefetch(p)
#else
#define zc_bswap16(x) _byteswap_ushort(x)
#define zc_bswap32(x) _byteswap_ulong(x)
#define zc_bswap64(x) _byteswap_uint64(x)
static __inline int zc_mul_overflow_i64(int64_t a, int64_t b, int64_t *r)
{
#if defined(_M_X64)
    __int64 high;
    *r = _mul128(a, b, &high);
#else
    __int64 high = __mulh(a, b);
    *r = (int64_t)((uint64_t)a * (uint64_t)b);
#endif
    return high != (*r < 0 ? -1 : 0);
}
#if defined(_M_X64)
#define zc_prefetch(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else
#define zc_prefetch(p) ((void)(p))
#endif
#endif

/* SSE2 intrinsics (every x86-64 compiler has them; MSVC does not say so with __SSE2__). */
#if defined(__SSE2__) || (defined(ZC_MSVC) && defined(_M_X64))
#define ZC_SSE2 1
#endif

/* ---- Threads: a mutex (static or made at run time, not recursive), a condition variable
 * waited on with a mutex, the calling thread's identity, run-once, per-thread values (with a
 * destructor run at thread exit), yielding, and fork handlers (nothing on Windows, which does
 * not fork). csrc/ starts no threads: its callers' threads run the work. ---- */
#ifdef _WIN32
typedef struct { void *opaque; } zc_mutex; /* an SRWLOCK */
#define ZC_MUTEX_INIT {0}
typedef struct { void *opaque; } zc_cond; /* a CONDITION_VARIABLE */
typedef unsigned long zc_thread_id; /* the thread's id, unique among running threads */
typedef struct { void *opaque; } zc_once; /* an INIT_ONCE */
#define ZC_ONCE_INIT {0}
typedef unsigned long zc_tls_key; /* a fiber-local storage index, whose callback runs at exit */
#define ZC_TLS_CALLBACK __stdcall
void zc_mutex_init(zc_mutex *m);
#define zc_mutex_destroy(m) ((void)(m)) /* SRW locks hold no resources */
void zc_mutex_lock(zc_mutex *m);
void zc_mutex_unlock(zc_mutex *m);
void zc_cond_init(zc_cond *c);
#define zc_cond_destroy(c) ((void)(c))
/* Release `m` (held), wait until woken (or spuriously), take `m` again. */
void zc_cond_wait(zc_cond *c, zc_mutex *m);
void zc_cond_broadcast(zc_cond *c);
zc_thread_id zc_thread_self(void);
#define zc_thread_equal(a, b) ((a) == (b))
void zc_once_run(zc_once *once, void (*fn)(void));
/* 0, or nonzero when no key is left. */
int zc_tls_create(zc_tls_key *key, void(ZC_TLS_CALLBACK *destroy)(void *));
void *zc_tls_get(zc_tls_key key);
int zc_tls_set(zc_tls_key key, void *value); /* 0 on success */
void zc_thread_yield(void);
#define zc_atfork(prepare, parent, child) ((void)(prepare), (void)(parent), (void)(child))
#else
#include <pthread.h>
#include <sched.h>
typedef pthread_mutex_t zc_mutex;
#define ZC_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
typedef pthread_once_t zc_once;
#define ZC_ONCE_INIT PTHREAD_ONCE_INIT
typedef pthread_key_t zc_tls_key;
#define ZC_TLS_CALLBACK
typedef pthread_cond_t zc_cond;
typedef pthread_t zc_thread_id;
#define zc_mutex_init(m) pthread_mutex_init((m), NULL)
#define zc_mutex_destroy(m) pthread_mutex_destroy(m)
#define zc_mutex_lock(m) pthread_mutex_lock(m)
#define zc_mutex_unlock(m) pthread_mutex_unlock(m)
#define zc_cond_init(c) pthread_cond_init((c), NULL)
#define zc_cond_destroy(c) pthread_cond_destroy(c)
#define zc_cond_wait(c, m) pthread_cond_wait((c), (m))
#define zc_cond_broadcast(c) pthread_cond_broadcast(c)
#define zc_thread_self() pthread_self()
#define zc_thread_equal(a, b) pthread_equal((a), (b))
#define zc_once_run(once, fn) pthread_once((once), (fn))
#define zc_tls_create(key, destroy) pthread_key_create((key), (destroy))
#define zc_tls_get(key) pthread_getspecific(key)
#define zc_tls_set(key, value) pthread_setspecific((key), (value))
#define zc_thread_yield() sched_yield()
#define zc_atfork(prepare, parent, child) pthread_atfork((prepare), (parent), (child))
#endif

/* ---- Memory: anonymous page-aligned blocks (zc_os_*_mem.c) ---- */

/* `size` bytes, readable and writable, at an address aligned to `align` (a power of two and a
 * multiple of 4 KiB; Windows may fall back to its 64 KiB granularity); NULL when out of
 * memory. */
void *zc_mem_map(size_t size, size_t align);
void zc_mem_unmap(void *p, size_t size);
/* Let the system take the pages back under memory pressure until they are next written (their
 * contents are then unspecified): MADV_FREE, or MEM_RESET on Windows; nothing elsewhere. */
void zc_mem_advise_free(void *p, size_t size);
/* Back the block with huge pages where the system does so on request (MADV_HUGEPAGE). */
void zc_mem_advise_huge(void *p, size_t size);

/* ---- Memory shared between processes (zc_os_*_mem.c): an anonymous file of `size` bytes
 * (Linux: memfd_create), which goes with the last descriptor or mapping of it, so a process
 * that dies leaves none behind. Other processes open it by a path to the creator's
 * descriptor (/proc/<pid>/fd/<fd>); forked ones inherit the descriptor and the mapping.
 * Elsewhere (macOS, Windows) the calls fail with ENOSYS. Descriptors are not inherited by
 * programs the process starts. ---- */
int zc_os_shm_create(size_t size);
int zc_os_shm_open(const char *path);
/* The descriptor's file as `size` bytes mapped shared, read and write; NULL with errno. */
void *zc_os_shm_map(int fd, size_t size);
/* The size of the file `fd`, or -1 with errno. */
int64_t zc_os_shm_size(int fd);

/* ---- Files (zc_os_*_file.c) ----
 * Names are looked up in a directory `dir`: a descriptor of a directory (opened with
 * ZC_OPEN_PATH | ZC_OPEN_DIRECTORY), or ZC_OS_CWD, with which the name is a path as the plain
 * calls take it. POSIX has these as its *at() calls. Windows has none: there a directory's
 * descriptor stands for the directory's final path (GetFinalPathNameByHandleW), which the name
 * is joined to, so a directory renamed meanwhile is followed but one swapped for a link to
 * elsewhere is not noticed. */

#define ZC_OS_CWD (-100)

enum { ZC_FILE_REGULAR, ZC_FILE_DIRECTORY, ZC_FILE_LINK, ZC_FILE_OTHER };

typedef struct {
    uint64_t size;
    uint64_t dev, ino; /* the same pair: the same file */
    uint64_t nlink;    /* names it has; 0 once removed (on Windows: once its removal is pending) */
    int kind;          /* ZC_FILE_* (ZC_FILE_LINK: a symbolic link or other reparse point) */
    /* Nanoseconds since 1970 (zc_os_time_ns's clock) of the last change of the data, and of
     * the data or the metadata (POSIX st_ctim; Windows' ChangeTime): neither is set back by a
     * write; on POSIX users cannot set the latter at all (on Windows NtSetInformationFile
     * can). */
    int64_t mtime_ns, ctime_ns;
} zc_file_info;

/* How zc_os_open_at and zc_os_open_beneath open a file: one of READ (directories too, as
 * open(2) does: zc_os_fstat tells), WRITE (an existing file, for writing only), CREATE (a new
 * file for writing only: EEXIST when the name exists, also as a symbolic link, which is never
 * followed) or PATH (any file, only to name it as `dir` or look at it with zc_os_fstat: O_PATH
 * where it exists), and any of DIRECTORY (ENOTDIR unless it is one) and NOFOLLOW (a symbolic
 * link at the name is not followed, and opening does not block: for files of unknown origin).
 * Descriptors are not inherited by programs the process starts. */
enum {
    ZC_OPEN_READ = 0,
    ZC_OPEN_WRITE = 1,
    ZC_OPEN_CREATE = 2,
    ZC_OPEN_PATH = 3,
    ZC_OPEN_DIRECTORY = 4,
    ZC_OPEN_NOFOLLOW = 8,
};
#define ZC_OPEN_HOW(how) ((how) & 3)

/* Open `name` in `dir`; `mode` is the new file's as open(2)'s (POSIX only). The descriptor,
 * or -1 with errno. */
int zc_os_open_at(int dir, const char *name, int how, unsigned mode);
/* Open `rel`, a relative path, beneath the directory `root` (zc_os_*_beneath.c), following
 * only symbolic links that stay beneath it: -1 with errno EXDEV when it leads out. Linux:
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS); POSIX systems without it: a walk of one
 * component at a time that never lets the kernel follow a link (O_NOFOLLOW), reading links
 * itself. Windows: opened by the joined path, then refused unless its final path is beneath
 * the root's (check after open: see wheels/README.md); ZC_OPEN_CREATE is refused there
 * (EINVAL), since a file made outside could not be taken back: create in a directory opened
 * beneath the root instead. */
int zc_os_open_beneath(int root, const char *rel, int how, unsigned mode);
/* Resolve zc_os_open_beneath by the walk even where openat2 exists (tests of the fallback;
 * nothing on Windows). */
void zc_os_beneath_by_walking(int on);
int zc_os_close(int fd);
/* A second descriptor of the same open file (sharing its locks). */
int zc_os_dup(int fd);
/* As zc_os_dup, not inherited by programs the process starts (a descriptor kept long). */
int zc_os_dup_private(int fd);
/* Read up to `len` bytes at `at`: the count (0 at the end), or -1 (EINTR: try again). */
ptrdiff_t zc_os_pread(int fd, void *buf, size_t len, uint64_t at);
/* Tell the system the bytes [at, at + len) of `fd` will be read soon: it starts reading them
 * into its cache and returns without waiting (POSIX_FADV_WILLNEED). A hint: nothing is done
 * where there is no such call (Windows, macOS), and failures are ignored. */
void zc_os_prefetch(int fd, uint64_t at, size_t len);
/* Write up to `len` bytes at the file position: the count, or -1 (EINTR: try again). */
ptrdiff_t zc_os_write(int fd, const void *buf, size_t len);
/* Copy up to `len` bytes of `in_fd` from `at` to `out_fd`'s file position inside the system,
 * with no copy through the caller's memory (Linux: copy_file_range): the count (0 at the end
 * of `in_fd`), or -1 (EINTR: try again; any other errno: the system cannot copy between these
 * files, and the caller copies through memory). */
ptrdiff_t zc_os_copy_range(int in_fd, uint64_t at, int out_fd, size_t len);
int zc_os_fstat(int fd, zc_file_info *info);
/* Sockets: `sock` is a connected stream socket's descriptor (on Windows its SOCKET).
 * Send up to `len` bytes: the count, or -1 (EINTR: try again); never a SIGPIPE. */
ptrdiff_t zc_os_socket_send(intptr_t sock, const void *buf, size_t len);
/* Receive up to `len` bytes: the count (0: the peer closed), or -1 (EINTR: try again; a
 * receive timeout of the socket's: EAGAIN). On Windows both fail with ENOSYS: the extensions
 * link no socket library there (the callers keep their own sockets' code). */
ptrdiff_t zc_os_socket_recv(intptr_t sock, void *buf, size_t len);

/* Information on `name` in `dir`; with `nofollow`, on a symbolic link itself. */
int zc_os_stat_at(int dir, const char *name, int nofollow, zc_file_info *info);
/* Rename `from` (in `from_dir`) to `to` (in `to_dir`), atomically replacing `to` if it exists
 * (a symbolic link there is replaced, never followed; on Windows also while others have `to`
 * open, where the system allows: Windows 10 1607 and later on NTFS). */
int zc_os_rename_at(int from_dir, const char *from, int to_dir, const char *to);
int zc_os_unlink_at(int dir, const char *name);
/* A second name `name` (in `dir`) for the file `existing` (in `existing_dir`). */
int zc_os_link_at(int existing_dir, const char *existing, int dir, const char *name);
int zc_os_mkdir_at(int dir, const char *name);
/* Whether `c` separates path components ('/', and on Windows '\\'). */
int zc_os_is_sep(char c);
/* The absolute path of the existing directory `path` with every symbolic link resolved (and on
 * Windows the final path of its handle), in `out` of `cap` bytes: 0, or -1 with errno
 * (ENAMETOOLONG when it does not fit). */
int zc_os_real_path(const char *path, char *out, size_t cap);
/* The length of the root of `path` that is no directory to make ("/", "C:\\", "\\\\host\\share\\"). */
size_t zc_os_root_length(const char *path);
/* The last separator of `path`, or NULL. */
const char *zc_os_last_sep(const char *path);
/* Give a file just created, `fd`, the mode `mode` plus write permission for whoever may write
 * the directory `dir_name` (in `dir`), whatever the umask, and that directory's group (best
 * effort); with `mode` < 0 the file keeps its mode and nothing is done in a sticky directory.
 * Windows: nothing, the file inherits the directory's access control list. 0, or -1 with
 * errno. */
int zc_os_share_like_dir(int fd, int dir, const char *dir_name, int mode);
long zc_os_pid(void);
/* Is there no process of id `pid` (it exited, and no other took the id)? */
int zc_os_pid_gone(long pid);
/* Nanoseconds of the real-time clock. */
uint64_t zc_os_time_ns(void);
/* `n` bytes from the system's cryptographic random source into `buf` (secret keys): 0, or -1
 * with errno. */
int zc_os_random(void *buf, size_t n);

/* ---- Advisory locks (zc_os_*_lock.c): one byte of a file at `at` (below 2^32), or the whole
 * file with ZC_LOCK_WHOLE. They conflict between open files, even within one process, and go
 * when the last descriptor of the open file closes or the process dies: POSIX open file
 * description locks, whole-file flock where those do not exist; LockFileEx on Windows, where a
 * whole-file lock is one byte far beyond any data, since Windows' locks also bar reads and
 * writes of what they cover. ---- */
#define ZC_LOCK_WHOLE UINT64_MAX
/* 1 taken, 0 another holds a conflicting lock (only without `wait`), -1 with errno. */
int zc_os_lock(int fd, uint64_t at, int exclusive, int wait);
int zc_os_unlock(int fd, uint64_t at);

#endif
