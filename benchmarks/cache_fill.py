"""The cost of filling the decoded-chunk cache: the first pass of random samples of an
ERA5-like (2000, 64, 128) float32 zstd array, in a fresh process each, through
`open_array(..., cache_bytes=600 MiB)` and without a cache. Layouts: one sample per chunk
("plain") and the same inner chunks in shards of 8 samples ("sharded"); reads: `a[t]` one
sample at a time ("single") and `a.oindex[idx]` in batches of 32 sorted samples ("batch").
Runs are interleaved (cached, uncached, next read, ...) and repeated; prints per case the
median over repeats of samples/s (wall) and of the CPU microseconds per sample (user and
system, all the process's threads; and the calling thread's alone, which for `single` is
the reader's), and the ratio cached / uncached of the medians.
Children run with one BLAS thread (numpy's idle BLAS threads otherwise spin beside them).

    python benchmarks/cache_fill.py [DIR] [--repeats N] [--samples N]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import zarrcore

SHAPE = (2000, 64, 128)
CHUNKS = (1, 64, 128)
SHARDS = (8, 64, 128)
CACHE_BYTES = 600 << 20
BATCH = 32
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}


def write(directory):
    data = (np.random.default_rng(0).standard_normal(SHAPE) * 10).round(2).astype("f4")
    for name, shards in (("plain", None), ("sharded", SHARDS)):
        a = zarrcore.create_array(f"{directory}/{name}", shape=SHAPE, dtype="f4", chunks=CHUNKS,
                                  shards=shards, compressors=[ZSTD], overwrite=True)
        a[...] = data
    time.sleep(1.2)  # (files written within the last second are read but not cached)


def first_pass(path, cache_bytes, read, samples):
    """One fresh process's first pass: (samples/s, user, system, calling thread's CPU us per
    sample, cache info)."""
    a = zarrcore.open_array(path, mode="r", cache_bytes=cache_bytes)
    order = np.random.default_rng(1).permutation(SHAPE[0])[:samples]
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    own = time.thread_time()
    t = time.perf_counter()
    if read == "single":
        for i in order:
            a[int(i)]
    else:
        for k in range(0, samples, BATCH):
            a.oindex[np.sort(order[k:k + BATCH])]
    wall = time.perf_counter() - t
    own = time.thread_time() - own
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (samples / wall, (r1.ru_utime - r0.ru_utime) / samples * 1e6,
            (r1.ru_stime - r0.ru_stime) / samples * 1e6, own / samples * 1e6, a.cache_info())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir", nargs="?")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        path, cache_bytes, read = args.child
        print(json.dumps(first_pass(path, int(cache_bytes), read, args.samples)))
        return
    directory = args.dir or tempfile.mkdtemp()
    if not os.path.exists(f"{directory}/sharded"):
        write(directory)
    cases = [(layout, read) for layout in ("plain", "sharded") for read in ("single", "batch")]
    runs = {(case, cached): [] for case in cases for cached in (True, False)}
    for _ in range(args.repeats):
        for case in cases:
            for cached in (True, False):
                out = subprocess.run(
                    [sys.executable, __file__, "--samples", str(args.samples), "--child",
                     f"{directory}/{case[0]}", str(CACHE_BYTES if cached else 0), case[1]],
                    check=True, capture_output=True, text=True,
                    env=dict(os.environ, OPENBLAS_NUM_THREADS="1")).stdout
                *times, info = json.loads(out)
                if cached and info["inserts"] != min(args.samples, SHAPE[0]):
                    sys.exit(f"{case}: the first pass cached {info['inserts']} chunks")
                runs[case, cached].append(times)
    print(f"first pass of {args.samples} samples, median of {args.repeats} fresh processes")
    print(f"{'layout':8} {'read':7} {'cache':6} {'samples/s':>10} {'user us':>8} {'sys us':>7} "
          f"{'caller us':>9}")
    for case in cases:
        med = {}
        for cached in (True, False):
            med[cached] = [statistics.median(r[i] for r in runs[case, cached]) for i in range(4)]
            rate, user, system, caller = med[cached]
            print(f"{case[0]:8} {case[1]:7} {'600M' if cached else 'none':6} {rate:10.0f} "
                  f"{user:8.1f} {system:7.1f} {caller:9.1f}")
        print(f"{'':16}cached/uncached rate {med[True][0] / med[False][0]:.2f}, CPU "
              f"{sum(med[True][1:3]) / sum(med[False][1:3]):.2f}, "
              f"caller's CPU {med[True][3] / med[False][3]:.2f}")


if __name__ == "__main__":
    main()
