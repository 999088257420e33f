"""Writes the fixtures of test_v2_legacy.py with zarr 2.18 (run it with a Python that has
zarr 2.18 and numcodecs < 0.16): arrays whose compressor levels or fill values zarr 2.x
wrote but a strict reader refuses, each with `expected.npy`, what zarr 2.18 reads.

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

# name: (dtype, compressor, object_codec, data of the first 4 of 6 items, patched fill value)
CASES = {
    "zlib_level_-1": ("<i4", numcodecs.Zlib(level=-1), None, np.arange(4), None),
    "gzip_level_-1": ("<i4", numcodecs.GZip(level=-1), None, np.arange(4), None),
    "zstd_level_30": ("<i4", numcodecs.Zstd(level=30), None, np.arange(4), None),
    "bytes_fill_0": ("|S5", None, None, np.array([b"ab", b"c", b"", b"defgh"]), 0),
    "unicode_fill_0": ("<U3", None, None, np.array(["ab", "c", "", "def"]), 0),
    "unicode_long_fill": ("<U1", None, None, np.array(["a", "b", "", "c"]), "xyz"),
    "bytes_long_fill": ("|S2", None, None, np.array([b"a", b"b", b"", b"c"]), "eHl6"),
    "object_fill_0": ("|O", None, numcodecs.VLenUTF8(), np.array(["ab", "c", "", "d"], dtype=object), 0),
}


def main():
    for name, (dtype, compressor, object_codec, data, fill) in CASES.items():
        path = os.path.join(HERE, name)
        shutil.rmtree(path, ignore_errors=True)
        a = zarr.open_array(path, mode="w", shape=(6,), chunks=(2,), dtype=dtype,
                            compressor=compressor, object_codec=object_codec)
        a[:4] = data
        if fill is not None:
            with open(os.path.join(path, ".zarray")) as f:
                meta = json.load(f)
            meta["fill_value"] = fill
            with open(os.path.join(path, ".zarray"), "w") as f:
                json.dump(meta, f, indent=4, sort_keys=True)
        expected = zarr.open_array(path, mode="r")[:]
        if expected.dtype == object:
            expected = expected.astype(str)  # zarr 2.18 fills with the number 0
        np.save(os.path.join(path, "expected.npy"), expected, allow_pickle=False)
        print(name, expected, file=sys.stderr)


if __name__ == "__main__":
    main()
