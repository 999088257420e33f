"""verify: decode every stored chunk of an array or hierarchy and report what is damaged.

Every stored chunk (every shard, its index and every inner chunk) is decoded through the
array's codec chain, which checks each checksum on the way: crc32c, zstd's content checksum,
gzip's CRC and length, numcodecs' checksums. Shard indexes are checked for entries outside the
shard, overlapping entries and their checksum. Keys inside an array that are no position of its
chunk grid, keys inside a group that belong to no node, and metadata that does not read are
reported too; with `missing=True`, so are grid positions (and inner chunks) not stored.
Codecs without a checksum (blosc, lz4, zstd without its checksum, uncompressed data) can hide
a flipped byte that still decodes: the objects of arrays whose codecs carry none
(Codec.verifies_integrity) are counted as unchecked, never reported as well, and with
`require_checksums=True` each such array is a problem.

compare: check a copy against its source, object by object (every stored key the same bytes,
none missing, none extra: what `copy` makes) or value by value (every node there, groups and
arrays with the same attributes, arrays with the same shape, dimension names and values, by
tools.exact's rules: what `convert` makes). Unless told which, it compares object by object
where the copy stores every array as the source does, and value by value otherwise, saying so.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ValueTooLargeError, ZarrcoreError
from ..nodes.array import Array
from ..nodes.consolidated import open_group_metadata
from ..nodes.node import join
from ..nodes.streaming import ChunkKeys, stored_encoding, stores_alike
from ..runtime.concurrency import run_bounded
from ..runtime.config import config
from .exact import comparable, first_difference, same_json
from .hierarchy import ProblemHandler, named_axes, place, store_and_path, walk
from .progress import Progress, counted, object_word

if TYPE_CHECKING:
    from ..metadata.types import NodeMetadata, StoreLike
    from ..nodes.group import Group
    from ..storage import Store

__all__ = ["Problem", "SLAB_BYTES", "VerifyReport", "compare", "verify"]

# Each shard is decoded in slabs of inner chunks of about this many bytes, and the chunks of
# arrays that are not sharded in boxes of about as many.
SLAB_BYTES = 64 << 20

#: A stored object: (its grid coords, its key).
_Located = tuple[tuple[int, ...], str]


@dataclasses.dataclass
class Problem:
    """One finding: `kind` is "corrupt", "missing", "out-of-grid", "stray" or "metadata"."""

    # also "consolidated": consolidated metadata that does not match the nodes; "unchecked":
    # an array whose stored objects carry no checksum (with require_checksums); comparing a
    # copy: "differs", "missing" (not in the copy) and "extra" (only in the copy)
    kind: str
    key: str
    detail: str = ""
    inner_chunk: tuple[int, ...] | None = None  # the inner chunk of a shard it concerns, if one

    def __str__(self) -> str:
        where = (
            self.key if self.inner_chunk is None else f"{self.key} inner chunk {self.inner_chunk}"
        )
        return f"{self.kind:<11} {where}" + (f": {self.detail}" if self.detail else "")


@dataclasses.dataclass
class VerifyReport:
    """What verify found: `ok` is True when there are no problems. `unchecked` stored objects
    (of the arrays `unchecked_arrays`) carry no checksum: they decoded, but a changed byte
    that still decodes would have gone unseen."""

    arrays: int = 0
    groups: int = 0
    objects: int = 0  # stored chunks or shards decoded
    stored_bytes: int = 0
    problems: list[Problem] = dataclasses.field(default_factory=list)
    unchecked: int = 0
    unchecked_arrays: list[str] = dataclasses.field(default_factory=list)
    #: How compare() compared a copy with its source, "objects" or "values" (then `objects`
    #: and `stored_bytes` count what was compared); "" for verify().
    compared: str = ""
    #: Why compare() compared so, or what its object-by-object differences may mean.
    note: str = ""

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (`zarrcore verify --json` prints it).

        Returns
        -------
        dict
        """
        return {
            "ok": self.ok,
            "compared": self.compared or None,
            "note": self.note or None,
            "arrays": self.arrays,
            "groups": self.groups,
            "objects": self.objects,
            "stored_bytes": self.stored_bytes,
            "unchecked_objects": self.unchecked,
            "unchecked_arrays": self.unchecked_arrays,
            "problems": [
                {
                    "kind": p.kind,
                    "key": p.key,
                    "detail": p.detail,
                    "inner_chunk": None if p.inner_chunk is None else list(p.inner_chunk),
                }
                for p in self.problems
            ],
        }

    def summary(self) -> str:
        """One line: objects, bytes, arrays and groups checked, the number of problems, and
        of the objects that carry no checksum ("all well" only when there are none of either).

        Returns
        -------
        str
        """
        counts = f"{counted(self.arrays, 'array')} and {counted(self.groups, 'group')}"
        stored = f"{counted(self.objects, 'stored object')} ({counted(self.stored_bytes, 'byte')})"
        if self.compared:
            what = (
                stored
                if self.compared == "objects"
                else f"{counted(self.stored_bytes, 'byte')} of values"
            )
            verdict = counted(len(self.problems), "difference") if self.problems else "the same"
            note = f" ({self.note})" if self.note else ""
            return f"{what} in {counts} compared with the source: {verdict}{note}"
        verdict = (
            counted(len(self.problems), "problem")
            if self.problems
            else "no damage found"
            if self.unchecked
            else "all well"
        )
        if self.unchecked:
            verdict += (
                f"; {counted(self.unchecked, 'object')} (of "
                f"{counted(len(self.unchecked_arrays), 'array')}) without a checksum "
                f"cannot be proven intact"
            )
        return f"{stored} in {counts}: {verdict}"

    def __str__(self) -> str:
        return "\n".join([*map(str, self.problems), self.summary()])


