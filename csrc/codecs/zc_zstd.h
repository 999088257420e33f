/* Zstandard frames: compress with level/checksum, decompress known or unknown sizes. */
#ifndef ZC_ZSTD_H
#define ZC_ZSTD_H

#include <stddef.h>

struct ZSTD_DCtx_s; /* ZSTD_DCtx, declared with the zstd prototypes in zc_extern.h */

/* Worst-case compressed size of `srclen` bytes (0 when srclen is too large). */
size_t zc_zstd_bound(size_t srclen);

/* Compress into `dst`; on ZC_OK `*outlen` is the frame size. */
int zc_zstd_compress(const void *src, size_t srclen, void *dst, size_t dstcap, int level,
                     int checksum, size_t *outlen);

/* Compress one segment of a frame of `frame_len` bytes whose segments are compressed apart
 * (by different threads) and stored one after the other: the `first` writes the frame header
 * with the content size, the `last` closes the frame. Each segment starts with no history, so
 * the frame is a little larger than one call makes; no zstd checksum. */
int zc_zstd_compress_segment(const void *src, size_t srclen, void *dst, size_t dstcap, int level,
                             size_t frame_len, int first, int last, size_t *outlen);

/* Sum of the content sizes of every frame in `src`: ZC_OK with `*known` = 1 and `*size`
 * when every frame records it, `*known` = 0 when some frame does not. */
int zc_zstd_content_size(const void *src, size_t srclen, int *known, size_t *size);

/* Decompress every frame of `src` into `dst`, which must be exactly the decoded size. */
int zc_zstd_decompress(const void *src, size_t srclen, void *dst, size_t dstlen);

/* The most bytes a zstd block decodes to. */
#define ZC_ZSTD_BLOCK ((size_t)128 << 10)

/* At least the first `need` of the `dstlen` decoded bytes of one frame into `dst`: the blocks
 * past them are left undecoded where the frame tells its content size (`dstlen`), carries no
 * content checksum (which only the whole content can confirm) and ends the input; else as
 * zc_zstd_decompress. */
int zc_zstd_decompress_prefix(const void *src, size_t srclen, void *dst, size_t dstlen,
                              size_t need);

/* Decompress frames of unknown size into a malloc'd buffer of at most `maxlen` bytes;
 * on ZC_OK the caller frees `*out` (non-NULL even when `*outlen` is 0). */
int zc_zstd_decompress_alloc(const void *src, size_t srclen, size_t maxlen, void **out,
                             size_t *outlen);

/* The calling thread's decompression context (ZSTD_DCtx of zc_extern.h), reset to default
 * parameters: created on first use, reused by the functions above and by zc_stream.c, freed
 * when the thread exits. NULL when out of memory. */
struct ZSTD_DCtx_s *zc_zstd_thread_dctx(void);

/* After using it: free the thread's context now if it holds more than `keep` bytes (a frame
 * with a huge window grew it), so that an idle thread never keeps much. */
void zc_zstd_thread_dctx_trim(size_t keep);

#endif
