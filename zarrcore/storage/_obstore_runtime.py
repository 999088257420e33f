"""Which obstore a process runs: the module itself, or, in a process forked after obstore
ran there, a stand-in whose calls run in a helper process (_obstore_helper.py).

obstore's tokio runtime keeps its threads in the process that started it, and obstore 0.12
cannot start another in a forked child: every request there, on the parent's store objects
and on new ones alike, waits forever. So such a child sends obstore's calls over a socket to
a helper with a runtime and connections of its own. Helpers are forked from a template that
the process where obstore ran starts (an interpreter that imported obstore and never ran it,
so forking it is safe and a helper is ready in a millisecond): when obstore first runs there
if that process forks its workers by default, else before it first forks; where there is no
template, a child starts a helper interpreter itself.
"""

from __future__ import annotations

import builtins
import concurrent.futures
import contextlib
import errno
import itertools
import os
import pickle
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import StoreError
from ..runtime import _aio

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer
    from obstore import ObjectMeta, PutResult
    from obstore.store import ObjectStore as ObstoreStore


# The process that first ran obstore. Its tokio runtime's threads do not survive a fork: a
# child forked after that would wait forever on its first request, on the parent's store
# objects and on new ones alike (obstore 0.12). Such a child runs obstore's calls in a helper
# process of its own instead (_ForkedObstore).
_runtime_pid: int | None = None
# The helper of this process when it is such a child (made on first use).
_forked: _ForkedObstore | None = None
_forked_guard = threading.Lock()
# The socket to the helper template (see _obstore_helper) that the process where obstore ran
# starts before it first forks; its children, and theirs, ask it for helpers.
_template: socket.socket | None = None
# The template's process id (in the process that started it, which reaps it).
_template_pid: int | None = None
# The folder of _obstore_helper.py, which helper processes import as a module of its own.
_HELPER_FOLDER = os.path.dirname(os.path.abspath(__file__))


def _helper_command(*args: str) -> list[str]:
    # (As a module of its own, found in its folder put last on the path, not as one of the
    # package: nothing else is imported there, and its compiled file is used (runpy compiled
    # its source at each start). And without the site module (-S), which takes 10-15 ms of
    # an interpreter's start: the helper imports the standard library and obstore only, from
    # where this process found it.)
    import obstore

    found = os.path.dirname(os.path.dirname(os.path.abspath(obstore.__file__)))
    return [
        sys.executable,
        "-S",
        "-c",
        "import sys; sys.path[0] = sys.argv.pop(1); "
        "sys.path.append(sys.argv.pop(1)); import _obstore_helper; _obstore_helper.main()",
        found,
        _HELPER_FOLDER,
        *args,
    ]


def _start_template() -> None:
    """(When obstore first runs, or before a fork: prepare_helpers.) Start the helper
    template in the process where obstore ran, and again where it has ended (killed): its
    children then get helpers in a millisecond (forked from it) rather than a new
    interpreter's start. Where that fails, each child starts a helper of its own."""
    global _template, _template_pid
    if _runtime_pid != os.getpid():
        return
    with _template_guard:  # (threads that run obstore first at once start one template)
        if _template is not None:
            if not _template_ended():
                return
            _template.close()
            _template = _template_pid = None
            _sent_to_template.clear()  # (the new one has built none of them)
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except (AttributeError, OSError):
            return
        try:
            os.set_inheritable(theirs.fileno(), True)
            # (Not a Popen: the template outlives this process, which never waits for it,
            # but reaps it once it has ended: _template_ended.)
            pid = os.posix_spawn(
                sys.executable, _helper_command("template", str(theirs.fileno())), os.environ
            )
        except (AttributeError, OSError):
            ours.close()
            return
        finally:
            theirs.close()
        _template, _template_pid = ours, pid


def _template_ended() -> bool:
    """Whether the template has ended (reaped here, so that it leaves no zombie): killed,
    since it ends by itself only once this process has."""
    if _template_pid is None:
        return False
    try:
        ended, _ = os.waitpid(_template_pid, os.WNOHANG)
    except ChildProcessError:  # (reaped already: SIGCHLD ignored, or another waitpid)
        return True
    return ended != 0


