"""`vlen-utf8` and `vlen-bytes` array->bytes codecs (v3 names and v2 object-codec ids alike):
variable-length items framed by the compiled kernel."""

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import filters as _filters
from ..errors import MetadataError
from .base import ArrayBytesCodec, BytesLike, ChunkSpec, CodecJSON, into
from .registry import register_codec

__all__ = ["VLenBytesCodec", "VLenUTF8Codec"]


class _VLenCodec(ArrayBytesCodec):
    text: bool  # set by each subclass

    @classmethod
    def from_v2_config(cls, config: CodecJSON) -> "_VLenCodec":
        return cls(**config)

    def to_v2_json(self) -> CodecJSON:
        return {"id": self.name}

    def v2_form(self, dtype: npt.DTypeLike) -> tuple[CodecJSON, np.dtype[Any]]:
        return self.to_v2_json(), np.dtype(dtype)

    def to_json(self) -> CodecJSON:
        # zarr-python writes the empty configuration out.
        return {"name": self.name, "configuration": {}}

    def resolve(self, spec: ChunkSpec) -> "_VLenCodec":
        if np.dtype(spec.dtype).kind not in "OT":
            raise MetadataError(
                f"{self.name} codec: needs a variable-length data type, not {spec.dtype}"
            )
        return self

    def encode(self, array: npt.NDArray[Any], spec: ChunkSpec) -> BytesLike:
        return _filters.vlen_encode(np.ascontiguousarray(array).reshape(-1).tolist(), self.text)

    def decode(
        self, data: BytesLike, spec: ChunkSpec, out: npt.NDArray[Any] | None = None
    ) -> npt.NDArray[Any]:

        items = _filters.vlen_decode(data, math.prod(spec.shape), self.text)
        array = np.empty(len(items), dtype=object)
        array[:] = items  # element-wise, so bytes items never become a numpy bytes array
        if np.dtype(spec.dtype).kind != "O":
            array = array.astype(spec.dtype)
        return into(array.reshape(spec.shape), out)


class VLenUTF8Codec(_VLenCodec):
    """UTF-8 strings."""

    name = "vlen-utf8"
    text = True


class VLenBytesCodec(_VLenCodec):
    """Byte strings."""

    name = "vlen-bytes"
    text = False


register_codec(VLenUTF8Codec, v2_id="vlen-utf8")
register_codec(VLenBytesCodec, v2_id="vlen-bytes")
