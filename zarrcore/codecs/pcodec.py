"""numcodecs' `pcodec` codec (Pco, through the optional `pcodec` package): a chunk's numbers,
flattened in memory order, as one standalone Pco file."""

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

__all__ = ["PcodecCodec"]

# The types numcodecs' PCodec writes (Pco refuses 8-bit types unless asked to take them).
_DTYPES = frozenset(np.dtype(t) for t in ("u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"))
_MODES = ("auto", "classic")
_DELTAS = ("auto", "none", "try_consecutive", "try_lookback")


def _pcodec() -> Any:  # the pcodec module, which has no type hints
    try:
        import pcodec
    except ImportError:
        raise MetadataError(
            'the pcodec codec needs pcodec: pip install "zarrcore[pcodec]"'
        ) from None
    return pcodec


class PcodecCodec(NumcodecsForm, ArrayBytesCodec):
    """`pcodec` with numcodecs' parameters and defaults. They matter only for encoding, where
    Pco checks them; reading needs none."""

    name = None
    v2_id = "pcodec"

    def __init__(
        self,
        level: int = 8,
        mode_spec: str = "auto",
        delta_spec: str = "auto",
        paging_spec: str = "equal_pages_up_to",
        delta_encoding_order: int | None = None,
        equal_pages_up_to: int = 262144,
    ) -> None:
        self.level = level
        self.mode_spec = mode_spec
        self.delta_spec = delta_spec
        self.paging_spec = paging_spec
        self.delta_encoding_order = delta_encoding_order
        self.equal_pages_up_to = equal_pages_up_to

    def configuration(self) -> CodecJSON:
        return {
            "level": self.level,
            "mode_spec": self.mode_spec,
            "delta_spec": self.delta_spec,
            "paging_spec": self.paging_spec,
            "delta_encoding_order": self.delta_encoding_order,
            "equal_pages_up_to": self.equal_pages_up_to,
        }

    def resolve(self, spec: ChunkSpec) -> "PcodecCodec":
        dtype = stored_numbers(spec.dtype)
        if dtype not in _DTYPES:
            raise MetadataError(
                f"pcodec codec: data type {dtype} is not one Pco stores "
                f"(native 16-, 32- and 64-bit integers and floats)"
            )
        _pcodec()
        return self

    def _chunk_config(self, pcodec: Any) -> Any:
        """Pco's ChunkConfig for these parameters, as numcodecs builds it (pcodec has no type
        hints)."""
        if self.mode_spec not in _MODES:
            raise MetadataError(
                f"pcodec codec: mode_spec {self.mode_spec!r} is not one of {_MODES}"
            )
        if self.delta_spec not in _DELTAS:
            raise MetadataError(
                f"pcodec codec: delta_spec {self.delta_spec!r} is not one of {_DELTAS}"
            )
        if self.paging_spec != "equal_pages_up_to":
            raise MetadataError(
                f"pcodec codec: paging_spec {self.paging_spec!r} is not 'equal_pages_up_to'"
            )
        order = self.delta_encoding_order
        if order is not None and self.delta_spec not in ("auto", "try_consecutive"):
            raise MetadataError(
                "pcodec codec: delta_encoding_order needs delta_spec 'try_consecutive'"
            )
        if order is not None or self.delta_spec == "try_consecutive":
            # "auto" with an order: numcodecs' old form
            delta = pcodec.DeltaSpec.try_consecutive(order)
        else:
            delta = getattr(pcodec.DeltaSpec, self.delta_spec)()
        try:
            return pcodec.ChunkConfig(
                compression_level=self.level,
                delta_spec=delta,
                mode_spec=getattr(pcodec.ModeSpec, self.mode_spec)(),
                paging_spec=pcodec.PagingSpec.equal_pages_up_to(self.equal_pages_up_to),
            )
        except (TypeError, ValueError, RuntimeError, OverflowError) as e:
            raise MetadataError(
                f"pcodec codec: invalid parameters {self.configuration()}: {e}"
            ) from None

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        pcodec = _pcodec()
        flat = np.ascontiguousarray(array).reshape(-1)
        flat = flat.view(stored_numbers(flat.dtype))
        config = self._chunk_config(pcodec)
        try:
            compressed: bytes = pcodec.standalone.simple_compress(flat, config)
            return compressed
        except (RuntimeError, TypeError) as e:  # Pco checks the level only here
            raise MetadataError(
                f"pcodec codec: cannot encode with {self.configuration()}: {e}"
            ) from None

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        count = math.prod(spec.shape)
        # Into an array of the chunk's own size: Pco stops there, whatever the data declares.
        target = (
            out if out is not None and out.flags.c_contiguous else np.empty(spec.shape, spec.dtype)
        )
        try:
            progress = _pcodec().standalone.simple_decompress_into(
                bytes(data), target.reshape(-1).view(stored_numbers(target.dtype))
            )
        except (RuntimeError, TypeError, ValueError) as e:
            raise ChunkDecodeError(f"pcodec codec: cannot decode the chunk: {e}") from None
        if progress.n_processed != count or not progress.finished:
            held = "more" if progress.n_processed == count else progress.n_processed
            raise ChunkDecodeError(f"pcodec codec: the chunk holds {held} values, expected {count}")
        return target if target is out else into(target, out)


register_codec(PcodecCodec, v2_id="pcodec")