_template_guard = threading.Lock()
# The pickles of the stores sent to the template to build (prepare_helpers); forgotten past
# this many, which only sends some again.
_sent_to_template: set[bytes] = set()
_SENT_KEPT = 256


def prepare_helpers(stores: list[ObstoreStore]) -> None:
    """(Before a fork, in the process where obstore ran.) Have the template build `stores`
    (those the children will use first) ahead, so that its helpers inherit their clients
    rather than build each (5-30 ms) before their first request."""
    _start_template()
    _send_to_template(stores)


def client_made(store: ObstoreStore) -> None:
    """(When this process has made a client.) Where the template runs (it starts when obstore
    first runs in a process that forks its workers), have it build `store` now: a worker
    forked soon after, a DataLoader's at its first batch, finds it built."""
    _send_to_template([store])


def _send_to_template(stores: list[ObstoreStore]) -> None:
    """Send the template the pickles of `stores` to build (each once). Never waits: what its
    socket cannot take now is built by the helpers that need it."""
    if _runtime_pid != os.getpid() or _template is None:
        return
    for store in stores:
        try:
            blob = pickle.dumps(store)
            if blob not in _sent_to_template:
                _template.send(b"s" + blob, socket.MSG_DONTWAIT)
                _sent_to_template.add(blob)
        except Exception:  # (a store that does not pickle, a full socket)
            continue
    if len(_sent_to_template) > _SENT_KEPT:
        _sent_to_template.clear()


def _forks_workers() -> bool:
    """Whether this process is likely to fork workers later (a DataLoader's): it is no
    multiprocessing worker itself, and its start method is fork (set, or Linux's default
    before Python 3.14). Such a process starts the helper template when obstore first runs,
    so that its forked workers' first requests do not wait for the template's interpreter
    (about 40-200 ms) but only for a helper's fork."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return False
    method = multiprocessing.get_start_method(allow_none=True)
    if method is None:
        return sys.platform == "linux" and sys.version_info < (3, 14)
    return method == "fork"


def obstore_module() -> ModuleType:
    """The obstore module; in a process forked after obstore ran, one whose calls run in a
    helper process (_ForkedObstore)."""
    global _runtime_pid, _forked
    import obstore
    import obstore.exceptions

    pid = os.getpid()
    if _runtime_pid is None:
        _runtime_pid = pid
        if _forks_workers():
            _start_template()
    elif _runtime_pid != pid:
        with _forked_guard:
            if _forked is None:
                _forked = _ForkedObstore(obstore)
            return _forked
    return obstore


_T = TypeVar("_T")


def obstore_request(call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """`_aio.request` of one of obstore's calls, whose panics (BaseExceptions, as its
    synchronous calls raise them) come back as exceptions, so that every caller handles
    them as it handles any failure of the request."""
    try:
        return _aio.request(call, *args, **kwargs)
    except Exception:
        raise
    except BaseException as e:
        if type(e).__name__ != "PanicException":
            raise  # (an interrupt, an exit)
        raise RuntimeError(f"obstore panicked: {e}") from e


class _HelperResult:
    """A GetResult rebuilt from the helper's answer: the whole body, read there."""

    def __init__(self, meta: ObjectMeta, span: tuple[int, int], data: bytes) -> None:
        self.meta, self.range, self._data = meta, span, data

    def bytes(self) -> builtins.bytes:
        return self._data

    def stream(self, min_chunk_size: int = 0) -> Iterator[builtins.bytes]:
        yield self._data


