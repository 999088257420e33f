# cython: language_level=3
"""Bindings for csrc/jobs/zc_shard_io.c: sharded reads and writes on a directory or memory store
as one GIL-free batch over every shard and inner chunk a selection touches."""
import os

import numpy as np

cimport cython
cimport numpy as cnp
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset, strncpy

from .cache cimport ChunkCache
from .files cimport FileRoot
from .indexing cimport one_block
from .jobs cimport (
    ZC_SHARD_INDEX_CHECKSUM, ZC_SHARD_INDEX_ENTRY, ZC_SHARD_INDEX_IN_INDEX,
    ZC_SHARD_INDEX_SHORT, ZC_SHARD_IO_PATH_MAX, ZC_SHARD_IO_PREFETCH_MAX, ZC_STREAM_OUT_MIN,
    check_read_into, set_up_chain, set_up_lists, set_up_one_block, set_up_pieces, stop_claims,
    zc_chain,
    zc_piece, zc_shard_io, zc_memstore, zc_shard_io_close_files, zc_shard_io_free, zc_shard_io_prepare,
    zc_shard_io_read_ahead_worker, zc_shard_io_read_worker, zc_shard_io_reads_ahead,
    zc_shard_io_slot_key, zc_shard_io_write_worker,
)
from .status cimport (
    ZC_ERR_CORRUPT, ZC_ERR_IO, ZC_ERR_LOCK, ZC_ERR_NOMEM, ZC_ERR_OVERLAP, ZC_ERR_SIZE, ZC_MAX_NDIM,
    ZC_OK,
)

from . import memory as _memory
from .status import status_error
from ..errors import ChecksumError, ShardIndexError

cnp.import_array()

# The bytes a read asks the system for ahead of its decoding (for tests).
PREFETCH_MAX = ZC_SHARD_IO_PREFETCH_MAX

cdef extern from "files/zc_sha256.h":
    void zc_sha256_hex(const void *data, size_t len, char *hex)

def sha256_hex(data):
    """hashlib.sha256(data).hexdigest() by the C code that places key locks (for tests)."""
    cdef const unsigned char[::1] view = data
    cdef char hex[65]
    zc_sha256_hex(&view[0] if len(data) else NULL, len(data), hex)
    return hex[:64].decode()


