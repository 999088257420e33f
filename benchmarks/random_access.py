#!/usr/bin/env python3
"""Random sample reads, as training loaders make them: zarrcore against its peers, samples/s.

    python benchmarks/random_access.py                # the full run
    python benchmarks/random_access.py --quick        # a smoke run (small sizes, one round)
    python benchmarks/random_access.py --libs zarrcore,tensorstore --layouts sharded \
        --conditions warm,s3

An ERA5-like (steps, 181, 360) float32 array (zstd level 1), written once by zarrcore in
three layouts: one sample per chunk ("one"), sharded with one sample per inner chunk
("sharded", --shard samples per shard), and eight samples per chunk ("eight"). Each library
then reads it, from a process of its own (the zarr-python pipelines are process-wide), under
each of three conditions (--conditions):

  warm     the page cache holds the files
  cold     the page cache is dropped before every timed round (_cold.drop_page_cache: the whole
           cache where allowed, else the array's files; the output says which, or that it could
           not)
  s3       a moto S3 server on 127.0.0.1 behind remote.py's DelayProxy, --delay (20 ms) added to
           every request; the layouts are uploaded once, and each library reads by its own S3
           path (zarrcore an s3:// URL, tensorstore its s3 kvstore, zarr-python ObjectStore)

and these reads:

  single   one random sample at a time, `a[t]`, in a loop
  batch    one call for --batch random samples (`a.oindex[idx]`; tensorstore's
           `a[idx].read()`; zarrcore also `get_many` and its native handle sample by sample)
  threads  --batch single reads from --threads threads at once (a map-style loader's pool)
  fork     --workers forked processes each reading single samples (a DataLoader's workers)
  first read, METHOD (ms)
           a new worker started by fork, spawn or forkserver, handed the array opened in the
           parent (pickled; the location, for a library whose arrays do not pickle): the time
           from its start to its first sample

Beside the libraries, a floor per layout and read: the least work, that is the touched chunk
bytes (not the shard index) read with pread from a warm page cache and decoded by zstd
(python-zstandard, else numcodecs) in a tight loop, on one CPU for `single`, its time divided
by the CPUs for the reads that may use them all (batch: each chunk once per batch, decoded
into the batch's output, a one-sample chunk straight into its place; threads and fork: each
sample's chunk); over S3 plus the request rounds the read must wait for: one
--delay per sample (single), per batch (batch), per --threads samples (threads), per sample
of one worker (fork). zarrcore ÷ floor and zarrcore ÷ best peer are time ratios (lower is
better); the best peer is the fastest of _common.PEERS (zarr-python-zarrcore is shown, not a
peer).

Every result is checked against the data written. Prints samples/s, the best of --rounds,
and writes everything as JSON with --json. Libraries missing from the environment are
skipped. zarrcore runs in this interpreter, the peers in --peer-python (one with zarr-python
3.4, tensorstore and zarrs; it also runs the S3 server, so needs moto), e.g. from the
checkout, with zarrcore built in place for that Python: `.bench-venv/bin/python
benchmarks/random_access.py --zarrcore inplace`.
"""
import argparse
import concurrent.futures
import json
import math
import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from queue import Empty
from typing import NamedTuple

import numpy as np

import _cold
import _common as C
import remote
from _worker import _import_zarrcore

LIBS = ("zarrcore", "tensorstore", "zarrs-python", "zarr-python", "zarr-python-fused",
        C.ZARRCORE_PIPELINE)
LAYOUTS = ("one", "sharded", "eight")
CONDITIONS = ("warm", "cold", "s3")
START_METHODS = ("fork", "spawn", "forkserver")
SAMPLE_SHAPE = (181, 360)
COLD_METHODS = {"drop_caches": "the whole page cache (drop_caches)",
                "fadvise": "the array's files only (posix_fadvise; drop_caches not allowed "
                           "or not asked for)"}
ZSTD_LEVEL = 1
# --quick: small sizes and one round, for a smoke run (options given explicitly still count).
QUICK = dict(steps=64, shard=16, batch=8, batches=2, remote_batches=1, threads=4, workers=2,
             rounds=1, cache_mib=64, worker_timeout=20)


