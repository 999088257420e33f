"""Zarr v3 metadata documents (``zarr.json``) for arrays and groups."""

from collections.abc import Iterable
from dataclasses import InitVar, dataclass, field
from typing import Any

from zarrcore.metadata.common import (
    ArrayMetadata,
    JSONDict,
    MetadataDocument,
    check_zarr_format,
    field_error,
    is_int,
    load_json_document,
)
from zarrcore.metadata.dtypes import DataType, dtype_from_v3_json
from zarrcore.metadata.dtypes.base import name_and_config
from zarrcore.metadata.dtypes.numeric import swap_unit
from zarrcore.metadata.grid import ChunkGrid

__all__ = [
    "ChunkKeyEncoding",
    "ArrayMetadataV3",
    "GroupMetadataV3",
    "default_codecs",
    "parse_metadata_v3",
]


def _check_format(doc: JSONDict, where: str, node_type: str) -> None:
    check_zarr_format(doc, where, 3)
    if "node_type" not in doc:
        raise field_error(where, "node_type", "missing")
    if doc["node_type"] != node_type:
        raise field_error(where, "node_type", f"expected {node_type!r}, got {doc['node_type']!r}")


def _split_extra(doc: JSONDict, known: frozenset[str], where: str) -> JSONDict:
    """Unknown top-level fields; only objects with ``"must_understand": false`` may be
    ignored."""
    extra = {}
    for key, value in doc.items():
        if key in known:
            continue
        if isinstance(value, dict) and value.get("must_understand") is False:
            extra[key] = value
        else:
            raise field_error(
                where, key, 'unknown field that is not marked "must_understand": false'
            )
    return extra


def _check_extra(extra: object, known: frozenset[str], where: str) -> JSONDict:
    if not isinstance(extra, dict):
        raise field_error(where, "extra", "expected a dict")
    for key, value in extra.items():
        if key in known or not (isinstance(value, dict) and value.get("must_understand") is False):
            raise field_error(
                where, key, 'extra fields must be unknown objects with "must_understand": false'
            )
    return dict(extra)


def _check_attributes(attributes: object, where: str) -> JSONDict:
    if not isinstance(attributes, dict):
        raise field_error(
            where, "attributes", f"expected an object, got {type(attributes).__name__}"
        )
    return attributes


def _extension(value: object, where: str, name: str) -> tuple[str, JSONDict]:
    """(name, configuration) of an extension value, either short-hand string or object."""
    parsed = name_and_config(value)
    if parsed[0] is not None:
        return parsed
    raise field_error(
        where, name, f'expected a name or a {{"name", "configuration"}} object, got {value!r}'
    )


