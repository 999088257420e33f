/* Strided copy: drop unit dimensions, fuse dimensions that are contiguous in both arrays,
 * then walk the outer dimensions with an odometer and copy inner rows. */
#include "jobs/zc_copy.h"

#include <stdint.h>
#include <string.h>

#include "os/zc_os.h"
#include "zc_status.h"

int zc_strided_extent(int ndim, const ptrdiff_t *shape, const ptrdiff_t *strides, size_t itemsize,
                      ptrdiff_t *lo, ptrdiff_t *hi)
{
    if (ndim < 0 || ndim > ZC_MAX_DIMS || itemsize == 0 || itemsize > PTRDIFF_MAX || lo == NULL ||
        hi == NULL || (ndim && (shape == NULL || strides == NULL)))
        return ZC_ERR_PARAM;
    ptrdiff_t l = 0, h = (ptrdiff_t)itemsize;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return ZC_ERR_PARAM;
        if (shape[i] == 0) {
            *lo = *hi = 0;
            return ZC_OK;
        }
    }
    for (int i = 0; i < ndim; i++) {
        ptrdiff_t s = strides[i], span;
        if (s == PTRDIFF_MIN)
            return ZC_ERR_SIZE;
        ptrdiff_t a = s < 0 ? -s : s;
        if (shape[i] > 1 && a > PTRDIFF_MAX / (shape[i] - 1))
            return ZC_ERR_SIZE;
        span = a * (shape[i] - 1);
        if (s < 0) {
            if (l < PTRDIFF_MIN + span)
                return ZC_ERR_SIZE;
            l -= span;
        } else {
            if (h > PTRDIFF_MAX - span)
                return ZC_ERR_SIZE;
            h += span;
        }
    }
    *lo = l;
    *hi = h;
    return ZC_OK;
}

/* Fill `n` contiguous items at `d` with the item at `s` (a broadcast source): one memset
 * when its bytes are all equal, else the first item doubled by memcpy from a cache-hot
 * head. */
static void fill_items(char *d, const char *s, ptrdiff_t n, size_t itemsize)
{
    const size_t total = (size_t)n * itemsize;
    size_t k = 1;
    while (k < itemsize && s[k] == s[0])
        k++;
    if (k == itemsize) {
        memset(d, (unsigned char)s[0], total);
        return;
    }
    size_t cap = ((size_t)64 << 10) / itemsize * itemsize;
    if (cap == 0)
        cap = itemsize;
    memcpy(d, s, itemsize);
    for (size_t done = itemsize; done < total;) {
        /* Every length is a whole number of items. */
        size_t len = done < total - done ? done : total - done;
        if (len > cap)
            len = cap;
        memcpy(d + done, d, len);
        done += len;
    }
}

void zc_copy_items(char *d, ptrdiff_t ds, const char *s, ptrdiff_t ss, ptrdiff_t n, size_t itemsize)
{
    if (ds == (ptrdiff_t)itemsize && ss == (ptrdiff_t)itemsize) {
        memcpy(d, s, (size_t)n * itemsize);
        return;
    }
    if (ds == (ptrdiff_t)itemsize && ss == 0 && n > 0) {
        fill_items(d, s, n, itemsize);
        return;
    }
    /* Fixed-size memcpy compiles to single loads/stores. */
#define ITEMS(K)                                      \
    for (ptrdiff_t i = 0; i < n; i++, d += ds, s += ss) \
        memcpy(d, s, K);                                \
    return;
    switch (itemsize) {
    case 1: ITEMS(1)
    case 2: ITEMS(2)
    case 4: ITEMS(4)
    case 8: ITEMS(8)
    case 16: ITEMS(16)
    default:
        for (ptrdiff_t i = 0; i < n; i++, d += ds, s += ss)
            memcpy(d, s, itemsize);
    }
#undef ITEMS
}

/* Tile edges for transposing copies: a tile's source lines and destination rows both stay
 * in L1 (at most 16 KiB per side); narrow items get taller tiles to amortize the loops. */
#define TILE 32
#define tile_for(itemsize) ((itemsize) <= 2 ? 4 * TILE : TILE)

/* Copy an nk x ni plane whose rows (i) are contiguous in dst but not in src while the k
 * axis is the small stride in src: tiling turns the strided reads into cache hits. */
