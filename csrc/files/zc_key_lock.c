/* Key locks as byte-range locks of a lock file beside each hierarchy; see zc_key_lock.h. */
#include "files/zc_key_lock.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "os/zc_os.h"
#include "files/zc_sha256.h"
#include "zc_status.h"
#include "files/zc_temp.h"

#define DIR_OPEN (ZC_OPEN_PATH | ZC_OPEN_DIRECTORY)

int zc_share_like_dir(const zc_root *root, int fd, const char *path)
{
    char dir_path[4096 + 64];
    const char *sep = zc_os_last_sep(path);
    if (sep == NULL) {
        strcpy(dir_path, ".");
    } else {
        size_t n = sep == path ? 1 : (size_t)(sep - path);
        if (n >= sizeof dir_path)
            return ZC_ERR_SIZE;
        memcpy(dir_path, path, n);
        dir_path[n] = 0;
    }
    return zc_fs_share_like_dir(root, fd, dir_path, -1);
}

/* Open the lock file `name` in the directory `dir` for writing (a write lock needs nothing
 * more, so a store's writers need no read access), never through a symbolic link, and only
 * as a regular file (EINVAL otherwise). */
static int open_lock_file(int dir, const char *name, int *fd)
{
    if ((*fd = zc_os_open_at(dir, name, ZC_OPEN_WRITE | ZC_OPEN_NOFOLLOW, 0)) < 0)
        return ZC_ERR_IO;
    zc_file_info info;
    int known = zc_os_fstat(*fd, &info) == 0;
    if (known && info.kind == ZC_FILE_REGULAR)
        return ZC_OK;
    int e = known ? EINVAL : errno;
    zc_os_close(*fd);
    *fd = -1;
    errno = e;
    return ZC_ERR_IO;
}

/* Create the lock file `name` in `dir`, with write permission as the directory `like` (in
 * `dir`) has: written as a temporary file with its final permissions and linked into place,
 * so no one ever opens it with the creator's umask. ZC_OK with *fd (also when another process
 * created it first), or an error. */
static int create_lock_file(int dir, const char *name, const char *like, int *fd)
{
    zc_at at = {dir, 0, name};
    char tmp[ZC_KEY_LOCK_PATH_MAX];
    int t, st = zc_temp_create(&at, tmp, sizeof tmp, &t);
    if (st != ZC_OK)
        return st;
    zc_os_share_like_dir(t, dir, like, 0600);
    int linked = zc_os_link_at(dir, tmp, dir, name) == 0, e = errno;
    zc_os_unlink_at(dir, tmp);
    if (linked) {
        zc_temp_unlock(t);
        *fd = t;
        return ZC_OK;
    }
    zc_os_close(t);
    if (e != EEXIST) {
        /* No hard links here: create it in place (never through a symlink), then set its
         * permissions. */
        if ((*fd = zc_os_open_at(dir, name, ZC_OPEN_CREATE, 0600)) >= 0) {
            zc_os_share_like_dir(*fd, dir, like, 0600);
            return ZC_OK;
        }
        if (errno != EEXIST)
            return ZC_ERR_IO;
    }
    /* Another process created it first. */
    return open_lock_file(dir, name, fd);
}

/* zc_key_locks_open's answer that the lock file beside the hierarchy cannot be made. */
#define NOT_BESIDE 1

/* The length of the parent of `path`'s first `n` characters, 0 at the file system's root. */
static size_t parent_length(const char *path, size_t n)
{
    size_t top = zc_os_root_length(path), i = n;
    if (n <= top)
        return 0;
    while (i > top && !zc_os_is_sep(path[i - 1]))
        i--;
    return i > top ? i - 1 : top;
}

/* Whether the directory `path`'s first `n` characters name holds a Zarr group's metadata. */
static int is_group(const char *path, size_t n)
{
    static const char *const docs[] = {"zarr.json", ".zgroup"};
    char doc[ZC_KEY_LOCK_PATH_MAX];
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        const char *sep = zc_os_is_sep(path[n - 1]) ? "" : "/";
        zc_file_info info;
        snprintf(doc, sizeof doc, "%.*s%s%s", (int)n, path, sep, docs[i]);
        if (zc_os_stat_at(ZC_OS_CWD, doc, 0, &info) == 0 && info.kind == ZC_FILE_REGULAR)
            return 1;
    }
    return 0;
}

