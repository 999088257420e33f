"""Every indexing mode, read and written, against numpy on the same data.

Random arrays (0-3 axes, any chunking, sharded or not) and random selections of each mode;
numpy gives the expected values, shapes and errors.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FILL = -1


# -- arrays -----------------------------------------------------------------------------------
@st.composite
def arrays(draw, min_dims=1, max_dims=3):
    """(zarrcore array, numpy mirror): maybe sharded, maybe partly written (the rest fill)."""
    ndim = draw(st.integers(min_dims, max_dims))
    shape = tuple(draw(st.integers(0, 10)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    shards = None
    if draw(st.booleans()):
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    a = zarrcore.create_array({}, shape=shape, chunks=chunks, shards=shards, dtype="i4",
                              fill_value=FILL, compressors=None)
    ref = np.full(shape, FILL, dtype="i4")
    if draw(st.booleans()):
        ref[...] = np.arange(ref.size, dtype="i4").reshape(shape)
        a[...] = ref
    return a, ref


def index_arrays(dim, max_len=7, out_of_bounds=False):
    """1-D int arrays for an axis of length `dim`: unsorted, repeated, negative."""
    lo, hi = (-dim - 2, dim + 1) if out_of_bounds else (-dim, dim - 1)
    if hi < lo:
        return st.just(np.zeros(0, dtype=np.intp))
    return st.lists(st.integers(lo, hi), max_size=max_len).map(lambda v: np.array(v, dtype=np.intp))


def basic_items(dim, out_of_bounds=False):
    lo, hi = (-dim - 2, dim + 1) if out_of_bounds else (-dim, dim - 1)
    ints = st.integers(lo, hi) if hi >= lo else st.nothing()
    bound = st.none() | st.integers(-dim - 3, dim + 3)
    step = st.none() | st.integers(-4, 4).filter(bool)
    return ints | st.builds(slice, bound, bound, step)


def orthogonal_items(dim, out_of_bounds=False):
    bools = st.lists(st.booleans(), min_size=dim, max_size=dim).map(lambda v: np.array(v, dtype=bool))
    return (basic_items(dim, out_of_bounds) | index_arrays(dim, out_of_bounds=out_of_bounds)
            | bools)


@st.composite
def value_for(draw, shape, dtype="i4"):
    """A value to assign to a selection of `shape`: that shape, a broadcastable one, a scalar."""
    kind = draw(st.sampled_from(["full", "broadcast", "scalar"]))
    if kind == "scalar":
        return draw(st.integers(-100, 100))
    if kind == "broadcast":
        shape = tuple(1 if draw(st.booleans()) else s for s in shape)
        shape = shape[draw(st.integers(0, len(shape))):]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.integers(-1000, 1000, size=shape).astype(dtype)


def orthogonal_reference(ref, selection):
    """numpy's equivalent of `.oindex[selection]`: each axis indexed on its own, ints dropped."""
    if not isinstance(selection, tuple):
        selection = (selection,)
    selection = selection + (slice(None),) * (ref.ndim - len(selection))
    out = ref
    for axis in reversed(range(ref.ndim)):
        item = selection[axis]
        if isinstance(item, np.ndarray) and item.dtype == bool:
            if len(item) != ref.shape[axis]:
                raise IndexError("boolean index did not match")
            item = np.flatnonzero(item)
        if isinstance(item, slice):
            out = out[(slice(None),) * axis + (item,)]
        else:
            # np.take skips the bounds check on empty arrays; selections never do.
            if np.any((np.asarray(item) < -ref.shape[axis]) | (np.asarray(item) >= ref.shape[axis])):
                raise IndexError(f"index out of bounds for axis {axis}")
            out = np.take(out, item, axis=axis)
    return out


