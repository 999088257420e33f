"""Local directory store: one file per key, atomic writes, advisory file locks."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._native import memory as _memory
from .._native.files import TEMP_PREFIX, FileRoot, is_lock_file, pread_into, unlock_file
from ..errors import InvalidKeyError, StoreError, ZarrcoreError
from ..runtime import portable
from ..runtime.config import config
from .base import ByteRange, RangeReader, ReadBytes, Store, validate_key, validate_prefix

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["LocalStore", "POOLED_READ_BYTES", "SELF_LOCKED_DOCUMENTS"]


# The documents a group's metadata lock locks in place (lock(replaced_last=True)): written
# with write permission for whoever may write their directory, so every such user can lock them.
SELF_LOCKED_DOCUMENTS = ("zarr.json", ".zgroup")
# Reads of this many bytes or more go into kept blocks (_FileReader.get_ranges): whole blocks
# of zarrcore._native.memory's pool, not pieces of shared ones, which a kept read would hold.
POOLED_READ_BYTES = _memory.POOL_MIN_BYTES
# Missing, as the store sees it: nothing there, or something that is not a file.
_MISSING = (FileNotFoundError, NotADirectoryError, IsADirectoryError)


class _FileReader:
    """Byte ranges of an open file (LocalStore.reader)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size

    def get_ranges(self, ranges: Sequence[ByteRange]) -> list[ReadBytes]:
        """The bytes of each (start, stop) range, Python slice bounds (short past the end).
        Ranges of POOLED_READ_BYTES or more are read into kept blocks (zarrcore._native.memory),
        given back when the caller drops them: fresh memory for each would cost a page fault
        and the kernel's zeroing per page, on every read."""
        out: list[ReadBytes] = []
        for start, stop in ranges:
            lo, hi, _ = slice(start, stop).indices(self.size)
            if hi - lo < POOLED_READ_BYTES:
                out.append(portable.pread(self.fd, max(hi - lo, 0), lo))
                continue
            block = _memory.empty((hi - lo,), np.uint8)
            got = pread_into(self.fd, block, lo)
            out.append(memoryview(block)[:got].toreadonly())
        return out


def _store_error(key: str, error: OSError) -> OSError:
    """An OSError met on `key` as a StoreError naming the key (a ZarrcoreError as it is)."""
    if isinstance(error, ZarrcoreError):
        return error
    return StoreError(error.errno, f"key {key!r}: {error.strerror or error}")


