"""Local servers for store tests, on 127.0.0.1 and a free port: moto's S3 server, an HTTP
server of a directory that serves byte ranges and injects faults, and a TCP proxy that
injects faults in front of any server. Fixtures for them are in conftest.py."""
import collections
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

S3_CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing",
                  "region": "us-east-1"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_containing(digits):
    """A free port whose number holds `digits` (an error text naming the URL then holds
    them too)."""
    for port in range(1024, 65536):
        if digits in str(port):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError(f"no free port holding {digits}")


# moto's server checks a PUT's If-Match or If-None-Match and stores the object in two steps
# on threads of its own, so two conditional PUTs on one version can both succeed there: S3
# applies each atomically. Its PUTs run one at a time here, as S3's conditions hold them.
_ATOMIC_MOTO = """
import sys, threading
from moto.s3.responses import S3Response
from moto.server import main

put, one_at_a_time = S3Response.put_object, threading.Lock()


def put_object(self):
    with one_at_a_time:
        return put(self)


S3Response.put_object = put_object
main(sys.argv[1:])
"""


class MotoServer:
    """moto's S3 server in a subprocess (so its work does not take this process's GIL), its
    conditional PUTs atomic (_ATOMIC_MOTO). With `checks_credentials` it refuses any key it
    has no IAM user of (from the first request on), as S3 refuses a wrong key."""

    def __init__(self, checks_credentials=False):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
        if checks_credentials:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
        self._process = subprocess.Popen(
            [sys.executable, "-c", _ATOMIC_MOTO, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).close()
                break
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("moto's server did not start")
                time.sleep(0.05)
        self._buckets = 0

    def storage_options(self, endpoint=None):
        """obstore's options for this server (or for `endpoint`, a proxy in front of it)."""
        return {"endpoint": endpoint or self.endpoint, **S3_CREDENTIALS}

    def s3fs(self, asynchronous=False):
        """An s3fs filesystem of this server (asynchronous, as zarr-python's FsspecStore wants)."""
        import s3fs

        return s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=self.endpoint,
                                 client_kwargs={"region_name": "us-east-1"},
                                 use_listings_cache=False, skip_instance_cache=True,
                                 asynchronous=asynchronous)

    def obstore(self, bucket, prefix=None):
        from obstore.store import S3Store

        return S3Store(bucket, prefix=prefix, endpoint=self.endpoint,
                       client_options={"allow_http": True}, **S3_CREDENTIALS)

    def client(self):
        """A boto3 client of this server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing", region_name="us-east-1")

    def new_bucket(self):
        """The name of a new, empty bucket."""
        self._buckets += 1
        name = f"bucket-{os.getpid()}-{self._buckets}"
        self.client().create_bucket(Bucket=name)
        return name

    def open_uploads(self, bucket):
        """The multipart uploads of `bucket` that were neither completed nor aborted."""
        return self.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])

    def assert_reads(self, bucket, path, value):
        """zarrcore and zarr-python both read `value` from the array at `path` of `bucket`."""
        import numpy as np
        import zarr

        import zarrcore
        from zarrcore.storage import make_store

        store = make_store(f"s3://{bucket}", storage_options=self.storage_options())
        np.testing.assert_array_equal(zarrcore.open_array(store, path=path, mode="r")[...],
                                      value)
        z = zarr.open_array(zarr.storage.FsspecStore(self.s3fs(True), path=f"{bucket}/{path}"),
                            mode="r")
        np.testing.assert_array_equal(z[...], value)

    def stop(self):
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class _Faults:
    """What the servers do wrong, set by a test: every field applies to requests whose path
    contains `match` (all when None); the proxy also checks `method` and `count`."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.match = None
        self.delay = 0.0        # seconds before answering (the proxy: before forwarding)
        self.status = None      # answer with this status and no body instead
        self.truncate = False   # announce the whole body, send half of it, close
        self.unframed = False   # (proxy) send the answer without its Content-Length and only
        #                         half its body, then close: a short body no framing reveals
        self.drop = False       # close the connection without an answer
        self.close = False      # answer saying "Connection: close", then close
        self.cut_request_after = None   # (proxy) forward this many request bytes, then close
        self.after_apply = False  # (proxy) `status` or `drop` once the server has answered
        self.method = None      # (proxy) only requests of this method ("PUT", "DELETE", ...)
        self.conditional = False  # (proxy) only requests that carry If-None-Match
        self.etag = None        # (proxy) the ETag header of the `status` answer (None: none)
        self.count = None       # (proxy) only this many more requests (None: all)
        self._taken = threading.Lock()

    def applies(self, path):
        return self.match is None or self.match in path

    def take(self, method, path, request=b""):
        """(proxy) Do the faults apply to this request? Counts it against `count`."""
        if not self.applies(path) or self.method not in (None, method):
            return False
        if self.conditional and b"\r\nif-none-match:" not in request.split(b"\r\n\r\n")[0].lower():
            return False
        with self._taken:
            if self.count is None:
                return True
            if self.count <= 0:
                return False
            self.count -= 1
            return True


