/* Threads on Windows: slim reader/writer locks, one-time initialization and fiber-local
 * storage, whose callback runs at thread exit as a pthread key's destructor does; see zc_os.h. */
#ifdef _WIN32
#include "zc_os_win.h" /* first: it sets the Windows version */
#include "zc_os.h"

typedef char mutex_fits[sizeof(zc_mutex) == sizeof(SRWLOCK) ? 1 : -1];
typedef char once_fits[sizeof(zc_once) == sizeof(INIT_ONCE) ? 1 : -1];

void zc_mutex_lock(zc_mutex *m) { AcquireSRWLockExclusive((PSRWLOCK)m); }

void zc_mutex_unlock(zc_mutex *m) { ReleaseSRWLockExclusive((PSRWLOCK)m); }

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
