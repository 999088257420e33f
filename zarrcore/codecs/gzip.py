"""Deflate codecs: `gzip` (v3 and v2) and numcodecs' `zlib` (v2 only)."""
from .. import _compress
from ..errors import MetadataError
from .base import BytesBytesCodec
from .registry import register_codec


def _level(codec, level):
    if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 9:
        raise MetadataError(f"{codec} codec: level must be an integer 0-9, got {level!r}")
    return level


class GzipCodec(BytesBytesCodec):
    """gzip (RFC 1952) members."""

    name = "gzip"

    def __init__(self, level=6):
        self.level = _level("gzip", level)

    @classmethod
    def from_v2_config(cls, config):
        return cls(level=config.get("level", 1))

    def configuration(self):
        return {"level": self.level}

    def to_v2_json(self):
        return {"id": "gzip", "level": self.level}

    def encode(self, data, spec):
        return _compress.gzip_compress(data, self.level)

    def decode(self, data, spec):
        return _compress.gzip_decompress(data)

    def decode_into(self, data, out, spec):
        _compress.gzip_decompress(data, out)
        return _compress.buffer_nbytes(out)


class ZlibCodec(BytesBytesCodec):
    """zlib (RFC 1950) stream, numcodecs' `zlib`; there is no v3 name."""

    name = None

    def __init__(self, level=1):
        self.level = _level("zlib", level)

    @classmethod
    def from_v2_config(cls, config):
        return cls(level=config.get("level", 1))

    def configuration(self):
        return {"level": self.level}

    def to_v2_json(self):
        return {"id": "zlib", "level": self.level}

    def encode(self, data, spec):
        return _compress.zlib_compress(data, self.level)

    def decode(self, data, spec):
        return _compress.zlib_decompress(data)

    def decode_into(self, data, out, spec):
        _compress.zlib_decompress(data, out)
        return _compress.buffer_nbytes(out)


register_codec(GzipCodec, v2_id="gzip")
register_codec(ZlibCodec, v2_id="zlib")
