"""Byte-range coalescing: spans of one stored object close together read by one request."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Int64s", "coalesce_spans"]

Int64s = npt.NDArray[np.int64]


def coalesce_spans(
    starts: npt.ArrayLike, stops: npt.ArrayLike, gap: int, most: int | None
) -> tuple[Int64s, Int64s, Int64s]:
    """Group byte spans [starts[i], stops[i]) (int64, in any order, overlaps allowed) into
    requests: a span at most `gap` bytes past the reach of the spans before it (by start)
    shares their request while it then spans at most `most` bytes (None: any length; a
    longer span is a request of its own). Returns (first, stop, group): request g reads
    [first[g], stop[g]), span i lies in request group[i]; requests ascend."""
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    first, last = starts[order], ends[order]
    reach = np.maximum.accumulate(last) if last.size else last
    opens = np.ones(first.size, dtype=bool)
    opens[1:] = first[1:] - reach[:-1] > gap
    if most is not None and first.size:
        heads = np.flatnonzero(opens)
        if (np.maximum.reduceat(last, heads) - first[heads] > most).any():
            _cap(first, last, opens, most)
    heads = np.flatnonzero(opens)
    group = np.empty(first.size, dtype=np.int64)
    group[order] = np.cumsum(opens) - 1
    request_stops = np.maximum.reduceat(last, heads) if heads.size else last[:0]
    return first[heads], request_stops, group


def _cap(first: Int64s, last: Int64s, opens: npt.NDArray[np.bool_], most: int) -> None:
    """Open a new request (in `opens`) at each span (sorted by `first`) that would make its
    request span more than `most` bytes."""
    start, reach = 0, 0
    for i in range(first.size):
        if not opens[i] and max(reach, int(last[i])) - start > most:
            opens[i] = True
        if opens[i]:
            start, reach = int(first[i]), int(last[i])
        else:
            reach = max(reach, int(last[i]))
