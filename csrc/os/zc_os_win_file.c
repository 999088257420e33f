/* Files on Windows; see zc_os.h. Handles are opened with every sharing mode (so, as on POSIX,
 * a file others have open can be renamed over or removed) and wrapped in C runtime
 * descriptors; reads and writes go to the handle, never through the runtime's text mode. */
#ifdef _WIN32
#include "os/zc_os_win.h" /* first: it sets the Windows version */
#include "os/zc_os.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SHARE_ALL (FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
#define MAX_IO ((DWORD)1 << 30) /* bytes per ReadFile/WriteFile call: DWORD counts */

/* FILE_RENAME_INFO as FileRenameInfoEx (Windows 10 1607) takes it, with flags where older
 * headers have a BOOLEAN (the layout is the same); declared here, since headers declare the
 * class and flags only for some target versions. */
#define FILE_RENAME_INFO_EX_CLASS ((FILE_INFO_BY_HANDLE_CLASS)22)
#define RENAME_REPLACE_IF_EXISTS 0x1
#define RENAME_POSIX_SEMANTICS 0x2
typedef struct {
    DWORD flags;
    HANDLE root;
    DWORD name_bytes;
    WCHAR name[1];
} rename_info_ex;

static HANDLE open_handle(const wchar_t *path, DWORD access, DWORD disposition, DWORD flags)
{
    HANDLE h = CreateFileW(path, access, SHARE_ALL, NULL, disposition,
                           FILE_ATTRIBUTE_NORMAL | flags, NULL);
    if (h == INVALID_HANDLE_VALUE)
        zc_win_set_errno(GetLastError());
    return h;
}

/* A C runtime descriptor owning `h` (closed on failure), or -1 with errno. */
static int wrap(HANDLE h, int crt_flags)
{
    int fd = _open_osfhandle((intptr_t)h, crt_flags | _O_BINARY | _O_NOINHERIT);
    if (fd < 0) {
        CloseHandle(h);
        errno = EMFILE;
    }
    return fd;
}

int zc_os_open_at(int dir, const char *name, int how, unsigned mode)
{
    (void)mode; /* the directory's access control list decides */
    static const DWORD access[4] = {GENERIC_READ, GENERIC_WRITE, GENERIC_WRITE,
                                    FILE_READ_ATTRIBUTES};
    /* Backup semantics open directories too, as open(2) does. */
    DWORD flags = (ZC_OPEN_HOW(how) == ZC_OPEN_WRITE || ZC_OPEN_HOW(how) == ZC_OPEN_CREATE
                       ? 0
                       : FILE_FLAG_BACKUP_SEMANTICS) |
                  (how & ZC_OPEN_NOFOLLOW ? FILE_FLAG_OPEN_REPARSE_POINT : 0);
    wchar_t *w = zc_win_wide_at(dir, name);
    if (w == NULL)
        return -1;
    HANDLE h = open_handle(w, access[ZC_OPEN_HOW(how)],
                           ZC_OPEN_HOW(how) == ZC_OPEN_CREATE ? CREATE_NEW : OPEN_EXISTING, flags);
    free(w);
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    if (how & ZC_OPEN_DIRECTORY) {
        FILE_BASIC_INFO b;
        if (!GetFileInformationByHandleEx(h, FileBasicInfo, &b, sizeof b) ||
            !(b.FileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
            CloseHandle(h);
            errno = ENOTDIR;
            return -1;
        }
    }
    return wrap(h, ZC_OPEN_HOW(how) == ZC_OPEN_WRITE || ZC_OPEN_HOW(how) == ZC_OPEN_CREATE
                       ? _O_WRONLY
                       : _O_RDONLY);
}

int zc_os_close(int fd) { return _close(fd); }

int zc_os_dup(int fd) { return _dup(fd); }

int zc_os_dup_private(int fd)
{
    HANDLE h = zc_win_handle(fd), copy;
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &copy, 0, FALSE,
                         DUPLICATE_SAME_ACCESS)) {
        zc_win_set_errno(GetLastError());
        return -1;
    }
    return wrap(copy, _O_RDONLY);
}

