"""Random access as training loaders make it: the memory a fancy read of a sharded array
holds."""
import os
import subprocess
import sys

import numpy as np
import pytest

import zarrcore


_PEAK_SCRIPT = """
import resource, sys
import numpy as np, zarrcore
zarrcore.config.set(num_threads=2)
a = zarrcore.open_array(sys.argv[1], mode="r")
rng = np.random.default_rng(0)
points = tuple(rng.integers(0, n, 200_000) for n in a.shape)
a.vindex[points[0][:10], points[1][:10]]  # (threads, pools and code paged in)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
got = a.{read}
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024, got.nbytes)
"""


@pytest.mark.parametrize("read", ["vindex[points]", "oindex[np.unique(points[0])[::7], :]"])
def test_fancy_sharded_reads_hold_about_a_shard_per_thread(tmp_path, read):
    """Peak memory of a fancy read touching every shard of an array: the output plus about
    one shard per thread, not the shards it touches (16 shards of 4 MiB here; the points'
    grouping takes about 3 more)."""
    shape, shard = (4096, 4096), (1024, 1024)
    a = zarrcore.create_array(str(tmp_path), shape=shape, chunks=(256, 256), shards=shard,
                              dtype="f4", compressors=None)
    a[...] = np.random.default_rng(1).random(shape, dtype="f4")
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT.format(read=read), str(tmp_path)],
                          check=True, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    grown, output = map(int, done.stdout.split())
    shard_bytes = 1024 * 1024 * 4
    assert grown <= output + 7 * shard_bytes, (grown, output)

