"""What a remote store's requests show of the link to its server: the round trip and what one
connection carries. The engine plans its byte ranges and the requests it keeps in flight by
them (`gap_bytes`, `piece_bytes`, `in_flight`, `split`)."""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence

from .portable import at_fork_in_child

__all__ = [
    "ASSUMED_RATE",
    "ASSUMED_ROUND_TRIP",
    "BODY_BYTES",
    "BYTES_IN_FLIGHT",
    "BYTES_ROUND_TRIP",
    "FAST_PIECE",
    "FAST_RANK",
    "FEWEST_IN_FLIGHT",
    "INITIAL_WINDOW",
    "KEPT",
    "LARGE_BYTES",
    "Link",
    "MOST_BYTES_IN_FLIGHT",
    "MOST_SPLIT",
    "PIECE_REQUEST_SECONDS",
    "PIECE_ROUND_TRIPS",
    "REQUEST_SECONDS",
    "RESTART_SECONDS",
    "SHARE_PIECE",
    "SLOW_SHARE",
    "SMALLEST_PIECE",
    "SMALL_BYTES",
    "SPLIT_BYTES",
    "SPLIT_ROUND_TRIP",
    "TAIL_IN_FLIGHT",
    "WIDE_BYTES",
    "link_to",
]

# Until requests tell otherwise: a round trip to a cloud region's object store, and what one
# connection carries there (window-limited, not the host's link).
ASSUMED_ROUND_TRIP = 0.02
ASSUMED_RATE = 64 << 20

# A request of at most this many bytes is timed as a round trip; one of at least LARGE_BYTES
# as a transfer (its round trip taken off).
SMALL_BYTES = 64 << 10
LARGE_BYTES = 1 << 20

# The round trip is the least of the last KEPT small requests' times, the rate the most of
# the last KEPT transfers': a queue at either end, or other connections sharing the link,
# make a request slower, never faster.
KEPT = 32

# A range that takes one connection longer than this many round trips is split across
# connections; pieces are never smaller than SMALLEST_PIECE, but in a read with no gaps
# whose share of the connections is smaller, by a client that tells no kept connections
# (obstore's, to S3), where new connections' slow start carries smaller pieces so much
# sooner that their requests cost less (`piece_bytes`): each costs the read about
# PIECE_REQUEST_SECONDS at both ends, the server's time included. A whole shard of 4.3 MB
# from moto's S3 took 0.046-0.049 s in 4 requests over a 4 ms link, 0.067-0.085 s in 16,
# 0.10 s in 30; over 10 ms, 0.095-0.099 s in 4, 0.093-0.095 s in 14; over 40 ms, 0.36 s
# in 4, 0.28 s in 30; over 150 ms, 1.30 s in 4, 0.78 s in 64.
PIECE_ROUND_TRIPS = 2
SMALLEST_PIECE = 1 << 20
PIECE_REQUEST_SECONDS = 0.0025

# A large read's pieces are its share of the connections, up to at least SHARE_PIECE
# whatever the rate: timed under the read's own requests, the rate is each connection's
# share of the link, and would cut the read into ever more requests (a whole 270 MB read
# over a 10 ms link took 1.7-2.0 s in 490 requests of 0.53 MB, 0.64-0.77 s in 72 of 4 MB).
SHARE_PIECE = 4 << 20

# A small read's object is asked for in several ranges at once, on as many connections, where
# one connection would move it slowly beside a round trip: a server paces each connection at
# about its congestion window per round trip, and a connection that carries small answers
# keeps a small window (over a 24 ms link, 3 objects of 50 KB took 35.8 ms on a connection
# each, 28.1 ms in 4 ranges each). The count weighs the time the object takes on one
# connection against REQUEST_SECONDS for each request more (`split`), never above MOST_SPLIT;
# only where the round trip is at least SPLIT_ROUND_TRIP, as on a link whose pacing, not the
# hosts' CPU, sets a connection's rate: over a 4 ms link, a sharded box of 8 ranges of
# 540 KB took 0.022-0.029 s in 32 requests, 0.016-0.025 s in 8, and 100 random samples
# 0.52-0.57 s in 357-953 requests, 0.52-0.54 s in 263.
REQUEST_SECONDS = 0.0005
MOST_SPLIT = 4
SPLIT_ROUND_TRIP = 0.008
# Ranges of a split are never smaller than SPLIT_BYTES; a body's rate is taken from its
# bytes after the head where they are at least BODY_BYTES.
SPLIT_BYTES = 8 << 10
BODY_BYTES = 16 << 10