ptrdiff_t zc_os_pread(int fd, void *buf, size_t len, uint64_t at)
{
    HANDLE h = zc_win_handle(fd);
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    OVERLAPPED ov;
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)at;
    ov.OffsetHigh = (DWORD)(at >> 32);
    DWORD got = 0;
    if (!ReadFile(h, buf, len < MAX_IO ? (DWORD)len : MAX_IO, &got, &ov)) {
        DWORD e = GetLastError();
        if (e == ERROR_HANDLE_EOF)
            return 0;
        zc_win_set_errno(e);
        return -1;
    }
    return (ptrdiff_t)got;
}

void zc_os_prefetch(int fd, uint64_t at, size_t len)
{
    (void)fd, (void)at, (void)len; /* (the cache manager reads ahead by itself) */
}

ptrdiff_t zc_os_write(int fd, const void *buf, size_t len)
{
    HANDLE h = zc_win_handle(fd);
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    DWORD put = 0;
    if (!WriteFile(h, buf, len < MAX_IO ? (DWORD)len : MAX_IO, &put, NULL)) {
        zc_win_set_errno(GetLastError());
        return -1;
    }
    return (ptrdiff_t)put;
}

ptrdiff_t zc_os_copy_range(int in_fd, uint64_t at, int out_fd, size_t len)
{
    (void)in_fd, (void)at, (void)out_fd, (void)len; /* (callers copy through memory) */
    errno = ENOSYS;
    return -1;
}

static int handle_info(HANDLE h, zc_file_info *info)
{
    BY_HANDLE_FILE_INFORMATION b;
    FILE_STANDARD_INFO s;
    FILE_BASIC_INFO times;
    if (!GetFileInformationByHandle(h, &b) ||
        !GetFileInformationByHandleEx(h, FileBasicInfo, &times, sizeof times)) {
        zc_win_set_errno(GetLastError());
        return -1;
    }
    info->mtime_ns = zc_win_time_ns((uint64_t)times.LastWriteTime.QuadPart);
    info->ctime_ns = zc_win_time_ns((uint64_t)times.ChangeTime.QuadPart);
    info->size = (uint64_t)b.nFileSizeHigh << 32 | b.nFileSizeLow;
    info->dev = b.dwVolumeSerialNumber;
    info->ino = (uint64_t)b.nFileIndexHigh << 32 | b.nFileIndexLow;
    info->nlink = b.nNumberOfLinks;
    /* A removed file others still hold keeps its links until closed, pending deletion. */
    if (GetFileInformationByHandleEx(h, FileStandardInfo, &s, sizeof s) && s.DeletePending)
        info->nlink = 0;
    info->kind = b.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT ? ZC_FILE_LINK
                 : b.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY ? ZC_FILE_DIRECTORY
                                                                 : ZC_FILE_REGULAR;
    return 0;
}

int zc_os_fstat(int fd, zc_file_info *info)
{
    HANDLE h = zc_win_handle(fd);
    return h == INVALID_HANDLE_VALUE ? -1 : handle_info(h, info);
}

int zc_os_stat_at(int dir, const char *name, int nofollow, zc_file_info *info)
{
    /* No data access: a handle for attributes, which no lock or sharing mode bars. */
    int fd = zc_os_open_at(dir, name, ZC_OPEN_PATH | (nofollow ? ZC_OPEN_NOFOLLOW : 0), 0);
    if (fd < 0)
        return -1;
    int r = zc_os_fstat(fd, info);
    _close(fd);
    return r;
}

/* Rename with POSIX semantics (Windows 10 1607 on, NTFS): `to` is replaced even while others
 * have it open, as waiters on a zc_file_lock do. 1 done, 0 not supported here, -1 failed. */
