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


# The same calls on the same hierarchy in zarr-python 3.4 and zarrcore: each gives the
# builtin exception classes of its error (zarrcore's is a ZarrcoreError too, and may be more),
# or what it returns (a node's path, chunk sizes).
GROUP_CALLS = """
def build(g):
    g.create_array("a", shape=(10, 7), chunks=(4, 3), dtype="i4")
    g.create_array("s", shape=(10, 7), chunks=(4, 3), shards=(8, 6), dtype="i4")
    g.create_array("empty", shape=(0, 5), chunks=(4, 3), dtype="i4")
    g.create_array("scalar", shape=(), dtype="i4")
    g.create_group("sub")

CALLS = {
    "get_array missing": lambda g: g.get_array("nope"),
    "get_array nested missing": lambda g: g.get_array("sub/nope"),
    "get_array group": lambda g: g.get_array("sub"),
    "get_array ''": lambda g: g.get_array(""),
    "get_group missing": lambda g: g.get_group("nope"),
    "get_group array": lambda g: g.get_group("a"),
    "get_group ''": lambda g: g.get_group(""),
    "get_group 'sub/'": lambda g: g.get_group("sub/"),
    "require_group array": lambda g: g.require_group("a"),
    "require_array group": lambda g: g.require_array("sub", shape=(1,)),
    **{f"{attr} {name}": (lambda g, n=name, a=attr: getattr(g[n], a))
       for attr in ("read_chunk_sizes", "write_chunk_sizes")
       for name in ("a", "s", "empty", "scalar")},
}
BUILTIN = (ValueError, TypeError, KeyError, FileNotFoundError, FileExistsError)

def outcome(call, g):
    try:
        got = call(g)
    except Exception as e:
        return sorted(c.__name__ for c in BUILTIN if isinstance(e, c))
    return got.path if hasattr(got, "path") else [list(x) for x in got]

def outcomes(g):
    build(g)
    return {name: outcome(call, g) for name, call in CALLS.items()}
"""


def test_group_lookups_as_zarr34(peer):  # noqa: F811
    theirs = peer.run(GROUP_CALLS + "import zarr\nresult = outcomes(zarr.group(store={}))")
    space = {}
    exec(GROUP_CALLS, space)
    ours = space["outcomes"](zarrcore.group(store={}))
    assert ours.keys() == theirs.keys()
    errors = [name for name, got in theirs.items()
              if isinstance(got, list) and got and isinstance(got[0], str)]
    assert len(errors) == 8
    for name, got in ours.items():
        if name in errors:  # zarrcore's may be more classes (NodeExistsError, FileExistsError)
            assert set(theirs[name]) <= set(got), name
        else:
            assert got == theirs[name], name
    g = zarrcore.group(store={})
    space["build"](g)
    for name in errors:
        with pytest.raises(zarrcore.errors.ZarrcoreError):
            space["CALLS"][name](g)
