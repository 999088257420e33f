/* Decoded chunks in memory shared between processes; see zc_shm_cache.h. */
#include "cache/zc_shm_cache.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/zc_os.h"
#include "zc_status.h"

#define SHM_MAGIC 0x7a63736863616368ull /* "zcshcach" */
/* Changes with the header, the slots or what their versions mean: 4 since the content hash is
 * zc_siphash_tree, which a process hashing with an older one would never match. */
#define SHM_LAYOUT 4
/* Slots per set: a key is looked for in 2 sets of this many, which keeps a table nearly full
 * before two keys compete for one slot. */
#define SHM_WAYS 8
#define ALIGN ((size_t)64)

/* The file: this header, then nslots slot headers of head_bytes, then nslots slots of
 * slot_bytes (at data_offset). Fields after the content key change while in use. */
typedef struct {
    uint64_t magic, layout, nonce, chunk_bytes, key_len, nslots, nsets, head_bytes, slot_bytes,
        data_offset, total_bytes;
    /* The key of the versions' content hashes (zc_chunk_cache_content), drawn by the creator
     * from the system's random source: every process using the table hashes alike. */
    zc_siphash_key content_key;
    int64_t clock; /* read counter: slots' `tick` */
    int64_t hits, misses, inserts, evictions, stale;
    int64_t stop_pid; /* for tests: zc_shm_cache_stop_mid_write */
} shm_header;

/* A slot's header. `owner`: the process id of its writer, 0 when none (taken by
 * compare-and-swap). `seq`: odd while written. The other fields are read while `seq` is even
 * and kept only if it stays so. */
typedef struct {
    int64_t owner;
    int64_t seq;
    int64_t tick;  /* `clock` when last read or written: the least is evicted first */
    int64_t used;  /* 1: holds the entry of `key` at `version` */
    zc_chunk_version version;
    int64_t tag_len; /* 0 to ZC_SHM_TAG_MAX: the bytes of `tag` (zc_shm_cache_set_tag) */
    unsigned char tag[ZC_SHM_TAG_MAX];
    int64_t key[]; /* key_len values */
} shm_slot;

struct zc_shm_cache {
    shm_header *head;
    shm_header lay; /* the layout fields and content key, checked, in this process's memory:
                     * never re-read */
    size_t size;
    int fd; /* the creator's, kept open for others to attach through; else -1 */
};

void zc_shm_cache_stop_mid_write(zc_shm_cache *s, long pid)
{
    zc_atomic_store_i64(&s->head->stop_pid, (int64_t)pid, ZC_RELAXED);
}

static size_t round_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

static shm_slot *slot_at(const zc_shm_cache *s, uint64_t i)
{
    return (shm_slot *)((char *)s->head + round_up(sizeof(shm_header)) + i * s->lay.head_bytes);
}

static unsigned char *data_at(const zc_shm_cache *s, uint64_t i)
{
    return (unsigned char *)s->head + s->lay.data_offset + i * s->lay.slot_bytes;
}

/* The layout of a table, into `h`: 0, or -1 when its size overflows. */
static int layout(shm_header *h, size_t capacity, size_t chunk_bytes, int key_len)
{
    memset(h, 0, sizeof *h);
    h->magic = SHM_MAGIC;
    h->layout = SHM_LAYOUT;
    h->chunk_bytes = chunk_bytes;
    h->key_len = (uint64_t)key_len;
    h->nslots = capacity / chunk_bytes;
    h->nsets = (h->nslots + SHM_WAYS - 1) / SHM_WAYS;
    h->head_bytes = round_up(sizeof(shm_slot) + (size_t)key_len * sizeof(int64_t));
    h->slot_bytes = round_up(chunk_bytes);
    if (h->slot_bytes < chunk_bytes)
        return -1;
    if (h->nslots > SIZE_MAX / h->slot_bytes || h->nslots > SIZE_MAX / h->head_bytes)
        return -1;
    const size_t heads = h->nslots * h->head_bytes, datas = h->nslots * h->slot_bytes;
    h->data_offset = round_up(round_up(sizeof(shm_header)) + heads);
    h->total_bytes = h->data_offset + datas;
    return h->data_offset < heads || h->total_bytes < datas ||
                   h->total_bytes > (uint64_t)INT64_MAX ? -1 : 0;
}