@dataclass(frozen=True, init=False)
class ChunkKeyEncoding:
    """The ``default`` (``c/1/2``) or ``v2`` (``1.2``) chunk key encoding.

    ``separator`` defaults to "/" for ``default`` and "." for ``v2``.
    """

    name: str
    separator: str

    def __init__(self, name: str = "default", separator: str | None = None) -> None:
        if name not in ("default", "v2"):
            raise ValueError(f"unknown chunk key encoding {name!r}")
        if separator is None:
            separator = "/" if name == "default" else "."
        if separator not in ("/", "."):
            raise ValueError(f"chunk key separator must be '/' or '.', got {separator!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "separator", separator)

    def encode(self, coords: Iterable[int]) -> str:
        """The store key (relative to the array) of the chunk at grid index ``coords``."""
        parts = [str(int(c)) for c in coords]
        if self.name == "default":
            return self.separator.join(["c", *parts])
        return self.separator.join(parts) if parts else "0"

    def to_json(self) -> JSONDict:
        return {"name": self.name, "configuration": {"separator": self.separator}}

    @classmethod
    def from_json(cls, obj: object, where: str = "zarr.json") -> "ChunkKeyEncoding":
        name, config = _extension(obj, where, "chunk_key_encoding")
        if name not in ("default", "v2"):
            raise field_error(where, "chunk_key_encoding", f"unknown chunk key encoding {name!r}")
        if set(config) - {"separator"} or config.get("separator", ".") not in ("/", "."):
            raise field_error(where, "chunk_key_encoding", f"invalid configuration {config!r}")
        return cls(name, config.get("separator"))


_ARRAY_KEYS = frozenset(
    {
        "zarr_format",
        "node_type",
        "shape",
        "data_type",
        "chunk_grid",
        "chunk_key_encoding",
        "fill_value",
        "codecs",
        "attributes",
        "storage_transformers",
        "dimension_names",
    }
)


def default_codecs(data_type: DataType) -> list[JSONDict]:
    """The serializer zarr-python gives a new array of `data_type`, as codec JSON."""
    if data_type.v2_object_codec_id is not None:
        return [{"name": data_type.v2_object_codec_id, "configuration": {}}]
    if swap_unit(data_type.numpy_dtype) == 0:  # no byte order: numpy's "|", ml_dtypes' 1-byte
        return [{"name": "bytes"}]
    return [{"name": "bytes", "configuration": {"endian": "little"}}]


def _native(data_type: DataType) -> DataType:
    # v3 data types carry no byte order; re-resolving the v3 form gives native order.
    # Computing that form first also rejects types v3 cannot store (TypeError).
    as_json = data_type.to_json_v3()
    return data_type if data_type.numpy_dtype.isnative else dtype_from_v3_json(as_json)


@dataclass(eq=False)
class ArrayMetadataV3(ArrayMetadata):
    """The ``zarr.json`` of a v3 array.

    ``codecs`` are kept as their stored JSON; ``fill_value`` is a numpy scalar
    (``None`` means the data type's default); ``where`` only labels errors. ``chunk_grid``
    is None for a regular grid of ``chunk_shape``; a rectilinear grid sets ``chunk_shape`` to
    its largest chunk, follows ``shape`` (``evolve(shape=...)`` resizes it) and is the one
    the chunks' positions come from (``grid``).
    """

    shape: tuple[int, ...]
    data_type: DataType
    chunk_shape: tuple[int, ...]
    chunk_key_encoding: ChunkKeyEncoding = field(default_factory=ChunkKeyEncoding)
    fill_value: object = None
    codecs: list[Any] | None = None
    attributes: JSONDict = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    storage_transformers: list[Any] = field(default_factory=list)
    extra: JSONDict = field(default_factory=dict)
    chunk_grid: ChunkGrid | None = None
    where: InitVar[str] = "zarr.json"

    zarr_format = 3
    node_type = "array"

    def __post_init__(self, where: str) -> None:
        if self.chunk_grid is not None:
            if tuple(self.chunk_grid.shape) != tuple(self.shape):
                self.chunk_grid = self.chunk_grid.resized(self.shape)
            self.chunk_shape = self.chunk_grid.max_chunk_shape
        self._check_grid(
            where,
            "chunk_grid",
            "chunk shape {chunks} does not match the {ndim} dimensions of shape",
        )
        self.data_type = _native(self.data_type)
        if not isinstance(self.chunk_key_encoding, ChunkKeyEncoding):
            self.chunk_key_encoding = ChunkKeyEncoding.from_json(self.chunk_key_encoding, where)
        if self.fill_value is None:
            self.fill_value = self.data_type.default_fill_value()
        else:
            self.fill_value = self.data_type.cast_fill_value(self.fill_value)
        if self.codecs is None:
            self.codecs = default_codecs(self.data_type)
        if not isinstance(self.codecs, (list, tuple)) or not self.codecs:
            raise field_error(where, "codecs", "expected a non-empty list")
        for codec in self.codecs:
            _extension(codec, where, "codecs")
        self.codecs = list(self.codecs)
        self.attributes = _check_attributes(self.attributes, where)
        if self.dimension_names is not None:
            names = self.dimension_names
            if (
                not isinstance(names, (list, tuple))
                or len(names) != len(self.shape)
                or not all(n is None or isinstance(n, str) for n in names)
            ):
                raise field_error(
                    where,
                    "dimension_names",
                    f"expected {len(self.shape)} strings or nulls, got {names!r}",
                )
            self.dimension_names = tuple(names)
        if not isinstance(self.storage_transformers, (list, tuple)):
            raise field_error(where, "storage_transformers", "expected a list")
        for transformer in self.storage_transformers:
            # None are supported; only ones that may be ignored are allowed.
            if not (isinstance(transformer, dict) and transformer.get("must_understand") is False):
                name, _ = _extension(transformer, where, "storage_transformers")
                raise field_error(
                    where, "storage_transformers", f"unsupported storage transformer {name!r}"
                )
        self.storage_transformers = list(self.storage_transformers)
        self.extra = _check_extra(self.extra, _ARRAY_KEYS, where)

    @classmethod
    def from_json(cls, doc: object, where: str = "zarr.json") -> "ArrayMetadataV3":
        """Parse and validate an array ``zarr.json`` (bytes, str or dict)."""
        doc = load_json_document(doc, where)
        _check_format(doc, where, "array")
        for key in (
            "shape",
            "data_type",
            "chunk_grid",
            "chunk_key_encoding",
            "fill_value",
            "codecs",
        ):
            if key not in doc:
                raise field_error(where, key, "missing")
        data_type = dtype_from_v3_json(doc["data_type"], where)
        grid_name, grid_config = _extension(doc["chunk_grid"], where, "chunk_grid")
        grid = None
        if grid_name == "rectilinear":
            shape = doc["shape"]
            if not (isinstance(shape, list) and all(is_int(s) and s >= 0 for s in shape)):
                raise field_error(
                    where, "shape", f"expected a list of non-negative integers, got {shape!r}"
                )
            grid = ChunkGrid.from_json(grid_name, grid_config, shape, where)
        elif grid_name != "regular":
            raise field_error(where, "chunk_grid", f"unsupported chunk grid {grid_name!r}")
        elif set(grid_config) != {"chunk_shape"}:
            raise field_error(
                where,
                "chunk_grid",
                f'expected configuration {{"chunk_shape": [...]}}, got {grid_config!r}',
            )
        return cls(
            shape=doc["shape"],
            data_type=data_type,
            chunk_shape=grid.max_chunk_shape if grid else grid_config["chunk_shape"],
            chunk_grid=grid,
            chunk_key_encoding=ChunkKeyEncoding.from_json(doc["chunk_key_encoding"], where),
            fill_value=data_type.fill_value_from_json(doc["fill_value"], 3, where),
            codecs=doc["codecs"],
            attributes=doc.get("attributes", {}),
            dimension_names=doc.get("dimension_names"),
            storage_transformers=doc.get("storage_transformers", []),
            extra=_split_extra(doc, _ARRAY_KEYS, where),
            where=where,
        )

    def to_json(self) -> JSONDict:
        """The ``zarr.json`` document as a dict, fields in zarr-python's order (so the
        documents it and zarrcore write for the same array are the same bytes)."""
        assert self.codecs is not None  # __post_init__ set it
        doc: JSONDict = {
            "shape": list(self.shape),
            "data_type": self.data_type.to_json_v3(),
            "chunk_grid": self.grid.to_json(),
            "chunk_key_encoding": self.chunk_key_encoding.to_json(),
            "fill_value": self.data_type.fill_value_to_json(self.fill_value, 3),
            "codecs": list(self.codecs),
            "attributes": self.attributes,
        }
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        doc.update(
            {
                "zarr_format": 3,
                "node_type": "array",
                "storage_transformers": list(self.storage_transformers),
            }
        )
        doc.update(self.extra)
        return doc

    @property
    def grid(self) -> ChunkGrid:
        """The chunk grid: where each chunk lies and its shape."""
        return self.chunk_grid or ChunkGrid.regular(self.chunk_shape, self.shape)

    def __eq__(self, other: object) -> bool:
        # Compare the JSON form: NaN fill values are equal when their bits are.
        if not isinstance(other, ArrayMetadataV3):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]