def verify(
    source: StoreLike | Array | Group,
    path: str = "",
    *,
    missing: bool = False,
    require_checksums: bool = False,
    progress: bool | None = None,
    storage_options: dict[str, Any] | None = None,
) -> VerifyReport:
    """Check the array or hierarchy at `path` of `source` (a directory, URL, dict, Store, Array
    or Group; `storage_options` configure a URL); returns a VerifyReport naming every damaged
    key.

    Parameters
    ----------
    source : str, os.PathLike, URL, dict, Store, Array or Group
        Where the data is (an Array or Group: below its path).
    path : str, optional
        The node to check, below `source`.
    missing : bool, optional
        Report every chunk (or inner chunk) not stored as well.
    require_checksums : bool, optional
        Report each array whose stored objects carry no checksum (kind "unchecked"): a
        changed byte there can decode to other values unseen. Without it they are only
        counted (`unchecked`).
    progress : bool or None, optional
        Show a progress line on stderr (None: when stderr is a terminal).
    storage_options : dict, optional
        Options of the store a URL `source` names.

    Returns
    -------
    VerifyReport
        Its `problems` name each corrupt, missing, out-of-grid or stray key, each
        unreadable metadata document and consolidated metadata that does not match the
        nodes (and unchecked arrays, with `require_checksums`); damage is reported there, not
        raised.
    """
    store, path = store_and_path(source, path, read_only=True, storage_options=storage_options)
    report = VerifyReport()

    def on_problem(kind: str, key: str, detail: str) -> None:
        report.problems.append(Problem(kind, key, detail))

    arrays = []
    found_nodes = {}
    for node_path, meta in walk(store, path, on_problem):
        found_nodes[node_path] = meta
        if meta.node_type == "group":
            report.groups += 1
            continue
        try:
            array = Array(store, node_path, meta, read_only=True)
        except ZarrcoreError as e:  # metadata that parses but describes no readable array
            on_problem("metadata", node_path, str(e))
            continue
        report.arrays += 1
        keys = ChunkKeys(array)
        found, outside = keys.stored()
        report.problems.extend(
            Problem("out-of-grid", k, "no position of the chunk grid") for k in outside
        )
        if missing:
            report.problems.extend(
                Problem("missing", keys.chunks.key(c), "not stored")
                for c in keys.all_coords()
                if c not in found
            )
        if found and not keys.chunks.chain.verifies_integrity:
            report.unchecked += len(found)
            report.unchecked_arrays.append(node_path)
            if require_checksums:
                report.problems.append(
                    Problem(
                        "unchecked",
                        node_path,
                        f"its stored objects ({len(found)}) carry no checksum: "
                        f"a changed byte that still decodes would go unseen",
                    )
                )
        arrays.append((keys, found))

    for node_path, meta in found_nodes.items():
        if meta.node_type == "group":
            report.problems.extend(_check_consolidated(store, node_path, found_nodes))
    # Sizes are asked of the store once, and only for a progress bar (one request per object
    # on an object store); boxes checked whole take theirs from here when known.
    sizes = (
        {k: store.getsize(k) or 0 for _, found in arrays for k in found.values()}
        if progress is not False
        else {}
    )
    total = sum(sizes.values())
    count = sum(len(found) for _, found in arrays)
    items = ((keys, group) for keys, found in arrays for group in _groups(keys, found))

    def check(item: tuple[ChunkKeys, list[_Located]]) -> tuple[int, list[Problem]]:
        keys, group = item
        if len(group) == 1:
            return _check_object(keys, group[0][1], missing)
        return _check_box(keys, group, missing, sizes)

    def done(item: tuple[ChunkKeys, list[_Located]], result: tuple[int, list[Problem]]) -> None:
        nbytes, problems = result
        report.objects += len(item[1])
        report.stored_bytes += nbytes
        report.problems.extend(problems)
        bar.update(nbytes, len(item[1]))

    word = object_word(keys.chunks.sharding is not None for keys, _ in arrays)
    with Progress(total, count, "verify", progress, chunk_word=word) as bar:
        run_bounded(check, items, 2 * config.num_threads, done)
    report.problems.sort(key=lambda p: (p.key, p.inner_chunk or ()))
    return report