zc_shm_cache *zc_shm_cache_create(size_t capacity, size_t chunk_bytes, int key_len,
                                  uint64_t nonce, int *status)
{
    shm_header h;
    *status = ZC_ERR_PARAM;
    if (chunk_bytes == 0 || capacity < chunk_bytes || key_len < 1 || key_len > ZC_MAX_NDIM + 1 ||
        layout(&h, capacity, chunk_bytes, key_len) != 0)
        return NULL;
    h.nonce = nonce;
    *status = ZC_ERR_IO;
    if (zc_siphash_key_new(&h.content_key) != 0)
        return NULL;
    zc_shm_cache *s = (zc_shm_cache *)calloc(1, sizeof *s);
    *status = ZC_ERR_NOMEM;
    if (s == NULL)
        return NULL;
    *status = ZC_ERR_IO;
    s->size = (size_t)h.total_bytes;
    if ((s->fd = zc_os_shm_create(s->size)) < 0) {
        free(s);
        return NULL;
    }
    /* The file reads as zeros: every slot empty, sequence 0. */
    if ((s->head = (shm_header *)zc_os_shm_map(s->fd, s->size)) == NULL) {
        int e = errno;
        zc_os_close(s->fd);
        free(s);
        errno = e;
        return NULL;
    }
    *s->head = s->lay = h;
    *status = ZC_OK;
    return s;
}

zc_shm_cache *zc_shm_cache_attach(const char *path, size_t chunk_bytes, int key_len,
                                  uint64_t nonce, int *status)
{
    *status = ZC_ERR_IO;
    int fd = zc_os_shm_open(path);
    if (fd < 0)
        return NULL;
    const int64_t size = zc_os_shm_size(fd);
    shm_header want;
    zc_siphash_key content_key = {0, 0};
    void *p = NULL;
    *status = ZC_ERR_PARAM;
    /* Map the header alone first: every field is checked before the whole is trusted. */
    if (size >= (int64_t)sizeof(shm_header) && (p = zc_os_shm_map(fd, sizeof(shm_header)))) {
        const shm_header *h = (const shm_header *)p;
        const int same = h->magic == SHM_MAGIC && h->layout == SHM_LAYOUT && h->nonce == nonce &&
                         h->chunk_bytes == chunk_bytes && h->key_len == (uint64_t)key_len &&
                         chunk_bytes > 0 && key_len >= 1 && key_len <= ZC_MAX_NDIM + 1 &&
                         h->nslots >= 1 && h->nslots <= (uint64_t)INT64_MAX / chunk_bytes &&
                         layout(&want, (size_t)h->nslots * chunk_bytes, chunk_bytes, key_len) == 0 &&
                         want.total_bytes == h->total_bytes && want.nsets == h->nsets &&
                         want.data_offset == h->data_offset && want.head_bytes == h->head_bytes &&
                         want.slot_bytes == h->slot_bytes && (uint64_t)size == h->total_bytes;
        content_key = h->content_key;
        zc_mem_unmap(p, sizeof(shm_header));
        p = NULL;
        if (same)
            p = zc_os_shm_map(fd, (size_t)size);
        else
            errno = EINVAL;
    }
    const int e = errno;
    zc_os_close(fd);
    zc_shm_cache *s = p != NULL ? (zc_shm_cache *)calloc(1, sizeof *s) : NULL;
    if (s == NULL) {
        if (p != NULL) {
            zc_mem_unmap(p, (size_t)size);
            *status = ZC_ERR_NOMEM;
        }
        errno = e;
        return NULL;
    }
    s->head = (shm_header *)p;
    s->lay = want;
    s->lay.content_key = content_key;
    s->size = (size_t)size;
    s->fd = -1;
    *status = ZC_OK;
    return s;
}

void zc_shm_cache_free(zc_shm_cache *s)
{
    if (s == NULL)
        return;
    zc_mem_unmap(s->head, s->size);
    if (s->fd >= 0)
        zc_os_close(s->fd);
    free(s);
}

int zc_shm_cache_fd(const zc_shm_cache *s) { return s->fd; }

const zc_siphash_key *zc_shm_cache_content_key(const zc_shm_cache *s)
{
    return &s->lay.content_key;
}

