#!/usr/bin/env python3
"""Random sample reads, as training loaders make them: zarrcore against its peers, samples/s.

    python benchmarks/random_access.py                       # the full run (minutes)
    python benchmarks/random_access.py --steps 64 --rounds 2 # a smoke run
    python benchmarks/random_access.py --libs zarrcore,tensorstore --layouts sharded

An ERA5-like (steps, 181, 360) float32 array (zstd level 1), written once by zarrcore in
three layouts: one sample per chunk ("one"), sharded with one sample per inner chunk
("sharded", --shard samples per shard), and eight samples per chunk ("eight"). Each library
then reads, from a process of its own (the zarr-python pipelines are process-wide), with a
warm page cache:

  single   one random sample at a time, `a[t]`, in a loop
  batch    one call for --batch random samples (`a.oindex[idx]`; tensorstore's
           `a[idx].read()`; zarrcore also `get_many` and its native handle sample by sample)
  threads  --batch single reads from --threads threads at once (a map-style loader's pool)
  fork     --workers forked processes each reading single samples (a DataLoader's workers);
           with --first-reads also a worker's first read, forked, spawned and forkserver'd

Every result is checked against the data written. Prints samples/s per library, layout and
read, the best of --rounds, and writes them as JSON with --json. Libraries missing from the
environment are skipped. zarrcore runs in this interpreter, the peers in --peer-python (one
with zarr-python 3.4, tensorstore and zarrs), e.g. from the checkout, with zarrcore built in
place: `.venv/bin/python benchmarks/random_access.py --zarrcore inplace --peer-python
.bench-venv/bin/python`.
"""
import argparse
import concurrent.futures
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import _common as C

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LIBS = ("zarrcore", "tensorstore", "zarrs-python", "zarr-python", "zarr-python-fused")
LAYOUTS = ("one", "sharded", "eight")
SAMPLE_SHAPE = (181, 360)


def _zarrcore():
    """The installed zarrcore, or this checkout's (ZARRCORE_FROM=inplace, or none installed)."""
    if os.environ.get("ZARRCORE_FROM") == "inplace":
        sys.path.insert(0, REPO)
    try:
        import zarrcore
    except ModuleNotFoundError as e:
        if e.name != "zarrcore":
            raise
        sys.path.insert(0, REPO)
        import zarrcore
    return zarrcore


# -- writing ------------------------------------------------------------------------------------

def write_layouts(root, steps, shard):
    zarrcore = _zarrcore()
    data = np.random.default_rng(0).standard_normal((steps, *SAMPLE_SHAPE), dtype=np.float32)
    data = np.round(data, 2)  # (compressible, as reanalysis fields are)
    zstd = [{"name": "zstd", "configuration": {"level": 1}}]
    layouts = {"one": dict(chunks=(1, *SAMPLE_SHAPE)),
               "sharded": dict(chunks=(1, *SAMPLE_SHAPE), shards=(shard, *SAMPLE_SHAPE)),
               "eight": dict(chunks=(8, *SAMPLE_SHAPE))}
    for name, kw in layouts.items():
        a = zarrcore.create_array(os.path.join(root, name), shape=data.shape, dtype="f4",
                                  compressors=zstd, overwrite=True, **kw)
        a[...] = data
    np.save(os.path.join(root, "reference.npy"), data)


# -- one library, in its own process ----------------------------------------------------------

class Reader:
    """`open`, `one(t)` and `batch(idx)` of one library, by its own ordinary API."""

    def __init__(self, lib):
        self.lib = lib
        if lib == "tensorstore":
            import tensorstore as ts
            self.ts = ts
        elif lib == "zarrcore":
            self.zc = _zarrcore()
        else:
            import zarr
            pipeline = C.ZARR_PIPELINES[lib]
            if pipeline is not None:
                if lib == "zarrs-python":
                    import zarrs  # noqa: F401  (registers the pipeline)
                # (not strict: zarrs hands what it cannot do to zarr-python's own pipeline)
                zarr.config.set({"codec_pipeline.path": pipeline})
            self.zarr = zarr

    def open(self, path):
        if self.lib == "tensorstore":
            return self.ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
                                 "context": {"cache_pool": {"total_bytes_limit": 0}}},
                                read=True).result()
        if self.lib == "zarrcore":
            return self.zc.open_array(path, mode="r")
        return self.zarr.open_array(path, mode="r")

    def one(self, a, t):
        if self.lib == "tensorstore":
            return a[t].read().result()
        return a[t]

    def batch(self, a, idx):
        if self.lib == "tensorstore":
            return a[idx].read().result()
        return a.oindex[idx]


def _forked_rate(reader, path, steps, nworkers, per_worker, ref):
    """Samples/s of `nworkers` forked processes reading `per_worker` random samples each,
    after opening the array in the parent (as a DataLoader's workers do)."""
    a = reader.open(path)
    reader.one(a, 0)
    ctx = multiprocessing.get_context("fork")
    go = ctx.Barrier(nworkers + 1)

    def work(seed):
        rng = np.random.default_rng(seed)
        go.wait()
        for t in rng.integers(0, steps, per_worker).tolist():
            got = reader.one(a, t)
        assert np.array_equal(got, ref[t])
        os._exit(0)

    procs = [ctx.Process(target=work, args=(k,)) for k in range(nworkers)]
    for p in procs:
        p.start()
    go.wait()
    start = time.perf_counter()
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - start
    if any(p.exitcode for p in procs):
        raise RuntimeError("a forked worker failed")
    return nworkers * per_worker / elapsed


