# cython: language_level=3
"""What the compiled chunk jobs share (_batch.ChunkBatch over a directory store, _shard.ShardJob
over one shard's inner chunks): their C declarations, and one setup of their codec chain, fill
and selection from Python values."""
from libc.stdint cimport int64_t
from libc.string cimport strncpy

cdef extern from "zc_chain.h":
    ctypedef struct zc_chain:
        size_t itemsize, swap_size
        int compressor, clevel, shuffle, checksum
        size_t typesize, blocksize
        char cname[16]
        int crc32c

cdef extern from "zc_stream.h":
    unsigned int ZC_STREAM_OUT_MIN

cdef extern from "zc_batch.h":
    int ZC_BATCH_MAX_NDIM, ZC_BATCH_PATH_MAX, ZC_ERR_IO
    ctypedef struct zc_piece:
        int64_t chunk_index, chunk_start, chunk_step, count, out_start, out_step
    ctypedef struct zc_batch:
        int ndim
        int64_t array_shape[32]
        int64_t chunk_shape[32]
        zc_chain chain
        const unsigned char *fill
        size_t fill_floatsize
        int write_empty_chunks
        char key_head[4096]
        char sep
        int lead_sep
        char lock_dir[4096]
        const zc_piece *pieces
        int64_t piece_offset[32]
        int64_t npieces[32]
        int64_t ntasks
        char *data
        Py_ssize_t data_strides[32]
        int stream_out
        int failed, status, sys_errno
        int64_t failed_task
        unsigned char *deferred
    int zc_batch_prepare(zc_batch *b)
    int zc_batch_task_key(const zc_batch *b, int64_t t, char *buf, size_t cap)
    void zc_batch_read_worker(zc_batch *b) nogil
    void zc_batch_write_worker(zc_batch *b) nogil

cdef extern from "zc_shard_batch.h":
    ctypedef struct zc_shard_job:
        zc_chain chain
        int ndim
        int64_t chunk_shape[32]
        int64_t grid[32]
        const unsigned char *fill
        size_t fill_floatsize
        int write_empty_chunks
        const unsigned char *const *src
        const size_t *src_len
        const zc_piece *pieces
        int64_t piece_offset[32]
        int64_t npieces[32]
        int64_t ntasks
        char *data
        Py_ssize_t data_strides[32]
        unsigned char **out
        size_t *out_len
        int failed, status
        int64_t failed_task
    int zc_shard_job_prepare(zc_shard_job *j)
    int64_t zc_shard_task_chunk(const zc_shard_job *j, int64_t t)
    void zc_shard_read_worker(zc_shard_job *j) nogil
    void zc_shard_write_worker(zc_shard_job *j) nogil

ctypedef fused job_t:
    zc_batch
    zc_shard_job


cdef inline void set_up_chain(zc_chain *c, settings) except *:
    """Set `c` from `settings` (pipeline.batch_settings: itemsize, swap_size, compressor and
    its options, crc32c)."""
    from zarrcore._batch import COMPRESSORS

    c.itemsize = settings["itemsize"]
    c.swap_size = settings["swap_size"]
    c.compressor = COMPRESSORS[settings["compressor"]]
    c.clevel = settings.get("clevel", 0)
    c.shuffle = settings.get("shuffle", 0)
    c.checksum = settings.get("checksum", False)
    c.typesize = settings.get("typesize", 0)
    c.blocksize = settings.get("blocksize", 0)
    strncpy(c.cname, settings.get("cname", "").encode()[:15], 15)
    c.crc32c = settings["crc32c"]


cdef inline tuple set_up_job(job_t *j, settings, chunk_shape, pieces, data, data_strides,
                             write_empty_chunks):
    """Set the chain and fill of `j` from `settings` (pipeline.batch_settings), its dimensions
    and chunk shape, and the selection: per-axis `pieces` (rows of zc_piece) over `data`, the
    caller's array, with its byte `data_strides` per axis. Returns what `j` points into, which
    the caller keeps alive as long as `j`. (ZC_SHARD_MAX_NDIM is ZC_BATCH_MAX_NDIM.)"""
    import numpy as np

    ndim = len(chunk_shape)
    if ndim > ZC_BATCH_MAX_NDIM:
        raise ValueError(f"at most {ZC_BATCH_MAX_NDIM} dimensions")
    fill = settings["fill"]
    if len(fill) != settings["itemsize"]:
        raise ValueError("fill pattern must be one item")
    set_up_chain(&j.chain, settings)
    j.ndim = ndim
    j.fill_floatsize = settings["fill_floatsize"]
    j.write_empty_chunks = write_empty_chunks
    table = np.ascontiguousarray(np.concatenate(
        [np.asarray(p, dtype=np.int64).reshape(-1, 6) for p in pieces]
        or [np.zeros((0, 6), np.int64)]))
    cdef int64_t[:, ::1] tview = table
    offset = 0
    for d in range(ndim):
        j.chunk_shape[d] = chunk_shape[d]
        j.piece_offset[d] = offset
        j.npieces[d] = len(pieces[d])
        j.data_strides[d] = data_strides[d]
        offset += len(pieces[d])
    cdef const unsigned char[::1] fview = fill
    j.fill = &fview[0]
    j.pieces = <const zc_piece *>&tview[0, 0] if table.shape[0] else NULL
    # The caller's array may be a strided or broadcast view: use its base and strides.
    cdef size_t address = data.__array_interface__["data"][0]
    j.data = <char *>address
    return table, fill
