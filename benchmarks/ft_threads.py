"""User threads reading and writing disjoint regions chunk by chunk, zarrcore's own pool at
one thread (config num_threads=1): the time of 1 and of 2 threads (the same total work), and
the speed-up. On a free-threaded Python the Python part of each call runs in parallel too; on a
GIL build only the compiled part does, so small chunks cannot scale there.

    python benchmarks/ft_threads.py [--chunks 16 256] [--rounds 40] [--repeats 5] [--json FILE]

Standard library, numpy, zarrcore and _common.py only; any interpreter (3.13t with the GIL
off, or a GIL build).
"""
import argparse
import json
import os
import sys
import sysconfig
import tempfile
import threading
import time
import zlib

import numpy as np

import zarrcore

import _common as C

# Chunks per thread's region along the first axis; the second axis is one chunk wide.
ROWS_OF_CHUNKS = 64
# Files each thread replaces in file_system_scaling.
FILE_SYSTEM_WRITES = 1000


def _run(threads, work):
    """(wall seconds, CPU seconds of the threads together) of work(i) in `threads` threads
    started together."""
    barrier = threading.Barrier(threads + 1)
    errors = []
    cpu = [0.0] * threads

    def run(i):
        barrier.wait()
        start = time.thread_time()
        try:
            work(i)
        except BaseException as e:  # reported below
            errors.append(e)
        cpu[i] = time.thread_time() - start

    seconds = C.time_released_together(
        [threading.Thread(target=run, args=(i,)) for i in range(threads)], barrier)
    if errors:
        raise errors[0]
    return seconds, sum(cpu)


def _best(pairs):
    """The fastest round of 1 thread and of 2, each (wall seconds, CPU seconds)."""
    return min(p[0] for p in pairs), min(p[1] for p in pairs)


def measure(store_kind, chunk, op, rounds, repeats):
    """(seconds with 1 thread, seconds with 2) for `rounds` passes over 2 regions of
    ROWS_OF_CHUNKS chunks of chunk x chunk float32 items: one thread does both regions, two
    threads one each."""
    with tempfile.TemporaryDirectory() as tmp:
        store = zarrcore.MemoryStore() if store_kind == "memory" else f"{tmp}/a.zarr"
        shape = (2 * ROWS_OF_CHUNKS * chunk, chunk)
        a = zarrcore.create_array(store, shape=shape, chunks=(chunk, chunk), dtype="f4",
                                  compressors=None, fill_value=0)
        a[...] = 1
        block = np.ones((chunk, chunk), dtype="f4")

        def pass_over(region):
            base = region * ROWS_OF_CHUNKS
            for _ in range(rounds):
                for k in range(base, base + ROWS_OF_CHUNKS):
                    rows = slice(k * chunk, (k + 1) * chunk)
                    if op == "read":
                        a[rows]
                    else:
                        a[rows] = block

        def one(_):
            pass_over(0)
            pass_over(1)

        return _best([(_run(1, one), _run(2, pass_over)) for _ in range(repeats)])


def machine_scaling(repeats):
    """(seconds with 1 thread, seconds with 2) of zlib compressing the same blocks, split
    between the threads: how far this machine lets two threads scale at this moment (zlib
    releases the GIL, so it scales on any build), to read the rows above against."""
    block = np.random.default_rng(0).integers(0, 16, 1 << 18, dtype=np.uint8).tobytes()

    def compress(blocks):
        for _ in range(blocks):
            zlib.compress(block, 6)

    return _best([(_run(1, lambda _: compress(16)), _run(2, lambda _: compress(8)))
                  for _ in range(repeats)])


def file_system_scaling(directory, repeats):
    """(seconds with 1 thread, seconds with 2) of the system calls one local chunk write
    makes (create a temporary file, write 1 KiB, rename it over the chunk's file), each
    thread in its own directory as the write rows' regions are: how far the file system
    lets two writers scale, to read the local write rows against."""
    data = bytes(1024)

    def replace(thread, files):
        folder = os.path.join(directory, str(thread))
        os.makedirs(folder, exist_ok=True)
        for i in range(files):
            tmp = os.path.join(folder, f".tmp-{i}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            os.write(fd, data)
            os.close(fd)
            os.rename(tmp, os.path.join(folder, str(i % ROWS_OF_CHUNKS)))

    return _best([(_run(1, lambda _: replace(0, 2 * FILE_SYSTEM_WRITES)),
                    _run(2, lambda i: replace(i, FILE_SYSTEM_WRITES)))
                   for _ in range(repeats)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--stores", nargs="+", default=["memory", "local"])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write the results there too")
    args = parser.parse_args()
    zarrcore.config.set(num_threads=1)
    free = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    print(f"Python {sys.version.split()[0]} {'free-threaded' if free else 'GIL build'}, "
          f"GIL {'on' if gil else 'off'}; zarrcore pool 1 thread")
    print(f"{'store':8} {'op':6} {'chunk':>6} {'1 thread s':>11} {'2 threads s':>12} "
          f"{'speed-up':>9} {'CPU 2/1':>8}")
    rows = []

    def row(store, op, chunk, one, two):
        # CPU 2/1: the CPU seconds of the same work in 2 threads over 1. Above 1, each thread
        # ran slower beside the other: contention in the code, or the machine's own (two
        # vCPUs sharing a core or its caches), which the zlib rows show.
        (t1, c1), (t2, c2) = one, two
        rows.append({"store": store, "op": op, "chunk": chunk, "t1": t1, "t2": t2,
                     "speedup": t1 / t2, "cpu1": c1, "cpu2": c2})
        print(f"{store:8} {op:6} {chunk:>6} {t1:11.4f} {t2:12.4f} {t1 / t2:9.2f} "
              f"{c2 / c1:8.2f}")

    # The machine's own scaling before and after the rows, in the same minutes.
    row("machine", "zlib", "", *machine_scaling(args.repeats))
    for store in args.stores:
        for op in ("read", "write"):
            for chunk in args.chunks:
                row(store, op, chunk, *measure(store, chunk, op, args.rounds, args.repeats))
    row("machine", "zlib", "", *machine_scaling(args.repeats))
    if "local" in args.stores:
        with tempfile.TemporaryDirectory() as tmp:
            row("machine", "rename", "", *file_system_scaling(tmp, args.repeats))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "free_threaded": free, "gil": gil, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
