"""Many selections read together (Array.get_many, ChunkEngine.read_many, and the reads that
asyncio tasks start at once): numpy's values, each chunk of overlapping selections fetched
and decoded once, and every result an array of its own."""
import asyncio

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.errors import SelectionError
from zarrcore.metadata.indexing import numpy_indexer
from zarrcore.engine.planning import selection_boxes

from counting_store import CountingStore

SHAPE = (13, 11, 9)
DATA = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE)


def _array(store=None, shards=None):
    a = zarrcore.create_array(store if store is not None else zarrcore.storage.MemoryStore(),
                              shape=SHAPE, chunks=(4, 3, 5), shards=shards, dtype="int32")
    a[...] = DATA
    return a


@st.composite
def _item(draw, n):
    kind = draw(st.sampled_from(["int", "slice", "step", "all"]))
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "all":
        return slice(None)
    start = draw(st.none() | st.integers(-n - 2, n + 2))
    stop = draw(st.none() | st.integers(-n - 2, n + 2))
    step = draw(st.sampled_from([1, 1, 2, 3, -1, -2])) if kind == "step" else None
    return slice(start, stop, step)


@st.composite
def _selection(draw):
    count = draw(st.integers(1, len(SHAPE)))
    items = tuple(draw(_item(n)) for n in SHAPE[:count])
    extra = draw(st.sampled_from([None, "ellipsis", "newaxis"]))
    if extra == "ellipsis":
        items = (*items, Ellipsis)
    elif extra == "newaxis":
        items = (*items[:1], None, *items[1:])
    return items[0] if len(items) == 1 and draw(st.booleans()) else items


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(selections=st.lists(_selection(), min_size=1, max_size=24),
       sharded=st.booleans())
def test_get_many_gives_numpys_values(selections, sharded):
    a = _array(shards=(8, 6, 5) if sharded else None)
    got = a.get_many(selections)
    for selection, value in zip(selections, got):
        want = DATA[selection]
        assert np.shape(value) == want.shape, selection
        np.testing.assert_array_equal(value, want)


def test_overlapping_windows_read_each_chunk_once_into_arrays_of_their_own():
    store = CountingStore()
    a = _array(store)
    windows = [(slice(r, r + 6), slice(c, c + 5), slice(8, 0, -2))
               for r in range(0, 8, 2) for c in range(0, 7, 3)]
    windows += [(3, slice(None), 4), (slice(12, 2, -3), 5)]
    store.reads.clear()
    got = a.get_many(windows)
    assert max(store.reads.values()) == 1
    for w, value in zip(windows, got):
        np.testing.assert_array_equal(value, DATA[w])
    got[0][...] = -1  # each result is its own array: the others keep their values
    np.testing.assert_array_equal(got[1], DATA[windows[1]])


def test_boxes_hold_no_more_than_their_members():
    grid = (16, 16)
    shape = (1024, 1024)
    tiles = [(slice(r, r + 32), slice(c, c + 32)) for r in (0, 16, 32) for c in (0, 16)]
    far = [(slice(900, 932), slice(900, 932)), (slice(910, 942), slice(905, 937))]
    indexers = [numpy_indexer(s, shape, grid) for s in tiles + far + [([1, 2], 3)]]
    boxes, alone = selection_boxes(indexers, grid)
    assert alone == [8]  # (the int array is read on its own)
    assert sorted(sorted(b.members) for b in boxes) == [[0, 1, 2, 3, 4, 5], [6, 7]]
    for box in boxes:
        volume = np.prod([s.stop - s.start for s in box.region])
        assert volume <= 32 * 32 * len(box.members)


def test_a_bad_selection_fails_only_its_own():
    a = _array()
    with pytest.raises(SelectionError):
        a.get_many([(1, 2), (99, 0)])

    async def main():
        aa = a.async_array
        return await asyncio.gather(aa.getitem((1, 2)), aa.getitem((99, 0)),
                                    aa.getitem(slice(2, 4)), return_exceptions=True)

    first, bad, third = asyncio.run(main())
    np.testing.assert_array_equal(first, DATA[1, 2])
    assert isinstance(bad, SelectionError)
    np.testing.assert_array_equal(third, DATA[2:4])


def test_concurrent_async_reads_fetch_each_chunk_once():
    store = CountingStore()
    a = _array(store)
    windows = [(slice(r, r + 6), slice(c, c + 5)) for r in range(0, 8) for c in range(0, 7)]

    async def main():
        aa = a.async_array
        assert aa is a.async_array  # (one per array: its reads are read together)
        return await asyncio.gather(*[aa.getitem(w) for w in windows])

    store.reads.clear()
    got = asyncio.run(main())
    assert max(store.reads.values()) == 1
    for w, value in zip(windows, got):
        np.testing.assert_array_equal(value, DATA[w])


def test_async_reads_with_cancellations_give_numpys_values(tmp_path):
    a = zarrcore.create_array(str(tmp_path / "c"), shape=(200, 180), chunks=(16, 20),
                              dtype="i4", compressors=[{"name": "zstd"}])
    data = np.arange(200 * 180, dtype="i4").reshape(200, 180)
    a[...] = data
    rng = np.random.default_rng(7)
    windows = [(slice(r, r + 40), slice(c, c + 30))
               for r, c in zip(rng.integers(0, 160, 300).tolist(),
                               rng.integers(0, 150, 300).tolist())]
    doomed = set(rng.choice(300, 100, replace=False).tolist())

    async def main():
        aa = a.async_array
        tasks = [asyncio.create_task(aa.getitem(w)) for w in windows]
        for k in sorted(doomed):
            if k % 3 == 0:
                await asyncio.sleep(0)  # (some cancelled before their batch starts, some after)
            tasks[k].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        after = await asyncio.gather(*[aa.getitem(w) for w in windows[:20]])
        return results, after

    results, after = asyncio.run(main())
    for k, (w, got) in enumerate(zip(windows, results)):
        if isinstance(got, asyncio.CancelledError):
            assert k in doomed
        else:
            np.testing.assert_array_equal(got, data[w])
    for w, got in zip(windows, after):
        np.testing.assert_array_equal(got, data[w])


def test_a_task_cancelled_as_its_batch_starts_leaves_the_others_reading():
    a = _array()

    async def main():
        aa = a.async_array
        first = asyncio.create_task(aa.getitem((1, slice(2, 5))))
        second = asyncio.create_task(aa.getitem((2, slice(0, 3))))
        await asyncio.sleep(0)  # (both queued: the batch starts in the next callback,
        first.cancel()          # before the first task sees its cancellation)
        value = await asyncio.wait_for(second, 60)
        with pytest.raises(asyncio.CancelledError):
            await first
        return value

    np.testing.assert_array_equal(asyncio.run(main()), DATA[2, 0:3])
