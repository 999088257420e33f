/* Stored objects, in files or in a memory store; see zc_object.h. */
#include "files/zc_object.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "os/zc_os.h"
#include "zc_status.h"
#include "files/zc_temp.h"

int zc_file_open(const zc_root *root, const char *path, int *fd, size_t *size, int *missing)
{
    *missing = 0;
    int s = zc_fs_open(root, path, ZC_OPEN_READ, 0, fd);
    if (s != ZC_OK) {
        if (s == ZC_ERR_IO && (errno == ENOENT || errno == ENOTDIR)) {
            *missing = 1;
            return ZC_OK;
        }
        return s;
    }
    zc_file_info st;
    if (zc_os_fstat(*fd, &st) != 0 || st.size > SIZE_MAX) {
        int e = st.size > SIZE_MAX ? EFBIG : errno;
        zc_os_close(*fd);
        errno = e;
        return ZC_ERR_IO;
    }
    if (st.kind == ZC_FILE_DIRECTORY) {
        /* A directory where a chunk would be holds no chunk, as the store sees it. */
        zc_os_close(*fd);
        *fd = -1;
        *missing = 1;
        return ZC_OK;
    }
    *size = (size_t)st.size;
    return ZC_OK;
}

int zc_pread_full(int fd, void *buf, size_t len, uint64_t at)
{
    size_t got = 0;
    while (got < len) {
        if (at + got > (uint64_t)INT64_MAX)
            return ZC_ERR_SIZE;
        ptrdiff_t r = zc_os_pread(fd, (char *)buf + got, len - got, at + got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ZC_ERR_IO;
        if (r == 0)
            return ZC_ERR_SIZE;
        got += (size_t)r;
    }
    return ZC_OK;
}

/* The temporary file of a new version of `path` (its place in w->at). */
static int open_temp(zc_file_writer *w, const zc_root *root, const char *path)
{
    int st = zc_fs_at(root, path, &w->at);
    if (st == ZC_OK && (st = zc_temp_create(&w->at, w->tmp, sizeof w->tmp, &w->fd)) != ZC_OK)
        zc_fs_at_close(&w->at);
    return st;
}

int zc_file_writer_open(zc_file_writer *w, const zc_root *root, const char *path)
{
    w->fd = -1;
    int st = open_temp(w, root, path);
    if (st == ZC_ERR_IO && errno == ENOENT) {
        /* A directory above is missing: make them all, then try again. */
        char parent[sizeof w->tmp];
        const char *sep = zc_os_last_sep(path);
        size_t n = sep ? (size_t)(sep - path) : 0;
        if (n == 0 || n >= sizeof parent)
            return ZC_ERR_IO;
        memcpy(parent, path, n);
        parent[n] = '\0';
        if ((st = zc_fs_mkdirs(root, parent)) != ZC_OK)
            return st;
        st = open_temp(w, root, path);
    }
    return st;
}

void zc_file_writer_abort(zc_file_writer *w)
{
    int e = errno;
    if (w->fd >= 0) {
        zc_os_unlink_at(w->at.dir, w->tmp);
        zc_os_close(w->fd);
        zc_fs_at_close(&w->at);
    }
    w->fd = -1;
    errno = e;
}

int zc_file_writer_write(zc_file_writer *w, const unsigned char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ptrdiff_t r = zc_os_write(w->fd, data + done, len - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            zc_file_writer_abort(w);
            return ZC_ERR_IO;
        }
        done += (size_t)r;
    }
    return ZC_OK;
}

/* Through memory, in pieces of this size, where the system cannot copy between the files. */
#define COPY_PIECE ((size_t)1 << 20)

