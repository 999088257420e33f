"""The conversion benchmark: a v2 array (blosc-lz4, 128³ chunks; 2 GiB at --n 1024) to v3
zstd, sharded 512³ with 64³ inner chunks, by each library, side by side in one run.

    python benchmarks/convert.py                 # N=1024 (2 GiB), best of 3
    python benchmarks/convert.py --n 256 --repeats 1     # a smoke test

Measured, each run in a fresh process (for its peak RSS): `zarrcore.convert`; zarr-python
copying shard by shard; tensorstore reading then writing shard by shard; rechunker with dask
when it installs beside zarr-python 3. The compute floor is decoding the source plus encoding
the destination (python-blosc and python-zstandard, GIL released, on every CPU). Every
result is read back and compared with the expected values. The table goes into RESULTS.md
as its section "convert".
"""
import argparse
import concurrent.futures
import datetime
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time

import numpy as np

import _common as C
import _report

SOURCE_CHUNK = 128
SHARD, INNER = 512, 64
BLOSC_LZ4 = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
LIBS = ("zarrcore", "zarr-python", "zarr-python-fused", "zarrs-python", "tensorstore",
        "rechunker")


def dataset(n):
    return C.Dataset("plain", (n, n, n), "uint16", (min(SOURCE_CHUNK, n),) * 3, zstd=False)


def shard_shape(n):
    return (min(SHARD, n),) * 3


def make_source(path, n):
    """The v2 source array, written by zarrcore slab by slab (zarr-python reads it the same)."""
    import zarrcore

    if os.path.exists(os.path.join(path, ".zarray")):
        return
    ds = dataset(n)
    shutil.rmtree(path, ignore_errors=True)
    a = zarrcore.create_array(path, shape=ds.shape, chunks=ds.chunks, dtype=ds.dtype,
                              zarr_format=2, compressors=BLOSC_LZ4, fill_value=0)
    step = ds.chunks[0]
    for z in range(0, n, step):
        region = (slice(z, min(z + step, n)), slice(0, n), slice(0, n))
        a[region] = ds.expected(region)


# -- the libraries (run in a child process each) -----------------------------------------------

def run_zarrcore(src, dst, n, memory):
    import zarrcore

    zarrcore.convert(src, dst, zarr_format=3, shards=shard_shape(n), chunks=(min(INNER, n),) * 3,
                     compressor="zstd:0", memory=memory, progress=False)


def _shard_regions(n):
    return dataset(n).regions(shard_shape(n))


def run_zarr_python(src, dst, n, memory):
    import zarr

    source = zarr.open_array(src, mode="r")
    dest = zarr.create_array(dst, shape=source.shape, dtype=source.dtype, shards=shard_shape(n),
                             chunks=(min(INNER, n),) * 3, compressors=[C.ZSTD0], fill_value=0,
                             overwrite=True)
    for region in _shard_regions(n):
        dest[region] = source[region]


def run_tensorstore(src, dst, n, memory):
    import tensorstore as ts

    ctx = ts.Context({"cache_pool": {"total_bytes_limit": 0}})
    source = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": src}},
                     context=ctx, read=True).result()
    ds = C.Dataset("sharded", source.shape, "uint16", (min(INNER, n),) * 3,
                   shards=shard_shape(n), zstd=True)
    dest = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": dst},
                    "metadata": ds.metadata_json()}, context=ctx, create=True,
                   delete_existing=True).result()
    for region in _shard_regions(n):
        dest[region].write(source[region].read().result()).result()


def run_rechunker(src, dst, n, memory):
    import dask
    import zarr
    from rechunker import rechunk

    source = zarr.open_array(src, mode="r")
    temp = dst + ".tmp"
    plan = rechunk(source, shard_shape(n), f"{memory}B", dst, temp_store=temp)
    with dask.config.set(scheduler="threads"):
        plan.execute()


# zarr-python runs with each of its codec pipelines (C.ZARR_PIPELINES), chosen in worker().
RUNNERS = {"zarrcore": run_zarrcore, "tensorstore": run_tensorstore, "rechunker": run_rechunker,
           **{lib: run_zarr_python for lib in C.ZARR_PIPELINES}}


