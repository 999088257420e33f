"""Numeric data types: bool, integers, floats, complex, and ml_dtypes' small floats and ints."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from zarrcore.errors import DataTypeDependencyError

from .base import JSON, DataType, json_int, name_and_config, native_order

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "BoolType",
    "ComplexType",
    "FloatType",
    "IntegerType",
    "MLComplexType",
    "MLFloatType",
    "MLIntegerType",
    "ieee_float_size",
    "swap_unit",
]


class BoolType(DataType):
    """``bool``."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        return cls(np.bool_) if name_and_config(obj) == ("bool", {}) else None

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind == "b" else None

    def to_json_v3(self) -> JSON:
        return "bool"

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        # zarr 2.x sometimes stored 0/1 for boolean fill values.
        if isinstance(value, bool) or (zarr_format == 2 and value in (0, 1)):
            return np.bool_(value)
        raise TypeError("expected true or false")

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return bool(value)


_INT_NAMES: dict[str, np.dtype[Any]] = {
    f"{k}{n}": np.dtype(f"{k[0]}{n // 8}") for k in ("int", "uint") for n in (8, 16, 32, 64)
}


class IntegerType(DataType):
    """``int8`` … ``int64``, ``uint8`` … ``uint64``."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        return cls(_INT_NAMES[name]) if name in _INT_NAMES and config == {} else None

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind in "iu" and dtype.name in _INT_NAMES else None

    def to_json_v3(self) -> JSON:
        return self.numpy_dtype.name

    def _range(self) -> tuple[int, int]:
        info = np.iinfo(self.numpy_dtype)
        return int(info.min), int(info.max)

    @functools.cached_property
    def _plain_type(self) -> Any:
        return self.numpy_dtype if self.numpy_dtype.kind in "iu" else None

    def _plain(self, values: list[JSON]) -> Iterator[bool]:
        low, high = self._range()
        plain = self._plain_type is not None
        return (plain and type(v) is int and low <= v <= high for v in values)  # (no bools)

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        number = json_int(value)
        low, high = self._range()
        if not low <= number <= high:
            raise ValueError(f"out of range [{low}, {high}]")
        return self.numpy_dtype.type(number)

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return int(value)


_FLOAT_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+\Z")


def _bits_view(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The unsigned integer dtype of `dtype`'s item size."""
    return np.dtype(f"u{dtype.itemsize}")


def _float_from_json(value: JSON, dtype: np.dtype[Any], nbits: int | None = None) -> Any:
    """Decode one float per the v3 spec (numbers, named specials, hex bit patterns of at most
    `nbits` bits, by default the item's)."""
    dtype = native_order(dtype)
    if isinstance(value, bool):
        raise TypeError("expected a number")
    if isinstance(value, (int, float)):
        with np.errstate(over="ignore"):
            # Out-of-range numbers round to infinity, as IEEE rounding does.
            if isinstance(value, int) and abs(value) > 2**1024:
                value = math.copysign(math.inf, value)
            return dtype.type(value)
    if isinstance(value, str):
        if value in _FLOAT_SPECIAL:
            return dtype.type(_FLOAT_SPECIAL[value])
        if _HEX_RE.match(value):
            bits, width = int(value, 16), nbits or 8 * dtype.itemsize
            if bits >> width:
                raise ValueError(f"hex value wider than {width} bits")
            # Going through an unsigned view keeps NaN payloads bit-exact.
            return np.array(bits, dtype=_bits_view(dtype)).view(dtype)[()]
    raise TypeError('expected a number, "NaN", "Infinity", "-Infinity" or a "0x..." bit pattern')


def _float_to_json(value: Any, dtype: np.dtype[Any], zarr_format: int) -> JSON:
    dtype = native_order(dtype)
    value = dtype.type(value)
    if np.isnan(value):
        bits = int(np.array(value, dtype=dtype).view(_bits_view(dtype)))
        # The spec's "NaN" is the type's canonical quiet NaN; v2 has no syntax for payloads.
        canonical = int(np.array(math.nan, dtype=dtype).view(_bits_view(dtype)))
        if zarr_format == 3 and bits != canonical:
            return f"0x{bits:0{2 * dtype.itemsize}x}"
        return "NaN"
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


_FLOAT_NAMES: dict[str, np.dtype[Any]] = {
    "float16": np.dtype("f2"),
    "float32": np.dtype("f4"),
    "float64": np.dtype("f8"),
}


