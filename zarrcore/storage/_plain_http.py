"""A plain HTTP/1.1 client for the GETs of an http(s):// store's objects: the answers that go
as planned (a whole object, a byte range, a missing key).

Why: obstore spends about 0.35 ms of CPU on a GET of 0.5 MB over loopback, with a dozen
thread wakeups, where sockets read in the asking thread spend about 0.2 ms (tensorstore's
client 0.21). Random samples over a short round trip are that CPU on a small machine.

Anything else (another status, a redirect, a body sent in chunks or encoded, a dropped
connection, a timeout) is no answer here: ObjectStore then asks obstore, whose retries and
errors every failure goes through. A server whose answers this client cannot read at all
(chunked or encoded bodies, TLS it cannot verify) is left to obstore from then on."""

from __future__ import annotations

import functools
import heapq
import itertools
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple

import numpy as np

from .._native import http as _http
from .._native import memory as _memory
from ..runtime.link import Link
from ..runtime.portable import at_fork_in_child
from .base import BodyProgress, ByteRange

if TYPE_CHECKING:
    import ssl

__all__ = ["MISSING", "Answer", "PlainHTTP", "plain_client", "plain_path"]

# Paths sent as they are: obstore percent-encodes the rest, which is left to it.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._~/-]*")
# An answer's head larger than this is not a plain file server's.
_HEAD_BYTES = 64 << 10
_CONTENT_RANGE = re.compile(r"bytes ([0-9]+)-([0-9]+)/([0-9]+)")
_UNSATISFIED = re.compile(r"bytes \*/([0-9]+)")
_DIGITS = re.compile(r"[0-9]+")
# What one answer's body is handed to as it arrives: a BodyProgress with its range's place
# bound, (the body's buffer, how many of its bytes arrived) -> how many for the next call.
_OnBody = Callable[[memoryview, int], int]
_WAIT_ALL: Final = getattr(socket, "MSG_WAITALL", 0)
# The environment's proxies, which obstore's client takes (urllib's names).
_PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy"}
# Whether a lone request goes with its answer's first read (_http.ask: one release of the GIL
# for both, where sendall and recv_into release it once each: over a 5 ms link, a whole read
# of 512 chunks of 250 KB took 0.108-0.149 s and 0.084-0.138 s of CPU, with 4,100-4,700
# voluntary context switches, against 0.117-0.150 s, 0.103-0.144 s and 4,900-5,500).
# Windows' build has no sockets of its own.
_ASK_NATIVE = sys.platform != "win32"


class Answer(NamedTuple):
    """A body, the size of its whole object, and the object's ETag."""

    body: memoryview
    size: int
    e_tag: str | None


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


class _Sent(NamedTuple):
    """A request sent on a connection: the connection's order and last body rate
    (PlainHTTP._idle), the connection, whether it was opened for this request, when the
    request was sent, and the request itself where it is still to go, with the answer's
    first read (PlainHTTP._exchange)."""

    serial: int
    rate: float
    sock: socket.socket
    fresh: bool
    began: float
    unsent: bytes | None = None


class _Again:
    """PlainHTTP._answer's: send the request again, on a new connection."""


_AGAIN: Final = _Again()


class _Unreadable(Exception):
    """The server answers in a form this client does not read."""


class _NoAnswer(Exception):
    """This request got no answer this client takes (obstore is asked instead)."""


