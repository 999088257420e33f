"""Raw bytes: r* (raw bits) and fixed-length bytes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from zarrcore.errors import MetadataError

from .base import JSON, VoidBase, check_itemsize, name_and_config, parsed_length_bytes

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["RawBitsType", "RawBytesType"]


_RAW_BITS_RE = re.compile(r"r([1-9][0-9]{0,11})\Z")  # more digits: too large anyway


class RawBitsType(VoidBase):
    """Core v3 ``r<bits>`` (numpy ``V<bits/8>``); fill values are lists of byte values.

    zarr-python writes ``raw_bytes`` instead, so numpy void dtypes resolve to
    :class:`RawBytesType`; this type is only chosen by reading ``r*`` JSON.
    """

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name is None or config != {}:
            return None
        m = _RAW_BITS_RE.match(name)
        if m is None:
            return None
        bits = int(m.group(1))
        if bits % 8:
            raise MetadataError(f"{where}: field 'data_type': {name!r} is not a multiple of 8 bits")
        return cls(np.dtype(f"V{check_itemsize(bits // 8, where, name)}"))

    def to_json_v3(self) -> JSON:
        return f"r{self.numpy_dtype.itemsize * 8}"

    def _encode_fill(self, value: Any, zarr_format: int) -> JSON:
        if zarr_format == 2:
            return super()._encode_fill(value, zarr_format)
        return list(np.asarray(value, dtype=self.numpy_dtype).tobytes())


class RawBytesType(VoidBase):
    """``{"name": "raw_bytes", "configuration": {"length_bytes": N}}`` (numpy ``V<N>``); base64
    fill values."""

    @classmethod
    def from_json_v3(cls, obj: JSON, where: str = "zarr.json") -> Self | None:
        name, config = name_and_config(obj)
        if name != "raw_bytes" or config is None:
            return None
        return cls(np.dtype(f"V{parsed_length_bytes(config, where, name)}"))

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> Self | None:
        # np.void only: ml_dtypes' types are "V" dtypes too.
        if (
            dtype.type is np.void
            and dtype.fields is None
            and dtype.subdtype is None
            and dtype.itemsize > 0
        ):
            return cls(dtype)
        return None

    def to_json_v3(self) -> JSON:
        return {"name": "raw_bytes", "configuration": {"length_bytes": self.numpy_dtype.itemsize}}


# -- strings and bytes ------------------------------------------------------