int zc_file_writer_copy(zc_file_writer *w, int src_fd, uint64_t at, size_t len)
{
    unsigned char *piece = NULL; /* (allocated once the system cannot copy) */
    size_t done = 0;
    int status = ZC_OK;
    while (done < len && status == ZC_OK) {
        size_t want = len - done;
        ptrdiff_t r;
        if (piece == NULL) {
            r = zc_os_copy_range(src_fd, at + done, w->fd, want);
            if (r < 0 && errno != EINTR) {
                /* Not between these files (another file system, an old kernel...): the
                 * bytes copied so far stay, the rest goes through memory. */
                if ((piece = (unsigned char *)malloc(COPY_PIECE)) == NULL)
                    status = ZC_ERR_NOMEM;
                continue;
            }
        } else {
            r = zc_os_pread(src_fd, piece, want < COPY_PIECE ? want : COPY_PIECE, at + done);
            if (r > 0 && zc_file_writer_write(w, piece, (size_t)r) != ZC_OK) {
                free(piece);
                return ZC_ERR_IO; /* (the writer is aborted) */
            }
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            status = r == 0 ? ZC_ERR_SIZE : ZC_ERR_IO;
        else
            done += (size_t)r;
    }
    free(piece);
    if (status != ZC_OK)
        zc_file_writer_abort(w);
    return status;
}

int zc_file_writer_commit(zc_file_writer *w, const zc_key_locks *locks, const char *path)
{
    /* Closed before the rename, so a write error a network file system reports only at close
     * fails the write rather than publishing a torn file; a duplicate keeps the open file
     * description, and with it the temporary file's lock, until the rename is done. */
    int hold = zc_os_dup(w->fd);
    if (hold < 0 || zc_os_close(w->fd) != 0) {
        int e = errno;
        if (hold >= 0)
            zc_os_close(hold);
        else
            zc_os_close(w->fd);
        w->fd = -1;
        zc_os_unlink_at(w->at.dir, w->tmp);
        zc_fs_at_close(&w->at);
        errno = e;
        return ZC_ERR_IO;
    }
    w->fd = -1;
    const uint64_t byte = zc_key_lock_byte(locks, path);
    int st = zc_key_lock_at(locks, byte);
    /* Renamed within the directory found at open: a rename never follows a symlink at the
     * name it replaces. */
    if (st == ZC_OK && zc_os_rename_at(w->at.dir, w->tmp, w->at.dir, w->at.name) != 0)
        st = ZC_ERR_IO;
    int e = errno;
    if (st != ZC_OK)
        zc_os_unlink_at(w->at.dir, w->tmp);
    zc_key_unlock_at(locks, byte);
    zc_os_close(hold);
    zc_fs_at_close(&w->at);
    errno = e;
    return st;
}

int zc_file_replace_locked(const zc_root *root, const zc_key_locks *locks, const char *path,
                           const unsigned char *data, size_t len)
{
    int st;
    if (data == NULL) {
        const uint64_t byte = zc_key_lock_byte(locks, path);
        if ((st = zc_key_lock_at(locks, byte)) != ZC_OK)
            return st;
        st = zc_fs_unlink(root, path);
        if (st == ZC_ERR_IO && (errno == ENOENT || errno == ENOTDIR))
            st = ZC_OK;
        int e = errno;
        zc_key_unlock_at(locks, byte);
        errno = e;
        return st;
    }
    zc_file_writer w;
    if ((st = zc_file_writer_open(&w, root, path)) != ZC_OK)
        return st;
    if ((st = zc_file_writer_write(&w, data, len)) != ZC_OK)
        return st;
    return zc_file_writer_commit(&w, locks, path);
}

int zc_object_open(const zc_root *root, zc_memstore *mem, const char *path, zc_object *o,
                   size_t *size, int *missing)
{
    o->fd = -1;
    o->blob = NULL;
    if (mem == NULL)
        return zc_file_open(root, path, &o->fd, size, missing);
    o->blob = zc_memstore_get(mem, path);
    *missing = o->blob == NULL;
    *size = o->blob ? o->blob->len : 0;
    return ZC_OK;
}

int zc_object_pread(const zc_object *o, void *buf, size_t len, uint64_t at)
{
    if (o->blob == NULL)
        return zc_pread_full(o->fd, buf, len, at);
    if (at > o->blob->len || len > o->blob->len - at)
        return ZC_ERR_SIZE;
    memcpy(buf, o->blob->data + at, len);
    return ZC_OK;
}

void zc_object_prefetch(const zc_object *o, uint64_t at, size_t len)
{
    if (o->blob == NULL && o->fd >= 0 && len > 0)
        zc_os_prefetch(o->fd, at, len);
}

void zc_object_close(zc_object *o)
{
    if (o->fd >= 0)
        zc_os_close(o->fd);
    zc_blob_release(o->blob);
    o->fd = -1;
    o->blob = NULL;
}

int zc_object_writer_open(zc_object_writer *w, const zc_root *root, zc_memstore *mem,
                          const char *path)
{
    w->mem = mem;
    w->blob = NULL;
    w->len = w->cap = 0;
    w->file.fd = -1;
    return mem == NULL ? zc_file_writer_open(&w->file, root, path) : ZC_OK;
}

int zc_object_writer_write(zc_object_writer *w, const unsigned char *data, size_t len)
{
    if (w->mem == NULL)
        return zc_file_writer_write(&w->file, data, len);
    if (len > SIZE_MAX / 2 - w->len) {
        zc_object_writer_abort(w);
        return ZC_ERR_SIZE;
    }
    if (w->len + len > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + len)
            cap *= 2;
        zc_blob *b = zc_blob_new(cap);
        if (b == NULL) {
            zc_object_writer_abort(w);
            return ZC_ERR_NOMEM;
        }
        if (w->len)
            memcpy(b->data, w->blob->data, w->len);
        zc_blob_release(w->blob);
        w->blob = b;
        w->cap = cap;
    }
    memcpy(w->blob->data + w->len, data, len);
    w->len += len;
    return ZC_OK;
}

