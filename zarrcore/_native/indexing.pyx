# cython: language_level=3
"""Bindings of csrc/jobs/zc_indexing.c: per-axis chunk plans, points grouped by chunk, and the
generators that turn them into per-chunk projections.

`chunk[chunk_selection]` has the shape of `out[out_selection]`. Out selections are always
slices: the engine's buffer holds array-indexed axes and points in chunk order, and `order`
maps buffer positions back to result positions. Chunk selections may hold int arrays; when
numpy would not read them as an outer product, every kept axis is given in np.ix_ form.
"""
import math

import numpy as np

from ..errors import SelectionError

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc

from zarrcore._native.status cimport ZC_OK

cnp.import_array()

cdef extern from "Python.h":
    int PySlice_Unpack(object slice, Py_ssize_t *start, Py_ssize_t *stop,
                       Py_ssize_t *step) except -1
    Py_ssize_t PySlice_AdjustIndices(Py_ssize_t length, Py_ssize_t *start, Py_ssize_t *stop,
                                     Py_ssize_t step)

cdef extern from "jobs/zc_indexing.h" nogil:
    int ZC_GROUP_COMPLETE, ZC_GROUP_PROGRESSION
    int64_t zc_slice_chunks(int64_t start, int64_t step, int64_t n, int64_t chunk_len,
                            int64_t dim_len, int64_t *chunk, int64_t *first, int64_t *count,
                            int64_t *out_first, uint8_t *complete)
    int64_t zc_point_chunk_ids(const int64_t *const *idx, int ndim, int64_t n,
                               const int64_t *shape, const int64_t *chunk_shape, int64_t *ids,
                               int *bad_axis)
    void zc_point_locals(const int64_t *const *idx, int ndim, int64_t n, const int64_t *order,
                         const int64_t *shape, const int64_t *chunk_shape, int64_t *local)
    int zc_ascending(const int64_t *keys, int64_t n)
    int64_t zc_group_runs(const int64_t *sorted_keys, int64_t n, int64_t *group_keys,
                          int64_t *offsets)
    int64_t zc_sort_points(const int64_t *keys, int64_t n, int64_t nkeys,
                           const int64_t *const *idx, int ndim, const int64_t *shape,
                           const int64_t *chunk_shape, int64_t *order, int64_t *local,
                           int64_t *group_keys, int64_t *offsets)
    void zc_group_flags(const int64_t *local, int64_t n, int ndim, const int64_t *offsets,
                        int64_t ngroups, const int64_t *coords, const int64_t *shape,
                        const int64_t *chunk_shape, uint8_t *flags, int64_t *step)
    void zc_unravel(const int64_t *ids, int64_t n, int ndim, const int64_t *grid_shape,
                    int64_t *coords)

cdef enum:
    MAX_DIMS = 64  # numpy's own limit on dimensions
    SMALL_PLAN = 16


cdef inline int64_t *_ptr(cnp.ndarray a) noexcept nogil:
    return <int64_t *>cnp.PyArray_DATA(a)


