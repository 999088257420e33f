/* Blosc 1.x container: compress and validated decompress, single-threaded contexts. */
#ifndef ZC_BLOSC_H
#define ZC_BLOSC_H

#include <stddef.h>

/* Worst-case compressed size of `nbytes` input bytes. */
size_t zc_blosc_bound(size_t nbytes);

/* Compress `srclen` bytes; on ZC_OK `*outlen` is the compressed size written to `dst`.
 * shuffle: 0 none, 1 byte, 2 bit. cname: "blosclz", "lz4", "lz4hc", "zlib", "zstd". */
int zc_blosc_compress(const void *src, size_t srclen, void *dst, size_t dstcap, int clevel,
                      int shuffle, size_t typesize, const char *cname, size_t blocksize,
                      size_t *outlen);

/* Validate the header of a blosc buffer and report its decoded size. */
int zc_blosc_decoded_size(const void *src, size_t srclen, size_t *nbytes);

/* Decompress into `dst`, which must be exactly the decoded size, on `threads` threads of
 * blosc's own (its blocks decode apart; the result is the same on any number). */
int zc_blosc_decompress(const void *src, size_t srclen, void *dst, size_t dstlen, int threads);

/* The versions of c-blosc and of the zstd, lz4 and zlib it bundles, as the linked library
 * reports them (static strings). The extension that calls this carries each library's version
 * string: what the wheels' SBOM names and wheels/check_wheel.py looks for, which a linker that
 * drops unreferenced data (the COFF link of `make cross` does) would otherwise leave out. */
void zc_blosc_library_versions(const char **blosc, const char **zstd, const char **lz4,
                               const char **zlib);

#endif
