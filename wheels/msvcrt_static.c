/* What python-blosc's MSVC-built libblosc.lib takes from the static part of MSVC's C runtime
 * (msvcrt.lib, which its objects name as a default library), for the links of `make cross`
 * (wheels/cross.py): zig links Windows extensions in MinGW mode, against the Universal CRT's
 * DLLs, and has no msvcrt.lib. cross.py compiles this file into a `libMSVCRT.a` that the
 * archive's /DEFAULTLIB:MSVCRT then finds; the rest of what msvcrt.lib would give (the UCRT's
 * imports, OLDNAMES' POSIX names) comes from zig's MinGW import libraries. Native Windows builds
 * (MSVC, cibuildwheel) never compile it: link.exe takes all of it from msvcrt.lib.
 *
 * - _fltused: the marker MSVC's compiler references from code that uses floating point.
 * - __security_cookie, __security_check_cookie: the stack buffer checks of /GS. The cookie is
 *   drawn when the DLL loads, before any of its code runs, as MSVC's DLL start-up does; a
 *   mismatch ends the process at once (__fastfail), as MSVC's does.
 * - __report_rangecheckfailure: /GS's out-of-range index check; it ends the process too.
 * - __GSHandlerCheck: the handler /GS puts in the unwind data of functions with a cookie, which
 *   Windows calls while it unwinds an exception through them. MSVC's checks the frame's cookie
 *   there; this one only lets the exception pass on (the check on return still runs). blosc
 *   raises no exceptions, so it is called only when something else unwinds through blosc's
 *   frames.
 */
#if defined(_WIN64) && defined(__x86_64__) && !defined(_MSC_VER)
#include <stdint.h>
#include <windows.h>

#define DEFAULT_SECURITY_COOKIE 0x00002B992DDFA232ull
#define FAST_FAIL_STACK_COOKIE_CHECK_FAILURE 2
#define FAST_FAIL_RANGE_CHECK_FAILURE 8

int _fltused = 0x9875;
uintptr_t __security_cookie = DEFAULT_SECURITY_COOKIE;

/* Called by the epilogue of every function with a cookie, the cookie in RCX and the function's
 * return value already in RAX (and XMM0): it must leave every register but RCX as it was, so
 * it is written in assembly. `int 0x29` is __fastfail, its code in ECX. */
__asm__(".text\n"
        ".globl __security_check_cookie\n"
        ".def __security_check_cookie; .scl 2; .type 32; .endef\n"
        "__security_check_cookie:\n"
        "    cmpq __security_cookie(%rip), %rcx\n"
        "    jne 1f\n"
        "    ret\n"
        "1:  movl $2, %ecx\n" /* FAST_FAIL_STACK_COOKIE_CHECK_FAILURE */
        "    int $0x29\n");

__attribute__((noreturn)) void __report_rangecheckfailure(void)
{
    __fastfail(FAST_FAIL_RANGE_CHECK_FAILURE);
}

EXCEPTION_DISPOSITION __GSHandlerCheck(PEXCEPTION_RECORD record, PVOID frame, PCONTEXT context,
                                       PVOID dispatcher)
{
    (void)record;
    (void)frame;
    (void)context;
    (void)dispatcher;
    return ExceptionContinueSearch;
}

/* MSVC's way of drawing the cookie: the time, the process and thread, the performance counter
 * and an address, mixed; its top 16 bits clear, and never the default. */
__attribute__((constructor)) static void draw_security_cookie(void)
{
    FILETIME time;
    LARGE_INTEGER counter;
    uintptr_t cookie;
    GetSystemTimeAsFileTime(&time);
    cookie = ((uintptr_t)time.dwHighDateTime << 32) | time.dwLowDateTime;
    cookie ^= (uintptr_t)GetCurrentThreadId();
    cookie ^= (uintptr_t)GetCurrentProcessId();
    QueryPerformanceCounter(&counter);
    cookie ^= ((uintptr_t)counter.LowPart << 32) ^ (uintptr_t)counter.QuadPart;
    cookie ^= (uintptr_t)&cookie;
    cookie &= 0x0000FFFFFFFFFFFFull;
    if (cookie == DEFAULT_SECURITY_COOKIE)
        cookie++;
    __security_cookie = cookie;
}
#endif
