"""dask arrays from zarrcore arrays, and dask arrays written to them.

Tasks carry the array's description (store, path and metadata; see Array.__reduce__), never
its data, so graphs pickle small and any worker, thread or process, reads and writes the
store itself.
"""

from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.array as da
import dask.local
import dask.threaded
import numpy as np
import numpy.typing as npt
from dask.base import get_scheduler
from dask.delayed import Delayed, delayed

from . import api
from .errors import LockUnavailableError, ProcessLocalStoreError, ReadOnlyError
from .metadata.types import StoreLike
from .nodes.array import Array, storage_block
from .nodes.array_dask import (
    arrays_as_dask,  # noqa: F401  (a public name of this module)
    as_dask,
)

__all__ = [
    "Region",
    "check_tasks_reach",
    "check_writable_from_tasks",
    "from_zarr",
    "store",
    "to_zarr",
]

#: Where a dask array is written: slices of each axis (the leading ones; the rest whole).
Region = Sequence[slice]


def _open(
    array_or_url: Array | StoreLike,
    path: str | None,
    storage_options: dict[str, Any] | None,
    mode: str,
) -> Array:
    if isinstance(array_or_url, Array):
        return array_or_url
    return api.open_array(array_or_url, mode=mode, path=path, storage_options=storage_options)


def from_zarr(
    array_or_url: Array | StoreLike,
    chunks: Any = None,
    *,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    name: str | None = None,
    inline_array: bool = False,
) -> da.Array:
    """A dask array reading a zarrcore array.

    The task names follow from the store, the path and the metadata, so the same array gives
    the same graph in every process.

    Parameters
    ----------
    array_or_url : Array, str, os.PathLike, URL, dict or Store
        A zarrcore Array, or where one is (at `path`).
    chunks : optional
        The dask chunks, in any form `dask.array.from_array` takes; default: the shard shape
        when sharded, else the chunk shape.
    path : str, optional
        The array's path in the store `array_or_url` names.
    storage_options : dict, optional
        Options of the store a URL names.
    name : str, optional
        The dask array's name; default: one derived from the array's store, path and
        metadata.
    inline_array : bool, default False
        Put the array in each task rather than once in the graph, as `dask.array.from_array`.

    Returns
    -------
    dask.array.Array
        Reads the array's shards (or chunks) when computed.
    """
    darr: da.Array = as_dask(
        _open(array_or_url, path, storage_options, "r"), chunks, name, inline_array
    )
    return darr


def _misaligned_axes(
    chunks: tuple[tuple[int, ...], ...], region: tuple[slice, ...], array: Array
) -> list[int]:
    """Axes on which dask `chunks` written at `region` (slices) of `array` split a storage
    block (shard or chunk) between tasks."""
    block = storage_block(array)
    axes = []
    for axis, (sizes, where, size, step) in enumerate(zip(chunks, region, array.shape, block)):
        edge = where.start or 0
        for n in sizes[:-1]:
            edge += n
            if edge % step and edge != size:
                axes.append(axis)
                break
    return axes


def _region(region: Region | None, array: Array, shape: tuple[int, ...]) -> tuple[slice, ...]:
    if region is None:
        region = tuple(slice(0, s) for s in array.shape)
    region = tuple(region) + tuple(slice(0, s) for s in array.shape[len(region) :])
    region = tuple(slice(*r.indices(s)[:2]) for r, s in zip(region, array.shape))
    got = tuple(r.stop - r.start for r in region)
    if got != tuple(shape):
        raise ValueError(
            f"a dask array of shape {tuple(shape)} does not fit region {region} "
            f"of {array.name!r} (shape {got})"
        )
    return region


def check_writable_from_tasks(darr: da.Array, array: Array, region: tuple[slice, ...]) -> None:
    """Refuse writes whose tasks would share storage blocks when `array`'s store can neither
    lock them nor write them conditionally: concurrent read-modify-writes could lose updates."""
    store = array.store
    axes = _misaligned_axes(darr.chunks, region, array)
    if not axes or store.supports_locks or store.supports_conditional_writes:
        return
    block = storage_block(array)
    raise LockUnavailableError(
        f"the dask chunks {darr.chunks} split the {'shards' if array.shards else 'chunks'} "
        f"{block} of {array.name!r} on axes {axes}, and {store!r} has neither locks nor "
        f"conditional writes to share them safely; rechunk so that every chunk edge falls on "
        f"a multiple of {block} from the array's origin, e.g. darr.rechunk({block})"
    )


