"""The registry's `zfp` array->bytes codec: a chunk as one zfp stream without a header, the
chunk's axes (singleton axes squeezed out, at most 4 left) as zfp's field, the last one
fastest. Through the optional `zfpy` package, which runs zfp's fixed-accuracy, fixed-rate and
fixed-precision modes; its reversible and expert modes are refused, as zfpy has neither.

Narrower types are promoted as the registry says: int8/int16/uint8/uint16 to int32 in zfp's
scale (and clamped back), float16 and bfloat16 to float32; uint32 and uint64 are stored as
int32 and int64, clamped to them (as zarrs stores them), and datetimes as int64. The stream
is padded before it is decoded, as for `zfpy` (zfpy.stream_padding), so a truncated one
cannot read past its end.
"""

from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ChunkDecodeError, MetadataError, UnknownCodecError
from .base import ArrayBytesCodec, BytesLike, ChunkSpec, CodecJSON, into
from .numbers import type_name
from .registry import register_codec
from .zfpy import stream_padding, zfpy_module

__all__ = ["SUPPORTED", "ZfpCodec"]

# registry mode -> (zfpy keyword, the configuration field that gives it)
_MODES = {
    "fixed_accuracy": ("tolerance", "tolerance"),
    "fixed_rate": ("rate", "rate"),
    "fixed_precision": ("precision", "precision"),
}
_REFUSED = ("reversible", "expert")
# The values zfp's modes take: bits per value, bit planes, an absolute error bound.
_RANGES = {"rate": (0, 64), "precision": (0, 64), "tolerance": (0, float("inf"))}
_NATIVE = frozenset(np.dtype(t) for t in ("i4", "i8", "f4", "f8"))
_PROMOTED_INTS = frozenset(np.dtype(t) for t in ("i1", "i2", "u1", "u2"))
# Unsigned integers as the signed ones of their size, clamped to those (as zarrs stores them).
_CLAMPED_INTS: dict[np.dtype[Any], np.dtype[Any]] = {
    np.dtype("u4"): np.dtype("i4"),
    np.dtype("u8"): np.dtype("i8"),
}
SUPPORTED = (
    "int32, int64, uint32, uint64, float32, float64, int8, int16, uint8, uint16, "
    "float16, bfloat16, datetime64, timedelta64"
)


def _stored(dtype: np.dtype[Any]) -> np.dtype[Any] | None:
    """The type zfp compresses items of `dtype` as; None when the codec does not take it."""
    dtype = dtype.newbyteorder("=")
    if dtype in _NATIVE:
        return dtype
    if dtype.kind in "mM":
        return np.dtype(np.int64)
    if dtype in _CLAMPED_INTS:
        return _CLAMPED_INTS[dtype]
    if dtype in _PROMOTED_INTS:
        return np.dtype(np.int32)
    if dtype == np.float16 or (
        dtype.type.__module__ == "ml_dtypes" and dtype.type.__name__ == "bfloat16"
    ):
        return np.dtype(np.float32)
    return None


def _field(shape: tuple[int, ...]) -> list[int]:
    """zfp's field of chunks of `shape`: 0-d as [1], singleton axes squeezed past 4 axes."""
    field = list(shape) or [1]
    if len(field) > 4:
        field = [n for n in field if n != 1] or [1]
    if len(field) > 4:
        raise MetadataError(
            f"zfp codec: chunks of shape {list(shape)} have more than 4 axes that are not of size 1"
        )
    return field


@lru_cache(maxsize=64)
def _block_bits(stored: np.dtype[Any], ndim: int, keyword: str, value: float) -> tuple[int, int]:
    """(minbits, maxbits) of zfp's blocks in this mode, from the header zfpy writes for one
    block."""
    block = np.zeros((4,) * ndim, dtype=stored)
    zfpy = zfpy_module()
    header = zfpy.header(
        zfpy.compress_numpy(block, write_header=True, **{keyword: value}) + bytes(64)
    )
    expert = header["config"]["expert"]
    return int(expert["minbits"]), int(expert["maxbits"])


