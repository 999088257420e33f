#!/usr/bin/env python3
"""Object-store benchmark: zarrcore beside tensorstore, zarr-python 3 (ObjectStore; default and
fused pipelines) and zarr-python + zarrs, reading and writing over S3 and HTTP with a fixed
delay per request.

    python benchmarks/remote.py                       # N=512, 20 ms per request, best of 3
    python benchmarks/remote.py --n 128 --repeats 1   # a quick smoke run

The plain, zstd and sharded datasets of benchmarks/_common.py go to a moto S3 server on
127.0.0.1 and are served by a byte-range HTTP server on 127.0.0.1; every library reaches both
through a proxy that holds each request `--delay` seconds before forwarding it (and counts
requests and bytes). Workloads: read_all, read_region (the middle half along every axis) and
write_all (S3 only: HTTP is read-only). For each zarrcore read and write, the latency floor is
requests / config.io_concurrency x delay (rounded up to whole rounds: no request takes less
than the delay), plus the same read or write with no delay.

Writes benchmarks/remote-results.json (or --out) and prints a table.
"""
import argparse
import contextlib
import http.client
import http.server
import json
import logging
import math
import os
import re
import socket
import socketserver
import sys
import threading
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common as C  # noqa: E402
from _worker import _import_zarrcore  # noqa: E402

BUCKET = "bench"
VARIANTS = ("plain", "zstd", "sharded")
WORKLOADS = ("read_all", "read_region", "write_all")
LIBS = C.LIBS
KVSTORES = ("s3", "http")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A response's headers and body go out in two writes: with Nagle's algorithm the body of a
    # small response waits for the client's delayed ACK of the headers (about 40 ms), which
    # no object store adds.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass


def serve(handler):
    """Start `handler` on a free port of 127.0.0.1 in a daemon thread; the server."""
    server = _Server(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _body(handler):
    """The request body (Content-Length or chunked)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0], 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def range_server(root):
    """An HTTP server of the files below `root` that answers Range requests (one range:
    `bytes=a-b`, `bytes=a-`, `bytes=-n`), as object stores' HTTP endpoints do."""

    class Handler(_Handler):
        def _file(self):
            path = os.path.normpath(os.path.join(root, self.path.split("?")[0].lstrip("/")))
            if not path.startswith(os.path.abspath(root)) or not os.path.isfile(path):
                return None
            return path

        def _reply(self, status, body=b"", headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            path = self._file()
            if path is None:
                return self._reply(404)
            size = os.path.getsize(path)
            spec = self.headers.get("Range")
            start, stop, status = 0, size, 200
            if spec and spec.startswith("bytes="):
                first, _, last = spec[6:].partition("-")
                if first:
                    start, stop = int(first), min(size, int(last) + 1) if last else size
                else:
                    start = max(0, size - int(last))
                if start >= size:
                    return self._reply(416, headers=[("Content-Range", f"bytes */{size}")])
                status = 206
            with open(path, "rb") as f:
                f.seek(start)
                body = f.read(stop - start)
            headers = [("Accept-Ranges", "bytes")]
            if status == 206:
                headers.append(("Content-Range", f"bytes {start}-{stop - 1}/{size}"))
            self._reply(status, body, headers)

    return serve(Handler)


class DelayProxy:
    """Forwards every HTTP request to `upstream` (host, port) after `delay` seconds; counts
    requests and the bytes of response bodies."""

    HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
           "upgrade"}

    def __init__(self, upstream, delay):
        self.upstream, self.delay = upstream, delay
        self.lock = threading.Lock()
        self.reset()
        proxy = self
        local = threading.local()

        class Handler(_Handler):
            def _control(self):
                """/__bench/stats, /__bench/reset, /__bench/delay/SECONDS: the counts and the
                delay, for the benchmark process (the servers run in a process of their own)."""
                parts = self.path.split("/")[2:]
                if parts[0] == "reset":
                    proxy.reset()
                elif parts[0] == "delay":
                    proxy.delay = float(parts[1])
                body = json.dumps({"requests": proxy.requests, "bytes": proxy.nbytes,
                                   "delay": proxy.delay}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self):
                if self.path.startswith("/__bench/"):
                    return self._control()
                body = _body(self)
                time.sleep(proxy.delay)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in proxy.HOP}
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                for attempt in range(2):  # a kept-alive upstream connection may have closed
                    conn = getattr(local, "conn", None)
                    if conn is None:
                        conn = local.conn = http.client.HTTPConnection(*proxy.upstream, timeout=300)
                    try:
                        conn.request(self.command, self.path, body=body, headers=headers)
                        resp = conn.getresponse()
                        data = resp.read()
                        break
                    except (http.client.HTTPException, OSError):
                        conn.close()
                        local.conn = None
                        if attempt:
                            raise
                with proxy.lock:
                    proxy.requests += 1
                    proxy.nbytes += len(data)
                self.send_response(resp.status)  # (with the proxy's own Date and Server)
                for k, v in resp.getheaders():
                    # (A HEAD's Content-Length is the object's size: passed on as it is.)
                    if k.lower() not in proxy.HOP | {"date", "server"} and (
                            k.lower() != "content-length" or self.command == "HEAD"):
                        self.send_header(k, v)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def reset(self):
        with self.lock:
            self.requests, self.nbytes = 0, 0


