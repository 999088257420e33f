"""The registry's `reshape` array->array codec: the chunk's items in C order, given another
shape (a view when the chunk is contiguous)."""

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MetadataError
from .base import ArrayArrayCodec, ChunkSpec, CodecJSON
from .registry import register_codec

__all__ = ["Entry", "ReshapeCodec"]

Entry = int | list[int]


def _entry(value: object) -> Entry:
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        return list(value)
    if isinstance(value, int) and not isinstance(value, bool) and (value > 0 or value == -1):
        return value
    raise MetadataError(
        f"reshape codec: each entry of shape must be a positive size, -1 or a "
        f"list of input dimensions, got {value!r}"
    )


class ReshapeCodec(ArrayArrayCodec):
    """`reshape` to `shape`: sizes, -1 (at most once: what is left) and lists of input
    dimensions (the product of their sizes)."""

    name = "reshape"

    def __init__(self, shape: object) -> None:
        if not isinstance(shape, list) or not shape:
            raise MetadataError(f"reshape codec: shape must be a non-empty list, got {shape!r}")
        self.shape = [_entry(v) for v in shape]
        if sum(1 for v in self.shape if v == -1) > 1:
            raise MetadataError(f"reshape codec: -1 appears more than once in {self.shape}")
        dims = [d for v in self.shape if isinstance(v, list) for d in v]
        if any(a >= b for a, b in zip(dims, dims[1:])):
            raise MetadataError(
                f"reshape codec: the input dimensions of {self.shape} are not "
                f"in strictly increasing order"
            )

    def configuration(self) -> CodecJSON:
        return {"shape": self.shape}

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The encoded shape of chunks of `shape`; MetadataError when there is none."""
        sizes: list[int] = []
        for entry in self.shape:
            if isinstance(entry, list):
                if any(d >= len(shape) for d in entry):
                    raise MetadataError(
                        f"reshape codec: input dimensions {entry} do not exist "
                        f"in {len(shape)}-d chunks"
                    )
                sizes.append(math.prod(shape[d] for d in entry))
            else:
                sizes.append(entry)
        total = math.prod(shape)
        if -1 in sizes:
            known = math.prod(s for s in sizes if s != -1)
            if known == 0 or total % known:
                raise MetadataError(
                    f"reshape codec: no size for -1 in {self.shape} makes "
                    f"{total} items of chunks of shape {list(shape)}"
                )
            sizes[sizes.index(-1)] = total // known
        if math.prod(sizes) != total:
            raise MetadataError(
                f"reshape codec: shape {self.shape} gives {sizes}, not "
                f"{total} items as chunks of shape {list(shape)} hold"
            )
        for i, entry in enumerate(self.shape):
            if (
                isinstance(entry, list)
                and entry
                and (
                    math.prod(sizes[:i]) != math.prod(shape[: entry[0]])
                    or math.prod(sizes[i + 1 :]) != math.prod(shape[entry[-1] + 1 :])
                )
            ):
                raise MetadataError(
                    f"reshape codec: output dimension {i} ({entry}) does not "
                    f"line up with input dimensions {entry} of {list(shape)}"
                )
        return tuple(sizes)

    def resolve(self, spec: ChunkSpec) -> "ReshapeCodec":
        self.output_shape(spec.shape)
        return self

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return spec.evolve(shape=self.output_shape(spec.shape))

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        return np.ascontiguousarray(array).reshape(self.output_shape(spec.shape))

    def decode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        return np.ascontiguousarray(array).reshape(spec.shape)


register_codec(ReshapeCodec)
