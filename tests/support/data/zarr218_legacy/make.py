"""Writes the fixtures of test_v2_legacy.py with zarr 2.18 (run it with a Python that has
zarr 2.18, numcodecs < 0.16 and msgpack): arrays whose compressor levels or fill values zarr
2.x wrote but a strict reader refuses, each with `expected.npy`, what zarr 2.18 reads; and
object arrays (json2, msgpack2, vlen-array, pickle, categorize, and vlen-utf8 filled with 0),
each with `expected.json`.

Fill values older zarr 2 versions wrote (0 for string types, strings longer than the item)
are patched into the .zarray after writing, as zarr 2.18 itself no longer writes them.
"""
import json
import os
import shutil
import sys

import numcodecs
import numpy as np
import zarr

assert zarr.__version__.startswith("2.18"), zarr.__version__
HERE = os.path.dirname(os.path.abspath(__file__))

# name: (dtype, compressor, object_codec, data of the first 4 of 6 items, patched fill value,
#        and filters when there are any)
CASES = {
    "zlib_level_-1": ("<i4", numcodecs.Zlib(level=-1), None, np.arange(4), None),
    "gzip_level_-1": ("<i4", numcodecs.GZip(level=-1), None, np.arange(4), None),
    "zstd_level_30": ("<i4", numcodecs.Zstd(level=30), None, np.arange(4), None),
    "bytes_fill_0": ("|S5", None, None, np.array([b"ab", b"c", b"", b"defgh"]), 0),
    "unicode_fill_0": ("<U3", None, None, np.array(["ab", "c", "", "def"]), 0),
    "unicode_long_fill": ("<U1", None, None, np.array(["a", "b", "", "c"]), "xyz"),
    "bytes_long_fill": ("|S2", None, None, np.array([b"a", b"b", b"", b"c"]), "eHl6"),
    "object_fill_0": ("|O", None, numcodecs.VLenUTF8(), np.array(["ab", "c", "", "d"], dtype=object), 0),
    "delta_bool": ("|b1", None, None, np.array([True, False, False, True]), None,
                   [numcodecs.Delta(dtype=bool)]),
    "base64": ("<i4", numcodecs.Base64(), None, np.arange(4), None),
    "delta_timedelta": ("<m8[ms]", None, None, np.array([5, -3, 0, 1200], dtype="m8[ms]"), None,
                        [numcodecs.Delta(dtype="<m8[ms]")]),
    # zarr 2 let the json2 object codec serialize other data types too.
    "json2_int32": ("<i4", None, None, np.arange(4), None, [numcodecs.JSON()]),
    "json2_unicode": ("<U3", None, None, np.array(["ab", "c", "", "def"]), None,
                      [numcodecs.JSON()]),
}


def _objects(items, shape=None):
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out if shape is None else out.reshape(shape)


MIXED = [1, "two", [3, 4], {"a": 5}, None, 2.5]
RAGGED = [np.arange(3, dtype="<i4"), np.array([], "<i4"), np.array([7], "<i4"), np.arange(5, dtype="<i4")]
# Object arrays: name: (shape, chunks, codec arguments, data of the leading block).
OBJECT_CASES = {
    "json2": ((6,), (2,), {"object_codec": numcodecs.JSON()}, _objects(MIXED[:4])),
    "json2_2d": ((3, 4), (2, 3), {"object_codec": numcodecs.JSON()},
                 _objects(MIXED + MIXED[::-1], (3, 4))),
    "msgpack2": ((6,), (2,), {"object_codec": numcodecs.MsgPack()}, _objects(MIXED[:4])),
    "vlen_array": ((6,), (2,), {"object_codec": numcodecs.VLenArray("<i4")}, _objects(RAGGED)),
    "pickle": ((6,), (2,), {"object_codec": numcodecs.Pickle()}, _objects(MIXED[:4])),
    "categorize_object": ((6,), (2,), {"filters": [numcodecs.Categorize(["a", "b"], dtype=object)]},
                          _objects(["a", "b", "a", "c"])),
}


def _tagged(value):
    """A read item as JSON: arrays tagged with their dtype."""
    if isinstance(value, np.ndarray):
        return {"ndarray": value.tolist(), "dtype": value.dtype.str}
    return value


def _save_items(path, expected):
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump({"shape": list(expected.shape),
                   "items": [_tagged(x) for x in expected.reshape(-1).tolist()]}, f)


def main():
    for name, (dtype, compressor, object_codec, data, fill, *filters) in CASES.items():
        path = os.path.join(HERE, name)
        shutil.rmtree(path, ignore_errors=True)
        a = zarr.open_array(path, mode="w", shape=(6,), chunks=(2,), dtype=dtype,
                            compressor=compressor, object_codec=object_codec,
                            filters=filters[0] if filters else None)
        a[:4] = data
        if fill is not None:
            with open(os.path.join(path, ".zarray")) as f:
                meta = json.load(f)
            meta["fill_value"] = fill
            with open(os.path.join(path, ".zarray"), "w") as f:
                json.dump(meta, f, indent=4, sort_keys=True)
        expected = zarr.open_array(path, mode="r")[:]
        if expected.dtype == object:  # text, and the number 0 where no chunk is stored
            _save_items(path, expected)
        else:
            np.save(os.path.join(path, "expected.npy"), expected, allow_pickle=False)
        print(name, expected, file=sys.stderr)
    numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE = True  # the pickles read back are our own
    for name, (shape, chunks, codecs, data) in OBJECT_CASES.items():
        path = os.path.join(HERE, name)
        shutil.rmtree(path, ignore_errors=True)
        a = zarr.open_array(path, mode="w", shape=shape, chunks=chunks, dtype=object, **codecs)
        a[tuple(slice(0, n) for n in data.shape)] = data
        expected = zarr.open_array(path, mode="r")[:]
        _save_items(path, expected)
        print(name, expected, file=sys.stderr)


if __name__ == "__main__":
    main()
