#!/usr/bin/env python3
"""Peak memory of fancy indexing into a large sharded array: zarrcore, and the peers when they
finish in time.

    python benchmarks/fancy_rss.py                 # the 3 GiB array (written once, then kept)
    python benchmarks/fancy_rss.py --scale 0.125   # a smoke run: every length 1/8, points 1/64

A float32 array of 28672² (3.06 GiB) in shards of 4096² of 256² inner chunks, zstd level 0,
written once by zarrcore with structured values (a ramp plus hashed noise in the low bits:
zstd makes about 3x of them at full size, and every value is known from its position).
--scale multiplies the side, the shard and the inner chunk, and the number of points by its
square, so the array keeps its shape of 7×7 shards.

Then, in a fresh process per library and case, the peak RSS of one read: VmHWM after the
read minus the RSS after the imports, the open and building the selection. Cases:

  vindex   2M scattered points (a 7.6 MiB result), `a.vindex[ys, xs]`
  oindex   1/8 of the rows × 1/4 of the columns, both scattered (a 98 MiB result),
           `a.oindex[rows, cols]`

Each result is checked against the values written. Beside each peak, the target: the result
plus one decoded shard (64 MiB) per thread of zarrcore's pool (config.num_threads). The peers
(tensorstore, zarr-python) run in --peer-python and get --peer-timeout seconds each; one that
takes longer is reported as "timeout".
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import _common as C
from _worker import _current_rss, _import_zarrcore

LIBS = ("zarrcore", "tensorstore", "zarr-python")
CASES = ("vindex", "oindex")
MIB = 1 << 20
FULL_SIDE, FULL_SHARD, FULL_CHUNK, FULL_POINTS = 28672, 4096, 256, 2_000_000


class Geometry:
    """The array's side, shard and inner chunk lengths and the point count at `scale`."""

    def __init__(self, scale):
        self.side = max(1, round(FULL_SIDE * scale))
        self.shard = max(1, round(FULL_SHARD * scale))
        self.chunk = max(1, round(FULL_CHUNK * scale))
        self.points = max(1, round(FULL_POINTS * scale * scale))

    def as_dict(self):
        return dict(vars(self))

    @property
    def shard_nbytes(self):
        return self.shard * self.shard * 4


