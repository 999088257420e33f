# cython: language_level=3
"""Bindings for csrc/jobs/zc_shard_batch.c: a shard's inner chunks decoded or encoded as one
GIL-free job that several threads work through together."""
cimport cython
cimport numpy as cnp
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_FillInfo, PyBuffer_Release, PyObject_GetBuffer
from libc.stdlib cimport calloc, free, realloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

import numpy as np

from zarrcore._native.cache cimport (
    ZC_SHM_TAG_MAX, ChunkCache, version_of_digest, zc_shm_cache_set_tag,
)
from zarrcore._native.indexing cimport one_block
from zarrcore._native.jobs cimport (
    check_read_into, set_up_job, set_up_one_block, stop_claims, zc_chunk_cache_entry,
    zc_chunk_cache_find, zc_chunk_cache_unpin, zc_chunk_version, zc_piece, zc_shard_job,
    zc_shard_job_list, zc_shard_job_prepare, zc_shard_read_one, zc_shard_read_worker,
    zc_shard_task_chunk,
    zc_shard_write_worker,
)
from zarrcore._native.status cimport ZC_MAX_NDIM, ZC_OK

from . import memory as _memory
from .status import status_error

cnp.import_array()


cdef void free_job_arrays(zc_shard_job *j):
    """Free what a job's owner allocated: its source table and its encoded outputs."""
    cdef int64_t t
    free(<void *>j.src)
    free(<void *>j.src_len)
    if j.out != NULL:
        for t in range(j.ntasks):
            free(j.out[t])
    free(j.out)
    free(j.out_len)


cdef class EncodedChunk:
    """Bytes a compiled job encoded (malloc'ed), exposed read-only by the buffer protocol and
    freed with the object."""

    cdef unsigned char *data
    cdef Py_ssize_t size

    def __cinit__(self):
        self.data = NULL
        self.size = 0

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        PyBuffer_FillInfo(buffer, self, self.data, self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer *buffer):
        pass

    def __dealloc__(self):
        free(self.data)


cdef object take_encoded(zc_shard_job *j, int64_t t):
    """Task t's encoding, taken from the job: a read-only memoryview of the job's own output
    (handed over without a copy), or None when all fill."""
    if j.out[t] == NULL:
        return None
    cdef EncodedChunk chunk = EncodedChunk.__new__(EncodedChunk)
    # Give back the room the encoding did not use (compressed chunks need little).
    cdef void *shrunk = realloc(j.out[t], j.out_len[t] if j.out_len[t] else 1)
    chunk.data = <unsigned char *>(shrunk if shrunk != NULL else j.out[t])
    chunk.size = j.out_len[t]
    j.out[t] = NULL
    return memoryview(chunk)


cdef class _CompiledJob:
    """The compiled job ShardJob and ChunkWaves hand to the pool's workers."""

    cdef zc_shard_job j
    cdef bint data_writable

    def __cinit__(self):
        memset(&self.j, 0, sizeof(zc_shard_job))

    def work_read(self):
        check_read_into(self.data_writable)
        with nogil:
            zc_shard_read_worker(&self.j)

    def work_write(self):
        with nogil:
            zc_shard_write_worker(&self.j)

    def stop(self):
        """Let the workers take no further chunk: those in progress are finished (Ctrl-C)."""
        stop_claims(&self.j.failed)