def _zarrcore():
    """zarrcore as --zarrcore chose (ZARRCORE_FROM in the environment, for child processes)."""
    return _import_zarrcore(os.environ.get("ZARRCORE_FROM", "auto"))


# -- writing ------------------------------------------------------------------------------------

def write_layouts(root, steps, shard):
    zarrcore = _zarrcore()
    data = np.random.default_rng(0).standard_normal((steps, *SAMPLE_SHAPE), dtype=np.float32)
    data = np.round(data, 2)  # (compressible, as reanalysis fields are)
    zstd = [{"name": "zstd", "configuration": {"level": ZSTD_LEVEL}}]
    layouts = {"one": dict(chunks=(1, *SAMPLE_SHAPE)),
               "sharded": dict(chunks=(1, *SAMPLE_SHAPE), shards=(shard, *SAMPLE_SHAPE)),
               "eight": dict(chunks=(8, *SAMPLE_SHAPE))}
    for name, kw in layouts.items():
        a = zarrcore.create_array(os.path.join(root, name), shape=data.shape, dtype="f4",
                                  compressors=zstd, overwrite=True, **kw)
        a[...] = data
    np.save(os.path.join(root, "reference.npy"), data)


# -- where a layout is read from ------------------------------------------------------------------

class Location(NamedTuple):
    """One layout's array: the local directory, or (with `s3_endpoint`) the same array in
    remote.BUCKET under the key prefix `layout`, reached through that endpoint."""
    path: str
    layout: str
    s3_endpoint: str | None = None


def zarrcore_s3_options(endpoint):
    """zarrcore's storage_options for the moto server behind `endpoint`."""
    return {"endpoint": endpoint, "region": remote.CREDENTIALS["AWS_REGION"],
            "access_key_id": remote.CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "secret_access_key": remote.CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "virtual_hosted_style_request": False}


# -- one library, in its own process ----------------------------------------------------------

class Reader:
    """`open`, `one(t)` and `batch(idx)` of one library, by its own ordinary API."""

    def __init__(self, lib):
        self.lib = lib
        if lib == "tensorstore":
            import tensorstore as ts
            self.ts = ts
        elif lib == "zarrcore":
            self.zc = _zarrcore()
        else:
            if lib == C.ZARRCORE_PIPELINE:
                _zarrcore()  # (puts the chosen zarrcore first on sys.path)
            # zarrs not strict here: it hands what it cannot do to zarr-python's own pipeline.
            pipeline = C.zarr_pipeline_config(lib)
            pipeline.pop("codec_pipeline.strict", None)
            import zarr
            zarr.config.set(pipeline)
            self.zarr = zarr

    def open(self, loc):
        if self.lib == "tensorstore":
            kvstore = ({"driver": "file", "path": loc.path} if loc.s3_endpoint is None
                       else remote.TensorStore.kvstore("s3", loc.s3_endpoint, loc.layout))
            return self.ts.open({"driver": "zarr3", "kvstore": kvstore,
                                 "context": {"cache_pool": {"total_bytes_limit": 0}}},
                                read=True).result()
        if self.lib == "zarrcore":
            if loc.s3_endpoint is None:
                return self.zc.open_array(loc.path, mode="r")
            return self.zc.open_array(f"s3://{remote.BUCKET}/{loc.layout}", mode="r",
                                      storage_options=zarrcore_s3_options(loc.s3_endpoint))
        if loc.s3_endpoint is None:
            return self.zarr.open_array(loc.path, mode="r")
        store = self.zarr.storage.ObjectStore(
            remote.obstore_store("s3", loc.s3_endpoint, loc.layout), read_only=True)
        return self.zarr.open_array(store=store, mode="r")

    def one(self, a, t):
        if self.lib == "tensorstore":
            return a[t].read().result()
        return a[t]

    def batch(self, a, idx):
        if self.lib == "tensorstore":
            return a[idx].read().result()
        return a.oindex[idx]


