"""The registry's `scale_offset` array->array codec: encode (x - offset) * scale, decode
x / scale + offset, in the arithmetic of the chunk's own type.

A value that the type cannot hold (integer overflow, a division with a remainder) fails rather
than wraps. numpy's vectorized operations do the work: each step is one pass over the chunk,
which a C loop would not beat by much, and integers are range-checked from the chunk's least
and greatest values before any arithmetic, so no step can overflow.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ChunkDecodeError, ChunkEncodeError, MetadataError
from .base import ArrayArrayCodec, ChunkSpec, CodecJSON
from .numbers import FLOAT_NAMES, INTEGER_NAMES, int_range, number_kind, scalar_from_json, type_name
from .registry import register_codec

__all__ = ["ScaleOffsetCodec"]


def _check_number(value: object, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MetadataError(
            f"scale_offset codec: {field} must be a number (or a fill value "
            f"string such as 'NaN'), got {value!r}"
        )


def _span(values: npt.NDArray[Any]) -> tuple[int, int]:
    return int(values.min()), int(values.max())


def _within(
    low: int,
    high: int,
    dtype: np.dtype[Any],
    what: str,
    error: type[ChunkEncodeError | ChunkDecodeError],
) -> None:
    lo, hi = int_range(dtype)
    if low < lo or high > hi:
        bad = low if low < lo else high
        # (zarr-python's words: "outside the range of dtype".)
        raise error(
            f"scale_offset codec: {what} gives {bad}, outside the range of dtype "
            f"{dtype} [{lo}, {hi}]"
        )


class ScaleOffsetCodec(ArrayArrayCodec):
    """`scale_offset`: `offset` and `scale` as JSON scalars of the chunk's type (absent: 0
    and 1), kept as given."""

    name = "scale_offset"

    def __init__(self, offset: object = None, scale: object = None) -> None:
        for field, value in (("offset", offset), ("scale", scale)):
            if value is not None:
                _check_number(value, field)
        self.offset, self.scale = offset, scale

    def configuration(self) -> CodecJSON:
        return {
            field: value
            for field, value in (("offset", self.offset), ("scale", self.scale))
            if value is not None
        }

    def _numbers(self, dtype: np.dtype[Any]) -> tuple[Any, Any]:
        """(offset, scale) as scalars of `dtype`."""
        offset = (
            dtype.type(0)
            if self.offset is None
            else scalar_from_json(self.offset, dtype, "scale_offset codec: offset")
        )
        scale = (
            dtype.type(1)
            if self.scale is None
            else scalar_from_json(self.scale, dtype, "scale_offset codec: scale")
        )
        return offset, scale

    def resolve(self, spec: ChunkSpec) -> "ScaleOffsetCodec":
        dtype = np.dtype(spec.dtype)
        if number_kind(dtype) is None:
            raise MetadataError(
                f"scale_offset codec: data type {type_name(dtype)} is not one it takes: "
                f"{', '.join(INTEGER_NAMES + FLOAT_NAMES)}"
            )
        offset, scale = self._numbers(dtype)
        if scale == 0:
            raise MetadataError("scale_offset codec: scale must not be zero")
        # A scale or offset that is infinite or NaN in the chunk's type turns every value
        # written into NaN or infinity: refused, as integer types refuse what they cannot hold.
        for field, value, given in (("offset", offset, self.offset), ("scale", scale, self.scale)):
            if number_kind(dtype) == "float" and not np.isfinite(np.float64(value)):
                raise MetadataError(
                    f"scale_offset codec: {field} {given!r} is not a finite {type_name(dtype)}"
                )
        return self

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        fill = np.asarray(spec.fill_value, dtype=spec.dtype)
        try:
            encoded = self._encode(fill.reshape(1), np.dtype(spec.dtype))
        except ChunkEncodeError as e:
            raise MetadataError(f"scale_offset codec: fill value {fill[()]!r}: {e}") from None
        return spec.evolve(fill_value=encoded[0])

    def _encode(self, array: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
        offset, scale = self._numbers(dtype)
        if number_kind(dtype) == "float":
            return _in_type(array, dtype, lambda a: a - offset, lambda a: a * scale)
        o, s = int(offset), int(scale)
        if array.size:
            low, high = _span(array)
            _within(low - o, high - o, dtype, "x - offset", ChunkEncodeError)
            _within(
                min((low - o) * s, (high - o) * s),
                max((low - o) * s, (high - o) * s),
                dtype,
                "(x - offset) * scale",
                ChunkEncodeError,
            )
        return _in_type(array, dtype, lambda a: a - o, lambda a: a * s)

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        return self._encode(np.asarray(array), np.dtype(spec.dtype))

    def decode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        dtype = np.dtype(spec.dtype)
        offset, scale = self._numbers(dtype)
        if number_kind(dtype) == "float":
            return _in_type(array, dtype, lambda a: a / scale, lambda a: a + offset)
        o, s = int(offset), int(scale)
        if array.size:
            if np.any(_arithmetic(array) % s):
                raise ChunkDecodeError(
                    f"scale_offset codec: a value is not a multiple of scale "
                    f"{s} (a non-zero remainder), so x / scale is not a "
                    f"{dtype}"
                )
            low, high = _span(array)
            quotients = (low // s, high // s)
            _within(min(quotients), max(quotients), dtype, "x / scale", ChunkDecodeError)
            _within(
                min(quotients) + o,
                max(quotients) + o,
                dtype,
                "x / scale + offset",
                ChunkDecodeError,
            )
        return _in_type(array, dtype, lambda a: a // s, lambda a: a + o)


def _arithmetic(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """`array` in a type numpy computes in: ml_dtypes' small integers as int64."""
    small_int = array.dtype.type.__module__ == "ml_dtypes" and number_kind(array.dtype) == "int"
    return array.astype(np.int64) if small_int else array


def _in_type(
    array: npt.NDArray[Any],
    dtype: np.dtype[Any],
    *steps: Callable[[npt.NDArray[Any]], npt.NDArray[Any]],
) -> npt.NDArray[Any]:
    """Apply `steps` to `array`, each result rounded back into `dtype` (numpy computes some
    small types in a wider one). Integers were range-checked by the caller."""
    result = np.asarray(array, dtype=dtype)
    for step in steps:
        result = np.asarray(step(_arithmetic(result))).astype(dtype, copy=False)
    return result


register_codec(ScaleOffsetCodec)
