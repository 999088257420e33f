"""zarrcore.kernels against numpy and the crc32c package."""
import crc32c as crc32c_ref
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarrcore import kernels
from zarrcore.errors import ShardIndexError

EMPTY = 2**64 - 1

NUMERIC = ["i1", "u1", "i2", "<u2", ">u2", "i4", ">i4", "u8", "f2", "<f4", ">f8", "c8", ">c16",
           "M8[ns]", "m8[s]", "U3", "?"]
dtypes = st.sampled_from(NUMERIC).map(np.dtype)
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6)


def arrays(dtype=dtypes, shape=shapes):
    return hnp.arrays(dtype, shape, elements=None)


def views(draw, base):
    """A random strided (possibly negative-stride) view of `base`."""
    index = []
    for n in base.shape:
        step = draw(st.sampled_from([1, 2, -1, -2]))
        start = draw(st.integers(0, max(n - 1, 0)))
        index.append(slice(start, None, step) if step > 0 else slice(start, None, step))
    return base[tuple(index) + (Ellipsis,)]  # the Ellipsis keeps 0-d results arrays


# ---- byteswap ---------------------------------------------------------------------------


# The byteswap ufunc takes numbers (datetimes and text as integer views); it works on the
# values in native order, so the reference is numpy's byteswap of the native-order array.
swappable = st.sampled_from([d for d in NUMERIC if np.dtype(d).kind not in "mMU"]).map(np.dtype)


def native_byteswap(a):
    return a.astype(a.dtype.newbyteorder("=")).byteswap()


@given(arrays(swappable))
def test_byteswap_matches_numpy(a):
    assert kernels.byteswap(a).tobytes() == native_byteswap(a).tobytes()


@given(arrays(swappable))
def test_byteswap_in_place_and_out(a):
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
    expected = a.byteswap()
    out = np.empty_like(a)
    assert kernels.byteswap(a, out) is out
    assert out.tobytes() == expected.tobytes()
    b = a.copy()
    assert kernels.byteswap(b, b) is b
    assert b.tobytes() == expected.tobytes()


def test_byteswap_non_contiguous_and_long_double():
    a = np.arange(24, dtype=">i4").reshape(4, 6)[:, ::-2]
    assert kernels.byteswap(a).tobytes() == native_byteswap(a).tobytes()
    ld = np.arange(5, dtype=np.longdouble)
    assert kernels.byteswap(ld).tobytes() == ld.byteswap().tobytes()
    cld = np.arange(5, dtype=np.clongdouble)
    assert kernels.byteswap(cld).tobytes() == cld.byteswap().tobytes()


