"""An HTTP request sent and its answer's first bytes received in one call
(zarrcore._native.http, csrc/files/zc_http.c)."""
import errno
import socket
import sys
import threading

import pytest

from zarrcore._native import http as _http

pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="Windows' build has no sockets of its own (ENOSYS)")


def test_ask_sends_the_request_and_receives_what_came_first():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        answer = bytearray(64)
        theirs.sendall(b"HTTP/1.1 200 OK\r\n")  # (waiting before the request is sent)
        got = _http.ask(ours.fileno(), b"GET / HTTP/1.1\r\n\r\n", answer)
        assert theirs.recv(100) == b"GET / HTTP/1.1\r\n\r\n"
        assert answer[:got] == b"HTTP/1.1 200 OK\r\n"


def test_ask_waits_for_the_answer_and_fills_at_most_the_buffer():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        def answer_after_the_request():
            theirs.recv(100)
            theirs.sendall(b"x" * 100)

        server = threading.Thread(target=answer_after_the_request)
        server.start()
        answer = bytearray(100)
        got = _http.ask(ours.fileno(), b"GET", memoryview(answer)[90:])
        server.join()
        assert got == 10 and answer[90:] == b"x" * 10


def test_ask_tells_a_closed_peer_and_a_failed_call():
    ours, theirs = socket.socketpair()
    with ours:
        theirs.close()
        with pytest.raises(OSError) as failed:
            _http.ask(ours.fileno(), b"GET", bytearray(8))  # (the request cannot go)
        assert failed.value.errno == errno.EPIPE
    ours, theirs = socket.socketpair()
    with ours:
        theirs.shutdown(socket.SHUT_WR)  # (it takes the request, answers nothing)
        assert _http.ask(ours.fileno(), b"GET", bytearray(8)) == 0
        theirs.close()
    with pytest.raises(OSError) as failed:
        _http.ask(-1, b"GET", bytearray(8))
    assert failed.value.errno == errno.EBADF
    with pytest.raises(ValueError, match="empty buffer"):
        _http.ask(0, b"GET", bytearray())


def test_a_signal_while_ask_waits_raises_what_its_handler_raises():
    """As Python's own socket calls: a handler's exception (Ctrl-C) ends the wait; a handler
    that raises nothing lets it go on."""
    import signal

    class Stop(Exception):
        pass

    def stop(signum, frame):
        raise Stop

    calls = []
    old = signal.signal(signal.SIGALRM, stop)
    ours, theirs = socket.socketpair()
    try:
        with ours, theirs:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            with pytest.raises(Stop):
                _http.ask(ours.fileno(), b"GET", bytearray(8))  # (no answer ever comes)
            signal.signal(signal.SIGALRM, lambda *_: calls.append(1))
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            threading.Timer(0.2, lambda: theirs.sendall(b"late")).start()
            answer = bytearray(8)
            assert _http.ask(ours.fileno(), b"GET", answer) == 4 and answer[:4] == b"late"
            assert calls == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
