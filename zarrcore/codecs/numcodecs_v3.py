"""numcodecs' codecs in Zarr v3 arrays, named `numcodecs.<id>` as zarr-python 3 stores them
(`zarr.codecs.numcodecs`, formerly `numcodecs.zarr3`).

The configuration of `numcodecs.<id>` is numcodecs' own configuration of codec <id> without
its "id", kept as it was given: parameters left out take numcodecs' defaults. So each codec
is the one that reads that configuration in a v2 array. zarr-python runs delta, bitround,
fixedscaleoffset, quantize, packbits and astype as array->array codecs that keep the chunk's
shape (packbits gives its bytes), and the compressors, shuffle and checksums as bytes->bytes
codecs on the serialized chunk, where blosc's typesize is 1 unless configured. Parameters that
zarr-python fills in from the data type when they are missing (shuffle's elementsize, the
decoded dtype of fixedscaleoffset, quantize and astype) are filled in the same way, from the
array's data type, and stored. pcodec and zfpy are array->bytes codecs: the serializer,
given the chunk with its shape.
"""

import math
from collections.abc import Callable
from typing import Any, TypeVar, Union

import numpy as np
import numpy.typing as npt

from ..errors import MetadataError
from . import pcodec, zfpy  # noqa: F401  (registers the v2 ids)
from .base import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    BytesBytesCodec,
    BytesLike,
    ChunkSpec,
    Codec,
    CodecJSON,
)
from .numcodecs_filters import QuantizeFilter, V2Filter
from .registry import codec_from_v2, register_codec

__all__ = [
    "ARRAY_TO_ARRAY",
    "ARRAY_TO_BYTES",
    "BYTES_TO_BYTES",
    "NumcodecsBytesCodec",
    "NumcodecsFilter",
    "NumcodecsSerializer",
    "PREFIX",
]

PREFIX = "numcodecs."
ARRAY_TO_ARRAY = ("delta", "bitround", "fixedscaleoffset", "quantize", "packbits", "astype")
ARRAY_TO_BYTES = ("pcodec", "zfpy")
BYTES_TO_BYTES = (
    "blosc",
    "zstd",
    "zlib",
    "gzip",
    "lz4",
    "bz2",
    "lzma",
    "shuffle",
    "crc32",
    "crc32c",
    "adler32",
    "fletcher32",
    "jenkins_lookup3",
)
# Parameters zarr-python fills in from the data type when missing, and how.
_FROM_DTYPE: dict[str, tuple[str, Callable[[np.dtype[Any]], object]]] = {
    "fixedscaleoffset": ("dtype", str),
    "quantize": ("dtype", str),
    "astype": ("decode_dtype", str),
    "shuffle": ("elementsize", lambda dtype: dtype.itemsize),
}
_BYTES_SPEC = ChunkSpec((0,), np.dtype(np.uint8))

_N = TypeVar("_N", bound="_NumcodecsV3")


class _NumcodecsV3:
    """What every `numcodecs.<id>` codec shares: its name, stored configuration and the
    zarrcore codec built from that configuration (None until the data type fills it in)."""

    def __init__(self, codec_id: str, configuration: CodecJSON) -> None:
        self.codec_id = codec_id
        self.name = PREFIX + codec_id
        self._config = dict(configuration)
        self.codec = self._build(self._config) if self._complete(self._config) else None

    @classmethod
    def from_config(cls: type[_N], codec_id: str, configuration: CodecJSON | None) -> _N:
        return cls(codec_id, configuration or {})

    def configuration(self) -> CodecJSON:
        return dict(self._config)

    @property
    def verifies_integrity(self) -> bool:
        return self.codec is not None and self.codec.verifies_integrity

    def to_json(self) -> CodecJSON:
        # zarr-python writes "configuration" even when it is empty.
        return {"name": self.name, "configuration": self.configuration()}

    def _complete(self, config: CodecJSON) -> bool:
        field = _FROM_DTYPE.get(self.codec_id, (None,))[0]
        return field is None or config.get(field) is not None

    def _filled(self, spec: ChunkSpec) -> CodecJSON:
        """The configuration with the parameters taken from the array's data type filled in."""
        if self._complete(self._config):
            return self._config
        field, value = _FROM_DTYPE[self.codec_id]
        return {**self._config, field: value(np.dtype(spec.array_dtype))}

    def _build(self, config: CodecJSON) -> Codec:
        if "id" in config:
            raise MetadataError(f"{self.name}: the configuration must not hold an 'id'")
        return codec_from_v2({"id": self.codec_id, **config}, self.name)


