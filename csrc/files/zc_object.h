/* Stored objects: files of a directory store below its root (zc_fs.h), or blobs of a
 * zc_memstore. Opened and read by offset; replaced atomically (a temporary file renamed over
 * the file, a blob swapped in) under the key's lock. Shared by chunk reads (zc_chunk_io.h,
 * zc_stream.h) and the batches that write. */
#ifndef ZC_OBJECT_H
#define ZC_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "files/zc_fs.h"
#include "files/zc_key_lock.h"
#include "files/zc_memstore.h"

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

/* Append `len` bytes of the open file `src_fd` from offset `at`, copied inside the system
 * where it can (zc_os_copy_range), else through memory: ZC_OK, ZC_ERR_SIZE when `src_fd` ends
 * first, ZC_ERR_IO or ZC_ERR_NOMEM; on failure the writer is aborted. */
int zc_file_writer_copy(zc_file_writer *w, int src_fd, uint64_t at, size_t len);

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
/* As zc_os_prefetch; nothing for a blob. */
void zc_object_prefetch(const zc_object *o, uint64_t at, size_t len);
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

#endif
