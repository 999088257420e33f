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

import numpy as np

from ..errors import MetadataError
from . import pcodec, zfpy  # noqa: F401  (registers the v2 ids)
from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec
from .numcodecs_filters import V2Filter
from .registry import codec_from_v2, register_codec

PREFIX = "numcodecs."
ARRAY_TO_ARRAY = ("delta", "bitround", "fixedscaleoffset", "quantize", "packbits", "astype")
ARRAY_TO_BYTES = ("pcodec", "zfpy")
BYTES_TO_BYTES = ("blosc", "zstd", "zlib", "gzip", "lz4", "bz2", "lzma", "shuffle", "crc32",
                  "crc32c", "adler32", "fletcher32", "jenkins_lookup3")
# Parameters zarr-python fills in from the data type when missing, and how.
_FROM_DTYPE = {
    "fixedscaleoffset": ("dtype", str),
    "quantize": ("dtype", str),
    "astype": ("decode_dtype", str),
    "shuffle": ("elementsize", lambda dtype: dtype.itemsize),
}
_BYTES_SPEC = ChunkSpec((0,), np.dtype(np.uint8))


class _NumcodecsV3:
    """What every `numcodecs.<id>` codec shares: its name, stored configuration and the
    zarrcore codec built from that configuration (None until the data type fills it in)."""

    def __init__(self, codec_id, configuration):
        self.codec_id = codec_id
        self.name = PREFIX + codec_id
        self._config = dict(configuration)
        self.codec = self._build(self._config) if self._complete(self._config) else None

    @classmethod
    def from_config(cls, codec_id, configuration):
        return cls(codec_id, configuration or {})

    def configuration(self):
        return dict(self._config)

    @property
    def verifies_integrity(self):
        return self.codec is not None and self.codec.verifies_integrity

    def to_json(self):
        # zarr-python writes "configuration" even when it is empty.
        return {"name": self.name, "configuration": self.configuration()}

    def _complete(self, config):
        field = _FROM_DTYPE.get(self.codec_id, (None,))[0]
        return field is None or config.get(field) is not None

    def _filled(self, spec):
        """The configuration with the parameters taken from the array's data type filled in."""
        if self._complete(self._config):
            return self._config
        field, value = _FROM_DTYPE[self.codec_id]
        return {**self._config, field: value(np.dtype(spec.array_dtype))}

    def _build(self, config):
        if "id" in config:
            raise MetadataError(f"{self.name}: the configuration must not hold an 'id'")
        return codec_from_v2({"id": self.codec_id, **config}, self.name)


class NumcodecsFilter(_NumcodecsV3, ArrayArrayCodec):  # type: ignore[misc]  # from_config(id, ...)
    """A numcodecs filter as an array->array codec; the encoded chunk keeps its shape when it
    keeps its number of items."""

    def resolve(self, spec):
        codec = self if self.codec is not None else type(self)(self.codec_id, self._filled(spec))
        if codec.codec_id == "quantize" and codec.codec.astype != codec.codec.dtype:
            # zarr-python keeps the decoded dtype for quantize's output, so it can neither
            # write nor read a different astype.
            raise MetadataError(f"{self.name}: astype {codec.codec.astype} differs from dtype {codec.codec.dtype}")
        return codec

    def v2_filter(self):
        return {"id": self.codec_id, **self.configuration()}

    def encoded_spec(self, spec):
        items = math.prod(spec.shape)
        count, dtype = self.codec.encoded_layout(items, np.dtype(spec.dtype))
        return spec.evolve(shape=tuple(spec.shape) if count == items else (count,), dtype=dtype)

    def encode(self, array, spec):
        return self.codec.encode(array, spec).reshape(self.encoded_spec(spec).shape)

    def decode(self, array, spec):
        return self.codec.decode(array, spec)


class NumcodecsBytesCodec(_NumcodecsV3, BytesBytesCodec):  # type: ignore[misc]  # as above
    """A numcodecs compressor, shuffle or checksum as a bytes->bytes codec. Resolved, it is the
    zarrcore codec itself, stored under this name (so zstd, gzip, zlib and blosc stay on the
    compiled batch paths)."""

    def resolve(self, spec):
        config = self._filled(spec)
        codec = self._build(config)  # a new one: it takes this codec's name below
        if isinstance(codec, V2Filter):
            codec = codec.as_bytes_codec()
        # numcodecs receives the serialized chunk as bytes (typesize 1 for blosc).
        codec = codec.resolve(_BYTES_SPEC)
        codec.name = self.name
        codec.stored_json = {"name": self.name, "configuration": dict(config)}
        return codec

    def encode(self, data, spec):
        return self.resolve(spec).encode(data, spec)

    def decode(self, data, spec):
        return self.resolve(spec).decode(data, spec)


class NumcodecsSerializer(_NumcodecsV3, ArrayBytesCodec):  # type: ignore[misc]  # as above
    """pcodec or zfpy as the array->bytes codec. Resolved, it is the zarrcore codec itself,
    stored under this name."""

    def resolve(self, spec):
        codec = self._build(self._config).resolve(spec)
        codec.name = self.name
        codec.stored_json = self.to_json()
        return codec

    def encode(self, array, spec):
        return self.resolve(spec).encode(array, spec)

    def decode(self, data, spec, out=None):
        return self.resolve(spec).decode(data, spec, out)


class _Factory:
    """The registry entry of one `numcodecs.<id>` name."""

    def __init__(self, cls, codec_id):
        self.cls, self.codec_id = cls, codec_id

    def from_config(self, configuration):
        return self.cls.from_config(self.codec_id, configuration)


for _id in ARRAY_TO_ARRAY:
    register_codec(_Factory(NumcodecsFilter, _id), name=PREFIX + _id)
for _id in ARRAY_TO_BYTES:
    register_codec(_Factory(NumcodecsSerializer, _id), name=PREFIX + _id)
for _id in BYTES_TO_BYTES:
    register_codec(_Factory(NumcodecsBytesCodec, _id), name=PREFIX + _id)
del _id
