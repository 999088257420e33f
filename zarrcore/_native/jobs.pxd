# cython: language_level=3
"""What the compiled chunk jobs share (_batch.ChunkBatch over a directory store, _chunk_jobs.ShardJob
over one shard's inner chunks, _shard_io and array_api over sharded arrays): their C
declarations, and one setup of their codec chain, fill
and selection from Python values."""
cimport numpy as cnp
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport strncpy

from zarrcore._native.files cimport zc_root
from zarrcore._native.status cimport ZC_MAX_NDIM

cdef extern from "os/zc_os.h":
    int ZC_RELEASE
    void zc_atomic_store_int(int *p, int v, int order) nogil


cdef inline void stop_claims(int *failed) noexcept nogil:
    """Make the workers of a job whose `failed` flag this is take no further task (each
    finishes the one it holds), as its first failure does."""
    zc_atomic_store_int(failed, 1, ZC_RELEASE)


cdef inline int check_read_into(bint writable) except -1:
    """A read writes into the caller's array: refuse one that is read-only (as numpy does),
    before any worker writes (a `bytes` object's or a read-only memory map's memory)."""
    if not writable:
        raise ValueError("output array is read-only")
    return 0


cdef extern from "codecs/zc_chain.h":
    int ZC_COMP_NONE, ZC_COMP_ZSTD, ZC_COMP_BLOSC, ZC_COMP_GZIP, ZC_COMP_ZLIB
    ctypedef struct zc_chain:
        size_t itemsize, swap_size, byte_shuffle
        int compressor, clevel, shuffle, checksum
        size_t typesize, blocksize
        char cname[16]
        int crc32c
        size_t max_stored

cdef extern from "files/zc_stream.h":
    unsigned int ZC_STREAM_OUT_MIN

cdef extern from "files/zc_memstore.h":
    ctypedef struct zc_memstore:
        pass

cdef extern from "cache/zc_chunk_version.h":
    ctypedef struct zc_chunk_version:
        uint64_t dev, ino, size
        int64_t mtime_ns, ctime_ns
        uint64_t offset, nbytes, content

cdef extern from "cache/zc_chunk_cache.h":
    ctypedef struct zc_chunk_cache:
        pass
    ctypedef struct zc_chunk_cache_entry:
        pass
    zc_chunk_cache_entry *zc_chunk_cache_find(zc_chunk_cache *c, const int64_t *key,
                                              const zc_chunk_version *v)
    void zc_chunk_cache_unpin(zc_chunk_cache_entry *e)

cdef extern from "jobs/zc_batch.h":
    int ZC_BATCH_PATH_MAX
    ctypedef struct zc_piece:
        int64_t chunk_index, chunk_start, chunk_step, count, out_start, out_step
    ctypedef struct zc_listing:
        const int64_t *index
        int64_t nindex
        int64_t ngroups
        const int64_t *coords
        const int64_t *point_start
        const int64_t *local
        const int64_t *out_index
    ctypedef struct zc_batch:
        int ndim
        int64_t array_shape[ZC_MAX_NDIM]
        int64_t chunk_shape[ZC_MAX_NDIM]
        zc_chain chain
        const unsigned char *fill
        size_t fill_floatsize
        int write_empty_chunks
        char key_head[4096]
        char sep
        int lead_sep
        char lock_dir[4096]
        zc_root root
        zc_memstore *mem
        const zc_piece *pieces
        int64_t piece_offset[ZC_MAX_NDIM]
        int64_t npieces[ZC_MAX_NDIM]
        int64_t ntasks
        char *data
        Py_ssize_t data_strides[ZC_MAX_NDIM]
        int stream_out
        int failed, status, sys_errno
        int64_t failed_task
        unsigned char *deferred
        zc_listing listing
        zc_chunk_cache *cache
    int zc_batch_prepare(zc_batch *b)
    int zc_batch_task_key(const zc_batch *b, int64_t t, char *buf, size_t cap)
    int64_t zc_batch_split_writes(zc_batch *b, int nthreads)
    int64_t zc_batch_split_reads(zc_batch *b, int nthreads)
    void zc_batch_free(zc_batch *b)
    void zc_batch_read_worker(zc_batch *b) nogil
    int zc_batch_reads_ahead(const zc_batch *b)
    void zc_batch_read_ahead_worker(zc_batch *b) nogil
    void zc_batch_write_worker(zc_batch *b) nogil

