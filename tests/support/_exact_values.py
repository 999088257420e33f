"""An oracle for exact value equality, in Python's exact arithmetic one element at a time,
independent of zarrcore.tools.exact (which does it vectorised), and hypothesis strategies of
arrays over the data types convert and verify handle.

The rules (docs/guide/cli.md): one data type compares bit patterns; two compare the exact
numbers or instants they mean, NaN equal to NaN, NaT to NaT, the sign of zero counting between
two floats only; numbers never equal datetimes or timedeltas.
"""
import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

NUMBERS = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
TIMES = ["M8[D]", "M8[h]", "M8[s]", "M8[ms]", "M8[us]", "M8[ns]",
         "m8[h]", "m8[s]", "m8[ms]", "m8[ns]"]
DTYPES = NUMBERS + TIMES

# Attoseconds per unit: every fixed unit is a whole number of them.
_ATTOSECONDS = {"W": 7 * 86400 * 10**18, "D": 86400 * 10**18, "h": 3600 * 10**18,
                "m": 60 * 10**18, "s": 10**18, "ms": 10**15, "us": 10**12, "ns": 10**9,
                "ps": 10**6, "fs": 10**3, "as": 1}


def _parts(x, dtype):
    """An element as exact Python numbers: [real, imaginary] (ints or floats), or for
    datetimes and timedeltas ("M" or "m", attoseconds or None for NaT)."""
    if dtype.kind in "mM":
        count = int(np.asarray(x, dtype=dtype).view("i8"))
        if count == np.iinfo(np.int64).min:
            return dtype.kind, None
        unit, step = np.datetime_data(dtype)
        return dtype.kind, count * step * _ATTOSECONDS[unit]
    if dtype.kind == "c":
        return [float(x.real), float(x.imag)]
    if dtype.kind == "f":
        return [float(x), 0.0]
    return [int(x), 0]


def _same_part(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b  # Python compares ints and floats exactly (NaN equals nothing)


def same_value(x, a_dtype, y, b_dtype):
    """Do the element `x` of `a_dtype` and `y` of `b_dtype` hold the same value?"""
    a_dtype, b_dtype = np.dtype(a_dtype), np.dtype(b_dtype)
    if a_dtype == b_dtype:
        return np.asarray(x, a_dtype).tobytes() == np.asarray(y, b_dtype).tobytes()
    px, py = _parts(x, a_dtype), _parts(y, b_dtype)
    if isinstance(px, tuple) or isinstance(py, tuple):
        return px == py  # (the same kind and the same instant or duration, or both NaT)
    return all(_same_part(a, b) for a, b in zip(px, py))


def same_values(a, b):
    """Do two arrays of one shape hold the same values, element by element?"""
    return all(same_value(x, a.dtype, y, b.dtype) for x, y in zip(a.reshape(-1), b.reshape(-1)))


def cast(values, dtype):
    """numpy's cast, its warnings silenced (wrapping, overflow and dropped imaginary parts
    are what the tests look for)."""
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(values).astype(dtype)


def dtype_pairs():
    """Pairs of data types: mostly numbers with numbers and times with times (a number and a
    time never compare, so few of those are drawn)."""
    def pairs(names):
        return st.tuples(st.sampled_from(names), st.sampled_from(names))

    return st.one_of(pairs(NUMBERS), pairs(NUMBERS), pairs(TIMES), pairs(DTYPES))


@st.composite
def arrays_of(draw, dtype, near=None):
    """A small 1-d array of `dtype`: any of its values, or (half the time, when `near` is a
    data type) values of `near` cast to it, which convert back exactly more often."""
    shape = draw(st.integers(1, 9))
    source = np.dtype(near if near is not None and draw(st.booleans()) else dtype)
    values = draw(hnp.arrays(source, shape, elements=hnp.from_dtype(source, allow_nan=True)))
    return cast(values, dtype)
