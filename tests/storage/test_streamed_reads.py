"""Streamed reads of an http(s):// store (StreamingReader.get_streamed): the ranges asked on
one connection and answered in turn, each body handed on while it arrives."""
import pickle
import socket
import time

import numpy as np
import pytest

from zarrcore.runtime.link import Link
from zarrcore.storage import make_store
from zarrcore.storage._plain_http import Answer, _Sent

from servers import RangeHTTPServer

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")


class Progress:
    """A BodyProgress that notes each call and asks to be called again every `step` bytes,
    and at the body's end (not after it)."""

    def __init__(self, step):
        self.step, self.calls = step, []

    def __call__(self, part, body, filled):
        self.calls.append((part, filled, len(body), bytes(body[:filled])))
        return len(body) + 1 if filled == len(body) else min(filled + self.step, len(body))


def _blob(server, name, size):
    data = np.random.default_rng(size).bytes(size)
    with open(f"{server.root}/{name}", "wb") as f:
        f.write(data)
    return data


def _new_connections(plain, monkeypatch):
    """A list that grows by one for each connection `plain` opens."""
    opened, connection = [], plain._connection

    def counted(kept):
        if not kept:
            opened.append(1)
        return connection(kept)

    monkeypatch.setattr(plain, "_connection", counted)
    return opened


def test_a_streamed_read_asks_its_ranges_in_turn_on_one_connection(http_server, monkeypatch):
    from zarrcore.storage import objectstore

    blob = _blob(http_server, "streamed", 300_000)
    store = make_store(http_server.url)
    assert store.streams_reads and pickle.loads(pickle.dumps(store)).streams_reads
    monkeypatch.setattr(objectstore, "get_body", lambda *args: pytest.fail("asked obstore"))
    store._plain.forget_connections()  # (the session's server: other tests' connections)
    opened = _new_connections(store._plain, monkeypatch)
    progress = Progress(50_000)
    with store.reader("streamed") as reader:
        parts = reader.get_streamed([(-100, None), (0, None)], progress)
    assert [bytes(p) for p in parts] == [blob[-100:], blob]
    assert http_server.requests == 2 and opened == [1] and len(store._plain._idle) == 1
    index = [c for c in progress.calls if c[0] == 0]
    assert index[-1][1:3] == (100, 100) and index[-1][3] == blob[-100:]
    body = [c for c in progress.calls if c[0] == 1]
    # (each call once the bytes it asked for arrived: every 50 kB, the last at the end)
    assert [filled for _, filled, _, _ in body][-1] == 300_000
    for (_, before, _, _), (_, filled, size, seen) in zip(body, body[1:]):
        assert filled >= before + 50_000 or filled == size
        assert seen == blob[:filled]


def test_a_streamed_read_goes_on_where_the_server_closed_after_an_answer(
    http_server, monkeypatch
):
    """An answer that says "Connection: close": the ranges not answered go again, on a new
    connection."""
    blob = _blob(http_server, "closing", 20_000)
    store = make_store(http_server.url)
    store._plain.forget_connections()
    opened = _new_connections(store._plain, monkeypatch)
    http_server.faults.close = True
    with store.reader("closing") as reader:
        parts = reader.get_streamed([(-10, None), (0, 5000), (5000, None)], Progress(1000))
    assert [bytes(p) for p in parts] == [blob[-10:], blob[:5000], blob[5000:]]
    assert opened == [1, 1, 1] and store._plain._idle == []


def test_a_streamed_read_of_a_missing_key_is_none_and_leaves_no_answer_unread(tmp_path):
    # (A server of its own: the second request, sent with the first, may reach it after the
    # test, where another test would count it.)
    server = RangeHTTPServer(str(tmp_path))
    try:
        store = make_store(server.url)
        progress = Progress(10)
        with store.reader("absent-streamed") as reader:
            assert reader.get_streamed([(-10, None), (0, None)], progress) is None
        assert progress.calls == [] and store._plain._idle == []
    finally:
        server.stop()


def test_the_answer_read_with_the_one_before_it_is_kept_for_its_turn():
    """Two answers that arrive in one read: the bytes past the first are the second's."""
    ours, theirs = socket.socketpair()
    first = b"0123456789"
    second = bytes(range(256)) * 40
    theirs.sendall(
        b"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n"
        b"Content-Range: bytes 10230-10239/10240\r\nETag: \"v\"\r\n\r\n" + first
        + b"HTTP/1.1 206 Partial Content\r\nContent-Length: 10240\r\n"
        b"Content-Range: bytes 0-10239/10240\r\nETag: \"v\"\r\n\r\n" + second
    )
    from zarrcore.storage._plain_http import PlainHTTP

    plain, link = PlainHTTP("http://127.0.0.1:9", 5.0), Link()
    sent = _Sent(0, 0.0, ours, True, time.monotonic())
    ahead, progress = bytearray(), Progress(4096)
    answer = plain._answer(sent, (-10, None), link, False, None, ahead, then=True)
    assert answer == Answer(memoryview(first), 10240, '"v"') and len(ahead) > 0
    answer = plain._answer(sent, (0, None), link, True, lambda *a: progress(1, *a), ahead)
    assert isinstance(answer, Answer) and bytes(answer.body) == second
    # (first with the bytes read before, last once all came)
    assert progress.calls[0][1] > 0 and progress.calls[-1][1] == len(second)
    assert plain._idle and plain._idle[0][2] is ours
    theirs.close()
    plain.forget_connections()
