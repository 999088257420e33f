# cython: language_level=3
"""Bindings for csrc/cache/zc_chunk_cache.c: the decoded-chunk cache that an Array's compiled reads
(ChunkBatch, ShardBatch) share, the same cache a native handle keeps (zc_array.c); and for
csrc/cache/zc_chunk_version.c, which decides when bytes may be cached (`version_settled`)."""
import operator
import os
import sys
from typing import NamedTuple

from libc.errno cimport ENOSYS, errno
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

from zarrcore._native.jobs cimport zc_chunk_cache, zc_chunk_version
from zarrcore._native.status cimport ZC_MAX_NDIM

from ..errors import SettingTypeError, SettingValueError

cdef extern from "cache/zc_chunk_cache.h":
    ctypedef struct zc_chunk_cache_stats:
        uint64_t hits, misses, inserts, evictions, stale
        size_t used, capacity
        int64_t entries
    zc_chunk_cache *zc_chunk_cache_new(size_t capacity, size_t chunk_bytes, int key_len)
    void zc_chunk_cache_free(zc_chunk_cache *c)
    void zc_chunk_cache_get_stats(zc_chunk_cache *c, zc_chunk_cache_stats *out)
    void zc_chunk_cache_share(zc_chunk_cache *c, zc_shm_cache *shared)
    uint64_t zc_chunk_cache_content(const zc_chunk_cache *c, const void *data, size_t len)

cdef extern from "cache/zc_chunk_version.h":
    int zc_chunk_version_settled(const zc_chunk_version *v)

cdef extern from "cache/zc_shm_cache.h":
    zc_shm_cache *zc_shm_cache_create(size_t capacity, size_t chunk_bytes, int key_len,
                                      uint64_t nonce, int *status)
    zc_shm_cache *zc_shm_cache_attach(const char *path, size_t chunk_bytes, int key_len,
                                      uint64_t nonce, int *status)
    void zc_shm_cache_free(zc_shm_cache *s)
    int zc_shm_cache_fd(const zc_shm_cache *s)
    void zc_shm_cache_stop_mid_write(zc_shm_cache *s, long pid)

cdef extern from "cache/zc_siphash.h":
    ctypedef struct zc_siphash_key:
        uint64_t k0, k1
    uint64_t zc_siphash_tree(const zc_siphash_key *key, const void *data, size_t len)
    uint64_t zc_siphash_tree_portable(const zc_siphash_key *key, const void *data, size_t len)

# Of a sharded array's budget, this share keeps checked shard indexes (as zc_array.c's), so
# that reads served from the cache need not read them.
INDEX_SHARE = 8
# The largest budget: the cache counts its bytes in an int64 (zc_chunk_cache.c).
CACHE_BYTES_MAX = 2**63 - 1


def version_settled(int64_t ctime_ns):
    """Whether stored bytes last changed at `ctime_ns` (nanoseconds since the epoch) are
    settled, so that a version naming them by their file's identity may be cached: the one
    rule of every cache (zc_chunk_version_settled)."""
    cdef zc_chunk_version v
    memset(&v, 0, sizeof(v))
    v.ctime_ns = ctime_ns
    return bool(zc_chunk_version_settled(&v))


def check_budget(budget, str setting, chunk_bytes=None, str chunk="chunk"):
    """`budget` as a decoded-chunk cache's bytes, by the one rule for every cache (an array's,
    a native handle's): an integer, 0 (no cache) or from one `chunk` of `chunk_bytes` (when
    known) to CACHE_BYTES_MAX. ValueError naming `setting` otherwise (SettingTypeError, a
    TypeError too, for what is no integer)."""
    try:
        if isinstance(budget, bool):
            raise TypeError
        budget = operator.index(budget)
    except TypeError:
        raise SettingTypeError(f"{setting} must be an integer number of bytes, not "
                               f"{budget!r}") from None
    if budget and chunk_bytes is not None and budget < chunk_bytes:
        raise ValueError(f"{setting} must be 0 (no cache) or hold at least one {chunk} of "
                         f"{chunk_bytes} bytes, not {budget}")
    if budget < 0 or budget > CACHE_BYTES_MAX:
        raise ValueError(f"{setting} must be from 0 (no cache) to {CACHE_BYTES_MAX} (2**63 - 1) "
                         f"bytes, not {budget}")
    return budget