/* Open (or create) the lock file beside the hierarchy of the existing directory `node_dir`
 * (zc_key_lock.h): ZC_OK, NOT_BESIDE when it cannot be made there, or an error. */
static int open_beside(zc_key_locks *l, const zc_root *root, const char *node_dir)
{
    char real[4096], real_root[4096];
    size_t root_len = 0;
    if (zc_os_real_path(node_dir, real, sizeof real) != 0)
        return errno == ENAMETOOLONG ? ZC_ERR_SIZE : ZC_ERR_IO;
    if (root->confined) {
        /* Refuse a node whose real path is not below the root's (a symbolic link out). */
        char given[4096];
        size_t n = strlen(node_dir) < root->skip ? strlen(node_dir) : root->skip - 1;
        memcpy(given, node_dir, n);
        given[n] = '\0';
        if (zc_os_real_path(given, real_root, sizeof real_root) != 0)
            return ZC_ERR_IO;
        root_len = strlen(real_root);
        if (zc_os_is_sep(real_root[root_len - 1]))
            root_len--; /* the file system's root */
        if (strncmp(real, real_root, root_len) != 0 ||
            (real[root_len] != '\0' && !zc_os_is_sep(real[root_len])))
            return ZC_ERR_OUTSIDE;
    }
    size_t end = strlen(real), up;
    while ((up = parent_length(real, end)) > 0 && is_group(real, up))
        end = up;
    size_t above = parent_length(real, end);
    if (above == 0)
        return NOT_BESIDE;
    /* The hierarchy's top, `real` up to `end`, and the directory above it. */
    const char *top_name = real + above + (zc_os_is_sep(real[above]) ? 1 : 0);
    size_t top_len = (size_t)(real + end - top_name);
    if (snprintf(l->file, sizeof l->file, "%.*s%s.%.*s%s", (int)above, real,
                 zc_os_is_sep(real[above - 1]) ? "" : "/", (int)top_len, top_name,
                 ZC_KEY_LOCK_FILE) >= (int)sizeof l->file)
        return ZC_ERR_SIZE;
    snprintf(l->node, sizeof l->node, "%s%s", real + end + (real[end] ? 1 : 0),
             real[end] ? "/" : "");
    for (char *c = l->node; *c; c++)
        if (zc_os_is_sep(*c))
            *c = '/'; /* hashed as keys are written, whatever the system */
    char top[4096];
    memcpy(top, top_name, top_len);
    top[top_len] = '\0';
    real[end] = '\0';
    zc_file_info top_info, above_info;
    if (zc_os_stat_at(ZC_OS_CWD, real, 0, &top_info) != 0)
        return ZC_ERR_IO;
    real[above] = '\0';
    if (zc_os_stat_at(ZC_OS_CWD, real, 0, &above_info) != 0)
        return ZC_ERR_IO;
    if (top_info.dev != above_info.dev)
        return NOT_BESIDE; /* a mount point: what is above may not be shared */
    /* Below a confined store's root, the directory is opened beneath the root. */
    int dir = above > root_len && root->confined
                  ? zc_os_open_beneath(root->fd, real + root_len + 1, DIR_OPEN, 0)
                  : zc_os_open_at(ZC_OS_CWD, real, DIR_OPEN, 0);
    if (dir < 0)
        return errno == EXDEV && root->confined ? ZC_ERR_OUTSIDE : ZC_ERR_IO;
    const char *name = zc_os_last_sep(l->file) + 1;
    int st = open_lock_file(dir, name, &l->fd);
    if (st == ZC_ERR_IO && errno == ENOENT) {
        st = create_lock_file(dir, name, top, &l->fd);
        if (st == ZC_ERR_IO && (errno == EACCES || errno == EPERM || errno == EROFS))
            st = NOT_BESIDE;
    }
    int e = errno;
    zc_os_close(dir);
    errno = e;
    return st;
}

