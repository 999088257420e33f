"""The `zstd` bytes->bytes codec (v3 `zstd`, v2 id `zstd`)."""

from .._native import compress as _compress
from ..errors import MetadataError
from .base import BytesBytesCodec, BytesLike, ChunkSpec, CodecJSON, NativeForm, decode_limit
from .registry import register_codec

__all__ = ["MAX_LEVEL", "MIN_LEVEL", "ZstdCodec"]

MIN_LEVEL, MAX_LEVEL = -131072, 22  # zstd 1.5's ZSTD_minCLevel / ZSTD_maxCLevel


class ZstdCodec(BytesBytesCodec):
    """Zstandard; level 0 is zstd's default (3), negative levels trade ratio for speed."""

    name = "zstd"

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        if (
            not isinstance(level, int)
            or isinstance(level, bool)
            or not MIN_LEVEL <= level <= MAX_LEVEL
        ):
            raise MetadataError(
                f"zstd codec: level must be an integer {MIN_LEVEL}..{MAX_LEVEL}, got {level!r}"
            )
        if not isinstance(checksum, bool):
            raise MetadataError(f"zstd codec: checksum must be a boolean, got {checksum!r}")
        self.level = level
        self.configured_level = level  # as stored; `level` is what compression uses
        self.checksum = checksum

    @classmethod
    def from_v2_config(cls, config: CodecJSON) -> "ZstdCodec":
        """From numcodecs' configuration (defaults: level 0, zstd's default, and no checksum),
        whose levels past zstd's range numcodecs clamps into it: the level matters only for
        writing, so data written with one must read."""
        level = config.get("level", 0)
        if isinstance(level, int) and not isinstance(level, bool):
            codec = cls(
                level=min(max(level, MIN_LEVEL), MAX_LEVEL), checksum=config.get("checksum", False)
            )
            codec.configured_level = level
            return codec
        return cls(level=level, checksum=config.get("checksum", False))

    @property
    def verifies_integrity(self) -> bool:
        """With `checksum`, frames carry a content checksum that decompression checks."""
        return self.checksum

    def configuration(self) -> CodecJSON:
        return {"level": self.configured_level, "checksum": self.checksum}

    def encoding_json(self) -> CodecJSON:
        return {"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}}

    def native_form(self, spec: ChunkSpec) -> NativeForm:
        return {"compressor": "zstd", "clevel": self.level, "checksum": self.checksum}

    def to_v2_json(self) -> CodecJSON:
        # zarr-python leaves out a false checksum, and tensorstore rejects the key.
        if self.checksum:
            return {"id": "zstd", "level": self.configured_level, "checksum": True}
        return {"id": "zstd", "level": self.configured_level}

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        compressed: bytes = _compress.zstd_compress(data, self.level, self.checksum)
        return compressed

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        decoded: bytes = _compress.zstd_decompress(data, max_size=decode_limit(spec))
        return decoded

    def decode_into(self, data: BytesLike, out: BytesLike, spec: ChunkSpec) -> int:
        _compress.zstd_decompress(data, out)
        nbytes: int = _compress.buffer_nbytes(out)
        return nbytes


register_codec(ZstdCodec, v2_id="zstd")
