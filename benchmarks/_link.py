#!/usr/bin/env python3
"""An emulated network link with latency on every packet, for benchmarks over a real network.

The kernel here has no sch_netem, so the delay is a userspace relay: a network namespace for
the servers (`zclink`) joined to the root namespace by two tun devices, point to point
(10.77.0.1 here, 10.77.0.2 in the namespace), and a small C program (`_link_relay.c`,
compiled on first use with `cc -O2` into benchmarks/data/_link/) that reads the packets of
each device and writes them to the other `delay` ms after they arrived, first in first out in
each direction, optionally through a serializing link of `rate_mbit` Mbit/s with a tail-drop
buffer. MTU 1500. Every packet pays the delay, so a TCP handshake costs one round trip
(2 x delay), slow start and the window limit behave as on a real path, and so do many
connections sharing a link. The devices have TCP segmentation offload, as a NIC with TSO and
GRO: a burst of up to 64 KiB of segments crosses as one packet (the stacks still use the
MTU's segment size), so the relay is not the bottleneck; `offload=False` (`--no-offload`)
moves every 1500-byte packet on its own, at a fraction of the throughput.

Clients (the benchmarked processes) stay in the root namespace and reach the servers at
`Link.server_addr`; servers run inside the namespace (`Link.spawn`, i.e. `ip netns exec`).

    python benchmarks/_link.py --delay 20 -- cmd ...   # cmd here, with the link up
    python benchmarks/_link.py --delay 20              # hold the link until Ctrl-C
    python benchmarks/_link.py --selftest              # round trip and TCP throughput

    with Link(delay_ms=20) as link:
        server = link.spawn(["python3", "-m", "http.server", "8000"])
        link.wait_port(8000)
        ... http://{link.server_addr}:8000/ ...

The command of the first form gets ZC_LINK_NETNS, ZC_LINK_SERVER, ZC_LINK_CLIENT and
ZC_LINK_DELAY_MS in its environment. Needs root and /dev/net/tun. Everything is removed on
exit, on Ctrl-C and on SIGTERM (the servers, the namespace, the relay and with it the
devices); a run killed outright leaves the namespace, which the next run removes. A lock
(/tmp/<name>.lock) keeps two runs from sharing one name: by default a run takes the first
free of zclink (10.77.0.x), zclink1 (10.78.0.x), ... zclink7; `--name` and `--subnet` pick
one.
"""
import argparse
import atexit
import contextlib
import fcntl
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RELAY_SRC = os.path.join(HERE, "_link_relay.c")
CACHE = os.path.join(HERE, "data", "_link")


class LinkError(RuntimeError):
    pass


