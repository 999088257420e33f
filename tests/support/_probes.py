"""Probes several test modules share: the Python calls a read makes, the memory a script
peaks at in a fresh interpreter, and whether a write waits for a store's key lock."""
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time

import zarrcore


def python_calls(read):
    """The number of Python function calls `read()` makes (its result discarded)."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    # (Earlier tests' garbage is collected first and not during: its finalizers, a generator's
    # `finally` among them, would run inside `read` and be counted as its calls.)
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    sys.setprofile(count)
    try:
        read()
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return calls


# Scripts run in a fresh process: VmHWM is then this process's own peak (ru_maxrss would carry
# the forking parent's over exec).
STATUS_KIB = """
import sys
import numpy, zarrcore

def status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))

"""


def run_measured(script, *args):
    """Run STATUS_KIB + `script` with this zarrcore in a fresh interpreter; its output ints."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(zarrcore.__file__)), os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-c", STATUS_KIB + textwrap.dedent(script), *map(str, args)],
                         env=env, capture_output=True, text=True, check=True)
    return list(map(int, res.stdout.split()))


def waits_for_the_lock(store, key, write):
    """Whether `write()`, started on a thread while this one holds `store.lock(key)`, ends only
    once the lock is released (it lands outside another writer's read-modify-write)."""
    held, done = threading.Event(), []

    def writer():
        held.wait()
        write()
        done.append(time.monotonic())

    t = threading.Thread(target=writer)
    t.start()
    with store.lock(key):
        held.set()
        time.sleep(0.3)
        released = time.monotonic()
    t.join()
    return bool(done) and done[0] >= released
