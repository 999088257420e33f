"""The engine's plans: the routes (Route), and a request split into the compiled jobs' groups
of chunks (one per chunk shape) and their per-axis plans."""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from .._native import indexing as _indexing
from ..codecs.chain import CodecChain
from ..codecs.sharding import partial_codec
from ..metadata.grid import AxisChunks, chunk_start
from ..metadata.indexing import (
    BasicIndexer,
    ChunkProjection,
    CoordinateIndexer,
    OrthogonalIndexer,
    Span,
    SpanIndexer,
)
from ..runtime.config import config
from ..runtime.link import SPLIT_ROUND_TRIP
from ..runtime.pool import in_turns

if TYPE_CHECKING:
    from .._native.indexing import AxisPlan, PointGroups
    from ..codecs.base import NativeForm
    from ..metadata.indexing import Indexer
    from ..storage.base import ByteRange, Store
    from . import ChunkEngine

__all__ = [
    "Box",
    "Int64s",
    "Route",
    "STORED_BYTES_KEPT",
    "StoredBytes",
    "basic_spans",
    "chunk_projections",
    "core_form",
    "grid_of",
    "in_shards",
    "inner_plans",
    "job_group",
    "job_groups",
    "point_job_groups",
    "point_listing",
    "replan",
    "requests_in_flight",
    "selection_boxes",
    "split_span",
    "selection_kind",
    "stored_bytes_of",
    "task_grid",
    "task_values",
    "with_key",
]


_E = TypeVar("_E", bound=Exception)


Int64s = npt.NDArray[np.int64]


def with_key(error: _E, key: str) -> _E:
    """Re-raise a codec or store error with the store key in front of its message."""
    if isinstance(error, OSError) and error.errno is not None:
        return type(error)(error.errno, f"chunk {key!r}: {error.strerror}")
    return type(error)(f"chunk {key!r}: {error}")