static void copy_tiled(char *d, ptrdiff_t dk, ptrdiff_t di, const char *s, ptrdiff_t sk,
                       ptrdiff_t si, ptrdiff_t nk, ptrdiff_t ni, size_t itemsize)
{
    const ptrdiff_t t = tile_for(itemsize);
    for (ptrdiff_t k0 = 0; k0 < nk; k0 += t) {
        ptrdiff_t k1 = k0 + t < nk ? k0 + t : nk;
        for (ptrdiff_t i0 = 0; i0 < ni; i0 += t) {
            ptrdiff_t len = i0 + t < ni ? t : ni - i0;
            for (ptrdiff_t k = k0; k < k1; k++)
                zc_copy_items(d + k * dk + i0 * di, di, s + k * sk + i0 * si, si, len, itemsize);
        }
    }
}

/* Rows of at most this many bytes are prefetched this many rows ahead. */
#define PREFETCH_RUN_MAX 1024
#define PREFETCH_ROWS 16

/* Rows of at most this many bytes are copied inline: a call to memcpy per row of a 64^3
 * block at a random offset (two rows of about 64 bytes each per output row) cost more than
 * the bytes it moved. */
#define SHORT_RUN_MAX 256

/* Copy `n` (1..SHORT_RUN_MAX) bytes with fixed-size moves, which compile to single loads and
 * stores: whole 64-byte blocks, then two overlapping moves for the rest. */
/* The first and last `w` bytes of `n` (w <= n <= 2w): all of them. */
#define COPY_ENDS(w)                                                                           \
    do {                                                                                       \
        memcpy(d, s, (w));                                                                     \
        memcpy(d + n - (w), s + n - (w), (w));                                                 \
    } while (0)

static inline void copy_short(char *d, const char *s, size_t n)
{
    if (n >= 64) {
        size_t o = 0;
        for (; o + 64 <= n; o += 64)
            memcpy(d + o, s + o, 64);
        if (o < n)
            memcpy(d + n - 64, s + n - 64, 64);
    } else if (n >= 32) {
        COPY_ENDS(32);
    } else if (n >= 16) {
        COPY_ENDS(16);
    } else if (n >= 8) {
        COPY_ENDS(8);
    } else if (n >= 4) {
        COPY_ENDS(4);
    } else if (n >= 2) {
        COPY_ENDS(2);
    } else {
        *d = *s;
    }
}

#undef COPY_ENDS

/* Step the odometer `idx` over dimensions 0..dims-1 (sizes `n`) and the source pointer with
 * it (strides `ss`), and the destination pointer too unless `d` is NULL (strides `ds`); 0
 * once it has passed the end. */
static int step(int dims, const ptrdiff_t *n, const ptrdiff_t *ss, const ptrdiff_t *ds,
                ptrdiff_t *idx, const char **s, char **d)
{
    for (int k = dims - 1; k >= 0; k--) {
        *s += ss[k];
        if (d != NULL)
            *d += ds[k];
        if (++idx[k] < n[k])
            return 1;
        *s -= ss[k] * n[k];
        if (d != NULL)
            *d -= ds[k] * n[k];
        idx[k] = 0;
    }
    return 0;
}

/* Short contiguous rows: the innermost outer dimension in a tight loop, prefetching the row
 * PREFETCH_ROWS ahead (in the next plane near a plane's end), the dimensions above it by
 * odometer. `outer` >= 1 dimensions of rows, `runbytes` <= SHORT_RUN_MAX. */
static void copy_short_rows(int outer, const ptrdiff_t *n, const ptrdiff_t *ss,
                            const ptrdiff_t *ds, const char *s, char *d, size_t runbytes)
{
    const ptrdiff_t nr = n[outer - 1], sr = ss[outer - 1], dr = ds[outer - 1];
    const ptrdiff_t np = outer > 1 ? n[outer - 2] : 1, sp = outer > 1 ? ss[outer - 2] : 0;
    ptrdiff_t idx[ZC_MAX_DIMS] = {0};
    for (;;) {
        /* Where the next plane starts, when there is one in this dimension. */
        const char *next = outer > 1 && idx[outer - 2] + 1 < np ? s + sp : NULL;
        const char *rs = s;
        char *rd = d;
        for (ptrdiff_t i = 0; i < nr; i++, rs += sr, rd += dr) {
            const char *ahead = i + PREFETCH_ROWS < nr ? rs + PREFETCH_ROWS * sr
                                : next != NULL && i + PREFETCH_ROWS - nr < nr
                                    ? next + (i + PREFETCH_ROWS - nr) * sr
                                    : NULL;
            if (ahead != NULL)
                for (size_t o = 0; o < runbytes; o += 64)
                    zc_prefetch(ahead + o);
            copy_short(rd, rs, runbytes);
        }
        if (!step(outer - 1, n, ss, ds, idx, &s, &d))
            return;
    }
}

