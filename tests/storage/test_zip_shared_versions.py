"""The versions a ZipStore gives its members name their bytes in every process: the zip
file's identity (device, inode, size, times) with the member's place, sizes and CRC-32. So a
decoded-chunk cache shared between processes (`shared_cache=True`) serves a zip member's
entry to another process only while that process's zip is the same file, unchanged: a zip
replaced by one whose chunk holds other values at the same place with the same CRC-32 (four
bytes chosen to set it) is read afresh by a worker started after. Every read is compared
with numpy and every wait has a deadline."""
import multiprocessing
import os
import shutil
import sys
import time
import zipfile
import zlib

import numpy as np
import pytest

import zarrcore
from zarrcore.array_api import CACHE_SETTLE_SECONDS

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="the shared cache needs Linux (memfd_create)"),
              pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")]

SHAPE, CHUNKS = (4, 256), (1, 256)
BIG = {"name": "bytes", "configuration": {"endian": "big"}}
DEADLINE = 120  # seconds a worker may take

_array = None  # a worker's array, unpickled


def _init(array):
    global _array
    _array = array


def _read(rows):
    return _array[rows], _array.cache_info()


def _with_crc(data, crc):
    """`data` with its last 4 bytes set so that its CRC-32 is `crc`. Over inputs of one length
    a CRC is affine in their bits: the change of each of the 32 bits is found, then the
    combination of them that gives `crc` (elimination over GF(2))."""
    base = bytearray(data)
    base[-4:] = bytes(4)
    start = zlib.crc32(base)
    basis = []  # (change of the CRC, bits flipped), each change with a leading bit of its own
    for bit in range(32):
        flipped = bytearray(base)
        flipped[len(base) - 4 + bit // 8] ^= 1 << (bit % 8)
        change, bits = zlib.crc32(flipped) ^ start, 1 << bit
        for b_change, b_bits in basis:
            if change ^ b_change < change:
                change, bits = change ^ b_change, bits ^ b_bits
        if change:
            basis.append((change, bits))
            basis.sort(reverse=True)
    want, bits = crc ^ start, 0
    for b_change, b_bits in basis:
        if want ^ b_change < want:
            want, bits = want ^ b_change, bits ^ b_bits
    assert want == 0
    base[-4:] = bits.to_bytes(4, "little")
    assert zlib.crc32(base) == crc
    return bytes(base)


def _write_zip(path, data):
    store = zarrcore.ZipStore(str(path), mode="w")
    a = zarrcore.create_array(store, shape=data.shape, dtype=data.dtype, chunks=CHUNKS,
                              compressors=[], serializer=BIG)
    a[...] = data
    store.close()


def _member(path, key="c/0/0"):
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(key)
        return info.header_offset, info.compress_size, info.file_size, info.CRC


def _worker_read(array, rows):
    """`array[rows]` and the cache's counters, read by a newly spawned process."""
    with multiprocessing.get_context("spawn").Pool(1, _init, (array,)) as pool:
        return pool.apply_async(_read, (rows,)).get(DEADLINE)


@pytest.mark.parametrize("replace", [os.replace, shutil.copyfile],
                         ids=["renamed over", "rewritten in place"])
def test_a_zip_replaced_with_the_same_members_and_crcs_is_read_fresh(tmp_path, replace):
    old = np.arange(SHAPE[0] * SHAPE[1], dtype="u4").reshape(SHAPE)
    new = old.copy()
    new[0, :6] += 1000  # chunk 0 holds other values, then its last 4 bytes give the old CRC
    stored = _with_crc(new[0].astype(">u4").tobytes(), zlib.crc32(old[0].astype(">u4")))
    new[0] = np.frombuffer(stored, ">u4")
    path, replacement = tmp_path / "a.zip", tmp_path / "b.zip"
    _write_zip(path, old)
    _write_zip(replacement, new)
    assert _member(path) == _member(replacement)
    time.sleep(CACHE_SETTLE_SECONDS + 0.05)
    a = zarrcore.open_array(zarrcore.ZipStore(str(path), read_only=True), mode="r",
                            cache_bytes=1 << 20, shared_cache=True)
    np.testing.assert_array_equal(a[0:2], old[0:2])
    values, info = _worker_read(a, slice(0, 2))  # the same zip: the parent's entries serve
    np.testing.assert_array_equal(values, old[0:2])
    assert info["hits"] == 2
    replace(replacement, path)
    time.sleep(CACHE_SETTLE_SECONDS + 0.05)
    values, info = _worker_read(a, slice(0, 2))
    np.testing.assert_array_equal(values, new[0:2])
    assert info["hits"] == 2 and info["inserts"] == 4