cdef extern from "jobs/zc_shard_batch.h":
    ctypedef struct zc_shard_job:
        zc_chain chain
        int ndim
        int64_t chunk_shape[ZC_MAX_NDIM]
        int64_t grid[ZC_MAX_NDIM]
        const unsigned char *fill
        size_t fill_floatsize
        int write_empty_chunks
        const unsigned char *const *src
        const size_t *src_len
        int src_by_task
        const zc_piece *pieces
        int64_t piece_offset[ZC_MAX_NDIM]
        int64_t npieces[ZC_MAX_NDIM]
        int64_t ntasks
        int64_t nlisted
        char *data
        Py_ssize_t data_strides[ZC_MAX_NDIM]
        unsigned char **out
        size_t *out_len
        int failed, status
        int64_t failed_task
        zc_listing listing
        zc_chunk_cache *cache
        const int64_t *cache_keys
        const zc_chunk_version *cache_versions
        const unsigned char *versioned
        zc_chunk_cache_entry *const *pins
        int cache_key_len
    int zc_shard_job_prepare(zc_shard_job *j)
    int zc_shard_job_list(zc_shard_job *j, const int64_t *tasks, int64_t n)
    int64_t zc_shard_task_chunk(const zc_shard_job *j, int64_t t)
    void zc_shard_read_worker(zc_shard_job *j) nogil
    int zc_shard_read_one(zc_shard_job *j, int64_t t) nogil
    void zc_shard_write_worker(zc_shard_job *j) nogil

cdef extern from "jobs/zc_shard_io.h":
    int ZC_SHARD_IO_PATH_MAX
    uint64_t ZC_SHARD_IO_PREFETCH_MAX
    int ZC_SHARD_INDEX_SHORT, ZC_SHARD_INDEX_CHECKSUM, ZC_SHARD_INDEX_ENTRY
    int ZC_SHARD_INDEX_IN_INDEX
    ctypedef struct zc_shard_io:
        int ndim
        int64_t array_shape[ZC_MAX_NDIM]
        int64_t shard_shape[ZC_MAX_NDIM]
        int64_t chunk_shape[ZC_MAX_NDIM]
        zc_chain chain
        const unsigned char *fill
        size_t fill_floatsize
        int write_empty_chunks, index_at_start, index_crc32c
        const int64_t *write_order
        char key_head[4096]
        char sep
        int lead_sep
        char lock_dir[4096]
        zc_root root
        zc_memstore *mem
        const zc_piece *pieces
        zc_listing listing
        int64_t piece_offset[ZC_MAX_NDIM]
        int64_t npieces[ZC_MAX_NDIM]
        char *data
        Py_ssize_t data_strides[ZC_MAX_NDIM]
        int stream_out
        int writing
        zc_chunk_cache *cache
        zc_chunk_cache *index_cache
        int64_t grid[ZC_MAX_NDIM]
        int64_t ninner, nslots, ntasks
        unsigned char *deferred
        int failed, status, sys_errno, index_problem
        int64_t failed_slot, failed_inner
        uint64_t failed_size
        uint64_t failed_entry[2]
    int zc_shard_io_prepare(zc_shard_io *io)
    void zc_shard_io_free(zc_shard_io *io)
    void zc_shard_io_close_files(zc_shard_io *io)
    int zc_shard_io_slot_key(const zc_shard_io *io, int64_t s, char *buf, size_t cap)
    void zc_shard_io_read_worker(zc_shard_io *io) nogil
    int zc_shard_io_reads_ahead(const zc_shard_io *io)
    void zc_shard_io_read_ahead_worker(zc_shard_io *io) nogil
    void zc_shard_io_write_worker(zc_shard_io *io) nogil

