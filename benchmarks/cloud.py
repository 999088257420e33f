#!/usr/bin/env python3
"""Cloud benchmark: zarrcore beside tensorstore, zarr-python 3 (fsspec and obstore stores;
default and fused pipelines) and zarrs-python, over an emulated network link with 20 ms each
way (RTT 40 ms) on every packet (benchmarks/_link.py; root).

    python benchmarks/cloud.py                         # N=512, best of 3 (the measurement)
    python benchmarks/cloud.py --n 128 --repeats 1 --samples 20   # a smoke run
    python benchmarks/cloud.py --contenders zarrcore,tensorstore --workloads whole,slabs

The servers run in the link's network namespace: nginx (Debian's: `apt-get install -y nginx`),
started from a configuration file of its own, serving the datasets' directory with byte
ranges and keep-alive; and moto's S3 server (a Python process). Clients stay on this side.

Data (generated once into benchmarks/data/cloud/n<N>/ by zarr-python): an N^3 float32 array
(512 MiB at N=512) of a smooth field quantized to 1/64 plus 2 bits of noise (zstd compresses
it about 2x), in three layouts: `sharded` (256^3 shards of 64^3 inner chunks, zstd, index
bytes+crc32c at the end), `zstd` (64^3 chunks) and `plain` (64^3 chunks, uncompressed), or
the sides given by --chunk and --shard (data in n<N>-c<chunk>-s<shard>/); and
for S3 its first (N/2)^3 corner (64 MiB) in the `zstd` and `sharded` layouts (one shard).

Workloads (over HTTP unless said): `whole` (a[...]; every layout), `box` (the middle half
along every axis, 1/8 of the array; sharded and zstd), `slabs` (48 time slabs a[t], one call
each, t spread over the first axis; sharded and zstd), `samples` (--samples random boxes of
(N/16)^3, 100 by default, one call each, one seeded list for all; sharded and zstd),
`s3_read` and `s3_write` (the 64 MiB array from and to moto's S3, zstd and sharded), and
`s3_rewrite` (the same write by a handle opened afresh onto the array written before: the
objects exist and their versions are unknown to it, as in a new process).

Connections: each peer opens the array afresh for every measurement, as each library's own
pooling then decides whether its connections are still open and warm (fsspec keeps one
aiohttp session per filesystem, zarrcore one client per endpoint, a new obstore store opens
new connections). On this link 8 fresh connections took 0.31 s to fetch 8 chunks of 0.53 MB
where kept ones took 0.07 s (slow start), so that choice shows in the small reads.

Contenders, one worker process each (zarr's global config, thread pools and memory never
mix): zarrcore at its defaults (zarrcore.open_array of the http:// or s3:// URL); tensorstore
(zarr3 driver, http and s3 kvstores); zarr-python 3.4 with `FsspecStore` (aiohttp, s3fs) and
with `ObjectStore` (obstore), each with its default and its fused codec pipeline;
zarrs-python (zarr-python with the zarrs pipeline, strict) over obstore and over fsspec. Every
peer runs each workload at its defaults and at --tuned requests in flight (tensorstore's
http/s3_request_concurrency, zarr's async.concurrency, zarrs' chunk_concurrent_minimum) and
counts at the better of the two. Rounds interleave: in each round every contender runs each
workload once, in an order that rotates; the best of --repeats rounds counts. Every read is
compared with numpy (a wrong one is marked WRONG and never counts); every write is read back
by zarr-python and compared.

Floors, from a worker of their own with plain clients: for reads, the needed bytes (whole
chunk objects, or the inner chunks' ranges of each shard) fetched by concurrent GETs with
aiohttp (--floor-connections connections; the best of one GET per inner chunk, one per run
of adjacent inner chunks, and runs split into GETs of at most --floor-split-mib, 4 MiB, so
that no single connection's window caps a large run), plus decoding them locally on all
CPUs (python-zstandard, each chunk copied into the output); one selection after another where
the workload goes one by one.
For writes, encoding every chunk locally (zstd level 3) on all CPUs, plus PUTting the objects
concurrently. CPU: the worker's user+system CPU seconds per GB of array data moved, in the
best round. HTTP rows count nginx's requests and bytes.

moto closes every connection after its answer (`Connection: close`), so every S3 request
pays a TCP handshake (one more round trip) and starts in slow start, and its Python server
caps the throughput. The S3 rows therefore hide how a client keeps connections warm and
grows windows, and bunch every client near moto's own ceiling.

Writes benchmarks/runs/<date>-cloud-n<N>.json (--out), and the section "Cloud: a 40 ms link"
of RESULTS.md (kept when run.py rewrites it).
"""
import argparse
import asyncio
import contextlib
import datetime
import json
import math
import os
import platform
import random
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common as C  # noqa: E402
import _link  # noqa: E402
import remote  # noqa: E402

BUCKET = remote.BUCKET
CREDENTIALS = remote.CREDENTIALS
HTTP_PORT, S3_PORT = 8080, 9000
LAYOUTS = ("sharded", "zstd", "plain")
CHUNK, SHARD = 64, 256  # (the default sides of chunks and shards)
# workload -> (the layouts it runs on, the transport)
WORKLOADS = {
    "whole": (("sharded", "zstd", "plain"), "http"),
    "box": (("sharded", "zstd"), "http"),
    "slabs": (("sharded", "zstd"), "http"),
    "samples": (("sharded", "zstd"), "http"),
    "s3_read": (("zstd", "sharded"), "s3"),
    "s3_write": (("zstd", "sharded"), "s3"),
    "s3_rewrite": (("zstd", "sharded"), "s3"),
}
CONTENDERS = ("zarrcore", "tensorstore", "zarr-python+fsspec", "zarr-python-fused+fsspec",
              "zarr-python+obstore", "zarr-python-fused+obstore", "zarrs-python+obstore",
              "zarrs-python+fsspec")
FLOOR = "floor"
N_SLABS = 48


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# -- the data -------------------------------------------------------------------------------------

def values(n, z0, z1, corner=None):
    """Rows z0:z1 of the N^3 array (float32): a smooth field quantized to 1/64 plus 2 bits of
    noise; `corner` limits y and x to [0, corner)."""
    m = corner or n
    z = np.arange(z0, z1, dtype=np.int64)[:, None, None]
    y = np.arange(m, dtype=np.int64)[None, :, None]
    x = np.arange(m, dtype=np.int64)[None, None, :]
    field = (np.sin(x / 13.0) * np.cos(y / 17.0) * 50.0 + z * 0.25)
    noise = ((x * 73856093 ^ y * 19349663 ^ z * 83492791) >> 7) & 3
    return (np.round(field * 64) / 64 + noise / 16.0).astype(np.float32)


