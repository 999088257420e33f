"""The codec interface, grouped as array->array, array->bytes and bytes->bytes."""

import copy
import math
from dataclasses import dataclass, replace
from typing import Any, TypeVar, Union

import numpy as np
import numpy.typing as npt

from ..errors import ChunkDecodeError, MetadataError
from ..runtime.config import Options, config, size_with_slack

__all__ = [
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BytesBytesCodec",
    "BytesLike",
    "ChunkSpec",
    "Codec",
    "CodecJSON",
    "ENCODED_BOUND",
    "NativeForm",
    "NumcodecsForm",
    "byte_view",
    "check_chunk_bytes",
    "decode_limit",
    "into",
    "stored_numbers",
]

#: The data bytes->bytes codecs take and give: bytes or a buffer of them, such as a memoryview
#: or a flat uint8 numpy array.
BytesLike = Union[bytes, bytearray, memoryview, "npt.NDArray[Any]"]
#: A codec's settings for the compiled core (Codec.native_form): ints, strings, bytes, flags.
NativeForm = dict[str, object]
#: A codec's JSON object (its v3 form, configuration or numcodecs form).
CodecJSON = dict[str, Any]

_C = TypeVar("_C", bound="Codec")


def byte_view(data: BytesLike) -> memoryview:
    """memoryview(data)."""
    return memoryview(data)


@dataclass(frozen=True)
class ChunkSpec:
    """What a codec is told about the chunk it transforms.

    `dtype` is the in-memory numpy dtype (native byte order for numbers);
    `order` is the memory layout the decoded chunk has ("C" or "F"); `array_dtype` is the
    array's dtype (default `dtype`), which stays when a codec changes `dtype`: zarr-python
    fills in array-dependent codec parameters, such as the bytes codec's endian, from it.
    bytes->bytes decoders fail rather than produce more than `max_bytes` (None: see
    `decode_limit`). `write_empty_chunks` is the array's own setting (None: follow
    `zarrcore.config`); `writes_empty` resolves it. `options` are the array's own options
    of how it runs (the sharding codec's write order and coalescing).
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fill_value: object = None
    order: str = "C"
    array_dtype: np.dtype[Any] | None = None
    max_bytes: int | None = None
    write_empty_chunks: bool | None = None
    options: Options = config

    def __post_init__(self) -> None:
        if self.array_dtype is None:
            object.__setattr__(self, "array_dtype", np.dtype(self.dtype))

    @property
    def writes_empty(self) -> bool:
        """Are chunks that hold only the fill value stored (else deleted or left out)?"""
        if self.write_empty_chunks is None:
            return config.write_empty_chunks
        return self.write_empty_chunks

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def evolve(self, **changes: Any) -> "ChunkSpec":
        return replace(self, **changes)


def stored_numbers(dtype: npt.DTypeLike) -> np.dtype[Any]:
    """The numbers a numcodecs codec sees for items of `dtype`: datetimes and timedeltas as
    int64 (numcodecs views them so), other types as they are."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int64).newbyteorder(dtype.byteorder) if dtype.kind in "mM" else dtype


