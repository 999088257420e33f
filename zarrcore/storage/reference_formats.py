"""The formats of kerchunk's virtual references that ReferenceStore reads: JSON, versions 0
and 1 (inline bytes, byte ranges of other files, `{{ }}` templates and `gen` entries that
generate references), and the parquet layout (a directory of records). Each answers a key
with its Reference, without reading any target."""

from __future__ import annotations

import ast
import base64
import binascii
import bisect
import functools
import itertools
import json
import math
import numbers
import operator
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from ..errors import ReferenceFormatError, StoreURLError
from .base import validate_key, validate_keys

if TYPE_CHECKING:
    from .base import Store

__all__ = [
    "MAX_GENERATED",
    "MAX_RENDERED",
    "OFFSET_MAX",
    "PARQUET_RECORDS_HELD",
    "Target",
    "Reference",
    "render",
    "JsonReferences",
    "parse_references",
    "ParquetReferences",
]

# The longest text a template expression may make (URLs and keys are far shorter).
_MAX_TEXT = 1 << 16
# The most references `gen` may make.
MAX_GENERATED = 1 << 22
# Parquet records (one file each) held in memory at once.
PARQUET_RECORDS_HELD = 64
_REFERENCES_EXTRA = 'pip install "zarrcore[references]"'


class Target(NamedTuple):
    """Where a reference's bytes are: `url`'s [offset, offset + length), or all of it when
    `length` is None."""

    url: str
    offset: int
    length: int | None


#: A reference: inline bytes, or a Target.
Reference = Union[bytes, Target]


# -- templates and gen: {{ expression }} of names, numbers and arithmetic --------------------
_TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.S)
_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _evaluate(expression: str, names: Mapping[str, Any], where: str) -> Any:
    """The value of a template `expression` (jinja's syntax, of which names, numbers,
    strings, parentheses and + - * / // % are taken: what kerchunk's references use)."""

    def refuse(why: str) -> ReferenceFormatError:
        return ReferenceFormatError(f"{where}: cannot evaluate {{{{{expression}}}}}: {why}")

    def value(node: ast.AST) -> Any:
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float, str))
            and not isinstance(node.value, bool)
        ):
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
            strings = isinstance(node.op, ast.Add) and all(
                isinstance(v, str) for v in (left, right)
            )
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
        tree = _parsed(expression.strip())
        if isinstance(tree, str):
            raise refuse(f"not an expression zarrcore evaluates ({tree})")
        return value(tree.body)
    except (RecursionError, MemoryError) as e:
        raise refuse(f"not an expression zarrcore evaluates ({type(e).__name__})") from None


@functools.lru_cache(maxsize=1024)
def _parsed(expression: str) -> ast.Expression | str:
    """The tree of a template expression, parsed once (gen renders one per reference); the
    name of the error when it does not parse."""
    try:
        return ast.parse(expression, mode="eval")
    except (SyntaxError, RecursionError, MemoryError) as e:
        return type(e).__name__


def render(text: str, names: Mapping[str, Any], where: str) -> str:
    """`text` with each {{ expression }} replaced by its value."""
    if "{{" not in text:
        return text
    return _TEMPLATE.sub(lambda m: str(_evaluate(m.group(1), names, where)), text)


def _templates(value: object) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ReferenceFormatError(
            f"references: 'templates' must map names to strings, not {value!r}"
        )
    for name, template in value.items():
        if "{{" in template:
            raise ReferenceFormatError(
                f"references: template {name!r} takes arguments "
                f"({template!r}), which zarrcore does not support"
            )
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
        return Target(
            url, _integer(value[1], f"{where}: offset"), _integer(value[2], f"{where}: length")
        )
    raise ReferenceFormatError(
        f"{where}: expected text, base64 text, [url] or [url, offset, length], not {value!r}"
    )


#: Generated references made one by one, when `gen` keys are expressions rather than names
#: (keys of names are parsed back to their values, none made).
MAX_RENDERED = 1 << 17
_NAME = re.compile(r"\s*([A-Za-z_]\w*)\s*\Z")
OFFSET_MAX = 2**63  # offsets and lengths at or past it are no file's


