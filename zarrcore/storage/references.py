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

import ast
import base64
import bisect
import binascii
import errno
import itertools
import json
import math
import numbers
import operator
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from ..errors import (
    ReferenceFormatError, ReferenceOutsideError, ReferenceTargetError, StoreURLError,
)
from .base import ByteRange, Fetched, ReadBytes, Request, Store, validate_key, validate_prefix
from .local import LocalStore
from .options import StorageOptions
from .urls import _URL, LOCATION_OPENERS, make_store

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

_TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.S)
# Schemes that name one file system's objects under another spelling.
_SCHEME_ALIASES = {"gcs": "gs", "s3a": "s3", "local": "file"}
# Spans of one target file less than this apart are read by one request...
COALESCE_GAP = 1 << 16
# ...of at most this many bytes, so that large reads still go out as concurrent requests.
COALESCE_MAX = 8 << 20
# The longest text a template expression may make (URLs and keys are far shorter).
_MAX_TEXT = 1 << 16
# The most references `gen` may make (each is held in memory).
MAX_GENERATED = 1 << 22
# Parquet records (one file each) held in memory at once.
PARQUET_RECORDS_HELD = 64
_REFERENCES_EXTRA = 'pip install "zarrcore[references]"'
#: The options of `reference://` (fsspec's ReferenceFileSystem's names, and the bounds').
REFERENCE_OPTIONS = ("fo", "target_protocol", "target_options", "remote_protocol",
                     "remote_options", "allowed_roots", "allow_local")


class Target(NamedTuple):
    """Where a reference's bytes are: `url`'s [offset, offset + length), or all of it when
    `length` is None."""

    url: str
    offset: int
    length: int | None


#: A reference: inline bytes, or a Target.
Reference = Union[bytes, Target]


def _scheme(url: str) -> str:
    match = _URL.match(url)
    scheme = match.group(1).lower() if match else ""
    return _SCHEME_ALIASES.get(scheme, scheme)


def _split_url(url: str) -> tuple[str, str, str]:
    """(scheme, host or bucket, path without leading '/') of a remote URL."""
    scheme = _scheme(url)
    rest = url.split("://", 1)[1]
    host, _, path = rest.partition("/")
    return scheme, host, path.strip("/")


# -- templates and gen: {{ expression }} of names, numbers and arithmetic --------------------
_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}


def _evaluate(expression: str, names: Mapping[str, Any], where: str) -> Any:
    """The value of a template `expression` (jinja's syntax, of which names, numbers,
    strings, parentheses and + - * / // % are taken: what kerchunk's references use)."""
    def refuse(why: str) -> ReferenceFormatError:
        return ReferenceFormatError(f"{where}: cannot evaluate {{{{{expression}}}}}: {why}")

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) \
                and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise refuse(f"{node.id!r} is not defined")
            return names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = value(node.operand)
            if not isinstance(operand, (int, float)):
                raise refuse("a sign before a string")
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = value(node.left), value(node.right)
            numbers = all(isinstance(v, (int, float)) for v in (left, right))
            strings = isinstance(node.op, ast.Add) and all(isinstance(v, str)
                                                           for v in (left, right))
            if not (numbers or strings):
                raise refuse("arithmetic on strings")
            try:
                result = _OPERATORS[type(node.op)](left, right)
            except ZeroDivisionError:
                raise refuse("division by zero") from None
            if len(result) > _MAX_TEXT if strings else abs(result) >= 2**64:
                raise refuse("the value grows too large")
            return result
        raise refuse("only names, numbers, strings and + - * / // % are supported")

    try:
        tree = ast.parse(expression.strip(), mode="eval")
        return value(tree.body)
    except (SyntaxError, RecursionError, MemoryError) as e:
        raise refuse(f"not an expression zarrcore evaluates ({type(e).__name__})") from None


def render(text: str, names: Mapping[str, Any], where: str) -> str:
    """`text` with each {{ expression }} replaced by its value."""
    if "{{" not in text:
        return text
    return _TEMPLATE.sub(lambda m: str(_evaluate(m.group(1), names, where)), text)


def _templates(value: object) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ReferenceFormatError(f"references: 'templates' must map names to strings, "
                                   f"not {value!r}")
    for name, template in value.items():
        if "{{" in template:
            raise ReferenceFormatError(f"references: template {name!r} takes arguments "
                                       f"({template!r}), which zarrcore does not support")
    return value


