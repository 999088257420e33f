"""asyncio counterparts of Array and Group (zarr-python's AsyncArray and AsyncGroup).

An AsyncArray wraps an Array: the same metadata, engine, cache and locks. Each coroutine
runs the synchronous call on the shared pool (zarrcore.runtime.background), so the event loop
only starts work and receives results: no I/O, decoding or lock wait runs on it. Cancelling the
awaiting task stops the call between chunks (those in progress end whole) and waits for the
work in progress to end before the task sees CancelledError.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..runtime import background
from ..runtime.cancellation import WorkCancelled
from .array import Array
from .group import Group
from .node import BrokenNode

if TYPE_CHECKING:
    import asyncio

    import numpy.typing as npt

    from .info import ArrayInfo
    from .views import LazyArray

__all__ = ["AsyncArray", "AsyncGroup", "AsyncLazyArray", "RESULTS_PER_STEP", "as_async", "run"]

_R = TypeVar("_R")


async def run(call: Callable[..., _R], *args: Any, **kwargs: Any) -> _R:
    """`call(*args, **kwargs)` run off the event loop, on the shared pool.

    Cancelled, it stops the call's chunk work and returns (raises CancelledError) once the
    work in progress has ended."""
    import asyncio  # (imported where a loop runs: not by `import zarrcore`)

    future = background.start(call, *args, **kwargs)
    # (shielded: a cancelled wrapper would cancel `future` from the loop, which must not wait)
    waited = asyncio.wrap_future(future)
    try:
        result: _R = await asyncio.shield(waited)
    except asyncio.CancelledError:
        future.stop()
        await _until_done(waited)
        raise
    return result


async def _until_done(waited: asyncio.Future[Any]) -> None:
    """Wait until `waited` is done, however often the waiting task is cancelled meanwhile."""
    import asyncio

    while not waited.done():
        try:
            await asyncio.wait([waited])
        except asyncio.CancelledError:
            continue
    if not waited.cancelled():
        waited.exception()  # (taken: the cancelled task's outcome is its cancellation)


# How many awaiting tasks one step of the event loop hands their results to: the loop's
# other work (a timer, a server's sockets) waits at most that many tasks' wake-ups.
RESULTS_PER_STEP = 64


class _Round:
    """The reads of one array started in one step of an event loop, read as one batch."""

    __slots__ = ("selections", "futures", "started", "waited", "waiting")

    def __init__(self) -> None:
        self.selections: list[Any] = []
        self.futures: list[asyncio.Future[Any]] = []
        self.started: background.BackgroundFuture[Any] | None = None
        self.waited: asyncio.Future[Any] | None = None  # `started` on the loop
        # (the futures the batch started with: those not cancelled before it started)
        self.waiting: set[asyncio.Future[Any]] = set()

    def cancelled(self, future: asyncio.Future[Any]) -> asyncio.Future[Any] | None:
        """The task awaiting `future` was cancelled: the batch's work stops when no task it
        started with is left. Returned: what the task awaits before it ends, the batch's
        end, since the batch's work is the task's too (None: the task was cancelled before
        the batch started, and left out of it)."""
        if future not in self.waiting:
            return None
        self.waiting.discard(future)
        if not self.waiting and self.started is not None:
            self.started.stop()
        return self.waited


class _ReadQueue:
    """The reads of one array that tasks start in one step of an event loop, read together
    (Array.get_many: selections that overlap fetch and decode their chunks once), on the
    shared pool. When every task of a batch is cancelled, its work stops between chunks."""

    def __init__(self, array: Array) -> None:
        self._array = array
        self._rounds: dict[asyncio.AbstractEventLoop, _Round] = {}

    async def read(self, selection: Any) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        round_ = self._rounds.get(loop)
        if round_ is None:
            round_ = self._rounds[loop] = _Round()
            loop.call_soon(self._start, loop)
        round_.selections.append(selection)
        round_.futures.append(future)
        try:
            return await future
        except asyncio.CancelledError:
            waited = round_.cancelled(future)
            if waited is not None:
                await _until_done(waited)
            raise

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        import asyncio

        round_ = self._rounds.pop(loop)
        live = [k for k, f in enumerate(round_.futures) if not f.cancelled()]
        if len(live) < len(round_.futures):  # (tasks cancelled before the batch started)
            round_.selections = [round_.selections[k] for k in live]
            round_.futures = [round_.futures[k] for k in live]
        if not live:
            return
        futures = round_.futures
        round_.waiting = set(futures)
        started = round_.started = background.start(self._outcomes, round_.selections)
        waited = round_.waited = asyncio.wrap_future(started, loop=loop)

        def delivered(done: asyncio.Future[Any]) -> None:
            if done.cancelled():  # (every task of it was cancelled)
                for future in futures:
                    future.cancel()
                return
            error = done.exception()
            if error is not None:  # (the pool failed: every read gets it)
                outcomes: list[tuple[bool, Any]] = [(False, error)] * len(futures)
            else:
                outcomes = done.result()
            self._deliver(loop, futures, outcomes, 0)

        waited.add_done_callback(delivered)

    def _deliver(
        self,
        loop: asyncio.AbstractEventLoop,
        futures: list[asyncio.Future[Any]],
        outcomes: list[tuple[bool, Any]],
        first: int,
    ) -> None:
        end = first + RESULTS_PER_STEP
        for future, (ok, value) in zip(futures[first:end], outcomes[first:end]):
            if not future.done():
                future.set_result(value) if ok else future.set_exception(value)
        if end < len(futures):
            loop.call_soon(self._deliver, loop, futures, outcomes, end)

    def _outcomes(self, selections: list[Any]) -> list[tuple[bool, Any]]:
        """Per selection (True, its value) or (False, its error): together when they all
        read, else each alone, so that one bad selection fails only its own task."""
        array = self._array
        if len(selections) > 1:
            try:
                return [(True, value) for value in array.get_many(selections)]
            except WorkCancelled:
                raise
            except Exception:
                pass
        outcomes: list[tuple[bool, Any]] = []
        for selection in selections:
            try:
                outcomes.append((True, array[selection]))
            except WorkCancelled:
                raise
            except Exception as e:
                outcomes.append((False, e))
        return outcomes


def as_async(node: Array | Group | BrokenNode) -> AsyncArray | AsyncGroup | BrokenNode:
    """The async counterpart of a node that Group or zarrcore.open returns (a BrokenNode as it
    is)."""
    if isinstance(node, BrokenNode):
        return node
    wrapped: AsyncArray | None = getattr(node, "async_array", None)  # (a Group has none)
    return wrapped if wrapped is not None else node.async_group  # type: ignore[union-attr]


class _Synchronous:
    """A property of the wrapped node read as it is: metadata held in memory, no I/O."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return getattr(instance._node, self._name)


