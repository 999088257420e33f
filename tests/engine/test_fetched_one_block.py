"""R0 over stores that hand over bytes (fetched.read_one_block): `a[sel]` in one chunk of an
unsharded array, or in one inner chunk of a shard whose index the array knows, is one request
and a compiled decode on the calling thread, with no indexer nor plan. It gives what numpy and
the planned routes give, on a MemoryStore and the loopback S3, errors included, and leaves a
shard replaced since its index was read to the planned routes."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore import engine
from zarrcore.errors import ZarrcoreError
from zarrcore.engine.routes import OpenRoutes

from one_block import in_one_chunk, same_result


def _unplanned(*args, **kwargs):
    raise AssertionError("a one-block read was planned: it did not take R0")


@st.composite
def small_case(draw, sharded):
    """(array settings, reference data) of a small array, sharded or not, C or F order."""
    ndim = draw(st.integers(1, 3))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks) if sharded else None
    shape = tuple(draw(st.integers(1, 2 * c + 1)) for c in shards or chunks)
    dtype = draw(st.sampled_from(["<f4", ">f8", "<i2", "u1", "|b1", "<c8"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    ref = (rng.integers(0, 2, shape).astype(bool) if dtype == "|b1"
           else (rng.standard_normal(shape) * 100).astype(dtype))
    # (Every chunk stored, all fill too: each shard has an index to know.)
    kw = dict(shape=shape, chunks=chunks, shards=shards, dtype=dtype,
              config={"order": draw(st.sampled_from(["C", "F"])), "write_empty_chunks": True})
    return kw, ref


def _check_reads(a, want, block, data, planned=True):
    """Three one-block selections of `a` read as numpy reads them from `want`; by R0 alone
    unless `planned`."""
    order = a.order
    for _ in range(3):
        sel = data.draw(in_one_chunk(want.shape, block))
        with pytest.MonkeyPatch.context() as mp:
            if not planned:
                mp.setattr(OpenRoutes, "plan", _unplanned)
            got = a[sel]
        same_result(got, want[sel], order)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=small_case(sharded=False), data=st.data())
def test_one_chunk_of_a_memory_store_without_a_cache_takes_r0(case, data):
    """A MemoryStore array without a cache is read by R4: a one-chunk selection there is R0's
    one-block job, missing chunks as the fill value, and a write between reads is seen."""
    kw, ref = case
    a = zarrcore.create_array(zarrcore.MemoryStore(), fill_value=ref.flat[0], **kw)
    assert a.chunk_engine.routes.one_chunk is not None
    ref = ref.astype(a.dtype)
    stored = tuple(slice(0, data.draw(st.integers(0, n))) for n in ref.shape)
    a[stored] = ref[stored]
    want = np.full(ref.shape, ref.flat[0], dtype=ref.dtype)
    want[stored] = ref[stored]
    _check_reads(a, want, kw["chunks"], data, planned=False)
    want[...] = ref
    a[...] = ref
    _check_reads(a, want, kw["chunks"], data, planned=False)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(sharded=st.booleans(), cached=st.booleans(), data=st.data())
def test_one_block_on_s3_takes_r0_once_the_shard_index_is_known(moto_server, sharded, cached,
                                                                 data):
    """On the loopback S3, with or without the decoded-chunk cache: a one-chunk selection of
    an unsharded array, and of a sharded one once its shard's index is known, are read by R0
    alone; after another writer rewrites the array, reads give the new data."""
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    kw, ref = data.draw(small_case(sharded))
    url = f"s3://{moto_server.new_bucket()}/a.zarr"
    options = moto_server.storage_options()
    writer = zarrcore.create_array(url, storage_options=options, **kw)
    ref = ref.astype(writer.dtype)
    writer[...] = ref
    a = zarrcore.open_array(url, mode="r", storage_options=options,
                            **({"cache_bytes": 1 << 20} if cached else {}))
    assert a.chunk_engine.routes.one_chunk is not None
    np.testing.assert_array_equal(a[...], ref)  # (learns every shard's index)
    block = kw["chunks"]
    _check_reads(a, ref, block, data, planned=False)
    _check_reads(a, ref, block, data, planned=False)  # (hits, where cached)
    assert (a.cache_info()["hits"] > 0) == cached
    ref = -ref if ref.dtype != bool else ~ref
    writer[...] = ref
    _check_reads(a, ref, block, data)


@pytest.mark.parametrize("shards", [None, (8, 6)])
def test_a_one_block_read_is_one_request(counted, shards):
    server, bucket, proxy = counted
    data = np.arange(32 * 6, dtype="f4").reshape(32, 6)
    url = f"s3://{bucket}/a.zarr"
    zarrcore.create_array(url, data=data, chunks=(1, 6), shards=shards,
                          storage_options=server.storage_options())
    a = zarrcore.open_array(url, mode="r", storage_options=server.storage_options(proxy.endpoint))
    np.testing.assert_array_equal(a[[0, 8, 16, 24]], data[[0, 8, 16, 24]])  # (the indexes)
    for t in (3, 17, -1, 30):
        before = proxy.requests
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(OpenRoutes, "plan", _unplanned)
            np.testing.assert_array_equal(a[t, 1:5], data[t, 1:5])
        assert proxy.requests - before == 1


@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_r0_on_s3_raises_the_planned_routes_errors(s3_bucket, shards):
    """A damaged chunk (inner chunk) read by R0 raises what the planned route raises, naming
    the key (and the inner chunk)."""
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, bucket = s3_bucket
    url = f"s3://{bucket}/a.zarr"
    w = zarrcore.create_array(url, shape=(8, 4), chunks=(2, 4), shards=shards, dtype="f4",
                              compressors=[{"name": "zstd"}], storage_options=server.storage_options())
    w[...] = np.arange(32, dtype="f4").reshape(8, 4)
    blob = bytearray(w.store.get("c/0/0"))
    # The zstd frame's head of the chunk, or of the shard's second inner chunk (at the offset
    # its index, at the shard's end, gives), overwritten: the index stays valid.
    start = 0 if shards is None else int(np.frombuffer(blob[-36:-4], "<u8")[2])
    blob[start:start + 8] = b"\x01" * 8
    w.store.set("c/0/0", bytes(blob))
    a = zarrcore.open_array(url, mode="r", storage_options=server.storage_options())
    if shards is not None:
        np.testing.assert_array_equal(a[0], np.arange(4, dtype="f4"))  # (learns the index)
    row = 1 if shards is None else 3  # (in the damaged chunk, or inner chunk)
    with pytest.raises(ZarrcoreError) as planned:
        a.get_basic_selection((row, slice(None)))
    with pytest.raises(type(planned.value)) as fast, pytest.MonkeyPatch.context() as mp:
        mp.setattr(OpenRoutes, "plan", _unplanned)
        a[row]
    assert str(fast.value) == str(planned.value) and "c/0/0" in str(fast.value)
    if shards is not None:
        assert "inner chunk (1, 0)" in str(fast.value)
