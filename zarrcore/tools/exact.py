"""Exact comparisons: do two arrays hold the same values, does a data type hold every value
of another, are two JSON documents the same. `convert --dtype` and `verify --values` both
decide here, so a conversion convert makes is one verify calls the same.

Values of one data type compare as bit patterns: -0.0 differs from 0.0, NaNs of other
payloads differ, NaT equals NaT. Values of two data types compare as the exact numbers or
instants they mean, whatever numpy's type promotion would round them to: int64 2**53 + 1
differs from float64 2**53; NaN equals NaN and NaT equals NaT; between two floating-point
types the sign of zero counts, between an integer (or bool) and a float it does not (an
integer has none); a complex value is its real and imaginary parts, a real one has an
imaginary part of zero; ml_dtypes' types (bfloat16, float8_*, int4...) are the floats or
integers they hold; datetimes and timedeltas of other units compare as the instants and
durations they mean, and one that the other unit cannot represent differs; strings compare
as text (or bytes), Python objects item by item. Values of kinds that mean different things
(numbers and datetimes, bytes and text) never compare equal.

Arrays are compared in pieces of PIECE elements, so what a comparison allocates stays small
whatever the arrays' sizes; numpy's loops release the GIL.
"""

from __future__ import annotations

import math
import struct
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["PIECE", "comparable", "converted_exactly", "first_difference", "lossless", "same_json"]

#: Elements compared at a time: the temporaries of a comparison hold a few of these.
PIECE = 1 << 16

_NUMERIC = "biufc"
_NAT = np.iinfo(np.int64).min