void zc_shm_cache_get_stats(zc_shm_cache *s, zc_chunk_cache_stats *out)
{
    shm_header *h = s->head;
    memset(out, 0, sizeof *out);
    out->hits = (uint64_t)zc_atomic_load_i64(&h->hits, ZC_RELAXED);
    out->misses = (uint64_t)zc_atomic_load_i64(&h->misses, ZC_RELAXED);
    out->inserts = (uint64_t)zc_atomic_load_i64(&h->inserts, ZC_RELAXED);
    out->evictions = (uint64_t)zc_atomic_load_i64(&h->evictions, ZC_RELAXED);
    out->stale = (uint64_t)zc_atomic_load_i64(&h->stale, ZC_RELAXED);
    out->capacity = (size_t)(s->lay.nslots * s->lay.chunk_bytes);
    for (uint64_t i = 0; i < s->lay.nslots; i++) {
        shm_slot *t = slot_at(s, i);
        if (zc_atomic_load_i64(&t->used, ZC_RELAXED))
            out->entries++;
    }
    out->used = (size_t)out->entries * s->lay.chunk_bytes;
}

/* ---- slots ---------------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* The key's two sets, as the first slot of each and their lengths. */
static void sets_of(const zc_shm_cache *s, const int64_t *key, uint64_t first[2], uint64_t n[2])
{
    const shm_header *h = &s->lay;
    uint64_t k = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < h->key_len; i++)
        k = mix(k ^ (uint64_t)key[i]);
    uint64_t set[2] = {k % h->nsets, mix(k + 1) % h->nsets};
    if (set[1] == set[0] && h->nsets > 1)
        set[1] = (set[0] + 1) % h->nsets;
    for (int j = 0; j < 2; j++) {
        first[j] = set[j] * SHM_WAYS;
        n[j] = h->nslots - first[j] < SHM_WAYS ? h->nslots - first[j] : SHM_WAYS;
    }
    if (set[1] == set[0])
        n[1] = 0;
}

static int key_is(const zc_shm_cache *s, const shm_slot *t, const int64_t *key)
{
    return memcmp(t->key, key, (size_t)s->lay.key_len * sizeof(int64_t)) == 0;
}

/* Own slot `t`, free or owned by `owner` (a process gone), and mark it being written: its
 * sequence odd, past any a reader saw. 1, or 0 when another process owns it. */
static int own(shm_slot *t, int64_t owner)
{
    if (!zc_atomic_cas_i64(&t->owner, &owner, (int64_t)zc_os_pid()))
        return 0;
    const int64_t q = zc_atomic_load_i64(&t->seq, ZC_ACQUIRE);
    zc_atomic_store_i64(&t->seq, q + ((q & 1) ? 2 : 1), ZC_RELAXED);
    zc_atomic_fence(); /* readers see the odd sequence before any write to the slot */
    return 1;
}

/* Publish the slot `t` this process owns (its sequence even again) and let it go. */
static void publish(shm_slot *t)
{
    zc_atomic_fence();
    const int64_t q = zc_atomic_load_i64(&t->seq, ZC_RELAXED);
    zc_atomic_store_i64(&t->seq, q + 1, ZC_RELEASE);
    zc_atomic_store_i64(&t->owner, 0, ZC_RELEASE);
}

/* Take slot `t`, last seen holding an entry at sequence `seq`, out of the table if it still
 * holds it: 1 when this call dropped it. */
static int drop(shm_slot *t, int64_t seq)
{
    if (!own(t, 0))
        return 0;
    const int same = zc_atomic_load_i64(&t->seq, ZC_RELAXED) == seq + 1;
    if (same)
        zc_atomic_store_i64(&t->used, 0, ZC_RELAXED);
    publish(t);
    return same;
}

/* The slot holding `key` at `v`, at sequence *seq (even): its index, or -1 (slots of the key at
 * other versions are dropped as stale on the way). */
static int64_t find(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v, int64_t *seq)
{
    uint64_t first[2], n[2];
    sets_of(s, key, first, n);
    for (int j = 0; j < 2; j++)
        for (uint64_t i = first[j]; i < first[j] + n[j]; i++) {
            shm_slot *t = slot_at(s, i);
            const int64_t q = zc_atomic_load_i64(&t->seq, ZC_ACQUIRE);
            if ((q & 1) || !zc_atomic_load_i64(&t->used, ZC_RELAXED) || !key_is(s, t, key))
                continue;
            zc_chunk_version tv = t->version;
            zc_atomic_fence();
            if (zc_atomic_load_i64(&t->seq, ZC_RELAXED) != q)
                continue; /* rewritten meanwhile */
            if (!zc_chunk_version_same(&tv, v)) {
                if (drop(t, q))
                    zc_atomic_add_i64(&s->head->stale, 1, ZC_RELAXED);
                continue;
            }
            *seq = q;
            return (int64_t)i;
        }
    return -1;
}

