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
"""
from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..array import Array
from ..config import config
from ..consolidated import open_group_metadata
from ..errors import ValueTooLargeError, ZarrcoreError
from ..streaming import ChunkKeys
from .hierarchy import store_and_path, walk
from ..concurrency import run_bounded
from .progress import Progress

if TYPE_CHECKING:
    from .._types import StoreLike
    from ..group import Group
    from ..storage import Store

# Each shard is decoded in slabs of inner chunks of about this many bytes, and the chunks of
# arrays that are not sharded in boxes of about as many.
SLAB_BYTES = 64 << 20

#: A stored object: (its grid coords, its key).
_Located = tuple[tuple[int, ...], str]


@dataclasses.dataclass
class Problem:
    """One finding: `kind` is "corrupt", "missing", "out-of-grid", "stray" or "metadata"."""

    # also "consolidated": consolidated metadata that does not match the nodes; "unchecked":
    # an array whose stored objects carry no checksum (with require_checksums)
    kind: str
    key: str
    detail: str = ""
    inner_chunk: tuple[int, ...] | None = None  # the inner chunk of a shard it concerns, if one

    def __str__(self) -> str:
        where = (self.key if self.inner_chunk is None
                 else f"{self.key} inner chunk {self.inner_chunk}")
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
            "ok": self.ok, "arrays": self.arrays, "groups": self.groups, "objects": self.objects,
            "stored_bytes": self.stored_bytes, "unchecked_objects": self.unchecked,
            "unchecked_arrays": self.unchecked_arrays,
            "problems": [{"kind": p.kind, "key": p.key, "detail": p.detail,
                          "inner_chunk": None if p.inner_chunk is None else list(p.inner_chunk)}
                         for p in self.problems],
        }

    def summary(self) -> str:
        """One line: objects, bytes, arrays and groups checked, the number of problems, and
        of the objects that carry no checksum ("all well" only when there are none of either).

        Returns
        -------
        str
        """
        verdict = (f"{len(self.problems)} problems" if self.problems
                   else "no damage found" if self.unchecked else "all well")
        if self.unchecked:
            verdict += (f"; {self.unchecked} objects (of {len(self.unchecked_arrays)} arrays) "
                        f"carry no checksum and cannot be proven intact")
        return (f"{self.objects} stored objects ({self.stored_bytes} bytes) in {self.arrays} "
                f"arrays and {self.groups} groups: " + verdict)

    def __str__(self) -> str:
        return "\n".join([*map(str, self.problems), self.summary()])


def verify(source: StoreLike | Array | Group, path: str = "", *, missing: bool = False,
           require_checksums: bool = False, progress: bool | None = None,
           storage_options: dict[str, Any] | None = None) -> VerifyReport:
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
        report.problems.extend(Problem("out-of-grid", k, "no position of the chunk grid")
                               for k in outside)
        if missing:
            report.problems.extend(Problem("missing", keys.chunks.key(c), "not stored")
                                   for c in keys.all_coords() if c not in found)
        if found and not keys.chunks.chain.verifies_integrity:
            report.unchecked += len(found)
            report.unchecked_arrays.append(node_path)
            if require_checksums:
                report.problems.append(Problem(
                    "unchecked", node_path, f"its {len(found)} stored objects carry no checksum: a "
                    f"changed byte that still decodes would go unseen"))
        arrays.append((keys, found))

    for node_path, meta in found_nodes.items():
        if meta.node_type == "group":
            report.problems.extend(_check_consolidated(store, node_path, found_nodes))
    # Sizes are asked of the store once, and only for a progress bar (one request per object
    # on an object store); boxes checked whole take theirs from here when known.
    sizes = ({k: store.getsize(k) or 0 for _, found in arrays for k in found.values()}
             if progress is not False else {})
    total = sum(sizes.values())
    count = sum(len(found) for _, found in arrays)
    items = ((keys, group) for keys, found in arrays for group in _groups(keys, found))

    def check(item: tuple[ChunkKeys, list[_Located]]) -> tuple[int, list[Problem]]:
        keys, group = item
        if len(group) == 1:
            return _check_object(keys, group[0][1], missing)
        return _check_box(keys, group, missing, sizes)

    def done(item: tuple[ChunkKeys, list[_Located]],
             result: tuple[int, list[Problem]]) -> None:
        nbytes, problems = result
        report.objects += len(item[1])
        report.stored_bytes += nbytes
        report.problems.extend(problems)
        bar.update(nbytes, len(item[1]))

    with Progress(total, count, "verify", progress) as bar:
        run_bounded(check, items, 2 * config.num_threads, done)
    report.problems.sort(key=lambda p: (p.key, p.inner_chunk or ()))
    return report


def _comparable(meta: Any) -> str:
    """A node's metadata as canonical JSON text, without consolidated metadata of its own."""
    doc = dict(meta.to_json())
    doc.pop("consolidated_metadata", None)
    doc["attributes"] = meta.attributes
    return json.dumps(doc, sort_keys=True, default=str)


