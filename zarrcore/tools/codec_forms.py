"""An array's codecs in the other Zarr format, and the short forms the tools take.

v2 -> v3 keeps the encoding byte for byte: blosc, zstd, gzip and crc32c become the v3 codecs of
those names, every other numcodecs codec `numcodecs.<id>` (filters that change the chunk's
values as array->array codecs, byte filters and compressors after the serializer), F order a
transpose, the stored byte order the bytes codec's endian. v3 -> v2 is the reverse.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..codecs import BloscCodec, GzipCodec, ZlibCodec, ZstdCodec, codec_from_json, codec_from_v2
from ..codecs.base import ArrayArrayCodec, ArrayBytesCodec, ChunkSpec, Codec
from ..codecs.chain import CodecChain
from ..codecs.numcodecs_v3 import ARRAY_TO_ARRAY, BYTES_TO_BYTES, PREFIX
from ..codecs.v2 import codecs_from_v2
from ..errors import MetadataError
from ..metadata.types import CodecLike
from ..nodes.array import Array

__all__ = [
    "CodecJSON",
    "bytes_codec_v3",
    "parse_codecs",
    "parse_compressor",
    "v2_form",
    "v3_codecs",
    "v3_of_v2_encoding",
    "with_compressor",
]

#: A codec's JSON: v3 (`{"name": ..., "configuration": ...}`) or numcodecs (`{"id": ...}`).
CodecJSON = dict[str, Any]


def _numcodecs_v3(v2_json: CodecJSON, kinds: Collection[str], where: str) -> CodecJSON:
    codec_id = v2_json["id"]
    if codec_id not in kinds:
        raise MetadataError(
            f"{where}: numcodecs codec {codec_id!r} has no Zarr v3 form here; "
            f"give the codecs to use"
        )
    configuration = {k: v for k, v in v2_json.items() if k != "id"}
    return {"name": PREFIX + codec_id, "configuration": configuration}


def bytes_codec_v3(codec: Codec, where: str = "codecs") -> CodecJSON:
    """The v3 JSON of a resolved bytes->bytes codec object, as the encoding it stands for."""
    if codec.stored_json is not None:  # a numcodecs.<id> codec already
        return codec.to_json()
    if codec.name is not None:  # a v3 codec
        return codec.encoding_json()
    if hasattr(codec, "to_v2_json"):  # a codec of v2 arrays only
        return _numcodecs_v3(codec.to_v2_json(), BYTES_TO_BYTES, where)
    return codec.to_json()


def v3_codecs(array: Array) -> tuple[list[CodecJSON], tuple[int, ...]]:
    """The array's (own, or inner when sharded) chunk codecs as a v3 JSON list, and the chunk
    shape they encode. A v2 array's codecs come out as the v3 codecs of the same encoding."""
    chain = array.chunk_engine.chain
    if array.zarr_format == 3:
        sharding = array.chunk_engine.sharding
        if sharding is not None:
            return sharding.inner.to_json(), tuple(sharding.chunk_shape)
        return chain.to_json(), array.chunks
    filters, serializer, compressors = _v3_stages(chain, f"{array.name} (.zarray)")
    return [*filters, serializer, *compressors], array.chunks


def v3_of_v2_encoding(
    filters: Sequence[Any],
    compressors: Sequence[Any],
    chunks: Sequence[int],
    dtype: npt.DTypeLike,
    where: str,
) -> tuple[list[CodecJSON], CodecJSON, list[CodecJSON]]:
    """(filters, serializer, compressors) as v3 JSON of chunks of shape `chunks` and `dtype`
    that format 2 `filters` and `compressors` (numcodecs configurations or codec objects; at
    most one compressor) encode: the codecs v3_codecs gives an array of that encoding, as
    convert writes it. MetadataError naming `where` for one with no v3 form."""
    if len(compressors) > 1:
        raise MetadataError(f"{where}: format 2 takes one compressor, not {len(compressors)}")
    codecs = codecs_from_v2(filters, compressors[0] if compressors else None, where=where)
    return _v3_stages(
        CodecChain(codecs, ChunkSpec(tuple(chunks), np.dtype(dtype), None), where), where
    )


def _v3_stages(chain: CodecChain, where: str) -> tuple[list[CodecJSON], CodecJSON, list[CodecJSON]]:
    """(array->array codecs, serializer, bytes->bytes codecs) as v3 JSON of the chain of a
    format 2 encoding: numcodecs byte filters move after the serializer."""
    out: list[CodecJSON] = []
    moved: list[CodecJSON] = []
    for codec in chain.array_array:
        if codec.name is not None:  # a v3 codec (the transpose of F order)
            out.append(codec.to_json())
        elif hasattr(codec, "to_v2_json"):  # a numcodecs filter
            v2_json = codec.to_v2_json()
            codec_id = v2_json["id"]
            if codec_id in BYTES_TO_BYTES and codec_id not in ARRAY_TO_ARRAY:
                moved.append(_numcodecs_v3(v2_json, BYTES_TO_BYTES, where))
            elif moved:
                raise MetadataError(
                    f"{where}: filter {codec_id!r} after a byte filter has no v3 form"
                )
            else:
                out.append(_numcodecs_v3(v2_json, ARRAY_TO_ARRAY, where))
        else:
            raise MetadataError(f"{where}: filter {codec!r} has no Zarr v3 form")
    return (
        out,
        chain.array_bytes.to_json(),
        moved + [bytes_codec_v3(c, where) for c in chain.bytes_bytes],
    )


