"""Hand-made hostile directory stores: what the file system refuses (a directory where a chunk
key should be, symlink loops) and documents of the wrong JSON type are ZarrcoreErrors naming
the key, never bare OSError or AttributeError."""
import json
import re
import os

import pytest

import zarrcore
from zarrcore.errors import MetadataError, StoreError, ZarrcoreError

LAYOUTS = {
    "native": dict(),
    "uncompressed": dict(compressors=None),
    "chunk-by-chunk": dict(filters=[{"name": "transpose", "configuration": {"order": [0]}}]),
    "sharded": dict(shards=(4,), chunks=(2,)),
    "v2": dict(zarr_format=2),
}


@pytest.mark.posix("Windows refuses to open a directory as a file with EACCES, not EISDIR")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_directory_at_a_chunk_key(tmp_path, layout):
    kwargs = dict(LAYOUTS[layout])
    a = zarrcore.create_array(tmp_path, shape=(8,), chunks=kwargs.pop("chunks", (4,)), dtype="u1",
                              **kwargs)
    key = "c/0" if a.metadata.zarr_format == 3 else "0"
    os.makedirs(tmp_path / key / "x")
    assert a[:].tolist() == [0] * 8  # a directory is not a key: reads see fill
    for write in (slice(0, 4), slice(0, 2)):
        with pytest.raises(StoreError, match=f"'{key}'.*Is a directory") as e:
            a[write] = 1
        assert isinstance(e.value, OSError) and e.value.errno == 21
    with pytest.raises(StoreError, match=f"'{key}'"):
        a.store.delete(key)


@pytest.mark.posix("symbolic links need a privilege on Windows")
def test_symlink_loops(tmp_path):
    zarrcore.create_group(tmp_path).create_array("a", shape=(2,), dtype="u1")
    os.symlink("loop", tmp_path / "loop")
    g = zarrcore.open_group(tmp_path)
    broken = dict(g.members(max_depth=None))["loop"]  # listed, unreadable
    assert isinstance(broken.error, StoreError)
    assert re.search("'loop/zarr.json'.*symbolic links", str(broken.error))
    with pytest.raises(StoreError, match="'loop/zarr.json'"):
        zarrcore.consolidate_metadata(tmp_path)
    with pytest.raises(StoreError, match="'loop'"):
        g.store.list_dir("loop")
    with pytest.raises(ZarrcoreError):
        zarrcore.open_array(tmp_path, path="loop")


@pytest.mark.parametrize("fmt, key", [(3, "zarr.json"), (2, ".zarray"), (2, ".zgroup"), (2, ".zattrs")])
def test_child_document_that_is_not_an_object(tmp_path, fmt, key):
    zarrcore.create_group(tmp_path, zarr_format=fmt)
    os.makedirs(tmp_path / "a")
    if key == ".zattrs":
        (tmp_path / "a" / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    (tmp_path / "a" / key).write_text("[1, 2]")
    with pytest.raises(MetadataError, match=f"a/{key}: expected a JSON object, got list"):
        zarrcore.consolidate_metadata(tmp_path)
    (name, broken), = zarrcore.open_group(tmp_path).members()
    assert name == "a" and isinstance(broken.error, MetadataError)