cdef class ShardJob(_CompiledJob):
    """Decode (`work_read`) or encode (`work_write`) the inner chunks a selection touches.

    `settings` is the inner chain's CodecChain.native_form(); `src` holds, per C-order inner
    chunk, its encoded bytes or None; `pieces` are the selection's per-axis pieces and `data`
    the caller's array (with `data_strides` per shard axis, 0 for integer-indexed ones).
    """

    cdef Py_buffer *views
    cdef Py_ssize_t nviews
    cdef object _keep

    def __cinit__(self):
        self.views = NULL
        self.nviews = 0

    def __init__(self, settings, chunk_shape, grid, src, plans, data, write_empty_chunks=False):
        keep = set_up_job(&self.j, settings, chunk_shape, plans, <cnp.ndarray?>data,
                          write_empty_chunks)
        for d in range(self.j.ndim):
            self.j.grid[d] = grid[d]
        self._keep = (*keep, data, src)
        self.data_writable = data.flags.writeable
        self._hold(src)
        if zc_shard_job_prepare(&self.j) != ZC_OK:
            raise ValueError("invalid shard job")
        self.j.out = <unsigned char **>calloc(max(self.j.ntasks, 1), sizeof(unsigned char *))
        self.j.out_len = <size_t *>calloc(max(self.j.ntasks, 1), sizeof(size_t))
        if self.j.out == NULL or self.j.out_len == NULL:
            raise MemoryError("shard job")

    cdef _hold(self, src):
        """Pin every encoded inner chunk's buffer for the job's lifetime."""
        cdef Py_ssize_t n = len(src)
        cdef const unsigned char **ptrs = <const unsigned char **>calloc(max(n, 1), sizeof(unsigned char *))
        cdef size_t *lens = <size_t *>calloc(max(n, 1), sizeof(size_t))
        self.views = <Py_buffer *>calloc(max(n, 1), sizeof(Py_buffer))
        self.j.src, self.j.src_len = ptrs, lens
        if self.views == NULL or ptrs == NULL or lens == NULL:
            raise MemoryError("shard job")
        for i, blob in enumerate(src):
            if blob is None:
                continue
            PyObject_GetBuffer(blob, &self.views[i], PyBUF_SIMPLE)
            self.nviews = i + 1
            # A zero-length encoding still counts as stored: point it somewhere non-NULL.
            ptrs[i] = <const unsigned char *>self.views[i].buf if self.views[i].len else <const unsigned char *>self.j.fill
            lens[i] = self.views[i].len

    def __dealloc__(self):
        for i in range(self.nviews):
            if self.j.src[i] != NULL:  # set once the buffer is held
                PyBuffer_Release(&self.views[i])
        free(self.views)
        free_job_arrays(&self.j)

    @property
    def ntasks(self):
        return self.j.ntasks

    def encoded(self):
        """(inner chunk index, its encoding as take_encoded gives it) per task, after
        `work_write`."""
        return [(zc_shard_task_chunk(&self.j, t), take_encoded(&self.j, t))
                for t in range(self.j.ntasks)]

    def error(self):
        """None, or (exception, inner chunk index) of the first failure."""
        if not self.j.failed:
            return None
        exc = status_error(self.j.status)
        return exc, zc_shard_task_chunk(&self.j, self.j.failed_task)