def _join_all(procs, timeout):
    """Join `procs`; kill those still running after `timeout` seconds (then TimeoutError)."""
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    late = [p for p in procs if p.is_alive()]
    for p in late:
        p.kill()
        p.join()
    if late:
        raise TimeoutError(f"{len(late)} worker(s) still running after {timeout:g}s")


def _forked_rate(reader, loc, a, steps, nworkers, per_worker, ref, evict, timeout):
    """Samples/s of `nworkers` forked processes reading `per_worker` random samples each of
    `a`, opened in the parent (as a DataLoader's workers do)."""
    ctx = multiprocessing.get_context("fork")
    go = ctx.Barrier(nworkers + 1)
    failures = ctx.SimpleQueue()

    def work(seed):
        rng = np.random.default_rng(seed)
        go.wait()
        try:
            for t in rng.integers(0, steps, per_worker).tolist():
                got = reader.one(a, t)
        except Exception as e:  # noqa: BLE001  (reported by the parent)
            failures.put(f"{type(e).__name__}: {e}")
            os._exit(1)
        os._exit(0 if np.array_equal(got, ref[t]) else 3)

    evict()
    procs = [ctx.Process(target=work, args=(k,)) for k in range(nworkers)]
    for p in procs:
        p.start()
    try:
        go.wait(timeout)
    except threading.BrokenBarrierError:
        _join_all(procs, 0)  # (kills those still running)
        raise RuntimeError("forked workers did not all start: exit codes "
                           f"{sorted({p.exitcode for p in procs}, key=str)}") from None
    start = time.perf_counter()
    _join_all(procs, timeout)
    elapsed = time.perf_counter() - start
    if any(p.exitcode for p in procs):
        codes = sorted({p.exitcode for p in procs})
        why = "" if failures.empty() else f"; {failures.get()}"
        raise RuntimeError(f"forked workers exited with {codes} (3: wrong values; "
                           f"negative: killed by that signal){why}")
    return nworkers * per_worker / elapsed


def _first_read(reader, loc, a, method, ref, evict, timeout):
    """Milliseconds from starting a worker by `method` to its first sample, given `a` opened
    in the parent: forked, the worker inherits it; spawned or forkserver'd, it receives it
    pickled (or `loc`, to open itself, when `a` does not pickle)."""
    ctx = multiprocessing.get_context(method)
    queue = ctx.Queue()
    t = ref.shape[0] // 2
    evict()
    start = time.perf_counter()
    if method == "fork":
        payload = ("array", a)
    else:
        try:
            payload = ("pickled", pickle.dumps(a))
        except Exception:  # noqa: BLE001  (any failure to pickle: the worker opens it)
            payload = ("location", loc)
    p = ctx.Process(target=_first_read_worker,
                    args=(reader.lib, payload, t, os.path.dirname(loc.path),
                          os.environ.get("ZARRCORE_FROM"), queue))
    p.start()
    try:
        done, ok = _answer(queue, p, timeout)
    finally:
        _join_all([p], timeout)
    if done is None:
        raise RuntimeError(f"the worker failed: {ok}")
    if not ok:
        raise AssertionError("the worker's first sample differs from the data written")
    # (perf_counter is CLOCK_MONOTONIC, one clock for every process of the machine)
    return {"ms": (done - start) * 1e3, "handed": payload[0]}


