/* Helpers shared by the Windows implementations of zc_os.h (zc_os_win_*.c), and nothing else. */
#ifndef ZC_OS_WIN_H
#define ZC_OS_WIN_H
#ifdef _WIN32

#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0602 /* Windows 8: GetSystemTimePreciseAsFileTime, FileStandardInfo */
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <stdint.h>
#include <wchar.h>

/* `path` (UTF-8) as a new UTF-16 string for the wide API (free it), or NULL with errno. */
wchar_t *zc_win_wide(const char *path);

/* The final path of the open file `h` (links and junctions resolved, names as stored, as
 * C:\dir\file or \\host\share\file, without the \\?\ prefix) as a new string (free it), or
 * NULL with errno. */
wchar_t *zc_win_final_path(HANDLE h);

/* `name` in the directory `dir` (zc_os.h: a descriptor, or ZC_OS_CWD) as a new UTF-16 path for
 * the wide API (free it), or NULL with errno. */
wchar_t *zc_win_wide_at(int dir, const char *name);

/* Set errno to the nearest POSIX meaning of the Windows error `error`. */
void zc_win_set_errno(DWORD error);

/* Nanoseconds since 1970 of a FILETIME-like count `ticks` of 100 ns since 1601. */
int64_t zc_win_time_ns(uint64_t ticks);

/* The handle under C runtime descriptor `fd`, or INVALID_HANDLE_VALUE with errno EBADF. */
HANDLE zc_win_handle(int fd);

#endif
#endif
