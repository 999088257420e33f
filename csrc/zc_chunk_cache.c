/* A byte-bounded, validated cache of decoded chunks; see zc_chunk_cache.h. */
#include "zc_chunk_cache.h"

#include <stdlib.h>
#include <string.h>

#include "zc_os.h"
#include "zc_status.h"

/* Parts of the table: enough that two threads rarely meet on one lock. The byte budget is
 * the whole cache's, not split between them (keys do not spread evenly over parts). */
#define MAX_PARTS 16

typedef struct entry entry;
struct entry {
    int refs;                /* the table's (while linked) plus each reader's */
    uint64_t hash;
    zc_chunk_version version;
    entry *next_in_bucket;
    entry *newer, *older;    /* the part's LRU list */
    unsigned char *data;     /* chunk_bytes */
    int64_t key[];           /* key_len values */
};

typedef struct {
    zc_mutex lock;
    entry **buckets;         /* nbuckets chains */
    entry *newest, *oldest;
    size_t used;
    int64_t entries;
    uint64_t hits, misses, inserts, evictions, stale;
} part;

struct zc_chunk_cache {
    size_t chunk_bytes;
    size_t capacity;         /* bytes: a whole number of chunks */
    int64_t used;            /* bytes of linked entries, all parts (atomic) */
    int key_len;
    int nparts;
    size_t nbuckets;         /* per part, a power of two */
    part parts[MAX_PARTS];
};

/* ---- entries ------------------------------------------------------------------------------ */

static void entry_release(entry *e)
{
    if (e != NULL && zc_atomic_add_int(&e->refs, -1, ZC_ACQ_REL) == 0) {
        free(e->data);
        free(e);
    }
}

static uint64_t key_hash(const int64_t *key, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)key[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h;
}

static int same_version(const zc_chunk_version *a, const zc_chunk_version *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns && a->offset == b->offset &&
           a->nbytes == b->nbytes;
}

/* ---- parts (each call holds p->lock) ------------------------------------------------------- */

static entry **bucket_of(const zc_chunk_cache *c, part *p, uint64_t hash)
{
    return &p->buckets[(hash >> 8) & (c->nbuckets - 1)];
}

static void lru_unlink(part *p, entry *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        p->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        p->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void lru_push(part *p, entry *e)
{
    e->older = p->newest;
    e->newer = NULL;
    if (p->newest)
        p->newest->newer = e;
    p->newest = e;
    if (p->oldest == NULL)
        p->oldest = e;
}

/* Take `e` out of the table and drop the table's reference. */
static void remove_entry(const zc_chunk_cache *c, part *p, entry *e)
{
    entry **at = bucket_of(c, p, e->hash);
    while (*at != e)
        at = &(*at)->next_in_bucket;
    *at = e->next_in_bucket;
    lru_unlink(p, e);
    p->used -= c->chunk_bytes;
    p->entries--;
    zc_atomic_add_i64(&((zc_chunk_cache *)c)->used, -(int64_t)c->chunk_bytes, ZC_RELAXED);
    entry_release(e);
}

static entry *find_entry(const zc_chunk_cache *c, part *p, uint64_t hash, const int64_t *key)
{
    for (entry *e = *bucket_of(c, p, hash); e != NULL; e = e->next_in_bucket)
        if (e->hash == hash && memcmp(e->key, key, (size_t)c->key_len * sizeof(int64_t)) == 0)
            return e;
    return NULL;
}

/* ---- the cache ---------------------------------------------------------------------------- */

zc_chunk_cache *zc_chunk_cache_new(size_t capacity, size_t chunk_bytes, int key_len)
{
    if (chunk_bytes == 0 || key_len < 1 || capacity / chunk_bytes < 1)
        return NULL;
    zc_chunk_cache *c = (zc_chunk_cache *)calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->chunk_bytes = chunk_bytes;
    c->key_len = key_len;
    /* Within int64_t, the type of the atomic byte count. */
    const size_t chunks = (capacity > (size_t)INT64_MAX ? (size_t)INT64_MAX : capacity) / chunk_bytes;
    c->capacity = chunks * chunk_bytes;
    c->nparts = chunks >= MAX_PARTS ? MAX_PARTS : (int)chunks;
    c->nbuckets = 16;
    while (c->nbuckets < 2 * (chunks / (size_t)c->nparts + 1) && c->nbuckets < ((size_t)1 << 30))
        c->nbuckets *= 2;
    for (int i = 0; i < c->nparts; i++) {
        part *p = &c->parts[i];
        p->buckets = (entry **)calloc(c->nbuckets, sizeof(entry *));
        zc_mutex_init(&p->lock);
        if (p->buckets == NULL) {
            c->nparts = i + 1;
            zc_chunk_cache_free(c);
            return NULL;
        }
    }
    return c;
}

void zc_chunk_cache_free(zc_chunk_cache *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < c->nparts; i++) {
        part *p = &c->parts[i];
        while (p->oldest != NULL)
            remove_entry(c, p, p->oldest);
        free(p->buckets);
        zc_mutex_destroy(&p->lock);
    }
    free(c);
}

void zc_chunk_cache_get_stats(zc_chunk_cache *c, zc_chunk_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    if (c != NULL)
        out->capacity = c->capacity;
    for (int i = 0; c != NULL && i < c->nparts; i++) {
        part *p = &c->parts[i];
        zc_mutex_lock(&p->lock);
        out->hits += p->hits;
        out->misses += p->misses;
        out->inserts += p->inserts;
        out->evictions += p->evictions;
        out->stale += p->stale;
        out->used += p->used;
        out->entries += p->entries;
        zc_mutex_unlock(&p->lock);
    }
}

