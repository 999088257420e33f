#!/usr/bin/env python3
"""A training loader's epochs: pools of worker processes drawing shuffled batches, samples/s.

    python benchmarks/loader.py                  # the full run
    python benchmarks/loader.py --quick          # a smoke run (small sizes)
    python benchmarks/loader.py --libs zarrcore,tensorstore --methods spawn --conditions s3

The arrays and conditions are random_access.py's (an ERA5-like (steps, 181, 360) float32
zstd array in the layouts "one", "sharded" and "eight"; warm, cold and the loopback S3 with
--delay per request). For each library, start method (--methods: fork, spawn) and pool size
(--workers: 2 and 4), a pool is started as a DataLoader with persistent workers starts one:
the array is opened in the parent and handed to each worker (inherited under fork, pickled
under spawn, or its location when it does not pickle). Each epoch draws a new permutation of
the samples (--epoch-samples of them; over S3 --remote-samples), cut into batches of --batch;
a worker reads a batch sample by sample, `a[t]` as a map-style Dataset does, and stacks it.
Reported per epoch, samples/s from the first batch handed out to the last one back; "start"
is the time in ms until every worker has its array and has read one sample.

zarrcore runs plain, with the in-process decoded-chunk cache of each worker
("zarrcore-cached": --cache-mib each) and, where this zarrcore has it, with the cache its
workers share ("zarrcore-shared"), which also takes without a request what any worker found
since the array was opened ("zarrcore-shared-open": recheck_cached_data="open"). A batch is
checked in its worker: every sample of a worker's first batch and one sample of each later
batch against the data written (the check is part of the time, as small as it can be made).
The floor per pool is random_access.py's: each sample's stored bytes read with pread and
decoded, on min(workers, CPUs) CPUs. Over S3 it is
measured against the same server ("bare", measure_bare): a pool as large, each sample one
bare GET (its chunk, or its inner chunk's range) and a decode.
"""
import argparse
import inspect
import json
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
import time

import numpy as np

import _cold
import _common as C
import random_access as RA
import remote

LIBS = ("zarrcore", "zarrcore-cached", "zarrcore-shared", "zarrcore-shared-open",
        "tensorstore", "zarrs-python", "zarr-python", "zarr-python-fused")
METHODS = ("fork", "spawn")
QUICK = dict(steps=64, shard=16, batch=8, epoch_samples=64, remote_samples=32, workers="2",
             cache_mib=64, worker_timeout=60)
# The floor over S3, measured against the same server (measure_bare); not a library.
BARE = "bare"

_worker_state = {}  # in each worker: its reader, array and the data written


def _library(lib):
    """(the random_access reader's library, open_array keywords of this zarrcore variant)."""
    if lib == "zarrcore-cached":
        return "zarrcore", {"cache_bytes": "cache"}
    if lib == "zarrcore-shared":
        return "zarrcore", {"cache_bytes": "cache", "shared_cache": True}
    if lib == "zarrcore-shared-open":
        return "zarrcore", {"cache_bytes": "cache", "shared_cache": True,
                            "recheck_cached_data": "open"}
    return lib, {}


def open_array(lib, loc, cache_bytes):
    """`lib`'s array at `loc`, as RA.Reader opens it, with this variant's cache settings."""
    base, options = _library(lib)
    reader = RA.Reader(base)
    if not options:
        return reader, reader.open(loc)
    options = {k: (cache_bytes if v == "cache" else v) for k, v in options.items()}
    if loc.s3_endpoint is None:
        return reader, reader.zc.open_array(loc.path, mode="r", **options)
    return reader, reader.zc.open_array(
        f"s3://{remote.BUCKET}/{loc.layout}", mode="r",
        storage_options=RA.zarrcore_s3_options(loc.s3_endpoint), **options)


def _start_worker(lib, payload, loc, cache_bytes, root, zarrcore_from, probe):
    """A worker's initializer: its library set up, the array received, one sample read."""
    if zarrcore_from:
        os.environ["ZARRCORE_FROM"] = zarrcore_from
    kind, value = payload
    if kind == "inherited":
        reader, a = _worker_state["parent"]
    else:
        reader = RA.Reader(_library(lib)[0])
        a = pickle.loads(value) if kind == "pickled" else open_array(lib, loc, cache_bytes)[1]
    ref = np.load(os.path.join(root, "reference.npy"), mmap_mode="r")
    if not np.array_equal(reader.one(a, probe), ref[probe]):
        raise AssertionError(f"a worker's first sample {probe} differs from the data written")
    _worker_state.update(reader=reader, a=a, ref=ref, checked=False)