def orthogonal_index_arrays(shape, selection):
    """The selection as one index array per axis (ints as 1-element arrays), for np.ix_."""
    if not isinstance(selection, tuple):
        selection = (selection,)
    selection = selection + (slice(None),) * (len(shape) - len(selection))
    arrays = []
    for item, dim in zip(selection, shape):
        if isinstance(item, slice):
            arrays.append(np.arange(dim)[item])
        elif isinstance(item, np.ndarray) and item.dtype == bool:
            arrays.append(np.flatnonzero(item))
        else:
            arrays.append(np.atleast_1d(np.arange(dim)[item]))
    return arrays


def expect_same(actual, expected):
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


def check_error_like(numpy_call, our_call):
    """Both raise the same exception type, or neither; returns numpy's result when it has one."""
    try:
        expected = numpy_call()
    except (IndexError, ValueError) as e:
        with pytest.raises(type(e)):
            our_call()
        return None
    return expected


# -- basic and numpy-mixed selections through a[...] -----------------------------------------
@st.composite
def numpy_selections(draw, shape):
    """Any mix numpy accepts: ints, slices, int arrays broadcast together, bool arrays,
    Ellipsis and newaxis; sometimes a full-shape mask."""
    if draw(st.integers(0, 5)) == 0:
        return np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape)))), dtype=bool).reshape(shape)
    ndim = len(shape)
    n = draw(st.integers(0, ndim))
    axes = list(range(n))
    broadcast = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    items = []
    for axis in axes:
        dim = shape[axis]
        kind = draw(st.sampled_from(["basic", "array", "bool"]))
        if kind == "array" and dim:
            item_shape = broadcast[draw(st.integers(0, len(broadcast))):]
            item_shape = tuple(1 if draw(st.booleans()) else s for s in item_shape)
            values = draw(st.lists(st.integers(-dim, dim - 1), min_size=int(np.prod(item_shape)),
                                   max_size=int(np.prod(item_shape))))
            items.append(np.array(values, dtype=np.intp).reshape(item_shape))
        elif kind == "bool" and len([i for i in items if isinstance(i, np.ndarray)]) == 0:
            items.append(np.array(draw(st.lists(st.booleans(), min_size=dim, max_size=dim)),
                                  dtype=bool))
        else:
            items.append(draw(basic_items(dim)))
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items)


@SETTINGS
@given(data=st.data())
def test_getitem_matches_numpy(data):
    a, ref = data.draw(arrays())
    selection = data.draw(numpy_selections(ref.shape))
    expected = check_error_like(lambda: ref[selection], lambda: a[selection])
    if expected is not None:
        expect_same(np.asarray(a[selection]), np.asarray(expected))
        expect_same(np.asarray(a.vindex[selection]), np.asarray(expected))


@SETTINGS
@given(data=st.data())
def test_setitem_matches_numpy(data):
    a, ref = data.draw(arrays())
    selection = data.draw(numpy_selections(ref.shape))
    try:
        shape = ref[selection].shape
    except IndexError:
        return
    value = data.draw(value_for(shape))
    ref[selection] = value
    a[selection] = value
    expect_same(a[...], ref)


# -- orthogonal ------------------------------------------------------------------------------
@st.composite
def orthogonal_selections(draw, shape, out_of_bounds=False):
    items = [draw(orthogonal_items(d, out_of_bounds)) for d in shape[:draw(st.integers(0, len(shape)))]]
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@SETTINGS
@given(data=st.data())
def test_oindex_read(data):
    a, ref = data.draw(arrays())
    selection = data.draw(orthogonal_selections(ref.shape, out_of_bounds=data.draw(st.booleans())))
    expected = check_error_like(lambda: orthogonal_reference(ref, selection),
                                lambda: a.oindex[selection])
    if expected is not None:
        expect_same(np.asarray(a.oindex[selection]), expected)
        out = np.empty(expected.shape, dtype=ref.dtype)
        assert a.get_orthogonal_selection(selection, out=out) is out
        expect_same(out, expected)