int zc_copy_nd(int ndim, const ptrdiff_t *shape, size_t itemsize, const void *src,
               const ptrdiff_t *src_strides, void *dst, const ptrdiff_t *dst_strides)
{
    ptrdiff_t lo, hi;
    int status = zc_strided_extent(ndim, shape, src_strides, itemsize, &lo, &hi);
    if (status == ZC_OK)
        status = zc_strided_extent(ndim, shape, dst_strides, itemsize, &lo, &hi);
    if (status != ZC_OK)
        return status;
    if (hi == 0)
        return ZC_OK; /* some dimension is empty */
    if (src == NULL || dst == NULL)
        return ZC_ERR_PARAM;

    /* Simplified geometry, innermost dimension last. */
    ptrdiff_t n[ZC_MAX_DIMS], ss[ZC_MAX_DIMS], ds[ZC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 1)
            continue;
        ptrdiff_t sspan, dspan;
        int fusable = nd > 0 && !zc_mul_overflow_i64(src_strides[i], shape[i], &sspan) &&
                      !zc_mul_overflow_i64(dst_strides[i], shape[i], &dspan) &&
                      ss[nd - 1] == sspan && ds[nd - 1] == dspan;
        if (fusable) {
            n[nd - 1] *= shape[i];
            ss[nd - 1] = src_strides[i];
            ds[nd - 1] = dst_strides[i];
            continue;
        }
        n[nd] = shape[i];
        ss[nd] = src_strides[i];
        ds[nd] = dst_strides[i];
        nd++;
    }
    const char *s = (const char *)src;
    char *d = (char *)dst;
    if (nd == 0) {
        memcpy(d, s, itemsize);
        return ZC_OK;
    }
    /* The innermost dimension becomes one memcpy when it is contiguous in both. */
    ptrdiff_t inner = n[nd - 1], iss = ss[nd - 1], ids = ds[nd - 1];
    int run = iss == (ptrdiff_t)itemsize && ids == (ptrdiff_t)itemsize;
    size_t runbytes = (size_t)inner * itemsize;
    /* Otherwise, when some outer dimension has a smaller source stride (a transpose), pull
     * it out and copy (that dimension x inner) planes in tiles. */
    int tk = -1;
    ptrdiff_t tn = 1, tss = 0, tds = 0;
    if (!run && inner >= TILE) {
        ptrdiff_t best = iss < 0 ? -iss : iss;
        for (int k = 0; k < nd - 1; k++) {
            ptrdiff_t a = ss[k] < 0 ? -ss[k] : ss[k];
            if (a < best && n[k] >= TILE) {
                best = a;
                tk = k;
            }
        }
    }
    if (tk >= 0) {
        tn = n[tk];
        tss = ss[tk];
        tds = ds[tk];
        for (int k = tk; k < nd - 1; k++) {
            n[k] = n[k + 1];
            ss[k] = ss[k + 1];
            ds[k] = ds[k + 1];
        }
        nd--;
    }
    int outer = nd - 1;
    if (run && outer > 0 && runbytes <= SHORT_RUN_MAX) {
        copy_short_rows(outer, n, ss, ds, s, d, runbytes);
        return ZC_OK;
    }
    ptrdiff_t idx[ZC_MAX_DIMS] = {0};
    /* Short contiguous rows far apart in the source (an inner chunk gathered out of a big
     * array) defeat the hardware prefetchers, which follow streams within a page: each row
     * would wait for memory. A second odometer runs PREFETCH_ROWS rows ahead and asks for
     * those rows' cache lines early: the 512 inner chunks (64^3 uint16) of a 512^3 array
     * take 0.06 s instead of 0.09 s on one thread; a few instructions per row when the
     * source is in cache. */
    const char *ps = s;
    ptrdiff_t pidx[ZC_MAX_DIMS] = {0};
    int prefetch = run && outer > 0 && runbytes <= PREFETCH_RUN_MAX;
    for (int i = 0; prefetch && i < PREFETCH_ROWS; i++)
        prefetch = step(outer, n, ss, NULL, pidx, &ps, NULL);
    for (;;) {
        if (prefetch) {
            for (size_t o = 0; o < runbytes; o += 64)
                zc_prefetch(ps + o);
            prefetch = step(outer, n, ss, NULL, pidx, &ps, NULL);
        }
        if (run)
            memcpy(d, s, runbytes);
        else if (tk >= 0)
            copy_tiled(d, tds, ids, s, tss, iss, tn, inner, itemsize);
        else
            zc_copy_items(d, ids, s, iss, inner, itemsize);
        if (!step(outer, n, ss, ds, idx, &s, &d))
            break;
    }
    return ZC_OK;
}