/* Did slot `i` stay at sequence `seq` while it was copied from? Counts the hit or miss when
 * `chunk` (a chunk's entry). */
static int copied(zc_shm_cache *s, int64_t i, int64_t seq, int chunk)
{
    zc_atomic_fence();
    shm_header *h = s->head;
    if (i < 0 || zc_atomic_load_i64(&slot_at(s, (uint64_t)i)->seq, ZC_RELAXED) != seq) {
        if (chunk)
            zc_atomic_add_i64(&h->misses, 1, ZC_RELAXED);
        return 0;
    }
    zc_atomic_store_i64(&slot_at(s, (uint64_t)i)->tick,
                        zc_atomic_add_i64(&h->clock, 1, ZC_RELAXED), ZC_RELAXED);
    if (chunk)
        zc_atomic_add_i64(&h->hits, 1, ZC_RELAXED);
    return 1;
}

int zc_shm_cache_get(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v, void *dst)
{
    int64_t seq = 0, i = find(s, key, v, &seq);
    if (i >= 0)
        memcpy(dst, data_at(s, (uint64_t)i), s->lay.chunk_bytes);
    return copied(s, i, seq, 1);
}

int zc_shm_cache_get_sel(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                         const zc_chunk_sel *sel, size_t itemsize)
{
    int64_t seq = 0, i = find(s, key, v, &seq);
    if (i >= 0) {
        int st = zc_chunk_sel_copy(sel, itemsize, data_at(s, (uint64_t)i));
        if (st != ZC_OK)
            return st;
    }
    return copied(s, i, seq, 1);
}

/* Empty slots in the set of `n` slots from `first`. */
static int empties(const zc_shm_cache *s, uint64_t first, uint64_t n)
{
    int e = 0;
    for (uint64_t i = first; i < first + n; i++) {
        const shm_slot *t = slot_at(s, i);
        e += !zc_atomic_load_i64(&t->owner, ZC_ACQUIRE) &&
             !zc_atomic_load_i64(&t->used, ZC_RELAXED);
    }
    return e;
}

/* Claim a slot for `key`: its own slot if it has one, else one a dead process owns, else an
 * empty one (in the emptier of its two sets, which keeps any set from filling while others
 * have room), else the least recently read. Its index with the slot owned (sequence odd), or
 * -1 when every candidate is being written. *evicts: it held another key's entry. */
static int64_t claim(zc_shm_cache *s, const int64_t *key, int *evicts)
{
    uint64_t first[2], n[2];
    sets_of(s, key, first, n);
    for (int tries = 0; tries < 4; tries++) {
        int64_t best = -1, best_owner = 0, best_rank = INT64_MAX, best_seq = 0;
        const int emptier = n[1] > 0 && empties(s, first[1], n[1]) > empties(s, first[0], n[0]);
        for (int j = 0; j < 2; j++)
            for (uint64_t i = first[j]; i < first[j] + n[j]; i++) {
                shm_slot *t = slot_at(s, i);
                const int64_t q = zc_atomic_load_i64(&t->seq, ZC_ACQUIRE);
                const int64_t o = zc_atomic_load_i64(&t->owner, ZC_ACQUIRE);
                int64_t rank;
                if (o != 0)
                    rank = zc_os_pid_gone((long)o) ? INT64_MIN + 1 : INT64_MAX;
                else if (!zc_atomic_load_i64(&t->used, ZC_RELAXED))
                    rank = INT64_MIN + 2 + (j != emptier);
                else if (key_is(s, t, key))
                    rank = INT64_MIN;
                else
                    rank = zc_atomic_load_i64(&t->tick, ZC_RELAXED);
                if (rank < best_rank) {
                    best = (int64_t)i, best_owner = o, best_rank = rank, best_seq = q;
                }
            }
        if (best < 0 || best_rank == INT64_MAX)
            return -1;
        shm_slot *t = slot_at(s, (uint64_t)best);
        if (!own(t, best_owner))
            continue;
        /* Kept only when no one wrote the slot between the look and the take (the sequence moved
         * by this take alone): else it may hold another key's new entry now. */
        if (zc_atomic_load_i64(&t->seq, ZC_RELAXED) != best_seq + ((best_seq & 1) ? 2 : 1)) {
            publish(t);
            continue;
        }
        *evicts = best_rank > INT64_MIN + 3 && zc_atomic_load_i64(&t->used, ZC_RELAXED);
        return best;
    }
    return -1;
}

