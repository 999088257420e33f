/* One stored chunk between a file of a directory store and memory: key paths, opening,
 * decoding a chunk (a whole file or a byte range of one, as in a shard) into a selection of
 * the caller's array, and atomic replacement of a file. Shared by the array batch
 * (zc_batch.c) and the shard batch (zc_shard_io.c). */
#ifndef ZC_CHUNK_IO_H
#define ZC_CHUNK_IO_H

#include <stddef.h>
#include <stdint.h>

#include "zc_chain.h"
#include "zc_fs.h"
#include "zc_gather.h"
#include "zc_key_lock.h"
#include "zc_memstore.h"
#include "zc_stream.h"

#define ZC_CHUNK_IO_MAX_NDIM 32
/* A system call failed; errno says why. (Same value as zc_batch.h's and zc_stream.h's.) */
#ifndef ZC_ERR_IO
#define ZC_ERR_IO (-20)
#endif

/* A scratch buffer that grows; one per worker thread and purpose. */
typedef struct {
    unsigned char *p;
    size_t cap;
} zc_buf;

int zc_buf_reserve(zc_buf *b, size_t n);

/* The path `head` followed by the coordinates, each preceded by `sep` (the first one only
 * when `lead_sep`); a 0-d key without `lead_sep` is "0" (v2). ZC_ERR_SIZE when it does not
 * fit in `cap`. */
int zc_key_format(const char *head, char sep, int lead_sep, int ndim, const int64_t *coords,
                  char *buf, size_t cap);

/* Open a stored object below `root` (zc_fs.h): ZC_OK with *fd and *size, or with *missing set
 * (and no fd) when nothing is stored there (no file, or a directory); ZC_ERR_IO with errno or
 * ZC_ERR_OUTSIDE otherwise. */
int zc_file_open(const zc_root *root, const char *path, int *fd, size_t *size, int *missing);

/* Read exactly `len` bytes at `at`: ZC_OK, ZC_ERR_SIZE when the file ends first, ZC_ERR_IO. */
int zc_pread_full(int fd, void *buf, size_t len, uint64_t at);

/* A new version of a stored object, written to a temporary file beside it (zc_temp.h) and
 * renamed over it on commit, so readers see the old or the new object, never a torn one. */
typedef struct {
    int fd;
    zc_at at;            /* the object's place: its directory and name (zc_fs.h) */
    char tmp[4096 + 64]; /* the temporary file's name relative to at.dir */
} zc_file_writer;

/* Create (and lock, zc_temp.h) the temporary file for `path` below `root`, making missing
 * parent directories. `path` must stay valid until the writer is committed or aborted. */
int zc_file_writer_open(zc_file_writer *w, const zc_root *root, const char *path);

/* Append `len` bytes; on failure the writer is aborted. */
int zc_file_writer_write(zc_file_writer *w, const unsigned char *data, size_t len);

/* Rename the written file over `path` while holding the key lock of `path` in `locks`
 * (zc_key_lock.h; not open: no lock), the lock zarrcore.storage.local.LocalStore.lock takes
 * for the same key, so the replacement lands wholly before or after another writer's
 * read-modify-write of it. On failure the writer is aborted. */
int zc_file_writer_commit(zc_file_writer *w, const zc_key_locks *locks, const char *path);

/* Drop the temporary file (errno is kept). */
void zc_file_writer_abort(zc_file_writer *w);

/* Replace `path` with `len` bytes through a zc_file_writer committed under `locks` (or
 * delete it under the lock when `data` is NULL). */
int zc_file_replace_locked(const zc_root *root, const zc_key_locks *locks, const char *path,
                           const unsigned char *data, size_t len);

/* ---- stored objects: files of a directory store, or blobs of a zc_memstore ---------------- */

/* Jobs over a memory store (their `mem` not NULL) name objects by store key where they name
 * files by path below their root otherwise (zc_fs.h: confined or not), and lock keys with
 * zc_memstore_lock rather than a lock file. The root is not used with a memory store. */

/* An open stored object: a file (fd >= 0), or a memory store's blob held by a reference. */
typedef struct zc_object {
    int fd;
    zc_blob *blob;
} zc_object;