def dataset(layout, n, args):
    """The C.Dataset of `layout` for an n^3 float32 array."""
    inner = min(args.chunk, n)
    shard = min(args.shard, n)
    if layout == "sharded":
        return C.Dataset(layout, (n,) * 3, "float32", (inner,) * 3, shards=(shard,) * 3)
    return C.Dataset(layout, (n,) * 3, "float32", (inner,) * 3, zstd=layout != "plain")


def s3_n(n):
    return n // 2


def size_tag(args):
    """n<N>, with the chunk and shard sides where they are not the defaults."""
    sides = (args.chunk, args.shard)
    layout = "" if sides == (CHUNK, SHARD) else f"-c{args.chunk}-s{args.shard}"
    return f"n{args.n}{layout}"


def s3_prefix(args, layout):
    """The key prefix of `layout`'s S3 copy in the bucket."""
    return f"{size_tag(args)}/s3-{layout}.zarr"


def data_root(args):
    return os.path.join(args.data_dir, "cloud", size_tag(args))


def expected_path(args, s3=False):
    return os.path.join(data_root(args), "expected-s3.npy" if s3 else "expected.npy")


def prepare(args):
    """Generate the expected arrays and write every layout with zarr-python, once."""
    root = data_root(args)
    os.makedirs(root, exist_ok=True)
    done = os.path.join(root, ".done")
    if os.path.exists(done) and not args.regenerate:
        return
    import zarr

    log(f"generating the N={args.n} datasets in {root}")
    n, h = args.n, s3_n(args.n)
    full = np.lib.format.open_memmap(expected_path(args) + ".tmp", mode="w+",
                                     dtype=np.float32, shape=(n,) * 3)
    for z0 in range(0, n, 16):
        full[z0:z0 + 16] = values(n, z0, min(n, z0 + 16))
    full.flush()
    os.replace(expected_path(args) + ".tmp", expected_path(args))
    corner = np.ascontiguousarray(full[:h, :h, :h])
    np.save(expected_path(args, s3=True), corner)
    for layout in LAYOUTS:
        for prefix, data, size in (("", full, n), ("s3-", corner, h)):
            if prefix and layout == "plain":
                continue
            ds = dataset(layout, size, args)
            path = os.path.join(root, f"{prefix}{layout}.zarr")
            shutil.rmtree(path, ignore_errors=True)
            a = zarr.create_array(store=path, shape=ds.shape, dtype=ds.dtype, chunks=ds.chunks,
                                  shards=ds.shards, compressors=ds.compressors() or None,
                                  fill_value=0)
            a[...] = data
    with open(done, "w") as f:
        f.write("ok\n")


def stored_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


# -- selections -----------------------------------------------------------------------------------