cdef class ShardSpec:
    """What stays fixed for one array: geometry, codecs, keys. `batch()` makes a job."""

    cdef zc_shard_io io
    cdef bytes _fill
    cdef int64_t ninner
    cdef tuple grid
    cdef Py_ssize_t head_len
    cdef FileRoot files
    cdef object memory

    def __cinit__(self):
        memset(&self.io, 0, sizeof(zc_shard_io))

    def __init__(self, *, FileRoot root=None, key_head, head_len, sep, lead_sep, lock_dir,
                 array_shape, shard_shape, chunk_shape, index_at_start, index_crc32c, fill=b"",
                 fill_floatsize=0, memory=None, **chain):
        """Shards are files below `root`, or the blobs of `memory` (a MemoryStore's
        zarrcore._native.memstore.NativeMemoryMap, locked by its own key locks; `lock_dir` "")."""
        if (root is None) == (memory is None):
            raise ValueError("shards are files below a root or blobs of a memory map")
        ndim = len(shard_shape)
        if not 1 <= ndim <= ZC_MAX_NDIM or len(chunk_shape) != ndim or len(array_shape) != ndim:
            raise ValueError(f"1 to {ZC_MAX_NDIM} dimensions, the same for every shape")
        head = os.fsencode(key_head)
        lock = os.fsencode(lock_dir)
        if len(head) >= ZC_SHARD_IO_PATH_MAX - 64 or len(lock) >= ZC_SHARD_IO_PATH_MAX - 80:
            raise ValueError("store path too long")
        if len(fill) != chain["itemsize"]:
            raise ValueError("fill pattern must be one item")
        set_up_chain(&self.io.chain, chain)
        self.io.ndim = ndim
        for d in range(ndim):
            self.io.array_shape[d] = array_shape[d]
            self.io.shard_shape[d] = shard_shape[d]
            self.io.chunk_shape[d] = chunk_shape[d]
        self.io.index_at_start = index_at_start
        self.io.index_crc32c = index_crc32c
        self.io.fill_floatsize = fill_floatsize
        strncpy(self.io.key_head, head, ZC_SHARD_IO_PATH_MAX - 1)
        strncpy(self.io.lock_dir, lock, ZC_SHARD_IO_PATH_MAX - 1)
        self.io.sep = ord(sep)
        self.io.lead_sep = lead_sep
        if root is not None:
            self.io.root = root.root
        else:
            self.io.mem = <zc_memstore *><size_t>memory.address
        self.files = root  # (its descriptor outlives every batch of this spec)
        self.memory = memory  # (its blobs too)
        self._fill = bytes(fill)
        self.io.fill = <const unsigned char *><char *>self._fill
        self.grid = tuple(s // c for s, c in zip(shard_shape, chunk_shape))
        self.ninner = 1
        for g in self.grid:
            self.ninner *= g
        self.head_len = head_len

    def batch(self, plans, data, writing=False, write_empty_chunks=False, write_order=None,
              ChunkCache cache=None):
        """A job over a selection given as the indexer's AxisPlans over the shard grid (one
        per array axis; reads may hold int arrays: listed pieces), `data` the caller's array
        (the indexer's drop_shape); reads go through `cache` when given."""
        return ShardBatch(self, plans, data, writing, write_empty_chunks, write_order, cache)

    def read_one(self, selection, bint fortran, dtype, ChunkCache cache=None):
        """`array[selection]` as a new array of `dtype` (a scalar when every axis is given an
        int), in F order when `fortran`, when `selection` is ints and slices that fall in one
        inner chunk (_indexing.one_block: one task of the shard's job), read on the calling
        thread, GIL released, through `cache` when given; NotImplemented for any other
        selection. Errors as ShardBatch.raise_error's."""
        cdef int64_t first[ZC_MAX_NDIM]
        cdef int64_t step[ZC_MAX_NDIM]
        cdef int64_t count[ZC_MAX_NDIM]
        cdef int result_axis[ZC_MAX_NDIM + 1]
        cdef zc_piece pieces[ZC_MAX_NDIM]
        cdef int ndim = self.io.ndim
        shape = one_block(selection, ndim, self.io.array_shape, self.io.chunk_shape, first,
                          step, count, result_axis)
        if shape is None:
            return NotImplemented
        out = _memory.empty(shape[::-1], dtype).T if fortran else _memory.empty(shape, dtype)
        cdef cnp.ndarray array = out
        cdef zc_shard_io io = self.io
        set_up_one_block(pieces, ndim, io.shard_shape, first, step, count, result_axis, array,
                         io.piece_offset, io.npieces, io.data_strides)
        io.pieces = pieces
        io.data = <char *>cnp.PyArray_DATA(array)
        io.stream_out = cnp.PyArray_NBYTES(array) >= ZC_STREAM_OUT_MIN
        if cache is not None:
            _read_through(&io, cache)
        st = zc_shard_io_prepare(&io)
        if st != ZC_OK:
            zc_shard_io_free(&io)
            if st == ZC_ERR_NOMEM:
                raise MemoryError("shard batch")
            raise ValueError(f"invalid shard batch (status {st})")
        with nogil:
            zc_shard_io_read_worker(&io)
        try:
            _raise_failure(&io, self)
        finally:
            zc_shard_io_free(&io)
        return out[()] if result_axis[ndim] == -2 else out


# (No tp_clear: clearing a garbage cycle could drop the cache in `_keep` before the
# deallocation unpins the entries and shard indexes in it.)
@cython.no_gc_clear
cdef class ShardBatch:
    """One sharded read or write; call `work_read()` / `work_write()` from several threads."""

    cdef zc_shard_io io
    cdef ShardSpec spec
    cdef object _keep

    def __cinit__(self):
        memset(&self.io, 0, sizeof(zc_shard_io))

    def __init__(self, ShardSpec spec, plans, data, writing, write_empty_chunks, write_order,
                 ChunkCache cache):
        memcpy(&self.io, &spec.io, sizeof(zc_shard_io))
        self.spec = spec
        cdef int ndim = spec.io.ndim
        if len(plans) != ndim:
            raise ValueError("one plan per axis")
        cdef cnp.ndarray array = data
        if not writing:
            check_read_into(array.flags.writeable)
        lists = None if writing else []
        table = set_up_pieces(plans, array, &self.io.pieces, self.io.piece_offset,
                              self.io.npieces, self.io.data_strides, lists)
        listed = set_up_lists(&self.io.listing, lists) if lists else ()
        if cache is not None and not writing:
            _read_through(&self.io, cache)
        # The caller's array may be a strided or broadcast view: use its base and strides.
        self.io.data = <char *>cnp.PyArray_DATA(array)
        self.io.stream_out = data.nbytes >= ZC_STREAM_OUT_MIN
        self.io.writing = writing
        self.io.write_empty_chunks = write_empty_chunks
        cdef const int64_t[::1] order
        if write_order is not None:
            write_order = np.ascontiguousarray(write_order, dtype=np.int64)
            if write_order.shape[0] != spec.ninner:
                raise ValueError("write order must name every inner chunk")
            order = write_order
            self.io.write_order = &order[0]
        self._keep = (table, data, write_order, listed, cache)
        st = zc_shard_io_prepare(&self.io)
        if st == ZC_ERR_NOMEM:
            raise MemoryError("shard batch")
        if st != ZC_OK:
            raise ValueError(f"invalid shard batch (status {st})")

    def __dealloc__(self):
        zc_shard_io_free(&self.io)

    @property
    def ntasks(self):
        return self.io.ntasks

    def work_read(self):
        with nogil:
            zc_shard_io_read_worker(&self.io)

    @property
    def reads_ahead(self):
        """Does this read gain from helpers calling `work_read_ahead` (zc_shard_io.h)?"""
        return bool(zc_shard_io_reads_ahead(&self.io))

    def work_read_ahead(self):
        """Load the shards no reader has reached, asking the system for their inner chunks."""
        with nogil:
            zc_shard_io_read_ahead_worker(&self.io)

    def work_write(self):
        with nogil:
            zc_shard_io_write_worker(&self.io)

    def stop(self):
        """Let the workers take no further shard: those in progress are finished (Ctrl-C)."""
        stop_claims(&self.io.failed)

    def deferred(self):
        """Slots (C order over the axes' shard pieces) left for the caller's read-modify-write."""
        flags = PyBytes_FromStringAndSize(<char *>self.io.deferred, self.io.nslots)
        return np.flatnonzero(np.frombuffer(flags, np.uint8)).tolist()

    def raise_error(self):
        """Raise the first failure as a ZarrcoreError (StoreError for I/O) naming its shard key and,
        when there is one, the inner chunk."""
        _raise_failure(&self.io, self.spec)


cdef _raise_failure(zc_shard_io *io, ShardSpec spec):
    """Close the files of `io` and raise its first failure, if any (ShardBatch.raise_error)."""
    cdef char buf[4096]
    zc_shard_io_close_files(io)
    if not io.failed:
        return
    key = "?"
    if io.failed_slot >= 0 and zc_shard_io_slot_key(io, io.failed_slot, buf, sizeof(buf)) == ZC_OK:
        key = os.fsdecode(bytes(buf))[spec.head_len:]
    where = f"chunk {key!r}: "
    cdef int64_t i = io.failed_inner
    inner = None
    if i >= 0:
        inner = tuple(int(c) for c in np.unravel_index(i, spec.grid))
    st, problem = io.status, io.index_problem
    if st in (ZC_ERR_IO, ZC_ERR_NOMEM):
        raise status_error(st, where, sys_errno=io.sys_errno)
    if st == ZC_ERR_LOCK and spec.files is not None:
        raise spec.files.lock_error(<bytes>io.lock_dir, key, io.sys_errno)
    if problem == ZC_SHARD_INDEX_SHORT:
        isz = 16 * io.ninner + 4 * io.index_crc32c
        raise ShardIndexError(
            f"{where}shard is {io.failed_size} bytes, shorter than its {isz}-byte index")
    if problem == ZC_SHARD_INDEX_CHECKSUM:
        raise ChecksumError(f"{where}shard index: crc32c checksum mismatch")
    if problem in (ZC_SHARD_INDEX_ENTRY, ZC_SHARD_INDEX_IN_INDEX):
        entry = (f"shard index entry of inner chunk {inner} (offset {io.failed_entry[0]}, "
                 f"nbytes {io.failed_entry[1]})")
        if problem == ZC_SHARD_INDEX_IN_INDEX:
            why = "overlaps the index at the shard's start"
        elif st == ZC_ERR_CORRUPT:
            why = "only one of offset/nbytes marks the chunk empty"
        elif st == ZC_ERR_SIZE:
            why = "reaches past the end of the shard"
        elif st == ZC_ERR_OVERLAP:
            why = "overlaps another chunk"
        else:
            why = f"invalid (status {st})"
        raise ShardIndexError(f"{where}{entry}: {why}")
    if inner is not None:
        where += f"inner chunk {inner}: "
    raise status_error(st, where)


cdef void _read_through(zc_shard_io *io, ChunkCache cache):
    """Let the reads of `io` go through the decoded-chunk cache `cache`."""
    io.cache = cache.chunks
    io.index_cache = cache.indexes
