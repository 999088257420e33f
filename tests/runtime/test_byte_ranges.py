"""The one byte-range coalescing rule, which shards' and references' reads share."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcore.runtime.byte_ranges import coalesce_spans


def test_spans_within_the_gap_share_a_request_of_at_most_most_bytes():
    # Given out of order: 10 bytes apart shares at gap 10, 11 apart does not; overlaps join.
    starts, stops = [120, 0, 20, 25, 41], [130, 10, 30, 31, 50]
    first, stop, group = coalesce_spans(starts, stops, 10, None)
    assert (first.tolist(), stop.tolist(), group.tolist()) == (
        [0, 120], [50, 130], [1, 0, 0, 0, 0])
    first, stop, group = coalesce_spans(starts, stops, 9, None)
    assert (first.tolist(), stop.tolist()) == ([0, 20, 41, 120], [10, 31, 50, 130])
    # At most 30 bytes a request; a longer span is one alone.
    first, stop, group = coalesce_spans([0, 10, 20, 100], [10, 20, 40, 200], 10, 30)
    assert (first.tolist(), stop.tolist(), group.tolist()) == (
        [0, 20, 100], [20, 40, 200], [0, 0, 1, 2])
    first, stop, group = coalesce_spans([], [], 10, 30)
    assert (first.size, stop.size, group.size) == (0, 0, 0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 120)), max_size=40),
    st.integers(0, 50),
    st.one_of(st.none(), st.integers(1, 300)),
)
def test_every_span_lies_in_one_request_within_the_limits(spans, gap, most):
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    stops = starts + np.array([n for _, n in spans], dtype=np.int64)
    first, stop, group = coalesce_spans(starts, stops, gap, most)
    assert (np.diff(first) >= 0).all() and (stop > first).all()
    assert (first[group] <= starts).all() and (stops <= stop[group]).all()
    assert sorted(set(group.tolist())) == list(range(first.size))
    for g in range(first.size):
        members = group == g
        assert first[g] == starts[members].min() and stop[g] == stops[members].max()
        if most is not None and stop[g] - first[g] > most:
            # (more than `most` only for a span alone that long)
            assert (stops[members] - starts[members]).max() > most
    # Requests no further apart than the gap only where `most` cut them.
    for g in range(1, first.size):
        if first[g] - stop[:g].max() <= gap:
            assert most is not None
