"""The `crc32c` bytes->bytes codec: a 4-byte little-endian CRC-32C after the data."""

import numpy as np
import numpy.typing as npt

from .._native import compress as _compress
from ..errors import ChecksumError, ChunkDecodeError, MetadataError
from .base import BytesBytesCodec, BytesLike, ChunkSpec, CodecJSON, NativeForm
from .registry import register_codec

__all__ = ["Crc32cAtStartCodec", "Crc32cCodec"]


def _u8(buf: BytesLike) -> npt.NDArray[np.uint8]:
    """A flat uint8 view of any C-contiguous buffer (numpy datetime arrays export none)."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise TypeError("crc32c codec: buffers must be C-contiguous")
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def _split(data: BytesLike, at_start: bool = False) -> npt.NDArray[np.uint8]:
    """The payload of `data` as a view, after verifying its checksum (after it, or before it
    when `at_start`)."""
    raw = _u8(data)
    if raw.nbytes < 4:
        raise ChunkDecodeError(f"crc32c codec: {raw.nbytes} bytes is too short to hold a checksum")
    payload, checksum = (raw[4:], raw[:4]) if at_start else (raw[:-4], raw[-4:])
    stored = int.from_bytes(checksum.tobytes(), "little")
    actual = _compress.crc32c(payload)
    if actual != stored:
        raise ChecksumError(
            f"crc32c codec: checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
        )
    return payload


class Crc32cCodec(BytesBytesCodec):
    """Append a CRC-32C; decoding verifies it."""

    name: str | None = "crc32c"
    at_start = False
    verifies_integrity = True

    @classmethod
    def from_v2_config(cls, config: CodecJSON) -> "Crc32cCodec":
        """From numcodecs' configuration, whose `location` ("end" by default) may be "start"."""
        config = dict(config)
        location = config.pop("location", None)
        if config:
            raise MetadataError(f"crc32c codec: unknown parameters {sorted(config)}")
        if location not in (None, "start", "end"):
            raise MetadataError(
                f"crc32c codec: location must be 'start' or 'end', got {location!r}"
            )
        return Crc32cAtStartCodec() if location == "start" else cls()

    def to_v2_json(self) -> CodecJSON:
        return {"id": "crc32c", "location": "start"} if self.at_start else {"id": "crc32c"}

    def native_form(self, spec: ChunkSpec) -> NativeForm | None:
        """The compiled core checks a crc32c at the end only."""
        return None if self.at_start else {"crc32c": True}

    def encoded_bound(self, nbytes: int) -> int:
        return nbytes + 4

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        raw = _u8(data)
        out = np.empty(raw.nbytes + 4, dtype=np.uint8)
        payload, checksum = (out[4:], out[:4]) if self.at_start else (out[:-4], out[-4:])
        payload[...] = raw
        checksum[...] = np.frombuffer(_compress.crc32c(raw).to_bytes(4, "little"), dtype=np.uint8)
        return out

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return _split(data, self.at_start)

    def decode_into(self, data: BytesLike, out: BytesLike, spec: ChunkSpec) -> int:
        payload = _split(data, self.at_start)
        target = _u8(out)
        if payload.nbytes != target.nbytes:
            raise ChunkDecodeError(
                f"crc32c codec: payload has {payload.nbytes} bytes, expected {target.nbytes}"
            )

        target[...] = payload
        return payload.nbytes


class Crc32cAtStartCodec(Crc32cCodec):
    """numcodecs' crc32c with `location` "start": the checksum before the data. A class of
    its own, as the compiled batches run only the plain crc32c."""

    name = None  # no v3 form of its own
    at_start = True


register_codec(Crc32cCodec, v2_id="crc32c")
