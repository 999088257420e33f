"""zarrcore as zarr-python's codec pipeline: zarr-python's arrays read and write through
zarrcore's engine.

    zarr.config.set({"codec_pipeline.path": "zarrcore.zarr_pipeline.ZarrcorePipeline"})

or `ZARR_CODEC_PIPELINE__PATH=zarrcore.zarr_pipeline.ZarrcorePipeline` (the `zarr.codec_pipeline`
entry point registers the class in every process). zarr-python hands `read` and `write` every
chunk (shard) of one selection at once; the pipeline puts the selection back together from
them and runs it as a zarrcore Array over the same store and metadata would: the same routes,
compiled batches, key locks and conditional writes (engine/).

What stays zarr-python's (`ZarrcorePipeline.zarr_pipeline`, a BatchedCodecPipeline):
`evolve_from_array_spec`, `validate`, `compute_encoded_size`, `decode` and `encode`, and the
pipelines zarr-python's ShardingCodec builds for inner chunks and indexes (`from_codecs`,
no array). `read` and `write` hand a request to it in the cases of FALLBACKS; with
`zarrcore.config.set(pipeline_fallback=False)` (ZARRCORE_PIPELINE_FALLBACK=0) they raise
PipelineFallbackError instead; `pipeline_status(array)` says whether zarrcore's pipeline runs
an array's requests, and which of them fell back. A write to a read-only store also goes to
it, which raises zarr-python's own error. A write of part of a chunk or shard to a store with
neither locks nor conditional writes (FsspecStore over s3fs, obstore's LocalStore) goes to it
with a RuntimeWarning: a concurrent writer's update to that chunk could be lost there.

zarr-python's settings keep their meaning: the array's write_empty_chunks and
read_missing_chunks (GetResult statuses, from one exists call per chunk, are exact when it is
False: zarr-python looks at them only then), and, as the own settings of the zarrcore Array
each request runs on (`_settings`; zarrcore.config is never changed, so arrays of different
settings in one process keep theirs): "async.concurrency" (io_concurrency),
"threading.max_workers" (num_threads when set: the threads a request runs on, at most
zarrcore.config.num_threads, the size of zarrcore's pool), the array's sharding coalesce
limits (coalesce_gap_bytes, coalesce_max_bytes) and its sharding codec's subchunk_write_order
(shard_write_order).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import math
import warnings
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

import numpy as np
from zarr.abc.codec import CodecPipeline
from zarr.core.array import Array as ZarrArray
from zarr.core.array import AsyncArray as ZarrAsyncArray
from zarr.core.array import create_codec_pipeline

__all__ = ["FALLBACKS", "PipelineStatus", "ZarrcorePipeline", "pipeline_status"]

try:
    from zarr.abc.codec import GetResult
    from zarr.core._json import json_to_buffer

    _ZARR_HAS_3_4 = True
except ImportError:
    # zarr-python before 3.4 loads every registered pipeline as well (its entry points), so
    # the module must import there: the pipeline itself refuses to be made (ZarrcorePipeline).
    _ZARR_HAS_3_4 = False
from zarr.core.buffer import cpu, default_buffer_prototype
from zarr.core.codec_pipeline import BatchedCodecPipeline
from zarr.core.config import config as zarr_config
from zarr.registry import register_pipeline
from zarr.storage import StorePath

from .errors import ForeignStoreError, PipelineFallbackError, StoreURLError, ZarrcoreError
from .metadata import ArrayMetadataV2
from .metadata.v3 import parse_metadata_v3
from .nodes.array import Array
from .nodes.node import read_metadata
from .runtime.config import config
from .storage import make_store
from .storage.zarr_python import ZarrPythonStore, of_store_class, place

if TYPE_CHECKING:
    from typing import Self

    from zarr.abc.codec import Codec
    from zarr.abc.store import ByteGetter, ByteSetter
    from zarr.abc.store import Store as ZarrStore
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer
    from zarr.core.dtype.wrapper import TBaseDType, TBaseScalar, ZDType
    from zarr.core.indexing import SelectorTuple
    from zarr.core.metadata import ArrayMetadata
    from zarr.core.metadata.v3 import ChunkGridMetadata

    from .metadata.grid import ChunkGrid
    from .storage import Store

    # (ByteGetter or ByteSetter, chunk spec, chunk selection, output selection, complete)
    Entry = tuple[Any, ArraySpec, Any, Any, bool]

_T = TypeVar("_T")

#: The cases `read` and `write` hand to zarr-python's pipeline, by the reason they give.
FALLBACKS = {
    "buffer": (
        "a buffer prototype other than zarr-python's CPU buffers (GPU or custom buffer "
        "classes), or an output or value that is no numpy array"
    ),
    "metadata": "metadata zarrcore cannot run: a codec or data type it does not know",
    "codec": (
        "a codec of a class other than zarr-python's or numcodecs' own (one "
        "registered in zarr-python's config, under a name zarrcore knows or not)"
    ),
    "store": (
        "byte getters other than StorePaths of the array's own store, or a store of no "
        "zarr.abc.store.Store class (a mock)"
    ),
    "selection": "a batch that is not one orthogonal or point selection's chunks",
    "fields": "a structured array read or written by fields",
    "write_order": "a write of shards whose subchunk_write_order is colexicographic",
    "unprotected": (
        "a write of part of a chunk or shard to a store with neither locks nor "
        "conditional writes (zarrcore refuses it; zarr-python writes it unprotected, "
        "with a RuntimeWarning)"
    ),
}


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _cpu(buffer: NDBuffer) -> np.ndarray | None:
    """The numpy array of a CPU buffer, else None."""
    array = buffer.as_ndarray_like()
    return array if isinstance(array, np.ndarray) else None


def _positions(sel: Any, length: int) -> np.ndarray:
    """The positions (int64, ascending or not) one axis' selection names: an int, a slice over
    `length`, a bool mask, or int arrays of any shape (np.ix_ forms)."""
    if isinstance(sel, slice):
        return np.arange(*sel.indices(length), dtype=np.int64)
    array = np.asarray(sel)
    if array.dtype == np.bool_:
        return np.flatnonzero(array)
    return array.reshape(-1).astype(np.int64, copy=False)


def _is_int(sel: Any) -> bool:
    return isinstance(sel, (int, np.integer)) and not isinstance(sel, (bool, np.bool_))


def _axis(positions: np.ndarray) -> slice | np.ndarray:
    """An axis' positions as a slice where they step evenly forward, else as they are."""
    n = len(positions)
    if n == 1:
        return slice(int(positions[0]), int(positions[0]) + 1)
    step = int(positions[1] - positions[0]) if n else 0
    if step > 0 and np.all(np.diff(positions) == step):
        return slice(int(positions[0]), int(positions[-1]) + 1, step)
    return positions


