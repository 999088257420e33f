"""One benchmark worker process per library, driven by run.py.

Modes:
  serve  --lib LIB ...            answer JSON requests, one per line on stdin, one reply per line
  rss    --lib LIB --variant V    read the whole array once, report peak RSS (VmHWM)
  limits                          measure machine limits: file reads, memcpy, page faults, zstd

Every library runs in its own process, so that zarr's global config (the zarrs codec pipeline),
thread pools and memory of one library never affect another.
"""
import argparse
import contextlib
import gc
import importlib.metadata
import json
import multiprocessing
import os
import shutil
import sys
import threading
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _cold  # noqa: E402
import _common as C  # noqa: E402


def _import_zarrcore(where):
    """Import zarrcore: the installed one, the repository checkout, or (auto) the installed one
    when there is one, else the checkout."""
    if where == "inplace":
        sys.path.insert(0, C.REPO)
        import zarrcore
        return zarrcore
    try:
        import zarrcore
        return zarrcore
    except ModuleNotFoundError as e:
        if where == "installed" or e.name != "zarrcore":
            raise
    sys.path.insert(0, C.REPO)
    import zarrcore
    return zarrcore


def _dist_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# -- library adapters ---------------------------------------------------------------------------
# Each adapter uses the library's own, ordinary API: open, read a selection, create, write.

class ZarrPython:
    name = "zarr-python"

    def __init__(self, args):
        self.zarr = C.use_zarr_pipeline(self.name)

    def versions(self):
        return {"zarr": self.zarr.__version__, "numcodecs": _dist_version("numcodecs")}

    def module_path(self):
        return os.path.dirname(self.zarr.__file__)

    def open(self, path):
        return self.zarr.open_array(store=path, mode="r")

    def read_all(self, h):
        return h[...]

    def read_region(self, h, sel):
        return h[sel]

    def create(self, path, ds):
        return self.zarr.create_array(
            store=path, shape=ds.shape, dtype=ds.dtype, chunks=ds.chunks, shards=ds.shards,
            compressors=ds.compressors() or None, fill_value=0, overwrite=True,
        )

    def write_all(self, h, data):
        h[...] = data

    def copy(self, h, path, ds):
        # from_array copies shard by shard; it keeps the source's settings, which are ds's.
        self.zarr.from_array(path, data=h, overwrite=True)

    @contextlib.contextmanager
    def pool_of_one(self):
        with self.zarr.config.set({"threading.max_workers": 1}):
            yield


class ZarrPythonFused(ZarrPython):
    name = "zarr-python-fused"

    @contextlib.contextmanager
    def pool_of_one(self):
        # The fused pipeline runs codecs in a pool of its own, sized by this setting.
        with self.zarr.config.set({"threading.max_workers": 1,
                                   "codec_pipeline.max_workers": 1}):
            yield


class ZarrsPython(ZarrPython):
    name = "zarrs-python"

    def __init__(self, args):
        super().__init__(args)
        import zarrs
        self.zarrs = zarrs

    def versions(self):
        return {"zarrs": self.zarrs.__version__, **super().versions()}

    def module_path(self):
        return os.path.dirname(self.zarrs.__file__)


class ZarrPythonZarrcore(ZarrPython):
    """zarr-python with zarrcore's codec pipeline, from the zarrcore that --zarrcore picks."""
    name = C.ZARRCORE_PIPELINE

    def __init__(self, args):
        self.zc = _import_zarrcore(getattr(args, "zarrcore", "auto"))
        super().__init__(args)

    def versions(self):
        return {"zarrcore": getattr(self.zc, "__version__", "?"), **super().versions()}

    @contextlib.contextmanager
    def pool_of_one(self):
        # The pipeline sets zarrcore's num_threads from zarr's threading.max_workers.
        with self.zarr.config.set({"threading.max_workers": 1}):
            yield


