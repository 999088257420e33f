"""numcodecs' `lz4` codec (v2 only): size prefix + LZ4 block."""

from .._native import compress as _compress
from ..errors import MetadataError
from .base import BytesBytesCodec, BytesLike, ChunkSpec, CodecJSON, decode_limit
from .registry import register_codec

__all__ = ["LZ4Codec"]


class LZ4Codec(BytesBytesCodec):
    """LZ4 block with a 4-byte little-endian decoded-size prefix; there is no v3 name."""

    name = None

    def __init__(self, acceleration: int = 1) -> None:
        if not isinstance(acceleration, int) or isinstance(acceleration, bool):
            raise MetadataError(f"lz4 codec: acceleration must be an integer, got {acceleration!r}")
        self.acceleration = acceleration

    @classmethod
    def from_v2_config(cls, config: CodecJSON) -> "LZ4Codec":
        return cls(acceleration=config.get("acceleration", 1))

    def configuration(self) -> CodecJSON:
        return {"acceleration": self.acceleration}

    def to_v2_json(self) -> CodecJSON:
        return {"id": "lz4", "acceleration": self.acceleration}

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        compressed: bytes = _compress.lz4_compress(data, self.acceleration)
        return compressed

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        decoded: bytes = _compress.lz4_decompress(data, max_size=decode_limit(spec))
        return decoded

    def decode_into(self, data: BytesLike, out: BytesLike, spec: ChunkSpec) -> int:
        _compress.lz4_decompress(data, out)
        nbytes: int = _compress.buffer_nbytes(out)
        return nbytes


register_codec(LZ4Codec, v2_id="lz4")
