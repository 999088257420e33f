"""The pool of kept output blocks behind large reads (zarrcore._native.memory, csrc/memory/zc_pool.c)."""
import asyncio
import gc
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zarrcore
from zarrcore._native import memory as _memory

BIG = (4 << 20) // 8  # float64 items in 4 MiB
PIECE = (512 << 10) // 8  # float64 items in 512 KiB: a piece of a shared 2 MiB block
BLOCK = (64 << 10) // 8  # float64 items in 64 KiB: a block of its own, below the pieces


def address(a):
    return a.__array_interface__["data"][0]


@pytest.fixture
def pool():
    zarrcore.config.set(buffer_pool_bytes=0)  # start empty
    zarrcore.config.set(buffer_pool_bytes=64 << 20)
    yield
    zarrcore.config.set(buffer_pool_bytes=0)


def test_small_arrays_come_from_numpy(pool):
    a = _memory.empty((10, 10), np.float32)
    assert a.base is None and a.flags.owndata


def on_pool_memory(a):
    """Is `a` (or what it views) an array on a block of the pool?"""
    while isinstance(a, np.ndarray):
        a = a.base
    return type(a).__module__ == "zarrcore._native.memory"


@pytest.mark.parametrize("nbytes, pooled", [
    (_memory.BLOCK_MIN_BYTES - 8, False), (_memory.BLOCK_MIN_BYTES, True),
    (_memory.PIECE_MIN_BYTES - 8, True), (_memory.PIECE_MIN_BYTES, True),
    (_memory.POOL_MIN_BYTES, True)])