class _Generator:
    """The references one version 1 `gen` entry makes (every combination of its dimensions'
    values, the last varying fastest, rendered into key, url, offset and length), made only
    when asked for: a key of literal text and dimension names is parsed back to the values
    that render it. A key template of other expressions is rendered for every combination
    once (at most MAX_RENDERED)."""

    def __init__(self, entry: object, templates: Mapping[str, str], where: str) -> None:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("dimensions"), dict)
            or not all(isinstance(entry.get(f), str) for f in ("key", "url"))
        ):
            raise ReferenceFormatError(f"{where}: needs 'key', 'url' and 'dimensions'")
        self.where, self.templates = where, templates
        self.key_template, self.url = entry["key"], entry["url"]
        self.ranged = "offset" in entry or "length" in entry
        self.offset, self.length = (str(entry.get(f, "")) for f in ("offset", "length"))
        self.axes: dict[str, Sequence[Any]] = {}
        for name, spec in entry["dimensions"].items():
            if isinstance(spec, list):
                self.axes[name] = spec
            elif isinstance(spec, dict) and "stop" in spec:
                bounds = [
                    _integer(spec.get(f, d), f"{where}: dimension {name!r} {f}")
                    for f, d in (("start", 0), ("stop", 0), ("step", 1))
                ]
                if not bounds[2]:
                    raise ReferenceFormatError(f"{where}: dimension {name!r} has step 0")
                self.axes[name] = range(*bounds)
            else:
                raise ReferenceFormatError(
                    f"{where}: dimension {name!r} must be a list or {{start, stop, step}}"
                )
        try:
            self.count = math.prod(len(axis) for axis in self.axes.values())
        except OverflowError:  # (a range too long to measure)
            self.count = MAX_GENERATED + 1
        self.parts = self._parts()
        self.pattern = None if self.parts is None else re.compile(self._regex(self.parts))
        # A list dimension's values by their text (the last of one text, as rendering all
        # would keep the last reference of a key).
        self._texts = {
            name: {str(v): v for v in axis}
            for name, axis in self.axes.items()
            if not isinstance(axis, range)
        }
        self._made: dict[str, tuple[Any, ...]] | None = None

    def _parts(self) -> list[tuple[str, bool]] | None:
        """The key template as (literal text, False) and (dimension name, True), None when
        it holds other expressions or two names side by side (which parse ambiguously)."""
        parts: list[tuple[str, bool]] = []
        for n, piece in enumerate(_TEMPLATE.split(self.key_template)):
            name = _NAME.match(piece) if n % 2 else None
            if not n % 2:
                if piece:
                    parts.append((piece, False))
            elif name and name.group(1) in self.axes:
                if parts and parts[-1][1]:
                    return None
                parts.append((name.group(1), True))
            elif name and name.group(1) in self.templates:
                parts.append((self.templates[name.group(1)], False))
            else:
                return None
        return parts

    def _regex(self, parts: list[tuple[str, bool]]) -> str:
        out, seen = [], set()
        for text, named in parts:
            if not named:
                out.append(re.escape(text))
            elif text in seen:
                out.append(f"(?P={text})")
            else:
                seen.add(text)
                out.append(
                    f"(?P<{text}>-?[0-9]+)"
                    if isinstance(self.axes[text], range)
                    else f"(?P<{text}>.*?)"
                )
        return "".join(out)

    def _names(self, values: Sequence[Any]) -> dict[str, Any]:
        return {**self.templates, **dict(zip(self.axes, values))}

    def key(self, values: Sequence[Any]) -> str:
        """The key the dimensions' `values` (one each, in order) render."""
        if self.parts is None:
            return render(self.key_template, self._names(values), self.where)
        names = dict(zip(self.axes, values))
        return "".join(str(names[text]) if named else text for text, named in self.parts)

    def keys(self) -> Iterator[str]:
        return map(self.key, itertools.product(*self.axes.values()))

    def check(self) -> None:
        """Render the first reference, so that a template that cannot render fails when the
        references are read; make the keys of a key template of expressions."""
        if self.pattern is None:
            if self.count > MAX_RENDERED:
                raise ReferenceFormatError(
                    f"{self.where}: a key of expressions ({self.key_template!r}) makes more "
                    f"than {MAX_RENDERED} references; keys of dimension names make up to "
                    f"{MAX_GENERATED}"
                )
            self._made = {self.key(v): v for v in itertools.product(*self.axes.values())}
        if self.count:
            self._target(next(itertools.product(*self.axes.values())))

    def lookup(self, key: str) -> Target | None:
        """The reference this entry makes at `key`, None when it makes none there."""
        if self._made is not None:
            values = self._made.get(key)
            return None if values is None else self._target(values)
        assert self.pattern is not None
        found = self.pattern.fullmatch(key)
        if found is None:
            return None
        chosen, texts = [], found.groupdict()
        for name, axis in self.axes.items():
            text = texts.get(name)
            if text is None:  # not in the key: the last value, as rendering all would keep
                if not len(axis):
                    return None
                chosen.append(axis[-1])
            elif isinstance(axis, range):
                if str(int(text)) != text or int(text) not in axis:
                    return None
                chosen.append(int(text))
            elif text in self._texts[name]:
                chosen.append(self._texts[name][text])
            else:
                return None
        return self._target(chosen)

    def _target(self, values: Sequence[Any]) -> Target:
        names = self._names(values)
        url = render(self.url, names, self.where)
        if not self.ranged:
            return Target(url, 0, None)
        offset, length = (
            _integer(render(text, names, self.where), f"{self.where}: {f}")
            for f, text in (("offset", self.offset), ("length", self.length))
        )
        return Target(url, offset, length)


