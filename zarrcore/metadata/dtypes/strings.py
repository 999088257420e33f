"""Strings and objects: variable-length strings and bytes, Python objects, fixed-length
UTF-32 and null-terminated bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from zarrcore.errors import MetadataError

from .base import (
    JSON,
    DataType,
    b64_text,
    bytes_from_json,
    is_number,
    name_and_config,
    parse_typestr,
    parsed_length_bytes,
)

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "FixedLengthUTF32Type",
    "NullTerminatedBytesType",
    "PythonObjectType",
    "StringType",
    "VariableLengthBytesType",
]


def _is_object_typestr(obj: JSON) -> bool:
    parsed = parse_typestr(obj) if isinstance(obj, str) else None
    return parsed is not None and parsed.kind == "O"


class _VariableLengthBase(DataType):
    """Shared by the "|O" types whose v2 identity comes from the object codec."""

    #: the v3 name, also accepted as short-hand
    v3_names: tuple[str, ...] = ()

    def __init__(self, numpy_dtype: npt.DTypeLike = object) -> None:
        super().__init__(numpy_dtype)

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        return cls() if name in cls.v3_names and config == {} else None

    @classmethod
    def from_json_v2(
        cls, obj: JSON, object_codec_id: str | None = None, where: str = ".zarray"
    ) -> Self | None:
        if object_codec_id == cls.v2_object_codec_id and _is_object_typestr(obj):
            return cls()
        return None

    def to_json_v3(self) -> JSON:
        return self.v3_names[0]

    def to_json_v2(self) -> JSON:
        return "|O"

    #: the Python type of the items the vlen codec takes
    item_type: type = object

    def _item(self, item: Any) -> Any:
        """An item (or fill value) as the vlen codec takes it; TypeError if it is not one."""
        if isinstance(item, self.item_type):
            return item
        raise TypeError(
            f"{self} values must be {self.item_type.__name__}, got {type(item).__name__}"
        )

    def cast_array(self, value: Any) -> npt.NDArray[Any]:
        array = super().cast_array(value)
        # Object arrays hold anything; check the items now, before any chunk is written.
        if array.dtype.kind != "O" or set(map(type, array.flat)) <= {self.item_type}:
            return array
        out = np.empty(array.size, dtype=object)
        out[:] = [self._item(x) for x in array.flat]
        return out.reshape(array.shape)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


# numpy >= 2 has a native variable-length string dtype; before that, object arrays of str
# (numpy.dtypes itself is numpy >= 1.25's).
_STRING_NUMPY = (
    np.dtypes.StringDType()
    if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType")
    else np.dtype(object)
)


class StringType(_VariableLengthBase):
    """``string``: variable-length UTF-8 (v2: ``"|O"`` with the vlen-utf8 codec).

    Fill values are ``str`` rather than ``np.str_``, whose conversion to ``str`` drops trailing
    NULs.
    """

    v3_names = ("string",)
    v2_object_codec_id = "vlen-utf8"
    v2_object_codec_ids = ("vlen-utf8",)
    item_type = str

    def __init__(self, numpy_dtype: npt.DTypeLike = _STRING_NUMPY) -> None:
        super().__init__(numpy_dtype)

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls() if dtype.kind == "T" else None

    def default_fill_value(self) -> Any:
        return ""

    def cast_fill_value(self, value: Any) -> Any:
        if is_number(value):  # zarr-python's zeros/ones/full take numbers: 0 -> "0"
            return str(value)
        return str(self._item(value))

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        # A number reads as its text, as zarr-python 3 reads it: in v3; a v2 array with a
        # number as its fill value is one of Python objects (dtype_from_v2_json).
        return self.cast_fill_value(value)

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return str(value)


class VariableLengthBytesType(_VariableLengthBase):
    """``variable_length_bytes`` (object dtype; v2: ``"|O"`` with the vlen-bytes codec).

    Fill values are ``bytes`` rather than ``np.bytes_``, which drops trailing NULs.
    """

    v3_names = ("variable_length_bytes", "bytes")
    v2_object_codec_id = "vlen-bytes"
    v2_object_codec_ids = ("vlen-bytes",)
    item_type = bytes

    def default_fill_value(self) -> Any:
        return b""

    def cast_fill_value(self, value: Any) -> Any:
        return self._item(value)

    def _item(self, item: Any) -> Any:
        return bytes(item) if isinstance(item, (bytearray, memoryview)) else super()._item(item)

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        return bytes_from_json(value, validate=False)  # as zarr-python 3.4 reads it

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return b64_text(value)


class PythonObjectType(_VariableLengthBase):
    """Python objects of Zarr v2 arrays: ``"|O"`` with the json2, msgpack2, pickle or
    vlen-array object codec, or with a categorize filter. Zarr v3 has no such type.

    Fill values are whatever JSON value is stored; zarr 2.x wrote 0 by default.
    """

    v2_object_codec_ids = ("json2", "msgpack2", "pickle", "vlen-array", "categorize")
    item_type = object

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        return None

    @classmethod
    def from_json_v2(
        cls, obj: JSON, object_codec_id: str | None = None, where: str = ".zarray"
    ) -> Self | None:
        if object_codec_id in cls.v2_object_codec_ids and _is_object_typestr(obj):
            return cls()
        return None

    def to_json_v3(self) -> JSON:
        raise TypeError(
            "Zarr v3 has no data type for Python objects (json2, msgpack2, pickle, "
            "vlen-array); they exist in Zarr v2 only"
        )

    def default_fill_value(self) -> Any:
        return 0

    def undefined_fill_value(self) -> Any:
        return None  # as zarr 2.18 reads them

    def cast_fill_value(self, value: Any) -> Any:
        return value

    def cast_array(self, value: Any) -> npt.NDArray[Any]:
        return DataType.cast_array(self, value)

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        return value

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return value


class FixedLengthUTF32Type(DataType):
    """``{"name": "fixed_length_utf32", "configuration": {"length_bytes": N}}`` (numpy
    ``U<N/4>``)."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name != "fixed_length_utf32" or config is None:
            return None
        length = parsed_length_bytes(config, where, name)
        if length % 4:
            raise MetadataError(
                f"{where}: field 'data_type': {name!r} length_bytes must be a multiple of 4"
            )
        return cls(np.dtype(f"U{length // 4}"))

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind == "U" and dtype.itemsize > 0 else None

    def to_json_v3(self) -> JSON:
        config = {"length_bytes": self.numpy_dtype.itemsize}
        return {"name": "fixed_length_utf32", "configuration": config}

    def cast_fill_value(self, value: Any) -> Any:
        if not isinstance(value, str):
            raise TypeError(f"fill value for {self} must be a str, got {value!r}")
        if len(value) > self.numpy_dtype.itemsize // 4:
            raise ValueError(
                f"fill value {value!r} is longer than {self.numpy_dtype.itemsize // 4} characters"
            )
        return np.str_(value)

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        if zarr_format == 2 and (isinstance(value, str) or is_number(value)):
            # zarr 2.x kept the fill value as written and numpy converted it: 0 is "0", and a
            # longer string is cut to the item (zarr 2.18 and zarr-python 3 read it so).
            return np.str_(np.array(value, dtype=self.numpy_dtype)[()])
        return self.cast_fill_value(value)

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return str(value)


