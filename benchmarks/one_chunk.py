#!/usr/bin/env python3
"""Per-call cost of one-chunk reads `a[t]` against the native handle's read of the same chunk.

    python benchmarks/one_chunk.py                      # interleaved timings, 2 layouts
    valgrind --tool=callgrind --toggle-collect=map_next \\
        python benchmarks/one_chunk.py --calls 300 --rounds 1 --only "a[t]" --layout plain

An ERA5-like float32 array of (2000, 64, 128), zstd level 1, of one-sample chunks (`plain`)
or of shards of 8 samples in one-sample inner chunks (`sharded`), written once under --root.
Per layout, the reads of --calls random time steps, run by `map` so that the loop itself is
one C call per read (callgrind's --toggle-collect=map_next counts only the reads):

  a[t]                  the array's read (R0 since the one-chunk route, docs/architecture.md §4)
  a[t] planned          what every `a[t]` ran before it: pop_fields, numpy_indexer, Array._read
  ArrayHandle.read      the floor: the native handle (zc_array_read) reading the same region

The reads take turns within each of --rounds rounds, after one warm-up round (warm page
cache); per read, the min, median and max µs per call over the rounds.
"""
import argparse
import collections
import os
import time

import numpy as np

import zarrcore
from zarrcore.metadata.indexing import numpy_indexer, pop_fields

SHAPE, SAMPLE = (2000, 64, 128), (1, 64, 128)
LAYOUTS = {"plain": None, "sharded": (8, 64, 128)}


def open_layout(root, layout):
    path = os.path.join(root, f"{layout}.zarr")
    if not os.path.exists(path):
        data = np.random.default_rng(0).standard_normal(SHAPE).astype("f4")
        a = zarrcore.create_array(path, shape=SHAPE, chunks=SAMPLE, shards=LAYOUTS[layout],
                                  dtype="f4",
                                  compressors=[{"name": "zstd", "configuration": {"level": 1}}])
        a[...] = data
    return zarrcore.open_array(path, mode="r")


def reads(a, calls):
    """{name: a function reading `calls` random samples}."""
    h = a.native_handle()
    steps = np.random.default_rng(1).integers(0, SHAPE[0], calls).tolist()
    starts, shapes = [[t, 0, 0] for t in steps], [SAMPLE] * calls

    def planned(t):
        fields, selection = pop_fields(t)
        return a._read(numpy_indexer(selection, a.shape, a._grid), fields=fields)

    return {"a[t]": lambda: collections.deque(map(a.__getitem__, steps), 0),
            "a[t] planned": lambda: collections.deque(map(planned, steps), 0),
            "ArrayHandle.read": lambda: collections.deque(map(h.read, starts, shapes), 0)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default="/tmp/zarrcore-one-chunk")
    p.add_argument("--layout", choices=sorted(LAYOUTS), action="append")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--only", help="one read's name")
    args = p.parse_args()
    for layout in args.layout or sorted(LAYOUTS):
        funcs = reads(open_layout(args.root, layout), args.calls)
        if args.only:
            funcs = {args.only: funcs[args.only]}
        per_call = {name: [] for name in funcs}
        for f in funcs.values():
            f()
        for _ in range(args.rounds):
            for name, f in funcs.items():
                t0 = time.perf_counter()
                f()
                per_call[name].append((time.perf_counter() - t0) / args.calls * 1e6)
        for name, us in per_call.items():
            us.sort()
            print(f"{layout:8} {name:18} min {us[0]:6.1f}  median {us[len(us) // 2]:6.1f}  "
                  f"max {us[-1]:6.1f} µs/call")


if __name__ == "__main__":
    main()