def check_chunk_bytes(shape: tuple[int, ...], dtype: npt.DTypeLike, what: str) -> None:
    """Refuse chunks (of `shape` and `dtype`, described by `what`) larger than
    config.max_chunk_bytes: decoding one allocates that much."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > config.max_chunk_bytes:
        raise MetadataError(
            f"{what} of shape {tuple(shape)} and {np.dtype(dtype)} take {nbytes} bytes, more "
            f"than config.max_chunk_bytes ({config.max_chunk_bytes}); raise it with "
            f"zarrcore.config.set(max_chunk_bytes=...) or ZARRCORE_MAX_CHUNK_BYTES"
        )


# What bounds the size of a stored chunk (CodecChain.max_encoded_bytes), for errors.
ENCODED_BOUND = (
    "a valid chunk of the array's codecs takes (config.max_chunk_bytes bounds "
    "codecs whose output has no fixed size)"
)


def decode_limit(spec: ChunkSpec) -> int:
    """The most bytes a bytes->bytes decoder may produce for a chunk of `spec`; data that would
    decode to more is refused before it is decoded in full."""
    if spec.max_bytes is not None:
        return spec.max_bytes
    return config.max_stored_bytes


class Codec:
    """A codec: `name` is its v3 name, `configuration()` its v3 configuration.

    `stored_json`, when set, is the v3 JSON the codec is stored as instead: a built-in codec
    standing for another codec with the same encoding (numcodecs.zstd as zstd) keeps its own
    class, so the compiled paths that recognize that class still run it.

    `verifies_integrity`: decoding checks a checksum of the data it decodes, so a changed
    stored byte fails it rather than decoding to other values.

    `native_form(spec)`: the compiled core's description of the codec (the settings of
    zarrcore._native.batch and chunk_jobs for it) as it sees chunks of `spec`; None when the
    core does not run it. CodecChain.native_form composes them.
    """

    name: str | None = None
    kind: str | None = None
    stored_json: CodecJSON | None = None

    @property
    def verifies_integrity(self) -> bool:
        return False

    @classmethod
    def from_config(cls: type[_C], configuration: CodecJSON | None) -> _C:
        return cls(**(configuration or {}))

    def native_form(self, spec: ChunkSpec) -> NativeForm | None:
        return None

    def encoding_json(self) -> CodecJSON:
        """The v3 JSON of the encoding the codec applies: to_json(), with what it runs (such
        as a level clamped into range) where that differs from what was configured."""
        return self.to_json()

    def configuration(self) -> CodecJSON:
        return {}

    def to_json(self) -> CodecJSON:
        if self.stored_json is not None:
            return copy.deepcopy(self.stored_json)
        if self.name is None and hasattr(self, "to_v2_json"):
            v2_json: CodecJSON = self.to_v2_json()  # a codec of v2 arrays only: numcodecs form
            return v2_json
        config = self.configuration()
        return {"name": self.name, "configuration": config} if config else {"name": self.name}

    def resolve(self, spec: ChunkSpec) -> "Codec":
        """Return a copy of this codec with array-dependent defaults filled in (e.g. blosc
        typesize)."""
        return self

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Codec)
            and type(self) is type(other)
            and self.to_json() == other.to_json()
        )

    def __hash__(self) -> int:
        return hash(repr(self.to_json()))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.configuration().items())
        return f"{type(self).__name__}({args})"


class NumcodecsForm(Codec):
    """A codec stored in v2 metadata as numcodecs stores it: its `v2_id` beside its
    configuration, taken back as keyword arguments."""

    v2_id: str | None = None

    @classmethod
    def from_v2_config(cls: type[_C], config: CodecJSON) -> _C:
        return cls(**config)

    def to_v2_json(self) -> CodecJSON:
        return {"id": self.v2_id, **self.configuration()}


class ArrayArrayCodec(Codec):
    kind = "array_to_array"

    def resolve(self, spec: ChunkSpec) -> "ArrayArrayCodec":
        return self

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        """The ChunkSpec of the encoded array, given the decoded one."""
        return spec

    def v2_filter(self) -> CodecJSON | None:
        """The v2 JSON of the numcodecs filter this codec is in v3 metadata; None otherwise."""
        return None

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        raise NotImplementedError

    def decode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        """Invert encode; `spec` is the decoded spec."""
        raise NotImplementedError


def into(array: npt.NDArray[Any], out: npt.NDArray[Any] | None) -> npt.NDArray[Any]:
    """What ArrayBytesCodec.decode returns: `array`, or `out` filled with it when given."""
    if out is None:
        return array
    out[...] = array
    return out


class ArrayBytesCodec(Codec):
    kind = "array_to_bytes"

    def resolve(self, spec: ChunkSpec) -> "ArrayBytesCodec":
        return self

    def encoded_nbytes(self, spec: ChunkSpec) -> int | None:
        """The size of every encoded chunk of `spec` when it is fixed, else None."""
        return None

    def encodes_memory_layout(self, spec: ChunkSpec) -> bool:
        """Is an encoded chunk of `spec` its items as they lie in memory (C order)?"""
        return False

    def stored_bound(self) -> int | None:
        """The most bytes a valid stored object of this (resolved) codec takes, where the
        codec bounds them itself because it reads and rewrites parts of them (a shard: its
        index and every inner chunk at their most); None for the others."""
        return None

    def v2_form(self, dtype: npt.DTypeLike) -> tuple[CodecJSON | None, np.dtype[Any]] | None:
        """How v2 metadata stores this encoding of items of `dtype`: (the v2 JSON of the
        object codec that leads the filters, or None; the stored dtype). None when v2 has no
        form of it."""
        return None

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        """Serialize `array` (shape and dtype of `spec`) to a bytes-like object."""
        raise NotImplementedError

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        """Deserialize to an array of `spec`; when `out` is given (C-contiguous, spec's shape
        and dtype) fill it and return it."""
        raise NotImplementedError


class BytesBytesCodec(Codec):
    kind = "bytes_to_bytes"

    def resolve(self, spec: ChunkSpec) -> "BytesBytesCodec":
        return self

    def encoded_bound(self, nbytes: int) -> int:
        """The most bytes `encode` makes of `nbytes`: by default what a compressor or a
        checksum may add (`size_with_slack`); codecs that add more, or a known amount, say
        so."""
        return size_with_slack(nbytes)

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        raise NotImplementedError

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        raise NotImplementedError

    def decode_into(self, data: BytesLike, out: BytesLike, spec: ChunkSpec) -> int:
        """Decode into the writable buffer `out` when the decoded size is known; return the
        number of bytes written. The default goes through `decode`."""
        decoded = byte_view(self.decode(data, spec)).cast("B")
        target = byte_view(out).cast("B")
        if decoded.nbytes != target.nbytes:
            raise ChunkDecodeError(
                f"{self.name}: decoded {decoded.nbytes} bytes, expected {target.nbytes}"
            )
        target[:] = decoded
        return decoded.nbytes
