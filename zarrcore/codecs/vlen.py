"""`vlen-utf8` and `vlen-bytes` array->bytes codecs (v3 names and v2 object-codec ids alike):
variable-length items framed by the compiled kernel."""
import math

import numpy as np

from .. import _filters
from ..errors import MetadataError
from .base import ArrayBytesCodec, into
from .registry import register_codec


class _VLenCodec(ArrayBytesCodec):
    text: bool | None = None

    @classmethod
    def from_v2_config(cls, config):
        return cls(**config)

    def to_v2_json(self):
        return {"id": self.name}

    def v2_form(self, dtype):
        return self.to_v2_json(), np.dtype(dtype)

    def to_json(self):
        # zarr-python writes the empty configuration out.
        return {"name": self.name, "configuration": {}}

    def resolve(self, spec):
        if np.dtype(spec.dtype).kind not in "OT":
            raise MetadataError(f"{self.name} codec: needs a variable-length data type, not {spec.dtype}")
        return self

    def encode(self, array, spec):
        return _filters.vlen_encode(np.ascontiguousarray(array).reshape(-1).tolist(), self.text)

    def decode(self, data, spec, out=None):
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
