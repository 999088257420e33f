/* A byte-bounded, validated cache of decoded chunks; see zc_chunk_cache.h. */
#include "cache/zc_chunk_cache.h"

#include <stdlib.h>
#include <string.h>

#include "os/zc_fork.h"
#include "os/zc_os.h"
#include "cache/zc_shm_cache.h"
#include "cache/zc_siphash.h"
#include "zc_status.h"

/* Parts of the table: enough that two threads rarely meet on one lock. The byte budget is
 * the whole cache's, not split between them (keys do not spread evenly over parts). */
#define MAX_PARTS 16

/* Entries' bytes are slots carved out of blocks of this size, mapped 2 MiB aligned and backed
 * by transparent huge pages where the system gives them on request: copying regions out of a
 * cache of hundreds of MiB otherwise misses the TLB on nearly every row (64^3 uint16 regions
 * out of a 256 MiB cache of 64^3 chunks: 127 -> 110 us each on one thread). Slots start on a
 * cache line, so rows of a chunk cross no more lines than they must. Caches under a block,
 * and slots that fill one badly, take blocks of small pages instead (a huge page is resident
 * whole). */
#define BLOCK_BYTES ((size_t)2 << 20)
#define SLOT_ALIGN ((size_t)64)
#define PAGE_BYTES ((size_t)4096)

typedef struct entry entry;
struct entry {
    int refs;                /* the table's (while linked) plus each reader's */
    uint64_t hash;
    zc_chunk_version version;
    zc_chunk_cache *cache;   /* whose slot `data` is */
    entry *next_in_bucket;
    entry *newer, *older;    /* the part's LRU list */
    unsigned char *data;     /* chunk_bytes, a slot */
    int64_t key[];           /* key_len values */
};

/* A mapped block of slots. */
typedef struct block block;
struct block {
    block *next;
    void *base;
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
    /* Slots: every block holds slots_per_block of slot_bytes; free ones are chained through
     * their first bytes. Blocks are kept until the cache is freed: there are at most as many
     * slots as linked entries plus those evicted while readers still copied out of them. */
    zc_mutex slots_lock;
    size_t slot_bytes, block_bytes, slots_per_block;
    void *free_slots;
    block *blocks;
    zc_fork_guard fork_guard;
    /* Set: entries live in this table shared with other processes (zc_shm_cache.h), none in
     * the parts; an entry found is copied out of it into a slot pinned for its reader. */
    zc_shm_cache *shared;
    zc_siphash_key content_key; /* zc_chunk_cache_content's, unless shared */
};

/* ---- slots -------------------------------------------------------------------------------- */

