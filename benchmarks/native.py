"""Random region reads of the `sharded` dataset from compiled code: zarrcore's nogil array API
(zarrcore/array_api.h) against Python threads through `a[...]` and tensorstore's read futures.

    python benchmarks/native.py                  # 10,000 random 64^3 regions of the N=512 cube
    python benchmarks/native.py --reads 1000 --json

Every contender reads the same regions (random corners, seeded) with the same concurrency:
zarrcore's handle from --threads pthreads of a small C extension built against
zarrcore.get_include() (benchmarks/_native_reader.c, built once into build/); two Python threads
calling a[...]; tensorstore with that many reads in flight and its data-copy and file-I/O
concurrency held to that many threads. Each is timed once after a warm-up pass over the same
regions (the dataset is then in the page cache); a sample of regions is checked against the
expected values.

Both libraries run without a cache and then with a cache of decoded chunks of --cache-bytes
(zarrcore: native_handle(cache_bytes=...); tensorstore: a cache_pool of that
total_bytes_limit, which rechecks the files on every read as zarrcore's cache does); the
warm-up pass fills each cache. Targets: the native reads take at most half of tensorstore's
time (with a cache, against tensorstore with the same cache), and two native threads read at
least 1.8x as fast as one. With --cold-method, the native reads and tensorstore without a
cache run once more each from a cold page cache.
"""
import argparse
import hashlib
import itertools
import json
import os
import subprocess
import sys
import sysconfig
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _cold  # noqa: E402
import _common as C  # noqa: E402
from _worker import _import_zarrcore  # noqa: E402

READER_SOURCE = os.path.join(HERE, "_native_reader.c")
RATIO_TARGET = 0.5
SCALING_TARGET = 1.8


def build_reader(zarrcore):
    """Import _native_reader, built against `zarrcore` into build/ (reused while the source, the
    header and the Python are unchanged)."""
    header = os.path.join(zarrcore.get_include(), "zarrcore", "array_api.h")
    digest = hashlib.sha256()
    for path in (READER_SOURCE, header):
        with open(path, "rb") as f:
            digest.update(f.read())
    digest.update(sysconfig.get_config_var("EXT_SUFFIX").encode())
    where = os.path.join(C.REPO, "build", "native-reader-" + digest.hexdigest()[:16])
    if not os.path.isdir(where):
        script = (
            "from setuptools import Extension, setup\n"
            f"setup(name='_native_reader', script_args=['build_ext', '--build-lib', {where!r}, "
            f"'--build-temp', {os.path.join(where, 'tmp')!r}], ext_modules=[Extension("
            f"'_native_reader', [{READER_SOURCE!r}], include_dirs=[{zarrcore.get_include()!r}], "
            "extra_compile_args=['-O2'], extra_link_args=['-pthread'])])\n")
        build = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        if build.returncode != 0:
            sys.exit("building benchmarks/_native_reader.c failed:\n" + build.stderr[-3000:])
    sys.path.insert(0, where)
    import _native_reader

    return _native_reader


def region_starts(n, edge, count, seed=0):
    return np.random.default_rng(seed).integers(0, n - edge + 1, size=(count, 3), dtype=np.int64)


def selection(start, edge):
    return tuple(slice(int(s), int(s) + edge) for s in start)


