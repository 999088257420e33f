/* Threads on Windows: slim reader/writer locks and condition variables, thread ids, one-time
 * initialization and fiber-local storage, whose callback runs at thread exit as a pthread
 * key's destructor does; see zc_os.h. */
#ifdef _WIN32
#include "os/zc_os_win.h" /* first: it sets the Windows version */
#include "os/zc_os.h"

typedef char mutex_fits[sizeof(zc_mutex) == sizeof(SRWLOCK) ? 1 : -1];
typedef char cond_fits[sizeof(zc_cond) == sizeof(CONDITION_VARIABLE) ? 1 : -1];
typedef char once_fits[sizeof(zc_once) == sizeof(INIT_ONCE) ? 1 : -1];
typedef char thread_id_fits[sizeof(zc_thread_id) == sizeof(DWORD) ? 1 : -1];

void zc_mutex_init(zc_mutex *m) { InitializeSRWLock((PSRWLOCK)m); }

void zc_mutex_lock(zc_mutex *m) { AcquireSRWLockExclusive((PSRWLOCK)m); }

void zc_mutex_unlock(zc_mutex *m) { ReleaseSRWLockExclusive((PSRWLOCK)m); }

void zc_cond_init(zc_cond *c) { InitializeConditionVariable((PCONDITION_VARIABLE)c); }

void zc_cond_wait(zc_cond *c, zc_mutex *m)
{
    /* With INFINITE it returns only once woken, holding the lock again. */
    SleepConditionVariableSRW((PCONDITION_VARIABLE)c, (PSRWLOCK)m, INFINITE, 0);
}

void zc_cond_broadcast(zc_cond *c) { WakeAllConditionVariable((PCONDITION_VARIABLE)c); }

zc_thread_id zc_thread_self(void) { return GetCurrentThreadId(); }

struct once_call {
    void (*fn)(void);
};

static BOOL CALLBACK run_once(PINIT_ONCE once, PVOID param, PVOID *context)
{
    (void)once, (void)context;
    ((const struct once_call *)param)->fn();
    return TRUE;
}

void zc_once_run(zc_once *once, void (*fn)(void))
{
    struct once_call call = {fn};
    InitOnceExecuteOnce((PINIT_ONCE)once, run_once, &call, NULL);
}

int zc_tls_create(zc_tls_key *key, void(ZC_TLS_CALLBACK *destroy)(void *))
{
    DWORD k = FlsAlloc(destroy);
    if (k == FLS_OUT_OF_INDEXES)
        return -1;
    *key = k;
    return 0;
}

void *zc_tls_get(zc_tls_key key) { return FlsGetValue(key); }

int zc_tls_set(zc_tls_key key, void *value) { return FlsSetValue(key, value) ? 0 : -1; }

void zc_thread_yield(void) { SwitchToThread(); }
#endif