def _integer(value: object, where: str) -> int:
    """A reference's offset or length: a non-negative integer (or its text, from `gen`)."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            pass
    # (numbers.Integral takes numpy's integers too, as a manifest's arrays give them)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ReferenceFormatError(f"{where}: must be a non-negative integer, not {value!r}")
    return int(value)


def _reference(key: str, value: object, templates: Mapping[str, str]) -> Reference:
    """The Reference of a references file's `value` at `key`."""
    where = f"reference {key!r}"
    if isinstance(value, str):
        if value.startswith("base64:"):
            try:
                return base64.b64decode(value[7:], validate=True)
            except (binascii.Error, ValueError) as e:
                raise ReferenceFormatError(f"{where}: invalid base64 data: {e}") from None
        return value.encode()
    if isinstance(value, dict):  # (JSON metadata written as an object, not as text)
        return json.dumps(value).encode()
    if isinstance(value, list) and len(value) in (1, 3) and isinstance(value[0], str):
        url = render(value[0], templates, where)
        if len(value) == 1:
            return Target(url, 0, None)
        return Target(url, _integer(value[1], f"{where}: offset"),
                      _integer(value[2], f"{where}: length"))
    raise ReferenceFormatError(f"{where}: expected text, base64 text, [url] or "
                               f"[url, offset, length], not {value!r}")


def _generated(gen: object, templates: Mapping[str, str]) -> Iterator[tuple[str, Target]]:
    """The references version 1's `gen` entries make: every combination of their dimensions'
    values (the last varying fastest) rendered into key, url, offset and length."""
    if not isinstance(gen, list):
        raise ReferenceFormatError(f"references: 'gen' must be a list, not {gen!r}")
    made = 0
    for n, entry in enumerate(gen):
        where = f"references: gen[{n}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("dimensions"), dict) \
                or not all(isinstance(entry.get(f), str) for f in ("key", "url")):
            raise ReferenceFormatError(f"{where}: needs 'key', 'url' and 'dimensions'")
        axes: dict[str, Sequence[Any]] = {}
        for name, spec in entry["dimensions"].items():
            if isinstance(spec, list):
                axes[name] = spec
            elif isinstance(spec, dict) and "stop" in spec:
                bounds = [_integer(spec.get(f, d), f"{where}: dimension {name!r} {f}")
                          for f, d in (("start", 0), ("stop", 0), ("step", 1))]
                if not bounds[2]:
                    raise ReferenceFormatError(f"{where}: dimension {name!r} has step 0")
                axes[name] = range(*bounds)
            else:
                raise ReferenceFormatError(
                    f"{where}: dimension {name!r} must be a list or {{start, stop, step}}")
        try:
            made += math.prod(len(axis) for axis in axes.values())
        except OverflowError:  # (a range too long to measure)
            made = MAX_GENERATED + 1
        if made > MAX_GENERATED:
            raise ReferenceFormatError(f"{where}: makes more than {MAX_GENERATED} references")
        ranged = "offset" in entry or "length" in entry
        for combination in itertools.product(*axes.values()):
            names = {**templates, **dict(zip(axes, combination))}
            key = render(entry["key"], names, where)
            url = render(entry["url"], names, where)
            if not ranged:
                yield key, Target(url, 0, None)
                continue
            offset, length = (
                _integer(render(str(entry.get(f, "")), names, where), f"{where}: {f}")
                for f in ("offset", "length"))
            yield key, Target(url, offset, length)


def parse_references(refs: object) -> dict[str, Reference]:
    """The references of a kerchunk JSON document (version 0: {key: value}; version 1:
    {"version": 1, "templates", "gen", "refs"}), by key."""
    if not isinstance(refs, dict):
        raise ReferenceFormatError(f"references must be a JSON object, not {type(refs).__name__}")
    version = refs.get("version")
    if version is None:
        templates: dict[str, str] = {}
        entries = refs
    elif version == 1:
        templates = _templates(refs.get("templates", {}))
        entries = refs.get("refs", {})
        if not isinstance(entries, dict):
            raise ReferenceFormatError("references: 'refs' must be a JSON object")
    else:
        raise ReferenceFormatError(f"references: unknown version {version!r} (0 and 1 are read)")
    out = {_key(key): _reference(key, value, templates) for key, value in entries.items()}
    if version == 1:
        out.update((_key(key), target) for key, target in
                   _generated(refs.get("gen", []), templates))
    return out


