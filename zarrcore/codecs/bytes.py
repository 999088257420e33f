"""The `bytes` array->bytes codec: raw items in a chosen byte order."""

import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import ChunkDecodeError, MetadataError
from ..metadata.dtypes.numeric import ieee_float_size, swap_unit
from .base import ArrayBytesCodec, BytesLike, ChunkSpec, CodecJSON, NativeForm
from .registry import register_codec

__all__ = ["BytesCodec", "byte_order"]

_NATIVE = sys.byteorder


def byte_order(dtype: np.dtype[Any]) -> str | None:
    """'little', 'big', or None when the dtype has no byte order (1-byte, bytes, structured)."""
    if dtype.byteorder == "|" or dtype.itemsize == 1:  # ml_dtypes' 1-byte types say "="
        return None
    if dtype.byteorder == "=":
        return _NATIVE
    return "little" if dtype.byteorder == "<" else "big"


def _swappable(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """`array` as numbers the kernels.byteswap ufunc takes: UCS4 text as uint32 characters,
    datetimes as int64, ml_dtypes' types as unsigned integers of their swap unit (a view;
    numpy's numbers as they are)."""
    if array.dtype.kind == "U":
        return array.reshape(-1).view(np.uint32)
    if array.dtype.kind in "mM":
        return array.view(np.int64)
    unit = swap_unit(array.dtype)
    if array.dtype.kind not in "biufc" and unit:
        return array.reshape(-1).view(f"u{unit}")
    return array


class BytesCodec(ArrayBytesCodec):
    """Serialize items as raw bytes, little or big endian."""

    name = "bytes"

    def __init__(self, endian: str | None = "little") -> None:
        if endian not in ("little", "big", None):
            raise MetadataError(f"bytes codec: endian must be 'little' or 'big', got {endian!r}")
        self.endian = endian

    def configuration(self) -> CodecJSON:
        return {"endian": self.endian} if self.endian else {}

    def resolve(self, spec: ChunkSpec) -> "BytesCodec":
        dtype = np.dtype(spec.dtype)
        if dtype.hasobject:
            raise MetadataError(f"bytes codec: dtype {dtype} has no fixed-size encoding")
        if self._stored_struct(dtype) is not None:
            # A "struct" array's endian is the byte order of every field; "structured" ones
            # record none (fields in memory order), as below.
            return self
        if byte_order(np.dtype(spec.array_dtype)) is None:
            # zarr-python records no endian for arrays whose type has none, even when a filter
            # made multi-byte items of them (those are then in native order).
            return self if self.endian is None else BytesCodec(None)
        if self.endian is None and byte_order(dtype) is not None:
            raise MetadataError(f"bytes codec: endian is required for dtype {dtype}")
        return self

    def v2_form(self, dtype: npt.DTypeLike) -> tuple[None, np.dtype[Any]]:
        dtype = np.dtype(dtype)
        if self.endian is None:
            return None, dtype
        return None, dtype.newbyteorder("<" if self.endian == "little" else ">")

    def encoded_nbytes(self, spec: ChunkSpec) -> int | None:
        dtype = np.dtype(spec.dtype)
        return None if dtype.hasobject or dtype.kind == "T" else spec.nbytes

    def encodes_memory_layout(self, spec: ChunkSpec) -> bool:
        dtype = np.dtype(spec.dtype)
        return not dtype.hasobject and not self._swap(dtype) and self._stored_struct(dtype) is None

    def native_form(self, spec: ChunkSpec) -> NativeForm | None:
        """Items of a fixed size, numbers or text, swapped in units where the stored byte order
        differs from memory's: complex parts, UCS4 characters, else whole items."""
        dtype = np.dtype(spec.dtype)
        if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
            return None
        in_memory = byte_order(dtype) or _NATIVE
        unit = swap_unit(dtype)
        return {
            "itemsize": dtype.itemsize,
            "swap_size": unit if self.endian not in (None, in_memory) else 0,
            "fill": np.asarray(spec.fill_value, dtype=dtype).tobytes(),
            "fill_floatsize": ieee_float_size(dtype) if in_memory == _NATIVE else 0,
        }

    def _swap(self, dtype: np.dtype[Any]) -> bool:
        order = byte_order(dtype)
        return order is not None and self.endian is not None and order != self.endian

    def _stored_struct(self, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        """The stored dtype of a structured `dtype` when its fields need another byte order."""
        if dtype.names is None or self.endian is None:
            return None
        stored = dtype.newbyteorder("<" if self.endian == "little" else ">")
        return None if stored == dtype else stored

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        array = np.ascontiguousarray(array)
        stored = self._stored_struct(array.dtype)
        if stored is not None:
            array = array.astype(stored)
        elif self._swap(array.dtype):
            array = kernels.byteswap(_swappable(array))
        return array.reshape(-1).view(np.uint8)

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        dtype = np.dtype(spec.dtype)
        raw = np.frombuffer(data, dtype=np.uint8)
        if raw.nbytes != spec.nbytes:
            raise ChunkDecodeError(
                f"bytes codec: chunk has {raw.nbytes} bytes, expected "
                f"{spec.nbytes} for shape {spec.shape} {dtype}"
            )

        stored = self._stored_struct(dtype)
        if stored is not None:
            array = raw.view(stored).reshape(spec.shape)
            if out is None:
                return array.astype(dtype)
            out[...] = array
            return out
        if out is not None:
            if not out.flags.c_contiguous:
                raise ValueError("bytes codec: out must be C-contiguous")
            out.reshape(-1).view(np.uint8)[...] = raw
            if self._swap(dtype):
                view = _swappable(out)
                kernels.byteswap(view, out=view)
            return out
        array = raw.view(dtype).reshape(spec.shape)
        if self._swap(dtype):
            array = kernels.byteswap(_swappable(array)).view(dtype).reshape(spec.shape)
        return array


register_codec(BytesCodec)
