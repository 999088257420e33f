"""numcodecs' `zfpy` codec (zfp, through the optional `zfpy` package): a chunk as one zfp
stream with a full header (type, shape, mode), compressed in 4^d blocks of the chunk's shape.

zfp reads its bit stream in 64-bit words without bounds checks, so a stream is checked and
padded before it is decoded: its header must name the chunk's type and number of items, and
zero bytes follow the data, enough for every block the header implies. A truncated stream then
decodes into the padding rather than past the end of the buffer.
"""

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ChunkDecodeError, MetadataError
from .base import (
    ArrayBytesCodec,
    BytesLike,
    ChunkSpec,
    CodecJSON,
    NumcodecsForm,
    into,
    stored_numbers,
)
from .registry import register_codec

__all__ = ["ZfpyCodec", "stream_padding", "zfpy_module"]

_DTYPES = frozenset(np.dtype(t) for t in ("f4", "f8", "i4", "i8"))
# numcodecs' modes and the zfpy keyword each takes (zfpy.mode_fixed_rate, ...).
_MODE_KWARG = {2: "rate", 3: "precision", 4: "tolerance"}
_HEADER_PAD = 32  # the longest header is 148 bits; zfp reads whole words past it
_MAX_BLOCK_BITS = 1 << 15  # maxbits is a 15-bit field in zfp's header
_EMPTY_BLOCK_BITS = 128  # at most one bit per bit plane, plus the block's flag bits


def zfpy_module() -> Any:  # the zfpy module, which has no type hints
    try:
        import zfpy
    except ImportError:
        raise MetadataError('the zfpy codec needs zfpy: pip install "zarrcore[zfpy]"') from None
    return zfpy


def stream_padding(nbytes: int, shape: list[int], minbits: int, maxbits: int, codec: str) -> int:
    """The zero bytes to put after a zfp stream of `nbytes` bytes that holds a field of
    `shape` in blocks of `minbits` to `maxbits` bits, so that decoding it stays in the buffer;
    ChunkDecodeError when the stream is shorter than its blocks' least size."""
    blocks = math.prod(-(-n // 4) for n in shape)
    if blocks * minbits > 8 * nbytes:
        raise ChunkDecodeError(
            f"{codec} codec: the stream ({nbytes} bytes) is shorter than its "
            f"{blocks} blocks of at least {minbits} bits"
        )
    # One block cut short reads at most maxbits; each block after it, in the zeros, reads
    # its minbits or a bit per bit plane. Bounded by the data's own length (checked above).
    straddle = max(_MAX_BLOCK_BITS, maxbits)
    return (straddle + blocks * max(_EMPTY_BLOCK_BITS, minbits)) // 8


class ZfpyCodec(NumcodecsForm, ArrayBytesCodec):
    """`zfpy` with numcodecs' parameters: `mode` 2 (fixed rate), 3 (fixed precision) or 4
    (fixed accuracy; tolerance -1 is lossless) and the value that mode takes."""

    name = None
    v2_id = "zfpy"

    def __init__(
        self,
        mode: int = 4,
        tolerance: float = -1,
        rate: float = -1,
        precision: int = -1,
        compression_kwargs: CodecJSON | None = None,
    ) -> None:
        # compression_kwargs is derived from the others; numcodecs stores it and ignores it.
        for field, value in (("mode", mode), ("precision", precision)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise MetadataError(f"zfpy codec: {field} must be an integer, got {value!r}")
        for field, value in (("tolerance", tolerance), ("rate", rate)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise MetadataError(f"zfpy codec: {field} must be a number, got {value!r}")
        self.mode, self.tolerance, self.rate, self.precision = mode, tolerance, rate, precision

    def _compression_kwargs(self) -> dict[str, float] | None:
        field = _MODE_KWARG.get(self.mode)
        return None if field is None else {field: getattr(self, field)}

    def configuration(self) -> CodecJSON:
        kwargs = self._compression_kwargs()
        config: CodecJSON = {"mode": self.mode}
        if kwargs is not None:
            config["compression_kwargs"] = kwargs
        return {
            **config,
            "tolerance": self.tolerance,
            "rate": self.rate,
            "precision": self.precision,
        }

    def resolve(self, spec: ChunkSpec) -> "ZfpyCodec":
        dtype = stored_numbers(spec.dtype)
        if dtype not in _DTYPES:
            raise MetadataError(
                f"zfpy codec: data type {dtype} is not one zfp stores "
                f"(native float32, float64, int32, int64)"
            )
        zfpy_module()
        return self

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        kwargs = self._compression_kwargs()
        if kwargs is None:
            raise MetadataError(
                f"zfpy codec: mode {self.mode} cannot encode; numcodecs writes "
                f"modes {sorted(_MODE_KWARG)}"
            )
        try:
            array = np.ascontiguousarray(array)
            compressed: bytes = zfpy_module().compress_numpy(
                array.view(stored_numbers(array.dtype)), write_header=True, **kwargs
            )
            return compressed
        except (TypeError, ValueError, RuntimeError) as e:
            raise MetadataError(
                f"zfpy codec: cannot encode with {self.configuration()}: {e}"
            ) from None

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        zfpy = zfpy_module()
        data = bytes(data)
        try:
            header = zfpy.header(data + bytes(_HEADER_PAD))
        except (ValueError, RuntimeError, TypeError) as e:
            raise ChunkDecodeError(f"zfpy codec: not a zfp stream with a header: {e}") from None
        shape = [header[axis] for axis in ("nw", "nz", "ny", "nx") if header[axis]]
        count, numbers = math.prod(spec.shape), stored_numbers(spec.dtype)
        if np.dtype(header["type"]) != numbers or math.prod(shape) != count:
            raise ChunkDecodeError(
                f"zfpy codec: the stream holds {tuple(shape)} "
                f"{np.dtype(header['type'])}, expected {count} values of "
                f"{numbers}"
            )
        expert = header["config"]["expert"]
        padding = _HEADER_PAD + stream_padding(
            len(data), shape, expert["minbits"], expert["maxbits"], "zfpy"
        )
        try:
            array = zfpy.decompress_numpy(data + bytes(padding))
        except (ValueError, RuntimeError, TypeError) as e:
            raise ChunkDecodeError(f"zfpy codec: cannot decode the chunk: {e}") from None
        return into(array.view(spec.dtype).reshape(spec.shape), out)


register_codec(ZfpyCodec, v2_id="zfpy")
