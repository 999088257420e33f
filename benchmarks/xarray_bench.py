#!/usr/bin/env python3
"""The `xarray` workload group: a dataset opened and loaded through xarray, and a dask
reduction over it on a 2-worker LocalCluster, by the zarrcore engine and by engine="zarr"
(zarr-python's default pipeline, and the zarrs pipeline).

    python benchmarks/xarray_bench.py time --lib zarrcore --op load --variant sharded --mib 128

run.py drives it (`--workloads xarray`): it generates the datasets once with xarray and
zarr-python, then times each (library, op, variant) in a fresh process, the libraries taking
turns round by round, and checks every result against the sums recorded at generation.
"""
import argparse
import concurrent.futures
import json
import os
import struct
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402
from _worker import _import_zarrcore  # noqa: E402

LIBS = ("zarr-python", "zarr-python-fused", "zarrs-python", "zarrcore")
OPS = ("load", "mean")
VARIANTS = ("plain", "sharded")
FLOAT_VARS = ("t2m", "u10", "v10", "msl")
INT_VARS = ("cloud", "land")
NY = NX = 512
# Unsharded: 4 MiB float32 chunks. Sharded: 16 MiB float32 shards of 512 KiB inner chunks.
CHUNKS = {"plain": {"chunks": (16, 256, 256)},
          "sharded": {"chunks": (8, 128, 128), "shards": (16, 512, 512)}}


def ntime(mib):
    """Time steps for about `mib` MiB over all variables."""
    per_step = NY * NX * (4 * len(FLOAT_VARS) + 2 * len(INT_VARS))
    return max(16, round(mib * 2**20 / per_step))


def describe(mib):
    nt = ntime(mib)
    total = nt * NY * NX * (4 * len(FLOAT_VARS) + 2 * len(INT_VARS))
    return (f"{len(FLOAT_VARS)} float32 and {len(INT_VARS)} int16 variables of (time {nt}, "
            f"y {NY}, x {NX}), {total / 2**30:.2f} GiB in all, zstd level 0, format 3; plain: "
            f"chunks {CHUNKS['plain']['chunks']}; sharded: shards "
            f"{CHUNKS['sharded']['shards']} of inner chunks {CHUNKS['sharded']['chunks']}")


def dataset_path(data_dir, mib, variant):
    return os.path.join(data_dir, f"xarray-{mib}MiB-{variant}.zarr")


def _field(rng, nt, scale, offset):
    """Smooth fields plus noise, as real gridded data compresses."""
    y = np.linspace(0, 3 * np.pi, NY, dtype="float32")[:, None]
    x = np.linspace(0, 5 * np.pi, NX, dtype="float32")[None, :]
    base = np.sin(y) * np.cos(x)
    out = np.empty((nt, NY, NX), dtype="float32")
    for t in range(nt):
        out[t] = offset + scale * (base * np.cos(t / 7) + 0.05 * rng.standard_normal((NY, NX), dtype="float32"))
    return np.round(out, 2)


def generate(data_dir, mib, variant, regenerate=False):
    """Write the dataset with xarray and zarr-python (once, unless `regenerate`; a stamp
    keeps its sums)."""
    import xarray as xr

    path = dataset_path(data_dir, mib, variant)
    stamp = path + ".json"
    spec = {"describe": describe(mib), "chunks": {k: list(v) for k, v in CHUNKS[variant].items()}}
    if os.path.exists(stamp) and not regenerate:
        with open(stamp) as f:
            saved = json.load(f)
        if saved.get("spec") == spec:
            return saved["sums"]
    nt = ntime(mib)
    rng = np.random.default_rng(0)
    data = {}
    for i, name in enumerate(FLOAT_VARS):
        data[name] = (("time", "y", "x"), _field(rng, nt, 10 + i, 280 - 100 * i))
    for i, name in enumerate(INT_VARS):
        data[name] = (("time", "y", "x"), (_field(rng, nt, 50, 0) * (i + 1)).astype("int16"))
    ds = xr.Dataset(data, coords={"time": np.arange(nt), "y": np.arange(NY), "x": np.arange(NX)})
    # No _FillValue: the load measures the engines, not xarray's masking.
    encoding = {name: {**CHUNKS[variant], "_FillValue": None} for name in data}
    ds.to_zarr(path, mode="w", zarr_format=3, encoding=encoding, consolidated=True)
    sums = {name: float(ds[name].values.astype("float64").sum()) for name in data}
    with open(stamp, "w") as f:
        json.dump({"spec": spec, "sums": sums}, f)
    return sums


# -- one measurement, in its own process ------------------------------------------------------