/* Set up the slots of a cache whose capacity is set. */
static void slots_init(zc_chunk_cache *c)
{
    zc_mutex_init(&c->slots_lock);
    c->slot_bytes = (c->chunk_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
    size_t block;
    if (c->capacity >= BLOCK_BYTES && c->slot_bytes <= BLOCK_BYTES &&
        BLOCK_BYTES % c->slot_bytes <= BLOCK_BYTES / 16)
        block = BLOCK_BYTES; /* slots fill a huge page (within a sixteenth) */
    else if (c->capacity < BLOCK_BYTES)
        block = c->capacity / c->chunk_bytes * c->slot_bytes; /* all, on small pages */
    else
        block = c->slot_bytes; /* a slot per block (over 2 MiB: huge pages, but its tail) */
    c->block_bytes = (block + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
    c->slots_per_block = c->block_bytes / c->slot_bytes;
}

static void *slot_take(zc_chunk_cache *c)
{
    zc_mutex_lock(&c->slots_lock);
    void *p = c->free_slots;
    if (p != NULL) {
        memcpy(&c->free_slots, p, sizeof(void *));
        zc_mutex_unlock(&c->slots_lock);
        return p;
    }
    block *b = (block *)malloc(sizeof *b);
    const int huge = c->block_bytes >= BLOCK_BYTES;
    char *base = b != NULL ? (char *)zc_mem_map(c->block_bytes, huge ? BLOCK_BYTES : PAGE_BYTES)
                           : NULL;
    if (base == NULL) {
        free(b);
        zc_mutex_unlock(&c->slots_lock);
        return NULL;
    }
    if (huge)
        zc_mem_advise_huge(base, c->block_bytes);
    b->base = base;
    b->next = c->blocks;
    c->blocks = b;
    /* The first slot is the caller's, the others go on the free list. */
    for (size_t i = c->slots_per_block; i-- > 1;) {
        void *slot = base + i * c->slot_bytes;
        memcpy(slot, &c->free_slots, sizeof(void *));
        c->free_slots = slot;
    }
    zc_mutex_unlock(&c->slots_lock);
    return base;
}

static void slot_give(zc_chunk_cache *c, void *p)
{
    zc_mutex_lock(&c->slots_lock);
    memcpy(p, &c->free_slots, sizeof(void *));
    c->free_slots = p;
    zc_mutex_unlock(&c->slots_lock);
}

static void slots_free(zc_chunk_cache *c)
{
    while (c->blocks != NULL) {
        block *b = c->blocks;
        c->blocks = b->next;
        zc_mem_unmap(b->base, c->block_bytes);
        free(b);
    }
    zc_mutex_destroy(&c->slots_lock);
}

/* ---- entries ------------------------------------------------------------------------------ */

static void entry_release(entry *e)
{
    if (e != NULL && zc_atomic_add_int(&e->refs, -1, ZC_ACQ_REL) == 0) {
        if (e->data != NULL)
            slot_give(e->cache, e->data);
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

/* Across a fork: every part's lock, then the slots' (the order remove_entry nests them in; no
 * code holds two parts' locks at once). */
static void lock_all(void *obj)
{
    zc_chunk_cache *c = (zc_chunk_cache *)obj;
    for (int i = 0; i < c->nparts; i++)
        zc_mutex_lock(&c->parts[i].lock);
    zc_mutex_lock(&c->slots_lock);
}

/* After a fork, in the parent and in the child alike: the table is whole (no thread was inside
 * it), and entries that a vanished thread had pinned only stay allocated. */
static void unlock_all(void *obj)
{
    zc_chunk_cache *c = (zc_chunk_cache *)obj;
    zc_mutex_unlock(&c->slots_lock);
    for (int i = c->nparts; i-- > 0;)
        zc_mutex_unlock(&c->parts[i].lock);
}

zc_chunk_cache *zc_chunk_cache_new(size_t capacity, size_t chunk_bytes, int key_len)
{
    if (chunk_bytes == 0 || key_len < 1 || capacity / chunk_bytes < 1)
        return NULL;
    zc_chunk_cache *c = (zc_chunk_cache *)calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (zc_siphash_key_new(&c->content_key) != 0) {
        free(c);
        return NULL;
    }
    c->chunk_bytes = chunk_bytes;
    c->key_len = key_len;
    /* Within int64_t, the type of the atomic byte count. */
    const size_t chunks = (capacity > (size_t)INT64_MAX ? (size_t)INT64_MAX : capacity) / chunk_bytes;
    c->capacity = chunks * chunk_bytes;
    slots_init(c);
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
    c->fork_guard = (zc_fork_guard){.obj = c, .before = lock_all, .parent = unlock_all,
                                    .child = unlock_all};
    zc_fork_guard_add(&c->fork_guard);
    return c;
}

void zc_chunk_cache_free(zc_chunk_cache *c)
{
    if (c == NULL)
        return;
    zc_fork_guard_remove(&c->fork_guard);
    for (int i = 0; i < c->nparts; i++) {
        part *p = &c->parts[i];
        while (p->oldest != NULL)
            remove_entry(c, p, p->oldest);
        free(p->buckets);
        zc_mutex_destroy(&p->lock);
    }
    slots_free(c);
    free(c);
}

void zc_chunk_cache_share(zc_chunk_cache *c, zc_shm_cache *shared) { c->shared = shared; }

uint64_t zc_chunk_cache_content(const zc_chunk_cache *c, const void *data, size_t len)
{
    const zc_siphash_key *key =
        c->shared != NULL ? zc_shm_cache_content_key(c->shared) : &c->content_key;
    return zc_siphash_tree(key, data, len);
}

void zc_chunk_cache_get_stats(zc_chunk_cache *c, zc_chunk_cache_stats *out)
{
    if (c != NULL && c->shared != NULL) {
        zc_shm_cache_get_stats(c->shared, out);
        return;
    }
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

/* The entry of `key` at version `v`, with a reference for the caller; NULL when there is none
 * (an entry of another version is dropped: the stored chunk changed). */
static entry *entry_new(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v);

static entry *lookup(zc_chunk_cache *c, uint64_t hash, const int64_t *key,
                     const zc_chunk_version *v)
{
    if (c->shared != NULL) {
        entry *e = entry_new(c, key, v);
        if (e != NULL && !zc_shm_cache_get(c->shared, key, v, e->data)) {
            entry_release(e);
            e = NULL;
        }
        return e;
    }
    part *p = &c->parts[hash % (uint64_t)c->nparts];
    zc_mutex_lock(&p->lock);
    entry *e = find_entry(c, p, hash, key);
    if (e != NULL && !zc_chunk_version_same(&e->version, v)) {
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
    if (c->shared != NULL) {
        zc_shm_cache_put(c->shared, e->key, &e->version, e->data);
        return;
    }
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

zc_chunk_cache_entry *zc_chunk_cache_find(zc_chunk_cache *c, const int64_t *key,
                                          const zc_chunk_version *v)
{
    return (zc_chunk_cache_entry *)lookup(c, key_hash(key, c->key_len), key, v);
}

const unsigned char *zc_chunk_cache_data(const zc_chunk_cache_entry *e)
{
    return ((const entry *)e)->data;
}

void zc_chunk_cache_unpin(zc_chunk_cache_entry *e)
{
    entry_release((entry *)e);
}

/* A new entry of `key` at version `v`, not linked, with its slot; NULL when out of memory. */
static entry *entry_new(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v)
{
    const size_t klen = (size_t)c->key_len * sizeof(int64_t);
    entry *e = (entry *)calloc(1, sizeof *e + klen);
    if (e == NULL)
        return NULL;
    e->refs = 1;
    e->cache = c;
    e->hash = key_hash(key, c->key_len);
    e->version = *v;
    memcpy(e->key, key, klen);
    if ((e->data = (unsigned char *)slot_take(c)) == NULL) {
        free(e);
        return NULL;
    }
    return e;
}

int zc_chunk_cache_keep(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                        const void *data)
{
    if (!zc_chunk_version_settled(v))
        return ZC_OK;
    entry *e = entry_new(c, key, v);
    if (e == NULL)
        return ZC_ERR_NOMEM;
    memcpy(e->data, data, c->chunk_bytes);
    insert(c, e);
    entry_release(e);
    return ZC_OK;
}

int zc_chunk_cache_decode_bytes(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                                const zc_chain *chain, const unsigned char *src, size_t len,
                                size_t nbytes, zc_chunk_cache_entry **out)
{
    *out = NULL;
    if (nbytes != c->chunk_bytes)
        return ZC_ERR_PARAM;
    entry *e = entry_new(c, key, v);
    if (e == NULL)
        return ZC_ERR_NOMEM;
    int st = zc_chain_decode(chain, src, len, e->data, nbytes);
    if (st != ZC_OK) {
        entry_release(e);
        return st;
    }
    if (zc_chunk_version_settled(v))
        insert(c, e);
    *out = (zc_chunk_cache_entry *)e;
    return ZC_OK;
}

/* The bytes of the whole chunk the selection `s` is of (its shape's). */
static size_t sel_nbytes(const zc_chain *chain, const zc_chunk_sel *s)
{
    size_t n = chain->itemsize;
    for (int d = 0; d < s->ndim; d++)
        n *= (size_t)s->shape[d];
    return n;
}

int zc_chunk_cache_decode(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                          const zc_chain *chain, const zc_chunk_sel *s, const zc_object *o,
                          uint64_t offset, size_t size, zc_chunk_reader *r)
{
    if (sel_nbytes(chain, s) != c->chunk_bytes)
        return ZC_ERR_PARAM;
    if (!zc_chunk_version_settled(v))
        return zc_chunk_read(chain, s, o, offset, size, r);
    entry *e = entry_new(c, key, v);
    if (e == NULL)
        return ZC_ERR_NOMEM;
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
    if (st == ZC_OK) {
        insert(c, e);
        st = zc_chunk_sel_copy(s, chain->itemsize, e->data);
    }
    entry_release(e);
    return st;
}

int zc_chunk_cache_read(zc_chunk_cache *c, const int64_t *key, const zc_chunk_version *v,
                        const zc_chain *chain, const zc_chunk_sel *s, const zc_object *o,
                        uint64_t offset, size_t size, zc_chunk_reader *r)
{
    zc_chunk_cache_entry *e;
    int st;
    if (sel_nbytes(chain, s) != c->chunk_bytes)
        return ZC_ERR_PARAM;
    if (o->blob != NULL) {
        /* A blob's version names its bytes: a hit needs none of them. */
        if ((e = zc_chunk_cache_find(c, key, v)) == NULL)
            return zc_chunk_cache_decode(c, key, v, chain, s, o, offset, size, r);
    } else {
        /* A file's bytes can change under the same identity: the entry must be of these. */
        if ((st = zc_chunk_load(chain, o, offset, size, r)) != ZC_OK)
            return st;
        zc_chunk_version cv = *v;
        cv.content = zc_chunk_cache_content(c, r->file.p, size);
        /* (Shared: the selection straight out of the table, no copy of the whole chunk.) */
        if (c->shared == NULL) {
            e = zc_chunk_cache_find(c, key, &cv);
        } else {
            if ((st = zc_shm_cache_get_sel(c->shared, key, &cv, s, chain->itemsize)) != 0)
                return st < 0 ? st : ZC_OK;
            e = NULL;
        }
        if (e == NULL &&
            (st = zc_chunk_cache_decode_bytes(c, key, &cv, chain, r->file.p, size,
                                              c->chunk_bytes, &e)) != ZC_OK)
            return st;
    }
    st = zc_chunk_sel_copy(s, chain->itemsize, zc_chunk_cache_data(e));
    zc_chunk_cache_unpin(e);
    return st;
}
