"""Ctrl-C (SIGINT) during a long `a[...] = big` stops it within seconds: no further chunk is
started, those in progress are finished (each written whole), then KeyboardInterrupt."""
import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import zarrcore
from zarrcore.runtime.config import run_workers
from zarrcore.storage.local import TEMP_PREFIX

pytestmark = pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")


@pytest.fixture(autouse=True)
def ctrl_c_as_in_a_fresh_python():
    """Ctrl-C handled as an interactive Python handles it (in this process and the children
    it starts), however the suite was started: a non-interactive shell starts background
    commands with SIGINT ignored, and an ignored or blocked SIGINT is inherited by children."""
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, handler)

CHUNK = 16384  # int32 items: 64 KiB chunks, each a fraction of a second at zstd level 19
NCHUNKS = 512  # a minute or so of compression on two busy cores

# Writes the data of argv[2] (.npy) over the array at argv[1].
WRITER = """
import sys
import numpy as np
import zarrcore
a = zarrcore.open_array(sys.argv[1], mode="r+")
data = np.load(sys.argv[2])
print("writing", flush=True)
a[...] = data
"""


def _assert_stopped_at_once(child, ready, under_way):
    """Ctrl-C to `child` once it printed `ready` and `under_way()` returned: it ends with
    KeyboardInterrupt within 5 s."""
    try:
        assert child.stdout.readline().strip() == ready
        under_way()
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = child.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        child.kill()
        child.wait()
    assert "KeyboardInterrupt" in err and child.returncode != 0, err
    assert took < 5


def chunk_files(path):
    where = os.path.join(path, "c")
    names = os.listdir(where) if os.path.isdir(where) else []
    return [name for name in names if not name.startswith(TEMP_PREFIX)]


