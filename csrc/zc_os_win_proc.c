/* The process id and the clock on Windows; see zc_os.h. */
#ifdef _WIN32
#include "zc_os_win.h" /* first: it sets the Windows version */
#include "zc_os.h"

long zc_os_pid(void) { return (long)GetCurrentProcessId(); }

int zc_os_pid_gone(long pid)
{
    HANDLE h = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)pid);
    if (h == NULL)
        return GetLastError() == ERROR_INVALID_PARAMETER;
    const int gone = WaitForSingleObject(h, 0) == WAIT_OBJECT_0;
    CloseHandle(h);
    return gone;
}

uint64_t zc_os_time_ns(void)
{
    FILETIME ft;
    GetSystemTimePreciseAsFileTime(&ft);
    return (uint64_t)zc_win_time_ns((uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime);
}

int64_t zc_win_time_ns(uint64_t ticks)
{
    return ((int64_t)ticks - 116444736000000000LL) * 100;
}
#endif
