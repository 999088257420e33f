"""Native jobs that pin decoded-chunk cache entries keep their cache until they unpin them,
whatever order the garbage collector clears a cycle of garbage in (a cancelled read's job
lies in its traceback's cycle; its array may be garbage too)."""
import ctypes
import subprocess
import sys

import pytest

from zarrcore._native.chunk_jobs import ChunkWaves
from zarrcore._native.shard_io import ShardBatch

PY_TP_CLEAR = 51  # (Include/typeslots.h)

# A job pinning the one entry of a cache that only it holds, in a cycle made after it: the
# collector takes the job first (the older), and the cycle's list drops it.
PINNED_IN_A_CYCLE = """
import gc
import numpy as np
import zarrcore
from zarrcore import engine
from zarrcore._native.cache import ChunkCache
from zarrcore._native.chunk_jobs import ChunkWaves
from zarrcore._native.indexing import AxisPlan

spec = zarrcore.codecs.base.ChunkSpec((4,), np.dtype("i4"), 0)
settings = engine.CodecChain([{"name": "bytes"}], spec).native_form()
version = bytes(range(32))

def job(cache):
    rows = np.array([[0, 0, 1, 4, 0, 1]], dtype=np.int64)
    plan = AxisPlan.from_rows(rows, None, np.zeros(1, bool))
    return ChunkWaves(settings, (4,), (1,), [plan], np.zeros(4, "i4"), cache=cache)

def pinned_in_a_cycle():
    cache = ChunkCache(1 << 20, 16, 1)
    filling = job(cache)
    filling.keep(0, (0,), version)
    filling.add_whole(0, np.arange(4, dtype="i4").tobytes())
    filling.run([0])
    filling.work_read()
    filling.release()
    assert filling.error() is None
    pinning = job(cache)
    assert pinning.lookup(0, (0,), version)
    cycle = [pinning]
    cycle.append(cycle)

gc.disable()
for _ in range(20):
    pinned_in_a_cycle()
    gc.collect()
print("collected")
"""


def test_a_job_in_garbage_unpins_before_its_cache_goes():
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", PINNED_IN_A_CYCLE],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "collected\n"), done.stderr[-3000:]


@pytest.mark.parametrize("job_type", [ChunkWaves, ShardBatch])
def test_jobs_that_pin_entries_are_never_cleared(job_type):
    """No tp_clear: the collector breaks a cycle through such a job elsewhere, and the job
    unpins (in its deallocation) while it still holds its cache."""
    get_slot = ctypes.pythonapi.PyType_GetSlot
    get_slot.restype, get_slot.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_int]
    assert get_slot(job_type, PY_TP_CLEAR) is None
