"""Writes the fixtures of test_references.py: `sample.h5` (h5py), its kerchunk references
`sample.json` (version 0, targets named relative to this directory) and the same references
in kerchunk's parquet layout, `sample.parq/` (small records, so a variable spans several).

Run in a virtualenv with h5py, kerchunk, pandas and pyarrow:
    cd tests/data/references && python make.py
"""
import json
import os

import h5py
import numpy as np
from kerchunk.df import refs_to_dataframe
from kerchunk.hdf import SingleHdf5ToZarr

HERE = os.path.dirname(os.path.abspath(__file__))


def values():
    """The datasets' values (test_references.py computes the same)."""
    return {
        "temp": (np.arange(600, dtype="<f4").reshape(20, 30) / 7).astype("<f4"),
        "count": np.arange(50, dtype="<i4") * 3 - 40,
        "small": np.array([7, -8, 9], dtype="<i2"),
        "wide": np.arange(96, dtype="<f8").reshape(8, 12) * 1.5,
    }


def main():
    os.chdir(HERE)
    data = values()
    with h5py.File("sample.h5", "w", libver="earliest") as f:
        f.attrs["title"] = "references fixture"
        f.create_dataset("temp", data=data["temp"], chunks=(5, 10), compression="gzip",
                         compression_opts=4, shuffle=True)
        f["temp"].attrs["units"] = "K"
        f.create_dataset("count", data=data["count"], chunks=(10,))
        f.create_dataset("small", data=data["small"])  # contiguous: inlined below
        f.create_dataset("wide", data=data["wide"], chunks=(3, 5), compression="gzip",
                         shuffle=True)
    with open("sample.h5", "rb") as f:
        refs = SingleHdf5ToZarr(f, "sample.h5", inline_threshold=16).translate()
    with open("sample.json", "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)
    refs_to_dataframe(refs, "sample.parq", record_size=4)


if __name__ == "__main__":
    main()
