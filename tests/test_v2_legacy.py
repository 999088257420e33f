"""Zarr v2 data as zarr 2.x wrote it, read as zarr 2.18 reads it: compressor levels that
matter only for writing, and old fill values of string and object arrays.

The fixtures in data/zarr218_legacy were written by zarr 2.18 (data/zarr218_legacy/make.py),
each with `expected.npy`, the values zarr 2.18 reads.
"""
import json
import os
import shutil

import numpy as np
import pytest

import zarrcore

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "zarr218_legacy")
CASES = sorted(d for d in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, d)))


def test_every_fixture_is_here():
    assert len(CASES) == 8


@pytest.mark.parametrize("case", CASES)
def test_reads_as_zarr_2_18(case):
    path = os.path.join(FIXTURES, case)
    expected = np.load(os.path.join(path, "expected.npy"))
    a = zarrcore.open_array(path, mode="r")
    got = a[:]
    if got.dtype.kind == "T":
        got = got.astype(expected.dtype)  # zarr 2.18's object array, as text
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("case", ["zlib_level_-1", "gzip_level_-1", "zstd_level_30"])
def test_writes_keep_the_stored_level(tmp_path, case):
    """Writing into such an array compresses at the level numcodecs would use (zlib's default
    6, zstd's maximum 22) and leaves the stored configuration as it was."""
    import numcodecs

    path = tmp_path / case
    shutil.copytree(os.path.join(FIXTURES, case), path)
    before = json.loads((path / ".zarray").read_text())["compressor"]
    a = zarrcore.open_array(path, mode="r+")
    a[:] = np.arange(6, 0, -1)
    assert json.loads((path / ".zarray").read_text())["compressor"] == before
    codec = numcodecs.get_codec(before)
    np.testing.assert_array_equal(np.frombuffer(codec.decode((path / "2").read_bytes()), "<i4"), [2, 1])
    np.testing.assert_array_equal(zarrcore.open_array(path)[:], np.arange(6, 0, -1))


@pytest.mark.parametrize("compressor", [{"id": "zlib", "level": -2}, {"id": "gzip", "level": 10},
                                        {"id": "zstd", "level": 1.5}])
def test_levels_numcodecs_refuses_still_are_refused(tmp_path, compressor):
    with pytest.raises(zarrcore.errors.MetadataError, match="level"):
        zarrcore.create_array(tmp_path / "a", shape=(4,), dtype="i4", zarr_format=2, compressors=compressor)


def test_v3_levels_stay_strict():
    """zarr-python 3 refuses these in v3 zstd and gzip, and so does zarrcore."""
    for codec in ({"name": "zstd", "configuration": {"level": 23}},
                  {"name": "gzip", "configuration": {"level": -1}}):
        with pytest.raises(zarrcore.errors.MetadataError, match="level"):
            zarrcore.create_array({}, shape=(4,), dtype="i4", compressors=[codec])


def test_object_fill_0_reads_as_zarr_python_3(tmp_path):
    """zarr-python 3 reads the 0 fill of a vlen-utf8 array as the string "0"."""
    import warnings

    import zarr

    path = os.path.join(FIXTURES, "object_fill_0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_array(path, mode="r")
        expected = theirs[:]
    assert zarrcore.open_array(path).fill_value == theirs.fill_value == "0"
    np.testing.assert_array_equal(zarrcore.open_array(path)[:], expected)