class PlainHTTP:
    """Keep-alive connections to one origin (scheme://host:port) and the GETs sent on
    them. Thread-safe: a request takes an idle connection or opens one."""

    def __init__(self, origin: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(origin)
        self._tls = parts.scheme == "https"
        self._address = (parts.hostname or "", parts.port or (443 if self._tls else 80))
        self._host = parts.netloc
        self._timeout = timeout
        # Idle connections, (-rate, order opened, connection): the one whose last timed body
        # came fastest is taken first, then the oldest. A server paces each connection by
        # what it has seen it carry (BBR: the most it delivered in a recent round trip), so
        # one that carried large bodies stays fast for small ones: over a 10 ms link, a
        # 0.53 MB body came in 4.6 ms on a connection that had carried such bodies, in
        # 0.56 ms on one that had carried 4 MB ones.
        self._idle: list[tuple[float, int, socket.socket]] = []
        self._guard = threading.Lock()
        self._opened = itertools.count()
        self._context: ssl.SSLContext | None = None
        # Set once the server answered in a form this client does not read.
        self.refused = False

    def forget_connections(self) -> None:
        """Drop the idle connections (in a forked child: the parent's, which it reads)."""
        with self._guard:
            idle, self._idle = self._idle, []
        for _, _, sock in idle:
            sock.close()

    def get(
        self,
        target: str,
        spans: Sequence[ByteRange],
        if_match: str | None,
        link: Link,
        on_body: BodyProgress | None = None,
    ) -> list[Answer] | _Missing | None:
        """GET `target` (a path below the origin) once for each span, all at once, each on
        a connection of its own, their answers read in the calling thread: the bytes
        [start:stop] of it that a span gives as Python's slice bounds (both None: all of it;
        a negative start without a stop: a suffix; a stop: never below start or 0), of the
        ETag `if_match` when given. With `on_body`, all on one connection, answered in turn,
        each body handed to it as it arrives (`_in_turn`). Their Answers, MISSING for a 404,
        None when this client has no answer to one of them (ask obstore)."""
        if self.refused:
            return None
        requests = [_request_bytes(self._host, target, span, if_match) for span in spans]
        if on_body is not None:
            return self._in_turn(requests, spans, link, on_body)
        # Every request sent before any answer is read: the answers arrive together, and
        # those read later wait in their sockets. A lone one goes with its answer's first read.
        lone = len(requests) == 1
        sent: list[_Sent | None] = [
            self._sent(request, fresh=False, with_answer=lone) for request in requests
        ]
        answers: list[Answer] = []
        try:
            for k, (request, span) in enumerate(zip(requests, spans)):
                taken, sent[k] = sent[k], None
                answer: Answer | _Missing | _Again | None = _AGAIN
                while taken is not None:
                    # (Timed where it is read first only: the others' bytes waited meanwhile.)
                    answer = self._answer(taken, span, link, k == 0, None)
                    if answer is not _AGAIN:
                        break
                    # (A lone request that failed on a kept connection, in its send or
                    # its first read, goes on the next kept one: the server may have closed
                    # each, which fails at once.)
                    taken = self._sent(request, fresh=not lone, with_answer=lone)
                if isinstance(answer, _Again):
                    return None
                if not isinstance(answer, Answer):
                    return answer
                answers.append(answer)
        finally:
            for unread in sent:  # (after a failure: their answers are never read)
                if unread is not None:
                    unread.sock.close()
        return answers

    def _in_turn(
        self,
        requests: Sequence[bytes],
        spans: Sequence[ByteRange],
        link: Link,
        on_body: BodyProgress,
    ) -> list[Answer] | _Missing | None:
        """`get` with `on_body`: the requests sent together on one connection (HTTP/1.1
        pipelining), so that a short answer that comes first (a shard's index) takes no
        connection of its own: with one each, a read of eight shards needed new connections,
        whose slow start took a 1.8 MB body 0.14-0.15 s over a 24 ms link, against 10-20 ms
        after the round trip on a kept one. Those left unanswered where the server closed
        it go again on a new one; the last one's times are the link's."""
        answers: list[Answer] = []
        ahead = bytearray()  # (the bytes of the next answer read with one before it)
        taken = self._sent(b"".join(requests), fresh=False)
        try:
            while taken is not None and len(answers) < len(spans):
                k = len(answers)
                last = k == len(spans) - 1
                progress = functools.partial(on_body, k)
                answer = self._answer(taken, spans[k], link, last, progress, ahead, not last)
                if isinstance(answer, Answer):
                    answers.append(answer)
                elif not isinstance(answer, _Again):
                    return answer
                if isinstance(answer, _Again) or (not last and taken.sock.fileno() < 0):
                    ahead.clear()
                    taken = self._sent(b"".join(requests[len(answers) :]), fresh=True)
        finally:
            if taken is not None and len(answers) < len(spans):
                taken.sock.close()  # (answers of it left unread)
        return answers if taken is not None else None

    def _sent(self, request: bytes, fresh: bool, with_answer: bool = False) -> _Sent | None:
        """A connection with `request` sent on it: an idle one unless `fresh` (or none is
        idle, or the server closed it), else a new one; None where none opens. `with_answer`:
        sent with the answer's first read instead, where this client can (_ASK_NATIVE)."""
        while True:
            taken = None if fresh else self._connection(kept=True)
            if taken is None:
                fresh = True
                taken = self._connection(kept=False)
                if taken is None:
                    return None
            serial, rate, sock = taken
            began = time.monotonic()
            if with_answer and _ASK_NATIVE and not self._tls:
                return _Sent(serial, rate, sock, fresh, began, request)
            try:
                sock.sendall(request)
            except OSError:
                sock.close()
                if fresh:
                    return None
                continue
            return _Sent(serial, rate, sock, fresh, began)

    def _answer(
        self,
        sent: _Sent,
        span: ByteRange,
        link: Link,
        timed: bool,
        on_body: _OnBody | None,
        ahead: bytearray | None = None,
        then: bool = False,
    ) -> Answer | _Missing | _Again | None:
        """The answer to the request `sent` (a connection it went on), whose times `link`
        learns from where `timed`, its body handed to `on_body` as it arrives; _AGAIN where a
        kept connection the server closed meanwhile failed before any answer (the request
        goes on a new one); None where there is no answer this client takes. `ahead`: its
        first bytes, read with the answer before. The connection goes back to the idle ones,
        or is closed, but where another answer follows on it (`then`): it stays open, and the
        bytes read past this answer go to `ahead`."""
        sock = sent.sock
        try:
            answer, reusable, rate = self._exchange(
                sent, span, link if timed else None, on_body, ahead, then
            )
        except _Unreadable:
            self.refused = True
            sock.close()
            return None
        except _NoAnswer:
            sock.close()
            return None
        except OSError as e:
            sock.close()
            return _AGAIN if not sent.fresh and isinstance(e, ConnectionError) else None
        if not reusable:
            sock.close()
        elif not then:
            with self._guard:
                heapq.heappush(self._idle, (-rate, sent.serial, sock))
                link.kept(len(self._idle), self._idle_rates)
        return answer

    def _idle_rates(self) -> list[float]:
        """The last body rate of each idle connection."""
        with self._guard:
            return [-rate for rate, _, _ in self._idle]

    def _connection(self, kept: bool) -> tuple[int, float, socket.socket] | None:
        """(The order it was opened in, its last body rate, an idle connection (`kept`; None
        when there is none) or a new one)."""
        if kept:
            with self._guard:
                if not self._idle:
                    return None
                rate, serial, sock = heapq.heappop(self._idle)
                return serial, -rate, sock
        try:
            sock = socket.create_connection(self._address, timeout=self._timeout)
        except OSError:
            return None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls:
            import ssl  # (not at import: it costs 14 ms there)

            try:
                if self._context is None:
                    self._context = ssl.create_default_context()
                sock = self._context.wrap_socket(sock, server_hostname=self._address[0])
            except (ssl.SSLError, ssl.CertificateError):
                self.refused = True
                sock.close()
                return None
            except OSError:
                sock.close()
                return None
        else:
            # Blocking, with the timeout the kernel's: a body is then read in one call that
            # wakes this thread once, not once for every piece the connection delivers.
            sock.settimeout(None)
            _kernel_timeouts(sock, self._timeout)
        return next(self._opened), 0.0, sock

    def _exchange(
        self,
        sent: _Sent,
        span: ByteRange,
        link: Link | None,
        on_body: _OnBody | None,
        ahead: bytearray | None,
        then: bool,
    ) -> tuple[Answer | _Missing, bool, float]:
        """(The answer to the request `sent`, whether its connection may carry another, the
        connection's body rate: this body's where `link` times it, else its last); a 200 or
        206 body is handed to `on_body` as it arrives. `ahead`: this answer's bytes read
        before; where another answer follows (`then`), those read past it go there."""
        sock, began = sent.sock, sent.began
        deadline = began + self._timeout
        head = _head_buffer()
        have = 0
        if ahead:
            have = len(ahead)
            if have > len(head):
                raise _NoAnswer
            head[:have] = ahead
            ahead.clear()
        unsent = sent.unsent  # (sent with the first receive, in one call)
        end = head.find(b"\r\n\r\n", 0, have)
        while end < 0 or unsent is not None:
            if have == len(head) or time.monotonic() > deadline:
                raise _NoAnswer
            if unsent is not None:
                got = _http.ask(sock.fileno(), unsent, memoryview(head)[have:])
                unsent = None
            else:
                got = sock.recv_into(memoryview(head)[have:])
            if not got:
                raise _Empty if have == 0 else _NoAnswer
            have += got
            end = head.find(b"\r\n\r\n", 0, have)
        answered = time.monotonic()
        if link is not None:
            link.observe_answer(answered - began)
        arrived = memoryview(head)[end + 4 : have]  # (the body's first bytes, if any)
        status, fields = _parse_head(head[:end])
        if (
            fields.get("transfer-encoding")
            or fields.get("content-encoding", "identity") != "identity"
        ):
            raise _Unreadable
        if not _DIGITS.fullmatch(fields.get("content-length", "")):
            raise _NoAnswer if status >= 300 else _Unreadable
        length = int(fields["content-length"])
        if then and ahead is not None and len(arrived) > length:  # (the next answer's)
            ahead[:] = arrived[length:]
            arrived = arrived[:length]
        reusable = fields.get("connection", "").lower() != "close"
        if status == 404 and 0 <= length <= _HEAD_BYTES:
            # (Its body read, the connection carries the next request.)
            self._body(sock, arrived, length, deadline, None)
            return MISSING, reusable, sent.rate
        if span == (None, None) and status == 200:
            size = length
        elif span != (None, None) and status == 206:
            matched = _CONTENT_RANGE.fullmatch(fields.get("content-range", ""))
            if matched is None:
                raise _NoAnswer
            start, last, size = (int(g) for g in matched.groups())
            lo, hi, _ = slice(*span).indices(size)
            if (start, last + 1) != (lo, hi) or last - start + 1 != length:
                raise _NoAnswer
        elif status == 416 and span[0] is not None and span[0] >= 0 and length <= _HEAD_BYTES:
            # (A range past the end: empty, as Python's slice, with the object's size.)
            matched = _UNSATISFIED.fullmatch(fields.get("content-range", ""))
            if matched is None or int(matched[1]) > span[0]:
                raise _NoAnswer
            self._body(sock, arrived, length, deadline, None)
            answer = Answer(memoryview(b""), int(matched[1]), fields.get("etag"))
            return answer, reusable, sent.rate
        else:
            raise _NoAnswer  # (a range answered whole goes to obstore, which cuts it)
        body, busy = self._body(sock, arrived, length, deadline, on_body)
        timed = None
        if link is not None:  # (not the time on_body took: the connection's pace)
            timed = link.observe_body(time.monotonic() - answered - busy, length - len(arrived))
        rate = sent.rate if timed is None else timed
        return Answer(body, size, fields.get("etag")), reusable, rate

    def _body(
        self,
        sock: socket.socket,
        arrived: memoryview,
        length: int,
        deadline: float,
        on_body: _OnBody | None,
    ) -> tuple[memoryview, float]:
        """(The `length` bytes of a body whose first bytes `arrived` with its head, the rest
        read from `sock`; the seconds `on_body` took.) `on_body(body, filled)` is called
        once `filled` bytes arrived, first with those that came with the head, and gives how
        many must have arrived for its next call (more than `length`: none)."""
        extra = len(arrived)
        if extra > length:
            raise _NoAnswer
        # (Uninitialised and pooled: zeroing half a MB and faulting it in cost more CPU than
        # the rest of a request.)
        view = memoryview(_memory.empty((length,), np.uint8))
        view[:extra] = arrived
        body = view.toreadonly()
        at, busy = extra, 0.0
        wanted = 0 if on_body is not None else length + 1  # (a first call: what came)
        while True:
            if on_body is not None and at >= wanted:
                began = time.monotonic()
                wanted = on_body(body, at)
                busy += time.monotonic() - began
            if at == length:
                return body, busy
            # (Up to what on_body waits for: one wakeup each, the rest left in the socket.)
            upto = wanted if at < wanted < length else length
            got = sock.recv_into(view[at:], upto - at, 0 if self._tls else _WAIT_ALL)
            if not got or time.monotonic() > deadline:
                raise _NoAnswer
            at += got


def _request_bytes(host: str, target: str, span: ByteRange, if_match: str | None) -> bytes:
    """The GET of `span` of `target` at `host` (PlainHTTP.get)."""
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
    start, stop = span
    if stop is not None:
        lines.append(f"Range: bytes={start or 0}-{stop - 1}")
    elif start is not None:
        lines.append(f"Range: bytes={start}" if start < 0 else f"Range: bytes={start}-")
    if if_match is not None:
        lines.append(f"If-Match: {if_match}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


_heads = threading.local()


def _head_buffer() -> bytearray:
    """The calling thread's buffer for an answer's head (and the body's first bytes, copied
    out of it before the next request): one for all its requests, not one zeroed for each."""
    head: bytearray | None = getattr(_heads, "buffer", None)
    if head is None:
        head = _heads.buffer = bytearray(_HEAD_BYTES)
    return head


class _Empty(ConnectionError):
    """A connection closed before any byte of an answer (a kept one the server let go)."""


def _parse_head(head: bytearray) -> tuple[int, dict[str, str]]:
    """(status, lower-cased header fields) of an answer's head."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise _NoAnswer
    try:
        status = int(rest[:3])
    except ValueError:
        raise _NoAnswer from None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return status, fields


def _kernel_timeouts(sock: socket.socket, seconds: float) -> None:
    """Each send and receive on the blocking `sock` fails after `seconds` without progress."""
    if sys.platform == "win32":
        value = struct.pack("I", max(1, int(seconds * 1000)))
    else:
        whole = int(seconds)
        value = struct.pack("ll", whole, int((seconds - whole) * 1e6))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


_clients: dict[tuple[str, float], PlainHTTP] = {}
_clients_guard = threading.Lock()


def plain_client(url: str, timeout: float) -> tuple[PlainHTTP, str] | None:
    """(The process's plain client of `url`'s origin, the path below it that `url` names),
    or None when obstore must send the store's requests: a URL with credentials, a query or
    a path of other characters, or a proxy in the environment."""
    parts = urllib.parse.urlsplit(url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username is not None
        or parts.query
        or parts.fragment
        or not _PLAIN_PATH.fullmatch(parts.path)
        or _PROXY_VARIABLES & {name.lower() for name in os.environ}
    ):
        return None
    origin = f"{parts.scheme}://{parts.netloc}"
    with _clients_guard:
        client = _clients.get((origin, timeout))
        if client is None:
            client = _clients[origin, timeout] = PlainHTTP(origin, timeout)
    return client, parts.path.rstrip("/")


def plain_path(key: str) -> bool:
    """May `key` go in a request's path as it is?"""
    return _PLAIN_PATH.fullmatch(key) is not None


def _forget_all() -> None:
    for client in list(_clients.values()):
        client.forget_connections()


at_fork_in_child(_forget_all)
