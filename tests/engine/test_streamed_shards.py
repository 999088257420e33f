"""Whole shards read over a store that streams (ShardStream): each inner chunk decoded while
the rest of its shard arrives, by the index asked for with it or read at its start, and
checked against the shard's own index once it came whole."""
import os

import numpy as np
import pytest

import zarrcore
from zarrcore.engine import streamed_shards
from zarrcore.errors import ChunkDecodeError

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")


def _sharded(server, name, location, dtype="f4"):
    """An array of 4 shards of 16 zstd inner chunks each below the server's root, its values,
    and the array over http."""
    data = np.random.default_rng(7).integers(0, 50, (64, 64)).astype(dtype)
    zarrcore.create_array(
        zarrcore.LocalStore(server.root), name=name, data=data, chunks=(8, 8),
        shards={"shape": (32, 32), "index_location": location},
        compressors=zarrcore.codecs.ZstdCodec(level=1),
    )
    return data, zarrcore.open_array(f"{server.url}/{name}", mode="r")


def _decoded(monkeypatch):
    """The tasks ShardStreams decode, as they decode them."""
    tasks, decode = [], streamed_shards.ShardStream._decode

    def noted(stream, task, data):
        tasks.append(task)
        decode(stream, task, data)

    monkeypatch.setattr(streamed_shards.ShardStream, "_decode", noted)
    return tasks


@pytest.mark.parametrize("location", ["end", "start"])
def test_whole_shards_decode_while_they_arrive(http_server, monkeypatch, location):
    data, array = _sharded(http_server, f"streamed-{location}", location)
    decoded = _decoded(monkeypatch)
    np.testing.assert_array_equal(array[...], data)
    assert sorted(decoded) == list(range(64))  # (every inner chunk, each once)
    # (one request a shard, its index asked in turn with it where it is at the end)
    assert http_server.requests == 1 + 4 * (2 if location == "end" else 1), http_server.paths


def test_a_corrupt_inner_chunk_of_a_streamed_shard_is_named(http_server, monkeypatch):
    data, array = _sharded(http_server, "streamed-corrupt", "end")
    path = os.path.join(http_server.root, "streamed-corrupt", "c", "0", "1")
    entries = array._engine.sharding.parse_index(open(path, "rb").read()[-16 * 16 - 4:])
    offset, nbytes = (int(v) for v in entries[5])
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(b"\xff" * nbytes)
    with pytest.raises(ChunkDecodeError, match=r"c/0/1'?, inner chunk \(1, 1\)"):
        array[...]


def test_decodes_stand_only_by_the_index_they_were_made_by(http_server, monkeypatch):
    """A shard whose own index differs from the one its inner chunks were decoded by (replaced
    between the two answers) has them all decoded again from its bytes."""
    data, array = _sharded(http_server, "streamed-index", "end")
    codec = array._engine.sharding
    shard = open(os.path.join(http_server.root, "streamed-index", "c", "0", "0"), "rb").read()
    index = memoryview(shard[-16 * 16 - 4:])
    done = []

    class Waves:
        def decode_now(self, task, data):
            done.append(task)
            return True

    tasks = np.arange(16, dtype=np.int64)
    stream = streamed_shards.ShardStream(codec, tasks, tasks, Waves())
    assert stream.ranges([(0, 10**9)]) == [codec.index_range(), (0, 10**9)]
    assert stream(0, index, len(index)) == len(index) + 1
    body = memoryview(shard)
    wanted = stream(1, body, 0)
    assert 0 < wanted <= len(shard)
    stream(1, body, len(shard))
    entries = codec.parse_index(index)
    assert stream.shard([index, body]) == [body]
    assert sorted(stream.decoded(entries)) == list(range(16)) and sorted(done) == list(range(16))
    other = entries.copy()
    other[[0, 1]] = other[[1, 0]]
    assert stream.decoded(other) == []
    # (the shard read again another way, after the streamed request failed: other bytes)
    assert stream.shard([index, memoryview(bytes(shard))]) != [] and stream.decoded(entries) == []


def test_decodes_of_a_streamed_request_that_failed_are_made_again(http_server, monkeypatch):
    """The plain client streamed part of a shard, then gave up (the reader reads it another
    way): the decodes made from the part it had go, even where the shard read again has the
    same index (here: replaced meanwhile, uncompressed, so every inner chunk is as long)."""
    from zarrcore.storage._plain_http import PlainHTTP

    root, name = http_server.root, "streamed-again"
    data = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    zarrcore.create_array(zarrcore.LocalStore(root), name=name, data=data, chunks=(8, 8),
                          shards=(32, 32), compressors=None)
    array = zarrcore.open_array(f"{http_server.url}/{name}", mode="r")
    writer = zarrcore.open_array(zarrcore.LocalStore(root), path=name, mode="r+")
    get, replaced = PlainHTTP.get, set()

    def streamed_then_gave_up(self, target, spans, if_match, link, on_body=None):
        answers = get(self, target, spans, if_match, link, on_body)
        if on_body is None or target in replaced:
            return answers
        replaced.add(target)  # (this shard replaced once, after its bytes streamed)
        i, j = (int(n) for n in target.split("/")[-2:])
        box = (slice(32 * i, 32 * i + 32), slice(32 * j, 32 * j + 32))
        writer[box] = -data[box]
        return None

    decoded = _decoded(monkeypatch)
    monkeypatch.setattr(PlainHTTP, "get", streamed_then_gave_up)
    np.testing.assert_array_equal(array[...], -data)
    assert decoded  # (the streamed parts were decoded, and then not taken)


def test_a_streamed_read_on_the_busy_pool_decodes_what_the_pool_has_not(http_server):
    """A read running on the thread pool's only thread (a task of it), whose decodings queue
    behind it: it decodes them itself rather than wait for them."""
    data, array = _sharded(http_server, "streamed-pool", "end")
    with zarrcore.config.set(num_threads=1):
        read = zarrcore.config.executor().submit(lambda: array[...])
        np.testing.assert_array_equal(read.result(timeout=30), data)


def test_whole_shards_that_come_in_waves_decode_in_them(http_server, monkeypatch):
    """More whole shards than a read holds at once come in waves, each decoded while the next
    arrives: none is streamed."""
    from zarrcore.engine import fetched
    from zarrcore.runtime import link

    data, array = _sharded(http_server, "streamed-waves", "end")
    decoded = _decoded(monkeypatch)

    def hold(nbytes):  # (what a read holds at once: its least, and what its link keeps)
        monkeypatch.setattr(fetched, "FETCHED_BYTES_MIN", nbytes)
        monkeypatch.setattr(link, "MOST_BYTES_IN_FLIGHT", nbytes)

    hold(2 * 32 * 32 * 4)  # (two shards)
    with zarrcore.config.set(num_threads=1):
        np.testing.assert_array_equal(array[...], data)
    assert decoded == []
    hold(4 * 32 * 32 * 4)  # (all four)
    np.testing.assert_array_equal(array[...], data)
    assert sorted(decoded) == list(range(64))