ctypedef fused job_t:
    zc_batch
    zc_shard_job


cdef inline object setting(dict settings, str name, default):
    """settings.get(name, default) by lookups that take no lock: on a free-threaded Python
    dict.get locks the dict, which every thread reading one array shares."""
    return settings[name] if name in settings else default


cdef inline void set_up_chain(zc_chain *c, settings) except *:
    """Set `c` from `settings` (CodecChain.native_form(): itemsize, swap_size, byte_shuffle,
    compressor and its options, crc32c, max_stored)."""
    name = settings["compressor"]
    c.itemsize = settings["itemsize"]
    c.swap_size = settings["swap_size"]
    c.byte_shuffle = setting(settings, "byte_shuffle", 0)
    if name is None:
        c.compressor = ZC_COMP_NONE
    elif name == "zstd":
        c.compressor = ZC_COMP_ZSTD
    elif name == "blosc":
        c.compressor = ZC_COMP_BLOSC
    elif name == "gzip":
        c.compressor = ZC_COMP_GZIP
    elif name == "zlib":
        c.compressor = ZC_COMP_ZLIB
    else:
        raise ValueError(f"no native compressor {name!r}")
    c.clevel = setting(settings, "clevel", 0)
    c.shuffle = setting(settings, "shuffle", 0)
    c.checksum = setting(settings, "checksum", False)
    c.typesize = setting(settings, "typesize", 0)
    c.blocksize = setting(settings, "blocksize", 0)
    strncpy(c.cname, setting(settings, "cname", "").encode()[:15], 15)
    c.crc32c = settings["crc32c"]
    c.max_stored = setting(settings, "max_stored", 0)