MODULES = {"zarrcore": ["zarrcore"], "tensorstore": ["tensorstore"],
           "rechunker": ["zarr", "dask", "rechunker"], **{lib: ["zarr"] for lib in C.ZARR_PIPELINES}}


def worker(args):
    """Child: one timed conversion; prints {"seconds", "maxrss"} as JSON."""
    shutil.rmtree(args.dst, ignore_errors=True)
    for module in MODULES[args.worker]:  # imports are not part of the time
        __import__(module)
    if args.worker in C.ZARR_PIPELINES:
        C.use_zarr_pipeline(args.worker)
    C.reset_peak_rss()
    start = time.perf_counter()
    RUNNERS[args.worker](args.src, args.dst, args.n, args.memory)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "maxrss": C.peak_rss()}))


# -- floor and checks (in the orchestrator) ------------------------------------------------------

def compute_floor(src, n):
    """Seconds to decode every source chunk and zstd-encode every destination inner chunk, each
    on all CPUs (python-blosc and python-zstandard release the GIL). Decoding goes into one
    reused buffer per thread, so page faults of fresh memory are not counted; every inner chunk
    of the destination is encoded from its own values (cut out untimed, shard by shard), since
    their cost varies with their content across the array."""
    import blosc
    import zstandard

    ds = dataset(n)
    names = [".".join(map(str, idx)) for idx in np.ndindex(*ds.grid(ds.chunks))]
    blobs = [open(os.path.join(src, name), "rb").read() for name in names]
    threads = os.cpu_count() or 1
    local = threading.local()  # per thread: a decode buffer; a ZstdCompressor (not shareable)
    chunk_bytes = int(np.prod(ds.chunks)) * ds.dtype.itemsize

    def decode_one(blob):
        if not hasattr(local, "out"):
            local.out = np.empty(chunk_bytes, dtype=np.uint8)
        return blosc.decompress_ptr(blob, local.out.ctypes.data)

    def encode_one(raw):
        if not hasattr(local, "compressor"):
            local.compressor = zstandard.ZstdCompressor(level=3)
        return local.compressor.compress(raw)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(decode_one, blobs[:threads]))  # each thread's buffer faulted in first
        start = time.perf_counter()
        list(pool.map(decode_one, blobs))
        decode = time.perf_counter() - start
        inner = min(INNER, n)
        encode = 0.0
        for shard in _shard_regions(n):
            values = ds.expected(shard)
            raws = [values[z:z + inner, y:y + inner, x:x + inner].tobytes()
                    for z, y, x in itertools.product(*(range(0, s, inner) for s in values.shape))]
            start = time.perf_counter()
            list(pool.map(encode_one, raws))
            encode += time.perf_counter() - start
    return decode, encode


def check(dst, n):
    """Does the converted array hold the expected values, with the expected layout?"""
    import zarrcore

    a = zarrcore.open_array(dst, mode="r")
    if a.shape != (n, n, n) or a.shards != shard_shape(n) or a.chunks != (min(INNER, n),) * 3:
        return False
    step = a.shards[0]
    ds = dataset(n)
    return all(np.array_equal(a[z:z + step], ds.expected((slice(z, min(z + step, n)), slice(0, n), slice(0, n))))
               for z in range(0, n, step))