def _root_and_name(location: str) -> tuple[tuple[str, str], str]:
    """(root, name) of a target's location: ("file", its real directory) and its file name,
    or (scheme, "scheme://host") and its path there."""
    if _scheme(location) in ("", "file"):
        real = os.path.realpath(location)
        return ("file", os.path.dirname(real)), os.path.basename(real)
    scheme, host, name = _split_url(location)
    return (scheme, f"{scheme}://{host}"), name


def _key(key: object) -> str:
    try:
        return validate_key(key)
    except ValueError as e:
        raise ReferenceFormatError(f"references: {e}") from None


# -- bounds -----------------------------------------------------------------------------------
class ReferenceBounds:
    """Which targets references may read: files below `roots` (paths or URLs), any local file
    with `allow_local`, and, when `roots` is not the caller's, any remote URL of `protocol`
    (of any remote protocol when None)."""

    def __init__(self, roots: Sequence[str], *, allow_local: bool = False,
                 any_remote: bool = True, protocol: str | None = None) -> None:
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
        elif self.any_remote and (self.protocol in (None, scheme)
                                  or {self.protocol, scheme} == {"http", "https"}):
            return True
        sep = os.sep if scheme == "file" else "/"
        return any(scheme == s and host == h and (
            path == p or not p or path.startswith(p.rstrip(sep) + sep))
            for s, h, p in self.roots)

    def __repr__(self) -> str:
        roots = [f"{s}://{h}/{p}" if s != "file" else p for s, h, p in self.roots]
        remote = (f", remote URLs{f' of {self.protocol}://' if self.protocol else ''}"
                  if self.any_remote else "")
        return f"files below {roots}{remote}{', any local file' if self.allow_local else ''}"


