/* Kept blocks for output arrays; see zc_pool.h. */
#define _GNU_SOURCE
#include "memory/zc_pool.h"

#include <stdint.h>
#include <stdlib.h>

#include "os/zc_os.h"

#define PAGE ((size_t)4096)
#define HUGE ((size_t)2 << 20)
#define MAX_KEPT 1024 /* 2 GiB of 2 MiB blocks; a linear scan of this is still cheap */
/* The most recently given back blocks, up to this many bytes, stay resident rather than
 * MADV_FREE: in a threaded process every MADV_FREE flushes the other CPUs' TLBs (an IPI
 * each), which a block taken again straight away would pay for nothing. */
#define HOT_BYTES ((size_t)32 << 20)
#define MAX_COOL 64 /* blocks advised per give at most (a bound for the stack) */

typedef struct {
    void *p;
    size_t size;
    uint64_t age; /* when it was given back: the oldest goes first */
    int advised;  /* MADV_FREE since given back */
} kept_block;

static zc_mutex lock = ZC_MUTEX_INIT;
static kept_block kept[MAX_KEPT];
static int nkept;
static size_t kept_bytes, limit_bytes;
static size_t hot_bytes; /* kept and not advised */
static uint64_t clock_ticks;
static zc_once atfork_once = ZC_ONCE_INIT;

/* A fork while another thread holds the lock must not leave the child's copy locked. */
static void before_fork(void) { zc_mutex_lock(&lock); }
static void after_fork(void) { zc_mutex_unlock(&lock); }
static void register_atfork(void) { zc_atfork(before_fork, after_fork, after_fork); }

size_t zc_pool_block_size(size_t size)
{
    size_t unit = size >= HUGE ? HUGE : PAGE;
    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - unit)
        return 0;
    return (size + unit - 1) / unit * unit;
}

/* Map `size` bytes, 2 MiB aligned when the size is a multiple of it (so transparent huge
 * pages can back it whole). */
static void *map_block(size_t size)
{
    void *p = zc_mem_map(size, size % HUGE == 0 ? HUGE : PAGE);
    /* Every block of 2 MiB or more is whole huge pages: one fault each instead of 512. */
    if (p != NULL && size >= HUGE)
        zc_mem_advise_huge(p, size);
    return p;
}

/* Take kept[i] off the list (lock held). */
static kept_block unlist(int i)
{
    kept_block b = kept[i];
    kept_bytes -= b.size;
    if (!b.advised)
        hot_bytes -= b.size;
    kept[i] = kept[--nkept];
    return b;
}

/* Put `b` on the list, aged now unless it has an age (lock held; room checked). */
static void list_block(kept_block b)
{
    if (b.age == 0)
        b.age = ++clock_ticks;
    kept[nkept++] = b;
    kept_bytes += b.size;
    if (!b.advised)
        hot_bytes += b.size;
}

/* The most recently given back kept block of `block` bytes, or NULL. */
static void *take_kept(size_t block)
{
    zc_once_run(&atfork_once, register_atfork);
    void *p = NULL;
    zc_mutex_lock(&lock);
    int best = -1;
    for (int i = 0; i < nkept; i++)
        if (kept[i].size == block && (best < 0 || kept[i].age > kept[best].age))
            best = i; /* the most recently given back is the likeliest still resident */
    if (best >= 0)
        p = unlist(best).p;
    zc_mutex_unlock(&lock);
    return p;
}

void *zc_pool_take_kept(size_t size)
{
    size_t block = zc_pool_block_size(size);
    return block == 0 ? NULL : take_kept(block);
}

void *zc_pool_take(size_t size)
{
    size_t block = zc_pool_block_size(size);
    if (block == 0)
        return NULL;
    void *p = take_kept(block);
    return p != NULL ? p : map_block(block);
}

/* Drop the oldest kept blocks until `room` more bytes (and a block more, if `slot`) fit;
 * returns the blocks to unmap (after the lock is released) in `out`. */
static int make_room(size_t room, int slot, kept_block *out)
{
    int n = 0;
    while (nkept > 0 && ((slot && nkept == MAX_KEPT) || kept_bytes + room > limit_bytes)) {
        int oldest = 0;
        for (int i = 1; i < nkept; i++)
            if (kept[i].age < kept[oldest].age)
                oldest = i;
        out[n++] = unlist(oldest);
    }
    return n;
}

/* Mark `b` reclaimable under memory pressure; a write before that keeps the page, fault-free.
 * Only ever on a block off the list: once listed, another thread may take and fill it. */
static void advise_free(kept_block *b)
{
    zc_mem_advise_free(b->p, b->size);
    b->advised = 1;
}

