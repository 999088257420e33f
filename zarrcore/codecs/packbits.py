"""The registry's `packbits` array->bytes codec: bits `first_bit` ... `last_bit` of each value
(of each part of a complex value) one after another, least significant bit first, with an
optional byte that counts the padding bits at the end.

Packing and unpacking are compiled loops (csrc/codecs/zc_packbits.c).
"""

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import filters as _filters
from ..errors import ChunkDecodeError, MetadataError
from .base import ArrayBytesCodec, BytesLike, ChunkSpec, CodecJSON, into
from .numbers import type_name
from .registry import register_codec

__all__ = ["PADDINGS", "PackBitsCodec", "SUPPORTED"]

PADDINGS = ("none", "first_byte", "last_byte")
# ml_dtypes' types of fewer bits than their byte holds -> (bits, signed)
_NARROW = {
    "int2": (2, True),
    "uint2": (2, False),
    "int4": (4, True),
    "uint4": (4, False),
    "float4_e2m1fn": (4, False),
    "float6_e2m3fn": (6, False),
    "float6_e3m2fn": (6, False),
}
_COMPLEX_PARTS = {"complex32": 2, "bcomplex32": 2}
SUPPORTED = (
    "bool, int2, uint2, int4, uint4, float4_e2m1fn, float6_*, and integer, float "
    "and complex types of 8 to 64 bits"
)


def _components(dtype: np.dtype[Any]) -> tuple[int, int, int, bool] | None:
    """(bits of a component, bytes it takes in memory, components per value, signed) of
    `dtype`; None when the codec does not take it."""
    ml_name = dtype.type.__name__ if dtype.type.__module__ == "ml_dtypes" else None
    if ml_name in _NARROW:
        bits, signed = _NARROW[ml_name]
        return bits, 1, 1, signed
    if dtype.kind == "b":
        return 1, 1, 1, False
    if ml_name in _COMPLEX_PARTS or dtype.kind == "c":
        unit = dtype.itemsize // 2
        return 8 * unit, unit, 2, False
    if (dtype.kind in "iuf" or ml_name is not None) and dtype.itemsize in (1, 2, 4, 8):
        return 8 * dtype.itemsize, dtype.itemsize, 1, dtype.kind == "i"
    return None


def _bit(value: object, field: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise MetadataError(
            f"packbits codec: {field} must be an integer >= 0 or null, got {value!r}"
        )
    return value


class PackBitsCodec(ArrayBytesCodec):
    """`packbits`: `padding_encoding` one of PADDINGS (default "none"); `first_bit` and
    `last_bit` (default: all bits of a component)."""

    name = "packbits"

    def __init__(
        self, padding_encoding: str | None = None, first_bit: object = None, last_bit: object = None
    ) -> None:
        if padding_encoding is not None and padding_encoding not in PADDINGS:
            raise MetadataError(
                f"packbits codec: padding_encoding {padding_encoding!r} is not "
                f"one of {list(PADDINGS)}"
            )
        self.padding_encoding = padding_encoding
        self.first_bit, self.last_bit = _bit(first_bit, "first_bit"), _bit(last_bit, "last_bit")
        if (
            self.first_bit is not None
            and self.last_bit is not None
            and self.last_bit < self.first_bit
        ):
            raise MetadataError(
                f"packbits codec: last_bit {self.last_bit} is less than first_bit {self.first_bit}"
            )

    def configuration(self) -> CodecJSON:
        return {
            field: getattr(self, field)
            for field in ("padding_encoding", "first_bit", "last_bit")
            if getattr(self, field) is not None
        }

    def _layout(self, dtype: np.dtype[Any]) -> tuple[int, int, int, int, int]:
        """(first bit, bits kept, bytes per component, components per value, bits to
        sign-extend to or 0)."""
        components = _components(dtype)
        if components is None:
            raise MetadataError(
                f"packbits codec: data type {type_name(dtype)} is not one it takes: {SUPPORTED}"
            )
        bits, unit, parts, signed = components
        first = self.first_bit or 0
        last = bits - 1 if self.last_bit is None else self.last_bit
        if last >= bits or first > last:
            raise MetadataError(
                f"packbits codec: bits {first} ... {last} are not within the "
                f"{bits} bits of {type_name(dtype)}"
            )
        return first, last - first + 1, unit, parts, bits if signed else 0

    @property
    def _header(self) -> int:
        return 0 if self.padding_encoding in (None, "none") else 1

    def resolve(self, spec: ChunkSpec) -> "PackBitsCodec":
        self._layout(np.dtype(spec.dtype))
        return self

    def encoded_nbytes(self, spec: ChunkSpec) -> int:
        _, kept, _, parts, _ = self._layout(np.dtype(spec.dtype))
        return -(-math.prod(spec.shape) * parts * kept // 8) + self._header

    def _padding(self, spec: ChunkSpec) -> int:
        _, kept, _, parts, _ = self._layout(np.dtype(spec.dtype))
        return -(math.prod(spec.shape) * parts * kept) % 8

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        first, kept, unit, _, _ = self._layout(np.dtype(spec.dtype))
        native = np.ascontiguousarray(array, dtype=np.dtype(spec.dtype).newbyteorder("="))
        packed = _filters.packbits_encode(native.reshape(-1).view(np.uint8), unit, first, kept)
        pad = np.array([self._padding(spec)], dtype=np.uint8)
        if self.padding_encoding == "first_byte":
            return np.concatenate([pad, packed])
        if self.padding_encoding == "last_byte":
            return np.concatenate([packed, pad])
        return packed

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        dtype = np.dtype(spec.dtype)
        first, kept, unit, parts, sign_bits = self._layout(dtype)
        raw = np.frombuffer(data, dtype=np.uint8)
        expected = self.encoded_nbytes(spec)
        if raw.size != expected:
            raise ChunkDecodeError(
                f"packbits codec: chunk has {raw.size} bytes, expected "
                f"{expected} for shape {spec.shape} {type_name(dtype)}"
            )
        if self._header:
            at = 0 if self.padding_encoding == "first_byte" else raw.size - 1
            if raw[at] != self._padding(spec):
                raise ChunkDecodeError(
                    f"packbits codec: the padding byte says {raw[at]} bits, "
                    f"expected {self._padding(spec)}"
                )
            raw = raw[1:] if at == 0 else raw[:-1]
        count = math.prod(spec.shape) * parts
        values = _filters.packbits_decode(raw, unit, count, first, kept, sign_bits)
        array = values.view(dtype.newbyteorder("=")).reshape(spec.shape)
        return into(array.astype(dtype, copy=False), out)


register_codec(PackBitsCodec)