def _runs_tasks_here(get: Callable[..., Any]) -> bool:
    """Does the dask scheduler function `get` call tasks in this process on the objects of
    the graph itself (threads, or synchronously), rather than on unpickled copies?"""
    if isinstance(get, functools.partial) and get.func is dask.local.get_async:
        # (A concurrent.futures Executor as the scheduler: its `submit` comes first.)
        executor = getattr(get.args[0], "__self__", None)
        return isinstance(executor, concurrent.futures.ThreadPoolExecutor)
    return get in (dask.threaded.get, dask.local.get_sync)


def _scheduler(sources: Sequence[Any], scheduler: Any) -> Callable[..., Any]:
    """The `get` of the scheduler that runs the tasks of `sources` (`scheduler` as compute
    takes it, None: the one dask picks now)."""
    # (dask leaves get_scheduler unannotated.)
    get: Callable[..., Any] = get_scheduler(  # type: ignore[no-untyped-call]
        scheduler=scheduler, collections=list(sources)
    )
    return get


def check_tasks_reach(
    targets: Sequence[Any], sources: Sequence[Any], scheduler: Any = None
) -> None:
    """Refuse to write `targets` from tasks that the scheduler (`scheduler` as compute takes
    it, None: the one dask picks now for `sources`) runs in other processes, when a target's
    store keeps its data in this process only: the workers would write copies, and the
    data would be silently lost."""
    local = [t for t in targets if t.store.process_local]
    if not local or not sources:  # no dask collection: this process writes
        return
    get = _scheduler(sources, scheduler)
    if _runs_tasks_here(get):
        return
    # (A distributed Client's `get` is its method; the processes scheduler is a function.)
    name = getattr(get, "__self__", None) or getattr(get, "__module__", get)
    raise ProcessLocalStoreError(
        f"{local[0].store!r} (of {local[0].name!r}) keeps its data in this process only, but "
        f"the dask scheduler {name} runs the tasks in other processes, on copies of it, "
        f"whose writes would be lost; write to a store the workers share (a directory, an "
        f"object store), or compute with scheduler='threads'"
    )


def store(
    sources: Sequence[da.Array],
    targets: Sequence[Array],
    regions: Sequence[Region | None] | None = None,
    *,
    compute: bool = True,
    **compute_kwargs: Any,
) -> Delayed | None:
    """Write dask arrays into zarrcore Arrays, every block from the task that holds it.

    A target in a store that lives in this process only (a memory store) is refused, before
    any task runs, when the scheduler (the one active now, with `compute` False) runs tasks in
    other processes.

    Parameters
    ----------
    sources : sequence of dask.array.Array
        The data to write.
    targets : sequence of Array
        The zarrcore Array each source is written to.
    regions : sequence of (sequence of slice or None), optional
        Where each source goes in its target: slices of the leading axes (the others whole);
        None, or no `regions`: the whole array.
    compute : bool, default True
        Write now; False: return the writes as one dask Delayed.
    **compute_kwargs
        Options of dask's compute (`scheduler`, ...).

    Returns
    -------
    dask.delayed.Delayed or None
        The writes when `compute` is False, else None.
    """
    given = [None] * len(sources) if regions is None else regions
    slices = [_region(r, t, s.shape) for s, t, r in zip(sources, targets, given)]
    for source, target, region in zip(sources, targets, slices):
        if target.read_only:
            raise ReadOnlyError(f"array {target.name!r} is read-only")
        check_writable_from_tasks(source, target, region)
    check_tasks_reach(targets, sources, compute_kwargs.get("scheduler"))
    if (
        sources
        and any(t.store.merges_task_writes for t in targets)
        and not _runs_tasks_here(_scheduler(sources, compute_kwargs.get("scheduler")))
    ):
        if not compute:
            raise ValueError(
                f"{targets[0].store!r} takes the writes of tasks run in other "
                f"processes by merging them here once they are done: write with "
                f"compute=True"
            )
        _store_merged(sources, targets, slices, compute_kwargs)
        return None
    # No dask lock: zarrcore locks a shared storage block itself (see docs/guide/guarantees.md).
    writes = da.store(
        list(sources), list(targets), regions=slices, lock=False, compute=compute, **compute_kwargs
    )
    return None if compute else delayed(_written)(writes)