def compare(
    source: StoreLike | Array | Group,
    dest: StoreLike | Array | Group,
    *,
    source_path: str = "",
    dest_path: str = "",
    values: bool | None = None,
    progress: bool | None = None,
    source_storage_options: dict[str, Any] | None = None,
    dest_storage_options: dict[str, Any] | None = None,
) -> VerifyReport:
    """Compare the copy at `dest_path` of `dest` with the array or hierarchy at `source_path`
    of `source` (directories, URLs, dicts, Stores, Arrays or Groups), as `copy` or `convert`
    made it; returns a VerifyReport (its `compared` says how) naming every difference.

    Parameters
    ----------
    source, dest : str, os.PathLike, URL, dict, Store, Array or Group
        The original and the copy (an Array or Group: below its path).
    source_path, dest_path : str, optional
        Paths below `source` and `dest`.
    values : bool or None, optional
        False: object by object, every stored key (metadata included) holding the same bytes
        in both, none missing from the copy and none only in it (a `copy`). True: value by
        value, every node there, with the same attributes (typed JSON: 1, 1.0 and true
        differ), each array with the same shape, dimension names (format 2's
        `_ARRAY_DIMENSIONS` included) and values, whatever its chunks, codecs, data type or
        format (a `convert`): values of one data type compare bit for bit (-0.0 is not 0.0),
        of two as the exact numbers or instants they mean (int64 2**53 + 1 is not float64
        2**53), NaN equal to NaN (tools.exact). None (the default): object by object where
        the copy stores every array in the source's format, codecs, chunks and data type,
        value by value otherwise; the report's `note` says why.
    progress : bool or None, optional
        Show a progress line on stderr (None: when stderr is a terminal).
    source_storage_options, dest_storage_options : dict, optional
        Options of the stores that URLs `source` and `dest` name.

    Returns
    -------
    VerifyReport
        Its `problems`: "differs", "missing" (in the source, not in the copy), "extra" (only
        in the copy) and "metadata" (does not read); differences are reported, not raised.
    """
    src_store, src_path = store_and_path(
        source, source_path, read_only=True, storage_options=source_storage_options
    )
    dst_store, dst_path = store_and_path(
        dest, dest_path, read_only=True, storage_options=dest_storage_options
    )
    if src_store == dst_store and src_path == dst_path:
        raise ValueError(f"source and copy are the same: {place(src_store, src_path)}")
    # Object by object only where it can succeed: a copy that stores an array otherwise
    # (another format, codecs or chunks) differs in every stored object of it.
    otherwise = None if values else _stored_otherwise(src_store, src_path, dst_store, dst_path)
    note = ""
    if values is None:
        values = otherwise is not None
        if values:
            note = (
                f"compared value by value: {otherwise}; values=False (--objects) compares "
                f"stored objects"
            )
    elif otherwise is not None:
        note = f"{otherwise}, so stored objects differ; values=True (--values) compares values"
    report = VerifyReport(compared="values" if values else "objects", note=note)
    (_compare_values if values else _compare_objects)(
        src_store, src_path, dst_store, dst_path, report, progress
    )
    report.problems.sort(key=lambda p: p.key)
    return report


