"""How the keys a rewrite must learn the versions of are cut into listings."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarrcore.storage._object_versions import listing_runs


def _grid(*shape):
    keys = [""]
    for n in shape:
        keys = [f"{k}/{i}" if k else f"c/{i}" for k in keys for i in range(n)]
    return sorted(keys)


@pytest.mark.parametrize(
    ("keys", "runs"),
    [
        (_grid(8), [8]),  # (one listing answers in one flight)
        (_grid(4, 4, 4), [16] * 4),  # (a folder each: 64 keys would take two flights)
        (_grid(8, 8, 8), [64] * 8),  # (folders of 8 would take 64 listings: 16 at most)
        (sorted(f"{i}.{j}" for i in range(40) for j in range(40)), [800] * 2),  # (pages)
    ],
    ids=["few", "folders", "at-most-16", "one-folder-in-pages"],
)
def test_runs_fit_a_flight_in_few_listings(keys, runs):
    got = listing_runs(keys, 32, 16, 1000)
    assert [len(r) for r in got] == runs
    assert [k for r in got for k in r] == keys


@given(st.lists(st.lists(st.sampled_from("ab0"), min_size=1, max_size=3), min_size=1,
                unique_by=tuple),
       st.integers(1, 8), st.integers(1, 4), st.integers(1, 8))
def test_runs_keep_every_key_in_order_at_most_a_page_each(parts, flight, listings, most):
    keys = sorted("/".join(p) for p in parts)
    got = listing_runs(keys, flight, listings, most)
    assert [k for r in got for k in r] == keys
    assert all(0 < len(r) <= most for r in got)