class TensorStore:
    name = "tensorstore"

    def __init__(self, args):
        import tensorstore
        self.ts = tensorstore
        self.context = None

    def versions(self):
        return {"tensorstore": _dist_version("tensorstore")}

    def module_path(self):
        return os.path.dirname(self.ts.__file__)

    def _kvstore(self, path):
        return {"driver": "file", "path": os.path.abspath(path)}

    def open(self, path):
        spec = {"driver": "zarr3", "kvstore": self._kvstore(path)}
        return self.ts.open(spec, read=True, context=self.context).result()

    def read_all(self, h):
        return h.read().result()

    def read_region(self, h, sel):
        return h[sel].read().result()

    def create(self, path, ds):
        spec = {"driver": "zarr3", "kvstore": self._kvstore(path), "metadata": ds.metadata_json()}
        return self.ts.open(spec, create=True, delete_existing=True, context=self.context).result()

    def write_all(self, h, data):
        h.write(data).result()

    def copy(self, h, path, ds):
        self.create(path, ds).write(h).result()

    @contextlib.contextmanager
    def pool_of_one(self):
        self.context = self.ts.Context({"data_copy_concurrency": {"limit": 1},
                                        "file_io_concurrency": {"limit": 1}})
        try:
            yield
        finally:
            self.context = None


class Zarrcore:
    name = "zarrcore"

    def __init__(self, args):
        self.zc = _import_zarrcore(getattr(args, "zarrcore", "auto"))

    def versions(self):
        return {"zarrcore": getattr(self.zc, "__version__", "?")}

    def module_path(self):
        return os.path.dirname(self.zc.__file__)

    def open(self, path):
        return self.zc.open_array(path, mode="r")

    def read_all(self, h):
        return h[...]

    def read_region(self, h, sel):
        return h[sel]

    def create(self, path, ds):
        return self.zc.create_array(
            path, shape=ds.shape, dtype=ds.dtype, chunks=ds.chunks, shards=ds.shards,
            compressors=ds.compressors() or None, fill_value=0, overwrite=True,
        )

    def write_all(self, h, data):
        h[...] = data

    def copy(self, h, path, ds):
        self.create(path, ds)[...] = h

    def release_kept_memory(self):
        # The buffer pool keeps freed output blocks for reuse; returned to the system here.
        kept = self.zc.config.buffer_pool_bytes
        self.zc.config.set(buffer_pool_bytes=0)
        self.zc.config.set(buffer_pool_bytes=kept)

    @contextlib.contextmanager
    def pool_of_one(self):
        old = self.zc.config.num_threads
        self.zc.config.set(num_threads=1)
        try:
            yield
        finally:
            self.zc.config.set(num_threads=old)


class ZarrcoreBaseline(Zarrcore):
    """zarrcore's adapter in a process whose `import zarrcore` finds an older checkout
    (run.py --baseline); its own name keeps its writes apart."""
    name = C.BASELINE


ADAPTERS = {a.name: a for a in (TensorStore, ZarrPython, ZarrPythonFused, ZarrsPython,
                                ZarrPythonZarrcore, Zarrcore, ZarrcoreBaseline)}


# -- the server -----------------------------------------------------------------------------------

