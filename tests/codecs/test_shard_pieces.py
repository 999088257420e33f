"""A shard made in pieces as its inner chunks are encoded in waves (ShardingCodec.pieces, what
writes to object stores upload part by part): against the shard made whole, and numpy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrcore


def _codec(grid, inner, index_location="end", compressors=None):
    shard = tuple(g * c for g, c in zip(grid, inner))
    serializer = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner), "index_location": index_location,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   *(compressors or [])]}}
    a = zarrcore.create_array(zarrcore.MemoryStore(), shape=shard, chunks=shard,
                              dtype="int32", fill_value=0, serializer=serializer,
                              compressors=None)
    return a._engine.sharding, shard


@settings(max_examples=60, deadline=None)
@given(
    grid=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    wave=st.integers(1, 20),
    keep_empty=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    zstd=st.booleans(),
)
def test_the_pieces_of_a_shard_are_the_shard_made_whole(grid, wave, keep_empty, seed, zstd):
    inner = (3, 2, 4)[: len(grid)]
    codec, shape = _codec(grid, inner, compressors=[{"name": "zstd"}] if zstd else None)
    rng = np.random.default_rng(seed)
    value = rng.integers(0, 5, shape, dtype="int32")
    # Some inner chunks all fill, which the shard leaves out (or all of them).
    blocks = rng.random(tuple(grid)) < rng.random()
    for block in zip(*np.nonzero(blocks)):
        value[tuple(slice(b * c, (b + 1) * c) for b, c in zip(block, inner))] = 0
    pieces = codec.pieces(value, keep_empty, wave)
    made = b"".join(bytes(p) for p in pieces)
    whole = codec.merge(None, (slice(None),) * len(grid), value, keep_empty)
    assert made == (b"" if whole is None else bytes(whole))
    if made:
        np.testing.assert_array_equal(codec.decode(made, None), value)


@pytest.mark.parametrize("index_location", ["start", "end"])
def test_shards_laid_out_otherwise_than_in_c_order_with_the_index_last_are_made_whole(
        index_location):
    codec, shape = _codec((2, 2), (4, 4), index_location)
    value = np.ones(shape, dtype="int32")
    if index_location == "start":
        assert codec.pieces(value, False, 1) is None
        return
    with zarrcore.config.set(shard_write_order="morton"):
        codec, shape = _codec((2, 2), (4, 4))
        assert codec.pieces(value, False, 1) is None
