"""zarr-python 3.4 (in the peer interpreter, tests/peers.py) and zarrcore read each other's
arrays exactly: plain and sharded v3 arrays and a v2 array, each direction in one batch."""
import numpy as np
import pytest
from _peer_arrays import pack, unpack
from peers import peer  # noqa: F401 (a fixture)

import zarrcore

pytestmark = pytest.mark.slow  # another interpreter

# name -> (create_array keywords, data)
CASES = {
    "plain": (dict(shape=(30, 20), chunks=(8, 7), dtype="int32", fill_value=-1),
              np.arange(600, dtype="int32").reshape(30, 20)),
    "sharded": (dict(shape=(40,), chunks=(4,), shards=(16,), dtype="float64",
                     fill_value=float("nan")),
                np.linspace(-1, 1, 40)),
    "v2": (dict(shape=(10, 9), chunks=(4, 4), dtype="<u2", fill_value=7, zarr_format=2),
           np.arange(90, dtype="<u2").reshape(10, 9)),
}

PEER_READS = """
import zarr
result = {name: pack(zarr.open_array(path, mode="r")[...]) for name, path in payload.items()}
"""

PEER_WRITES = """
import zarr
for name, case in payload.items():
    kwargs = case["kwargs"]
    kwargs["shape"] = tuple(kwargs["shape"])
    for key in ("chunks", "shards"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    a = zarr.create_array(case["path"], **kwargs)
    a[...] = unpack(case["data"])
result = zarr.__version__
"""


def test_zarr34_reads_zarrcore(peer, tmp_path):  # noqa: F811
    paths = {}
    for name, (kwargs, data) in CASES.items():
        paths[name] = str(tmp_path / name)
        zarrcore.create_array(paths[name], **kwargs)[...] = data
    read = peer.run(PEER_READS, paths)
    for name, (kwargs, data) in CASES.items():
        got = unpack(read[name])
        assert got.dtype == np.dtype(kwargs["dtype"]), name
        np.testing.assert_array_equal(got, data, err_msg=name)


def test_zarrcore_reads_zarr34(peer, tmp_path):  # noqa: F811
    payload = {}
    for name, (kwargs, data) in CASES.items():
        payload[name] = {"path": str(tmp_path / name), "kwargs": kwargs, "data": pack(data)}
    version = peer.run(PEER_WRITES, payload)
    assert version.startswith("3.4."), version
    for name, (kwargs, data) in CASES.items():
        a = zarrcore.open_array(str(tmp_path / name), mode="r")
        assert a.metadata.zarr_format == kwargs.get("zarr_format", 3), name
        got = a[...]
        assert got.dtype == np.dtype(kwargs["dtype"]), name
        np.testing.assert_array_equal(got, data, err_msg=name)
        if name == "sharded":
            assert a.shards == (16,)
