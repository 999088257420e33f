"""Shared definitions of the benchmark suite: libraries, datasets and expected values.

Imported by run.py (the orchestrator) and _worker.py (one process per library). Only numpy
and the standard library are imported here, so the orchestrator stays light.
"""
import importlib
import math
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_DATA_DIR = os.path.join(HERE, "data")

# Display order: the peers, zarr-python with zarrcore's pipeline, then zarrcore. zarr-python
# runs with each of its codec pipelines: its default, its opt-in fused one, and the zarrs one
# (zarrs-python).
PEERS = ("tensorstore", "zarr-python", "zarr-python-fused", "zarrs-python")
# zarr-python with zarrcore's codec pipeline: zarrcore's engine behind zarr-python's API. Not a
# peer (never the best peer, in no ratio against the peers): shown beside them.
ZARRCORE_PIPELINE = "zarr-python-zarrcore"
LIBS = PEERS + (ZARRCORE_PIPELINE, "zarrcore")
# An older zarrcore (run.py --baseline PATH): zarrcore's worker code importing zarrcore from
# PATH. Not a peer: it is shown beside zarrcore for a before/after comparison.
BASELINE = "zarrcore-baseline"
ZARRCORES = ("zarrcore", BASELINE)
ZARR_PIPELINES = {
    "zarr-python": None,
    "zarr-python-fused": "zarr.core.codec_pipeline.FusedCodecPipeline",
    "zarrs-python": "zarrs.ZarrsCodecPipeline",
    ZARRCORE_PIPELINE: "zarrcore.zarr_pipeline.ZarrcorePipeline",
}

WORKLOADS = ("read_all", "read_chunks", "write_all", "roundtrip", "small", "threads", "busy",
             "rss", "limits", "xarray", "remote", "native")
# The independent suite's set (--suite): its 1024^3 cube, read all and the round trip, warm
# and cold, the peak RSS of each, and the machine limits (the decode floor).
SUITE_N = 1024
SUITE_WORKLOADS = ("read_all", "roundtrip", "rss", "limits")
# Reads that run warm and cold (--cache); the other workloads run warm.
COLD_WORKLOADS = ("read_all", "read_chunks", "roundtrip", "small", "native")
CUBE_VARIANTS = ("plain", "zstd", "sharded")
SMALL_VARIANT = "small"

ZSTD0 = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
CRC32C = {"name": "crc32c"}


