/* The chunk codec chains the core runs by itself: bytes (byte-swapped when the stored order
 * differs from memory), optionally numcodecs' byte shuffle filter, at most one compressor,
 * and an optional trailing crc32c. */
#ifndef ZC_CHAIN_H
#define ZC_CHAIN_H

#include <stddef.h>
#include <stdint.h>

/* The bytes->bytes stage of the chain (one compressor at most). */
#define ZC_COMP_NONE 0
#define ZC_COMP_ZSTD 1
#define ZC_COMP_BLOSC 2
#define ZC_COMP_GZIP 3
#define ZC_COMP_ZLIB 4

typedef struct {
    size_t itemsize;
    size_t swap_size;       /* byteswap items of this size (0: stored order is memory order) */
    size_t byte_shuffle;    /* shuffle the bytes of items of this size before the compressor
                             * (numcodecs' shuffle filter, HDF5's; 0 or 1: none) */
    int compressor;         /* ZC_COMP_* */
    int clevel, shuffle, checksum;  /* encode settings of the compressor */
    size_t typesize, blocksize;
    char cname[16];
    int crc32c;             /* a trailing crc32c follows the compressed bytes */
    int decode_threads;     /* blosc: threads of its own per chunk decoded (0 or 1: none) */
    size_t max_stored;      /* the most bytes a valid stored chunk takes; a larger one is
                             * refused unread (0: no bound) */
} zc_chain;

/* Whether the chain shuffles bytes: its stored bytes are then neither the items nor a stream
 * of them, and only zc_chain_decode and zc_chain_encode code its chunks (no fast path that
 * copies or streams stored bytes takes it). */
static inline int zc_chain_shuffles(const zc_chain *c) { return c->byte_shuffle > 1; }

/* Are the stored bytes the items as they lie in memory (no compressor, checksum, byte swap
 * or shuffle)? */
static inline int zc_chain_stores_items(const zc_chain *c)
{
    return c->compressor == ZC_COMP_NONE && !c->crc32c && c->swap_size <= 1 &&
           !zc_chain_shuffles(c);
}

/* Whether unshuffling whole items is the last step of decoding: the chain shuffles items of
 * its item size and needs no byte swap (zc_chain_decode_shuffled, zc_unshuffle_nd). */
static inline int zc_chain_unshuffles_last(const zc_chain *c)
{
    return zc_chain_shuffles(c) && c->byte_shuffle == c->itemsize && c->swap_size <= 1;
}

/* A little-endian uint32 (the crc32c trailer): read at `p`, or written there. */
uint32_t zc_load_le32(const unsigned char *p);
void zc_store_le32(unsigned char *p, uint32_t v);

/* Encoded bytes -> exactly `n` decoded bytes at `out`, in memory byte order. */
int zc_chain_decode(const zc_chain *c, const unsigned char *src, size_t len, void *out, size_t n);

/* As zc_chain_decode, for a reader of the first `need` bytes only: those are right, the rest
 * of `out` may be left undecoded (zstd stops after the block that reaches them; the stored
 * bytes' crc32c is still checked whole). */
int zc_chain_decode_prefix(const zc_chain *c, const unsigned char *src, size_t len, void *out,
                           size_t n, size_t need);

/* For a chain that zc_chain_unshuffles_last: encoded bytes -> the `n` bytes of its items
 * still shuffled, at `*planes` (this thread's scratch, or `src` without a compressor), for
 * zc_unshuffle_nd to place straight into an array region. */
int zc_chain_decode_shuffled(const zc_chain *c, const unsigned char *src, size_t len, size_t n,
                             const unsigned char **planes);

/* Room `zc_chain_encode` may need for `n` decoded bytes; 0 when too large. */
size_t zc_chain_encode_bound(const zc_chain *c, size_t n);

/* `n` decoded bytes at `chunk` (byte-swapped in place) -> the encoding at `dst`, which has
 * `cap` >= zc_chain_encode_bound bytes; `*outlen` is its size. Without a compressor `dst`
 * may be `chunk` itself (with the bound's room), and nothing is copied. */
int zc_chain_encode(const zc_chain *c, unsigned char *chunk, size_t n, unsigned char *dst,
                    size_t cap, size_t *outlen);

#endif
