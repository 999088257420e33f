"""A store in one zip file, read and written as zarr-python's ZipStore does (zip64, members
stored uncompressed by default, one member per key, no directory entries).

Write semantics (those of a zip file, and of zarr-python's ZipStore):
- Members are only ever appended. Writing a key again appends a second member of that name;
  every reader (this store, zarr-python, Python's zipfile) reads the last one, and the bytes
  of the earlier one stay in the file. Rewriting a chunk many times grows the file.
- A key cannot be deleted: `delete` of a stored key raises DeleteUnsupportedError (a missing
  key is no error). So an array whose stored chunks are rewritten with only the fill value
  (write_empty_chunks off; chunks never stored stay unstored), or a node
  overwritten in place, cannot be stored in a zip: write a new zip instead (mode "w").
- The zip's central directory is written when the store is closed (`close()`, the end of a
  `with` block, or when the store is garbage collected or the interpreter exits); until
  then other readers do not see the new members, and a writer killed before it leaves a
  zip that has to be repaired. One process writes a zip at a time (an exclusive lock on
  the file); threads of that process may write and read it at once.

Compressed members (deflate, bzip2, lzma) are inflated step by step, never more than a read
asks for: a member read whole may inflate to at most `config.max_stored_bytes` (see
zarrcore.config) and to no more than the size its directory entry declares; more is refused
(ValueTooLargeError), whatever the entry says.
"""

from __future__ import annotations

import bz2
import errno
import lzma
import os
import struct
import threading
import time
import warnings
import weakref
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import IO, TYPE_CHECKING, Literal, overload

from .._native.cache import version_settled
from ..errors import DeleteUnsupportedError, StoreError
from ..runtime import portable
from ..runtime.config import config
from .base import (
    UNCHANGED,
    ByteRange,
    Fetched,
    Request,
    Store,
    Unchanged,
    Version,
    too_large,
    validate_key,
    validate_prefix,
)

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["ZipStore"]

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... name length, extra length
_LOCAL_HEADER_SIZE = 30
# Compressed bytes read from the file, and most bytes inflated, at a time while inflating a
# member (a part before the range read is dropped at once).
_INFLATE_STEP = 1 << 16
_INFLATE_OUT = 1 << 22
_WHOLE_READ = (
    "a zip member read whole may inflate to (config.max_chunk_bytes with slack; "
    "raise it with zarrcore.config.set(max_chunk_bytes=...))"
)
#: Where a member's data lies, as its directory entry declares it: (start in the file,
#: compressed size, size, compression method, CRC).
_Member = tuple[int, int, int, int, int]


#: A zip's opening as its members' versions name it (`_opening_name`).
_Opening = tuple[int, int, int, int, int] | tuple[bytes]


def _opening_name(fd: int) -> _Opening:
    """The name of the opening of the zip file `fd` in its members' versions, which with a
    member's place, sizes and CRC names the member's bytes in every process (a cache shared
    between processes compares them): the file's device, inode, size and modification and
    change times (ns), once its change time is as old as the decoded-chunk cache's settling
    time, so that any later change stamps another (file systems may stamp coarsely); before,
    16 random bytes, which name this opening alone. Members are only appended while the zip
    is open, so a member's place keeps its bytes throughout an opening."""
    st = os.fstat(fd)
    if version_settled(st.st_ctime_ns):
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
    return (os.urandom(16),)


class _Inflater:
    """The decompressor of one member's data (zip method `method`), giving at most `n` bytes
    per call of `inflate`: the input is fed in steps, the output never made whole."""

    def __init__(self, method: int) -> None:
        # Deflate's decompressor, else bzip2's or lzma's (None until lzma's can be made from
        # the properties that start the data).
        self._zlib = zlib.decompressobj(-15) if method == zipfile.ZIP_DEFLATED else None
        self._d: bz2.BZ2Decompressor | lzma.LZMADecompressor | None = (
            bz2.BZ2Decompressor() if method == zipfile.ZIP_BZIP2 else None
        )
        self._head = b""

    @property
    def wants_input(self) -> bool:
        if self._zlib is not None:
            return not self._zlib.unconsumed_tail
        return self._d is None or self._d.needs_input

    @property
    def eof(self) -> bool:
        if self._zlib is not None:
            return self._zlib.eof
        return self._d is not None and self._d.eof

    def inflate(self, data: bytes, n: int) -> bytes:
        """Up to `n` bytes of output from what was fed so far and `data`."""
        if self._zlib is not None:
            return self._zlib.decompress(self._zlib.unconsumed_tail + data, n)
        if self._d is None:
            # zip's lzma: a 2-byte version, the size of the properties, the properties
            # (lc, lp and pb in one byte, then the dictionary size), then a raw LZMA1 stream.
            data = self._head = self._head + data
            if len(data) < 4 or len(data) < 4 + int.from_bytes(data[2:4], "little"):
                return b""
            props = data[4 : 4 + int.from_bytes(data[2:4], "little")]
            if len(props) != 5:
                raise lzma.LZMAError("bad lzma properties")
            lclppb, dict_size = props[0], int.from_bytes(props[1:5], "little")
            self._d = lzma.LZMADecompressor(
                lzma.FORMAT_RAW,
                filters=[
                    {
                        "id": lzma.FILTER_LZMA1,
                        "dict_size": dict_size,
                        "lc": lclppb % 9,
                        "lp": lclppb // 9 % 5,
                        "pb": lclppb // 45,
                    }
                ],
            )
            data = data[4 + len(props) :]
        return self._d.decompress(data, n)