cdef class AxisPlan:
    """One axis of an orthogonal selection: parallel lists, one entry per chunk touched.

    `chunk_sel` holds ints (dropped axis), slices or int arrays; `out_sel` slices into the
    buffer axis (or int arrays of buffer positions), or None for a dropped axis; `count` is
    each piece's output length. `order` is None, or the result position of each buffer
    position along this axis.

    A plan built from arrays holds `rows` instead, the pieces as zc_piece rows (chunk_index,
    chunk_start, chunk_step, count, out_start, out_step; int64, one per chunk touched), with
    `listed` = (index, out_index) for the rows whose chunk_step is 0 (zc_listing) and `full`
    their complete flags: the compiled jobs take them as they are, and the lists are made from
    them only when asked for.
    """
    cdef list _chunks, _chunk_sel, _out_sel, _complete, _count
    cdef public bint kept
    cdef public object order, rows, listed, full

    def __init__(self, bint kept):
        self.kept = kept
        self.order = self.rows = self.listed = self.full = None
        self._chunks, self._chunk_sel, self._out_sel = [], [], []
        self._complete, self._count = [], []

    cdef void add(self, int64_t chunk, object csel, object osel, bint complete, int64_t count):
        self._chunks.append(chunk)
        self._chunk_sel.append(csel)
        self._out_sel.append(osel)
        self._complete.append(complete)
        self._count.append(count)

    @staticmethod
    def from_rows(rows, listed, full):
        """A kept axis' plan of zc_piece `rows`, (index, out_index) and complete flags."""
        plan = AxisPlan(True)
        plan.rows, plan.listed, plan.full = rows, listed, full
        plan._chunks = plan._chunk_sel = plan._out_sel = plan._complete = plan._count = None
        return plan

    @property
    def npieces(self):
        return len(self.rows) if self.rows is not None else len(self._chunks)

    @property
    def chunks(self):
        if self._chunks is None:
            self._chunks = self.rows[:, 0].tolist()
        return self._chunks

    @property
    def count(self):
        if self._count is None:
            self._count = self.rows[:, 3].tolist()
        return self._count

    @property
    def complete(self):
        if self._complete is None:
            self._complete = self.full.astype(bool).tolist()
        return self._complete

    @property
    def chunk_sel(self):
        if self._chunk_sel is None:
            self._selections()
        return self._chunk_sel

    @property
    def out_sel(self):
        if self._out_sel is None:
            self._selections()
        return self._out_sel

    def subset(self, pieces):
        """The plan of this axis' pieces at the positions `pieces` (int64, in that order):
        the same chunk and out selections, for a job over some of the chunks."""
        plan = AxisPlan(self.kept)
        if self.rows is not None:
            # (listed pieces keep their offsets into the whole `listed` arrays)
            plan.rows, plan.listed, plan.full = self.rows[pieces], self.listed, self.full[pieces]
            plan._chunks = plan._chunk_sel = plan._out_sel = plan._complete = None
            plan._count = None
            return plan
        for i in pieces.tolist():
            plan.add(self._chunks[i], self._chunk_sel[i], self._out_sel[i], self._complete[i],
                     self._count[i])
        return plan

    cdef _selections(self):
        """The chunk and out selections of `rows`, one Python object each."""
        index, out_index = self.listed if self.listed is not None else (None, None)
        self._chunk_sel, self._out_sel = [], []
        for _, start, step, count, out_start, out_step in self.rows.tolist():
            if step:
                self._chunk_sel.append(slice(start, start + (count - 1) * step + 1, step))
                self._out_sel.append(slice(out_start, out_start + count * out_step, out_step))
            else:
                self._chunk_sel.append(index[start:start + count])
                # A listed piece's output positions ascend: a run when they span `count`.
                first, last = out_index[start], out_index[start + count - 1]
                self._out_sel.append(slice(first, last + 1, 1) if last - first == count - 1
                                     else out_index[start:start + count])


def int_plan(int64_t i, int64_t chunk_len, int64_t dim_len):
    """Plan of an in-bounds integer index: one chunk, axis dropped."""
    plan = AxisPlan(False)
    cdef int64_t c = i // chunk_len
    plan.add(c, i - c * chunk_len, None, min(chunk_len, dim_len - c * chunk_len) == 1, 1)
    return plan


cdef inline int64_t _slice_len(int64_t start, int64_t stop, int64_t step) noexcept:
    """len(range(start, stop, step)) for a nonzero step (bounds from slice.indices), with no
    intermediate past 2**63 - 1."""
    if step > 0:
        return (stop - start - 1) // step + 1 if stop > start else 0
    return (start - stop - 1) // -step + 1 if start > stop else 0


def slice_plan(int64_t start, int64_t stop, int64_t step, int64_t chunk_len, int64_t dim_len):
    """Plan of a slice already normalized by slice.indices(dim_len); any nonzero step."""
    return _slice_plan(start, stop, step, chunk_len, dim_len)


