"""Basic selections (ints, slices of any step, Ellipsis, newaxis) against a numpy mirror.

HYPOTHESIS_PROFILE=thorough runs a longer search than the default (tests/conftest.py).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zarrcore

SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@st.composite
def shapes_and_chunks(draw, max_dims=3):
    ndim = draw(st.integers(0, max_dims))
    shape = tuple(draw(st.integers(0, 11)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, max(1, s) + 2)) for s in shape)
    return shape, chunks


def index_item(dim):
    """Any int in bounds (negatives too), or any slice: bounds past the ends, any step."""
    ints = st.integers(-dim, dim - 1) if dim else st.nothing()
    bound = st.none() | st.integers(-dim - 3, dim + 3)
    step = st.none() | st.integers(-5, 5).filter(bool)
    return ints | st.builds(slice, bound, bound, step)


@st.composite
def selections(draw, shape):
    """A basic selection for `shape`, maybe with one Ellipsis and some np.newaxis."""
    ndim = len(shape)
    use_ellipsis = draw(st.booleans())
    # How many axes are indexed explicitly (the rest are implicit or behind the Ellipsis).
    n = draw(st.integers(0, ndim))
    if use_ellipsis:
        at = draw(st.integers(0, n))
        covered = list(range(at)) + list(range(ndim - (n - at), ndim))
        items = [draw(index_item(shape[axis])) for axis in covered]
        items.insert(at, Ellipsis)
    else:
        items = [draw(index_item(shape[axis])) for axis in range(n)]
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]  # a bare item rather than a 1-tuple
    return tuple(items)


def selection_for(shape):
    """Our own selections, and hypothesis' own basic_indices for a second opinion."""
    return selections(shape) | hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True)


