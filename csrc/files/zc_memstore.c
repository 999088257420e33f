/* An in-memory store for native threads; see zc_memstore.h. */
#define _GNU_SOURCE
#include "files/zc_memstore.h"

#include <stdlib.h>
#include <string.h>

#include "os/zc_fork.h"
#include "os/zc_os.h"
#include "zc_status.h"

typedef struct item item;
struct item {
    item *next;
    uint64_t hash;
    zc_blob *blob;
    char key[];
};

typedef struct key_lock key_lock;
struct key_lock {
    key_lock *next;
    zc_thread_id owner;
    int depth;    /* takes by the owner not yet dropped; 0: free */
    int waiters;
    char key[];
};

struct zc_memstore {
    int refs;
    zc_mutex mutex;  /* the table */
    item **buckets;
    size_t nbuckets, count;
    /* The last version given. Kept here, not in a global: each extension module links its
     * own copy of this code, and stores pass between them. */
    uint64_t version;
    zc_mutex lock_mutex;  /* the key locks */
    zc_cond lock_freed;
    key_lock *locks;
    zc_fork_guard fork_guard;
};

/* ---- blobs -------------------------------------------------------------------------------- */

zc_blob *zc_blob_new(size_t len)
{
    if (len > SIZE_MAX - sizeof(zc_blob))
        return NULL;
    zc_blob *b = (zc_blob *)malloc(sizeof(zc_blob) + (len ? len : 1));
    if (b != NULL) {
        b->refs = 1;
        b->version = 0;
        b->len = len;
    }
    return b;
}

void zc_blob_retain(zc_blob *b)
{
    zc_atomic_add_int(&b->refs, 1, ZC_RELAXED);
}

void zc_blob_release(zc_blob *b)
{
    if (b != NULL && zc_atomic_add_int(&b->refs, -1, ZC_ACQ_REL) == 0)
        free(b);
}

/* ---- the table ---------------------------------------------------------------------------- */

static uint64_t hash_key(const char *key)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* ---- fork -------------------------------------------------------------------------------- */

/* The table's lock, then the key locks' (never nested in code: any order). */
static void lock_all(void *obj)
{
    zc_memstore *m = (zc_memstore *)obj;
    zc_mutex_lock(&m->mutex);
    zc_mutex_lock(&m->lock_mutex);
}

static void unlock_all(void *obj)
{
    zc_memstore *m = (zc_memstore *)obj;
    zc_mutex_unlock(&m->lock_mutex);
    zc_mutex_unlock(&m->mutex);
}

/* In the child, only the thread that forked is left: key locks that other threads held are
 * dropped (no one is left to release them), and no one waits. */
static void unlock_all_in_child(void *obj)
{
    zc_memstore *m = (zc_memstore *)obj;
    const zc_thread_id self = zc_thread_self();
    for (key_lock **at = &m->locks; *at != NULL;) {
        key_lock *l = *at;
        l->waiters = 0;
        if (l->depth == 0 || !zc_thread_equal(l->owner, self)) {
            *at = l->next;
            free(l);
        } else {
            at = &l->next;
        }
    }
    zc_cond_destroy(&m->lock_freed);
    zc_cond_init(&m->lock_freed);
    unlock_all(m);
}

zc_memstore *zc_memstore_new(void)
{
    zc_memstore *m = (zc_memstore *)calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->nbuckets = 64;
    if ((m->buckets = (item **)calloc(m->nbuckets, sizeof(item *))) == NULL) {
        free(m);
        return NULL;
    }
    m->refs = 1;
    zc_mutex_init(&m->mutex);
    zc_mutex_init(&m->lock_mutex);
    zc_cond_init(&m->lock_freed);
    m->fork_guard = (zc_fork_guard){.obj = m, .before = lock_all, .parent = unlock_all,
                                    .child = unlock_all_in_child};
    zc_fork_guard_add(&m->fork_guard);
    return m;
}

void zc_memstore_retain(zc_memstore *m)
{
    zc_atomic_add_int(&m->refs, 1, ZC_RELAXED);
}

void zc_memstore_release(zc_memstore *m)
{
    if (m == NULL || zc_atomic_add_int(&m->refs, -1, ZC_ACQ_REL) != 0)
        return;
    zc_fork_guard_remove(&m->fork_guard);
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (item *it = m->buckets[i], *next; it != NULL; it = next) {
            next = it->next;
            zc_blob_release(it->blob);
            free(it);
        }
    }
    /* No thread holds or waits for a lock once the last reference is gone. */
    for (key_lock *l = m->locks, *next; l != NULL; l = next) {
        next = l->next;
        free(l);
    }
    free(m->buckets);
    zc_mutex_destroy(&m->mutex);
    zc_mutex_destroy(&m->lock_mutex);
    zc_cond_destroy(&m->lock_freed);
    free(m);
}

/* The link that points at `key`'s item, or at the end of its bucket (m->mutex held). */
static item **find(zc_memstore *m, const char *key, uint64_t h)
{
    item **at = &m->buckets[h & (m->nbuckets - 1)];
    while (*at != NULL && ((*at)->hash != h || strcmp((*at)->key, key) != 0))
        at = &(*at)->next;
    return at;
}

