"""From JSON or numpy to a DataType: each registered class offered the input in turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from zarrcore.errors import (
    DataTypeDependencyError,
    MetadataError,
    ObjectDataTypeError,
    UnknownDataTypeError,
)

from .base import JSON, DataType, name_and_config, registered_data_types
from .strings import PythonObjectType, StringType, VariableLengthBytesType

if TYPE_CHECKING:
    pass

__all__ = ["dtype_from_numpy", "dtype_from_v2_json", "dtype_from_v3_json", "v2_type_for_fill"]


def _resolve(
    from_json: Callable[..., DataType | None], where: str, field: str, *args: Any
) -> DataType | None:
    """A registered type's from_json_*; a type error inside it (a list where a string
    belongs, a size numpy refuses...) as the MetadataError of a malformed data_type."""
    try:
        return from_json(*args)
    except (TypeError, ValueError, OverflowError) as e:
        if isinstance(e, MetadataError):
            raise
        raise MetadataError(
            f"{where}: field {field!r}: invalid data type {args[0]!r}: {e}"
        ) from None


def dtype_from_v3_json(obj: JSON, where: str = "zarr.json") -> DataType:
    """Resolve a v3 ``data_type`` value; UnknownDataTypeError if no registered type accepts it."""
    for cls in registered_data_types():
        dt = _resolve(cls.from_json_v3, where, "data_type", obj, where)
        if dt is not None:
            return dt
    name, _ = name_and_config(obj)
    if name is None:
        raise MetadataError(
            f"{where}: field 'data_type': expected a name or a "
            f'{{"name", "configuration"}} object, got {obj!r}'
        )
    raise UnknownDataTypeError(f"{where}: field 'data_type': unknown or invalid data type {obj!r}")


def dtype_from_v2_json(
    obj: JSON, object_codec_id: str | None = None, where: str = ".zarray"
) -> DataType:
    """Resolve a v2 ``dtype`` value; ``object_codec_id`` disambiguates ``"|O"``."""
    for cls in registered_data_types():
        dt = _resolve(cls.from_json_v2, where, "dtype", obj, object_codec_id, where)
        if dt is not None:
            return dt
    if isinstance(obj, str) and obj.lstrip("<>|=") == "O":
        raise UnknownDataTypeError(
            f"{where}: field 'dtype': object dtype {obj!r} needs an object codec (vlen-utf8, "
            f"vlen-bytes, vlen-array, json2, msgpack2, pickle) or a categorize filter, got "
            f"{object_codec_id!r}"
        )
    raise UnknownDataTypeError(f"{where}: field 'dtype': unknown or invalid data type {obj!r}")


def v2_type_for_fill(data_type: DataType, fill_value: JSON) -> DataType:
    """The type of a v2 array of ``data_type`` whose stored fill value is ``fill_value``.

    zarr 2.x filled vlen-utf8 and vlen-bytes arrays with a number (0 by default) and reads
    them as Python objects: the stored text or bytes, and that number where no chunk is
    stored; so does zarrcore. A null fill stays text or bytes, read empty, as zarr-python 3
    reads it: zarr-python 3 and xarray write null for their v2 string arrays, and nothing in
    the metadata tells those from zarr 2.x's (which read None). zarrcore writes text.
    """
    if isinstance(data_type, (StringType, VariableLengthBytesType)) and isinstance(
        fill_value, (int, float)
    ):
        return PythonObjectType()
    return data_type


# Python types and names that mean variable-length types rather than numpy's U0/S0.
_NUMPY_SPECIAL = {str: StringType, "string": StringType, bytes: VariableLengthBytesType}


def _zarr_data_type(x: Any) -> DataType | None:
    """The DataType of a zarr-python data type object (``zarr.dtype.*``): by its numpy dtype
    (which keeps the byte order), or by its v3 JSON where that is numpy's object dtype; None
    for anything else."""
    if not type(x).__module__.startswith("zarr.") or not callable(
        getattr(x, "to_native_dtype", None)
    ):
        return None
    native = x.to_native_dtype()
    if native.kind != "O":
        return dtype_from_numpy(native)
    return dtype_from_v3_json(x.to_json(zarr_format=3), "dtype")


def dtype_from_numpy(x: Any) -> DataType:
    """The DataType for a numpy dtype (or anything ``np.dtype`` accepts); TypeError if unsupported.

    ``str`` and ``"string"`` give the variable-length string type, ``bytes`` the
    variable-length bytes type; byte order is kept as given. zarr-python's data type objects
    and v3 data type names (``"variable_length_bytes"``) are taken too.
    """
    if isinstance(x, DataType):
        return x
    special = _NUMPY_SPECIAL.get(x) if isinstance(x, (str, type)) else None
    if special is not None:
        return special()
    zarr_type = _zarr_data_type(x)
    if zarr_type is not None:
        return zarr_type
    try:
        dtype = np.dtype(x)
    except (TypeError, ValueError) as e:
        if isinstance(x, (str, dict)):
            try:
                return dtype_from_v3_json(x, "dtype")
            except DataTypeDependencyError:
                raise
            except MetadataError:
                pass
        raise TypeError(f"not a data type: {x!r} ({e})") from None
    for cls in registered_data_types():
        dt = cls.from_numpy(dtype)
        if dt is not None:
            return dt
    if dtype.kind == "O":
        raise ObjectDataTypeError(
            "numpy's object dtype is ambiguous: use dtype=str (or 'string') for variable-length "
            "text, dtype=bytes for variable-length bytes; for other Python objects (format 2 "
            "only), give the object codec among the filters (json2, msgpack2, vlen-array, pickle)"
        )
    raise TypeError(f"unsupported data type {dtype!r}")