# A server's connection left idle for longer than its retransmission timeout (about a round
# trip plus RESTART_SECONDS, the least such timeout of Linux's TCP) sends its next answer
# with its window halved for each timeout it was idle (RFC 2861's restart after idle). A
# small read after such a pause is split by the windows its bodies showed, so halved: over
# a 10 ms link, a box of 8 ranges of 540 KB read 0.25 s after the last read took
# 0.041-0.048 s in 8 requests, 0.026-0.029 s in 32.
RESTART_SECONDS = 0.2

# Requests of many bytes each are kept in flight up to about BYTES_IN_FLIGHT in all, but
# never fewer than FEWEST_IN_FLIGHT: once the link is full, more connections only split its
# bandwidth finer. Through obstore's synchronous bodies, 64 requests of 1 MiB in flight over
# a 40 ms link took 3-4x the CPU and twice the time of 16, as each woke its reader for every
# piece (benchmarks/RESULTS.md, "cloud-after"); with bodies read in one call (the plain HTTP
# client, obstore's runtime), a 512 MiB uncompressed array took 0.75 s with 64 MiB in flight
# against 1.02 s with 32 at the same CPU, its zstd and sharded copies 0.55-0.78 s either way
# ("zarrcore's own HTTP client").
BYTES_IN_FLIGHT = 64 << 20
FEWEST_IN_FLIGHT = 16
# That much fills a link of BYTES_ROUND_TRIP (where it was measured); a longer round trip
# holds proportionally more on the wire, up to MOST_BYTES_IN_FLIGHT (`bytes_in_flight`): over
# a 90 ms link, 8 shards of 22 MB took 0.83-1.18 s in waves of 64-90 MiB, 0.42-0.44 s with
# 160 MiB in flight (the floor of 64 connections fetching 4 MiB each: 0.42 s).
BYTES_ROUND_TRIP = 0.04
MOST_BYTES_IN_FLIGHT = 256 << 20

# A kept connection whose last timed body moved at under 1/SLOW_SHARE of the FAST_RANK-th
# fastest kept one's rate is slow for a large range: a server paces a connection by what it
# delivered, so one that carried small answers moves a large one slowly at first (over a
# 30 ms link, after reads of 67 KB chunks, 1 MB ranges took 0.12-0.21 s on such connections,
# at 8-12 MB/s, and 0.05 s on those that had carried large ones, at 40-90 MB/s). A read's
# large ranges go on as many connections as are fast (`fast_share`), in larger pieces.
SLOW_SHARE = 4
FAST_RANK = 4
# Only a read the fast connections carry in pieces of at most FAST_PIECE keeps to them: a
# slow one gains speed over a long transfer (8 shards of 14 MB over a 24 ms link took
# 0.37-0.59 s on the fast ones only, 0.28-0.30 s on 16 connections).
FAST_PIECE = 8 << 20

# Small requests over a long round trip are kept in flight beyond a call's io_concurrency
# while they hold at most WIDE_BYTES (engine.planning.requests_in_flight): over a 30 ms
# link, 512 chunks of 128 KiB took 0.38-0.40 s with 64 in flight and 0.29-0.30 s with 128
# (16 MiB); 512 of 432 KB took 0.54-0.65 s with 128 (55 MB) in a fresh process and
# 0.30 s with 64, as every connection more opens and starts slowly. It bounds only the
# connections a read opens; those kept open go beside them (a process reading 512
# chunks of 250 KB over 40 ms, 1 s apart: 0.37-0.39 s a read once 128 were kept, 0.51-0.52 s
# with 64; the read that opened the 64 more, 0.60-0.67 s against 0.53-0.58 s; over 10 ms,
# 0.17-0.23 s against 0.18-0.19 s, the read that opened them 0.30-0.43 s against 0.25 s).
WIDE_BYTES = 16 << 20

# Requests that share a link finish at about the same time, so one that waits for a place
# in flight starts a round trip late: a read of at most TAIL_IN_FLIGHT times the requests
# that fit sends them all at once (62 ranges of 0.53 MB, 61 fitting, took 0.38 s where
# tensorstore's took 0.25-0.29).
TAIL_IN_FLIGHT = 1.25

