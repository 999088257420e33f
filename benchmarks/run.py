#!/usr/bin/env python3
"""zarrcore side by side with tensorstore, zarr-python and zarrs-python, in one run.

    python benchmarks/run.py              # N=512, best of 3, everything (as `make bench`)
    python benchmarks/run.py --n 128 --repeats 1 --small-n 200     # a quick smoke test

Generates the datasets once (benchmarks/data/, reused while they match), starts one worker
process per library, times every workload with the libraries interleaved (warm-up first, then
`--repeats` rounds, the order of libraries rotating each round), checks every read and every
written array against the expected values, then measures peak RSS and machine limits in fresh
processes. Writes benchmarks/results.json, benchmarks/RESULTS.md and benchmarks/results.png.
"""
import argparse
import datetime
import json
import os
import platform
import select
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _cold  # noqa: E402
import _common as C  # noqa: E402

WORKER = os.path.join(C.HERE, "_worker.py")
BUSY_VARIANT = "sharded"
CONDITIONS = ("quiet", "busy")
# The CPU hog of the busy condition: pure Python spinning at the lowest priority, as another
# user's batch job would run beside the writer.
HOG = [sys.executable, "-c", "while True: pass"]


class WorkerError(Exception):
    pass


class Worker:
    """A library's worker process; `call` sends one request and waits for its reply."""

    def __init__(self, lib, args, log_dir):
        self.lib = lib
        self.args = args
        # The baseline's processes find the older checkout first on PYTHONPATH.
        self.env = C.baseline_env(args.baseline) if lib == C.BASELINE else None
        self.log_path = os.path.join(log_dir, f"{lib}.log")
        self.proc = None
        self.hello = None
        self.start_error = None

    def _argv(self, mode, *extra):
        a = self.args
        zarrcore = "installed" if self.lib == C.BASELINE else a.zarrcore
        return [sys.executable, WORKER, mode, "--lib", self.lib, "--n", str(a.n),
                "--small-n", str(a.small_n), "--data-dir", a.data_dir,
                "--read-from", a.read_from, "--zarrcore", zarrcore, *extra]

    def start(self):
        log = open(self.log_path, "a")
        log.write(f"\n=== {datetime.datetime.now().isoformat()} start {self.lib}\n")
        log.flush()
        self.proc = subprocess.Popen(self._argv("serve"), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, env=self.env)
        log.close()
        self._buf = b""
        try:
            hello = self.call({"op": "hello"}, timeout=300)
            self._check_baseline(hello)
        except WorkerError as e:
            self.kill()
            self.start_error = str(e)
        else:
            self.hello, self.start_error = hello, None
        return self.start_error is None

    def _check_baseline(self, hello):
        """The baseline worker must have imported zarrcore from the --baseline checkout."""
        if self.lib != C.BASELINE:
            return
        where = os.path.realpath(hello["module_path"])
        want = os.path.join(os.path.realpath(self.args.baseline), "zarrcore")
        if where != want:
            raise WorkerError(f"imported zarrcore from {where}, not from {want}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _log_tail(self, lines=3):
        try:
            with open(self.log_path) as f:
                tail = [ln.rstrip() for ln in f.readlines()[-lines:]]
            return " | ".join(t for t in tail if t)
        except OSError:
            return ""

    def call(self, msg, timeout):
        if not self.alive():
            raise WorkerError(f"{self.lib} worker is not running")
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError(f"timed out after {timeout:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            data = os.read(fd, 1 << 16)
            if not data:
                rc = self.proc.wait()
                raise WorkerError(f"worker exited with code {rc}: {self._log_tail()}")
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if reply.get("error"):
            raise WorkerError(reply["error"])
        return reply

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        if self.alive():
            try:
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.kill()


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# -- machine description ---------------------------------------------------------------------------

def _run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "executable": sys.executable, "uptime_start": _run(["uptime"]).strip()}
    lscpu = {}
    for line in _run(["lscpu"]).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            lscpu[k.strip()] = v.strip()
    info["cpu_model"] = lscpu.get("Model name", platform.processor() or "?")
    info["cpus"] = lscpu.get("CPU(s)", str(os.cpu_count()))
    info["threads_per_core"] = lscpu.get("Thread(s) per core", "?")
    info["cores_per_socket"] = lscpu.get("Core(s) per socket", "?")
    info["sockets"] = lscpu.get("Socket(s)", "?")
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    info["mem_total_bytes"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    info["git_commit"], info["git_dirty"] = git_state(C.REPO)
    return info


def git_state(repo):
    """The short commit of the checkout `repo` and whether its sources have changes."""
    commit = _run(["git", "-C", repo, "rev-parse", "--short", "HEAD"]).strip()
    dirty = bool(_run(["git", "-C", repo, "status", "--porcelain", "--",
                       "zarrcore", "csrc", "setup.py"]).strip())
    return commit, dirty


def loadavg():
    try:
        return os.getloadavg()
    except OSError:
        return None


# -- the run ---------------------------------------------------------------------------------------------

class Runner:
    def __init__(self, args):
        self.args = args
        self.libs = list(args.libs) + ([C.BASELINE] if args.baseline else [])
        self.datasets = C.make_datasets(args.n, args.small_n)
        self.log_dir = os.path.join(args.data_dir, "logs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.workers = {}
        self.helper = None  # a zarr-python worker: generates references and checks writes
        self.results = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "args": {k: v for k, v in vars(args).items()},
            "machine": machine_info(),
            "loadavg_start": loadavg(),
            "libs": {},
            "datasets": {k: d.describe() for k, d in self.datasets.items()},
            "timings": {},
            "threads": {},
            "floors": {},
            "rss": [],
            "limits": None,
            "native": None,
            "cold": None,
            "failures": [],
        }
        if args.baseline:
            commit, dirty = git_state(args.baseline)
            self.results["baseline"] = {"path": args.baseline, "commit": commit, "dirty": dirty}

    # -- workers --
    def start_workers(self):
        for lib in self.libs:
            w = Worker(lib, self.args, self.log_dir)
            ok = w.start()
            self.workers[lib] = w
            if ok:
                self.results["libs"][lib] = {"versions": w.hello["versions"],
                                             "module_path": w.hello["module_path"]}
                log(f"{lib}: {w.hello['versions']} from {w.hello['module_path']}")
            elif lib == C.BASELINE:
                sys.exit(f"--baseline {self.args.baseline}: {w.start_error}")
            else:
                self.results["libs"][lib] = {"error": w.start_error}
                log(f"{lib}: UNAVAILABLE: {w.start_error}")
        if "zarr-python" in self.workers and self.workers["zarr-python"].alive():
            self.helper = self.workers["zarr-python"]
        else:
            self.helper = Worker("zarr-python", self.args, self.log_dir)
            if not self.helper.start():
                sys.exit(f"zarr-python is needed to write the reference datasets: "
                         f"{self.helper.start_error}")

    def call(self, lib, msg, timeout=None):
        """A request to a library's worker; restarts a worker that died on an earlier request."""
        w = self.workers[lib]
        if not w.alive():
            if w.hello is None:
                raise WorkerError(f"not available: {w.start_error}")
            log(f"{lib}: restarting its worker")
            if not w.start():
                raise WorkerError(f"worker restart failed: {w.start_error}")
        return w.call(msg, timeout or self.args.timeout)

    def stop_workers(self):
        for w in self.workers.values():
            w.stop()
        if self.helper is not None:
            self.helper.stop()

    # -- data --
    def generate(self):
        a = self.args
        variants = list(C.CUBE_VARIANTS) if self._wants_cube() else []
        if "small" in a.workloads:
            variants.append(C.SMALL_VARIANT)
        for v in variants:
            path = C.reference_path(a.data_dir, a.n, a.small_n, v)
            stamp = path + ".done"
            spec = {"describe": self.datasets[v].describe(),
                    "metadata": self.datasets[v].metadata_json()}
            if not a.regenerate and os.path.exists(stamp):
                with open(stamp) as f:
                    if json.load(f) == spec:
                        continue
            log(f"generating {v}: {self.datasets[v].describe()} -> {path}")
            if os.path.exists(stamp):
                os.unlink(stamp)
            r = self.helper.call({"op": "generate", "variant": v, "path": path}, timeout=3600)
            if not r["ok"]:
                sys.exit(f"the reference dataset {path} does not read back correctly")
            with open(stamp, "w") as f:
                json.dump(spec, f)

    def run_remote(self):
        """The object-store group (benchmarks/remote.py) in a process of its own: the same
        datasets over S3 and HTTP with a delay per request."""
        a = self.args
        out = os.path.join(a.out_dir, "remote-results.json")
        libs = [lib for lib in a.libs]
        argv = [sys.executable, os.path.join(C.HERE, "remote.py"), "--n", str(a.n),
                "--repeats", str(a.repeats), "--data-dir", a.data_dir, "--out", out,
                "--libs", ",".join(libs), "--zarrcore", a.zarrcore]
        log("remote: " + " ".join(argv[1:]))
        subprocess.run(argv, check=False)
        try:
            with open(out) as f:
                self.results["remote"] = json.load(f)
        except (OSError, ValueError) as e:
            self._record_failure("all", "remote", f"no results from remote.py: {e}")

    def _wants_cube(self):
        return bool({"read_all", "read_chunks", "write_all", "roundtrip", "threads", "busy",
                     "rss", "limits", "native"}
                    & set(self.args.workloads))

    # -- timing --
    def _note_load(self):
        la = loadavg()
        if la:
            self.results["loadavg_max"] = max(self.results.get("loadavg_max") or 0.0, la[0])

    def _record_failure(self, lib, what, error):
        self.results["failures"].append({"lib": lib, "workload": what, "error": error})
        log(f"  {lib} {what}: {error}")

    def interleaved(self, key, op, variant, extra=None, libs=None):
        """Warm-up plus `repeats` rounds; every round runs every library once, rotating the
        order. Returns and stores {lib: {"best", "times", "ok", "error"}}, with "path" (what a
        write wrote), "peaks" (peak RSS increase per round) and "cold" (the page cache
        method) where the op reports them."""
        a = self.args
        libs = [lib for lib in (libs or self.libs) if self.workers[lib].hello is not None]
        out = {lib: {"best": None, "times": [], "ok": True, "error": None} for lib in self.libs}
        for lib in self.libs:
            if lib not in libs:
                out[lib]["error"] = "library not available"
        msg = {"op": op, "variant": variant, **(extra or {})}
        self._note_load()
        for rnd in range(a.warmup + a.repeats):
            k = rnd % len(libs) if libs else 0
            for lib in libs[k:] + libs[:k]:
                if out[lib]["error"]:
                    continue
                try:
                    r = self.call(lib, msg)
                except WorkerError as e:
                    out[lib]["error"] = str(e)
                    self._record_failure(lib, key, str(e))
                    continue
                if r.get("ok") is False:
                    out[lib]["ok"] = False
                if rnd >= a.warmup:
                    out[lib]["times"].append(r["seconds"])
                    if r.get("peak_rss_increase") is not None:
                        out[lib].setdefault("peaks", []).append(r["peak_rss_increase"])
                for field in ("nchunks", "path", "cold"):
                    if r.get(field) is not None:
                        out[lib][field] = r[field]
        for lib, r in out.items():
            if r["times"]:
                r["best"] = min(r["times"])
            if r["ok"] is False:
                self._record_failure(lib, key, "WRONG RESULT: data differ from the expected array")
        self.results["timings"][key] = out
        line = "  ".join(f"{lib} {self._fmt(r)}" for lib, r in out.items())
        log(f"{key}: {line}")
        return out

    @staticmethod
    def _fmt(r):
        if r["error"]:
            return "error"
        if r["best"] is None:
            return "-"
        return f"{r['best']:.4f}s" + ("" if r["ok"] else " WRONG")

    def verify_writes(self, key, variant):
        """Read each library's written array back with zarr-python and compare."""
        res = self.results["timings"][key]
        for lib, r in res.items():
            if r["error"] or r["best"] is None:
                continue
            path = r["path"]
            try:
                ok = self.helper.call({"op": "verify", "variant": variant, "path": path},
                                      timeout=self.args.timeout)["ok"]
            except WorkerError as e:
                ok, why = False, f"zarr-python cannot read it back: {e}"
            else:
                why = "written array reads back wrong in zarr-python"
            r["ok"] = bool(r["ok"]) and ok
            if not ok:
                self._record_failure(lib, key, "WRONG RESULT: " + why)

    def measure_device(self):
        """Once per run with cold reads: the device's sequential bandwidth and random-read
        latency (the I/O floors), and what each dataset stores."""
        a = self.args
        log(f"device: cold reads of a {a.io_probe_mib} MiB file under {a.data_dir}")
        device = _cold.measure_device(a.data_dir, a.io_probe_mib, a.cold_method)
        stored = {}
        for v in (*C.CUBE_VARIANTS, C.SMALL_VARIANT):
            path = C.reference_path(a.data_dir, a.n, a.small_n, v)
            if os.path.exists(path):
                nbytes, nfiles = _cold.stored_size(path)
                stored[v] = {"bytes": nbytes, "files": nfiles}
        self.results["cold"] = {"requested": a.cold_method, "device": device, "stored": stored,
                                "methods": []}
        log(f"device: {device['seq_gbps']:.2f} GB/s sequential, "
            f"{device['random_latency_s'] * 1e3:.2f} ms per random read ({device['method']})")

    def read_workload(self, key, op, variant, extra=None):
        """A read workload under each page cache state of --cache: `key` warm, and cold (the
        cache dropped before every round) as `key` with `_cold` after its first part; `extra`
        goes into every request."""
        a = self.args
        head, _, tail = key.partition("/")
        for cache in a.cache:
            if cache == "warm":
                timed, res = key, self.interleaved(key, op, variant, extra)
            else:
                timed = f"{head}_cold/{tail}"
                res = self.interleaved(timed, op, variant, {**(extra or {}),
                                                            "cold": a.cold_method})
                methods = self.results["cold"]["methods"]
                for r in res.values():
                    if r.get("cold") and r["cold"] not in methods:
                        methods.append(r["cold"])
            if op == "roundtrip":
                self.verify_writes(timed, variant)

    def run_workloads(self):
        a = self.args
        wl = a.workloads
        if "cold" in a.cache and set(wl) & set(C.COLD_WORKLOADS):
            self.measure_device()

        def writes():
            for v in C.CUBE_VARIANTS:
                self.interleaved(f"write_all/{v}", "write_all", v)
                self.verify_writes(f"write_all/{v}", v)

        if "write_all" in wl and a.read_from == "own":
            writes()  # the reads below read what each library wrote
        if "read_all" in wl:
            for v in C.CUBE_VARIANTS:
                self.read_workload(f"read_all/{v}", "read_all", v)
        if "read_chunks" in wl:
            for v in C.CUBE_VARIANTS:
                self.read_workload(f"read_chunks/{v}", "read_chunks", v)
        if "roundtrip" in wl:
            for v in C.CUBE_VARIANTS:
                self.read_workload(f"roundtrip/{v}", "roundtrip", v)
                self.read_workload(f"roundtrip_stream/{v}", "roundtrip", v, {"stream": True})
        if "write_all" in wl and a.read_from != "own":
            writes()
        if "small" in wl:
            if a.read_from == "own":
                self.interleaved("small/write_all", "write_all", C.SMALL_VARIANT)
                self.read_workload("small/read_all", "read_all", C.SMALL_VARIANT)
            else:
                self.read_workload("small/read_all", "read_all", C.SMALL_VARIANT)
                self.interleaved("small/write_all", "write_all", C.SMALL_VARIANT)
            self.verify_writes("small/write_all", C.SMALL_VARIANT)
        if "threads" in wl:
            thread_libs = [lib for lib in a.thread_libs if lib in self.libs]
            for nt in (1, 2):
                r = self.interleaved(f"threads/{nt}", "threads", "sharded",
                                     {"nthreads": nt}, libs=thread_libs)
                self.results["threads"][str(nt)] = r

    def _hogs(self):
        """Start the busy condition's CPU hogs (--hogs of them, nice 19), spinning once this
        returns; stop them with _stop."""
        hogs = [subprocess.Popen(["nice", "-n", "19", *HOG],
                                 start_new_session=self.args.hog_session == "new")
                for _ in range(self.args.hogs)]
        time.sleep(0.2)
        return hogs

    @staticmethod
    def _stop(procs):
        for p in procs:
            p.kill()
            p.wait()

    def run_busy(self):
        """The sharded write of every library and its encode floor (op encode_floor: zstd of
        every inner chunk on all CPUs), quiet and beside CPU hogs. Each round runs both
        conditions; within a condition the libraries and the floor take turns in a rotating
        order. Stores timings["write_busy/<condition>"] and floors[<condition>]."""
        a = self.args
        libs = [lib for lib in self.libs if self.workers[lib].hello is not None]
        entries = libs + ["floor"]
        out = {c: {e: {"best": None, "times": [], "ok": True, "error": None} for e in entries}
               for c in CONDITIONS}
        write = {"op": "write_all", "variant": BUSY_VARIANT}
        floor = {"op": "encode_floor", "variant": BUSY_VARIANT}
        self._note_load()
        for rnd in range(a.warmup + a.repeats):
            for cond in CONDITIONS:
                hogs = self._hogs() if cond == "busy" else []
                try:
                    k = rnd % len(entries)
                    for e in entries[k:] + entries[:k]:
                        r = out[cond][e]
                        if r["error"]:
                            continue
                        try:
                            if e == "floor":
                                reply = self.helper.call(floor, timeout=a.timeout)
                            else:
                                reply = self.call(e, write)
                        except WorkerError as err:
                            r["error"] = str(err)
                            self._record_failure(e, f"write_busy/{cond}", str(err))
                            continue
                        if rnd >= a.warmup:
                            r["times"].append(reply["seconds"])
                        r["nchunks"] = reply.get("nchunks")
                        r["path"] = reply.get("path")
                finally:
                    self._stop(hogs)
            self._note_load()
        self.results["floors"] = {}
        for cond in CONDITIONS:
            for r in out[cond].values():
                r["best"] = min(r["times"]) if r["times"] else None
            self.results["floors"][cond] = out[cond].pop("floor")
            self.results["timings"][f"write_busy/{cond}"] = out[cond]
            self.verify_writes(f"write_busy/{cond}", BUSY_VARIANT)
            line = "  ".join(f"{e} {self._fmt(r)}" for e, r in
                             [*out[cond].items(), ("floor", self.results["floors"][cond])])
            log(f"write_busy/{cond}: {line}")
        self.results["busy"] = {"hogs": a.hogs, "hog_session": a.hog_session}

    def run_rss(self):
        a = self.args
        for v in a.rss_variants:
            for lib in a.rss_libs:
                if lib not in self.libs or self.workers[lib].hello is None:
                    continue
                w = self.workers[lib]
                try:
                    p = subprocess.run(w._argv("rss", "--variant", v), capture_output=True,
                                       text=True, timeout=a.timeout, env=w.env)
                    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
                    r = json.loads(lines[-1]) if lines else {
                        "lib": lib, "variant": v,
                        "error": f"exit code {p.returncode}: {p.stderr.strip()[-300:]}"}
                except subprocess.TimeoutExpired:
                    r = {"lib": lib, "variant": v, "error": "timed out"}
                self.results["rss"].append(r)
                if r.get("error"):
                    self._record_failure(lib, f"rss/{v}", r["error"])
                    continue
                if r.get("ok") is False:
                    self._record_failure(lib, f"rss/{v}", "WRONG RESULT in the RSS read")
                inc = r["maxrss_peak"] - r["rss_before"]
                log(f"rss/{v} {lib}: peak {r['maxrss_peak'] / 2**20:.1f} MiB, "
                    f"+{inc / 2**20:.1f} MiB over {r['rss_before'] / 2**20:.1f} MiB before, "
                    f"output {r['output_bytes'] / 2**20:.1f} MiB")

    def run_limits(self):
        a = self.args
        argv = [sys.executable, WORKER, "limits", "--n", str(a.n), "--small-n", str(a.small_n),
                "--data-dir", a.data_dir]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            self.results["limits"] = json.loads(lines[-1]) if lines else {
                "error": p.stderr.strip()[-300:]}
        except subprocess.TimeoutExpired:
            self.results["limits"] = {"error": "timed out"}
        log(f"limits: {self.results['limits']}")


    def run_native(self):
        """benchmarks/native.py: random 64^3 region reads of `sharded` through the nogil array
        API from pthreads, against Python threads and tensorstore."""
        a = self.args
        argv = [sys.executable, os.path.join(C.HERE, "native.py"), "--json", "--n", str(a.n),
                "--data-dir", a.data_dir, "--zarrcore", a.zarrcore, "--reads", str(a.native_reads)]
        if "cold" in a.cache:
            argv += ["--cold-method", a.cold_method]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            self.results["native"] = json.loads(lines[-1]) if lines else {
                "error": p.stderr.strip()[-300:]}
        except subprocess.TimeoutExpired:
            self.results["native"] = {"error": "timed out"}
        if self.results["native"].get("error"):
            self._record_failure("zarrcore", "native", self.results["native"]["error"])
        log(f"native: {self.results['native']}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int,
                   help=f"edge of the uint16 cube (default 512; {C.SUITE_N} with --suite)")
    p.add_argument("--small-n", type=int, default=1000,
                   help="edge of the small-chunks float32 array (default 1000)")
    p.add_argument("--repeats", type=int, default=3, help="timed rounds; best is kept (default 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    p.add_argument("--libs", default=",".join(C.LIBS),
                   help="comma-separated subset of: " + ", ".join(C.LIBS))
    p.add_argument("--workloads",
                   help="comma-separated subset of: " + ", ".join(C.WORKLOADS)
                        + " (default all; with --suite " + ",".join(C.SUITE_WORKLOADS) + ")")
    p.add_argument("--suite", action="store_true",
                   help=f"the independent suite's set: N={C.SUITE_N} (uncompressed, zstd and "
                        "sharded 256^3 chunks or shards), read all and the round trip, warm "
                        "and cold, and the peak RSS of each library; --n and --workloads "
                        "still override")
    p.add_argument("--cache", choices=("warm", "cold", "both"), default="both",
                   help="page cache state of the reads (" + ", ".join(C.COLD_WORKLOADS)
                        + "): warm, cold (dropped before every round) or both (default)")
    p.add_argument("--cold-method", choices=_cold.METHODS, default="auto",
                   help="how the page cache is dropped: drop_caches (all of it, needs root), "
                        "fadvise (POSIX_FADV_DONTNEED on every file of the dataset) or auto "
                        "(the first where allowed, else the second)")
    p.add_argument("--io-probe-mib", type=int, default=1024,
                   help="size of the file whose cold sequential read measures the device "
                        "bandwidth, once per run with cold reads (default 1024)")
    p.add_argument("--thread-libs", default=",".join(C.LIBS),
                   help="libraries in the thread-scaling workload (default all)")
    p.add_argument("--rss-libs", default=",".join(C.LIBS),
                   help="libraries whose peak RSS is measured (default all)")
    p.add_argument("--rss-variants", default=",".join(C.CUBE_VARIANTS))
    p.add_argument("--native-reads", type=int, default=10000,
                   help="random 64^3 regions the native workload reads (default 10000)")
    p.add_argument("--hogs", type=int, default=1,
                   help="CPU hogs (nice 19) beside the busy condition's writes (default 1)")
    p.add_argument("--hog-session", choices=("same", "new"), default="same",
                   help="start the hogs in this run's session (default) or each in a new one; "
                        "where the kernel groups scheduling by session (autogroup), nice only "
                        "ranks processes within one session, so a hog in another session "
                        "takes a full share")
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--out-dir", default=C.HERE,
                   help="where RESULTS.md, results.json and results.png go (default benchmarks/)")
    p.add_argument("--read-from", choices=("ref", "own"), default="ref",
                   help="read the shared reference copy written by zarr-python (default), or "
                        "each library's own copy from its write_all run")
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto",
                   help="which zarrcore: installed, the repository checkout (in-place build), or "
                        "auto (installed if any, else the checkout)")
    p.add_argument("--baseline", metavar="PATH",
                   help="also run zarrcore from PATH, a checkout with its extensions built in "
                        "place, as the library zarrcore-baseline (not a peer) in every workload "
                        "of zarrcore but remote and native: a before/after comparison")
    p.add_argument("--regenerate", action="store_true", help="rewrite the reference datasets")
    p.add_argument("--xarray-mib", type=int, default=1024,
                   help="size of the xarray workload's dataset in MiB (default 1024)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per request")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--report-only", action="store_true",
                   help="only rewrite RESULTS.md and results.png from OUT_DIR/results.json")
    args = p.parse_args(argv)

    def split(value, allowed, what):
        items = [x.strip() for x in value.split(",") if x.strip()]
        bad = [x for x in items if x not in allowed]
        if bad:
            p.error(f"unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})")
        return items

    args.libs = [lib for lib in C.LIBS if lib in split(args.libs, C.LIBS, "library")]
    if args.n is None:
        args.n = C.SUITE_N if args.suite else 512
    if args.workloads is None:
        args.workloads = ",".join(C.SUITE_WORKLOADS if args.suite else C.WORKLOADS)
    args.workloads = split(args.workloads, C.WORKLOADS, "workload")
    args.cache = ["warm", "cold"] if args.cache == "both" else [args.cache]
    args.thread_libs = split(args.thread_libs, C.LIBS, "library")
    args.rss_libs = split(args.rss_libs, C.LIBS, "library")
    args.rss_variants = split(args.rss_variants, C.CUBE_VARIANTS, "variant")
    args.data_dir = os.path.abspath(args.data_dir)
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
        if not os.path.isfile(os.path.join(args.baseline, "zarrcore", "__init__.py")):
            p.error(f"--baseline {args.baseline}: no zarrcore checkout there")
        if "zarrcore" not in args.libs:
            p.error("--baseline needs zarrcore among --libs")
        for libs in (args.thread_libs, args.rss_libs):
            if "zarrcore" in libs:
                libs.append(C.BASELINE)
    if args.read_from == "own" and not {"write_all", "small"} & set(args.workloads):
        p.error("--read-from own needs the write workloads (it reads what each library wrote)")
    return args