def test_byteswap_rejects_bad_input():
    with pytest.raises(TypeError):
        kernels.byteswap(np.array([1, "a"], dtype=object))
    with pytest.raises(TypeError):
        kernels.byteswap(np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")]))
    a = np.arange(10, dtype="u4")
    with pytest.raises(ValueError):
        kernels.byteswap(a, np.empty(9, "u4"))
    # Overlapping out: numpy's ufunc machinery buffers, so the result is as if not.
    b = a.copy()
    kernels.byteswap(b[:9], b[1:])
    assert b[1:].tobytes() == a[:9].byteswap().tobytes()


# ---- copy / transpose -------------------------------------------------------------------


@given(st.data(), arrays(dtype=st.sampled_from(["u1", "i2", "f4", "c16", "S3", "U5"]).map(np.dtype)))
def test_copy_region_matches_assignment(data, base):
    src = views(data.draw, base)
    dst_base = np.zeros_like(base)
    dst = views(data.draw, dst_base)
    if dst.shape != src.shape:
        dst = np.zeros(src.shape, base.dtype)
    expected = dst.copy()
    expected[...] = src
    assert kernels.copy_region(src, dst) is dst
    assert dst.tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype", ["u1", "u2", "c16"])
def test_copy_region_short_rows_of_every_length(dtype):
    """Rows of 1 to 300 bytes cut out of a larger array (reversed, too), as a block at an
    offset into a cached chunk: the inline copies of each size class and the rows prefetched
    across plane ends."""
    rng = np.random.default_rng(5)
    itemsize = np.dtype(dtype).itemsize
    base = rng.integers(0, 255, size=(5, 40, 320 // itemsize + 3), dtype="u1").astype(dtype)
    for width in range(1, 300 // itemsize + 1):
        for src in (base[1:4, 2:39, 3:3 + width], base[3:0:-1, 38:1:-2, 3:3 + width]):
            dst = np.zeros((2,) + src.shape, dtype)[1]
            kernels.copy_region(src, dst)
            assert dst.tobytes() == src.tobytes(), width


def test_copy_region_broadcast_zero_stride_and_overlap():
    src = np.broadcast_to(np.arange(5.0), (4, 5))
    dst = np.empty((4, 5))
    kernels.copy_region(src, dst)
    np.testing.assert_array_equal(dst, src)
    a = np.arange(10)
    kernels.copy_region(a[:-1], a[1:])  # overlapping: must behave like numpy assignment
    np.testing.assert_array_equal(a, [0, 0, 1, 2, 3, 4, 5, 6, 7, 8])


_SMALL_ITEMS = [
    np.uint8(7), np.uint16(0x0102), np.float64(1.5), np.float64(0.0), np.complex64(1 - 2j),
    np.array((3, 250), dtype="<i4,u1")[()],  # 5-byte items
]
_BIG_ITEM = np.array(b"ab" * 40000, dtype="S80000")[()]  # larger than a 64 KiB copy step


# (The big item fills the smaller shapes only: 5x64x33 of it would be 845 MB an array.)
@pytest.mark.parametrize("item, shape", [
    *((item, shape) for shape in [(1,), (3, 7), (5, 64, 33)] for item in _SMALL_ITEMS),
    (_BIG_ITEM, (1,)), (_BIG_ITEM, (3, 7)),
])
def test_copy_region_fills_from_one_broadcast_item(item, shape):
    src = np.broadcast_to(np.asarray(item), shape)
    dst = np.zeros(shape, dtype=src.dtype)
    kernels.copy_region(src, dst)
    np.testing.assert_array_equal(dst, np.full(shape, item, dtype=src.dtype))
    strided = np.zeros(shape + (2,), dtype=src.dtype)[..., 0]  # destination not contiguous
    kernels.copy_region(src, strided)
    np.testing.assert_array_equal(strided, np.full(shape, item, dtype=src.dtype))


def test_copy_region_errors():
    with pytest.raises(ValueError):
        kernels.copy_region(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError):
        kernels.copy_region(np.zeros(3), np.zeros(3, "f4"))
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        kernels.copy_region(np.zeros(3), ro)
    objs = np.empty(2, object)
    kernels.copy_region(np.array(["a", None], dtype=object), objs)  # numpy copies references
    assert objs.tolist() == ["a", None]
    with pytest.raises(TypeError):
        mixed = np.dtype([("a", "i4"), ("b", object)])
        kernels.copy_region(np.zeros(2, mixed), np.zeros(2, mixed))


@given(st.data(), arrays(shape=hnp.array_shapes(min_dims=1, max_dims=5, min_side=1, max_side=5)))
def test_transpose_matches_numpy(data, a):
    axes = data.draw(st.permutations(range(a.ndim)))
    t = kernels.transpose(a, axes)
    assert t.flags.c_contiguous
    assert t.tobytes() == np.ascontiguousarray(a.transpose(axes)).tobytes()
    out = np.empty(t.shape, a.dtype)
    assert kernels.transpose(a, axes, out) is out


@pytest.mark.parametrize("dtype", ["u1", "i2", "f4", "c16", "S3"])
@pytest.mark.parametrize("shape, axes", [
    ((70, 45), (1, 0)), ((33, 40, 37), (2, 1, 0)), ((5, 64, 35), (0, 2, 1)), ((40, 3, 50, 2), (2, 3, 0, 1)),
])
def test_transpose_tiled_paths(dtype, shape, axes):
    a = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    for src in (a, a[::-1, ..., ::2]):  # also negative and non-unit strides
        t = src.transpose(axes)
        assert kernels.transpose(src, axes).tobytes() == np.ascontiguousarray(t).tobytes()
        dst = np.zeros(t.shape[::-1], dtype).transpose()  # an F-ordered destination
        kernels.copy_region(t, dst)
        assert dst.tobytes("A") == np.asfortranarray(t).tobytes("A")


def test_transpose_large_and_errors():
    a = np.arange(300 * 500, dtype="f8").reshape(300, 500)
    np.testing.assert_array_equal(kernels.transpose(a, (1, 0)), a.T)
    with pytest.raises(ValueError):
        kernels.transpose(a, (0, 0))
    with pytest.raises(ValueError):
        kernels.transpose(a, (1, 0), np.empty((300, 500)))


# ---- is_fill ----------------------------------------------------------------------------


@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)))
def test_is_fill_matches_bytewise_numpy(a):
    if a.size == 0:
        assert kernels.is_fill(a, np.zeros((), a.dtype))
        return
    first = a.reshape(-1)[0]
    expected = all(x.tobytes() == first.tobytes() for x in a.reshape(-1))
    assume(a.dtype.kind not in "fc" or not np.isnan(first))  # NaN fills: test_is_fill_nan
    assert kernels.is_fill(a, first) == expected
    assert kernels.is_fill(np.full(a.shape, first, a.dtype), first)


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", ">f4", ">f8", "c8", "c16", ">c16", "g", "G"])
def test_is_fill_nan(dtype):
    dtype = np.dtype(dtype)
    a = np.full(50, np.nan, dtype)
    assert kernels.is_fill(a, np.nan)
    assert kernels.is_fill(a, "NaN")
    # A NaN with another payload and sign still matches.
    if dtype.kind == "f" and dtype.itemsize <= 8:
        bits = a.view(f"{dtype.byteorder if dtype.byteorder != '=' else ''}u{dtype.itemsize}".replace("|", ""))
        bits[3] = bits[3] | bits.dtype.type(1)  # (numpy < 2 makes uint64 | int a float64)
        a[7] = -a[7]
        assert np.isnan(a).all()
        assert kernels.is_fill(a, np.nan)
    a[10] = 1.0
    assert not kernels.is_fill(a, np.nan)
    assert not kernels.is_fill(np.zeros(5, dtype), np.nan)
    assert not kernels.is_fill(np.full(5, np.nan, dtype), 0)


def test_is_fill_complex_components():
    a = np.full(4, complex(np.nan, 1.0), "c16")
    assert kernels.is_fill(a, complex(np.nan, 1.0))
    assert not kernels.is_fill(a, complex(np.nan, 2.0))
    assert not kernels.is_fill(a, complex(np.nan, np.nan))
    assert kernels.is_fill(np.full(4, complex(np.nan, np.nan)), complex(np.nan, np.nan))


def test_is_fill_signed_zero_and_structured():
    assert not kernels.is_fill(np.array([0.0, -0.0]), 0.0)
    assert kernels.is_fill(np.array([-0.0, -0.0]), -0.0)
    dt = np.dtype([("a", "<i4"), ("b", "S2")])
    a = np.zeros(6, dt)
    assert kernels.is_fill(a, (0, b""))
    assert kernels.is_fill(a, b"\0" * 6)
    a[5]["b"] = b"x"
    assert not kernels.is_fill(a, (0, b""))
    assert kernels.is_fill(np.zeros((3, 2), "V4"), b"\0\0\0\0")
    with pytest.raises(ValueError):
        kernels.is_fill(np.zeros(3, "V4"), b"\0")
    assert kernels.is_fill(np.zeros((200, 300), "u1")[:, ::3], 0)  # non-contiguous input


# ---- crc32c -----------------------------------------------------------------------------


@given(st.binary(max_size=3000), st.integers(0, 2**32 - 1))
def test_crc32c_both_paths_match_package(data, value):
    assert kernels.crc32c(data, value) == crc32c_ref.crc32c(data, value)
    assert kernels._crc32c_portable(data, value) == crc32c_ref.crc32c(data, value)


def test_crc32c_unaligned_views():
    buf = bytes(range(256)) * 40
    for start in range(9):
        view = memoryview(buf)[start:start + 1001]
        assert kernels.crc32c(view) == crc32c_ref.crc32c(bytes(view))
        assert kernels._crc32c_portable(view) == crc32c_ref.crc32c(bytes(view))


@pytest.mark.parametrize("n", [767, 768, 769, 24575, 24576, 24577, 3 * 24576 + 800 + 13])
def test_crc32c_lane_boundaries(n):
    # The SSE4.2 path runs three lanes of 8 KiB, then of 256 bytes, then single words.
    data = np.random.default_rng(n).integers(0, 256, n + 3, dtype=np.uint8).tobytes()
    for start in range(3):
        view = memoryview(data)[start:start + n]
        assert kernels.crc32c(view, 7) == crc32c_ref.crc32c(bytes(view), 7)


# ---- shard index ------------------------------------------------------------------------


def pack_reference(entries):
    return np.asarray(entries, dtype="<u8").tobytes()


@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), max_size=30))
def test_shard_index_round_trip(sizes):
    entries, offset = [], 0
    for nbytes, present in sizes:
        if present:
            entries.append((offset, nbytes))
            offset += nbytes
        else:
            entries.append((EMPTY, EMPTY))
    arr = np.array(entries, dtype=np.uint64).reshape(-1, 2)
    packed = kernels.shard_index_pack(arr)
    assert packed == pack_reference(arr)
    out = kernels.shard_index_unpack(packed, len(entries), offset)
    assert out.dtype == np.uint64 and out.shape == (len(entries), 2)
    np.testing.assert_array_equal(out, arr)
    kernels.shard_index_validate(arr, offset)


