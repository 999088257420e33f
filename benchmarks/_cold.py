"""Cold page cache: dropping it before a timed read, and the device's own speed (the I/O floor).

Imported by run.py and by every worker.
"""
import os
import random
import threading
import time

import _common as C

DROP_CACHES = "/proc/sys/vm/drop_caches"
METHODS = ("auto", "drop_caches", "fadvise")
PROBE_NAME = "io-probe.bin"
PROBE_BLOCK = 8 << 20  # the sequential read's request size
PROBE_STREAMS = 8  # the sequential read's streams in the second pass
RANDOM_BLOCK = 4096
RANDOM_READS = 200


def _files(path):
    if os.path.isfile(path):
        return [path]
    return [os.path.join(root, name) for root, _, names in os.walk(path) for name in names]


def _fadvise_dontneed(paths):
    for path in paths:
        for name in _files(path):
            fd = os.open(name, os.O_RDONLY)
            try:
                os.fdatasync(fd)  # dirty pages are not dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def drop_page_cache(paths, method="auto"):
    """Evict `paths` (files or directory trees) from the page cache; returns how: "drop_caches"
    (the whole cache, `echo 3 > /proc/sys/vm/drop_caches`, needs root) or "fadvise"
    (posix_fadvise DONTNEED on every file, which leaves pages other processes have mapped).
    "auto" tries the first and falls back to the second."""
    if method not in METHODS:
        raise ValueError(f"unknown page cache method {method!r}")
    if method in ("auto", "drop_caches"):
        os.sync()
        try:
            with open(DROP_CACHES, "w") as f:
                f.write("3\n")
            return "drop_caches"
        except OSError:
            if method == "drop_caches":
                raise
    _fadvise_dontneed(paths)
    return "fadvise"


def stored_size(path):
    """(bytes, files) of a directory tree: what a whole-array read fetches from the device."""
    files = _files(path)
    return sum(os.path.getsize(f) for f in files), len(files)


def _write_probe(path, nbytes):
    block = os.urandom(1 << 20)
    with open(path + ".tmp", "wb") as f:
        for _ in range(nbytes >> 20):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def _read_in_streams(path, nbytes, streams):
    """Seconds to read the file whole in PROBE_BLOCK requests, `streams` threads each reading
    its own contiguous part (pread releases the GIL)."""
    part = -(-nbytes // streams // PROBE_BLOCK) * PROBE_BLOCK
    fd = os.open(path, os.O_RDONLY)
    barrier = threading.Barrier(streams + 1)

    def read_part(start):
        barrier.wait()
        for off in range(start, min(start + part, nbytes), PROBE_BLOCK):
            os.pread(fd, PROBE_BLOCK, off)

    threads = [threading.Thread(target=read_part, args=(i * part,)) for i in range(streams)]
    try:
        return C.time_released_together(threads, barrier)
    finally:
        os.close(fd)


def measure_device(data_dir, mib, method="auto"):
    """The device under `data_dir`, from a cold cache: sequential bandwidth (passes over a
    `mib` MiB file in PROBE_BLOCK reads, by one stream and by PROBE_STREAMS) and the latency
    of one random RANDOM_BLOCK read (readahead off, one request in flight). The file is
    written once and kept."""
    path = os.path.join(data_dir, PROBE_NAME)
    nbytes = mib << 20
    if not os.path.exists(path) or os.path.getsize(path) != nbytes:
        _write_probe(path, nbytes)
    used = drop_page_cache([path], method)
    one_stream = nbytes / _read_in_streams(path, nbytes, 1) / 1e9
    drop_page_cache([path], method)
    streams = nbytes / _read_in_streams(path, nbytes, PROBE_STREAMS) / 1e9
    drop_page_cache([path], method)
    rng = random.Random(0)
    offsets = [rng.randrange(nbytes // RANDOM_BLOCK) * RANDOM_BLOCK for _ in range(RANDOM_READS)]
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        t0 = time.perf_counter()
        for off in offsets:
            os.pread(fd, RANDOM_BLOCK, off)
        latency = (time.perf_counter() - t0) / RANDOM_READS
    finally:
        os.close(fd)
    # The device's bandwidth is what the better of the two reached: a single stream waits for
    # each request, and readers with several in flight get more from a virtual disk.
    return {"probe_bytes": nbytes, "seq_gbps": max(one_stream, streams),
            "one_stream_gbps": one_stream, "streams_gbps": streams, "streams": PROBE_STREAMS,
            "random_latency_s": latency, "random_block": RANDOM_BLOCK, "method": used}
