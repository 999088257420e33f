/* Per-thread kept scratch buffers; see zc_scratch.h. */
#define _GNU_SOURCE
#include "zc_scratch.h"

#include <pthread.h>
#include <sys/mman.h>

#define HUGE ((size_t)2 << 20)

typedef struct {
    unsigned char *p;
    size_t cap;
} scratch_buf;

typedef struct {
    scratch_buf slot[ZC_SCRATCH_SLOTS];
} thread_scratch;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

static void release(scratch_buf *b)
{
    if (b->p != NULL)
        munmap(b->p, b->cap);
    b->p = NULL;
    b->cap = 0;
}

static void free_thread(void *p)
{
    thread_scratch *t = (thread_scratch *)p;
    for (int i = 0; i < ZC_SCRATCH_SLOTS; i++)
        release(&t->slot[i]);
    munmap(t, sizeof *t);
}

static void make_key(void) { key_ok = pthread_key_create(&key, free_thread) == 0; }

static thread_scratch *mine(void)
{
    pthread_once(&key_once, make_key);
    if (!key_ok)
        return NULL;
    thread_scratch *t = (thread_scratch *)pthread_getspecific(key);
    if (t == NULL) {
        /* mmap rather than malloc: the destructor may run after the allocator's own. */
        t = (thread_scratch *)mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
            return NULL;
        if (pthread_setspecific(key, t) != 0) {
            munmap(t, sizeof *t);
            return NULL;
        }
    }
    return t;
}

unsigned char *zc_scratch(int slot, size_t n)
{
    thread_scratch *t = mine();
    if (t == NULL || slot < 0 || slot >= ZC_SCRATCH_SLOTS)
        return NULL;
    scratch_buf *b = &t->slot[slot];
    if (n <= b->cap && b->p != NULL)
        return b->p;
    release(b);
    size_t cap = n < HUGE ? (n + 4095) / 4096 * 4096 : (n + HUGE - 1) / HUGE * HUGE;
    if (cap < n)
        return NULL;
    void *p = mmap(NULL, cap ? cap : 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    b->p = (unsigned char *)p;
    b->cap = cap ? cap : 4096;
    return b->p;
}

void zc_scratch_idle(void)
{
    pthread_once(&key_once, make_key);
    thread_scratch *t = key_ok ? (thread_scratch *)pthread_getspecific(key) : NULL;
    if (t == NULL)
        return;
    for (int i = 0; i < ZC_SCRATCH_SLOTS; i++) {
        scratch_buf *b = &t->slot[i];
        if (b->cap > ZC_SCRATCH_KEEP_MAX)
            release(b);
#ifdef MADV_FREE
        else if (b->p != NULL)
            madvise(b->p, b->cap, MADV_FREE);
#endif
    }
}
