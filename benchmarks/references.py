#!/usr/bin/env python3
"""Virtual references and Icechunk: reading an HDF5/NetCDF4 file's gzip+shuffle chunks through
kerchunk references, and the same data in an Icechunk repository, from local files and through
the loopback S3 server with a fixed delay per request.

    python benchmarks/references.py                        # 1 GiB, 20 ms per request, best of 3
    python benchmarks/references.py --mib 16 --repeats 1   # a smoke run

The data: one float32 variable `t` (time, 512, 512) of --mib MiB in a NetCDF4 file written by
h5netcdf, chunks 8x256x256 (2 MiB), gzip level 4 with HDF5's shuffle filter; kerchunk
references to its chunks (version 1 JSON, made from h5py's chunk index); and an Icechunk
repository holding `t` as Zarr v3 (same chunks, zstd level 0), written by zarr-python. Each
lives in a local directory and in a bucket of a moto S3 server behind benchmarks/remote.py's
delaying proxy (--delay seconds per request).

Readers of the references: zarrcore (its ReferenceStore), zarr-python 3 over fsspec's
ReferenceFileSystem (default and fused pipelines), VirtualiZarr's ManifestStore read by
zarr-python and by zarrcore (when VirtualiZarr installs), and xarray + h5netcdf on the
original file (opened for each read). Readers of the Icechunk repository: zarrcore and
zarr-python (both pipelines) over the session's store. Workloads: read_all and read_region
(the middle half of every axis).

Floors: locally, the decode floor (every chunk read into memory is inflated and unshuffled, or
zstd-decoded, on all CPUs; for Icechunk no less than its store's own fetch, nor than the CPU
seconds of fetch and decode together spread over all CPUs); over S3,
zarrcore's latency floor (ceil(requests / config.io_concurrency) x delay plus the same read
with no delay). Writes benchmarks/references-results.json and the section "references" of
RESULTS.md.
"""
import argparse
import concurrent.futures
import contextlib
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common as C  # noqa: E402
import _report  # noqa: E402
import remote  # noqa: E402
from _worker import _import_zarrcore  # noqa: E402

ROWS, COLS = 512, 512
CHUNKS = (8, 256, 256)
GZIP_LEVEL = 4
NAME = "t"
WORKLOADS = ("read_all", "read_region")
WHERE = ("local", "s3")
REFERENCE_LIBS = ("zarrcore", "zarr-python", "zarr-python-fused", "virtualizarr",
                  "zarrcore-manifest", "xarray-h5netcdf")
ICECHUNK_LIBS = ("zarrcore", "zarr-python", "zarr-python-fused")
S3_OPTIONS = {"access_key_id": "bench", "secret_access_key": "bench", "region": "us-east-1"}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def shape_of(mib):
    steps = max(1, round(mib * 2**20 / (ROWS * COLS * 4) / CHUNKS[0]))
    return (steps * CHUNKS[0], ROWS, COLS)


def expected(shape, start=0, stop=None):
    """The values of time steps [start, stop): smooth in space, a seasonal swing in time, so
    that shuffle and gzip compress them as they do a model's field."""
    stop = shape[0] if stop is None else stop
    t = np.arange(start, stop, dtype="f4")[:, None, None]
    y = np.arange(shape[1], dtype="f4")[None, :, None]
    x = np.arange(shape[2], dtype="f4")[None, None, :]
    return (280 + 15 * np.sin(t / 58) + 0.05 * y - 0.02 * x
            + np.sin(x / 9 + y / 13 + t / 5)).astype("f4")


