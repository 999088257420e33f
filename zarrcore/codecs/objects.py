"""The object codecs of Zarr v2 arrays of Python objects: `json2`, `msgpack2`, `vlen-array`
and `pickle`, in numcodecs' formats.

json2 and msgpack2 store a chunk as one list: its items (nested lists for more than one
dimension), then the dtype string and the shape. vlen-array frames each item's raw bytes as
vlen-bytes does. Decoding a pickle runs code from the store, so it is refused unless
`zarrcore.config.allow_pickle` is set.
"""

import json
import math
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import filters as _filters
from ..errors import ChunkDecodeError, MetadataError, UnsafeCodecError
from ..runtime.config import config
from .base import ArrayBytesCodec, BytesLike, ChunkSpec, CodecJSON, NumcodecsForm, into
from .registry import register_codec

__all__ = ["JSONCodec", "MsgPackCodec", "PickleCodec", "VLenArrayCodec"]


def _chunk_items(items: list[Any], shape: tuple[int, ...], what: str | None) -> npt.NDArray[Any]:
    """The object array of `shape` made from `items`, nested as numpy's tolist() nests them."""
    out = np.empty(shape, dtype=object)
    if not shape:
        out[()] = items[0]
        return out
    level = [items]
    for axis, n in enumerate(shape):
        if not all(isinstance(x, list) and len(x) == n for x in level):
            raise ChunkDecodeError(
                f"{what}: items do not have the chunk's shape {tuple(shape)} (axis {axis})"
            )
        level = [item for x in level for item in x]
    # fromiter keeps list and dict items whole, where assigning the list would unpack them.
    out.reshape(-1)[:] = np.fromiter(level, dtype=object, count=len(level))
    return out


class _ObjectCodec(NumcodecsForm, ArrayBytesCodec):
    """An object codec of v2 arrays only: known by its numcodecs id, for object data types."""

    name = None

    def resolve(self, spec: ChunkSpec) -> "_ObjectCodec":
        if np.dtype(spec.dtype).kind != "O":
            raise MetadataError(f"{self.v2_id} codec: needs an object data type, not {spec.dtype}")
        return self


def _typed_items(items: list[Any], spec: ChunkSpec, what: str | None) -> npt.NDArray[Any]:
    """A chunk of a data type other than objects from json2's or msgpack2's [items..., dtype
    string, shape], as zarr 2.18 reads it: numcodecs' array of the stored dtype and shape,
    viewed as the array's dtype and reshaped to the chunk's."""
    try:
        stored = np.dtype(items[-2])
        if stored.hasobject:
            raise TypeError("the stored dtype is an object dtype")
        decoded = np.empty(tuple(items[-1]), dtype=stored)
        decoded[...] = items[:-2] if items[-1] else items[0]
        return decoded.reshape(-1).view(spec.dtype).reshape(spec.shape)
    except (TypeError, ValueError, IndexError, OverflowError) as e:
        raise ChunkDecodeError(
            f"{what}: the chunk's items do not make a chunk of "
            f"{np.dtype(spec.dtype)} and shape {tuple(spec.shape)}: {e}"
        ) from None


class _ListCodec(_ObjectCodec):
    """json2 and msgpack2: a chunk as [items..., dtype string, shape], which the subclass
    serializes with `_dumps` and parses with `_loads`. zarr 2 let them serialize any data
    type, not only objects (numcodecs stores each chunk's dtype with its items)."""

    _dumps: Callable[[list[Any]], bytes]
    _loads: Callable[[bytes], Any]

    def resolve(self, spec: ChunkSpec) -> "_ObjectCodec":
        return self

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        items: list[Any] = np.atleast_1d(array).tolist()
        return self._dumps(items + [array.dtype.str, list(array.shape)])

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        try:
            items = self._loads(bytes(data))
        except Exception as e:  # each library has its own errors for garbage
            raise ChunkDecodeError(f"{self.v2_id}: cannot decode the chunk: {e}") from None
        objects = np.dtype(spec.dtype).kind == "O"
        if (
            not isinstance(items, list)
            or len(items) < 2
            or not isinstance(items[-1], list)
            or objects
            and list(items[-1]) != list(spec.shape)
        ):
            raise ChunkDecodeError(
                f"{self.v2_id}: the chunk does not end with the chunk's shape {list(spec.shape)}"
            )
        if not objects:
            return into(_typed_items(items, spec, self.v2_id), out)
        array = _chunk_items(items[:-2], tuple(spec.shape), self.v2_id)
        return into(array, out)