int zc_key_locks_open(zc_key_locks *l, const zc_root *root, const char *node_dir)
{
    size_t len = strlen(node_dir);
    l->fd = -1;
    l->skip = len + 1;
    l->node[0] = '\0';
    if (snprintf(l->file, sizeof l->file, "%s/%s", node_dir, ZC_KEY_LOCK_FILE) >=
        (int)sizeof l->file)
        return ZC_ERR_SIZE;
    int dir, st = zc_fs_open(root, node_dir, DIR_OPEN, 0, &dir);
    if (st == ZC_ERR_IO && errno == ENOENT && (st = zc_fs_mkdirs(root, node_dir)) == ZC_OK)
        st = zc_fs_open(root, node_dir, DIR_OPEN, 0, &dir);
    if (st != ZC_OK)
        return st;
    /* A lock file of the node's own (an older version's, or made as below) decides. */
    st = open_lock_file(dir, ZC_KEY_LOCK_FILE, &l->fd);
    if (st == ZC_ERR_IO && errno == ENOENT) {
        char own[ZC_KEY_LOCK_PATH_MAX];
        memcpy(own, l->file, sizeof own);
        if ((st = open_beside(l, root, node_dir)) == NOT_BESIDE) {
            memcpy(l->file, own, sizeof own);
            l->node[0] = '\0';
            st = create_lock_file(dir, ZC_KEY_LOCK_FILE, ".", &l->fd);
        }
    }
    int e = errno;
    zc_os_close(dir);
    errno = e;
    return st == ZC_ERR_IO ? ZC_ERR_LOCK : st;
}

void zc_key_locks_file(const zc_root *root, const char *node_dir, char *file, size_t cap)
{
    int e = errno;
    zc_key_locks l;
    zc_key_locks_open(&l, root, node_dir);
    zc_key_locks_close(&l);
    snprintf(file, cap, "%s", l.file);
    errno = e;
}

int zc_key_locks_open_once(zc_key_locks *l, const zc_root *root, const char *node_dir)
{
    return l->fd >= 0 || node_dir[0] == '\0' ? ZC_OK : zc_key_locks_open(l, root, node_dir);
}

void zc_key_locks_close(zc_key_locks *l)
{
    if (l->fd >= 0)
        zc_os_close(l->fd);
    l->fd = -1;
}

int zc_file_lock(const zc_root *root, const char *path, int *fd)
{
    for (;;) {
        /* Write access: an exclusive POSIX lock needs it (so does flock on NFS). */
        int st = zc_fs_open(root, path, ZC_OPEN_WRITE, 0, fd);
        if (st != ZC_OK)
            return st;
        if (zc_os_lock(*fd, ZC_LOCK_WHOLE, 1, 1) != 1) {
            int e = errno;
            zc_os_close(*fd);
            *fd = -1;
            errno = e;
            return ZC_ERR_IO;
        }
        zc_file_info held, named;
        if (zc_os_fstat(*fd, &held) == 0 && zc_fs_stat(root, path, &named, 1) == ZC_OK &&
            held.dev == named.dev && held.ino == named.ino)
            return ZC_OK;
        /* A new version was renamed over the one locked (or it was removed): lock that. */
        zc_file_unlock(*fd);
    }
}

void zc_file_unlock(int fd)
{
    /* Unlocked explicitly: a child forked meanwhile shares the descriptor. */
    zc_os_unlock(fd, ZC_LOCK_WHOLE);
    zc_os_close(fd);
}

/* The byte of the lock file that stands for `path`: 32 bits of the SHA-256 of its key below
 * the top of its hierarchy. */
static uint64_t key_byte(const zc_key_locks *l, const char *path)
{
    char key[sizeof l->node + ZC_KEY_LOCK_PATH_MAX];
    snprintf(key, sizeof key, "%s%s", l->node, strlen(path) > l->skip ? path + l->skip : path);
    unsigned char digest[32];
    zc_sha256(key, strlen(key), digest);
    return (uint64_t)digest[0] << 24 | (uint64_t)digest[1] << 16 | (uint64_t)digest[2] << 8 |
           digest[3];
}

uint64_t zc_key_lock_byte(const zc_key_locks *l, const char *path)
{
    return l->fd < 0 ? 0 : key_byte(l, path);
}

int zc_key_lock_at(const zc_key_locks *l, uint64_t byte)
{
    if (l->fd < 0)
        return ZC_OK;
    return zc_os_lock(l->fd, byte, 1, 1) == 1 ? ZC_OK : ZC_ERR_LOCK;
}

int zc_key_unlock_at(const zc_key_locks *l, uint64_t byte)
{
    if (l->fd < 0)
        return ZC_OK;
    return zc_os_unlock(l->fd, byte) == 0 ? ZC_OK : ZC_ERR_LOCK;
}

int zc_key_lock(const zc_key_locks *l, const char *path)
{
    return zc_key_lock_at(l, zc_key_lock_byte(l, path));
}

int zc_key_unlock(const zc_key_locks *l, const char *path)
{
    return zc_key_unlock_at(l, zc_key_lock_byte(l, path));
}
