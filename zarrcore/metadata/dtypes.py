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

import base64
import binascii
import functools
import math
import re
import warnings

import numpy as np

from zarrcore.errors import MetadataError, ObjectDataTypeError, UnknownDataTypeError

__all__ = [
    "DataType",
    "register_data_type",
    "registered_data_types",
    "dtype_from_v3_json",
    "dtype_from_v2_json",
    "dtype_from_numpy",
    "ObjectDataTypeError",
]

_REGISTRY: "list[type[DataType]]" = []


def register_data_type(cls):
    """Register a DataType subclass (usable as a decorator); later ones win ties."""
    if not (isinstance(cls, type) and issubclass(cls, DataType)):
        raise TypeError(f"{cls!r} is not a DataType subclass")
    if cls in _REGISTRY:
        _REGISTRY.remove(cls)
    _REGISTRY.insert(0, cls)
    return cls


def registered_data_types():
    """The registered DataType classes, in resolution order."""
    return tuple(_REGISTRY)


def _default_where(zarr_format):
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

    def __init__(self, numpy_dtype):
        self.numpy_dtype = np.dtype(numpy_dtype)

    # -- resolution hooks ---------------------------------------------------

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        return None

    @classmethod
    def from_json_v2(cls, obj, object_codec_id=None, where=".zarray"):
        # Plain typestrs ("<i4", "|S5", ...) are whatever numpy makes of them;
        # object ("|O") types override this, as they need the object codec.
        if isinstance(obj, str):
            parsed = _parse_typestr(obj)
            if parsed is not None and parsed.kind != "O":
                return cls.from_numpy(parsed)
        return None

    @classmethod
    def from_numpy(cls, dtype):
        return None

    # -- JSON ---------------------------------------------------------------

    def to_json_v3(self):
        raise NotImplementedError

    def to_json_v2(self):
        return self.numpy_dtype.str

    # -- fill values --------------------------------------------------------

    def default_fill_value(self):
        """The fill value used when none is given: zero, False or empty."""
        return np.zeros((), dtype=self.numpy_dtype)[()]

    def cast_fill_value(self, value):
        """Convert a user value to a scalar of this type (TypeError/ValueError if impossible)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)
                return np.asarray(value, dtype=self.numpy_dtype)[()]
        except (OverflowError, DeprecationWarning) as e:
            raise ValueError(f"fill value {value!r} does not fit {self}: {e}") from None

    def cast_array(self, value):
        """``value`` as an array of this type, converted as numpy's assignment converts it
        (unsafely); TypeError or ValueError when impossible."""
        if isinstance(value, np.ndarray) and value.dtype == self.numpy_dtype:
            return value
        try:
            if isinstance(value, np.ndarray):
                return value.astype(self.numpy_dtype)
            # Not via an intermediate array: [1, 2.5] into strings gives "1", as numpy does.
            return np.asarray(value, dtype=self.numpy_dtype)
        except OverflowError as e:
            raise ValueError(f"value does not fit {self}: {e}") from None

    def fill_value_from_json(self, value, zarr_format, where=None):
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

    def fill_value_to_json(self, value, zarr_format):
        """Encode a fill value (numpy scalar or anything castable to one) as JSON."""
        if value is None and zarr_format == 2:
            return None
        return self._encode_fill(self.cast_fill_value(value), zarr_format)

    def _decode_fill(self, value, zarr_format):
        raise NotImplementedError

    def _encode_fill(self, value, zarr_format):
        raise NotImplementedError

    # -- identity -----------------------------------------------------------

    def __eq__(self, other):
        return type(self) is type(other) and self.numpy_dtype == other.numpy_dtype

    def __hash__(self):
        return hash((type(self), self.numpy_dtype))

    def __repr__(self):
        return f"{type(self).__name__}({self.numpy_dtype.str!r})"


@functools.lru_cache(maxsize=256)
def _parse_typestr(s):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.dtype(s)
    except (TypeError, ValueError, SyntaxError):
        return None


def _name_and_config(obj):
    """Split a v3 extension value (short-hand string or object) into (name, configuration)."""
    if isinstance(obj, str):
        return obj, {}
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        config = obj.get("configuration", {})
        if isinstance(config, dict):
            return obj["name"], config
    return None, None


# -- numbers ----------------------------------------------------------------


def _json_int(value):
    if isinstance(value, bool):
        raise TypeError("expected an integer, got a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int):
        raise TypeError("expected an integer")
    return value


class BoolType(DataType):
    """``bool``."""

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        return cls(np.bool_) if _name_and_config(obj) == ("bool", {}) else None

    @classmethod
    def from_numpy(cls, dtype):
        return cls(dtype) if dtype.kind == "b" else None

    def to_json_v3(self):
        return "bool"

    def _decode_fill(self, value, zarr_format):
        # zarr 2.x sometimes stored 0/1 for boolean fill values.
        if isinstance(value, bool) or (zarr_format == 2 and value in (0, 1)):
            return np.bool_(value)
        raise TypeError("expected true or false")

    def _encode_fill(self, value, zarr_format):
        return bool(value)


_INT_NAMES = {f"{k}{n}": np.dtype(f"{k[0]}{n // 8}") for k in ("int", "uint") for n in (8, 16, 32, 64)}


class IntegerType(DataType):
    """``int8`` … ``int64``, ``uint8`` … ``uint64``."""

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        return cls(_INT_NAMES[name]) if name in _INT_NAMES and config == {} else None

    @classmethod
    def from_numpy(cls, dtype):
        return cls(dtype) if dtype.kind in "iu" and dtype.name in _INT_NAMES else None

    def to_json_v3(self):
        return self.numpy_dtype.name

    def _decode_fill(self, value, zarr_format):
        value = _json_int(value)
        info = np.iinfo(self.numpy_dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"out of range [{info.min}, {info.max}]")
        return self.numpy_dtype.type(value)

    def _encode_fill(self, value, zarr_format):
        return int(value)


_FLOAT_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
# Bit patterns of the v3 spec's "NaN": sign 0, mantissa MSB 1, rest 0.
_CANONICAL_NAN = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+\Z")


def _float_from_json(value, dtype):
    """Decode one IEEE float per the v3 spec (numbers, named specials, hex bit patterns)."""
    dtype = dtype.newbyteorder("=")
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
            bits = int(value, 16)
            if bits >> (8 * dtype.itemsize):
                raise ValueError(f"hex value wider than {8 * dtype.itemsize} bits")
            # Going through an unsigned view keeps NaN payloads bit-exact.
            return np.array(bits, dtype=f"u{dtype.itemsize}").view(dtype)[()]
    raise TypeError('expected a number, "NaN", "Infinity", "-Infinity" or a "0x..." bit pattern')


def _float_to_json(value, dtype, zarr_format):
    dtype = dtype.newbyteorder("=")
    value = dtype.type(value)
    if np.isnan(value):
        bits = int(np.array(value, dtype=dtype).view(f"u{dtype.itemsize}"))
        # v2 has no syntax for NaN payloads.
        if zarr_format == 3 and bits != _CANONICAL_NAN[dtype.itemsize]:
            return f"0x{bits:0{2 * dtype.itemsize}x}"
        return "NaN"
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(value)


_FLOAT_NAMES = {"float16": np.dtype("f2"), "float32": np.dtype("f4"), "float64": np.dtype("f8")}


class FloatType(DataType):
    """``float16``, ``float32``, ``float64``."""

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        return cls(_FLOAT_NAMES[name]) if name in _FLOAT_NAMES and config == {} else None

    @classmethod
    def from_numpy(cls, dtype):
        return cls(dtype) if dtype.kind == "f" and dtype.name in _FLOAT_NAMES else None

    def to_json_v3(self):
        return self.numpy_dtype.name

    def _decode_fill(self, value, zarr_format):
        return _float_from_json(value, self.numpy_dtype)

    def _encode_fill(self, value, zarr_format):
        return _float_to_json(value, self.numpy_dtype, zarr_format)


_COMPLEX_NAMES = {"complex64": np.dtype("c8"), "complex128": np.dtype("c16")}


class ComplexType(DataType):
    """``complex64``, ``complex128``; fill values are ``[real, imag]``."""

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        return cls(_COMPLEX_NAMES[name]) if name in _COMPLEX_NAMES and config == {} else None

    @classmethod
    def from_numpy(cls, dtype):
        return cls(dtype) if dtype.kind == "c" and dtype.name in _COMPLEX_NAMES else None

    def to_json_v3(self):
        return self.numpy_dtype.name

    @property
    def _part_dtype(self):
        return np.dtype(f"f{self.numpy_dtype.itemsize // 2}")

    def _decode_fill(self, value, zarr_format):
        if not isinstance(value, list) or len(value) != 2:
            raise TypeError("expected a [real, imag] pair")
        parts = np.array([_float_from_json(v, self._part_dtype) for v in value])
        # Assemble from the component floats' bits so NaN payloads survive.
        return parts.view(self.numpy_dtype.newbyteorder("="))[0]

    def _encode_fill(self, value, zarr_format):
        parts = np.array(value, dtype=self.numpy_dtype.newbyteorder("=")).reshape(1).view(self._part_dtype)
        return [_float_to_json(p, self._part_dtype, zarr_format) for p in parts]


# -- raw bytes --------------------------------------------------------------


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bytes_from_json(value, length=None):
    """Base64 string or list of byte values -> bytes (exactly ``length`` long if given)."""
    if isinstance(value, str):
        try:
            data = base64.b64decode(value.encode("ascii"), validate=True)
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


def _b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


class _VoidBase(DataType):
    def cast_fill_value(self, value):
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            if len(data) != self.numpy_dtype.itemsize:
                raise ValueError(f"fill value must be {self.numpy_dtype.itemsize} bytes, got {len(data)}")
            return np.frombuffer(data, dtype=self.numpy_dtype)[0]
        return super().cast_fill_value(value)

    def _decode_fill(self, value, zarr_format):
        data = _bytes_from_json(value, self.numpy_dtype.itemsize)
        return np.frombuffer(data, dtype=self.numpy_dtype)[0]

    def _encode_fill(self, value, zarr_format):
        return _b64(np.asarray(value, dtype=self.numpy_dtype).tobytes())


_RAW_BITS_RE = re.compile(r"r([1-9][0-9]{0,11})\Z")  # more digits: too large anyway


class RawBitsType(_VoidBase):
    """Core v3 ``r<bits>`` (numpy ``V<bits/8>``); fill values are lists of byte values.

    zarr-python writes ``raw_bytes`` instead, so numpy void dtypes resolve to
    :class:`RawBytesType`; this type is only chosen by reading ``r*`` JSON.
    """

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        m = _RAW_BITS_RE.match(name) if isinstance(name, str) and config == {} else None
        if m is None:
            return None
        bits = int(m.group(1))
        if bits % 8:
            raise MetadataError(f"{where}: field 'data_type': {name!r} is not a multiple of 8 bits")
        return cls(np.dtype(f"V{_check_itemsize(bits // 8, where, name)}"))

    def to_json_v3(self):
        return f"r{self.numpy_dtype.itemsize * 8}"

    def _encode_fill(self, value, zarr_format):
        if zarr_format == 2:
            return super()._encode_fill(value, zarr_format)
        return list(np.asarray(value, dtype=self.numpy_dtype).tobytes())


# numpy's largest item (its itemsize is a C int).
MAX_ITEMSIZE = 2**31 - 1


def _check_itemsize(nbytes, where, name):
    if nbytes > MAX_ITEMSIZE:
        raise MetadataError(
            f"{where}: field 'data_type': {name!r} items of {nbytes} bytes exceed the largest "
            f"numpy holds ({MAX_ITEMSIZE} bytes)"
        )
    return nbytes


def _length_bytes(config, where, name):
    length = config.get("length_bytes") if set(config) == {"length_bytes"} else None
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise MetadataError(
            f"{where}: field 'data_type': {name!r} needs configuration {{\"length_bytes\": <positive int>}}"
        )
    return _check_itemsize(length, where, name)


class RawBytesType(_VoidBase):
    """``{"name": "raw_bytes", "configuration": {"length_bytes": N}}`` (numpy ``V<N>``); base64 fill values."""

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        if name != "raw_bytes" or config is None:
            return None
        return cls(np.dtype(f"V{_length_bytes(config, where, name)}"))

    @classmethod
    def from_numpy(cls, dtype):
        if dtype.kind == "V" and dtype.fields is None and dtype.subdtype is None and dtype.itemsize > 0:
            return cls(dtype)
        return None

    def to_json_v3(self):
        return {"name": "raw_bytes", "configuration": {"length_bytes": self.numpy_dtype.itemsize}}


# -- strings and bytes ------------------------------------------------------


def _is_object_typestr(obj):
    parsed = _parse_typestr(obj) if isinstance(obj, str) else None
    return parsed is not None and parsed.kind == "O"


class _VariableLengthBase(DataType):
    """Shared by the "|O" types whose v2 identity comes from the object codec."""

    #: the v3 name, also accepted as short-hand
    v3_names: tuple[str, ...] = ()

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        return cls() if name in cls.v3_names and config == {} else None

    @classmethod
    def from_json_v2(cls, obj, object_codec_id=None, where=".zarray"):
        if object_codec_id == cls.v2_object_codec_id and _is_object_typestr(obj):
            return cls()
        return None

    def to_json_v3(self):
        return self.v3_names[0]

    def to_json_v2(self):
        return "|O"

    #: the Python type of the items the vlen codec takes
    item_type: type | None = None

    def _item(self, item):
        """An item (or fill value) as the vlen codec takes it; TypeError if it is not one."""
        if isinstance(item, self.item_type):
            return item
        raise TypeError(f"{self} values must be {self.item_type.__name__}, got {type(item).__name__}")

    def cast_array(self, value):
        array = super().cast_array(value)
        # Object arrays hold anything; check the items now, before any chunk is written.
        if array.dtype.kind != "O" or set(map(type, array.flat)) <= {self.item_type}:
            return array
        out = np.empty(array.size, dtype=object)
        out[:] = [self._item(x) for x in array.flat]
        return out.reshape(array.shape)

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
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

    def __init__(self, numpy_dtype=_STRING_NUMPY):
        super().__init__(numpy_dtype)

    @classmethod
    def from_numpy(cls, dtype):
        return cls() if dtype.kind == "T" else None

    def default_fill_value(self):
        return ""

    def cast_fill_value(self, value):
        if _is_number(value):  # zarr-python's zeros/ones/full take numbers: 0 -> "0"
            return str(value)
        return str(self._item(value))

    def _decode_fill(self, value, zarr_format):
        # zarr 2.x wrote 0 (its generic default) as the fill value of object arrays; a number
        # reads as its text in either format, as zarr-python 3 reads it (zarr 2.18 fills
        # with the number 0).
        return self.cast_fill_value(value)

    def _encode_fill(self, value, zarr_format):
        return str(value)


class VariableLengthBytesType(_VariableLengthBase):
    """``variable_length_bytes`` (object dtype; v2: ``"|O"`` with the vlen-bytes codec).

    Fill values are ``bytes`` rather than ``np.bytes_``, which drops trailing NULs.
    """

    v3_names = ("variable_length_bytes", "bytes")
    v2_object_codec_id = "vlen-bytes"
    v2_object_codec_ids = ("vlen-bytes",)
    item_type = bytes

    def __init__(self, numpy_dtype=object):
        super().__init__(numpy_dtype)

    def default_fill_value(self):
        return b""

    def cast_fill_value(self, value):
        return self._item(value)

    def _item(self, item):
        return bytes(item) if isinstance(item, (bytearray, memoryview)) else super()._item(item)

    def _decode_fill(self, value, zarr_format):
        if zarr_format == 2 and value == 0 and not isinstance(value, bool):
            return b""
        return _bytes_from_json(value)

    def _encode_fill(self, value, zarr_format):
        return _b64(value)


class PythonObjectType(_VariableLengthBase):
    """Python objects of Zarr v2 arrays: ``"|O"`` with the json2, msgpack2, pickle or
    vlen-array object codec, or with a categorize filter. Zarr v3 has no such type.

    Fill values are whatever JSON value is stored; zarr 2.x wrote 0 by default.
    """

    v2_object_codec_ids = ("json2", "msgpack2", "pickle", "vlen-array", "categorize")
    item_type = object

    def __init__(self, numpy_dtype=object):
        super().__init__(numpy_dtype)

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        return None

    @classmethod
    def from_json_v2(cls, obj, object_codec_id=None, where=".zarray"):
        if object_codec_id in cls.v2_object_codec_ids and _is_object_typestr(obj):
            return cls()
        return None

    def to_json_v3(self):
        raise TypeError("Zarr v3 has no data type for Python objects (json2, msgpack2, pickle, "
                        "vlen-array); they exist in Zarr v2 only")

    def default_fill_value(self):
        return 0

    def cast_fill_value(self, value):
        return value

    def cast_array(self, value):
        return DataType.cast_array(self, value)

    def _decode_fill(self, value, zarr_format):
        return value

    def _encode_fill(self, value, zarr_format):
        return value


class FixedLengthUTF32Type(DataType):
    """``{"name": "fixed_length_utf32", "configuration": {"length_bytes": N}}`` (numpy ``U<N/4>``)."""

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        if name != "fixed_length_utf32" or config is None:
            return None
        length = _length_bytes(config, where, name)
        if length % 4:
            raise MetadataError(f"{where}: field 'data_type': {name!r} length_bytes must be a multiple of 4")
        return cls(np.dtype(f"U{length // 4}"))

    @classmethod
    def from_numpy(cls, dtype):
        return cls(dtype) if dtype.kind == "U" and dtype.itemsize > 0 else None

    def to_json_v3(self):
        return {"name": "fixed_length_utf32", "configuration": {"length_bytes": self.numpy_dtype.itemsize}}

    def cast_fill_value(self, value):
        if not isinstance(value, str):
            raise TypeError(f"fill value for {self} must be a str, got {value!r}")
        if len(value) > self.numpy_dtype.itemsize // 4:
            raise ValueError(f"fill value {value!r} is longer than {self.numpy_dtype.itemsize // 4} characters")
        return np.str_(value)

    def _decode_fill(self, value, zarr_format):
        if zarr_format == 2 and (isinstance(value, str) or _is_number(value)):
            # zarr 2.x kept the fill value as written and numpy converted it: 0 is "0", and a
            # longer string is cut to the item (zarr 2.18 and zarr-python 3 read it so).
            return np.str_(np.array(value, dtype=self.numpy_dtype)[()])
        return self.cast_fill_value(value)

    def _encode_fill(self, value, zarr_format):
        return str(value)


class NullTerminatedBytesType(DataType):
    """``{"name": "null_terminated_bytes", "configuration": {"length_bytes": N}}`` (numpy ``S<N>``); base64 fill values."""

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        if name != "null_terminated_bytes" or config is None:
            return None
        return cls(np.dtype(f"S{_length_bytes(config, where, name)}"))

    @classmethod
    def from_numpy(cls, dtype):
        return cls(dtype) if dtype.kind == "S" and dtype.itemsize > 0 else None

    def to_json_v3(self):
        return {"name": "null_terminated_bytes", "configuration": {"length_bytes": self.numpy_dtype.itemsize}}

    def cast_fill_value(self, value):
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"fill value for {self} must be bytes, got {value!r}")
        if len(value) > self.numpy_dtype.itemsize:
            raise ValueError(f"fill value is longer than {self.numpy_dtype.itemsize} bytes")
        return np.bytes_(bytes(value))

    def _decode_fill(self, value, zarr_format):
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

    def _encode_fill(self, value, zarr_format):
        return _b64(value)


# -- dates and times --------------------------------------------------------

_TIME_UNITS = frozenset({"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"})


class _TimeBase(DataType):
    kind: str | None = None
    v3_name: str | None = None

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
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
    def from_numpy(cls, dtype):
        return cls(dtype) if dtype.kind == cls.kind else None

    def to_json_v3(self):
        unit, scale = np.datetime_data(self.numpy_dtype)
        return {"name": self.v3_name, "configuration": {"unit": unit, "scale_factor": scale}}

    @property
    def _native(self):
        return self.numpy_dtype.newbyteorder("=")

    def default_fill_value(self):
        # NaT (the int64 minimum), as zarr-python chooses.
        return np.array(-(2**63), dtype="i8").view(self._native)[()]

    def _decode_fill(self, value, zarr_format):
        # Stored as the int64 count of units; NaT is the int64 minimum, or the string "NaT"
        # (the extension spec allows it; zarr-python writes the integer).
        value = -(2**63) if value == "NaT" else _json_int(value)
        if not -(2**63) <= value < 2**63:
            raise ValueError("out of int64 range")
        return np.array(value, dtype="i8").view(self._native)[()]

    def _encode_fill(self, value, zarr_format):
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


def _struct_field_error(where, field, msg):
    return MetadataError(f"{where}: field {field!r}: structured data type: {msg}")


def _struct_entry(entry):
    """(name, data type JSON) of a v3 field: ``[name, dt]`` or ``{"name": name, "data_type": dt}``."""
    if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
        return entry
    if isinstance(entry, dict) and set(entry) == {"name", "data_type"} and isinstance(entry["name"], str):
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

    def __init__(self, numpy_dtype, v3_name="structured"):
        super().__init__(numpy_dtype)
        self.v3_name = v3_name

    @classmethod
    def from_json_v3(cls, obj, where="zarr.json"):
        name, config = _name_and_config(obj)
        if name not in ("structured", "struct") or config is None:
            return None
        entries = config.get("fields")
        if set(config) != {"fields"} or not isinstance(entries, list) or not entries:
            raise _struct_field_error(where, "data_type", f"expected a non-empty list of fields, got {config!r}")
        fields = []
        for entry in entries:
            parsed = _struct_entry(entry)
            if parsed is None:
                raise _struct_field_error(
                    where, "data_type", f"expected [name, data_type] or {{\"name\", \"data_type\"}}, got {entry!r}"
                )
            fields.append((parsed[0], dtype_from_v3_json(parsed[1], where).numpy_dtype))
        dt = cls._build(fields, where, "data_type")
        dt.v3_name = name
        return dt

    @classmethod
    def from_json_v2(cls, obj, object_codec_id=None, where=".zarray"):
        if not isinstance(obj, list):
            return None
        fields = []
        for entry in obj:
            if not (isinstance(entry, list) and len(entry) in (2, 3) and isinstance(entry[0], str)):
                raise _struct_field_error(where, "dtype", f"expected [name, dtype] or [name, dtype, shape], got {entry!r}")
            field_dtype = dtype_from_v2_json(entry[1], None, where).numpy_dtype
            if len(entry) == 3:
                shape = entry[2]
                if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
                    raise _struct_field_error(where, "dtype", f"invalid field shape {shape!r}")
                fields.append((entry[0], field_dtype, tuple(shape)))
            else:
                fields.append((entry[0], field_dtype))
        return cls._build(fields, where, "dtype")

    @classmethod
    def _build(cls, fields, where, field):
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
    def from_numpy(cls, dtype):
        if dtype.kind != "V" or dtype.names is None or dtype.hasobject:
            return None
        # Only packed layouts: the JSON forms have no room for offsets or padding.
        offset = 0
        for name in dtype.names:
            field_dtype, field_offset = dtype.fields[name][:2]
            if field_offset != offset:
                return None
            base = field_dtype.subdtype[0] if field_dtype.subdtype else field_dtype
            try:
                dtype_from_numpy(base)
            except TypeError:
                return None
            offset += field_dtype.itemsize
        return cls(dtype) if offset == dtype.itemsize else None

    def _fields(self):
        """(name, DataType, shape or None) per field; nested structures keep this one's v3 form."""
        for name in self.numpy_dtype.names:
            field_dtype = self.numpy_dtype.fields[name][0]
            shape = None
            if field_dtype.subdtype:
                field_dtype, shape = field_dtype.subdtype
            dt = dtype_from_numpy(field_dtype)
            if isinstance(dt, StructuredType):
                dt.v3_name = self.v3_name
            yield name, dt, shape

    def _v3_fields(self):
        for name, dt, shape in self._fields():
            if shape is not None:
                raise TypeError(f"structured field {name!r} has a shape, which Zarr v3 cannot store")
            yield name, dt

    def to_json_v3(self):
        if self.v3_name == "struct":
            fields = [{"name": name, "data_type": dt.to_json_v3()} for name, dt in self._v3_fields()]
        else:
            fields = [[name, dt.to_json_v3()] for name, dt in self._v3_fields()]
        return {"name": self.v3_name, "configuration": {"fields": fields}}

    def _decode_fill(self, value, zarr_format):
        if not (isinstance(value, dict) and zarr_format == 3):
            return super()._decode_fill(value, zarr_format)
        names = self.numpy_dtype.names
        if set(value) != set(names):
            raise ValueError(f"fill value fields {sorted(value)} are not the fields {list(names)}")
        fill = np.zeros((), dtype=self.numpy_dtype)
        for name, dt in self._v3_fields():
            fill[name] = dt._decode_fill(value[name], zarr_format)
        return fill[()]

    def _encode_fill(self, value, zarr_format):
        if zarr_format == 3 and self.v3_name == "struct":
            return {name: dt.fill_value_to_json(value[name], zarr_format) for name, dt in self._v3_fields()}
        return super()._encode_fill(value, zarr_format)

    def to_json_v2(self):
        return [
            [name, dt.to_json_v2()] if shape is None else [name, dt.to_json_v2(), list(shape)]
            for name, dt, shape in self._fields()
        ]