class _OpenZip:
    """A ZipStore's open zip, shared with its finalizer: the ZipFile, its file and the
    descriptor for preads of members' data (each None when not open). Each pread leases the
    descriptor (`readers`, under `idle`), and closing waits until no read holds it, so a
    read never uses a descriptor closed, or reused for another file, meanwhile."""

    def __init__(self) -> None:
        self.zip: zipfile.ZipFile | None = None
        self.file: IO[bytes] | None = None
        self.fd: int | None = None
        self.readers = 0
        self.idle = threading.Condition(threading.Lock())

    def lease(self) -> int | None:
        """The reading descriptor, held until `release` (None when closed)."""
        with self.idle:
            if self.fd is not None:
                self.readers += 1
            return self.fd

    def release(self) -> None:
        with self.idle:
            self.readers -= 1
            if not self.readers:
                self.idle.notify_all()


def _close_zip(state: _OpenZip) -> None:
    """Write the central directory, close the file and, once no read holds it, the reading
    descriptor, and so release the writer's lock, which the descriptor shares where it is a
    duplicate (a finalizer: it holds no reference to the store)."""
    with state.idle:
        zf, fp, fd = state.zip, state.file, state.fd
        state.zip = state.file = state.fd = None
        state.idle.wait_for(lambda: not state.readers)
    try:
        if zf is not None:
            try:
                zf.close()
            finally:
                if fp is not None:
                    fp.close()
    finally:
        if fd is not None:
            os.close(fd)


