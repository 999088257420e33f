/* Advisory locks on Windows: LockFileEx; see zc_os.h. Windows' locks are held by the open file
 * (every duplicate of its handle) and bar reads and writes of the bytes they cover, so a
 * whole-file lock is taken as one byte far beyond any data the file may hold. */
#ifdef _WIN32
#include "os/zc_os_win.h" /* first: it sets the Windows version */
#include "os/zc_os.h"

#include <string.h>

#define WHOLE_FILE_BYTE ((uint64_t)INT64_MAX - 1)

static void at_offset(OVERLAPPED *ov, uint64_t at)
{
    if (at == ZC_LOCK_WHOLE)
        at = WHOLE_FILE_BYTE;
    memset(ov, 0, sizeof *ov);
    ov->Offset = (DWORD)at;
    ov->OffsetHigh = (DWORD)(at >> 32);
}

int zc_os_lock(int fd, uint64_t at, int exclusive, int wait)
{
    HANDLE h = zc_win_handle(fd);
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    OVERLAPPED ov;
    at_offset(&ov, at);
    DWORD flags = (exclusive ? LOCKFILE_EXCLUSIVE_LOCK : 0) | (wait ? 0 : LOCKFILE_FAIL_IMMEDIATELY);
    if (LockFileEx(h, flags, 0, 1, 0, &ov))
        return 1;
    DWORD e = GetLastError();
    if (!wait && (e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING))
        return 0;
    zc_win_set_errno(e);
    return -1;
}

int zc_os_unlock(int fd, uint64_t at)
{
    HANDLE h = zc_win_handle(fd);
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    OVERLAPPED ov;
    at_offset(&ov, at);
    if (UnlockFileEx(h, 0, 1, 0, &ov))
        return 0;
    zc_win_set_errno(GetLastError());
    return -1;
}
#endif
