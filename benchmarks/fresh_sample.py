#!/usr/bin/env python3
"""Minor page faults and CPU per random sample read, in a fresh process against a warmed one.

    python benchmarks/fresh_sample.py               # 9 rounds, both sample shapes
    python benchmarks/fresh_sample.py --rounds 1 --samples 100 --no-results   # a smoke run

A float32 array of --steps samples per shape (--shapes: the ERA5-like 181x360, 254.5 KiB, and
256x256, 256 KiB), zstd level 1, one sample per chunk, written once under --root. Each
measurement runs in a process of its own, which opens the array, reads one sample (the first
call maps what every later one reuses) and then --samples random samples, counting minor
faults (getrusage ru_minflt) and CPU (user + system) over those calls, and checks the last
sample against the data written:

  a[t]          `x = a[t]` in a loop: a loader's loop, the previous sample alive meanwhile
  8 x a[t]      a list of 8 samples at a time (a batch before collation), then the next 8
  out=buf       `a.get_basic_selection(t, out=buf)` into one array: nothing allocated

Each loop notes when it asked for each sample, as a loader timing itself would: such small
objects land between the samples in malloc's heap, which is what made a fresh process hand
the samples' memory back to the system and fault it in again.

each in a process that is

  fresh         as started
  warm          after freeing one 8 MiB numpy array first, which raises glibc's thresholds
                for returning memory to the system (as a process that ran anything larger
                would have done)

Each round runs the two states one after the other (in turn first), so that they share the
machine's load of the moment; the tables give the median faults over --rounds, the least and
median CPU, and the median of the rounds' fresh / warm CPU ratios. The targets: fresh faults
per call at most warm's (give or take FAULT_SLACK), fresh CPU at most 1.05x warm's.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import _common as C
import _report

SHAPES = ("181x360", "256x256")
READS = ("a[t]", "8 x a[t]", "out=buf")
STATES = ("fresh", "warm")
CPU_TARGET = 1.05
# Faults per call that the loop's own records (Python objects, the list holding them) take
# over a few hundred calls, whoever allocates the samples.
FAULT_SLACK = 0.05


def array_path(root, shape, steps):
    return os.path.join(root, f"samples-{steps}x{shape}.zarr")


def write_array(path, shape, steps):
    import zarrcore
    dims = tuple(int(n) for n in shape.split("x"))
    data = np.round(np.random.default_rng(0).standard_normal((steps, *dims), np.float32), 2)
    a = zarrcore.create_array(path, shape=data.shape, dtype="f4", chunks=(1, *dims),
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a[...] = data
    np.save(os.path.join(path, "reference.npy"), data)


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt, r.ru_utime + r.ru_stime


def measure(path, read, state, samples):
    """In this (fresh) process: {faults, us} per call of `read` over `samples` samples."""
    if state == "warm":
        big = np.ones(8 << 20, np.uint8)
        del big
    import zarrcore
    a = zarrcore.open_array(path, mode="r")
    steps = np.random.default_rng(1).integers(0, a.shape[0], samples + 1).tolist()
    first, *steps = steps
    seen = []  # when each sample was asked for, as a loop keeping its timings would
    if read == "out=buf":
        buf = np.empty(a.shape[1:], a.dtype)
        a.get_basic_selection(first, out=buf)
        f0, t0 = usage()
        for t in steps:
            seen.append(time.perf_counter())
            a.get_basic_selection(t, out=buf)
    elif read == "a[t]":
        x = a[first]
        f0, t0 = usage()
        for t in steps:
            seen.append(time.perf_counter())
            x = a[t]
    else:
        batch = [a[first]]
        f0, t0 = usage()
        for k in range(0, len(steps), 8):
            seen.append(time.perf_counter())
            batch = [a[t] for t in steps[k:k + 8]]
        x = batch[-1]
    f1, t1 = usage()
    if read == "out=buf":
        x = buf
    np.testing.assert_array_equal(x, np.load(os.path.join(path, "reference.npy"),
                                             mmap_mode="r")[steps[-1]])
    return {"faults": (f1 - f0) / samples, "us": (t1 - t0) / samples * 1e6}


def run_child(path, read, state, samples):
    proc = subprocess.run([sys.executable, __file__, "--child", path, read, state,
                           str(samples)], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(args, results, load):
    commit = subprocess.run(["git", "-C", C.REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    L = ["## Random samples in a fresh process (`benchmarks/fresh_sample.py`)\n",
         f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, git {commit}, "
         f"{platform.node()}, {os.cpu_count()} CPUs, load {load[0]:.2f} at start and "
         f"{load[1]:.2f} at end; `python benchmarks/fresh_sample.py --rounds {args.rounds} "
         f"--samples {args.samples}`. Per call over {args.samples} random samples after one "
         "untimed read, each in a process of its own; faults: median of the rounds; CPU: least "
         "and median of the rounds, and the median of the rounds' fresh ÷ warm. "
         "Warm: after freeing one 8 MiB numpy array. Targets: fresh faults ≤ warm's (+"
         f"{FAULT_SLACK}), fresh CPU ≤ {CPU_TARGET}× warm's.\n",
         "| sample | read | faults/call fresh | warm | µs CPU/call fresh, least / median "
         "| warm | fresh ÷ warm (CPU) |",
         "|---|---|---|---|---|---|---|"]
    for shape in args.shapes:
        for read in READS:
            cell = {s: results[shape][read][s] for s in STATES}
            faults = {s: statistics.median(r["faults"] for r in cell[s]) for s in STATES}
            us = {s: sorted(r["us"] for r in cell[s]) for s in STATES}
            ratio = statistics.median(f["us"] / w["us"]
                                      for f, w in zip(cell["fresh"], cell["warm"]))
            ok = faults["fresh"] <= faults["warm"] + FAULT_SLACK and ratio <= CPU_TARGET
            L.append(f"| {shape} | `{read}` | {faults['fresh']:.2f} | {faults['warm']:.2f} "
                     f"| {us['fresh'][0]:.0f} / {statistics.median(us['fresh']):.0f} "
                     f"| {us['warm'][0]:.0f} / {statistics.median(us['warm']):.0f} "
                     f"| {ratio:.2f}{'' if ok else ' ✗'} |")
    return "\n".join(L) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "zc-fresh-sample"))
    p.add_argument("--shapes", default=",".join(SHAPES), help="sample shapes, e.g. 181x360")
    p.add_argument("--steps", type=int, default=512)
    p.add_argument("--samples", type=int, default=400)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--results", default=os.path.join(C.HERE, "RESULTS.md"))
    p.add_argument("--no-results", action="store_true", help="print only")
    p.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        path, read, state, samples = args.child
        print(json.dumps(measure(path, read, state, int(samples))))
        return
    args.shapes = args.shapes.split(",")
    os.makedirs(args.root, exist_ok=True)
    for shape in args.shapes:
        if not os.path.exists(array_path(args.root, shape, args.steps)):
            write_array(array_path(args.root, shape, args.steps), shape, args.steps)
    load_start = os.getloadavg()
    results = {s: {r: {st: [] for st in STATES} for r in READS} for s in args.shapes}
    for round_ in range(args.rounds):
        for shape in args.shapes:
            for read in READS:
                order = STATES if round_ % 2 == 0 else STATES[::-1]
                for state in order:
                    r = run_child(array_path(args.root, shape, args.steps), read, state,
                                  args.samples)
                    results[shape][read][state].append(r)
                    print(f"round {round_}: {shape} {read:9} {state:5} "
                          f"{r['faults']:6.2f} faults/call {r['us']:7.1f} µs/call",
                          file=sys.stderr)
    section = report(args, results, (load_start[0], os.getloadavg()[0]))
    print(section)
    if not args.no_results:
        _report.write_section(args.results, "fresh-sample", section)


if __name__ == "__main__":
    main()