int zc_chunk_version_of(const zc_object *o, zc_chunk_version *v)
{
    if (o->blob != NULL) {
        v->dev = v->size = 0;
        v->ino = o->blob->version;
        v->mtime_ns = v->ctime_ns = 0;
        return ZC_OK;
    }
    zc_file_info info;
    if (zc_os_fstat(o->fd, &info) != 0)
        return ZC_ERR_IO;
    v->dev = info.dev;
    v->ino = info.ino;
    v->size = info.size;
    v->mtime_ns = info.mtime_ns;
    v->ctime_ns = info.ctime_ns;
    return ZC_OK;
}

int zc_chunk_version_settled(const zc_chunk_version *v)
{
    const int64_t t = (int64_t)zc_os_time_ns();
    return v->ctime_ns <= t - ZC_CHUNK_CACHE_SETTLE_NS;
}

/* The entry of `key` at version `v`, with a reference for the caller; NULL when there is none
 * (an entry of another version is dropped: the stored chunk changed). */
static entry *lookup(zc_chunk_cache *c, uint64_t hash, const int64_t *key,
                     const zc_chunk_version *v)
{
    part *p = &c->parts[hash % (uint64_t)c->nparts];
    zc_mutex_lock(&p->lock);
    entry *e = find_entry(c, p, hash, key);
    if (e != NULL && !same_version(&e->version, v)) {
        remove_entry(c, p, e);
        p->stale++;
        e = NULL;
    }
    if (e != NULL) {
        zc_atomic_add_int(&e->refs, 1, ZC_RELAXED);
        lru_unlink(p, e);
        lru_push(p, e);
        p->hits++;
    } else {
        p->misses++;
    }
    zc_mutex_unlock(&p->lock);
    return e;
}

/* Link the caller's entry `e` into the table (replacing one of the same key), then evict
 * least recently used entries, of its part first, until the cache is within its budget. */
static void insert(zc_chunk_cache *c, entry *e)
{
    const int home = (int)(e->hash % (uint64_t)c->nparts);
    part *p = &c->parts[home];
    zc_mutex_lock(&p->lock);
    entry *old = find_entry(c, p, e->hash, e->key);
    if (old != NULL)
        remove_entry(c, p, old);
    zc_atomic_add_int(&e->refs, 1, ZC_RELAXED);
    entry **at = bucket_of(c, p, e->hash);
    e->next_in_bucket = *at;
    *at = e;
    lru_push(p, e);
    p->used += c->chunk_bytes;
    p->entries++;
    p->inserts++;
    zc_atomic_add_i64(&c->used, (int64_t)c->chunk_bytes, ZC_RELAXED);
    zc_mutex_unlock(&p->lock);
    /* One part's lock at a time; the new entry itself stays. */
    for (int k = 0; k < c->nparts; k++) {
        part *q = &c->parts[(home + k) % c->nparts];
        zc_mutex_lock(&q->lock);
        while (q->oldest != NULL && q->oldest != e &&
               zc_atomic_load_i64(&c->used, ZC_RELAXED) > (int64_t)c->capacity) {
            remove_entry(c, q, q->oldest);
            q->evictions++;
        }
        zc_mutex_unlock(&q->lock);
        if (zc_atomic_load_i64(&c->used, ZC_RELAXED) <= (int64_t)c->capacity)
            break;
    }
}

int zc_chunk_cache_read(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                        const zc_chain *chain, const zc_chunk_sel *s, const zc_object *o,
                        uint64_t offset, size_t size, zc_chunk_reader *r)
{
    size_t n = chain->itemsize;
    for (int d = 0; d < s->ndim; d++)
        n *= (size_t)s->shape[d];
    if (n != c->chunk_bytes)
        return ZC_ERR_PARAM;
    const uint64_t hash = key_hash(key, c->key_len);
    entry *e = lookup(c, hash, key, v);
    if (e == NULL) {
        if (!zc_chunk_version_settled(v))
            return zc_chunk_read(chain, s, o, offset, size, r);
        const size_t klen = (size_t)c->key_len * sizeof(int64_t);
        if ((e = (entry *)calloc(1, sizeof *e + klen)) == NULL ||
            (e->data = (unsigned char *)malloc(n)) == NULL) {
            free(e);
            return ZC_ERR_NOMEM;
        }
        e->refs = 1;
        e->hash = hash;
        e->version = *v;
        memcpy(e->key, key, klen);
        /* The whole chunk, C-contiguous, into the entry. */
        zc_chunk_sel whole = {.ndim = s->ndim, .shape = s->shape, .out = (char *)e->data};
        ptrdiff_t stride = (ptrdiff_t)chain->itemsize;
        for (int d = s->ndim - 1; d >= 0; d--) {
            whole.start[d] = 0;
            whole.step[d] = 1;
            whole.count[d] = s->shape[d];
            whole.out_strides[d] = stride;
            stride *= (ptrdiff_t)s->shape[d];
        }
        int st = zc_chunk_read(chain, &whole, o, offset, size, r);
        if (st != ZC_OK) {
            entry_release(e);
            return st;
        }
        insert(c, e);
    }
    int st = zc_chunk_sel_copy(s, chain->itemsize, e->data);
    entry_release(e);
    return st;
}
