"""The one byte-range coalescing rule, which shards' and references' reads share."""

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
