/* Versions of stored bytes and whether a cached entry is valid; see zc_chunk_version.h. */
#include "cache/zc_chunk_version.h"

#include "os/zc_os.h"
#include "zc_status.h"

int zc_chunk_version_of(const zc_object *o, zc_chunk_version *v)
{
    v->content = 0;
    if (o->blob != NULL) {
        v->dev = v->size = 0;
        v->ino = o->blob->version;
        v->mtime_ns = v->ctime_ns = 0;
        return ZC_OK;
    }
    zc_file_info info;
    if (zc_os_fstat(o->fd, &info) != 0)
        return ZC_ERR_IO;
    v->dev = info.dev;
    v->ino = info.ino;
    v->size = info.size;
    v->mtime_ns = info.mtime_ns;
    v->ctime_ns = info.ctime_ns;
    return ZC_OK;
}

int zc_chunk_version_in(zc_memstore *mem, const char *path, zc_chunk_version *v)
{
    zc_object o = {.fd = -1, .blob = zc_memstore_get(mem, path)};
    if (o.blob == NULL)
        return 0;
    zc_chunk_version_of(&o, v);
    zc_object_close(&o);
    return 1;
}

int zc_chunk_version_same(const zc_chunk_version *a, const zc_chunk_version *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns && a->offset == b->offset &&
           a->nbytes == b->nbytes && a->content == b->content;
}

int zc_chunk_version_settled(const zc_chunk_version *v)
{
    const int64_t t = (int64_t)zc_os_time_ns();
    return v->ctime_ns <= t - ZC_CHUNK_CACHE_SETTLE_NS;
}