@SETTINGS
@given(data=st.data())
def test_oindex_write(data):
    a, ref = data.draw(arrays())
    selection = data.draw(orthogonal_selections(ref.shape))
    shape = orthogonal_reference(ref, selection).shape
    value = data.draw(value_for(shape))
    arrays_ = orthogonal_index_arrays(ref.shape, selection)
    full_shape = tuple(len(x) for x in arrays_)
    ref[np.ix_(*arrays_)] = np.broadcast_to(value, shape).reshape(full_shape)
    a.oindex[selection] = value
    expect_same(a[...], ref)


# -- vectorized: coordinates and masks -------------------------------------------------------
@st.composite
def coordinate_selections(draw, shape, out_of_bounds=False):
    broadcast = tuple(draw(st.lists(st.integers(0, 4), max_size=2)))
    items = []
    for dim in shape:
        item_shape = broadcast[draw(st.integers(0, len(broadcast))):]
        item_shape = tuple(1 if draw(st.booleans()) else s for s in item_shape)
        lo, hi = (-dim - 2, dim + 1) if out_of_bounds else (-dim, dim - 1)
        if hi < lo:
            lo = hi = 0
        values = draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(item_shape)),
                               max_size=int(np.prod(item_shape))))
        items.append(np.array(values, dtype=np.intp).reshape(item_shape))
    return tuple(items)


@SETTINGS
@given(data=st.data())
def test_coordinate_selection(data):
    a, ref = data.draw(arrays())
    selection = data.draw(coordinate_selections(ref.shape, out_of_bounds=data.draw(st.booleans())))
    expected = check_error_like(lambda: ref[selection], lambda: a.get_coordinate_selection(selection))
    if expected is None:
        return
    expect_same(a.get_coordinate_selection(selection), expected)
    expect_same(np.asarray(a.vindex[selection]), expected)
    value = data.draw(value_for(expected.shape))
    ref[selection] = value
    a.set_coordinate_selection(selection, value)
    expect_same(a[...], ref)


@SETTINGS
@given(data=st.data())
def test_mask_selection(data):
    a, ref = data.draw(arrays())
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=ref.size, max_size=ref.size)),
                    dtype=bool).reshape(ref.shape)
    expect_same(a.get_mask_selection(mask), ref[mask])
    expect_same(a.vindex[mask], ref[mask])
    expect_same(a[mask], ref[mask])
    value = data.draw(value_for(ref[mask].shape))
    ref[mask] = value
    if data.draw(st.booleans()):
        a.set_mask_selection(mask, value)
    else:
        a.vindex[mask] = value
    expect_same(a[...], ref)