cdef inline object set_up_pieces(plans, cnp.ndarray data, const zc_piece **pieces,
                                 int64_t *piece_offset, int64_t *npieces,
                                 Py_ssize_t *data_strides, list lists=None):
    """Lay out the selection of the indexer's per-axis `plans` (_indexing.AxisPlan) over
    `data`, the caller's array (one axis per kept plan), as zc_piece rows, without a Python
    object per piece: this runs once per call, small reads included. Returns the table the
    rows live in, which the caller keeps as long as it uses them. Chunk selections that are
    int arrays become listed pieces (zc_listing): each axis' in-chunk positions and output
    positions (the out selection, a slice or an int array) are appended to `lists` as a pair
    of arrays (refused when it is None)."""
    cdef Py_ssize_t total = 0, k = 0, i, kept = 0, listed = 0
    cdef list chunks, csels, osels, counts
    for plan in plans:
        total += plan.npieces
    cdef cnp.npy_intp dims[2]
    dims[0], dims[1] = total, 6  # zc_piece is six int64
    # (numpy's C API, and numpy imported only for listed pieces below: an import in a
    # function looks the module and its spec up, objects every calling thread shares.)
    table = cnp.PyArray_EMPTY(2, dims, cnp.NPY_INT64, 0)
    cdef zc_piece *rows = <zc_piece *>cnp.PyArray_DATA(table)
    cdef zc_piece *p
    for d in range(len(plans)):
        plan = plans[d]
        piece_offset[d] = k
        npieces[d] = plan.npieces
        if plan.kept:
            if kept >= cnp.PyArray_NDIM(data):
                raise ValueError("the array does not have the selection's shape")
            data_strides[d] = cnp.PyArray_STRIDE(data, kept)
            kept += 1
        else:
            data_strides[d] = 0
        axis_lists, axis_outs = [], []
        if plan.rows is not None:
            # Built as rows already (arrays): copied whole, listed offsets moved past the
            # axes before.
            block = table[k:k + npieces[d]]
            block[...] = plan.rows
            # Their strided pieces' output positions are checked here: C trusts them.
            strided = block[block[:, 2] != 0]
            if plan.kept and len(strided) and (
                    strided[:, 4].min() < 0 or (strided[:, 4] + (strided[:, 3] - 1)
                                                * strided[:, 5]).max()
                    >= cnp.PyArray_DIM(data, kept - 1) or strided[:, 5].min() < 1):
                raise ValueError("output positions outside the array")
            if plan.listed is not None and len(plan.listed[0]):
                if lists is None:
                    raise ValueError("index lists are for reads only")
                listed_rows = block[:, 2] == 0
                block[listed_rows, 1] += listed
                block[listed_rows, 4:] = (0, 1)  # (zc_listing: output positions are listed)
                axis_lists.append(plan.listed[0])
                axis_outs.append(plan.listed[1])
                listed += len(plan.listed[0])
            k += npieces[d]
            chunks = []
        else:
            chunks, csels, osels, counts = plan.chunks, plan.chunk_sel, plan.out_sel, plan.count
        for i in range(len(chunks)):
            p = &rows[k]
            p.chunk_index = chunks[i]
            csel = csels[i]
            if type(csel) is slice:
                osel = osels[i]
                p.chunk_start, p.chunk_step, p.count = csel.start, csel.step, counts[i]
                p.out_start, p.out_step = osel.start, osel.step or 1
            elif isinstance(csel, cnp.ndarray):
                if lists is None:
                    raise ValueError("index lists are for reads only")
                osel = osels[i]
                if type(osel) is slice:
                    import numpy as np
                    osel = np.arange(osel.start, osel.stop, osel.step or 1)
                if len(csel) != counts[i] or len(osel) != counts[i]:
                    raise ValueError("one output position per listed position")
                axis_lists.append(csel)
                axis_outs.append(osel)
                p.chunk_start, p.chunk_step, p.count = listed, 0, counts[i]
                p.out_start, p.out_step = 0, 1
                listed += counts[i]
            else:
                p.chunk_start, p.chunk_step, p.count, p.out_start, p.out_step = csel, 1, 1, 0, 0
            k += 1
        if axis_outs:
            import numpy as np
            # Listed output positions are checked here, once per axis: C trusts them.
            outs = np.concatenate(axis_outs)
            if not plan.kept or outs.min() < 0 or outs.max() >= cnp.PyArray_DIM(data, kept - 1):
                raise ValueError("listed output positions outside the array")
            lists.append((np.concatenate(axis_lists), outs))
    if kept != cnp.PyArray_NDIM(data):
        raise ValueError("the array does not have the selection's shape")
    pieces[0] = rows if total else NULL
    return table


cdef inline tuple set_up_points(zc_listing *listing, points, int ndim, cnp.ndarray data,
                                Py_ssize_t *data_strides):
    """Point `listing` at the points' arrays (point_start, local, out_index, coords or None;
    int64, C-contiguous), `data` being the 1-d array the points go to; returns them."""
    start, local, out_index, coords = points
    cdef const int64_t[::1] s = start, l = local, o = out_index
    cdef const int64_t[:, ::1] c
    if (s.shape[0] < 1 or cnp.PyArray_NDIM(data) != 1 or s[s.shape[0] - 1] != l.shape[0]
            or o.shape[0] != l.shape[0]):
        raise ValueError("one local and one output position per point")
    # Output positions are checked here: C trusts them.
    if l.shape[0] and (out_index.min() < 0 or out_index.max() >= cnp.PyArray_DIM(data, 0)):
        raise ValueError("output positions outside the array")
    listing.ngroups = s.shape[0] - 1
    listing.point_start = &s[0]
    # (Non-NULL when there are no points: NULL says there is no listing.)
    listing.local = &l[0] if l.shape[0] else &s[0]
    listing.out_index = &o[0] if o.shape[0] else &s[0]
    if coords is not None:
        c = coords
        if c.shape[0] != listing.ngroups or (listing.ngroups and c.shape[1] != ndim):
            raise ValueError("one chunk per group")
        listing.coords = &c[0, 0] if listing.ngroups else NULL
    data_strides[0] = cnp.PyArray_STRIDE(data, 0)
    return start, local, out_index, coords


