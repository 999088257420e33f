"""The `crc32c` bytes->bytes codec: a 4-byte little-endian CRC-32C after the data."""
import numpy as np

from .. import _compress
from ..errors import ChecksumError, ChunkDecodeError
from .base import BytesBytesCodec
from .registry import register_codec


def _u8(buf):
    """A flat uint8 view of any C-contiguous buffer (numpy datetime arrays export none)."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise TypeError("crc32c codec: buffers must be C-contiguous")
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def _split(data):
    """The payload of `data` as a view, after verifying its checksum."""
    raw = _u8(data)
    if raw.nbytes < 4:
        raise ChunkDecodeError(f"crc32c codec: {raw.nbytes} bytes is too short to hold a checksum")
    payload = raw[:-4]
    stored = int.from_bytes(raw[-4:].tobytes(), "little")
    actual = _compress.crc32c(payload)
    if actual != stored:
        raise ChecksumError(f"crc32c codec: checksum mismatch (stored {stored:#010x}, computed {actual:#010x})")
    return payload


class Crc32cCodec(BytesBytesCodec):
    """Append a CRC-32C; decoding verifies it."""

    name = "crc32c"

    @classmethod
    def from_v2_config(cls, config):
        return cls(**config)

    def to_v2_json(self):
        return {"id": "crc32c"}

    def encode(self, data, spec):
        raw = _u8(data)
        out = np.empty(raw.nbytes + 4, dtype=np.uint8)
        out[:-4] = raw
        out[-4:] = np.frombuffer(_compress.crc32c(raw).to_bytes(4, "little"), dtype=np.uint8)
        return out

    def decode(self, data, spec):
        return _split(data)

    def decode_into(self, data, out, spec):
        payload = _split(data)
        target = _u8(out)
        if payload.nbytes != target.nbytes:
            raise ChunkDecodeError(f"crc32c codec: payload has {payload.nbytes} bytes, expected {target.nbytes}")
        target[...] = payload
        return payload.nbytes


register_codec(Crc32cCodec, v2_id="crc32c")
