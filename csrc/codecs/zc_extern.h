/* Prototypes of the zstd 1.5.x, lz4 1.10 and zlib 1.3.x symbols that python-blosc's
 * libblosc.a exports; the wheel ships only blosc.h, so they are declared here. */
#ifndef ZC_EXTERN_H
#define ZC_EXTERN_H

#include <stddef.h>

/* ---- zstd ---- */
typedef struct ZSTD_CCtx_s ZSTD_CCtx;
typedef struct ZSTD_DCtx_s ZSTD_DCtx;
typedef struct { const void *src; size_t size; size_t pos; } ZSTD_inBuffer;
typedef struct { void *dst; size_t size; size_t pos; } ZSTD_outBuffer;

#define ZSTD_CONTENTSIZE_UNKNOWN (0ULL - 1)
#define ZSTD_CONTENTSIZE_ERROR (0ULL - 2)
/* ZSTD_cParameter / ZSTD_ResetDirective values (stable API). */
#define ZSTD_c_compressionLevel 100
#define ZSTD_c_checksumFlag 201
#define ZSTD_reset_session_only 1
#define ZSTD_reset_session_and_parameters 3

const char *ZSTD_versionString(void);
ZSTD_CCtx *ZSTD_createCCtx(void);
size_t ZSTD_freeCCtx(ZSTD_CCtx *cctx);
size_t ZSTD_CCtx_reset(ZSTD_CCtx *cctx, int reset);
size_t ZSTD_CCtx_setParameter(ZSTD_CCtx *cctx, int param, int value);
size_t ZSTD_compress2(ZSTD_CCtx *cctx, void *dst, size_t dstCapacity, const void *src, size_t srcSize);
size_t ZSTD_compressBound(size_t srcSize);
int ZSTD_minCLevel(void);
int ZSTD_maxCLevel(void);

/* The buffer-less API (zstd.h's static-linking section) that builds one frame from segments
 * compressed apart, as zstd's own multithreaded compressor does. */
typedef struct {
    unsigned windowLog, chainLog, hashLog, searchLog, minMatch, targetLength;
    int strategy;
} ZSTD_compressionParameters;
typedef struct { int contentSizeFlag, checksumFlag, noDictIDFlag; } ZSTD_frameParameters;
typedef struct {
    ZSTD_compressionParameters cParams;
    ZSTD_frameParameters fParams;
} ZSTD_parameters;
ZSTD_parameters ZSTD_getParams(int compressionLevel, unsigned long long estimatedSrcSize,
                               size_t dictSize);
size_t ZSTD_compressBegin_advanced(ZSTD_CCtx *cctx, const void *dict, size_t dictSize,
                                   ZSTD_parameters params, unsigned long long pledgedSrcSize);
size_t ZSTD_compressContinue(ZSTD_CCtx *cctx, void *dst, size_t dstCapacity, const void *src,
                             size_t srcSize);
size_t ZSTD_compressEnd(ZSTD_CCtx *cctx, void *dst, size_t dstCapacity, const void *src,
                        size_t srcSize);
/* zstd-internal (zstd_compress_internal.h), exported by the archive: forget the repeat
 * offsets, which a segment cannot share with the one before it. */
void ZSTD_invalidateRepCodes(ZSTD_CCtx *cctx);

ZSTD_DCtx *ZSTD_createDCtx(void);
size_t ZSTD_freeDCtx(ZSTD_DCtx *dctx);
size_t ZSTD_DCtx_reset(ZSTD_DCtx *dctx, int reset);
size_t ZSTD_decompressDCtx(ZSTD_DCtx *dctx, void *dst, size_t dstCapacity, const void *src, size_t srcSize);
size_t ZSTD_decompressStream(ZSTD_DCtx *zds, ZSTD_outBuffer *output, ZSTD_inBuffer *input);
size_t ZSTD_DStreamOutSize(void);
unsigned long long ZSTD_findDecompressedSize(const void *src, size_t srcSize);
unsigned ZSTD_isError(size_t code);
size_t ZSTD_DCtx_setParameter(ZSTD_DCtx *dctx, int param, int value);
size_t ZSTD_sizeof_DCtx(const ZSTD_DCtx *dctx);
size_t ZSTD_findFrameCompressedSize(const void *src, size_t srcSize);
unsigned long long ZSTD_getFrameContentSize(const void *src, size_t srcSize);
/* The buffer-less decoding API (static-linking section): a frame block by block. */
size_t ZSTD_decompressBegin(ZSTD_DCtx *dctx);
size_t ZSTD_nextSrcSizeToDecompress(ZSTD_DCtx *dctx);
size_t ZSTD_decompressContinue(ZSTD_DCtx *dctx, void *dst, size_t dstCapacity, const void *src,
                               size_t srcSize);

/* ---- lz4 ---- */
#define LZ4_MAX_INPUT_SIZE 0x7E000000
const char *LZ4_versionString(void);
int LZ4_compressBound(int inputSize);
int LZ4_compress_fast(const char *src, char *dst, int srcSize, int dstCapacity, int acceleration);
int LZ4_decompress_safe(const char *src, char *dst, int compressedSize, int dstCapacity);

/* ---- zlib (z_stream layout of the 1.3.x ABI) ---- */
typedef void *(*zc_alloc_func)(void *opaque, unsigned int items, unsigned int size);
typedef void (*zc_free_func)(void *opaque, void *address);
typedef struct z_stream_s {
    const unsigned char *next_in;
    unsigned int avail_in;
    unsigned long total_in;
    unsigned char *next_out;
    unsigned int avail_out;
    unsigned long total_out;
    const char *msg;
    struct internal_state *state;
    zc_alloc_func zalloc;
    zc_free_func zfree;
    void *opaque;
    int data_type;
    unsigned long adler;
    unsigned long reserved;
} z_stream;

#define ZLIB_VERSION "1.3.1"
#define Z_NO_FLUSH 0
#define Z_FINISH 4
#define Z_OK 0
#define Z_STREAM_END 1
#define Z_NEED_DICT 2
#define Z_BUF_ERROR (-5)
#define Z_DEFLATED 8
#define Z_DEFAULT_STRATEGY 0
#define ZC_ZLIB_MEMLEVEL 8

const char *zlibVersion(void);
int deflateInit2_(z_stream *strm, int level, int method, int windowBits, int memLevel,
                  int strategy, const char *version, int stream_size);
int deflate(z_stream *strm, int flush);
int deflateEnd(z_stream *strm);
int inflateInit2_(z_stream *strm, int windowBits, const char *version, int stream_size);
int inflate(z_stream *strm, int flush);
int inflateReset(z_stream *strm);
int inflateEnd(z_stream *strm);

#endif