cdef inline tuple set_up_job(job_t *j, settings, chunk_shape, plans, cnp.ndarray data,
                             write_empty_chunks, points=None):
    """Set the chain and fill of `j` from `settings` (CodecChain.native_form()), its dimensions
    and chunk shape, and the selection over `data`, the caller's array: the indexer's `plans`
    (reads may hold int arrays: listed pieces), or for a read of `points`, the zc_listing
    arrays (point_start, local, out_index, coords or None) and `data` 1-d; neither for a
    template (`data` None). Returns what `j`
    points into, which the caller keeps alive as long as `j`."""
    ndim = len(chunk_shape)
    if ndim > ZC_MAX_NDIM:
        raise ValueError(f"at most {ZC_MAX_NDIM} dimensions")
    if plans is not None and len(plans) != ndim:
        raise ValueError("one plan per axis")
    fill = settings["fill"]
    if len(fill) != settings["itemsize"]:
        raise ValueError("fill pattern must be one item")
    set_up_chain(&j.chain, settings)
    j.ndim = ndim
    j.fill_floatsize = settings["fill_floatsize"]
    j.write_empty_chunks = write_empty_chunks
    for d in range(ndim):
        j.chunk_shape[d] = chunk_shape[d]
    cdef const unsigned char[::1] fview = fill
    j.fill = &fview[0]
    if plans is None and points is None:
        return (fill,)  # (a template: each read sets its own selection)
    # The caller's array may be a strided or broadcast view: use its base and strides.
    j.data = <char *>cnp.PyArray_DATA(data)
    if points is not None:
        return (*set_up_points(&j.listing, points, ndim, data, j.data_strides), fill)
    lists = []
    table = set_up_pieces(plans, data, &j.pieces, j.piece_offset, j.npieces, j.data_strides,
                          lists)
    return (table, fill) + set_up_lists(&j.listing, lists)


cdef inline tuple set_up_lists(zc_listing *listing, list lists):
    """Point `listing` at the index lists of the listed pieces that set_up_pieces appended
    to `lists` (none: `listing` is left as it is). Returns the arrays it points into, which
    the caller keeps alive as long as the job."""
    cdef const int64_t[::1] index, out_index
    if not lists:
        return ()
    import numpy as np
    index = np.concatenate([pair[0] for pair in lists]).astype(np.int64, copy=False)
    out_index = np.concatenate([pair[1] for pair in lists]).astype(np.int64, copy=False)
    listing.index = &index[0]
    listing.out_index = &out_index[0]
    listing.nindex = index.shape[0]
    return index, out_index


cdef inline void set_up_one_block(zc_piece *pieces, int ndim, const int64_t *object_shape,
                                  const int64_t *first, const int64_t *step,
                                  const int64_t *count, const int *result_axis,
                                  cnp.ndarray out, int64_t *piece_offset, int64_t *npieces,
                                  Py_ssize_t *data_strides):
    """Lay out the one block _indexing.one_block found (in stored objects of `object_shape`)
    as one zc_piece per axis, read into `out`, the result (its axis `result_axis[d]`, none
    for an axis given an int)."""
    cdef int d
    for d in range(ndim):
        pieces[d].chunk_index = first[d] // object_shape[d]
        pieces[d].chunk_start = first[d] % object_shape[d]
        pieces[d].chunk_step = step[d]
        pieces[d].count = count[d]
        pieces[d].out_start = 0
        pieces[d].out_step = 1 if result_axis[d] >= 0 else 0
        piece_offset[d] = d
        npieces[d] = 1
        data_strides[d] = cnp.PyArray_STRIDE(out, result_axis[d]) if result_axis[d] >= 0 else 0