class _AsyncSelector:
    """`oindex`, `vindex` and `blocks` of an AsyncArray: `await a.oindex.getitem(sel)`."""

    def __init__(self, get: Callable[..., Any], set: Callable[..., None]) -> None:
        self._get, self._set = get, set

    async def getitem(self, selection: Any) -> Any:
        return await run(self._get, selection)

    async def setitem(self, selection: Any, value: npt.ArrayLike) -> None:
        await run(self._set, selection, value)


class _AsyncNode:
    """What AsyncArray and AsyncGroup share: the wrapped node, read without I/O."""

    metadata = _Synchronous()
    store = _Synchronous()
    path = _Synchronous()
    name = _Synchronous()
    basename = _Synchronous()
    read_only = _Synchronous()
    zarr_format = _Synchronous()
    info = _Synchronous()

    def __init__(self, node: Array | Group) -> None:
        self._node = node

    @property
    def attrs(self) -> dict[str, Any]:
        """The attributes as a plain dict (change them with `update_attributes`)."""
        return self._node.attrs.asdict()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._node!r}>"


class AsyncArray(_AsyncNode):
    """An Array for asyncio code: every read and write is a coroutine.

    `Array.async_array` gives the AsyncArray of an array, `AsyncArray.sync_array` the Array
    back (both the same array, engine and cache). zarrcore.asynchronous opens and creates
    them.

    Parameters
    ----------
    array : Array
        The array to wrap.
    """

    shape = _Synchronous()
    dtype = _Synchronous()
    ndim = _Synchronous()
    size = _Synchronous()
    nbytes = _Synchronous()
    chunks = _Synchronous()
    shards = _Synchronous()
    cdata_shape = _Synchronous()
    nchunks = _Synchronous()
    fill_value = _Synchronous()
    order = _Synchronous()
    filters = _Synchronous()
    serializer = _Synchronous()
    compressors = _Synchronous()
    compressor = _Synchronous()
    read_chunk_sizes = _Synchronous()
    write_chunk_sizes = _Synchronous()
    _node: Array

    def __init__(self, array: Array) -> None:
        super().__init__(array)
        self._reads = _ReadQueue(array)

    def __reduce__(self) -> tuple[Any, ...]:
        return AsyncArray, (self._node,)

    @property
    def sync_array(self) -> Array:
        """The synchronous Array this one wraps."""
        return self._node

    async def getitem(self, selection: Any) -> Any:
        """`a[selection]` (basic and advanced numpy selections).

        Parameters
        ----------
        selection : selection
            As `Array.__getitem__` takes it.

        Returns
        -------
        numpy.ndarray or scalar
        """
        return await self._reads.read(selection)

    async def setitem(self, selection: Any, value: npt.ArrayLike) -> None:
        """`a[selection] = value`.

        Parameters
        ----------
        selection : selection
            As `Array.__setitem__` takes it.
        value : array_like
            Broadcast to the selection.
        """
        await run(self._node.__setitem__, selection, value)

    async def get_basic_selection(
        self, selection: Any = Ellipsis, *, out: Any = None, fields: Any = None
    ) -> Any:
        return await run(self._node.get_basic_selection, selection, out=out, fields=fields)

    async def set_basic_selection(
        self, selection: Any, value: npt.ArrayLike, *, fields: Any = None
    ) -> None:
        await run(self._node.set_basic_selection, selection, value, fields=fields)

    async def get_orthogonal_selection(
        self, selection: Any, *, out: Any = None, fields: Any = None
    ) -> Any:
        return await run(self._node.get_orthogonal_selection, selection, out=out, fields=fields)

    async def set_orthogonal_selection(
        self, selection: Any, value: npt.ArrayLike, *, fields: Any = None
    ) -> None:
        await run(self._node.set_orthogonal_selection, selection, value, fields=fields)

    async def get_coordinate_selection(
        self, selection: Any, *, out: Any = None, fields: Any = None
    ) -> Any:
        return await run(self._node.get_coordinate_selection, selection, out=out, fields=fields)

    async def set_coordinate_selection(
        self, selection: Any, value: npt.ArrayLike, *, fields: Any = None
    ) -> None:
        await run(self._node.set_coordinate_selection, selection, value, fields=fields)

    async def get_mask_selection(
        self, mask: npt.ArrayLike, *, out: Any = None, fields: Any = None
    ) -> Any:
        return await run(self._node.get_mask_selection, mask, out=out, fields=fields)

    async def set_mask_selection(
        self, mask: npt.ArrayLike, value: npt.ArrayLike, *, fields: Any = None
    ) -> None:
        await run(self._node.set_mask_selection, mask, value, fields=fields)

    async def get_block_selection(
        self, selection: Any, *, out: Any = None, fields: Any = None
    ) -> Any:
        return await run(self._node.get_block_selection, selection, out=out, fields=fields)

    async def set_block_selection(
        self, selection: Any, value: npt.ArrayLike, *, fields: Any = None
    ) -> None:
        await run(self._node.set_block_selection, selection, value, fields=fields)

    async def get_many(self, selections: Sequence[Any], *, out: Any = None) -> Any:
        """Array.get_many: many selections read in one call (a loader's batch).

        Parameters
        ----------
        selections : sequence of selections
            Each as `a[selection]` takes it.
        out : numpy.ndarray or sequence of numpy.ndarray, optional
            Where to read them, as Array.get_many takes it.

        Returns
        -------
        numpy.ndarray or list of numpy.ndarray
        """
        return await run(self._node.get_many, selections, out)

    @property
    def oindex(self) -> _AsyncSelector:
        return _AsyncSelector(
            self._node.get_orthogonal_selection, self._node.set_orthogonal_selection
        )

    @property
    def vindex(self) -> _AsyncSelector:
        return _AsyncSelector(self._node.vindex.__getitem__, self._node.vindex.__setitem__)

    @property
    def blocks(self) -> _AsyncSelector:
        return _AsyncSelector(self._node.get_block_selection, self._node.set_block_selection)

    @property
    def lazy(self) -> AsyncLazyArray:
        """A lazy view of the whole array (Array.lazy) whose reads and writes are awaited."""
        return AsyncLazyArray(self._node.lazy)

    def with_config(self, config: Mapping[str, Any]) -> AsyncArray:
        """Array.with_config: the same array with other runtime options (no I/O).

        Parameters
        ----------
        config : mapping
            As Array.with_config takes it.

        Returns
        -------
        AsyncArray
        """
        return AsyncArray(self._node.with_config(config))

    async def resize(self, *new_shape: Any) -> None:
        """Array.resize: `await a.resize((n, m))` or `await a.resize(n, m)`.

        Parameters
        ----------
        *new_shape : int or tuple of int
            The new shape.
        """
        await run(self._node.resize, *new_shape)

    async def append(self, data: npt.ArrayLike, axis: int = 0) -> tuple[int, ...]:
        """Array.append.

        Parameters
        ----------
        data : array_like
            What to append.
        axis : int, optional
            The axis it grows along.

        Returns
        -------
        tuple of int
            The new shape.
        """
        return await run(self._node.append, data, axis)

    async def update_attributes(self, new_attributes: Mapping[str, Any]) -> AsyncArray:
        """Merge `new_attributes` into the stored attributes.

        Parameters
        ----------
        new_attributes : mapping
            The attributes to set.

        Returns
        -------
        AsyncArray
            This array.
        """
        await run(self._node.update_attributes, new_attributes)
        return self

    async def nchunks_initialized(self) -> int:
        return await run(lambda: self._node.nchunks_initialized)

    async def nbytes_stored(self) -> int:
        return await run(self._node.nbytes_stored)

    async def info_complete(self) -> ArrayInfo:
        return await run(self._node.info_complete)