_GROUP_KEYS = frozenset({"zarr_format", "node_type", "attributes", "consolidated_metadata"})


@dataclass
class GroupMetadataV3(MetadataDocument):
    """The ``zarr.json`` of a v3 group; ``consolidated_metadata`` is kept as raw JSON."""

    attributes: JSONDict = field(default_factory=dict)
    consolidated_metadata: JSONDict | None = None
    extra: JSONDict = field(default_factory=dict)
    where: InitVar[str] = "zarr.json"

    zarr_format = 3
    node_type = "group"

    def __post_init__(self, where: str) -> None:
        self.attributes = _check_attributes(self.attributes, where)
        if self.consolidated_metadata is not None and not isinstance(
            self.consolidated_metadata, dict
        ):
            raise field_error(where, "consolidated_metadata", "expected an object or null")
        self.extra = _check_extra(self.extra, _GROUP_KEYS, where)

    @classmethod
    def from_json(cls, doc: object, where: str = "zarr.json") -> "GroupMetadataV3":
        """Parse and validate a group ``zarr.json`` (bytes, str or dict)."""
        doc = load_json_document(doc, where)
        _check_format(doc, where, "group")
        return cls(
            attributes=doc.get("attributes", {}),
            consolidated_metadata=doc.get("consolidated_metadata"),
            extra=_split_extra(doc, _GROUP_KEYS, where),
            where=where,
        )

    def to_json(self) -> JSONDict:
        # zarr-python's order, as for arrays.
        doc: JSONDict = {"attributes": self.attributes, "zarr_format": 3}
        if self.consolidated_metadata is not None:
            doc["consolidated_metadata"] = self.consolidated_metadata
        doc["node_type"] = "group"
        doc.update(self.extra)
        return doc


def parse_metadata_v3(doc: object, where: str = "zarr.json") -> ArrayMetadataV3 | GroupMetadataV3:
    """Parse a ``zarr.json`` into ArrayMetadataV3 or GroupMetadataV3 according to
    ``node_type``."""
    doc = load_json_document(doc, where)
    check_zarr_format(doc, where, 3)
    node_type = doc.get("node_type")
    if node_type == "array":
        return ArrayMetadataV3.from_json(doc, where)
    if node_type == "group":
        return GroupMetadataV3.from_json(doc, where)
    raise field_error(where, "node_type", f"expected 'array' or 'group', got {node_type!r}")