def region(shape):
    return tuple(slice(s // 4, s // 4 + max(1, s // 2)) for s in shape)


# -- the data ---------------------------------------------------------------------------------
def make_netcdf(path, shape):
    """The NetCDF4 file (h5netcdf), written slab by slab."""
    import h5netcdf

    if os.path.exists(path + ".done"):
        return
    log(f"writing {path} {shape}")
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"time": shape[0], "y": shape[1], "x": shape[2]}
        v = f.create_variable(NAME, ("time", "y", "x"), "f4", chunks=CHUNKS,
                              compression="gzip", compression_opts=GZIP_LEVEL, shuffle=True)
        v.attrs["units"] = "K"
        for start in range(0, shape[0], CHUNKS[0]):
            v[start:start + CHUNKS[0]] = expected(shape, start, start + CHUNKS[0])
    open(path + ".done", "w").close()


def make_references(path, target):
    """kerchunk's version 1 references to the file's chunks, the target named `target`."""
    import h5py

    with h5py.File(path, "r") as f:
        dataset = f[NAME]
        refs = {
            ".zgroup": json.dumps({"zarr_format": 2}),
            f"{NAME}/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["time", "y", "x"],
                                           "units": "K"}),
            f"{NAME}/.zarray": json.dumps({
                "shape": list(dataset.shape), "chunks": list(CHUNKS), "dtype": "<f4",
                "fill_value": None, "order": "C", "compressor": None, "zarr_format": 2,
                "filters": [{"id": "shuffle", "elementsize": 4},
                            {"id": "zlib", "level": GZIP_LEVEL}]}),
        }
        for i in range(dataset.id.get_num_chunks()):
            info = dataset.id.get_chunk_info(i)
            key = ".".join(str(o // c) for o, c in zip(info.chunk_offset, CHUNKS))
            refs[f"{NAME}/{key}"] = [target, info.byte_offset, info.size]
    return {"version": 1, "refs": refs}


def chunk_spans(refs):
    return [tuple(v[1:]) for k, v in refs["refs"].items()
            if k.startswith(NAME + "/") and isinstance(v, list)]


def icechunk_storage(where, root, endpoint=None):
    import icechunk

    if where == "local":
        return icechunk.local_filesystem_storage(root)
    return icechunk.s3_storage(bucket=remote.BUCKET, prefix=root, endpoint_url=endpoint,
                               allow_http=True, force_path_style=True, region="us-east-1",
                               access_key_id="bench", secret_access_key="bench")


def make_icechunk(storage, shape):
    """The Icechunk repository holding `t` as Zarr v3, zstd level 0."""
    import icechunk
    import zarr

    repo = icechunk.Repository.create(storage)
    session = repo.writable_session("main")
    z = zarr.create_array(session.store, name=NAME, shape=shape, chunks=CHUNKS, dtype="f4",
                          compressors=[C.ZSTD0], fill_value=0)
    for start in range(0, shape[0], CHUNKS[0]):
        z[start:start + CHUNKS[0]] = expected(shape, start, start + CHUNKS[0])
    session.commit("t")


def upload(endpoint, path, key):
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="bench", aws_secret_access_key="bench")
    with contextlib.suppress(Exception):
        s3.create_bucket(Bucket=remote.BUCKET)
    s3.upload_file(path, remote.BUCKET, key)


def serve(args):
    """The servers' process: moto S3 and a delaying proxy in front of it; prints {"moto": url,
    "s3": proxy url} and serves until stdin closes."""
    moto, port = remote.start_moto()
    proxy = remote.DelayProxy(("127.0.0.1", port), args.delay)
    print(json.dumps({"moto": f"http://127.0.0.1:{port}", "s3": proxy.url}), flush=True)
    sys.stdin.read()
    moto.stop()


def start_servers(args):
    argv = [sys.executable, os.path.abspath(__file__), "--serve", "--delay", str(args.delay)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("the servers' process did not start")
    urls = json.loads(line)
    return proc, urls["moto"], remote.ProxyCounter(urls["s3"])


# -- readers ----------------------------------------------------------------------------------
class Place:
    """Where the data is read from: local files, or S3 through the delaying proxy."""

    def __init__(self, where, root, endpoint=None):
        self.where, self.root, self.endpoint = where, root, endpoint
        self.nc_key = "references/data.nc"
        self.nc = (os.path.join(root, "data.nc") if where == "local"
                   else f"s3://{remote.BUCKET}/{self.nc_key}")
        self.icechunk = (os.path.join(root, "icechunk") if where == "local"
                         else "references/icechunk")

    def refs(self, local_refs):
        refs = json.loads(json.dumps(local_refs))
        for k, v in refs["refs"].items():
            if isinstance(v, list):
                v[0] = self.nc
        return refs

    def s3fs(self):
        import s3fs

        return s3fs.S3FileSystem(key="bench", secret="bench", endpoint_url=self.endpoint,
                                 client_kwargs={"region_name": "us-east-1"},
                                 use_listings_cache=False, skip_instance_cache=True)


def _zarr_config(lib):
    import zarr

    return zarr.config.set(C.zarr_pipeline_config(lib.removesuffix("-icechunk")))


def open_reader(lib, source, place, refs):
    """(read(selection) -> array) of `lib` over `source` ("references" or "icechunk")."""
    if source == "icechunk":
        import icechunk

        repo = icechunk.Repository.open(icechunk_storage(place.where, place.icechunk,
                                                         place.endpoint))
        store = repo.readonly_session(branch="main").store
        if lib == "zarrcore":
            zc = _import_zarrcore("auto")
            a = zc.open_array(store, path=NAME, mode="r")
            return lambda sel: a[sel]
        return _zarr_reader(lib, store, zarr_format=3)
    if lib == "zarrcore":
        zc = _import_zarrcore("auto")
        from zarrcore.storage.references import ReferenceStore

        options = ({} if place.where == "local" else
                   {"remote_options": {"endpoint": place.endpoint, **S3_OPTIONS},
                    "remote_protocol": "s3"})
        allowed = {"allowed_roots": [place.root]} if place.where == "local" else {}
        a = zc.open_array(ReferenceStore(place.refs(refs), **options, **allowed), path=NAME,
                          mode="r")
        return lambda sel: a[sel]
    if lib.startswith("zarr-python"):
        import zarr

        if place.where == "local":
            options = {"fo": place.refs(refs), "remote_protocol": "file"}
        else:
            options = {"fo": place.refs(refs), "remote_protocol": "s3", "remote_options": {
                "key": "bench", "secret": "bench", "endpoint_url": place.endpoint,
                "client_kwargs": {"region_name": "us-east-1"}, "asynchronous": True}}
        store = zarr.storage.FsspecStore.from_url("reference://", storage_options=options,
                                                  read_only=True)
        return _zarr_reader(lib, store, zarr_format=2)
    if lib in ("virtualizarr", "zarrcore-manifest"):
        store = manifest_store(place)
        if lib == "zarrcore-manifest":
            zc = _import_zarrcore("auto")
            a = zc.open_array(store, path=NAME, mode="r")
            return lambda sel: a[sel]
        return _zarr_reader("zarr-python", store, zarr_format=3)
    if lib == "xarray-h5netcdf":
        import xarray as xr

        def read(sel):
            # Opened for each read: s3fs's file object would serve repeats from its cache.
            source = place.nc if place.where == "local" else place.s3fs().open(place.nc, "rb")
            with xr.open_dataset(source, engine="h5netcdf", cache=False) as ds:
                return ds[NAME][sel].values
        return read
    raise ValueError(lib)


def _zarr_reader(lib, store, zarr_format):
    import zarr

    with _zarr_config(lib):
        a = zarr.open_array(store, path=NAME, mode="r", zarr_format=zarr_format)

    def read(sel):
        with _zarr_config(lib):
            return a[sel]
    return read


def manifest_store(place):
    """VirtualiZarr's ManifestStore of the NetCDF file (its HDF parser, obstore's stores)."""
    from obstore.store import LocalStore, S3Store
    from virtualizarr.parsers import HDFParser

    try:
        from obspec_utils.registry import ObjectStoreRegistry
    except ImportError:  # (VirtualiZarr before 2.8 has its own)
        from virtualizarr.registry import ObjectStoreRegistry

    if place.where == "local":
        url = "file://" + place.nc
        registry = ObjectStoreRegistry({"file://": LocalStore()})
    else:
        url = place.nc
        registry = ObjectStoreRegistry({f"s3://{remote.BUCKET}": S3Store(
            remote.BUCKET, endpoint=place.endpoint, region="us-east-1",
            access_key_id="bench", secret_access_key="bench",
            virtual_hosted_style_request=False, client_options={"allow_http": True})})
    return HDFParser()(url=url, registry=registry)


# -- floors -----------------------------------------------------------------------------------
def decode_floor(nc_path, spans, repeats):
    """Seconds to inflate and unshuffle every chunk (read into memory first) on all CPUs, by
    the fastest decoders at hand: zarrcore's own inflate and unshuffle kernels, which beat
    zlib's."""
    from zarrcore._native import compress as _compress
    from zarrcore._native import filters as _filters

    with open(nc_path, "rb") as f:
        blobs = []
        for offset, size in spans:
            f.seek(offset)
            blobs.append(f.read(size))
    size = math.prod(CHUNKS) * 4
    scratch = threading.local()

    def decode(blob):
        # One inflate buffer per thread: the unshuffled chunk is the only fresh memory, as a
        # reader's output is.
        if not hasattr(scratch, "raw"):
            scratch.raw = np.empty(size, dtype="u1")
        _compress.zlib_decompress(blob, out=scratch.raw)
        return _filters.unshuffle(scratch.raw, 4)

    return _best_on_all_cpus(decode, blobs, repeats)[0]


def zstd_floor(icechunk_root, repeats):
    """(seconds, CPU seconds) to decode the Icechunk repository's chunks (read into memory
    first) on all CPUs."""
    import zstandard

    blobs = []
    for folder, _, files in os.walk(os.path.join(icechunk_root, "chunks")):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                blobs.append(f.read())
    size = math.prod(CHUNKS) * 4

    def decode(blob):
        return zstandard.ZstdDecompressor().decompress(blob, max_output_size=size)

    return _best_on_all_cpus(decode, blobs, repeats)


def icechunk_fetch_floor(icechunk_root, repeats):
    """(seconds, CPU seconds of the process) for Icechunk's own store to hand over every chunk
    of the repository, nothing decoded: what any reader through the session's store waits for,
    and the CPU its threads spend on it. Each the least over 4, 16, 64 and all gets in flight
    (the CPU seconds vary with it, 2.8-4.3 for 1 GiB on the 2-CPU VM, by no clear rule)."""
    import asyncio

    import icechunk
    from zarr.core.buffer import default_buffer_prototype

    repo = icechunk.Repository.open(icechunk_storage("local", icechunk_root))
    store = repo.readonly_session(branch="main").store
    prototype = default_buffer_prototype()

    async def fetch_all(in_flight):
        keys = [k async for k in store.list_prefix(NAME) if "/c/" in k]
        slots = asyncio.Semaphore(in_flight or len(keys))

        async def get(key):
            async with slots:
                return await store.get(key, prototype)

        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(get(k) for k in keys))
        return time.perf_counter() - start, time.process_time() - cpu

    rounds = [asyncio.run(fetch_all(n)) for n in (4, 16, 64, None) for _ in range(repeats + 1)]
    return min(w for w, _ in rounds), min(c for _, c in rounds)


def _best_on_all_cpus(fn, items, repeats):
    """(seconds, CPU seconds) of the fastest of repeats + 1 rounds of fn over items."""
    best = (math.inf, math.inf)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        for _ in range(repeats + 1):
            start, cpu = time.perf_counter(), time.process_time()
            list(pool.map(fn, items))
            best = min(best, (time.perf_counter() - start, time.process_time() - cpu))
    return best


# -- the run ----------------------------------------------------------------------------------
def measure(read, sel, repeats, proxy):
    out = {}

    def call():
        out["data"] = read(sel)

    call()
    times = []
    for _ in range(repeats):
        if proxy is not None:
            proxy.reset()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    requests = proxy.requests if proxy is not None else None
    return min(times), requests, out["data"]


def run(args):
    for k, v in remote.CREDENTIALS.items():
        os.environ.setdefault(k, v)
    shape = shape_of(args.mib)
    root = os.path.join(args.data_dir, f"references{args.mib}")
    os.makedirs(root, exist_ok=True)
    nc = os.path.join(root, "data.nc")
    make_netcdf(nc, shape)
    refs = make_references(nc, nc)
    ice_root = os.path.join(root, "icechunk")
    if not os.path.exists(os.path.join(ice_root, ".done")):
        shutil.rmtree(ice_root, ignore_errors=True)
        make_icechunk(icechunk_storage("local", ice_root), shape)
        open(os.path.join(ice_root, ".done"), "w").close()
    truth = expected(shape)
    zc = _import_zarrcore("auto")
    results = {"mib": args.mib, "shape": shape, "chunks": CHUNKS, "delay": args.delay,
               "repeats": args.repeats, "io_concurrency": zc.config.io_concurrency,
               "stored_mib": sum(s for _, s in chunk_spans(refs)) / 2**20, "runs": [],
               "floors": {}, "load_start": os.getloadavg()[0]}
    results["floors"]["references/local"] = decode_floor(nc, chunk_spans(refs), args.repeats)
    floors = results["floors"]
    decode, decode_cpu = zstd_floor(ice_root, args.repeats)
    fetch, fetch_cpu = icechunk_fetch_floor(ice_root, args.repeats)
    floors.update({"icechunk-decode/local": decode, "icechunk-decode-cpu/local": decode_cpu,
                   "icechunk-fetch/local": fetch, "icechunk-fetch-cpu/local": fetch_cpu})
    # Fetch and decode can overlap, but both are CPU work: on os.cpu_count() CPUs their CPU
    # seconds together take no less than their sum over the CPUs.
    floors["icechunk/local"] = max(decode, fetch, (decode_cpu + fetch_cpu) / os.cpu_count())
    servers, moto, proxy = start_servers(args) if "s3" in args.where else (None, None, None)
    try:
        if servers is not None:
            upload(moto, nc, "references/data.nc")
            make_icechunk(icechunk_storage("s3", "references/icechunk", moto), shape)
        for where in args.where:
            place = Place(where, root, proxy.url if where == "s3" else None)
            counter = proxy if where == "s3" else None
            for source, libs in (("references", args.libs), ("icechunk", args.icechunk_libs)):
                for lib in libs:
                    for workload in args.workloads:
                        row = {"where": where, "source": source, "lib": lib,
                               "workload": workload}
                        try:
                            row.update(one(lib, source, place, refs, workload, shape, truth,
                                           args, counter))
                        except Exception as e:
                            row["error"] = f"{type(e).__name__}: {e}"
                            traceback.print_exc()
                        results["runs"].append(row)
                        log(describe(row))
    finally:
        if servers is not None:
            servers.stdin.close()
            servers.wait(30)
    results["load_end"] = os.getloadavg()[0]
    return results


def one(lib, source, place, refs, workload, shape, truth, args, proxy):
    sel = (slice(None),) * 3 if workload == "read_all" else region(shape)
    read = open_reader(lib, source, place, refs)
    best, requests, data = measure(read, sel, args.repeats, proxy)
    row = {"best": best, "requests": requests, "ok": bool(np.array_equal(data, truth[sel]))}
    if lib == "zarrcore" and proxy is not None:
        proxy.delay = 0.0
        try:
            row["no_delay"] = measure(read, sel, args.repeats, proxy)[0]
        finally:
            proxy.delay = args.delay
        concurrency = _import_zarrcore("auto").config.io_concurrency
        row["floor"] = math.ceil(requests / concurrency) * args.delay + row["no_delay"]
    return row


def describe(row):
    head = f"{row['where']}/{row['source']}/{row['workload']}: {row['lib']}"
    if "error" in row:
        return f"{head} failed: {row['error']}"
    text = f"{head} {row['best']:.3f}s" + (f", {row['requests']} requests"
                                           if row["requests"] is not None else "")
    if "floor" in row:
        text += f" (latency floor {row['floor']:.3f}s)"
    return text + ("" if row["ok"] else ", WRONG VALUES")


def markdown(results, argv):
    delay_ms = results["delay"] * 1000
    shape = results["shape"]
    L = ["## Virtual references and Icechunk (`benchmarks/references.py`)\n",
         f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, "
         f"{platform.node()}, {os.cpu_count()} CPUs, load {results['load_start']:.2f} at start "
         f"and {results['load_end']:.2f} at end; `python benchmarks/references.py "
         f"{' '.join(argv)}`.\n",
         f"float32 {'x'.join(map(str, shape))} ({math.prod(shape) * 4 / 2**30:.2f} GiB; "
         f"{results['stored_mib']:.0f} MiB stored in the NetCDF4 file), chunks "
         f"{'x'.join(map(str, CHUNKS))}, gzip {GZIP_LEVEL} + shuffle (references) or zstd 0 "
         f"(Icechunk). S3: moto on 127.0.0.1, {delay_ms:g} ms added to every request; zarrcore "
         f"keeps {results['io_concurrency']} requests in flight. Best of {results['repeats']}, "
         "seconds (requests).\n"]
    cases = []
    for r in results["runs"]:
        case = (r["where"], r["source"], r["workload"])
        if case not in cases:
            cases.append(case)
    libs = []
    for r in results["runs"]:
        if r["lib"] not in libs:
            libs.append(r["lib"])
    L.append("| where / data / workload | " + " | ".join(libs)
             + " | zarrcore / best peer | floor | zarrcore / floor |")
    L.append("|---" * (len(libs) + 4) + "|")
    floors = results["floors"]
    for case in cases:
        rows = {r["lib"]: r for r in results["runs"]
                if (r["where"], r["source"], r["workload"]) == case}
        cells = [remote.cell(rows.get(lib)) for lib in libs]
        zc = rows.get("zarrcore")
        zc_ok = zc is not None and zc.get("ok")
        peers = [r["best"] for lib, r in rows.items()
                 if not lib.startswith("zarrcore") and r.get("ok")]
        ratio = f"{zc['best'] / min(peers):.2f}" if zc_ok and peers else ""
        floor = zc.get("floor") if zc_ok else None
        if floor is None and zc_ok and case[0] == "local":
            floor = floors[f"{case[1]}/local"]
            if case[2] == "read_region":
                floor *= _region_fraction(shape)
        to_floor = f"{zc['best'] / floor:.2f}" if floor else ""
        L.append(f"| {' / '.join(case)} | " + " | ".join(cells)
                 + f" | {ratio} | {f'{floor:.3f}' if floor else ''} | {to_floor} |")
    L.append("")
    L.append("Floors: locally, every chunk the read touches decoded on all CPUs from memory "
             "(inflate and unshuffle by zarrcore's kernels), and for Icechunk the slowest of "
             "the zstd decode (python-zstandard), the fetch of every chunk through Icechunk's "
             "store, and the CPU seconds of the two together spread over all CPUs; over S3, "
             "ceil(requests / io_concurrency) x delay plus zarrcore's same read with no delay. "
             "Targets: zarrcore ≤ 0.5x the best peer, ≤ 1.3x the floor.")
    return "\n".join(L) + "\n"


def _region_fraction(shape):
    """The share of the chunks the middle-half region touches."""
    share = 1.0
    for s, c, sl in zip(shape, CHUNKS, region(shape)):
        share *= (math.ceil(sl.stop / c) - sl.start // c) / math.ceil(s / c)
    return share


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mib", type=int, default=1024, help="size of the variable (MiB)")
    p.add_argument("--delay", type=float, default=0.02, help="seconds per S3 request")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--libs", default=",".join(REFERENCE_LIBS), help="readers of references")
    p.add_argument("--icechunk-libs", default=",".join(ICECHUNK_LIBS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--where", default=",".join(WHERE))
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    p.add_argument("--out", default=os.path.join(HERE, "references-results.json"))
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        serve(args)
        return 0
    for name in ("libs", "icechunk_libs", "workloads", "where"):
        setattr(args, name, [x for x in getattr(args, name).split(",") if x])
    results = run(args)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    section = markdown(results, argv)
    _report.write_section(args.results, "references", section)
    print(section)
    return 0 if all(r.get("ok") for r in results["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
