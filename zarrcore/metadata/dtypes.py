"""Zarr data types: their v2/v3 JSON names, numpy dtypes and fill-value encodings.

Every data type is a :class:`DataType` subclass registered with
:func:`register_data_type`; resolution from JSON or numpy offers the input to
each registered class in turn (latest registration first) and takes the first
that accepts it.

Byte order: types read from v3 JSON have a native-order ``numpy_dtype`` (v3
puts endianness in the ``bytes`` codec).  Types read from v2 JSON keep the
stored byte order, so ``numpy_dtype`` may be big-endian; chunks decode to that
dtype.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from zarrcore.errors import (
    DataTypeDependencyError,
    MetadataError,
    ObjectDataTypeError,
    UnknownDataTypeError,
)

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "DataType",
    "register_data_type",
    "registered_data_types",
    "dtype_from_v3_json",
    "dtype_from_v2_json",
    "v2_type_for_fill",
    "dtype_from_numpy",
    "ObjectDataTypeError",
]

#: A decoded JSON value.
JSON = Any

_REGISTRY: list[type[DataType]] = []
_REGISTRY_LOCK = threading.Lock()

_DataTypeClass = TypeVar("_DataTypeClass", bound="type[DataType]")


def register_data_type(cls: _DataTypeClass) -> _DataTypeClass:
    """Register a DataType subclass (usable as a decorator); later ones win ties."""
    if not (isinstance(cls, type) and issubclass(cls, DataType)):
        raise TypeError(f"{cls!r} is not a DataType subclass")
    global _REGISTRY
    with _REGISTRY_LOCK:
        # A new list, not one changed in place: lookups iterate over the one they read while
        # another thread registers.
        _REGISTRY = [cls] + [c for c in _REGISTRY if c is not cls]
    return cls


def registered_data_types() -> tuple[type[DataType], ...]:
    """The registered DataType classes, in resolution order."""
    return tuple(_REGISTRY)


def _default_where(zarr_format: int) -> str:
    return "zarr.json" if zarr_format == 3 else ".zarray"


class DataType:
    """A zarr data type bound to a numpy dtype.

    Subclasses override the ``from_json_v3`` / ``from_json_v2`` / ``from_numpy``
    class methods (each returns an instance, or None when the input is not
    theirs), ``to_json_v3``, and the ``_decode_fill`` / ``_encode_fill`` hooks,
    which raise TypeError/ValueError on bad input.
    """

    #: numcodecs id of the v2 object codec that stores this type ("|O" types only).
    v2_object_codec_id: str | None = None
    #: every object codec (or categorize filter) id whose "|O" arrays are of this type
    v2_object_codec_ids: tuple[str, ...] = ()

    def __init__(self, numpy_dtype: npt.DTypeLike) -> None:
        self.numpy_dtype: np.dtype[Any] = np.dtype(numpy_dtype)

    @property
    def memory_dtype(self) -> np.dtype[Any]:
        """The dtype of this type's values in memory: ``numpy_dtype``, unless numpy cannot
        keep that in arrays it allocates."""
        return self.numpy_dtype

    # -- resolution hooks ---------------------------------------------------

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        return None

    @classmethod
    def from_json_v2(
        cls, obj: JSON, object_codec_id: str | None = None, where: str = ".zarray"
    ) -> Self | None:
        # Plain typestrs ("<i4", "|S5", ...) are whatever numpy makes of them;
        # object ("|O") types override this, as they need the object codec.
        if isinstance(obj, str):
            parsed = _parse_typestr(obj)
            if parsed is not None and parsed.kind != "O":
                return cls.from_numpy(parsed)
        return None

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return None

    # -- JSON ---------------------------------------------------------------

    def to_json_v3(self) -> JSON:
        raise NotImplementedError

    def to_json_v2(self) -> JSON:
        return self.numpy_dtype.str

    # -- fill values --------------------------------------------------------

    def default_fill_value(self) -> Any:
        """The fill value used when none is given: zero, False or empty."""
        return np.zeros((), dtype=self.numpy_dtype)[()]

    def undefined_fill_value(self) -> Any:
        """What chunks not stored read as where the v2 fill value is ``null`` (undefined): the
        default, as zarr-python reads them."""
        return self.default_fill_value()

    def cast_fill_value(self, value: Any) -> Any:
        """Convert a user value to a scalar of this type (TypeError/ValueError if impossible)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)
                return np.asarray(value, dtype=self.numpy_dtype)[()]
        except (OverflowError, DeprecationWarning) as e:
            raise ValueError(f"fill value {value!r} does not fit {self}: {e}") from None

    def cast_array(self, value: Any) -> npt.NDArray[Any]:
        """``value`` as an array of this type, converted as numpy's assignment converts it
        (unsafely); TypeError or ValueError when impossible."""
        dtype = self.memory_dtype
        if isinstance(value, np.ndarray) and value.dtype == dtype:
            return value
        try:
            if isinstance(value, np.ndarray):
                return value.astype(dtype)
            # Not via an intermediate array: [1, 2.5] into strings gives "1", as numpy does.
            return np.asarray(value, dtype=dtype)
        except OverflowError as e:
            raise ValueError(f"value does not fit {self}: {e}") from None

    def fill_value_from_json(self, value: JSON, zarr_format: int, where: str | None = None) -> Any:
        """Decode a JSON fill value; v2 ``null`` gives None.  Raises MetadataError."""
        if value is None and zarr_format == 2:
            return None
        try:
            return self._decode_fill(value, zarr_format)
        except (TypeError, ValueError, OverflowError) as e:
            where = where or _default_where(zarr_format)
            raise MetadataError(
                f"{where}: field 'fill_value': invalid value {value!r} for data type {self}: {e}"
            ) from None

    def scalars_from_json(self, values: list[JSON], where: Callable[[int], str]
                          ) -> npt.NDArray[Any]:
        """The v3 fill value JSON forms `values` decoded, as an array (MetadataError naming
        `where(i)` for value i): what `fill_value_from_json` gives each, the plain numbers
        (`_plain`) converted together."""
        out = np.empty(len(values), dtype=self.numpy_dtype)
        plain = np.fromiter(self._plain(values), dtype=bool, count=len(values))
        if plain.any():
            with np.errstate(over="ignore"):
                out[plain] = np.array([v for v, p in zip(values, plain) if p],
                                      dtype=self._plain_type)
        for i in np.flatnonzero(~plain).tolist():
            out[i] = self.fill_value_from_json(values[i], 3, where(i))
        return out

    #: What `_plain` values go through on their way to the type, as its scalars take them.
    _plain_type: Any = None

    def _plain(self, values: list[JSON]) -> Iterator[bool]:
        """Per value, is it one that numpy converts (through `_plain_type`) to what
        `fill_value_from_json` gives?"""
        return (False for _ in values)

    def fill_value_to_json(self, value: Any, zarr_format: int) -> JSON:
        """Encode a fill value (numpy scalar or anything castable to one) as JSON."""
        if value is None and zarr_format == 2:
            return None
        return self._encode_fill(self.cast_fill_value(value), zarr_format)

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        raise NotImplementedError

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        raise NotImplementedError

    # -- identity -----------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and isinstance(other, DataType)
                and self.numpy_dtype == other.numpy_dtype)

    def __hash__(self) -> int:
        return hash((type(self), self.numpy_dtype))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.numpy_dtype.str!r})"


