"""Zarr v2 metadata documents: ``.zarray``, ``.zgroup`` and ``.zattrs``."""

from dataclasses import InitVar, dataclass, field

from zarrcore.errors import MetadataError
from zarrcore.metadata.common import (
    ArrayMetadata,
    JSONDict,
    MetadataDocument,
    check_zarr_format,
    dump_json,
    field_error,
    load_json_document,
)
from zarrcore.metadata.dtypes import (
    DataType,
    dtype_from_v2_json,
    registered_data_types,
    v2_type_for_fill,
)
from zarrcore.metadata.grid import ChunkGrid
from zarrcore.metadata.v3 import ChunkKeyEncoding

__all__ = ["ArrayMetadataV2", "GroupMetadataV2", "parse_metadata_v2"]


def _zattrs_where(where: str, own_name: str) -> str:
    return where[: -len(own_name)] + ".zattrs" if where.endswith(own_name) else ".zattrs"


def _load_attributes(zattrs_doc: object, where: str) -> JSONDict:
    if zattrs_doc is None:
        return {}
    # .zattrs is the attributes object itself, so field errors name the document.
    return load_json_document(zattrs_doc, where)


def _codec_config(value: object, where: str, name: str) -> JSONDict:
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return value
    raise field_error(
        where, name, f'expected a codec configuration with a string "id", got {value!r}'
    )


def _object_codec_id(filters: list[JSONDict] | None, compressor: JSONDict | None) -> str | None:
    """The id of the first known object codec (vlen-utf8, vlen-bytes, json2, …, or a
    categorize filter, which stores objects as numbers) among the codecs."""
    known = {id_ for cls in registered_data_types() for id_ in cls.v2_object_codec_ids}
    for codec in [*(filters or ()), compressor]:
        if codec is not None and codec["id"] in known:
            codec_id: str = codec["id"]
            return codec_id
    return None


@dataclass(eq=False)
class ArrayMetadataV2(ArrayMetadata):
    """A v2 array: its ``.zarray`` plus the attributes from ``.zattrs``.

    ``data_type`` keeps the stored byte order, so ``dtype`` may be big-endian.
    ``fill_value`` is a numpy scalar, or None for ``null`` (unset chunks are
    undefined; read them as zeros).  ``compressor`` and ``filters`` are the raw
    numcodecs configurations; ``filters=[]`` and ``None`` stay distinct.
    """

    shape: tuple[int, ...]
    data_type: DataType
    chunk_shape: tuple[int, ...]
    compressor: JSONDict | None = None
    fill_value: object = None
    order: str = "C"
    filters: list[JSONDict] | None = None
    dimension_separator: str = "."
    attributes: JSONDict = field(default_factory=dict)
    where: InitVar[str] = ".zarray"

    zarr_format = 2
    node_type = "array"

    def __post_init__(self, where: str) -> None:
        self._check_grid(
            where, "chunks", "chunks {chunks} do not match the {ndim} dimensions of shape"
        )
        if self.compressor is not None:
            _codec_config(self.compressor, where, "compressor")
        if self.filters is not None:
            if not isinstance(self.filters, (list, tuple)):
                raise field_error(
                    where, "filters", f"expected a list or null, got {self.filters!r}"
                )
            self.filters = [_codec_config(f, where, "filters") for f in self.filters]
        if self.fill_value is not None:
            self.fill_value = self.data_type.cast_fill_value(self.fill_value)
        if self.order not in ("C", "F"):
            raise field_error(where, "order", f"expected 'C' or 'F', got {self.order!r}")
        if self.dimension_separator not in (".", "/"):
            raise field_error(
                where,
                "dimension_separator",
                f"expected '.' or '/', got {self.dimension_separator!r}",
            )
        if not isinstance(self.attributes, dict):
            raise MetadataError(f"{_zattrs_where(where, '.zarray')}: expected an object")

    @property
    def grid(self) -> ChunkGrid:
        """The chunk grid (always regular in format 2)."""
        return ChunkGrid.regular(self.chunk_shape, self.shape)

    @property
    def chunk_key_encoding(self) -> ChunkKeyEncoding:
        """The equivalent v3 ``v2`` chunk key encoding (keys "0.0", "0/0"; "0" for 0-d)."""
        return ChunkKeyEncoding("v2", self.dimension_separator)

    @classmethod
    def from_json(
        cls, zarray_doc: object, zattrs_doc: object = None, where: str = ".zarray"
    ) -> "ArrayMetadataV2":
        """Parse ``.zarray`` (and optionally ``.zattrs``); unknown ``.zarray`` keys are
        ignored."""
        doc = load_json_document(zarray_doc, where)
        check_zarr_format(doc, where, 2)
        for key in ("shape", "chunks", "dtype", "compressor", "fill_value", "order"):
            if key not in doc:
                raise field_error(where, key, "missing")
        # Documents from before v2 had filters lack the key.
        filters = doc.get("filters")
        if filters is not None:
            if not isinstance(filters, list):
                raise field_error(where, "filters", f"expected a list or null, got {filters!r}")
            filters = [_codec_config(f, where, "filters") for f in filters]
        compressor = doc["compressor"]
        if compressor is not None:
            _codec_config(compressor, where, "compressor")
        data_type = v2_type_for_fill(
            dtype_from_v2_json(doc["dtype"], _object_codec_id(filters, compressor), where),
            doc["fill_value"],
        )
        return cls(
            shape=doc["shape"],
            data_type=data_type,
            chunk_shape=doc["chunks"],
            compressor=compressor,
            fill_value=data_type.fill_value_from_json(doc["fill_value"], 2, where),
            order=doc["order"],
            filters=filters,
            dimension_separator=doc.get("dimension_separator", "."),
            attributes=_load_attributes(zattrs_doc, _zattrs_where(where, ".zarray")),
            where=where,
        )

    def to_json(self) -> JSONDict:
        """The ``.zarray`` document as a dict, keys in zarr-python's order."""
        return {
            "shape": list(self.shape),
            "chunks": list(self.chunk_shape),
            "dtype": self.data_type.to_json_v2(),
            "fill_value": self.data_type.fill_value_to_json(self.fill_value, 2),
            "order": self.order,
            "filters": None if self.filters is None else list(self.filters),
            "dimension_separator": self.dimension_separator,
            "compressor": self.compressor,
            "zarr_format": 2,
        }

    def zattrs_bytes(self) -> bytes:
        """``.zattrs`` as UTF-8 JSON, indented by 2."""
        return dump_json(self.attributes)

    def __eq__(self, other: object) -> bool:
        # Compare the JSON form: NaN fill values are equal then.
        if not isinstance(other, ArrayMetadataV2):
            return NotImplemented
        return (self.to_json(), self.attributes) == (other.to_json(), other.attributes)

    __hash__ = None  # type: ignore[assignment]