class Server:
    def __init__(self, args):
        self.args = args
        self.lib = ADAPTERS[args.lib](args)
        self.datasets = C.make_datasets(args.n, args.small_n)
        self._expected = {}
        self._chunks = {}  # op_encode_floor's contiguous chunks of one variant

    def expected(self, variant):
        """The whole expected array, cached (the cube is shared by the three cube variants)."""
        key = "small" if variant == C.SMALL_VARIANT else "cube"
        if key not in self._expected:
            self._expected[key] = self.datasets[variant].expected()
        return self._expected[key]

    def read_path(self, variant):
        if self.args.read_from == "own":
            return C.write_path(self.args.data_dir, self.lib.name, variant)
        return C.reference_path(self.args.data_dir, self.args.n, self.args.small_n, variant)

    @staticmethod
    def _timed(func):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            result = func()
            seconds = time.perf_counter() - t0
        finally:
            gc.enable()
        return seconds, result

    # Each op returns {"seconds": float, "ok": bool or None (not checked), ...}.
    def op_hello(self, msg):
        return {"lib": self.lib.name, "versions": self.lib.versions(),
                "module_path": self.lib.module_path(), "pid": os.getpid()}

    @staticmethod
    def _cold(msg, path):
        """Evict the dataset at `path` from the page cache when the request is a cold one
        (msg["cold"]: the method, see _cold.drop_page_cache); returns the method used."""
        method = msg.get("cold")
        return _cold.drop_page_cache([path], method) if method else None

    def op_read_all(self, msg):
        variant = msg["variant"]
        ds = self.datasets[variant]
        path = self.read_path(variant)
        h = self.lib.open(path)
        cold = self._cold(msg, path)
        seconds, out = self._timed(lambda: self.lib.read_all(h))
        ok = C.check_equal(out, ds, expected_cache=self.expected(variant))
        return {"seconds": seconds, "ok": ok, "nchunks": ds.nchunks(), "cold": cold}

    def op_read_chunks(self, msg):
        variant = msg["variant"]
        ds = self.datasets[variant]
        regions = ds.regions(ds.read_block)
        path = self.read_path(variant)
        h = self.lib.open(path)
        exp = self.expected(variant)
        cold = self._cold(msg, path)  # once: the blocks are read in order, each once
        # As a streaming reader would: read a block, use it (here: check it), drop it. Only
        # the reads are timed, and memory stays at one block.
        seconds = 0.0
        ok = True
        for sel in regions:
            t, out = self._timed(lambda: self.lib.read_region(h, sel))
            seconds += t
            ok = C.check_equal(out, ds, sel, exp) and ok
            del out
        return {"seconds": seconds, "ok": ok, "nblocks": len(regions), "cold": cold}

    def op_roundtrip(self, msg):
        """Open `variant`, read it whole, create a new array like it and write the data there
        (with msg["stream"]: copy it there with the library's own array-to-array copy), all
        timed, with the peak RSS above the RSS at the start. The copy is checked afterwards
        by run.py (verify)."""
        variant = msg["variant"]
        ds = self.datasets[variant]
        src = self.read_path(variant)
        stream = msg.get("stream")
        dst = C.write_path(self.args.data_dir, self.lib.name,
                           f"{variant}-{'stream' if stream else 'copy'}")
        C.set_aside(dst, self.args.data_dir)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        cold = self._cold(msg, src)

        def roundtrip():
            if stream:
                self.lib.copy(self.lib.open(src), dst, ds)
                return
            data = self.lib.read_all(self.lib.open(src))
            self.lib.write_all(self.lib.create(dst, ds), data)

        gc.collect()
        # Memory a library keeps from earlier rounds would hide this round's peak.
        getattr(self.lib, "release_kept_memory", lambda: None)()
        C.reset_peak_rss()
        before = _current_rss()
        seconds, _ = self._timed(roundtrip)
        return {"seconds": seconds, "ok": None, "path": dst, "nchunks": ds.nchunks(),
                "peak_rss_increase": C.peak_rss() - before, "cold": cold}

    def op_write_all(self, msg):
        variant = msg["variant"]
        ds = self.datasets[variant]
        path = C.write_path(self.args.data_dir, self.lib.name, variant)
        data = self.expected(variant)
        C.set_aside(path, self.args.data_dir)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        h = self.lib.create(path, ds)
        seconds, _ = self._timed(lambda: self.lib.write_all(h, data))
        del h
        return {"seconds": seconds, "ok": None, "path": path, "nchunks": ds.nchunks()}

    def op_encode_floor(self, msg):
        """The compute floor of writing `variant`: zstd at its level (0 means 3) of every (inner)
        chunk, from contiguous copies, on as many threads as CPUs, each taking the next chunk
        as it is free (python-zstandard, GIL released)."""
        import zstandard

        variant = msg["variant"]
        ds = self.datasets[variant]
        if variant not in self._chunks:
            exp = self.expected(variant)
            self._chunks = {variant: [np.ascontiguousarray(exp[sel]) for sel in ds.regions(ds.chunks)]}
        chunks = self._chunks[variant]
        level = int(msg.get("level", 3))
        nthreads = os.cpu_count() or 1
        compressors = [zstandard.ZstdCompressor(level=level) for _ in range(nthreads)]
        claim = iter(range(len(chunks)))  # next() on it is atomic under the GIL

        def work(k):
            for i in claim:
                compressors[k].compress(chunks[i])

        def run():
            threads = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        seconds, _ = self._timed(run)
        return {"seconds": seconds, "ok": None, "nchunks": len(chunks), "threads": nthreads}

    def op_verify(self, msg):
        """Read the array at msg["path"] with this library and compare with the expected data."""
        ds = self.datasets[msg["variant"]]
        h = self.lib.open(msg["path"])
        out = self.lib.read_all(h)
        return {"ok": C.check_equal(out, ds, expected_cache=self.expected(msg["variant"]))}

    def op_generate(self, msg):
        """Write the reference copy of a dataset (done once, by zarr-python)."""
        variant = msg["variant"]
        ds = self.datasets[variant]
        path = msg["path"]
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        h = self.lib.create(path, ds)
        self.lib.write_all(h, self.expected(variant))
        ok = C.check_equal(self.lib.read_all(self.lib.open(path)), ds,
                           expected_cache=self.expected(variant))
        return {"ok": ok}

    def op_threads(self, msg):
        """`nthreads` user threads read disjoint inner chunks of the sharded variant, with the
        library's own pool limited to one thread where it has a knob for that."""
        variant = msg.get("variant", "sharded")
        nthreads = int(msg["nthreads"])
        ds = self.datasets[variant]
        regions = ds.regions(ds.chunks)
        # Contiguous runs of inner chunks, one per thread, so threads mostly read their own shards.
        bounds = [round(k * len(regions) / nthreads) for k in range(nthreads + 1)]
        groups = [regions[bounds[k]:bounds[k + 1]] for k in range(nthreads)]
        results = [[] for _ in range(nthreads)]
        errors = []
        with self.lib.pool_of_one():
            h = self.lib.open(self.read_path(variant))
            barrier = threading.Barrier(nthreads + 1)

            def work(k):
                try:
                    barrier.wait()
                    out = results[k]
                    for sel in groups[k]:
                        out.append(self.lib.read_region(h, sel))
                except BaseException as e:  # reported below
                    errors.append(f"{type(e).__name__}: {e}")

            threads = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
            for t in threads:
                t.start()
            gc.collect()
            gc.disable()
            try:
                barrier.wait()
                t0 = time.perf_counter()
                for t in threads:
                    t.join()
                seconds = time.perf_counter() - t0
            finally:
                gc.enable()
        if errors:
            raise RuntimeError(errors[0])
        exp = self.expected(variant)
        ok = all(C.check_equal(o, ds, sel, exp)
                 for k in range(nthreads) for o, sel in zip(results[k], groups[k]))
        return {"seconds": seconds, "ok": ok, "nchunks": len(regions)}

    def serve(self):
        serve_ops(self)


