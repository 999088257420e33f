"""The cost of a decoded-chunk cache hit: repeated reads of one whole chunk (unsharded) and of
one inner chunk of a shard, through a native handle with a cache and without one, zstd and
uncompressed (stored as the items lie in memory: read without the cache since the hits
read and hash the stored bytes). Prints the medians over repeats of the median wall time
and of the mean CPU time per read, with their range.

    python benchmarks/cache_hit.py [DIR] [--repeats N] [--reads N]
"""
import argparse
import statistics
import tempfile
import time

import numpy as np

import zarrcore

ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
CHUNK = (256, 256)  # float32: 256 KiB a chunk


def array(directory, name, shards, compressors):
    rng = np.random.default_rng(0)
    data = rng.integers(0, 64, size=(512, 512)).astype("f4")
    a = zarrcore.create_array(f"{directory}/{name}", shape=data.shape, dtype="f4", chunks=CHUNK,
                              shards=shards, compressors=compressors, overwrite=True)
    a[...] = data
    return a


def per_read(h, reads):
    """(wall, CPU) microseconds per read, the median read's wall time and the mean CPU time
    (the process's: on a loaded machine it counts only this process's work)."""
    times = []
    cpu = time.process_time_ns()
    for _ in range(reads):
        t = time.perf_counter_ns()
        h.read((256, 0), CHUNK)
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1e3, (time.process_time_ns() - cpu) / reads / 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir", nargs="?")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--reads", type=int, default=400)
    args = p.parse_args()
    directory = args.dir or tempfile.mkdtemp()
    arrays = {}
    for layout, shards in (("chunk", None), ("inner", (512, 512))):
        for codec, compressors in (("zstd", [ZSTD]), ("raw", [])):
            arrays[layout, codec] = array(directory, f"{layout}-{codec}", shards, compressors)
    time.sleep(1.2)  # (files written within the last second are read but not cached)
    for (layout, codec), a in arrays.items():
        for cached in (True, False):
            h = a.native_handle(cache_bytes=8 << 20 if cached else 0)
            h.read((256, 0), CHUNK)
            runs = [per_read(h, args.reads) for _ in range(args.repeats)]
            hit = h.cache_info()["hits"] >= args.reads * args.repeats
            wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
            print(f"{layout:5} {codec:4} {'cached  ' if cached else 'no cache'} "
                  f"{'(hits)' if hit else '      '} wall median {statistics.median(wall):6.1f} us "
                  f"[{min(wall):6.1f}, {max(wall):6.1f}]  CPU median "
                  f"{statistics.median(cpu):6.1f} us [{min(cpu):6.1f}, {max(cpu):6.1f}]")
            h.close()


if __name__ == "__main__":
    main()