def _relative(store: Store, path: str) -> dict[str, str]:
    """{key below `path`: key} of the keys stored below `path`."""
    head = len(path) + 1 if path else 0
    return {key[head:]: key for key in store.list_prefix(path)}


def _compare_objects(
    src_store: Store,
    src_path: str,
    dst_store: Store,
    dst_path: str,
    report: VerifyReport,
    progress: bool | None,
) -> None:
    """Every key below `src_path` holds the same bytes below `dst_path`, and no other is there."""
    src_keys, dst_keys = _relative(src_store, src_path), _relative(dst_store, dst_path)
    report.problems += [
        Problem("extra", dst_keys[rel], "not in the source")
        for rel in sorted(set(dst_keys) - set(src_keys))
    ]
    for path, meta in walk(src_store, src_path, lambda kind, key, detail: None):
        if meta.node_type == "group":
            report.groups += 1
        else:
            report.arrays += 1
    total = (
        sum(src_store.getsize(k) or 0 for k in src_keys.values()) if progress is not False else 0
    )

    def one(rel: str) -> tuple[int, Problem | None]:
        data = src_store.get(src_keys[rel])
        if data is None:  # deleted since the listing
            return 0, None
        if rel not in dst_keys:
            return len(data), Problem("missing", src_keys[rel], "not in the copy")
        copied = dst_store.get(dst_keys[rel])
        if copied is None:
            return len(data), Problem("missing", src_keys[rel], "deleted from the copy")
        if copied != data:
            return len(data), Problem(
                "differs",
                dst_keys[rel],
                f"{counted(len(copied), 'byte')} "
                f"where the source's {src_keys[rel]!r} holds "
                f"{len(data)}"
                if len(copied) != len(data)
                else f"other bytes than the source's {src_keys[rel]!r}",
            )
        return len(data), None

    def done(rel: str, result: tuple[int, Problem | None]) -> None:
        nbytes, problem = result
        report.objects += 1
        report.stored_bytes += nbytes
        if problem is not None:
            report.problems.append(problem)
        bar.update(nbytes)

    with Progress(total, len(src_keys), "verify", progress, chunk_word="keys") as bar:
        run_bounded(one, sorted(src_keys), 2 * config.num_threads, done)


def _node_pairs(
    src_store: Store, src_path: str, dst_store: Store, dst_path: str, on_problem: ProblemHandler
) -> Iterator[tuple[str, NodeMetadata, str, NodeMetadata]]:
    """(path, metadata, the copy's path, its metadata) of each node below `src_path` whose
    copy below `dst_path` is a node of its kind; `on_problem` hears of the others ("missing",
    "differs") and of nodes only in the copy ("extra")."""
    src_head = len(src_path) + 1 if src_path else 0
    dst_head = len(dst_path) + 1 if dst_path else 0
    copies = {
        path[dst_head:] if path != dst_path else "": meta
        for path, meta in walk(dst_store, dst_path, on_problem)
    }
    seen = set()
    for path, meta in walk(src_store, src_path, on_problem):
        rel = path[src_head:] if path != src_path else ""
        seen.add(rel)
        copy = copies.get(rel)
        there = join(dst_path, rel) if rel else dst_path
        if copy is None:
            on_problem("missing", path or "/", "not in the copy")
        elif copy.node_type != meta.node_type:
            on_problem(
                "differs",
                there or "/",
                f"a {copy.node_type} where the source has a {meta.node_type}",
            )
        else:
            yield path, meta, there, copy
    for rel in sorted(set(copies) - seen):
        on_problem("extra", join(dst_path, rel) if rel else dst_path, "not in the source")