# The ignores: _NumcodecsV3.from_config takes the id first, and its `name` is always a str.
class NumcodecsFilter(_NumcodecsV3, ArrayArrayCodec):  # type: ignore[misc]
    """A numcodecs filter as an array->array codec; the encoded chunk keeps its shape when it
    keeps its number of items."""

    def resolve(self, spec: ChunkSpec) -> "NumcodecsFilter":
        codec = self if self.codec is not None else type(self)(self.codec_id, self._filled(spec))
        quantize = codec.codec
        if isinstance(quantize, QuantizeFilter) and quantize.astype != quantize.dtype:
            # zarr-python keeps the decoded dtype for quantize's output, so it can neither
            # write nor read a different astype.
            raise MetadataError(
                f"{self.name}: astype {quantize.astype} differs from dtype {quantize.dtype}"
            )
        return codec

    @property
    def _filter(self) -> V2Filter:
        """The numcodecs filter, once the data type completed its configuration."""
        assert isinstance(self.codec, V2Filter)  # ARRAY_TO_ARRAY names filters only
        return self.codec

    def v2_filter(self) -> CodecJSON:
        return {"id": self.codec_id, **self.configuration()}

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        items = math.prod(spec.shape)
        count, dtype = self._filter.encoded_layout(items, np.dtype(spec.dtype))
        return spec.evolve(shape=tuple(spec.shape) if count == items else (count,), dtype=dtype)

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        return self._filter.encode(array, spec).reshape(self.encoded_spec(spec).shape)

    def decode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        return self._filter.decode(array, spec)


class NumcodecsBytesCodec(_NumcodecsV3, BytesBytesCodec):  # type: ignore[misc]  # as above
    """A numcodecs compressor, shuffle or checksum as a bytes->bytes codec. Resolved, it is the
    zarrcore codec itself, stored under this name (so zstd, gzip, zlib and blosc stay on the
    compiled batch paths)."""

    def resolve(self, spec: ChunkSpec) -> BytesBytesCodec:
        config = self._filled(spec)
        built = self._build(config)  # a new one: it takes this codec's name below
        if isinstance(built, V2Filter):
            built = built.as_bytes_codec()
        assert isinstance(built, BytesBytesCodec)  # BYTES_TO_BYTES names no other kind
        # numcodecs receives the serialized chunk as bytes (typesize 1 for blosc).
        codec = built.resolve(_BYTES_SPEC)
        codec.name = self.name
        codec.stored_json = {"name": self.name, "configuration": dict(config)}
        return codec

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return self.resolve(spec).encode(data, spec)

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return self.resolve(spec).decode(data, spec)


class NumcodecsSerializer(_NumcodecsV3, ArrayBytesCodec):  # type: ignore[misc]  # as above
    """pcodec or zfpy as the array->bytes codec. Resolved, it is the zarrcore codec itself,
    stored under this name."""

    def resolve(self, spec: ChunkSpec) -> ArrayBytesCodec:
        built = self._build(self._config)
        assert isinstance(built, ArrayBytesCodec)  # ARRAY_TO_BYTES names serializers only
        codec = built.resolve(spec)
        codec.name = self.name
        codec.stored_json = self.to_json()
        return codec

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        return self.resolve(spec).encode(array, spec)

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        return self.resolve(spec).decode(data, spec, out)


_NumcodecsClass = Union[type[NumcodecsFilter], type[NumcodecsBytesCodec], type[NumcodecsSerializer]]


class _Factory:
    """The registry entry of one `numcodecs.<id>` name."""

    def __init__(self, cls: _NumcodecsClass, codec_id: str) -> None:
        self.cls, self.codec_id = cls, codec_id

    def from_config(self, configuration: CodecJSON) -> Codec:
        return self.cls.from_config(self.codec_id, configuration)


for _id in ARRAY_TO_ARRAY:
    register_codec(_Factory(NumcodecsFilter, _id), name=PREFIX + _id)
for _id in ARRAY_TO_BYTES:
    register_codec(_Factory(NumcodecsSerializer, _id), name=PREFIX + _id)
for _id in BYTES_TO_BYTES:
    register_codec(_Factory(NumcodecsBytesCodec, _id), name=PREFIX + _id)
del _id