class LocalStore(Store):
    """A store in a directory of the local (or a shared) file system.

    Every file is reached through the store's FileRoot (zarrcore._native.files, csrc/files/zc_fs.h),
    as the compiled batches reach them. Key locks live in a lock file beside the hierarchy the node
    a key belongs to is in, out of the store (csrc/files/zc_key_lock.h), but for keys locked
    `replaced_last` (a group's metadata), which lock their own file. Temporary files of writers a
    kill left behind are removed when a writable store lists their directory
    (`remove_stale_temporary_files` does it for a whole prefix). Symlinks in the store are followed;
    `confined=True` (default: `zarrcore.config.confine_local_stores`) resolves every path beneath
    the root's directory, so a key whose path leads outside `root` raises OutsideStoreError instead.
    """

    supports_locks = True

    def __init__(
        self, root: str | os.PathLike[str], read_only: bool = False, confined: bool | None = None
    ) -> None:
        super().__init__(read_only)
        self.root = os.path.abspath(os.fspath(root))
        self.confined = config.confine_local_stores if confined is None else bool(confined)
        self.native_root = self.root
        self._file_root: FileRoot | None = None
        self._file_root_guard = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_file_root"], state["_file_root_guard"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._file_root = None
        self._file_root_guard = threading.Lock()

    def _identity(self) -> Hashable:
        return self.root

    def __repr__(self) -> str:
        return f"LocalStore({self.root!r})"

    def files(self, create: bool = False) -> FileRoot:
        """The FileRoot every file of the store is reached through (the compiled batches copy
        it). A confined store opens its root directory once, making it first when `create`
        (and the store is writable); FileNotFoundError when it does not exist."""
        files = self._file_root
        if files is None:
            with self._file_root_guard:
                if self._file_root is None:
                    if self.confined and create and not self.read_only:
                        os.makedirs(self.root, exist_ok=True)
                    self._file_root = FileRoot(self.root, self.confined)
                files = self._file_root
        return files

    readers_keep_one_version = True  # (reader holds the file open)

    def local_path(self, prefix: str) -> str:
        return self._dir(validate_prefix(prefix))

    def _path(self, key: str) -> str:
        problem = portable.file_name_problem(validate_key(key))
        if problem:
            raise InvalidKeyError(f"store key {key!r} cannot be a file in {self.root!r}: {problem}")
        return os.path.join(self.root, *key.split("/"))

    def _dir(self, prefix: str) -> str:
        """The directory of `prefix` ('' or a validated prefix)."""
        return self._path(prefix) if prefix else self.root

    def _open(self, key: str, path: str, directory: bool = False) -> int | None:
        """A descriptor of `path` (of `key`; a directory with `directory`), None when nothing
        is stored there."""
        try:
            fd: int = self.files().open(path, directory)  # (its stub is untyped)
        except _MISSING:
            return None
        except OSError as e:  # a symlink loop, no permission, a path out of a confined store...
            raise _store_error(key, e) from e
        return fd

    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        fd = self._open(key, self._path(key))
        if fd is None:
            return None
        try:
            with open(fd, "rb") as f:
                if start is None and stop is None:
                    return f.read()
                size = os.fstat(f.fileno()).st_size
                lo, hi, _ = slice(start, stop).indices(size)
                f.seek(lo)
                return f.read(max(hi - lo, 0))
        except IsADirectoryError:
            return None
        except OSError as e:
            raise _store_error(key, e) from e

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None:
        with self.reader(key) as reader:
            return None if reader is None else reader.get_ranges(ranges)

    @contextlib.contextmanager
    def reader(self, key: str, version: Any = None) -> Iterator[RangeReader | None]:
        """As Store.reader, from the open file: a replacement renamed over it meanwhile does not
        change what the reader reads."""
        fd = self._open(key, self._path(key))
        if fd is None:
            yield None
            return
        try:
            is_file = stat.S_ISREG(os.fstat(fd).st_mode)
            yield _FileReader(fd) if is_file else None
        finally:
            os.close(fd)

    def _stat(self, key: str) -> os.stat_result | None:
        """os.fstat of what `key`'s path names (following links), None when nothing is."""
        fd = self._open(key, self._path(key))
        if fd is None:
            return None
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def getsize(self, key: str) -> int | None:
        st = self._stat(key)
        return st.st_size if st is not None and stat.S_ISREG(st.st_mode) else None

    def set(self, key: str, value: ReadableBuffer) -> None:
        self.check_writable(key)
        # Written beside the target and renamed, so a reader never sees a torn file.
        try:
            self.files(create=True).replace(
                self._path(key), value, shared=key.rpartition("/")[2] in SELF_LOCKED_DOCUMENTS
            )
        except OSError as e:  # a directory where the key should be, a full disk...
            raise _store_error(key, e) from e

    def set_copy(self, key: str, source: Store, source_key: str) -> bool:
        # From another file, the system copies the bytes (copy_file_range where it can).
        with source.reader(source_key) as reader:
            if not isinstance(reader, _FileReader):
                return False
            self.check_writable(key)
            try:
                self.files(create=True).replace_copy(self._path(key), reader.fd, reader.size)
            except OSError as e:
                raise _store_error(key, e) from e
        return True

    def delete(self, key: str) -> None:
        self.check_writable(key)
        try:
            self.files().unlink(self._path(key))
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as e:
            raise _store_error(key, e) from e

    def exists(self, key: str) -> bool:
        st = self._stat(key)
        return st is not None and stat.S_ISREG(st.st_mode)

    def _visible(self, directory: str, names: Iterable[str]) -> list[str]:
        """`names` of `directory` without the store's own files; stale temporary files among
        them are removed on the way when the store is writable."""
        out = []
        for name in names:
            if not self.own_file(name):
                out.append(name)
            elif name.startswith(TEMP_PREFIX) and not self.read_only:
                self.files().remove_stale_temp(os.path.join(directory, name))
        return out

    def own_file(self, name: str) -> bool:
        return name.startswith(TEMP_PREFIX) or is_lock_file(name)

    def _walk(self, prefix: str) -> Iterator[tuple[str, list[str]]]:
        """(directory path, names of its files) of every directory below `prefix`'s, walked
        from a descriptor of it where the system allows (links to directories are not
        descended into: portable.walk_files)."""
        prefix = validate_prefix(prefix)
        top = self._dir(prefix)
        fd = self._open(prefix, top, directory=True)
        if fd is None:
            return
        try:
            yield from portable.walk_files(fd, top)
        except OSError as e:
            raise _store_error(prefix, e) from e
        finally:
            os.close(fd)

    def list_prefix(self, prefix: str) -> list[str]:
        keys = []
        for dirpath, filenames in self._walk(prefix):
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            for name in self._visible(dirpath, filenames):
                keys.append(name if rel == "." else f"{rel}/{name}")
        return keys

    def list_dir(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        base = self._dir(prefix)
        fd = self._open(prefix, base, directory=True)
        if fd is None:
            return []
        try:
            return sorted(self._visible(base, portable.list_names(fd, base)))
        except OSError as e:
            raise _store_error(prefix, e) from e
        finally:
            os.close(fd)

    def missing_detail(self, prefix: str) -> str:
        prefix = validate_prefix(prefix)
        directory = self._dir(prefix)
        fd = self._open(prefix, directory)
        if fd is None:
            return f"the directory {directory!r} does not exist"
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                return f"the directory {directory!r} is not a directory"
        finally:
            os.close(fd)
        return ""

    def rename_prefix(self, source: str, dest: str) -> None:
        """As Store.rename_prefix, in one rename of the directory."""
        self.check_writable(dest)
        try:
            self.files(create=True).rename(self._path(source), self._path(dest))
        except OSError as e:
            raise _store_error(source, e) from e

    def remove_stale_temporary_files(self, prefix: str = "") -> int:
        """Remove the temporary files under `prefix` that no live writer holds (writers killed
        before renaming them into place left them); the number removed."""
        self.check_writable(prefix or "/")
        removed = 0
        for dirpath, filenames in self._walk(prefix):
            for name in filenames:
                if name.startswith(TEMP_PREFIX):
                    removed += self.files().remove_stale_temp(os.path.join(dirpath, name))
        return removed

    @contextlib.contextmanager
    def creation_lock(self) -> Iterator[None]:
        """Store.creation_lock: the root directory locked whole, which makes no file in or
        beside the store (a key lock would make the hierarchy's lock file before its time)."""
        if self.read_only:  # (creating raises ReadOnlyError)
            yield
            return
        os.makedirs(self.root, exist_ok=True)
        with portable.directory_locked(self.root):
            yield

    @contextlib.contextmanager
    def lock(self, key: str, node: str = "", *, replaced_last: bool = False) -> Iterator[None]:
        """Exclusive across threads, processes and hosts that reach the node's directory, by
        any path; the lock's holder keeps it until it leaves the block or dies, or, when
        `replaced_last`, until it replaces `key`. FileNotFoundError when `replaced_last` and
        there is no `key`."""
        key = validate_key(key)
        node = validate_prefix(node)
        if node and not key.startswith(node + "/"):
            raise ValueError(f"key {key!r} is not below node {node!r}")
        with self.thread_lock(key):
            files = self.files(create=True)
            if replaced_last:
                fd = files.lock_file(self._path(key), key)
                try:
                    yield
                finally:
                    unlock_file(fd)
                return
            rel = key[len(node) + 1 :] if node else key
            node_dir = self._dir(node)
            held = files.lock_key(node_dir, rel)
            try:
                yield
            finally:
                held.release()