class AsyncLazyArray:
    """A lazy view (Array.lazy, zarrcore.nodes.views.LazyArray) for asyncio code: composed
    without I/O as a LazyArray is, then `await view.read()` or `await view.write(value)`.

    Parameters
    ----------
    view : LazyArray
        The view to wrap.
    """

    shape = _Synchronous()
    dtype = _Synchronous()
    ndim = _Synchronous()
    size = _Synchronous()
    dims = _Synchronous()

    def __init__(self, view: LazyArray) -> None:
        self._node = view

    def __reduce__(self) -> tuple[Any, ...]:
        return AsyncLazyArray, (self._node,)

    def __repr__(self) -> str:
        return f"<AsyncLazyArray {self._node!r}>"

    @property
    def sync_view(self) -> LazyArray:
        """The LazyArray this one wraps."""
        return self._node

    def __getitem__(self, selection: Any) -> AsyncLazyArray:
        return AsyncLazyArray(self._node[selection])

    @property
    def oindex(self) -> _AsyncViewSelector:
        return _AsyncViewSelector(self._node.oindex)

    @property
    def vindex(self) -> _AsyncViewSelector:
        return _AsyncViewSelector(self._node.vindex)

    def transpose(self, *axes: Any) -> AsyncLazyArray:
        return AsyncLazyArray(self._node.transpose(*axes))

    @property
    def T(self) -> AsyncLazyArray:
        return AsyncLazyArray(self._node.T)

    def isel(self, **selections: Any) -> AsyncLazyArray:
        return AsyncLazyArray(self._node.isel(**selections))

    async def read(self) -> Any:
        """The view's values (LazyArray.read), read in one planned pass off the loop."""
        return await run(self._node.read)

    async def write(self, value: npt.ArrayLike) -> None:
        """Write `value` through the view (LazyArray.write)."""
        await run(self._node.write, value)


