"""numcodecs filters for Zarr v2 chains, with numcodecs' ids, configurations and encodings.

numcodecs filters see the chunk flattened in memory order and may change its length and
dtype. Here each is an array->array codec on 1-d arrays that states the encoded length and
dtype up front, so a chain knows every intermediate spec (and blosc its typesize).
`as_bytes_codec()` adapts one to follow a bytes->bytes codec in a filter list.
"""

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import filters as _filters
from ..errors import ChunkDecodeError, MetadataError
from .base import (
    ArrayArrayCodec,
    BytesBytesCodec,
    BytesLike,
    ChunkSpec,
    CodecJSON,
    NativeForm,
    NumcodecsForm,
)
from .bytes import BytesCodec, byte_order
from .registry import register_codec

__all__ = [
    "Adler32Filter",
    "AsTypeFilter",
    "BitRoundFilter",
    "CategorizeFilter",
    "Crc32Filter",
    "DeltaFilter",
    "FilterAsBytes",
    "FixedScaleOffsetFilter",
    "Fletcher32Filter",
    "JenkinsLookup3Filter",
    "PackBitsFilter",
    "QuantizeFilter",
    "ShuffleFilter",
    "V2Filter",
]

_U1 = np.dtype(np.uint8)


def _dtype(value: npt.DTypeLike, codec: str | None, field: str) -> np.dtype[Any]:
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError) as e:
        raise MetadataError(f"{codec} filter: invalid {field} {value!r}: {e}") from None
    if dtype.hasobject:
        raise MetadataError(f"{codec} filter: {field} must not be an object dtype")
    return dtype


