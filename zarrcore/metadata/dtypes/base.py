"""The base of every data type (DataType), its registry, and the JSON helpers the kinds share."""

from __future__ import annotations

import base64
import binascii
import functools
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from zarrcore.errors import MetadataError

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "DataType",
    "JSON",
    "MAX_ITEMSIZE",
    "VoidBase",
    "b64_text",
    "bytes_from_json",
    "check_itemsize",
    "is_number",
    "json_int",
    "name_and_config",
    "native_order",
    "parse_typestr",
    "parsed_length_bytes",
    "register_data_type",
    "registered_data_types",
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
            parsed = parse_typestr(obj)
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

    def scalars_from_json(
        self, values: list[JSON], where: Callable[[int], str]
    ) -> npt.NDArray[Any]:
        """The v3 fill value JSON forms `values` decoded, as an array (MetadataError naming
        `where(i)` for value i): what `fill_value_from_json` gives each, the plain numbers
        (`_plain`) converted together."""
        out = np.empty(len(values), dtype=self.numpy_dtype)
        plain = np.fromiter(self._plain(values), dtype=bool, count=len(values))
        if plain.any():
            with np.errstate(over="ignore"):
                out[plain] = np.array(
                    [v for v, p in zip(values, plain) if p], dtype=self._plain_type
                )
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
        return (
            type(self) is type(other)
            and isinstance(other, DataType)
            and self.numpy_dtype == other.numpy_dtype
        )

    def __hash__(self) -> int:
        return hash((type(self), self.numpy_dtype))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.numpy_dtype.str!r})"


@functools.lru_cache(maxsize=256)
def parse_typestr(s: str) -> np.dtype[Any] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.dtype(s)
    except (TypeError, ValueError, SyntaxError):
        return None


def name_and_config(obj: JSON) -> tuple[str, dict[str, JSON]] | tuple[None, None]:
    """Split a v3 extension value (short-hand string or object) into (name, configuration)."""
    if isinstance(obj, str):
        return obj, {}
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        config = obj.get("configuration", {})
        if isinstance(config, dict):
            return obj["name"], config
    return None, None


# -- numbers ----------------------------------------------------------------


def json_int(value: JSON) -> int:
    if isinstance(value, bool):
        raise TypeError("expected an integer, got a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int):
        raise TypeError("expected an integer")
    return value


def native_order(dtype: np.dtype[Any]) -> np.dtype[Any]:
    # ml_dtypes' types are native and lose their identity under newbyteorder (a "V" dtype).
    return dtype if dtype.isnative else dtype.newbyteorder("=")


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def bytes_from_json(value: JSON, length: int | None = None, validate: bool = True) -> bytes:
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


def b64_text(data: Any) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


class VoidBase(DataType):
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
        data = bytes_from_json(value, self.numpy_dtype.itemsize)
        return np.frombuffer(data, dtype=self.numpy_dtype)[0]

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        return b64_text(np.asarray(value, dtype=self.numpy_dtype).tobytes())


# numpy's largest item (its itemsize is a C int).
MAX_ITEMSIZE = 2**31 - 1


def check_itemsize(nbytes: int, where: str, name: str) -> int:
    if nbytes > MAX_ITEMSIZE:
        raise MetadataError(
            f"{where}: field 'data_type': {name!r} items of {nbytes} bytes exceed the largest "
            f"numpy holds ({MAX_ITEMSIZE} bytes)"
        )
    return nbytes


def parsed_length_bytes(config: dict[str, JSON], where: str, name: str) -> int:
    length = config.get("length_bytes") if set(config) == {"length_bytes"} else None
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise MetadataError(
            f"{where}: field 'data_type': {name!r} needs configuration "
            f'{{"length_bytes": <positive int>}}'
        )
    return check_itemsize(length, where, name)