def _first_read(reader, path, method):
    """Seconds a new worker of start `method` takes from its start to its first sample read,
    given the array opened in the parent (pickled to it under spawn and forkserver)."""
    ctx = multiprocessing.get_context(method)
    a = reader.open(path)
    queue = ctx.Queue()
    start = time.perf_counter()
    p = ctx.Process(target=_first_read_child, args=(reader.lib, a, queue))
    p.start()
    took = queue.get(timeout=120)
    p.join()
    return took, time.perf_counter() - start


def _first_read_child(lib, a, queue):
    start = time.perf_counter()
    Reader(lib).one(a, 0)
    queue.put(time.perf_counter() - start)


def run_lib(lib, root, layouts, args):
    reader = Reader(lib)
    ref = np.load(os.path.join(root, "reference.npy"), mmap_mode="r")
    steps = ref.shape[0]
    rng = np.random.default_rng(42)
    out = {}
    for layout in layouts:
        path = os.path.join(root, layout)
        a = reader.open(path)
        picks = [rng.integers(0, steps, args.batch) for _ in range(args.batches)]
        n = args.batch * args.batches

        for idx in picks[:2]:  # warm the page cache and check
            assert np.array_equal(reader.batch(a, idx), ref[idx])
            assert np.array_equal(reader.one(a, int(idx[0])), ref[int(idx[0])])
        r = out[layout] = {}

        def single():
            for idx in picks:
                for t in idx.tolist():
                    reader.one(a, t)

        def batch():
            for idx in picks:
                reader.batch(a, idx)

        pool = concurrent.futures.ThreadPoolExecutor(args.threads)

        def threads():
            for idx in picks:
                list(pool.map(lambda t: reader.one(a, t), idx.tolist()))

        r["single"] = n / C.best_time(single, args.rounds)
        r["batch"] = n / C.best_time(batch, args.rounds)
        r["threads"] = n / C.best_time(threads, args.rounds)
        pool.shutdown()
        if lib == "zarrcore":
            assert all(np.array_equal(g, ref[t])
                       for g, t in zip(a.get_many(picks[0].tolist()), picks[0].tolist()))
            r["get_many"] = n / C.best_time(lambda: [a.get_many(i.tolist()) for i in picks],
                                      args.rounds)
            h = a.native_handle()
            start, shape = [0, 0, 0], (1, *SAMPLE_SHAPE)
            buf = np.empty(shape, dtype="f4")

            def native():
                for idx in picks:
                    for t in idx.tolist():
                        start[0] = t
                        h.read(start, shape, out=buf)

            r["native"] = n / C.best_time(native, args.rounds)
            cached = reader.zc.open_array(path, mode="r", cache_bytes=args.cache_mib << 20)
            time.sleep(1.1)  # (files changed within the last second are read, not cached)
            cached.oindex[np.arange(steps)]
            r["batch, cached"] = n / C.best_time(lambda: [cached.oindex[i] for i in picks],
                                           args.rounds)
        if args.workers and hasattr(os, "fork"):
            # (a library whose threads do not survive a fork fails here: its row is left out)
            try:
                r["fork"] = _forked_rate(reader, path, steps, args.workers, n // args.workers,
                                         ref)
            except Exception as e:  # noqa: BLE001
                print(f"{lib} {layout}: forked workers failed: {e}", file=sys.stderr)
        if args.first_reads and layout == layouts[0]:
            for method in ("fork", "spawn", "forkserver"):
                try:
                    took, total = _first_read(reader, path, method)
                except Exception as e:  # noqa: BLE001
                    print(f"{lib}: first read under {method} failed: {e}", file=sys.stderr)
                    continue
                r[f"first read, {method} (ms)"] = took * 1e3
                r[f"worker start to first read, {method} (ms)"] = total * 1e3
    return out


# -- orchestration -------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2048)
    p.add_argument("--shard", type=int, default=64, help="samples per shard")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--batches", type=int, default=16)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--workers", type=int, default=4, help="forked workers (0: none)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cache-mib", type=int, default=1024)
    p.add_argument("--first-reads", action="store_true",
                   help="also time a worker's first read under fork, spawn and forkserver")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--data", help="directory to write the arrays in (default: a temporary one)")
    p.add_argument("--zarrcore", choices=["auto", "inplace"], default="auto",
                   help="the installed zarrcore (auto: this checkout when none is)")
    p.add_argument("--peer-python", default=sys.executable,
                   help="the interpreter that runs the peers (default: this one)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    layouts = [x for x in args.layouts.split(",") if x]
    if args.zarrcore == "inplace":
        os.environ["ZARRCORE_FROM"] = "inplace"
    if args.child:
        json.dump(run_lib(args.child, args.data, layouts, args), sys.stdout)
        return

    tmp = None if args.data else tempfile.mkdtemp(prefix="zarrcore-random-")
    root = args.data or tmp
    try:
        if not os.path.exists(os.path.join(root, "reference.npy")):
            write_layouts(root, args.steps, args.shard)
        results = {}
        for lib in [x for x in args.libs.split(",") if x]:
            python = sys.executable if lib == "zarrcore" else args.peer_python
            cmd = [python, os.path.abspath(__file__), "--child", lib, "--data", root,
                   *sys.argv[1:]]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                print(f"{lib}: skipped ({done.stderr.strip().splitlines()[-1:]})")
                continue
            results[lib] = json.loads(done.stdout)
        print(f"samples/s, ({args.steps}, 181, 360) float32 zstd, batches of {args.batch}, "
              f"best of {args.rounds}")
        for layout in layouts:
            print(f"\n{layout}")
            reads = sorted({k for r in results.values() for k in r.get(layout, {})},
                           key=lambda k: ("(ms)" in k, k))
            for read in reads:
                cells = [f"{lib} {results[lib][layout][read]:,.0f}"
                         for lib in results if read in results[lib].get(layout, {})]
                print(f"  {read:<38} " + "  ".join(cells))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"args": vars(args), "results": results}, f, indent=1)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