@dataclass
class GroupMetadataV2(MetadataDocument):
    """A v2 group: ``.zgroup`` (``{"zarr_format": 2}``) plus the attributes from ``.zattrs``."""

    attributes: JSONDict = field(default_factory=dict)
    where: InitVar[str] = ".zgroup"

    zarr_format = 2
    node_type = "group"

    def __post_init__(self, where: str) -> None:
        if not isinstance(self.attributes, dict):
            raise MetadataError(f"{_zattrs_where(where, '.zgroup')}: expected an object")

    @classmethod
    def from_json(
        cls, zgroup_doc: object, zattrs_doc: object = None, where: str = ".zgroup"
    ) -> "GroupMetadataV2":
        """Parse ``.zgroup`` (and optionally ``.zattrs``)."""
        check_zarr_format(load_json_document(zgroup_doc, where), where, 2)
        return cls(
            attributes=_load_attributes(zattrs_doc, _zattrs_where(where, ".zgroup")), where=where
        )

    def to_json(self) -> JSONDict:
        return {"zarr_format": 2}

    def zattrs_bytes(self) -> bytes:
        """``.zattrs`` as UTF-8 JSON, indented by 2."""
        return dump_json(self.attributes)


def parse_metadata_v2(
    zarray_doc: object = None,
    zgroup_doc: object = None,
    zattrs_doc: object = None,
    prefix: str = "",
) -> ArrayMetadataV2 | GroupMetadataV2:
    """Array or group metadata from whichever of ``.zarray`` / ``.zgroup`` exists under
    ``prefix``.

    ``prefix`` (e.g. "a/b/") only labels errors.
    """
    if (zarray_doc is None) == (zgroup_doc is None):
        raise MetadataError(f"{prefix}.zarray: expected exactly one of .zarray and .zgroup")
    if zarray_doc is not None:
        return ArrayMetadataV2.from_json(zarray_doc, zattrs_doc, where=f"{prefix}.zarray")
    return GroupMetadataV2.from_json(zgroup_doc, zattrs_doc, where=f"{prefix}.zgroup")