def values_for(draw, shape, dtype):
    """A value to assign to a selection of `shape`: full shape, a broadcastable one, a scalar,
    or a non-contiguous view (reversed, strided, Fortran-ordered, other byte order)."""
    kind = draw(st.sampled_from(["full", "scalar", "broadcast", "strided", "fortran",
                                 "swapped"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "scalar":
        return dtype.type(rng.integers(-1000, 1000))
    if kind == "broadcast" and shape:
        # Drop leading axes and make some remaining ones length 1.
        drop = draw(st.integers(0, len(shape)))
        bshape = tuple(1 if draw(st.booleans()) else s for s in shape[drop:])
        return rng.integers(-1000, 1000, size=bshape).astype(dtype)
    if kind == "strided" and shape:
        big = rng.integers(-1000, 1000, size=tuple(2 * s + 1 for s in shape)).astype(dtype)
        view = big[tuple(slice(-2, None, -2) if draw(st.booleans()) else slice(1, None, 2)
                         for _ in shape)]
        assert view.shape == shape
        return view
    value = rng.integers(-1000, 1000, size=shape).astype(dtype)
    if kind == "fortran":
        return np.array(value, order="F")
    if kind == "swapped":
        return value.astype(value.dtype.newbyteorder())
    return value


def make_pair(shape, chunks, dtype="int32", fill_value=-1, store=None):
    rng = np.random.default_rng(0)
    data = rng.integers(-10_000, 10_000, size=shape).astype(dtype)
    a = zarrcore.create_array(store if store is not None else zarrcore.MemoryStore(),
                              shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value)
    a[...] = data
    return a, data


def assert_same_selection(got, expected):
    expected = np.asarray(expected)
    assert np.shape(got) == expected.shape
    assert np.asarray(got).dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(got), expected)


@SETTINGS
@given(data=st.data())
def test_read_matches_numpy(data):
    shape, chunks = data.draw(shapes_and_chunks())
    a, mirror = make_pair(shape, chunks)
    sel = data.draw(selection_for(shape), label="selection")
    assert_same_selection(a[sel], mirror[sel])


@SETTINGS
@given(data=st.data())
def test_write_matches_numpy(data):
    shape, chunks = data.draw(shapes_and_chunks())
    a, mirror = make_pair(shape, chunks, fill_value=data.draw(st.sampled_from([0, -1, 7])))
    for _ in range(data.draw(st.integers(1, 3))):
        sel = data.draw(selection_for(shape), label="selection")
        value = values_for(data.draw, mirror[sel].shape, mirror.dtype)
        a[sel] = value
        mirror[sel] = value
        np.testing.assert_array_equal(a[...], mirror)
    # What was written is what a fresh handle reads, and only non-fill chunks are stored.
    b = zarrcore.open_array(a.store, path=a.path, mode="r")
    np.testing.assert_array_equal(b[...], mirror)


@SETTINGS
@given(data=st.data())
def test_read_write_on_local_store(tmp_path_factory, data):
    """The same on a directory store, whose reads and writes may take a compiled fast path."""
    shape, chunks = data.draw(shapes_and_chunks())
    dtype = data.draw(st.sampled_from(["int16", "float64", "uint8", "int64"]))
    root = tmp_path_factory.mktemp("ix")
    codecs = data.draw(st.sampled_from([
        None, [{"name": "zstd", "configuration": {"level": 1, "checksum": True}}],
        [{"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}],
        [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 3, "shuffle": "shuffle"}}],
    ]))
    a = zarrcore.create_array(str(root), shape=shape, dtype=dtype, chunks=chunks,
                              fill_value=3, compressors=codecs if codecs is not None else "auto")
    mirror = np.full(shape, 3, dtype=dtype)
    for _ in range(data.draw(st.integers(1, 3))):
        sel = data.draw(selection_for(shape), label="write selection")
        value = values_for(data.draw, mirror[sel].shape, mirror.dtype)
        a[sel] = value
        mirror[sel] = value
        rsel = data.draw(selection_for(shape), label="read selection")
        assert_same_selection(a[rsel], mirror[rsel])
    np.testing.assert_array_equal(zarrcore.open_array(str(root), mode="r")[...], mirror)


@SETTINGS
@given(data=st.data())
def test_transposed_and_big_endian_chunks(data):
    """Chains that do not decode in place go through the generic path."""
    shape, chunks = data.draw(shapes_and_chunks())
    assume(len(shape) >= 1)
    order = data.draw(st.permutations(range(len(shape))))
    a = zarrcore.create_array(
        zarrcore.MemoryStore(), shape=shape, dtype="int32", chunks=chunks, fill_value=5,
        filters=[{"name": "transpose", "configuration": {"order": list(order)}}],
        serializer={"name": "bytes", "configuration": {"endian": "big"}}, compressors=None)
    mirror = np.full(shape, 5, dtype="int32")
    for _ in range(2):
        sel = data.draw(selection_for(shape), label="write selection")
        value = values_for(data.draw, mirror[sel].shape, mirror.dtype)
        a[sel] = value
        mirror[sel] = value
    rsel = data.draw(selection_for(shape), label="read selection")
    assert_same_selection(a[rsel], mirror[rsel])
    np.testing.assert_array_equal(a[...], mirror)


@SETTINGS
@given(data=st.data())
def test_out_of_bounds_ints_raise(data):
    shape, chunks = data.draw(shapes_and_chunks(max_dims=2))
    assume(len(shape) >= 1)
    a, mirror = make_pair(shape, chunks)
    axis = data.draw(st.integers(0, len(shape) - 1))
    bad = data.draw(st.integers(shape[axis], shape[axis] + 5) | st.integers(-shape[axis] - 5,
                                                                           -shape[axis] - 1))
    sel = tuple([slice(None)] * axis + [bad])
    with pytest.raises(IndexError):
        mirror[sel]
    with pytest.raises(IndexError):
        a[sel]
    with pytest.raises(IndexError):
        a[sel] = 0
    np.testing.assert_array_equal(a[...], mirror)


@pytest.mark.parametrize("shape,chunks,sel", [
    ((100,), (7,), slice(None, None, -1)),
    ((100,), (7,), slice(95, 3, -13)),
    ((100,), (7,), slice(3, 95, 13)),
    ((100,), (100,), slice(-1, -101, -99)),
    ((50, 40), (3, 50), (slice(None, None, -3), slice(38, None, -7))),
    ((20, 20, 20), (4, 5, 6), (Ellipsis, slice(None, None, -4), None, 3)),
    ((10,), (1,), slice(None, None, 11)),
    ((10,), (3,), slice(-100, 100, 4)),
])
def test_strided_edge_cases(shape, chunks, sel):
    a, mirror = make_pair(shape, chunks)
    assert_same_selection(a[sel], mirror[sel])
    value = np.arange(mirror[sel].size, dtype="int32").reshape(mirror[sel].shape)
    a[sel] = value
    mirror[sel] = value
    np.testing.assert_array_equal(a[...], mirror)