# -- parquet ----------------------------------------------------------------------------------
def _read_parquet(data: bytes, where: str) -> dict[str, list[Any]]:
    """The columns of a parquet file, as lists; pyarrow or pandas (with an engine) reads it."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pass
    else:
        try:
            table = pq.read_table(pa.BufferReader(data))
        except (pa.ArrowException, OSError) as e:
            raise ReferenceFormatError(f"{where}: not a readable parquet file: {e}") from None
        return {name: table.column(name).to_pylist() for name in table.column_names}
    try:
        import io

        import pandas as pd

        frame = pd.read_parquet(io.BytesIO(data))
    except ImportError:
        raise StoreURLError(f"{where}: parquet references need pyarrow or fastparquet: "
                            f"{_REFERENCES_EXTRA}") from None
    except (ValueError, OSError) as e:
        raise ReferenceFormatError(f"{where}: not a readable parquet file: {e}") from None
    return {str(name): [None if v is None or v != v else v for v in frame[name].tolist()]
            for name in frame.columns}


class ParquetReferences:
    """kerchunk's parquet references below `store` (a directory): `.zmetadata` holds the
    metadata ({"metadata": {key: JSON}, "record_size": n}); the chunks of the array at FIELD
    are rows of FIELD/refs.R.parq (columns path, offset, size, raw), chunk i (in C order of
    the chunk grid) at row i % n of record i // n. A null path and raw is a missing chunk;
    offset and size 0 stand for the whole file."""

    def __init__(self, store: Store, where: str) -> None:
        self.store, self.where = store, where
        raw = store.get(".zmetadata")
        if raw is None:
            raise ReferenceFormatError(f"{where}: no .zmetadata")
        try:
            meta = json.loads(raw)
            metadata, self.record_size = meta["metadata"], meta["record_size"]
        except (ValueError, KeyError, TypeError) as e:
            raise ReferenceFormatError(f"{where}/.zmetadata: not kerchunk's ({e})") from None
        if not isinstance(metadata, dict) or isinstance(self.record_size, bool) \
                or not isinstance(self.record_size, int) or self.record_size < 1:
            raise ReferenceFormatError(f"{where}/.zmetadata: invalid metadata or record_size")
        self.metadata = {_key(k): (v if isinstance(v, str) else json.dumps(v)).encode()
                         for k, v in metadata.items()}
        self._grids: dict[str, tuple[tuple[int, ...], str]] = {}
        self._records: OrderedDict[tuple[str, int], dict[str, list[Any]] | None] = OrderedDict()
        self._guard = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_records": OrderedDict(), "_guard": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._guard = threading.Lock()

    def _grid(self, field: str) -> tuple[tuple[int, ...], str] | None:
        """(chunks per dimension, dimension separator) of the array at `field`."""
        if field in self._grids:
            return self._grids[field]
        raw = self.metadata.get(f"{field}/.zarray")
        if raw is None:
            return None
        try:
            zarray = json.loads(raw)
            grid = tuple(math.ceil(s / c) for s, c in zip(zarray["shape"], zarray["chunks"]))
            sep = str(zarray.get("dimension_separator") or ".")
        except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
            raise ReferenceFormatError(f"{self.where}: {field}/.zarray: {e}") from None
        self._grids[field] = layout = (grid or (1,), sep)
        return layout

    def _record(self, field: str, number: int) -> dict[str, list[Any]] | None:
        name = (field, number)
        with self._guard:
            if name in self._records:
                self._records.move_to_end(name)
                return self._records[name]
        key = f"{field}/refs.{number}.parq"
        data = self.store.get(key)
        record = None if data is None else _read_parquet(bytes(data), f"{self.where}/{key}")
        with self._guard:
            self._records[name] = record
            if len(self._records) > PARQUET_RECORDS_HELD:
                self._records.popitem(last=False)
        return record

    def lookup(self, key: str) -> Reference | None:
        if key in self.metadata:
            return self.metadata[key]
        field, _, chunk = key.rpartition("/")
        layout = self._grid(field)
        if layout is None:
            return None
        grid, sep = layout
        try:
            coords = tuple(int(c) for c in chunk.split(sep))
        except ValueError:
            return None
        if len(coords) != len(grid) or not all(0 <= c < n for c, n in zip(coords, grid)):
            return None
        number, row = divmod(int(sum(c * math.prod(grid[d + 1:])
                                     for d, c in enumerate(coords))), self.record_size)
        record = self._record(field, number)
        if record is None:
            return None
        return self._row(key, record, row)

    def _row(self, key: str, record: dict[str, list[Any]], row: int) -> Reference | None:
        def cell(column: str) -> Any:
            values = record.get(column)
            return values[row] if values is not None and row < len(values) else None

        raw, path = cell("raw"), cell("path")
        if raw is not None:
            return bytes(raw)
        if path is None:
            return None
        offset = _integer(cell("offset") or 0, f"reference {key!r}: offset")
        size = _integer(cell("size") or 0, f"reference {key!r}: size")
        return Target(str(path), 0, None) if offset == size == 0 else \
            Target(str(path), offset, size)

    def keys(self) -> Iterator[str]:
        """Every key: the metadata's, and each array's stored chunks' (reading its records)."""
        yield from self.metadata
        for meta_key in list(self.metadata):
            field, _, name = meta_key.rpartition("/")
            layout = self._grid(field) if name == ".zarray" else None
            if layout is None:
                continue
            grid, sep = layout
            for i, coords in enumerate(itertools.product(*map(range, grid))):
                number, row = divmod(i, self.record_size)
                record = self._record(field, number)
                if record is not None and self._row(meta_key, record, row) is not None:
                    yield f"{field}/{sep.join(map(str, coords))}"


