"""A process that runs obstore's requests for a process forked after obstore ran there.

obstore's tokio runtime keeps its threads in the process that started it: a forked child
inherits the runtime but not its threads, and every request there (on the parent's store
objects or on new ones alike) waits forever. Such a child has this file run as its helper
(_obstore_runtime._ForkedObstore) and sends it each call over a socket: this process builds
the stores from their pickles, so its connections are its own, and answers every call as it
finishes (many in flight at once, each on a thread blocked in obstore's synchronous call:
no asyncio, whose import, ssl's with it, would double an interpreter's start and cost each
request more). It ends when the socket closes, so when the child ends, however it ends.

Started as `... template FD`, it is a template instead: a process that forks after obstore
ran starts one first (_obstore_runtime._start_template), which imports obstore and waits. A
child then hands it one end of a new socket pair (over the socket FD, which every child of
that process inherits), and the template forks a helper for it: obstore's runtime has not
started there, so the fork is safe, and the helper is ready in a millisecond rather than an
interpreter's start. The process sends it the pickles of the stores it uses, which the
template builds (a client each, 5-30 ms): its helpers find them built. Once idle, the template
forks a spare helper ahead, which starts obstore's runtime and a thread for calls (asking no
server anything: a process that forks no worker sends no request more), and hands it the
next child's socket. Where
building one started threads (obstore may start its runtime to find credentials), forking
the template is no longer safe, so it starts afresh as a new interpreter, with nothing
built. The template ends when every process that holds the other end of FD has ended.

Standard library and obstore only: it runs before anything else is imported, as a module of
its own (`main`; the package imports it only where obstore runs, for HEADER and
receive_exactly).
Frames both ways: 8 bytes of length (little-endian), then a pickle. A call is
(id, op, store pickle, args, kwargs); an answer (id, True, value) or (id, False,
(module, class name, text)) of the exception it raised. To the template, one message each:
b"h" with a socket to fork a helper for, or b"s" and a store's pickle to build.
"""

import collections
import os
import pickle
import queue
import select
import signal
import socket
import struct
import sys
import threading
from typing import Any

import obstore

# A frame's head: its length (_obstore_runtime frames its calls and reads the answers so too).
HEADER = struct.Struct("<Q")
# Calls a helper runs at once (each a thread blocked in obstore's synchronous call): more than
# a process keeps in flight (its io_concurrency); the rest wait their turn.
_CALLS_AT_ONCE = 128
# Stores built from their pickles, the least recently used forgotten past this many.
_STORES_KEPT = 64
# The largest message the template takes (a store's pickle is about a kilobyte).
_TEMPLATE_MESSAGE = 1 << 16
# (In the template) the stores built ahead from their pickles, which its helpers inherit.
_built: collections.OrderedDict[bytes, Any] = collections.OrderedDict()
# Seconds the template waits for no message before it forks a spare: not while children are
# forked one after another, whose helpers' first requests the spare's start would slow.
_SPARE_AFTER = 0.1


def _keep(stores: collections.OrderedDict[bytes, Any], blob: bytes, store: Any) -> None:
    stores[blob] = store
    stores.move_to_end(blob)
    if len(stores) > _STORES_KEPT:
        stores.popitem(last=False)