# -- blocks ----------------------------------------------------------------------------------
def block_region(selection, shape, blocks):
    if not isinstance(selection, tuple):
        selection = (selection,)
    selection = selection + (slice(None),) * (len(shape) - len(selection))
    region = []
    for item, dim, b in zip(selection, shape, blocks):
        n = -(-dim // b)
        if isinstance(item, slice):
            start, stop, _ = item.indices(n)
            region.append(slice(start * b, max(start, stop) * b))
        else:
            if not -n <= item < n:
                raise IndexError(item)
            item %= n
            region.append(slice(item * b, (item + 1) * b))
    return tuple(region)


@SETTINGS
@given(data=st.data())
def test_blocks(data):
    a, ref = data.draw(arrays())
    blocks = a.shards or a.chunks
    items = []
    for dim, b in zip(ref.shape, blocks):
        n = -(-dim // b)
        bound = st.none() | st.integers(-n - 1, n + 1)
        items.append(data.draw(st.integers(-n - 1, n) | st.builds(slice, bound, bound)))
    selection = tuple(items[:data.draw(st.integers(0, len(items)))])
    expected = check_error_like(lambda: ref[block_region(selection, ref.shape, blocks)],
                                lambda: a.blocks[selection])
    if expected is None:
        return
    expect_same(a.blocks[selection], expected)
    expect_same(a.get_block_selection(selection), expected)
    value = data.draw(value_for(expected.shape))
    ref[block_region(selection, ref.shape, blocks)] = value
    a.blocks[selection] = value
    expect_same(a[...], ref)


def test_blocks_follow_shards():
    a = zarrcore.create_array({}, shape=(12, 12), chunks=(2, 3), shards=(4, 6), dtype="i4")
    ref = np.arange(144, dtype="i4").reshape(12, 12)
    a[...] = ref
    expect_same(a.blocks[1, 1], ref[4:8, 6:12])
    expect_same(a.blocks[-1, :1], ref[8:12, 0:6])
    with pytest.raises(IndexError):
        a.blocks[::2]
    with pytest.raises(IndexError):
        a.blocks[3]


# -- out=, fields=, errors -------------------------------------------------------------------
def test_out_is_filled_in_place():
    a = zarrcore.create_array({}, shape=(9, 7), chunks=(2, 3), dtype="f8")
    ref = np.arange(63, dtype="f8").reshape(9, 7)
    a[...] = ref
    big = np.zeros((20, 20))
    out = big[1:10:2, 3:10]  # not contiguous
    assert a.get_basic_selection((slice(None, None, 2),), out=out) is out
    expect_same(big[1:10:2, 3:10], ref[::2])
    out = np.zeros((3, 2))
    a.get_orthogonal_selection(([5, 0, 5], [6, 1]), out=out)
    expect_same(out, ref[np.ix_([5, 0, 5], [6, 1])])
    out = np.zeros((2, 2))
    a.get_coordinate_selection((np.array([[1, 8], [0, 3]]), np.array([6, 0])), out=out)
    expect_same(out, ref[np.array([[1, 8], [0, 3]]), np.array([6, 0])])
    mask = ref % 4 == 1
    out = np.zeros(mask.sum())
    a.get_mask_selection(mask, out=out)
    expect_same(out, ref[mask])
    with pytest.raises(ValueError):
        a.get_basic_selection(slice(0, 3), out=np.zeros((2, 7)))


@pytest.mark.parametrize("sharded", [False, True])
def test_fields(sharded):
    dtype = np.dtype([("a", "i4"), ("b", "f8"), ("c", "u1")])
    ref = np.zeros((8, 6), dtype=dtype)
    ref["a"] = np.arange(48).reshape(8, 6)
    ref["b"] = np.arange(48).reshape(8, 6) / 2
    a = zarrcore.create_array({}, shape=(8, 6), chunks=(3, 2), shards=(6, 4) if sharded else None,
                              dtype=dtype)
    a[...] = ref
    expect_same(a["a"], ref["a"])
    expect_same(a.get_basic_selection((slice(1, 7, 2), 3), fields="b"), ref[1:7:2, 3]["b"])
    expect_same(a.get_orthogonal_selection(([4, 1], [0, 5]), fields=["a", "c"]),
                ref[np.ix_([4, 1], [0, 5])][["a", "c"]])
    expect_same(a.oindex["b", [7, 2], 1:3], ref[np.ix_([7, 2], [1, 2])]["b"])
    expect_same(a.vindex[[1, 2], [3, 4], "a"], ref[[1, 2], [3, 4]]["a"])
    expect_same(a.get_mask_selection(ref["a"] % 5 == 0, fields="a"), ref["a"][ref["a"] % 5 == 0])
    blocks = a.shards or a.chunks
    expected = ref[blocks[0]:2 * blocks[0], blocks[1]:2 * blocks[1]]["b"]
    out = np.zeros(expected.shape)
    assert a.get_block_selection((1, 1), out=out, fields="b") is out
    expect_same(out, expected)
    a.set_basic_selection((slice(None), 0), 99.5, fields="b")
    ref["b"][:, 0] = 99.5
    a.set_coordinate_selection(([0, 7], [5, 5]), [-1, -2], fields="a")
    ref["a"][[0, 7], [5, 5]] = [-1, -2]
    a.vindex[[3], [3], "c"] = 7
    ref["c"][3, 3] = 7
    expect_same(a[...], ref)
    assert a[2, 3]["a"] == ref[2, 3]["a"]


@pytest.mark.parametrize("call", [
    lambda a: a[10],
    lambda a: a[-11, 0],
    lambda a: a[0, 8],
    lambda a: a.oindex[[0, 10]],
    lambda a: a.oindex[:, [-9]],
    lambda a: a.oindex[np.ones(9, dtype=bool)],
    lambda a: a.vindex[[1, 2], [3, 8]],
    lambda a: a[[10, 0]],
    lambda a: a[np.ones((10, 7), dtype=bool)],
    lambda a: a.get_mask_selection(np.ones((8, 10), dtype=bool)),
    lambda a: a.blocks[5],
    lambda a: a[0, 0, 0],
    lambda a: a[..., ...],
    lambda a: a[1.5],
    lambda a: a.oindex[[0.5]],
])
def test_out_of_bounds_and_bad_selections_raise_index_error(call):
    a = zarrcore.create_array({}, shape=(10, 8), chunks=(3, 3), dtype="i2")
    with pytest.raises(IndexError):
        call(a)


def test_out_of_bounds_writes_raise_and_change_nothing():
    a = zarrcore.create_array({}, shape=(10, 8), chunks=(3, 3), dtype="i2", fill_value=5)
    for sel in [(10,), ([1, 10],), (slice(None), [8])]:
        with pytest.raises(IndexError):
            a[sel] = 1
        with pytest.raises(IndexError):
            a.oindex[sel] = 1
    with pytest.raises(IndexError):
        a.vindex[[0, 1], [2, 99]] = 1
    assert a.nchunks_initialized == 0


def test_broadcast_errors_are_value_errors():
    a = zarrcore.create_array({}, shape=(10, 8), chunks=(3, 3), dtype="i2")
    with pytest.raises(ValueError):
        a[:, :3] = np.ones((10, 4))
    with pytest.raises(ValueError):
        a.oindex[[1, 2], [1, 2, 3]] = np.ones((3, 2))
    with pytest.raises(ValueError):
        a.vindex[[1, 2], [1, 2]] = np.ones(3)


def test_scattered_points_group_per_chunk():
    """Many points over few chunks give one projection per chunk touched, not per point."""
    from zarrcore.metadata.indexing import CoordinateIndexer

    rng = np.random.default_rng(0)
    points = [rng.integers(0, 1000, 100_000), rng.integers(0, 1000, 100_000)]
    indexer = CoordinateIndexer(points, (1000, 1000), (100, 250))
    projections = list(indexer.projections())
    assert len(projections) == 40
    assert sum(p.chunk_selection[0].size for p in projections) == 100_000


def test_points_on_huge_sparse_grids():
    """A grid too large for one counting sort (radix passes), a shape past 2**52 (exact
    division rather than reciprocals), only the touched chunks stored."""
    a = zarrcore.create_array({}, shape=(2**60, 5), chunks=(3, 2), dtype="i4", fill_value=-1,
                              compressors=None)
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 2**60, 500)
    rows[:3] = [2**60 - 1, 0, 2**52 + 1]
    cols = rng.integers(0, 5, 500)
    values = np.arange(500, dtype="i4")
    a.vindex[rows, cols] = values
    np.testing.assert_array_equal(a.vindex[rows, cols], values)
    np.testing.assert_array_equal(a.vindex[rows[::-1], cols[::-1] - 5], values[::-1])
    np.testing.assert_array_equal(a.oindex[[0, 2**60 - 1], [cols[1], cols[0]]],
                                  [[1, -1], [-1, 0]])
    assert a.nchunks_initialized <= 500
    with pytest.raises(IndexError):
        a.vindex[[2**60], [0]]