class StoredBytes:
    """About the bytes of a stored chunk of one array: the last one read (`nbytes`), shared
    by the engines of every opening of the array in this process (`stored_bytes_of`)."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


# The StoredBytes of each array, by (store identity, key prefix); forgotten all at once past
# STORED_BYTES_KEPT arrays (estimates only).
STORED_BYTES_KEPT = 1024
_stored_bytes: dict[tuple[Hashable, str], StoredBytes] = {}


def stored_bytes_of(store: Store, key_prefix: str, default: int) -> StoredBytes:
    """The StoredBytes of the array at `key_prefix` of `store`: `default` until a read of
    it saw a stored chunk."""
    key = (store.identity, key_prefix)
    found = _stored_bytes.get(key)
    if found is None:
        if len(_stored_bytes) >= STORED_BYTES_KEPT:
            _stored_bytes.clear()
        found = _stored_bytes[key] = StoredBytes(default)
    return found


def requests_in_flight(engine: ChunkEngine, request_bytes: int, count: int | None = None) -> int:
    """How many requests of about `request_bytes` each a read (of `count`) or a write keeps
    in flight: the array's io_concurrency, or over a link (Store.link) fewer where they are
    large (Link.in_flight); and, io_concurrency left at its default (Options.chose), over one
    with a round trip of SPLIT_ROUND_TRIP or more, more where they are small, up to the
    process's io_process_concurrency (a whole read of 512 chunks of 128 KiB over a 30 ms link
    took 0.38-0.40 s with 64 in flight, 0.29-0.30 s with 128)."""
    most, link = engine.options.io_concurrency, engine.store.link
    if link is None:
        return most
    widest = None
    if not engine.options.chose("io_concurrency") and link.round_trip >= SPLIT_ROUND_TRIP:
        widest = config.io_process_concurrency
    return link.in_flight(request_bytes, most, count, widest)


def split_span(engine: ChunkEngine, start: int, stop: int, count: int) -> list[ByteRange]:
    """The ranges a read of `count` requests asks for the bytes [start, stop) of an object
    in, at once, each on a connection of its own: equal shares where the store's link splits
    so many bytes (Link.split), else the span itself."""
    link = engine.store.link
    pieces = 1 if link is None else link.split(stop - start, count)
    share = max(-(-(stop - start) // pieces), 1)
    return [(at, min(at + share, stop)) for at in range(start, stop, share)] or [(start, stop)]


def task_grid(plans: Sequence[AxisPlan]) -> Int64s:
    """Per task of a compiled job over `plans` (the C-order product of every axis' pieces), the
    chunk of each axis' piece: an (ntasks, ndim) array."""
    axes = [np.asarray(p.chunks) for p in plans]
    if not axes:
        return np.zeros((1, 0), dtype=np.int64)
    # Each axis' values broadcast into their column of the grid: a few numpy calls, where
    # meshgrid and stack run a dozen Python functions (small reads pay for every one).
    ndim = len(axes)
    grid = np.empty((*(len(a) for a in axes), ndim), dtype=np.result_type(*axes))
    for d, a in enumerate(axes):
        grid[..., d] = a.reshape((-1,) + (1,) * (ndim - 1 - d))
    return grid.reshape(-1, ndim)


def task_values(plans: Sequence[AxisPlan], name: str) -> list[tuple[Any, ...]]:
    """Per task of a compiled job over `plans` (as `task_grid`), the value of each axis'
    piece in the plan's list `name` ("chunks", "complete"): a list of tuples. No numpy call
    nor function made per call, so that a request of a few chunks costs a few Python steps
    (small reads and writes pay for each one)."""
    return list(itertools.product(*[getattr(p, name) for p in plans]))


def replan(
    plans: Sequence[AxisPlan],
    shape: Sequence[int],
    blocks: Sequence[AxisChunks],
    chunk_shape: Sequence[int],
) -> list[AxisPlan]:
    """The plans of the basic selection that `plans` make over the blocks `blocks` (per
    axis a length, or runs), over the finer grid of `chunk_shape` (the inner chunks of
    shards)."""
    out = []
    for plan, n, b, c in zip(plans, shape, blocks, chunk_shape):
        if not plan.chunks:
            out.append(_indexing.slice_plan(0, 0, 1, c, n))
            continue
        sel, out_sel = plan.chunk_sel[0], plan.out_sel[0]
        if not isinstance(sel, slice):  # an int: the axis is dropped
            out.append(_indexing.int_plan(chunk_start(b, plan.chunks[0]) + int(sel), c, n))
            continue
        first, step, count = chunk_start(b, plan.chunks[0]) + sel.start, sel.step, sum(plan.count)
        if isinstance(out_sel, slice) and out_sel.step == -1:  # walked ascending, written back
            out.append(_indexing.slice_plan(first + (count - 1) * step, first - 1, -step, c, n))
        else:
            out.append(_indexing.slice_plan(first, first + (count - 1) * step + 1, step, c, n))
    return out


def _listed_plan(positions: npt.NDArray[np.intp], chunk_len: int) -> AxisPlan:
    """Plan of one axis over chunks of `chunk_len`: `positions` (array positions, in the
    result's order) grouped by chunk, each group a listed piece whose output positions are
    its elements' places in `positions`."""
    ids = positions // chunk_len
    perm = np.argsort(ids, kind="stable")
    sorted_ids = ids[perm]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    rows = np.zeros((len(starts), 6), dtype=np.int64)  # zc_piece rows, chunk_step 0
    rows[:, 0] = sorted_ids[starts]
    rows[:, 1] = starts
    rows[:, 3] = np.diff(np.r_[starts, len(perm)])
    rows[:, 5] = 1
    listed = (positions[perm] - sorted_ids * chunk_len, perm.astype(np.int64))
    return _indexing.AxisPlan.from_rows(rows, listed, np.zeros(len(starts), dtype=bool))


def inner_plans(
    indexer: OrthogonalIndexer,
    shape: Sequence[int],
    blocks: Sequence[AxisChunks],
    chunk_shape: Sequence[int],
) -> list[AxisPlan]:
    """The plans of an orthogonal selection over the blocks `blocks` (shards, per axis a
    length or runs), over the finer grid of `chunk_shape` (their inner chunks), in the
    result's order: axes indexed by arrays become listed pieces."""
    out = []
    for axis, plan in enumerate(indexer.plans):
        positions = indexer.array_positions(axis)
        if positions is None:
            out.extend(
                replan(
                    [plan],
                    shape[axis : axis + 1],
                    blocks[axis : axis + 1],
                    chunk_shape[axis : axis + 1],
                )
            )
        else:
            out.append(_listed_plan(positions, chunk_shape[axis]))
    return out


def point_listing(
    groups: PointGroups, chunk_shape: Sequence[int]
) -> tuple[Int64s, Int64s, Int64s, Int64s]:
    """The zc_listing arrays (point_start, local, out_index, coords) of points grouped by
    chunks of `chunk_shape` (_indexing.PointGroups), each going to its place in the result."""
    local = np.ravel_multi_index(tuple(groups.local), chunk_shape).astype(np.int64, copy=False)
    return (
        np.ascontiguousarray(groups.offsets),
        local,
        _result_places(groups),
        np.ascontiguousarray(groups.coords),
    )


def _result_places(groups: PointGroups, at: Int64s | None = None) -> Int64s:
    """The places in the result of the grouped points at positions `at` (None: all) of
    their grouped order."""
    if groups.order is None:
        return (
            np.arange(groups.offsets[-1], dtype=np.int64)
            if at is None
            else at.astype(np.int64, copy=False)
        )
    return np.ascontiguousarray(groups.order if at is None else groups.order[at])


def core_form(chain: CodecChain) -> NativeForm | None:
    """The settings with which the compiled core reads and writes the stored objects of
    `chain` by itself: the sharding codec's batch_settings when sharded, else the chain's
    native_form; None when it cannot."""
    sharding = partial_codec(chain)
    if sharding is not None:
        return sharding.batch_settings()
    return chain.native_form()


class _Group(NamedTuple):
    """The chunks (shards) of one stored shape that a request touches, which one compiled job
    runs as over a regular grid of that shape (`chain.spec.shape`) on an array of `extent`:
    each of them keeps its grid index, and so its key, and holds as much of that array as it
    holds of the real one. A regular grid's request is one group, of the array's shape."""

    chain: CodecChain  # the chain of their shape
    form: NativeForm | None  # what the core runs them with (`core_form`; None: it cannot)
    extent: tuple[int, ...]
    plans: list[AxisPlan]  # their pieces of the indexer's plans (points: [])
    # or their points: the zc_listing arrays (point_start, local, out_index, coords)
    points: tuple[Int64s, Int64s, Int64s, Int64s] | None


def _axis_classes(chunks: Int64s, axis: AxisChunks, extent: int) -> list[tuple[int, int, Int64s]]:
    """The pieces of one axis whose chunks are `chunks` (grid indices), split by class: per
    class (edge length, extent of the regular axis its job runs over, positions of its
    pieces). A class is an edge length and how much of its chunks lies inside the array,
    which is the whole length but for a last chunk reaching past the array's end."""
    if isinstance(axis, int):
        return [(axis, extent, np.arange(len(chunks), dtype=np.int64))]
    starts, lengths = axis.start(chunks), axis.length(chunks)
    inside = np.minimum(lengths, extent - starts)
    classes = []
    for length, part in np.unique(np.stack([lengths, inside]), axis=1).T.tolist():
        pieces = np.flatnonzero((lengths == length) & (inside == part))
        # A chunk cut by the array's end is alone in its class: the last of its job's axis.
        last = int(chunks[pieces].max())
        classes.append((length, last * length + part, pieces))
    return classes


def _inner_counts(
    blocks: Sequence[AxisChunks], inner_shape: Sequence[int], shards: Int64s
) -> Int64s:
    """The number of inner chunks of `inner_shape` along each axis of the shards at grid
    indices `shards` ((n, ndim)) of the blocks `blocks` (per axis a length, or runs)."""
    counts = np.empty_like(shards)
    for d, (b, c) in enumerate(zip(blocks, inner_shape)):
        at = shards[:, d]
        counts[:, d] = b // c if isinstance(b, int) else b.length(at) // c
    return counts


def _c_order(places: Int64s, counts: Int64s) -> Int64s:
    """The C-order index of each row of `places` ((n, ndim)) in a grid of the same row of
    `counts`."""
    index = np.zeros(len(places), dtype=np.int64)
    for d in range(places.shape[1]):
        index = index * counts[:, d] + places[:, d]
    return index


def in_shards(
    blocks: Sequence[AxisChunks], inner_shape: Sequence[int], coords: Int64s
) -> tuple[Int64s, Int64s]:
    """For inner chunks at grid indices `coords` ((n, ndim), inner chunks of `inner_shape`
    over the whole array) in shards placed by `blocks` (per axis a length, or runs; each
    shard holds whole inner chunks): their shards' grid indices, and their C-order index in
    their shard."""
    shards = np.empty_like(coords)
    places = np.empty_like(coords)
    for d, (b, c) in enumerate(zip(blocks, inner_shape)):
        at = coords[:, d]
        if isinstance(b, int):
            shards[:, d], places[:, d] = np.divmod(at, b // c)
        else:
            shards[:, d] = b.chunk_of(at * c)
            places[:, d] = at - b.start(shards[:, d]) // c
    return shards, _c_order(places, _inner_counts(blocks, inner_shape, shards))


def grid_of(extent: Sequence[int], chunk_shape: Sequence[int]) -> tuple[int, ...]:
    """The number of chunks of `chunk_shape` along each axis of an array of `extent`."""
    return tuple(-(-s // c) for s, c in zip(extent, chunk_shape))


class Route(enum.Enum):
    """The routes a read or a write takes (docs/architecture.md §4, §5); ChunkEngine.plan
    picks one per request."""

    CHUNK_BATCH = "chunk batch"  # R1, W1: all chunks on a directory store, one compiled job
    SHARD_BATCH = "shard batch"  # R2, W2: all shards and inner chunks on a directory store
    SHARD_WAVES = "shard waves"  # R3: shard indexes, then inner-chunk ranges, fetched in waves
    CHUNK_WAVES = "chunk waves"  # R4, W3: chunks fetched or stored together, compiled coding
    FETCHED_CHUNKS = "fetched chunks"  # R5: fetched together, decoded by the codec objects
    EACH_CHUNK = "each chunk"  # R5, W4: chunk by chunk or shard by shard, codec objects
    ONE_CHUNK = "one chunk"  # R0: `a[sel]` in one chunk or inner chunk, before any indexer

    # Members are singletons: hashed by identity in C, where Enum's hash is a Python call
    # (the route tables below are looked up on every request).
    __hash__ = object.__hash__


def selection_kind(indexer: Indexer, ndim: int) -> tuple[bool, bool]:
    """(basic, listed) of a selection: `basic` for ints and slices (BasicIndexer); `listed`
    for any selection the compiled jobs take (orthogonal, basic included, or points of an
    array of at least one dimension)."""
    basic = isinstance(indexer, BasicIndexer)
    listed = (
        isinstance(indexer, OrthogonalIndexer)
        or isinstance(indexer, CoordinateIndexer)
        and indexer.nitems > 0
        and ndim > 0
    )
    return basic, listed


def job_groups(engine: ChunkEngine, indexer: Indexer) -> list[_Group]:
    """The request of `indexer` (its plans, or its points) as compiled jobs: one group of
    chunks per stored shape on a rectilinear grid (it has few), the whole request on a
    regular one. The one place the compiled routes split a request by chunk shape."""
    if engine.grid.is_regular:
        form = engine.core_forms[engine.chunk_shape]
        if isinstance(indexer, CoordinateIndexer):
            assert indexer.groups is not None  # (points: `plan` saw them)
            return [
                _Group(
                    engine.chain,
                    form,
                    engine.array_shape,
                    [],
                    point_listing(indexer.groups, engine.chunk_shape),
                )
            ]
        return [_Group(engine.chain, form, engine.array_shape, indexer.result_plans, None)]
    if isinstance(indexer, CoordinateIndexer):
        return point_job_groups(engine, indexer)
    per_axis = [
        _axis_classes(np.asarray(p.chunks, dtype=np.int64), axis, n)
        for p, axis, n in zip(indexer.plans, engine.grid.axes, engine.array_shape)
    ]
    groups = []
    for combo in itertools.product(*per_axis):
        shape = tuple(c[0] for c in combo)
        plans = [
            p if len(c[2]) == p.npieces else p.subset(c[2])
            for p, c in zip(indexer.result_plans, combo)
        ]
        groups.append(job_group(engine, shape, tuple(c[1] for c in combo), plans, None))
    return groups


def point_job_groups(engine: ChunkEngine, indexer: CoordinateIndexer) -> list[_Group]:
    """`_groups` of points on a rectilinear grid: the groups of points by chunk split by
    the chunks' classes (`_axis_classes`)."""
    groups = indexer.groups
    assert groups is not None  # (points: `plan` saw them)
    ndim = len(engine.chunk_shape)
    per_axis = [
        _axis_classes(groups.coords[:, d], axis, n)
        for d, (axis, n) in enumerate(zip(engine.grid.axes, engine.array_shape))
    ]
    # Each group of points' class on each axis, then its class over all axes.
    classes = np.zeros((groups.ngroups, ndim), dtype=np.int64)
    for d, axis in enumerate(per_axis):
        for k, (_, _, members) in enumerate(axis):
            classes[members, d] = k
    found, which = np.unique(classes, axis=0, return_inverse=True)
    counts = np.diff(groups.offsets)
    out = []
    for k, combo in enumerate(found.tolist()):
        members = np.flatnonzero(which.reshape(-1) == k)
        sizes = counts[members]
        starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        # The positions (grouped) of the members' points, group after group.
        at = np.repeat(groups.offsets[members] - starts[:-1], sizes) + np.arange(
            starts[-1], dtype=np.int64
        )
        shape = tuple(per_axis[d][c][0] for d, c in enumerate(combo))
        local = np.ravel_multi_index(tuple(groups.local[:, at]), shape).astype(np.int64)
        listing = (
            starts,
            local,
            _result_places(groups, at),
            np.ascontiguousarray(groups.coords[members]),
        )
        out.append(
            job_group(
                engine, shape, tuple(per_axis[d][c][1] for d, c in enumerate(combo)), [], listing
            )
        )
    return out


def job_group(
    engine: ChunkEngine,
    shape: tuple[int, ...],
    extent: tuple[int, ...],
    plans: list[AxisPlan],
    points: tuple[Int64s, Int64s, Int64s, Int64s] | None,
) -> _Group:
    return _Group(
        engine.chain_at_shape(shape), engine.core_form_at_shape(shape), extent, plans, points
    )


def chunk_projections(plans: Sequence[AxisPlan], tasks: Sequence[int]) -> list[ChunkProjection]:
    """The ChunkProjections of batch task numbers `tasks` (C order over the pieces of the
    axes' `plans`)."""
    if not tasks:
        return []  # (most writes: nothing to set up)
    dim_pieces = [list(zip(p.chunks, p.chunk_sel, p.out_sel, p.complete)) for p in plans]
    counts = [len(p) for p in dim_pieces]
    projections = []
    for task in tasks:
        combo = [pieces[i] for pieces, i in zip(dim_pieces, np.unravel_index(task, counts))]
        projections.append(
            ChunkProjection(
                tuple(p[0] for p in combo),
                tuple(p[1] for p in combo),
                tuple(p[2] for p in combo if p[2] is not None),
                all(p[3] for p in combo),
            )
        )
    return projections


def basic_spans(indexer: Indexer, chunk_shape: Sequence[int]) -> Sequence[Span] | None:
    """Per axis the Span a selection of ints and slices reads on a regular grid of
    `chunk_shape` (a SpanIndexer's own, else from its plans' pieces); None for any other
    selection, and for an empty one."""
    if isinstance(indexer, SpanIndexer):
        return indexer.spans
    if not isinstance(indexer, OrthogonalIndexer) or indexer.permuted:
        return None
    spans = []
    for plan, chunk_len in zip(indexer.plans, chunk_shape):
        chunks, within = plan.chunks, plan.chunk_sel
        if not chunks or plan.listed is not None:
            return None
        head, tail = within[0], within[-1]
        if not plan.kept:  # an int
            spans.append(
                Span(
                    chunks[0] * chunk_len + int(head),  # type: ignore[arg-type]
                    1,
                    1,
                    False,
                    False,
                )
            )
            continue
        if not isinstance(head, slice) or not isinstance(tail, slice):
            return None
        # (the pieces walk up the axis; a descending slice's are written back from its end)
        first = min(chunks[0] * chunk_len + head.start, chunks[-1] * chunk_len + tail.start)
        out = plan.out_sel[0]
        spans.append(
            Span(
                first,
                head.step or 1,
                sum(plan.count),
                isinstance(out, slice) and out.step == -1,
                True,
            )
        )
    return spans


def _view_of(spans: Sequence[Span], box: Sequence[int]) -> tuple[int | slice, ...]:
    """The numpy selection of a box read from the origin `box` that gives the result of the
    selection `spans` (as the engine's buffer holds it: int axes dropped)."""
    view: list[int | slice] = []
    for s, origin in zip(spans, box):
        lo = s.first - origin
        if not s.kept:
            view.append(lo)
        elif s.descending:
            top = lo + (s.length - 1) * s.step
            view.append(slice(top, lo - 1 if lo else None, -s.step))
        else:
            view.append(slice(lo, lo + (s.length - 1) * s.step + 1, s.step))
    return tuple(view)


class Box(NamedTuple):
    """Selections read together as one box of the array: its region, and per member (its
    place in the request) the view of the box that is its result."""

    region: tuple[slice, ...]
    members: list[int]
    views: list[tuple[int | slice, ...]]


def _apart(
    group: list[int], first: list[int], last: list[int]
) -> tuple[list[int], list[list[int]]]:
    """`group` split into the runs whose intervals [first, last] (of chunks, along one axis)
    share no chunk with another run's: (the members alone in their run, the other runs)."""
    ordered = sorted(group, key=first.__getitem__)
    singles: list[int] = []
    runs: list[list[int]] = []
    run = [ordered[0]]
    reach = last[ordered[0]]
    for k in ordered[1:]:
        if first[k] > reach:
            (runs.append(run) if len(run) > 1 else singles.append(run[0]))
            run = []
        run.append(k)
        reach = max(reach, last[k])
    (runs.append(run) if len(run) > 1 else singles.append(run[0]))
    return singles, runs


def selection_boxes(
    indexers: Sequence[Indexer], chunk_shape: Sequence[int]
) -> tuple[list[Box], list[int]]:
    """The read plan of many selections at once: basic selections grouped into boxes that
    each hold no more elements than their members' results together, so that selections
    that overlap (tiles of an image, repeated samples) read each chunk once; and the places
    of the selections read on their own (the rest, and any left alone). A group whose box
    is too large parts into groups that share no chunk along some axis (a sweep per axis,
    which leaves scattered samples alone at once), or, when none parts it, is cut in two
    along its box's longest axis, until each fits."""
    spans, alone = _spans_of(indexers, chunk_shape)
    if len(spans) < 2:
        return [], sorted(alone + [i for i, _ in spans])
    places = np.array([i for i, _ in spans])
    ndim = len(spans[0][1])
    table = _span_table(spans, ndim)
    lo, step, count = table[:, :, 0], table[:, :, 1], table[:, :, 2]
    hi = lo + (count - 1) * step + 1
    grid = np.array(chunk_shape, dtype=np.int64)
    firsts, lasts = (lo // grid).T.tolist(), ((hi - 1) // grid).T.tolist()
    los, his = lo.T.tolist(), hi.T.tolist()
    sizes = np.prod(count.astype(np.float64), axis=1).tolist()

    boxes: list[Box] = []
    # (members, the axis to sweep first: a run that a sweep along an axis made cannot part
    # again along it, how many axes were swept without parting it)
    todo: list[tuple[list[int], int, int]] = [(list(range(len(spans))), 0, 0)]
    while todo:
        members, axis, swept = todo.pop()
        if len(members) == 1:
            alone.append(int(places[members[0]]))
            continue
        box, end = _bounds(members, los, his)
        # (Does the box hold no more elements than its members' results?)
        if math.prod(b - a for a, b in zip(box, end)) <= sum([sizes[k] for k in members]):
            boxes.append(
                Box(
                    tuple(slice(a, b) for a, b in zip(box, end)),
                    places[members].tolist(),
                    [_view_of(spans[k][1], box) for k in in_turns(members)],
                )
            )
            continue
        if swept < ndim:
            singles, runs = _apart(members, firsts[axis], lasts[axis])
            alone += places[singles].tolist()
            following = (axis + 1) % ndim
            if len(runs) == 1 and not singles:
                todo.append((members, following, swept + 1))
            else:
                todo += [(run, following, 1) for run in runs]
            continue
        axis = int(np.argmax(np.subtract(end, box)))
        todo += [(half, axis, 0) for half in _cut_in_two(members, lo[:, axis], hi[:, axis])]
    return boxes, sorted(alone)


def _span_table(spans: list[tuple[int, Any]], ndim: int) -> Int64s:
    """The fields of `spans`' Spans as an array (n, ndim, Span's 5 fields): fromiter over
    the fields, a quarter of np.array's time on thousands of tuples (holding the GIL)."""
    fields = itertools.chain.from_iterable(itertools.chain.from_iterable(s for _, s in spans))
    table = np.fromiter(fields, dtype=np.int64, count=len(spans) * ndim * 5)
    return table.reshape(len(spans), ndim, 5)


def _bounds(
    members: list[int], los: list[list[int]], his: list[list[int]]
) -> tuple[list[int], list[int]]:
    """The box of `members`: its first and past-the-end index along each axis (`los` and
    `his`: per axis, each selection's)."""
    return (
        [min([low[k] for k in members]) for low in los],
        [max([high[k] for k in members]) for high in his],
    )


def _spans_of(
    indexers: Sequence[Indexer], chunk_shape: Sequence[int]
) -> tuple[list[tuple[int, Sequence[Span]]], list[int]]:
    """(the place and spans of each basic selection of `indexers`, the places of the
    others)."""
    spans, alone = [], []
    for i, indexer in enumerate(in_turns(indexers)):
        s = basic_spans(indexer, chunk_shape) if chunk_shape else None
        if s is None:
            alone.append(i)
        else:
            spans.append((i, s))
    return spans, alone


def _cut_in_two(members: list[int], lo: Int64s, hi: Int64s) -> list[list[int]]:
    """`members` (of bounds [lo, hi) along one axis, by member) cut in two at the widest gap
    between neighbours' centres within the middle half: each side keeps a quarter at least
    (few rounds)."""
    group = np.array(members)
    centres = lo[group] + hi[group]
    ordered = np.argsort(centres, kind="stable")
    quarter = max(1, len(group) // 4)
    gaps = np.diff(centres[ordered])[quarter - 1 : len(group) - quarter]
    cut = quarter + int(np.argmax(gaps))
    return [group[ordered[:cut]].tolist(), group[ordered[cut:]].tolist()]
