"""Structured (record) data types, whose fields are data types of their own."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from zarrcore.errors import MetadataError

from .base import JSON, DataType, VoidBase, name_and_config
from .resolve import dtype_from_numpy, dtype_from_v2_json, dtype_from_v3_json

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["StructuredType"]


def _struct_field_error(where: str, field: str, msg: str) -> MetadataError:
    return MetadataError(f"{where}: field {field!r}: structured data type: {msg}")


def _struct_entry(entry: JSON) -> tuple[str, JSON] | None:
    """(name, data type JSON) of a v3 field: ``[name, dt]`` or
    ``{"name": name, "data_type": dt}``."""
    if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
        return entry[0], entry[1]
    if (
        isinstance(entry, dict)
        and set(entry) == {"name", "data_type"}
        and isinstance(entry["name"], str)
    ):
        return entry["name"], entry["data_type"]
    return None


class StructuredType(VoidBase):
    """Packed numpy structured dtypes.

    v3 has two forms, and an array read in one is written back in it: zarr-python's
    ``{"name": "structured", "configuration": {"fields": [[name, data_type], ...]}}`` with
    base64 fill values (what new arrays get), and zarr-extensions'
    ``{"name": "struct", "configuration": {"fields": [{"name": ..., "data_type": ...}, ...]}}``
    with fill values as objects of per-field fill values.  Either field form and either fill
    form is read under both names.  v2: ``[[name, typestr], [name, typestr, shape], ...]`` with
    nested lists for nested structures; fields with a shape exist only in v2.
    """

    def __init__(self, numpy_dtype: npt.DTypeLike, v3_name: str = "structured") -> None:
        super().__init__(numpy_dtype)
        self.v3_name = v3_name

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name not in ("structured", "struct") or config is None:
            return None
        entries = config.get("fields")
        if set(config) != {"fields"} or not isinstance(entries, list) or not entries:
            raise _struct_field_error(
                where, "data_type", f"expected a non-empty list of fields, got {config!r}"
            )
        fields: list[tuple[str, np.dtype[Any]]] = []
        for entry in entries:
            parsed = _struct_entry(entry)
            if parsed is None:
                raise _struct_field_error(
                    where,
                    "data_type",
                    f'expected [name, data_type] or {{"name", "data_type"}}, got {entry!r}',
                )
            fields.append((parsed[0], dtype_from_v3_json(parsed[1], where).numpy_dtype))
        dt = cls._build(fields, where, "data_type")
        dt.v3_name = name
        return dt

    @classmethod
    def from_json_v2(
        cls, obj: JSON, object_codec_id: str | None = None, where: str = ".zarray"
    ) -> Self | None:
        if not isinstance(obj, list):
            return None
        fields: list[tuple[Any, ...]] = []
        for entry in obj:
            if not (isinstance(entry, list) and len(entry) in (2, 3) and isinstance(entry[0], str)):
                raise _struct_field_error(
                    where, "dtype", f"expected [name, dtype] or [name, dtype, shape], got {entry!r}"
                )
            field_dtype = dtype_from_v2_json(entry[1], None, where).numpy_dtype
            if len(entry) == 3:
                shape = entry[2]
                if not (
                    isinstance(shape, list)
                    and all(
                        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
                    )
                ):
                    raise _struct_field_error(where, "dtype", f"invalid field shape {shape!r}")
                fields.append((entry[0], field_dtype, tuple(shape)))
            else:
                fields.append((entry[0], field_dtype))
        return cls._build(fields, where, "dtype")

    @classmethod
    def _build(cls, fields: list[Any], where: str, field: str) -> Self:
        if not fields:
            raise _struct_field_error(where, field, "no fields")
        try:
            dtype = np.dtype(fields)
        except (TypeError, ValueError) as e:
            raise _struct_field_error(where, field, str(e)) from None
        dt = cls.from_numpy(dtype)
        if dt is None:
            raise _struct_field_error(where, field, f"unsupported fields {fields!r}")
        return dt

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        fields = dtype.fields
        if dtype.kind != "V" or dtype.names is None or fields is None or dtype.hasobject:
            return None
        # Only packed layouts: the JSON forms have no room for offsets or padding.
        offset = 0
        for name in dtype.names:
            field_dtype, field_offset = fields[name][:2]
            if field_offset != offset:
                return None
            base = field_dtype.subdtype[0] if field_dtype.subdtype else field_dtype
            try:
                dtype_from_numpy(base)
            except TypeError:
                return None
            offset += field_dtype.itemsize
        return cls(dtype) if offset == dtype.itemsize else None

    def _fields(self) -> Iterator[tuple[str, DataType, tuple[int, ...] | None]]:
        """(name, DataType, shape or None) per field; nested structures keep this one's v3 form."""
        fields: Mapping[str, tuple[Any, ...]] = self.numpy_dtype.fields or {}
        for name in self.numpy_dtype.names or ():
            field_dtype = fields[name][0]
            shape = None
            if field_dtype.subdtype:
                field_dtype, shape = field_dtype.subdtype
            dt = dtype_from_numpy(field_dtype)
            if isinstance(dt, StructuredType):
                dt.v3_name = self.v3_name
            yield name, dt, shape

    def _v3_fields(self) -> Iterator[tuple[str, DataType]]:
        for name, dt, shape in self._fields():
            if shape is not None:
                raise TypeError(
                    f"structured field {name!r} has a shape, which Zarr v3 cannot store"
                )
            yield name, dt

    def to_json_v3(self) -> JSON:
        if self.v3_name == "struct":
            fields = [
                {"name": name, "data_type": dt.to_json_v3()} for name, dt in self._v3_fields()
            ]
        else:
            fields = [[name, dt.to_json_v3()] for name, dt in self._v3_fields()]
        return {"name": self.v3_name, "configuration": {"fields": fields}}

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        if not (isinstance(value, dict) and zarr_format == 3):
            return super()._decode_fill(value, zarr_format)
        names = self.numpy_dtype.names or ()
        if set(value) != set(names):
            raise ValueError(f"fill value fields {sorted(value)} are not the fields {list(names)}")
        fill = np.zeros((), dtype=self.numpy_dtype)
        for name, dt in self._v3_fields():
            fill[name] = dt._decode_fill(value[name], zarr_format)
        return fill[()]

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        if zarr_format == 3 and self.v3_name == "struct":
            return {
                name: dt.fill_value_to_json(value[name], zarr_format)
                for name, dt in self._v3_fields()
            }
        return super()._encode_fill(value, zarr_format)

    def to_json_v2(self) -> JSON:
        return [
            [name, dt.to_json_v2()] if shape is None else [name, dt.to_json_v2(), list(shape)]
            for name, dt, shape in self._fields()
        ]