def _answer(queue, process, timeout):
    """The first item `process` puts on `queue`; an error when it ends without one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return queue.get(timeout=0.05)
        except Empty:
            if not process.is_alive() and queue.empty():
                raise RuntimeError(f"the worker exited with {process.exitcode} "
                                   "(negative: killed by that signal)") from None
    raise TimeoutError(f"no first sample within {timeout:g}s")


def _first_read_worker(lib, payload, t, root, zarrcore_from, queue):
    """A new worker's first read: its library set up, the array received, one sample; sends
    the clock when the sample was there, and whether it was right (checked after)."""
    if zarrcore_from:
        os.environ["ZARRCORE_FROM"] = zarrcore_from
    try:
        reader = Reader(lib)
        kind, value = payload
        a = (value if kind == "array" else pickle.loads(value) if kind == "pickled"
             else reader.open(value))
        got = reader.one(a, t)
    except Exception as e:  # noqa: BLE001  (reported by the parent)
        queue.put((None, f"{type(e).__name__}: {e}"))
        return
    done = time.perf_counter()
    ref = np.load(os.path.join(root, "reference.npy"), mmap_mode="r")
    queue.put((done, bool(np.array_equal(got, ref[t]))))


def measure_lib(lib, root, layouts, condition, args):
    """samples/s (or {"error": ...}) of every read of `lib` on each layout under `condition`."""
    reader = Reader(lib)
    ref = np.load(os.path.join(root, "reference.npy"), mmap_mode="r")
    steps = ref.shape[0]
    remote_read = condition == "s3"
    picks_of = sample_picks(steps, layouts, args)
    hung_after_fork = None  # why forked workers of this library are not started again
    out = {}
    for layout in layouts:
        loc = Location(os.path.join(root, layout), layout,
                       args.s3_endpoint if remote_read else None)
        evict = ((lambda path=loc.path: _cold.drop_page_cache([path], args.cold_method))
                 if condition == "cold" else (lambda: None))
        a = reader.open(loc)
        picks = picks_of[layout][:args.remote_batches] if remote_read else picks_of[layout]
        n = args.batch * len(picks)
        for idx in picks[:2]:  # warm the page cache (or connections) and check
            assert np.array_equal(reader.batch(a, idx), ref[idx])
            assert np.array_equal(reader.one(a, int(idx[0])), ref[int(idx[0])])
        r = out[layout] = {}

        def rate(read, func):
            try:
                r[read] = n / C.best_time(func, args.rounds, before=evict)
            except Exception as e:  # noqa: BLE001  (recorded; the other reads still run)
                r[read] = {"error": f"{type(e).__name__}: {e}"}

        def single():
            for idx in picks:
                for t in idx.tolist():
                    reader.one(a, t)

        def batch():
            for idx in picks:
                reader.batch(a, idx)

        pool = concurrent.futures.ThreadPoolExecutor(args.threads)

        def threads():
            for idx in picks:
                list(pool.map(lambda t: reader.one(a, t), idx.tolist()))

        rate("single", single)
        rate("batch", batch)
        rate("threads", threads)
        pool.shutdown()
        if lib == "zarrcore":
            assert all(np.array_equal(g, ref[t])
                       for g, t in zip(a.get_many(picks[0].tolist()), picks[0].tolist()))
            rate("get_many", lambda: [a.get_many(i.tolist()) for i in picks])
            if not remote_read:
                rate("native", _native_reads(a, picks))
            if condition == "warm":
                cached = reader.zc.open_array(loc.path, mode="r",
                                              cache_bytes=args.cache_mib << 20)
                time.sleep(1.1)  # (files changed within the last second are read, not cached)
                cached.oindex[np.arange(steps)]
                rate("batch, cached", lambda: [cached.oindex[i] for i in picks])
        if hung_after_fork:
            # (the same library forked again would hang again: its time is not spent twice)
            r["fork"] = r["first read, fork (ms)"] = {"error": f"skipped: {hung_after_fork}"}
        elif args.workers and hasattr(os, "fork"):
            try:
                r["fork"] = _forked_rate(reader, loc, a, steps, args.workers,
                                         n // args.workers, ref, evict, args.worker_timeout)
            except Exception as e:  # noqa: BLE001  (a library whose threads do not survive fork)
                r["fork"] = {"error": f"{type(e).__name__}: {e}"}
        if isinstance(r.get("fork"), dict) and "TimeoutError" in r["fork"]["error"]:
            hung_after_fork = f"forked workers timed out on {layout}"
            r["first read, fork (ms)"] = {"error": f"skipped: {hung_after_fork}"}
        for method in START_METHODS:
            key = f"first read, {method} (ms)"
            if key in r:
                continue
            try:
                first = _first_read(reader, loc, a, method, ref, evict, args.worker_timeout)
                r[key] = first["ms"]
                r[f"first read, {method}: handed"] = first["handed"]
            except Exception as e:  # noqa: BLE001
                r[key] = {"error": f"{type(e).__name__}: {e}"}
    return out


def _native_reads(a, picks):
    """zarrcore's native handle reading the samples of `picks` one by one into one buffer."""
    h = a.native_handle()
    start, shape = [0, 0, 0], (1, *SAMPLE_SHAPE)
    buf = np.empty(shape, dtype="f4")

    def native():
        for idx in picks:
            for t in idx.tolist():
                start[0] = t
                h.read(start, shape, out=buf)

    return native