class _Selection(NamedTuple):
    """A selection of the whole array, as zarrcore's Array takes it: `kind` is "basic",
    "orthogonal" or "coordinate"."""

    kind: str
    selection: tuple[Any, ...]
    outside: bool  # it reaches past the array's shape as zarrcore has it
    stale: bool  # that shape does not fit it: outside, or chunks covered otherwise


def _orthogonal(
    origins: Sequence[tuple[int, ...]],
    coords: Sequence[tuple[int, ...]],
    batch: Sequence[Entry],
    out_shape: tuple[int, ...],
    drop_axes: tuple[int, ...],
    grid: ChunkGrid,
    writing: bool,
) -> _Selection | None:
    """The basic or orthogonal selection whose chunks' projections `batch` holds (the outer
    product of pieces per axis, as zarr-python's BasicIndexer, BlockIndexer and
    OrthogonalIndexer make them), or None when it is not one. `_Selection.outside` when a
    position lies past the array's shape as `grid` has it; `stale` also, `writing`, when a
    chunk zarr-python sees covered wholly (`is_complete_chunk`) is not by that shape, or
    the reverse."""
    first = batch[0]
    ndim = len(first[1].shape)
    dropped = [d in drop_axes or _is_int(first[2][d]) for d in range(ndim)]
    kept = [d for d in range(ndim) if not dropped[d]]
    if len(kept) != len(out_shape):
        return None
    unit = _unit_slices(origins, coords, batch, out_shape, dropped, grid, writing)
    if unit is not None:
        return unit
    axes: list[Any] = [None] * ndim
    for k, d in enumerate(kept):
        axes[d] = np.full(out_shape[k], -1, dtype=np.int64)
    seen: list[dict[int, bool]] = [{} for _ in range(ndim)]  # per axis: chunk -> covered
    outside = differs = False
    for (_, spec, chunk_sel, out_sel, complete), at, origin in zip(batch, coords, origins):
        if not isinstance(out_sel, tuple):  # (points: one flat output axis)
            out_sel = (out_sel,)
        if len(chunk_sel) != ndim or len(out_sel) != len(kept):
            return None
        for d in range(ndim):
            if at[d] in seen[d]:
                continue  # (an outer product: chunk at[d]'s piece of axis d is the same)
            local = _positions(chunk_sel[d], spec.shape[d])
            inside = min(grid.chunk_shape_at(at)[d], grid.shape[d] - origin[d])
            seen[d][at[d]] = writing and np.array_equal(np.unique(local), np.arange(inside))
            where = origin[d] + local
            outside = outside or bool(where.size and where.max() >= grid.shape[d])
            if dropped[d]:
                if len(where) != 1 or axes[d] is not None and axes[d] != int(where[0]):
                    return None
                axes[d] = int(where[0])
                continue
            k = kept.index(d)
            out = _positions(out_sel[k], out_shape[k])
            if len(out) != len(where):
                return None
            axes[d][out] = where
        differs = differs or writing and complete != all(seen[d][at[d]] for d in range(ndim))
    if len(batch) != math.prod(len(s) for s in seen):
        return None
    selection = []
    for d in range(ndim):
        if dropped[d]:
            selection.append(axes[d])
        elif np.any(axes[d] < 0):
            return None
        else:
            selection.append(_axis(axes[d]))
    basic = all(isinstance(s, (int, slice)) for s in selection)
    return _Selection(
        "basic" if basic else "orthogonal", tuple(selection), outside, outside or differs
    )


