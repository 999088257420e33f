"""Deflate codecs: `gzip` (v3 and v2) and numcodecs' `zlib` (v2 only)."""

from collections.abc import Callable

from .._native import compress as _compress
from ..errors import MetadataError
from .base import BytesBytesCodec, BytesLike, ChunkSpec, CodecJSON, NativeForm, decode_limit
from .registry import register_codec

__all__ = ["GzipCodec", "ZlibCodec"]


class _DeflateCodec(BytesBytesCodec):
    """A deflate stream at `level` 0-9 in the container of `v2_id` ("gzip" or "zlib"), which
    the subclass compresses with `_deflate` and decompresses with `_inflate`."""

    v2_id: str | None = None
    verifies_integrity = True  # inflate checks gzip's CRC-32 and length, zlib's Adler-32
    ZLIB_DEFAULT = -1  # numcodecs passes it on to zlib, which compresses at level 6
    _deflate: Callable[[BytesLike, int], bytes]
    _inflate: Callable[..., bytes]

    def __init__(self, level: int) -> None:
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 9:
            raise MetadataError(f"{self.v2_id} codec: level must be an integer 0-9, got {level!r}")
        self.level = level
        self.configured_level = level  # as stored; `level` is what compression uses

    @classmethod
    def from_v2_config(cls, config: CodecJSON) -> "_DeflateCodec":
        """From numcodecs' configuration, where level -1 (zlib's default) is valid too: the
        level matters only for writing, so data zarr 2 wrote with it must read."""
        level = config.get("level", 1)
        if level != cls.ZLIB_DEFAULT or isinstance(level, bool):
            return cls(level=level)
        codec = cls(level=6)
        codec.configured_level = level
        return codec

    def configuration(self) -> CodecJSON:
        return {"level": self.configured_level}

    def native_form(self, spec: ChunkSpec) -> NativeForm:
        return {"compressor": self.v2_id, "clevel": self.level}

    def to_v2_json(self) -> CodecJSON:
        return {"id": self.v2_id, "level": self.configured_level}

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return self._deflate(data, self.level)

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return self._inflate(data, max_size=decode_limit(spec))

    def decode_into(self, data: BytesLike, out: BytesLike, spec: ChunkSpec) -> int:
        self._inflate(data, out)
        nbytes: int = _compress.buffer_nbytes(out)
        return nbytes


class GzipCodec(_DeflateCodec):
    """gzip (RFC 1952) members."""

    name = "gzip"
    v2_id = "gzip"
    _deflate = staticmethod(_compress.gzip_compress)
    _inflate = staticmethod(_compress.gzip_decompress)

    def __init__(self, level: int = 6) -> None:
        super().__init__(level)

    def encoding_json(self) -> CodecJSON:
        return {"name": "gzip", "configuration": {"level": self.level}}


class ZlibCodec(_DeflateCodec):
    """zlib (RFC 1950) stream, numcodecs' `zlib`; there is no v3 name."""

    name = None
    v2_id = "zlib"
    _deflate = staticmethod(_compress.zlib_compress)
    _inflate = staticmethod(_compress.zlib_decompress)

    def __init__(self, level: int = 1) -> None:

        super().__init__(level)


register_codec(GzipCodec, v2_id="gzip")
register_codec(ZlibCodec, v2_id="zlib")