def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def _plain(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The numpy type that holds every value of `dtype` exactly: itself, or for a type of
    ml_dtypes (bfloat16, float8_*, int4...) int64 or float64, to which it casts safely."""
    if dtype.kind != "V" or dtype.type is np.void:
        return dtype
    for plain in (np.dtype(np.int64), np.dtype(np.float64)):
        if np.can_cast(dtype, plain, casting="safe"):
            return plain
    return dtype


def comparable(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    """Can values of data types `a` and `b` be compared as numbers, instants or text (else
    none of them is equal)?"""
    a, b = _native(a), _native(b)
    if a == b:
        return True
    a, b = _plain(a), _plain(b)
    if a.kind in _NUMERIC and b.kind in _NUMERIC:
        return True
    if a.kind == b.kind and a.kind in "mM":
        try:
            np.promote_types(a, b)
        except TypeError:  # units without a common divisor (years and days of timedeltas)
            return False
        return True
    # Text with text, bytes with bytes; Python objects (format 2's variable-length strings
    # read as objects) with either, item by item.
    kinds = {a.kind, b.kind}
    return kinds <= set("UTO") or kinds <= set("SO")


def lossless(source: np.dtype[Any], target: np.dtype[Any]) -> bool:
    """Does `target` hold every value of `source` exactly, so that a conversion needs no
    check of its values? (By the ranges and mantissas of the types, not numpy's casting
    table, which calls int64 to float64 safe.)"""
    source, target = _native(source), _native(target)
    if source == target:
        return True
    s, t = source.kind, target.kind
    if s in "biu" and t in "iu":
        (lo, hi), (low, high) = _int_range(source), _int_range(target)
        return bool(low <= lo and hi <= high)
    if s in "biu" and t in "fc":
        # Every integer up to 2**(mantissa bits + 1) in magnitude is a float of the type.
        lo, hi = _int_range(source)
        return bool(max(hi, -lo) <= 2 ** (np.finfo(target).nmant + 1))
    if s in "fc" and t in "fc" and not (s == "c" and t == "f"):
        theirs, ours = np.finfo(source), np.finfo(target)  # (of a complex type's parts)
        return (
            ours.nmant >= theirs.nmant
            and ours.maxexp >= theirs.maxexp
            and ours.minexp - ours.nmant <= theirs.minexp - theirs.nmant
        )
    return False


def _int_range(dtype: np.dtype[Any]) -> tuple[int, int]:
    if dtype.kind == "b":
        return 0, 1
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def first_difference(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> tuple[int, ...] | None:
    """The first index (C order) where `a` and `b`, arrays of one shape, hold other values
    (see the module's rules), or None when they hold the same."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"shapes {a.shape} and {b.shape} differ")
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    for start in range(0, flat_a.size, PIECE):
        differ = _differ(flat_a[start : start + PIECE], flat_b[start : start + PIECE])
        if differ.any():
            at = start + int(np.argmax(differ))
            return tuple(int(i) for i in np.unravel_index(at, a.shape))
    return None


def _differ(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Where the 1-d arrays `a` and `b` hold other values."""
    a = a.astype(_native(a.dtype), copy=False)
    b = b.astype(_native(b.dtype), copy=False)
    if not comparable(a.dtype, b.dtype):
        return np.ones(a.shape, dtype=bool)
    if a.dtype == b.dtype:
        if a.dtype.hasobject or a.dtype.kind == "T":
            return np.asarray(a != b, dtype=bool)
        return _other_bits(a, b)
    a, b = a.astype(_plain(a.dtype), copy=False), b.astype(_plain(b.dtype), copy=False)
    if a.dtype.kind in "SUTO":
        return np.asarray(a != b, dtype=bool)
    if a.dtype.kind in "mM":
        return _other_times(a, b)
    return ~_same_numbers(a, b)


def _other_bits(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    size = a.dtype.itemsize
    if size in (1, 2, 4, 8):
        word = np.dtype(f"u{size}")
        return np.asarray(a.view(word) != b.view(word))
    width = (8, size // 8) if size % 8 == 0 else (1, size)
    word = np.dtype(f"u{width[0]}")
    bytes_a = np.ascontiguousarray(a).view(word).reshape(-1, width[1])
    bytes_b = np.ascontiguousarray(b).view(word).reshape(-1, width[1])
    return np.asarray((bytes_a != bytes_b).any(axis=1))


def _parts(x: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """A numeric array's real parts and imaginary parts (of a real one zeros of its type: an
    integer's zero has no sign, a float's is +0.0); bools as the integers 0 and 1."""
    if x.dtype.kind == "c":
        return x.real, x.imag
    real = x.view(np.uint8) if x.dtype.kind == "b" else x
    return real, np.zeros(x.shape, dtype=real.dtype)


def _same_numbers(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    (real_a, imag_a), (real_b, imag_b) = _parts(a), _parts(b)
    same = _same_reals(real_a, real_b)
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        same &= _same_reals(imag_a, imag_b)
    return same


def _same_reals(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Where two real arrays (integers or floats) hold the same numbers."""
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        wide = np.promote_types(a.dtype, b.dtype)  # holds both exactly
        x, y = a.astype(wide), b.astype(wide)
        return np.asarray(
            ((x == y) & (np.signbit(x) == np.signbit(y))) | (np.isnan(x) & np.isnan(y))
        )
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        floats, ints = (a, b) if a.dtype.kind == "f" else (b, a)
        return _float_is_int(floats, ints)
    if a.dtype != np.uint64 and b.dtype != np.uint64:
        return np.asarray(a.astype(np.int64) == b.astype(np.int64))
    # Beside a uint64 (which int64 cannot hold), a negative integer differs.
    return np.asarray(
        _nonnegative(a) & _nonnegative(b) & (a.astype(np.uint64) == b.astype(np.uint64))
    )


def _nonnegative(x: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    return np.ones(x.shape, dtype=bool) if x.dtype.kind == "u" else np.asarray(x >= 0)


def _float_is_int(floats: npt.NDArray[Any], ints: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Where a float is exactly the integer beside it: integral and within the integer
    type's range (whose bounds are powers of two, exact as floats), then compared in it."""
    lo, hi = _int_range(ints.dtype)
    wide = np.promote_types(floats.dtype, np.float64)
    x = floats.astype(wide)
    with np.errstate(invalid="ignore"):
        fits = (x >= lo) & (x < float(hi + 1)) & (x == np.trunc(x))
    as_int = np.where(fits, x, 0).astype(ints.dtype)
    return np.asarray(fits & (as_int == ints))


def _other_times(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Where datetimes (or timedeltas) of two units hold other instants (durations): each
    is taken to the finest unit holding both, where it is kept only if it converts back to
    itself (numpy wraps around on overflow, and rounds down where a unit cannot say it)."""
    common = np.promote_types(a.dtype, b.dtype)
    nat_a, nat_b = a.view(np.int64) == _NAT, b.view(np.int64) == _NAT
    in_a, in_b = _in_unit(a, common), _in_unit(b, common)
    same = (nat_a & nat_b) | (~nat_a & ~nat_b & (in_a[1] & in_b[1]) & (in_a[0] == in_b[0]))
    return np.asarray(~same)


def _in_unit(
    x: npt.NDArray[Any], unit: np.dtype[Any]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """(`x`'s counts in `unit`, where they are exact)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        there = x.astype(unit)
        back = there.astype(x.dtype)
    return there.view(np.int64), np.asarray(back.view(np.int64) == x.view(np.int64))


def converted_exactly(
    values: npt.NDArray[Any], dtype: np.dtype[Any]
) -> tuple[npt.NDArray[Any], tuple[int, ...] | None]:
    """(`values` in `dtype`, the index of the first value that does not convert exactly or
    None). Only pairs `comparable` converts; others are all refused (index of the first)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        out = values.astype(dtype)
    if lossless(values.dtype, dtype):
        return out, None
    return out, first_difference(values, out)


def same_json(a: Any, b: Any) -> bool:
    """Are two JSON documents (as json.loads gives them) the same, typed: true, 1 and 1.0
    differ, as do -0.0 and 0.0; NaN equals NaN; key order does not count, list order does."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)
