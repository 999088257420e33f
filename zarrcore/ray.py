"""Ray Data datasets read from zarrcore arrays, and written to them.

`read_zarr` gives a `ray.data.Dataset` of one row per index along a chosen axis: the values
at that index (a tensor column; scalars for a 1-d array) and the index itself (the row's
coordinate). Its blocks hold whole shards (or chunks) along that axis, as many consecutive
ones as fit in Ray's target block size.
The driver opens the array once and puts it in Ray's object store: a read task carries a
reference to it and the rows it reads, never the metadata, so tasks pickle small whatever the
array, and each worker reads the store itself through zarrcore's engine (through the shared
decoded-chunk cache when the array keeps one).

`write_zarr` writes a dataset's rows at their indices, each task its own blocks. Tasks whose
rows share a shard (or chunk) merge their parts under the store's locks or conditional writes,
as every zarrcore write does (the engine's read-modify-write); a store with neither refuses
such a write (LockUnavailableError) rather than lose another task's rows. Writes into an
Icechunk fork session come back to the driver's session (`Store.merges_task_writes`), as
`zarrcore.dask`'s do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import ray
import ray.data
from ray.data import DataContext
from ray.data.block import Block, BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

from . import api
from .errors import ProcessLocalStoreError, ReadOnlyError, SelectionError, SettingValueError
from .metadata.types import StoreLike
from .nodes.array import Array

__all__ = [
    "BLOCKS",
    "DEFAULT_BLOCK_BYTES",
    "TASK_BYTES",
    "ZarrcoreDatasink",
    "ZarrcoreDatasource",
    "read_zarr",
    "write_zarr",
]

#: What a row's values are cut by: the stored objects (shards when sharded, else chunks), or
#: the chunks reads decode (inner chunks when sharded).
BLOCKS = ("shards", "chunks")
#: The most bytes of a Ray block of several storage blocks where Ray's context sets none.
DEFAULT_BLOCK_BYTES = 128 << 20
#: The fewest bytes a read task reads, the array's size permitting: Ray takes tens of
#: milliseconds to run a task (35 ms here), in which zarrcore reads tens of megabytes.
TASK_BYTES = 32 << 20


def _open(
    url_or_array: Array | StoreLike,
    path: str | None,
    storage_options: dict[str, Any] | None,
    mode: str,
    **kwargs: Any,
) -> Array:
    if isinstance(url_or_array, Array):
        return url_or_array
    return api.open_array(
        url_or_array, mode=mode, path=path, storage_options=storage_options, **kwargs
    )


def _axis(array: Array, axis: int) -> int:
    if not isinstance(axis, (int, np.integer)) or not -array.ndim <= axis < array.ndim:
        raise SettingValueError(
            f"axis: {axis!r} is no axis of {array.name!r} ({array.ndim} dimensions)"
        )
    return int(axis) % array.ndim


def _edges(array: Array, axis: int, blocks: str) -> list[int]:
    """Where the blocks along `axis` start, and the axis's end: the stored objects' edges
    (of a regular or a rectilinear grid), or those of the inner chunks each shard holds."""
    edges: list[int] = [0, *np.cumsum(array.chunk_grid.edge_lengths(axis)).tolist()]
    if blocks == "chunks" and array.shards:
        step = array.chunks[axis]
        edges = [e for lo, hi in zip(edges, edges[1:]) for e in range(lo, hi, step)] + edges[-1:]
    return edges


def _along(axis: int, where: slice | npt.NDArray[np.intp]) -> tuple[Any, ...]:
    """The selection of `where` on `axis`, every other axis whole."""
    return (slice(None),) * axis + (where,)


def _grouped(edges: list[int], row_bytes: int, most_bytes: int) -> list[int]:
    """The edges of `edges` that cut runs of consecutive blocks into groups of at most
    `most_bytes` (a block larger alone), the first and last kept."""
    kept = edges[:1]
    for lo, hi in zip(edges[1:], edges[2:]):
        if (hi - kept[-1]) * row_bytes > most_bytes:
            kept.append(lo)
    return kept + edges[-1:] if len(edges) > 1 else kept


class _ReadRows:
    """One read task's rows `start:stop` along `axis` of the array `ref` refers to, in Ray
    blocks of whole storage blocks (of `blocks`), as many consecutive ones as fit in
    `block_bytes`."""

    __slots__ = ("ref", "axis", "start", "stop", "blocks", "block_bytes", "column", "index")

    def __init__(
        self,
        ref: ray.ObjectRef[Array],
        axis: int,
        start: int,
        stop: int,
        blocks: str,
        block_bytes: int,
        column: str,
        index: str,
    ) -> None:
        self.ref, self.axis, self.start, self.stop = ref, axis, start, stop
        self.blocks, self.block_bytes = blocks, block_bytes
        self.column, self.index = column, index

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), tuple(getattr(self, name) for name in self.__slots__)

    def __call__(self) -> Iterator[Block]:
        array = ray.get(self.ref)
        edges = [
            self.start,
            *(e for e in _edges(array, self.axis, self.blocks) if self.start < e < self.stop),
            self.stop,
        ]
        row_bytes = array.nbytes // max(array.shape[self.axis], 1)
        cuts = _grouped(edges, row_bytes, self.block_bytes)[1:-1]
        for lo, hi in zip([self.start, *cuts], [*cuts, self.stop]):
            values = np.moveaxis(array[_along(self.axis, slice(lo, hi))], self.axis, 0)
            yield BlockAccessor.batch_to_block(
                {self.column: values, self.index: np.arange(lo, hi, dtype=np.int64)}
            )


class ZarrcoreDatasource(Datasource):
    """A zarrcore Array as Ray Data's source: rows along `axis`, read tasks that each read
    consecutive blocks (see `read_zarr`).

    Parameters
    ----------
    array : Array
        The array read.
    axis : int
        The axis whose indices are the rows.
    blocks : {"shards", "chunks"}
        The storage blocks along `axis` that a read task reads whole.
    column : str
        The column of the rows' values.
    index : str
        The column of the rows' indices along `axis`.
    block_bytes : int, optional
        The most bytes of a Ray block of several storage blocks (one larger is a block of
        its own); default: Ray's target block size (`DataContext.target_max_block_size`).
    task_bytes : int, default TASK_BYTES
        The fewest bytes a read task reads: a smaller array is read by fewer tasks than
        Ray's parallelism asks for.
    """

    def __init__(
        self,
        array: Array,
        axis: int = 0,
        blocks: str = "shards",
        column: str = "data",
        index: str = "index",
        block_bytes: int | None = None,
        task_bytes: int = TASK_BYTES,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # (Ray leaves it unannotated)
        self.axis = _axis(array, axis)
        if blocks not in BLOCKS:
            raise SettingValueError(f"blocks: {blocks!r} is neither of {BLOCKS}")
        if column == index:
            raise SettingValueError(f"column and index: both name the column {column!r}")
        self.blocks, self.column, self.index = blocks, column, index
        if block_bytes is None:
            block_bytes = DataContext.get_current().target_max_block_size or DEFAULT_BLOCK_BYTES
        self.block_bytes, self.task_bytes = int(block_bytes), max(int(task_bytes), 1)
        self.name = array.name
        self.edges = _edges(array, self.axis, blocks)
        self.row_bytes = array.nbytes // max(array.shape[self.axis], 1)
        #: The array, once, in Ray's object store: what each read task refers to.
        self.ref = ray.put(array)

    def get_name(self) -> str:
        return f"Zarrcore({self.name})"

    def estimate_inmemory_data_size(self) -> int:
        return self.row_bytes * self.edges[-1]

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        """The read tasks of at most `parallelism` runs of consecutive blocks, each of at
        least `task_bytes` where the array has them.

        Parameters
        ----------
        parallelism : int
            The most tasks.
        per_task_row_limit : int or None
            The most rows one task reads.
        data_context : Any
            Ray's data context (not needed here).

        Returns
        -------
        list of ReadTask
            One task per run of blocks.
        """
        nblocks = len(self.edges) - 1
        worth = -(-self.estimate_inmemory_data_size() // self.task_bytes)
        ntasks = max(1, min(parallelism, nblocks, worth)) if nblocks else 0
        tasks = []
        for t in range(ntasks):
            start = self.edges[t * nblocks // ntasks]
            stop = self.edges[(t + 1) * nblocks // ntasks]
            if per_task_row_limit is not None:
                stop = min(stop, start + per_task_row_limit)
            rows = stop - start
            tasks.append(
                ReadTask(
                    _ReadRows(
                        self.ref,
                        self.axis,
                        start,
                        stop,
                        self.blocks,
                        self.block_bytes,
                        self.column,
                        self.index,
                    ),
                    BlockMetadata(
                        num_rows=rows,
                        size_bytes=rows * self.row_bytes,
                        input_files=None,
                        exec_stats=None,
                    ),
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks


def read_zarr(
    url_or_array: Array | StoreLike,
    *,
    path: str | None = None,
    axis: int = 0,
    blocks: str = "shards",
    block_bytes: int | None = None,
    column: str = "data",
    index: str = "index",
    storage_options: dict[str, Any] | None = None,
    cache_bytes: int | None = None,
    shared_cache: bool = False,
    **read_args: Any,
) -> ray.data.Dataset:
    """A Ray Data dataset of a zarrcore array's rows along `axis`.

    Each row holds the array's values at one index along `axis` (column `column`: a tensor
    of the other axes' shape, a scalar for a 1-d array) and that index (column `index`).
    The driver opens the array once; read tasks carry a reference to it in Ray's object store
    and their rows, and read them through zarrcore's engine in the workers.

    Parameters
    ----------
    url_or_array : Array, str, os.PathLike, URL, dict or Store
        A zarrcore Array, or where one is (at `path`): a directory, a URL, a Store or another
        library's store (an Icechunk session's included).
    path : str, optional
        The array's path in the store.
    axis : int, default 0
        The axis the rows are taken along.
    blocks : {"shards", "chunks"}, default "shards"
        Where Ray's blocks are cut along `axis`: at the stored objects' boundaries (shards
        when sharded, else chunks), or at the chunks' (inner chunks when sharded).
    block_bytes : int, optional
        The most bytes of a Ray block of several of those (one larger is a block of its
        own); default: Ray's target block size (`DataContext.target_max_block_size`).
    column, index : str, default "data", "index"
        The names of the values' and the indices' columns.
    storage_options : dict, optional
        Options of the store a URL names.
    cache_bytes : int, optional
        The array's decoded-chunk cache budget (see `zarrcore.open_array`).
    shared_cache : bool, default False
        Keep that cache in memory the workers on one machine share: a chunk any of them
        decoded is a hit for all (Linux only; see `zarrcore.open_array`).
    **read_args
        Options of `ray.data.read_datasource` (`override_num_blocks`, `ray_remote_args`,
        `concurrency`...).

    Returns
    -------
    ray.data.Dataset
        Lazy: the reads run when the dataset is consumed.

    Raises
    ------
    SettingValueError
        `axis` is no axis of the array, `blocks` neither of its values, or `column` and
        `index` one name.
    """
    options = {} if cache_bytes is None else {"cache_bytes": cache_bytes}
    if shared_cache:
        options["shared_cache"] = shared_cache
    array = _open(url_or_array, path, storage_options, "r", **options)
    source = ZarrcoreDatasource(array, axis, blocks, column, index, block_bytes)
    dataset: ray.data.Dataset = ray.data.read_datasource(source, **read_args)
    return dataset


class ZarrcoreDatasink(Datasink[Any]):
    """Ray Data's sink into a zarrcore Array: each row's values at its index along `axis`
    (see `write_zarr`).

    Parameters
    ----------
    array : Array
        The array written (writable, in a store the workers share).
    axis : int
        The axis whose indices the rows' index column gives.
    column : str
        The column of the rows' values.
    index : str
        The column of the rows' indices along `axis`.
    """

    def __init__(
        self, array: Array, axis: int = 0, column: str = "data", index: str = "index"
    ) -> None:
        if array.read_only:
            raise ReadOnlyError(f"array {array.name!r} is read-only")
        store = array.store
        if store.process_local and not store.merges_task_writes:
            raise ProcessLocalStoreError(
                f"{store!r} (of {array.name!r}) keeps its data in this process only, but Ray "
                f"writes from tasks in other processes, on copies of it, whose writes would be "
                f"lost; write to a store the workers share (a directory, an object store)"
            )
        self.array, self.axis = array, _axis(array, axis)
        self.column, self.index = column, index

    def get_name(self) -> str:
        return f"Zarrcore({self.array.name})"

    def write(self, blocks: Iterable[Block], ctx: Any) -> Any:
        """Write the rows of `blocks`.

        Parameters
        ----------
        blocks : Iterable of Block
            The task's blocks of rows.
        ctx : Any
            Ray's task context (not needed here).

        Returns
        -------
        Any
            The changes of this task's copy of the store when it merges the writes of tasks
            (an Icechunk fork session), else None.
        """
        for block in blocks:
            found = BlockAccessor.for_block(block)
            if not found.num_rows():
                continue
            names = found.to_arrow().column_names
            for name, what in ((self.column, "column"), (self.index, "index")):
                if name not in names:
                    raise SettingValueError(
                        f"{what}: the dataset has no column {name!r} (it has {names})"
                    )
            batch = found.to_numpy([self.column, self.index])
            self._write_rows(np.asarray(batch[self.index]), np.asarray(batch[self.column]))
        store = self.array.store
        return store.task_changes() if store.merges_task_writes else None

    def _write_rows(self, rows: npt.NDArray[Any], values: npt.NDArray[Any]) -> None:
        """Write `values` (one per row) at indices `rows` along the axis, each run of
        consecutive indices as one slice."""
        if rows.dtype.kind not in "iu":
            raise SettingValueError(
                f"index: column {self.index!r} holds {rows.dtype}, not integers"
            )
        size = self.array.shape[self.axis]
        if rows.min() < 0 or rows.max() >= size:
            raise SelectionError(
                f"index: column {self.index!r} holds indices outside "
                f"0..{size - 1} of axis {self.axis} of {self.array.name!r}"
            )
        order = np.argsort(rows, kind="stable")
        rows, values = rows[order], values[order]
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        for lo, hi in zip([0, *breaks.tolist()], [*breaks.tolist(), len(rows)]):
            where = slice(int(rows[lo]), int(rows[hi - 1]) + 1)
            self.array[_along(self.axis, where)] = np.moveaxis(values[lo:hi], 0, self.axis)

    def on_write_complete(self, write_result: Any) -> None:
        store = self.array.store
        if store.merges_task_writes:
            store.merge_task_changes([c for c in write_result.write_returns if c is not None])


def write_zarr(
    dataset: ray.data.Dataset,
    url_or_array: Array | StoreLike,
    *,
    path: str | None = None,
    axis: int = 0,
    column: str = "data",
    index: str = "index",
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
    ray_remote_args: Any = None,
    **create_kwargs: Any,
) -> Array:
    """Write a Ray Data dataset's rows into a zarrcore Array, existing or new.

    Each row's values (column `column`) go to its index (column `index`) along `axis`, as
    `read_zarr` gives them. Tasks write their own blocks; those sharing a shard (or chunk)
    merge their rows under the store's locks or conditional writes, and a store with neither
    refuses such a write (LockUnavailableError) rather than lose rows.

    Parameters
    ----------
    dataset : ray.data.Dataset
        The rows.
    url_or_array : Array, str, os.PathLike, URL, dict or Store
        A zarrcore Array to write into, or the store where a new one is made at `path`.
    path : str, optional
        The array's path in the store.
    axis : int, default 0
        The axis the rows lie along.
    column, index : str, default "data", "index"
        The columns of the rows' values and indices.
    overwrite : bool, default False
        Replace a node at `path`.
    storage_options : dict, optional
        Options of the store a URL names.
    ray_remote_args : dict, optional
        Options of the write tasks (`ray.data.Dataset.write_datasink`'s).
    **create_kwargs
        Options of `zarrcore.create_array` for a new array; `shape` defaults to the number of
        rows along `axis` and the values' shape on the others, `dtype` to the values'.

    Returns
    -------
    Array
        The array written.

    Raises
    ------
    SettingValueError
        The dataset lacks the `column` or `index` column, or its indices are no integers.
    SelectionError
        An index lies outside the array along `axis`.
    ProcessLocalStoreError
        The array's store keeps its data in this process only (a memory store).
    """
    if isinstance(url_or_array, Array):
        array = url_or_array
    else:
        if "shape" not in create_kwargs or "dtype" not in create_kwargs:
            row = dataset.take(1)
            if not row:
                raise SettingValueError(
                    "shape: an empty dataset gives no shape; pass shape= and dtype="
                )
            if column not in row[0]:
                raise SettingValueError(
                    f"column: the dataset has no column {column!r} (it has {sorted(row[0])})"
                )
            value = np.asarray(row[0][column])
            shape = list(value.shape)
            shape.insert(axis % (value.ndim + 1), dataset.count())
            create_kwargs.setdefault("shape", tuple(shape))
            create_kwargs.setdefault("dtype", value.dtype)
        if storage_options is not None:
            create_kwargs["storage_options"] = storage_options
        array = api.create_array(url_or_array, name=path, overwrite=overwrite, **create_kwargs)
    dataset.write_datasink(
        ZarrcoreDatasink(array, axis, column, index), ray_remote_args=ray_remote_args
    )
    return array
