"""Many user threads writing disjoint regions that share shards (or chunks) never deadlock.

A thread that holds a shard's key lock may have pool threads help re-encode it; pool threads
meanwhile run other threads' per-shard tasks that wait for that lock. Such a thread must never
wait for help that has not started. Each workload runs in a forked child, so that a hang fails
the test instead of stopping the suite."""
import os

import numpy as np
import pytest

import zarrcore
from _child import run_in_child

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

N, BAND, THREADS, ROUNDS = 512, 64, 8, 6

LAYOUTS = {
    # Shards of 64x64 inner chunks of 16x16: the native batches (whole shards, and partial
    # shards re-encoded by the native inner-chunk job under the shard's lock).
    "shards": dict(chunks=(16, 16), shards=(64, 64)),
    # A transpose inside the shard: the inner chunks go through the Python codec chain.
    "shards-python-chain": dict(chunks=(16, 16), shards=(64, 64),
                                filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}]),
    "chunks": dict(chunks=(64, 64)),
    "chunks-v2": dict(chunks=(64, 64), zarr_format=2),
}


def regions(k):
    """Thread k's writes, one call each: rows [64k, 64k+64) of the left half (whole blocks,
    its own); in the right half the band shifted down by half a block (32 rows in each of two
    block rows it shares with its neighbours), first in one call across all four block
    columns, then one partly written block per call."""
    left = (slice(BAND * k, BAND * (k + 1)), slice(0, N // 2))
    halves = [(BAND * k + BAND // 2) % N, (BAND * (k + 1)) % N]
    right = [(slice(h, h + BAND // 2), slice(N // 2, N)) for h in halves]
    pieces = [(slice(h, h + BAND // 2), slice(c, c + BAND))
              for h in halves for c in range(N // 2, N, BAND)]
    return [left, *right, *pieces]


def hammer(path, layout):
    """8 threads write their regions for some rounds, two readers read throughout; then every
    region must hold its writer's last value."""
    import threading

    zarrcore.config.set(num_threads=2)
    a = zarrcore.create_array(path, shape=(N, N), dtype="uint16", fill_value=0,
                              **LAYOUTS[layout])
    start = threading.Barrier(THREADS + 2)
    writing = [THREADS]
    errors = []

    def write(k):
        try:
            start.wait()
            for r in range(ROUNDS):
                for sel in regions(k):
                    a[sel] = 1 + k + THREADS * r
        except BaseException as e:  # reported by the child's exit status
            errors.append(e)
        writing[0] -= 1

    def read(k):
        try:
            start.wait()
            while writing[0]:
                a[k * 100:k * 100 + 200, 100:400]
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(THREADS)]
    threads += [threading.Thread(target=read, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    expected = np.zeros((N, N), np.uint16)
    for k in range(THREADS):
        for sel in regions(k):
            expected[sel] = 1 + k + THREADS * (ROUNDS - 1)
    np.testing.assert_array_equal(zarrcore.open_array(path)[...], expected)


@pytest.mark.slow
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_threads_sharing_shards_do_not_deadlock(tmp_path, layout):
    assert run_in_child(lambda: hammer(str(tmp_path / "a"), layout), timeout=30) == 0


def _with_pool_blocked(call):
    """Run `call()` in a thread while every pool thread is blocked; True when it returned
    within 10 s without the pool's help. The pool is released afterwards either way."""
    import threading

    zarrcore.config.set(num_threads=2)
    release = threading.Event()
    executor = zarrcore.config.executor()
    blockers = [executor.submit(release.wait) for _ in range(2)]
    done = threading.Event()

    def run():
        call()
        done.set()

    caller = threading.Thread(target=run)
    caller.start()
    finished = done.wait(10)
    release.set()
    caller.join()
    for b in blockers:
        b.result()
    return finished


def test_run_workers_finishes_without_the_pool():
    from itertools import count

    from zarrcore.runtime.config import run_workers

    tasks, done = count(), []

    def work():
        while next(tasks) < 100:
            done.append(1)

    assert _with_pool_blocked(lambda: run_workers(work, 100, lambda: None))
    assert len(done) == 100


def test_run_workers_in_the_main_thread_finishes_without_the_pool():
    """The main thread leaves the work to the pool (so that it handles Ctrl-C meanwhile), and
    does it itself when no pool thread comes."""
    import threading
    import time
    from itertools import count

    from zarrcore.runtime.config import run_workers

    zarrcore.config.set(num_threads=2)
    release = threading.Event()
    executor = zarrcore.config.executor()
    blockers = [executor.submit(release.wait) for _ in range(2)]
    rescue = threading.Timer(10, release.set)  # the pool comes back after 10 s at the latest
    rescue.start()
    tasks, done = count(), []

    def work():
        while next(tasks) < 100:
            done.append(1)

    started = time.monotonic()
    try:
        run_workers(work, 100, lambda: None)
        took = time.monotonic() - started
    finally:
        release.set()
        rescue.cancel()
    for b in blockers:
        b.result()
    assert len(done) == 100 and took < 5


def test_parallel_map_finishes_without_the_pool():
    from zarrcore.runtime.config import parallel_map

    out = []
    assert _with_pool_blocked(lambda: out.extend(parallel_map(lambda x: x * x, range(50))))
    assert out == [x * x for x in range(50)]


def test_parallel_map_raises_the_first_failing_items_error():
    from zarrcore.runtime.config import parallel_map

    def square(x):
        if x in (3, 7):
            raise ValueError(x)
        return x * x

    zarrcore.config.set(num_threads=2)
    with pytest.raises(ValueError, match="^3$"):
        parallel_map(square, range(10))
    assert parallel_map(square, [1, 2]) == [1, 4]
