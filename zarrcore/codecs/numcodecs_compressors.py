"""numcodecs' `bz2`, `lzma` and `base64` compressors (v2 only), over the Python standard
library, which releases the GIL while it works (bz2, lzma)."""

import base64
import binascii
import bz2
import lzma
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import ChunkDecodeError, MetadataError
from .base import (
    BytesBytesCodec,
    BytesLike,
    ChunkSpec,
    CodecJSON,
    NumcodecsForm,
    byte_view,
    decode_limit,
)
from .registry import register_codec

__all__ = ["BZ2Codec", "Base64Codec", "LZMACodec"]


class _Decompressor(Protocol):
    """What bz2.BZ2Decompressor and lzma.LZMADecompressor share."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: memoryview | bytes, max_length: int = -1) -> bytes: ...


def _decompress_bounded(
    make_decompressor: Callable[[], _Decompressor], data: BytesLike, limit: int, name: str
) -> bytes:
    """All streams in `data` through decompressors from `make_decompressor` (bz2, lzma), as
    bz2.decompress / lzma.decompress take them, failing as soon as the output passes `limit`
    bytes: a stream that inflates to gigabytes is never decoded first."""
    parts: list[bytes] = []
    size = 0
    rest: memoryview | bytes = byte_view(data)
    while True:
        decompressor = make_decompressor()
        part = decompressor.decompress(rest, max_length=limit - size + 1)
        size += len(part)
        if size > limit:
            raise ChunkDecodeError(
                f"{name} codec: the data decodes to more than the {limit} bytes this chunk may hold"
            )
        if not decompressor.eof:
            raise ChunkDecodeError(
                f"{name} codec: corrupt or truncated data: the stream does not end"
            )
        parts.append(part)
        rest = decompressor.unused_data
        if not rest:
            return b"".join(parts) if len(parts) > 1 else parts[0]


class BZ2Codec(NumcodecsForm, BytesBytesCodec):
    """bzip2 streams at `level` 1-9."""

    name = None
    v2_id = "bz2"
    verifies_integrity = True  # each block and the stream carry a CRC

    def __init__(self, level: int = 1) -> None:
        if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 9:
            raise MetadataError(f"bz2 codec: level must be an integer 1-9, got {level!r}")
        self.level = level

    def configuration(self) -> CodecJSON:
        return {"level": self.level}

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return bz2.compress(byte_view(data), self.level)

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        try:
            return _decompress_bounded(bz2.BZ2Decompressor, data, decode_limit(spec), "bz2")
        except (OSError, ValueError, EOFError) as e:
            if isinstance(e, ChunkDecodeError):
                raise
            raise ChunkDecodeError(f"bz2 codec: corrupt or truncated data: {e}") from None


class LZMACodec(NumcodecsForm, BytesBytesCodec):
    """lzma/xz streams; the parameters are those of `lzma.compress`, as numcodecs stores them."""

    name = None
    v2_id = "lzma"

    def __init__(
        self,
        format: int = 1,
        check: int = -1,
        preset: int | None = None,
        filters: list[dict[str, Any]] | None = None,
    ) -> None:
        for field, value in (("format", format), ("check", check)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise MetadataError(f"lzma codec: {field} must be an integer, got {value!r}")
        if preset is not None and (isinstance(preset, bool) or not isinstance(preset, int)):
            raise MetadataError(f"lzma codec: preset must be null or an integer, got {preset!r}")
        if filters is not None and not (
            isinstance(filters, list) and all(isinstance(f, dict) for f in filters)
        ):
            raise MetadataError(
                f"lzma codec: filters must be null or a list of objects, got {filters!r}"
            )
        self.format = format
        self.check = check
        self.preset = preset
        self.filters = filters

    @property
    def verifies_integrity(self) -> bool:
        """xz streams carry a check (CRC-64 by default) unless `check` is CHECK_NONE; the
        alone and raw formats carry none."""
        return self.format == lzma.FORMAT_XZ and self.check != lzma.CHECK_NONE

    def configuration(self) -> CodecJSON:
        return {
            "format": self.format,
            "check": self.check,
            "preset": self.preset,
            "filters": self.filters,
        }

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        try:
            return lzma.compress(
                byte_view(data),
                format=self.format,
                check=self.check,
                preset=self.preset,
                filters=self.filters,
            )
        except (lzma.LZMAError, ValueError, TypeError) as e:
            raise MetadataError(
                f"lzma codec: invalid parameters {self.configuration()}: {e}"
            ) from None

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        try:

            def decompressor() -> lzma.LZMADecompressor:
                return lzma.LZMADecompressor(format=self.format, filters=self.filters)

            return _decompress_bounded(decompressor, data, decode_limit(spec), "lzma")
        except (lzma.LZMAError, ValueError, TypeError, EOFError) as e:
            if isinstance(e, ChunkDecodeError):
                raise
            raise ChunkDecodeError(f"lzma codec: corrupt or truncated data: {e}") from None


class Base64Codec(NumcodecsForm, BytesBytesCodec):
    """Base64 text (RFC 4648's standard alphabet); decoding skips other characters, as
    numcodecs' does. The output is smaller than the input, so it needs no limit."""

    name = None
    v2_id = "base64"

    def encoded_bound(self, nbytes: int) -> int:
        return -(-nbytes // 3) * 4  # four characters per three bytes, the last padded

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return base64.standard_b64encode(byte_view(data).cast("B"))

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        try:
            return base64.standard_b64decode(byte_view(data).cast("B"))
        except (binascii.Error, ValueError) as e:
            raise ChunkDecodeError(f"base64 codec: corrupt data: {e}") from None


register_codec(BZ2Codec, v2_id="bz2")
register_codec(Base64Codec, v2_id="base64")
register_codec(LZMACodec, v2_id="lzma")
