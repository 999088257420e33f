"""The cache shared by a loader's workers (`open_array(..., shared_cache=True)`): two epochs
of shuffled random samples of an ERA5-like (1000, 64, 128) float32 zstd array (32 MiB
decoded, one sample per chunk) read by a pool of 2 worker processes (fork, then spawn) in
batches of 32 `a[t]`, with a 64 MiB budget shared by the workers, and with the same budget
per process (the in-process cache, whose epoch 2 draws samples the other worker cached).
Prints samples/s of each epoch (median over repeats) and epoch 2 / epoch 1. Then the cost
of one hit, `a[t]` of a cached sample in one process: shared table against in-process.

    python benchmarks/shared_cache.py [DIR] [--repeats N]

On a loaded machine, count instructions instead: --only MODE reads --calls samples by `map`
in this process (callgrind's --toggle-collect=map_next counts only those reads), MODE one of
fill (a worker's epoch 1 through the shared table: misses, decoded and stored), shared and
local (hits of the shared table and of the in-process cache), none (no cache):

    valgrind --tool=callgrind --toggle-collect=map_next \\
        python benchmarks/shared_cache.py DIR --only fill --calls 300
"""
import argparse
import collections
import multiprocessing
import os
import statistics
import tempfile
import time

import numpy as np

import zarrcore

SHAPE, CHUNKS = (1000, 64, 128), (1, 64, 128)
BUDGET = 64 << 20
BATCH = 32
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}

_array = None


def _init(array):
    global _array
    _array = array


def _read(batch):
    for t in batch:
        _array[int(t)]
    return len(batch)


def epochs(path, method, shared, seed):
    """Samples/s of epoch 1 and epoch 2 of a fresh 2-worker pool."""
    a = zarrcore.open_array(path, mode="r", cache_bytes=BUDGET, shared_cache=shared)
    rng = np.random.default_rng(seed)
    rates = []
    with multiprocessing.get_context(method).Pool(2, _init, (a,)) as pool:
        pool.map(_read, [[0]] * 2)  # (workers started and imported)
        for _ in range(2):
            order = rng.permutation(SHAPE[0])
            batches = [order[k:k + BATCH] for k in range(0, len(order), BATCH)]
            t = time.perf_counter()
            n = sum(pool.map(_read, batches, chunksize=1))
            rates.append(n / (time.perf_counter() - t))
    return rates


def hit_cost(path, shared, reads=2000):
    """Microseconds per `a[t]` served from the cache, in this process."""
    a = zarrcore.open_array(path, mode="r", cache_bytes=BUDGET, shared_cache=shared)
    for t in range(SHAPE[0]):
        a[t]
    ts = np.random.default_rng(1).integers(0, SHAPE[0], reads)
    best = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for t in ts:
            a[int(t)]
        best.append((time.perf_counter_ns() - t0) / reads / 1e3)
    return statistics.median(best)


def only(path, mode, calls):
    """--only: `calls` reads of `mode` by one `map` (see the module's docstring)."""
    a = zarrcore.open_array(path, mode="r", cache_bytes=0 if mode == "none" else BUDGET,
                            shared_cache=mode in ("fill", "shared"))
    steps = np.random.default_rng(1).permutation(SHAPE[0])[:calls].tolist()
    if mode in ("shared", "local"):
        for t in steps:
            a[t]
    collections.deque(map(a.__getitem__, steps), 0)
    print(mode, a.cache_info())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir", nargs="?")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", choices=["fill", "shared", "local", "none"])
    p.add_argument("--calls", type=int, default=300)
    args = p.parse_args()
    directory = args.dir or tempfile.mkdtemp()
    path = f"{directory}/era5.zarr"
    if args.only is not None and args.dir is not None and os.path.exists(path):
        return only(path, args.only, args.calls)
    data = (np.random.default_rng(0).standard_normal(SHAPE) * 10).round(2).astype("f4")
    a = zarrcore.create_array(path, shape=SHAPE, dtype="f4", chunks=CHUNKS, compressors=[ZSTD],
                              overwrite=True)
    a[...] = data
    time.sleep(1.2)  # (files written within the last second are read but not cached)
    if args.only is not None:
        return only(path, args.only, args.calls)
    for method in ("fork", "spawn"):
        for shared in (True, False):
            runs = [epochs(path, method, shared, seed) for seed in range(args.repeats)]
            e1 = statistics.median(r[0] for r in runs)
            e2 = statistics.median(r[1] for r in runs)
            print(f"{method:5} {'shared     ' if shared else 'per-process'} epoch 1 "
                  f"{e1:8.0f}/s  epoch 2 {e2:8.0f}/s  epoch 2 / epoch 1 {e2 / e1:5.2f}")
    for shared in (False, True):
        print(f"hit of a[t] in one process, {'shared' if shared else 'in-process'} cache: "
              f"{hit_cost(path, shared):6.1f} us")


if __name__ == "__main__":
    main()
