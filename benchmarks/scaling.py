#!/usr/bin/env python3
"""Scaling benchmark: zarrcore, tensorstore and zarrs-python reading with 1, 2, 4, 8, 16
threads and processes (capped at the machine's CPUs), from a local disk with a warm page
cache and over the emulated 40 ms link (benchmarks/_link.py; root), beside the machine's
limits. One script, made to be run as it is on a many-core machine:

    python benchmarks/scaling.py                          # N=512, best of 3
    python benchmarks/scaling.py --n 128 --repeats 1      # a smoke run
    python benchmarks/scaling.py --where local --counts 1,2,4
    python benchmarks/scaling.py --report-only local.json link.json   # runs made apart, as one

Data: cloud.py's N^3 float32 array (written once by zarr-python into
benchmarks/data/cloud/n<N>/), `sharded` (256^3 shards of 64^3 inner chunks) and `zstd`
(64^3 chunks). Over the link nginx serves the same directory from the link's namespace.

Modes, for each count K:
- `threads`: one process reads the whole array in one call, with the library's pool held at
  K threads (zarrcore `config.num_threads`, tensorstore's data_copy_concurrency and
  file_io_concurrency, zarrs-python's `threading.max_workers`); requests in flight over the
  link stay at each library's default.
- `processes`: K processes, each with its pool at one thread, read one of K boxes that tile
  the array (halving along z, y, x in turn), released together; the time until the last has
  read its box. A loader's worker pool works this way.

Throughput is decoded GB/s. Limits beside each count: `memcpy` (K threads copying 64 MiB
numpy arrays, GB/s copied) and `zstd` (K threads decompressing the zstd layout's stored
chunks with python-zstandard, decoded GB/s), and over the link its TCP throughput with 8
streams (_link.selftest). Every read is compared with numpy.

Writes benchmarks/runs/<date>-scaling-n<N>.json and the section "Scaling with cores" of
RESULTS.md (kept when run.py rewrites it).
"""
import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _link  # noqa: E402
import cloud  # noqa: E402

LIBS = ("zarrcore", "tensorstore", "zarrs-python+obstore")
LAYOUTS = ("sharded", "zstd")
MODES = ("threads", "processes")
WHERE = ("local", "link")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def boxes(n, k):
    """k boxes (k a power of two) tiling the n^3 array: halved along z, y, x in turn."""
    out = [[(0, n), (0, n), (0, n)]]
    axis = 0
    while len(out) < k:
        nxt = []
        for box in out:
            lo, hi = box[axis]
            mid = (lo + hi) // 2
            nxt.append([*box[:axis], (lo, mid), *box[axis + 1:]])
            nxt.append([*box[:axis], (mid, hi), *box[axis + 1:]])
        out = nxt
        axis = (axis + 1) % 3
    return [tuple(slice(a, b) for a, b in box) for box in out]


# -- the worker: one library in one process -------------------------------------------------------

class Worker:
    def __init__(self, args):
        self.args = args
        args.local_root = cloud.data_root(args)
        self.c = cloud.make_contender(args.worker, args)
        self.expected = np.load(cloud.expected_path(args), mmap_mode="r")
        self.handles = {}

    def _open(self, where, layout, cfg):
        kind = "local" if where == "local" else "http"
        return self.c.open(kind, f"{layout}.zarr", cfg)

    def op_hello(self, msg):
        return {"version": self.c.version(), "pid": os.getpid()}

    def op_open(self, msg):
        """Open (and keep) the array for `box` reads at `cfg`."""
        self.handles[msg["key"]] = self._open(msg["where"], msg["layout"], msg["config"])
        return {}

    def op_read(self, msg):
        """Read `sel` (a list of [start, stop]) from the kept handle, timed and checked; with
        `at` (a time.time() in the near future) start then, so that processes start
        together."""
        h = self.handles[msg["key"]]
        sel = tuple(slice(a, b) for a, b in msg["sel"])
        cfg = msg["config"]
        at = msg.get("at")
        if at:
            while time.time() < at:
                time.sleep(min(0.001, max(0.0, at - time.time())))
        with self.c.config(cfg):
            t0, c0 = time.time(), os.times()
            out = np.asarray(self.c.read(h, sel))
            t1, c1 = time.time(), os.times()
        ok = bool(np.array_equal(out, self.expected[sel]))
        return {"start": t0, "end": t1, "seconds": t1 - t0, "ok": ok,
                "cpu": (c1.user - c0.user) + (c1.system - c0.system)}

    def op_threads(self, msg):
        """The whole array in one call at the pool of `threads` K (a fresh handle)."""
        cfg = f"threads{msg['threads']}"
        with self.c.config(cfg):
            h = self._open(msg["where"], msg["layout"], cfg)
        self.handles = {"t": h}
        return self.op_read({"key": "t", "sel": [[0, self.args.n]] * 3, "config": cfg})

    def serve(self):
        from _worker import serve_ops
        serve_ops(self)