def sample_picks(steps, layouts, args):
    """{layout: [--batches arrays of --batch random steps]}, the same in every process."""
    rng = np.random.default_rng(42)
    return {layout: [rng.integers(0, steps, args.batch) for _ in range(args.batches)]
            for layout in layouts}


# -- the floor -----------------------------------------------------------------------------------

def zstd_decoder():
    """(decode(data, decoded_nbytes) -> bytes, decode_into(data, writable buffer), its name):
    python-zstandard, else numcodecs."""
    try:
        import zstandard
    except ModuleNotFoundError:
        import numcodecs

        codec = numcodecs.Zstd()
        return ((lambda data, nbytes: codec.decode(data)),
                (lambda data, view: codec.decode(data, out=view)),
                f"numcodecs {numcodecs.__version__}")
    dctx = zstandard.ZstdDecompressor()

    def decode_into(data, view):
        view = memoryview(view).cast("B")
        with dctx.stream_reader(data) as reader:
            done = 0
            while done < view.nbytes:
                n = reader.readinto(view[done:])
                if not n:
                    raise ValueError("the frame is shorter than its chunk")
                done += n

    return ((lambda data, nbytes: dctx.decompress(data, max_output_size=nbytes)), decode_into,
            f"python-zstandard {zstandard.__version__}")