/* As zc_file_open, of `path` in `mem` (NULL: the file system below `root`). */
int zc_object_open(const zc_root *root, zc_memstore *mem, const char *path, zc_object *o,
                   size_t *size, int *missing);
/* As zc_pread_full. */
int zc_object_pread(const zc_object *o, void *buf, size_t len, uint64_t at);
void zc_object_close(zc_object *o);

/* A new version of a stored object: a zc_file_writer, or a blob that grows as it is
 * written and is stored on commit. */
typedef struct {
    zc_file_writer file;
    zc_memstore *mem;
    zc_blob *blob;
    size_t len, cap;
} zc_object_writer;

int zc_object_writer_open(zc_object_writer *w, const zc_root *root, zc_memstore *mem,
                          const char *path);
int zc_object_writer_write(zc_object_writer *w, const unsigned char *data, size_t len);
/* As zc_file_writer_commit; in memory under the key's lock (taken again if the thread holds
 * it: zc_memstore_lock). */
int zc_object_writer_commit(zc_object_writer *w, const zc_key_locks *locks, const char *path);
void zc_object_writer_abort(zc_object_writer *w);
/* As zc_file_replace_locked, in `mem` when not NULL. */
int zc_object_replace(const zc_root *root, zc_memstore *mem, const zc_key_locks *locks,
                      const char *path, const unsigned char *data, size_t len);
/* As zc_key_lock / zc_key_unlock, in `mem` when not NULL. */
int zc_object_lock(zc_memstore *mem, const zc_key_locks *locks, const char *path);
int zc_object_unlock(zc_memstore *mem, const zc_key_locks *locks, const char *path);

/* A selection of a C-ordered chunk of `shape`: on axis d `count[d]` items from `start[d]`
 * by `step[d]` (>= 1), landing at `out` + k * out_strides[d] (bytes, any sign). With
 * `gather` set instead, the cross product of its axes (zc_gather_nd); with `local` set, the
 * points: items local[k] (C-order offsets in the chunk) land at
 * `out` + local_out[k] * out_strides[0], 0 <= k < npoints (zc_gather_points). */
typedef struct {
    int ndim;
    const int64_t *shape;
    int64_t start[ZC_CHUNK_IO_MAX_NDIM], step[ZC_CHUNK_IO_MAX_NDIM], count[ZC_CHUNK_IO_MAX_NDIM];
    const zc_gather_axis *gather;
    const int64_t *local, *local_out;
    int64_t npoints;
    char *out;
    ptrdiff_t out_strides[ZC_CHUNK_IO_MAX_NDIM];
    int stream_out;  /* the output outgrows the caches (zc_stream.h's ZC_STREAM_OUT_MIN) */
} zc_chunk_sel;

/* Per-thread buffers of chunk reads, taken on first need; zero-initialize, free when done. */
typedef struct {
    zc_buf file, scratch;   /* whole-chunk path (blosc, gzip, zlib) */
    zc_stream_bufs stream;  /* streamed path (no compressor, zstd): bounded blocks */
} zc_chunk_reader;

void zc_chunk_reader_free(zc_chunk_reader *r);

/* Decode the chunk stored as bytes [offset, offset + size) of `o` into the selection.
 * Index lists and points are gathered from the whole decoded chunk (zc_gather.h). Otherwise
 * no compressor and zstd stream through bounded buffers; the other compressors decode the
 * whole chunk, into the output when the selection is the whole chunk on one contiguous run
 * of it, else into the reader's chunk-sized scratch buffer and from there into place. */
int zc_chunk_read(const zc_chain *c, const zc_chunk_sel *s, const zc_object *o, uint64_t offset,
                  size_t size, zc_chunk_reader *r);

/* Copy the selection out of `chunk`, a whole decoded chunk (C order, s->shape items of
 * `itemsize` bytes): ZC_OK, or ZC_ERR_PARAM when the selection leaves the chunk. */
int zc_chunk_sel_copy(const zc_chunk_sel *s, size_t itemsize, const unsigned char *chunk);

#endif
