"""What the Python layer needs of the operating system beyond the calls every platform's `os`
has: the POSIX calls where Python offers them (Linux, macOS), and their stand-ins where it does
not (Windows). Each choice is made once, at import, by what `os` and `fcntl` provide; the rest
of the package calls these names through the module (`portable.pread(...)`), so that a
reload re-chooses them everywhere (tests/test_portable.py runs the stand-ins on Linux so).

- `pread`: os.pread, else the compiled positioned read of csrc/os/zc_os.h (`_files.pread`),
  which on Windows moves the descriptor's file position.
- `reading_descriptor`: a descriptor for `pread`s of a file that Python's buffered file
  objects also use. POSIX: a duplicate (preads leave the shared position alone). Otherwise
  the path opened again, with a position of its own.
- `try_lock_exclusive`: a whole-file lock that no other open file of it may hold (flock, else
  csrc/os/zc_os.h's lock: LockFileEx on one byte far past the data on Windows).
- `directory_locked`: a directory held locked whole (flock) across processes, waiting for it;
  where Python cannot open a directory (Windows), nothing.
- `walk_files` and `list_names`: directories read from a descriptor where Python can (it has
  os.fwalk exactly there), else by path with os.scandir.
- `at_fork_in_child`, `before_fork`: os.register_at_fork where processes fork, else nothing.
- `file_name_problem`: why a key cannot name a file here: on Windows a ':' opens an alternate
  stream of another file and CON or NUL a device, so such keys would put data elsewhere.
"""

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterator

from .._native import files as _files

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "at_fork_in_child",
    "before_fork",
    "directory_locked",
    "file_name_problem",
    "list_names",
    "pread",
    "reading_descriptor",
    "try_lock_exclusive",
    "walk_files",
    "windows_file_name_problem",
]


if hasattr(os, "pread"):
    pread = os.pread

    def reading_descriptor(fd: int, path: str) -> int:
        """A descriptor of the file open as `fd` (at `path`) for `pread`."""
        return os.dup(fd)
else:
    pread = _files.pread

    def reading_descriptor(fd: int, path: str) -> int:
        """A descriptor of the file open as `fd` (at `path`) for `pread`: opened anew, since
        these preads move the position that a duplicate would share with `fd`'s users."""
        return os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))


if fcntl is not None:

    def try_lock_exclusive(fd: int) -> bool:
        """Lock the open file `fd` as a whole unless another open file of it holds the lock:
        True when taken; closing the file drops it."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
else:
    try_lock_exclusive = _files.try_lock_whole


if fcntl is not None:

    @contextlib.contextmanager
    def directory_locked(path: str) -> Iterator[None]:
        """Hold the directory `path` locked whole (flock), waiting for it: against every other
        open of it, in this process too; closing it drops the lock, as a holder's death does."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
else:

    @contextlib.contextmanager
    def directory_locked(path: str) -> Iterator[None]:
        """Nothing: Python opens no directory on Windows."""
        yield


if hasattr(os, "fwalk"):

    def walk_files(fd: int, top: str) -> Iterator[tuple[str, list[str]]]:
        """(directory path, names of its files) of `top` (open as the directory `fd`) and
        every directory below it, parents first; links to directories are not descended
        into, and a subdirectory that cannot be read is left out."""
        for dirpath, _, filenames, _ in os.fwalk(".", dir_fd=fd):
            yield os.path.normpath(os.path.join(top, dirpath)), filenames

    def list_names(fd: int, path: str) -> list[str]:
        """The names in the directory `path`, open as `fd`."""
        return os.listdir(fd)
else:

    def walk_files(fd: int, top: str) -> Iterator[tuple[str, list[str]]]:
        """(directory path, names of its files) of `top` (open as the directory `fd`) and
        every directory below it, parents first; links and junctions to directories are not
        descended into, and a subdirectory that cannot be read is left out. Read by path, as
        this Python cannot read a directory from a descriptor: `fd` only holds `top` open."""
        pending = [top]
        while pending:
            directory = pending.pop()
            try:
                entries = os.scandir(directory)
            except OSError:
                if directory is top:
                    raise
                continue
            files: list[str] = []
            with entries:
                for entry in entries:
                    if not _is_dir(entry):
                        files.append(entry.name)
                    elif _is_plain_dir(entry):
                        pending.append(entry.path)
            yield directory, files

    def list_names(fd: int, path: str) -> list[str]:
        """The names in the directory `path`, open as `fd`."""
        return os.listdir(path)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Is `entry` a directory or a link to one (a link that cannot be followed is not)?"""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_plain_dir(entry: os.DirEntry[str]) -> bool:
    """Is `entry` a directory itself, not a link or (Windows) a junction or other reparse
    point leading to one?"""
    if not entry.is_dir(follow_symlinks=False):
        return False
    attributes = getattr(entry.stat(follow_symlinks=False), "st_file_attributes", 0)
    return not attributes & stat.FILE_ATTRIBUTE_REPARSE_POINT


if hasattr(os, "register_at_fork"):

    def at_fork_in_child(function: Callable[[], object]) -> None:
        """Call `function` in every child process forked from now on."""
        os.register_at_fork(after_in_child=function)

    def before_fork(function: Callable[[], object]) -> None:
        """Call `function` in this process before each fork from now on."""
        os.register_at_fork(before=function)
else:

    def at_fork_in_child(function: Callable[[], object]) -> None:
        """Nothing: this system does not fork."""

    def before_fork(function: Callable[[], object]) -> None:
        """Nothing: this system does not fork."""


# Characters Windows refuses in file names, and its device names (with any extension).
_WINDOWS_BAD_CHARS = re.compile(r'[<>:"|?*\x00-\x1f]')
_WINDOWS_DEVICES = re.compile(
    r"(CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3])(\..*)?", re.IGNORECASE
)


def windows_file_name_problem(key: str) -> str | None:
    """Why the '/'-separated `key` cannot name a file on Windows, or None."""
    for part in key.split("/"):
        if _WINDOWS_BAD_CHARS.search(part):
            return f"segment {part!r} holds a character Windows file names cannot"
        if _WINDOWS_DEVICES.fullmatch(part.rstrip(" .")):
            return f"segment {part!r} names a Windows device"
        if part.endswith((" ", ".")):
            return f"segment {part!r} ends in a space or dot, which Windows drops"
    return None


if os.name == "nt":
    file_name_problem = windows_file_name_problem
else:

    def file_name_problem(key: str) -> str | None:
        """None: every key validate_key allows names a file here."""
        return None
