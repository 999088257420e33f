"""zarrcore.kernels as a numpy-style API: the ufuncs, and the ufunc-like functions' out=."""
import crc32c as crc32c_ref
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarrcore import kernels

SWAP_TYPES = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16",
              "g", "G"]
FILL_TYPES = ["?", "i1", "u2", "i4", "u8", "f2", "f4", "f8", "c8", "c16"]


# -- byteswap --------------------------------------------------------------------------------
def test_byteswap_is_a_ufunc():
    assert isinstance(kernels.byteswap, np.ufunc)
    assert (kernels.byteswap.nin, kernels.byteswap.nout) == (1, 1)
    assert kernels.byteswap.__name__ == "byteswap"
    assert "x.byteswap()" in kernels.byteswap.__doc__


@given(hnp.arrays(st.sampled_from(SWAP_TYPES).map(np.dtype), hnp.array_shapes(min_dims=0, max_side=5)))
def test_byteswap_matches_numpy(a):
    result = kernels.byteswap(a)
    assert result.dtype == a.dtype and result.shape == a.shape
    assert result.tobytes() == a.byteswap().tobytes()
    # Swapped back from an array: for a 0-d `a` the result is a numpy scalar, which numpy < 2
    # makes into an array by a long double's 10 value bytes, not the 6 of padding the swap
    # filled (its bytes are those of a.byteswap(), as asserted above).
    back = result if isinstance(result, np.ndarray) else a.byteswap()
    assert kernels.byteswap(back).tobytes() == a.tobytes()


def test_byteswap_honours_out_where_and_strides():
    a = np.arange(24, dtype="u4").reshape(4, 6)
    out = np.zeros((4, 6), dtype="u4")
    assert kernels.byteswap(a, out=out) is out
    np.testing.assert_array_equal(out, a.byteswap())
    big = np.zeros((8, 12), dtype="u4")
    view = big[::2, ::-2]  # a strided, reversed out
    assert kernels.byteswap(a, out=view) is view
    np.testing.assert_array_equal(big[::2, ::-2], a.byteswap())
    masked = np.full(6, 7, dtype="u4")
    kernels.byteswap(a[0], out=masked, where=a[0] % 2 == 0)
    np.testing.assert_array_equal(masked, np.where(a[0] % 2 == 0, a[0].byteswap(), 7))
    b = a.copy()
    kernels.byteswap(b, out=b)
    np.testing.assert_array_equal(b, a.byteswap())


def test_byteswap_broadcasts_and_casts_as_numpy():
    row = np.arange(3, dtype="i2")
    out = np.zeros((2, 3), dtype="i2")
    kernels.byteswap(row, out=out)  # the input broadcasts against out
    np.testing.assert_array_equal(out, np.broadcast_to(row.byteswap(), (2, 3)))
    wide = np.zeros(3, dtype="i8")
    kernels.byteswap(row, out=wide)  # i2 -> i8 is a same_kind cast of the i2 result
    np.testing.assert_array_equal(wide, row.byteswap().astype("i8"))
    with pytest.raises(TypeError):
        kernels.byteswap(np.arange(3.0), out=np.zeros(3, "i8"))  # float -> int: not same_kind
    with pytest.raises(TypeError):
        kernels.byteswap(row, out=wide, casting="no")
    assert kernels.byteswap(np.arange(3, dtype="i2"), dtype="i4").dtype == np.dtype("i4")
    assert kernels.byteswap(np.int32(1)) == np.int32(1 << 24)
    assert kernels.byteswap([1, 256]).tolist() == [1 << 56, 1 << 48]
    with pytest.raises(TypeError):
        kernels.byteswap(np.zeros(2, "U3"))


# -- fill_equal and is_fill -------------------------------------------------------------------
def test_fill_equal_is_a_ufunc():
    assert isinstance(kernels.fill_equal, np.ufunc)
    assert (kernels.fill_equal.nin, kernels.fill_equal.nout) == (2, 1)
    assert all(t.endswith("->?") for t in kernels.fill_equal.types)


def test_fill_equal_nan_aware_and_bitwise():
    x = np.array([np.nan, -np.nan, 0.0, -0.0, 1.0, np.inf])
    assert kernels.fill_equal(x, np.nan).tolist() == [True, True, False, False, False, False]
    assert kernels.fill_equal(x, 0.0).tolist() == [False, False, True, False, False, False]
    z = np.array([complex(np.nan, 1), complex(np.nan, 2), complex(1, np.nan)])
    assert kernels.fill_equal(z, complex(np.nan, 1)).tolist() == [True, False, False]
    f2 = np.array([np.nan, 1], dtype="f2")
    assert kernels.fill_equal(f2, np.float16(np.nan)).tolist() == [True, False]