/* List `b` if the limit allows, else unmap it. The oldest blocks pushed past the limit are
 * unmapped, and the oldest hot ones past HOT_BYTES advised and listed again as cold. */
static void keep(kept_block b)
{
    kept_block drop[MAX_KEPT], cool[MAX_COOL];
    int ndrop = 0, ncool = 0, listed = 0;
    zc_mutex_lock(&lock);
    if (b.size <= limit_bytes) {
        ndrop = make_room(b.size, 1, drop);
        list_block(b);
        listed = 1;
        while (hot_bytes > HOT_BYTES && ncool < MAX_COOL) {
            int oldest = -1;
            for (int i = 0; i < nkept; i++)
                if (!kept[i].advised && (oldest < 0 || kept[i].age < kept[oldest].age))
                    oldest = i;
            cool[ncool++] = unlist(oldest);
        }
    }
    zc_mutex_unlock(&lock);
    for (int i = 0; i < ndrop; i++)
        zc_mem_unmap(drop[i].p, drop[i].size);
    if (!listed)
        zc_mem_unmap(b.p, b.size);
    for (int i = 0; i < ncool; i++) {
        advise_free(&cool[i]);
        keep(cool[i]); /* cold now, so this cools nothing further */
    }
}

int zc_pool_give_kept(void *p, size_t size)
{
    size_t block = zc_pool_block_size(size);
    int listed = 0;
    if (p == NULL)
        return 1;
    zc_once_run(&atfork_once, register_atfork);
    zc_mutex_lock(&lock);
    /* (What keep() would do without dropping, cooling or advising anything.) */
    if (nkept < MAX_KEPT && kept_bytes + block <= limit_bytes && hot_bytes + block <= HOT_BYTES) {
        list_block((kept_block){.p = p, .size = block});
        listed = 1;
    }
    zc_mutex_unlock(&lock);
    return listed;
}

void zc_pool_give(void *p, size_t size)
{
    if (p == NULL)
        return;
    kept_block b = {.p = p, .size = zc_pool_block_size(size)};
    if (b.size > HOT_BYTES)
        advise_free(&b);
    keep(b);
}

void zc_pool_set_limit(size_t bytes)
{
    kept_block drop[MAX_KEPT];
    zc_once_run(&atfork_once, register_atfork);
    zc_mutex_lock(&lock);
    limit_bytes = bytes;
    int n = make_room(0, 0, drop);
    zc_mutex_unlock(&lock);
    for (int i = 0; i < n; i++)
        zc_mem_unmap(drop[i].p, drop[i].size);
}

size_t zc_pool_kept(void)
{
    zc_mutex_lock(&lock);
    size_t n = kept_bytes;
    zc_mutex_unlock(&lock);
    return n;
}

/* The slab pieces are carved from now; it holds one reference of its own. */
struct zc_slab {
    char *base;
    size_t used;
    int refs;
};
static zc_slab *carving;

static void slab_release(zc_slab *slab)
{
    if (zc_atomic_add_int(&slab->refs, -1, ZC_ACQ_REL) == 0) {
        zc_pool_give(slab->base, HUGE);
        free(slab);
    }
}

void *zc_pool_take_piece(size_t size, zc_slab **slab_out)
{
    size = (size + PAGE - 1) / PAGE * PAGE;
    if (size == 0 || size > HUGE)
        return NULL;
    zc_once_run(&atfork_once, register_atfork);
    zc_slab *fresh = NULL, *retired = NULL;
    for (;;) {
        zc_mutex_lock(&lock);
        zc_slab *slab = carving;
        if (slab != NULL && slab->used + size <= HUGE) {
            void *p = slab->base + slab->used;
            slab->used += size;
            zc_atomic_add_int(&slab->refs, 1, ZC_RELAXED);
            zc_mutex_unlock(&lock);
            *slab_out = slab;
            if (fresh != NULL) { /* another thread installed a slab first */
                zc_pool_give(fresh->base, HUGE);
                free(fresh);
            }
            if (retired != NULL)
                slab_release(retired);
            return p;
        }
        if (fresh != NULL) {
            retired = carving;
            carving = fresh;
            fresh = NULL;
            zc_mutex_unlock(&lock);
            continue;
        }
        zc_mutex_unlock(&lock);
        /* Taken outside the lock: zc_pool_take locks it too. */
        fresh = (zc_slab *)malloc(sizeof *fresh);
        void *base = fresh != NULL ? zc_pool_take(HUGE) : NULL;
        if (base == NULL) {
            free(fresh);
            if (retired != NULL)
                slab_release(retired);
            return NULL;
        }
        *fresh = (zc_slab){.base = (char *)base, .used = 0, .refs = 1};
    }
}

void zc_pool_give_piece(zc_slab *slab)
{
    if (slab != NULL)
        slab_release(slab);
}