def _engine(lib, where):
    """The xarray engine of `lib` (the zarrcore entry point's class, so that a checkout's
    build needs no installed entry point)."""
    if lib in C.ZARRCORES:
        _import_zarrcore(where)
        from zarrcore.xarray import ZarrcoreBackendEntrypoint

        return ZarrcoreBackendEntrypoint
    C.use_zarr_pipeline(lib)
    return "zarr"


def time_one(lib, op, variant, mib, data_dir, where):
    """{"seconds", "sums"} of one open-and-load or one dask mean, timed after one untimed
    run of the same (imports, thread pools, memory and the cluster's workers warmed)."""
    import xarray as xr

    engine = _engine(lib, where)
    path = dataset_path(data_dir, mib, variant)
    n = ntime(mib) * NY * NX
    if op == "load":
        for _ in range(2):
            t0 = time.perf_counter()
            ds = xr.open_dataset(path, engine=engine, chunks=None).load()
            seconds = time.perf_counter() - t0
            sums = {k: float(v.values.astype("float64").sum()) for k, v in ds.data_vars.items()}
            del ds
        return {"seconds": seconds, "sums": sums}
    import distributed

    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        if lib not in C.ZARRCORES:
            client.run(C.use_zarr_pipeline, lib)
        for _ in range(2):
            t0 = time.perf_counter()
            ds = xr.open_dataset(path, engine=engine, chunks={})
            means = ds.mean().compute()
            seconds = time.perf_counter() - t0
        tasks = max(v.data.npartitions for v in ds.data_vars.values())
    return {"seconds": seconds, "sums": {k: float(v) * n for k, v in means.data_vars.items()},
            "tasks_per_variable": tasks}


def time_mean_in_memory(variant, mib, data_dir, where):
    """{"seconds"}: the best of three dask means on a fresh LocalCluster (as time_one's) over
    the dataset already held in the workers' memory, in zarrcore's dask chunks (the shard or
    chunk shape): what the cluster, dask's reduction and numpy take with nothing to read."""
    import distributed
    import xarray as xr

    engine = _engine("zarrcore", where)
    path = dataset_path(data_dir, mib, variant)
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        ds = xr.open_dataset(path, engine=engine, chunks={}).persist()
        distributed.wait(ds)
        best = None
        for _ in range(4):  # the first untimed, as in time_one
            t0 = time.perf_counter()
            ds.mean().compute()
            seconds = time.perf_counter() - t0
            best = seconds if best is None else min(best, seconds)
    return {"seconds": best}


# -- the compute floor ------------------------------------------------------------------------