# -- limits ---------------------------------------------------------------------------------------

def run_threads(k, work):
    """Seconds for k threads each running work(i), released together."""
    barrier = threading.Barrier(k + 1)

    def body(i):
        barrier.wait()
        work(i)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def memcpy_limit(k, repeats, mib=64):
    """GB/s copied by k threads, each copying its own `mib` MiB array (numpy, GIL released)."""
    src = [np.ones(mib << 18, np.float32) for _ in range(k)]
    dst = [np.empty_like(s) for s in src]
    for d, s in zip(dst, src):
        d[...] = s  # (pages touched before timing)

    def work(i):
        for _ in range(4):
            np.copyto(dst[i], src[i])

    best = min(run_threads(k, work) for _ in range(repeats))
    return 4 * k * (mib << 20) / best / 1e9


def zstd_limit(k, repeats, root):
    """Decoded GB/s of k threads decompressing the zstd layout's stored chunks
    (python-zstandard, GIL released), each taking the next chunk."""
    import zstandard

    folder = os.path.join(root, "zstd.zarr")
    blobs = []
    for d, _, files in os.walk(os.path.join(folder, "c")):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                blobs.append(fh.read())
    size = len(zstandard.ZstdDecompressor().decompress(blobs[0]))
    rounds = max(1, 64 // max(1, len(blobs)))  # at least 64 chunks' work
    todo = blobs * rounds

    def timed():
        it = iter(range(len(todo)))
        lock = threading.Lock()

        def work(i):
            d = zstandard.ZstdDecompressor()
            while True:
                with lock:
                    j = next(it, None)
                if j is None:
                    return
                d.decompress(todo[j])

        return run_threads(k, work)

    best = min(timed() for _ in range(repeats))
    return len(todo) * size / best / 1e9


# -- the orchestrator -----------------------------------------------------------------------------

class Proc:
    def __init__(self, argv, name):
        self.name = name
        self.p = subprocess.Popen(argv + ["--worker", name], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        return json.loads(line) if line else {"error": "the worker died"}

    def call(self, msg):
        try:
            self.send(msg)
        except BrokenPipeError:
            return {"error": "the worker died"}
        return self.recv()

    def stop(self):
        with contextlib.suppress(Exception):
            self.send({"op": "quit"})
            self.p.stdin.close()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def measure_threads(args, argv, where, layout, counts, rows, versions):
    procs = {lib: Proc(argv, lib) for lib in args.libs}
    try:
        for lib, p in procs.items():
            r = p.call({"op": "hello"})
            if r.get("error"):
                log(f"{lib}: unavailable ({r['error']})")
            else:
                versions[lib] = r["version"]
        live = [lib for lib in args.libs if lib in versions]
        for k in counts:
            for rnd in range(args.repeats):
                order = live[rnd % len(live):] + live[:rnd % len(live)]
                for lib in order:
                    r = procs[lib].call({"op": "threads", "threads": k, "where": where,
                                         "layout": layout})
                    row = {"where": where, "layout": layout, "mode": "threads", "count": k,
                           "lib": lib, "round": rnd, **r}
                    rows.append(row)
                    log(describe(row))
    finally:
        for p in procs.values():
            p.stop()


def measure_processes(args, argv, where, layout, counts, rows, versions):
    for k in counts:
        sels = boxes(args.n, k)
        for i in range(len(args.libs)):
            lib = args.libs[(i + k) % len(args.libs)]
            procs = [Proc(argv, lib) for _ in range(k)]
            try:
                hello = [p.call({"op": "hello"}) for p in procs]
                if any(h.get("error") for h in hello):
                    log(f"{lib}: unavailable ({hello[0]['error']})")
                    continue
                versions[lib] = hello[0]["version"]
                for p in procs:
                    p.send({"op": "open", "key": "p", "where": where, "layout": layout,
                            "config": "threads1"})
                opened = [p.recv() for p in procs]
                if any(o.get("error") for o in opened):
                    raise RuntimeError(next(o["error"] for o in opened if o.get("error")))
                for rnd in range(args.repeats):
                    at = time.time() + 0.2
                    for p, sel in zip(procs, sels):
                        p.send({"op": "read", "key": "p", "config": "threads1", "at": at,
                                "sel": [[s.start, s.stop] for s in sel]})
                    got = [p.recv() for p in procs]
                    err = next((g["error"] for g in got if g.get("error")), None)
                    row = {"where": where, "layout": layout, "mode": "processes", "count": k,
                           "lib": lib, "round": rnd}
                    if err:
                        row["error"] = err
                    else:
                        row.update(seconds=max(g["end"] for g in got) - min(g["start"]
                                                                            for g in got),
                                   cpu=sum(g["cpu"] for g in got),
                                   ok=all(g["ok"] for g in got))
                    rows.append(row)
                    log(describe(row))
            except Exception as e:  # recorded; the others go on
                rows.append({"where": where, "layout": layout, "mode": "processes",
                             "count": k, "lib": lib, "error": f"{type(e).__name__}: {e}"})
                log(f"processes {k} {lib}: {e}")
            finally:
                for p in procs:
                    p.stop()


def describe(row):
    what = (f"{row['where']}/{row['layout']}/{row['mode']} x{row['count']}: {row['lib']}")
    if row.get("error"):
        return f"{what} failed: {row['error']}"
    return (f"{what} {row['seconds']:.3f} s, CPU {row['cpu']:.2f} s"
            + ("" if row.get("ok") else ", WRONG"))


def run(args):
    cloud.prepare(args)
    root = cloud.data_root(args)
    ncpu = os.cpu_count() or 1
    counts = [k for k in args.counts if k <= ncpu]
    rows, versions, limits = [], {}, {}
    started = time.time()
    load0 = os.getloadavg()
    log(f"{ncpu} CPUs; counts {counts}; limits")
    for k in counts:
        limits[k] = {"memcpy": memcpy_limit(k, args.repeats),
                     "zstd": zstd_limit(k, args.repeats, root)}
        log(f"x{k}: memcpy {limits[k]['memcpy']:.1f} GB/s, zstd decode "
            f"{limits[k]['zstd']:.2f} GB/s")

    def results():
        return {"n": args.n, "repeats": args.repeats, "counts": counts, "libs": args.libs,
                "rows": rows, "limits": {str(k): v for k, v in limits.items()},
                "versions": versions, "link": link_info,
                "machine": {"cpus": ncpu, "platform": platform.platform(),
                            "loadavg_start": load0, "loadavg_end": os.getloadavg()},
                "started": datetime.datetime.fromtimestamp(started, datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"), "seconds": round(time.time() - started)}

    base = [sys.executable, os.path.abspath(__file__), "--n", str(args.n), "--data-dir",
            args.data_dir, "--zarrcore", args.zarrcore]
    link_info = None
    for where in args.where:
        with contextlib.ExitStack() as stack:
            argv = list(base)
            if where == "link":
                link = stack.enter_context(_link.Link(delay_ms=args.delay))
                tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="zc-scaling-"))
                link_info = {"delay_ms": args.delay,
                             **_link.selftest(link, mib=args.selftest_mib)}
                servers = cloud.Servers(link, root, tmp, s3=False,
                                        nginx_workers=max(2, min(ncpu, 8)))
                argv += ["--http-url", servers.http_url]
            for layout in args.layouts:
                for mode in args.modes:
                    (measure_threads if mode == "threads" else measure_processes)(
                        args, argv, where, layout, counts, rows, versions)
                    # Saved after each part, so that a run stopped early keeps what it measured.
                    cloud.save_run(args, results(), f"scaling-n{args.n}")
    return results()


def merged(runs):
    """One result of several runs of this script on one machine (local and link made apart,
    say): rows, counts, libraries and versions joined; the first run's limits win."""
    out = dict(runs[0])
    out["rows"] = [{"n": run["n"], **r} for run in runs for r in run["rows"]]
    out["counts"] = sorted({k for run in runs for k in run["counts"]})
    out["libs"] = list(dict.fromkeys(lib for run in runs for lib in run["libs"]))
    out["versions"] = {k: v for run in reversed(runs) for k, v in run["versions"].items()}
    out["limits"] = {k: v for run in reversed(runs) for k, v in run["limits"].items()}
    out["link"] = next((run["link"] for run in runs if run.get("link")), None)
    out["seconds"] = sum(run["seconds"] for run in runs)
    out["machine"] = {**runs[0]["machine"], "loadavg_end": runs[-1]["machine"]["loadavg_end"]}
    return out


def per_place(values):
    """'3', or 'local 3, link 1' where the places differ; `values` maps place to value."""
    if len(set(values.values())) <= 1:
        return next(iter(values.values()), "")
    return ", ".join(f"{k} {v}" for k, v in values.items())


def markdown(results):
    m = results["machine"]
    libs = results["libs"]
    best, sizes, repeats = {}, {}, {}  # best: decoded GB/s
    for r in results["rows"]:
        n = r.get("n", results["n"])
        sizes[r["where"]] = f"{n}³ ({n ** 3 * 4 / 2 ** 20:g} MiB)"
        repeats[r["where"]] = max(repeats.get(r["where"], 0), r.get("round", 0) + 1)
        if r.get("error") or not r.get("ok"):
            continue
        key = (r["where"], r["layout"], r["mode"], r["count"], r["lib"])
        best[key] = max(best.get(key, 0.0), n ** 3 * 4 / 1e9 / r["seconds"])
    L = ["## Scaling with cores (benchmarks/scaling.py)\n"]
    L.append(
        f"{results['started']}, **{m['cpus']} CPUs** ({m['platform']}), load average "
        f"{m['loadavg_start'][0]:.2f} at the start and {m['loadavg_end'][0]:.2f} at the end; "
        f"{results['seconds']} s in all. Arrays: {per_place(sizes)}, float32; best "
        f"of: {per_place(repeats)}. Decoded GB/s (in brackets: the speed-up "
        f"over one). `threads`: one call reading the whole array, the library's pool at K "
        f"threads; `processes`: K processes, each with a pool of one, reading one of K boxes "
        f"that tile the array, released together. Limits: K threads copying memory (numpy) "
        f"and decompressing the zstd chunks (python-zstandard), both GB/s.\n")
    if m["cpus"] < 16:
        L.append(f"Only {m['cpus']} CPUs here: counts above {m['cpus']} were not run; the "
                 f"curve to 16 needs a larger machine (the same command there).\n")
    link = results.get("link")
    if link:
        L.append(f"Link: {link['delay_ms']:g} ms each way; TCP connect "
                 f"{link['connect_rtt_ms']:.1f} ms, one stream {link['get_1_MBps']:.0f} MB/s, "
                 f"8 streams {link['get_8_MBps']:.0f} MB/s (downloads; _link.py --selftest); "
                 f"more connections carry more.\n")
    L.append("Versions: " + "; ".join(f"{k}: {v}" for k, v in results["versions"].items())
             + ".\n")
    for where in ("local", "link"):
        for layout in LAYOUTS:
            for mode in MODES:
                counts = [k for k in results["counts"]
                          if any((where, layout, mode, k, lib) in best for lib in libs)]
                if not counts:
                    continue
                L.append(f"**{where} / {layout} / {mode}**\n")
                L.append("| K | " + " | ".join(libs) + " | memcpy | zstd decode |")
                L.append("|---" * (len(libs) + 3) + "|")
                for k in counts:
                    cells = []
                    for lib in libs:
                        g = best.get((where, layout, mode, k, lib))
                        g1 = best.get((where, layout, mode, counts[0], lib))
                        cells.append("—" if g is None else
                                     f"{g:.3g} ({g / g1:.2f}×)" if g1 else f"{g:.3g}")
                    lim = results["limits"].get(str(k), {})
                    L.append(f"| {k} | " + " | ".join(cells)
                             + f" | {lim.get('memcpy', 0):.3g} | {lim.get('zstd', 0):.3g} |")
                L.append("")
    bad = [r for r in results["rows"] if r.get("error") or not r.get("ok")]
    if bad:
        L.append("Failed or wrong: " + "; ".join(
            f"{r['where']}/{r['layout']}/{r['mode']} x{r['count']} {r['lib']}: "
            f"{r.get('error') or 'WRONG'}" for r in bad[:10]) + ".\n")
    return "\n".join(L)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--counts", default="1,2,4,8,16")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--where", default=",".join(WHERE))
    p.add_argument("--delay", type=float, default=20.0, help="ms each way over the link")
    p.add_argument("--selftest-mib", type=int, default=256)
    p.add_argument("--data-dir", default=cloud.C.DEFAULT_DATA_DIR)
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto")
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--out", default=None)
    p.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    p.add_argument("--no-results", dest="write_results", action="store_false")
    p.add_argument("--report-only", metavar="JSON", nargs="+",
                   help="write the report of earlier runs (several: as one)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--http-url", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        Worker(args).serve()
        return 0
    if args.report_only:
        runs = []
        for path in args.report_only:
            with open(path) as f:
                runs.append(json.load(f))
        results = merged(runs)
    else:
        args.counts = [int(x) for x in args.counts.split(",") if x]
        for name in ("libs", "layouts", "modes", "where"):
            setattr(args, name, [x for x in getattr(args, name).split(",") if x])
        if "link" in args.where:
            try:
                _link.check_allowed()
            except _link.LinkError as e:
                p.error(f"{e} (or --where local)")
        results = run(args)
    cloud.publish(args, "scaling", markdown(results))
    return 0 if all(r.get("ok") and not r.get("error") for r in results["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
