/* Windows conventions under zc_os.h: UTF-8 paths to UTF-16, names in directories to paths,
 * Windows errors to errno. */
#ifdef _WIN32
#include "os/zc_os_win.h" /* first: it sets the Windows version */
#include "os/zc_os.h"

#include <errno.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>

wchar_t *zc_win_wide(const char *path)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    if (n <= 0) {
        errno = EINVAL; /* not UTF-8 */
        return NULL;
    }
    wchar_t *w = (wchar_t *)malloc((size_t)n * sizeof *w);
    if (w == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, n);
    return w;
}

/* `path` without its \\?\ (or \\?\UNC\) prefix, in place. */
static void drop_prefix(wchar_t *path)
{
    if (wcsncmp(path, L"\\\\?\\UNC\\", 8) == 0) {
        memmove(path + 2, path + 8, (wcslen(path + 8) + 1) * sizeof *path);
    } else if (wcsncmp(path, L"\\\\?\\", 4) == 0) {
        memmove(path, path + 4, (wcslen(path + 4) + 1) * sizeof *path);
    }
}

wchar_t *zc_win_final_path(HANDLE h)
{
    DWORD flags = FILE_NAME_NORMALIZED | VOLUME_NAME_DOS;
    DWORD n = GetFinalPathNameByHandleW(h, NULL, 0, flags);
    wchar_t *path = n ? (wchar_t *)malloc((size_t)n * sizeof *path) : NULL;
    if (n == 0 || path == NULL) {
        if (n == 0)
            zc_win_set_errno(GetLastError());
        else
            errno = ENOMEM;
        return NULL;
    }
    DWORD got = GetFinalPathNameByHandleW(h, path, n, flags);
    if (got == 0 || got >= n) {
        zc_win_set_errno(got == 0 ? GetLastError() : ERROR_INVALID_DATA);
        free(path);
        return NULL;
    }
    drop_prefix(path);
    return path;
}

/* The full form of `path` (".", ".." and '/' resolved), with the \\?\ prefix when it is long,
 * as a new string; NULL with errno. */
static wchar_t *full_path(const wchar_t *path)
{
    DWORD n = GetFullPathNameW(path, 0, NULL, NULL);
    wchar_t *full = n ? (wchar_t *)malloc(((size_t)n + 8) * sizeof *full) : NULL;
    if (full == NULL) {
        if (n == 0)
            zc_win_set_errno(GetLastError());
        else
            errno = ENOMEM;
        return NULL;
    }
    wchar_t *at = full + 8; /* room for the prefix */
    DWORD got = GetFullPathNameW(path, n, at, NULL);
    if (got == 0 || got >= n) {
        zc_win_set_errno(got == 0 ? GetLastError() : ERROR_INVALID_DATA);
        free(full);
        return NULL;
    }
    if (got >= MAX_PATH - 12) { /* beyond what the wide API takes without the prefix */
        if (at[0] == L'\\' && at[1] == L'\\') {
            at -= 6;
            memcpy(at, L"\\\\?\\UNC", 7 * sizeof *at); /* over the first '\\' of \\host */
        } else {
            at -= 4;
            memcpy(at, L"\\\\?\\", 4 * sizeof *at);
        }
    }
    memmove(full, at, (wcslen(at) + 1) * sizeof *full);
    return full;
}

wchar_t *zc_win_wide_at(int dir, const char *name)
{
    if (dir == ZC_OS_CWD)
        return zc_win_wide(name);
    HANDLE h = zc_win_handle(dir);
    wchar_t *base = h != INVALID_HANDLE_VALUE ? zc_win_final_path(h) : NULL;
    wchar_t *rel = base != NULL ? zc_win_wide(name) : NULL;
    wchar_t *joined = NULL, *full = NULL;
    if (rel != NULL) {
        size_t nb = wcslen(base), nr = wcslen(rel);
        joined = (wchar_t *)malloc((nb + nr + 2) * sizeof *joined);
        if (joined != NULL) {
            memcpy(joined, base, nb * sizeof *joined);
            joined[nb] = L'\\';
            memcpy(joined + nb + 1, rel, (nr + 1) * sizeof *joined);
            full = full_path(joined);
        } else {
            errno = ENOMEM;
        }
    }
    free(base);
    free(rel);
    free(joined);
    return full;
}

void zc_win_set_errno(DWORD error)
{
    switch (error) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE:
    case ERROR_BAD_NETPATH:
    case ERROR_BAD_NET_NAME:
        errno = ENOENT;
        break;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_WRITE_PROTECT:
        errno = EACCES;
        break;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
        errno = EEXIST;
        break;
    case ERROR_LOCK_VIOLATION:
    case ERROR_IO_PENDING:
        errno = EAGAIN;
        break;
    case ERROR_NOT_SUPPORTED:
    case ERROR_INVALID_FUNCTION:
        errno = ENOLCK; /* what a file system without locks answers LockFileEx */
        break;
    case ERROR_DIRECTORY:
        errno = ENOTDIR;
        break;
    case ERROR_DIR_NOT_EMPTY:
        errno = ENOTEMPTY;
        break;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
        errno = ENOMEM;
        break;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
        errno = ENOSPC;
        break;
    case ERROR_FILENAME_EXCED_RANGE:
        errno = ENAMETOOLONG;
        break;
    case ERROR_INVALID_NAME:
    case ERROR_INVALID_PARAMETER:
        errno = EINVAL;
        break;
    case ERROR_TOO_MANY_OPEN_FILES:
        errno = EMFILE;
        break;
    case ERROR_INVALID_HANDLE:
        errno = EBADF;
        break;
    case ERROR_NOT_SAME_DEVICE:
        errno = EXDEV;
        break;
    default:
        errno = EIO;
    }
}

HANDLE zc_win_handle(int fd)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h == INVALID_HANDLE_VALUE)
        errno = EBADF;
    return h;
}
#endif
