"""Reads planned by the link to a store's server (zarrcore.runtime.link): gaps merged while
moving them costs less than a round trip, ranges cut to what one connection moves fast and
fetched together, large shards read by index and ranges rather than one request, fewer
large requests kept in flight than small ones, and the bytes a read holds bounded."""
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.codecs.sharding import coalesce
from zarrcore.engine.shard_ranges import _even_cut
from zarrcore.runtime.concurrency import fan_out
from zarrcore.runtime.link import (
    ASSUMED_RATE, ASSUMED_ROUND_TRIP, BYTES_IN_FLIGHT, BYTES_ROUND_TRIP, FAST_PIECE, FAST_RANK,
    FEWEST_IN_FLIGHT, LARGE_BYTES, MOST_BYTES_IN_FLIGHT, PIECE_ROUND_TRIPS, SHARE_PIECE,
    SLOW_SHARE, SMALLEST_PIECE, TAIL_IN_FLIGHT, WIDE_BYTES, Link, link_to,
)
from _links import link_of
from _remote_stores import DelayedStore, KeepingStore

MIB = 1 << 20


def test_a_link_assumes_a_cloud_round_trip_until_it_has_timed_one():
    link = Link()
    assert (link.round_trip, link.rate) == (ASSUMED_ROUND_TRIP, ASSUMED_RATE)
    link.observe(0.005, 1000)
    assert link.round_trip == 0.005
    link.observe(0.009, 1000)  # (a request that queued: the least is the round trip)
    assert link.round_trip == 0.005


def test_a_link_learns_what_one_connection_carries():
    link = link_of(0.04, 50 * MIB)
    assert link.round_trip == 0.04
    assert link.rate == pytest.approx(50 * MIB, rel=0.01)
    assert link.gap_bytes() == pytest.approx(0.04 * 50 * MIB, rel=0.01)
    assert link.piece_bytes() == pytest.approx(PIECE_ROUND_TRIPS * 0.04 * 50 * MIB, rel=0.01)
    assert link_of(0.0001, 50 * MIB).piece_bytes() == SMALLEST_PIECE


def test_a_large_read_goes_in_its_share_of_the_connections_whatever_the_rate():
    # A rate timed under the read's own 64 requests is a share of the link: a large read's
    # pieces are its share of the connections up to SHARE_PIECE, not the 80 KiB that two
    # round trips move at that rate.
    slow = link_of(0.01, 4 * MIB)
    assert slow.piece_bytes(512 * MIB, 64) == SHARE_PIECE
    assert slow.piece_bytes(128 * MIB, 64) == 2 * MIB
    assert slow.piece_bytes(16 * MIB, 64) == SMALLEST_PIECE
    assert slow.piece_bytes() == SMALLEST_PIECE
    # Where one connection moves more than SHARE_PIECE in two round trips, pieces go up to it.
    fast = link_of(0.04, 256 * MIB)
    most = PIECE_ROUND_TRIPS * 0.04 * 256 * MIB
    assert fast.piece_bytes(1 << 30, 16) == pytest.approx(most, rel=0.01)
    assert fast.piece_bytes(128 * MIB, 16) == 8 * MIB


def test_a_dense_reads_pieces_go_below_the_least_where_slow_start_costs_more():
    """A read with no gaps whose share of the connections is under SMALLEST_PIECE goes in
    smaller pieces where new connections' slow start makes them end sooner than their
    requests cost: over a long round trip, down to the share; over a short one, not; nor
    with gaps; nor where the client keeps connections (`split` spreads a piece over them
    by their windows)."""
    total = 4_330_000  # (a shard of 64 inner chunks of 68 KB, from moto's S3)
    share = total // 64
    assert link_of(0.3, 1 * MIB).piece_bytes(total, 64, dense=True) == share
    assert link_of(0.08, 4 * MIB).piece_bytes(total, 32, dense=True) == total // 32
    assert link_of(0.02, 64 * MIB).piece_bytes(total, 16, dense=True) == total // 16
    assert link_of(0.003, 64 * MIB).piece_bytes(total, 16, dense=True) == SMALLEST_PIECE
    assert link_of(0.3, 1 * MIB).piece_bytes(total, 64) == SMALLEST_PIECE
    kept = link_of(0.3, 1 * MIB, body_rate=64 * MIB)
    kept.kept(4, lambda: [64.0 * MIB] * 4)
    assert kept.piece_bytes(total, 64, dense=True) == SMALLEST_PIECE