class StoredChunks:
    """Where each sample's stored chunk lies in one layout's files, from its zarr.json: the
    chunk file (the shard file, and the inner chunk's range in it from the shard index)."""

    def __init__(self, path):
        with open(os.path.join(path, "zarr.json")) as f:
            meta = json.load(f)
        self.path = path
        self.outer = meta["chunk_grid"]["configuration"]["chunk_shape"][0]
        self.separator = meta["chunk_key_encoding"].get("configuration", {}).get("separator", "/")
        sharding = next((c["configuration"] for c in meta["codecs"]
                         if c["name"] == "sharding_indexed"), None)
        chunk_shape = sharding["chunk_shape"] if sharding else meta["chunk_grid"][
            "configuration"]["chunk_shape"]
        self.inner = chunk_shape[0]
        self.decoded_nbytes = math.prod(chunk_shape) * np.dtype(meta["data_type"]).itemsize
        self.index_at_end = sharding and sharding.get("index_location", "end") == "end"
        self.sharded = sharding is not None
        self._fds, self._indexes = {}, {}

    def key(self, outer):
        """The key of the chunk (or shard) `outer` along the first axis."""
        return self.separator.join(["c", str(outer), "0", "0"])

    def _fd(self, outer):
        if outer not in self._fds:
            self._fds[outer] = os.open(os.path.join(self.path, self.key(outer)), os.O_RDONLY)
        return self._fds[outer]

    def _index(self, outer):
        """The shard's (offset, nbytes) per inner chunk (bytes codec; crc32c not checked)."""
        if outer not in self._indexes:
            fd, n = self._fd(outer), self.outer // self.inner
            size, nbytes = os.fstat(fd).st_size, n * 16 + 4
            raw = os.pread(fd, nbytes, size - nbytes if self.index_at_end else 0)
            self._indexes[outer] = np.frombuffer(raw[:n * 16], "<u8").reshape(n, 2)
        return self._indexes[outer]

    def chunk_of(self, t):
        """(fd, offset, nbytes) of the stored chunk holding sample t; a key per chunk."""
        outer = t // self.outer
        fd = self._fd(outer)
        if not self.sharded:
            return fd, 0, os.fstat(fd).st_size
        offset, nbytes = self._index(outer)[(t % self.outer) // self.inner]
        return fd, int(offset), int(nbytes)

    def chunk_key(self, t):
        return t // self.inner

    def close(self):
        for fd in self._fds.values():
            os.close(fd)


def measure_floors(root, layouts, picks, ref, args):
    """The floor of every layout and read, samples/s: the least work of each (see the module's
    docstring), warm, and over S3 with the request rounds added. Checks that the bytes it
    decodes are the chunk's (`ref`: the data written)."""
    decode, decode_into, decoder = zstd_decoder()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    out = {"decoder": decoder, "cpus": cpus, "warm": {}, "s3": {}}
    for layout in layouts:
        chunks = StoredChunks(os.path.join(root, layout))
        try:
            every_sample = [chunks.chunk_of(t) for idx in picks[layout] for t in idx.tolist()]
            # Per batch, each chunk once, with the output slots of its samples and their rows
            # in the chunk.
            batches = []
            for idx in picks[layout]:
                places = {}
                for slot, t in enumerate(idx.tolist()):
                    places.setdefault(chunks.chunk_key(t), (t, []))[1].append(
                        (slot, t % chunks.inner))
                batches.append([(chunks.chunk_of(t), p) for t, p in places.values()])

            t = int(picks[layout][0][0])
            fd, offset, nbytes = chunks.chunk_of(t)
            first = t - t % chunks.inner
            want = ref[first:first + chunks.inner].ravel()
            got = np.frombuffer(decode(os.pread(fd, nbytes, offset), chunks.decoded_nbytes),
                                "<f4")
            if not np.array_equal(got[:want.size], want):
                raise AssertionError(f"{layout}: the floor's chunk of sample {t} is not it")

            def work(reads):
                for fd, offset, nbytes in reads:
                    decode(os.pread(fd, nbytes, offset), chunks.decoded_nbytes)

            placed = np.empty((args.batch, *SAMPLE_SHAPE), dtype="<f4")

            def place(batches):
                """Each batch's chunks decoded into its output: a one-sample chunk straight
                into its slot, a larger one through a buffer."""
                for reads in batches:
                    for (fd, offset, nbytes), slots in reads:
                        data = os.pread(fd, nbytes, offset)
                        if chunks.inner == 1:
                            first = slots[0][0]
                            decode_into(data, placed[first])
                            for slot, _ in slots[1:]:  # (a sample drawn twice)
                                placed[slot] = placed[first]
                            continue
                        chunk = np.frombuffer(decode(data, chunks.decoded_nbytes),
                                              "<f4").reshape(chunks.inner, *SAMPLE_SHAPE)
                        for slot, row in slots:
                            placed[slot] = chunk[row]

            place(batches[:1])
            if not np.array_equal(placed, ref[picks[layout][0]]):
                raise AssertionError(f"{layout}: the floor's batch is not its samples")
            work(every_sample)  # (the page cache warm)
            per_sample = C.best_time(lambda: work(every_sample), args.rounds)
            per_batch = C.best_time(lambda: place(batches), args.rounds)
        finally:
            chunks.close()
        n = len(every_sample)
        seconds = {"single": per_sample, "batch": per_batch / cpus,
                   "threads": per_sample / cpus, "fork": per_sample / cpus}
        out["warm"][layout] = {read: n / s for read, s in seconds.items()}
        # Over S3: the same work for the samples read there, and the rounds of requests.
        batches = min(args.remote_batches, args.batches)
        m = args.batch * batches
        rounds = {"single": m, "batch": batches,
                  "threads": batches * math.ceil(args.batch / args.threads),
                  "fork": math.ceil(m / args.workers) if args.workers else None}
        out["s3"][layout] = {read: m / (s * m / n + rounds[read] * args.delay)
                             for read, s in seconds.items() if rounds[read] is not None}
    return out


# -- orchestration -------------------------------------------------------------------------------

def resolve_cold_method(root, method):
    """How cold rounds drop the page cache here ("drop_caches" or "fadvise"), or None with the
    reason printed when this machine allows neither."""
    try:
        return _cold.drop_page_cache([root], method)
    except OSError as e:
        print(f"cold: cannot drop the page cache here ({e}); the cold rounds are skipped")
        return None


def run_child(lib, condition, root, args, extra, script=__file__):
    """One library's reads under one condition, in a process of its own (`script` run with
    --child): its results, or {"error": why}. zarrcore's variants ("zarrcore-...") run in
    this interpreter."""
    python = sys.executable if lib.partition("-")[0] == "zarrcore" else args.peer_python
    cmd = [python, os.path.abspath(script), *sys.argv[1:], "--child", lib,
           "--condition", condition, "--data", root, *extra]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout ({args.timeout:g}s)"}
    if done.returncode:
        return {"error": " ".join(done.stderr.strip().splitlines()[-1:])}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_conditions(root, conditions, libs, layouts, args, script=__file__):
    """{condition: {lib: results}}: each library under each condition, by `script` in a
    process of its own (run_child). "cold" is dropped from `conditions` where this machine
    cannot drop the page cache; for "s3" the servers are started, and stopped at the end."""
    if "cold" in conditions:
        args.cold_method = resolve_cold_method(root, args.cold_method)
        if args.cold_method is None:
            conditions.remove("cold")
    results, servers = {}, None
    try:
        for condition in conditions:
            extra = []
            if condition == "cold":
                extra = ["--cold-method", args.cold_method]
            if condition == "s3":
                servers, proxies = remote.start_servers(
                    args.delay, {layout: os.path.join(root, layout) for layout in layouts},
                    python=args.peer_python)
                extra = ["--s3-endpoint", proxies["s3"].url]
            results[condition] = {lib: run_child(lib, condition, root, args, extra, script)
                                  for lib in libs}
    finally:
        if servers is not None:
            servers.stdin.close()
            servers.wait(30)
    return results


def _cell(value, unit_ms=False):
    if value is None:
        return ""
    if isinstance(value, dict):
        why = value["error"].lower()
        return ("skipped" if why.startswith("skipped") else "timeout" if "timeout" in why
                else "failed")
    return f"{value:,.1f}" if unit_ms else f"{value:,.0f}"


def print_tables(results, floors, conditions, layouts, libs, args):
    """A markdown table per condition and layout: samples/s per read and library, the floor,
    zarrcore ÷ best peer and zarrcore ÷ floor (time ratios); then the first-read times (ms)."""
    for condition in conditions:
        if condition not in results:
            continue
        floor_of = floors["s3" if condition == "s3" else "warm"]
        note = {"warm": "warm page cache",
                "cold": f"page cache dropped before every round and first read: "
                        f"{COLD_METHODS.get(args.cold_method)}; the floor is the warm one",
                "s3": f"loopback S3 (moto), {args.delay * 1e3:g} ms added per request, "
                      f"{args.remote_batches} batch(es)"}[condition]
        print(f"\n### {condition}: {note}")
        by_lib = results[condition]
        for layout in layouts:
            shown = [lib for lib in libs if isinstance(by_lib.get(lib), dict)
                     and layout in by_lib[lib]]
            failed = {lib: by_lib[lib]["error"] for lib in libs
                      if "error" in by_lib.get(lib, {})}
            rows = {lib: by_lib[lib][layout] for lib in shown}
            reads = [k for k in dict.fromkeys(k for r in rows.values() for k in r)
                     if not k.endswith(": handed")]
            floor = floor_of.get(layout, {})
            print(f"\n{layout} (samples/s; first reads in ms)\n")
            print("| read | " + " | ".join(shown)
                  + " | floor | zarrcore ÷ best peer | zarrcore ÷ floor |")
            print("|---" * (len(shown) + 4) + "|")
            for read in reads:
                in_ms = read.endswith("(ms)")
                cells = [rows[lib].get(read) for lib in shown]
                zc = rows.get("zarrcore", {}).get(read)
                peers = [rows[lib][read] for lib in shown if lib in C.PEERS
                         and isinstance(rows[lib].get(read), float)]
                vs_peer = vs_floor = ""
                if isinstance(zc, float) and peers:
                    best = min(peers) if in_ms else max(peers)
                    vs_peer = f"{zc / best if in_ms else best / zc:.2f}"
                if isinstance(zc, float) and read in floor:
                    vs_floor = f"{floor[read] / zc:.2f}"
                print(f"| {read} | " + " | ".join(_cell(c, in_ms) for c in cells)
                      + f" | {_cell(floor.get(read))} | {vs_peer} | {vs_floor} |")
            for lib, why in failed.items():
                print(f"\n{lib}: {why}")
        errors = [(lib, layout, read, v["error"]) for lib, r in by_lib.items()
                  if "error" not in r for layout, reads in r.items()
                  for read, v in reads.items() if isinstance(v, dict)]
        for lib, layout, read, why in errors:
            print(f"- {lib} {layout} {read}: {why}")
        opened_by_worker = sorted({lib for lib, r in by_lib.items() if "error" not in r
                                   for reads in r.values() for k, v in reads.items()
                                   if k.endswith(": handed") and v == "location"})
        if opened_by_worker:
            print(f"- {', '.join(opened_by_worker)}: the array does not pickle; spawned and "
                  "forkserver workers received its location and opened it")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2048)
    p.add_argument("--shard", type=int, default=64, help="samples per shard")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--batches", type=int, default=16)
    p.add_argument("--remote-batches", type=int, default=4,
                   help="batches read over S3 (each sample waits for --delay)")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--workers", type=int, default=4, help="forked workers (0: none)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cache-mib", type=int, default=1024)
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--cold-method", choices=_cold.METHODS, default="auto",
                   help="how cold rounds drop the page cache (see _cold.drop_page_cache)")
    p.add_argument("--delay", type=float, default=0.02, help="seconds added per S3 request")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--data", help="directory to write the arrays in (default: a temporary one)")
    p.add_argument("--zarrcore", choices=["auto", "inplace"], default="auto",
                   help="the installed zarrcore (auto: this checkout when none is)")
    p.add_argument("--peer-python", default=sys.executable,
                   help="the interpreter that runs the peers and the S3 server "
                        "(default: this one)")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds for one library under one condition")
    p.add_argument("--worker-timeout", type=float, default=60,
                   help="seconds for the forked workers of one measurement, or a first read")
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
    layouts = [x for x in args.layouts.split(",") if x]
    conditions = [x for x in args.conditions.split(",") if x]
    libs = [x for x in args.libs.split(",") if x]
    if args.zarrcore == "inplace":
        os.environ["ZARRCORE_FROM"] = "inplace"
    for k, v in remote.CREDENTIALS.items():
        os.environ.setdefault(k, v)
    if args.child:
        out = measure_lib(args.child, args.data, layouts, args.condition, args)
        print(json.dumps(out))
        return

    tmp = None if args.data else tempfile.mkdtemp(prefix="zarrcore-random-")
    root = args.data or tmp
    try:
        if not os.path.exists(os.path.join(root, "reference.npy")):
            write_layouts(root, args.steps, args.shard)
        ref = np.load(os.path.join(root, "reference.npy"), mmap_mode="r")
        steps = ref.shape[0]
        floors = measure_floors(root, layouts, sample_picks(steps, layouts, args), ref, args)
        results = run_conditions(root, conditions, libs, layouts, args)
        print(f"samples/s, ({steps}, 181, 360) float32 zstd level {ZSTD_LEVEL}, batches of "
              f"{args.batch}, best of {args.rounds}; floor: pread + {floors['decoder']} "
              f"decode, {floors['cpus']} CPUs")
        print_tables(results, floors, conditions, layouts, libs, args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"args": vars(args), "floors": floors, "results": results}, f,
                          indent=1)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
