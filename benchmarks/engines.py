#!/usr/bin/env python3
"""A sharded array read into dask, Ray and Cubed: each engine over zarrcore against that
engine's own Zarr path, over a directory and a loopback S3 (moto); writes from tasks that share
shards, checked against numpy.

    make bench-venv bench-zarr2-venv
    .bench-venv/bin/python benchmarks/engines.py                      # N=256, best of 3
    .bench-venv/bin/python benchmarks/engines.py --n 128 --repeats 1  # a smoke run

The array: N x N x N float32 (N=256: 64 MiB), zstd, in shards of N/8 x N x N rows of inner
chunks of 8 x 64 x 64 (format 3), and the same values as a consolidated format 2 array chunked
as the inner chunks, both written by zarrcore, in a directory and in a bucket of moto's S3
server on 127.0.0.1. Each read is checked (the sum of what the engine holds).

- Ray: `zarrcore.ray.read_zarr` of the sharded array against `ray.data.read_zarr` of the
  format 2 array (Ray's reader needs zarr-python 2: it runs in .bench-zarr2-venv, made from
  benchmarks/zarr2-requirements.txt), at its defaults (one row per chunk) and with
  `chunk_shapes=[N/8]` (one row per N/8 x 64 x 64 slab, as coarse as zarrcore's blocks). The
  rate is the array's bytes over the time from the call to `Dataset.materialize()` returning,
  each contender in a process of its own with a local Ray cluster of 2 CPUs (started before
  the clock), best of --repeats, the contenders interleaved round by round.
- Cubed (threads executor, 2 threads): the sum of the array (a read) and a rechunk of it to
  N x N x N/8 blocks written to a new array (`allowed_mem` 500 MB), with Cubed's default
  zarr-python storage against zarr-python with zarrcore's codec pipeline (`zarr.config`
  "codec_pipeline.path"), intermediates in a local work directory.
- dask (threaded scheduler): the sum of `zarrcore.dask.from_zarr(...)` against that of
  `dask.array.from_zarr` (zarr-python 3, its default pipeline), one task per shard.
- Writes into shared shards: rows written by tasks of 7 rows each into shards of N/8 rows,
  through `zarrcore.ray.write_zarr` and through Cubed on zarrcore (`cubed.store` into a
  zarr-python array), read back and compared with numpy: the rows that differ.

Writes benchmarks/runs/<date>-engines-n<N>.json and the section "engines" of RESULTS.md.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ZARR2_PYTHON = os.path.join(REPO, ".bench-zarr2-venv", "bin", "python")
PIPELINE = "zarrcore.zarr_pipeline.ZarrcorePipeline"
MIB = 2 ** 20


def layout(n):
    """(shards, inner chunks) of the N-cube."""
    return (n // 8, n, n), (8, min(64, n), min(64, n))


def values(n):
    return np.random.default_rng(0).standard_normal((n, n, n)).astype("float32")


def make_arrays(where, options, data):
    """The sharded format 3 array `v3` and the consolidated format 2 group holding `x`, below
    `where`."""
    import zarrcore

    shards, chunks = layout(data.shape[0])
    a = zarrcore.create_array(f"{where}/v3", shape=data.shape, dtype=data.dtype, chunks=chunks,
                              shards=shards, compressors={"name": "zstd"},
                              storage_options=options)
    a[...] = data
    group = zarrcore.open_group(f"{where}/v2", mode="w", zarr_format=2, storage_options=options)
    b = group.create_array("x", shape=data.shape, dtype=data.dtype, chunks=chunks,
                           compressors={"id": "zstd", "level": 0})
    b[...] = data
    zarrcore.consolidate_metadata(f"{where}/v2", storage_options=options)


def s3fs_options(options):
    """s3fs's options for the server zarrcore's `options` (obstore's) name."""
    return {"key": options["access_key_id"], "secret": options["secret_access_key"],
            "endpoint_url": options["endpoint"],
            "client_kwargs": {"region_name": options["region"]}}


# -- Ray, one process per contender ------------------------------------------------------------
def ray_worker(args):
    """Time the contender's reads into a materialized Dataset (or, for "write", count the rows
    lost by writes into shared shards); print JSON."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    options = json.loads(args.options) if args.options else None
    if args.contender == "write":
        print(json.dumps(ray_shared_shard_writes(args.url, args.rows)))
        return
    if args.contender == "zarrcore":
        import zarrcore.ray

        def read():
            return zarrcore.ray.read_zarr(args.url, storage_options=options)
        column = "data"
    else:
        filesystem = None
        if options:
            import s3fs

            filesystem = s3fs.S3FileSystem(**s3fs_options(options), use_listings_cache=False)
        chunk_shapes = [args.rows] if args.contender == "ray-slabs" else None

        def read():
            return ray.data.read_zarr(args.url, filesystem=filesystem, chunk_shapes=chunk_shapes)
        column = "chunk"
    times = []
    for _ in range(args.inner):
        started = time.perf_counter()
        dataset = read().materialize()
        times.append(time.perf_counter() - started)
    total = sum(float(np.sum(np.asarray(b[column], dtype="float64")))
                for b in dataset.iter_batches(batch_size=None, batch_format="numpy"))
    ray.shutdown()
    print(json.dumps({"seconds": min(times), "sum": total}))


def run_ray(python, contender, url, options, rows, inner):
    """Run a Ray worker process; its JSON result, or the error it ended with."""
    python = python if contender in ("zarrcore", "write") else ZARR2_PYTHON
    out = subprocess.run(
        [python, os.path.abspath(__file__), "--ray-worker", contender, "--url", url,
         "--options", json.dumps(options) if options else "", "--rows", str(rows),
         "--inner", str(inner)], capture_output=True, text=True, timeout=1800,
        cwd=HERE)  # (Ray's workers import from the directory it starts in: not the checkout's)
    if out.returncode:
        return {"error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- Cubed and dask, in this process -----------------------------------------------------------
def zarr_store(url, options):
    import zarr.storage

    if options is None:
        return zarr.storage.LocalStore(url)
    return zarr.storage.FsspecStore.from_url(url, storage_options={
        **s3fs_options(options), "asynchronous": True})


def cubed_run(url, options, path, work, n):
    """(sum seconds, sum, rechunk seconds) with the zarr-python pipeline set now."""
    import cubed
    import cubed.array_api as xp
    from cubed.runtime.create import create_executor

    executor = create_executor("threads", {"max_workers": 2})
    spec = cubed.Spec(work_dir=work, allowed_mem="500MB")
    x = cubed.from_zarr(zarr_store(url, options), spec=spec)
    started = time.perf_counter()
    total = float(xp.sum(x, dtype=xp.float64).compute(executor=executor))
    summed = time.perf_counter() - started
    started = time.perf_counter()
    cubed.to_zarr(x.rechunk((n, n, n // 8)), path, executor=executor)
    return summed, total, time.perf_counter() - started


def dask_run(lib, url, options):
    import dask

    if lib == "zarrcore":
        import zarrcore.dask

        x = zarrcore.dask.from_zarr(url, storage_options=options)
    else:
        import dask.array as da
        import zarr

        x = da.from_zarr(zarr.open_array(zarr_store(url, options), mode="r"))
    started = time.perf_counter()
    with dask.config.set(scheduler="threads", num_workers=2):
        total = float(x.sum(dtype="float64").compute())
    return time.perf_counter() - started, total


# -- writes into shared shards -----------------------------------------------------------------
def lost_rows(got, expected):
    return int(np.sum(np.any(got != expected, axis=tuple(range(1, got.ndim)))))


def shared_rows(n):
    """The rows of the shared-shard writes: 4N rows of 8 x 8, and the shard's rows."""
    rows = n * 4
    return np.arange(rows * 64, dtype="int32").reshape(rows, 8, 8), layout(n)[0][0]


def ray_shared_shard_writes(where, n):
    """Rows lost by Ray's tasks of 7 rows (in random order) writing shards of N/8 rows."""
    import ray
    import zarrcore
    import zarrcore.ray

    expected, shard = shared_rows(n)
    rows = len(expected)
    items = [{"data": expected[i], "index": i}
             for i in np.random.default_rng(2).permutation(rows)]
    target = zarrcore.create_array(f"{where}/ray-w", shape=expected.shape, dtype="int32",
                                   chunks=(2, 8, 8), shards=(shard, 8, 8))
    zarrcore.ray.write_zarr(ray.data.from_items(items, override_num_blocks=-(-rows // 7)),
                            target)
    return {"rows": rows, "lost": lost_rows(target[...], expected)}


def cubed_shared_shard_writes(where, n):
    """Rows lost by Cubed's tasks of 7 rows writing shards of N/8 rows through zarrcore's
    pipeline."""
    import cubed
    import zarr
    import zarrcore
    from cubed.runtime.create import create_executor

    expected, shard = shared_rows(n)
    with zarr.config.set({"codec_pipeline.path": PIPELINE}):
        target = zarr.create_array(f"{where}/cubed-w", shape=expected.shape, dtype="int32",
                                   chunks=(2, 8, 8), shards=(shard, 8, 8))
        spec = cubed.Spec(work_dir=f"{where}/work-w", allowed_mem="100MB")
        cubed.store(cubed.from_array(expected, chunks=(7, 8, 8), spec=spec), target,
                    executor=create_executor("threads", {"max_workers": 2}))
    return {"rows": len(expected), "lost": lost_rows(zarrcore.open_array(f"{where}/cubed-w")[...],
                                                     expected)}


# -- the run -----------------------------------------------------------------------------------
def measure(args, server, bucket, tmp):
    import zarr

    data = values(args.n)
    expected = float(data.sum(dtype="float64"))
    places = {"directory": (os.path.join(tmp, "d"), None),
              "s3": (f"s3://{bucket}/d", server.storage_options())}
    for where, options in places.values():
        make_arrays(where, options, data)
    rows = layout(args.n)[0][0]
    results = {"ray": {}, "cubed": {}, "dask": {}}
    for run in range(args.repeats):
        for place, (where, options) in places.items():
            for contender, url in (("zarrcore", f"{where}/v3"), ("ray", f"{where}/v2"),
                                   ("ray-slabs", f"{where}/v2")):
                got = run_ray(args.ray_python, contender, url, options, rows, args.inner)
                if "sum" in got and not np.isclose(got["sum"], expected, rtol=1e-6):
                    got = {"error": f"sum {got['sum']} != {expected}"}
                keep = results["ray"].setdefault(place, {}).setdefault(contender, got)
                if "seconds" in got and got["seconds"] <= keep.get("seconds", np.inf):
                    results["ray"][place][contender] = got
            for lib in ("zarrcore", "zarr-python"):
                with zarr.config.set({"codec_pipeline.path": PIPELINE} if lib == "zarrcore"
                                     else {}):
                    summed, total, rechunked = cubed_run(
                        f"{where}/v3", options, os.path.join(tmp, f"c-{place}-{lib}-{run}"),
                        os.path.join(tmp, "work"), args.n)
                assert np.isclose(total, expected, rtol=1e-6), (lib, total, expected)
                best = results["cubed"].setdefault(place, {}).setdefault(
                    lib, {"sum": summed, "rechunk": rechunked})
                best["sum"], best["rechunk"] = min(best["sum"], summed), min(best["rechunk"],
                                                                              rechunked)
                seconds, total = dask_run(lib, f"{where}/v3", options)
                assert np.isclose(total, expected, rtol=1e-6), (lib, total, expected)
                keep = results["dask"].setdefault(place, {})
                keep[lib] = min(keep.get(lib, np.inf), seconds)
    written = os.path.join(tmp, "w")
    os.makedirs(written)
    results["writes"] = {
        "ray": run_ray(args.ray_python, "write", written, None, args.n, 1),
        "cubed": cubed_shared_shard_writes(written, args.n)}
    return results


def section(args, results, load):
    """RESULTS.md's section of a run."""
    mib = args.n ** 3 * 4 / MIB
    shards, chunks = layout(args.n)
    lines = [f"## Engines: a sharded array into dask, Ray and Cubed (N={args.n})", "",
             f"`python benchmarks/engines.py --n {args.n} --repeats {args.repeats}`, "
             f"{datetime.date.today()}, load average {load} at the start (2 cores, shared). "
             f"{args.n}³ float32 ({mib:.0f} MiB), zstd, shards {shards} of inner chunks "
             f"{chunks}; format 2: consolidated, chunks {chunks}. Best of {args.repeats} "
             f"rounds (Ray: of {args.inner} reads each), interleaved; every read checked.", "",
             "### Ray: read into a materialized Dataset (MiB/s)", "",
             "| place | zarrcore.ray, v3 sharded | ray.data.read_zarr, v2 | "
             "read_zarr, v2, chunk_shapes=[N/8] | zarrcore over Ray's best |",
             "|---|---|---|---|---|"]
    for place, got in results["ray"].items():
        rate = {k: mib / v["seconds"] if "seconds" in v else None for k, v in got.items()}
        cells = [f"{rate[k]:.0f}" if rate[k] else got[k]["error"].splitlines()[-1][:60]
                 for k in ("zarrcore", "ray", "ray-slabs")]
        theirs = max(filter(None, (rate["ray"], rate["ray-slabs"])), default=None)
        ratio = f"{rate['zarrcore'] / theirs:.1f}×" if theirs and rate["zarrcore"] else "—"
        lines.append(f"| {place} | " + " | ".join(cells) + f" | {ratio} |")
    lines += ["", "### Cubed (threads executor): seconds", "",
              "| place | sum, zarr-python | sum, zarrcore pipeline | rechunk, zarr-python | "
              "rechunk, zarrcore pipeline | rechunk: zarr-python over zarrcore |",
              "|---|---|---|---|---|---|"]
    for place, got in results["cubed"].items():
        z, p = got["zarrcore"], got["zarr-python"]
        lines.append(f"| {place} | {p['sum']:.2f} | {z['sum']:.2f} | {p['rechunk']:.2f} | "
                     f"{z['rechunk']:.2f} | {p['rechunk'] / z['rechunk']:.2f}× |")
    lines += ["", "### dask (threaded scheduler): sum, seconds", "",
              "| place | dask.array.from_zarr (zarr-python) | zarrcore.dask.from_zarr | "
              "zarr-python over zarrcore |", "|---|---|---|---|"]
    for place, got in results["dask"].items():
        lines.append(f"| {place} | {got['zarr-python']:.2f} | {got['zarrcore']:.2f} | "
                     f"{got['zarr-python'] / got['zarrcore']:.2f}× |")
    w = results["writes"]
    lines += ["", f"Writes into shared shards ({w['cubed']['rows']} rows of 8 × 8, tasks of 7 "
                  f"rows, shards of {shards[0]} rows; Ray's rows in random order), read back "
                  f"and compared with numpy: rows lost: Ray {w['ray'].get('lost', w['ray'])}, "
                  f"Cubed {w['cubed']['lost']}."]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--inner", type=int, default=2, help="Ray reads per process")
    parser.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    parser.add_argument("--ray-python", default=sys.executable,
                        help="the interpreter of zarrcore.ray's contender (with zarrcore and "
                             "Ray Data; default: this one)")
    parser.add_argument("--ray-worker", dest="contender", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        return ray_worker(args)
    sys.path.insert(0, os.path.join(REPO, "tests", "support"))
    sys.path.insert(0, HERE)
    import _report
    from servers import MotoServer

    load = os.getloadavg()[0]
    server = MotoServer()
    try:
        with tempfile.TemporaryDirectory(dir=os.path.join(HERE)) as tmp:
            results = measure(args, server, server.new_bucket(), tmp)
    finally:
        server.stop()
    results["args"] = vars(args) | {"load": load}
    os.makedirs(os.path.join(HERE, "runs"), exist_ok=True)
    out = os.path.join(HERE, "runs", f"{datetime.date.today()}-engines-n{args.n}.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    text = section(args, results, f"{load:.1f}")
    _report.write_section(args.results, "engines", text)
    print(text)


if __name__ == "__main__":
    main()