def _stored_chunks(path, variant):
    """(zstd frame, decoded size) of every stored (inner) chunk of every data variable, read
    from the files as xarray and zarr-python wrote them."""
    frames = []
    for name in (*FLOAT_VARS, *INT_VARS):
        with open(os.path.join(path, name, "zarr.json")) as f:
            meta = json.load(f)
        itemsize = np.dtype(meta["data_type"]).itemsize
        inner = CHUNKS[variant]["chunks"]
        size = int(np.prod(inner)) * itemsize
        shard = CHUNKS[variant].get("shards", inner)
        per_shard = int(np.prod([s // c for s, c in zip(shard, inner)]))
        for root, _, files in os.walk(os.path.join(path, name, "c")):
            for fname in files:
                with open(os.path.join(root, fname), "rb") as f:
                    blob = f.read()
                if variant == "plain":
                    frames.append((blob, size))
                    continue
                # The shard index at the end: (offset, nbytes) per inner chunk, then a crc32c.
                index = blob[-(16 * per_shard + 4):-4]
                for k in range(per_shard):
                    offset, nbytes = struct.unpack_from("<QQ", index, 16 * k)
                    if offset != 2**64 - 1:
                        frames.append((blob[offset:offset + nbytes], size))
    return frames


def decode_floor(path, variant, repeats=3):
    """Best seconds to zstd-decode every stored (inner) chunk of the dataset on all CPUs, each
    thread into one reused buffer (no fresh-memory page faults), with the files already in
    memory: what decoding alone takes, whatever reads it. Decoded with zarrcore's GIL-free
    zstd kernel, the same zstd python-blosc ships."""
    from zarrcore._native import compress as _compress

    frames = _stored_chunks(path, variant)
    largest = max(size for _, size in frames)
    local = threading.local()

    def decode(item):
        frame, size = item
        if not hasattr(local, "out"):
            local.out = np.empty(largest, dtype=np.uint8)
        _compress.zstd_decompress(frame, out=local.out[:size])

    threads = os.cpu_count() or 1
    best = None
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(decode, frames[:threads]))  # each thread's buffer faulted in first
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(decode, frames, chunksize=8))
            seconds = time.perf_counter() - start
            best = seconds if best is None else min(best, seconds)
    return {"best": best, "frames": len(frames), "threads": threads}


# -- the workload group, driven by run.py -----------------------------------------------------

def _measure(lib, op, variant, args, env, mode="time"):
    zarrcore = args.zarrcore
    if lib == C.BASELINE:
        # The baseline's process and its cluster's workers find the older checkout first.
        zarrcore, env = "installed", C.baseline_env(args.baseline)
    argv = [sys.executable, os.path.abspath(__file__), mode, "--variant", variant,
            "--mib", str(args.xarray_mib), "--data-dir", args.data_dir,
            "--zarrcore", zarrcore]
    if mode == "time":
        argv += ["--lib", lib, "--op", op]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode or not lines:
        raise RuntimeError(f"exit code {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(lines[-1])


def _sums_match(got, expected, op):
    rtol = 1e-9 if op == "load" else 1e-5  # a mean of floats rounds
    return got.keys() == expected.keys() and all(
        np.isclose(got[k], expected[k], rtol=rtol) for k in expected)


def run(args, results, log):
    """Generate, then time every (op, variant) for every library; results["timings"] gets
    "xarray_<op>/<variant>" entries as run.py's other workloads."""
    env = dict(os.environ)
    if args.zarrcore == "inplace":
        # The cluster's worker processes import the checkout's zarrcore too.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [C.REPO, env.get("PYTHONPATH")]))
    results["datasets"]["xarray"] = describe(args.xarray_mib)
    results["xarray_floors"] = {}
    sums = {}
    # Every floor before any timing: a dask cluster just torn down still takes CPU.
    for variant in VARIANTS:
        log(f"xarray: generating {variant}: {describe(args.xarray_mib)}")
        sums[variant] = generate(args.data_dir, args.xarray_mib, variant, args.regenerate)
        floor = decode_floor(dataset_path(args.data_dir, args.xarray_mib, variant), variant,
                             repeats=args.warmup + args.repeats)
        results["xarray_floors"][variant] = floor
        log(f"xarray: {variant}: decoding every chunk on {floor['threads']} threads: {floor['best']:.3f}s")
    for variant in VARIANTS:
        floor = results["xarray_floors"][variant]
        try:
            floor["mean_in_memory"] = _measure(None, None, variant, args, env,
                                               mode="mean-in-memory")["seconds"]
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            results["failures"].append({"lib": "floor", "workload": f"xarray_mean/{variant}",
                                        "error": str(e)})
            continue
        log(f"xarray: {variant}: dask mean of the dataset held in memory: "
            f"{floor['mean_in_memory']:.3f}s")
    libs = LIBS + ((C.BASELINE,) if args.baseline else ())
    for variant in VARIANTS:
        for op in OPS:
            key = f"xarray_{op}/{variant}"
            out = {lib: {"best": None, "times": [], "ok": True, "error": None} for lib in libs}
            for rnd in range(args.warmup + args.repeats):
                k = rnd % len(libs)
                for lib in libs[k:] + libs[:k]:
                    r = out[lib]
                    if r["error"]:
                        continue
                    try:
                        reply = _measure(lib, op, variant, args, env)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        r["error"] = str(e)
                        results["failures"].append({"lib": lib, "workload": key, "error": str(e)})
                        continue
                    if not _sums_match(reply["sums"], sums[variant], op):
                        r["ok"] = False
                    if "tasks_per_variable" in reply:
                        r["tasks_per_variable"] = reply["tasks_per_variable"]
                    if rnd >= args.warmup:
                        r["times"].append(reply["seconds"])
            for r in out.values():
                r["best"] = min(r["times"]) if r["times"] else None
            results["timings"][key] = out
            log(f"{key}: " + "  ".join(
                f"{lib} {r['best']:.3f}s" if r["best"] is not None else f"{lib} {r['error'] or '-'}"
                for lib, r in out.items()))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("time", "mean-in-memory"))
    p.add_argument("--variant", choices=VARIANTS, required=True)
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto")
    p.add_argument("--lib", choices=(*LIBS, C.BASELINE))
    p.add_argument("--op", choices=OPS)
    a = p.parse_args(argv)
    if a.mode == "mean-in-memory":
        reply = time_mean_in_memory(a.variant, a.mib, a.data_dir, a.zarrcore)
    elif a.lib is None or a.op is None:
        p.error("time needs --lib and --op")
    else:
        reply = time_one(a.lib, a.op, a.variant, a.mib, a.data_dir, a.zarrcore)
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
