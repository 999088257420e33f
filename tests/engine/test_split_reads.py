"""Small reads over a link whose connections are slow beside its round trip: each chunk asked
for in several ranges at once (Link.split), read by the plain HTTP client, ranges past the
end empty, a chunk replaced between its ranges read again whole; and each chunk decoded on
the thread its bytes arrived on (ChunkWaves.read_one)."""
import numpy as np
import pytest

import zarrcore
from zarrcore.errors import ChunkDecodeError, KeyChangedError
from zarrcore.runtime.link import MOST_SPLIT, RESTART_SECONDS, SPLIT_BYTES, Link
from zarrcore.storage import make_store

pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")


def slow_link(round_trip=0.02, body_rate=4e6):
    """A Link that has timed requests of `round_trip` seconds and bodies at `body_rate`, and
    learns nothing more (the local server's answers would show a fast link)."""
    link = Link()
    link.observe(round_trip, 100)
    link.observe_body(1.0, int(body_rate))
    link.observe = link.observe_answer = link.observe_body = lambda *args: None
    return link


def test_a_link_splits_only_what_one_connection_moves_slowly_beside_a_round_trip():
    assert Link().split(1 << 20) == 1  # (no body timed yet)
    assert slow_link(round_trip=0.0005).split(1 << 20) == 1  # (a round trip of a LAN)
    assert slow_link(round_trip=0.004).split(1 << 20) == 1  # (the hosts' CPU bounds it)
    assert slow_link(round_trip=0.008).split(1 << 20) == MOST_SPLIT
    assert slow_link(body_rate=1e9).split(50_000) == 1  # (moved in 50 us)
    assert slow_link().split(50_000) == MOST_SPLIT
    assert slow_link().split(2 * SPLIT_BYTES) == 2  # (no range smaller than SPLIT_BYTES)
    assert slow_link(body_rate=40e6).split(50_000) == 1
    assert 1 < slow_link(body_rate=40e6).split(500_000) <= MOST_SPLIT
    link = slow_link()
    Link.observe_body(link, 0.001, 1 << 20)  # (one connection moved a body fast: none split)
    assert link.split(50_000) == 1
    link = slow_link()
    link.idle_connections = 5  # (no range waits for a new connection)
    assert (link.split(50_000), link.split(50_000, 2), link.split(50_000, 6)) == (4, 2, 1)


def test_a_link_idle_for_a_retransmission_timeout_splits_by_halved_windows():
    # (Bodies already waiting in the socket when read, each within a round trip: at 1 GB/s.)
    link = slow_link(round_trip=0.01)
    Link.observe_body(link, 0.0005, 540_000)
    assert link.split(540_000, 8) == 1  # (just read: the windows held 540 KB)
    link.last_body -= 0.01 + RESTART_SECONDS  # (a server restarts them halved)
    assert link.split(540_000, 8) == MOST_SPLIT


def _split_array(server, name, io_config):
    """A zstd array at `name` below the server's root whose first chunk is noise (about its
    whole 64 KiB stored) and the others zeros but for one value (a few bytes each); its
    values, and its store over the plain client with a slow link and 16 idle connections."""
    data = np.zeros((4, 16384), dtype="f4")
    data[0] = np.random.default_rng(3).random(16384, dtype="f4")
    data[1:, 7] = 5
    zarrcore.create_array(zarrcore.LocalStore(server.root), name=name, data=data,
                          chunks=(1, 16384), compressors=zarrcore.codecs.ZstdCodec(level=1))
    store = make_store(server.url)
    assert store._plain is not None
    store.link = slow_link()
    store._plain.forget_connections()  # (the session's server: other tests' connections)
    io_config.set(io_concurrency=16)
    server.faults.delay = 0.2  # (16 requests at once: 16 connections)
    list(store.get_many([(f"{name}/zarr.json", None)] * 16))
    server.faults.reset()
    assert store.link.idle_connections == 16
    return data, store


def test_small_reads_ask_for_each_chunk_in_ranges_at_once(http_server, io_config):
    data, store = _split_array(http_server, "split-ranges", io_config)
    array = zarrcore.open_array(store, path="split-ranges", mode="r")
    np.testing.assert_array_equal(array[0], data[0])  # (whole: the size is learned)
    http_server.reset()
    np.testing.assert_array_equal(array[0, 5:9000], data[0, 5:9000])
    assert http_server.requests == MOST_SPLIT
    # Small chunks read in the ranges of a large one: those past their end are empty.
    http_server.reset()
    np.testing.assert_array_equal(array[:3, 3:10], data[:3, 3:10])
    assert http_server.requests == 3 * MOST_SPLIT