class _ForkedObstore(ModuleType):
    """obstore's calls (those ObjectStore makes) run in a helper process of this one
    (storage/_obstore_helper.py: a runtime and connections of its own), over a socket: the
    store objects go there as pickles. Its exceptions come back as obstore's (or the
    built-in ones) of the same name. A child forked after obstore ran asks for it at the
    fork (after_fork_in_child), from the template (_start_template) where there is one.
    Measured over a loopback S3: a helper forked from a ready template answers the first
    request in a few milliseconds, a new interpreter's after 0.07-0.2 s (obstore's import);
    each request costs about 1 ms more than in the parent."""

    def __init__(self, obstore: ModuleType) -> None:
        super().__init__("obstore")
        self.exceptions = obstore.exceptions
        self.store = obstore.store
        self.parse_scheme = obstore.parse_scheme
        self._socket: socket.socket | None = None
        # (the socket and process whose answers no thread reads yet)
        self._unread: tuple[socket.socket, subprocess.Popen[bytes] | None] | None = None
        self._send_guard = threading.Lock()
        self._waiting: dict[int, concurrent.futures.Future[Any]] = {}
        self._ids = itertools.count()
        # The frames' format and their reading, the helper's own (obstore, which it imports,
        # is imported here already).
        from . import _obstore_helper

        self._frame_head, self._receive_exactly = (
            _obstore_helper.HEADER,
            _obstore_helper.receive_exactly,
        )

    def connected(self) -> socket.socket:
        """The socket to the helper, which is started if there is none (or it ended): forked
        by the template where there is one, else a new interpreter."""
        if self._socket is not None:
            return self._socket
        ours, theirs = socket.socketpair()
        process = None
        try:
            if _template is not None:
                try:
                    socket.send_fds(_template, [b"h"], [theirs.fileno()])
                except OSError:
                    process = self._start(theirs)  # (the template is gone)
            else:
                process = self._start(theirs)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._socket = ours
        # (Its answers are read by a thread started by the first call that waits for one:
        # none starts at the fork, where a new thread may take the identity of one of the
        # parent's, which _aio.run looks for.)
        self._unread = (ours, process)
        return ours

    @staticmethod
    def _start(theirs: socket.socket) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                _helper_command(str(theirs.fileno())),
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError as e:
            raise StoreError(
                errno.EPERM,
                f"obstore cannot run in this process, forked after it "
                f"ran, and its helper process did not start ({e}): "
                f"{_aio.SPAWN_ADVICE}",
            ) from e

    def close(self) -> None:
        """Close this process's copy of the socket (in a child forked from its process)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _receive(self, sock: socket.socket, process: subprocess.Popen[bytes] | None) -> None:
        """Hand each answer to its caller; when the helper ends, fail every call left."""
        try:
            while True:
                head = self._receive_exactly(sock, self._frame_head.size)
                ident, ok, value = pickle.loads(
                    self._receive_exactly(sock, *self._frame_head.unpack(head))
                )
                future = self._waiting.pop(ident, None)
                if future is not None:
                    _settle(future, value if ok else None, None if ok else self._exception(*value))
        except Exception:  # (a lost helper or a garbled answer: every call left fails below)
            pass
        with self._send_guard:
            if self._socket is sock:
                self._socket = None
            left, self._waiting = self._waiting, {}
        sock.close()
        status = "" if process is None else f" with status {process.wait()}"
        for future in left.values():
            _settle(
                future,
                None,
                StoreError(
                    errno.EIO,
                    f"the helper process that runs obstore's requests in this "
                    f"process (forked after obstore ran) ended{status}: "
                    f"{_aio.SPAWN_ADVICE}",
                ),
            )

    def _exception(self, module: str, name: str, text: str) -> BaseException:
        """The helper's exception, as one of obstore's or a built-in one where it was."""
        if module.startswith("obstore"):
            kind = getattr(self.exceptions, name, None)
        else:
            kind = getattr(builtins, name, None) if module == "builtins" else None
        if isinstance(kind, type) and issubclass(kind, Exception):
            with contextlib.suppress(Exception):  # (one that takes other arguments)
                made: BaseException = kind(text)
                return made
        return StoreError(errno.EIO, f"{name}: {text}")

    def _call(
        self, op: str, store: ObstoreStore, *args: Any, waits: bool = True, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        """Send the call `op`; its answer comes to the future returned (`waits`: the
        caller will wait for it, so answers must be read from now on)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._send_guard:  # (a counter's next is not atomic without the GIL)
            ident = next(self._ids)
        try:
            blob = pickle.dumps(store)
        except Exception as e:  # (an obstore MemoryStore: its data is in this process only)
            raise StoreError(
                errno.EPERM,
                (
                    f"obstore cannot run in this process, forked after it ran, and {store!r} "
                    f"cannot go to the helper process that runs its requests here ({e}): "
                    f"{_aio.SPAWN_ADVICE}"
                ),
            ) from e
        frame = pickle.dumps((ident, op, blob, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        with self._send_guard:
            sock = self.connected()
            self._waiting[ident] = future
            try:
                sock.sendall(self._frame_head.pack(len(frame)) + frame)
            except OSError as e:
                self._waiting.pop(ident, None)
                raise StoreError(
                    errno.EIO,
                    f"cannot reach the helper process that runs "
                    f"obstore's requests in this process: {e}",
                ) from e
            if waits and self._unread is not None:
                threading.Thread(
                    target=self._receive,
                    args=self._unread,
                    daemon=True,
                    name="zarrcore-obstore-helper",
                ).start()
                self._unread = None
        return future

    def warm(self, store: ObstoreStore) -> None:
        """Have the helper make `store`'s client and a connection (a HEAD of a missing
        object), without waiting for it."""
        self._call("warm", store, ".zarrcore-warm-up", waits=False)

    # (No deadline on the waits: the helper's calls end within the client's timeouts and
    # retries, as this process's own would, and every call fails when the helper ends.)
    def get(self, store: ObstoreStore, path: str, **kwargs: Any) -> _HelperResult:
        return _HelperResult(*self._call("get", store, path, **kwargs).result())

    def get_ranges(self, store: ObstoreStore, path: str, **kwargs: Any) -> builtins.list[bytes]:
        parts: builtins.list[bytes] = self._call("get_ranges", store, path, **kwargs).result()
        return parts

    def head(self, store: ObstoreStore, path: str) -> ObjectMeta:
        meta: ObjectMeta = self._call("head", store, path).result()
        return meta

    def put(
        self, store: ObstoreStore, path: str, value: ReadableBuffer, **kwargs: Any
    ) -> PutResult:
        done: PutResult = self._call("put", store, path, bytes(value), **kwargs).result()
        return done

    def delete(self, store: ObstoreStore, paths: str | builtins.list[str]) -> None:
        self._call("delete", store, paths).result()

    def list(
        self, store: ObstoreStore, prefix: str | None = None
    ) -> builtins.list[builtins.list[ObjectMeta]]:
        batches: builtins.list[builtins.list[ObjectMeta]] = self._call(
            "list", store, prefix=prefix
        ).result()
        return batches

    def list_with_delimiter(self, store: ObstoreStore, prefix: str | None = None) -> dict[str, Any]:
        listing: dict[str, Any] = self._call("list_with_delimiter", store, prefix).result()
        return listing


def _settle(
    future: concurrent.futures.Future[Any], value: Any, error: BaseException | None
) -> None:
    """Give `future` its result or `error`, unless its caller stopped waiting (cancelled)."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)


def after_fork_in_child(recent: list[ObstoreStore]) -> None:
    """(In a forked child.) Forget the parent's helper (when the parent was itself such a
    child); where obstore ran in the parent, ask for this process's helper now, and have it
    make the clients `recent` (those the parent used last), start its runtime and connect
    (a HEAD of a missing object), while the child sets itself up: its first request then
    seldom waits (a DataLoader worker's first sample)."""
    global _forked, _forked_guard
    if _forked is not None:
        _forked.close()  # (its helper ends with the process it serves, not with this one)
    _forked, _forked_guard = None, threading.Lock()
    if _runtime_pid is None:
        return
    import obstore

    _forked = _ForkedObstore(obstore)
    with contextlib.suppress(StoreError):  # (the first call says why)
        _forked.connected()
        for client in recent:
            _forked.warm(client)
