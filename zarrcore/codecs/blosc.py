"""The `blosc` bytes->bytes codec (v3 `blosc`, v2 id `blosc`)."""

import numpy as np

from .._native import compress as _compress
from ..errors import MetadataError
from .base import BytesBytesCodec, BytesLike, ChunkSpec, CodecJSON, NativeForm, decode_limit
from .registry import register_codec

__all__ = ["BloscCodec", "CNAMES", "SHUFFLES"]

# snappy is valid metadata but absent from this build's c-blosc; encoding it fails.
CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy")
_AVAILABLE = frozenset(CNAMES) - {"snappy"}
SHUFFLES = ("noshuffle", "shuffle", "bitshuffle")  # index = c-blosc / numcodecs code


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


class BloscCodec(BytesBytesCodec):
    """Blosc meta-compressor. `shuffle=None` (v2's -1) picks bitshuffle for 1-byte types and
    byte shuffle otherwise; `typesize=None` takes the dtype's itemsize. Both are fixed by
    `resolve`."""

    name = "blosc"

    def __init__(
        self,
        cname: str = "zstd",
        clevel: int = 5,
        shuffle: str | None = None,
        typesize: int | None = None,
        blocksize: int = 0,
    ) -> None:
        if cname not in CNAMES:
            raise MetadataError(f"blosc codec: cname must be one of {CNAMES}, got {cname!r}")
        if not _is_int(clevel) or not 0 <= clevel <= 9:
            raise MetadataError(f"blosc codec: clevel must be an integer 0-9, got {clevel!r}")
        if shuffle is not None and shuffle not in SHUFFLES:
            raise MetadataError(f"blosc codec: shuffle must be one of {SHUFFLES}, got {shuffle!r}")
        if typesize is not None and (not _is_int(typesize) or typesize < 1):
            raise MetadataError(
                f"blosc codec: typesize must be a positive integer, got {typesize!r}"
            )
        if not _is_int(blocksize) or blocksize < 0:
            raise MetadataError(
                f"blosc codec: blocksize must be a non-negative integer, got {blocksize!r}"
            )
        self.cname = cname
        self.clevel = int(clevel)
        self.shuffle = shuffle
        self.typesize = None if typesize is None else int(typesize)
        self.blocksize = int(blocksize)

    @classmethod
    def from_v2_config(cls, config: CodecJSON) -> "BloscCodec":
        """From numcodecs' configuration; what it leaves out takes numcodecs' defaults."""
        config = dict(config)
        shuffle = config.pop("shuffle", 1)
        if not _is_int(shuffle) or shuffle not in (-1, 0, 1, 2):
            raise MetadataError(f"blosc: shuffle must be -1, 0, 1 or 2, got {shuffle!r}")
        return cls(
            cname=config.pop("cname", "lz4"),
            shuffle=None if shuffle == -1 else SHUFFLES[shuffle],
            **config,
        )

    def configuration(self) -> CodecJSON:
        config = {
            "typesize": self.typesize,
            "cname": self.cname,
            "clevel": self.clevel,
            "shuffle": self.shuffle,
            "blocksize": self.blocksize,
        }
        return {k: v for k, v in config.items() if v is not None}

    def to_v2_json(self) -> CodecJSON:
        shuffle = -1 if self.shuffle is None else SHUFFLES.index(self.shuffle)
        return {
            "id": "blosc",
            "cname": self.cname,
            "clevel": self.clevel,
            "shuffle": shuffle,
            "blocksize": self.blocksize,
        }

    def native_form(self, spec: ChunkSpec) -> NativeForm:
        codec = self.resolve(spec)
        return {
            "compressor": "blosc",
            "clevel": codec.clevel,
            "cname": codec.cname,
            "shuffle": SHUFFLES.index(codec.shuffle),
            "typesize": codec.typesize,
            "blocksize": codec.blocksize,
        }

    def resolve(self, spec: ChunkSpec) -> "BloscCodec":
        dtype = np.dtype(spec.dtype)
        # After vlen-utf8/vlen-bytes the data is a byte stream: typesize 1, as zarr-python has it.
        typesize = self.typesize or (1 if dtype.kind in "OT" else dtype.itemsize)
        shuffle = self.shuffle or ("bitshuffle" if typesize == 1 else "shuffle")
        if typesize == self.typesize and shuffle == self.shuffle:
            return self
        return BloscCodec(self.cname, self.clevel, shuffle, typesize, self.blocksize)

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        if self.cname not in _AVAILABLE:
            raise MetadataError(f"blosc codec: cname {self.cname!r} is not available in this build")
        codec = self.resolve(spec)
        assert codec.typesize is not None  # (resolve sets it)
        compressed: bytes = _compress.blosc_compress(
            data,
            codec.typesize,
            codec.clevel,
            SHUFFLES.index(codec.shuffle),
            codec.cname,
            codec.blocksize,
        )
        return compressed

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        decoded: bytes = _compress.blosc_decompress(data, max_size=decode_limit(spec))
        return decoded

    def decode_into(self, data: BytesLike, out: BytesLike, spec: ChunkSpec) -> int:
        _compress.blosc_decompress(data, out)
        nbytes: int = _compress.buffer_nbytes(out)
        return nbytes


register_codec(BloscCodec, v2_id="blosc")