def _answer(op: str, store: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The value of obstore's call `op` (the name of the call the calling process made)."""
    if op == "get":
        result = obstore.get(store, *args, **kwargs)
        return result.meta, result.range, bytes(result.bytes())
    if op == "get_ranges":
        return [bytes(p) for p in obstore.get_ranges(store, *args, **kwargs)]
    if op == "list":
        return [list(batch) for batch in obstore.list(store, *args, **kwargs)]
    if op == "warm":  # the client built, the runtime started and a connection opened
        try:
            obstore.head(store, *args)
        except BaseException:  # (missing, as it should be; or failing: a real call says why)
            pass
        return None
    if op in ("head", "put", "delete", "list_with_delimiter"):
        return getattr(obstore, op)(store, *args, **kwargs)
    raise ValueError(f"no such call: {op!r}")


def receive_exactly(sock: socket.socket, size: int) -> bytes:
    """The next `size` bytes from `sock`; EOFError where it ends first."""
    parts, left = [], size
    while left:
        part = sock.recv(min(left, 1 << 20))
        if not part:
            raise EOFError
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class _Calls:
    """Threads that run the calls submitted, in order: up to `limit`, each started when a
    call finds none idle. (Not concurrent.futures' pool, whose import of logging is a third
    of the template's start.) Never shut down: the process ends with os._exit."""

    def __init__(self, limit: int) -> None:
        self._waiting: queue.SimpleQueue[tuple[Any, tuple[Any, ...]]] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._left = limit

    def submit(self, call: Any, *args: Any) -> None:
        self._waiting.put((call, args))
        if not self._idle.acquire(blocking=False) and self._left > 0:
            self._left -= 1  # (submit is called by one thread only)
            threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        while True:
            call, args = self._waiting.get()
            call(*args)
            del call, args  # (nothing of the call kept while idle)
            self._idle.release()


def _serve(sock: socket.socket, calls: _Calls | None = None) -> None:
    """Answer each call that comes over `sock`, on threads (many in flight at once), until
    it closes; `calls`: a spare's (`_spare`)."""
    stores = _built.copy()
    calls = _Calls(_CALLS_AT_ONCE) if calls is None else calls
    stores_guard, send_guard = threading.Lock(), threading.Lock()

    def store_of(blob: bytes) -> Any:
        with stores_guard:
            store = stores.get(blob)
        if store is None:
            store = pickle.loads(blob)
        with stores_guard:
            _keep(stores, blob, store)
        return store

    def call(
        ident: int, op: str, blob: bytes, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        try:
            answer = (ident, True, _answer(op, store_of(blob), args, kwargs))
        except BaseException as e:  # (obstore's panics are BaseExceptions)
            answer = (ident, False, (type(e).__module__, type(e).__name__, str(e)))
        frame = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        with send_guard:
            try:
                sock.sendall(HEADER.pack(len(frame)) + frame)
            except OSError:
                pass  # (the calling process is gone)

    while True:
        try:
            (size,) = HEADER.unpack(receive_exactly(sock, HEADER.size))
            message = pickle.loads(receive_exactly(sock, size))
        except (EOFError, OSError):
            return  # the calling process is gone
        calls.submit(call, *message)


def _one_thread() -> bool:
    """Whether this process runs one thread only (False where it cannot tell)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _start_runtime() -> None:
    """Start obstore's runtime (its threads), by a call of a store in this process's memory."""
    try:
        obstore.head(obstore.store.MemoryStore(), "-")
    except BaseException:  # (missing, as it should be)
        pass


def _spare(hand: socket.socket) -> None:
    """(A spare helper, forked by the template ahead of need.) Start obstore's runtime on a
    thread for calls, then serve the socket the template hands over `hand`; none comes when
    the template ended, or made a spare of newer stores. (It connects to no server: the
    child asks its helper to, at the fork.)"""
    calls = _Calls(_CALLS_AT_ONCE)
    calls.submit(_start_runtime)
    try:
        _, fds, _, _ = socket.recv_fds(hand, 1, 1)
    except OSError:
        return
    hand.close()
    if fds:
        _serve(socket.socket(fileno=fds[0]), calls)


def _fork(held: list[socket.socket | None], serve: Any, *args: Any) -> None:
    """Run `serve(*args)` in a process forked from the template, which ends with it; `held`:
    the template's sockets, which that process closes (a spare sees its socket's end only
    when no other process holds the template's end)."""
    if os.fork() == 0:
        for sock in held:
            if sock is not None:
                sock.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            serve(*args)
        finally:  # (a helper never returns into the template's loop, nor waits
            os._exit(0)  # for the calls of a process that is gone)


def _template(control: socket.socket) -> None:
    """Fork a helper for each socket handed over `control` (or hand it to the spare), and
    build each store whose pickle comes, until nobody can send one. Once no message came for
    _SPARE_AFTER seconds and a store was built since, fork a spare helper (`_spare`, which
    has them too) for the next socket."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # (helpers are reaped by the system)
    spare: socket.socket | None = None  # (this end of a socket to the spare)
    built = spared = 0  # (stores built so far; and when the spare was forked)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, _TEMPLATE_MESSAGE, 4)
        except InterruptedError:
            continue
        except OSError:
            return
        if not message and not fds:
            return  # every process that held the other end has ended
        if message[:1] == b"s" and message[1:] not in _built and _one_thread():
            try:
                _keep(_built, message[1:], pickle.loads(message[1:]))
                built += 1
            except Exception:
                pass  # (a helper that is asked for it builds it, and says why it cannot)
            if not _one_thread():  # (the spare's end of its socket closes: it ends)
                os.set_inheritable(control.fileno(), True)
                os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
        for fd in fds:
            handed = False
            if spare is not None:
                try:
                    socket.send_fds(spare, [b"h"], [fd])
                    handed = True
                except OSError:
                    pass  # (the spare is gone: a new helper serves it)
                spare.close()
                spare = None
            if not handed:
                _fork([control, spare], lambda fd=fd: _serve(socket.socket(fileno=fd)))
            os.close(fd)
        if (
            built
            and (spare is None or spared != built)
            and not select.select([control], [], [], _SPARE_AFTER)[0]
        ):
            if spare is not None:
                spare.close()  # (it ends; the new one has the newer stores too)
            spare, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            _fork([control, spare], _spare, theirs)
            theirs.close()
            spared = built


def main() -> None:
    """Serve the socket whose descriptor is the last argument, as the template where the
    argument before it is "template"."""
    # A terminal's Ctrl-C reaches the whole process group: the process served decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    given = socket.socket(fileno=int(sys.argv[-1]))
    if sys.argv[-2] == "template":
        _template(given)
    else:
        _serve(given)
        os._exit(0)