def relay_binary():
    """The compiled relay, built on first use (and again when its source changes)."""
    with open(RELAY_SRC, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    exe = os.path.join(CACHE, f"relay-{digest}")
    if not os.path.exists(exe):
        os.makedirs(CACHE, exist_ok=True)
        tmp = f"{exe}.{os.getpid()}.tmp"
        r = subprocess.run(["cc", "-O2", "-pthread", "-o", tmp, RELAY_SRC],
                           capture_output=True, text=True)
        if r.returncode:
            raise LinkError(f"compiling {RELAY_SRC} failed:\n{r.stderr}")
        os.replace(tmp, exe)
    return exe


def _ip(*args, check=True, netns=None):
    cmd = ["ip"] + (["-n", netns] if netns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode:
        raise LinkError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


def check_allowed():
    """Raise LinkError saying why this process cannot make a link, if it cannot."""
    if os.geteuid() != 0:
        raise LinkError("the emulated link needs root (network namespaces and tun devices)")
    if not os.path.exists("/dev/net/tun"):
        raise LinkError("no /dev/net/tun: the kernel has no tun device (modprobe tun?)")
    try:
        os.close(os.open("/dev/net/tun", os.O_RDWR))
    except OSError as e:
        raise LinkError(f"cannot open /dev/net/tun: {e}") from None
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode:
        raise LinkError("`ip netns` does not work here (iproute2 missing?)")


class Link:
    """The link; a context manager. `server_addr` is the namespace's address, `client_addr`
    the root namespace's, `netns` the namespace's name; `stats` (after stop) the relay's
    counts per direction."""

    def __init__(self, delay_ms=20.0, rate_mbit=None, buffer_ms=None, mtu=1500,
                 name=None, subnet=None, queue_mib=256, offload=True):
        self.delay_ms = float(delay_ms)
        self.rate_mbit = rate_mbit
        # A buffer of one round trip at the link's rate (the usual rule) unless told.
        self.buffer_ms = float(buffer_ms) if buffer_ms is not None else max(
            2 * self.delay_ms, 5.0)
        self.mtu = int(mtu)
        self._choices = ([(name or "zclink", subnet or "10.77.0")] if name or subnet else
                         [(f"zclink{i or ''}", f"10.{77 + i}.0") for i in range(8)])
        self._name(*self._choices[0])
        self.queue_bytes = int(queue_mib * 2**20)
        self.offload = bool(offload)
        self.stats = None
        self._relay = None
        self._children = []
        self._lock = None
        self._old_handlers = {}
        self._started = False

    def _name(self, name, subnet):
        self.netns = name
        self.dev_client, self.dev_server = f"{name}0", f"{name}1"
        self.client_addr, self.server_addr = f"{subnet}.1", f"{subnet}.2"

    # -- set up and tear down ------------------------------------------------------------

    def _take_name(self):
        """Lock the first free name of the choices (another run holds the others)."""
        for name, subnet in self._choices:
            lock = open(f"/tmp/{name}.lock", "w")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            self._name(name, subnet)
            return lock
        names = ", ".join(n for n, _ in self._choices)
        raise LinkError(f"every link name ({names}) is in use by another run "
                        f"(/tmp/<name>.lock)")

    def start(self):
        check_allowed()
        exe = relay_binary()
        self._lock = self._take_name()
        self._lock.write(str(os.getpid()))
        self._lock.flush()
        self._remove_leftovers()
        self._started = True
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, _raise_exit)
        atexit.register(self.stop)
        try:
            _ip("netns", "add", self.netns)
            _ip("link", "set", "lo", "up", netns=self.netns)
            rate_bps = int(self.rate_mbit * 1e6) if self.rate_mbit else 0
            self._relay = subprocess.Popen(
                [exe, self.dev_client, self.dev_server, str(int(self.delay_ms * 1000)),
                 str(rate_bps), str(int(self.buffer_ms * 1000)), str(self.queue_bytes),
                 str(int(self.offload))],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if self._relay.stdout.readline().strip() != "ready":
                raise LinkError(f"the relay did not start: {self._relay.stderr.read()}")
            # The device that serves the namespace moves there, its file descriptor staying
            # with the relay.
            _ip("link", "set", self.dev_server, "netns", self.netns)
            for dev, here, peer, ns in ((self.dev_client, self.client_addr, self.server_addr,
                                         None),
                                        (self.dev_server, self.server_addr, self.client_addr,
                                         self.netns)):
                _ip("addr", "add", here, "peer", peer, "dev", dev, netns=ns)
                _ip("link", "set", dev, "mtu", str(self.mtu), "txqueuelen", "10000", "up",
                    netns=ns)
        except BaseException:
            self.stop()
            raise
        return self

    def _remove_leftovers(self):
        """What a run killed outright left behind under this name."""
        if self.netns in _ip("netns", "list", check=False).stdout.split():
            self._kill_namespace_pids()
            _ip("netns", "del", self.netns, check=False)
        for dev in (self.dev_client, self.dev_server):
            _ip("link", "del", dev, check=False)

    def _kill_namespace_pids(self, sig=signal.SIGKILL):
        pids = _ip("netns", "pids", self.netns, check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), sig)
        return pids

    def stop(self):
        if not self._started:
            return
        self._started = False
        for proc in self._children:
            _stop_process(proc)
        self._children.clear()
        if self._kill_namespace_pids(signal.SIGTERM):
            time.sleep(0.2)
            self._kill_namespace_pids()
        if self._relay is not None:
            if self._relay.poll() is None:
                self._relay.terminate()
            try:
                _, err = self._relay.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                self._relay.kill()
                _, err = self._relay.communicate()
            self.stats = err.strip()
            self._relay = None
        _ip("netns", "del", self.netns, check=False)
        for dev in (self.dev_client, self.dev_server):
            _ip("link", "del", dev, check=False)
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers.clear()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- running things on either side ------------------------------------------------------

    def netns_cmd(self, cmd):
        """`cmd` (a list) run inside the server namespace."""
        return ["ip", "netns", "exec", self.netns] + list(cmd)

    def spawn(self, cmd, **kwargs):
        """Start a server inside the namespace (a Popen, in a session of its own); it is
        stopped when the link stops."""
        kwargs.setdefault("start_new_session", True)
        proc = subprocess.Popen(self.netns_cmd(cmd), **kwargs)
        self._children.append(proc)
        return proc

    def run(self, cmd, **kwargs):
        """subprocess.run of `cmd` inside the namespace."""
        return subprocess.run(self.netns_cmd(cmd), **kwargs)

    def wait_port(self, port, timeout=30.0, proc=None):
        """Wait until a server in the namespace accepts connections on `port`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise LinkError(f"the server exited ({proc.returncode}) before listening "
                                f"on port {port}")
            with socket.socket() as s:
                s.settimeout(max(1.0, 4 * self.delay_ms / 1000))
                try:
                    s.connect((self.server_addr, port))
                    return
                except OSError:
                    time.sleep(0.05)
        raise LinkError(f"nothing listens on {self.server_addr}:{port} after {timeout} s")

    def env(self):
        return {"ZC_LINK_NETNS": self.netns, "ZC_LINK_SERVER": self.server_addr,
                "ZC_LINK_CLIENT": self.client_addr, "ZC_LINK_DELAY_MS": f"{self.delay_ms:g}"}


def _raise_exit(sig, frame):
    raise SystemExit(128 + sig)


def _stop_process(proc, timeout=5.0):
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# -- the self test: round trip and TCP throughput ---------------------------------------------

# A server for the self test, run in the namespace: each connection sends a 32-byte header,
# "get N" (the server sends N bytes) or "put N" (the server reads N bytes and answers one
# byte), then the server closes.
_SINK_SOURCE = r"""
import socket, sys, threading
BLOCK = memoryview(bytes(1 << 20))
def serve(c):
    with c:
        line = b""
        while len(line) < 32:
            part = c.recv(32 - len(line))
            if not part:
                return
            line += part
        op, n = line.split()
        n = int(n)
        if op == b"get":
            while n > 0:
                n -= c.send(BLOCK[:min(n, len(BLOCK))])
        else:
            buf = bytearray(1 << 20)
            while n > 0:
                got = c.recv_into(buf)
                if not got:
                    return
                n -= got
            c.sendall(b"k")
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(256)
while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def _transfer(addr, port, op, nbytes):
    with socket.create_connection((addr, port), timeout=30) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sendall(f"{op} {nbytes}".encode().ljust(32))
        if op == "get":
            buf = bytearray(1 << 20)
            n = nbytes
            while n > 0:
                got = c.recv_into(buf)
                if not got:
                    raise LinkError("connection closed early")
                n -= got
        else:
            block = memoryview(bytes(1 << 20))
            n = nbytes
            while n > 0:
                n -= c.send(block[:min(n, len(block))])
            c.recv(1)


def throughput(addr, port, op, streams, total_bytes):
    """MB/s moving `total_bytes` over `streams` concurrent connections, each new (so slow
    start is counted, as in a request of that size)."""
    each = total_bytes // streams
    errors = []

    def one():
        try:
            _transfer(addr, port, op, each)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(streams)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return each * streams / dt / 1e6, dt


def connect_rtt(addr, port, n=10):
    """Median time of a TCP connect (one round trip: SYN, SYN-ACK) in ms."""
    times = []
    for _ in range(n):
        with socket.socket() as s:
            t0 = time.perf_counter()
            s.connect((addr, port))
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def selftest(link, mib=256, port=9099):
    """Round trip and throughput over the link; a dict, printed as it goes."""
    server = link.spawn([sys.executable, "-c", _SINK_SOURCE, str(port)])
    link.wait_port(port, proc=server)
    out = {"delay_ms": link.delay_ms, "rate_mbit": link.rate_mbit, "mtu": link.mtu,
           "offload": link.offload}
    out["connect_rtt_ms"] = connect_rtt(link.server_addr, port)
    print(f"TCP connect (one round trip): {out['connect_rtt_ms']:.1f} ms", flush=True)
    for op in ("get", "put"):
        for streams in (1, 8):
            total = mib << 20
            # Warm-up transfer first: the first connection's slow start is the same for all.
            mbs, dt = throughput(link.server_addr, port, op, streams, total)
            out[f"{op}_{streams}_MBps"] = round(mbs, 1)
            print(f"{'download' if op == 'get' else 'upload'} {mib} MiB over {streams} "
                  f"stream{'s' if streams > 1 else ''}: {mbs:.0f} MB/s ({dt:.2f} s)",
                  flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delay", type=float, default=20.0, help="ms each way (20: RTT 40 ms)")
    ap.add_argument("--rate-mbit", type=float, default=None,
                    help="bandwidth cap per direction, Mbit/s (default none)")
    ap.add_argument("--buffer-ms", type=float, default=None,
                    help="with --rate-mbit: the most a packet queues before it is dropped "
                         "(default one round trip)")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--no-offload", action="store_true",
                    help="no segmentation offload: every MTU-sized packet crosses alone")
    ap.add_argument("--name", default=None,
                    help="namespace name and device prefix (default: the first free of "
                         "zclink, zclink1, ... zclink7)")
    ap.add_argument("--subnet", default=None,
                    help="the first three octets (default 10.77.0 for zclink, 10.78.0 for "
                         "zclink1, ...)")
    ap.add_argument("--selftest", action="store_true",
                    help="measure the round trip and TCP throughput, then exit")
    ap.add_argument("--selftest-mib", type=int, default=256)
    ap.add_argument("cmd", nargs=argparse.REMAINDER,
                    help="-- cmd ...: run cmd in the root namespace with the link up")
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    link = Link(delay_ms=args.delay, rate_mbit=args.rate_mbit, buffer_ms=args.buffer_ms,
                mtu=args.mtu, name=args.name, subnet=args.subnet, offload=not args.no_offload)
    try:
        with link:
            if args.selftest:
                selftest(link, mib=args.selftest_mib)
                rc = 0
            elif cmd:
                try:
                    rc = subprocess.run(cmd, env={**os.environ, **link.env()}).returncode
                except OSError as e:
                    print(f"_link.py: {e}", file=sys.stderr)
                    rc = 127
            else:
                print(f"link up: {link.client_addr} (here) <-> {link.server_addr} "
                      f"(`ip netns exec {link.netns} ...`), {link.delay_ms:g} ms each way; "
                      f"Ctrl-C ends it", flush=True)
                rc = 0
                with contextlib.suppress(KeyboardInterrupt):
                    while True:
                        time.sleep(3600)
    except LinkError as e:
        print(f"_link.py: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        rc = 130
    if link.stats:
        print(link.stats, file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