def values(y, x):
    """The value written at (y, x) (broadcasting integer arrays): a ramp plus hashed noise in
    the low 10 bits, exact in float32 (k / 1024 with k < 2**20). zstd makes about 3x of it,
    near what it makes of measured fields."""
    y, x = np.asarray(y, dtype=np.int64), np.asarray(x, dtype=np.int64)
    ramp = (x // 3 + y // 5) % 1024
    noise = ((x * 2654435761 + y * 40503) >> 7) % 1024
    return ((ramp * 1024 + noise) / 1024).astype(np.float32)


def write_array(path, geo, where):
    """Write the array shard by shard (the memory of one shard) unless the stamp of this
    geometry is there."""
    stamp = os.path.join(path, ".written.json")
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == geo.as_dict():
                return
    zarrcore = _import_zarrcore(where)
    print(f"writing {geo.side}² float32 ({geo.side ** 2 * 4 / MIB:,.0f} MiB) to {path}",
          flush=True)
    a = zarrcore.create_array(
        path, shape=(geo.side, geo.side), dtype="f4", chunks=(geo.chunk, geo.chunk),
        shards=(geo.shard, geo.shard), compressors=[C.ZSTD0], fill_value=0, overwrite=True)
    for y0 in range(0, geo.side, geo.shard):
        ys = np.arange(y0, min(y0 + geo.shard, geo.side))
        for x0 in range(0, geo.side, geo.shard):
            xs = np.arange(x0, min(x0 + geo.shard, geo.side))
            a[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1] = values(ys[:, None], xs[None, :])
    with open(stamp, "w") as f:
        json.dump(geo.as_dict(), f)


def selection(case, geo):
    """The index arrays of `case` (seeded: every library reads the same elements)."""
    rng = np.random.default_rng(7)
    if case == "vindex":
        return (rng.integers(0, geo.side, geo.points), rng.integers(0, geo.side, geo.points))
    rows = np.sort(rng.choice(geo.side, max(1, geo.side // 8), replace=False))
    cols = np.sort(rng.choice(geo.side, max(1, geo.side // 4), replace=False))
    return rows, cols


def expected(case, sel):
    ys, xs = sel
    return values(ys, xs) if case == "vindex" else values(ys[:, None], xs[None, :])


# -- one read, in a fresh process ------------------------------------------------------------

def open_and_reader(lib, path, case, where):
    """(the array opened by `lib`, read(sel) -> numpy result for `case`)."""
    if lib == "zarrcore":
        a = _import_zarrcore(where).open_array(path, mode="r")
        return a, (lambda sel: a.vindex[sel] if case == "vindex" else a.oindex[sel])
    if lib == "tensorstore":
        import tensorstore as ts

        a = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
                     "context": {"cache_pool": {"total_bytes_limit": 0}}}, read=True).result()
        index = a.vindex if case == "vindex" else a.oindex
        return a, (lambda sel: index[sel].read().result())
    zarr = C.use_zarr_pipeline(lib)
    a = zarr.open_array(path, mode="r")
    return a, (lambda sel: a.vindex[sel] if case == "vindex" else a.oindex[sel])


def measure_case(lib, path, case, geo, where):
    """Peak RSS of one read of `case` above the RSS before it, in this process."""
    _, read = open_and_reader(lib, path, case, where)
    sel = selection(case, geo)
    C.reset_peak_rss()
    before = _current_rss()
    start = time.perf_counter()
    result = read(sel)
    seconds = time.perf_counter() - start
    peak = C.peak_rss() - before
    result = np.asarray(result)
    ok = bool(np.array_equal(result, expected(case, sel)))
    return {"peak_bytes": peak, "result_bytes": result.nbytes, "seconds": seconds, "ok": ok}


def run_case(lib, case, path, args):
    """measure_case in a fresh process of the library's interpreter: its dict, or the error."""
    python = sys.executable if lib == "zarrcore" else args.peer_python
    cmd = [python, os.path.abspath(__file__), *sys.argv[1:], "--child", f"{lib}:{case}",
           "--data", path]
    timeout = None if lib == "zarrcore" else args.peer_timeout
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout (over {args.peer_timeout:g}s)"}
    if done.returncode:
        return {"error": " ".join(done.stderr.strip().splitlines()[-1:])}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--data", default=os.path.join(C.DEFAULT_DATA_DIR, "fancy-rss"),
                   help="directory of the array (kept; one per --scale)")
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto")
    p.add_argument("--peer-python", default=sys.executable)
    p.add_argument("--peer-timeout", type=float, default=300, help="seconds per peer read")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    geo = Geometry(args.scale)
    if args.child:
        lib, case = args.child.split(":")
        print(json.dumps(measure_case(lib, args.data, case, geo, args.zarrcore)))
        return
    path = os.path.join(args.data, f"side{geo.side}.zarr")
    write_array(path, geo, args.zarrcore)
    threads = _import_zarrcore(args.zarrcore).config.num_threads
    print(f"{geo.side}² float32, shards {geo.shard}² of {geo.chunk}² inner chunks, zstd level 0; "
          f"target: result + {threads} threads × {geo.shard_nbytes / MIB:.0f} MiB shard\n")
    print("| case | library | result (MiB) | peak RSS (MiB) | target (MiB) | peak ÷ target "
          "| seconds | check |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for case in [c for c in args.cases.split(",") if c]:
        for lib in [x for x in args.libs.split(",") if x]:
            row = {"case": case, "lib": lib, **run_case(lib, case, path, args)}
            rows.append(row)
            if "error" in row:
                print(f"| {case} | {lib} | | | | | | {row['error']} |", flush=True)
                continue
            target = row["result_bytes"] + threads * geo.shard_nbytes
            row["target_bytes"] = target
            print(f"| {case} | {lib} | {row['result_bytes'] / MIB:,.1f} | "
                  f"{row['peak_bytes'] / MIB:,.0f} | {target / MIB:,.0f} | "
                  f"{row['peak_bytes'] / target:.2f} | {row['seconds']:.2f} | "
                  f"{'exact' if row['ok'] else 'WRONG'} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"geometry": geo.as_dict(), "threads": threads, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
