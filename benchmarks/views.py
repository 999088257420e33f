#!/usr/bin/env python3
"""Chained lazy views against the single equivalent selection, the eager chain and tensorstore.

    python benchmarks/views.py                        # 4096x4096 float32, 256² zstd chunks
    python benchmarks/views.py --side 512 --repeats 1 # smoke test

For each chain of three steps (basic with negative steps, orthogonal then transposed,
vectorized after slices) it times, best of --repeats, on one directory array:

- `view chain`: `a.lazy[s1][s2][s3].read()` (composing included);
- `single`: the one selection of the array the chain composes to, read by the Array's own
  get_*_selection (what the chain is measured against: target at most 1.1x);
- `eager chain`: zarrcore without views, `a[s1]` read whole, then numpy for s2 and s3;
- `tensorstore`: the same chain on tensorstore's lazy indexing (`ts[s1][s2][s3].read()`) of
  the same directory, when tensorstore is installed (vectorized steps as tensorstore spells
  them: `.vindex`).

Every result is checked against numpy. Before timing, the chain and the single selection each
read a counting in-memory copy of the array: the chunk keys and bytes they fetch must match.
"""
import argparse
import os
import sys
import tempfile
import time
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import zarrcore  # noqa: E402
from zarrcore.storage import MemoryStore  # noqa: E402


class CountingStore(MemoryStore):
    """Counts the bytes fetched per chunk key (every read ends in `get`)."""

    def __init__(self):
        super().__init__()
        self.fetched = Counter()

    def get(self, key, start=None, stop=None):
        value = super().get(key, start, stop)
        if value is not None and not key.endswith("zarr.json"):
            self.fetched[key] += len(value)
        return value


def best_time(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def chains(side):
    """{name: ([(mode, key) x 3], numpy function of the data)} of three-step chains."""
    rng = np.random.default_rng(1)
    q = side // 8
    rows = np.sort(rng.choice(side - 2 * q, side // 4, replace=False))[::-1].copy()
    cols = rng.choice(side - q, side // 8, replace=False)
    pts = (rng.integers(0, side // 2 - q, 50_000), rng.integers(0, side - 2 * q, 50_000))
    return {
        "basic": ([("numpy", np.s_[q:side - q]), ("numpy", np.s_[::-1, q // 2:]),
                   ("numpy", np.s_[::3, ::-2])],
                  lambda d: d[q:side - q][::-1, q // 2:][::3, ::-2]),
        "orthogonal+T": ([("numpy", np.s_[q:]), ("oindex", np.s_[rows, cols]), ("T", None)],
                         lambda d: d[q:][np.ix_(rows, cols)].T),
        "vectorized": ([("numpy", np.s_[::2]), ("numpy", np.s_[q:, q:]),
                        ("vindex", pts)],
                       lambda d: d[::2][q:, q:][pts]),
    }


def apply(view, mode, key):
    if mode == "T":
        return view.T
    if mode == "oindex":
        return view.oindex[key]
    if mode == "vindex":
        return view.vindex[key]
    return view[key]


def eager(array, steps):
    mode, key = steps[0]
    data = array[key]
    for mode, key in steps[1:]:
        if mode == "T":
            data = data.T
        elif mode == "oindex":
            data = data[np.ix_(*key)]
        else:
            data = data[key]
    return data


def single(array, view):
    plan = view.transform.plan()
    get = {"basic": array.get_basic_selection, "orthogonal": array.get_orthogonal_selection,
           "coordinate": array.get_coordinate_selection}[plan.kind]
    return plan.to_view(get(plan.selection))


def through_views(array, steps):
    view = array.lazy
    for mode, key in steps:
        view = apply(view, mode, key)
    return view


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--side", type=int, default=4096)
    p.add_argument("--chunks", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    try:
        import tensorstore as ts
    except ImportError:
        ts = None

    shape, chunks = (args.side, args.side), (args.chunks, args.chunks)
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    tmp = tempfile.TemporaryDirectory()
    path = os.path.join(tmp.name, "a.zarr")
    compressors = [{"name": "zstd", "configuration": {"level": 1}}]
    a = zarrcore.create_array(path, shape=shape, chunks=chunks, dtype="f4",
                              compressors=compressors)
    a[...] = data
    counted = zarrcore.create_array(CountingStore(), shape=shape, chunks=chunks, dtype="f4",
                                    compressors=compressors)
    counted[...] = data
    theirs = None
    if ts is not None:
        theirs = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                         open=True).result()

    print(f"shape {shape}, chunks {chunks}, zstd, directory store, best of {args.repeats}; "
          f"ms (ratio to single)")
    print(f"{'chain':14} {'view chain':>16} {'single':>9} {'eager chain':>16} "
          f"{'tensorstore':>16}")
    for name, (steps, numpy_chain) in chains(args.side).items():
        expected = numpy_chain(data)
        store = counted.store
        store.fetched.clear()
        through_views(counted, steps).read()
        by_view = Counter(store.fetched)
        store.fetched.clear()
        single(counted, through_views(counted, steps))
        assert by_view == store.fetched, f"{name}: the chain fetched other bytes"

        t_view, got = best_time(lambda: through_views(a, steps).read(), args.repeats)
        np.testing.assert_array_equal(got, expected)
        view = through_views(a, steps)
        t_single, got = best_time(lambda: single(a, view), args.repeats)
        np.testing.assert_array_equal(got, expected)
        t_eager, got = best_time(lambda: eager(a, steps), args.repeats)
        np.testing.assert_array_equal(got, expected)
        row = (f"{name:14} {t_view * 1e3:9.1f} ({t_view / t_single:4.2f}) "
               f"{t_single * 1e3:9.1f} {t_eager * 1e3:9.1f} ({t_eager / t_single:4.2f})")
        if theirs is not None:
            t_ts, got = best_time(lambda: ts_chain(theirs, steps).read().result(),
                                  args.repeats)
            np.testing.assert_array_equal(got, expected)
            row += f" {t_ts * 1e3:9.1f} ({t_ts / t_single:4.2f})"
        else:
            row += f" {'not installed':>16}"
        print(row)
    print(f"bytes fetched match between each chain and its single selection "
          f"({sum(by_view.values())} for the last)")


def ts_chain(store, steps):
    import tensorstore as ts
    for mode, key in steps:
        if mode == "T":
            store = store.T
        elif mode == "oindex":
            store = store.oindex[key]
        elif mode == "vindex":
            store = store.vindex[key]
        else:
            store = store[key]
        # tensorstore keeps absolute coordinates: shift each step back to origin 0, as numpy
        store = store[ts.d[:].translate_to[0]]
    return store


if __name__ == "__main__":
    main()