def _unit_slices(
    origins: Sequence[tuple[int, ...]],
    coords: Sequence[tuple[int, ...]],
    batch: Sequence[Entry],
    out_shape: tuple[int, ...],
    dropped: list[bool],
    grid: ChunkGrid,
    writing: bool,
) -> _Selection | None:
    """`_orthogonal`'s answer, from the ends of the pieces alone, when every chunk's
    projection is ints and unit-step slices (zarr-python's BasicIndexer and BlockIndexer
    without steps: the common read and write of a region); None when one is of another
    form, for `_orthogonal`'s general way."""
    ndim = len(dropped)
    nkept = len(out_shape)
    base: list[int | None] = [None] * ndim  # per axis: position of output 0 (or the int)
    pieces: list[dict[int, tuple[int, bool]]] = [{} for _ in range(ndim)]  # (length, whole)
    outside = differs = False
    for (_, _, chunk_sel, out_sel, complete), at, origin in zip(batch, coords, origins):
        if type(out_sel) is not tuple or len(chunk_sel) != ndim or len(out_sel) != nkept:
            return None
        whole = True
        k = 0
        for d in range(ndim):
            sel = chunk_sel[d]
            if dropped[d]:
                if not _is_int(sel):
                    return None
                start, stop, out_start = int(sel), int(sel) + 1, 0
            else:
                to = out_sel[k]
                k += 1
                if (
                    type(sel) is not slice
                    or type(to) is not slice
                    or sel.step not in (None, 1)
                    or to.step not in (None, 1)
                    or type(sel.start) is not int
                    or type(sel.stop) is not int
                    or type(to.start) is not int
                    or type(to.stop) is not int
                    or not 0 <= sel.start < sel.stop
                    or not 0 <= to.start < to.stop <= out_shape[k - 1]
                    or to.stop - to.start != sel.stop - sel.start
                ):
                    return None
                start, stop, out_start = sel.start, sel.stop, to.start
            piece = pieces[d].get(at[d])
            if piece is None:
                here = origin[d] + start - out_start
                if base[d] is None:
                    base[d] = here
                elif base[d] != here:
                    return None
                inside = min(grid.chunk_shape_at(at)[d], grid.shape[d] - origin[d])
                outside = outside or origin[d] + stop > grid.shape[d]
                piece = pieces[d][at[d]] = (stop - start, start == 0 and stop == inside)
            whole = whole and piece[1]
        differs = differs or writing and complete != whole
    if len(batch) != math.prod(len(p) for p in pieces):
        return None
    selection: list[int | slice] = []
    k = 0
    for d in range(ndim):
        at_zero = base[d]
        assert at_zero is not None  # (every axis has a piece: the batch is not empty)
        if dropped[d]:
            selection.append(at_zero)
            continue
        # (Pieces of distinct chunks cover distinct positions; put at one offset, in bounds,
        # their lengths summing to the output's, they cover it.)
        if sum(length for length, _ in pieces[d].values()) != out_shape[k]:
            return None
        selection.append(slice(at_zero, at_zero + out_shape[k]))
        k += 1
    return _Selection("basic", tuple(selection), outside, outside or differs)


def _points(
    origins: Sequence[tuple[int, ...]], batch: Sequence[Entry], npoints: int, shape: Sequence[int]
) -> _Selection | None:
    """The coordinate selection whose chunks' projections `batch` holds (zarr-python's
    CoordinateIndexer and MaskIndexer: per chunk its points, and where they go in the flat
    output), or None when it is not one."""
    ndim = len(batch[0][1].shape)
    points = np.full((ndim, npoints), -1, dtype=np.int64)
    for (_, _, chunk_sel, out_sel, _), origin in zip(batch, origins):
        out = _positions(out_sel[0] if isinstance(out_sel, tuple) else out_sel, npoints)
        for d in range(ndim):
            where = np.asarray(chunk_sel[d], dtype=np.int64)
            if where.shape != out.shape:
                return None
            points[d, out] = origin[d] + where
    if np.any(points < 0):
        return None
    outside = bool(npoints and np.any(points.max(axis=1) >= np.asarray(shape)))
    return _Selection("coordinate", tuple(points), outside, outside)


