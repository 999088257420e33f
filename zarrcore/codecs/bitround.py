"""The registry's `bitround` array->array codec: floats keep `keepbits` bits of their mantissa,
integers `keepbits` bits from their most significant set bit, rounded to nearest (ties to
even), so that a compressor after it finds more repetition. Decoding changes nothing.

The rounding is a compiled loop (csrc/codecs/zc_bitround.c) over a copy of the chunk.
"""

from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import filters as _filters
from ..errors import MetadataError
from .base import ArrayArrayCodec, ChunkSpec, CodecJSON
from .numbers import type_name
from .registry import register_codec

__all__ = ["BitroundCodec", "SUPPORTED"]

# Float type (numpy or ml_dtypes name) -> bits of its mantissa; complex types round each part.
_MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}
_COMPLEX_PARTS = {
    "complex64": "float32",
    "complex128": "float64",
    "complex32": "float16",
    "bcomplex32": "bfloat16",
}
SUPPORTED = (
    "float16, bfloat16, float32, float64, their complex types, int8 ... int64, "
    "uint8 ... uint64, datetime64 and timedelta64"
)


def _layout(dtype: np.dtype[Any]) -> tuple[int, int] | None:
    """(bytes per rounded unit, mantissa bits: 0 for integers) for `dtype`; None when the
    codec does not take it."""
    name = dtype.type.__name__ if dtype.type.__module__ == "ml_dtypes" else dtype.name
    part = _COMPLEX_PARTS.get(name, name)
    if part in _MANTISSA_BITS:
        return dtype.itemsize // (2 if part != name else 1), _MANTISSA_BITS[part]
    if dtype.kind in "iumM" and dtype.itemsize in (1, 2, 4, 8):
        return dtype.itemsize, 0
    return None


class BitroundCodec(ArrayArrayCodec):
    """`bitround` with `keepbits` (at least 1); keeping as many bits as there are changes
    nothing."""

    name = "bitround"

    def __init__(self, keepbits: object) -> None:
        if isinstance(keepbits, bool) or not isinstance(keepbits, int) or keepbits < 1:
            raise MetadataError(
                f"bitround codec: keepbits must be an integer >= 1, got {keepbits!r}"
            )
        self.keepbits = keepbits

    def configuration(self) -> CodecJSON:
        return {"keepbits": self.keepbits}

    def resolve(self, spec: ChunkSpec) -> "BitroundCodec":
        if _layout(np.dtype(spec.dtype)) is None:
            raise MetadataError(
                f"bitround codec: data type {type_name(np.dtype(spec.dtype))} "
                f"is not one it takes: {SUPPORTED}"
            )
        return self

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        dtype = np.dtype(spec.dtype)
        layout = _layout(dtype)
        if layout is None:
            raise MetadataError(
                f"bitround codec: data type {type_name(dtype)} is not one it takes: {SUPPORTED}"
            )
        unit, mantissa_bits = layout
        out = np.array(array, dtype=dtype.newbyteorder("="), order="C", copy=True)
        # Keeping at least as many bits as a unit has changes nothing; the kernel takes an
        # unsigned int, which a larger keepbits of the document would overflow.
        keepbits = min(self.keepbits, 8 * unit)
        _filters.bitround(out.reshape(-1).view(f"u{unit}"), keepbits, mantissa_bits)
        return out

    def decode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        return array


register_codec(BitroundCodec)