# -- the store --------------------------------------------------------------------------------
def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted (start, stop) spans merged into requests: neighbours less than COALESCE_GAP
    apart share one of at most COALESCE_MAX bytes (a longer span is one request alone)."""
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(spans):
        if merged:
            first, last = merged[-1]
            if start - last < COALESCE_GAP and max(stop, last) - first <= COALESCE_MAX:
                merged[-1] = (first, max(stop, last))
                continue
        merged.append((start, stop))
    return merged


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

    def __init__(self, references: Mapping[str, Any] | str | os.PathLike[str], *,
                 remote_protocol: str | None = None,
                 remote_options: StorageOptions | None = None,
                 target_protocol: str | None = None,
                 target_options: StorageOptions | None = None,
                 allowed_roots: Sequence[str] | None = None, allow_local: bool = False,
                 target_stores: Mapping[str, Store] | None = None) -> None:
        super().__init__(read_only=True)
        self._remote_protocol = remote_protocol
        self._remote_options = dict(remote_options or {})
        self._refs: dict[str, Reference] = {}
        self._parquet: ParquetReferences | None = None
        self._base: str | None = None  # the references file's directory
        if isinstance(references, Mapping):
            self.source = f"<references {id(references):#x}>"
            self._refs = parse_references(dict(references))
        else:
            location = os.fspath(references)
            if target_protocol and not _URL.match(location):
                location = f"{target_protocol}://{location}"
            self.source = location
            self._load(location, target_options)
        if isinstance(allowed_roots, str):
            raise StoreURLError("allowed_roots must be a list of paths or URLs, not a string")
        self.bounds = ReferenceBounds(
            [self._base] if allowed_roots is None and self._base is not None
            else list(allowed_roots or ()), allow_local=allow_local,
            any_remote=allowed_roots is None, protocol=remote_protocol)
        self._targets: dict[str, tuple[Store, str]] = {}
        self._stores: dict[tuple[str, str], Store] = {}
        # (Longest first: the first that holds a target is the deepest.)
        self._given = sorted(((url.rstrip("/") + "/", store) for url, store in
                              (target_stores or {}).items()), key=lambda u: -len(u[0]))
        self._guard = threading.Lock()

    @classmethod
    def from_options(cls, url: str, storage_options: StorageOptions | None) -> ReferenceStore:
        """The store of `reference://` and fsspec's ReferenceFileSystem options (`fo`: the
        references or where they are, ...; see REFERENCE_OPTIONS)."""
        options = dict(storage_options or {})
        unknown = sorted(set(options) - set(REFERENCE_OPTIONS))
        if unknown:
            raise StoreURLError(f"storage_options of {url!r}: unknown options {unknown}; "
                                f"accepted: {', '.join(REFERENCE_OPTIONS)}")
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
        store = LocalStore(parent, read_only=True) if local else make_store(
            parent, read_only=True, storage_options=options)
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
        inner = LocalStore(where, read_only=True) if local else make_store(
            where, read_only=True, storage_options=options)
        if not inner.exists(".zmetadata"):
            raise StoreURLError(f"{location!r}: no references there (neither a JSON file nor "
                                f"a parquet directory with .zmetadata)")
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
        return self._refs.get(key)

    def _location(self, url: str) -> str:
        """`url` as an absolute path or a URL with its protocol."""
        scheme = _scheme(url)
        if scheme == "file":
            return url.split("://", 1)[1]
        if scheme:
            return url
        if self._remote_protocol and _SCHEME_ALIASES.get(
                self._remote_protocol, self._remote_protocol) != "file":
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
            raise ReferenceFormatError(f"reference {key!r}: the URL {url!r} holds a NUL "
                                       f"character")
        location = self._location(url)
        if not self.bounds.allows(location):
            raise ReferenceOutsideError(
                f"reference {key!r} of {self!r} points at {url!r}, outside what its "
                f"references may read ({self.bounds!r}); pass allowed_roots=[...] or "
                f"allow_local=True to allow it")
        given = next(((store, location[len(root):]) for root, store in self._given
                      if location.startswith(root)), None)
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
            store = LocalStore(root[1], read_only=True) if root[0] == "file" else make_store(
                root[1], read_only=True, storage_options=self._remote_options)
        with self._guard:
            return self._stores.setdefault(root, store)

    def _target_key(self, key: str, url: str, name: str) -> str:
        """`name`, the key of the target `url` of the reference at `key` in its store."""
        try:
            return validate_key(name)
        except ValueError as e:
            raise ReferenceOutsideError(f"reference {key!r} of {self!r}: target {url!r}: "
                                        f"{e}") from None

    # -- reads ----------------------------------------------------------------
    def get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes | None:
        parts = self.get_ranges(key, [(start, stop)])
        return None if parts is None else bytes(parts[0])

    def get_ranges(self, key: str, ranges: Sequence[ByteRange]) -> Sequence[ReadBytes] | None:
        for _, parts in self.get_many([(key, ranges)]):
            assert not isinstance(parts, (bytes, memoryview))  # (ranges were asked)
            return parts
        return None

    def get_many(self, requests: Sequence[Request]) -> Iterator[tuple[int, Fetched]]:
        """As Store.get_many: inline values at once; the byte ranges of target files grouped
        by target store (all its files' in one get_many of it), neighbours coalesced."""
        pieces: dict[Store, dict[str, list[_Piece]]] = {}
        # Requests of whole-file references (no length): read as asked, one fetch each.
        passed: dict[Store, list[tuple[str, int]]] = {}
        pending: dict[int, list[ReadBytes | None]] = {}
        for i, (key, ranges) in enumerate(requests):
            ref = self.lookup(key)
            if ref is None or isinstance(ref, bytes):
                yield i, ref if ref is None or ranges is None else [
                    memoryview(ref)[start:stop] for start, stop in ranges]
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
                _Piece(i, n, start, stop) for n, (start, stop) in enumerate(spans)
                if start != stop)
        for store in {**pieces, **passed}:
            yield from self._read(requests, store, pieces.get(store, {}),
                                  passed.get(store, []), pending)

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

    def _read(self, requests: Sequence[Request], store: Store,
              pieces: dict[str, list[_Piece]], passed: list[tuple[str, int]],
              pending: dict[int, list[ReadBytes | None]]) -> Iterator[tuple[int, Fetched]]:
        """Read the `pieces` of each target file of `store` and its `passed` requests,
        yielding each request once all its pieces have arrived."""
        # One fetch per merged span: they go out concurrently (remote stores), and each is
        # decoded as soon as it arrives.
        fetches: list[Request] = []
        fetched: list[tuple[str, int, list[_Piece]]] = []  # (file, first byte, its pieces)
        for name, its in pieces.items():
            merged = _merge([(p.start, p.stop) for p in its])
            starts = [start for start, _ in merged]
            by_span: list[list[_Piece]] = [[] for _ in merged]
            for p in its:
                by_span[bisect.bisect_right(starts, p.start) - 1].append(p)
            fetches += [(name, [span]) for span in merged]
            fetched += [(name, start, group) for start, group in zip(starts, by_span)]
        fetches += [(name, requests[i][1]) for name, i in passed]

        def missing(i: int, name: str) -> ReferenceTargetError:
            return ReferenceTargetError(
                errno.ENOENT, f"reference {requests[i][0]!r} of {self!r}: its target {name!r} "
                              f"of {store!r} is missing or shorter than the reference says")

        for f, parts in store.get_many(fetches):
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
                parts_of[p.part] = memoryview(data)[p.start - first:p.stop - first]
                if all(part is not None for part in parts_of):
                    yield p.request, self._done(requests[p.request][1],
                                                pending.pop(p.request))

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
        return self._parquet.keys() if self._parquet is not None else iter(list(self._refs))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        head = validate_prefix(prefix)
        head = head + "/" if head else ""
        return (key for key in self._keys() if key.startswith(head))

    def list_dir(self, prefix: str) -> list[str]:
        head = validate_prefix(prefix)
        head = head + "/" if head else ""
        return sorted({key[len(head):].split("/", 1)[0] for key in self._keys()
                       if key.startswith(head)})


def _names_references(path: str) -> bool:
    """Does the local `path` name kerchunk references: a `.json` file, or a directory of the
    parquet layout (`.zmetadata`, no Zarr metadata of its own beside it, records below)?"""
    if os.path.isfile(path):
        return path.lower().endswith(".json")
    return (os.path.isfile(os.path.join(path, ".zmetadata"))
            and not any(os.path.exists(os.path.join(path, name))
                        for name in (".zgroup", ".zarray", "zarr.json"))
            and any(os.path.isfile(os.path.join(path, entry.name, "refs.0.parq"))
                    for entry in os.scandir(path) if entry.is_dir()))


def open_references(location: str, storage_options: StorageOptions | None
                    ) -> ReferenceStore | None:
    """make_store's ReferenceStore (urls.LOCATION_OPENERS): of a `reference://` URL (its
    storage_options fsspec's ReferenceFileSystem's, see ReferenceStore.from_options) or of
    a local path naming references; None for any other location."""
    if location.lower().startswith("reference://"):
        return ReferenceStore.from_options(location, storage_options)
    if "://" in location or "::" in location or not _names_references(location):
        return None
    return ReferenceStore(location)


LOCATION_OPENERS.append(open_references)