def test_where_each_size_comes_from(pool, nbytes, pooled):
    a = _memory.empty((nbytes // 8,), np.float64)
    assert on_pool_memory(a) == pooled and a.flags.owndata != pooled
    assert not pooled or address(a) % 4096 == 0


def test_arrays_below_the_pieces_have_blocks_of_their_own(pool):
    """Each is given back whole when freed, so a live one keeps nothing else from reuse."""
    arrays = [_memory.empty((BLOCK + 1,), np.float64) for _ in range(4)]  # 17 pages each
    spans = sorted((address(a), address(a) + a.nbytes) for a in arrays)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    where = address(arrays[1])
    del arrays[1]
    assert _memory.kept_bytes() == 17 << 12
    again = _memory.empty((BLOCK // 2 + 1, 2), np.float64)  # the same 17 pages
    assert address(again) == where and _memory.kept_bytes() == 0
    for k, a in enumerate([*arrays, again]):
        a[...] = k
    assert all((a == k).all() for k, a in enumerate([*arrays, again]))


@given(shape=st.lists(st.integers(1, 96), min_size=1, max_size=2),
       dtype=st.sampled_from(["u1", "<i2", ">f4", "<f8", "c16", "M8[s]", "V3"]),
       scale=st.sampled_from([1, 8, 64]))
def test_pool_arrays_behave_as_numpy_arrays(shape, dtype, scale):
    """Of any size and type: written and read as numpy's own, pickled, copied and resized
    as usual (an array on a block does not own its memory, as a view does not)."""
    shape = (scale, *shape)
    a = _memory.empty(shape, dtype)
    expected = np.frombuffer(np.random.default_rng(1).bytes(a.nbytes), dtype).reshape(shape)
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.flags.writeable and a.flags.c_contiguous and a.flags.aligned
    a[...] = expected
    np.testing.assert_array_equal(a, expected)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)), expected)
    np.testing.assert_array_equal(np.resize(a, a.size + 3)[:a.size], expected.ravel())
    copy = a.copy()
    assert copy.flags.owndata
    copy.resize(a.size + 3, refcheck=False)
    if not a.flags.owndata:
        with pytest.raises(ValueError, match="does not own its data"):
            a.resize(a.size + 3, refcheck=False)
    del a
    np.testing.assert_array_equal(copy[:expected.size], expected.ravel())


def test_object_arrays_come_from_numpy(pool):
    a = _memory.empty((BIG,), object)
    assert a.base is None and (a == None).all()  # noqa: E711


def test_large_array_is_a_writable_pool_block(pool):
    a = _memory.empty((BIG // 4, 4), "<f8")
    assert a.shape == (BIG // 4, 4) and a.dtype == np.dtype("<f8")
    assert a.flags.writeable and a.flags.c_contiguous and a.flags.aligned
    a[...] = np.arange(BIG).reshape(a.shape)
    assert a.sum() == BIG * (BIG - 1) / 2
    assert address(a) % 4096 == 0


def test_mid_size_arrays_are_disjoint_pieces_of_shared_blocks(pool):
    pieces = [_memory.empty((PIECE,), np.float64) for _ in range(8)]
    starts = sorted(address(a) for a in pieces)
    assert all(s % 4096 == 0 for s in starts)
    assert all(b - a >= PIECE * 8 for a, b in zip(starts, starts[1:]))
    # 8 pieces of 512 KiB span at most three 2 MiB blocks.
    assert len({s >> 21 for s in starts}) <= 3
    for k, a in enumerate(pieces):
        a[:] = k
    assert all((a == k).all() for k, a in enumerate(pieces))


def test_a_block_of_pieces_is_kept_once_all_are_freed(pool):
    pieces = [_memory.empty((PIECE,), np.float64) for _ in range(8)]
    blocks = {address(a) >> 21 for a in pieces}
    assert _memory.kept_bytes() == 0
    survivor = pieces.pop()
    del pieces
    # At least one block held none but the freed pieces; the survivor's is still in use.
    kept = _memory.kept_bytes()
    assert kept >= 2 << 20 and kept % (2 << 20) == 0
    survivor[:] = 3
    # New pieces take the kept block rather than fresh memory.
    again = [_memory.empty((PIECE,), np.float64) for _ in range(8)]
    assert _memory.kept_bytes() <= kept - (2 << 20)
    assert {address(a) >> 21 for a in again} & blocks
    assert (survivor == 3).all()


def test_freed_block_is_reused_for_the_same_size(pool):
    a = _memory.empty((BIG,), np.float64)
    where = address(a)
    del a
    gc.collect()
    assert _memory.kept_bytes() == 4 << 20
    b = _memory.empty((BIG // 2, 2), np.float64)
    assert address(b) == where
    assert _memory.kept_bytes() == 0


def test_a_live_view_keeps_the_block_from_reuse(pool):
    a = _memory.empty((BIG,), np.float64)
    a[:] = 7
    view = a[10:20]
    where = address(a)
    del a
    b = _memory.empty((BIG,), np.float64)
    assert address(b) != where
    b[:] = 1
    assert (view == 7).all()
    del view
    c = _memory.empty((BIG,), np.float64)
    assert address(c) == where


def test_limit_zero_keeps_nothing(pool):
    a = _memory.empty((BIG,), np.float64)
    del a
    assert _memory.kept_bytes() == 4 << 20
    zarrcore.config.set(buffer_pool_bytes=0)
    assert _memory.kept_bytes() == 0
    b = _memory.empty((BIG,), np.float64)
    del b
    assert _memory.kept_bytes() == 0


def test_a_pool_that_keeps_nothing_leaves_small_outputs_to_numpy(pool):
    # (A block of their own would be mapped and unmapped by every read.)
    zarrcore.config.set(buffer_pool_bytes=0)
    assert not on_pool_memory(_memory.empty((BLOCK,), np.float64))
    assert on_pool_memory(_memory.empty((PIECE,), np.float64))
    zarrcore.config.set(buffer_pool_bytes=64 << 20)
    assert on_pool_memory(_memory.empty((BLOCK,), np.float64))


def test_limit_drops_the_oldest_blocks(pool):
    zarrcore.config.set(buffer_pool_bytes=8 << 20)
    a, b, c = (_memory.empty((BIG,), np.float64) for _ in range(3))
    first = address(a)
    del a, b, c
    # Three 4 MiB blocks freed in order; only the two given back last fit under 8 MiB.
    assert _memory.kept_bytes() == 8 << 20
    again = [_memory.empty((BIG,), np.float64) for _ in range(2)]
    assert first not in {address(a) for a in again}


def test_config_validates_the_limit():
    with pytest.raises(ValueError, match="buffer_pool_bytes"):
        zarrcore.config.set(buffer_pool_bytes=-1)


@pytest.mark.parametrize("items", [BIG, PIECE, PIECE // 2 + 1, BLOCK + 1])
def test_threads_never_share_a_block(pool, items):
    errors = []

    def work(k):
        for _ in range(50):
            a = _memory.empty((items,), np.float64)
            a[:] = k
            if not (a == k).all():
                errors.append(k)
            del a

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_reads_return_independent_arrays(tmp_path, pool):
    data = np.arange(2 * BIG, dtype=np.float64).reshape(2, BIG)
    arr = zarrcore.create_array(tmp_path / "a.zarr", shape=data.shape, dtype=data.dtype,
                                chunks=(1, BIG // 2))
    arr[...] = data
    first = arr[...]
    assert not first.flags.owndata  # on a pool block
    second = arr[...]
    assert address(first) != address(second)
    second[...] = -1
    np.testing.assert_array_equal(first, data)
    del second
    np.testing.assert_array_equal(arr[...], data)


def lazy_free_bytes():
    """This process's memory marked MADV_FREE and not reclaimed yet (None where not reported:
    not on Linux, where Wine's programs would read the host's /proc)."""
    if sys.platform != "linux":
        return None
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("LazyFree:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return None


@pytest.mark.skipif(lazy_free_bytes() is None, reason="the kernel reports no LazyFree memory")
def test_recent_blocks_stay_resident_and_older_ones_are_advised(pool):
    """The last 32 MiB given back stay resident (no MADV_FREE, whose TLB flush interrupts the
    other threads' CPUs); blocks pushed out of those 32 MiB, or larger ones, are advised."""
    zarrcore.config.set(buffer_pool_bytes=256 << 20)
    start = lazy_free_bytes()
    blocks = [_memory.empty((BIG,), np.float64) for _ in range(9)]  # 9 x 4 MiB
    for b in blocks:
        b[...] = 1.0  # resident, so advising shows in LazyFree
    first = address(blocks[0])
    del b
    for _ in range(8):
        blocks.pop(0)
    assert lazy_free_bytes() - start < 4 << 20  # 32 MiB given back, all resident
    del blocks  # 36 MiB given back: the oldest 4 MiB block is advised
    assert lazy_free_bytes() - start >= 4 << 20
    assert _memory.kept_bytes() == 36 << 20
    big = _memory.empty(((48 << 20) // 8,), np.float64)
    big[...] = 1.0
    del big
    assert lazy_free_bytes() - start >= 52 << 20
    again = _memory.empty((BIG,), np.float64)
    assert address(again) != first  # the most recent (resident) block goes out first


SAMPLE = (181, 360)  # float32: 254.5 KiB, one sample of an ERA5-like array


@pytest.fixture
def samples(tmp_path):
    data = np.random.default_rng(0).standard_normal((32, *SAMPLE), dtype=np.float32)
    a = zarrcore.create_array(tmp_path / "s.zarr", shape=data.shape, dtype="f4",
                              chunks=(1, *SAMPLE))
    a[...] = data
    return a, data


READS = {
    "a[t]": (lambda a: a[3], lambda d: d[3]),
    "get_basic_selection": (lambda a: a.get_basic_selection(slice(1, 2)), lambda d: d[1:2]),
    "oindex": (lambda a: a.oindex[[5, 2]], lambda d: d[[5, 2]]),
    "vindex": (lambda a: a.vindex[[5, 2, 5]], lambda d: d[[5, 2, 5]]),
    "get_many": (lambda a: a.get_many([4, slice(3, 5)])[1], lambda d: d[3:5]),
    "async": (lambda a: asyncio.run(a.async_array.getitem(3)), lambda d: d[3]),
    "native read": (lambda a: a.native_handle().read((3, 0, 0), (1, *SAMPLE)),
                    lambda d: d[3:4]),
    "native read_chunk": (lambda a: a.native_handle().read_chunk((3, 0, 0)), lambda d: d[3:4]),
}


@pytest.mark.parametrize("read", READS)
def test_reads_return_samples_on_pool_memory(samples, read):
    a, data = samples
    got, expected = READS[read][0](a), READS[read][1](data)
    assert on_pool_memory(got) and got.flags.writeable
    np.testing.assert_array_equal(got, expected)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts Linux's minor faults")
@pytest.mark.parametrize("malloc", ["glibc's defaults", "thresholds fixed, as in dask's workers"])
def test_a_fresh_process_reads_samples_without_faulting_them_in(samples, tmp_path, malloc):
    """`x = a[t]` in a loop of a fresh process faulted in most of each 64-page sample while
    malloc handed its memory back to the system between reads (20-30 faults a call); a
    process that had freed 8 MiB once, and now any, takes a few at most. With malloc's
    thresholds fixed (MALLOC_TRIM_THRESHOLD_, which dask's nanny sets for its workers), every
    read's buffer of the stored chunk was a fresh mapping: 59 faults a call."""
    script = textwrap.dedent(f"""
        import resource, time
        import zarrcore
        a = zarrcore.open_array({str(tmp_path / "s.zarr")!r}, mode="r")
        def faults():
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        steps = [(7 * k) % 32 for k in range(400)]
        seen = []  # the loop's own records, which land between the samples in malloc's heap
        x = a[0]
        start = faults()
        for t in steps:
            seen.append(time.perf_counter())
            x = a[t]
        single = (faults() - start) / len(steps)
        for k in range(2):
            batch = [a[t] for t in range(8)]
        start = faults()
        for k in range(0, len(steps), 8):
            seen.append(time.perf_counter())
            batch = [a[t] for t in steps[k:k + 8]]
        print(single, (faults() - start) / len(steps))
    """)
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    if malloc != "glibc's defaults":
        env["MALLOC_TRIM_THRESHOLD_"] = "65536"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, check=True, env=env)
    single, batch = map(float, done.stdout.split())
    assert single < 2 and batch < 2