@pytest.mark.parametrize("entries, size, bad, words", [
    ([(0, 10), (10, 11)], 20, 1, "past"),
    ([(0, 10), (EMPTY, 4)], 20, 1, "empty"),
    ([(EMPTY, EMPTY), (4, EMPTY)], 20, 1, "empty"),
    ([(0, 10), (5, 2)], 20, 1, "overlaps"),
    ([(5, 2), (0, 10)], 20, 0, "overlaps"),
    ([(0, 4), (8, 4), (2, 1)], 20, 2, "overlaps"),
    ([(2**64 - 2, 5)], 2**64 - 2, 0, "past"),
    ([(30, 0)], 20, 0, "past"),
])
def test_shard_index_invalid(entries, size, bad, words):
    arr = np.array(entries, dtype=np.uint64)
    for check in (lambda: kernels.shard_index_validate(arr, size),
                  lambda: kernels.shard_index_unpack(pack_reference(arr), len(arr), size)):
        with pytest.raises(ShardIndexError, match=rf"inner chunk {bad}\b.*{words}"):
            check()


def test_shard_index_valid_edge_cases():
    # Zero-length chunks overlap nothing; touching ranges are fine; chunks may be unordered.
    kernels.shard_index_validate(np.array([(5, 0), (0, 10), (5, 0), (10, 10)], np.uint64), 20)
    kernels.shard_index_validate(np.array([(10, 10), (0, 10)], np.uint64), 20)
    kernels.shard_index_validate(np.zeros((0, 2), np.uint64), 0)


def test_shard_index_wrong_length():
    with pytest.raises(ShardIndexError, match="expected 32"):
        kernels.shard_index_unpack(b"\0" * 31, 2, 100)
    with pytest.raises(ValueError):
        kernels.shard_index_pack(np.zeros((3, 3), np.uint64))