class ZipStore(Store):
    """Keys as members of the zip file at `path`. `mode`: "r" (read only), "a" (read and
    append; created on the first write), "w" (a new, empty zip on the first write)."""

    supports_listing = True
    supports_writes = True
    supports_deletes = False  # members are only ever appended
    supports_atomic_writes = True
    # One process writes a zip at a time (an exclusive lock on the file), so locking out
    # this process's threads locks out every writer.
    supports_locks = True
    # A member's version: the zip's opening (`_opening_name`) and the member's place, sizes
    # and CRC.
    versioned_reads = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        read_only: bool = False,
        mode: Literal["r", "a", "w"] | None = None,
        compression: int = zipfile.ZIP_STORED,
    ) -> None:
        mode = mode or ("r" if read_only else "a")
        if mode not in ("r", "a", "w"):
            raise ValueError(f"ZipStore mode must be 'r', 'a' or 'w', not {mode!r}")
        super().__init__(read_only or mode == "r")
        self.path = os.path.abspath(os.fspath(path))
        self.compression = compression
        self._mode: Literal["r", "a", "w"] = "r" if self.read_only else mode
        self._guard = threading.RLock()
        self._state = _OpenZip()
        self._finalizer: weakref.finalize[[_OpenZip], ZipStore] | None = None
        self._members: dict[str, _Member] = {}  # of the members read so far
        # The name of the zip's opening in its members' versions (None until opened).
        self._opening: _Opening | None = None

    def __repr__(self) -> str:
        return f"ZipStore({self.path!r})"

    def _identity(self) -> str:
        return self.path

    def __reduce__(self) -> tuple[type[ZipStore], tuple[str, bool]]:
        if not self.read_only:
            raise TypeError(
                f"{self!r} is open for writing; only a read-only ZipStore pickles "
                f"(one process writes a zip at a time)"
            )
        return (ZipStore, (self.path, True))

    def __enter__(self) -> ZipStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Write the central directory (when writing) and close the file."""
        with self._guard:
            if self._finalizer is not None:
                self._finalizer()
                self._finalizer = None
            self._members.clear()

    # -- the open zip -------------------------------------------------------
    @overload
    def _zip(self, for_writing: Literal[True]) -> zipfile.ZipFile: ...

    @overload
    def _zip(self, for_writing: bool = False) -> zipfile.ZipFile | None: ...

    def _zip(self, for_writing: bool = False) -> zipfile.ZipFile | None:
        """The open ZipFile (None when reading a zip that does not exist); call under _guard."""
        zf = self._state.zip
        if zf is not None:
            return zf
        if not for_writing and not os.path.exists(self.path):
            return None
        mode = self._mode
        fp: IO[bytes]
        try:
            if mode == "a" and not os.path.exists(self.path):
                mode = "w"
            if mode == "r":
                fp = open(self.path, "rb")
            else:  # emptied ("w") only once locked: another writer may be using it
                flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0)
                fp = open(os.open(self.path, flags, 0o666), "r+b")
            try:
                if mode != "r" and not portable.try_lock_exclusive(fp.fileno()):
                    raise StoreError(
                        errno.EBUSY,
                        f"{self!r}: another process is writing this "
                        f"zip (or another ZipStore of it, not closed)",
                    )
                if mode == "w":
                    fp.truncate(0)
                zf = zipfile.ZipFile(fp, mode, compression=self.compression, allowZip64=True)
            except BaseException:
                fp.close()
                raise
        except zipfile.BadZipFile as e:
            raise StoreError(errno.EIO, f"{self!r}: not a readable zip file: {e}") from e
        except StoreError:
            raise
        except OSError as e:
            raise StoreError(e.errno, f"{self!r}: {e.strerror or e}") from e
        if self._mode == "w":
            self._mode = "a"  # reopened after a close, it keeps what was written
        self._state.zip, self._state.file = zf, fp
        self._opening = _opening_name(fp.fileno())
        # Closes the ZipFile (and so its file and lock) when the store is collected or at exit.
        self._finalizer = weakref.finalize(self, _close_zip, self._state)
        # (zf.fp is fp)
        self._state.fd = portable.reading_descriptor(fp.fileno(), self.path)
        return zf

    def _pread(self, n: int, offset: int) -> bytes:
        """`n` bytes of the zip from `offset` on (fewer past its end). A store closed by
        another thread before the read starts is opened again, as for any read after close."""
        while (fd := self._state.lease()) is None:
            with self._guard:
                if self._zip() is None:
                    raise StoreError(errno.ENOENT, f"{self!r}: the zip file is gone")
        try:
            return portable.pread(fd, n, offset)
        except OSError as e:
            raise StoreError(e.errno, f"{self!r}: {e.strerror or e}") from e
        finally:
            self._state.release()

    def _member(self, key: str) -> _Member | None:
        """(start, compressed size, size, compression method, crc) of a member's data, as
        its directory entry declares them, or None when missing."""
        location = self._members.get(key)
        if location is not None:
            return location
        with self._guard:
            zf = self._zip()
            if zf is None:
                return None
            try:
                info = zf.getinfo(key)
            except KeyError:
                return None
            if info.flag_bits & 1 or info.compress_type not in (
                zipfile.ZIP_STORED,
                zipfile.ZIP_DEFLATED,
                zipfile.ZIP_BZIP2,
                zipfile.ZIP_LZMA,
            ):
                raise StoreError(
                    errno.EOPNOTSUPP,
                    f"key {key!r} of {self!r}: encrypted, or "
                    f"compressed by method {info.compress_type}",
                )
            if zf.mode != "r" and zf.fp is not None:  # (an open ZipFile has its fp)
                zf.fp.flush()
            header = self._pread(_LOCAL_HEADER_SIZE, info.header_offset)
            if len(header) < _LOCAL_HEADER_SIZE:
                raise StoreError(errno.EIO, f"key {key!r} of {self!r}: truncated zip member")
            signature, name_len, extra_len = _LOCAL_HEADER.unpack(header)
            if signature != b"PK\x03\x04":
                raise StoreError(errno.EIO, f"key {key!r} of {self!r}: bad zip member header")
            location = (
                info.header_offset + _LOCAL_HEADER_SIZE + name_len + extra_len,
                info.compress_size,
                info.file_size,
                info.compress_type,
                info.CRC,
            )
            self._members[key] = location
            return location

    # -- reads --------------------------------------------------------------
    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        parts = self.get_ranges(key, [(start, stop)])
        return None if parts is None else parts[0]

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> list[bytes] | None:
        key = validate_key(key)
        member = self._member(key)
        return None if member is None else self._read(key, member, ranges)

    def get_many_versioned(
        self,
        requests: Sequence[Request],
        known: Sequence[Version | None],
        concurrency: int | None = None,
    ) -> Iterator[tuple[int, Fetched | Unchanged, Version | None]]:
        for i, (key, ranges) in enumerate(requests):
            key = validate_key(key)
            while True:  # (a member and the opening it was found in)
                opening = self._opening
                member = self._member(key)
                if self._opening is opening:
                    break
            if member is None:
                yield i, None, None
                continue
            assert opening is not None  # (the member was found in it)
            version = (*opening, *member)
            if known[i] == version:
                yield i, UNCHANGED, version
            elif ranges is None:
                yield i, self._read(key, member, [(None, None)])[0], version
            else:
                yield i, self._read(key, member, ranges), version

    def _read(self, key: str, member: _Member, ranges: Sequence[ByteRange]) -> list[bytes]:
        """The bytes of each range of the member `member` of `key`."""
        offset, _, size, method, _ = member
        out: list[bytes] = []
        for start, stop in ranges:
            lo, hi, _ = slice(start, stop).indices(size)
            want = max(hi - lo, 0)
            if method != zipfile.ZIP_STORED:
                data = self._inflate(key, member, lo, lo + want) if want else b""
            else:
                data = self._pread(want, offset + lo) if want else b""
            if len(data) != want:
                raise StoreError(errno.EIO, f"key {key!r} of {self!r}: zip member cut short")
            out.append(data)
        return out

    def _inflate(self, key: str, member: _Member, lo: int, hi: int) -> bytes:
        """Bytes lo:hi of the compressed `member` at `key`, inflated in steps that make at most
        `hi` bytes in all and keep only those past `lo`. A read of all of it checks the CRC,
        and that the data inflates to no more than the size the directory declares."""
        offset, compressed, size, method, crc = member
        limit = config.max_stored_bytes
        if hi - lo > limit:
            raise too_large(self, key, limit, _WHOLE_READ)
        inflater, kept, made = _Inflater(method), bytearray(), 0
        position, end = offset, offset + compressed
        whole = lo == 0 and hi == size
        goal = hi + 1 if whole else hi  # a byte more shows an entry understating the size
        try:
            while made < goal and not inflater.eof:
                data = b""
                if inflater.wants_input:
                    data = self._pread(min(_INFLATE_STEP, end - position), position)
                    if not data:
                        break
                    position += len(data)
                part = inflater.inflate(data, min(goal - made, _INFLATE_OUT))
                if made + len(part) > lo:
                    kept += memoryview(part)[max(lo - made, 0) :]
                made += len(part)
            if whole and made > size:
                raise too_large(self, key, size, "its zip directory entry declares")
            if whole and made == size and zlib.crc32(kept) != crc:
                raise StoreError(
                    errno.EIO, f"key {key!r} of {self!r}: zip member fails its CRC check"
                )
        except (zlib.error, OSError, EOFError, lzma.LZMAError) as e:
            if isinstance(e, StoreError):
                raise
            raise StoreError(
                errno.EIO, f"key {key!r} of {self!r}: bad compressed zip member: {e}"
            ) from e
        return bytes(kept)

    def exists(self, key: str) -> bool:
        key = validate_key(key)
        with self._guard:
            zf = self._zip()
            return zf is not None and key in zf.NameToInfo

    def getsize(self, key: str) -> int | None:
        key = validate_key(key)
        with self._guard:
            zf = self._zip()
            info = None if zf is None else zf.NameToInfo.get(key)
            return None if info is None else info.file_size

    def _names(self) -> list[str]:
        with self._guard:
            zf = self._zip()
            return [] if zf is None else [n for n in zf.NameToInfo if not n.endswith("/")]

    def list_prefix(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        head = prefix + "/" if prefix else ""
        return [name for name in self._names() if name.startswith(head)]

    def list_dir(self, prefix: str) -> list[str]:
        prefix = validate_prefix(prefix)
        head = prefix + "/" if prefix else ""
        return sorted(
            {name[len(head) :].split("/", 1)[0] for name in self._names() if name.startswith(head)}
        )

    # -- writes -------------------------------------------------------------
    def set(self, key: str, value: ReadableBuffer) -> None:
        self.check_writable(key)
        key = validate_key(key)
        info = zipfile.ZipInfo(key, date_time=time.localtime(time.time())[:6])
        info.compress_type = self.compression
        info.external_attr = 0o644 << 16  # -rw-r--r--, as zarr-python writes
        with self._guard:
            zf = self._zip(for_writing=True)
            with warnings.catch_warnings():  # a rewritten key appends a member (see above)
                warnings.simplefilter("ignore", UserWarning)
                try:
                    zf.writestr(
                        info, value if isinstance(value, bytes) else memoryview(value).cast("B")
                    )
                except OSError as e:
                    raise StoreError(e.errno, f"key {key!r} of {self!r}: {e.strerror or e}") from e
            self._members.pop(key, None)

    def delete(self, key: str) -> None:
        self.check_writable(key)
        if self.exists(key):
            raise DeleteUnsupportedError(
                errno.EOPNOTSUPP,
                f"cannot delete {key!r}: members of a zip ({self!r}) cannot be removed",
            )

    def lock(
        self, key: str, node: str = "", *, replaced_last: bool = False
    ) -> AbstractContextManager[None]:
        """Exclusive across threads: only this process writes the zip."""
        return self.thread_lock(validate_key(key))