def slices_plans(tuple items, shape, chunk_shape):
    """Plans of a selection of one slice per axis, and the selection's shape: the whole plan
    of the commonest selection in one call (small reads pay for every microsecond)."""
    cdef Py_ssize_t d, ndim = len(items)
    cdef int64_t start, stop, step, dim_len
    plans = [None] * ndim
    sizes = [0] * ndim
    for d in range(ndim):
        dim_len = shape[d]
        start, stop, step = (<slice?>items[d]).indices(dim_len)
        plans[d] = _slice_plan(start, stop, step, chunk_shape[d], dim_len)
        sizes[d] = _slice_len(start, stop, step)
    return plans, tuple(sizes)


cdef inline slice _out_slice(int64_t j0, int64_t count, int64_t n, bint reverse):
    """Where `count` selected elements from the `j0`-th on go in the output: ascending, or
    backwards from the end when the slice's step is negative (walked ascending)."""
    if reverse:
        return slice(n - 1 - j0, (n - 1 - j0 - count) if j0 + count < n else None, -1)
    return slice(j0, j0 + count, 1)


cdef AxisPlan _slice_plan(int64_t start, int64_t stop, int64_t step, int64_t chunk_len,
                          int64_t dim_len):
    plan = AxisPlan(True)
    cdef int64_t n = _slice_len(start, stop, step)
    if n == 0:
        return plan
    cdef bint reverse = step < 0
    if reverse:
        # Walk the same elements ascending; their output positions run backwards.
        start, step = start + (n - 1) * step, -step
    # The axis' chunk count, rounded up without forming dim_len + chunk_len (which can pass
    # 2**63 - 1 on an axis near that long and made this count negative).
    cdef int64_t nmax = min(n, dim_len // chunk_len + (dim_len % chunk_len != 0))
    # A few chunks (the common case, small reads included) fit on the stack.
    cdef int64_t small_b[4 * SMALL_PLAN]
    cdef uint8_t small_f[SMALL_PLAN]
    cdef cnp.ndarray buf, full
    cdef int64_t *b = small_b
    cdef uint8_t *f = small_f
    if nmax > SMALL_PLAN:
        buf = np.empty((4, nmax), dtype=np.int64)
        full = np.empty(nmax, dtype=np.uint8)
        b = _ptr(buf)
        f = <uint8_t *>cnp.PyArray_DATA(full)
    cdef int64_t k, m, first, count, j0
    if nmax <= SMALL_PLAN:
        # Releasing the GIL for so little would only invite another thread to take it.
        m = zc_slice_chunks(start, step, n, chunk_len, dim_len, b, b + nmax, b + 2 * nmax,
                            b + 3 * nmax, f)
    else:
        with nogil:
            m = zc_slice_chunks(start, step, n, chunk_len, dim_len, b, b + nmax,
                                b + 2 * nmax, b + 3 * nmax, f)
    for k in range(m):
        first, count, j0 = b[nmax + k], b[2 * nmax + k], b[3 * nmax + k]
        plan.add(b[k], slice(first, first + (count - 1) * step + 1, step),
                 _out_slice(j0, count, n, reverse), f[k], count)
    return plan


cdef inline int64_t _chunk_of(const int64_t[::1] lengths, const int64_t[::1] starts,
                              const int64_t[::1] firsts, int64_t x, int64_t *lo,
                              int64_t *hi) noexcept:
    """The chunk holding position `x` of an axis of runs (`lengths`, and `starts` and
    `firsts`, each ending with the totals: grid.AxisRuns), and where it starts and ends."""
    cdef int64_t a = 0, b = starts.shape[0] - 1, mid, k
    while b - a > 1:  # starts[a] <= x < starts[b]
        mid = (a + b) // 2
        if starts[mid] <= x:
            a = mid
        else:
            b = mid
    k = (x - starts[a]) // lengths[a]
    lo[0] = starts[a] + k * lengths[a]
    hi[0] = lo[0] + lengths[a]
    return firsts[a] + k


def bounded_int_plan(int64_t i, const int64_t[::1] lengths, const int64_t[::1] starts,
                     const int64_t[::1] firsts, int64_t dim_len):
    """int_plan over an axis of chunks of their own lengths, kept as runs (grid.AxisRuns:
    `lengths`, `starts`, `firsts`)."""
    plan = AxisPlan(False)
    cdef int64_t lo, hi
    cdef int64_t c = _chunk_of(lengths, starts, firsts, i, &lo, &hi)
    plan.add(c, i - lo, None, min(hi, dim_len) - lo == 1, 1)
    return plan


def bounded_slice_plan(int64_t start, int64_t stop, int64_t step, const int64_t[::1] lengths,
                       const int64_t[::1] starts, const int64_t[::1] firsts, int64_t dim_len):
    """slice_plan over an axis of chunks of their own lengths, kept as runs (as
    bounded_int_plan): the same pieces, one per chunk touched, each found by a binary search
    over the runs (a step may skip chunks)."""
    plan = AxisPlan(True)
    cdef int64_t n = _slice_len(start, stop, step)
    if n == 0:
        return plan
    cdef bint reverse = step < 0
    if reverse:
        start, step = start + (n - 1) * step, -step
    cdef int64_t j0 = 0, x, c, lo, hi, count, extent
    while j0 < n:
        x = start + j0 * step
        c = _chunk_of(lengths, starts, firsts, x, &lo, &hi)
        count = min(n - j0, (hi - 1 - x) // step + 1)
        extent = min(hi, dim_len) - lo
        plan.add(c, slice(x - lo, x - lo + (count - 1) * step + 1, step),
                 _out_slice(j0, count, n, reverse),
                 x == lo and count == extent and (step == 1 or count == 1), count)
        j0 += count
    return plan


cdef class PointGroups:
    """Points grouped by chunk. Sorted point k is input point order[k] (order is None when the
    points already come chunk by chunk); group g is sorted points offsets[g]..offsets[g+1], in
    chunk coords[g]; local[d, k] is sorted point k's in-chunk coordinate along axis d;
    flags/step are zc_group_flags' results."""
    cdef public object order
    cdef public cnp.ndarray offsets, coords, local, flags, step
    cdef public int64_t ngroups


def group_points(list arrays, shape, chunk_shape, bint progressions=False, axes=None):
    """Group points (one C-contiguous int64 array per axis, equal lengths) by chunk.

    Negative coordinates count from the end; any outside the array raise SelectionError (naming
    axis `axes[d]`). `progressions` (one axis only) also finds groups whose in-chunk positions
    ascend evenly.
    """
    cdef int ndim = len(arrays), bad_axis = 0, d, in_order
    if ndim > MAX_DIMS:
        raise SelectionError(f"too many indices: {ndim}")
    cdef int64_t n = len(arrays[0])
    cdef cnp.ndarray shp = np.asarray(shape, dtype=np.int64)
    cdef cnp.ndarray chk = np.asarray(chunk_shape, dtype=np.int64)
    cdef cnp.ndarray grid = -(-shp // chk)
    total = math.prod(int(c) for c in grid)
    if total >= 2**63:
        raise SelectionError(f"a chunk grid of {total} chunks is too large for point selections")
    cdef int64_t nkeys = total
    cdef const int64_t *idx[MAX_DIMS]
    for d in range(ndim):
        idx[d] = _ptr(arrays[d])
    cdef cnp.ndarray ids = np.empty(n, dtype=np.int64)
    cdef int64_t bad
    with nogil:
        bad = zc_point_chunk_ids(idx, ndim, n, _ptr(shp), _ptr(chk), _ptr(ids), &bad_axis)
    if bad >= 0:
        raise SelectionError(
            f"index {arrays[bad_axis][bad]} is out of bounds for axis "
            f"{bad_axis if axes is None else axes[bad_axis]} with size {shape[bad_axis]}"
        )
    cdef int64_t ngroups, most = min(n, nkeys)
    cdef cnp.ndarray keys = np.empty(most + 1, dtype=np.int64)
    cdef cnp.ndarray offsets = np.empty(most + 1, dtype=np.int64)
    cdef cnp.ndarray local = np.empty((ndim, n), dtype=np.int64)
    cdef cnp.ndarray order = None
    with nogil:
        in_order = zc_ascending(_ptr(ids), n)
        if in_order:
            ngroups = zc_group_runs(_ptr(ids), n, _ptr(keys), _ptr(offsets))
            zc_point_locals(idx, ndim, n, NULL, _ptr(shp), _ptr(chk), _ptr(local))
    if not in_order:
        order = np.empty(n, dtype=np.int64)
        with nogil:
            ngroups = zc_sort_points(_ptr(ids), n, nkeys, idx, ndim, _ptr(shp), _ptr(chk),
                                     _ptr(order), _ptr(local), _ptr(keys), _ptr(offsets))
        if ngroups < 0:
            raise MemoryError("grouping points by chunk")
    cdef cnp.ndarray coords = np.empty((ngroups, ndim), dtype=np.int64)
    cdef cnp.ndarray flags = np.empty(ngroups, dtype=np.uint8)
    cdef cnp.ndarray step = np.empty(ngroups if progressions else 0, dtype=np.int64)
    cdef int64_t *p_step = _ptr(step) if progressions else NULL
    cdef int64_t *p_coords = _ptr(coords)
    cdef uint8_t *p_flags = <uint8_t *>cnp.PyArray_DATA(flags)
    with nogil:
        zc_unravel(_ptr(keys), ngroups, ndim, _ptr(grid), p_coords)
        zc_group_flags(_ptr(local), n, ndim, _ptr(offsets), ngroups, p_coords, _ptr(shp),
                       _ptr(chk), p_flags, p_step)
    g = PointGroups()
    g.order = order
    g.offsets = offsets[:ngroups + 1]
    g.local, g.coords, g.flags, g.step, g.ngroups = local, coords, flags, step, ngroups
    return g


def array_plan(cnp.ndarray idx, int64_t chunk_len, int64_t dim_len, int axis):
    """Plan of a 1-D int64 index array along one axis (unsorted, repeated, negative allowed),
    as zc_piece rows built with numpy, with no Python object per chunk.

    Groups whose in-chunk positions ascend evenly become strided pieces, the others listed.
    """
    if len(idx) == 0:
        return AxisPlan(True)
    g = group_points([idx], (dim_len,), (chunk_len,), True, (axis,))
    offsets, local = g.offsets, g.local[0]
    starts, counts = offsets[:-1], np.diff(offsets)
    strided = (g.flags & ZC_GROUP_PROGRESSION) != 0
    rows = np.empty((g.ngroups, 6), dtype=np.int64)
    rows[:, 0] = g.coords[:, 0]
    rows[:, 3] = counts
    rows[:, 4] = starts
    rows[:, 5] = 1
    rows[:, 2] = np.where(strided, g.step, 0)
    # Listed groups: their positions, and their elements' buffer positions, end to end.
    listed_counts = np.where(strided, 0, counts)
    in_listed = np.repeat(~strided, counts)
    listed = (local[in_listed], np.flatnonzero(in_listed).astype(np.int64))
    rows[:, 1] = np.where(strided, local[starts], np.cumsum(listed_counts) - listed_counts)
    plan = AxisPlan.from_rows(rows, listed, (g.flags & ZC_GROUP_COMPLETE) != 0)
    plan.order = g.order
    return plan


def in_result_order(AxisPlan plan):
    """An array plan whose `order` is set, with each piece's output positions moved to the
    result's (order None): the compiled jobs then decode straight into the result, with no
    buffer to reorder. Pieces of one element, and strided pieces whose result positions
    ascend by one, stay strided; the others become listed."""
    rows, order = plan.rows, plan.order
    counts, starts = rows[:, 3], rows[:, 4]  # (an array plan's buffer runs: out_step 1)
    n = int(counts.sum())
    # Each element's in-chunk position, in the buffer's order.
    local = np.empty(n, dtype=np.int64)
    step = np.repeat(rows[:, 2], counts)
    k = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    local[...] = np.repeat(rows[:, 1], counts) + k * step
    if plan.listed is not None and len(plan.listed[0]):
        local[plan.listed[1]] = plan.listed[0]
    # A piece stays strided when its result positions ascend by one.
    broken = np.empty(n, dtype=bool)
    broken[0] = False
    np.not_equal(np.diff(order), 1, out=broken[1:])
    broken[starts] = False
    runs = (np.add.reduceat(broken, starts) == 0) & (rows[:, 2] != 0) | (counts == 1)
    out = np.empty_like(rows)
    out[:, 0] = rows[:, 0]
    out[:, 3] = counts
    out[:, 5] = 1
    in_listed = np.repeat(~runs, counts)
    listed_counts = np.where(runs, 0, counts)
    out[:, 1] = np.where(runs, local[starts], np.cumsum(listed_counts) - listed_counts)
    out[:, 2] = np.where(runs, np.maximum(rows[:, 2], 1), 0)
    out[:, 4] = np.where(runs, order[starts], 0)
    return AxisPlan.from_rows(out, (local[in_listed], order[in_listed]), plan.full)


cdef object _ix(object sel, int64_t count, tuple ix_shape):
    """An axis' chunk selection as an int array shaped for np.ix_-style broadcasting."""
    if isinstance(sel, slice):
        sel = np.arange(sel.start, sel.start + count * sel.step, sel.step)
    return sel.reshape(ix_shape)


def orthogonal_projections(list plans, Projection):
    """Yield Projection(coords, chunk_sel, out_sel, complete) for every combination of the axis
    plans' pieces (the outer product of the chunks touched), odometer order."""
    cdef Py_ssize_t ndim = len(plans), d, p, nkept = 0, narrays
    cdef Py_ssize_t pos[MAX_DIMS]
    cdef Py_ssize_t size[MAX_DIMS]
    cdef Py_ssize_t kept_pos[MAX_DIMS]
    cdef bint dropped = False
    cdef AxisPlan plan
    for d in range(ndim):
        plan = plans[d]
        size[d] = plan.npieces
        if size[d] == 0:
            return
        pos[d] = 0
        kept_pos[d] = nkept if plan.kept else -1
        nkept += plan.kept
        dropped = dropped or not plan.kept
    # np.ix_ forms of the chunk selections, built when first needed.
    cdef list ix_cache = [[None] * size[d] for d in range(ndim)]
    while True:
        coords, csel, osel = [], [], []
        complete, narrays = True, 0
        for d in range(ndim):
            plan = plans[d]
            p = pos[d]
            coords.append(plan.chunks[p])
            c = plan.chunk_sel[p]
            csel.append(c)
            if plan.kept:
                osel.append(plan.out_sel[p])
                narrays += not isinstance(c, slice)
            complete = complete and plan.complete[p]
        # numpy reads one array among slices in place; more arrays, or ints beside one (which
        # numpy broadcasts with it), need the outer-product form.
        if narrays > 1 or (narrays and dropped):
            for d in range(ndim):
                if kept_pos[d] < 0:
                    continue
                plan = plans[d]
                p = pos[d]
                if ix_cache[d][p] is None:
                    ix_shape = (1,) * kept_pos[d] + (-1,) + (1,) * (nkept - 1 - kept_pos[d])
                    ix_cache[d][p] = _ix(plan.chunk_sel[p], plan.count[p], ix_shape)
                csel[d] = ix_cache[d][p]
        yield Projection(tuple(coords), tuple(csel), tuple(osel), complete)
        d = ndim - 1
        while d >= 0:
            pos[d] += 1
            if pos[d] < size[d]:
                break
            pos[d] = 0
            d -= 1
        if d < 0:
            return


def point_projections(PointGroups g, Projection):
    """Yield one Projection per chunk holding points: in-chunk coordinate arrays, and the
    slice of the sorted points they fill."""
    cdef int64_t k, a, b, d, ndim = g.local.shape[0]
    cdef int64_t[:] offsets = g.offsets
    cdef uint8_t[:] flags = g.flags
    cdef cnp.ndarray local = g.local
    for k in range(g.ngroups):
        a, b = offsets[k], offsets[k + 1]
        yield Projection(tuple(g.coords[k].tolist()),
                         tuple([local[d, a:b] for d in range(ndim)]),
                         (slice(a, b),), bool(flags[k] & ZC_GROUP_COMPLETE))


cdef inline bint _is_index(object item):
    """An int as numpy indexes by (Python or numpy integers, never bools)."""
    return type(item) is int or isinstance(item, np.integer)


cdef object one_block(object selection, int ndim, const int64_t *shape, const int64_t *block,
                      int64_t *first, int64_t *step, int64_t *count, int *result_axis):
    """The result shape of `selection` when it is ints, slices of positive step, at most one
    Ellipsis and newaxis that pick at least one item, all in one block (chunk or inner
    chunk) of `block` shape of an array of `shape`; None for any other selection (the
    indexers then plan it, and raise its errors). Sets per axis the first item, the step,
    the count and the axis of the result it goes to (-1: an int, dropped). The result is a
    scalar (as BasicIndexer.scalar) when every axis is given an int (no Ellipsis):
    `result_axis[ndim]` is then -2, else 0 (`result_axis` holds ndim + 1 values)."""
    cdef Py_ssize_t n, i, axis = 0, out = 0, given = 0
    cdef Py_ssize_t start, stop, stride, length
    cdef int64_t k, last
    cdef bint ellipsis = False
    items = selection if type(selection) is tuple else (selection,)
    n = len(items)
    for i in range(n):
        item = items[i]
        if item is Ellipsis:
            if ellipsis:
                return None
            ellipsis = True
        elif item is not None:
            given += 1
    if given > ndim:
        return None
    shape_out = []
    for i in range(n + (0 if ellipsis else 1)):
        item = items[i] if i < n else Ellipsis  # (axes not given: whole, as after an Ellipsis)
        if item is None:
            shape_out.append(1)
            out += 1
            continue
        if item is Ellipsis:
            for _ in range(ndim - given):
                first[axis], step[axis], count[axis] = 0, 1, shape[axis]
                result_axis[axis] = out
                shape_out.append(shape[axis])
                axis += 1
                out += 1
            continue
        if type(item) is slice:
            try:
                PySlice_Unpack(item, &start, &stop, &stride)
            except (TypeError, ValueError):  # (a step of 0, bounds that are no ints)
                return None
            length = PySlice_AdjustIndices(shape[axis], &start, &stop, stride)
            if stride < 1:
                return None
            first[axis], step[axis], count[axis] = start, stride, length
            result_axis[axis] = out
            shape_out.append(length)
            out += 1
        elif _is_index(item):
            try:
                k = item
            except OverflowError:
                return None
            if k < 0:
                k += shape[axis]
            if k < 0 or k >= shape[axis]:
                return None
            first[axis], step[axis], count[axis] = k, 1, 1
            result_axis[axis] = -1
        else:
            return None
        axis += 1
    for axis in range(ndim):
        if count[axis] < 1:
            return None
        last = first[axis] + (count[axis] - 1) * step[axis]
        if first[axis] // block[axis] != last // block[axis]:
            return None
    result_axis[ndim] = -2 if not ellipsis and out == 0 and given == ndim and ndim > 0 else 0
    return tuple(shape_out)