static int rename_posix(const wchar_t *from, const wchar_t *to)
{
    size_t n = wcslen(to) * sizeof(wchar_t);
    size_t size = sizeof(rename_info_ex) + n;
    rename_info_ex *r = (rename_info_ex *)calloc(1, size);
    if (r == NULL) {
        errno = ENOMEM;
        return -1;
    }
    r->flags = RENAME_REPLACE_IF_EXISTS | RENAME_POSIX_SEMANTICS;
    r->name_bytes = (DWORD)n;
    memcpy(r->name, to, n);
    HANDLE h = CreateFileW(from, DELETE | SYNCHRONIZE, SHARE_ALL, NULL, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    int done = -1;
    DWORD e = GetLastError();
    if (h != INVALID_HANDLE_VALUE) {
        done = SetFileInformationByHandle(h, FILE_RENAME_INFO_EX_CLASS, r, (DWORD)size) ? 1 : -1;
        e = GetLastError();
        CloseHandle(h);
    }
    free(r);
    if (done < 0 && (e == ERROR_INVALID_PARAMETER || e == ERROR_NOT_SUPPORTED ||
                     e == ERROR_INVALID_FUNCTION))
        return 0;
    if (done < 0)
        zc_win_set_errno(e);
    return done;
}

int zc_os_rename_at(int from_dir, const char *from, int to_dir, const char *to)
{
    wchar_t *wf = zc_win_wide_at(from_dir, from), *wt = wf != NULL ? zc_win_wide_at(to_dir, to) : NULL;
    int r = -1;
    if (wt != NULL) {
        r = rename_posix(wf, wt);
        /* Older systems and other file systems refuse while `to` is open elsewhere: readers
         * hold files briefly, so try for a while (2^0 + ... + 2^10 ms, about 2 s). */
        for (DWORD wait = 1; r == 0; wait *= 2) {
            if (MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
                r = 1;
                break;
            }
            DWORD e = GetLastError();
            if ((e != ERROR_ACCESS_DENIED && e != ERROR_SHARING_VIOLATION) || wait > 1024) {
                zc_win_set_errno(e);
                r = -1;
                break;
            }
            Sleep(wait);
        }
    }
    free(wf);
    free(wt);
    return r == 1 ? 0 : -1;
}

enum name_op { REMOVE, MAKE_DIR, HARD_LINK };

/* `op` on `a` in `a_dir` (and, for HARD_LINK, the new name `b` in `b_dir`): 0, or -1 with
 * errno. */
static int name_call(enum name_op op, int a_dir, const char *a, int b_dir, const char *b)
{
    wchar_t *wa = zc_win_wide_at(a_dir, a), *wb = NULL;
    if (wa == NULL || (b != NULL && (wb = zc_win_wide_at(b_dir, b)) == NULL)) {
        free(wa);
        return -1;
    }
    BOOL ok = op == REMOVE ? DeleteFileW(wa)
              : op == MAKE_DIR ? CreateDirectoryW(wa, NULL)
                               : CreateHardLinkW(wb, wa, NULL);
    DWORD e = GetLastError();
    free(wa);
    free(wb);
    if (ok)
        return 0;
    zc_win_set_errno(e);
    return -1;
}

int zc_os_unlink_at(int dir, const char *name)
{
    return name_call(REMOVE, dir, name, ZC_OS_CWD, NULL);
}

int zc_os_mkdir_at(int dir, const char *name)
{
    return name_call(MAKE_DIR, dir, name, ZC_OS_CWD, NULL);
}

int zc_os_link_at(int existing_dir, const char *existing, int dir, const char *name)
{
    return name_call(HARD_LINK, existing_dir, existing, dir, name);
}

int zc_os_share_like_dir(int fd, int dir, const char *dir_name, int mode)
{
    /* New files inherit the directory's access control list; there is no umask to undo. */
    (void)fd, (void)dir, (void)dir_name, (void)mode;
    return 0;
}

int zc_os_real_path(const char *path, char *out, size_t cap)
{
    int fd = zc_os_open_at(ZC_OS_CWD, path, ZC_OPEN_PATH | ZC_OPEN_DIRECTORY, 0);
    if (fd < 0)
        return -1;
    wchar_t *real = zc_win_final_path(zc_win_handle(fd));
    zc_os_close(fd);
    if (real == NULL)
        return -1;
    int n = WideCharToMultiByte(CP_UTF8, 0, real, -1, out, (int)(cap < INT_MAX ? cap : INT_MAX),
                                NULL, NULL);
    free(real);
    if (n <= 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

#endif
