"""Writes the fixtures of test_references.py: `sample.h5` (h5py), its kerchunk references
`sample.json` (version 0, targets named relative to this directory) and the same references
in kerchunk's parquet layout, `sample.parq/` (small records, so a variable spans several);
`checked.h5`, a dataset with HDF5's shuffle, deflate and Fletcher-32 filters (which kerchunk
refuses), and its references `checked.json` written here from h5py's chunk index.

Run in a virtualenv with h5py, kerchunk, pandas and pyarrow:
    cd tests/support/data/references && python make.py
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def values():
    """The datasets' values (test_references.py computes the same)."""
    return {
        "temp": (np.arange(600, dtype="<f4").reshape(20, 30) / 7).astype("<f4"),
        "count": np.arange(50, dtype="<i4") * 3 - 40,
        "small": np.array([7, -8, 9], dtype="<i2"),
        "wide": np.arange(96, dtype="<f8").reshape(8, 12) * 1.5,
        "checked": np.arange(40, dtype="<u2") * 1000,
    }


def checked_references(h5py):
    """checked.h5 and its references, chunk offsets from h5py (filters as HDF5 applies them:
    shuffle, deflate, then the Fletcher-32 checksum)."""
    values_ = values()["checked"]
    with h5py.File("checked.h5", "w") as f:
        f.create_dataset("checked", data=values_, chunks=(16,), compression="gzip",
                         shuffle=True, fletcher32=True)
        dataset = f["checked"]
        refs = {
            ".zgroup": json.dumps({"zarr_format": 2}),
            "checked/.zarray": json.dumps({
                "shape": [40], "chunks": [16], "dtype": "<u2", "fill_value": 0,
                "order": "C", "compressor": None, "zarr_format": 2,
                "filters": [{"id": "shuffle", "elementsize": 2}, {"id": "zlib", "level": 4},
                            {"id": "fletcher32"}]}),
        }
        for i in range(dataset.id.get_num_chunks()):
            info = dataset.id.get_chunk_info(i)
            refs[f"checked/{info.chunk_offset[0] // 16}"] = [
                "checked.h5", info.byte_offset, info.size]
    with open("checked.json", "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)


def main():
    import h5py
    from kerchunk.df import refs_to_dataframe
    from kerchunk.hdf import SingleHdf5ToZarr

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
    checked_references(h5py)


if __name__ == "__main__":
    main()