def v2_form(
    codecs: Sequence[CodecLike], shape: Sequence[int], dtype: npt.DTypeLike, where: str = "codecs"
) -> tuple[list[CodecJSON], CodecJSON | None, Literal["C", "F"], np.dtype[Any]]:
    """(filters, compressor, order, stored dtype) of a v2 array whose chunks are encoded as the
    v3 JSON `codecs` (for chunks of `shape` and `dtype`). MetadataError when v2 has no form."""
    chain = CodecChain(codecs, ChunkSpec(tuple(shape), np.dtype(dtype), None), where)
    order: Literal["C", "F"] = "C"
    filters: list[CodecJSON] = []
    f_order = {"name": "transpose", "configuration": {"order": list(reversed(range(len(shape))))}}
    for i, codec in enumerate(chain.array_array):
        if i == 0 and codec.to_json() == f_order:
            order = "F"
        elif (v2_filter := codec.v2_filter()) is not None:
            filters.append(v2_filter)
        else:
            raise MetadataError(f"{where}: codec {codec.name!r} has no Zarr v2 form")
    serializer = chain.array_bytes
    form = serializer.v2_form(dtype)
    if form is None:
        raise MetadataError(f"{where}: codec {serializer.name!r} has no Zarr v2 form")
    object_codec, stored = form
    if object_codec is not None:
        filters.insert(0, object_codec)
    tail: list[CodecJSON] = []
    for codec in chain.bytes_bytes:
        if not hasattr(codec, "to_v2_json"):
            raise MetadataError(f"{where}: codec {codec.name!r} has no Zarr v2 form")
        tail.append(codec.to_v2_json())
    compressor = tail.pop() if tail else None
    return filters + tail, compressor, order, stored


_SHORT: dict[str, Callable[[list[str]], Codec]] = {
    "zstd": lambda args: ZstdCodec(level=int(args[0]) if args else 0),
    "gzip": lambda args: GzipCodec(level=int(args[0]) if args else 6),
    "zlib": lambda args: ZlibCodec(level=int(args[0]) if args else 1),
    "blosc": lambda args: BloscCodec(
        cname=args[0] if args else "zstd",
        clevel=int(args[1]) if len(args) > 1 else 5,
        shuffle=args[2] if len(args) > 2 else None,
    ),
    "lz4": lambda args: codec_from_v2(
        {"id": "lz4", **({"acceleration": int(args[0])} if args else {})}
    ),
}


def parse_compressor(text: str | CodecJSON | Codec | None) -> Codec | None:
    """A compressor from a short form (`zstd:5`, `blosc:lz4:5[:bitshuffle]`, `gzip:6`,
    `zlib:6`, `lz4`, `none`), v3 JSON (`{"name": ...}`) or numcodecs JSON (`{"id": ...}`);
    None for `none`. Returns a codec object, which either format can store."""
    if not isinstance(text, str):
        return _codec_object(text)
    text = text.strip()
    if text.startswith("{"):
        return _codec_object(_json(text, "compressor"))
    name, *args = text.split(":")
    if name == "none":
        return None
    if name not in _SHORT:
        raise ValueError(
            f"unknown compressor {text!r}: say zstd:LEVEL, "
            f"blosc:CNAME:LEVEL[:SHUFFLE], gzip:LEVEL, zlib:LEVEL, lz4, none or JSON"
        )
    try:
        return _SHORT[name](args)
    except (ValueError, IndexError) as e:
        raise ValueError(f"compressor {text!r}: {e}") from None


def _codec_object(spec: CodecJSON | Codec | None) -> Codec | None:
    if spec is None:
        return None
    if isinstance(spec, dict) and "id" in spec:
        return codec_from_v2(spec, "compressor")
    return codec_from_json(spec, "compressor")


_CODECS_FORM = (
    'a JSON list of v3 codecs, e.g. \'[{"name": "bytes"}, {"name": "zstd", '
    '"configuration": {"level": 3}}]\'; to change only the compressor, give '
    "compressor= a short form such as zstd:3"
)


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"{what} {text!r} is not JSON ({e})") from None


def parse_codecs(value: str | Sequence[CodecLike]) -> list[CodecLike]:
    """A v3 codec list from JSON text or a list."""
    if isinstance(value, str):
        if not value.strip().startswith("["):
            raise ValueError(f"codecs={value!r}: give {_CODECS_FORM}")
        value = _json(value, "codecs")
    if not isinstance(value, list):
        raise ValueError(f"codecs={value!r}: give {_CODECS_FORM}")
    return value


def with_compressor(
    codecs: Sequence[CodecLike], compressor: Codec | None, where: str = "codecs"
) -> list[CodecLike]:
    """The v3 JSON list `codecs` with its bytes->bytes codecs replaced by `compressor` (a codec
    object or None)."""
    kept = [
        c
        for c in codecs
        if isinstance(codec_from_json(c, where), (ArrayArrayCodec, ArrayBytesCodec))
    ]
    if compressor is None:
        return kept
    if compressor.name is not None and compressor.stored_json is None:
        return kept + [compressor.to_json()]
    return kept + [bytes_codec_v3(compressor, where)]
