"""Codec encodings as xarray's zarr backend reports and takes them.

engine="zarr" puts zarr-python codec objects (numcodecs codecs in format 2) in a variable's
encoding; these functions make the same objects from zarrcore's metadata when zarr-python
is installed (plain JSON otherwise), and turn either form back into codec JSON for writing:
format 2 encodings written as format 3 as `convert` writes them (v3_encoding).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy.typing as npt

from ..errors import MetadataError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..nodes.array import Array
from ..tools.codec_forms import v3_of_v2_encoding

__all__ = ["codec_encoding", "codec_json", "codecs_json", "v3_encoding"]


def _zarr_v3_codec(json: dict[str, Any], itemsize: int) -> Any:
    """The zarr-python codec object of a v3 codec's JSON, as a zarr-python array of items of
    `itemsize` bytes holds it; the JSON when zarr is missing."""
    try:
        from zarr.registry import get_codec_class
    except ImportError:
        return json
    try:
        codec: Any = get_codec_class(json["name"]).from_dict(json)
    except Exception:  # a codec zarr-python does not know: keep its JSON
        return json
    if json["name"] == "bytes" and itemsize == 1:
        codec = type(codec)(endian=None)  # zarr-python drops the endian of one-byte items
    return codec


def _numcodecs_codec(config: dict[str, Any]) -> Any:
    """The numcodecs codec of a v2 codec configuration; the configuration without numcodecs."""
    try:
        import numcodecs
    except ImportError:
        return config
    try:
        return numcodecs.get_codec(dict(config))
    except Exception:  # an id numcodecs does not know: keep its configuration
        return config


def codec_encoding(array: Array) -> dict[str, Any]:
    """{"compressors", "filters"[, "serializer"]} of a zarrcore Array, as engine="zarr" gives
    them: of the inner chunks when sharded."""
    metadata = array.metadata
    if isinstance(metadata, ArrayMetadataV2):
        compressor = metadata.compressor
        return {
            "compressors": (_numcodecs_codec(compressor),) if compressor else (),
            "filters": tuple(_numcodecs_codec(f) for f in metadata.filters or ()),
        }
    assert isinstance(metadata, ArrayMetadataV3)  # (an Array's metadata is an array's)
    # The codecs as stored (zarr-python keeps what the JSON leaves out, such as the bytes
    # codec's endian for one-byte types): of the inner chain when sharded, where the stages
    # come in the order filters, serializer, compressors.
    stored: list[Any] = list(metadata.codecs or ())
    if array.shards is not None:
        stored = list(stored[0]["configuration"]["codecs"])
    itemsize = array.dtype.itemsize
    n_filters = len(array.filters)
    serializer = stored[n_filters] if array.serializer is not None else None
    return {
        "compressors": tuple(
            _zarr_v3_codec(c, itemsize) for c in stored[n_filters + (serializer is not None) :]
        ),
        "filters": tuple(_zarr_v3_codec(c, itemsize) for c in stored[:n_filters]),
        "serializer": None if serializer is None else _zarr_v3_codec(serializer, itemsize),
    }


def codec_json(codec: Any, zarr_format: int) -> Any:
    """JSON (v3) or numcodecs configuration (v2) of a codec given as an object of zarr-python,
    numcodecs or zarrcore, or already as JSON."""
    if codec is None or isinstance(codec, (dict, str)):
        return codec
    if zarr_format == 2 and hasattr(codec, "get_config"):
        return codec.get_config()
    if hasattr(codec, "to_dict"):  # zarr-python's codecs
        return codec.to_dict()
    if hasattr(codec, "to_json"):  # zarrcore's codecs
        return codec.to_json()
    if hasattr(codec, "get_config"):  # numcodecs codecs in a v3 array
        config = dict(codec.get_config())
        return {"name": f"numcodecs.{config.pop('id')}", "configuration": config}
    return codec


def codecs_json(value: Any, zarr_format: int) -> Any:
    """codec_json of each codec in `value` (one codec, a sequence, None or "auto")."""
    if value is None or isinstance(value, (str, dict)):
        return codec_json(value, zarr_format)
    if isinstance(value, (list, tuple)):
        return [codec_json(c, zarr_format) for c in value]
    return [codec_json(value, zarr_format)]


def _is_v2_form(codec: Any) -> bool:
    """A numcodecs codec, or its configuration: the encoding of a format 2 source."""
    if isinstance(codec, dict):
        return "id" in codec
    return (
        hasattr(codec, "get_config")
        and not hasattr(codec, "to_dict")
        and not hasattr(codec, "to_json")
    )


def v3_encoding(
    name: Hashable, filters: Any, compressors: Any, chunks: Sequence[int], dtype: npt.DTypeLike
) -> tuple[Any, Any, dict[str, Any] | None]:
    """(filters, compressors, serializer or None) to write variable `name` as format 3 with
    its encoding's `filters` and `compressors`: format 2 ones (a dataset read from format 2
    keeps its numcodecs codecs) as the v3 codecs `convert` gives them (blosc as the spec's
    blosc, numcodecs.<id> where the spec has none), others as they are."""
    given = [
        list(v) if isinstance(v, (list, tuple)) else [v]
        for v in (filters, compressors)
        if v is not None and not isinstance(v, str)
    ]
    if not any(_is_v2_form(c) for group in given for c in group):
        return filters, compressors, None
    v2 = [
        [] if v is None or isinstance(v, str) else list(v) if isinstance(v, (list, tuple)) else [v]
        for v in (filters, compressors)
    ]
    try:
        if not all(_is_v2_form(c) for group in v2 for c in group):
            raise MetadataError("its encoding mixes format 2 (numcodecs) and format 3 codecs")
        new_filters, serializer, new_compressors = v3_of_v2_encoding(
            [codec_json(c, 2) for c in v2[0]],
            [codec_json(c, 2) for c in v2[1]],
            chunks,
            dtype,
            "encoding",
        )
    except MetadataError as e:
        raise MetadataError(
            f"variable {name!r}: {e}; its format 2 encoding has no format 3 form: drop it with "
            f"ds.drop_encoding() (or give encoding={{{str(name)!r}: {{...}}}}) to write format "
            f"3 with the default codecs"
        ) from None
    if not new_compressors and isinstance(compressors, str):
        new_compressors = compressors  # "auto": the format's default
    return new_filters, new_compressors, None if serializer["name"] == "bytes" else serializer
