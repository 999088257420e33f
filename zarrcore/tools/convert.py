"""convert: rewrite an array or a hierarchy in another format, chunking, sharding, codecs or
data type, streaming with bounded memory, resumable after a kill.

How it runs: the destination's metadata is planned whole first (in memory, so every option is
checked before anything is written). A state document (CONVERT_STATE_KEY) at the destination
root names the options; it is written before anything else and deleted last, so while it
exists the destination is an unfinished conversion. Each array is then written by blocks:
whole destination objects (shards, or chunks), grown to line up with the source chunks as far
as the memory limit allows, each read from the source region it covers and written in one go;
several blocks are in flight on `config.num_threads` threads. Every stored object is written
by an atomic rename, so a kill leaves each object old, new or absent, never torn.

`resume=True` keeps the state and metadata (options left out are taken from the state, those
given must match it; a zip keeps no state, so there they are given again), and rewrites only the
destination objects that are absent (and should hold data), do not decode, or differ from the
source: a destination object that decodes to the source's values is complete.

When an array keeps its chunk grid, data type, fill value and encoding (format 2 to 3 keeps it
when the codecs map one to one), its stored objects are copied byte for byte, without decoding.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .. import kernels
from ..codecs import codec_from_json
from ..codecs.base import ArrayArrayCodec, ArrayBytesCodec, Codec
from ..errors import InexactConversionError, MetadataError, NodeExistsError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..metadata.grid import rectilinear_spelling
from ..nodes.array import Array
from ..nodes.consolidated import V2_KEY
from ..nodes.consolidation import consolidate_metadata
from ..nodes.creation import create_array
from ..nodes.group import Group, create_group
from ..nodes.node import METADATA_KEYS, dump_json, join, load_json, node_exists, parent_paths
from ..nodes.streaming import (
    DEFAULT_MEMORY,
    BlockBuffers,
    ChunkKeys,
    Region,
    block_cost,
    block_edges,
    plan_block,
    same_bits,
    stores_alike,
)
from ..runtime.concurrency import run_bounded
from ..runtime.config import config
from ..storage import MemoryStore
from .codec_forms import (
    CodecJSON,
    parse_codecs,
    parse_compressor,
    v2_form,
    v3_codecs,
    with_compressor,
)
from .exact import comparable, converted_exactly
from .hierarchy import CONVERT_STATE_KEY, array_dimensions, place, source_and_dest, walk
from .progress import Progress, counted, object_word, parse_bytes

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..metadata.types import CodecLike, NodeMetadata, StoreLike
    from ..storage import Store

__all__ = ["ConvertReport", "convert"]

#: What a task did: (array bytes covered, objects written, objects kept).
_Done = tuple[int, int, int]
#: A destination object of a block: (its grid coords, its region).
_Unit = tuple[tuple[int, ...], Region]


@dataclasses.dataclass
class ConvertReport:
    """What a conversion did."""

    arrays: int = 0
    groups: int = 0
    raw_arrays: int = 0  # arrays whose stored objects were copied without decoding
    objects_written: int = 0
    objects_kept: int = 0  # on resume: already complete
    nbytes: int = 0  # array bytes covered

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict.

        Returns
        -------
        dict
        """
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        return (
            f"converted {counted(self.arrays, 'array')} ({self.raw_arrays} copied raw) and "
            f"{counted(self.groups, 'group')}, {counted(self.nbytes, 'byte')}: "
            f"{counted(self.objects_written, 'object')} written, {self.objects_kept} kept"
        )


