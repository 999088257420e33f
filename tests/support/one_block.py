"""Hypothesis strategies and checks of reads in one chunk (R0), shared by the tests of its
routes."""
import numpy as np
from hypothesis import strategies as st


@st.composite
def in_one_chunk(draw, shape, block):
    """A basic selection (ints, negative ones too, slices with steps, Ellipsis, newaxis)
    whose items all fall in one block (chunk, or inner chunk) of an array of `shape`."""
    items = []
    for n, b in zip(shape, block):
        c = draw(st.integers(0, (n - 1) // b))
        lo, hi = c * b, min(n, (c + 1) * b)
        kind = draw(st.sampled_from(["int", "neg", "slice", "whole"]))
        if kind == "int":
            items.append(draw(st.integers(lo, hi - 1)))
        elif kind == "neg":
            items.append(draw(st.integers(lo, hi - 1)) - n)
        elif kind == "whole" and n <= b:
            items.append(slice(None))
        else:
            start = draw(st.integers(lo, hi - 1))
            stop = draw(st.integers(start + 1, hi))
            items.append(slice(start, stop, draw(st.integers(1, 3))))
    if draw(st.booleans()):  # trailing whole axes of one block as an Ellipsis
        k = len(items)
        while k and items[k - 1] == slice(None):
            k -= 1
        items = items[:k] + [Ellipsis] if draw(st.booleans()) else items[:k]
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


def same_result(got, want, order):
    assert type(got) is type(want)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
    if want.dtype.names:
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()
    else:
        np.testing.assert_array_equal(got, want)
    if isinstance(got, np.ndarray) and got.ndim > 1:
        assert got.flags["F_CONTIGUOUS" if order == "F" else "C_CONTIGUOUS"]
