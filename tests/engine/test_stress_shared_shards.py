"""Stress: writers in 8 threads, then in 4 processes, rewrite disjoint bands of rows that share
every shard and inner chunk, round after round, while readers read the whole array. No update
may be lost, no read may see part of a shard's update, and nothing may hang (a time limit
fails the test).

Band b (4 rows) belongs to writer b % writers. In round r its writer sets it to
value(r, b) = 1000 * (r + 1) + b, either in one call across all shard columns or one shard
column per call. A shard is replaced whole, so every read must see each band's part in one
shard column ("segment") at one value: 0 (never written) or value(r, b) of some round r, never
a mix, and each reader must see a segment's round only grow."""
import multiprocessing
import os
import threading
import types

import numpy as np
import pytest

import zarrcore
from _child import run_in_child

SHAPE, SHARD, INNER, BAND = (128, 256), (32, 64), (8, 16), 4
NBANDS = SHAPE[0] // BAND
NCOLS = SHAPE[1] // SHARD[1]


def value(rnd, band):
    return 1000 * (rnd + 1) + band


def create(path, python_chain=False):
    filters = [{"name": "transpose", "configuration": {"order": [1, 0]}}] if python_chain else None
    return zarrcore.create_array(path, shape=SHAPE, dtype="uint32", chunks=INNER, shards=SHARD,
                                 fill_value=0, filters=filters)


def write_rounds(a, writer, writers, rounds):
    for rnd in range(rounds):
        for band in range(writer, NBANDS, writers):
            rows = slice(band * BAND, (band + 1) * BAND)
            if rnd % 2 == 0:
                a[rows, :] = value(rnd, band)
            else:  # one partly written shard per call
                for c in range(NCOLS):
                    a[rows, c * SHARD[1]:(c + 1) * SHARD[1]] = value(rnd, band)


def segments(data):
    """(NBANDS, NCOLS, BAND * shard width) view: each band's part in each shard column."""
    s = data.reshape(NBANDS, BAND, NCOLS, SHARD[1]).transpose(0, 2, 1, 3)
    return s.reshape(NBANDS, NCOLS, -1)


def check_read(data, last_round):
    """Check one whole-array read against the rules above; `last_round` (NBANDS, NCOLS) is the
    reader's previous view and is updated. Returns a description of each violation."""
    seg = segments(data)
    first = seg[..., 0].astype(np.int64)
    problems = []
    for b, c in zip(*np.nonzero((seg != first[..., None]).any(axis=-1))):
        problems.append(f"torn: band {b} in shard column {c} holds {np.unique(seg[b, c])}")
    written = first != 0
    bands = np.broadcast_to(np.arange(NBANDS)[:, None], first.shape)
    wrong = written & (first % 1000 != bands)
    for b, c in zip(*np.nonzero(wrong)):
        problems.append(f"band {b} in shard column {c} holds another band's value {first[b, c]}")
    rounds = np.where(written, first // 1000 - 1, -1)
    for b, c in zip(*np.nonzero(rounds < last_round)):
        problems.append(f"band {b} in shard column {c} went back from round {last_round[b, c]} "
                        f"to {rounds[b, c]}")
    np.maximum(last_round, rounds, out=last_round)
    return problems


def lost_updates(a, rounds):
    """Segments that do not hold their writer's last value."""
    expected = np.array([value(rounds - 1, b) for b in range(NBANDS)])[:, None, None]
    return int((segments(a[...]) != expected).any(axis=-1).sum())


def read_until(a, stop, reads):
    """Read the whole array (and one part-shard region) until `stop` is set; every problem found
    goes into the returned list. `reads` counts the reads."""
    last_round = np.full((NBANDS, NCOLS), -1)
    problems = []
    while not stop.is_set():
        problems += check_read(a[...], last_round)
        part = a[:, 40:200]  # a region cutting through shards: the reads of parts of shards
        problems += [f"part read: {p}" for p in check_read_part(part)]
        reads.value += 1
    return problems


def check_read_part(part):
    """Each band's rows in the region are uniform per shard column it overlaps."""
    problems = []
    for b in range(NBANDS):
        rows = part[b * BAND:(b + 1) * BAND]
        for lo, hi in ((0, 24), (24, 88), (88, 152), (152, 160)):  # 40:200 against 64-wide shards
            seg = rows[:, lo:hi]
            if (seg != seg.flat[0]).any():
                problems.append(f"torn: band {b} columns {40 + lo}:{40 + hi} hold {np.unique(seg)}")
    return problems


def hammer_threads(path, python_chain, rounds):
    writers = 8
    a = create(path, python_chain)
    zarrcore.config.set(num_threads=2)
    start = threading.Barrier(writers + 2)
    stop = threading.Event()
    errors, problems = [], []
    counts = [types.SimpleNamespace(value=0) for _ in range(2)]

    def write(w):
        try:
            start.wait()
            write_rounds(a, w, writers, rounds)
        except BaseException as e:  # reported below
            errors.append(e)

    def read(k):
        try:
            start.wait()
            problems.extend(read_until(zarrcore.open_array(path), stop, counts[k]))
        except BaseException as e:
            errors.append(e)

    writer_threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    readers = [threading.Thread(target=read, args=(k,)) for k in range(2)]
    for t in writer_threads + readers:
        t.start()
    for t in writer_threads:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors
    assert not problems, problems[:10]
    assert all(c.value >= 2 for c in counts), [c.value for c in counts]
    assert lost_updates(a, rounds) == 0


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork for the time limit")
@pytest.mark.parametrize("python_chain", [False, True], ids=["native", "python-chain"])
def test_threads_share_shards(tmp_path, python_chain):
    status = run_in_child(lambda: hammer_threads(str(tmp_path / "a"), python_chain, rounds=12),
                          timeout=60)
    assert status == 0


def _process_writer(path, writer, writers, rounds, start):
    zarrcore.config.set(num_threads=2)
    a = zarrcore.open_array(path, mode="r+")
    start.wait()
    write_rounds(a, writer, writers, rounds)


def _process_reader(path, start, stop, reads, failed):
    a = zarrcore.open_array(path)
    start.wait()
    problems = read_until(a, stop, reads)
    if problems:
        failed.value = len(problems)
        print("\n".join(problems[:10]), flush=True)


@pytest.mark.slow
def test_processes_share_shards(tmp_path):
    path, writers, rounds = str(tmp_path / "a"), 4, 12
    a = create(path)
    ctx = multiprocessing.get_context("spawn")
    start, stop = ctx.Barrier(writers + 2), ctx.Event()
    reads = [ctx.Value("i", 0) for _ in range(2)]
    failed = ctx.Value("i", 0)
    procs = [ctx.Process(target=_process_writer, args=(path, w, writers, rounds, start))
             for w in range(writers)]
    readers = [ctx.Process(target=_process_reader, args=(path, start, stop, n, failed))
               for n in reads]
    for p in procs + readers:
        p.start()
    try:
        for p in procs:
            p.join(90)
        hung = [p.pid for p in procs if p.is_alive()]
        stop.set()
        for p in readers:
            p.join(30)
        hung += [p.pid for p in readers if p.is_alive()]
    finally:
        for p in procs + readers:
            if p.is_alive():
                p.kill()
                p.join()
    assert not hung, f"processes {hung} still running after the time limit"
    assert [p.exitcode for p in procs + readers] == [0] * (writers + 2)
    assert failed.value == 0, f"{failed.value} torn or stale reads (printed by the reader)"
    assert all(n.value >= 2 for n in reads), [n.value for n in reads]
    assert lost_updates(a, rounds) == 0