class ProxyCounter:
    """A DelayProxy in the servers' process, seen from the benchmark process."""

    def __init__(self, url):
        self.url = url

    def _call(self, what):
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/__bench/{what}", timeout=60) as r:
            return json.load(r)

    def reset(self):
        self._call("reset")

    @property
    def requests(self):
        return self._call("stats")["requests"]

    @property
    def nbytes(self):
        return self._call("stats")["bytes"]

    @property
    def delay(self):
        return self._call("stats")["delay"]

    @delay.setter
    def delay(self, value):
        self._call(f"delay/{value!r}")


class _RangeOfObject:
    """An S3 object's body that reads only the bytes sliced from it (see `start_moto`)."""

    def __init__(self, key):
        self.key = key

    def __len__(self):
        return self.key.size

    def __getitem__(self, part):
        with self.key.lock:
            self.key._value_buffer.seek(part.start)
            return self.key._value_buffer.read(part.stop - part.start)


_SIMPLE_RANGE = re.compile(r"bytes=(\d+)-(\d+)$")


def _charge_ranges_by_length():
    """Make moto's range GET read only its range. moto reads the whole object for each one and
    slices it, so a 64 KiB range of a 460 MiB object costs as much as the object, and the
    reader with the fewest requests wins; a real object store charges a range by its length.
    Only `bytes=a-b` takes this path; any other request is moto's own."""
    from moto.s3.models import FakeKey
    from moto.s3.responses import S3Response

    lazy = threading.local()
    whole_value = FakeKey.value

    def value(key):
        return _RangeOfObject(key) if getattr(lazy, "on", False) else whole_value.fget(key)

    FakeKey.value = property(value, whole_value.fset)
    own_get_object = S3Response.get_object

    def get_object(self):
        m = _SIMPLE_RANGE.match(self.headers.get("range") or "")
        # (moto answers a range past the end from len(), and b < a with the whole object.)
        lazy.on = bool(m and int(m[1]) <= int(m[2]) and "partNumber" not in self.querystring)
        try:
            return own_get_object(self)
        finally:
            lazy.on = False

    S3Response.get_object = get_object


def start_moto():
    """A moto S3 server on 127.0.0.1 that charges range GETs by their length; (server, port)."""
    for k, v in CREDENTIALS.items():
        os.environ.setdefault(k, v)
    import werkzeug.serving
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    # (As _Handler: no ~40 ms stall before the body of moto's small responses.)
    werkzeug.serving.WSGIRequestHandler.disable_nagle_algorithm = True
    _charge_ranges_by_length()
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    return moto, port


def serve_all(args):
    """The servers' process: moto S3 with the --upload directories uploaded and, with
    --http-root, a byte-range HTTP server of that directory; a delaying proxy in front of each.
    Prints {"s3": url[, "http": url]} and serves until stdin closes. (Apart from the libraries
    measured, which may hold the GIL while they wait.)"""
    moto, moto_port = start_moto()
    proxies = {"s3": DelayProxy(("127.0.0.1", moto_port), args.delay)}
    if args.http_root:
        http_server = range_server(args.http_root)
        proxies["http"] = DelayProxy(("127.0.0.1", http_server.server_port), args.delay)
    for spec in args.upload:
        prefix, _, folder = spec.partition("=")
        upload(f"http://127.0.0.1:{moto_port}", folder, prefix)
    print(json.dumps({k: p.url for k, p in proxies.items()}), flush=True)
    sys.stdin.read()
    moto.stop()


