"""The asyncio API (zarr-python's zarr.api.asynchronous): the top-level functions as coroutines
that return AsyncArray and AsyncGroup.

Each takes the arguments of the synchronous function of the same name (zarrcore.open_array
and so on) and runs it off the event loop, on the shared pool.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..nodes.async_nodes import AsyncArray, AsyncGroup, run
from . import synchronous as api

__all__ = [
    "AsyncArray",
    "AsyncGroup",
    "array",
    "consolidate_metadata",
    "create",
    "create_array",
    "create_group",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "group",
    "load",
    "ones",
    "ones_like",
    "open",
    "open_array",
    "open_consolidated",
    "open_group",
    "open_like",
    "save",
    "save_array",
    "save_group",
    "tree",
    "zeros",
    "zeros_like",
]


_T = TypeVar("_T")

_DOC = """zarrcore.{name} as a coroutine: run on the shared pool, off the event loop.

Parameters
----------
*args
    As zarrcore.{name} takes them.
**kwargs
    As zarrcore.{name} takes them.

Returns
-------
{returns}
"""


def _as_coroutine(
    sync: Callable[..., Any], wrap: Callable[[Any], _T], returns: str
) -> Callable[..., Coroutine[Any, Any, _T]]:
    """The coroutine function of zarrcore.asynchronous that runs `sync` and gives `wrap` its
    result."""

    async def coroutine(*args: Any, **kwargs: Any) -> _T:
        return wrap(await run(sync, *args, **kwargs))

    coroutine.__name__ = coroutine.__qualname__ = sync.__name__
    coroutine.__doc__ = _DOC.format(name=sync.__name__, returns=returns)
    return coroutine


def _opened(node: api.Array | api.Group) -> AsyncArray | AsyncGroup:
    opened: AsyncArray | AsyncGroup = (
        node.async_array if isinstance(node, api.Array) else node.async_group
    )
    return opened


def _same(value: Any) -> Any:
    return value


_ARRAY = "AsyncArray\n    The array."
_GROUP = "AsyncGroup\n    The group."

open = _as_coroutine(api.open, _opened, "AsyncArray or AsyncGroup\n    The node at the path.")
open_array = _as_coroutine(api.open_array, AsyncArray, _ARRAY)
open_group = _as_coroutine(api.open_group, AsyncGroup, _GROUP)
open_consolidated = _as_coroutine(api.open_consolidated, AsyncGroup, _GROUP)
open_like = _as_coroutine(api.open_like, AsyncArray, _ARRAY)
create_array = _as_coroutine(api.create_array, AsyncArray, _ARRAY)
create = _as_coroutine(api.create, AsyncArray, _ARRAY)
create_group = _as_coroutine(api.create_group, AsyncGroup, _GROUP)
group = _as_coroutine(api.group, AsyncGroup, _GROUP)
array = _as_coroutine(api.array, AsyncArray, _ARRAY)
from_array = _as_coroutine(api.from_array, AsyncArray, _ARRAY)
empty = _as_coroutine(api.empty, AsyncArray, _ARRAY)
zeros = _as_coroutine(api.zeros, AsyncArray, _ARRAY)
ones = _as_coroutine(api.ones, AsyncArray, _ARRAY)
full = _as_coroutine(api.full, AsyncArray, _ARRAY)
empty_like = _as_coroutine(api.empty_like, AsyncArray, _ARRAY)
zeros_like = _as_coroutine(api.zeros_like, AsyncArray, _ARRAY)
ones_like = _as_coroutine(api.ones_like, AsyncArray, _ARRAY)
full_like = _as_coroutine(api.full_like, AsyncArray, _ARRAY)
consolidate_metadata = _as_coroutine(api.consolidate_metadata, AsyncGroup, _GROUP)
load = _as_coroutine(api.load, _same, "numpy.ndarray or GroupArrays\n    As zarrcore.load.")
save = _as_coroutine(api.save, _same, "None")
save_array = _as_coroutine(api.save_array, _same, "None")
save_group = _as_coroutine(api.save_group, _same, "None")


async def tree(group: AsyncGroup, **kwargs: Any) -> str:
    """The group's hierarchy drawn as text (zarrcore.tree), off the event loop.

    Parameters
    ----------
    group : AsyncGroup
        The group.
    **kwargs
        As zarrcore.tree takes them (`expand`, `level`).

    Returns
    -------
    str
    """
    return await run(api.tree, group.sync_group, **kwargs)
