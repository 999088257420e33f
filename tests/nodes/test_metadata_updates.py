"""Concurrent metadata updates lose nothing: appends, resizes, attribute updates and
consolidation re-read the metadata under the node's metadata lock, across threads and
processes."""
import multiprocessing
import threading

import numpy as np
import pytest

import zarrcore

BLOCK = (3, 4)  # rows per appended block, and columns; chunks of 5 rows straddle blocks
APPENDS = 200


def create(path, zarr_format=3, **kwargs):
    return zarrcore.create_array(path, shape=(0, BLOCK[1]), dtype="int32", chunks=(5, BLOCK[1]),
                                 fill_value=-1, zarr_format=zarr_format, **kwargs)


def append_blocks(path, worker, count, start=None):
    a = zarrcore.open_array(path, mode="r+")
    if start is not None:
        start.wait()
    for i in range(count):
        a.append(np.full(BLOCK, worker * 10000 + i, "int32"))


def check_blocks(a, workers, count):
    """Every block present once, whole, in its own rows."""
    data = a[...]
    assert data.shape == (workers * count * BLOCK[0], BLOCK[1])
    blocks = data.reshape(-1, BLOCK[0] * BLOCK[1])
    assert (blocks == blocks[:, :1]).all(), "a block was torn or overwritten"
    assert sorted(blocks[:, 0]) == [w * 10000 + i for w in range(workers) for i in range(count)]


def spawn(targets):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=t, args=args) for t, args in targets]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    return [p.exitcode for p in procs]


@pytest.mark.slow
@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "shards"])
def test_two_processes_appending_lose_no_block(tmp_path, sharded):
    path = str(tmp_path / "a")
    a = create(path, shards=(10, BLOCK[1]) if sharded else None)
    start = multiprocessing.get_context("spawn").Barrier(2)
    assert spawn([(append_blocks, (path, w, APPENDS, start)) for w in range(2)]) == [0, 0]
    check_blocks(zarrcore.open_array(path), 2, APPENDS)
    assert a.shape == (0, BLOCK[1])  # an old handle keeps its shape until it updates


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_appending_through_one_handle_or_their_own_lose_no_block(tmp_path, kind):
    store = {} if kind == "memory" else str(tmp_path / "a")
    shared = create(store)
    count, workers = 40, 4

    def run(worker):
        a = shared if worker % 2 else zarrcore.open_array(store, mode="r+")
        for i in range(count):
            a.append(np.full(BLOCK, worker * 10000 + i, "int32"))

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    check_blocks(zarrcore.open_array(store), workers, count)


def set_attributes(path, count, start):
    a = zarrcore.open_array(path, mode="r+")
    start.wait()
    for i in range(count):
        a.attrs[f"k{i}"] = i


def resize_repeatedly(path, count, start):
    a = zarrcore.open_array(path, mode="r+")
    start.wait()
    for i in range(count):
        a.resize((10 + i % 7, BLOCK[1]))


@pytest.mark.slow
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_attribute_updates_beside_resizes_are_all_kept(tmp_path, zarr_format):
    path = str(tmp_path / "a")
    create(path, zarr_format)
    count = 100
    start = multiprocessing.get_context("spawn").Barrier(2)
    codes = spawn([(set_attributes, (path, count, start)), (resize_repeatedly, (path, count, start))])
    assert codes == [0, 0]
    a = zarrcore.open_array(path)
    assert dict(a.attrs) == {f"k{i}": i for i in range(count)}
    assert a.shape == (10 + (count - 1) % 7, BLOCK[1])


def test_threads_updating_attributes_through_their_own_handles_keep_every_update(tmp_path):
    g = zarrcore.open_group(str(tmp_path / "g"), mode="w")
    g.create_array("x", shape=(4,), dtype="u1")
    workers, count = 4, 25

    def run(worker):
        mine = zarrcore.open_group(str(tmp_path / "g"), mode="r+")
        for i in range(count):
            mine.attrs[f"w{worker}-{i}"] = i
            if i % 5 == 0:
                zarrcore.consolidate_metadata(str(tmp_path / "g"))

    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    attrs = dict(zarrcore.open_group(str(tmp_path / "g"), mode="r").attrs)
    assert attrs == {f"w{w}-{i}": i for w in range(workers) for i in range(count)}


def test_a_handle_shows_what_others_stored_once_it_updates(tmp_path):
    path = str(tmp_path / "a")
    mine, theirs = create(path), create(path, overwrite=True)
    theirs.attrs["theirs"] = 1
    theirs.resize((6, BLOCK[1]))
    mine.attrs["mine"] = 2  # applied to the stored attributes, not to the handle's old copy
    assert dict(mine.attrs) == {"theirs": 1, "mine": 2}
    assert mine.shape == (6, BLOCK[1])
    mine.append(np.zeros(BLOCK, "int32"))
    assert zarrcore.open_array(path).shape == (9, BLOCK[1])


def update_group_attributes(path, worker, count, start):
    g = zarrcore.open_group(path, mode="r+")
    start.wait()
    for i in range(count):
        g.attrs[f"w{worker}-{i}"] = i
        if worker == 0 and i % 10 == 0:
            zarrcore.consolidate_metadata(path)


@pytest.mark.slow
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_two_processes_updating_group_attributes_keep_every_update(tmp_path, zarr_format):
    """A group's metadata lock is its metadata file's own (no lock file beside its members):
    still exclusive across processes, consolidation included."""
    path = str(tmp_path / "g")
    zarrcore.open_group(path, mode="w", zarr_format=zarr_format).create_array(
        "x", shape=(4,), dtype="u1")
    count = 100
    start = multiprocessing.get_context("spawn").Barrier(2)
    codes = spawn([(update_group_attributes, (path, w, count, start)) for w in range(2)])
    assert codes == [0, 0]
    # Not through .zmetadata of v2, which holds the attributes of its last consolidation.
    attrs = dict(zarrcore.open_group(path, mode="r", use_consolidated=False).attrs)
    assert attrs == {f"w{w}-{i}": i for w in range(2) for i in range(count)}
    assert not (tmp_path / "g" / zarrcore._native.files.LOCK_FILE).exists()