class ZfpCodec(ArrayBytesCodec):
    """`zfp` with `mode` and the parameter it takes (`tolerance`, `rate` or `precision`)."""

    name = "zfp"

    def __init__(
        self,
        mode: object,
        tolerance: object = None,
        rate: object = None,
        precision: object = None,
        **others: object,
    ) -> None:
        if mode in _REFUSED:
            # (No writer reachable here makes them either: zfpy and numcodecs' zfpy encode
            # neither, and the zarrs-python wheel is built without zarrs' zfp codec.)
            raise UnknownCodecError(
                f"zfp codec: mode {mode!r} is not supported (zfpy does not "
                f"run it); supported: {sorted(_MODES)}"
            )
        if mode not in _MODES:
            raise MetadataError(
                f"zfp codec: mode {mode!r} is not one of {sorted(_MODES) + list(_REFUSED)}"
            )
        keyword, field = _MODES[mode]
        given = {"tolerance": tolerance, "rate": rate, "precision": precision}
        value = given.pop(field)
        extra = sorted([k for k, v in given.items() if v is not None] + list(others))
        if extra:
            raise MetadataError(f"zfp codec: mode {mode!r} takes {field!r} only, got {extra}")
        number = (int,) if field == "precision" else (int, float)
        low, high = _RANGES[field]
        if isinstance(value, bool) or not isinstance(value, number) or not low < value <= high:
            raise MetadataError(
                f"zfp codec: mode {mode!r} needs a {field} in ({low}, {high}], got {value!r}"
            )
        self.mode, self.field, self.keyword, self.value = mode, field, keyword, value

    @classmethod
    def from_config(cls, configuration: CodecJSON | None) -> "ZfpCodec":
        configuration = dict(configuration or {})
        if "mode" not in configuration:
            raise MetadataError("zfp codec: configuration needs a 'mode'")
        return cls(**configuration)

    def configuration(self) -> CodecJSON:
        return {"mode": self.mode, self.field: self.value}

    def resolve(self, spec: ChunkSpec) -> "ZfpCodec":
        if _stored(np.dtype(spec.dtype)) is None:
            raise MetadataError(
                f"zfp codec: data type {type_name(np.dtype(spec.dtype))} is "
                f"not one it takes: {SUPPORTED}"
            )
        _field(spec.shape)
        zfpy_module()
        return self

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        dtype = np.dtype(spec.dtype)
        stored = _stored(dtype)
        if stored is None:
            raise MetadataError(
                f"zfp codec: data type {type_name(dtype)} is not one it takes: {SUPPORTED}"
            )
        values = np.ascontiguousarray(array).reshape(_field(spec.shape))
        if dtype.newbyteorder("=") in _PROMOTED_INTS:
            values = _promote(values, dtype)
        elif dtype.newbyteorder("=") in _CLAMPED_INTS:
            values = np.minimum(values, np.iinfo(stored).max).astype(stored)
        elif dtype.kind in "mM":
            values = values.view(np.int64)
        try:
            compressed: bytes = zfpy_module().compress_numpy(
                values.astype(stored, copy=False), write_header=False, **{self.keyword: self.value}
            )
        except (TypeError, ValueError, RuntimeError) as e:
            raise MetadataError(
                f"zfp codec: cannot encode with {self.configuration()}: {e}"
            ) from None
        return compressed

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        dtype = np.dtype(spec.dtype)
        stored = _stored(dtype)
        if stored is None:
            raise MetadataError(
                f"zfp codec: data type {type_name(dtype)} is not one it takes: {SUPPORTED}"
            )
        zfpy, field, data = zfpy_module(), _field(spec.shape), bytes(data)
        minbits, maxbits = _block_bits(stored, len(field), self.keyword, self.value)
        padded = data + bytes(stream_padding(len(data), field, minbits, maxbits, "zfp"))
        try:
            values = zfpy._decompress(
                padded, zfpy.dtype_to_ztype(stored), field, **{self.keyword: self.value}
            )
        except (ValueError, RuntimeError, TypeError) as e:
            raise ChunkDecodeError(f"zfp codec: cannot decode the chunk: {e}") from None
        values = np.asarray(values).reshape(spec.shape)
        if dtype.newbyteorder("=") in _PROMOTED_INTS:
            values = _demote(values, dtype)
        elif dtype.newbyteorder("=") in _CLAMPED_INTS:
            values = np.maximum(values, 0)
        elif dtype.kind in "mM":
            return into(values.view(dtype.newbyteorder("=")).astype(dtype), out)
        return into(values.astype(dtype), out)


def _promote(values: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Narrow integers in zfp's int32 scale (zfp_promote_*)."""
    bits = 8 * dtype.itemsize
    wide = values.astype(np.int32)
    if dtype.kind == "u":
        wide -= 1 << (bits - 1)
    return wide << (31 - bits)


def _demote(values: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Invert _promote, clamped into `dtype` (zfp_demote_*)."""
    bits = 8 * dtype.itemsize
    narrow = values.astype(np.int32) >> (31 - bits)
    if dtype.kind == "u":
        narrow += 1 << (bits - 1)
    info = np.iinfo(dtype)
    clamped: npt.NDArray[Any] = np.clip(narrow, int(info.min), int(info.max))
    return clamped


register_codec(ZfpCodec)