class _RangeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # (A head and a body sent apart on a kept-alive connection otherwise wait out the
    # client's delayed ACK, 40 ms a request.)
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head):
        server = self.server
        with server.counter:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
            server.requests += 1
            server.paths.append(self.path)
        try:
            self._answer(server, head)
        finally:
            with server.counter:
                server.in_flight -= 1

    def _answer(self, server, head):
        faults = server.faults
        path = self.path.split("?", 1)[0]
        faulty = faults.applies(path)
        if faulty and faults.delay:
            time.sleep(faults.delay)
        if faulty and faults.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if faulty and faults.status:
            self._reply(faults.status, b"")
            return
        file = os.path.join(server.root, *[p for p in path.split("/") if p not in ("", ".", "..")])
        if not os.path.isfile(file):
            self._reply(404, b"")
            return
        with open(file, "rb") as f:
            data = f.read()
        size = len(data)
        status, headers = 200, {}
        wanted = self.headers.get("Range")
        if wanted:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted.strip())
            if not m or (not m.group(1) and not m.group(2)):
                self._reply(416, b"")
                return
            if m.group(1):
                lo = int(m.group(1))
                hi = min(int(m.group(2)) + 1, size) if m.group(2) else size
            else:
                lo, hi = max(0, size - int(m.group(2))), size
            if lo >= size:
                self._reply(416, b"", {"Content-Range": f"bytes */{size}"})
                return
            status, data = 206, data[lo:hi]
            headers["Content-Range"] = f"bytes {lo}-{hi - 1}/{size}"
        headers["ETag"] = f'"{size}-{int(os.stat(file).st_mtime_ns)}"'
        headers["Last-Modified"] = self.date_time_string(int(os.stat(file).st_mtime))
        if faulty and faults.truncate and not head:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if faulty and faults.close:
            headers["Connection"] = "close"  # (send_header closes it after this answer)
        self._reply(status, b"" if head else data, headers, length=len(data))

    def _reply(self, status, body, headers=None, length=None):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(body)


class RangeHTTPServer(ThreadingHTTPServer):
    """Serves the files below `root` with GET and HEAD, byte ranges (one per request) and
    ETags; `faults` makes it slow, truncate bodies, drop connections or answer an error.
    Counts requests, the paths asked for, and the most it had in flight at once."""

    daemon_threads = True

    def __init__(self, root):
        super().__init__(("127.0.0.1", free_port()), _RangeHandler)
        self.root = root
        self.faults = _Faults()
        self.counter = threading.Lock()
        self.requests = self.in_flight = self.max_in_flight = 0
        self.paths = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    def reset(self):
        self.faults.reset()
        self.requests = self.max_in_flight = 0
        self.paths = []

    def stop(self):
        self.shutdown()
        self.server_close()