class JSONCodec(_ListCodec):
    """`json2`: the items as JSON text, with json.JSONEncoder's options."""

    v2_id = "json2"

    def __init__(
        self,
        encoding: str = "utf-8",
        skipkeys: bool = False,
        ensure_ascii: bool = True,
        check_circular: bool = True,
        allow_nan: bool = True,
        indent: int | str | None = None,
        separators: Sequence[str] | None = (",", ":"),
        sort_keys: bool = True,
        strict: bool = True,
    ) -> None:
        self.encoding = encoding
        self.encoder_options: dict[str, Any] = dict(
            skipkeys=skipkeys,
            ensure_ascii=ensure_ascii,
            check_circular=check_circular,
            allow_nan=allow_nan,
            indent=indent,
            sort_keys=sort_keys,
            separators=None if separators is None else tuple(separators),
        )
        self.strict = strict
        self._encoder = json.JSONEncoder(**self.encoder_options)
        self._decoder = json.JSONDecoder(strict=strict)

    def configuration(self) -> CodecJSON:
        options = dict(self.encoder_options)
        separators = options["separators"]
        options["separators"] = None if separators is None else list(separators)
        return {"encoding": self.encoding, **options, "strict": self.strict}

    def _dumps(self, items: list[Any]) -> bytes:
        return self._encoder.encode(items).encode(self.encoding)

    def _loads(self, data: bytes) -> Any:
        return self._decoder.decode(data.decode(self.encoding))


class MsgPackCodec(_ListCodec):
    """`msgpack2`: the items as MessagePack (the optional dependency msgpack)."""

    v2_id = "msgpack2"

    def __init__(
        self, use_single_float: bool = False, use_bin_type: bool = True, raw: bool = False
    ) -> None:
        self.use_single_float, self.use_bin_type, self.raw = use_single_float, use_bin_type, raw

    def configuration(self) -> CodecJSON:
        return {
            "raw": self.raw,
            "use_single_float": self.use_single_float,
            "use_bin_type": self.use_bin_type,
        }

    @staticmethod
    def _msgpack() -> Any:  # the msgpack module, which has no type hints
        try:
            import msgpack
        except ImportError:
            raise MetadataError(
                'the msgpack2 codec needs msgpack: pip install "zarrcore[msgpack]"'
            ) from None
        return msgpack

    def resolve(self, spec: ChunkSpec) -> "_ObjectCodec":
        self._msgpack()
        return super().resolve(spec)

    def _dumps(self, items: list[Any]) -> bytes:
        packed: bytes = self._msgpack().packb(
            items, use_bin_type=self.use_bin_type, use_single_float=self.use_single_float
        )
        return packed

    def _loads(self, data: bytes) -> Any:
        return self._msgpack().unpackb(data, raw=self.raw)


class VLenArrayCodec(_ObjectCodec):
    """`vlen-array`: each item a 1-d array of `dtype`, framed as vlen-bytes frames bytes."""

    v2_id = "vlen-array"

    def __init__(self, dtype: npt.DTypeLike) -> None:
        try:
            self.dtype = np.dtype(dtype)
        except TypeError as e:
            raise MetadataError(f"vlen-array codec: invalid dtype {dtype!r}: {e}") from None
        if self.dtype.kind not in "biufcmM":
            raise MetadataError(f"vlen-array codec: dtype {self.dtype} is not a numeric type")

    def configuration(self) -> CodecJSON:
        return {"dtype": self.dtype.str}

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        items = [
            None
            if item is None
            else np.ascontiguousarray(item, dtype=self.dtype).reshape(-1).tobytes()
            for item in np.asarray(array).reshape(-1).tolist()
        ]
        return _filters.vlen_encode(items, False)

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        raw: list[bytes] = _filters.vlen_decode(data, math.prod(spec.shape), False)
        size = self.dtype.itemsize
        array = np.empty(len(raw), dtype=object)
        for i, item in enumerate(raw):
            if len(item) % size:
                raise ChunkDecodeError(
                    f"vlen-array: item {i} has {len(item)} bytes, not a "
                    f"whole number of {self.dtype} values"
                )
            array[i] = np.frombuffer(item, dtype=self.dtype)
        array = array.reshape(spec.shape)
        return into(array, out)


class PickleCodec(_ObjectCodec):
    """`pickle`: the chunk pickled. Decoding runs whatever code the stored pickle names."""

    v2_id = "pickle"

    def __init__(self, protocol: int = pickle.HIGHEST_PROTOCOL) -> None:
        self.protocol = int(protocol)

    def configuration(self) -> CodecJSON:
        return {"protocol": self.protocol}

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        return pickle.dumps(np.asarray(array), protocol=self.protocol)

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:
        if not config.allow_pickle:
            raise UnsafeCodecError(
                "the pickle codec is refused: unpickling runs code named by the stored data, so "
                "whoever can write the store could run code here. If you trust the store, "
                "zarrcore.config.set(allow_pickle=True) or ZARRCORE_ALLOW_PICKLE=1 reads it"
            )
        try:
            value = pickle.loads(bytes(data))
        except Exception as e:  # unpickling raises anything at all on garbage
            raise ChunkDecodeError(f"pickle: cannot decode the chunk: {e}") from None
        if not isinstance(value, np.ndarray) or value.size != math.prod(spec.shape):
            raise ChunkDecodeError(
                f"pickle: the chunk is not an array of {math.prod(spec.shape)} items"
            )
        array = np.empty(spec.shape, dtype=object)
        array.reshape(-1)[:] = value.reshape(-1)
        return into(array, out)


for _codec in (JSONCodec, MsgPackCodec, VLenArrayCodec, PickleCodec):
    register_codec(_codec, v2_id=_codec.v2_id)
