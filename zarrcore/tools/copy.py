"""copy: every stored key below a path, byte for byte, from one store to another, in parallel.

Chunks go first and metadata last, so a copy cut short holds no node whose data is partly
missing behind complete-looking metadata; each key is written whole (atomically on a
directory). Any Store objects work, so copies run between directories, dicts and other stores.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..errors import NodeExistsError
from ..nodes.consolidated import V2_KEY
from ..nodes.node import METADATA_KEYS, join, node_exists
from ..runtime.concurrency import run_bounded
from ..runtime.config import config
from .hierarchy import place, source_and_dest
from .progress import Progress, counted

if TYPE_CHECKING:
    from ..metadata.types import StoreLike
    from ..nodes.array import Array
    from ..nodes.group import Group

__all__ = ["CopyReport", "copy"]

_METADATA = frozenset(METADATA_KEYS) | {V2_KEY}


@dataclasses.dataclass
class CopyReport:
    """What a copy did: `keys` copied and their `nbytes`."""

    keys: int = 0
    nbytes: int = 0
    skipped: int = 0

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict.

        Returns
        -------
        dict
        """
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        kept = f", {self.skipped} already there" if self.skipped else ""
        return f"copied {counted(self.keys, 'key')}, {counted(self.nbytes, 'byte')}{kept}"


def copy(
    source: StoreLike | Array | Group,
    dest: StoreLike,
    *,
    source_path: str = "",
    dest_path: str = "",
    overwrite: bool = False,
    resume: bool = False,
    progress: bool | None = None,
    source_storage_options: dict[str, Any] | None = None,
    dest_storage_options: dict[str, Any] | None = None,
) -> CopyReport:
    """Copy the keys below `source_path` of `source` to `dest_path` of `dest` (directories,
    URLs, dicts, Stores, an Array or Group as source). `resume` goes on with a copy that was
    cut short: chunks already at the destination with the source's size are kept (each was
    written whole); metadata, written last, is copied again. Returns a CopyReport.

    Parameters
    ----------
    source : str, os.PathLike, URL, dict, Store, Array or Group
        Where to copy from (an Array or Group: from its path).
    dest : str, os.PathLike, URL, dict or Store
        Where to copy to.
    source_path, dest_path : str, optional
        Paths below `source` and `dest`.
    overwrite : bool, optional
        Replace a node at the destination (every key below `dest_path` is deleted first).
    resume : bool, optional
        Finish a copy that was cut short, keeping the chunks already copied.
    progress : bool or None, optional
        Show a progress line on stderr (None: when stderr is a terminal).
    source_storage_options, dest_storage_options : dict, optional
        Options of the stores that URLs `source` and `dest` name.

    Returns
    -------
    CopyReport

    Raises
    ------
    ValueError
        Source and destination are the same place, or both `resume` and `overwrite`.
    NodeExistsError
        A node exists at the destination and neither `overwrite` nor `resume` is given.
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
    if src_store == dst_store and src_path == dst_path:
        raise ValueError("source and destination are the same")
    if resume and overwrite:
        raise ValueError(
            "resume=True keeps what the destination holds; overwrite=True replaces it: give one"
        )
    if node_exists(dst_store, dst_path) and not resume:
        if not overwrite:
            raise NodeExistsError(
                f"{place(dst_store, dst_path)} holds a node; replace it "
                f"with overwrite=True, or finish a copy with resume=True"
            )
        if dst_path:
            dst_store.delete_prefix(dst_path)
        else:
            for key in list(dst_store.list_prefix("")):
                dst_store.delete(key)
    head = len(src_path) + 1 if src_path else 0
    # Chunks first; then metadata, the deepest first, the root last.
    keys = sorted(
        src_store.list_prefix(src_path),
        key=lambda k: (k.rsplit("/", 1)[-1] in _METADATA) * (1000 - k.count("/")),
    )
    total = sum(src_store.getsize(k) or 0 for k in keys) if progress is not False else 0
    report = CopyReport()

    def one(key: str) -> tuple[int, bool]:
        """(bytes, copied): a key already there (on resume) is no copy, its bytes done."""
        target = join(dst_path, key[head:])
        if resume and key.rsplit("/", 1)[-1] not in _METADATA:
            size = dst_store.getsize(target)
            if size is not None and size == src_store.getsize(key):
                return size, False
        data = src_store.get(key)
        if data is None:  # deleted since the listing
            return 0, True
        dst_store.set(target, data)
        return len(data), True

    def done(key: str, result: tuple[int, bool]) -> None:
        nbytes, copied = result
        if copied:
            report.keys += 1
            report.nbytes += nbytes
        else:
            report.skipped += 1
        bar.update(nbytes)

    with Progress(total, len(keys), "copy", progress, chunk_word="keys") as bar:
        run_bounded(one, keys, 2 * config.num_threads, done)
    return report
