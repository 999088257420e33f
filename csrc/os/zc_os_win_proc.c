/* The process id, the clock and random bytes on Windows; see zc_os.h. */
#ifdef _WIN32
#include "os/zc_os_win.h" /* first: it sets the Windows version */
#include "os/zc_os.h"

#include <errno.h>

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

/* BCryptGenRandom, looked up at run time: a wheel's extensions import from kernel32 alone
 * (wheels/check_wheel.py). Flag 2 is BCRYPT_USE_SYSTEM_PREFERRED_RNG (no algorithm handle). */
typedef LONG(WINAPI *gen_random_fn)(void *alg, unsigned char *buf, ULONG n, ULONG flags);

int zc_os_random(void *buf, size_t n)
{
    HMODULE lib = LoadLibraryExW(L"bcrypt.dll", NULL, LOAD_LIBRARY_SEARCH_SYSTEM32);
    if (lib == NULL) {
        zc_win_set_errno(GetLastError());
        return -1;
    }
    gen_random_fn gen = (gen_random_fn)(void (*)(void))GetProcAddress(lib, "BCryptGenRandom");
    unsigned char *p = (unsigned char *)buf;
    int ok = gen != NULL;
    while (ok && n > 0) {
        const ULONG k = n > 0x40000000u ? 0x40000000u : (ULONG)n;
        ok = gen(NULL, p, k, 2) >= 0; /* an NTSTATUS: negative on failure */
        p += k, n -= k;
    }
    FreeLibrary(lib);
    if (!ok)
        errno = EIO;
    return ok ? 0 : -1;
}

int64_t zc_win_time_ns(uint64_t ticks)
{
    return ((int64_t)ticks - 116444736000000000LL) * 100;
}
#endif