def _read_batch(idx):
    """One batch read sample by sample and stacked, as a map-style Dataset's worker does."""
    s = _worker_state
    batch = np.stack([s["reader"].one(s["a"], t) for t in idx])
    if not s["checked"]:
        ok = np.array_equal(batch, s["ref"][idx])
        s["checked"] = True
    else:
        k = len(idx) // 2
        ok = np.array_equal(batch[k], s["ref"][idx[k]])
    if not ok:
        raise AssertionError(f"a batch of samples {idx[:4]}... differs from the data written")
    return len(idx)


def _ready(_):
    return os.getpid()


def run_pool(lib, loc, method, workers, args, evict):
    """{"start (ms)": ..., "epoch 1": samples/s, "epoch 2": ...} of one pool."""
    reader, a = open_array(lib, loc, args.cache_mib << 20)
    steps = np.load(os.path.join(args.data, "reference.npy"), mmap_mode="r").shape[0]
    n = min(args.remote_samples if loc.s3_endpoint else args.epoch_samples, steps)
    if method == "fork":
        _worker_state["parent"] = (reader, a)
        payload = ("inherited", None)
    else:
        try:
            payload = ("pickled", pickle.dumps(a))
        except Exception:  # noqa: BLE001  (any failure to pickle: the worker opens it)
            payload = ("location", None)
    ctx = multiprocessing.get_context(method)
    evict()
    start = time.perf_counter()
    pool = ctx.Pool(workers, initializer=_start_worker,
                    initargs=(lib, payload, loc, args.cache_mib << 20, args.data,
                              os.environ.get("ZARRCORE_FROM"), steps // 2))
    out = {"handed": payload[0]}
    try:
        # Every worker started (each initializer ran before it takes a task).
        pending = pool.map_async(_ready, range(workers * 4), chunksize=1)
        pending.get(args.worker_timeout)
        out["start (ms)"] = (time.perf_counter() - start) * 1e3
        for epoch, batches in enumerate(_epoch_orders(steps, n, args), 1):
            evict()
            start = time.perf_counter()
            done = pool.map_async(_read_batch, batches, chunksize=1).get(args.worker_timeout)
            out[f"epoch {epoch}"] = sum(done) / (time.perf_counter() - start)
    finally:
        pool.terminate()
        pool.join()
        _worker_state.pop("parent", None)
    return out


def _epoch_orders(steps, n, args):
    """Each epoch's batches of sample numbers, as run_pool draws them."""
    rng = np.random.default_rng(7)
    for _ in range(args.epochs):
        order = rng.permutation(steps)[:n]
        yield [order[i:i + args.batch] for i in range(0, n, args.batch)]


_bare_state = {}  # in each process of measure_bare's pool: its store and shard indexes


def _bare_start(loc):
    import obstore

    _bare_state.update(obstore=obstore, chunks=RA.StoredChunks(loc.path),
                       decode=RA.zstd_decoder()[0],
                       store=remote.obstore_store("s3", loc.s3_endpoint, loc.layout))


def _bare_read(idx):
    """Each sample of `idx` by one bare GET, decoded."""
    s = _bare_state
    chunks, obstore, store = s["chunks"], s["obstore"], s["store"]
    for t in idx.tolist():
        key = chunks.key(t // chunks.outer)
        if chunks.sharded:
            _, offset, nbytes = chunks.chunk_of(t)
            data = obstore.get_range(store, key, start=offset, length=nbytes)
        else:
            data = obstore.get(store, key).bytes()
        s["decode"](bytes(data), chunks.decoded_nbytes)
    return len(idx)


def measure_bare(loc, args):
    """{"bare, <workers>": {"epoch 1": samples/s, ...}}: the floor over S3 of one layout.
    A pool of that many processes draws the epochs' batches as run_pool's do and reads each
    sample with one bare GET (its chunk, or the inner chunk's range of its shard, which the
    local copy's index tells: never an index request) and decodes it: the least any library
    does against this server, the server's own time per request included. (Forked before
    obstore ever runs in this process: each worker's store is its own.)"""
    steps = np.load(os.path.join(args.data, "reference.npy"), mmap_mode="r").shape[0]
    n = min(args.remote_samples, steps)
    out = {}
    for workers in args.workers:
        rates = out[f"bare, {workers}"] = {}
        with multiprocessing.get_context("fork").Pool(
                workers, initializer=_bare_start, initargs=(loc,)) as pool:
            # (every worker's connection made)
            pool.map(_bare_read, [np.arange(1)] * (workers * 4), chunksize=1)
            for epoch, batches in enumerate(_epoch_orders(steps, n, args), 1):
                start = time.perf_counter()
                done = pool.map_async(_bare_read, batches, chunksize=1).get(args.worker_timeout)
                rates[f"epoch {epoch}"] = sum(done) / (time.perf_counter() - start)
    return out


def measure_lib(lib, condition, layouts, args):
    """{layout: {"<method>, <workers>": pool results or {"error": ...}}} of one library."""
    if lib == BARE:
        return {layout: measure_bare(RA.Location(os.path.join(args.data, layout), layout,
                                                 args.s3_endpoint), args)
                for layout in layouts} if condition == "s3" else {}
    base, options = _library(lib)
    if base == "zarrcore":
        missing = set(options) - set(inspect.signature(RA._zarrcore().open_array).parameters)
        if missing:
            return {"error": f"skipped: this zarrcore's open_array has no {sorted(missing)}"}
    s3 = condition == "s3"
    out = {}
    for layout in layouts:
        loc = RA.Location(os.path.join(args.data, layout), layout,
                          args.s3_endpoint if s3 else None)
        evict = ((lambda path=loc.path: _cold.drop_page_cache([path], args.cold_method))
                 if condition == "cold" else (lambda: None))
        r = out[layout] = {}
        for method in args.methods:
            for workers in args.workers:
                try:
                    r[f"{method}, {workers}"] = run_pool(lib, loc, method, workers, args,
                                                         evict)
                except Exception as e:  # noqa: BLE001  (recorded; the other pools still run)
                    r[f"{method}, {workers}"] = {"error": f"{type(e).__name__}: {e}"}
    return out


def floors(root, layouts, args):
    """{condition: {layout: {workers: samples/s}}}: the least work per sample (pread and
    decode, from random_access.py) on min(workers, CPUs) CPUs; over S3 with one --delay per
    sample of a worker."""
    ref = np.load(os.path.join(root, "reference.npy"), mmap_mode="r")
    steps = ref.shape[0]
    rargs = argparse.Namespace(batch=args.batch, batches=max(1, args.epoch_samples // args.batch),
                               rounds=3, remote_batches=1, threads=1, workers=1, delay=args.delay)
    picks = RA.sample_picks(steps, layouts, rargs)
    f = RA.measure_floors(root, layouts, picks, ref, rargs)
    out = {"warm": {}, "s3": {}}
    for layout in layouts:
        per_sample = 1 / f["warm"][layout]["single"]
        out["warm"][layout] = {w: min(w, f["cpus"]) / per_sample for w in args.workers}
        out["s3"][layout] = {w: w / (per_sample + args.delay) for w in args.workers}
    return out


def print_tables(results, floor, conditions, layouts, libs, args):
    """A table per condition and layout: samples/s per pool and epoch, start ms, the floor,
    zarrcore ÷ best peer and ÷ floor (time ratios, lower is better)."""
    for condition in conditions:
        print(f"\n### {condition}")
        for layout in layouts:
            rows = []
            for method in args.methods:
                for w in args.workers:
                    pool = f"{method}, {w}"
                    for what in ("start (ms)", *(f"epoch {e}" for e in range(1, args.epochs + 1))):
                        rows.append((pool, w, what))
            shown = [lib for lib in libs
                     if lib != BARE and layout in results[condition].get(lib, {})]
            bare = results[condition].get(BARE, {}).get(layout, {})
            print(f"\n{layout} (samples/s; start in ms)\n")
            print("| pool | measure | " + " | ".join(shown)
                  + " | floor | zarrcore ÷ best peer | zarrcore ÷ floor |")
            print("|---" * (len(shown) + 5) + "|")
            for pool, w, what in rows:
                cells = {lib: results[condition][lib][layout].get(pool, {}) for lib in shown}
                values = {lib: (c.get(what) if "error" not in c else c) for lib, c in
                          cells.items()}
                ms = what.endswith("(ms)")
                zc = values.get("zarrcore")
                peers = [v for lib, v in values.items() if lib in C.PEERS
                         and isinstance(v, float)]
                fl = None if ms else (bare.get(f"bare, {w}", {}).get(what)
                                      or floor["s3" if condition == "s3" else "warm"][layout][w])
                vs_peer = vs_floor = ""
                if isinstance(zc, float) and peers:
                    best = min(peers) if ms else max(peers)
                    vs_peer = f"{zc / best if ms else best / zc:.2f}"
                if isinstance(zc, float) and fl:
                    vs_floor = f"{fl / zc:.2f}"
                print(f"| {pool} | {what} | "
                      + " | ".join(RA._cell(values[lib], ms) for lib in shown)
                      + f" | {RA._cell(fl)} | {vs_peer} | {vs_floor} |")
            for lib in shown:
                for pool, c in results[condition][lib][layout].items():
                    if "error" in c:
                        print(f"- {lib} {pool}: {c['error']}")
        for lib, r in results[condition].items():
            if "error" in r:
                print(f"- {lib}: {r['error']}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2048)
    p.add_argument("--shard", type=int, default=64, help="samples per shard")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--epoch-samples", type=int, default=2048)
    p.add_argument("--remote-samples", type=int, default=512,
                   help="samples per epoch over S3 (each waits for --delay)")
    p.add_argument("--workers", default="2,4", help="pool sizes")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--cache-mib", type=int, default=1024, help="the cache of each worker")
    p.add_argument("--conditions", default=",".join(RA.CONDITIONS))
    p.add_argument("--cold-method", choices=_cold.METHODS, default="auto")
    p.add_argument("--delay", type=float, default=0.02, help="seconds added per S3 request")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--layouts", default=",".join(RA.LAYOUTS))
    p.add_argument("--data", help="directory to write the arrays in (default: a temporary one)")
    p.add_argument("--zarrcore", choices=["auto", "inplace"], default="auto")
    p.add_argument("--peer-python", default=sys.executable,
                   help="the interpreter of the peers and the S3 server (default: this one)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds for one library under one condition")
    p.add_argument("--worker-timeout", type=float, default=120,
                   help="seconds for a pool to start, or for one epoch")
    p.add_argument("--quick", action="store_true", help="a smoke run: " + ", ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in QUICK.items()))
    p.add_argument("--json", help="write the results here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--condition", help=argparse.SUPPRESS)
    p.add_argument("--s3-endpoint", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        for name, value in QUICK.items():
            if getattr(args, name) == p.get_default(name):
                setattr(args, name, value)
    args.workers = [int(w) for w in str(args.workers).split(",") if w]
    args.methods = [m for m in args.methods.split(",") if m]
    layouts = [x for x in args.layouts.split(",") if x]
    conditions = [x for x in args.conditions.split(",") if x]
    libs = [x for x in args.libs.split(",") if x]
    if "s3" in conditions:
        libs.append(BARE)
    if args.zarrcore == "inplace":
        os.environ["ZARRCORE_FROM"] = "inplace"
    for k, v in remote.CREDENTIALS.items():
        os.environ.setdefault(k, v)
    if args.child:
        print(json.dumps(measure_lib(args.child, args.condition, layouts, args)))
        return

    tmp = None if args.data else tempfile.mkdtemp(prefix="zarrcore-loader-")
    args.data = args.data or tmp
    try:
        if not os.path.exists(os.path.join(args.data, "reference.npy")):
            RA.write_layouts(args.data, args.steps, args.shard)
        floor = floors(args.data, layouts, args)
        results = RA.run_conditions(args.data, conditions, libs, layouts, args, __file__)
        print(f"samples/s, ({args.steps}, 181, 360) float32 zstd level {RA.ZSTD_LEVEL}, "
              f"batches of {args.batch}, {args.epochs} epochs")
        print_tables(results, floor, conditions, layouts, libs, args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"args": {k: v for k, v in vars(args).items()},
                           "floors": floor, "results": results}, f, indent=1, default=str)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
