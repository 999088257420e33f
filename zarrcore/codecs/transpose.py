"""The `transpose` array->array codec."""

from typing import Any

import numpy.typing as npt

from .. import kernels
from ..errors import MetadataError
from .base import ArrayArrayCodec, ChunkSpec, CodecJSON
from .registry import register_codec

__all__ = ["TransposeCodec"]


class TransposeCodec(ArrayArrayCodec):
    """Store chunks with their axes permuted by `order`."""

    name = "transpose"

    def __init__(self, order: object) -> None:
        if isinstance(order, str) or not hasattr(order, "__iter__"):
            raise MetadataError(f"transpose codec: order must be a list of axes, got {order!r}")
        order = tuple(order)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in order):
            raise MetadataError(f"transpose codec: order must hold integers, got {list(order)!r}")
        if sorted(order) != list(range(len(order))):
            raise MetadataError(
                f"transpose codec: order {list(order)} is not a permutation of 0..{len(order) - 1}"
            )
        self.order: tuple[int, ...] = order
        self._inverse = tuple(sorted(range(len(order)), key=order.__getitem__))

    def configuration(self) -> CodecJSON:
        return {"order": list(self.order)}

    def _check(self, spec: ChunkSpec) -> None:
        if len(self.order) != len(spec.shape):
            raise MetadataError(
                f"transpose codec: order {list(self.order)} does not match "
                f"{len(spec.shape)}-d chunks"
            )

    def resolve(self, spec: ChunkSpec) -> "TransposeCodec":
        self._check(spec)
        return self

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        self._check(spec)
        return spec.evolve(shape=tuple(spec.shape[i] for i in self.order))

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        self._check(spec)
        result: npt.NDArray[Any] = kernels.transpose(array, self.order)
        return result

    def decode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        self._check(spec)
        result: npt.NDArray[Any] = kernels.transpose(array, self._inverse)
        return result


register_codec(TransposeCodec)