class JsonReferences:
    """The references of a kerchunk JSON document (version 0: {key: value}; version 1:
    {"version": 1, "templates", "gen", "refs"}), kept compact: inline values by key; byte
    ranges as columns (each URL once), a row per key in the keys' order; `gen` entries as
    `_Generator`s, the last first (later references replace earlier ones of the same key)."""

    def __init__(self, refs: object) -> None:
        if not isinstance(refs, dict):
            raise ReferenceFormatError(
                f"references must be a JSON object, not {type(refs).__name__}"
            )
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
            raise ReferenceFormatError(
                f"references: unknown version {version!r} (0 and 1 are read)"
            )
        try:
            validate_keys(entries)
        except ValueError as e:
            raise ReferenceFormatError(f"references: {e}") from None
        self.inline: dict[str, bytes] = {}
        keys, urls, offsets, lengths = self._ranges(entries)
        taken = set(keys) if len(keys) < len(entries) else entries
        for key in (k for k in entries if k not in taken):
            ref = _reference(key, entries[key], templates)
            if isinstance(ref, bytes):
                self.inline[key] = ref
                continue
            length = -1 if ref.length is None else ref.length
            if max(ref.offset, length) >= OFFSET_MAX:
                raise ReferenceFormatError(f"reference {key!r}: offset or length of 2**63 or more")
            keys.append(key)
            urls.append(ref.url)
            offsets.append(ref.offset)
            lengths.append(length)
        # Rows in the order of their keys, found by bisection: a sorted list costs a pointer
        # a key, where a dict of rows costs ten times that.
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self.keys = [keys[i] for i in order]
        self.urls = list(dict.fromkeys(urls))
        number = {url: n for n, url in enumerate(self.urls)}
        self.url_of = array("q", map(number.__getitem__, map(urls.__getitem__, order)))
        self.offsets = array("q", map(offsets.__getitem__, order))
        self.lengths = array("q", map(lengths.__getitem__, order))
        gen = refs.get("gen", []) if version == 1 else []
        if not isinstance(gen, list):
            raise ReferenceFormatError(f"references: 'gen' must be a list, not {gen!r}")
        self.generators = [
            _Generator(entry, templates, f"references: gen[{n}]") for n, entry in enumerate(gen)
        ]
        made = 0
        for g in self.generators:
            made += g.count
            if made > MAX_GENERATED:
                raise ReferenceFormatError(f"{g.where}: makes more than {MAX_GENERATED} references")
            g.check()
        self.generators.reverse()

    @staticmethod
    def _ranges(entries: dict[str, Any]) -> tuple[list[str], list[str], list[int], list[int]]:
        """(keys, urls, offsets, lengths) of the entries [url, offset, length] whose url holds
        no template and whose numbers are plain: the bulk of a large file, taken in passes
        over all of them rather than entry by entry."""
        top = OFFSET_MAX
        keys = [
            k
            for k, v in entries.items()
            if type(v) is list
            and len(v) == 3
            and type(v[0]) is str
            and "{{" not in v[0]
            and type(v[1]) is int
            and type(v[2]) is int
            and 0 <= v[1] < top
            and 0 <= v[2] < top
        ]
        if not keys:
            return [], [], [], []
        urls, offsets, lengths = map(list, zip(*map(entries.__getitem__, keys)))
        return keys, urls, offsets, lengths

    def lookup(self, key: str) -> Reference | None:
        for g in self.generators:
            found = g.lookup(key)
            if found is not None:
                return found
        row = bisect.bisect_left(self.keys, key)
        if row < len(self.keys) and self.keys[row] == key:
            length = self.lengths[row]
            return Target(
                self.urls[self.url_of[row]], self.offsets[row], None if length < 0 else length
            )
        return self.inline.get(key)

    def all_keys(self) -> Iterator[str]:
        """Every key, once."""
        if not self.generators:
            yield from self.inline
            yield from self.keys
            return
        yield from dict.fromkeys(
            itertools.chain(self.inline, self.keys, *(g.keys() for g in reversed(self.generators)))
        )


def parse_references(refs: object) -> JsonReferences:
    """The references of a kerchunk JSON document (JsonReferences)."""
    return JsonReferences(refs)


def _key(key: object) -> str:
    try:
        return validate_key(key)
    except ValueError as e:
        raise ReferenceFormatError(f"references: {e}") from None


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
        raise StoreURLError(
            f"{where}: parquet references need pyarrow or fastparquet: {_REFERENCES_EXTRA}"
        ) from None
    except (ValueError, OSError) as e:
        raise ReferenceFormatError(f"{where}: not a readable parquet file: {e}") from None
    return {
        str(name): [None if v is None or v != v else v for v in frame[name].tolist()]
        for name in frame.columns
    }


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
        if (
            not isinstance(metadata, dict)
            or isinstance(self.record_size, bool)
            or not isinstance(self.record_size, int)
            or self.record_size < 1
        ):
            raise ReferenceFormatError(f"{where}/.zmetadata: invalid metadata or record_size")
        self.metadata = {
            _key(k): (v if isinstance(v, str) else json.dumps(v)).encode()
            for k, v in metadata.items()
        }
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
        number, row = divmod(
            int(sum(c * math.prod(grid[d + 1 :]) for d, c in enumerate(coords))), self.record_size
        )
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
        return (
            Target(str(path), 0, None) if offset == size == 0 else Target(str(path), offset, size)
        )

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