def available(lib):
    code = "; ".join(f"import {module}" for module in MODULES[lib])
    if lib == "rechunker":
        # rechunker drives zarr 2's API: it must also work beside the installed zarr.
        code += "; import zarr, rechunker.api; assert zarr.__version__.startswith('2')"
    # From benchmarks/, as the workers import: a checkout's unbuilt zarrcore/ in the current
    # directory would hide the installed one.
    return subprocess.run([sys.executable, "-c", code], capture_output=True,
                          cwd=C.HERE).returncode == 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--memory", type=int, default=1 << 30, help="zarrcore's --memory, bytes")
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--results", default=os.path.join(C.HERE, "RESULTS.md"))
    p.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    p.add_argument("--src", help=argparse.SUPPRESS)
    p.add_argument("--dst", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    src = os.path.join(args.data_dir, f"convert{args.n}", "source_v2.zarr")
    print(f"source {src}", file=sys.stderr)
    make_source(src, args.n)
    libs = [lib for lib in args.libs.split(",") if lib]
    results = {lib: {"times": [], "maxrss": 0, "ok": None} for lib in libs}
    for lib in libs:
        if not available(lib):
            results[lib]["error"] = "not installable beside zarr-python 3 here"
            libs = [x for x in libs if x != lib]
    load_start = os.getloadavg()
    decode, encode = compute_floor(src, args.n)
    for round_ in range(args.repeats):
        for lib in libs[round_ % len(libs):] + libs[:round_ % len(libs)]:
            dst = os.path.join(args.data_dir, f"convert{args.n}", f"{lib}.zarr")
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", lib, "--src", src, "--dst", dst,
                 "--n", str(args.n), "--memory", str(args.memory)],
                capture_output=True, text=True)
            r = results[lib]
            if proc.returncode:
                r["error"] = proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"
                continue
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            r["times"].append(out["seconds"])
            r["maxrss"] = max(r["maxrss"], out["maxrss"])
            if r["ok"] is None:
                r["ok"] = check(dst, args.n)
            print(f"{lib}: {out['seconds']:.2f} s, peak RSS {out['maxrss'] / 2**20:.0f} MiB",
                  file=sys.stderr)
            shutil.rmtree(dst, ignore_errors=True)
    section = report(args, results, decode, encode, load_start, os.getloadavg())
    _report.write_section(args.results, "convert", section)
    print(section)


def report(args, results, decode, encode, load_start, load_end):
    nbytes = 2 * args.n ** 3
    floor = decode + encode
    L = ["## Convert a v2 array to v3 sharded (`benchmarks/convert.py`)\n",
         f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, {platform.node()}, "
         f"{os.cpu_count()} CPUs, load {load_start[0]:.2f} at start and {load_end[0]:.2f} at end; "
         f"`python benchmarks/convert.py --n {args.n} --repeats {args.repeats}`.\n",
         f"Source: uint16 {args.n}³ ({nbytes / 2**30:.2f} GiB), v2, blosc lz4 level 5 with "
         f"byte shuffle, {min(SOURCE_CHUNK, args.n)}³ chunks. Destination: v3, shards "
         f"{min(SHARD, args.n)}³ of {min(INNER, args.n)}³ zstd (level 0, i.e. 3) inner chunks, "
         f"index bytes+crc32c at the end. Best of {args.repeats}, each run a fresh process.\n",
         "| library | best (s) | × best peer | × compute floor | peak RSS (MiB) | result |",
         "|---|---:|---:|---:|---:|---|"]
    peers = {lib: min(r["times"]) for lib, r in results.items()
             if lib != "zarrcore" and r["times"] and r["ok"]}
    best_peer = min(peers.values()) if peers else None
    for lib, r in results.items():
        if not r["times"]:
            L.append(f"| {lib} | — | — | — | — | {r.get('error', 'not run')} |")
            continue
        best = min(r["times"])
        ratio = f"{best / best_peer:.2f}" if best_peer and lib == "zarrcore" else ""
        L.append(f"| {lib} | {best:.2f} | {ratio} | {best / floor:.2f} | {r['maxrss'] / 2**20:.0f} "
                 f"| {'exact' if r['ok'] else 'WRONG'} |")
    L.append("")
    L.append(f"Compute floor {floor:.2f} s on {os.cpu_count()} threads: blosc-lz4 decode of the "
             f"source {decode:.2f} s + zstd level 3 encode of the inner chunks {encode:.2f} s.")
    zc = results.get("zarrcore", {})
    if zc.get("times") and best_peer:
        best = min(zc["times"])
        L.append(f"Targets: ≤ 0.5× the best peer ({best / best_peer:.2f}×), ≤ 1.2× the compute "
                 f"floor ({best / floor:.2f}×), peak RSS ≤ --memory {args.memory / 2**20:.0f} MiB "
                 f"({zc['maxrss'] / 2**20:.0f} MiB).")
    return "\n".join(L)


if __name__ == "__main__":
    main()
