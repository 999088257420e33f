#!/usr/bin/env python3
"""Reading scattered points with .vindex: zarrcore against zarr-python, per point.

    python benchmarks/vindex.py                    # 1M points, 4096x4096 float32
    python benchmarks/vindex.py --points 100000 --chunks 64

Both libraries read the same data (written by each into its own in-memory store, or a
directory with --local); every result is checked against numpy. Prints the best of
--repeats per library, ns per point, and the ratio.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import zarrcore  # noqa: E402


def best_time(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--side", type=int, default=4096)
    p.add_argument("--chunks", type=int, default=256)
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compressor", choices=["zstd", "none"], default="zstd")
    p.add_argument("--local", action="store_true", help="directory stores instead of memory")
    args = p.parse_args()

    import zarr

    shape, chunks = (args.side, args.side), (args.chunks, args.chunks)
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    rng = np.random.default_rng(1)
    points = (rng.integers(0, args.side, args.points), rng.integers(0, args.side, args.points))
    expected = data[points]

    tmp = tempfile.TemporaryDirectory()
    if args.local:
        ours_store, theirs_store = os.path.join(tmp.name, "zc"), os.path.join(tmp.name, "zp")
    else:
        ours_store, theirs_store = zarrcore.MemoryStore(), zarr.storage.MemoryStore()
    ours_comp = None if args.compressor == "none" else [{"name": "zstd", "configuration": {"level": 1}}]
    theirs_comp = None if args.compressor == "none" else [zarr.codecs.ZstdCodec(level=1)]
    ours = zarrcore.create_array(ours_store, shape=shape, chunks=chunks, dtype="f4", compressors=ours_comp)
    ours[...] = data
    theirs = zarr.create_array(theirs_store, shape=shape, chunks=chunks, dtype="f4", compressors=theirs_comp)
    theirs[...] = data

    t_ours, got = best_time(lambda: ours.vindex[points], args.repeats)
    np.testing.assert_array_equal(got, expected)
    t_theirs, got = best_time(lambda: theirs.vindex[points], args.repeats)
    np.testing.assert_array_equal(got, expected)

    n = args.points
    print(f"{n} points, shape {shape}, chunks {chunks}, {args.compressor}, "
          f"{'directory' if args.local else 'memory'} store, best of {args.repeats}")
    print(f"  zarrcore     {t_ours * 1e3:9.1f} ms  {t_ours / n * 1e9:8.1f} ns/point")
    print(f"  zarr-python  {t_theirs * 1e3:9.1f} ms  {t_theirs / n * 1e9:8.1f} ns/point")
    print(f"  zarr-python / zarrcore per point: {t_theirs / t_ours:.1f}x")


if __name__ == "__main__":
    main()