class FloatType(DataType):
    """``float16``, ``float32``, ``float64``."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        return cls(_FLOAT_NAMES[name]) if name in _FLOAT_NAMES and config == {} else None

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind == "f" and dtype.name in _FLOAT_NAMES else None

    def to_json_v3(self) -> JSON:
        return self.numpy_dtype.name

    # Numbers as _float_from_json takes them: through float64, as numpy's scalars do.
    _plain_type = np.float64

    def _plain(self, values: list[JSON]) -> Iterator[bool]:
        plain, top = self.numpy_dtype.kind == "f", 2**1023  # (ints float() takes)
        return (plain and (type(v) is float or type(v) is int and abs(v) < top) for v in values)

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        return _float_from_json(value, self.numpy_dtype)

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return _float_to_json(value, self.numpy_dtype, zarr_format)


# The registry's names of numpy's complex types: complex_float32 is complex64.
_COMPLEX_NAMES: dict[str, np.dtype[Any]] = {
    "complex64": np.dtype("c8"),
    "complex128": np.dtype("c16"),
    "complex_float32": np.dtype("c8"),
    "complex_float64": np.dtype("c16"),
}


class ComplexType(DataType):
    """``complex64``, ``complex128`` (or ``complex_float32``, ``complex_float64``, written back
    as read); fill values are ``[real, imag]``."""

    def __init__(self, numpy_dtype: npt.DTypeLike, v3_name: str | None = None) -> None:
        super().__init__(numpy_dtype)
        self.v3_name = v3_name or self.numpy_dtype.name

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name not in _COMPLEX_NAMES or config != {}:
            return None
        return cls(_COMPLEX_NAMES[name], name)

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind == "c" and dtype.name in _COMPLEX_NAMES else None

    def to_json_v3(self) -> JSON:
        return self.v3_name

    @property
    def _part_dtype(self) -> np.dtype[Any]:
        return np.dtype(f"f{self.numpy_dtype.itemsize // 2}")

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        if not isinstance(value, list) or len(value) != 2:
            raise TypeError("expected a [real, imag] pair")
        part = self._part_dtype
        parts = np.array([_float_from_json(v, part) for v in value], dtype=part)
        # Assemble from the component floats' bits so NaN payloads survive.
        return parts.view(native_order(self.numpy_dtype))[0]

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        item = np.array(value, dtype=native_order(self.numpy_dtype)).reshape(1)
        part = self._part_dtype
        return [_float_to_json(p, part, zarr_format) for p in item.view(part)]


# -- ml_dtypes' types ---------------------------------------------------------
#
# The zarr-extensions registry's floats of 4 to 16 bits, its 2- and 4-bit integers and its
# complex numbers of two 16-bit floats, as ml_dtypes holds them (the extra `zarrcore[ml]`):
# each item one byte or two, sub-byte values in the low bits of their byte.

# v3 (and tensorstore's v2) name -> ml_dtypes attribute. float8_e4m3fn is tensorstore's (OCP's
# E4M3: no infinity); the registry's float8_e4m3 is IEEE-like, a different type.
_ML_FLOATS = {
    name: name
    for name in (
        "bfloat16",
        "float8_e3m4",
        "float8_e4m3",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e4m3b11fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn",
        "float6_e2m3fn",
        "float6_e3m2fn",
    )
}
_ML_INTEGERS = {name: name for name in ("int2", "int4", "uint2", "uint4")}
_ML_COMPLEX = {"complex_float16": "complex32", "complex_bfloat16": "bcomplex32"}
# The numpy name of the parts of each complex type.
_ML_COMPLEX_PARTS = {"complex32": "float16", "bcomplex32": "bfloat16"}


def _ml_dtypes(name: str, where: str) -> ModuleType:
    try:
        import ml_dtypes
    except ImportError:
        raise DataTypeDependencyError(
            f'{where}: data type {name!r} needs ml_dtypes: pip install "zarrcore[ml]"'
        ) from None
    return ml_dtypes


def _ml_name(dtype: np.dtype[Any]) -> str | None:
    """The ml_dtypes attribute naming `dtype`, None for other dtypes."""
    return dtype.type.__name__ if dtype.type.__module__ == "ml_dtypes" else None


class _MLType(DataType):
    """A type of ml_dtypes: v3 names (and tensorstore's v2 dtypes) are the registry's."""

    #: v3 name -> ml_dtypes attribute
    ml_names: dict[str, str] = {}

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name not in cls.ml_names or config != {}:
            return None
        ml_type = getattr(_ml_dtypes(name, where), cls.ml_names[name], None)
        if ml_type is None:  # an older ml_dtypes
            raise DataTypeDependencyError(
                f'{where}: data type {name!r} needs ml_dtypes >= 0.6: pip install "zarrcore[ml]"'
            )
        return cls(ml_type)

    @classmethod
    def from_json_v2(
        cls, obj: JSON, object_codec_id: str | None = None, where: str = ".zarray"
    ) -> Self | None:
        return cls.from_json_v3(obj, where) if isinstance(obj, str) else None

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if _ml_name(dtype) in cls.ml_names.values() else None

    def to_json_v3(self) -> JSON:
        ml_name = _ml_name(self.numpy_dtype)
        return next(name for name, attr in self.ml_names.items() if attr == ml_name)

    def to_json_v2(self) -> JSON:
        return self.to_json_v3()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_json_v3()!r})"

    @property
    def _ml(self) -> ModuleType:
        return _ml_dtypes(self.numpy_dtype.name, "dtype")


class MLFloatType(_MLType):
    """``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn`` (ml_dtypes); fill values as
    the core floats', the types without NaN or infinity refusing those."""

    ml_names = _ML_FLOATS

    def cast_fill_value(self, value: Any) -> Any:
        if isinstance(value, str):  # "NaN", "-inf"..., as numpy's floats take them
            value = float(value)
        fill = super().cast_fill_value(value)
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            self._check_holds(float(value), fill)
        return fill

    def _check_holds(self, wanted: float, fill: Any) -> None:
        """ValueError unless `fill` is `wanted` rounded to a number of the type. One rule for
        every type, with or without infinities: a finite number must round to a finite one
        (ml_dtypes turns one too large into infinity, NaN or the largest number, silently),
        so it must lie within half a unit in the last place beyond the largest."""
        got = float(fill)
        if math.isnan(wanted) or math.isinf(wanted):
            holds = math.isnan(got) if math.isnan(wanted) else got == wanted
        else:
            info = self._ml.finfo(self.numpy_dtype)
            largest = float(info.max)
            last_place = 2.0 ** (math.floor(math.log2(largest)) - int(info.nmant))
            holds = math.isfinite(got) and abs(wanted) < largest + last_place / 2
        if not holds:
            raise ValueError(f"{wanted!r} has no representation in {self.to_json_v3()}")

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        if isinstance(value, str) and _HEX_RE.match(value):
            return _float_from_json(value, self.numpy_dtype, self._ml.finfo(self.numpy_dtype).bits)
        return self.cast_fill_value(float(_float_from_json(value, np.dtype(np.float64))))

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return _float_to_json(value, self.numpy_dtype, zarr_format)


class MLIntegerType(_MLType, IntegerType):
    """``int2``, ``int4``, ``uint2``, ``uint4`` (ml_dtypes)."""

    ml_names = _ML_INTEGERS

    def _range(self) -> tuple[int, int]:
        info = self._ml.iinfo(self.numpy_dtype)
        return int(info.min), int(info.max)

    def cast_fill_value(self, value: Any) -> Any:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return self._decode_fill(int(value), 3)  # ml_dtypes would wrap it silently
        return super().cast_fill_value(value)


class MLComplexType(_MLType, ComplexType):
    """``complex_float16``, ``complex_bfloat16`` (ml_dtypes' ``complex32``, ``bcomplex32``)."""

    ml_names = _ML_COMPLEX

    @property
    def _part_dtype(self) -> np.dtype[Any]:
        # numpy knows "bfloat16" once ml_dtypes is imported, as it is when this type exists.
        return np.dtype(_ML_COMPLEX_PARTS[_ml_name(self.numpy_dtype) or ""])


def swap_unit(dtype: np.dtype[Any]) -> int:
    """Bytes per unit whose order a stored byte order reverses in items of `dtype`: each
    number, each part of a complex number, each UCS4 character; 0 when its items have no byte
    order (1-byte items, bytes, structures, variable-length items)."""
    if dtype.itemsize < 2 or dtype.byteorder == "|" or dtype.fields is not None:
        return 0
    ml_name = _ml_name(dtype)
    if ml_name is not None:
        return dtype.itemsize // 2 if ml_name in _ML_COMPLEX_PARTS else dtype.itemsize
    if dtype.kind not in "biufcmMU":
        return 0
    return dtype.itemsize // 2 if dtype.kind == "c" else 4 if dtype.kind == "U" else dtype.itemsize


def ieee_float_size(dtype: np.dtype[Any]) -> int:
    """Bytes per IEEE float of `dtype`'s items (each part of complex numbers); 0 for the other
    types (ml_dtypes' floats included: their NaNs are not IEEE's)."""
    if issubclass(dtype.type, np.floating):
        return dtype.itemsize
    return dtype.itemsize // 2 if issubclass(dtype.type, np.complexfloating) else 0


# -- raw bytes --------------------------------------------------------------