def _is_points(batch: Sequence[Entry], out_ndim: int) -> bool:
    """Whether `batch` holds the points of a coordinate selection: each chunk's selection one
    flat int array per axis (an orthogonal one puts arrays of two or more axes in np.ix_
    form); on 1-d arrays both are the same, read as orthogonal."""
    chunk_sel = batch[0][2]
    return (
        out_ndim == 1
        and len(chunk_sel) > 1
        and all(isinstance(s, np.ndarray) and s.ndim == 1 for s in chunk_sel)
    )


class _ArrayTarget:
    """The zarr-python array a pipeline serves: its metadata and store, opened as zarrcore's
    Array over the same store when first needed (one per path and settings)."""

    def __init__(self, metadata: ArrayMetadata, store: ZarrStore) -> None:
        self.metadata = metadata
        self.zarr_store = store
        self._store: Store | None = None
        self._root: Any = None  # (the zarr-python store's root `_store` was made for)
        self._foreign_codecs: list[str] | None = None
        self._zarr_metadata: Any = None
        self._arrays: dict[tuple[str, tuple[tuple[str, Any], ...]], Array] = {}
        #: The requests handed to zarr-python's pipeline, by reason (FALLBACKS), and why the
        #: last one was (pipeline_status).
        self.fallbacks: Counter[str] = Counter()
        self.last_fallback: str | None = None

    def __getstate__(self) -> tuple[ArrayMetadata, ZarrStore]:
        # (A copy in another process opens its own zarrcore objects.)
        return self.metadata, self.zarr_store

    def __setstate__(self, state: tuple[ArrayMetadata, ZarrStore]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    def store(self) -> Store:
        """zarrcore's store over the zarr-python store's data (storage.make_store); a zip
        zarr-python holds open for writing through the zarr-python store itself. Made anew
        when the zarr-python store has moved (LocalStore.move changes its root)."""
        root = place(self.zarr_store)
        if self._store is None or root != self._root:
            try:
                self._store = make_store(self.zarr_store, read_only=self.zarr_store.read_only)
            except StoreURLError:
                self._store = ZarrPythonStore(self.zarr_store)
            self._root = root
            self._arrays.clear()
        return self._store

    async def in_thread(self, run: Callable[[], _T]) -> _T:
        """`run()` on a thread; a failure of zarr-python's own store (which zarrcore reports
        as a StoreError naming the key, see ZarrPythonStore) raised as that store raised it,
        as zarr-python's pipeline lets it through."""
        try:
            return await asyncio.to_thread(run)
        except ForeignStoreError as error:
            found: BaseException | None = error
            while isinstance(found, ForeignStoreError):
                found = found.__cause__
            if found is None or isinstance(found, ZarrcoreError):
                raise
            raise found.with_traceback(found.__traceback__) from None

    def foreign_codecs(self) -> list[str]:
        """The classes of the array's codecs that are not zarr-python's or numcodecs' own
        (module.name): one registered in zarr-python's config in their place must run as it
        is. Empty when zarrcore may run them all."""
        if self._foreign_codecs is None:
            codecs: list[Any] = []
            pending = [
                *getattr(self.metadata, "codecs", ()),
                *(getattr(self.metadata, "filters", None) or ()),
                getattr(self.metadata, "compressor", None),
            ]
            while pending:
                codec = pending.pop()
                if codec is None:
                    continue
                codecs.append(codec)
                # (the sharding codec's inner and index chains)
                pending += [*getattr(codec, "codecs", ()), *getattr(codec, "index_codecs", ())]
            self._foreign_codecs = [
                f"{type(c).__module__}.{type(c).__qualname__}"
                for c in codecs
                if type(c).__module__.partition(".")[0] not in ("zarr", "numcodecs")
            ]
        return self._foreign_codecs

    def unrunnable(self, where: str) -> _Fallback | None:
        """Why zarrcore runs none of the array's requests (its codecs, its store's class, its
        metadata), or None."""
        foreign = self.foreign_codecs()
        if foreign:
            return _Fallback("codec", ", ".join(foreign), where)
        if not of_store_class(self.zarr_store):
            return _Fallback("store", "the store is of no zarr.abc.store.Store class", where)
        try:
            self.parsed()
        except ZarrcoreError as error:
            return _Fallback("metadata", str(error), where)
        return None

    def parsed(self) -> Any:
        """zarrcore's parse of the array's metadata document (MetadataError and others when
        it cannot run it)."""
        if self._zarr_metadata is None:
            # (Not to_buffer_dict: it refuses documents zarr-python's config would not store
            # now, which the array was opened or created with.)
            doc = json.loads(
                json_to_buffer(
                    self.metadata.to_dict(), prototype=default_buffer_prototype()
                ).to_bytes()
            )
            if self.metadata.zarr_format == 3:
                self._zarr_metadata = parse_metadata_v3(doc)
            else:
                self._zarr_metadata = ArrayMetadataV2.from_json(doc, doc.pop("attributes", None))
        return self._zarr_metadata

    def reread(self, path: str) -> None:
        """Take the array's metadata from its stored document: zarr-python changed its own
        in place (a resize or an append) since the pipeline was made."""
        self._zarr_metadata = read_metadata(self.store(), path, self.metadata.zarr_format)
        self._arrays.clear()

    def array(self, path: str, settings: dict[str, Any]) -> Array:
        """zarrcore's Array at `path` with the own settings `settings` (`_settings`); missing
        chunks read as fill (the pipeline reports them: zarr-python decides)."""
        key = (path, tuple(sorted(settings.items())))
        self.store()  # (forgets the arrays when the zarr-python store has moved)
        found = self._arrays.get(key)
        if found is None:
            metadata = self.parsed()
            settings = {**settings, "read_missing_chunks": True}
            found = Array(self.store(), path, metadata, self.zarr_store.read_only, settings)
            engine = found.chunk_engine
            if engine.sharding is not None and engine.grid.is_regular:
                # zarr-python rewrites only the inner chunks a write touches, in a shard at
                # the array's end too: what lies past the shape (left by a shrinking resize)
                # stays. Seen as reaching to the end of its last shards, the array has no
                # shard zarrcore would write whole without merging what is stored.
                ends = tuple(-(-n // c) * c for n, c in zip(metadata.shape, engine.chunk_shape))
                found = Array(
                    self.store(),
                    path,
                    metadata.evolve(shape=ends),
                    self.zarr_store.read_only,
                    settings,
                )
            self._arrays[key] = found
        return found


class _Fallback(NamedTuple):
    """Why zarrcore does not run a request: `reason` (a key of FALLBACKS), what in particular
    (`cause`: the codec, the store...; may be empty) and the array it is of (`where`)."""

    reason: str
    cause: str
    where: str

    def why(self) -> str:
        cause = f": {self.cause}" if self.cause else ""
        return f"{FALLBACKS[self.reason]}{cause}"

    def message(self) -> str:
        return f"zarrcore's pipeline cannot run this request of {self.where} ({self.why()})"


class _Request(NamedTuple):
    """One read or write as zarrcore runs it."""

    array: Array
    selection: _Selection
    keys: list[str]  # the store keys of the batch's chunks, in its order


def _split_key(
    array_path: str | None, key: str, layout: tuple[str, str, bool], ndim: int
) -> tuple[str, tuple[int, ...]] | None:
    """(array path, chunk coordinates) of the store key of a chunk; None when `key` is no
    chunk key of that layout (or not below `array_path`, when given)."""
    head, sep, lead = layout
    parts = (1 if sep != "/" else max(ndim, 1)) + (
        1 if head and lead and sep == "/" and ndim else 0
    )
    pieces = key.split("/")
    if len(pieces) < parts:
        return None
    path, name = "/".join(pieces[:-parts]), "/".join(pieces[-parts:])
    if array_path is not None and path != array_path:
        return None
    if head:
        if not name.startswith(head):
            return None
        name = name[len(head) :]
        if ndim == 0:
            return (path, ()) if not name else None
        if lead:
            if not name.startswith(sep):
                return None
            name = name[len(sep) :]
    elif ndim == 0:
        return (path, ()) if name == "0" else None
    try:
        coords = tuple(int(c) for c in name.split(sep))
    except ValueError:
        return None
    return (path, coords) if len(coords) == ndim else None


class ZarrcorePipeline(CodecPipeline):
    """zarr-python's CodecPipeline run by zarrcore (see the module's documentation)."""

    def __init__(self, zarr_pipeline: CodecPipeline, target: _ArrayTarget | None = None) -> None:
        if not _ZARR_HAS_3_4:
            raise ZarrcoreError(
                f"zarrcore's codec pipeline needs zarr-python 3.4 or later, "
                f"not {importlib.metadata.version('zarr')}"
            )
        #: zarr-python's own pipeline of the same codecs, which does what zarrcore does not.
        self.zarr_pipeline = zarr_pipeline
        self._target = target

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.zarr_pipeline == self.zarr_pipeline

    def __hash__(self) -> int:
        return hash((type(self), self.zarr_pipeline))

    def __repr__(self) -> str:
        return f"ZarrcorePipeline({self.zarr_pipeline!r})"

    def __iter__(self) -> Iterator[Codec]:
        yield from cast("Iterable[Codec]", self.zarr_pipeline)

    # -- what zarr-python's own pipeline does -----------------------------------------------
    @classmethod
    def from_codecs(cls, codecs: Iterable[Codec], *, batch_size: int | None = None) -> Self:
        return cls(BatchedCodecPipeline.from_codecs(codecs, batch_size=batch_size))

    @classmethod
    def from_array_metadata_and_store(cls, array_metadata: ArrayMetadata, store: ZarrStore) -> Self:
        # zarr-python's pipeline as it builds one without a store (from_codecs, evolved).
        built = create_codec_pipeline(array_metadata)
        base = built.zarr_pipeline if isinstance(built, ZarrcorePipeline) else built
        return cls(base, _ArrayTarget(array_metadata, store))

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Self:
        return type(self)(self.zarr_pipeline.evolve_from_array_spec(array_spec), self._target)

    @property
    def supports_partial_decode(self) -> bool:
        return self.zarr_pipeline.supports_partial_decode

    @property
    def supports_partial_encode(self) -> bool:
        return self.zarr_pipeline.supports_partial_encode

    def validate(
        self,
        *,
        shape: tuple[int, ...],
        dtype: ZDType[TBaseDType, TBaseScalar],
        chunk_grid: ChunkGridMetadata,
    ) -> None:
        self.zarr_pipeline.validate(shape=shape, dtype=dtype, chunk_grid=chunk_grid)

    def compute_encoded_size(self, byte_length: int, array_spec: ArraySpec) -> int:
        return self.zarr_pipeline.compute_encoded_size(byte_length, array_spec)

    async def decode(
        self, chunk_bytes_and_specs: Iterable[tuple[Buffer | None, ArraySpec]]
    ) -> Iterable[NDBuffer | None]:
        return await self.zarr_pipeline.decode(chunk_bytes_and_specs)

    async def encode(
        self, chunk_arrays_and_specs: Iterable[tuple[NDBuffer | None, ArraySpec]]
    ) -> Iterable[Buffer | None]:
        return await self.zarr_pipeline.encode(chunk_arrays_and_specs)

    # -- reads and writes by zarrcore ---------------------------------------------------------
    async def read(
        self,
        batch_info: Iterable[tuple[ByteGetter, ArraySpec, SelectorTuple, SelectorTuple, bool]],
        out: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> tuple[GetResult, ...]:
        batch = list(batch_info)
        if not batch:
            return ()
        if self._target is None:  # (the pipelines of zarr-python's sharding codec)
            return await self.zarr_pipeline.read(batch, out, drop_axes)
        target = _cpu(out)
        missing = batch[0][1].config.read_missing_chunks is False

        def run() -> tuple[GetResult, ...] | _Fallback:
            request = self._request(batch, out.shape, drop_axes, target, target)
            if isinstance(request, _Fallback):
                return request
            assert target is not None  # (as `_request` saw)
            return _read(request, target, missing)

        # (On a thread: the stores' blocking calls run their coroutines on zarr-python's
        # event loop, which runs this one.)
        done = await self._target.in_thread(run)
        if isinstance(done, _Fallback):
            return await self._fall_back(done, self.zarr_pipeline.read(batch, out, drop_axes))
        return done

    async def write(
        self,
        batch_info: Iterable[tuple[ByteSetter, ArraySpec, SelectorTuple, SelectorTuple, bool]],
        value: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        batch = list(batch_info)
        if not batch:
            return
        first = batch[0][0]
        if self._target is None or isinstance(first, StorePath) and first.store.read_only:
            # (zarr-python's sharding pipelines; a read-only store raises zarr-python's error)
            await self.zarr_pipeline.write(batch, value, drop_axes)
            return
        data = _cpu(value)

        def run() -> _Fallback | None:
            request = self._request(batch, _selection_shape(batch, value), drop_axes, data, None)
            if isinstance(request, _Fallback):
                return request
            assert data is not None  # (as `_request` saw)
            _write(request, data)
            return None

        fallback = await self._target.in_thread(run)
        if fallback is not None:
            await self._fall_back(fallback, self.zarr_pipeline.write(batch, value, drop_axes))

    async def _fall_back(self, fallback: _Fallback, call: Coroutine[Any, Any, _T]) -> _T:
        """`call` (zarr-python's pipeline doing the request), unless config says to raise;
        a write it makes unprotected warns."""
        if not config.pipeline_fallback:
            call.close()
            raise PipelineFallbackError(
                f"{fallback.message()}, and zarrcore.config.pipeline_fallback is False: "
                f"zarrcore.config.set(pipeline_fallback=True) lets zarr-python's own pipeline "
                f"run it"
            )
        assert self._target is not None  # (only requests of an array fall back)
        self._target.fallbacks[fallback.reason] += 1
        self._target.last_fallback = fallback.message()
        if fallback.reason == "unprotected":
            warnings.warn(
                f"zarr-python's pipeline writes part of a chunk or shard of "
                f"{self._target.zarr_store!r} unprotected: the store has neither locks nor "
                f"conditional writes, so a concurrent writer's update to the same chunk could "
                f"be lost; zarrcore.config.set(pipeline_fallback=False) raises instead, "
                f"unsafe_partial_writes=True writes it by zarrcore",
                RuntimeWarning,
                stacklevel=2,
            )
        return await call

    def _request(
        self,
        batch: list[Entry],
        out_shape: tuple[int, ...] | None,
        drop_axes: tuple[int, ...],
        data: np.ndarray | None,
        out: np.ndarray | None,
    ) -> _Request | _Fallback:
        """zarrcore's request of `batch`, or why it has none."""
        assert self._target is not None
        store = self._target.zarr_store
        where = f"the array of chunk {batch[0][0].path!r} in {store!r}"
        spec = batch[0][1]
        prototype = spec.prototype
        if data is None:
            return _Fallback("buffer", "the data is no numpy array", where)
        if prototype.buffer is not cpu.Buffer or prototype.nd_buffer is not cpu.NDBuffer:
            return _Fallback(
                "buffer",
                f"{_class_name(prototype.buffer)} and {_class_name(prototype.nd_buffer)}",
                where,
            )
        unrunnable = self._target.unrunnable(where)
        if unrunnable is not None:
            return unrunnable
        if not all(isinstance(e[0], StorePath) and e[0].store is store for e in batch):
            return _Fallback("store", "a chunk's byte getter is no StorePath of that store", where)
        order = _SHARD_WRITE_ORDERS.get(_subchunk_write_order(self._target.metadata), "C")
        if out is None and order is None:
            return _Fallback("write_order", "", where)
        parsed = self._target.parsed()  # (`unrunnable` saw it parse)
        ndim = len(parsed.shape)
        split = _split_key(None, batch[0][0].path, parsed.key_layout, ndim)
        if split is None or out_shape is None:
            return _Fallback("selection", "", where)
        path = split[0]
        where = f"array {path or '/'!r} in {store!r}"
        coords = [split[1]]
        for entry in batch[1:]:
            found = _split_key(path, entry[0].path, parsed.key_layout, ndim)
            if found is None:
                return _Fallback("selection", f"chunk {entry[0].path!r}", where)
            coords.append(found[1])
        points = _is_points(batch, len(out_shape))
        for attempt in range(2):
            try:
                if attempt:
                    self._target.reread(path)
                array = self._target.array(path, _settings(spec, order or "C"))
            except ZarrcoreError as error:
                return _Fallback("metadata", str(error), where)
            grid = array.chunk_engine.grid
            origins = [grid.origin(c) for c in coords]
            selection = (
                _points(origins, batch, out_shape[0], grid.shape)
                if points
                else _orthogonal(origins, coords, batch, out_shape, drop_axes, grid, out is None)
            )
            if selection is None or not selection.stale:
                break
        # (Covered chunks: zarrcore decides them itself by the shape stored now.)
        if selection is None or selection.outside:
            return _Fallback("selection", "", where)
        if array.dtype.names is not None and data.dtype.names != array.dtype.names:
            # (fields of another byte order are cast)
            return _Fallback(
                "fields",
                f"data of dtype {data.dtype}, the array's fields {array.dtype.names}",
                where,
            )
        zc_store = array.store
        if out is None and not (
            zc_store.supports_locks
            or zc_store.supports_conditional_writes
            or config.unsafe_partial_writes
        ):
            # (A shard reaching past the array's end is written in part, see `array`.)
            shape = self._target.parsed().shape
            ends = (np.asarray(origins) + array.chunk_engine.chunk_shape > shape).any(axis=1)
            if not all(e[4] for e in batch) or array.shape != shape and ends.any():
                return _Fallback("unprotected", repr(zc_store), where)
        return _Request(array, selection, [e[0].path for e in batch])


class PipelineStatus(NamedTuple):
    """What runs a zarr-python array's reads and writes (pipeline_status)."""

    #: zarrcore's pipeline runs the array's requests: zarr-python's config selects it, and
    #: the array's codecs, store and metadata are ones zarrcore runs.
    active: bool
    #: The class of the array's codec pipeline (module.name).
    pipeline: str
    #: Why zarrcore's pipeline runs none of the array's requests; None when `active`.
    reason: str | None
    #: The array's requests zarrcore's pipeline handed to zarr-python's own so far, by their
    #: reason (a key of FALLBACKS), and why the last of them was.
    fallbacks: dict[str, int]
    last_fallback: str | None


def pipeline_status(array: ZarrArray[Any] | ZarrAsyncArray[Any]) -> PipelineStatus:
    """Whether zarrcore's pipeline runs the reads and writes of a zarr-python array, and why
    not; and which of its requests fell back to zarr-python's own pipeline so far.

    Parameters
    ----------
    array : zarr.Array or zarr.AsyncArray
        An array of zarr-python.

    Returns
    -------
    PipelineStatus

    Raises
    ------
    TypeError
        `array` is not a zarr-python array (a zarrcore Array needs no pipeline).
    """
    if not isinstance(array, (ZarrArray, ZarrAsyncArray)):
        raise TypeError(
            f"pipeline_status takes a zarr-python Array or AsyncArray, not "
            f"{_class_name(type(array))}"
        )
    async_array = array.async_array if isinstance(array, ZarrArray) else array
    pipeline = async_array.codec_pipeline
    name = _class_name(type(pipeline))
    if not isinstance(pipeline, ZarrcorePipeline):
        return PipelineStatus(
            False,
            name,
            f"zarr-python's config selects {name} "
            f"(codec_pipeline.path), not {_class_name(ZarrcorePipeline)}",
            {},
            None,
        )
    target = pipeline._target
    assert target is not None  # (an array's pipeline is made with its store)
    unrunnable = target.unrunnable(f"array {async_array.path!r} in {async_array.store!r}")
    return PipelineStatus(
        unrunnable is None,
        name,
        None if unrunnable is None else unrunnable.why(),
        dict(target.fallbacks),
        target.last_fallback,
    )


def _settings(spec: ArraySpec, shard_write_order: str) -> dict[str, Any]:
    """The own settings (Array.with_config's) of the zarrcore Array that runs a request of
    the chunk spec `spec`, with zarr-python's meanings: the array's write_empty_chunks,
    "async.concurrency" (requests in flight), "threading.max_workers" (threads, when set),
    the array's sharding coalesce limits and its sharding codec's subchunk_write_order."""
    workers = zarr_config.get("threading.max_workers")
    return {
        "write_empty_chunks": bool(spec.config.write_empty_chunks),
        "shard_write_order": shard_write_order,
        "io_concurrency": int(zarr_config.get("async.concurrency")),
        "num_threads": None if workers is None else int(workers),
        "coalesce_gap_bytes": int(spec.config.sharding_coalesce_max_gap_bytes),
        "coalesce_max_bytes": int(spec.config.sharding_coalesce_max_bytes),
    }


# zarr-python's subchunk_write_order: zarrcore's config.shard_write_order, None where it has none.
_SHARD_WRITE_ORDERS: dict[str | None, str | None] = {
    "morton": "morton",
    "lexicographic": "C",
    "unordered": "C",
    "colexicographic": None,
}


def _subchunk_write_order(metadata: ArrayMetadata) -> str | None:
    """The subchunk_write_order of an array's sharding codec (zarr-python 3.4's, a setting
    not stored), None when it is not sharded."""
    codecs: Sequence[Any] = getattr(metadata, "codecs", ())  # (v2 metadata has none)
    return getattr(codecs[0], "subchunk_write_order", None) if len(codecs) == 1 else None


def _selection_shape(batch: list[Entry], value: NDBuffer) -> tuple[int, ...]:
    """The shape of the selection a write's `batch` covers, as zarr-python's indexer has it:
    that of `value`, unless it is a scalar or has axes of length 1 (zarr-python broadcasts
    such a value, as numpy does); then the batch's output selections' reach per axis (they
    cover the selection) where `value` broadcasts to it."""
    given = tuple(value.shape)
    if given and 1 not in given:
        return given
    shape: list[int] = []
    for entry in batch:
        sels = entry[3] if isinstance(entry[3], tuple) else (entry[3],)
        shape += [0] * (len(sels) - len(shape))
        for k, sel in enumerate(sels):
            if isinstance(sel, slice):
                reach = len(range(sel.start or 0, sel.stop, sel.step or 1)) and (
                    range(sel.start or 0, sel.stop, sel.step or 1)[-1] + 1
                )
            else:
                reach = int(np.max(sel)) + 1 if np.size(sel) else 0
            shape[k] = max(shape[k], reach)
    try:
        fits = np.broadcast_shapes(given, tuple(shape)) == tuple(shape)
    except ValueError:
        fits = False
    return tuple(shape) if fits else given  # (else zarr-python's pipeline says what is wrong)


def _read(request: _Request, out: np.ndarray, report_missing: bool) -> tuple[GetResult, ...]:
    """Read `request` into `out`; each chunk's GetResult ("missing" ones only when
    `report_missing`: zarr-python looks at them only then)."""
    array, (kind, selection, *_), keys = request
    present = array.chunk_engine.stored(keys) if report_missing else [True] * len(keys)
    read = {
        "basic": array.get_basic_selection,
        "orthogonal": array.get_orthogonal_selection,
        "coordinate": array.get_coordinate_selection,
    }[kind]
    if out.dtype == array.dtype:
        read(selection, out=out)
    else:  # (strings: numpy's StringDType in zarr-python, objects here)
        out[...] = read(selection)
    return tuple(GetResult(status="present" if p else "missing") for p in present)


def _write(request: _Request, value: np.ndarray) -> None:
    array, (kind, selection, *_), _ = request
    if kind == "coordinate" and value.ndim > 1:
        value = value.reshape(-1)
    {
        "basic": array.set_basic_selection,
        "orthogonal": array.set_orthogonal_selection,
        "coordinate": array.set_coordinate_selection,
    }[kind](selection, value)


# (Also registered by the `zarr.codec_pipeline` entry point, for processes that do not import
# this module.)
register_pipeline(ZarrcorePipeline)