for _cls in (
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


def _resolve(from_json, where, field, *args):
    """A registered type's from_json_*; a type error inside it (a list where a string
    belongs, a size numpy refuses...) as the MetadataError of a malformed data_type."""
    try:
        return from_json(*args)
    except (TypeError, ValueError, OverflowError) as e:
        if isinstance(e, MetadataError):
            raise
        raise MetadataError(f"{where}: field {field!r}: invalid data type {args[0]!r}: {e}") from None


def dtype_from_v3_json(obj, where="zarr.json"):
    """Resolve a v3 ``data_type`` value; UnknownDataTypeError if no registered type accepts it."""
    for cls in _REGISTRY:
        dt = _resolve(cls.from_json_v3, where, "data_type", obj, where)
        if dt is not None:
            return dt
    name, _ = _name_and_config(obj)
    if name is None:
        raise MetadataError(
            f"{where}: field 'data_type': expected a name or a {{\"name\", \"configuration\"}} object, got {obj!r}"
        )
    raise UnknownDataTypeError(f"{where}: field 'data_type': unknown or invalid data type {obj!r}")


def dtype_from_v2_json(obj, object_codec_id=None, where=".zarray"):
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


# Python types and names that mean variable-length types rather than numpy's U0/S0.
_NUMPY_SPECIAL = {str: StringType, "string": StringType, bytes: VariableLengthBytesType}


def _zarr_data_type(x):
    """The DataType of a zarr-python data type object (``zarr.dtype.*``): by its numpy dtype
    (which keeps the byte order), or by its v3 JSON where that is numpy's object dtype; None
    for anything else."""
    if not type(x).__module__.startswith("zarr.") or not callable(getattr(x, "to_native_dtype", None)):
        return None
    native = x.to_native_dtype()
    if native.kind != "O":
        return dtype_from_numpy(native)
    return dtype_from_v3_json(x.to_json(zarr_format=3), "dtype")


def dtype_from_numpy(x):
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

