"""Writers sharing shards lose no element: 8 threads, then 4 processes, writing stripes."""
import multiprocessing
import threading

import numpy as np
import pytest

import zarrcore

SHAPE, SHARD, INNER = (64, 48), (32, 48), (4, 4)


def create(store):
    return zarrcore.create_array(store, shape=SHAPE, dtype="int32", chunks=INNER, shards=SHARD,
                                 fill_value=0)


def stripes(axis, worker, workers):
    """Selections of `worker`'s stripes: every `workers`-th row (axis 0) or column (axis 1).
    Neighbouring stripes belong to different workers and share inner chunks and shards."""
    for i in range(worker, SHAPE[axis], workers):
        yield (i, slice(None)) if axis == 0 else (slice(None), i)


def write_stripes(a, axis, worker, workers):
    for sel in stripes(axis, worker, workers):
        a[sel] = sel[axis] + 1


def lost_elements(a, axis):
    expected = np.arange(1, SHAPE[axis] + 1, dtype="int32")
    expected = np.broadcast_to(expected[:, None] if axis == 0 else expected[None, :], SHAPE)
    return int((a[...] != expected).sum())


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_lose_nothing(tmp_path, kind, axis):
    store = zarrcore.MemoryStore() if kind == "memory" else zarrcore.LocalStore(tmp_path / "s")
    a = create(store)
    workers = 8
    start = threading.Barrier(workers)
    errors = []

    def run(worker):
        try:
            start.wait()
            write_stripes(a, axis, worker, workers)
        except BaseException as e:  # re-raised in the test thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert lost_elements(a, axis) == 0


def _process_writer(paths, worker, workers, start):
    arrays = [zarrcore.open_array(path, mode="r+") for path in paths]
    for axis, a in enumerate(arrays):
        start.wait()  # all processes write each array at the same time
        write_stripes(a, axis, worker, workers)


@pytest.mark.slow
def test_processes_lose_nothing(tmp_path):
    """4 processes write row stripes to one array, then column stripes to another."""
    paths = [str(tmp_path / "rows"), str(tmp_path / "cols")]
    arrays = [create(path) for path in paths]
    workers = 4
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(workers)
    procs = [ctx.Process(target=_process_writer, args=(paths, w, workers, start))
             for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers
    assert [lost_elements(a, axis) for axis, a in enumerate(arrays)] == [0, 0]


def test_threads_with_their_own_array_objects_lose_nothing():
    """Each thread opens the array anew over one dict: the Store objects differ, the locks not."""
    data = {}
    create(data)
    workers = 8

    def run(worker):
        write_stripes(zarrcore.open_array(data, mode="r+"), 0, worker, workers)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lost_elements(zarrcore.open_array(data, mode="r"), 0) == 0