def test_ctrl_c_stops_a_long_write_leaving_whole_chunks(tmp_path):
    path = str(tmp_path / "a")
    data = (np.sin(np.arange(CHUNK * NCHUNKS) / 50) * 1000).astype("i4")  # compressible
    np.save(tmp_path / "data.npy", data)
    zarrcore.create_array(path, shape=(CHUNK * NCHUNKS,), dtype="i4", chunks=(CHUNK,),
                          compressors=[{"name": "zstd", "configuration": {"level": 19}}])
    root = os.path.dirname(os.path.dirname(zarrcore.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get(
        "PYTHONPATH")])))
    child = subprocess.Popen([sys.executable, "-c", WRITER, path, str(tmp_path / "data.npy")],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def under_way():
        # Interrupted once the write is under way (its first chunk stored), on a busy machine too.
        started = time.monotonic()
        while not chunk_files(path) and time.monotonic() - started < 10:
            time.sleep(0.05)

    _assert_stopped_at_once(child, "writing", under_way)
    a = zarrcore.open_array(path)
    stored = sorted(int(name) for name in chunk_files(path))
    assert 0 < len(stored) < NCHUNKS  # cut short, not finished first
    for i in stored:  # each chunk written whole: it decodes to the new values
        np.testing.assert_array_equal(a[i * CHUNK:(i + 1) * CHUNK], data[i * CHUNK:(i + 1) * CHUNK])
    leftovers = [name for _, _, files in os.walk(path) for name in files
                 if name.startswith(TEMP_PREFIX)]
    assert not leftovers


@pytest.mark.parametrize("refusal, caller", [
    # Ctrl-C landing while run_workers still starts pool threads (a thread's start waits for
    # it; on a free-threaded Python the first ones already work meanwhile)
    (KeyboardInterrupt(), "main thread"),
    # a pool that refuses a helper (at interpreter exit)
    (RuntimeError("cannot schedule new futures after interpreter shutdown"), "main thread"),
    (RuntimeError("cannot schedule new futures after interpreter shutdown"), "other thread"),
])
def test_a_start_refused_stops_the_helpers_started(monkeypatch, refusal, caller):
    """The second helper's start raises: the call raises it only once the work is stopped and
    the helper already submitted has returned, not left writing after the raise."""
    zarrcore.config.set(num_threads=4)
    pool = zarrcore.config.executor()
    submitted = []

    class RefusingSecondStart:
        def submit(self, fn):
            if submitted:
                raise refusal
            submitted.append(pool.submit(fn))
            return submitted[-1]

    monkeypatch.setattr(zarrcore.config, "executor", RefusingSecondStart)
    stopped = threading.Event()

    def work():
        for _ in range(2000):  # bounded: a helper never stopped ends by itself
            if stopped.is_set():
                return
            time.sleep(0.001)

    def call():
        with pytest.raises(type(refusal)):
            run_workers(work, 100, stopped.set)
        return submitted[0].done()

    if caller == "main thread":
        assert call()
    else:
        with concurrent.futures.ThreadPoolExecutor(1) as other:
            assert other.submit(call).result(timeout=60)
    assert stopped.is_set()


def test_a_helper_failing_is_raised_once_every_helper_has_returned(monkeypatch):
    """The first helper fails at once while the second still works: the call raises the
    failure only once the second has returned."""
    zarrcore.config.set(num_threads=3)
    calls = []

    class FirstFailsSecondWorks:
        def submit(self, fn):
            future = concurrent.futures.Future()
            future.set_running_or_notify_cancel()  # (started: never cancelled)
            failing = not calls
            calls.append(future)

            def run():
                if failing:
                    future.set_exception(ValueError("the first helper"))
                else:
                    time.sleep(0.3)
                    future.set_result(None)
            threading.Thread(target=run).start()
            return future

    monkeypatch.setattr(zarrcore.config, "executor", FirstFailsSecondWorks)

    def call():
        with pytest.raises(ValueError, match="the first helper"):
            run_workers(lambda: None, 100, lambda: None)
        return calls[1].done()

    with concurrent.futures.ThreadPoolExecutor(1) as other:  # (not the main thread's route)
        assert other.submit(call).result(timeout=60)


def test_ctrl_c_with_the_pool_busy_is_handled_while_the_work_goes_on(monkeypatch):
    """No pool thread takes the work (busy elsewhere): it runs on a thread of its own, never on
    the main thread, where a compiled call of it would hold off Ctrl-C until all the work is
    done. Ctrl-C then stops it after the task in progress."""
    zarrcore.config.set(num_threads=2)

    class BusyPool:
        def submit(self, fn):
            return concurrent.futures.Future()  # queued behind other work: never starts

    monkeypatch.setattr(zarrcore.config, "executor", BusyPool)
    stopped = threading.Event()
    workers = []

    def work():
        workers.append(threading.current_thread())
        for _ in range(5000):  # bounded: a work never stopped ends by itself
            if stopped.is_set():
                return
            time.sleep(0.001)

    main = threading.main_thread()
    threading.Timer(0.3, signal.pthread_kill, (main.ident, signal.SIGINT)).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_workers(work, 100, stopped.set)
    assert time.monotonic() - started < 2
    assert stopped.is_set()
    assert workers and main not in workers


# Reads the key argv[2] of the HTTP store at argv[1], whose server never answers.
SILENT_READER = """
import sys
from zarrcore.storage import make_store
store = make_store(sys.argv[1], storage_options={"timeout": 60, "retries": 0})
print("reading", flush=True)
store.get(sys.argv[2])
"""


def test_ctrl_c_stops_a_read_of_a_server_that_never_answers(tmp_path):
    """An object store's request is obstore's synchronous call, which holds the thread that
    makes it until the client's timeout: from the main thread it runs on an I/O thread, so
    Ctrl-C stops the read at once rather than a minute later."""
    pytest.importorskip("obstore", reason="object stores are the remote extra")
    server = socket.create_server(("127.0.0.1", 0))
    held = []
    threading.Thread(target=lambda: held.extend(server.accept() for _ in range(4)),
                     daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/data"
    child = subprocess.Popen([sys.executable, "-c", SILENT_READER, url, "zarr.json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _assert_stopped_at_once(child, "reading", lambda: time.sleep(0.5))  # (request sent)
    finally:
        server.close()


WHERE_CALLS_RUN = """
import multiprocessing, threading
from zarrcore.runtime import _aio

def where(_=None):
    return _aio.request(lambda: threading.current_thread().name)

if __name__ == "__main__":
    print(where())
    for method in ("fork", "spawn"):
        with multiprocessing.get_context(method).Pool(1) as pool:
            print(pool.map(where, [0])[0])
"""


def test_blocking_calls_hop_off_the_main_thread_only_where_ctrl_c_is_handled(tmp_path):
    """The main thread of the process a user started hands a blocking call to an I/O thread
    (Ctrl-C); a multiprocessing worker's, stopped by its parent, makes it itself (the hop
    costs CPU on every request)."""
    script = tmp_path / "where.py"
    script.write_text(WHERE_CALLS_RUN)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out[0].startswith("zarrcore-request") and out[1:] == ["MainThread", "MainThread"], out