def _stored_otherwise(
    src_store: Store, src_path: str, dst_store: Store, dst_path: str
) -> str | None:
    """Where the copy stores a node otherwise than the source (another format, or an array's
    other chunk grid, chunk keys, codecs, data type or fill value), said for the report;
    None when it stores every node it has as the source does."""
    for path, meta, there, copy in _node_pairs(
        src_store, src_path, dst_store, dst_path, lambda kind, key, detail: None
    ):
        name = repr(there or "/")
        if copy.zarr_format != meta.zarr_format:
            return (
                f"the copy's {name} is in format {copy.zarr_format}, the source's in "
                f"format {meta.zarr_format}"
            )
        if meta.node_type == "group":
            continue
        try:
            src = ChunkKeys(Array(src_store, path, meta, read_only=True))
            dst = ChunkKeys(Array(dst_store, there, copy, read_only=True))
        except ZarrcoreError:  # (compared objects name what does not read)
            continue
        first = (0,) * len(src.grid)
        if src.array.shape == dst.array.shape and (
            not stores_alike(src, dst, stored_encoding)
            or src.chunks.key(first) != dst.chunks.key(first)
        ):
            return (
                f"the copy stores {name} otherwise than the source (its chunks, chunk "
                f"keys, codecs, data type or fill value)"
            )
    return None