def selections(workload, n, samples=200):
    """The selections of a workload, read one call each, in order."""
    if workload in ("whole", "s3_read", "s3_write", "s3_rewrite"):
        return [(slice(None),) * 3]
    if workload == "box":
        return [(slice(n // 4, n // 4 + n // 2),) * 3]
    if workload == "slabs":
        return [(int(t),) for t in np.linspace(0, n - 1, N_SLABS).round().astype(int)]
    if workload == "samples":
        side = max(8, n // 16)
        rng = random.Random(62)
        return [tuple(slice(o, o + side) for o in (rng.randrange(n - side + 1)
                                                   for _ in range(3))) for _ in range(samples)]
    raise ValueError(workload)


def sel_nbytes(sel, shape, itemsize=4):
    full = sel + (slice(None),) * (len(shape) - len(sel))
    return math.prod(len(range(*s.indices(d))) if isinstance(s, slice) else 1
                     for s, d in zip(full, shape)) * itemsize


# -- servers in the namespace ---------------------------------------------------------------------

NGINX_CONF = """\
daemon off;
master_process on;
user root;
worker_processes {workers};
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format bench '$status $body_bytes_sent';
    access_log {tmp}/access.log bench;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    default_type application/octet-stream;
    server {{
        listen {addr}:{port} backlog=4096;
        root {root};
        location / {{ }}
    }}
}}
"""


class Servers:
    """nginx and moto in the link's namespace; `http_url`, `s3_url`; nginx's request count."""

    def __init__(self, link, root, tmp, uploads=(), nginx_workers=2, s3=True):
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(nginx):
            raise SystemExit("cloud.py needs nginx: apt-get update && apt-get install -y nginx")
        self.tmp = tmp
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(workers=nginx_workers, tmp=tmp, addr=link.server_addr,
                                      port=HTTP_PORT, root=os.path.abspath(root)))
        self.access_log = os.path.join(tmp, "access.log")
        self.nginx = link.spawn([nginx, "-c", conf, "-e", os.path.join(tmp, "error.log")])
        link.wait_port(HTTP_PORT, proc=self.nginx)
        self.http_url = f"http://{link.server_addr}:{HTTP_PORT}"
        self._log_pos, self._counts = 0, [0, 0]
        self.s3_url = None
        if not s3:
            return
        self.moto = link.spawn([sys.executable, os.path.abspath(__file__), "--serve-moto",
                                str(S3_PORT)], stdout=subprocess.DEVNULL)
        link.wait_port(S3_PORT, proc=self.moto, timeout=120)
        self.s3_url = f"http://{link.server_addr}:{S3_PORT}"
        for prefix, folder in uploads:
            remote.upload(self.s3_url, folder, prefix)

    def http_counts(self):
        """(requests, bytes) nginx has logged so far."""
        with contextlib.suppress(OSError), open(self.access_log, "rb") as f:
            f.seek(self._log_pos)
            text = f.read()
            end = text.rfind(b"\n") + 1
            self._log_pos += end
            for line in text[:end].splitlines():
                parts = line.split()
                if len(parts) == 2:
                    self._counts[0] += 1
                    self._counts[1] += int(parts[1])
        return tuple(self._counts)


def serve_moto(port):
    """moto's S3 server on every address of this namespace, charging range GETs by their
    length (remote.py's patch); until SIGTERM."""
    for k, v in CREDENTIALS.items():
        os.environ.setdefault(k, v)
    import logging

    import werkzeug.serving
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    werkzeug.serving.WSGIRequestHandler.disable_nagle_algorithm = True
    remote._charge_ranges_by_length()
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # (the server's threads inherit it)
    server = ThreadedMotoServer(ip_address="0.0.0.0", port=port, verbose=False)
    server.start()
    signal.sigwait(stop)
    server.stop()


# -- contenders (in the worker processes) --------------------------------------------------------

def threads_of(cfg):
    """K of a config "threadsK" (the library's pool held at K threads: scaling.py), else
    None."""
    return int(cfg[7:]) if cfg.startswith("threads") else None


class Contender:
    """One library over one kind of store ("http", "s3", or "local": a directory below
    args.local_root); opened at a config: "default", "tuned" (--tuned requests in flight) or
    "threadsK" (its pool of threads held at K)."""
    configs = ("default", "tuned")

    def supports(self, kind):
        return True

    def __init__(self, args):
        self.args = args
        self.http = getattr(args, "http_url", None)
        self.s3 = getattr(args, "s3_url", None)

    def url(self, kind, prefix):
        if kind == "local":
            return os.path.join(self.args.local_root, prefix)
        return f"{self.http}/{prefix}" if kind == "http" else f"s3://{BUCKET}/{prefix}"

    @contextlib.contextmanager
    def config(self, cfg):
        yield


class Zarrcore(Contender):
    name = "zarrcore"
    configs = ("default",)

    def __init__(self, args):
        super().__init__(args)
        from _worker import _import_zarrcore
        self.zc = _import_zarrcore(args.zarrcore)

    @contextlib.contextmanager
    def config(self, cfg):
        k = threads_of(cfg)
        if k is None:
            yield
            return
        old = self.zc.config.num_threads
        self.zc.config.set(num_threads=k)
        try:
            yield
        finally:
            self.zc.config.set(num_threads=old)

    def options(self, kind):
        if kind in ("http", "local"):
            return None
        return {"endpoint": self.s3, "access_key_id": "bench", "secret_access_key": "bench",
                "region": "us-east-1"}

    def open(self, kind, prefix, cfg, write=False):
        return self.zc.open_array(self.url(kind, prefix), mode="r+" if write else "r",
                                  storage_options=self.options(kind))

    def read(self, h, sel):
        return h[sel]

    def create(self, kind, prefix, ds, cfg):
        return self.zc.create_array(
            self.url(kind, prefix), storage_options=self.options(kind), shape=ds.shape,
            dtype=ds.dtype, chunks=ds.chunks, shards=ds.shards,
            compressors=ds.compressors() or None, fill_value=0, overwrite=True)

    def write(self, h, data):
        h[...] = data

    def version(self):
        return getattr(self.zc, "__version__", "?")


class TensorStore(Contender, remote.TensorStore):
    name = "tensorstore"

    def __init__(self, args):
        Contender.__init__(self, args)
        remote.TensorStore.__init__(self)
        t = getattr(args, "tuned", None) or 128
        self.contexts = {
            "default": self.ts.Context(),
            "tuned": self.ts.Context({"http_request_concurrency": {"limit": t},
                                      "s3_request_concurrency": {"limit": t}}),
        }

    def context(self, cfg):
        if cfg not in self.contexts:
            k = threads_of(cfg)
            self.contexts[cfg] = self.ts.Context({"data_copy_concurrency": {"limit": k},
                                                  "file_io_concurrency": {"limit": k}})
        return self.contexts[cfg]

    def _kv(self, kind, prefix):
        if kind == "local":
            return {"driver": "file", "path": self.url(kind, prefix) + "/"}
        return self.kvstore(kind, self.http if kind == "http" else self.s3, prefix)

    def open(self, kind, prefix, cfg, write=False):
        spec = {"driver": "zarr3", "kvstore": self._kv(kind, prefix)}
        return self.ts.open(spec, read=True, write=write, context=self.context(cfg)).result()

    def create(self, kind, prefix, ds, cfg):
        spec = {"driver": "zarr3", "kvstore": self._kv(kind, prefix),
                "metadata": ds.metadata_json()}
        return self.ts.open(spec, create=True, delete_existing=True,
                            context=self.context(cfg)).result()

    def version(self):
        import importlib.metadata
        return importlib.metadata.version("tensorstore")


class ZarrPython(Contender):
    """zarr-python with the pipeline of `lib` over `store` ("fsspec" or "obstore")."""

    def __init__(self, args, lib, store):
        super().__init__(args)
        self.name = f"{lib}+{store}"
        self.lib, self.store_kind = lib, store
        self.zarr = C.use_zarr_pipeline(lib)  # for the whole process

    @contextlib.contextmanager
    def config(self, cfg):
        if cfg == "default":
            yield
            return
        k = threads_of(cfg)
        if k is not None:
            settings = {"threading.max_workers": k}
            if self.lib == "zarr-python-fused":
                settings["codec_pipeline.max_workers"] = k
        else:
            t = self.args.tuned
            settings = {"async.concurrency": t}
            if self.lib == "zarrs-python":
                settings["codec_pipeline.chunk_concurrent_minimum"] = t
        with self.zarr.config.set(settings):
            yield

    def supports(self, kind):
        # zarrs-python reads fsspec's HTTPFileSystem only (NotImplementedError otherwise).
        return not (self.lib == "zarrs-python" and self.store_kind == "fsspec" and kind == "s3")

    def _store(self, kind, prefix, read_only):
        if kind == "local":
            return self.zarr.storage.LocalStore(self.url(kind, prefix), read_only=read_only)
        if self.store_kind == "obstore":
            base = self.http if kind == "http" else self.s3
            return self.zarr.storage.ObjectStore(remote.obstore_store(kind, base, prefix),
                                                 read_only=read_only)
        options = {} if kind == "http" else {
            "key": "bench", "secret": "bench",
            "client_kwargs": {"endpoint_url": self.s3, "region_name": "us-east-1"}}
        return self.zarr.storage.FsspecStore.from_url(self.url(kind, prefix),
                                                      storage_options=options,
                                                      read_only=read_only)

    def open(self, kind, prefix, cfg, write=False):
        with self.config(cfg):
            return self.zarr.open_array(store=self._store(kind, prefix, not write),
                                        mode="r+" if write else "r")

    def read(self, h, sel):
        if self.lib == "zarrs-python" and any(isinstance(s, int) for s in sel):
            # zarrs-python 0.2.3 refuses an integer index of an unsharded array
            # (UnsupportedVIndexingError); the slice of one and dropping the axis is what
            # a user does instead.
            out = h[tuple(slice(s, s + 1) if isinstance(s, int) else s for s in sel)]
            return out[tuple(0 if isinstance(s, int) else slice(None) for s in sel)]
        return h[sel]

    def create(self, kind, prefix, ds, cfg):
        with self.config(cfg):
            return self.zarr.create_array(
                store=self._store(kind, prefix, False), shape=ds.shape, dtype=ds.dtype,
                chunks=ds.chunks, shards=ds.shards, compressors=ds.compressors() or None,
                fill_value=0, overwrite=True)

    def write(self, h, data):
        h[...] = data

    def version(self):
        import importlib.metadata
        v = f"zarr {self.zarr.__version__}"
        if self.lib == "zarrs-python":
            v += f", zarrs {importlib.metadata.version('zarrs')}"
        return v + ", " + ("obstore " + importlib.metadata.version("obstore")
                           if self.store_kind == "obstore"
                           else "fsspec " + importlib.metadata.version("fsspec"))


def make_contender(name, args):
    if name == "zarrcore":
        return Zarrcore(args)
    if name == "tensorstore":
        return TensorStore(args)
    lib, _, store = name.partition("+")
    if lib not in ("zarr-python", "zarr-python-fused", "zarrs-python") or store not in (
            "fsspec", "obstore"):
        raise ValueError(f"unknown contender {name!r}")
    return ZarrPython(args, lib, store)


# -- the floors (in a worker of their own) -----------------------------------------------------

def chunk_ranges(root, layout, ds, sel):
    """The stored pieces a selection needs: a list of (key, start, stop, chunk_selection,
    out_selection, compressed), start/stop None for a whole object. Read from the local
    copy (the shard indexes too)."""
    norm = []
    for s, d in zip(sel + (slice(None),) * (3 - len(sel)), ds.shape):
        if isinstance(s, int):
            norm.append(slice(s, s + 1))
        else:
            norm.append(slice(*s.indices(d)[:2]))
    squeeze = [isinstance(s, int) for s in sel] + [False] * (3 - len(sel))
    pieces = []
    c = ds.chunks
    ranges = [range(s.start // b, (s.stop - 1) // b + 1) for s, b in zip(norm, c)]
    shard_index = {}
    for idx in np.ndindex(*[len(r) for r in ranges]):
        cidx = tuple(r[i] for r, i in zip(ranges, idx))
        lo = [max(s.start, ci * b) for s, ci, b in zip(norm, cidx, c)]
        hi = [min(s.stop, (ci + 1) * b) for s, ci, b in zip(norm, cidx, c)]
        in_chunk = tuple(a - ci * b if sq else slice(a - ci * b, z - ci * b)
                         for a, z, ci, b, sq in zip(lo, hi, cidx, c, squeeze))
        out = tuple(slice(a - s.start, z - s.start)
                    for a, z, s, sq in zip(lo, hi, norm, squeeze) if not sq)
        if ds.shards:
            per = tuple(s // b for s, b in zip(ds.shards, c))
            sidx = tuple(ci // p for ci, p in zip(cidx, per))
            key = "c/" + "/".join(map(str, sidx))
            if key not in shard_index:
                path = os.path.join(root, key)
                size = os.path.getsize(path)
                count = math.prod(per)
                with open(path, "rb") as f:
                    f.seek(size - (16 * count + 4))
                    shard_index[key] = np.frombuffer(f.read(16 * count), "<u8").reshape(-1, 2)
            local = tuple(ci % p for ci, p in zip(cidx, per))
            off, nb = shard_index[key][np.ravel_multi_index(local, per)]
            pieces.append((key, int(off), int(off + nb), in_chunk, out, True))
        else:
            key = "c/" + "/".join(map(str, cidx))
            pieces.append((key, None, None, in_chunk, out, ds.zstd))
    return pieces


def _runs(pieces):
    """Adjacent byte ranges of one object merged: [(key, start, stop)]."""
    by_key = {}
    for key, a, z, *_ in pieces:
        by_key.setdefault(key, []).append((a, z))
    out = []
    for key, spans in by_key.items():
        if spans[0][0] is None:
            out.append((key, None, None))
            continue
        spans.sort()
        a, z = spans[0]
        for a2, z2 in spans[1:]:
            if a2 <= z:
                z = max(z, z2)
            else:
                out.append((key, a, z))
                a, z = a2, z2
        out.append((key, a, z))
    return out


def _split_runs(pieces, limit):
    """Adjacent byte ranges of one object merged up to `limit` bytes a request (whole pieces
    each): a long run spread over several connections, as one connection's window caps it."""
    out = []
    for key, a, z in _runs(pieces):
        if a is None or z - a <= limit:
            out.append((key, a, z))
            continue
        spans = sorted((a2, z2) for k2, a2, z2, *_ in pieces if k2 == key and a <= a2 < z)
        lo, hi = spans[0]
        for a2, z2 in spans[1:]:
            if z2 - lo > limit:
                out.append((key, lo, hi))
                lo = a2
            hi = max(hi, z2)
        out.append((key, lo, hi))
    return out


def _pieces_of(pieces, requests, bodies):
    """Each piece's bytes, cut from the bodies of `requests` (which cover them)."""
    by_key = {}
    for (key, a, z), body in zip(requests, bodies):
        by_key.setdefault(key, []).append((a, z, body))
    out = []
    for key, a, z, *_ in pieces:
        for a2, z2, body in by_key[key]:
            if a is None:
                out.append(body)
                break
            if a2 <= a and z <= z2:
                out.append(memoryview(body)[a - a2:z - a2])
                break
    return out


class Floor:
    name = FLOOR
    configs = ("default",)

    def __init__(self, args):
        import aiohttp
        import zstandard
        self.args = args
        self.aiohttp, self.zstd = aiohttp, zstandard
        self.loop = asyncio.new_event_loop()
        self.session = None
        self.pool = ThreadPoolExecutor(os.cpu_count() or 1)
        self.local = threading.local()

    def version(self):
        import importlib.metadata
        return f"aiohttp {importlib.metadata.version('aiohttp')}"

    async def _session(self):
        if self.session is None:
            connector = self.aiohttp.TCPConnector(limit=self.args.floor_connections,
                                                  force_close=False)
            self.session = self.aiohttp.ClientSession(
                connector=connector, timeout=self.aiohttp.ClientTimeout(total=600))
        return self.session

    def _signed(self, method, url, headers):
        """`headers` with an AWS signature (version 4, payload unsigned) for S3 URLs."""
        if not url.startswith(self.args.s3_url):
            return headers
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        req = AWSRequest(method=method, url=url,
                         headers={**headers, "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})
        SigV4Auth(Credentials("bench", "bench"), "s3", "us-east-1").add_auth(req)
        return dict(req.headers.items())

    async def _get(self, url, a, z):
        session = await self._session()
        headers = {} if a is None else {"Range": f"bytes={a}-{z - 1}"}
        async with session.get(url, headers=self._signed("GET", url, headers)) as r:
            r.raise_for_status()
            return await r.read()

    async def _put(self, url, body):
        session = await self._session()
        async with session.put(url, data=body, headers=self._signed("PUT", url, {})) as r:
            r.raise_for_status()
            await r.read()

    def close(self):
        if self.session is not None:
            self.loop.run_until_complete(self.session.close())

    def fetch(self, base, ranges):
        async def go():
            return await asyncio.gather(*(self._get(f"{base}/{key}", a, z)
                                          for key, a, z in ranges))
        return self.loop.run_until_complete(go())

    def put_all(self, base, objects):
        async def go():
            await asyncio.gather(*(self._put(f"{base}/{key}", body)
                                   for key, body in objects.items()))
        self.loop.run_until_complete(go())

    def _decompressor(self):
        d = getattr(self.local, "d", None)
        if d is None:
            d = self.local.d = self.zstd.ZstdDecompressor()
        return d

    def decode(self, blobs, pieces, ds, out):
        """Decode every piece's bytes (or take them as they are) and copy the selected part
        into `out`, on all CPUs."""
        chunk_shape = ds.chunks

        def one(i):
            key, a, z, in_chunk, where, compressed = pieces[i]
            raw = blobs[i]
            if compressed:
                raw = self._decompressor().decompress(raw)
            chunk = np.frombuffer(raw, ds.dtype).reshape(chunk_shape)
            out[where] = chunk[in_chunk]

        list(self.pool.map(one, range(len(pieces))))


# -- the worker -----------------------------------------------------------------------------------

class Worker:
    def __init__(self, args):
        self.args = args
        for k, v in CREDENTIALS.items():
            os.environ.setdefault(k, v)
        self.c = Floor(args) if args.worker == FLOOR else make_contender(args.worker, args)
        self.expected = np.load(expected_path(args), mmap_mode="r")
        self.expected_s3 = np.load(expected_path(args, s3=True))
        self.root = data_root(args)

    def op_hello(self, msg):
        return {"version": self.c.version(), "pid": os.getpid()}

    def _timed(self, fn):
        import gc
        gc.collect()
        gc.disable()
        try:
            t0, c0 = time.perf_counter(), os.times()
            result = fn()
            seconds, c1 = time.perf_counter() - t0, os.times()
        finally:
            gc.enable()
        return seconds, (c1.user - c0.user) + (c1.system - c0.system), result

    def op_run(self, msg):
        time.sleep(self.args.settle)  # (nothing of the measurement before still in flight)
        workload, layout, cfg = msg["workload"], msg["layout"], msg["config"]
        kind = WORKLOADS[workload][1]
        n = self.args.n if kind == "http" else s3_n(self.args.n)
        ds = dataset(layout, n, self.args)
        expected = self.expected if kind == "http" else self.expected_s3
        sels = selections(workload, n, self.args.samples)
        gb = sum(sel_nbytes(s, ds.shape) for s in sels) / 1e9
        if isinstance(self.c, Floor):
            return self._floor(workload, layout, kind, ds, expected, sels, gb)
        c = self.c
        if not c.supports(kind):
            return {"skipped": f"{c.name} does not read {kind} stores"}
        if workload in ("s3_write", "s3_rewrite"):
            prefix = f"write/{c.name}-{cfg}/{layout}.zarr"
            h = c.create(kind, prefix, ds, cfg)
            data = expected
            if workload == "s3_rewrite":
                with c.config(cfg):
                    c.write(h, data[::-1])  # (other bytes than the timed write's)
                h = c.open(kind, prefix, cfg, write=True)
            with c.config(cfg):
                seconds, cpu, _ = self._timed(lambda: c.write(h, data))
            ok = self._verify_write(prefix, expected)
            return {"seconds": seconds, "cpu": cpu, "gb": gb, "ok": ok}
        prefix = f"{layout}.zarr" if kind == "http" else s3_prefix(self.args, layout)
        h = c.open(kind, prefix, cfg)

        def run():
            return [np.asarray(c.read(h, s)) for s in sels]

        with c.config(cfg):
            seconds, cpu, outs = self._timed(run)
        ok = all(o.shape == expected[s].shape and np.array_equal(o, expected[s])
                 for o, s in zip(outs, sels))
        return {"seconds": seconds, "cpu": cpu, "gb": gb, "ok": bool(ok)}

    def _verify_write(self, prefix, expected):
        import obstore.store as obs
        import zarr
        store = obs.S3Store(BUCKET, prefix=prefix, endpoint=self.args.s3_url,
                            region="us-east-1", access_key_id="bench",
                            secret_access_key="bench", virtual_hosted_style_request=False,
                            client_options={"allow_http": True, "timeout": "300s"})
        with zarr.config.set({"codec_pipeline.path":
                              "zarr.core.codec_pipeline.BatchedCodecPipeline"}):
            a = zarr.open_array(store=zarr.storage.ObjectStore(store, read_only=True), mode="r")
            return bool(np.array_equal(a[...], expected))

    def _floor(self, workload, layout, kind, ds, expected, sels, gb):
        f = self.c
        if workload in ("s3_write", "s3_rewrite"):
            return self._write_floor(layout, ds, expected, gb)
        if kind == "http":
            base, root = self.args.http_url + f"/{layout}.zarr", os.path.join(
                self.root, f"{layout}.zarr")
        else:
            prefix = s3_prefix(self.args, layout)
            base, root = f"{self.args.s3_url}/{BUCKET}/{prefix}", os.path.join(
                self.root, f"s3-{layout}.zarr")
        plans = [chunk_ranges(root, layout, ds, s) for s in sels]
        outs = [np.empty(expected[s].shape, ds.dtype) for s in sels]
        # The fetch: each selection's pieces at once, one selection after another; the
        # better of one GET per piece and one per run of adjacent pieces.
        best_fetch, blobs_all = None, None
        ways = {"pieces": lambda p: [(k, a, z) for k, a, z, *_ in p], "runs": _runs,
                "split": lambda p: _split_runs(p, self.args.floor_split_mib << 20)}
        for how, way in ways.items():
            time.sleep(self.args.settle)  # (as before every measurement: see --settle)
            requests = [way(pieces) for pieces in plans]
            if how == "split" and requests == [_runs(p) for p in plans]:
                continue  # (nothing to split)
            seconds, cpu_f, bodies = self._timed(
                lambda: [f.fetch(base, reqs) for reqs in requests])
            if best_fetch is None or seconds < best_fetch[0]:
                best_fetch = (seconds, cpu_f, how, sum(map(len, requests)))
                blobs_all = [_pieces_of(pieces, reqs, got)
                             for pieces, reqs, got in zip(plans, requests, bodies)]

        def decode():
            for pieces, blobs, out in zip(plans, blobs_all, outs):
                f.decode(blobs, pieces, ds, out)

        dec_s, dec_cpu, _ = self._timed(decode)
        ok = all(np.array_equal(o, expected[s]) for o, s in zip(outs, sels))
        return {"seconds": best_fetch[0] + dec_s, "fetch": best_fetch[0], "decode": dec_s,
                "how": best_fetch[2], "cpu": best_fetch[1] + dec_cpu, "gb": gb, "ok": bool(ok),
                "requests": best_fetch[3]}

    def _write_floor(self, layout, ds, data, gb):
        """zstd level 3 of every chunk on all CPUs (the shard assembled with its index), then
        every object PUT at once."""
        import zstandard
        f = self.c
        regions = ds.regions(ds.chunks)
        pieces = [np.ascontiguousarray(data[r]) for r in regions]
        local = threading.local()

        def comp(i):
            c = getattr(local, "c", None)
            if c is None:
                c = local.c = zstandard.ZstdCompressor(level=3)
            return c.compress(pieces[i])

        def encode():
            blobs = list(f.pool.map(comp, range(len(pieces))))
            objects = {}
            if not ds.shards:
                for r, b in zip(regions, blobs):
                    objects["c/" + "/".join(str(s.start // c) for s, c in
                                            zip(r, ds.chunks))] = b
                return objects
            per = tuple(s // c for s, c in zip(ds.shards, ds.chunks))
            shards = {}
            for r, b in zip(regions, blobs):
                cidx = tuple(s.start // c for s, c in zip(r, ds.chunks))
                key = "c/" + "/".join(str(ci // p) for ci, p in zip(cidx, per))
                local_i = np.ravel_multi_index(tuple(ci % p for ci, p in zip(cidx, per)), per)
                shards.setdefault(key, {})[local_i] = b
            for key, parts in shards.items():
                index = np.full((math.prod(per), 2), 2**64 - 1, "<u8")
                body, off = [], 0
                for i in sorted(parts):
                    index[i] = (off, len(parts[i]))
                    body.append(parts[i])
                    off += len(parts[i])
                # (the crc32c of the index is four bytes the floor does not compute)
                objects[key] = b"".join(body) + index.tobytes() + b"\0\0\0\0"
            return objects

        enc_s, enc_cpu, objects = self._timed(encode)
        base = f"{self.args.s3_url}/{BUCKET}/write/floor/{layout}.zarr"
        put_s, put_cpu, _ = self._timed(lambda: f.put_all(base, objects))
        return {"seconds": enc_s + put_s, "encode": enc_s, "put": put_s,
                "cpu": enc_cpu + put_cpu, "gb": gb, "ok": True, "requests": len(objects)}

    def serve(self):
        from _worker import serve_ops
        serve_ops(self)
        getattr(self.c, "close", lambda: None)()


def worker_main(args):
    Worker(args).serve()


# -- the orchestrator -----------------------------------------------------------------------------

class WorkerProcess:
    """A worker seen from the orchestrator; restarted after a timeout."""

    def __init__(self, name, argv, env=None):
        self.name, self.argv, self.env = name, argv, env
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.argv + ["--worker", self.name], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1, env=self.env)

    def call(self, msg, timeout):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.stop()
            return {"error": f"no answer within {timeout:g} s"}
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            return {"error": "the worker died"}
        return json.loads(line)

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.proc.stdin.write('{"op": "quit"}\n')
                self.proc.stdin.flush()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def cases(args):
    for workload in args.workloads:
        layouts, kind = WORKLOADS[workload]
        for layout in layouts:
            if layout in args.layouts:
                yield workload, layout


def run(args):
    prepare(args)
    root = data_root(args)
    uploads = [(s3_prefix(args, layout), os.path.join(root, f"s3-{layout}.zarr"))
               for layout in ("zstd", "sharded")]
    names = list(args.contenders) + ([FLOOR] if args.floors else [])
    started = time.time()
    load0 = os.getloadavg()
    with _link.Link(delay_ms=args.delay, rate_mbit=args.rate_mbit) as link, \
            tempfile.TemporaryDirectory(prefix="zc-cloud-") as tmp:
        log(f"link up: {args.delay:g} ms each way; starting nginx and moto")
        servers = Servers(link, root, tmp, uploads)
        args.http_url, args.s3_url = servers.http_url, servers.s3_url
        argv = [sys.executable, os.path.abspath(__file__), "--n", str(args.n), "--chunk",
                str(args.chunk), "--shard", str(args.shard), "--samples",
                str(args.samples), "--tuned", str(args.tuned), "--data-dir", args.data_dir,
                "--zarrcore", args.zarrcore, "--floor-connections", str(args.floor_connections),
                "--floor-split-mib", str(args.floor_split_mib),
                "--settle", str(args.settle),
                "--http-url", servers.http_url, "--s3-url", servers.s3_url]
        # The S3 credentials in files as well as in the environment: tensorstore's AWS
        # library otherwise logs each missing file on every open.
        aws = {"AWS_SHARED_CREDENTIALS_FILE": os.path.join(tmp, "aws-credentials"),
               "AWS_CONFIG_FILE": os.path.join(tmp, "aws-config")}
        with open(aws["AWS_SHARED_CREDENTIALS_FILE"], "w") as f:
            f.write("[default]\naws_access_key_id = bench\naws_secret_access_key = bench\n")
        with open(aws["AWS_CONFIG_FILE"], "w") as f:
            f.write("[default]\nregion = us-east-1\n")
        env = {**os.environ, **CREDENTIALS, **aws}
        workers = {name: WorkerProcess(name, argv, env) for name in names}
        versions, runs = {}, []
        try:
            for name, w in workers.items():
                r = w.call({"op": "hello"}, 300)
                if r.get("error"):
                    log(f"{name}: unavailable ({r['error']})")
                    continue
                versions[name] = r["version"]
            live = [n for n in names if n in versions]
            # Every peer twice (defaults, then tuned), as far apart as the list allows: a
            # process's connections are never reused straight from its previous measurement.
            slots = [(n, "default") for n in live] + [
                (n, "tuned") for n in live if n not in (FLOOR, "zarrcore")]
            for rnd in range(args.repeats):
                for workload, layout in cases(args):
                    k = rnd % len(slots)
                    skipped = set()
                    for name, cfg in slots[k:] + slots[:k]:
                        if name in skipped:
                            continue
                        before = servers.http_counts()
                        r = workers[name].call({"op": "run", "workload": workload,
                                                "layout": layout, "config": cfg},
                                               args.timeout)
                        after = servers.http_counts()
                        row = {"round": rnd, "workload": workload, "layout": layout,
                               "contender": name, "config": cfg, **r}
                        if WORKLOADS[workload][1] == "http" and name != FLOOR:
                            row["http_requests"] = after[0] - before[0]
                            row["http_bytes"] = after[1] - before[1]
                        if r.get("skipped"):
                            skipped.add(name)
                            continue
                        runs.append(row)
                        log(describe(row))
        finally:
            for w in workers.values():
                w.stop()
    stats = link.stats
    return {"n": args.n, "chunk": args.chunk, "shard": args.shard, "delay_ms": args.delay,
            "rate_mbit": args.rate_mbit,
            "repeats": args.repeats, "samples": args.samples, "tuned": args.tuned,
            "floor_connections": args.floor_connections,
            "floor_split_mib": args.floor_split_mib, "versions": versions,
            "contenders": names, "runs": runs, "link_stats": stats,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "loadavg_start": load0, "loadavg_end": os.getloadavg()},
            "stored_bytes": {f"{p}{lay}": stored_bytes(os.path.join(root, f"{p}{lay}.zarr"))
                             for lay in LAYOUTS for p in ("", "s3-")
                             if os.path.isdir(os.path.join(root, f"{p}{lay}.zarr"))},
            "started": datetime.datetime.fromtimestamp(started, datetime.timezone.utc)
            .strftime("%Y-%m-%d %H:%M UTC"), "seconds": round(time.time() - started)}


def describe(row):
    what = f"{row['workload']}/{row['layout']}: {row['contender']} ({row['config']})"
    if row.get("error"):
        return f"{what} failed: {row['error']}"
    text = f"{what} {row['seconds']:.3f} s, CPU {row['cpu']:.2f} s"
    if "http_requests" in row:
        text += f", {row['http_requests']} requests"
    if "fetch" in row:
        text += f" (fetch {row['fetch']:.3f} s by {row['how']}, decode {row['decode']:.3f} s)"
    if "encode" in row:
        text += f" (encode {row['encode']:.3f} s, PUT {row['put']:.3f} s)"
    if not row.get("ok"):
        text += ", WRONG"
    return text


# -- the report -----------------------------------------------------------------------------------

LABELS = {
    "whole": "whole array", "box": "1/8 box", "slabs": f"{N_SLABS} time slabs, one by one",
    "samples": "random samples, one by one", "s3_read": "S3 read, {mib:g} MiB",
    "s3_write": "S3 write, {mib:g} MiB",
    "s3_rewrite": "S3 rewrite, {mib:g} MiB",
}


def layout_label(layout, results):
    chunk, shard = results.get("chunk", CHUNK), results.get("shard", SHARD)
    return {"sharded": f"sharded {shard}³ of {chunk}³", "zstd": f"zstd {chunk}³ chunks",
            "plain": f"uncompressed {chunk}³"}[layout]


def best_rows(results):
    """{(workload, layout): {contender: best good row, over rounds and configs}}, and which
    cases had a wrong or failed run per contender."""
    best, bad = {}, {}
    for r in results["runs"]:
        key = (r["workload"], r["layout"])
        if r.get("error") or not r.get("ok"):
            bad.setdefault(key, {}).setdefault(r["contender"], "failed" if r.get("error")
                                               else "WRONG")
            continue
        cur = best.setdefault(key, {}).get(r["contender"])
        if cur is None or r["seconds"] < cur["seconds"]:
            best[key][r["contender"]] = r
    return best, bad


def markdown(results):
    best, bad = best_rows(results)
    n = results["n"]
    peers = [c for c in results["contenders"] if c not in ("zarrcore", FLOOR)]
    m = results["machine"]
    la0, la1 = m["loadavg_start"], m["loadavg_end"]
    L = ["## Cloud: a 40 ms link (benchmarks/cloud.py)\n" if results["delay_ms"] == 20 else
         f"## Cloud: a {2 * results['delay_ms']:g} ms link (benchmarks/cloud.py)\n"]
    L.append(
        f"{results['started']}, {m['cpus']} CPUs, load average {la0[0]:.2f} at the start and "
        f"{la1[0]:.2f} at the end; {results['seconds']} s in all. N={n}: an {n}³ float32 "
        f"array ({n ** 3 * 4 / 2 ** 20:g} MiB), zstd, written by zarr-python; S3 rows: its "
        f"({n // 2})³ corner ({(n // 2) ** 3 * 4 / 2 ** 20:g} MiB). nginx and moto in a network "
        f"namespace behind `_link.py`'s relay, {results['delay_ms']:g} ms each way on every "
        f"packet (RTT {2 * results['delay_ms']:g} ms), MTU 1500"
        + (f", {results['rate_mbit']:g} Mbit/s" if results.get("rate_mbit") else "")
        + f". Best of {results['repeats']} interleaved rounds; each peer at the better of its "
        f"defaults and {results['tuned']} requests in flight (the config in brackets: d or t); "
        f"zarrcore at its defaults. Every read compared with numpy. Seconds; CPU s/GB below "
        f"each.\n")
    if results.get("note"):
        L.append(results["note"] + "\n")
    versions = "; ".join(f"{k}: {v}" for k, v in results["versions"].items())
    L.append(f"Versions: {versions}.\n")
    L.append("| workload | layout | " + " | ".join(peers + ["zarrcore"])
             + " | best peer | zarrcore ÷ best peer | floor | zarrcore ÷ floor |")
    L.append("|---" * (len(peers) + 7) + "|")
    for (workload, layout) in dict.fromkeys((r["workload"], r["layout"]) for r in results["runs"]):
        rows = best.get((workload, layout), {})
        wrong = bad.get((workload, layout), {})
        cells = []
        for c in peers + ["zarrcore"]:
            r = rows.get(c)
            if r is None:
                cells.append(wrong.get(c, "—"))
                continue
            tag = "" if c == "zarrcore" else f" ({r['config'][0]})"
            cpu = r["cpu"] / r["gb"] if r["gb"] else 0
            note = f" ({wrong[c]} once)" if c in wrong else ""
            cells.append(f"{r['seconds']:.3f}{tag}<br>{cpu:.1f}{note}")
        good_peers = {c: rows[c]["seconds"] for c in peers if c in rows}
        bp = min(good_peers, key=good_peers.get) if good_peers else None
        zc = rows.get("zarrcore")
        fl = rows.get(FLOOR)
        ratio = f"**{zc['seconds'] / good_peers[bp]:.2f}**" if zc and bp else ""
        to_floor = f"{zc['seconds'] / fl['seconds']:.2f}" if zc and fl else ""
        floor = ""
        if fl:
            parts = (f"{fl['fetch']:.3f}+{fl['decode']:.3f}" if "fetch" in fl
                     else f"{fl['put']:.3f}+{fl['encode']:.3f}")
            floor = f"{fl['seconds']:.3f} ({parts})"
        label = LABELS[workload].format(mib=s3_n(n) ** 3 * 4 / 2 ** 20)
        L.append(f"| {label} | {layout_label(layout, results)} | " + " | ".join(cells)
                 + f" | {bp or ''} | {ratio} | {floor} | {to_floor} |")
    L.append("")
    L.append(
        "Floor: for reads, fetch + decode: the needed bytes fetched by concurrent GETs from "
        f"aiohttp ({results['floor_connections']} connections; the best of a GET per chunk "
        "or inner chunk, a GET per run of adjacent inner chunks, and such runs split into "
        f"GETs of at most {results.get('floor_split_mib', 4)} MiB), then decoded on all CPUs "
        "(python-zstandard) into the output; for writes, PUT + encode: every chunk "
        "compressed on all CPUs (zstd 3), then every object PUT at once. One selection after "
        "another where the workload goes one by one. The floor does not overlap fetching with "
        "decoding, so a reader that does can go below it.\n")
    L.append(
        "moto closes the connection after every answer, so each S3 request pays one more round "
        "trip for a new TCP connection and restarts in slow start, and moto's Python server "
        "caps the throughput. The S3 rows therefore hide how well a client keeps connections "
        "warm and lets their windows grow (against a real object store that is a large part of "
        "a bulk read), and they bunch every client towards moto's ceiling.\n")
    link = results.get("link_stats")
    if link:
        L.append("Relay counts of the run: " + "; ".join(link.splitlines()) + ".\n")
    return "\n".join(L)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--chunk", type=int, default=CHUNK, help="chunk (inner chunk) side")
    p.add_argument("--shard", type=int, default=SHARD, help="shard side")
    p.add_argument("--delay", type=float, default=20.0, help="ms each way (default 20)")
    p.add_argument("--rate-mbit", type=float, default=None, help="link bandwidth cap")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--tuned", type=int, default=128,
                   help="the peers' tuned requests in flight (default 128)")
    p.add_argument("--floor-connections", type=int, default=64)
    p.add_argument("--floor-split-mib", type=int, default=4,
                   help="the floor's third way: runs split into requests of at most this")
    p.add_argument("--settle", type=float, default=0.25,
                   help="seconds idle before every measurement (default 0.25), so that "
                        "nothing of the one before is still in flight")
    p.add_argument("--contenders", default=",".join(CONTENDERS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--no-floors", dest="floors", action="store_false")
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto")
    p.add_argument("--timeout", type=float, default=600, help="seconds per measurement")
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--out", default=None,
                   help="JSON (default benchmarks/runs/<date>-cloud-n<N>.json)")
    p.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    p.add_argument("--no-results", dest="write_results", action="store_false",
                   help="leave RESULTS.md alone")
    p.add_argument("--report-only", metavar="JSON", help="redraw the section from a JSON file")
    # internal
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--serve-moto", type=int, help=argparse.SUPPRESS)
    p.add_argument("--http-url", help=argparse.SUPPRESS)
    p.add_argument("--s3-url", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_moto:
        serve_moto(args.serve_moto)
        return 0
    if args.worker:
        worker_main(args)
        return 0
    if args.report_only:
        with open(args.report_only) as f:
            results = json.load(f)
    else:
        args.contenders = [x for x in args.contenders.split(",") if x]
        args.workloads = [x for x in args.workloads.split(",") if x]
        args.layouts = [x for x in args.layouts.split(",") if x]
        for w in args.workloads:
            if w not in WORKLOADS:
                p.error(f"unknown workload {w!r}")
        try:
            _link.check_allowed()
        except _link.LinkError as e:
            p.error(str(e))
        results = run(args)
        save_run(args, results, f"cloud-{size_tag(args)}")
    publish(args, "cloud", markdown(results))
    return 0 if all(r.get("ok") and not r.get("error") for r in results["runs"]) else 1


def save_run(args, results, stem):
    """Write a run's `results` to --out, or runs/<date>-<stem>.json."""
    out = args.out or os.path.join(HERE, "runs", f"{time.strftime('%Y-%m-%d')}-{stem}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    log(f"wrote {out}")


def publish(args, name, section):
    """Print a run's markdown `section`, and put it into RESULTS.md as `name` unless
    --no-results."""
    print(section)
    if args.write_results:
        import _report
        _report.write_section(args.results, name, section)


if __name__ == "__main__":
    sys.exit(main())