def test_stores_of_one_server_share_its_link():
    assert link_to("s3://one") is link_to("s3://one")
    assert link_to("s3://one") is not link_to("s3://two")


def test_small_requests_over_a_long_round_trip_go_up_to_the_process_limit(io_config):
    # Many small chunks over a 30 ms link: with io_concurrency at its default, more in flight
    # than it, up to the process's; over a short round trip, or io_concurrency set, no more.
    assert Link().in_flight(128 * 1024, 64, 512, widest=128) == 128
    assert Link().in_flight(WIDE_BYTES // 96, 64, 512, widest=128) == 96  # (WIDE_BYTES in all)
    assert Link().in_flight(432_000, 64, 512, widest=128) == 64  # (not fewer than `most`)
    assert Link().in_flight(4 * MIB, 64, 512, widest=128) == FEWEST_IN_FLIGHT
    io_config.set(io_process_concurrency=96)

    def asked(round_trip, own=None):
        store = AskedStore(concurrency=8)
        store.link = link_of(round_trip, 100 * MIB)
        a = zarrcore.create_array(store, name="z", shape=(128, 1024), dtype="f8",
                                  chunks=(1, 1024), compressors=None, fill_value=0)
        a[...] = 1.0
        if own is not None:
            a = a.with_config({"io_concurrency": own})
        store.asked = []
        np.testing.assert_array_equal(a[...], 1.0)
        return store.asked

    # (a set io_concurrency is the most, even one of the default's value)
    for round_trip, own, most in [(0.03, None, 96), (0.0005, None, 64), (0.03, 32, 32),
                                  (0.03, 64, 64)]:
        assert asked(round_trip, own) == [most]
    with zarrcore.config.set(io_concurrency=64):
        assert zarrcore.config.chose("io_concurrency")
        assert asked(0.03) == [64]
    assert not zarrcore.config.chose("io_concurrency")  # (as it was before the block)
    assert asked(0.03) == [96]


def test_connections_that_carried_small_answers_are_slow_for_large_ranges():
    link = Link()
    assert link.fast_share(MIB) is None  # (no client told its connections)
    # Three outliers and a fast group (the FAST_RANK-th fastest sets the bar), and connections
    # that moved small answers at a tenth of that.
    fast = [5000e6, 900e6, 300e6, 90e6, 80e6, 60e6]
    slow = [9e6, 8e6, 0.0]
    kept = fast + slow
    link.kept(len(kept), lambda: kept)
    assert FAST_RANK == 4 and all(r * SLOW_SHARE < 80e6 for r in slow)
    assert (link.idle_connections, link.fast_connections) == (9, 6)
    # A read the fast ones carry in pieces of at most FAST_PIECE keeps to them; a larger one
    # goes on as many connections as fit, as slow ones gain speed over long transfers.
    assert link.fast_share(6 * FAST_PIECE) == 6
    assert link.fast_share(6 * FAST_PIECE + 1) is None
    link.kept(0, list)
    assert (link.idle_connections, link.fast_connections, link.fast_share(MIB)) == (0, 0, 1)


def test_a_large_object_is_split_over_the_fast_connections_only():
    link = link_of(0.03, 10 * MIB)
    link.observe_body(1.0, 10 * MIB)  # (bodies move slowly: large objects are split)
    kept = [80e6] * 5 + [8e6] * 30
    link.kept(len(kept), lambda: kept)
    assert link.split(LARGE_BYTES, 2) == 2  # (5 // 2, not 4: the slow ones are left out)
    assert link.split(LARGE_BYTES // 2, 2) == 4  # (a small object's ranges take any)


def test_shards_wanted_whole_go_on_a_fast_connection_each_the_largest_first(io_config):
    # Three shards of 1 MiB (half of it fill, not stored), 2 MiB and 2 MiB; at 8 MiB/s a
    # connection and 40 ms each would go in pieces of 1 MiB, but five connections are fast:
    # each shard is one request, the largest asked first.
    store = Linked(DelayedStore, 0.04, 8 * MIB).store
    a = zarrcore.create_array(store, name="s", shape=(1536, 512), dtype="uint64",
                              chunks=(64, 64), shards=(512, 512), compressors=None, fill_value=0)
    data = np.arange(1536 * 512, dtype="uint64").reshape(1536, 512)
    data[:256] = 0
    a[...] = data
    io_config.set(io_concurrency=1)  # (one request at a time: asked in order)
    kept = [80e6] * 5 + [8e6] * 30
    store.link.kept(len(kept), lambda: kept)
    store.reset()
    np.testing.assert_array_equal(a[...], data)
    got = [(key, ranges[0][1] - ranges[0][0]) for key, ranges in data_reads(store)]
    assert [n for _, n in got] == [2 * MIB, 2 * MIB, MIB]
    assert sorted(got) == [("s/c/0/0", MIB), ("s/c/1/0", 2 * MIB), ("s/c/2/0", 2 * MIB)]


def test_a_shards_bytes_cut_for_fast_connections_leave_no_short_tail():
    # 64 inner chunks of 67 KB in a run: cut for requests of 4.13 MB, 2.1 MB or 1.05 MB, they
    # are 1, 2 or 4 requests of about equal size, not those and a tail of a chunk or a few.
    lengths = np.full(64, 67_000, dtype=np.uint64)
    spans = np.stack([np.arange(64, dtype=np.uint64) * 67_000, lengths], axis=1)
    for most, count in [(4_130_000, 1), (2_100_000, 2), (1_050_000, 4)]:
        assert len(coalesce(spans[:, 0], spans[:, 1], 0, most)[0]) == count + 1
        starts, stops, _ = coalesce(spans[:, 0], spans[:, 1], 0, _even_cut(spans, most))
        assert len(starts) == count
        assert (stops - starts).min() >= 0.75 * 64 * 67_000 / count  # (no short tail)


def test_fan_out_holds_at_most_its_budget_of_weight():
    weights = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
    lock, held, most = threading.Lock(), [0], [0]

    def call(i):
        with lock:
            held[0] += weights[i]
            most[0] = max(most[0], held[0])
        time.sleep(0.01)
        with lock:
            held[0] -= weights[i]
        return i * 10

    got = [r for batch in fan_out(call, range(len(weights)), 8, weights=weights, budget=10)
           for r in batch]
    assert sorted(got) == [(i, i * 10) for i in range(len(weights))]
    assert most[0] <= 10
    # One item heavier than the budget still runs, alone.
    got = [r for batch in fan_out(call, range(2), 8, weights=[20, 20], budget=10) for r in batch]
    assert sorted(got) == [(0, 0), (1, 10)] and most[0] <= 20


class Linked:
    """A store of `kind` behind a link of `round_trip` seconds carrying `rate` per
    connection."""

    def __init__(self, kind, round_trip, rate, delay=0.0):
        self.store = kind(delay=delay, concurrency=64)
        self.store.link = link_of(round_trip, rate)


def sharded(store, shape=(1024, 512), shards=(512, 512), chunks=(64, 64)):
    """Uncompressed uint64 shards (2 MiB each with the defaults) of 32 KiB inner chunks."""
    a = zarrcore.create_array(store, name="s", shape=shape, dtype="uint64", chunks=chunks,
                              shards=shards, compressors=None, fill_value=0)
    data = np.arange(np.prod(shape), dtype="uint64").reshape(shape)
    a[...] = data
    store.reset()
    return a, data


def data_reads(store):
    """The (key, ranges) of the reads of inner chunks' bytes (not of indexes)."""
    return [(r[1], r[2]) for r in store.requests
            if r[0] == "get" and not (r[2] and r[2][0][0] is not None and r[2][0][0] < 0)]


@pytest.mark.parametrize("kind", [DelayedStore, KeepingStore])
def test_a_large_shard_wanted_whole_is_read_in_pieces_over_a_slow_link(kind):
    # 8 MiB/s a connection and 40 ms, no connection kept: pieces of the read's share of 16
    # connections (256 KiB), which new connections' slow start carries two round trips
    # sooner than pieces of 1 MiB, the least of a read with gaps.
    store = Linked(kind, 0.04, 8 * MIB, delay=0.02).store
    a, data = sharded(store)
    np.testing.assert_array_equal(a[...], data)
    got = data_reads(store)
    assert len(got) == 16  # (2 shards of 2 MiB, in 8 pieces each)
    assert all(len(ranges) == 1 and ranges[0][1] - ranges[0][0] <= MIB // 4 for _, ranges in got)
    assert store.most_in_flight >= 2


@pytest.mark.parametrize("kind", [DelayedStore, KeepingStore])
def test_a_shard_one_connection_moves_fast_is_read_by_one_request(kind):
    # 1 GiB/s and 40 ms: a 2 MiB shard is one request, as on a local disk.
    store = Linked(kind, 0.04, 1 << 30).store
    a, data = sharded(store)
    np.testing.assert_array_equal(a[...], data)
    got = [r for r in store.requests if r[0] == "get"]
    assert len(got) == 2


def test_shards_a_little_over_a_piece_go_in_one_request_each():
    # 8 MiB/s and 40 ms, 20 shards of 4.5 MiB: a read this large goes in pieces of 4 MiB
    # (SHARE_PIECE); a shard is one request, not one of 4 MiB and another of 0.5 MiB.
    store = Linked(KeepingStore, 0.04, 8 * MIB).store
    a, data = sharded(store, shape=(3072, 3840), shards=(768, 768))
    np.testing.assert_array_equal(a[...], data)
    got = data_reads(store)
    assert len(got) == 20
    assert all(ranges[0][1] - ranges[0][0] == 768 * 768 * 8 for _, ranges in got)


def test_gaps_cheaper_than_a_round_trip_are_read_through_when_requests_wait():
    # Column 0 of inner chunks, 7 inner chunks (224 KiB) apart in each shard: at 40 ms and
    # 8 MiB/s (gaps up to 320 KiB cost less than a round trip) over 2 connections, 16 requests
    # would wait for each other: merged, into requests of at most 1 MiB.
    store = Linked(DelayedStore, 0.04, 8 * MIB).store
    a, data = sharded(store)
    two = a.with_config({"io_concurrency": 2})
    np.testing.assert_array_equal(two[:, 0:10], data[:, 0:10])
    got = data_reads(store)
    assert all(ranges[0][1] - ranges[0][0] <= MIB for _, ranges in got)
    assert len(got) == 4  # (8 chunks 256 KiB apart: 2 requests a shard)
    # Over 64 connections they all go at once: merging would only move the gaps.
    store.reset()
    np.testing.assert_array_equal(a[:, 0:10], data[:, 0:10])
    assert len(data_reads(store)) == 16
    assert store.nbytes == 2 * (64 * 16 + 4) + 16 * 64 * 64 * 8


def test_a_box_mostly_in_one_shard_is_cut_at_its_share_of_the_read():
    # 64 MiB/s and 40 ms: a read's requests are its share of the connections. A box of 225
    # inner chunks of one shard (too large to fetch whole) and 31 of three others wants
    # 8 MiB: pieces of about the least (1 MiB), not the share of four shards as full as the
    # first (28 MiB: 1.76 MiB); the first shard's 239 inner chunks from the first wanted
    # (7.5 MiB, its gaps read through) in 7 about equal pieces, not 7 of 1 MiB and a tail.
    store = Linked(KeepingStore, 0.04, 64 * MIB).store
    a, data = sharded(store, shape=(2048, 2048), shards=(1024, 1024))
    np.testing.assert_array_equal(a[64:1088, 64:1088], data[64:1088, 64:1088])
    first = [ranges[0] for key, ranges in data_reads(store) if key.endswith("c/0/0")]
    inner = 64 * 64 * 8
    assert len(first) == 7
    assert all(MIB - 4 * inner <= stop - start <= MIB + 3 * inner for start, stop in first[:-1])
    assert sum(stop - start for start, stop in first) >= 225 * 32 * 1024


def test_the_options_most_still_caps_requests_over_a_link():
    store = Linked(KeepingStore, 0.04, 1 << 30).store
    a, data = sharded(store)
    b = a.with_config({"coalesce_max_bytes": 64 << 10})
    np.testing.assert_array_equal(b[0:64, :], data[0:64, :])
    assert all(ranges[0][1] - ranges[0][0] <= 64 << 10 for _, ranges in data_reads(store))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from([DelayedStore, KeepingStore]),
       rate=st.sampled_from([MIB, 8 * MIB, 1 << 30]),
       start=st.tuples(st.integers(0, 1023), st.integers(0, 511)),
       size=st.tuples(st.integers(1, 1024), st.integers(1, 512)),
       step=st.integers(1, 3))
def test_reads_over_any_link_equal_numpy(kind, rate, start, size, step):
    store = Linked(kind, 0.03, rate).store
    a, data = sharded(store, shape=(1000, 500))
    sel = (slice(start[0], start[0] + size[0], step), slice(start[1], start[1] + size[1]))
    np.testing.assert_array_equal(a[sel], data[sel])


class AskedStore(DelayedStore):
    """A DelayedStore that notes the requests in flight each get_many and set_many is
    asked for."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = []

    def get_many(self, requests, concurrency=None):
        self.asked.append(concurrency)
        return super().get_many(requests, concurrency)

    def set_many(self, items, concurrency=None, part_bytes=None):
        self.asked.append(concurrency)
        return super().set_many(items, concurrency, part_bytes)


def test_writes_keep_as_many_in_flight_as_reads_of_their_objects(io_config):
    # Small objects over a long round trip go up to the process's limit (125 PUTs of 60 KB
    # over a 40 ms link: 0.44-0.52 s with 128 in flight, 0.49-0.66 s with 64); large ones
    # fill the bytes budget; over a short round trip, or io_concurrency set, no more.
    io_config.set(io_process_concurrency=96)

    def asked(round_trip, chunk, own=None):
        store = AskedStore(concurrency=8)
        store.link = link_of(round_trip, 100 * MIB)
        a = zarrcore.create_array(store, name="z", shape=(16 * chunk,), dtype="u1",
                                  chunks=(chunk,), compressors=None, fill_value=0)
        if own is not None:
            a = a.with_config({"io_concurrency": own})
        store.asked = []
        a[...] = 1
        return store.asked

    for round_trip, chunk, own, most in [(0.04, 8192, None, 96), (0.0005, 8192, None, 64),
                                         (0.04, 8192, 32, 32), (0.04, 4 * MIB, None,
                                                                FEWEST_IN_FLIGHT)]:
        assert asked(round_trip, chunk, own) == [most]


def test_requests_in_flight_fill_the_bytes_budget_within_their_bounds():
    """Large requests fill BYTES_IN_FLIGHT, never fewer than FEWEST_IN_FLIGHT nor more than
    the most asked for; small ones all go at once."""
    assert Link().in_flight(MIB, 1000) == BYTES_IN_FLIGHT // MIB
    assert Link().in_flight(BYTES_IN_FLIGHT, 64) == FEWEST_IN_FLIGHT
    assert Link().in_flight(BYTES_IN_FLIGHT, 4) == 4
    assert Link().in_flight(16 * 1024, 64) == 64


def test_a_longer_round_trip_keeps_more_bytes_in_flight():
    """What fills a link grows with its round trip: BYTES_IN_FLIGHT up to BYTES_ROUND_TRIP,
    in proportion beyond, never above MOST_BYTES_IN_FLIGHT."""
    assert link_of(0.01, 50 * MIB).bytes_in_flight == BYTES_IN_FLIGHT
    long = link_of(2.25 * BYTES_ROUND_TRIP, 50 * MIB)
    assert long.bytes_in_flight == pytest.approx(2.25 * BYTES_IN_FLIGHT, rel=0.01)
    assert long.in_flight(MIB, 1000) == round(long.bytes_in_flight / MIB)
    assert link_of(100 * BYTES_ROUND_TRIP, 50 * MIB).bytes_in_flight == MOST_BYTES_IN_FLIGHT


def test_a_read_a_little_over_the_budget_sends_all_its_requests_at_once():
    """Requests that share a link end together, so a read of a few more than fit sends them
    all rather than leave the last a round trip behind; more than that keeps to the budget."""
    fitting = BYTES_IN_FLIGHT // MIB
    tail = int(TAIL_IN_FLIGHT * fitting)
    assert Link().in_flight(MIB, 1000, fitting + 1) == fitting + 1
    assert Link().in_flight(MIB, 1000, tail) == tail
    assert Link().in_flight(MIB, 1000, tail + 1) == fitting
    assert Link().in_flight(MIB, 20, tail) == 20
    assert Link().in_flight(MIB, 1000, 3) == fitting  # (all 3 go at once)


def test_a_read_of_one_wave_sends_it_all_on_new_connections():
    """With no connection kept, a read of no more small requests than the process may keep
    in flight sends them all (one slow start, not a second wave after it); more than that
    keeps to WIDE_BYTES."""
    link = link_of(0.07, 100 * MIB)
    assert link.in_flight(220_000, 64, 125, widest=128) == 125
    assert link.in_flight(220_000, 64, 129, widest=128) == WIDE_BYTES // 220_000
    assert link.in_flight(220_000, 64, 125) == 64  # (io_concurrency set: no widening)


def test_a_read_waits_for_kept_connections_where_a_new_one_is_slower():
    """Requests beyond the kept connections wait for one where a second round on them ends
    before a new connection's slow start would; where a new one ends first, they open; and
    once the reads that waited lost what opening them costs, they open too."""
    link = link_of(0.07, 100 * MIB, body_rate=4_400_000)  # (a 220 KB body: a round trip)
    link.kept(74, lambda: [4_400_000.0] * 74)
    # (Each read that waits loses a round trip, 0.07 s; opening costs one 0.28 s more.)
    picks = [link.in_flight(220_000, 64, 125, widest=128) for _ in range(6)]
    assert picks[:3] == [74] * 3 and 125 in picks[3:]
    assert picks[picks.index(125) + 1 :] == [74] * (5 - picks.index(125))
    # 8 rounds on the kept ones take longer than a new connection's 6 round trips: the
    # kept ones and new ones beside them, up to the widest.
    assert link.in_flight(220_000, 64, 8 * 74, widest=128) == 128
    link.kept(125, lambda: [4_400_000.0] * 125)
    assert link.in_flight(220_000, 64, 125, widest=128) == 125  # (enough kept)
    # Over a short round trip a new connection costs little: it opens.
    short = link_of(0.001, 100 * MIB, body_rate=100 * MIB)
    short.kept(10, lambda: [100.0 * MIB] * 10)
    assert short.in_flight(220_000, 64, 100) == 64


def test_small_requests_go_wider_on_kept_connections():
    """WIDE_BYTES bounds the connections a read of small requests opens, not those kept:
    a process that kept some goes up to WIDE_BYTES' worth beyond them, to the widest."""
    fresh = link_of(0.04, 100 * MIB)
    assert fresh.in_flight(250_000, 64, 512, widest=128) == WIDE_BYTES // 250_000
    fresh.kept(0, list)  # (told none kept: the same)
    assert fresh.in_flight(250_000, 64, 512, widest=128) == WIDE_BYTES // 250_000
    warm = link_of(0.04, 100 * MIB, body_rate=6_000_000)
    warm.kept(40, lambda: [6_000_000.0] * 40)
    assert warm.in_flight(250_000, 64, 512, widest=128) == WIDE_BYTES // 250_000 + 40
    warm.kept(128, lambda: [6_000_000.0] * 128)
    assert warm.in_flight(250_000, 64, 512, widest=128) == 128
    assert warm.in_flight(250_000, 64, 512) == 64  # (io_concurrency set: no widening)


def test_an_array_opened_again_plans_its_first_read_by_the_chunks_it_read():
    """The first read of an array knows only the most a chunk may take; one of the same
    array opened again knows the size its chunks had, and keeps more of them in flight."""
    store = AskedStore(concurrency=1000)
    store.link = link_of(0.04, 50 * MIB)
    count = 3 * BYTES_IN_FLIGHT // MIB // 2  # (chunks of 1 MiB decoded, about 1/5 stored)
    rng = np.random.default_rng(5)
    data = rng.integers(0, 16, size=(count, 512, 512)).astype("f4")
    a = zarrcore.create_array(store, name="a", shape=data.shape, chunks=(1, 512, 512),
                              dtype="f4", compressors=zarrcore.codecs.ZstdCodec(level=1))
    a[...] = data
    stored = len(store.get("a/c/0/0/0"))
    assert stored < MIB // 2
    asked = []
    for _ in range(2):
        store.asked = []
        assert (zarrcore.open_array(store, path="a")[...] == data).all()
        asked.append(store.asked[0])
    assert asked[0] == pytest.approx(BYTES_IN_FLIGHT / MIB, rel=0.1)
    # (io_concurrency at its default: small requests up to the process's requests in flight
    # while they hold WIDE_BYTES, or all of a read of no more, never fewer than io_concurrency)
    fitting = round(BYTES_IN_FLIGHT / stored)
    wide = min(zarrcore.config.io_process_concurrency, WIDE_BYTES // stored)
    if count <= min(zarrcore.config.io_process_concurrency, fitting):
        wide = max(wide, count)
    assert asked[1] == min(max(zarrcore.config.io_concurrency, wide), fitting)


@pytest.mark.parametrize("linked", [False, True])
def test_large_requests_over_a_link_keep_fewer_in_flight(linked):
    store = AskedStore(concurrency=64)
    if linked:
        store.link = link_of(0.04, 50 * MIB)
    kw = dict(dtype="f4", compressors=None, fill_value=0)
    # (Chunks of 1 MiB, more than a read sends at once: see the test above.)
    nbig = 3 * BYTES_IN_FLIGHT // MIB // 2
    big = zarrcore.create_array(store, name="big", shape=(nbig, 512, 512),
                                chunks=(1, 512, 512), **kw)
    small = zarrcore.create_array(store, name="small", shape=(4, 512, 512),
                                  chunks=(1, 64, 64), **kw)  # (of 16 KiB)
    big[...], small[...] = 1, 2
    for a, value in ((big, 1), (small, 2)):
        store.asked = []
        assert (a[...] == value).all()
        assert store.asked and all(n == store.asked[0] for n in store.asked)
        if linked and a is big:
            # About BYTES_IN_FLIGHT of requests of 1 MiB each and a little more (the chunks'
            # encoded bound), never fewer than FEWEST_IN_FLIGHT.
            fitting = BYTES_IN_FLIGHT // MIB
            assert max(FEWEST_IN_FLIGHT, 0.9 * fitting) <= store.asked[0] <= fitting
        else:  # (over a link, up to the process's requests in flight: 128)
            assert store.asked[0] == (128 if linked else 64)
    # A sharded read's inner chunks go in ranges of SHARE_PIECE (its 96 MiB shared by the
    # requests of that size that fit in flight), never fewer than FEWEST_IN_FLIGHT of them.
    sharded_big = zarrcore.create_array(store, name="s", shape=(nbig, 512, 512),
                                        chunks=(1, 512, 512), shards=(nbig, 512, 512), **kw)
    sharded_big[...] = 3
    store.asked = []
    assert (sharded_big[...] == 3).all()
    fitting = max(FEWEST_IN_FLIGHT, BYTES_IN_FLIGHT // SHARE_PIECE)
    assert min(store.asked) == (fitting if linked else 64)
