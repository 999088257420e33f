"""numcodecs' `lz4` codec (v2 only): size prefix + LZ4 block."""
from .. import _compress
from ..errors import MetadataError
from .base import BytesBytesCodec, decode_limit
from .registry import register_codec


class LZ4Codec(BytesBytesCodec):
    """LZ4 block with a 4-byte little-endian decoded-size prefix; there is no v3 name."""

    name = None

    def __init__(self, acceleration=1):
        if not isinstance(acceleration, int) or isinstance(acceleration, bool):
            raise MetadataError(f"lz4 codec: acceleration must be an integer, got {acceleration!r}")
        self.acceleration = acceleration

    @classmethod
    def from_v2_config(cls, config):
        return cls(acceleration=config.get("acceleration", 1))

    def configuration(self):
        return {"acceleration": self.acceleration}

    def to_v2_json(self):
        return {"id": "lz4", "acceleration": self.acceleration}

    def encode(self, data, spec):
        return _compress.lz4_compress(data, self.acceleration)

    def decode(self, data, spec):
        return _compress.lz4_decompress(data, max_size=decode_limit(spec))

    def decode_into(self, data, out, spec):
        _compress.lz4_decompress(data, out)
        return _compress.buffer_nbytes(out)


register_codec(LZ4Codec, v2_id="lz4")