def test_fill_equal_broadcasting_out_and_casting():
    a = np.arange(6, dtype="u2").reshape(3, 2)
    fills = np.array([[0], [3], [9]], dtype="u2")
    out = np.zeros((3, 2), dtype=bool)
    assert kernels.fill_equal(a, fills, out=out) is out
    np.testing.assert_array_equal(out, a == fills)
    # Mixed types resolve as numpy's own ufuncs do (here both to float64).
    assert kernels.fill_equal(np.arange(3), np.float64(1.0)).tolist() == [False, True, False]
    counts = np.zeros((3, 2), dtype="i4")
    kernels.fill_equal(a, 5, out=counts)  # bool -> int is a safe cast
    np.testing.assert_array_equal(counts, (a == 5).astype("i4"))


@given(hnp.arrays(st.sampled_from(FILL_TYPES).map(np.dtype), hnp.array_shapes(min_dims=0, max_side=6),
                  elements=None), st.booleans())
def test_is_fill_is_fill_equal_everywhere(a, use_first):
    fill = a.reshape(-1)[0] if use_first and a.size else np.zeros((), a.dtype)[()]
    assert kernels.is_fill(a, fill) == bool(kernels.fill_equal(a, fill).all())


# -- ufunc-like functions ---------------------------------------------------------------------
def test_copy_region_out_and_new_copy():
    src = np.arange(60, dtype="f4").reshape(3, 4, 5)[:, ::-1, ::2]
    copy = kernels.copy_region(src)
    assert copy.flags.c_contiguous
    np.testing.assert_array_equal(copy, src)
    big = np.zeros((6, 8, 3), dtype="f4")
    out = big[::2, ::2]
    assert kernels.copy_region(src, out=out) is out
    np.testing.assert_array_equal(big[::2, ::2], src)


def test_transpose_out():
    a = np.arange(24, dtype="i8").reshape(2, 3, 4)
    out = np.empty((4, 2, 3), dtype="i8")
    assert kernels.transpose(a, (2, 0, 1), out=out) is out
    np.testing.assert_array_equal(out, a.transpose(2, 0, 1))


def test_crc32c_rows_values_and_out():
    rows = np.random.default_rng(1).integers(0, 256, (3, 4, 50), dtype=np.uint8)
    expected = np.array([[crc32c_ref.crc32c(r.tobytes()) for r in block] for block in rows])
    np.testing.assert_array_equal(kernels.crc32c(rows), expected)
    out = np.empty((3, 4), dtype=np.uint32)
    assert kernels.crc32c(rows, out=out) is out
    np.testing.assert_array_equal(out, expected)
    starts = np.array([0, 1, 2, 3], dtype=np.uint32)  # broadcast over the rows
    got = kernels.crc32c(rows, starts)
    assert got[2, 3] == crc32c_ref.crc32c(rows[2, 3].tobytes(), 3)
    words = np.arange(10, dtype=">u2")  # any dtype: the items' raw bytes
    assert kernels.crc32c(words) == crc32c_ref.crc32c(words.tobytes())
    assert kernels.crc32c(words[::-3]) == crc32c_ref.crc32c(words[::-3].tobytes())
    assert kernels.crc32c(b"123456789") == 0xE3069283
    assert kernels.crc32c(np.zeros((0, 5), np.uint8)).shape == (0,)
    with pytest.raises(ValueError):
        kernels.crc32c(rows, out=np.empty((3, 4), dtype=np.int64))


def test_shard_index_pack_unpack_out():
    entries = np.array([[0, 10], [2**64 - 1, 2**64 - 1], [10, 6]], dtype=np.uint64)
    packed = np.empty(48, dtype=np.uint8)
    assert kernels.shard_index_pack(entries, out=packed) is packed
    assert packed.tobytes() == entries.astype("<u8").tobytes()
    out = np.empty((3, 2), dtype=np.uint64)
    assert kernels.shard_index_unpack(packed, 3, 16, out=out) is out
    np.testing.assert_array_equal(out, entries)
    with pytest.raises(ValueError):
        kernels.shard_index_pack(entries, out=np.empty(47, dtype=np.uint8))


@pytest.mark.parametrize("name", ["byteswap", "fill_equal", "is_fill", "copy_region", "transpose",
                                  "crc32c", "shard_index_pack", "shard_index_unpack",
                                  "shard_index_validate"])
def test_documented(name):
    assert len(getattr(kernels, name).__doc__ or "") > 40