def start_servers(delay, uploads, http_root=None, python=sys.executable):
    """Start serve_all in a child process of `python` (which needs moto and boto3): `uploads`
    maps S3 key prefixes (in BUCKET) to local directories. Returns (process, {"s3":
    ProxyCounter[, "http": ...]}); closing the process's stdin stops it."""
    import subprocess

    argv = [python, os.path.abspath(__file__), "--serve", "--delay", str(delay),
            *[f"--upload={prefix}={folder}" for prefix, folder in uploads.items()]]
    if http_root:
        argv += ["--http-root", http_root]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("the servers' process did not start")
    return proc, {k: ProxyCounter(url) for k, url in json.loads(line).items()}


# -- libraries ----------------------------------------------------------------------------------
def obstore_store(kind, base_url, prefix):
    import obstore.store as obs

    if kind == "s3":
        return obs.S3Store(BUCKET, prefix=prefix, endpoint=base_url, region="us-east-1",
                           access_key_id="bench", secret_access_key="bench",
                           virtual_hosted_style_request=False,
                           client_options={"allow_http": True, "timeout": "300s"})
    return obs.HTTPStore.from_url(f"{base_url}/{prefix}",
                                  client_options={"allow_http": True, "timeout": "300s"})


class ZarrPython:
    name = "zarr-python"

    def __init__(self):
        import zarr
        self.zarr = zarr
        # Set around each call: every library of this process shares zarr's global config.
        self.pipeline = C.zarr_pipeline_config(self.name)

    def config(self):
        return self.zarr.config.set(self.pipeline)

    def _store(self, kind, url, prefix, read_only):
        return self.zarr.storage.ObjectStore(obstore_store(kind, url, prefix), read_only=read_only)

    def open(self, kind, url, prefix):
        with self.config():
            return self.zarr.open_array(store=self._store(kind, url, prefix, True), mode="r")

    def read(self, h, sel):
        with self.config():
            return h[sel]

    def create(self, kind, url, prefix, ds):
        with self.config():
            return self.zarr.create_array(
                store=self._store(kind, url, prefix, False), shape=ds.shape, dtype=ds.dtype,
                chunks=ds.chunks, shards=ds.shards, compressors=ds.compressors() or None,
                fill_value=0, overwrite=True)

    def write(self, h, data):
        with self.config():
            h[...] = data


class ZarrPythonFused(ZarrPython):
    name = "zarr-python-fused"


class ZarrsPython(ZarrPython):
    name = "zarrs-python"


class ZarrPythonZarrcore(ZarrPython):
    name = C.ZARRCORE_PIPELINE

    def __init__(self, where):
        _import_zarrcore(where)  # (the zarrcore whose pipeline zarr-python then imports)
        super().__init__()


class TensorStore:
    name = "tensorstore"

    def __init__(self):
        import tensorstore
        self.ts = tensorstore

    @staticmethod
    def kvstore(kind, url, prefix):
        """tensorstore's kvstore spec of `prefix` in BUCKET (s3) or below `url` (http)."""
        if kind == "s3":
            return {"driver": "s3", "bucket": BUCKET, "path": prefix + "/", "endpoint": url,
                    "aws_region": "us-east-1"}
        return {"driver": "http", "base_url": f"{url}/{prefix}/"}

    def open(self, kind, url, prefix):
        spec = {"driver": "zarr3", "kvstore": self.kvstore(kind, url, prefix)}
        return self.ts.open(spec, read=True).result()

    def read(self, h, sel):
        return h[sel].read().result()

    def create(self, kind, url, prefix, ds):
        spec = {"driver": "zarr3", "kvstore": self.kvstore(kind, url, prefix),
                "metadata": ds.metadata_json()}
        return self.ts.open(spec, create=True, delete_existing=True).result()

    def write(self, h, data):
        h.write(data).result()


class Zarrcore:
    name = "zarrcore"

    def __init__(self, where):
        self.zc = _import_zarrcore(where)
        from zarrcore.storage.objectstore import ObjectStore
        self.ObjectStore = ObjectStore

    def _store(self, kind, url, prefix, read_only=False):
        return self.ObjectStore(obstore_store(kind, url, prefix), read_only=read_only)

    def open(self, kind, url, prefix):
        return self.zc.open_array(self._store(kind, url, prefix, True), mode="r")

    def read(self, h, sel):
        return h[sel]

    def create(self, kind, url, prefix, ds):
        return self.zc.create_array(
            self._store(kind, url, prefix), shape=ds.shape, dtype=ds.dtype, chunks=ds.chunks,
            shards=ds.shards, compressors=ds.compressors() or None, fill_value=0,
            overwrite=True)

    def write(self, h, data):
        h[...] = data


