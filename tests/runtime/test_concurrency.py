"""zarrcore.runtime.concurrency.fan_out: the fan-out every store, the engine and the tools
run on."""
import asyncio
import concurrent.futures
import threading
import time

import pytest

from zarrcore.runtime.cancellation import CancelToken, WorkCancelled, carrying
from zarrcore.runtime.concurrency import fan_out, run_bounded
from zarrcore.errors import StoreError


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def _flat(batches):
    return sorted(pair for batch in batches for pair in batch)


class _InFlight:
    """The calls in progress (`now`), the most at once (`peak`) and the threads they ran on:
    each call runs `with` it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = self.peak = 0
        self.threads = set()

    def __enter__(self):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.threads.add(threading.current_thread().name)

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1


@pytest.mark.parametrize("limit", [1, 3, 8])
def test_threads_return_every_result_with_at_most_limit_in_flight(limit):
    flight = _InFlight()

    def call(x):
        with flight:
            time.sleep(0.002)
        return x * x

    assert _flat(fan_out(call, range(20), limit)) == [(i, i * i) for i in range(20)]
    assert 1 <= flight.peak <= limit


def test_coroutines_on_a_loop(loop):
    async def call(x):
        await asyncio.sleep(0.001 * (x % 3))
        return -x

    assert _flat(fan_out(call, list(range(10)), 4, loop=loop)) == [(i, -i) for i in range(10)]


def test_items_are_taken_only_as_calls_finish():
    taken, started = [], threading.Event()

    def items():
        for i in range(100):
            taken.append(i)
            yield i

    def call(x):
        started.wait(5)
        return x

    batches = fan_out(call, items(), 2)
    timer = threading.Timer(0.05, started.set)
    timer.start()
    first = next(batches)
    # Two calls were in flight when the first finished: the rest were not produced yet.
    assert len(taken) <= 2 + len(first)
    batches.close()
    timer.join()


@pytest.mark.parametrize("weighted", [False, True])
def test_the_next_calls_start_before_results_are_handed_on(weighted):
    # The caller works on a result while the call taking its place runs: here one at a time,
    # by the limit or by the budget.
    taken = []

    def items():
        for i in range(3):
            taken.append(i)
            yield i

    options = {"weights": [5, 5, 5], "budget": 5} if weighted else {}
    batches = fan_out(lambda i: i, items(), 8 if weighted else 1, **options)
    for i in range(3):
        assert next(batches) == [(i, i)]
        assert taken == list(range(min(i + 2, 3)))
    assert next(batches, None) is None


def test_first_failure_is_raised_and_unstarted_calls_never_run():
    ran = []

    def call(x):
        ran.append(x)
        if x == 1:
            raise ValueError("bad item 1")
        time.sleep(0.01)
        return x

    with pytest.raises(ValueError, match="bad item 1"):
        _flat(fan_out(call, range(50), 2))
    assert len(ran) < 10


def test_failure_of_items_waits_for_running_threads():
    finished = []

    def call(x):
        time.sleep(0.05)
        finished.append(x)

    def items():
        yield 0
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_bounded(call, items(), 4)
    assert finished == [0]  # the running call ended whole before the interrupt was raised


def test_a_fan_out_stopped_early_returns_once_its_coroutines_have_ended(loop):
    """Its consumer gone (a cancelled read), a fan-out on a loop cancels the coroutines
    running and returns once each has ended: none goes on to send a request after."""
    ended = []

    async def call(x):
        try:
            await asyncio.sleep(0 if x == 0 else 30)
        finally:
            await asyncio.sleep(0.1)  # (what a cancelled request does before it ends)
            ended.append(x)
        return x

    batches = fan_out(call, list(range(4)), 4, loop=loop)
    assert next(batches) == [(0, 0)]
    started = time.monotonic()
    batches.close()
    assert sorted(ended) == [0, 1, 2, 3]
    assert time.monotonic() - started < 5  # (cancelled, not waited out)


def test_failure_of_items_lets_running_writes_on_a_loop_end_whole(loop):
    """Writes (results dropped) are not cancelled once sent, where the server may apply them
    later: as threads, they are waited for until they end whole."""
    finished = []

    async def call(x):
        await asyncio.sleep(0.05)
        finished.append(x)

    def items():
        yield 0
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_bounded(call, items(), 4, loop=loop)
    assert finished == [0]


def _counted(taken, n=100):
    for i in range(n):
        taken.append(i)
        yield i


def test_a_fired_token_stops_a_fan_out_taking_items():
    """Under the cancellation token of work started in the background, a fan-out takes no
    item once it has fired: WorkCancelled, once the running calls have ended."""
    token, taken, ended = CancelToken(), [], []

    def call(x):
        if x == 3:
            token.cancel()
        time.sleep(0.01)
        ended.append(x)

    with carrying(token), pytest.raises(WorkCancelled):
        run_bounded(call, _counted(taken), 2)
    assert len(taken) <= 5 and sorted(ended) == taken


def test_a_fired_token_cancels_a_fan_outs_coroutines_at_once(loop):
    """... and cancels its running coroutines (reads) at once, not once they have ended."""
    token, taken = CancelToken(), []

    async def call(x):
        await asyncio.sleep(3)

    timer = threading.Timer(0.05, token.cancel)
    timer.start()
    started = time.monotonic()
    with carrying(token), pytest.raises(WorkCancelled):
        _flat(fan_out(call, _counted(taken, 8), 4, loop=loop))
    assert time.monotonic() - started < 2 and taken == [0, 1, 2, 3]
    timer.join()


def test_deadline_names_the_outstanding_keys(loop):
    async def call(request):
        await asyncio.sleep(0 if request[0] == "a" else 30)
        return request[0]

    requests = [("a", None), ("b/c", None), ("d", None)]
    with pytest.raises(StoreError, match=r"no answer for 0 s reading keys \['b/c', 'd'\]"):
        _flat(fan_out(call, requests, 3, loop=loop, deadline=0.2, doing="reading"))


def test_dropped_results_yield_nothing():
    seen = []
    assert list(fan_out(seen.append, range(5), 2, keep=False)) == []
    assert sorted(seen) == list(range(5))


def test_one_item_runs_in_the_caller():
    caller = threading.current_thread()
    assert list(fan_out(lambda x: threading.current_thread() is caller, [7], 4)) == [[(0, True)]]


# -- the process's bound on remote requests (storage/_aio.py) ---------------------------------
def test_request_slots_bound_every_loop_together_and_come_back_on_cancel(loop, io_config):
    """Requests on two event loops hold at most config.io_process_concurrency slots at once;
    a waiter cancelled (a failed fan-out, a timeout) leaves no slot taken."""
    from zarrcore.runtime import _aio

    io_config.set(io_process_concurrency=3)
    guard = threading.Lock()
    now, peak = [0], [0]

    async def request(seconds):
        async with _aio.request_slot():
            with guard:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            await asyncio.sleep(seconds)
            with guard:
                now[0] -= 1

    async def many(n):
        await asyncio.gather(*(request(0.01) for _ in range(n)))

    async def cancelled():
        waiters = [asyncio.ensure_future(request(0.05)) for _ in range(6)]
        await asyncio.sleep(0.01)
        for w in waiters[2:]:
            w.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)

    futures = [asyncio.run_coroutine_threadsafe(many(20), loop),
               asyncio.run_coroutine_threadsafe(many(20), _aio.io_loop()),
               asyncio.run_coroutine_threadsafe(cancelled(), loop)]
    for f in futures:
        f.result(10)
    assert peak[0] == 3
    assert _aio.request_slots.held == 0
    # Several slots at once (a batch of ranges) wait for all of them, never past the bound.
    asyncio.run_coroutine_threadsafe(_take(_aio, 5), loop).result(5)
    assert _aio.request_slots.held == 0


async def _take(aio, wanted):
    async with aio.request_slot(wanted):
        assert aio.request_slots.held == 3  # (the bound, not more)


def test_a_wait_on_a_loop_that_never_runs_ends_with_a_store_error():
    from zarrcore.runtime import _aio

    stalled = asyncio.new_event_loop()  # as a forked child inherits its parent's loop
    waiting = asyncio.sleep(0)
    started = time.monotonic()
    try:
        with pytest.raises(StoreError, match="no answer for") as e:
            _aio.run(waiting, stalled, deadline=0.3)
    finally:
        waiting.close()
        stalled.close()
    assert e.value.errno == 110 and time.monotonic() - started < 3


def test_a_wait_on_the_loops_own_thread_is_refused_at_once(loop):
    # (It would wait for itself until the deadline, then time out.)
    import errno

    from zarrcore.runtime import _aio

    async def inner():
        return 1

    async def outer():
        waiting = inner()
        try:
            _aio.run(waiting, loop, deadline=30)
        except StoreError as e:
            return e
        finally:
            assert waiting.cr_frame is None  # (closed: never "was never awaited")

    started = time.monotonic()
    error = asyncio.run_coroutine_threadsafe(outer(), loop).result(10)
    assert isinstance(error, StoreError) and error.errno == errno.EDEADLK
    assert "inner" in str(error) and time.monotonic() - started < 3


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_parallel_map_runs_on_at_most_its_workers_within_the_pool(workers):
    # (An array's own num_threads bounds its requests so; the pool has config.num_threads.)
    import zarrcore
    from zarrcore.runtime.config import parallel_map

    flight = _InFlight()

    def task(i):
        with flight:
            time.sleep(0.005)
        return i

    with zarrcore.config.set(num_threads=3):
        assert parallel_map(task, range(24), workers) == list(range(24))
    assert flight.peak <= min(workers, 3) and len(flight.threads) <= min(workers, 3)


def test_calls_on_a_given_pool_leave_it_running():
    """With `executor`, calls run on that pool (no thread of fan_out's own), at most `limit`
    at once; a failure waits for the calls that started and the pool goes on serving."""
    with concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="given") as pool:
        flight = _InFlight()

        def call(x):
            with flight:
                time.sleep(0.002)
            if x == 13:
                raise ValueError("13")
            return x + 1

        assert _flat(fan_out(call, range(10), 2, executor=pool)) == [
            (i, i + 1) for i in range(10)]
        assert 1 <= flight.peak <= 2 and all(n.startswith("given") for n in flight.threads)
        with pytest.raises(ValueError, match="13"):
            _flat(fan_out(call, range(20), 3, executor=pool))
        assert flight.now == 0  # (the started calls were waited for)
        assert pool.submit(call, 1).result() == 2