def _written(writes: Any) -> None:
    """Nothing: what the one Delayed of store(compute=False) computes to."""


def _store_merged(
    sources: Sequence[da.Array],
    targets: Sequence[Array],
    slices: Sequence[tuple[slice, ...]],
    compute_kwargs: dict[str, Any],
) -> None:
    """Write as `store` does, into targets some of whose stores merge the writes of tasks
    run elsewhere (Store.merges_task_writes): each of their tasks writes its block into its
    copy of the target and gives back that copy's changes, merged here into the target's
    store."""
    merging = [i for i, t in enumerate(targets) if t.store.merges_task_writes]
    plain = [i for i in range(len(targets)) if i not in merging]
    writes = None
    if plain:
        writes = da.store(
            [sources[i] for i in plain],
            [targets[i] for i in plain],
            regions=[slices[i] for i in plain],
            lock=False,
            compute=False,
        )
    # (dask leaves map_blocks and compute unannotated.)
    # (`meta` given, so that dask does not call _write_block to find it.)
    changes = [
        da.map_blocks(  # type: ignore[no-untyped-call]
            _write_block,
            sources[i],
            target=targets[i],
            region=slices[i],
            chunks=(1,) * sources[i].ndim,
            dtype=object,
            meta=np.empty((0,) * sources[i].ndim, dtype=object),
        )
        for i in merging
    ]
    computed, _ = dask.base.compute(  # type: ignore[no-untyped-call]
        changes, writes, **compute_kwargs
    )
    for i, found in zip(merging, computed):
        targets[i].store.merge_task_changes(np.asarray(found).ravel().tolist())


def _write_block(
    block: npt.NDArray[Any], target: Array, region: tuple[slice, ...], block_info: dict[Any, Any]
) -> npt.NDArray[Any]:
    """Write `block` (of a source written at `region` of `target`) into this task's copy of
    `target`; its changes (Store.task_changes), one per block."""
    where = tuple(
        slice(r.start + lo, r.start + hi)
        for r, (lo, hi) in zip(region, block_info[0]["array-location"])
    )
    target[where] = block
    changes = np.empty((1,) * block.ndim, dtype=object)
    changes[...] = target.store.task_changes()
    return changes


def to_zarr(
    darr: da.Array | npt.ArrayLike,
    url_or_array: Array | StoreLike,
    *,
    path: str | None = None,
    region: Region | None = None,
    overwrite: bool = False,
    compute: bool = True,
    storage_options: dict[str, Any] | None = None,
    **create_kwargs: Any,
) -> Array | Delayed | None:
    """Write a dask array to a zarrcore Array, existing or new.

    Writes whose dask chunks line up with the array's shards (or chunks) share no storage
    block and take no lock; others need a store with locks or conditional writes.

    Parameters
    ----------
    darr : dask.array.Array or array_like
        The data (anything else is made a dask array first).
    url_or_array : Array, str, os.PathLike, URL, dict or Store
        A zarrcore Array to write into, or the store where a new array is made at `path`.
    path : str, optional
        The new array's path in the store.
    region : sequence of slice, optional
        Where `darr` goes in the array: slices of the leading axes (the others whole);
        default: the whole array.
    overwrite : bool, default False
        Replace a node at `path`.
    compute : bool, default True
        Write now; False: return the write as a dask Delayed.
    storage_options : dict, optional
        Options of the store a URL names.
    **create_kwargs
        Options of `zarrcore.create_array` for the new array; `chunks` default to `darr`'s
        first chunks.

    Returns
    -------
    Array or dask.delayed.Delayed
        The Array written, or the delayed write when `compute` is False.
    """
    if not isinstance(darr, da.Array):
        darr = da.asarray(darr)  # type: ignore[no-untyped-call]  # (dask leaves it unannotated)
    if isinstance(url_or_array, Array):
        array = url_or_array
    else:
        create_kwargs.setdefault("chunks", tuple(c[0] if c else 1 for c in darr.chunks))
        if storage_options is not None:
            create_kwargs["storage_options"] = storage_options
        array = api.create_array(
            url_or_array,
            name=path,
            shape=darr.shape,
            dtype=darr.dtype,
            overwrite=overwrite,
            **create_kwargs,
        )
    delayed = store([darr], [array], [region], compute=compute)
    return array if compute else delayed