/* Double the buckets when the table is full (m->mutex held); stays as it is when out of
 * memory, only slower. */
static void grow(zc_memstore *m)
{
    if (m->count < m->nbuckets || m->nbuckets > SIZE_MAX / 2 / sizeof(item *))
        return;
    size_t n = m->nbuckets * 2;
    item **b = (item **)calloc(n, sizeof(item *));
    if (b == NULL)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (item *it = m->buckets[i], *next; it != NULL; it = next) {
            next = it->next;
            it->next = b[it->hash & (n - 1)];
            b[it->hash & (n - 1)] = it;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

zc_blob *zc_memstore_get(zc_memstore *m, const char *key)
{
    const uint64_t h = hash_key(key);
    zc_mutex_lock(&m->mutex);
    item *it = *find(m, key, h);
    zc_blob *b = it ? it->blob : NULL;
    if (b != NULL)
        zc_blob_retain(b);
    zc_mutex_unlock(&m->mutex);
    return b;
}

int zc_memstore_put(zc_memstore *m, const char *key, zc_blob *b)
{
    const uint64_t h = hash_key(key);
    item *fresh = NULL;
    if (b != NULL) {
        size_t klen = strlen(key) + 1;
        if ((fresh = (item *)malloc(sizeof(item) + klen)) == NULL)
            return ZC_ERR_NOMEM;
        memcpy(fresh->key, key, klen);
        fresh->hash = h;
        fresh->blob = b;
        zc_blob_retain(b);
    }
    zc_blob *old = NULL;
    zc_mutex_lock(&m->mutex);
    item **at = find(m, key, h);
    if (*at != NULL) {
        old = (*at)->blob;
        if (b != NULL) {
            (*at)->blob = b;
        } else {
            item *gone = *at;
            *at = gone->next;
            free(gone);
            m->count--;
        }
    } else if (b != NULL) {
        fresh->next = NULL;
        *at = fresh;
        fresh = NULL;
        m->count++;
        grow(m);
    }
    if (b != NULL)
        b->version = ++m->version;
    zc_mutex_unlock(&m->mutex);
    free(fresh);  /* the key was there already */
    zc_blob_release(old);
    return ZC_OK;
}

size_t zc_memstore_len(zc_memstore *m)
{
    zc_mutex_lock(&m->mutex);
    size_t n = m->count;
    zc_mutex_unlock(&m->mutex);
    return n;
}

int zc_memstore_keys(zc_memstore *m, char ***keys, size_t *n)
{
    zc_mutex_lock(&m->mutex);
    char **out = (char **)malloc((m->count ? m->count : 1) * sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; out != NULL && i < m->nbuckets; i++) {
        for (item *it = m->buckets[i]; it != NULL; it = it->next) {
            if ((out[k] = strdup(it->key)) == NULL) {
                while (k > 0)
                    free(out[--k]);
                free(out);
                out = NULL;
                break;
            }
            k++;
        }
    }
    zc_mutex_unlock(&m->mutex);
    *keys = out;
    *n = k;
    return out ? ZC_OK : ZC_ERR_NOMEM;
}

/* ---- key locks ---------------------------------------------------------------------------- */

int zc_memstore_lock(zc_memstore *m, const char *key)
{
    zc_mutex_lock(&m->lock_mutex);
    key_lock *l = m->locks;
    while (l != NULL && strcmp(l->key, key) != 0)
        l = l->next;
    if (l == NULL) {
        size_t klen = strlen(key) + 1;
        if ((l = (key_lock *)calloc(1, sizeof *l + klen)) == NULL) {
            zc_mutex_unlock(&m->lock_mutex);
            return ZC_ERR_NOMEM;
        }
        memcpy(l->key, key, klen);
        l->next = m->locks;
        m->locks = l;
    }
    if (l->depth == 0 || !zc_thread_equal(l->owner, zc_thread_self())) {
        l->waiters++;
        while (l->depth != 0)
            zc_cond_wait(&m->lock_freed, &m->lock_mutex);
        l->waiters--;
        l->owner = zc_thread_self();
    }
    l->depth++;
    zc_mutex_unlock(&m->lock_mutex);
    return ZC_OK;
}

int zc_memstore_unlock(zc_memstore *m, const char *key)
{
    zc_mutex_lock(&m->lock_mutex);
    key_lock **at = &m->locks;
    while (*at != NULL && strcmp((*at)->key, key) != 0)
        at = &(*at)->next;
    key_lock *l = *at;
    if (l == NULL || l->depth == 0 || !zc_thread_equal(l->owner, zc_thread_self())) {
        zc_mutex_unlock(&m->lock_mutex);
        return ZC_ERR_PARAM;
    }
    if (--l->depth == 0) {
        if (l->waiters == 0) {
            *at = l->next;
            free(l);
        } else {
            zc_cond_broadcast(&m->lock_freed);
        }
    }
    zc_mutex_unlock(&m->lock_mutex);
    return ZC_OK;
}