def touched(start, edge, chunks):
    """Grid coordinates of the inner chunks a region touches."""
    ranges = [range(int(s) // c, (int(s) + edge - 1) // c + 1) for s, c in zip(start, chunks)]
    return itertools.product(*ranges)


def time_python_threads(array, starts, edge, nthreads):
    """Python threads taking regions in turn, each read with a[...]."""
    position = iter(range(len(starts)))
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                i = next(position, None)
            if i is None:
                return
            array[selection(starts[i], edge)]

    return timed_threads(work, nthreads)


def timed_threads(work, nthreads):
    """Seconds for `nthreads` threads each running `work` to all finish."""
    barrier = threading.Barrier(nthreads + 1)

    def run():
        barrier.wait()
        work()

    return C.time_released_together(
        [threading.Thread(target=run) for _ in range(nthreads)], barrier)


def open_tensorstore(path, concurrency, cache_bytes=0):
    import tensorstore as ts

    context = ts.Context({"data_copy_concurrency": {"limit": concurrency},
                          "file_io_concurrency": {"limit": concurrency},
                          "cache_pool": {"total_bytes_limit": cache_bytes}})
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
    return ts.open(spec, read=True, context=context).result()


def time_tensorstore(array, starts, edge, inflight):
    """Read futures, `inflight` of them outstanding at any time."""
    pending = []
    t0 = time.perf_counter()
    for start in starts:
        if len(pending) >= inflight:
            pending.pop(0).result()
        pending.append(array[selection(start, edge)].read())
    for future in pending:
        future.result()
    return time.perf_counter() - t0


def inner_frames(zarrcore, path):
    """{inner chunk coordinates: its stored zstd frame} of the sharded array at `path`, from
    its shard files and their indexes (read with zarrcore's shard-index kernel)."""
    array = zarrcore.open_array(path)
    per_shard = [s // c for s, c in zip(array.shards, array.chunks)]
    ninner = int(np.prod(per_shard))
    frames = {}
    for shard in np.ndindex(*[n // s for n, s in zip(array.shape, array.shards)]):
        with open(os.path.join(path, "c", *map(str, shard)), "rb") as f:
            blob = f.read()
        index = np.frombuffer(blob[-(16 * ninner + 4):-4], "<u8").reshape(ninner, 2)
        for k, (offset, nbytes) in enumerate(index):
            if offset != 2**64 - 1:
                inner = np.unravel_index(k, per_shard)
                coords = tuple(int(s * p + i) for s, p, i in zip(shard, per_shard, inner))
                frames[coords] = blob[int(offset):int(offset + nbytes)]
    return frames, array.chunks, int(np.prod(array.chunks)) * array.dtype.itemsize


def decode_floor(zarrcore, path, starts, edge, threads, repeats=3):
    """Best seconds to zstd-decode, on `threads` threads into reused buffers, every inner chunk
    each region touches, once per region: what any reader without a cache must decode (from
    files already in memory, with nothing copied out)."""
    from zarrcore._native import compress as _compress

    frames, chunks, size = inner_frames(zarrcore, path)
    work = []
    for start in starts:
        work.extend(frames[k] for k in touched(start, edge, chunks) if k in frames)

    def run():
        claim = iter(work)  # next() on it is atomic under the GIL

        def decode():
            out = np.empty(size, np.uint8)
            for frame in claim:
                _compress.zstd_decompress(frame, out=out)

        return timed_threads(decode, threads)

    return min(run() for _ in range(repeats)), len(work)


def check(ds, results, starts, edge, what):
    for result, start in zip(results, starts):
        if not C.check_equal(result, ds, selection(start, edge)):
            sys.exit(f"{what}: region at {tuple(start)} differs from the expected values")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=512, help="edge of the cube (default 512)")
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--reads", type=int, default=10000, help="regions read (default 10000)")
    p.add_argument("--edge", type=int, default=64, help="region edge (default 64)")
    p.add_argument("--threads", type=int, default=2, help="concurrency (default 2)")
    p.add_argument("--cache-bytes", type=int, default=256 << 20,
                   help="decoded-chunk cache of the cached runs (default 256 MiB, the decoded "
                        "N=512 cube; 0: no cached runs)")
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto")
    p.add_argument("--cold-method", choices=_cold.METHODS,
                   help="also time the native reads and tensorstore without a cache from a cold "
                        "page cache, dropped this way before each (default: warm only)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = p.parse_args(argv)

    zarrcore = _import_zarrcore(args.zarrcore)
    ds = C.make_datasets(args.n)["sharded"]
    path = C.reference_path(args.data_dir, args.n, 1000, "sharded")
    if not os.path.exists(path + ".done"):
        sys.exit(f"no dataset at {path}: run benchmarks/run.py --workloads native first")
    edge = min(args.edge, args.n)
    starts = region_starts(args.n, edge, args.reads)
    array = zarrcore.open_array(path)
    handle = array.native_handle()
    reader = build_reader(zarrcore)
    capsule = handle.capsule()

    # Correctness of every contender on a sample, then a warm-up pass over all regions.
    sample = starts[:16]
    out = np.empty((len(sample), edge, edge, edge), ds.dtype)
    reader.read(capsule, sample, edge, args.threads, out)
    check(ds, out, sample, edge, "zarrcore native")
    check(ds, [array[selection(s, edge)] for s in sample], sample, edge, "zarrcore a[...]")
    results = {"reads": len(starts), "edge": edge, "n": args.n, "threads": args.threads,
               "loadavg_start": os.getloadavg()[0]}
    tensor = None
    try:
        tensor = open_tensorstore(path, args.threads)
        check(ds, [tensor[selection(s, edge)].read().result() for s in sample], sample, edge,
              "tensorstore")
    except ImportError as e:
        results["tensorstore_error"] = str(e)
    reader.read(capsule, starts, edge, args.threads, None)

    n = args.threads
    results["native_1"] = reader.read(capsule, starts, edge, 1, None)
    results[f"native_{n}"] = reader.read(capsule, starts, edge, n, None)
    results["python_threads"] = time_python_threads(array, starts, edge, n)
    if tensor is not None:
        time_tensorstore(tensor, starts, edge, n)  # its warm-up
        results["tensorstore"] = time_tensorstore(tensor, starts, edge, n)
        results["native_vs_tensorstore"] = results[f"native_{n}"] / results["tensorstore"]
    results["native_scaling"] = results["native_1"] / results[f"native_{n}"]
    results["decode_floor"], results["decoded_chunks"] = decode_floor(zarrcore, path, starts,
                                                                      edge, n)
    if args.cold_method:
        # Each region's inner chunks come from the device the first time they are touched.
        results["touched_chunks"] = len({k for start in starts
                                         for k in touched(start, edge, ds.chunks)})
        runs = [(f"cold_native_{n}", lambda: reader.read(capsule, starts, edge, n, None))]
        if tensor is not None:
            runs.append(("cold_tensorstore", lambda: time_tensorstore(tensor, starts, edge, n)))
        for key, run in runs:
            results["cold_method"] = _cold.drop_page_cache([path], args.cold_method)
            results[key] = run()
    if args.cache_bytes:
        results["cache_bytes"] = args.cache_bytes
        cached = array.native_handle(cache_bytes=args.cache_bytes)
        capsule = cached.capsule()
        out[...] = 0
        reader.read(capsule, sample, edge, n, out)
        check(ds, out, sample, edge, "zarrcore native, cached")
        reader.read(capsule, starts, edge, n, None)  # fills the cache
        results["cached_native_1"] = reader.read(capsule, starts, edge, 1, None)
        results[f"cached_native_{n}"] = reader.read(capsule, starts, edge, n, None)
        results["cached_native_scaling"] = (results["cached_native_1"]
                                            / results[f"cached_native_{n}"])
        results["cache_info"] = cached.cache_info()
        if tensor is not None:
            del tensor
            tensor = open_tensorstore(path, n, args.cache_bytes)
            check(ds, [tensor[selection(s, edge)].read().result() for s in sample], sample, edge,
                  "tensorstore, cached")
            time_tensorstore(tensor, starts, edge, n)  # fills its cache
            results["cached_tensorstore"] = time_tensorstore(tensor, starts, edge, n)
            results["cached_native_vs_tensorstore"] = (results[f"cached_native_{n}"]
                                                      / results["cached_tensorstore"])
    results["loadavg_end"] = os.getloadavg()[0]

    if args.json:
        print(json.dumps(results))
        return 0
    print(f"{len(starts)} random {edge}^3 regions of {ds.describe()}; load average "
          f"{results['loadavg_start']:.2f} -> {results['loadavg_end']:.2f}")
    for key, label in contenders(n, args.cache_bytes):
        if key in results:
            print(f"  {label:52s} {results[key]:8.3f} s  "
                  f"{1e6 * results[key] / len(starts):8.1f} us/region")
    print(f"  decode floor: {results['decoded_chunks']} inner chunks on {n} threads "
          f"{results['decode_floor']:8.3f} s; native / floor "
          f"{results[f'native_{n}'] / results['decode_floor']:.2f}x")
    for prefix, what in [("", "no cache"), ("cached_", "cache of both")]:
        if prefix + "native_vs_tensorstore" in results:
            ratio = results[prefix + "native_vs_tensorstore"]
            print(f"  native / tensorstore, {what}: {ratio:.2f}x (target <= {RATIO_TARGET})")
        if prefix + "native_scaling" in results:
            print(f"  {n} native threads over 1, {what}: {results[prefix + 'native_scaling']:.2f}x "
                  f"(target >= {SCALING_TARGET})")
    return 0


def contenders(n, cache_bytes):
    """(result key, label) of every timed row."""
    mib = f"{cache_bytes / (1 << 20):g} MiB"
    return [("native_1", "zarrcore native, 1 pthread"),
            (f"native_{n}", f"zarrcore native, {n} pthreads"),
            ("python_threads", f"zarrcore a[...], {n} Python threads"),
            ("tensorstore", f"tensorstore, {n} futures in flight"),
            (f"cold_native_{n}", f"zarrcore native, {n} pthreads, cold page cache"),
            ("cold_tensorstore", f"tensorstore, {n} futures in flight, cold page cache"),
            ("cached_native_1", f"zarrcore native, 1 pthread, {mib} cache"),
            (f"cached_native_{n}", f"zarrcore native, {n} pthreads, {mib} cache"),
            ("cached_tensorstore", f"tensorstore, {n} futures in flight, {mib} cache_pool")]


if __name__ == "__main__":
    sys.exit(main())
