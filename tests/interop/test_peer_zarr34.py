"""zarr-python 3.4 (in the peer interpreter, tests/support/peers.py) and zarrcore read each other's
arrays exactly: plain and sharded v3 arrays and a v2 array, each direction in one batch."""
import base64
import json
from pathlib import Path

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


# vlen-bytes fill values, which zarr-python 3.4 stores in base64 in both formats.
BYTES_FILLS = {"text": b"abc", "non-ascii": "é".encode(), "empty": b"",
               "base64-like": b"YWJj", "binary": b"\xff\x00"}

PEER_BYTES = """
import base64, warnings
import zarr
from zarr.dtype import VariableLengthBytes
warnings.simplefilter("ignore")  # (the data type's "no v3 specification" warning)
def b64(items):
    return [base64.b64encode(x).decode() for x in items]
result = {}
for name, case in payload["cases"].items():
    if payload["write"]:
        a = zarr.create_array(case["path"], shape=(4,), chunks=(2,), dtype=VariableLengthBytes(),
                              fill_value=base64.b64decode(case["fill"]),
                              zarr_format=case["format"])
        a[:2] = [b"x", b"yz"]
    a = zarr.open_array(case["path"], mode="r")
    result[name] = {"fill": b64([a.fill_value]), "items": b64(a[...].tolist())}
"""


def _peer_bytes(peer, cases, write):  # noqa: F811
    """What zarr-python reads of `cases` (name -> path, format, fill value), having written
    them when `write`: per case its fill value and items."""
    payload = {"write": write, "cases": {
        name: {"path": path, "format": fmt, "fill": base64.b64encode(fill).decode()}
        for name, (path, fmt, fill) in cases.items()}}
    read = peer.run(PEER_BYTES, payload)
    return {name: (base64.b64decode(got["fill"][0]), [base64.b64decode(x) for x in got["items"]])
            for name, got in read.items()}


def test_bytes_fill_values_both_ways(peer, tmp_path):  # noqa: F811
    """A vlen-bytes array's fill value, written by either side in either format, reads the
    same on both: the fill value, and chunks not stored reading as it; and a stored fill value
    with characters outside base64's alphabet too."""
    for writer in ("zarr-python", "zarrcore"):
        cases = {f"{name} v{fmt}": (str(tmp_path / writer / f"{fmt}-{i}"), fmt, fill)
                 for i, (name, fill) in enumerate(BYTES_FILLS.items()) for fmt in (2, 3)}
        if writer == "zarrcore":
            for name, (path, fmt, fill) in cases.items():
                a = zarrcore.create_array(path, shape=(4,), chunks=(2,), dtype=bytes,
                                          fill_value=fill, zarr_format=fmt)
                a[:2] = [b"x", b"yz"]
        read = _peer_bytes(peer, cases, write=writer == "zarr-python")
        for name, (path, fmt, fill) in cases.items():
            a = zarrcore.open_array(path, mode="r")
            assert a.fill_value == fill, (writer, name)
            assert a[...].tolist() == [b"x", b"yz", fill, fill], (writer, name)
            assert read[name] == (fill, [b"x", b"yz", fill, fill]), (writer, name)
    for name, (path, fmt, fill) in cases.items():
        meta = Path(path) / ("zarr.json" if fmt == 3 else ".zarray")
        meta.write_text(json.dumps(dict(json.loads(meta.read_text()), fill_value="YW\nJj")))
    read = _peer_bytes(peer, cases, write=False)
    for name, (path, fmt, fill) in cases.items():
        a = zarrcore.open_array(path, mode="r")
        assert (a.fill_value, a[...].tolist()) == read[name], name
        assert read[name] == (b"abc", [b"x", b"yz", b"abc", b"abc"]), name