def _number(value: float, codec: str | None, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetadataError(f"{codec} filter: {field} must be a number, got {value!r}")
    return value


def _int(value: int, codec: str | None, field: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise MetadataError(
            f"{codec} filter: {field} must be an integer >= {minimum}, got {value!r}"
        )
    return value


def _flat(array: npt.ArrayLike) -> npt.NDArray[Any]:
    return np.ascontiguousarray(array).reshape(-1)


def _raw(array: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """The bytes of an array as a flat uint8 view (datetimes and structs included)."""
    return _flat(array).view(_U1)


def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    native: np.dtype[Any] = dtype.newbyteorder("=")
    return native


class V2Filter(NumcodecsForm, ArrayArrayCodec):
    """A numcodecs filter; subclasses set `v2_id` and implement the flat hooks.

    `encoded_layout(count, dtype)` gives the encoded (length, dtype) of `count` items of
    `dtype`; `encode_flat` and `decode_flat` map flat arrays, as numcodecs' encode/decode do.
    """

    name = None  # v2 only: no v3 name

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        raise NotImplementedError

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        raise NotImplementedError

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        raise NotImplementedError

    def _items(self, count: int, dtype: np.dtype[Any], as_dtype: np.dtype[Any]) -> int:
        """How many `as_dtype` items the bytes of `count` `dtype` items make (numcodecs
        views)."""
        nbytes = count * dtype.itemsize
        if nbytes % as_dtype.itemsize:
            raise MetadataError(
                f"{self.v2_id} filter: {nbytes}-byte chunks are not a whole "
                f"number of {as_dtype} items"
            )
        return nbytes // as_dtype.itemsize

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        count, dtype = self.encoded_layout(math.prod(spec.shape), np.dtype(spec.dtype))
        return ChunkSpec((count,), dtype)

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        return self.encode_flat(_flat(array))

    def decode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> npt.NDArray[Any]:
        out = self.decode_flat(_flat(array))
        dtype = np.dtype(spec.dtype)
        if out.dtype != dtype:
            try:
                out = out.view(dtype)
            except TypeError:
                # Object labels back into a numpy string dtype: zarr-python casts too.
                out = out.astype(dtype)
            except ValueError:
                raise ChunkDecodeError(
                    f"{self.v2_id} filter: decoded {out.nbytes} bytes, not whole {dtype} items"
                ) from None
        if out.size != math.prod(spec.shape):
            raise ChunkDecodeError(
                f"{self.v2_id} filter: decoded {out.size} items, expected {math.prod(spec.shape)}"
            )
        return out.reshape(spec.shape)

    def as_bytes_codec(self) -> "FilterAsBytes":
        return FilterAsBytes(self)

    def bytes_form(self) -> NativeForm | None:
        """The compiled core's stage for this filter on the serialized items' bytes, when it
        runs it there (CodecChain.native_form), else None."""
        return None


class FilterAsBytes(BytesBytesCodec):
    """A V2Filter after a bytes->bytes codec: it gets and gives raw bytes, as in numcodecs."""

    name = None

    def __init__(self, filter: V2Filter) -> None:
        self.filter = filter

    @property
    def verifies_integrity(self) -> bool:
        return self.filter.verifies_integrity

    def to_v2_json(self) -> CodecJSON:
        return self.filter.to_v2_json()

    def native_form(self, spec: ChunkSpec) -> NativeForm | None:
        return self.filter.bytes_form()

    def encoded_bound(self, nbytes: int) -> int:
        try:
            count, dtype = self.filter.encoded_layout(nbytes, _U1)
        except MetadataError:  # not whole items of the filter's type: nothing encodes
            return nbytes
        return count * dtype.itemsize

    def encode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        return _raw(self.filter.encode_flat(np.frombuffer(data, dtype=_U1)))

    def decode(self, data: BytesLike, spec: ChunkSpec) -> BytesLike:
        try:
            return _raw(self.filter.decode_flat(np.frombuffer(data, dtype=_U1)))
        except ValueError as e:  # the bytes are not whole items of the filter's dtype
            if isinstance(e, ChunkDecodeError):
                raise
            raise ChunkDecodeError(f"{self.filter.v2_id} filter: {e}") from None


class _TypedFilter(V2Filter):
    """Filters configured with a decoded `dtype` and an encoded `astype` (default: dtype)."""

    def __init__(self, dtype: npt.DTypeLike, astype: npt.DTypeLike | None = None) -> None:
        self.dtype = _dtype(dtype, self.v2_id, "dtype")
        self.astype = self.dtype if astype is None else _dtype(astype, self.v2_id, "astype")

    def configuration(self) -> CodecJSON:
        return {"dtype": self.dtype.str, "astype": self.astype.str}

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        return self._items(count, dtype, self.dtype), self.astype


class DeltaFilter(_TypedFilter):
    """Differences of adjacent items, the first kept; the compiled kernel does the arithmetic."""

    v2_id = "delta"

    def __init__(self, dtype: npt.DTypeLike, astype: npt.DTypeLike | None = None) -> None:
        super().__init__(dtype, astype)
        # Timedeltas too, as numcodecs takes them (zarr 2 wrote them; datetimes fail there).
        if not (
            (self.dtype.kind in "iufc" and self.astype.kind in "iufc")
            or self.dtype.kind == self.astype.kind
            and self.dtype.kind in "bm"
        ):
            raise MetadataError(f"delta filter: unsupported dtypes {self.dtype} -> {self.astype}")

    @staticmethod
    def _compiled(dtype: np.dtype[Any]) -> bool:
        return dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize in (4, 8))

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        if self.dtype.kind == "b":
            raise MetadataError(
                "delta filter on bool: numcodecs decodes it as a running OR of the stored "
                "differences, not the data written, so zarrcore reads such arrays as numcodecs "
                "does but does not write them"
            )
        arr = array.view(self.dtype)
        if self._compiled(self.dtype):
            diff = _filters.delta_encode(arr.astype(_native(self.dtype)))
        else:
            diff = np.empty_like(arr)
            diff[:1] = arr[:1]
            diff[1:] = np.diff(arr)
        return diff.astype(self.astype, copy=False)

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        enc = array.view(self.astype)
        # Running sums in the decoded type agree with numpy's cumsum when both are integers
        # (both wrap) or both the same float; other mixes take numpy's own route.
        both_int = self.dtype.kind in "iu" and self.astype.kind in "iu"
        same_type = _native(self.dtype) == _native(self.astype)
        if self._compiled(self.dtype) and (both_int or same_type):
            dec: npt.NDArray[Any] = _filters.delta_decode(enc.astype(_native(self.dtype)))
            return dec.astype(self.dtype, copy=False)
        dec = np.empty(enc.shape, dtype=self.dtype)
        np.cumsum(enc, out=dec)
        return dec


class FixedScaleOffsetFilter(_TypedFilter):
    """round((x - offset) * scale), stored as `astype`."""

    v2_id = "fixedscaleoffset"

    def __init__(
        self, offset: float, scale: float, dtype: npt.DTypeLike, astype: npt.DTypeLike | None = None
    ) -> None:
        super().__init__(dtype, astype)
        self.offset = _number(offset, self.v2_id, "offset")
        self.scale = _number(scale, self.v2_id, "scale")

    def configuration(self) -> CodecJSON:
        return {"scale": self.scale, "offset": self.offset, **super().configuration()}

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        enc = np.around((array.view(self.dtype) - self.offset) * self.scale)
        return enc.astype(self.astype, copy=False)

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        dec = (array.view(self.astype) / self.scale) + self.offset
        return dec.astype(self.dtype, copy=False)


class QuantizeFilter(_TypedFilter):
    """Round floats to a power-of-two step finer than 10**-digits (lossy; decode only casts)."""

    v2_id = "quantize"

    def __init__(
        self, digits: int, dtype: npt.DTypeLike, astype: npt.DTypeLike | None = None
    ) -> None:
        super().__init__(dtype, astype)
        self.digits = _int(digits, self.v2_id, "digits", minimum=-(2**31))
        if self.dtype.kind != "f" or self.astype.kind != "f":
            raise MetadataError("quantize filter: only floating point dtypes are supported")
        # numcodecs' exact steps, so the rounding matches bit for bit.
        try:
            exp = math.log10(10.0**-self.digits)
            exp = math.floor(exp) if exp < 0 else math.ceil(exp)
            self._scale = 2.0 ** math.ceil(math.log2(10.0**-exp))
        except (OverflowError, ValueError):  # 10**-digits beyond what a double holds
            raise MetadataError(f"quantize filter: digits {digits} out of range") from None

    def configuration(self) -> CodecJSON:
        return {"digits": self.digits, **super().configuration()}

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        enc = np.around(self._scale * array.view(self.dtype)) / self._scale
        return enc.astype(self.astype, copy=False)

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return array.view(self.astype).astype(self.dtype, copy=False)


_MANTISSA_BITS = {2: 10, 4: 23, 8: 52}


class BitRoundFilter(V2Filter):
    """Round float mantissas to `keepbits` bits; stored as same-width integers."""

    v2_id = "bitround"

    def __init__(self, keepbits: int) -> None:
        self.keepbits = _int(keepbits, self.v2_id, "keepbits")

    def configuration(self) -> CodecJSON:
        return {"keepbits": self.keepbits}

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        if dtype.kind != "f" or dtype.itemsize not in _MANTISSA_BITS:
            raise MetadataError(
                f"bitround filter: only float16/32/64 data can be bit-rounded, not {dtype}"
            )
        bits = _MANTISSA_BITS[dtype.itemsize]
        if self.keepbits > bits:
            raise MetadataError(
                f"bitround filter: keepbits {self.keepbits} exceeds the {bits} bits of {dtype}"
            )
        # Keeping every bit passes the floats through unchanged, as numcodecs does.
        return count, dtype if self.keepbits == bits else np.dtype(dtype.str.replace("f", "i"))

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        bits = _MANTISSA_BITS[array.dtype.itemsize]
        if self.keepbits == bits:
            return array
        ints: npt.NDArray[Any] = array.view(array.dtype.str.replace("f", "i")).copy()
        maskbits = bits - self.keepbits
        mask = (np.array(-1, dtype=ints.dtype) >> maskbits) << maskbits
        half_quantum = (1 << (maskbits - 1)) - 1
        ints += ((ints >> maskbits) & 1) + half_quantum
        ints &= mask
        return ints

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return array  # the integers are the rounded floats' bits; decode() views them back


class AsTypeFilter(V2Filter):
    """Store `decode_dtype` data converted to `encode_dtype`."""

    v2_id = "astype"

    def __init__(self, encode_dtype: npt.DTypeLike, decode_dtype: npt.DTypeLike) -> None:
        self.encode_dtype = _dtype(encode_dtype, self.v2_id, "encode_dtype")
        self.decode_dtype = _dtype(decode_dtype, self.v2_id, "decode_dtype")

    def configuration(self) -> CodecJSON:
        return {"encode_dtype": self.encode_dtype.str, "decode_dtype": self.decode_dtype.str}

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        return self._items(count, dtype, self.decode_dtype), self.encode_dtype

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return array.view(self.decode_dtype).astype(self.encode_dtype)

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return array.view(self.encode_dtype).astype(self.decode_dtype)


class PackBitsFilter(V2Filter):
    """Booleans packed 8 to a byte after a byte counting the padding bits."""

    v2_id = "packbits"

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        nbits = count * dtype.itemsize
        return 1 + (nbits + 7) // 8, _U1

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        bits = array.view(np.bool_)
        out = np.empty(1 + (bits.size + 7) // 8, dtype=_U1)
        out[0] = -bits.size % 8
        out[1:] = np.packbits(bits)
        return out

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        enc = array.view(_U1)
        if enc.size < 1 or enc[0] > 7 or (enc[0] and enc.size < 2):
            raise ChunkDecodeError(f"packbits filter: invalid header in {enc.size} bytes")
        bits = np.unpackbits(enc[1:])
        return bits[: bits.size - int(enc[0])].view(np.bool_)


class CategorizeFilter(V2Filter):
    """Strings stored as 1-based indices into `labels`; 0 for anything else."""

    v2_id = "categorize"

    def __init__(
        self, labels: list[str], dtype: npt.DTypeLike, astype: npt.DTypeLike = "u1"
    ) -> None:
        self.dtype = np.dtype(dtype)
        if self.dtype.kind not in "UO":
            raise MetadataError(
                f"categorize filter: dtype must be unicode or object, got {self.dtype}"
            )
        if not isinstance(labels, (list, tuple)) or not all(isinstance(x, str) for x in labels):
            raise MetadataError(
                f"categorize filter: labels must be a list of strings, got {labels!r}"
            )
        self.labels = list(labels)
        self.astype = _dtype(astype, self.v2_id, "astype")

    def configuration(self) -> CodecJSON:
        return {"labels": self.labels, "dtype": self.dtype.str, "astype": self.astype.str}

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        return count, self.astype

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        values = (
            array if self.dtype.hasobject or array.dtype.kind in "OT" else array.view(self.dtype)
        )
        enc = np.zeros(values.shape, dtype=self.astype)
        for i, label in enumerate(self.labels):
            enc[values == label] = i + 1
        return enc

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        enc = array.view(self.astype)
        dec = np.full(enc.shape, "", dtype=self.dtype)
        for i, label in enumerate(self.labels):
            dec[enc == i + 1] = label
        return dec


class ShuffleFilter(V2Filter):
    """Byte shuffle: byte j of every item together, in the compiled kernel."""

    v2_id = "shuffle"

    def __init__(self, elementsize: int = 4) -> None:
        self.elementsize = _int(elementsize, self.v2_id, "elementsize")

    def configuration(self) -> CodecJSON:
        return {"elementsize": self.elementsize}

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        nbytes = count * dtype.itemsize
        if self.elementsize > 1 and nbytes % self.elementsize:
            raise MetadataError(
                f"shuffle filter: {nbytes}-byte chunks are not a multiple of "
                f"elementsize {self.elementsize}"
            )
        return nbytes, _U1

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        shuffled: npt.NDArray[Any] = _filters.shuffle(_raw(array), max(self.elementsize, 1))
        return shuffled

    def native_form(self, spec: ChunkSpec) -> NativeForm | None:
        """The chunk's items as they lie in memory, their bytes shuffled."""
        items = BytesCodec(byte_order(np.dtype(spec.dtype))).native_form(spec)
        return None if items is None else {**items, **self.bytes_form()}

    def bytes_form(self) -> NativeForm:
        return {"byte_shuffle": max(self.elementsize, 1)}

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        data = _raw(array)
        if self.elementsize > 1 and data.size % self.elementsize:
            raise ChunkDecodeError(
                f"shuffle filter: {data.size} bytes is not a multiple of {self.elementsize}"
            )
        unshuffled: npt.NDArray[Any] = _filters.unshuffle(data, max(self.elementsize, 1))
        return unshuffled


class _ChecksumFilter(V2Filter):
    """A 4-byte little-endian checksum framed around the data by the compiled kernel."""

    v2_id: str  # set by each subclass
    location = "start"
    verifies_integrity = True

    def __init__(self, location: str | None = None) -> None:
        if location not in (None, "start", "end"):
            raise MetadataError(
                f"{self.v2_id} filter: location must be 'start' or 'end', got {location!r}"
            )
        # numcodecs writes `location` only when it was given.
        self._location = location

    def configuration(self) -> CodecJSON:
        return {} if self._location is None else {"location": self._location}

    @property
    def at_end(self) -> bool:
        return (self._location or self.location) == "end"

    def _seed(self) -> tuple[int, bytes]:
        return 0, b""

    def encoded_layout(self, count: int, dtype: np.dtype[Any]) -> tuple[int, np.dtype[Any]]:
        return count * dtype.itemsize + 4, _U1

    def encode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        seed, prefix = self._seed()
        framed: npt.NDArray[Any] = _filters.checksum_frame(
            self.v2_id, _raw(array), self.at_end, seed, prefix
        )
        return framed

    def decode_flat(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        data = _raw(array)
        seed, prefix = self._seed()
        start: int = _filters.checksum_verify(self.v2_id, data, self.at_end, seed, prefix)
        return data[start : start + data.size - 4]


class Crc32Filter(_ChecksumFilter):
    v2_id = "crc32"


class Adler32Filter(_ChecksumFilter):
    v2_id = "adler32"


class Fletcher32Filter(_ChecksumFilter):
    v2_id = "fletcher32"
    location = "end"

    def __init__(self) -> None:
        super().__init__()


class JenkinsLookup3Filter(_ChecksumFilter):
    """lookup3 of prefix+data, seeded with `initval`; `prefix` is a list of byte values."""

    v2_id = "jenkins_lookup3"
    location = "end"

    def __init__(self, initval: int = 0, prefix: list[int] | None = None) -> None:
        super().__init__()
        self.initval = _int(initval, self.v2_id, "initval")
        if self.initval >= 2**32:
            raise MetadataError(f"jenkins_lookup3 filter: initval {initval} exceeds 32 bits")
        if prefix is not None and not (
            isinstance(prefix, list) and all(isinstance(b, int) and 0 <= b < 256 for b in prefix)
        ):
            raise MetadataError(
                f"jenkins_lookup3 filter: prefix must be null or a list of bytes, got {prefix!r}"
            )
        self.prefix = prefix

    def configuration(self) -> CodecJSON:
        return {"initval": self.initval, "prefix": self.prefix}

    def _seed(self) -> tuple[int, bytes]:
        return self.initval, bytes(self.prefix or b"")


for _cls in (
    DeltaFilter,
    FixedScaleOffsetFilter,
    QuantizeFilter,
    BitRoundFilter,
    AsTypeFilter,
    PackBitsFilter,
    CategorizeFilter,
    ShuffleFilter,
    Crc32Filter,
    Adler32Filter,
    Fletcher32Filter,
    JenkinsLookup3Filter,
):
    register_codec(_cls, v2_id=_cls.v2_id)
del _cls