class ZarrcoreDelayedMemory(Zarrcore):
    """zarrcore's pipeline over the test suite's DelayedStore (memory, the same delay per
    request, io_concurrency requests in flight): a stand-in for the object store, counting
    its own requests. `kind` and `url` are ignored."""

    name = "zarrcore-memory"

    def __init__(self, where, delay, data_dir):
        self.zc = _import_zarrcore(where)
        sys.path.insert(0, os.path.join(C.REPO, "tests", "support"))
        from _remote_stores import DelayedStore
        self.delay, self.root = delay, data_dir
        self.store = DelayedStore(delay, self.zc.config.io_concurrency)
        self.loaded = set()

    def _store(self, kind, url, prefix, read_only=False):
        # The datasets by name; written arrays ("write/...") start empty.
        folder = None if prefix.startswith("write/") else os.path.join(self.root, prefix.rsplit("/", 1)[-1])
        if folder and prefix not in self.loaded and os.path.isdir(folder):
            for base, _, files in os.walk(folder):
                for name in files:
                    path = os.path.join(base, name)
                    with open(path, "rb") as f:
                        self.store._data[prefix + "/" + os.path.relpath(path, folder)] = f.read()
            self.loaded.add(prefix)
        return self.store

    def open(self, kind, url, prefix):
        return self.zc.open_array(self._store(kind, url, prefix), path=prefix, mode="r")

    def create(self, kind, url, prefix, ds):
        return self.zc.create_array(
            self._store(kind, url, prefix), name=prefix, shape=ds.shape, dtype=ds.dtype,
            chunks=ds.chunks, shards=ds.shards, compressors=ds.compressors() or None,
            fill_value=0, overwrite=True)


class _StoreCounter:
    """The request and byte counts of a DelayedStore, as DelayProxy gives them."""

    def __init__(self, store):
        self.store = store

    def reset(self):
        self.store.reset()

    @property
    def requests(self):
        return len(self.store.requests)

    @property
    def nbytes(self):
        return self.store.nbytes

    @property
    def delay(self):
        return self.store.delay

    @delay.setter
    def delay(self, value):
        self.store.delay = value


ADAPTERS = {a.name: a for a in (TensorStore, ZarrPython, ZarrPythonFused, ZarrsPython,
                                ZarrPythonZarrcore, Zarrcore)}


# -- the run ------------------------------------------------------------------------------------
def ensure_dataset(ds, path, where):
    """Write the reference dataset with zarrcore when it is not there yet."""
    if os.path.exists(os.path.join(path, "zarr.json")):
        return
    zarrcore = _import_zarrcore(where)
    log(f"generating {ds.name} -> {path}")
    a = zarrcore.create_array(path, shape=ds.shape, dtype=ds.dtype, chunks=ds.chunks,
                              shards=ds.shards, compressors=ds.compressors() or None,
                              fill_value=0, overwrite=True)
    a[...] = ds.expected()


def upload(endpoint, root, prefix):
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="bench", aws_secret_access_key="bench")
    with contextlib.suppress(Exception):
        s3.create_bucket(Bucket=BUCKET)
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".done") or name.startswith(".zarrcore"):
                continue  # (the generator's stamp, zarrcore's lock file)
            path = os.path.join(folder, name)
            key = prefix + "/" + os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                s3.put_object(Bucket=BUCKET, Key=key, Body=f.read())


