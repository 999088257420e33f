/* Per-thread kept scratch buffers; see zc_scratch.h. */
#define _GNU_SOURCE
#include "memory/zc_scratch.h"

#include "os/zc_os.h"

#define HUGE ((size_t)2 << 20)

typedef struct {
    unsigned char *p;
    size_t cap;
} scratch_buf;

typedef struct {
    scratch_buf slot[ZC_SCRATCH_SLOTS];
} thread_scratch;

static zc_tls_key key;
static zc_once key_once = ZC_ONCE_INIT;
static int key_ok;

static void release(scratch_buf *b)
{
    if (b->p != NULL)
        zc_mem_unmap(b->p, b->cap);
    b->p = NULL;
    b->cap = 0;
}

static void ZC_TLS_CALLBACK free_thread(void *p)
{
    thread_scratch *t = (thread_scratch *)p;
    for (int i = 0; i < ZC_SCRATCH_SLOTS; i++)
        release(&t->slot[i]);
    zc_mem_unmap(t, sizeof *t);
}

static void make_key(void) { key_ok = zc_tls_create(&key, free_thread) == 0; }

static thread_scratch *mine(void)
{
    zc_once_run(&key_once, make_key);
    if (!key_ok)
        return NULL;
    thread_scratch *t = (thread_scratch *)zc_tls_get(key);
    if (t == NULL) {
        /* Mapped rather than malloc'd: the destructor may run after the allocator's own. */
        t = (thread_scratch *)zc_mem_map(sizeof *t, 4096);
        if (t == NULL)
            return NULL;
        if (zc_tls_set(key, t) != 0) {
            zc_mem_unmap(t, sizeof *t);
            return NULL;
        }
    }
    return t;
}

/* Fresh memory of at least `n` bytes, whole pages (whole 2 MiB ones from 2 MiB): *cap. */
static unsigned char *fresh(size_t n, size_t *cap)
{
    size_t c = n < HUGE ? (n + 4095) / 4096 * 4096 : (n + HUGE - 1) / HUGE * HUGE;
    if (c < n)
        return NULL;
    c = c ? c : 4096;
    unsigned char *p = (unsigned char *)zc_mem_map(c, 4096);
    if (p != NULL)
        *cap = c;
    return p;
}

/* The thread's buffer of `slot`; NULL without thread storage or for a slot out of range. */
static scratch_buf *slot_of(int slot)
{
    if (slot <= ZC_SCRATCH_NONE || slot >= ZC_SCRATCH_SLOTS)
        return NULL;
    thread_scratch *t = mine();
    return t != NULL ? &t->slot[slot] : NULL;
}

unsigned char *zc_scratch(int slot, size_t n)
{
    scratch_buf *b = slot_of(slot);
    if (b == NULL)
        return NULL;
    if (n <= b->cap && b->p != NULL)
        return b->p;
    release(b);
    b->p = fresh(n, &b->cap);
    return b->p;
}

unsigned char *zc_scratch_borrow(int slot, size_t n, size_t *cap)
{
    scratch_buf *b = slot_of(slot);
    if (b != NULL && b->p != NULL && b->cap >= n) {
        unsigned char *p = b->p;
        *cap = b->cap;
        b->p = NULL;
        b->cap = 0;
        return p;
    }
    return fresh(n, cap);
}

void zc_scratch_give_back(int slot, unsigned char *p, size_t cap)
{
    if (p == NULL)
        return;
    scratch_buf *b = cap <= ZC_SCRATCH_LEND_MAX ? slot_of(slot) : NULL;
    if (b != NULL && b->cap <= cap) {
        release(b);
        b->p = p;
        b->cap = cap;
        return;
    }
    zc_mem_unmap(p, cap);
}

void zc_scratch_idle(void)
{
    zc_once_run(&key_once, make_key);
    thread_scratch *t = key_ok ? (thread_scratch *)zc_tls_get(key) : NULL;
    if (t == NULL)
        return;
    for (int i = 0; i < ZC_SCRATCH_SLOTS; i++) {
        scratch_buf *b = &t->slot[i];
        if (b->cap > ZC_SCRATCH_KEEP_MAX)
            release(b);
        else if (b->p != NULL)
            zc_mem_advise_free(b->p, b->cap);
    }
}