int zc_shm_cache_get_head(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                          void *dst, size_t n)
{
    int64_t seq = 0, i = n <= s->lay.chunk_bytes ? find(s, key, v, &seq) : -1;
    if (i >= 0)
        memcpy(dst, data_at(s, (uint64_t)i), n);
    return copied(s, i, seq, 0);
}

/* Store the `n` bytes at `data` as the entry of `key` at `v`; counted as an insert when
 * `chunk`. */
static void put(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                const void *data, size_t n, int chunk)
{
    shm_header *h = s->head;
    int evicts = 0;
    const int64_t i = claim(s, key, &evicts);
    if (i < 0)
        return;
    shm_slot *t = slot_at(s, (uint64_t)i);
    zc_atomic_store_i64(&t->used, 0, ZC_RELAXED);
    memcpy(t->key, key, (size_t)s->lay.key_len * sizeof(int64_t));
    t->version = *v;
    t->tag_len = 0;
    unsigned char *dst = data_at(s, (uint64_t)i);
    if (zc_atomic_load_i64(&h->stop_pid, ZC_RELAXED) == (int64_t)zc_os_pid()) {
        memcpy(dst, data, n / 2);
#ifdef SIGSTOP
        raise(SIGSTOP);
#endif
    }
    memcpy(dst, data, n);
    zc_atomic_store_i64(&t->used, 1, ZC_RELAXED);
    zc_atomic_store_i64(&t->tick, zc_atomic_add_i64(&h->clock, 1, ZC_RELAXED), ZC_RELAXED);
    publish(t);
    if (chunk)
        zc_atomic_add_i64(&h->inserts, 1, ZC_RELAXED);
    if (evicts)
        zc_atomic_add_i64(&h->evictions, 1, ZC_RELAXED);
}

void zc_shm_cache_put(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                      const void *data)
{
    put(s, key, v, data, s->lay.chunk_bytes, 1);
}

void zc_shm_cache_put_head(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                           const void *data, size_t n)
{
    if (n <= s->lay.chunk_bytes)
        put(s, key, v, data, n, 0);
}

/* ---- tags ----------------------------------------------------------------------------------- */

int zc_shm_cache_set_tag(zc_shm_cache *s, const int64_t *key, const zc_chunk_version *v,
                         const void *tag, size_t len)
{
    int64_t seq = 0;
    if (len == 0 || len > ZC_SHM_TAG_MAX)
        return 0;
    const int64_t i = find(s, key, v, &seq);
    if (i < 0)
        return 0;
    shm_slot *t = slot_at(s, (uint64_t)i);
    /* Already so (read while the sequence stays): nothing to write, readers undisturbed. */
    unsigned char had[ZC_SHM_TAG_MAX];
    const int64_t n = zc_atomic_load_i64(&t->tag_len, ZC_RELAXED);
    const size_t m = n > 0 && n <= ZC_SHM_TAG_MAX ? (size_t)n : 0;
    memcpy(had, t->tag, m);
    zc_atomic_fence();
    if (zc_atomic_load_i64(&t->seq, ZC_RELAXED) == seq && m == len && memcmp(had, tag, len) == 0)
        return 1;
    if (!own(t, 0))
        return 0;
    /* Owned: kept only when no writer came between find and own (the sequence moved by ours). */
    const int same = zc_atomic_load_i64(&t->seq, ZC_RELAXED) == seq + 1;
    if (same) {
        memcpy(t->tag, tag, len);
        zc_atomic_store_i64(&t->tag_len, (int64_t)len, ZC_RELAXED);
    }
    publish(t);
    return same;
}

size_t zc_shm_cache_tag(zc_shm_cache *s, const int64_t *key, void *tag)
{
    uint64_t first[2], n[2];
    sets_of(s, key, first, n);
    for (int j = 0; j < 2; j++)
        for (uint64_t i = first[j]; i < first[j] + n[j]; i++) {
            shm_slot *t = slot_at(s, i);
            const int64_t q = zc_atomic_load_i64(&t->seq, ZC_ACQUIRE);
            if ((q & 1) || !zc_atomic_load_i64(&t->used, ZC_RELAXED) || !key_is(s, t, key))
                continue;
            const int64_t len = zc_atomic_load_i64(&t->tag_len, ZC_RELAXED);
            if (len <= 0 || len > ZC_SHM_TAG_MAX)
                continue;
            memcpy(tag, t->tag, (size_t)len);
            zc_atomic_fence();
            if (zc_atomic_load_i64(&t->seq, ZC_RELAXED) == q)
                return (size_t)len;
        }
    return 0;
}
