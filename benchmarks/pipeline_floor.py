"""zarr-python's own share of a request: the floor under any codec pipeline.

zarr-python turns a selection into its chunks' projections, calls the pipeline's `read` or
`write` once with all of them, and returns. This times zarr-python with a pipeline that does
nothing (`NullPipeline`: no store request, no decode, every chunk reported present) beside
zarr-python with zarrcore's pipeline and zarrcore's own API, on run.py's reference datasets
(make them first with `python benchmarks/run.py --workloads read_all,small`). What zarr-python with
the null pipeline takes no pipeline can undercut, so "zarr-python with zarrcore's pipeline
within 1.2× of zarrcore's API" is reachable only where that floor is below 1.2× zarrcore's time.

    python benchmarks/pipeline_floor.py [--n 512] [--repeats 3]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

import zarr  # noqa: E402
from zarr.abc.codec import GetResult  # noqa: E402
from zarr.core.codec_pipeline import BatchedCodecPipeline  # noqa: E402
from zarr.registry import register_pipeline  # noqa: E402

import zarrcore  # noqa: E402
import zarrcore.zarr_pipeline  # noqa: E402,F401  (registers the pipeline)

PIPELINE = "zarrcore.zarr_pipeline.ZarrcorePipeline"
NULL = f"{__name__}.NullPipeline"


class NullPipeline(BatchedCodecPipeline):
    """A pipeline that touches no store and no byte: zarr-python's work alone remains."""

    async def read(self, batch_info, out, drop_axes=()):
        return tuple(GetResult(status="present") for _ in batch_info)

    async def write(self, batch_info, value, drop_axes=()):
        for _ in batch_info:
            pass


register_pipeline(NullPipeline)


def zarr_with(path):
    """A function opening an array with zarr-python and the pipeline at `path`."""
    def open_(store, mode="r"):
        with zarr.config.set({"codec_pipeline.path": path}):
            return zarr.open_array(store, mode=mode)
    return open_


def zarr_create(path, ds, store):
    with zarr.config.set({"codec_pipeline.path": path}):
        return zarr.create_array(store, shape=ds.shape, dtype=ds.dtype, chunks=ds.chunks,
                                 shards=ds.shards, compressors=ds.compressors() or None,
                                 fill_value=0, overwrite=True)


LIBS = {
    "zarr-python-null": (zarr_with(NULL), lambda ds, s: zarr_create(NULL, ds, s)),
    "zarr-python-zarrcore": (zarr_with(PIPELINE), lambda ds, s: zarr_create(PIPELINE, ds, s)),
    "zarrcore": (lambda store, mode="r": zarrcore.open_array(store, mode=mode),
                 lambda ds, s: zarrcore.create_array(
                     s, shape=ds.shape, dtype=ds.dtype, chunks=ds.chunks, shards=ds.shards,
                     compressors=ds.compressors() or None, fill_value=0, overwrite=True)),
}


def measure(lib, ds, ref, scratch, repeats):
    """{workload: seconds} of `lib` on dataset `ds`."""
    open_, create = LIBS[lib]
    a = open_(ref)
    data = a[...]
    if lib != "zarr-python-null" and not C.check_equal(data, ds):
        raise AssertionError(f"{lib} read {ds.name} wrongly")
    out = {"read_all": C.best_time(lambda: a[...], repeats)}
    blocks = ds.regions(ds.read_block)

    def read_blocks():
        for sel in blocks:
            a[sel]
    out["read_chunks"] = C.best_time(read_blocks, repeats)
    best = float("inf")
    for _ in range(repeats):
        dest = os.path.join(scratch, lib, ds.name)
        C.set_aside(dest, scratch)
        b = create(ds, dest)
        start = time.perf_counter()
        b[...] = data
        best = min(best, time.perf_counter() - start)
    out["write_all"] = best
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--small-n", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args(argv)
    results = {}
    scratch = tempfile.mkdtemp(dir=args.data_dir)
    try:
        for name, ds in C.make_datasets(args.n, args.small_n).items():
            ref = C.reference_path(args.data_dir, args.n, args.small_n, name)
            if not os.path.exists(ref):
                sys.exit(f"{ref} is missing: run benchmarks/run.py --workloads "
                         f"read_all,small first")
            for lib in LIBS:
                results.setdefault(name, {})[lib] = measure(lib, ds, ref, scratch, args.repeats)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"uptime: {os.getloadavg()}")
    print("| dataset | workload | zarr-python, null pipeline | zarr-python + zarrcore "
          "| zarrcore | null ÷ zarrcore | pipeline ÷ zarrcore |")
    print("|---|---|---|---|---|---|---|")
    for name, libs in results.items():
        for w in libs["zarrcore"]:
            null, pipe, core = (libs[k][w] for k in LIBS)
            print(f"| {name} | {w} | {null:.4f} | {pipe:.4f} | {core:.4f} "
                  f"| {null / core:.2f}× | {pipe / core:.2f}× |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
