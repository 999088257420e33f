"""The `transpose` array->array codec."""
from .. import kernels
from ..errors import MetadataError
from .base import ArrayArrayCodec
from .registry import register_codec


class TransposeCodec(ArrayArrayCodec):
    """Store chunks with their axes permuted by `order`."""

    name = "transpose"

    def __init__(self, order):
        if isinstance(order, str) or not hasattr(order, "__iter__"):
            raise MetadataError(f"transpose codec: order must be a list of axes, got {order!r}")
        order = tuple(order)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in order):
            raise MetadataError(f"transpose codec: order must hold integers, got {list(order)!r}")
        if sorted(order) != list(range(len(order))):
            raise MetadataError(f"transpose codec: order {list(order)} is not a permutation of 0..{len(order) - 1}")
        self.order = order
        self._inverse = tuple(sorted(range(len(order)), key=order.__getitem__))

    def configuration(self):
        return {"order": list(self.order)}

    def _check(self, spec):
        if len(self.order) != len(spec.shape):
            raise MetadataError(
                f"transpose codec: order {list(self.order)} does not match {len(spec.shape)}-d chunks"
            )

    def resolve(self, spec):
        self._check(spec)
        return self

    def encoded_spec(self, spec):
        self._check(spec)
        return spec.evolve(shape=tuple(spec.shape[i] for i in self.order))

    def encode(self, array, spec):
        self._check(spec)
        return kernels.transpose(array, self.order)

    def decode(self, array, spec):
        self._check(spec)
        return kernels.transpose(array, self._inverse)


register_codec(TransposeCodec)