class NullTerminatedBytesType(DataType):
    """``{"name": "null_terminated_bytes", "configuration": {"length_bytes": N}}`` (numpy
    ``S<N>``); base64 fill values."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name != "null_terminated_bytes" or config is None:
            return None
        return cls(np.dtype(f"S{parsed_length_bytes(config, where, name)}"))

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind == "S" and dtype.itemsize > 0 else None

    def to_json_v3(self) -> JSON:
        config = {"length_bytes": self.numpy_dtype.itemsize}
        return {"name": "null_terminated_bytes", "configuration": config}

    def cast_fill_value(self, value: Any) -> Any:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"fill value for {self} must be bytes, got {value!r}")
        if len(value) > self.numpy_dtype.itemsize:
            raise ValueError(f"fill value is longer than {self.numpy_dtype.itemsize} bytes")
        return np.bytes_(bytes(value))

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        if zarr_format == 2:
            # As zarr 2.18 reads it: base64 if it decodes, else the value's text (0 from
            # zarr 2.x is b"0"), cut to the item.
            try:
                data = bytes_from_json(value)
            except (TypeError, ValueError):
                if not (isinstance(value, str) or is_number(value)):
                    raise
                data = str(value).encode("ascii")
            return self.cast_fill_value(data[: self.numpy_dtype.itemsize])
        return self.cast_fill_value(bytes_from_json(value))

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return b64_text(value)


# -- dates and times --------------------------------------------------------