def _check_consolidated(store: Store, group_path: str,
                        found_nodes: dict[str, Any]) -> list[Problem]:
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
    below = {p[len(head):]: m for p, m in found_nodes.items()
             if p != group_path and p.startswith(head)}
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
            problems.append(Problem("consolidated", where,
                                    f"metadata of {rel!r} differs from the node's own"))
    problems += [Problem("consolidated", where, f"does not list the node {rel!r}")
                 for rel in sorted(set(below) - set(listed_paths))]
    return problems


def _groups(keys: ChunkKeys, found: dict[tuple[int, ...], str]) -> list[list[_Located]]:
    """The stored objects `found` ({coords: key}) in groups checked together: for arrays that
    are not sharded, the chunks in each box of the grid of about SLAB_BYTES, where they fill at
    least half of it (a sparse box would cost the filling of its absent chunks); single
    objects otherwise, and for shards (each checked by its own slabs)."""
    ordered = sorted(found.items(), key=lambda item: item[1])
    chunk_shape = keys.chunks.chunk_shape
    if keys.chunks.partial is not None or not keys.grid:
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


def _check_box(keys: ChunkKeys, group: list[_Located], missing: bool,
               sizes: dict[str, int]) -> tuple[int, list[Problem]]:
    """(stored bytes, problems) of the stored chunks `group` ((coords, key) in one box of the
    grid): decoded together by one read of their region (the compiled batch where the codecs
    allow it), and one by one, to name each damaged chunk, only when that read fails.
    `sizes`: the stored sizes already known."""
    lows = [min(c[d] for c, _ in group) for d in range(len(keys.grid))]
    highs = [max(c[d] for c, _ in group) for d in range(len(keys.grid))]
    region = tuple(slice(lo * n, min((hi + 1) * n, s))
                   for lo, hi, n, s in zip(lows, highs, keys.chunks.chunk_shape, keys.array.shape))
    array = keys.array
    try:
        array.get_basic_selection(region, out=np.empty([r.stop - r.start for r in region],
                                                       dtype=array.dtype))
    except Exception:  # noqa: BLE001 - a damaged chunk: each one is decoded alone below
        nbytes, problems = 0, []
        for _, key in group:
            size, found = _check_object(keys, key, missing)
            nbytes += size
            problems += found
        return nbytes, problems
    return sum(sizes[key] if key in sizes else keys.chunks.store.getsize(key) or 0
               for _, key in group), []


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
        if chunks.partial is not None:  # a shard
            damaged, empty = chunks.partial.check(data, SLAB_BYTES)
            problems = [Problem("corrupt", key, error, coords) for coords, error in damaged]
            if missing:
                problems += [Problem("missing", key, "not stored", coords) for coords in empty]
            return len(data), problems
        chunks.chain.decode(data)
    except Exception as e:  # noqa: BLE001 - any decoder failure means the chunk is damaged
        detail = str(e) if isinstance(e, ZarrcoreError) else f"{type(e).__name__}: {e}"
        return len(data), [Problem("corrupt", key, detail)]
    return len(data), []
