"""The asyncio API (zarr-python's zarr.api.asynchronous): the top-level functions as coroutines
that return AsyncArray and AsyncGroup.

Each takes the arguments of the synchronous function of the same name (zarrcore.open_array
and so on) and runs it off the event loop, on the shared pool.
"""
from __future__ import annotations

from typing import Any

from . import api
from .async_nodes import AsyncArray, AsyncGroup, run

__all__ = [
    "AsyncArray", "AsyncGroup", "array", "consolidate_metadata", "create", "create_array",
    "create_group", "empty", "empty_like", "from_array", "full", "full_like", "group", "load",
    "ones", "ones_like", "open", "open_array", "open_consolidated", "open_group", "open_like",
    "save", "save_array", "save_group", "tree", "zeros", "zeros_like",
]


async def open(*args: Any, **kwargs: Any) -> AsyncArray | AsyncGroup:
    """zarrcore.open: the array or group at the path."""
    node = await run(api.open, *args, **kwargs)
    return node.async_array if isinstance(node, api.Array) else node.async_group


async def open_array(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.open_array."""
    return AsyncArray(await run(api.open_array, *args, **kwargs))


async def open_group(*args: Any, **kwargs: Any) -> AsyncGroup:
    """zarrcore.open_group."""
    return AsyncGroup(await run(api.open_group, *args, **kwargs))


async def open_consolidated(*args: Any, **kwargs: Any) -> AsyncGroup:
    """zarrcore.open_consolidated."""
    return AsyncGroup(await run(api.open_consolidated, *args, **kwargs))


async def create_array(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.create_array."""
    return AsyncArray(await run(api.create_array, *args, **kwargs))


async def create(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.create (zarr-python 2's spelling of create_array)."""
    return AsyncArray(await run(api.create, *args, **kwargs))


async def create_group(*args: Any, **kwargs: Any) -> AsyncGroup:
    """zarrcore.create_group."""
    return AsyncGroup(await run(api.create_group, *args, **kwargs))


async def group(*args: Any, **kwargs: Any) -> AsyncGroup:
    """zarrcore.group."""
    return AsyncGroup(await run(api.group, *args, **kwargs))


async def array(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.array: a new array holding the data."""
    return AsyncArray(await run(api.array, *args, **kwargs))


async def from_array(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.from_array."""
    return AsyncArray(await run(api.from_array, *args, **kwargs))


async def empty(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.empty."""
    return AsyncArray(await run(api.empty, *args, **kwargs))


async def zeros(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.zeros."""
    return AsyncArray(await run(api.zeros, *args, **kwargs))


async def ones(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.ones."""
    return AsyncArray(await run(api.ones, *args, **kwargs))


async def full(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.full."""
    return AsyncArray(await run(api.full, *args, **kwargs))


async def zeros_like(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.zeros_like."""
    return AsyncArray(await run(api.zeros_like, *args, **kwargs))


async def ones_like(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.ones_like."""
    return AsyncArray(await run(api.ones_like, *args, **kwargs))


async def empty_like(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.empty_like."""
    return AsyncArray(await run(api.empty_like, *args, **kwargs))


async def full_like(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.full_like."""
    return AsyncArray(await run(api.full_like, *args, **kwargs))


async def open_like(*args: Any, **kwargs: Any) -> AsyncArray:
    """zarrcore.open_like."""
    return AsyncArray(await run(api.open_like, *args, **kwargs))


async def save_array(*args: Any, **kwargs: Any) -> None:
    """zarrcore.save_array."""
    await run(api.save_array, *args, **kwargs)


async def save_group(*args: Any, **kwargs: Any) -> None:
    """zarrcore.save_group."""
    await run(api.save_group, *args, **kwargs)


async def consolidate_metadata(*args: Any, **kwargs: Any) -> AsyncGroup:
    """zarrcore.consolidate_metadata."""
    return AsyncGroup(await run(api.consolidate_metadata, *args, **kwargs))


async def load(*args: Any, **kwargs: Any) -> Any:
    """zarrcore.load: the array's data, or a group's arrays' data by name."""
    return await run(api.load, *args, **kwargs)


async def save(*args: Any, **kwargs: Any) -> None:
    """zarrcore.save."""
    await run(api.save, *args, **kwargs)


async def tree(group: AsyncGroup, **kwargs: Any) -> Any:
    """The group's hierarchy drawn as text (zarrcore.tree)."""
    return await run(api.tree, group.sync_group, **kwargs)