# A new connection answers a round trip after it opens, and its server sends the body in slow
# start: INITIAL_WINDOW bytes in the first round trip (Linux's ten segments, RFC 6928), twice
# as many in each next. A read whose requests outnumber the kept connections leaves the rest
# waiting for a kept one where that ends sooner than a new one would: over a 70 ms link, 125
# chunks of 220 KB took 0.47 s where 51 of them opened new connections beside the 74 kept
# (0.38 s each on those), 0.25 s on the 74 kept.
INITIAL_WINDOW = 10 * 1448


class Link:
    """The link to one server, as its requests show it (`observe`). Estimates only: threads
    update it without a lock (none to be left held across a fork), and a lost update costs
    nothing."""

    def __init__(self) -> None:
        # (Rings of the last requests' times and rates: item stores never tear, nor fail a
        # reader's min() as a deque's appends would.)
        self._round_trips = _Ring(ASSUMED_ROUND_TRIP)
        self._rates = _Ring(float(ASSUMED_RATE))
        self._body_rates = _Ring(math.inf)  # (no split until bodies were timed)
        # What a connection's window carried per round trip, as bodies showed it (at most a
        # body per round trip: one that came within one shows only that the window held
        # it), and when the last body timed ended.
        self._window_rates = _Ring(math.inf)
        self.last_body = time.monotonic()
        # Connections to the server kept open and idle, and how to ask their last bodies'
        # rates, as the client that keeps them last told (`kept`; None: it tells none).
        self.idle_connections: int | None = None
        self._kept_rates: Callable[[], Sequence[float]] | None = None
        self._fast: int | None = None  # (fast_connections since the client last told)
        # Seconds that reads waiting for kept connections lost since the client last opened
        # more for one (`in_flight`).
        self._lost_waiting = 0.0

    def observe(self, seconds: float, nbytes: int) -> None:
        """Take in a request that took `seconds` from its start to its last byte, for a
        body of `nbytes`."""
        if nbytes <= SMALL_BYTES:
            self._round_trips.add(seconds)
        elif nbytes >= LARGE_BYTES:
            moving = seconds - self.round_trip
            if moving > 0:
                self._rates.add(nbytes / moving)

    def observe_answer(self, seconds: float) -> None:
        """Take in a request that took `seconds` from its start to the first line of its
        answer: a round trip, whatever the body that follows (more where it opened a
        connection or queued, which the least of them leaves out)."""
        self._round_trips.add(seconds)

    def observe_body(self, seconds: float, nbytes: int) -> float | None:
        """Take in the body of an answer whose last `nbytes` (those after its head) took
        `seconds` to arrive: what one connection carries, as its server paces it. The rate
        taken in, or None where the body is too short to time."""
        if nbytes < BODY_BYTES or seconds <= 0:
            return None  # (nor a pause ended: a small answer leaves the other connections idle)
        self.last_body = time.monotonic()
        rate = nbytes / seconds
        self._body_rates.add(rate)
        self._window_rates.add(nbytes / max(seconds, self.round_trip))
        return rate

    def kept(self, count: int, body_rates: Callable[[], Sequence[float]]) -> None:
        """Take in the `count` connections a client keeps idle, and how to ask their last
        bodies' rates (only when a read plans by them: `fast_connections`)."""
        self.idle_connections = count
        self._kept_rates, self._fast = body_rates, None

    @property
    def fast_connections(self) -> int | None:
        """How many kept connections are fast, moving at 1/SLOW_SHARE at least of the
        FAST_RANK-th fastest (a short body's rate is far off either way; so is the link's
        `rate` once slow connections carried the last large ranges); None where the client
        tells none."""
        if self._kept_rates is None or self._fast is not None:
            return self._fast
        rates = self._kept_rates()
        bar = heapq.nlargest(FAST_RANK, rates)[-1] if rates else 0.0
        self._fast = sum(rate * SLOW_SHARE >= bar for rate in rates)
        return self._fast

    def fast_share(self, total: int) -> int | None:
        """The kept connections a read of `total` bytes in large ranges spreads them over:
        the fast ones, where they carry it in pieces of at most FAST_PIECE; None (as many as
        fit) where it is larger, as a slow connection gains speed over a long transfer, or
        where the client tells none."""
        fast = self.fast_connections
        if fast is None or total > max(fast, 1) * FAST_PIECE:
            return None
        return max(fast, 1)

    @property
    def round_trip(self) -> float:
        """Seconds of a request's round trip."""
        return min(self._round_trips.items)

    @property
    def rate(self) -> float:
        """Bytes per second one connection carries."""
        return max(self._rates.items)

    def gap_bytes(self, total: int | None = None, connections: int = 1) -> int:
        """The longest gap between two byte ranges of an object that one request reads rather
        than two: moving it costs less than a round trip; and for a read of `total` bytes
        over `connections`, no more than its share of one (a read with fewer requests than
        connections sends them all at once: merging them saves no round trip)."""
        return int(self._share(self.round_trip * self.rate, total, connections))

    def piece_bytes(
        self, total: int | None = None, connections: int = 1, dense: bool = False
    ) -> int:
        """The most bytes one request moves: more take one connection longer than
        PIECE_ROUND_TRIPS round trips, and are split across connections; and for a read of
        `total` bytes over `connections`, its share of one, so that it keeps them all busy,
        up to SHARE_PIECE at least. Never less than SMALLEST_PIECE, but in a `dense` read
        (no gaps between its ranges: half the piece makes twice the requests, not more, as
        where it also merges ranges across gaps) whose share is less, by a client that
        tells no kept connections (one that does splits a piece over them by their windows:
        `split`), where pieces down to the share end the read sooner (`_pieces_seconds`)."""
        most = PIECE_ROUND_TRIPS * self.round_trip * self.rate
        if total is None:
            return max(SMALLEST_PIECE, int(most))
        share = max(1, int(self._share(max(most, SHARE_PIECE), total, connections)))
        if not dense or self.idle_connections is not None:
            return max(SMALLEST_PIECE, share)
        pieces = [max(SMALLEST_PIECE, share)]  # (halved down to the share; the largest first)
        while pieces[-1] > share:
            pieces.append(max(share, pieces[-1] // 2))
        return min(pieces, key=lambda piece: self._pieces_seconds(piece, total))

    def _pieces_seconds(self, piece: int, total: int) -> float:
        """How long a read of `total` bytes takes in requests of `piece` bytes at once,
        each on a new connection (a client that tells no kept connections may open one for
        each request: moto's S3 closes every one), PIECE_REQUEST_SECONDS more for each."""
        return self._on_new(piece) + -(-total // piece) * PIECE_REQUEST_SECONDS

    def split(self, nbytes: int, count: int = 1) -> int:
        """In how many ranges a small read of `count` objects of about `nbytes` asks for each,
        each range on a connection of its own: where moving one on a connection (at
        `_split_rate`) takes time t, n ranges take t / n and n - 1 requests more; the n
        that costs least. 1 below SPLIT_ROUND_TRIP; no range under SPLIT_BYTES;
        and no more ranges in all than idle connections, where the client tells them (a new
        one costs a round trip to open, more than a split saves), or `fast_share` for an
        object of LARGE_BYTES or more."""
        most = min(MOST_SPLIT, nbytes // SPLIT_BYTES)
        idle = self.idle_connections
        fast = self.fast_share(nbytes * count) if nbytes >= LARGE_BYTES else None
        if fast is not None:
            idle = fast  # (a large range on a slow one comes late)
        if idle is not None:
            most = min(most, idle // max(count, 1))
        if most <= 1 or self.round_trip < SPLIT_ROUND_TRIP:
            return 1  # (a large read's ranges: no rate weighed)
        moving = nbytes / self._split_rate()
        return max(1, min(most, int(math.sqrt(moving / REQUEST_SECONDS))))

    def _split_rate(self) -> float:
        """What one connection moves a small read's object at: the fastest of the last
        bodies, or, where the server's connections have been idle for a retransmission
        timeout (RESTART_SECONDS), their windows halved for each."""
        timeouts = int((time.monotonic() - self.last_body) / (self.round_trip + RESTART_SECONDS))
        if timeouts:  # (a window's rate is never above its body's: no min to take)
            return max(self._window_rates.items) / (1 << min(timeouts, 32))
        return max(self._body_rates.items)

    @property
    def bytes_in_flight(self) -> int:
        """The bytes that large requests keep in flight together: BYTES_IN_FLIGHT, more over
        a round trip longer than BYTES_ROUND_TRIP, in proportion, up to MOST_BYTES_IN_FLIGHT."""
        scale = max(1.0, self.round_trip / BYTES_ROUND_TRIP)
        return int(min(BYTES_IN_FLIGHT * scale, MOST_BYTES_IN_FLIGHT))

    def in_flight(
        self, request_bytes: int, most: int, count: int | None = None, widest: int | None = None
    ) -> int:
        """How many requests of about `request_bytes` each to keep in flight, at most
        `most`: all of them while small, fewer once they fill the link (`bytes_in_flight`);
        all `count` of a read where they are at most TAIL_IN_FLIGHT times those that fit.
        With `widest`, small ones up to it while those beyond the kept connections hold at
        most WIDE_BYTES (a round trip per request, not the link's bandwidth, then bounds a
        read: more in flight fill it). A read of more requests than kept connections keeps
        to those where waiting for one ends sooner than a new connection would
        (INITIAL_WINDOW), until the reads that waited lost what opening the connections
        costs."""
        idle = self.idle_connections
        fitting = round(self.bytes_in_flight / max(request_bytes, 1))
        if count is not None and count <= TAIL_IN_FLIGHT * fitting:
            fitting = max(fitting, count)
        if widest is not None:
            if count is not None and count <= min(widest, fitting):
                wide = count  # (one wave on new connections, not two)
            else:  # (WIDE_BYTES bounds the connections a read opens, not those kept)
                opened = WIDE_BYTES // max(request_bytes, 1)
                wide = min(widest, opened + (idle or 0))
            most = max(most, wide)
        chosen = max(min(most, FEWEST_IN_FLIGHT), min(most, fitting))
        if not idle or count is None or min(chosen, count) <= idle:
            return chosen
        # (A kept connection's window: what its bodies carried in a round trip, halved for
        # each retransmission timeout it has been idle: `_split_rate`.)
        on_kept = self._seconds(request_bytes, self._split_rate() * self.round_trip)
        on_new = self._on_new(request_bytes)
        waiting = math.ceil(count / idle) * on_kept
        # (Each read that waits loses the rounds a pool as large as it would have saved; once
        # those losses add up to what opening the connections costs a read, one opens them:
        # the kept ones then serve the next reads in one round.)
        lost = self._lost_waiting + waiting - on_kept
        if waiting <= on_new and lost <= on_new - waiting:
            self._lost_waiting = lost
            return idle
        self._lost_waiting = 0.0
        return chosen

    def _on_new(self, nbytes: int) -> float:
        """How long a request for a body of `nbytes` takes on a new connection: a round trip
        to open it, then slow start from INITIAL_WINDOW."""
        return self.round_trip + self._seconds(nbytes, INITIAL_WINDOW)

    def _seconds(self, nbytes: int, window: float) -> float:
        """How long a request for a body of `nbytes` takes on a connection whose server
        sends `window` bytes in its first round trip and doubles that in each next (slow
        start; a round trip at least)."""
        return self.round_trip * max(1, math.ceil(math.log2(nbytes / window + 1)))

    @staticmethod
    def _share(most: float, total: int | None, connections: int) -> float:
        return most if total is None else min(most, total / max(connections, 1))


class _Ring:
    """The last KEPT values added, or the assumed value until one is."""

    def __init__(self, assumed: float) -> None:
        self.items = [assumed] * KEPT
        self._next = itertools.count()
        self._seen = False

    def add(self, value: float) -> None:
        if not self._seen:  # (the assumption goes with the first value)
            self.items[:] = [value] * KEPT
            self._seen = True
        self.items[next(self._next) % KEPT] = value


_links: dict[str, Link] = {}
_links_lock = threading.Lock()


def link_to(server: str) -> Link:
    """The one Link of this process to `server` (a URL's scheme and host), shared by every
    store that reaches it."""
    with _links_lock:
        found = _links.get(server)
        if found is None:
            found = _links[server] = Link()
        return found


def _unlock_links_in_child() -> None:
    global _links_lock
    _links_lock = threading.Lock()
    for link in _links.values():  # (a child opens connections of its own)
        link.idle_connections = 0


at_fork_in_child(_unlock_links_in_child)