def test_a_chunk_replaced_between_its_ranges_is_read_again_whole(
    http_server, io_config, monkeypatch
):
    data, store = _split_array(http_server, "split-replaced", io_config)
    array = zarrcore.open_array(store, path="split-replaced", mode="r")
    np.testing.assert_array_equal(array[0], data[0])
    asked = []
    get_many = store.get_many

    def replaced_meanwhile(requests, concurrency=None):
        asked.extend(ranges for _, ranges in requests)
        if len(requests[0][1]) > 1:
            raise KeyChangedError("replaced between its ranges")
        return get_many(requests, concurrency)

    monkeypatch.setattr(store, "get_many", replaced_meanwhile)
    np.testing.assert_array_equal(array[0, :100], data[0, :100])
    assert [len(ranges) for ranges in asked] == [MOST_SPLIT, 1]


def test_the_ranges_of_one_request_are_of_one_version(http_server):
    """A version of another size among the answers to one request's ranges (sent at once,
    before any told the ETag to ask for) is refused."""
    from zarrcore.storage._object_readers import ObjectReader

    store = make_store(http_server.url)
    reader = ObjectReader(store, "blob")
    reader.saw({"e_tag": None, "size": 100})  # (a range past the end: no ETag)
    reader.saw({"e_tag": '"a"', "size": 100})
    with pytest.raises(KeyChangedError, match="'blob'"):
        reader.saw({"e_tag": None, "size": 99})
    with pytest.raises(KeyChangedError, match="'blob'"):
        reader.saw({"e_tag": '"b"', "size": 100})


def test_a_range_past_the_end_is_empty_by_the_plain_client(http_server, monkeypatch):
    from zarrcore.storage import objectstore

    with open(f"{http_server.root}/short", "wb") as f:
        f.write(b"x" * 100)
    monkeypatch.setattr(objectstore, "get_body", lambda *args: pytest.fail("asked obstore"))
    store = make_store(http_server.url)
    assert store.get("short", 100, 200) == b"" and store.get("short", 500) == b""
    assert store.get_ranges("short", [(0, 60), (60, 120), (120, 180)]) == [
        b"x" * 60, b"x" * 40, b""
    ]


def test_a_chunk_decoded_where_it_arrived_names_its_key_when_corrupt(http_server, io_config):
    data, store = _split_array(http_server, "split-corrupt", io_config)
    with open(f"{http_server.root}/split-corrupt/c/2/0", "wb") as f:
        f.write(b"not zstd at all")
    array = zarrcore.open_array(store, path="split-corrupt", mode="r")
    np.testing.assert_array_equal(array[:2, :9], data[:2, :9])
    with pytest.raises(ChunkDecodeError, match="'split-corrupt/c/2/0'"):
        array[1:4, :9]


def test_listed_and_point_selections_decode_where_they_arrived(http_server, io_config):
    data, store = _split_array(http_server, "split-listed", io_config)
    array = zarrcore.open_array(store, path="split-listed", mode="r")
    np.testing.assert_array_equal(array[0], data[0])
    rows, cols = [0, 2, 3, 0], [1, 9000, 7, 16383]
    np.testing.assert_array_equal(array.vindex[rows, cols], data[rows, cols])
    np.testing.assert_array_equal(array.oindex[[0, 3], [7, 2, 9000]], data[[0, 3]][:, [7, 2, 9000]])
    np.testing.assert_array_equal(array[data > 0.99], data[data > 0.99])


def test_small_sharded_reads_ask_for_their_ranges_in_pieces(http_server, io_config):
    _, store = _split_array(http_server, "split-shards-setup", io_config)
    data = np.random.default_rng(4).random((8, 16384), dtype="f4")
    zarrcore.create_array(zarrcore.LocalStore(http_server.root), name="split-shards", data=data,
                          chunks=(1, 16384), shards=(4, 16384),
                          compressors=zarrcore.codecs.ZstdCodec(level=1))
    array = zarrcore.open_array(store, path="split-shards", mode="r")
    np.testing.assert_array_equal(array[...], data)  # (the indexes learned)
    http_server.reset()
    np.testing.assert_array_equal(array[1, 5:9000], data[1, 5:9000])  # (one inner chunk)
    assert http_server.requests == MOST_SPLIT
    http_server.reset()
    np.testing.assert_array_equal(array[3:5, 5:9000], data[3:5, 5:9000])  # (two shards)
    assert http_server.requests == 2 * MOST_SPLIT