class Dataset:
    """One benchmark array: its shape, data type and chunking, as every library will write it."""

    def __init__(self, name, shape, dtype, chunks, shards=None, zstd=True):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.chunks = tuple(chunks)  # inner chunks when sharded
        self.shards = tuple(shards) if shards else None
        self.zstd = zstd

    @property
    def nbytes(self):
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def read_block(self):
        """The unit of the chunk-by-chunk read: the shard when sharded, else the chunk."""
        return self.shards or self.chunks

    def grid(self, block):
        return tuple(math.ceil(s / b) for s, b in zip(self.shape, block))

    def nchunks(self):
        """Number of (inner) chunks."""
        return math.prod(self.grid(self.chunks))

    def regions(self, block):
        """Slices of every block of the grid, in C order."""
        out = []
        for index in np.ndindex(*self.grid(block)):
            out.append(tuple(slice(i * b, min((i + 1) * b, s))
                             for i, b, s in zip(index, block, self.shape)))
        return out

    def compressors(self):
        return [ZSTD0] if self.zstd else []

    def codecs_json(self):
        """The v3 `codecs` list of the array (what tensorstore's spec takes)."""
        inner = [BYTES_LE, *self.compressors()]
        if not self.shards:
            return inner
        return [{
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": list(self.chunks),
                "codecs": inner,
                "index_codecs": [BYTES_LE, CRC32C],
                "index_location": "end",
            },
        }]

    def metadata_json(self):
        """zarr.json of the array, as tensorstore's `metadata` member."""
        return {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(self.shape),
            "data_type": self.dtype.name,
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": list(self.shards or self.chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": self.codecs_json(),
        }

    def describe(self):
        s = "x".join(map(str, self.shape))
        parts = [f"{self.dtype.name} {s}"]
        if self.shards:
            parts.append("shards " + "x".join(map(str, self.shards))
                         + ", inner chunks " + "x".join(map(str, self.chunks))
                         + ", index bytes+crc32c at end")
        else:
            parts.append("chunks " + "x".join(map(str, self.chunks)))
        parts.append("zstd level 0" if self.zstd else "uncompressed")
        return ", ".join(parts)

    # -- expected values ---------------------------------------------------------------------
    def expected(self, sel=None):
        """The expected values of region `sel` (a tuple of slices; None for everything)."""
        if sel is None:
            sel = tuple(slice(0, s) for s in self.shape)
        ranges = [np.arange(*s.indices(n)) for s, n in zip(sel, self.shape)]
        if self.name == SMALL_VARIANT:
            i, j = ranges
            flat = (i[:, None] * self.shape[1] + j[None, :]) % 4099
            return (flat.astype(np.float32) * np.float32(0.25)).astype(self.dtype)
        z, y, x = ranges
        # value = (x + y*y//32 + z**3) mod 65536, z axis 0 and x the last axis. Each term is
        # reduced mod 2**16 in int64 first; uint16 additions then wrap mod 2**16 as well.
        zt = (z.astype(np.int64) ** 3 % 65536).astype(np.uint16)
        yt = (y.astype(np.int64) * y // 32 % 65536).astype(np.uint16)
        xt = (x % 65536).astype(np.uint16)
        return np.add(np.add(zt[:, None, None], yt[None, :, None]), xt[None, None, :])


def best_time(func, repeats=3, before=None):
    """The least wall time of `repeats` calls of `func`, in seconds; `before()`, when given,
    runs untimed ahead of each call (e.g. dropping the page cache)."""
    best = float("inf")
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def baseline_env(path):
    """The environment of a process that imports zarrcore from the checkout at `path` (with
    `--zarrcore installed`): first on PYTHONPATH, so its child processes import it too, and no
    bytecode written into that checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def zarr_pipeline_config(lib):
    """zarr-python's config that selects the codec pipeline of `lib` (a key of ZARR_PIPELINES).
    Arrays take the pipeline in force when they are opened or created."""
    path = ZARR_PIPELINES[lib]
    if path is None:
        return {}
    if path.startswith("zarrcore."):
        # (importing the module registers the pipeline, from whichever zarrcore is on sys.path)
        importlib.import_module(path.rsplit(".", 1)[0])
    if not path.startswith("zarrs."):
        return {"codec_pipeline.path": path}
    import zarrs  # noqa: F401  (registers the pipeline)
    # strict: zarrs fails instead of handing what it does not support to zarr-python's own.
    return {"codec_pipeline.path": path, "codec_pipeline.strict": True}


def use_zarr_pipeline(lib):
    """Select the codec pipeline of `lib` for the whole process; returns the zarr module."""
    import zarr

    zarr.config.set(zarr_pipeline_config(lib))
    return zarr


def cube_block(n):
    """256, clamped to the array for small smoke-test cubes."""
    return min(256, n)


def make_datasets(n, small_n=1000):
    c = cube_block(n)
    inner = min(64, c)
    shape = (n, n, n)
    return {
        "plain": Dataset("plain", shape, "uint16", (c, c, c), zstd=False),
        "zstd": Dataset("zstd", shape, "uint16", (c, c, c), zstd=True),
        "sharded": Dataset("sharded", shape, "uint16", (inner,) * 3, shards=(c, c, c), zstd=True),
        "small": Dataset("small", (small_n, small_n), "float32", (10, 10), zstd=True),
    }


def reference_path(data_dir, n, small_n, variant):
    """Where the shared reference copy of a dataset lives (every library reads this one)."""
    if variant == SMALL_VARIANT:
        return os.path.join(data_dir, f"small{small_n}", "ref", "small.zarr")
    return os.path.join(data_dir, f"n{n}", "ref", f"{variant}.zarr")


def write_path(data_dir, lib, variant):
    """Where a library's timed writes go (recreated for every repeat)."""
    return os.path.join(data_dir, "write", lib, f"{variant}.zarr")


def trash_dir(data_dir):
    """Where timed writes put earlier copies instead of deleting them (see set_aside)."""
    return os.path.join(data_dir, "trash")


def set_aside(path, data_dir):
    """Move an earlier copy at `path` into the trash rather than delete it: on ext4, a file
    created within about 30 s of many deletions scans the recently freed inodes first
    (150-1,500 us a file instead of about 20), so a delete just before a timed write would
    time the deletion. run.py empties the trash before and after the measurements."""
    if not os.path.lexists(path):
        return
    trash = trash_dir(data_dir)
    os.makedirs(trash, exist_ok=True)
    os.rename(path, os.path.join(trash, f"{os.getpid()}-{time.monotonic_ns()}"))


def check_equal(result, ds, sel=None, expected_cache=None):
    """True when `result` equals the expected values of region `sel` of `ds`.

    Compares in slabs along axis 0 so that checking a whole large array needs little memory
    when no cached expected array is given.
    """
    if sel is None:
        sel = tuple(slice(0, s) for s in ds.shape)
    shape = tuple(len(range(*s.indices(n))) for s, n in zip(sel, ds.shape))
    result = np.asarray(result)
    if result.shape != shape or result.dtype != ds.dtype:
        return False
    if expected_cache is not None:
        return bool(np.array_equal(result, expected_cache[sel]))
    start, stop, _ = sel[0].indices(ds.shape[0])
    step = max(1, (64 << 20) // max(1, result[0:1].nbytes))
    for lo in range(start, stop, step):
        hi = min(lo + step, stop)
        sub = (slice(lo, hi),) + tuple(sel[1:])
        if not np.array_equal(result[lo - start:hi - start], ds.expected(sub)):
            return False
    return True


def reset_peak_rss():
    """Start this process's peak RSS (VmHWM) afresh: a child forked from a large parent
    inherits its peak across exec, so ru_maxrss would report the parent's."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss():
    """This process's peak RSS in bytes since the last reset_peak_rss (or its start)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    raise OSError("no VmHWM in /proc/self/status")


def time_released_together(workers, barrier):
    """Start `workers` (threads or processes whose target first waits on `barrier`, a barrier
    for one more party), release them together and return the seconds until all have ended."""
    for w in workers:
        w.start()
    # The clock starts once the workers wait, as this last party releases them: started after
    # the release, it missed the work done while this thread was not running (a busy machine
    # then timed two threads at 0 s).
    while barrier.n_waiting < barrier.parties - 1:
        time.sleep(0.001)
    start = time.perf_counter()
    barrier.wait()
    for w in workers:
        w.join()
    return time.perf_counter() - start