def write_reports(results, out_dir, plot=True):
    import _report

    os.makedirs(out_dir, exist_ok=True)
    md_path = os.path.join(out_dir, "RESULTS.md")
    _report.write_markdown(results, md_path)
    log(f"wrote {md_path}")
    if plot:
        png = os.path.join(out_dir, "results.png")
        try:
            _report.plot(results, png)
            log(f"wrote {png}")
        except ImportError as e:
            log(f"no plot: {e}")


def main(argv=None):
    args = parse_args(argv)
    if args.report_only:
        with open(os.path.join(args.out_dir, "results.json")) as f:
            write_reports(json.load(f), args.out_dir, not args.no_plot)
        return 0
    os.makedirs(args.data_dir, exist_ok=True)
    runner = Runner(args)
    log(f"N={args.n}, small {args.small_n}x{args.small_n}, best of {args.repeats} after "
        f"{args.warmup} warm-up; libraries {', '.join(runner.libs)}; data in {args.data_dir}")
    # (Emptied first, before the datasets are made, so its deletions are long past when the
    # first timed write starts; see _common.set_aside.)
    shutil.rmtree(C.trash_dir(args.data_dir), ignore_errors=True)
    try:
        runner.start_workers()
        runner.generate()
        runner.run_workloads()
        if "busy" in args.workloads:
            runner.run_busy()
    finally:
        runner.stop_workers()
    if "xarray" in args.workloads:
        import xarray_bench

        xarray_bench.run(args, runner.results, log)
    if "rss" in args.workloads:
        runner.run_rss()
    if "limits" in args.workloads:
        runner.run_limits()
    if "remote" in args.workloads:
        runner.run_remote()
    if "native" in args.workloads:
        runner.run_native()
    runner.results["loadavg_end"] = loadavg()
    runner.results["uptime_end"] = _run(["uptime"]).strip()

    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "results.json"), "w") as f:
        json.dump(runner.results, f, indent=1)
    write_reports(runner.results, args.out_dir, not args.no_plot)
    shutil.rmtree(C.trash_dir(args.data_dir), ignore_errors=True)
    failures = runner.results["failures"]
    if failures:
        log(f"{len(failures)} failure(s); see RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
