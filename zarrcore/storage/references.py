"""ReferenceStore: a read-only store over virtual references (kerchunk's JSON, versions 0 and
1, and its parquet layout), whose values are inline bytes or byte ranges of other files.

The target files are read through zarrcore's own stores (a LocalStore per directory, an
ObjectStore per bucket or host: see urls.make_store), their byte ranges coalesced per file
and fetched concurrently by the target store's get_many.

References may reach only what the caller allows (`ReferenceBounds`): by default the files
below the references file's own directory and remote URLs (of `remote_protocol` only, when it
is named); anything else raises ReferenceOutsideError naming the key and the target.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import (
    ReferenceFormatError,
    ReferenceOutsideError,
    ReferenceTargetError,
    StoreURLError,
)
from ..runtime.byte_ranges import coalesce_spans
from .base import ByteRange, Fetched, ReadBytes, Request, Store, validate_key, validate_prefix
from .local import LocalStore
from .options import StorageOptions
from .reference_formats import (
    OFFSET_MAX,
    JsonReferences,
    ParquetReferences,
    Reference,
    Target,
    parse_references,
)
from .urls import LOCATION_OPENERS, URL_SCHEME, make_store

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = [
    "COALESCE_GAP",
    "COALESCE_MAX",
    "REFERENCE_OPTIONS",
    "ReferenceBounds",
    "ReferenceStore",
    "open_references",
]

# Schemes that name one file system's objects under another spelling.
_SCHEME_ALIASES = {"gcs": "gs", "s3a": "s3", "local": "file"}
# Spans of one target file less than this apart are read by one request...
COALESCE_GAP = 1 << 16
# ...of at most this many bytes, so that large reads still go out as concurrent requests.
COALESCE_MAX = 8 << 20
#: The options of `reference://` (fsspec's ReferenceFileSystem's names, and the bounds').
REFERENCE_OPTIONS = (
    "fo",
    "target_protocol",
    "target_options",
    "remote_protocol",
    "remote_options",
    "allowed_roots",
    "allow_local",
)


def _scheme(url: str) -> str:
    match = URL_SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    return _SCHEME_ALIASES.get(scheme, scheme)


def _split_url(url: str) -> tuple[str, str, str]:
    """(scheme, host or bucket, path without leading '/') of a remote URL."""
    scheme = _scheme(url)
    rest = url.split("://", 1)[1]
    host, _, path = rest.partition("/")
    return scheme, host, path.strip("/")


def _root_and_name(location: str) -> tuple[tuple[str, str], str]:
    """(root, name) of a target's location: ("file", its real directory) and its file name,
    or (scheme, "scheme://host") and its path there."""
    if _scheme(location) in ("", "file"):
        real = os.path.realpath(location)
        return ("file", os.path.dirname(real)), os.path.basename(real)
    scheme, host, name = _split_url(location)
    return (scheme, f"{scheme}://{host}"), name


# -- bounds -----------------------------------------------------------------------------------
class ReferenceBounds:
    """Which targets references may read: files below `roots` (paths or URLs), any local file
    with `allow_local`, and, when `roots` is not the caller's, any remote URL of `protocol`
    (of any remote protocol when None)."""

    def __init__(
        self,
        roots: Sequence[str],
        *,
        allow_local: bool = False,
        any_remote: bool = True,
        protocol: str | None = None,
    ) -> None:
        self.roots = [self._normal(root) for root in roots]
        self.allow_local = allow_local
        self.any_remote = any_remote
        self.protocol = _SCHEME_ALIASES.get(protocol, protocol) if protocol else None

    @staticmethod
    def _normal(location: str) -> tuple[str, str, str]:
        """(scheme, host, path) of a local path ("file", "", real path) or of a URL."""
        scheme = _scheme(location)
        if scheme in ("", "file"):
            path = location.split("://", 1)[1] if scheme else location
            return "file", "", os.path.realpath(path)
        return _split_url(location)

    def allows(self, location: str) -> bool:
        scheme, host, path = self._normal(location)
        if scheme == "file":
            if self.allow_local:
                return True
        elif self.any_remote and (
            self.protocol in (None, scheme) or {self.protocol, scheme} == {"http", "https"}
        ):
            return True
        sep = os.sep if scheme == "file" else "/"
        return any(
            scheme == s
            and host == h
            and (path == p or not p or path.startswith(p.rstrip(sep) + sep))
            for s, h, p in self.roots
        )

    def __repr__(self) -> str:
        roots = [f"{s}://{h}/{p}" if s != "file" else p for s, h, p in self.roots]
        remote = (
            f", remote URLs{f' of {self.protocol}://' if self.protocol else ''}"
            if self.any_remote
            else ""
        )
        return f"files below {roots}{remote}{', any local file' if self.allow_local else ''}"


# -- the store --------------------------------------------------------------------------------
class _Piece(NamedTuple):
    """One range of a request: bytes [start, stop) of the target file."""

    request: int
    part: int
    start: int
    stop: int


class ReferenceStore(Store):
    """Read-only store over virtual references: kerchunk's JSON (a dict, or the path or URL of
    a .json file) or parquet (the path or URL of its directory).

    Parameters
    ----------
    references : dict, str or PathLike
        The references, or where they are.
    remote_protocol : str, optional
        The protocol of target URLs written without one ("s3": "bucket/file.nc"); when
        named, remote targets must use it.
    remote_options : dict, optional
        storage_options of the target stores (see ObjectStore.from_url).
    target_protocol, target_options : optional
        Protocol (when `references` names a path without one) and storage_options of the
        store the references are read from.
    allowed_roots : sequence of str, optional
        Paths and URLs below which targets may be; replaces the default bounds (the
        references file's directory, and remote URLs).
    allow_local : bool
        Let targets be any local file (default False).
    target_stores : dict, optional
        Stores to read remote targets through, by URL: a target below one of them (the
        longest) is the key its URL names below it, not a store made from `remote_options`.

    Targets written as relative paths are below the directory the references are in (the
    JSON file's, the parquet directory's parent; the current directory for a dict). A
    missing or short target raises ReferenceTargetError; a target outside the bounds
    ReferenceOutsideError, both naming the key and the target.
    """

    read_only = True
    supports_writes = False
    supports_deletes = False

    def __init__(
        self,
        references: Mapping[str, Any] | str | os.PathLike[str],
        *,
        remote_protocol: str | None = None,
        remote_options: StorageOptions | None = None,
        target_protocol: str | None = None,
        target_options: StorageOptions | None = None,
        allowed_roots: Sequence[str] | None = None,
        allow_local: bool = False,
        target_stores: Mapping[str, Store] | None = None,
    ) -> None:
        super().__init__(read_only=True)
        self._remote_protocol = remote_protocol
        self._remote_options = dict(remote_options or {})
        self._refs: JsonReferences | None = None
        self._parquet: ParquetReferences | None = None
        self._base: str | None = None  # the references file's directory
        if isinstance(references, Mapping):
            self.source = f"<references {id(references):#x}>"
            self._refs = parse_references(dict(references))
        else:
            location = os.fspath(references)
            if target_protocol and not URL_SCHEME.match(location):
                location = f"{target_protocol}://{location}"
            self.source = location
            self._load(location, target_options)
        if isinstance(allowed_roots, str):
            raise StoreURLError("allowed_roots must be a list of paths or URLs, not a string")
        self.bounds = ReferenceBounds(
            [self._base]
            if allowed_roots is None and self._base is not None
            else list(allowed_roots or ()),
            allow_local=allow_local,
            any_remote=allowed_roots is None,
            protocol=remote_protocol,
        )
        self._targets: dict[str, tuple[Store, str]] = {}
        self._stores: dict[tuple[str, str], Store] = {}
        # (Longest first: the first that holds a target is the deepest.)
        self._given = sorted(
            ((url.rstrip("/") + "/", store) for url, store in (target_stores or {}).items()),
            key=lambda u: -len(u[0]),
        )
        self._guard = threading.Lock()

    @classmethod
    def from_options(cls, url: str, storage_options: StorageOptions | None) -> ReferenceStore:
        """The store of `reference://` and fsspec's ReferenceFileSystem options (`fo`: the
        references or where they are, ...; see REFERENCE_OPTIONS)."""
        options = dict(storage_options or {})
        unknown = sorted(set(options) - set(REFERENCE_OPTIONS))
        if unknown:
            raise StoreURLError(
                f"storage_options of {url!r}: unknown options {unknown}; "
                f"accepted: {', '.join(REFERENCE_OPTIONS)}"
            )
        if "fo" not in options:
            raise StoreURLError(f"{url!r} needs storage_options={{'fo': references}}")
        return cls(options.pop("fo"), **options)

    def _load(self, location: str, options: StorageOptions | None) -> None:
        """Read the references at `location`: a JSON file, else a parquet directory."""
        scheme = _scheme(location)
        if scheme in ("", "file"):
            path = location.split("://", 1)[1] if scheme else location
            self._base = os.path.dirname(os.path.realpath(path))
            parent, name = self._base, os.path.basename(os.path.realpath(path))
            if options:
                raise StoreURLError(f"target_options are for remote references, not {path!r}")
        else:
            scheme, host, path = _split_url(location)
            self._base = f"{scheme}://{host}/{path.rpartition('/')[0]}".rstrip("/")
            parent, name = self._base, path.rpartition("/")[2]
        if not name:
            raise StoreURLError(f"{location!r} names no references file")
        local = scheme in ("", "file")
        store = (
            LocalStore(parent, read_only=True)
            if local
            else make_store(parent, read_only=True, storage_options=options)
        )
        data = store.get(name)  # (None for a directory too)
        if data is not None:
            try:
                self._refs = parse_references(json.loads(bytes(data)))
            except (ValueError, RecursionError) as e:
                if isinstance(e, ReferenceFormatError):
                    raise
                why = "nested too deeply" if isinstance(e, RecursionError) else e
                raise ReferenceFormatError(f"{location}: not JSON references: {why}") from None
            return
        where = f"{parent.rstrip('/')}/{name}"
        inner = (
            LocalStore(where, read_only=True)
            if local
            else make_store(where, read_only=True, storage_options=options)
        )
        if not inner.exists(".zmetadata"):
            raise StoreURLError(
                f"{location!r}: no references there (neither a JSON file nor "
                f"a parquet directory with .zmetadata)"
            )
        self._parquet = ParquetReferences(inner, location)

    def _identity(self) -> Hashable:
        return self.source

    def __repr__(self) -> str:
        return f"ReferenceStore({self.source!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_targets": {}, "_stores": {}, "_guard": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._guard = threading.Lock()

    # -- references -----------------------------------------------------------
    def lookup(self, key: str) -> Reference | None:
        """The reference at `key`: inline bytes, a Target, or None when there is none."""
        validate_key(key)
        if self._parquet is not None:
            return self._parquet.lookup(key)
        return None if self._refs is None else self._refs.lookup(key)

    def _location(self, url: str) -> str:
        """`url` as an absolute path or a URL with its protocol."""
        scheme = _scheme(url)
        if scheme == "file":
            return url.split("://", 1)[1]
        if scheme:
            return url
        if (
            self._remote_protocol
            and _SCHEME_ALIASES.get(self._remote_protocol, self._remote_protocol) != "file"
        ):
            return f"{self._remote_protocol}://{url}"
        if os.path.isabs(url):
            return url
        base = self._base or os.getcwd()
        return f"{base}/{url}" if _scheme(base) else os.path.join(base, url)

    def target(self, key: str, url: str) -> tuple[Store, str]:
        """(store, key) of the target `url` of the reference at `key`, checked against the
        bounds."""
        with self._guard:
            found = self._targets.get(url)
        if found is not None:
            return found
        if "\0" in url:
            raise ReferenceFormatError(f"reference {key!r}: the URL {url!r} holds a NUL character")
        location = self._location(url)
        if not self.bounds.allows(location):
            raise ReferenceOutsideError(
                f"reference {key!r} of {self!r} points at {url!r}, outside what its "
                f"references may read ({self.bounds!r}); pass allowed_roots=[...] or "
                f"allow_local=True to allow it"
            )
        given = next(
            (
                (store, location[len(root) :])
                for root, store in self._given
                if location.startswith(root)
            ),
            None,
        )
        if given is None:
            root, name = _root_and_name(location)
            name = self._target_key(key, url, name)
            store = self._root_store(root)
        else:
            store, name = given[0], self._target_key(key, url, given[1])
        with self._guard:
            return self._targets.setdefault(url, (store, name))

    def _root_store(self, root: tuple[str, str]) -> Store:
        """The store, made once, of a root of `_root_and_name`."""
        with self._guard:
            store = self._stores.get(root)
        if store is None:
            store = (
                LocalStore(root[1], read_only=True)
                if root[0] == "file"
                else make_store(root[1], read_only=True, storage_options=self._remote_options)
            )
        with self._guard:
            return self._stores.setdefault(root, store)

    def _target_key(self, key: str, url: str, name: str) -> str:
        """`name`, the key of the target `url` of the reference at `key` in its store."""
        try:
            return validate_key(name)
        except ValueError as e:
            raise ReferenceOutsideError(
                f"reference {key!r} of {self!r}: target {url!r}: {e}"
            ) from None

    # -- reads ----------------------------------------------------------------
    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        parts = self.get_ranges(key, [(start, stop)])
        return None if parts is None else bytes(parts[0])

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None:
        for _, parts in self.get_many([(key, ranges)]):
            assert not isinstance(parts, (bytes, memoryview))  # (ranges were asked)
            return parts
        return None

    def get_many(
        self, requests: Sequence[Request], concurrency: int | None = None
    ) -> Iterator[tuple[int, Fetched]]:
        """As Store.get_many: inline values at once; the byte ranges of target files grouped
        by target store (all its files' in one get_many of it, `concurrency` in flight),
        neighbours coalesced."""
        pieces: dict[Store, dict[str, list[_Piece]]] = {}
        # Requests of whole-file references (no length): read as asked, one fetch each.
        passed: dict[Store, list[tuple[str, int]]] = {}
        pending: dict[int, list[ReadBytes | None]] = {}
        for i, (key, ranges) in enumerate(requests):
            ref = self.lookup(key)
            if ref is None or isinstance(ref, bytes):
                yield (
                    i,
                    ref
                    if ref is None or ranges is None
                    else [memoryview(ref)[start:stop] for start, stop in ranges],
                )
                continue
            store, name = self.target(key, ref.url)
            if ref.length is None:
                passed.setdefault(store, []).append((name, i))
                continue
            spans = self._spans(ref, ranges)
            pending[i] = [b"" if start == stop else None for start, stop in spans]
            if all(start == stop for start, stop in spans):
                yield i, self._done(ranges, pending.pop(i))
                continue
            pieces.setdefault(store, {}).setdefault(name, []).extend(
                _Piece(i, n, start, stop) for n, (start, stop) in enumerate(spans) if start != stop
            )
        for store in {**pieces, **passed}:
            yield from self._read(
                requests, store, pieces.get(store, {}), passed.get(store, []), pending, concurrency
            )

    @staticmethod
    def _spans(ref: Target, ranges: Sequence[ByteRange] | None) -> list[tuple[int, int]]:
        """The [start, stop) spans of the target file that `ranges` of the reference's value
        are (None: all of it), clipped as slices of a value of its length are."""
        assert ref.length is not None  # (whole-file references are read as asked)
        spans = []
        for start, stop in ranges or [(None, None)]:
            lo, hi, _ = slice(start, stop).indices(ref.length)
            spans.append((ref.offset + lo, ref.offset + max(lo, hi)))
        return spans

    @staticmethod
    def _done(ranges: Sequence[ByteRange] | None, parts: list[ReadBytes | None]) -> Fetched:
        done = [part for part in parts if part is not None]
        return done[0] if ranges is None else done

    def _read(
        self,
        requests: Sequence[Request],
        store: Store,
        pieces: dict[str, list[_Piece]],
        passed: list[tuple[str, int]],
        pending: dict[int, list[ReadBytes | None]],
        concurrency: int | None,
    ) -> Iterator[tuple[int, Fetched]]:
        """Read the `pieces` of each target file of `store` and its `passed` requests,
        yielding each request once all its pieces have arrived."""
        # One fetch per merged span: they go out concurrently (remote stores), and each is
        # decoded as soon as it arrives.
        fetches: list[Request] = []
        fetched: list[tuple[str, int, list[_Piece]]] = []  # (file, first byte, its pieces)
        for name, its in pieces.items():
            # (COALESCE_GAP - 1: spans at most that far apart share a request. Spans past
            # 2**63 - 1, which no file reaches, are read up to there and found short.)
            top = OFFSET_MAX - 1
            starts, stops, group = coalesce_spans(
                [min(p.start, top) for p in its],
                [min(p.stop, top) for p in its],
                COALESCE_GAP - 1,
                COALESCE_MAX,
            )
            by_span: list[list[_Piece]] = [[] for _ in range(starts.size)]
            for p, g in zip(its, group.tolist()):
                by_span[g].append(p)
            merged = list(zip(starts.tolist(), stops.tolist()))
            fetches += [(name, [span]) for span in merged]
            fetched += [(name, start, pieces_of) for (start, _), pieces_of in zip(merged, by_span)]
        fetches += [(name, requests[i][1]) for name, i in passed]

        def missing(i: int, name: str) -> ReferenceTargetError:
            return ReferenceTargetError(
                errno.ENOENT,
                f"reference {requests[i][0]!r} of {self!r}: its target {name!r} "
                f"of {store!r} is missing or shorter than the reference says",
            )

        for f, parts in store.get_many(fetches, concurrency):
            if f >= len(fetched):
                name, i = passed[f - len(fetched)]
                if parts is None:
                    raise missing(i, name)
                yield i, parts
                continue
            name, first, group = fetched[f]
            data = None if parts is None else parts[0]
            assert not isinstance(data, int)  # (a list of ranges' bytes)
            for p in group:
                if data is None or len(data) < p.stop - first:
                    raise missing(p.request, name)
                parts_of = pending[p.request]
                parts_of[p.part] = memoryview(data)[p.start - first : p.stop - first]
                if all(part is not None for part in parts_of):
                    yield p.request, self._done(requests[p.request][1], pending.pop(p.request))

    def exists(self, key: str) -> bool:
        return self.lookup(key) is not None

    def getsize(self, key: str) -> int | None:
        ref = self.lookup(key)
        if ref is None or isinstance(ref, bytes):
            return None if ref is None else len(ref)
        if ref.length is not None:
            return ref.length
        store, name = self.target(key, ref.url)
        return store.getsize(name)

    # -- writes are refused -----------------------------------------------------
    def set(self, key: str, value: ReadableBuffer) -> None:
        self.check_writable(key)

    def delete(self, key: str) -> None:
        self.check_writable(key)

    # -- listing --------------------------------------------------------------
    def _keys(self) -> Iterator[str]:
        if self._parquet is not None:
            return self._parquet.keys()
        return iter(()) if self._refs is None else self._refs.all_keys()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        head = validate_prefix(prefix)
        head = head + "/" if head else ""
        return (key for key in self._keys() if key.startswith(head))

    def list_dir(self, prefix: str) -> list[str]:
        head = validate_prefix(prefix)
        head = head + "/" if head else ""
        return sorted(
            {key[len(head) :].split("/", 1)[0] for key in self._keys() if key.startswith(head)}
        )


def _names_references(path: str) -> bool:
    """Does the local `path` name kerchunk references: a `.json` file, or a directory of the
    parquet layout (`.zmetadata`, no Zarr metadata of its own beside it, records below)?"""
    if os.path.isfile(path):
        return path.lower().endswith(".json")
    return (
        os.path.isfile(os.path.join(path, ".zmetadata"))
        and not any(
            os.path.exists(os.path.join(path, name)) for name in (".zgroup", ".zarray", "zarr.json")
        )
        and any(
            os.path.isfile(os.path.join(path, entry.name, "refs.0.parq"))
            for entry in os.scandir(path)
            if entry.is_dir()
        )
    )


def open_references(location: str, storage_options: StorageOptions | None) -> ReferenceStore | None:
    """make_store's ReferenceStore (urls.LOCATION_OPENERS): of a `reference://` URL (its
    storage_options fsspec's ReferenceFileSystem's, see ReferenceStore.from_options) or of
    a local path naming references; None for any other location."""
    if location.lower().startswith("reference://"):
        return ReferenceStore.from_options(location, storage_options)
    if "://" in location or "::" in location or not _names_references(location):
        return None
    return ReferenceStore(location)


LOCATION_OPENERS.append(open_references)