def region(ds):
    return tuple(slice(s // 4, s // 4 + s // 2) for s in ds.shape)


def measure(fn, repeats, proxy):
    """Best time of `repeats` calls of fn() after one untimed call; the requests of one call."""
    fn()
    times = []
    for _ in range(repeats):
        proxy.reset()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), proxy.requests, proxy.nbytes


def run(args):
    for k, v in CREDENTIALS.items():
        os.environ.setdefault(k, v)
    datasets = C.make_datasets(args.n)
    ref_root = os.path.join(args.data_dir, f"n{args.n}", "ref")
    for v in VARIANTS:
        ensure_dataset(datasets[v], os.path.join(ref_root, f"{v}.zarr"), args.zarrcore)
    uploads = {f"n{args.n}/{v}.zarr": os.path.join(ref_root, f"{v}.zarr") for v in VARIANTS}
    servers, proxies = start_servers(args.delay, uploads, http_root=ref_root)
    try:
        return measure_all(args, datasets, ref_root, proxies)
    finally:
        servers.stdin.close()
        servers.wait(30)


def measure_all(args, datasets, ref_root, proxies):
    log(f"N={args.n}, {args.delay * 1000:g} ms per request, best of {args.repeats}; "
        f"S3 (moto) at {proxies['s3'].url}, HTTP at {proxies['http'].url}")
    libs = {}
    for name in args.libs:
        try:
            if name == "zarrcore-memory":
                libs[name] = ZarrcoreDelayedMemory(args.zarrcore, args.delay, ref_root)
            elif name in ("zarrcore", C.ZARRCORE_PIPELINE):
                libs[name] = ADAPTERS[name](args.zarrcore)
            else:
                libs[name] = ADAPTERS[name]()
        except Exception as e:  # reported, not fatal: the others still run
            log(f"{name}: unavailable ({type(e).__name__}: {e})")
    zarrcores = [lib for name, lib in libs.items() if name.startswith("zarrcore")]
    concurrency = zarrcores[0].zc.config.io_concurrency if zarrcores else None
    results = {"n": args.n, "delay": args.delay, "repeats": args.repeats,
               "io_concurrency": concurrency, "unavailable": sorted(set(args.libs) - set(libs)),
               "runs": []}
    for kind in args.kvstores:
        proxy = proxies[kind]
        for v in VARIANTS:
            ds = datasets[v]
            # (The HTTP server serves the reference directory itself.)
            prefix = f"n{args.n}/{v}.zarr" if kind == "s3" else f"{v}.zarr"
            expected = ds.expected()
            for workload in args.workloads:
                if workload == "write_all" and kind == "http":
                    continue
                for name, lib in libs.items():
                    row = {"kvstore": kind, "variant": v, "workload": workload, "lib": name}
                    counter = _StoreCounter(lib.store) if name == "zarrcore-memory" else proxy
                    try:
                        row.update(within(args.timeout, one, lib, kind, counter, prefix, ds,
                                          workload, expected, args))
                        if name.startswith("zarrcore") and concurrency:
                            counter.delay = 0.0
                            try:
                                row["no_delay"] = one(lib, kind, counter, prefix, ds, workload,
                                                      expected, args)["best"]
                            finally:
                                counter.delay = args.delay
                            row["io_concurrency"] = concurrency
                            row["floor"] = (math.ceil(row["requests"] / concurrency) * args.delay
                                            + row["no_delay"])
                    except Exception as e:
                        row["error"] = f"{type(e).__name__}: {e}"
                        if not isinstance(e, TimeoutError):
                            traceback.print_exc()
                    results["runs"].append(row)
                    log(describe(row))
    return results


def within(seconds, fn, *args):
    """fn(*args), or TimeoutError after `seconds` (the call is left running in a daemon
    thread: a library that hangs must not stop the others' measurements)."""
    result = {}

    def call():
        try:
            result["value"] = fn(*args)
        except BaseException as e:  # re-raised below
            result["error"] = e

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {seconds:g}s")
    if "error" in result:
        raise result["error"]
    return result["value"]


def one(lib, kind, proxy, prefix, ds, workload, expected, args):
    url = getattr(proxy, "url", None)
    if workload == "write_all":
        target = f"write/{lib.name}/{prefix}"

        def fn():
            lib.write(lib.create(kind, url, target, ds), expected)

        best, requests, nbytes = measure(fn, args.repeats, proxy)
        check = lib.read(lib.open(kind, url, target), (slice(None),) * 3)
        ok = bool(np.array_equal(np.asarray(check), expected))
    else:
        sel = (slice(None),) * 3 if workload == "read_all" else region(ds)
        handle = lib.open(kind, url, prefix)
        out = {}

        def fn():
            out["data"] = lib.read(handle, sel)

        best, requests, nbytes = measure(fn, args.repeats, proxy)
        ok = bool(np.array_equal(np.asarray(out["data"]), expected[sel]))
    return {"best": best, "requests": requests, "bytes": nbytes, "ok": ok}


def describe(row):
    if "error" in row:
        return f"{row['kvstore']}/{row['variant']}/{row['workload']}: {row['lib']} failed: {row['error']}"
    text = (f"{row['kvstore']}/{row['variant']}/{row['workload']}: {row['lib']} "
            f"{row['best']:.3f}s, {row['requests']} requests{'' if row['ok'] else ', WRONG VALUES'}")
    if "floor" in row:
        text += (f" (floor {row['floor']:.3f}s = {row['requests']}/{row['io_concurrency']} x delay + "
                 f"{row['no_delay']:.3f}s without delay; {row['best'] / row['floor']:.2f}x floor)")
    return text


def cell(row):
    """A table's cell of one measurement: seconds (requests, when counted), or why none."""
    if row is None:
        return ""
    if "error" in row or not row.get("ok"):
        return "failed"
    counted = f" ({row['requests']})" if row.get("requests") is not None else ""
    return f"{row['best']:.3f}{counted}"


def markdown(results):
    """The RESULTS.md section of a run: seconds per library, zarrcore's ratio to the best peer
    and to its latency floor."""
    delay_ms = results["delay"] * 1000
    L = [f"## Object stores (benchmarks/remote.py)\n",
         f"N={results['n']}, {delay_ms:g} ms added to every request, best of "
         f"{results['repeats']}; zarrcore keeps {results['io_concurrency']} requests in flight. "
         f"Floor: ceil(requests / {results['io_concurrency']}) x {delay_ms:g} ms, plus the same "
         f"read or write with no delay. Seconds (requests).\n"]
    if results.get("unavailable"):
        L.append(f"Not measured (not installed): {', '.join(results['unavailable'])}.\n")
    libs = sorted({r["lib"] for r in results["runs"]}, key=lambda x: (x.startswith("zarrcore"), x))
    L.append("| store / dataset / workload | " + " | ".join(libs)
             + " | zarrcore / best peer | floor | zarrcore / floor |")
    L.append("|---" * (len(libs) + 4) + "|")
    cases = []
    for r in results["runs"]:
        case = (r["kvstore"], r["variant"], r["workload"])
        if case not in cases:
            cases.append(case)
    for case in cases:
        rows = {r["lib"]: r for r in results["runs"] if (r["kvstore"], r["variant"], r["workload"]) == case}
        cells = [cell(rows.get(lib)) for lib in libs]
        peers = [r["best"] for lib, r in rows.items() if lib in C.PEERS and r.get("ok")]
        # (zarrcore-memory reads no S3 or HTTP: its floor only, no ratio to the peers.)
        zc = next((r for lib, r in sorted(rows.items()) if lib.startswith("zarrcore") and r.get("ok")), None)
        ratio = (f"{zc['best'] / min(peers):.2f}"
                 if zc and zc["lib"] == "zarrcore" and peers else "")
        floor = f"{zc['floor']:.3f}" if zc and "floor" in zc else ""
        to_floor = f"{zc['best'] / zc['floor']:.2f}" if zc and "floor" in zc else ""
        L.append(f"| {' / '.join(case)} | " + " | ".join(cells)
                 + f" | {ratio} | {floor} | {to_floor} |")
    L.append("")
    return "\n".join(L)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--delay", type=float, default=0.02, help="seconds per request (default 0.02)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--libs", default=",".join(LIBS),
                   help="of %s, and zarrcore-memory: zarrcore over an in-memory store with "
                        "the same delay (no S3 or HTTP)" % ", ".join(LIBS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--kvstores", default=",".join(KVSTORES))
    p.add_argument("--data-dir", default=C.DEFAULT_DATA_DIR)
    p.add_argument("--zarrcore", choices=("auto", "installed", "inplace"), default="auto",
                   help="which zarrcore (as run.py's --zarrcore)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per measurement")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--upload", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--http-root", help=argparse.SUPPRESS)
    p.add_argument("--out", default=os.path.join(HERE, "remote-results.json"))
    args = p.parse_args(argv)
    args.libs = [x for x in args.libs.split(",") if x]
    args.workloads = [x for x in args.workloads.split(",") if x]
    args.kvstores = [x for x in args.kvstores.split(",") if x]
    if args.serve:
        serve_all(args)
        return 0
    results = run(args)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    log(f"wrote {args.out}")
    print(markdown(results))
    return 0 if all(r.get("ok") for r in results["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