# (No tp_clear: clearing a garbage cycle could drop `_cache` before the deallocation unpins
# the entries in it.)
@cython.no_gc_clear
cdef class ChunkWaves(_CompiledJob):
    """The chunks a selection touches, whose encoded bytes arrive piece by piece (from
    Store.get_many), decoded (`work_read`) or encoded (`work_write`) by compiled workers in
    waves: `add` points tasks at their bytes in an arrived buffer, `run` lists the tasks the
    next wave takes.

    Task t is the t-th chunk of the C-order product of the selection's per-axis pieces
    (`plans`; int arrays among them are gathered), or for a read of `points` (point_start,
    local, out_index, None: see zc_listing) the t-th group of points; `grid` bounds the chunk
    indices; `data` is the caller's array (1-d for points). A task never
    given bytes reads as fill (its chunk is not stored) and is encoded from fill.

    Reads through `cache` (a ChunkCache of whole chunks): `lookup` pins a task's chunk cached
    at a version, which the task then copies out of (its bytes not needed); `keep` has the
    task decode its bytes into a new entry at a version. A version here is the 32-byte digest
    of the stored object's version that its store gave (equal digests: equal bytes). In a
    cache shared between processes an entry may also keep that version itself as a tag
    (`share_version`, `shared_version`), for processes that never read the chunk.
    """

    cdef list _pinned, _held
    cdef object _keep, _listed
    cdef ChunkCache _cache
    cdef int64_t *_keys
    cdef zc_chunk_version *_versions
    cdef unsigned char *_versioned
    cdef zc_chunk_cache_entry **_pins
    cdef zc_piece _block[ZC_MAX_NDIM]  # (the pieces of a job OneBlocks made)

    def __cinit__(self):
        self._keys = NULL
        self._versions = NULL
        self._versioned = NULL
        self._pins = NULL

    def __init__(self, settings, chunk_shape, grid, plans, data, write_empty_chunks=False,
                 points=None, ChunkCache cache=None):
        keep = set_up_job(&self.j, settings, chunk_shape, plans, <cnp.ndarray?>data,
                          write_empty_chunks, points)
        for d in range(self.j.ndim):
            self.j.grid[d] = grid[d]
        self.j.src_by_task = 1
        self._keep = (*keep, data)
        self.data_writable = data.flags.writeable
        self._prepare(cache)

    cdef int _prepare(self, ChunkCache cache) except -1:
        """Validate the job set up in `j` and make its tables (with `cache`, the cache's)."""
        self._pinned = []
        self._held = []
        if zc_shard_job_prepare(&self.j) != ZC_OK:
            raise ValueError("invalid chunk job")
        cdef size_t n = max(self.j.ntasks, 1)
        self.j.src = <const unsigned char **>calloc(n, sizeof(unsigned char *))
        self.j.src_len = <size_t *>calloc(n, sizeof(size_t))
        self.j.out = <unsigned char **>calloc(n, sizeof(unsigned char *))
        self.j.out_len = <size_t *>calloc(n, sizeof(size_t))
        if self.j.src == NULL or self.j.src_len == NULL or self.j.out == NULL or self.j.out_len == NULL:
            raise MemoryError("chunk job")
        if cache is None:
            return 0
        self._cache = cache
        self._keys = <int64_t *>calloc(n * (self.j.ndim + 1), sizeof(int64_t))
        self._versions = <zc_chunk_version *>calloc(n, sizeof(zc_chunk_version))
        self._versioned = <unsigned char *>calloc(n, 1)
        self._pins = <zc_chunk_cache_entry **>calloc(n, sizeof(zc_chunk_cache_entry *))
        if (self._keys == NULL or self._versions == NULL or self._versioned == NULL
                or self._pins == NULL):
            raise MemoryError("chunk job")
        self.j.cache = cache.chunks
        self.j.cache_keys = self._keys
        self.j.cache_versions = self._versions
        self.j.versioned = self._versioned
        self.j.pins = self._pins
        self.j.cache_key_len = self.j.ndim + 1
        return 0

    def __dealloc__(self):
        cdef int64_t t
        if self._pins != NULL:
            for t in range(self.j.ntasks):
                zc_chunk_cache_unpin(self._pins[t])
        free(self._pins)
        free(self._keys)
        free(self._versions)
        free(self._versioned)
        free_job_arrays(&self.j)

    cdef int _set(self, int64_t task, coords, const unsigned char[::1] version) except -1:
        """Task `task`'s cache key (its chunk's grid index `coords`, then 0) and version."""
        if task < 0 or task >= self.j.ntasks:
            raise ValueError("task out of range")
        self._key_version(coords, version, self._keys + task * (self.j.ndim + 1),
                          &self._versions[task])
        zc_chunk_cache_unpin(self._pins[task])
        self._pins[task] = NULL
        self._versioned[task] = 0
        return 0

    cdef int _key_version(self, coords, const unsigned char[::1] version, int64_t *key,
                          zc_chunk_version *v) except -1:
        """Into `key` and `v`: the cache key of the chunk at grid index `coords` (then 0) and
        the version whose 32-byte digest is `version` (None: `v` is left alone)."""
        if self._cache is None:
            raise ValueError("a job without a cache")
        if len(coords) != self.j.ndim or (version is not None and version.shape[0] != 32):
            raise ValueError("a grid index per axis and a 32-byte version")
        for d in range(self.j.ndim):
            key[d] = coords[d]
        key[self.j.ndim] = 0
        if version is not None:
            version_of_digest(&version[0], v)
        return 0

    def share_version(self, coords, version, const unsigned char[::1] tag):
        """Keep `tag` (the store's version, at most 96 bytes: ZC_SHM_TAG_MAX) with the shared
        entry of the chunk at grid index `coords` at `version` (its digest), where other
        processes find it (`shared_version`): True when kept, False when the cache is not
        shared, there is no such entry or the tag is too long."""
        cdef int64_t key[ZC_MAX_NDIM + 1]
        cdef zc_chunk_version v
        self._key_version(coords, version, key, &v)
        if self._cache.shared == NULL or tag.shape[0] == 0 or tag.shape[0] > ZC_SHM_TAG_MAX:
            return False
        return zc_shm_cache_set_tag(self._cache.shared, key, &v, &tag[0], tag.shape[0]) == 1

    def shared_version(self, coords):
        """The tag kept with the shared entry of the chunk at grid index `coords` (bytes),
        or None."""
        if self._cache is None or self._cache.shared == NULL:
            return None
        return self._cache.shared_tag((*coords, 0))

    def lookup(self, int64_t task, coords, version):
        """Pin task `task`'s chunk (grid index `coords`) cached at `version` (a hit), which
        the task then copies out of; False when there is none (a miss; an entry of another
        version is dropped as stale)."""
        self._set(task, coords, version)
        self._pins[task] = zc_chunk_cache_find(
            self._cache.chunks, self._keys + task * (self.j.ndim + 1), &self._versions[task])
        return self._pins[task] != NULL

    def keep(self, int64_t task, coords, version):
        """Decode task `task`'s bytes (given by `add_whole`) into a new cache entry of its
        chunk (grid index `coords`) at `version`."""
        self._set(task, coords, version)
        self._versioned[task] = 1

    @property
    def ntasks(self):
        return self.j.ntasks

    def add(self, buffer, const int64_t[::1] tasks, const int64_t[::1] offsets,
            const int64_t[::1] lengths):
        """Point task tasks[k] at lengths[k] bytes from offsets[k] in `buffer` (kept alive
        with the job). Returns -1, or the first k whose span is not inside the buffer (no
        task is set then)."""
        view = memoryview(buffer).cast("B")
        cdef const unsigned char[::1] v = view
        cdef Py_ssize_t size = v.shape[0], k, n = tasks.shape[0]
        if offsets.shape[0] != n or lengths.shape[0] != n:
            raise ValueError("one offset and length per task")
        # A zero-length encoding still counts as stored: point it somewhere non-NULL.
        cdef const unsigned char *base = &v[0] if size else self.j.fill
        cdef unsigned char **src = <unsigned char **>self.j.src
        cdef size_t *src_len = <size_t *>self.j.src_len
        for k in range(n):
            if (tasks[k] < 0 or tasks[k] >= self.j.ntasks or offsets[k] < 0 or lengths[k] < 0
                    or offsets[k] > size or lengths[k] > size - offsets[k]):
                return k
        self._pinned.append(view)
        for k in range(n):
            src[tasks[k]] = <unsigned char *>base + offsets[k]
            src_len[tasks[k]] = lengths[k]
        return -1

    def add_whole(self, int64_t task, buffer):
        """Point task `task` at the whole of `buffer` (kept alive with the job): `add` of one
        task, without the arrays."""
        if task < 0 or task >= self.j.ntasks:
            raise ValueError("task out of range")
        view = memoryview(buffer).cast("B")
        cdef const unsigned char[::1] v = view
        self._pinned.append(view)
        # A zero-length encoding still counts as stored: point it somewhere non-NULL.
        cdef const unsigned char *base = &v[0] if v.shape[0] else self.j.fill
        (<unsigned char **>self.j.src)[task] = <unsigned char *>base
        (<size_t *>self.j.src_len)[task] = v.shape[0]

    def run(self, tasks):
        """List the tasks (int64 array, or a sequence of ints) the next work_read /
        work_write calls take; their count. The buffers added so far are let go after the
        wave (`release`): each wave's tasks are those whose bytes arrived for it."""
        self._held, self._pinned = self._pinned, []
        listed = np.ascontiguousarray(tasks, dtype=np.int64)
        cdef const int64_t[::1] t = listed
        if zc_shard_job_list(&self.j, &t[0] if t.shape[0] else NULL, t.shape[0]) != ZC_OK:
            raise ValueError("task out of range")
        self._listed = listed
        return t.shape[0]

    def release(self):
        """Let go of the buffers (and cache entries) of the wave run last (its work is done):
        a read holds the bytes of one wave at a time."""
        cdef Py_ssize_t k
        cdef const int64_t[::1] t
        self._held = []
        if self._pins == NULL or self._listed is None:
            return
        t = self._listed
        for k in range(t.shape[0]):
            zc_chunk_cache_unpin(self._pins[t[k]])
            self._pins[t[k]] = NULL

    def read_one(self, int64_t task, buffer):
        """Decode task `task` from `buffer` (its encoded bytes; None: not stored, read as
        fill) on the calling thread, GIL released, with no wave: each chunk as soon as its
        bytes arrive, on the thread they arrived on, several at once. The bytes are not
        kept. None, or the exception of its failure."""
        if task < 0 or task >= self.j.ntasks:
            raise ValueError("task out of range")
        check_read_into(self.data_writable)
        cdef const unsigned char[::1] v
        cdef unsigned char **src = <unsigned char **>self.j.src
        cdef size_t *src_len = <size_t *>self.j.src_len
        cdef int st
        if buffer is not None:
            v = memoryview(buffer).cast("B")
            # A zero-length encoding still counts as stored: point it somewhere non-NULL.
            src[task] = <unsigned char *>(&v[0] if v.shape[0] else self.j.fill)
            src_len[task] = v.shape[0]
        try:
            with nogil:
                st = zc_shard_read_one(&self.j, task)
        finally:
            src[task] = NULL
            src_len[task] = 0
            if self._pins != NULL:
                zc_chunk_cache_unpin(self._pins[task])
                self._pins[task] = NULL
        return None if st == ZC_OK else status_error(st)

    def read_here(self):
        """Decode every task on the calling thread, GIL released, and let go of the bytes
        and cache entries: a one-block read (OneBlocks) in one call. None, or (exception,
        task) of the first failure."""
        cdef int64_t t
        check_read_into(self.data_writable)
        with nogil:
            zc_shard_read_worker(&self.j)
        self._pinned = []
        if self._pins != NULL:
            for t in range(self.j.ntasks):
                zc_chunk_cache_unpin(self._pins[t])
                self._pins[t] = NULL
        return self.error()

    def encoded(self):
        """Per task of the last wave (after `work_write`): its encoding (a read-only
        memoryview of the job's own output, handed over without a copy), or None when all
        fill."""
        return [take_encoded(&self.j, t) for t in self._listed.tolist()]

    def error(self):
        """None, or (exception, task) of the first failure."""
        if not self.j.failed:
            return None
        return status_error(self.j.status), self.j.failed_task


