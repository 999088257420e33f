"""A process forked after zarrcore has run its thread pool or taken key locks (multiprocessing's
fork start method, DataLoader workers) reads and writes normally: no work queued for the
parent's threads, no lock that only a vanished thread could release."""
import os
import sys
import threading

import numpy as np
import pytest

import zarrcore
from _child import run_in_child

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")]


@pytest.mark.parametrize("shards", [None, (64, 64)], ids=["chunks", "shards"])
def test_child_uses_its_own_pool(tmp_path, shards):
    zarrcore.config.set(num_threads=2)
    data = np.arange(128 * 128, dtype="float32").reshape(128, 128)
    a = zarrcore.create_array(str(tmp_path / "a"), shape=data.shape, dtype="float32",
                              chunks=(16, 16), shards=shards)
    a[...] = data  # the pool's threads start in the parent
    np.testing.assert_array_equal(a[...], data)

    def child():
        np.testing.assert_array_equal(a[...], data)
        a[10:100, 5:70] = -1
        expect = data.copy()
        expect[10:100, 5:70] = -1
        np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "a"))[...], expect)

    assert run_in_child(child) == 0
    assert (a[10:100, 5:70] == -1).all()  # what the child wrote


def test_child_takes_a_key_lock_the_parent_held_at_fork(tmp_path):
    """A thread of the parent holds a key's lock when the process forks; once the parent
    releases it, the child can take it (the child's copy of the descriptor keeps nothing)."""
    store = zarrcore.LocalStore(tmp_path / "s")
    held, release = threading.Event(), threading.Event()

    def holder():
        with store.lock("c/0/0"):
            held.set()
            release.wait()

    t = threading.Thread(target=holder)
    t.start()
    held.wait()

    def child():
        with store.lock("c/0/0"):
            pass

    threading.Timer(0.5, release.set).start()
    status = run_in_child(child)
    t.join()
    assert status == 0
    with store.lock("c/0/0"):  # and the parent still can
        pass
