"""Arrays as JSON, bit for bit, between the tests and the peer interpreter (tests/support/peers.py):
imported on both sides, so numpy and the standard library only."""
import base64

import numpy as np


def pack(a, dtype=None):
    """`a` as JSON: dtype, shape and base64 bytes (`dtype` names the dtype when its str does
    not: ml_dtypes' "bfloat16" is "<V2")."""
    a = np.ascontiguousarray(a)
    data = base64.b64encode(a.tobytes()).decode()
    return {"dtype": dtype or a.dtype.str, "shape": list(a.shape), "data": data}


def unpack(d):
    """The array `pack` made."""
    raw = base64.b64decode(d["data"])
    return np.frombuffer(raw, dtype=d["dtype"]).reshape(d["shape"])