def serve_ops(worker):
    """Answer the orchestrator's JSON lines on stdin until {"op": "quit"}: each message
    {"op": name, ...} calls worker.op_<name>(msg), whose dict (with "error") goes back as one
    line. Replies go to the real stdout; anything a library prints goes to stderr (the log)."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if msg["op"] == "quit":
            break
        try:
            result = getattr(worker, "op_" + msg["op"])(msg)
            result["error"] = None
        except Exception as e:  # reported to the orchestrator
            traceback.print_exc()
            result = {"error": f"{type(e).__name__}: {e}".strip()[:500]}
        reply.write(json.dumps(result) + "\n")
        sys.stderr.flush()


# -- one-shot modes ---------------------------------------------------------------------------------

def _current_rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_main(args):
    """Peak RSS of one whole-array read, in a fresh process."""
    out = {"lib": args.lib, "variant": args.variant}
    try:
        lib = ADAPTERS[args.lib](args)
        ds = C.make_datasets(args.n, args.small_n)[args.variant]
        path = C.reference_path(args.data_dir, args.n, args.small_n, args.variant)
        h = lib.open(path)
        # A one-element read first, so lazy imports and pools are not counted as the read's.
        lib.read_region(h, tuple(slice(0, 1) for _ in ds.shape))
        gc.collect()
        C.reset_peak_rss()
        out["rss_before"] = _current_rss()
        out["maxrss_before"] = C.peak_rss()
        data = lib.read_all(h)
        out["maxrss_peak"] = C.peak_rss()
        out["rss_after"] = _current_rss()
        out["output_bytes"] = ds.nbytes
        # Checked after the peak was taken; the check works in slabs and allocates little.
        out["ok"] = C.check_equal(data, ds)
        out["error"] = None
    except Exception as e:
        traceback.print_exc()
        out["error"] = f"{type(e).__name__}: {e}"[:500]
    print(json.dumps(out), flush=True)


def _chunk_files(path):
    files = []
    for root, _, names in os.walk(path):
        for name in names:
            if name != "zarr.json":
                files.append(os.path.join(root, name))
    return sorted(files)


def _spin_after(start, n):
    start.wait()
    x = 0
    for i in range(n):
        x += i


def _cpu_scaling(n=4_000_000, trials=5):
    """The same pure-Python loop run whole in one process, then split between two (nothing
    shared): how much faster two cores are than one on this machine now. Returns the ratio of
    the best times and the range of single trials' ratios."""
    ctx = multiprocessing.get_context("fork")

    def run(k):
        start = ctx.Barrier(k + 1)
        return C.time_released_together(
            [ctx.Process(target=_spin_after, args=(start, n // k)) for _ in range(k)], start)

    pairs = [(run(1), run(2)) for _ in range(trials)]
    ratios = [a / b for a, b in pairs]
    return min(a for a, _ in pairs) / min(b for _, b in pairs), min(ratios), max(ratios)


def limits_main(args):
    """What the machine can do at best: the floors under the workloads."""
    out = {}
    best, low, high = _cpu_scaling()
    out["cpu_scaling_2"], out["cpu_scaling_2_low"], out["cpu_scaling_2_high"] = best, low, high
    ds = C.make_datasets(args.n, args.small_n)
    nbytes = ds["plain"].nbytes
    try:
        files = _chunk_files(C.reference_path(args.data_dir, args.n, args.small_n, "plain"))
        total = sum(os.path.getsize(f) for f in files)
        buf = bytearray(max(os.path.getsize(f) for f in files))

        def read_files():
            for f in files:
                with open(f, "rb", buffering=0) as fh:
                    fh.readinto(buf)

        out["file_read_gbps"] = total / C.best_time(read_files) / 1e9
    except Exception as e:
        out["file_read_error"] = str(e)

    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes, dtype=np.uint8)
    out["memcpy_gbps"] = nbytes / C.best_time(lambda: np.copyto(dst, src)) / 1e9
    del src, dst

    def touch():
        a = np.empty(nbytes, dtype=np.uint8)
        a[::4096] = 1

    out["touch_output_seconds"] = C.best_time(touch)
    out["output_bytes"] = nbytes

    try:
        from numcodecs import Zstd

        files = _chunk_files(C.reference_path(args.data_dir, args.n, args.small_n, "zstd"))
        blobs = []
        for f in files:
            with open(f, "rb") as fh:
                blobs.append(fh.read())
        codec = Zstd(level=0)
        decoded = [np.frombuffer(codec.decode(b), dtype=np.uint8) for b in blobs]
        raw = sum(d.nbytes for d in decoded)
        outs = [np.empty_like(d) for d in decoded]

        def decode_all():
            for b, o in zip(blobs, outs):
                codec.decode(b, out=o)

        out["zstd_decode_gbps_1thread"] = raw / C.best_time(decode_all) / 1e9

        def encode_all():
            for d in decoded:
                codec.encode(d)

        out["zstd_encode_gbps_1thread"] = raw / C.best_time(encode_all) / 1e9
        out["zstd_ratio"] = raw / sum(len(b) for b in blobs)

        # The sharded variant's inner chunks compress 5x less and code slower than big chunks.
        sharded = ds["sharded"]
        cube = ds["sharded"].expected()
        inner = [np.ascontiguousarray(cube[sel]) for sel in sharded.regions(sharded.chunks)]
        del cube
        inner_blobs = [codec.encode(a) for a in inner]
        inner_outs = [np.empty_like(a) for a in inner]

        def decode_inner():
            for b, o in zip(inner_blobs, inner_outs):
                codec.decode(b, out=o)

        def encode_inner():
            for a in inner:
                codec.encode(a)

        raw = sum(a.nbytes for a in inner)
        out["inner_decode_gbps_1thread"] = raw / C.best_time(decode_inner) / 1e9
        out["inner_encode_gbps_1thread"] = raw / C.best_time(encode_inner) / 1e9
        out["inner_ratio"] = raw / sum(len(b) for b in inner_blobs)
    except Exception as e:
        out["zstd_error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("serve", "rss", "limits"))
    p.add_argument("--lib", choices=sorted(ADAPTERS))
    p.add_argument("--variant")
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--small-n", type=int, default=1000)
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--read-from", choices=("ref", "own"), default="ref")
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto")
    args = p.parse_args(argv)
    if args.mode == "serve":
        Server(args).serve()
    elif args.mode == "rss":
        rss_main(args)
    else:
        limits_main(args)


if __name__ == "__main__":
    main()