def _read_message(sock, bodiless=False):
    """One whole HTTP message from `sock` (its head, and its body by Content-Length or
    chunked; none when `bodiless`), or what came before the peer closed."""
    data = bytearray()  # (appending to bytes would copy the whole body at each read)
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            return bytes(data)
        data += more
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    body = bytearray(body)
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    status = head.split(b" ", 2)[1] if head.startswith(b"HTTP/") else b""
    if bodiless or status in (b"204", b"304"):
        return head + b"\r\n\r\n"
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        while not body.endswith(b"0\r\n\r\n"):
            more = sock.recv(65536)
            if not more:
                break
            body += more
    else:
        length = int(fields.get(b"content-length", 0))
        while len(body) < length:
            more = sock.recv(65536)
            if not more:
                break
            body += more
    return head + b"\r\n\r\n" + bytes(body)


def _closing(message):
    """`message` with its Connection header made "close": one request per connection, so
    that every request is matched against the faults on its own."""
    head, _, body = message.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
    return b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + body


class FaultProxy:
    """A TCP proxy to `target_port` that injects `faults` into each request (one per
    connection): delay forwarding it, close mid-request (`cut_request_after` bytes), drop the
    connection, answer `status` itself (with `etag`; only conditional GETs with
    `conditional`), or cut the answer short (`truncate`); `after_apply`
    drops or answers `status` after the server has applied the request. `wait_idle` waits
    for every request it holds (a delayed one whose client gave up too) to be done;
    `requests` lists them, `answered` counts the bytes of the answers it forwarded."""

    def __init__(self, target_port, port=0):
        self.target_port = target_port
        self.faults = _Faults()
        self._listener = socket.create_server(("127.0.0.1", port))
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stopped = False
        self._busy = threading.Condition()
        self._in_flight = 0
        self.requests = []  # (method, path) of every request, in order of arrival
        self.answered = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        self._stopped = True
        self._listener.close()

    def wait_idle(self, timeout):
        """True once no request is in the proxy, False after `timeout` seconds."""
        with self._busy:
            return self._busy.wait_for(lambda: self._in_flight == 0, timeout)

    def _accept(self):
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._busy:
                self._in_flight += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            self._inject(client)
        except OSError:
            pass  # the client gave up (as it should after a fault)
        finally:
            client.close()
            with self._busy:
                self._in_flight -= 1
                self._busy.notify_all()

    def _inject(self, client):
        faults = self.faults
        request = _read_message(client)
        line = request.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        method, path = line[0], line[1] if len(line) > 1 else ""
        if not request:
            return
        self.requests.append((method, path))
        if not faults.take(method, path, request):
            return self._forward(client, self._exchange(request, method))
        if faults.delay:
            time.sleep(faults.delay)
        if faults.drop and not faults.after_apply:
            return
        if faults.status and not faults.after_apply:
            return self._answer(client, faults.status, faults.etag)
        if faults.cut_request_after is not None:
            # Forward part of the request, then die as a crashed server would.
            with socket.create_connection(("127.0.0.1", self.target_port)) as server:
                server.sendall(request[:faults.cut_request_after])
            return
        answer = self._exchange(request, method)
        if faults.after_apply:
            if faults.status:
                self._answer(client, faults.status)
            return  # (drop)
        if faults.truncate:
            answer = answer[:max(len(answer) - 10, len(answer) // 2)]
        if faults.unframed:
            head, _, body = answer.partition(b"\r\n\r\n")
            lines = [line for line in head.split(b"\r\n")
                     if not line.lower().startswith(b"content-length:")]
            answer = b"\r\n".join(lines) + b"\r\n\r\n" + body[:len(body) // 2]
        self._forward(client, answer)

    def _forward(self, client, answer):
        with self._busy:
            self.answered += len(answer)
        client.sendall(answer)

    def _exchange(self, request, method):
        """The server's whole answer to `request`, made to close the connection."""
        with socket.create_connection(("127.0.0.1", self.target_port)) as server:
            server.sendall(_closing(request))
            return _closing(_read_message(server, bodiless=method == "HEAD"))

    @staticmethod
    def _answer(client, status, etag=None):
        tag = "" if etag is None else f"ETag: {etag}\r\n"
        client.sendall(f"HTTP/1.1 {status} Fault\r\n{tag}Content-Length: 0\r\n"
                       f"Connection: close\r\n\r\n".encode())


# Linux's SO_TIMESTAMPNS (which Python's socket module does not name): each read of a socket
# tells when the kernel received its bytes, as a struct timespec of two longs.
_SO_TIMESTAMPNS = 35 if sys.platform == "linux" else None
_TIMESPEC = struct.Struct("ll")


def _stamped_recv(sock):
    """(bytes, time.time() they arrived) of one read of `sock`: the kernel's stamp where the
    socket has them on (`_stamping`), not when a thread of this process got to read them,
    which lags behind when the client under test keeps the GIL or the CPUs busy."""
    if _SO_TIMESTAMPNS is None:
        return sock.recv(65536), time.time()
    data, ancillary, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(_TIMESPEC.size))
    for level, kind, stamp in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
            seconds, nanoseconds = _TIMESPEC.unpack(stamp[:_TIMESPEC.size])
            return data, seconds + nanoseconds / 1e9
    return data, time.time()


def _stamping(sock):
    """`sock`'s reads stamped by the kernel, where it can (see _stamped_recv)."""
    if _SO_TIMESTAMPNS is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        except OSError:
            pass


def _range_of(request):
    """The Range header of the HTTP `request` (its first bytes, the head among them), or None."""
    for line in request.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"range":
            return value.strip().decode("latin-1")
    return None


class CountingProxy:
    """A TCP proxy to `target_port` that passes connections through unchanged (kept alive as
    long as client and server keep them) and counts `connections` opened in all and the
    most requests in flight at once (`peak_requests`; each from its first byte until the
    proxy has the whole answer, by its Content-Length, so never more than the client has
    in flight), and the requests by method and path (`methods`), with the time.time() each
    request's first bytes arrived (`arrivals`, in the order read) and its path and Range
    header or None (`asked`, in the same order). Each request is held `delay`
    seconds before it is forwarded (so that requests are in flight for as long). It reads
    HTTP/1.1 without pipelining, as clients send it."""

    def __init__(self, target_port):
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._guard = threading.Lock()
        self.connections = self.requests = self.in_flight = self.peak_requests = 0
        self.methods = collections.Counter()
        self.arrivals = []
        self.asked = []
        self.delay = 0.0
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        self._listener.close()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._guard:
                self.connections += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        pending = []  # the method of the request in flight on this connection, if any
        with client:
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                return
            with server:
                answers = threading.Thread(target=self._answers, args=(server, client, pending),
                                           daemon=True)
                answers.start()
                _stamping(client)
                try:
                    while True:
                        data, arrived = _stamped_recv(client)
                        if not data:
                            break
                        with self._guard:
                            starts = not pending
                            if starts:
                                pending.append(data.split(b" ", 1)[0])
                                method, path = data.split(b" ", 2)[:2]
                                self.methods[method.decode(), path.decode("latin-1")] += 1
                                self.arrivals.append(arrived)
                                self.asked.append((path.decode("latin-1"), _range_of(data)))
                                self.requests += 1
                                self.in_flight += 1
                                self.peak_requests = max(self.peak_requests, self.in_flight)
                        if starts and self.delay:
                            time.sleep(self.delay)
                        server.sendall(data)
                except OSError:
                    pass
                _shut(server)
                answers.join()

    def _answers(self, server, client, pending):
        head, left = b"", None  # (bytes of the answer's body still to come)
        try:
            while data := server.recv(65536):
                if left is None:
                    head += data
                    if b"\r\n\r\n" in head:
                        top, _, body = head.partition(b"\r\n\r\n")
                        length = re.search(rb"(?im)^content-length:\s*(\d+)", top)
                        bodiless = pending[:1] == [b"HEAD"] or top.split(b" ")[1:2] in (
                            [b"204"], [b"304"])
                        left = (0 if bodiless else int(length.group(1)) if length
                                else float("inf")) - len(body)
                else:
                    left -= len(data)
                if left is not None and left <= 0:
                    self._done(pending)  # before the client has it all
                    head, left = b"", None
                client.sendall(data)
        except OSError:
            pass
        self._done(pending)
        _shut(client)

    def _done(self, pending):
        with self._guard:
            if pending:
                pending.clear()
                self.in_flight -= 1


def _shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