class _AsyncViewSelector:
    """`view.oindex` and `view.vindex` of an AsyncLazyArray: views, composed without I/O."""

    def __init__(self, selector: Any) -> None:
        self._selector = selector

    def __getitem__(self, selection: Any) -> AsyncLazyArray:
        return AsyncLazyArray(self._selector[selection])


class AsyncGroup(_AsyncNode):
    """A Group for asyncio code: members are opened, listed and created by coroutines.

    Parameters
    ----------
    group : Group
        The group to wrap (`Group.async_group` gives it).
    """

    _node: Group

    def __init__(self, group: Group) -> None:
        super().__init__(group)

    @property
    def sync_group(self) -> Group:
        """The synchronous Group this one wraps."""
        return self._node

    async def getitem(self, name: str) -> AsyncArray | AsyncGroup:
        """The member at `name`.

        Parameters
        ----------
        name : str
            Its path below this group.

        Returns
        -------
        AsyncArray or AsyncGroup

        Raises
        ------
        KeyError
            There is none.
        """
        return as_async(await run(self._node.__getitem__, name))  # type: ignore[return-value]

    async def get(self, name: str, default: Any = None) -> Any:
        """The member at `name`, or `default` if there is none.

        Parameters
        ----------
        name : str
            Its path below this group.
        default : object, optional
            What to return when there is none.

        Returns
        -------
        AsyncArray, AsyncGroup or `default`
        """
        node = await run(self._node.get, name)
        return default if node is None else as_async(node)

    async def contains(self, name: str) -> bool:
        return await run(self._node.__contains__, name)

    async def delitem(self, name: str) -> None:
        await run(self._node.__delitem__, name)

    async def create_array(self, name: str, **kwargs: Any) -> AsyncArray:
        """A new array in this group.

        Parameters
        ----------
        name : str
            Its name.
        **kwargs
            As Group.create_array takes them.

        Returns
        -------
        AsyncArray
        """
        return AsyncArray(await run(self._node.create_array, name, **kwargs))

    async def require_array(self, name: str, **kwargs: Any) -> AsyncArray:
        return AsyncArray(await run(self._node.require_array, name, **kwargs))

    async def create_group(self, name: str, **kwargs: Any) -> AsyncGroup:
        return AsyncGroup(await run(self._node.create_group, name, **kwargs))

    async def require_group(self, name: str, **kwargs: Any) -> AsyncGroup:
        return AsyncGroup(await run(self._node.require_group, name, **kwargs))

    async def setitem(self, name: str, value: npt.ArrayLike) -> None:
        """A new array `name` holding `value` (Group's `g[name] = value`).

        Parameters
        ----------
        name : str
            Its name.
        value : array_like
            Its data.
        """
        await run(self._node.__setitem__, name, value)

    async def move(self, source: str, dest: str) -> None:
        await run(self._node.move, source, dest)

    async def require_groups(self, *names: str) -> tuple[AsyncGroup, ...]:
        return tuple(AsyncGroup(g) for g in await run(self._node.require_groups, *names))

    async def zeros(self, *, name: str, **kwargs: Any) -> AsyncArray:
        return AsyncArray(await run(self._node.zeros, name=name, **kwargs))

    async def ones(self, *, name: str, **kwargs: Any) -> AsyncArray:
        return AsyncArray(await run(self._node.ones, name=name, **kwargs))

    async def empty(self, *, name: str, **kwargs: Any) -> AsyncArray:
        return AsyncArray(await run(self._node.empty, name=name, **kwargs))

    async def full(self, *, name: str, **kwargs: Any) -> AsyncArray:
        return AsyncArray(await run(self._node.full, name=name, **kwargs))

    async def update_attributes(self, new_attributes: Mapping[str, Any]) -> AsyncGroup:
        await run(self._node.update_attributes, new_attributes)
        return self

    async def nmembers(self, max_depth: int | None = 0) -> int:
        return await run(self._node.nmembers, max_depth)

    async def members(
        self, max_depth: int | None = 0
    ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup | BrokenNode]]:
        """(relative path, node) pairs, as Group.members (listed off the loop, then yielded).

        Parameters
        ----------
        max_depth : int or None, optional
            How deep to go (None: the whole subtree).

        Yields
        ------
        tuple of (str, AsyncArray or AsyncGroup or BrokenNode)
        """
        for path, node in await run(lambda: list(self._node.members(max_depth))):
            yield path, as_async(node)

    async def keys(self) -> AsyncIterator[str]:
        for key in await run(self._node.keys):
            yield key

    async def array_keys(self) -> AsyncIterator[str]:
        for key in await run(self._node.array_keys):
            yield key

    async def group_keys(self) -> AsyncIterator[str]:
        for key in await run(self._node.group_keys):
            yield key

    async def arrays(self) -> AsyncIterator[tuple[str, AsyncArray]]:
        for key, array in await run(self._node.arrays):
            yield key, AsyncArray(array)

    async def groups(self) -> AsyncIterator[tuple[str, AsyncGroup]]:
        for key, group in await run(self._node.groups):
            yield key, AsyncGroup(group)

    async def array_values(self) -> AsyncIterator[AsyncArray]:
        for _, array in await run(self._node.arrays):
            yield AsyncArray(array)

    async def group_values(self) -> AsyncIterator[AsyncGroup]:
        for _, group in await run(self._node.groups):
            yield AsyncGroup(group)

    async def tree(self) -> str:
        return await run(self._node.tree)

    async def info_complete(self) -> str:
        return await run(self._node.info_complete)


# -- Array's and Group's faces here (see Array's "faces") --------------------------------------
def _async_array(self: Array) -> AsyncArray:
    """This array for asyncio code (zarr-python's name): the same engine, cache and locks
    (one AsyncArray per Array, whose concurrent reads are read together).

    Returns
    -------
    zarrcore.AsyncArray
    """
    return AsyncArray(self)


def _async_group(self: Group) -> AsyncGroup:
    """This group for asyncio code.

    Returns
    -------
    zarrcore.AsyncGroup
    """
    return AsyncGroup(self)


Array.async_array = functools.cached_property(_async_array)
Array.async_array.__set_name__(Array, "async_array")
Group.async_group = property(_async_group)