cdef class OneBlocks:
    """The template of the ChunkWaves jobs that read `array[selection]` in one block (a chunk,
    or an inner chunk) of an array of `array_shape` in blocks of `chunk_shape` whose bytes are
    fetched (`settings`: the block chain's CodecChain.native_form()), through `cache` when
    given: `job` makes one per read, with no Python object per axis."""

    cdef zc_shard_job j
    cdef int64_t array_shape[ZC_MAX_NDIM]
    cdef object _keep, _dtype
    cdef ChunkCache _cache

    def __cinit__(self):
        memset(&self.j, 0, sizeof(zc_shard_job))

    def __init__(self, settings, array_shape, chunk_shape, dtype, ChunkCache cache=None):
        self._keep = set_up_job(&self.j, settings, chunk_shape, None, <cnp.ndarray>None, False)
        if len(array_shape) != self.j.ndim:
            raise ValueError("one length per axis")
        for d in range(self.j.ndim):
            self.array_shape[d] = array_shape[d]
            self.j.grid[d] = -(-array_shape[d] // chunk_shape[d])
        self.j.src_by_task = 1
        self._dtype = dtype
        self._cache = cache

    def job(self, selection, bint fortran):
        """(job, out, index, scalar) for `array[selection]` when `selection` is ints and
        slices that fall in one block (_indexing.one_block): the job of one task, which
        decodes that block (grid index `index`, a tuple) into `out`, a new array (F order when
        `fortran`), the result unless `scalar` (then out[()]); None for any other selection."""
        cdef int64_t first[ZC_MAX_NDIM]
        cdef int64_t step[ZC_MAX_NDIM]
        cdef int64_t count[ZC_MAX_NDIM]
        cdef int result_axis[ZC_MAX_NDIM + 1]
        cdef int d, ndim = self.j.ndim
        shape = one_block(selection, ndim, self.array_shape, self.j.chunk_shape, first, step,
                          count, result_axis)
        if shape is None:
            return None
        out = _memory.empty(shape[::-1], self._dtype).T if fortran else _memory.empty(
            shape, self._dtype)
        cdef ChunkWaves job = ChunkWaves.__new__(ChunkWaves)
        job.j = self.j
        set_up_one_block(job._block, ndim, self.j.chunk_shape, first, step, count, result_axis,
                         out, job.j.piece_offset, job.j.npieces, job.j.data_strides)
        job.j.pieces = job._block
        job.j.data = <char *>cnp.PyArray_DATA(out)
        job._keep = (self, out)  # (the template holds the chain's and the fill's buffers)
        job.data_writable = True
        job._prepare(self._cache)
        index = tuple([first[d] // self.j.chunk_shape[d] for d in range(ndim)])
        return job, out, index, result_axis[ndim] == -2