def _content_hash_under(uint64_t k0, uint64_t k1, const unsigned char[::1] data,
                        bint portable=False):
    """For tests: the hash a cache whose secret key is (k0, k1) compares `data` by
    (csrc/cache/zc_siphash.h), through the CPU's vector lanes where it has them, or always through
    the plain C ones (`portable`)."""
    cdef zc_siphash_key key
    key.k0, key.k1 = k0, k1
    cdef const void *p = &data[0] if data.shape[0] else NULL
    if portable:
        return zc_siphash_tree_portable(&key, p, data.shape[0])
    return zc_siphash_tree(&key, p, data.shape[0])


class SharedCacheRef(NamedTuple):
    """Where a process finds a shared cache another made (ChunkCache.shared_ref): its
    creator's process id and descriptor of it, and the tag it was made with."""
    pid: int
    fd: int
    nonce: int


cdef class ChunkCache:
    """At most `capacity` bytes of decoded chunks (inner chunks when `ninner`, the inner chunks
    per shard, is given) of `chunk_bytes` each, over `ndim` axes, for the reads of one array:
    shared by every thread, each entry served only while the stored object keeps the version
    it was decoded from (csrc/cache/zc_chunk_cache.h: for a file, its identity and the hash of the
    chunk's bytes, which every hit reads, keyed with a secret of this cache's or, shared, of
    its table's).

    With `shared` (True, or the SharedCacheRef of another process's), the chunks' entries are
    kept in memory shared with other processes of the machine, all of them within `capacity`
    (csrc/cache/zc_shm_cache.h): True makes a new table, a reference opens that one, or makes a new
    table where it cannot be opened (its creator has exited, or is on another machine).
    Forked processes share the table they inherit. `shared_ref` says where it is (None when
    not shared). SettingValueError naming `setting` where the system shares no memory so
    (Linux only)."""

    def __cinit__(self):
        self.chunks = self.indexes = NULL
        self.shared = NULL

    def __init__(self, size_t capacity, size_t chunk_bytes, int ndim, ninner=None,
                 shared=None, str setting="shared_cache"):
        if capacity < chunk_bytes:
            raise ValueError(f"a cache of {capacity} bytes holds no chunk of {chunk_bytes}")
        self.capacity = capacity
        self.chunk_bytes, self.key_len = chunk_bytes, ndim + 1
        self.chunks = zc_chunk_cache_new(capacity, chunk_bytes, ndim + 1)
        if self.chunks == NULL:
            raise MemoryError("chunk cache")
        if shared:
            self._share(capacity, chunk_bytes, ndim + 1, shared, setting)
        if ninner is not None and ninner <= capacity // INDEX_SHARE // 16:
            self.indexes = zc_chunk_cache_new(capacity // INDEX_SHARE, 16 * ninner, ndim)
            if self.indexes == NULL:
                raise MemoryError("shard index cache")

    cdef _share(self, size_t capacity, size_t chunk_bytes, int key_len, shared, str setting):
        """Keep the chunks' entries in a shared table: `shared`'s, else a new one."""
        cdef int status = 0, code = 0
        cdef uint64_t tag
        cdef bytes path
        cdef const char *cpath
        if isinstance(shared, SharedCacheRef):
            path = f"/proc/{shared.pid}/fd/{shared.fd}".encode()
            cpath, tag = path, shared.nonce
            self.shared = zc_shm_cache_attach(cpath, chunk_bytes, key_len, tag, &status)
            if self.shared != NULL:
                self.shared_ref = shared
        if self.shared == NULL:
            nonce = int.from_bytes(os.urandom(8), "little")  # (secrets: 6-11 ms to import)
            self.shared = zc_shm_cache_create(capacity, chunk_bytes, key_len, nonce, &status)
            if self.shared == NULL:
                code = errno
                if status == -3:
                    raise MemoryError("shared chunk cache")
                if code == ENOSYS:
                    raise SettingValueError(f"{setting}: no memory shared between processes on "
                                            f"{sys.platform}; a shared cache needs Linux")
                raise SettingValueError(f"{setting}: no shared cache of {capacity} bytes: "
                                        f"{os.strerror(code)}")
            self.shared_ref = SharedCacheRef(os.getpid(), zc_shm_cache_fd(self.shared), nonce)
        zc_chunk_cache_share(self.chunks, self.shared)

    def content_hash(self, const unsigned char[::1] data):
        """For tests: the hash of the stored bytes `data` that a hit compares (the content of
        a file's version), keyed with this cache's secret, or its shared table's."""
        return zc_chunk_cache_content(self.chunks, &data[0] if data.shape[0] else NULL,
                                      data.shape[0])

    def stop_mid_write(self, long pid):
        """For tests: the process `pid` stops itself (SIGSTOP) half way through writing its
        next entry of the shared table (csrc/cache/zc_shm_cache.h)."""
        if self.shared == NULL:
            raise ValueError("not a shared cache")
        zc_shm_cache_stop_mid_write(self.shared, pid)

    cdef int _shared_key(self, key, int64_t *out) except -1:
        """Into `out`: `key`, a key of the shared table (key_len ints)."""
        if self.shared == NULL:
            raise ValueError("not a shared cache")
        if len(key) != self.key_len:
            raise ValueError(f"a key of {self.key_len} values")
        for d in range(self.key_len):
            out[d] = key[d]
        return 0

    def shared_tag(self, key):
        """The tag kept with the shared table's entry of `key` (key_len ints), as bytes; None
        when it has none."""
        cdef int64_t k[ZC_MAX_NDIM + 1]
        cdef unsigned char tag[ZC_SHM_TAG_MAX]
        self._shared_key(key, k)
        cdef size_t n = zc_shm_cache_tag(self.shared, k, tag)
        return tag[:n] if n else None

    def put_shared(self, key, const unsigned char[::1] version, const unsigned char[::1] data,
                   const unsigned char[::1] tag):
        """Keep `data` (at most a chunk's bytes: other things than chunks, a shard's index)
        as the shared table's entry of `key` at `version` (a 32-byte digest), tagged `tag` (at
        most ZC_SHM_TAG_MAX bytes): True when kept and tagged."""
        cdef int64_t k[ZC_MAX_NDIM + 1]
        cdef zc_chunk_version v
        self._shared_key(key, k)
        if (version.shape[0] != 32 or <size_t>data.shape[0] > self.chunk_bytes
                or not 0 < tag.shape[0] <= ZC_SHM_TAG_MAX):
            return False
        version_of_digest(&version[0], &v)
        zc_shm_cache_put_head(self.shared, k, &v, &data[0] if data.shape[0] else NULL,
                              data.shape[0])
        return zc_shm_cache_set_tag(self.shared, k, &v, &tag[0], tag.shape[0]) == 1

    def get_shared(self, key, const unsigned char[::1] version, Py_ssize_t n):
        """The first `n` bytes of the shared table's entry of `key` at `version` (a 32-byte
        digest), as `put_shared` kept them (a bytearray of its own); None when there is none
        (not counted as a miss)."""
        cdef int64_t k[ZC_MAX_NDIM + 1]
        cdef zc_chunk_version v
        self._shared_key(key, k)
        if version.shape[0] != 32 or n < 0 or <size_t>n > self.chunk_bytes:
            return None
        version_of_digest(&version[0], &v)
        out = bytearray(n)
        cdef unsigned char[::1] dst = out
        if not zc_shm_cache_get_head(self.shared, k, &v, &dst[0] if n else NULL, n):
            return None
        return out

    def __dealloc__(self):
        zc_chunk_cache_free(self.chunks)
        zc_chunk_cache_free(self.indexes)
        zc_shm_cache_free(self.shared)

    def info(self):
        """The counters: hits, misses, inserts, evictions, stale (entries dropped because the
        stored object changed), entries, used and capacity (bytes)."""
        cdef zc_chunk_cache_stats st
        zc_chunk_cache_get_stats(self.chunks, &st)
        return {"hits": st.hits, "misses": st.misses, "inserts": st.inserts,
                "evictions": st.evictions, "stale": st.stale, "entries": st.entries,
                "used": st.used, "capacity": st.capacity}
