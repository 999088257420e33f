"""JSON helpers and base classes shared by the v2 and v3 metadata documents."""

import dataclasses
import json
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import numpy as np

from zarrcore.errors import MetadataError
from zarrcore.metadata.dtypes import DataType, dtype_from_numpy
from zarrcore.runtime.config import config

__all__ = [
    "INT64_MAX",
    "ArrayMetadata",
    "JSONDict",
    "KeyEncoding",
    "MetadataDocument",
    "check_attributes",
    "check_zarr_format",
    "dump_json",
    "field_error",
    "int_tuple",
    "is_int",
    "load_json_document",
    "parse_json",
]

# Sizes the compiled core computes in signed 64-bit integers.
INT64_MAX = 2**63 - 1

#: A JSON object (a metadata document, attributes).
JSONDict = dict[str, Any]

_D = TypeVar("_D", bound="MetadataDocument")


def field_error(where: str, name: str, msg: str) -> MetadataError:
    return MetadataError(f"{where}: field {name!r}: {msg}")


def parse_json(text: str | bytes, where: str) -> Any:
    """The value of the JSON document `text` (str or UTF-8 bytes); MetadataError naming
    `where` when it is not valid JSON or is nested too deeply to parse."""
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise MetadataError(f"{where}: invalid JSON: {e}") from None
    except RecursionError:
        raise MetadataError(f"{where}: invalid JSON: nested too deeply") from None


def load_json_document(doc: object, where: str) -> JSONDict:
    """Parse a metadata document given as bytes, str or an already-decoded dict."""
    if isinstance(doc, (bytes, bytearray, memoryview)):
        try:
            doc = bytes(doc).decode("utf-8")
        except UnicodeDecodeError as e:
            raise MetadataError(f"{where}: not UTF-8: {e}") from None
    if isinstance(doc, str):
        doc = parse_json(doc, where)
    if not isinstance(doc, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    return doc


def dump_json(obj: object) -> bytes:
    """A metadata document's bytes: UTF-8 JSON, indented by `config.json_indent`."""
    return json.dumps(obj, indent=config.json_indent, ensure_ascii=False).encode("utf-8")


def is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def int_tuple(value: object, where: str, name: str, minimum: int) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)) and all(is_int(v) and v >= minimum for v in value):
        return tuple(int(v) for v in value)
    kind = "positive" if minimum > 0 else "non-negative"
    raise field_error(where, name, f"expected a list of {kind} integers, got {value!r}")


def check_attributes(attributes: object, where: str = "attributes") -> JSONDict:
    """Refuse new attributes that strict JSON cannot hold (sets, NaN, objects nested too
    deeply...), before anything is written."""
    if not isinstance(attributes, dict):
        raise MetadataError(f"{where}: expected a dict, got {type(attributes).__name__}")
    try:
        json.dumps(attributes, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise MetadataError(f"{where}: cannot be stored as JSON: {e}") from None
    except RecursionError:
        raise MetadataError(f"{where}: cannot be stored as JSON: nested too deeply") from None
    return attributes


def check_zarr_format(doc: JSONDict, where: str, version: int) -> None:
    if "zarr_format" not in doc:
        raise field_error(where, "zarr_format", "missing")
    if doc["zarr_format"] != version or isinstance(doc["zarr_format"], bool):
        raise field_error(where, "zarr_format", f"expected {version}, got {doc['zarr_format']!r}")


class KeyEncoding(Protocol):
    """What ArrayMetadata asks of its chunk key encoding (v3.ChunkKeyEncoding)."""

    @property
    def name(self) -> str: ...
    @property
    def separator(self) -> str: ...
    def encode(self, coords: Iterable[int]) -> str: ...


class MetadataDocument:
    """Base of the metadata dataclasses: copies and the stored form of their `to_json()`."""

    # Every subclass is a dataclass.
    __dataclass_fields__: ClassVar[dict[str, "dataclasses.Field[Any]"]]

    def evolve(self: _D, **changes: Any) -> _D:
        """A copy with some fields replaced (validated again; new attributes must be JSON)."""
        if "attributes" in changes:
            check_attributes(changes["attributes"])
        return dataclasses.replace(self, **changes)

    def to_json(self) -> JSONDict:
        """The document as a JSON object."""
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        """The document as UTF-8 JSON, indented by 2."""
        return dump_json(self.to_json())


class ArrayMetadata(MetadataDocument):
    """Base of the v2 and v3 array metadata: `shape`, `chunk_shape`, `data_type` and
    `chunk_key_encoding`, and what follows from them."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    data_type: DataType

    if TYPE_CHECKING:
        # A field of v3 metadata, a property of v2's.
        @property
        def chunk_key_encoding(self) -> KeyEncoding: ...

    def _check_grid(self, where: str, chunks_field: str, mismatch: str) -> None:
        """Validate `shape` and `chunk_shape` (named `chunks_field` in errors; `mismatch`
        formats `chunks` and `ndim` when their lengths differ) and make `data_type` a
        DataType."""
        if isinstance(self.shape, (list, tuple)) and len(self.shape) > config.max_dimensions:
            raise field_error(
                where,
                "shape",
                f"{len(self.shape)} dimensions exceed "
                f"config.max_dimensions ({config.max_dimensions})",
            )
        self.shape = int_tuple(self.shape, where, "shape", 0)
        self.chunk_shape = int_tuple(self.chunk_shape, where, chunks_field, 1)
        if len(self.chunk_shape) != len(self.shape):
            raise field_error(
                where,
                chunks_field,
                mismatch.format(chunks=list(self.chunk_shape), ndim=len(self.shape)),
            )
        if not isinstance(self.data_type, DataType):
            self.data_type = dtype_from_numpy(self.data_type)
        # Bound what the core derives from the grid, so no size it computes can overflow.
        for name, values in (("shape", self.shape), (chunks_field, self.chunk_shape)):
            if any(v > INT64_MAX for v in values):
                raise field_error(where, name, f"{list(values)} holds a size of 2**63 or more")
        if math.prod(-(-s // c) for s, c in zip(self.shape, self.chunk_shape)) > INT64_MAX:
            raise field_error(where, chunks_field, "the chunk grid has 2**63 chunks or more")
        if math.prod(self.chunk_shape) * self.data_type.numpy_dtype.itemsize > INT64_MAX:
            raise field_error(where, chunks_field, "a chunk holds 2**63 bytes or more")

    @property
    def dtype(self) -> np.dtype[Any]:
        """The dtype of the array's values in memory (`DataType.memory_dtype`)."""
        return self.data_type.memory_dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def chunk_key(self, coords: Iterable[int]) -> str:
        """Store key of the chunk at grid index ``coords``, relative to the array."""
        return self.chunk_key_encoding.encode(coords)

    @property
    def key_layout(self) -> tuple[str, str, bool]:
        """(head, separator, leading separator) of the chunk keys: ("c", "/", True) for v3
        default keys "c/1/2", ("", ".", False) for v2 keys "1.2"."""
        encoding = self.chunk_key_encoding
        if encoding.name == "default":
            return "c", encoding.separator, True
        return "", encoding.separator, False

    @property
    def read_fill_value(self) -> Any:
        """The value a chunk not stored reads as: the fill value, or the data type's own
        where v2's `null` leaves it undefined."""
        fill_value: Any = getattr(self, "fill_value")
        if fill_value is None:
            return self.data_type.undefined_fill_value()
        return fill_value