def convert(
    source: StoreLike | Array | Group,
    dest: StoreLike,
    *,
    source_path: str = "",
    dest_path: str = "",
    zarr_format: int | None = None,
    chunks: Sequence[int] | Mapping[str, Sequence[int]] | None = None,
    shards: Sequence[int] | Mapping[str, Any] | bool | None = None,
    codecs: Sequence[CodecLike] | str | None = None,
    compressor: CodecLike | None = None,
    dtype: npt.DTypeLike | None = None,
    dimension_names: Sequence[str | None] | Mapping[str, Any] | None = None,
    memory: int | str = DEFAULT_MEMORY,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool | None = None,
    source_storage_options: dict[str, Any] | None = None,
    dest_storage_options: dict[str, Any] | None = None,
) -> ConvertReport:
    """Convert the array or hierarchy at `source_path` of `source` (a directory, dict, Store,
    Array or Group) into `dest` at `dest_path`.

    Options left None keep the source's: `zarr_format` 2 or 3; `chunks` (inner chunks when
    sharded); `shards` a shape, or False for none; `codecs` a v3 codec list (JSON text too);
    `compressor` a short form (`zstd:5`, `blosc:lz4:5`, `gzip:6`, `none`) or codec JSON,
    replacing the compressors only; `dtype` only where every value (and the fill value)
    converts exactly, checked block by block by tools.exact's rules, whatever numpy's casting
    table says (int64 to float64 refuses 2**53 + 1; datetime64[s] to [ns] a date past 2262);
    `dimension_names` (default: a v2 array's `_ARRAY_DIMENSIONS`). `chunks`, `shards`, `dtype`
    and `dimension_names` may be dicts from array path (relative to `source_path`) to value.
    `memory` bounds the data held at once (bytes or "1GiB"). `source_storage_options` and
    `dest_storage_options` configure URLs. Returns a ConvertReport.

    Parameters
    ----------
    source : str, os.PathLike, URL, dict, Store, Array or Group
        Where to convert from (an Array or Group: below its path).
    dest : str, os.PathLike, URL, dict or Store
        Where to write the converted array or hierarchy.
    source_path, dest_path : str, optional
        Paths below `source` and `dest`.
    zarr_format, chunks, shards, codecs, compressor, dtype, dimension_names : optional
        The new settings, as above; None keeps the source's.
    memory : int or str, optional
        The bound on data held at once: bytes, or text such as "512MiB".
    resume : bool, optional
        Finish an interrupted conversion, keeping every destination object that already
        decodes to the source's values. Options left None are the ones it was started with
        (from its state document); those given must be the same.
    overwrite : bool, optional
        Replace a node (or an unfinished conversion) at the destination.
    progress : bool or None, optional
        Show a progress line on stderr (None: when stderr is a terminal).
    source_storage_options, dest_storage_options : dict, optional
        Options of the stores that URLs `source` and `dest` name.

    Returns
    -------
    ConvertReport

    Raises
    ------
    InexactConversionError
        A `dtype` that does not hold a value (or the fill value) exactly, naming the array,
        both data types and the first such value with its index; or one whose values cannot
        be compared with the source's (numbers and datetimes). Also on `resume`.
    ValueError
        Overlapping source and destination, options that do not fit the source (chunks that
        do not divide the shards), or `resume` with options other than the unfinished
        conversion's.
    NodeExistsError
        Something exists at the destination and neither `overwrite` nor `resume` is given.
    MetadataError
        Codecs or metadata that cannot be written in the target format.
    """
    src_store, src_path, dst_store, dst_path = source_and_dest(
        source,
        source_path,
        source_storage_options,
        dest,
        dest_path,
        dest_storage_options,
        overwrite,
    )
    if src_store == dst_store and _overlap(src_path, dst_path):
        raise ValueError(
            f"source and destination overlap: {place(src_store, src_path)} and "
            f"{place(dst_store, dst_path)}"
        )
    # Annotated: inferring the literal's value type from `dtype`'s union takes mypy 10 s.
    options: dict[str, Any] = {
        "zarr_format": zarr_format,
        "chunks": chunks,
        "shards": shards,
        "codecs": codecs,
        "compressor": compressor,
        "dtype": None if dtype is None else str(np.dtype(dtype)),
        "dimension_names": dimension_names,
    }
    options = json.loads(json.dumps(options, default=_jsonable))
    state_key = join(dst_path, CONVERT_STATE_KEY)
    # A store that cannot delete the state at the end (a zip) keeps none: resuming there
    # checks the destination's metadata against the options alone.
    keeps_state = dst_store.supports_deletes
    existing = load_json(dst_store, state_key) if keeps_state else None
    if resume and existing is not None:
        # The options left out are the unfinished conversion's; those given must be its own.
        resumed = _resumed_options(options, existing.get("options"), state_key)
        zarr_format, chunks, shards, codecs, compressor, dtype, dimension_names = (
            resumed[name] for name in _OPTION_NAMES
        )
        options = resumed
    # A quarter is headroom: the interpreter, the libraries and buffers in flight.
    budget = parse_bytes(memory) * 3 // 4
    plan = _Plan(
        src_store,
        src_path,
        dst_path,
        zarr_format,
        chunks,
        shards,
        codecs,
        compressor,
        dtype,
        dimension_names,
    )
    state = {"source": f"{src_store!r}/{src_path}", "options": options}
    if resume and (existing is not None or not keeps_state and node_exists(dst_store, dst_path)):
        plan.check_written(dst_store)
    else:
        if existing is not None or node_exists(dst_store, dst_path):
            if not overwrite:
                what = (
                    "an unfinished conversion: finish it with resume=True"
                    if existing is not None
                    else "a node"
                )
                raise NodeExistsError(
                    f"{place(dst_store, dst_path)} holds {what}; replace it with overwrite=True"
                )
            dst_store.delete_prefix(dst_path) if dst_path else _clear(dst_store)
        if keeps_state:
            dst_store.set(state_key, dump_json(state))
        plan.write(dst_store)
    report = ConvertReport(groups=len(plan.groups), arrays=len(plan.arrays))
    jobs = [
        _ArrayJob(src, Array(dst_store, path, meta), budget, resume)
        for src, (path, meta) in plan.arrays
    ]
    report.raw_arrays = sum(job.raw for job in jobs)
    largest = max([j.task_bytes for j in jobs] + [1])
    in_flight = max(1, min(config.num_threads, budget // largest))
    buffers = BlockBuffers(in_flight)
    total = sum(j.src.nbytes for j in jobs)
    count = sum(j.count for j in jobs)

    def done(task: Any, result: tuple[int, int, int]) -> None:
        nbytes, written, kept = result
        report.nbytes += nbytes
        report.objects_written += written
        report.objects_kept += kept
        bar.update(nbytes, written + kept)

    word = object_word(bool(j.dst.shards) for j in jobs)
    with Progress(total, count, "convert", progress, chunk_word=word) as bar:
        tasks = ((job, item) for job in jobs for item in job.tasks())
        try:
            run_bounded(lambda task: task[0].run(task[1], buffers), tasks, in_flight, done)
        except InexactConversionError as e:
            # Found as the blocks stream: what was converted before stays, unfinished.
            raise InexactConversionError(
                f"{e}. {place(dst_store, dst_path)} holds the unfinished conversion: finish "
                f"it with resume=True once the values fit, or replace it with overwrite=True"
            ) from None
    if plan.consolidated:
        consolidate_metadata(dst_store, dst_path)
    if keeps_state:
        dst_store.delete(state_key)
    return report


#: The options a conversion's state document records, in convert's order.
_OPTION_NAMES = (
    "zarr_format",
    "chunks",
    "shards",
    "codecs",
    "compressor",
    "dtype",
    "dimension_names",
)


def _resumed_options(given: dict[str, Any], recorded: Any, state_key: str) -> dict[str, Any]:
    """The options to resume with: `given` (JSON forms) where not None, else those `recorded`
    in the state document; ValueError when one given differs from the recorded one."""
    if not isinstance(recorded, dict):
        raise ValueError(
            f"{state_key}: the state of the unfinished conversion there names no "
            f"options ({recorded!r}); replace it with overwrite=True"
        )
    recorded = {name: recorded.get(name) for name in _OPTION_NAMES}
    differ = [
        name for name in _OPTION_NAMES if given[name] is not None and given[name] != recorded[name]
    ]
    if differ:
        were = " and ".join(f"{name}={recorded[name]!r}" for name in differ)
        raise ValueError(
            f"{state_key}: the unfinished conversion there used other options: "
            f"{were}; resume with those (or leave them out), or replace it with "
            f"overwrite=True"
        )
    return {name: recorded[name] if given[name] is None else given[name] for name in _OPTION_NAMES}


def _jsonable(value: object) -> list[Any] | int | str | dict[str, Any]:
    """The JSON form of an option's value, which a resumed conversion takes back: codec
    objects as their JSON (v3) or configuration (numcodecs)."""
    if isinstance(value, (tuple, np.integer)):
        return list(value) if isinstance(value, tuple) else int(value)
    if isinstance(value, Codec):
        return dict(value.to_json())
    if callable(getattr(value, "get_config", None)):
        return dict(value.get_config())  # type: ignore[attr-defined]
    return str(value)


def _overlap(a: str, b: str) -> bool:
    return not a or not b or a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _clear(store: Store) -> None:
    for key in list(store.list_prefix("")):
        store.delete(key)


def _for(option: Any, path: str) -> Any:
    """An option's value for the array at `path` (options may be dicts by array path); the
    options differ in type (shapes, dtypes, names), hence Any."""
    return option.get(path) if isinstance(option, dict) else option


def _shape(option: Any, path: str, ndim: int, what: str) -> tuple[Any, ...] | Literal[False] | None:
    """The shape `option` gives the `ndim`-d array at `path`: a shape given for the whole
    hierarchy applies to the arrays with as many dimensions, and leaves the others as they
    are. Per axis a side, or (a rectilinear grid, e.g. "[[10, 5, 15], 8]" or
    [[10, 5, 15], [8, 12]]) the edge lengths of its chunks (shards)."""
    value = _for(option, path)
    if value is None or value is False:
        return value
    if isinstance(value, str):
        if value.lower() == "none":
            return False
        try:
            value = (
                json.loads(value)
                if value.lstrip().startswith("[")
                else [int(v) for v in value.split(",")]
            )
        except ValueError:
            raise ValueError(
                f"{what}={value!r}: give sides such as 64,64,64"
                f"{' or none' if what == 'shards' else ''}, or edge lengths "
                f"such as [[10,5,15],[8,12]]"
            ) from None
    if rectilinear_spelling(value):
        if len(value) != ndim and not isinstance(option, dict):
            return None
        if len(value) != ndim:
            raise ValueError(f"{what} {value} do not fit the {ndim}-d array {path or '/'!r}")
        # (create_array checks the edge lengths against the shape)
        return tuple(v if isinstance(v, int) else tuple(v) for v in value)
    value = (
        (int(value),) * ndim
        if isinstance(value, (int, np.integer))
        else tuple(int(v) for v in value)
    )
    if len(value) != ndim and not isinstance(option, dict):
        return None
    if len(value) != ndim or any(v < 1 for v in value):
        raise ValueError(f"{what} {value} do not fit the {ndim}-d array {path or '/'!r}")
    return value


class _Plan:
    """The destination's metadata, built in a memory store (every option checked) before
    anything is written."""

    def __init__(
        self,
        src_store: Store,
        src_path: str,
        dst_path: str,
        zarr_format: int | None,
        chunks: Any,
        shards: Any,
        codecs: Sequence[CodecLike] | str | None,
        compressor: CodecLike | None,
        dtype: Any,
        dimension_names: Any,
    ) -> None:
        def on_problem(kind: str, key: str, detail: str) -> None:
            if kind == "metadata":
                raise MetadataError(f"{key}: {detail}")

        self.dst_path = dst_path
        self.store = MemoryStore()
        self.groups: list[str] = []
        # (source Array, (dst path, dst metadata))
        self.arrays: list[tuple[Array, tuple[str, NodeMetadata]]] = []
        self.compressor: Codec | Literal[False] | None = (
            parse_compressor(compressor) if compressor is not None else False
        )
        self.codecs = None if codecs is None else parse_codecs(codecs)
        self.consolidated = False
        head = len(src_path) + 1 if src_path else 0
        taken: set[str] = set()  # the shape options some array took
        ndims: set[int] = set()  # the arrays' ranks
        for path, meta in walk(src_store, src_path, on_problem):
            rel = path[head:]
            out = join(dst_path, rel) if rel else dst_path
            fmt = zarr_format or meta.zarr_format
            if meta.node_type == "group":
                if not rel:
                    self.consolidated = getattr(
                        meta, "consolidated_metadata", None
                    ) is not None or src_store.exists(join(path, V2_KEY))
                create_group(
                    self.store,
                    path=out,
                    zarr_format=fmt,
                    attributes=_attrs(meta.attributes, None, fmt),
                )
                self.groups.append(out)
                continue
            src = Array(src_store, path, meta, read_only=True)
            shapes = {
                what: _shape(option, rel, src.ndim, what)
                for what, option in (("chunks", chunks), ("shards", shards))
            }
            taken.update(what for what, shape in shapes.items() if shape is not None)
            ndims.add(src.ndim)
            dst = self._array(
                src,
                rel,
                out,
                fmt,
                shapes["chunks"],
                shapes["shards"],
                _for(dtype, rel),
                _for(dimension_names, rel),
            )
            self.arrays.append((src, (out, dst.metadata)))
        for what, option in (("chunks", chunks), ("shards", shards)):
            whole = option is not None and not isinstance(option, dict)
            if whole and ndims and what not in taken:
                raise ValueError(
                    f"{what}={option!r} fits no array here: they have "
                    f"{' or '.join(map(str, sorted(ndims)))} dimensions"
                )

    def _array(
        self,
        src: Array,
        rel: str,
        out: str,
        fmt: int,
        chunks: tuple[Any, ...] | Literal[False] | None,
        shards: tuple[Any, ...] | dict[str, Any] | Literal[False] | None,
        dtype: npt.DTypeLike | None,
        dimension_names: Sequence[str | None] | None,
    ) -> Array:
        ndim = src.ndim
        new_dtype = src.dtype if dtype is None else np.dtype(dtype)
        _check_convertible(src, new_dtype)
        base: Sequence[CodecLike]
        base, inner = v3_codecs(src) if self.codecs is None else (self.codecs, src.chunks)
        if self.compressor is not False:
            base = with_compressor(base, self.compressor, f"{src.name} codecs")
        if new_dtype != src.dtype and self.codecs is None:
            base = _retyped(base, src.name)
        chunks = chunks or inner
        if fmt == 2 and shards:
            raise ValueError("sharding needs zarr_format=3")
        if fmt == 3 and shards is None and (sharding := src.chunk_engine.sharding) is not None:
            shards = {"shape": src.shards, "index_location": sharding.index_location}
        shards = shards or None
        meta = src.metadata
        names = dimension_names
        if names is None:
            names = (
                meta.dimension_names
                if isinstance(meta, ArrayMetadataV3)
                else array_dimensions(meta.attributes, ndim)
            )
        fill = _fill(src, new_dtype)
        attributes = _attrs(meta.attributes, names, fmt)
        if fmt == 3:
            kinds = [codec_from_json(c, f"{src.name} codecs") for c in base]
            key_encoding = None
            if isinstance(meta, ArrayMetadataV3):
                key_encoding = {
                    "name": meta.chunk_key_encoding.name,
                    "separator": meta.chunk_key_encoding.separator,
                }
            return create_array(
                self.store,
                name=out,
                shape=src.shape,
                dtype=new_dtype,
                chunks=chunks,
                shards=shards,
                filters=[c for c, k in zip(base, kinds) if isinstance(k, ArrayArrayCodec)],
                serializer=[c for c, k in zip(base, kinds) if isinstance(k, ArrayBytesCodec)],
                compressors=[
                    c
                    for c, k in zip(base, kinds)
                    if not isinstance(k, (ArrayArrayCodec, ArrayBytesCodec))
                ],
                fill_value=fill,
                attributes=attributes,
                dimension_names=None if names is None else tuple(names),
                chunk_key_encoding=key_encoding,
                zarr_format=3,
            )
        filters, compressor, order, stored = v2_form(base, chunks, new_dtype, f"{src.name} codecs")
        separator = meta.dimension_separator if isinstance(meta, ArrayMetadataV2) else "."
        return create_array(
            self.store,
            name=out,
            shape=src.shape,
            dtype=stored,
            chunks=chunks,
            filters=filters or None,
            compressors=compressor,
            fill_value=fill,
            order=order,
            attributes=attributes,
            chunk_key_encoding=separator,
            zarr_format=2,
        )

    def _documents(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """(key, document) of the planned metadata of the nodes at `paths`."""
        for path in paths:
            for name in METADATA_KEYS:
                key = join(path, name)
                data = self.store.get(key)
                if data is not None:
                    yield key, data

    def _planned(self) -> Iterator[tuple[str, bytes]]:
        """(key, document) of every planned metadata document."""
        return self._documents([*self.groups, *(p for _, (p, _) in self.arrays)])

    def write(self, store: Store) -> None:
        """Write the planned metadata, and any missing ancestor groups of the destination."""
        for parent in parent_paths(self.dst_path):
            if not node_exists(store, parent):
                for key, data in self._documents([parent]):
                    store.set(key, data)
        for key, data in self._planned():
            store.set(key, data)

    def check_written(self, store: Store) -> None:
        """On resume: the destination's metadata must be the planned metadata."""
        for key, data in self._planned():
            if _without_consolidated(store.get(key)) != _without_consolidated(data):
                raise ValueError(
                    f"{key}: the destination's metadata differs from what these "
                    f"options make; convert again with the first options, or "
                    f"replace it with overwrite=True"
                )


def _without_consolidated(data: bytes | None) -> Any:
    if data is None:
        return None
    doc = json.loads(data)
    if isinstance(doc, dict):
        doc.pop("consolidated_metadata", None)
    return doc


def _attrs(
    attributes: Mapping[str, Any], names: Sequence[str | None] | None, fmt: int
) -> dict[str, Any]:
    """Attributes for the destination: v2's `_ARRAY_DIMENSIONS` become v3 dimension names, and
    dimension names become `_ARRAY_DIMENSIONS` in v2."""
    attributes = dict(attributes)
    if fmt == 3:
        if names is not None and attributes.get("_ARRAY_DIMENSIONS") == list(names):
            del attributes["_ARRAY_DIMENSIONS"]
    elif names is not None and all(isinstance(n, str) for n in names):
        attributes["_ARRAY_DIMENSIONS"] = list(names)
    return attributes


def _check_convertible(src: Array, new_dtype: np.dtype[Any]) -> None:
    """Refuse a data type whose values cannot be compared with the source's (see
    tools.exact): no conversion between them could be checked."""
    if not comparable(src.dtype, new_dtype):
        raise InexactConversionError(
            f"{src.name}: converting {src.dtype} to {new_dtype} could change values, and "
            f"convert cannot check that it does not; dtype= converts only where every value "
            f"converts exactly"
        )


def _retyped(codecs: Sequence[CodecLike], name: str) -> list[CodecLike]:
    """The codecs for a new data type: blosc's typesize is taken from it again; filters that
    were configured for the old type are refused."""
    out: list[CodecLike] = []
    for spec in codecs:
        codec = codec_from_json(spec, f"{name} codecs")
        if isinstance(codec, ArrayArrayCodec) and codec.name != "transpose":
            raise ValueError(
                f"{name}: filter {codec.name!r} was set up for the old data type; "
                f"give the codecs for the new one"
            )
        if isinstance(spec, dict) and spec.get("name") == "blosc":
            configuration = {
                k: v for k, v in spec.get("configuration", {}).items() if k != "typesize"
            }
            spec = {**spec, "configuration": configuration}
        out.append(spec)
    return out


def _fill(src: Array, new_dtype: np.dtype[Any]) -> Any:
    fill = src.fill_value
    if fill is None or new_dtype == src.dtype:
        return fill
    cast, wrong = converted_exactly(np.asarray(fill, dtype=src.dtype), new_dtype)
    if wrong is not None:
        raise InexactConversionError(
            f"{src.name}: converting {src.dtype} to {new_dtype} would change the fill value "
            f"{_spelled(fill)} to {_spelled(cast)}; dtype= converts only where every value "
            f"converts exactly"
        )
    return cast[()]


def _spelled(value: Any) -> str:
    """A value as numpy prints it (`numpy.datetime64('3000-01-01T00:00:00')`: its instant)."""
    return str(np.asarray(value)[()])


class _ArrayJob:
    """One array's work: raw copies of stored objects, or blocks of destination objects."""

    def __init__(self, src: Array, dst: Array, budget: int, resume: bool) -> None:
        self.src, self.dst, self.resume = src, dst, resume
        self.src_keys = ChunkKeys(src)
        self.dst_keys = ChunkKeys(dst)
        self.stored = sorted(self.src_keys.stored()[0].items())
        self.raw = self._can_copy_raw()
        if self.raw:
            self.count = len(self.stored)
            self.task_bytes = 0
            return
        unit = self.dst_keys.chunks.chunk_shape
        # Per axis the block edges: whole destination objects (the largest when rectilinear)
        # of about the block's side each.
        block = plan_block(
            unit,
            self.src_keys.chunks.chunk_shape,
            src.shape,
            src.dtype.itemsize,
            self._cost,
            budget,
        )
        if self._cost(block) > budget:
            raise ValueError(
                f"{src.name}: converting one destination object of shape {tuple(unit)} needs "
                f"about {self._cost(block) * 4 // 3 >> 20} MiB; raise the memory limit"
            )
        self.edges = [
            block_edges(axis, 0, n, b) for axis, n, b in zip(dst.chunk_grid.axes, src.shape, block)
        ]
        self.block = tuple(int(max(np.diff(e), default=1)) for e in self.edges)
        self.count = math.prod(self.dst_keys.grid)
        self.task_bytes = self._cost(self.block)

    # -- raw copies ----------------------------------------------------------------------------
    def _can_copy_raw(self) -> bool:
        if not stores_alike(self.src_keys, self.dst_keys, _stored_codecs):
            return False
        s, d = self.src_keys.chunks, self.dst_keys.chunks
        # The codec mapping is meant to be exact; the first stored object proves it.
        if self.stored:
            coords, key = self.stored[0]
            data = self.src.store.get(key)
            if data is not None and not same_bits(
                s.chain_at(coords).decode(data), d.chain_at(coords).decode(data)
            ):
                return False
        return True

    def _raw_copy(self, item: tuple[tuple[int, ...], str]) -> _Done:
        coords, key = item
        data = self.src.store.get(key)
        size = math.prod(r.stop - r.start for r in self.src_keys.region(coords))
        nbytes = size * self.src.dtype.itemsize
        if data is None:
            return nbytes, 0, 0
        dst_key = self.dst_keys.chunks.key(coords)
        if self.resume and self.dst.store.get(dst_key) == data:
            return nbytes, 0, 1
        self.dst.store.set(dst_key, data)
        return nbytes, 1, 0

    # -- blocks ----------------------------------------------------------------------------------
    def _cost(self, block: Sequence[int]) -> int:
        """Bytes a task over `block` holds at most: the block, the encoded objects (at most
        as large), the block in the new type when the type changes, a destination object
        decoded (on resume) and the source chunks being decoded into it. (Checking a
        conversion compares small pieces at a time: tools.exact.PIECE.)"""
        copies = 2 + (self.dst.dtype != self.src.dtype)
        itemsize = max(self.src.dtype.itemsize, self.dst.dtype.itemsize)
        dst_unit = math.prod(self.dst_keys.chunks.chunk_shape) * itemsize
        return block_cost(block, self.src, self.dst, copies) + (dst_unit if self.resume else 0)

    def tasks(self) -> Iterator[tuple[tuple[int, ...], str] | Region]:
        if self.raw:
            yield from self.stored
            return
        for index in np.ndindex(*(len(e) - 1 for e in self.edges)):
            yield tuple(slice(int(e[i]), int(e[i + 1])) for i, e in zip(index, self.edges))

    def run(self, item: Any, buffers: BlockBuffers) -> _Done:
        if self.raw:
            return self._raw_copy(item)
        data, buffer = buffers.take(tuple(r.stop - r.start for r in item), self.src.dtype)
        try:
            return self._convert_block(item, data)
        finally:
            buffers.give_back(buffer)

    def _convert_block(self, region: Region, data: npt.NDArray[Any]) -> _Done:
        """Convert the block `region` of the source, read into `data`."""
        self.src.get_basic_selection(region, out=data)
        if self.dst.dtype != self.src.dtype:
            data = self._converted(region, data)
        units = self._units(region)
        nbytes = data.size * self.src.dtype.itemsize
        if not self.resume:
            self.dst.set_basic_selection(region, data)
            return nbytes, len(units), 0
        pending = [u for u in units if not self._complete(u, region, data)]
        for coords, part in pending:
            local = tuple(slice(p.start - r.start, p.stop - r.start) for p, r in zip(part, region))
            self.dst.set_basic_selection(part, data[local])
        return nbytes, len(pending), len(units) - len(pending)

    def _converted(self, region: Region, data: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The block `region`'s values `data` in the destination's type; InexactConversionError
        naming the first value that does not convert exactly, and its source chunk."""
        out, at = converted_exactly(data, self.dst.dtype)
        if at is None:
            return out
        index = tuple(r.start + i for r, i in zip(region, at))
        grid = self.src.chunk_grid
        key = self.src_keys.chunks.key(tuple(grid.chunks_within(d, i) for d, i in enumerate(index)))
        raise InexactConversionError(
            f"{self.src.name}: the value {_spelled(data[at])} at {index} (stored in {key!r}) "
            f"does not convert to {self.dst.dtype} exactly (it would be {_spelled(out[at])}); "
            f"dtype= converts {self.src.dtype} to {self.dst.dtype} only where every value does"
        )

    def _units(self, region: Region) -> list[_Unit]:
        """(coords, region) of the destination objects in the block `region`."""
        grid = self.dst.chunk_grid
        ranges = [
            range(grid.chunks_within(d, r.start), grid.chunks_within(d, r.stop - 1) + 1)
            for d, r in enumerate(region)
        ]
        return [(c, self.dst_keys.region(c)) for c in itertools.product(*ranges)]

    def _complete(self, unit: _Unit, region: Region, data: npt.NDArray[Any]) -> bool:
        """Is the destination object `unit` stored as the source has it (absent when all fill)?"""
        coords, part = unit
        local = tuple(slice(p.start - r.start, p.stop - r.start) for p, r in zip(part, region))
        values = data[local]
        chunks = self.dst_keys.chunks
        stored = self.dst.store.get(chunks.key(coords))
        if stored is None:
            return not chunks.spec.writes_empty and kernels.is_fill(values, chunks.fill_value)
        try:
            decoded = chunks.chain_at(coords).decode(stored)
        except Exception:  # noqa: BLE001 - a damaged object is rewritten
            return False
        return same_bits(decoded[tuple(slice(0, p.stop - p.start) for p in part)], values)


def _stored_codecs(array: Array) -> list[CodecJSON] | None:
    """The v3 JSON of how the array's stored objects are encoded (v2 codecs mapped to v3)."""
    try:
        if array.zarr_format == 3:
            return array.chunk_engine.chain.to_json()
        return v3_codecs(array)[0]
    except MetadataError:
        return None