void zc_object_writer_abort(zc_object_writer *w)
{
    if (w->mem == NULL) {
        zc_file_writer_abort(&w->file);
        return;
    }
    zc_blob_release(w->blob);
    w->blob = NULL;
    w->len = w->cap = 0;
}

int zc_object_writer_commit(zc_object_writer *w, const zc_key_locks *locks, const char *path)
{
    if (w->mem == NULL)
        return zc_file_writer_commit(&w->file, locks, path);
    if (w->blob == NULL && (w->blob = zc_blob_new(0)) == NULL)
        return ZC_ERR_NOMEM;
    w->blob->len = w->len;
    int st = zc_memstore_lock(w->mem, path);
    if (st == ZC_OK) {
        st = zc_memstore_put(w->mem, path, w->blob);
        zc_memstore_unlock(w->mem, path);
    }
    zc_object_writer_abort(w);
    return st;
}

int zc_object_replace(const zc_root *root, zc_memstore *mem, const zc_key_locks *locks,
                      const char *path, const unsigned char *data, size_t len)
{
    if (mem == NULL)
        return zc_file_replace_locked(root, locks, path, data, len);
    if (data == NULL) {
        int st = zc_memstore_lock(mem, path);
        if (st == ZC_OK) {
            st = zc_memstore_put(mem, path, NULL);
            zc_memstore_unlock(mem, path);
        }
        return st;
    }
    zc_object_writer w;
    int st = zc_object_writer_open(&w, root, mem, path);
    if (st == ZC_OK)
        st = zc_object_writer_write(&w, data, len);
    return st == ZC_OK ? zc_object_writer_commit(&w, locks, path) : st;
}

int zc_object_lock(zc_memstore *mem, const zc_key_locks *locks, const char *path)
{
    return mem ? zc_memstore_lock(mem, path) : zc_key_lock(locks, path);
}

int zc_object_unlock(zc_memstore *mem, const zc_key_locks *locks, const char *path)
{
    return mem ? zc_memstore_unlock(mem, path) : zc_key_unlock(locks, path);
}