def _compare_values(
    src_store: Store,
    src_path: str,
    dst_store: Store,
    dst_path: str,
    report: VerifyReport,
    progress: bool | None,
) -> None:
    """Every node below `src_path` is below `dst_path` with the same attributes; arrays with
    the same shape, dimension names and values (tools.exact's rules), compared in boxes of
    chunks as verify decodes them."""

    def on_problem(kind: str, key: str, detail: str) -> None:
        report.problems.append(Problem(kind, key, detail))

    pairs = []
    compared: list[ChunkKeys] = []  # the source arrays
    for path, meta, there, copy in _node_pairs(
        src_store, src_path, dst_store, dst_path, on_problem
    ):
        where = there or "/"
        if meta.node_type == "group":
            report.groups += 1
            if not same_json(copy.attributes, meta.attributes):
                on_problem("differs", where, "other attributes than the source's")
            continue
        report.arrays += 1
        src = Array(src_store, path, meta, read_only=True)
        dst = Array(dst_store, there, copy, read_only=True)
        (names, attributes), (copy_names, copy_attributes) = (
            named_axes(meta, src.ndim),
            named_axes(copy, dst.ndim),
        )
        if not same_json(copy_attributes, attributes):
            on_problem("differs", where, "other attributes than the source's")
        if copy_names != names and dst.ndim == src.ndim:
            on_problem(
                "differs",
                where,
                f"dimension names {list(copy_names)} where the source's are {list(names)}",
            )
        if src.shape != dst.shape:
            on_problem("differs", where, f"shape {dst.shape} where the source's is {src.shape}")
            continue
        if not comparable(src.dtype, dst.dtype):
            on_problem(
                "differs",
                where,
                f"data type {dst.dtype} where the source's is "
                f"{src.dtype}: their values mean other things",
            )
            continue
        keys = ChunkKeys(src)
        compared.append(keys)
        box = _box_shape(keys.grid, math.prod(keys.chunks.chunk_shape) * src.dtype.itemsize)
        pairs += [
            (src, dst, keys, at, box)
            for at in np.ndindex(*(-(-n // b) for n, b in zip(keys.grid, box)))
        ]
    total = sum(keys.array.nbytes for keys in compared)
    count = sum(math.prod(keys.grid) for keys in compared)

    def one(
        item: tuple[Array, Array, ChunkKeys, tuple[int, ...], tuple[int, ...]],
    ) -> tuple[int, int, Problem | None]:
        src, dst, keys, at, box = item
        first = tuple(a * b for a, b in zip(at, box))
        last = tuple(min((a + 1) * b, n) - 1 for a, b, n in zip(at, box, keys.grid))
        region = tuple(
            slice(lo.start, hi.stop) for lo, hi in zip(keys.region(first), keys.region(last))
        )
        objects = math.prod(h - f + 1 for f, h in zip(first, last))
        try:
            want, got = src[region], dst[region]
        except ZarrcoreError as e:
            return (
                0,
                objects,
                Problem(
                    "differs", dst.path or "/", f"region {_spelled(region)} does not read: {e}"
                ),
            )
        at = first_difference(want, got)
        if at is not None:
            index = tuple(r.start + i for r, i in zip(region, at))
            return (
                want.nbytes,
                objects,
                Problem(
                    "differs",
                    dst.path or "/",
                    f"values differ in region {_spelled(region)}, first "
                    f"at {index}: {_value(got[at])} where the source holds {_value(want[at])}"
                    + (f" ({got.dtype} against {want.dtype})" if got.dtype != want.dtype else ""),
                ),
            )
        return want.nbytes, objects, None

    def done(item: Any, result: tuple[int, int, Problem | None]) -> None:
        nbytes, objects, problem = result
        report.objects += objects
        report.stored_bytes += nbytes
        if problem is not None:
            report.problems.append(problem)
        bar.update(nbytes, objects)

    word = object_word(keys.chunks.sharding is not None for keys in compared)
    with Progress(total, count, "verify", progress, chunk_word=word) as bar:
        run_bounded(one, pairs, 2 * config.num_threads, done)


def _spelled(region: tuple[slice, ...]) -> str:
    return "[" + ", ".join(f"{r.start}:{r.stop}" for r in region) + "]"


def _value(value: Any) -> str:
    """A value for a message; a NaN with its bits, which tell NaNs apart."""
    item = np.asarray(value)
    text = str(item[()])
    if item.dtype.kind in "fc" and np.isnan(item).any():
        text += f" (bits {item.astype(item.dtype.newbyteorder('>')).tobytes().hex()})"
    return text


def _comparable(meta: Any) -> str:
    """A node's metadata as canonical JSON text, without consolidated metadata of its own."""
    doc = dict(meta.to_json())
    doc.pop("consolidated_metadata", None)
    doc["attributes"] = meta.attributes
    return json.dumps(doc, sort_keys=True, default=str)


def _check_consolidated(
    store: Store, group_path: str, found_nodes: dict[str, Any]
) -> list[Problem]:
    """Problems ("consolidated") where the group's consolidated metadata, if it has any, does
    not list exactly the nodes below it with their own metadata."""
    try:
        _, consolidated = open_group_metadata(store, group_path, None, None)
    except ZarrcoreError as e:
        return [Problem("consolidated", group_path, str(e))]
    if consolidated is None:
        return []
    where = consolidated.where
    head = group_path + "/" if group_path else ""
    below = {
        p[len(head) :]: m for p, m in found_nodes.items() if p != group_path and p.startswith(head)
    }
    listed_paths = consolidated.paths()
    problems = []
    for rel in listed_paths:
        try:
            listed = consolidated.metadata(rel)
        except ZarrcoreError as e:
            problems.append(Problem("consolidated", where, f"entry {rel!r}: {e}"))
            continue
        if rel not in below:
            problems.append(Problem("consolidated", where, f"lists {rel!r}, which is no node"))
        elif _comparable(listed) != _comparable(below[rel]):
            problems.append(
                Problem("consolidated", where, f"metadata of {rel!r} differs from the node's own")
            )
    problems += [
        Problem("consolidated", where, f"does not list the node {rel!r}")
        for rel in sorted(set(below) - set(listed_paths))
    ]
    return problems


def _groups(keys: ChunkKeys, found: dict[tuple[int, ...], str]) -> list[list[_Located]]:
    """The stored objects `found` ({coords: key}) in groups checked together: for arrays that
    are not sharded, the chunks in each box of the grid of about SLAB_BYTES, where they fill at
    least half of it (a sparse box would cost the filling of its absent chunks); single
    objects otherwise, and for shards (each checked by its own slabs)."""
    ordered = sorted(found.items(), key=lambda item: item[1])
    chunk_shape = keys.chunks.chunk_shape
    if keys.chunks.sharding is not None or not keys.grid:
        return [[item] for item in ordered]
    box = _box_shape(keys.grid, math.prod(chunk_shape) * keys.array.dtype.itemsize)
    boxes: dict[tuple[int, ...], list[_Located]] = {}
    for coords, key in ordered:
        boxes.setdefault(tuple(c // b for c, b in zip(coords, box)), []).append((coords, key))
    groups = []
    for at, group in boxes.items():
        capacity = math.prod(min(b, n - a * b) for a, b, n in zip(at, box, keys.grid))
        groups.extend([group] if 2 * len(group) >= capacity else [[item] for item in group])
    return groups


def _box_shape(grid: tuple[int, ...], chunk_bytes: int) -> tuple[int, ...]:
    """Chunks per axis of a box of the grid holding about SLAB_BYTES, whole along the last
    axes first (so its region is close to contiguous)."""
    room = max(1, SLAB_BYTES // max(chunk_bytes, 1))
    box = []
    for n in reversed(grid):
        take = max(1, min(n, room))
        box.append(take)
        room //= take
    return tuple(reversed(box))


def _check_box(
    keys: ChunkKeys, group: list[_Located], missing: bool, sizes: dict[str, int]
) -> tuple[int, list[Problem]]:
    """(stored bytes, problems) of the stored chunks `group` ((coords, key) in one box of the
    grid): decoded together by one read of their region (the compiled batch where the codecs
    allow it), and one by one, to name each damaged chunk, only when that read fails.
    `sizes`: the stored sizes already known."""
    lows = [min(c[d] for c, _ in group) for d in range(len(keys.grid))]
    highs = [max(c[d] for c, _ in group) for d in range(len(keys.grid))]
    region = tuple(
        slice(lo * n, min((hi + 1) * n, s))
        for lo, hi, n, s in zip(lows, highs, keys.chunks.chunk_shape, keys.array.shape)
    )
    array = keys.array
    try:
        array.get_basic_selection(
            region, out=np.empty([r.stop - r.start for r in region], dtype=array.dtype)
        )
    except Exception:  # noqa: BLE001 - a damaged chunk: each one is decoded alone below
        nbytes, problems = 0, []
        for _, key in group:
            size, found = _check_object(keys, key, missing)
            nbytes += size
            problems += found
        return nbytes, problems
    return sum(
        sizes[key] if key in sizes else keys.chunks.store.getsize(key) or 0 for _, key in group
    ), []


def _check_object(keys: ChunkKeys, key: str, missing: bool) -> tuple[int, list[Problem]]:
    """(stored bytes, problems) of the stored object at `key`."""
    chunks = keys.chunks
    try:
        data = chunks.get_stored(key)
    except ValueTooLargeError as e:
        return chunks.store.getsize(key) or 0, [Problem("corrupt", key, str(e))]
    if data is None:
        return 0, ([Problem("missing", key, "deleted while being checked")] if missing else [])
    try:
        if chunks.sharding is not None:  # a shard
            damaged, empty = chunks.sharding.check(data, SLAB_BYTES)
            problems = [Problem("corrupt", key, error, coords) for coords, error in damaged]
            if missing:
                problems += [Problem("missing", key, "not stored", coords) for coords in empty]
            return len(data), problems
        chunks.chain.decode(data)
    except Exception as e:  # noqa: BLE001 - any decoder failure means the chunk is damaged
        detail = str(e) if isinstance(e, ZarrcoreError) else f"{type(e).__name__}: {e}"
        return len(data), [Problem("corrupt", key, detail)]
    return len(data), []
