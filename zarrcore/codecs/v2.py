"""The Zarr v2 codec chain as a v3-style codec list, and v2 array metadata creation.

numcodecs runs a v2 chunk through `filters` then `compressor`, starting from the chunk's raw
bytes in its stored dtype and `order`. As v3 codecs that is: a transpose for F order, the
filters as array->array codecs on the flattened chunk, raw bytes in the stored byte order,
and the compressor. An object codec (vlen-utf8, vlen-bytes) among the filters, or as the
compressor, is the array->bytes step itself; codecs after it, or after the first
bytes->bytes codec in the filters (crc32c), work on bytes.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import MetadataError
from ..metadata import ChunkKeyEncoding, DataType
from ..metadata.dtypes import dtype_from_v2_json
from ..metadata.v2 import ArrayMetadataV2
from . import numcodecs_compressors, numcodecs_filters, vlen  # noqa: F401  (registers the v2 ids)
from .base import ArrayBytesCodec, ChunkSpec, Codec, CodecJSON
from .bytes import BytesCodec, byte_order
from .chain import CodecChain
from .numcodecs_filters import V2Filter
from .numcodecs_v3 import PREFIX as NUMCODECS_PREFIX
from .registry import codec_from_json, codec_from_v2, foreign_codec_json
from .transpose import TransposeCodec
from .zstd import ZstdCodec

__all__ = [
    "V2BytesCodec",
    "codecs_from_v2",
    "codecs_from_v2_metadata",
    "create_metadata_v2",
    "object_data_type",
]

_U1 = np.dtype(np.uint8)


class V2BytesCodec(BytesCodec):
    """Raw items in whatever byte order the stored dtype (or the last filter's) has."""

    def __init__(self) -> None:
        super().__init__(endian=None)

    def resolve(self, spec: ChunkSpec) -> BytesCodec:
        return BytesCodec(byte_order(np.dtype(spec.dtype))).resolve(spec)


def codecs_from_v2_metadata(meta: ArrayMetadataV2, where: str = ".zarray") -> list[Codec]:
    """The codec list that reads and writes the chunks of v2 array metadata `meta`."""
    stored = meta.data_type.numpy_dtype
    return codecs_from_v2(
        meta.filters,
        meta.compressor,
        len(meta.shape) if meta.order == "F" else 0,
        where,
        None if stored == meta.dtype else byte_order(stored),
    )


def codecs_from_v2(
    filters: Sequence[object] | None,
    compressor: object,
    f_order_ndim: int = 0,
    where: str = ".zarray",
    endian: str | None = None,
) -> list[Codec]:
    """The codec list of chunks encoded by v2 `filters` and `compressor` (numcodecs
    configurations or codec objects), in F order for chunks of `f_order_ndim` > 1
    dimensions; raw items are stored in byte order `endian` ('little', 'big'), or, when None,
    in the order of the items in memory."""
    stages = [codec_from_v2(f, f"{where}: filters[{i}]") for i, f in enumerate(filters or ())]
    if compressor is not None:
        stages.append(codec_from_v2(compressor, f"{where}: compressor"))
    serializers = [i for i, c in enumerate(stages) if isinstance(c, ArrayBytesCodec)]
    if len(serializers) > 1:
        raise MetadataError(f"{where}: more than one object codec among filters and compressor")
    serializer: Codec
    if serializers:
        split = serializers[0]
        serializer = stages.pop(split)
    else:
        split = next((i for i, c in enumerate(stages) if not isinstance(c, V2Filter)), len(stages))
        serializer = V2BytesCodec() if endian is None else BytesCodec(endian)
    codecs: list[Codec] = []
    if f_order_ndim > 1:
        codecs.append(TransposeCodec(tuple(reversed(range(f_order_ndim)))))
    for codec in stages[:split]:
        if not isinstance(codec, V2Filter):
            # A codec built from a v2 id has to_v2_json, which Codec does not declare.
            codec_id = codec.to_v2_json()["id"]  # type: ignore[attr-defined]
            raise MetadataError(f"{where}: {codec_id!r} cannot come before the object codec")
        codecs.append(codec)
    codecs.append(serializer)
    tail = [c.as_bytes_codec() if isinstance(c, V2Filter) else c for c in stages[split:]]
    if serializers or len(tail) > 1:
        # numcodecs hands these the uint8 output of an object codec or a byte filter, so blosc
        # takes a typesize of 1 rather than the array's itemsize.
        tail = [c.resolve(ChunkSpec((0,), _U1)) for c in tail]
    return codecs + tail


def _v2_json(codec: object, where: str) -> CodecJSON:
    """A numcodecs configuration dict from a dict, a numcodecs codec, a zarrcore codec or a
    zarr-python codec (`numcodecs.<id>` ones as numcodecs' <id>)."""
    if isinstance(codec, dict):
        config = codec
    elif not isinstance(codec, Codec) and hasattr(codec, "get_config"):
        config = codec.get_config()
    else:
        if not isinstance(codec, Codec):
            spec = foreign_codec_json(codec, where)
            name: str = spec["name"]
            if name.startswith(NUMCODECS_PREFIX):
                spec = {"id": name[len(NUMCODECS_PREFIX) :], **spec.get("configuration", {})}
                return _v2_json(spec, where)
            codec = codec_from_json(spec, where)
        if not hasattr(codec, "to_v2_json"):
            raise ValueError(f"{where}: codec {codec!r} has no Zarr v2 form")
        config = codec.to_v2_json()
    # Re-serialized, so the stored configuration is complete as numcodecs writes it. A codec
    # built from a v2 id has to_v2_json, which Codec does not declare.
    stored: CodecJSON = codec_from_v2(config, where).to_v2_json()  # type: ignore[attr-defined]
    return stored


def _compressor_json(compressors: object) -> CodecJSON | None:
    if compressors is None:
        return None
    if isinstance(compressors, str) and compressors == "auto":
        return ZstdCodec(level=0, checksum=False).to_v2_json()
    if isinstance(compressors, (list, tuple)):
        if len(compressors) > 1:
            raise ValueError(f"Zarr format 2 arrays take one compressor, got {len(compressors)}")
        if not compressors:
            return None
        compressors = compressors[0]
    return _v2_json(compressors, "compressor")


def _separator(chunk_key_encoding: str | CodecJSON | ChunkKeyEncoding | None) -> str:
    if chunk_key_encoding is None:
        return "."
    if isinstance(chunk_key_encoding, str):
        return chunk_key_encoding
    if isinstance(chunk_key_encoding, dict):
        if "separator" in chunk_key_encoding:  # zarr-python's short form
            separator: str = chunk_key_encoding["separator"]
            return separator
        chunk_key_encoding = ChunkKeyEncoding.from_json(chunk_key_encoding, "chunk_key_encoding")
    return chunk_key_encoding.separator


def _filter_list(filters: object) -> list[Any]:
    if filters is None or (isinstance(filters, str) and filters == "auto"):
        return []
    return list(filters) if isinstance(filters, (list, tuple)) else [filters]


def object_data_type(filters: object, compressors: object) -> DataType | None:
    """The data type of a new v2 array of numpy's object dtype: the one its object codec
    (vlen-utf8, vlen-bytes, json2, msgpack2, vlen-array, pickle or categorize, among `filters`
    or as the compressor) stands for, as a reader decides it; None without one."""
    stages = [_v2_json(f, f"filters[{i}]") for i, f in enumerate(_filter_list(filters))]
    compressor = _compressor_json(compressors)
    for config in [*stages, *([compressor] if compressor else [])]:
        try:
            return dtype_from_v2_json("|O", config["id"], "filters")
        except MetadataError:
            continue
    return None


def create_metadata_v2(
    *,
    shape: tuple[int, ...],
    data_type: DataType,
    chunks: tuple[int, ...],
    filters: object = None,
    compressors: object = "auto",
    fill_value: object = None,
    order: str = "C",
    attributes: Mapping[str, Any] | None = None,
    chunk_key_encoding: str | CodecJSON | ChunkKeyEncoding | None = None,
) -> ArrayMetadataV2:
    """Array metadata for a new v2 array, checked by building its codec chain.

    Object types get their object codec (vlen-utf8/vlen-bytes) as a filter when none is given.
    """
    filters = (
        None
        if filters is None or (isinstance(filters, str) and filters == "auto")
        else [_v2_json(f, f"filters[{i}]") for i, f in enumerate(_filter_list(filters))]
    )
    compressor = _compressor_json(compressors)
    object_codec = data_type.v2_object_codec_id
    if object_codec and not any(
        c["id"] == object_codec for c in [*(filters or ()), compressor] if c
    ):
        filters = [{"id": object_codec}, *(filters or ())]
    fill = data_type.default_fill_value() if fill_value is None else fill_value
    meta = ArrayMetadataV2(
        shape=shape,
        data_type=data_type,
        chunk_shape=chunks,
        compressor=compressor,
        fill_value=fill,
        order=order,
        filters=filters,
        dimension_separator=_separator(chunk_key_encoding),
        attributes=dict(attributes or {}),
    )
    CodecChain(
        codecs_from_v2_metadata(meta), ChunkSpec(meta.chunk_shape, meta.dtype, meta.fill_value)
    )
    return meta