@functools.lru_cache(maxsize=256)
def _parse_typestr(s: str) -> np.dtype[Any] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.dtype(s)
    except (TypeError, ValueError, SyntaxError):
        return None


def _name_and_config(obj: JSON) -> tuple[str, dict[str, JSON]] | tuple[None, None]:
    """Split a v3 extension value (short-hand string or object) into (name, configuration)."""
    if isinstance(obj, str):
        return obj, {}
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        config = obj.get("configuration", {})
        if isinstance(config, dict):
            return obj["name"], config
    return None, None


# -- numbers ----------------------------------------------------------------


def _json_int(value: JSON) -> int:
    if isinstance(value, bool):
        raise TypeError("expected an integer, got a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int):
        raise TypeError("expected an integer")
    return value


def _native_order(dtype: np.dtype[Any]) -> np.dtype[Any]:
    # ml_dtypes' types are native and lose their identity under newbyteorder (a "V" dtype).
    return dtype if dtype.isnative else dtype.newbyteorder("=")


class BoolType(DataType):
    """``bool``."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        return cls(np.bool_) if _name_and_config(obj) == ("bool", {}) else None

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
        name, config = _name_and_config(obj)
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
        number = _json_int(value)
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
    dtype = _native_order(dtype)
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
    dtype = _native_order(dtype)
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
    "float16": np.dtype("f2"), "float32": np.dtype("f4"), "float64": np.dtype("f8"),
}


class FloatType(DataType):
    """``float16``, ``float32``, ``float64``."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = _name_and_config(obj)
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
        return (plain and (type(v) is float or type(v) is int and abs(v) < top)
                for v in values)

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
        name, config = _name_and_config(obj)
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
        return parts.view(_native_order(self.numpy_dtype))[0]

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        item = np.array(value, dtype=_native_order(self.numpy_dtype)).reshape(1)
        part = self._part_dtype
        return [_float_to_json(p, part, zarr_format) for p in item.view(part)]


# -- ml_dtypes' types ---------------------------------------------------------
#
# The zarr-extensions registry's floats of 4 to 16 bits, its 2- and 4-bit integers and its
# complex numbers of two 16-bit floats, as ml_dtypes holds them (the extra `zarrcore[ml]`):
# each item one byte or two, sub-byte values in the low bits of their byte.

# v3 (and tensorstore's v2) name -> ml_dtypes attribute. float8_e4m3fn is tensorstore's (OCP's
# E4M3: no infinity); the registry's float8_e4m3 is IEEE-like, a different type.
_ML_FLOATS = {name: name for name in (
    "bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn",
    "float6_e2m3fn", "float6_e3m2fn",
)}
_ML_INTEGERS = {name: name for name in ("int2", "int4", "uint2", "uint4")}
_ML_COMPLEX = {"complex_float16": "complex32", "complex_bfloat16": "bcomplex32"}
# The numpy name of the parts of each complex type.
_ML_COMPLEX_PARTS = {"complex32": "float16", "bcomplex32": "bfloat16"}


def _ml_dtypes(name: str, where: str) -> ModuleType:
    try:
        import ml_dtypes
    except ImportError:
        raise DataTypeDependencyError(
            f"{where}: data type {name!r} needs ml_dtypes: pip install \"zarrcore[ml]\""
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
        name, config = _name_and_config(obj)
        if name not in cls.ml_names or config != {}:
            return None
        ml_type = getattr(_ml_dtypes(name, where), cls.ml_names[name], None)
        if ml_type is None:  # an older ml_dtypes
            raise DataTypeDependencyError(
                f"{where}: data type {name!r} needs ml_dtypes >= 0.6: pip install \"zarrcore[ml]\""
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


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bytes_from_json(value: JSON, length: int | None = None, validate: bool = True) -> bytes:
    """Base64 string or list of byte values -> bytes (exactly ``length`` long if given). Not
    `validate`: characters outside base64's alphabet are skipped, as zarr-python skips them."""
    if isinstance(value, str):
        try:
            data = base64.b64decode(value.encode("ascii"), validate=validate)
        except (binascii.Error, UnicodeEncodeError):
            raise ValueError("invalid base64") from None
    elif isinstance(value, list):
        if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value):
            raise ValueError("byte values must be integers in [0, 255]")
        data = bytes(value)
    else:
        raise TypeError("expected a base64 string or a list of byte values")
    if length is not None and len(data) != length:
        raise ValueError(f"expected {length} bytes, got {len(data)}")
    return data


def _b64(data: Any) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


class _VoidBase(DataType):
    def cast_fill_value(self, value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            if len(data) != self.numpy_dtype.itemsize:
                raise ValueError(
                    f"fill value must be {self.numpy_dtype.itemsize} bytes, got {len(data)}"
                )
            return np.frombuffer(data, dtype=self.numpy_dtype)[0]
        return super().cast_fill_value(value)

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        data = _bytes_from_json(value, self.numpy_dtype.itemsize)
        return np.frombuffer(data, dtype=self.numpy_dtype)[0]

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return _b64(np.asarray(value, dtype=self.numpy_dtype).tobytes())


_RAW_BITS_RE = re.compile(r"r([1-9][0-9]{0,11})\Z")  # more digits: too large anyway


class RawBitsType(_VoidBase):
    """Core v3 ``r<bits>`` (numpy ``V<bits/8>``); fill values are lists of byte values.

    zarr-python writes ``raw_bytes`` instead, so numpy void dtypes resolve to
    :class:`RawBytesType`; this type is only chosen by reading ``r*`` JSON.
    """

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = _name_and_config(obj)
        if name is None or config != {}:
            return None
        m = _RAW_BITS_RE.match(name)
        if m is None:
            return None
        bits = int(m.group(1))
        if bits % 8:
            raise MetadataError(f"{where}: field 'data_type': {name!r} is not a multiple of 8 bits")
        return cls(np.dtype(f"V{_check_itemsize(bits // 8, where, name)}"))

    def to_json_v3(self) -> JSON:
        return f"r{self.numpy_dtype.itemsize * 8}"

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        if zarr_format == 2:
            return super()._encode_fill(value, zarr_format)
        return list(np.asarray(value, dtype=self.numpy_dtype).tobytes())


# numpy's largest item (its itemsize is a C int).
MAX_ITEMSIZE = 2**31 - 1


def _check_itemsize(nbytes: int, where: str, name: str) -> int:
    if nbytes > MAX_ITEMSIZE:
        raise MetadataError(
            f"{where}: field 'data_type': {name!r} items of {nbytes} bytes exceed the largest "
            f"numpy holds ({MAX_ITEMSIZE} bytes)"
        )
    return nbytes


def _length_bytes(config: dict[str, JSON], where: str, name: str) -> int:
    length = config.get("length_bytes") if set(config) == {"length_bytes"} else None
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise MetadataError(
            f"{where}: field 'data_type': {name!r} needs configuration "
            f"{{\"length_bytes\": <positive int>}}"
        )
    return _check_itemsize(length, where, name)


class RawBytesType(_VoidBase):
    """``{"name": "raw_bytes", "configuration": {"length_bytes": N}}`` (numpy ``V<N>``); base64
    fill values."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = _name_and_config(obj)
        if name != "raw_bytes" or config is None:
            return None
        return cls(np.dtype(f"V{_length_bytes(config, where, name)}"))

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        # np.void only: ml_dtypes' types are "V" dtypes too.
        if dtype.type is np.void and dtype.fields is None and dtype.subdtype is None \
                and dtype.itemsize > 0:
            return cls(dtype)
        return None

    def to_json_v3(self) -> JSON:
        return {"name": "raw_bytes", "configuration": {"length_bytes": self.numpy_dtype.itemsize}}


# -- strings and bytes ------------------------------------------------------


def _is_object_typestr(obj: JSON) -> bool:
    parsed = _parse_typestr(obj) if isinstance(obj, str) else None
    return parsed is not None and parsed.kind == "O"


class _VariableLengthBase(DataType):
    """Shared by the "|O" types whose v2 identity comes from the object codec."""

    #: the v3 name, also accepted as short-hand
    v3_names: tuple[str, ...] = ()

    def __init__(self, numpy_dtype: npt.DTypeLike = object) -> None:
        super().__init__(numpy_dtype)

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = _name_and_config(obj)
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


# numpy >= 2 has a native variable-length string dtype; before that, object arrays of str.
_STRING_NUMPY = np.dtypes.StringDType() if hasattr(np.dtypes, "StringDType") else np.dtype(object)


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
        if _is_number(value):  # zarr-python's zeros/ones/full take numbers: 0 -> "0"
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
        return _bytes_from_json(value, validate=False)  # as zarr-python 3.4 reads it

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return _b64(value)


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
        raise TypeError("Zarr v3 has no data type for Python objects (json2, msgpack2, pickle, "
                        "vlen-array); they exist in Zarr v2 only")

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
        name, config = _name_and_config(obj)
        if name != "fixed_length_utf32" or config is None:
            return None
        length = _length_bytes(config, where, name)
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
        if zarr_format == 2 and (isinstance(value, str) or _is_number(value)):
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
        name, config = _name_and_config(obj)
        if name != "null_terminated_bytes" or config is None:
            return None
        return cls(np.dtype(f"S{_length_bytes(config, where, name)}"))

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
                data = _bytes_from_json(value)
            except (TypeError, ValueError):
                if not (isinstance(value, str) or _is_number(value)):
                    raise
                data = str(value).encode("ascii")
            return self.cast_fill_value(data[:self.numpy_dtype.itemsize])
        return self.cast_fill_value(_bytes_from_json(value))

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return _b64(value)


# -- dates and times --------------------------------------------------------

_TIME_UNITS = frozenset(
    {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"}
)


class _TimeBase(DataType):
    kind: str | None = None
    v3_name: str | None = None

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = _name_and_config(obj)
        if name != cls.v3_name or config is None:
            return None
        unit, scale = config.get("unit"), config.get("scale_factor")
        if (
            set(config) != {"unit", "scale_factor"}
            or not isinstance(unit, str)
            or unit not in _TIME_UNITS
            or isinstance(scale, bool)
            or not isinstance(scale, int)
            or not 1 <= scale < 2**31
            or (unit == "generic" and scale != 1)
        ):
            raise MetadataError(
                f"{where}: field 'data_type': {name!r} needs configuration "
                f"{{\"unit\": <numpy unit>, \"scale_factor\": <positive int>}}, got {config!r}"
            )
        suffix = "" if unit == "generic" else f"[{scale}{unit}]"
        return cls(np.dtype(f"{cls.kind}8{suffix}"))

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        return cls(dtype) if dtype.kind == cls.kind else None

    def to_json_v3(self) -> JSON:
        unit, scale = np.datetime_data(self.numpy_dtype)
        return {"name": self.v3_name, "configuration": {"unit": unit, "scale_factor": scale}}

    @property
    def _native(self) -> np.dtype[Any]:
        return _native_order(self.numpy_dtype)

    @property
    def memory_dtype(self) -> np.dtype[Any]:
        # numpy allocates arrays of a generic-unit type in native order whatever order is
        # asked for (np.empty(1, ">M8").dtype is "<M8"), so those are native in memory and
        # the bytes codec swaps them to the stored order.
        if np.datetime_data(self.numpy_dtype)[0] == "generic":
            return self._native
        return self.numpy_dtype

    def cast_array(self, value: Any) -> npt.NDArray[Any]:
        if (isinstance(value, np.ndarray) and value.dtype.kind in "mM"
                and not value.dtype.isnative
                and np.datetime_data(value.dtype)[0] == "generic"):
            # numpy's astype from a generic-unit type copies the bytes unswapped (types with
            # a unit it swaps itself); swap the counts, then convert from native order.
            native = value.dtype.newbyteorder("=")
            value = value.view(value.dtype.byteorder + "i8").astype("=i8").view(native)
        return super().cast_array(value)

    def default_fill_value(self) -> Any:
        # NaT (the int64 minimum), as zarr-python chooses.
        return np.array(-(2**63), dtype="i8").view(self._native)[()]

    def _decode_fill(self, value: JSON, zarr_format: int) -> Any:
        # Stored as the int64 count of units; NaT is the int64 minimum, or the string "NaT"
        # (the extension spec allows it; zarr-python writes the integer).
        value = -(2**63) if value == "NaT" else _json_int(value)
        if not -(2**63) <= value < 2**63:
            raise ValueError("out of int64 range")
        return np.array(value, dtype="i8").view(self._native)[()]

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return int(np.asarray(value, dtype=self._native).view("i8"))


class DateTime64Type(_TimeBase):
    """``{"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}``."""

    kind = "M"
    v3_name = "numpy.datetime64"


class TimeDelta64Type(_TimeBase):
    """``{"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 1}}``."""

    kind = "m"
    v3_name = "numpy.timedelta64"


# -- structured -------------------------------------------------------------


def _struct_field_error(where: str, field: str, msg: str) -> MetadataError:
    return MetadataError(f"{where}: field {field!r}: structured data type: {msg}")


def _struct_entry(entry: JSON) -> tuple[str, JSON] | None:
    """(name, data type JSON) of a v3 field: ``[name, dt]`` or
    ``{"name": name, "data_type": dt}``."""
    if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
        return entry[0], entry[1]
    if (isinstance(entry, dict) and set(entry) == {"name", "data_type"}
            and isinstance(entry["name"], str)):
        return entry["name"], entry["data_type"]
    return None


class StructuredType(_VoidBase):
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
        name, config = _name_and_config(obj)
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
                    where, "data_type",
                    f"expected [name, data_type] or {{\"name\", \"data_type\"}}, got {entry!r}",
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
                    where, "dtype",
                    f"expected [name, dtype] or [name, dtype, shape], got {entry!r}",
                )
            field_dtype = dtype_from_v2_json(entry[1], None, where).numpy_dtype
            if len(entry) == 3:
                shape = entry[2]
                if not (isinstance(shape, list) and all(
                        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
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


for _cls in (
    MLComplexType,
    MLIntegerType,
    MLFloatType,
    StructuredType,
    TimeDelta64Type,
    DateTime64Type,
    NullTerminatedBytesType,
    FixedLengthUTF32Type,
    VariableLengthBytesType,
    StringType,
    PythonObjectType,
    RawBytesType,
    RawBitsType,
    ComplexType,
    FloatType,
    IntegerType,
    BoolType,
):
    register_data_type(_cls)
del _cls


# -- resolution -------------------------------------------------------------


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
    for cls in _REGISTRY:
        dt = _resolve(cls.from_json_v3, where, "data_type", obj, where)
        if dt is not None:
            return dt
    name, _ = _name_and_config(obj)
    if name is None:
        raise MetadataError(
            f"{where}: field 'data_type': expected a name or a "
            f"{{\"name\", \"configuration\"}} object, got {obj!r}"
        )
    raise UnknownDataTypeError(f"{where}: field 'data_type': unknown or invalid data type {obj!r}")


def dtype_from_v2_json(
    obj: JSON, object_codec_id: str | None = None, where: str = ".zarray"
) -> DataType:
    """Resolve a v2 ``dtype`` value; ``object_codec_id`` disambiguates ``"|O"``."""
    for cls in _REGISTRY:
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
            fill_value, (int, float)):
        return PythonObjectType()
    return data_type


# Python types and names that mean variable-length types rather than numpy's U0/S0.
_NUMPY_SPECIAL = {str: StringType, "string": StringType, bytes: VariableLengthBytesType}


def _zarr_data_type(x: Any) -> DataType | None:
    """The DataType of a zarr-python data type object (``zarr.dtype.*``): by its numpy dtype
    (which keeps the byte order), or by its v3 JSON where that is numpy's object dtype; None
    for anything else."""
    if (not type(x).__module__.startswith("zarr.")
            or not callable(getattr(x, "to_native_dtype", None))):
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
    for cls in _REGISTRY:
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

