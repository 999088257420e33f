"""zarrcore.verify and `zarrcore verify`: every planted damage is named by its key."""
import json
import os

import numpy as np
import pytest

import zarrcore
from zarrcore.cli import main
from zarrcore.codecs.sharding import EMPTY
from zarrcore.tools.verify import compare

ZSTD_CHECKSUM = [{"name": "zstd", "configuration": {"level": 3, "checksum": True}}]


@pytest.fixture
def dataset(tmp_path):
    """A v3 group with zstd (checksummed), gzip, crc32c and sharded arrays, and a v2 group."""
    root = tmp_path / "d.zarr"
    g = zarrcore.open_group(str(root), mode="w")
    rng = np.random.default_rng(0)
    data = rng.random((40, 40)).astype("f4")
    g.create_array("zstd", shape=(40, 40), dtype="f4", chunks=(10, 10), compressors=ZSTD_CHECKSUM)[:] = data
    g.create_array("gzip", shape=(40, 40), dtype="f4", chunks=(10, 10),
                   compressors=[{"name": "gzip", "configuration": {"level": 5}}])[:] = data
    g.create_array("crc", shape=(40, 40), dtype="f4", chunks=(10, 10),
                   compressors=[{"name": "crc32c"}])[:] = data
    g.create_array("sharded", shape=(40, 40), dtype="f4", chunks=(5, 5), shards=(20, 20),
                   compressors=ZSTD_CHECKSUM)[:] = data
    v2 = zarrcore.open_group(str(root / "v2"), mode="w", zarr_format=2)
    # The parent group of a v2 group inside a v3 one is not a v2 node: open it on its own.
    v2.create_array("z", shape=(40,), dtype="i4", chunks=(10,),
                    compressors={"id": "zstd", "level": 1, "checksum": True})[:] = np.arange(40)
    return root


def _flip(path, at):
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x5A
    path.write_bytes(bytes(raw))


def _rewrite_index(path, n, edit):
    """Apply `edit` to the (n, 2) entries of the shard index at the end of `path`, with a
    correct crc32c, so that only the index checks can catch it."""
    raw = path.read_bytes()
    size = 16 * n + 4
    entries = np.frombuffer(raw[-size:-4], dtype="<u8").reshape(n, 2).copy()
    edit(entries)
    body = entries.astype("<u8").tobytes()
    crc = zarrcore.kernels.crc32c(np.frombuffer(body, dtype=np.uint8))
    path.write_bytes(raw[:-size] + body + int(crc).to_bytes(4, "little"))


def test_clean_dataset_verifies(dataset):
    report = zarrcore.verify(str(dataset), missing=True)
    assert report.ok, str(report)
    assert report.arrays == 5 and report.objects == 16 * 3 + 4 + 4
    assert main(["verify", "-q", str(dataset)]) == 0


def test_every_planted_damage_is_named(dataset, capsys):
    d = dataset
    _flip(d / "zstd/c/1/1", 20)                                  # zstd checksum
    _flip(d / "gzip/c/2/3", 30)                                  # gzip crc / deflate stream
    _flip(d / "crc/c/0/2", 7)                                    # crc32c codec
    (d / "zstd/c/3/3").write_bytes((d / "zstd/c/3/3").read_bytes()[:-9])  # truncated
    _flip(d / "sharded/c/0/0", 10)                               # an inner chunk of a shard
    _flip(d / "sharded/c/0/1", (d / "sharded/c/0/1").stat().st_size - 2)  # the index crc
    _rewrite_index(d / "sharded/c/1/0", 16,                      # an entry past the end
                   lambda e: e.__setitem__((3, 0), 1 << 40))
    _rewrite_index(d / "sharded/c/1/1", 16,                      # two entries overlapping
                   lambda e: e.__setitem__((5, 0), e[4, 0] + 1))
    os.makedirs(d / "zstd/c/4", exist_ok=True)
    (d / "zstd/c/4/0").write_bytes(b"outside")                   # beyond the 4x4 grid
    (d / "zstd/c/0/0.bak").write_bytes(b"stray")                 # no grid key at all
    _flip(d / "v2/z/2", 12)
    (d / "gzip/c/0/0").unlink()                                  # missing (with --missing)
    report = zarrcore.verify(str(d), missing=True)
    found = {(p.kind, p.key) for p in report.problems}
    assert found == {
        ("corrupt", "zstd/c/1/1"), ("corrupt", "gzip/c/2/3"), ("corrupt", "crc/c/0/2"),
        ("corrupt", "zstd/c/3/3"), ("corrupt", "sharded/c/0/0"), ("corrupt", "sharded/c/0/1"),
        ("corrupt", "sharded/c/1/0"), ("corrupt", "sharded/c/1/1"), ("corrupt", "v2/z/2"),
        ("out-of-grid", "zstd/c/4/0"), ("out-of-grid", "zstd/c/0/0.bak"),
        ("missing", "gzip/c/0/0"),
    }, str(report)
    inner = [p for p in report.problems if p.key == "sharded/c/0/0"]
    assert len(inner) == 1 and inner[0].inner_chunk is not None
    # The index checks name their finding.
    details = {p.key: p.detail for p in report.problems}
    assert "reaches past" in details["sharded/c/1/0"]
    assert "overlap" in details["sharded/c/1/1"]
    assert "checksum" in details["sharded/c/0/1"]
    # Without --missing a missing chunk is no problem.
    assert ("missing", "gzip/c/0/0") not in {(p.kind, p.key) for p in zarrcore.verify(str(d)).problems}
    assert main(["verify", "-q", "--json", "--missing", str(d)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert not doc["ok"] and {(p["kind"], p["key"]) for p in doc["problems"]} == found


def test_metadata_and_stray_keys(dataset):
    (dataset / "gzip/zarr.json").write_text("{ not json")
    (dataset / "notes.txt").write_text("hello")
    report = zarrcore.verify(str(dataset))
    found = {(p.kind, p.key) for p in report.problems}
    assert ("metadata", "gzip/zarr.json") in found
    assert ("stray", "notes.txt") in found


def test_chunks_of_a_node_without_metadata_are_stray(dataset):
    (dataset / "crc/zarr.json").unlink()
    report = zarrcore.verify(str(dataset))
    assert {p.key for p in report.problems if p.kind == "stray"} == {
        f"crc/c/{i}/{j}" for i in range(4) for j in range(4)}


def test_missing_inner_chunks_of_a_shard(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(8, 8), dtype="u1", chunks=(4, 4), shards=(8, 8))
    a[:4, :4] = 1
    report = zarrcore.verify(a, missing=True)
    assert sorted(p.inner_chunk for p in report.problems) == [(0, 1), (1, 0), (1, 1)]
    assert zarrcore.verify(a).ok


def test_memory_store_and_array(tmp_path):
    store = {}
    a = zarrcore.create_array(store, shape=(10,), dtype="i2", chunks=(5,), compressors=ZSTD_CHECKSUM)
    a[:] = 3
    assert zarrcore.verify(store).ok
    raw = bytearray(store["c/1"])
    raw[-1] ^= 1
    store["c/1"] = bytes(raw)
    assert [p.key for p in zarrcore.verify(a).problems] == ["c/1"]


def test_half_empty_index_entry(tmp_path):
    a = zarrcore.create_array(str(tmp_path), shape=(8,), dtype="u1", chunks=(2,), shards=(8,))
    a[:] = 7
    _rewrite_index(tmp_path / "c/0", 4, lambda e: e.__setitem__((2, 1), EMPTY))
    report = zarrcore.verify(str(tmp_path))
    assert [(p.kind, p.key) for p in report.problems] == [("corrupt", "c/0")]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zero_dimensional_array(tmp_path, zarr_format):
    a = zarrcore.create_array(str(tmp_path), shape=(), dtype="f8", zarr_format=zarr_format)
    a[...] = 3.5
    report = zarrcore.verify(str(tmp_path), missing=True)
    assert report.ok and report.objects == 1, str(report)
    dst = {}
    zarrcore.convert(str(tmp_path), dst, zarr_format=5 - zarr_format, progress=False)
    assert zarrcore.open_array(dst)[...] == 3.5


@pytest.mark.parametrize("fmt", [2, 3])
def test_consolidated_metadata_is_checked_against_the_nodes(tmp_path, fmt):
    import shutil
    import warnings

    zarr = pytest.importorskip("zarr")

    root = tmp_path / "h.zarr"
    g = zarr.open_group(str(root), mode="w", zarr_format=fmt)
    g.create_array("a", shape=(4,), dtype="i4")
    g.create_group("s").create_array("b", shape=(2,), dtype="f4")
    g.create_array("gone", shape=(1,), dtype="u1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns that v2 consolidation is not in the spec
        zarr.consolidate_metadata(str(root))
    assert zarrcore.verify(str(root)).ok
    zarrcore.open_array(str(root), path="s/b", mode="r+").attrs["x"] = 1
    zarrcore.open_group(str(root), path="s", use_consolidated=False).create_array("new", shape=(1,), dtype="u1")
    shutil.rmtree(root / "gone")
    report = zarrcore.verify(str(root))
    key = ".zmetadata" if fmt == 2 else "zarr.json"
    found = sorted((p.kind, p.key, p.detail) for p in report.problems)
    assert found == [("consolidated", key, "does not list the node 's/new'"),
                     ("consolidated", key, "lists 'gone', which is no node"),
                     ("consolidated", key, "metadata of 's/b' differs from the node's own")]


@pytest.mark.parametrize("compressors", [ZSTD_CHECKSUM, [{"name": "crc32c"}],
                                         [{"name": "gzip", "configuration": {"level": 1}}]])
def test_unsharded_chunks_decode_in_boxes_without_a_python_call_each(tmp_path, monkeypatch,
                                                                       compressors):
    """Chunks of arrays that are not sharded are checked a box of the grid at a time (the
    compiled batch on a directory), and the damaged ones in a box are still each named."""
    path = tmp_path / "a.zarr"
    a = zarrcore.create_array(str(path), shape=(60, 50), dtype="i2", chunks=(3, 5),
                              compressors=compressors)
    a[:] = np.arange(3000, dtype="i2").reshape(60, 50)
    a[:30, :25] = 0  # 50 chunks of fill, not stored: a box half empty still reads as one
    calls = []
    decode = zarrcore.engine.CodecChain.decode
    monkeypatch.setattr(zarrcore.engine.CodecChain, "decode",
                        lambda self, *args, **kw: calls.append(1) or decode(self, *args, **kw))
    report = zarrcore.verify(str(path))
    assert report.ok and report.objects == 150
    assert report.stored_bytes == sum(p.stat().st_size for p in (path / "c").rglob("*") if p.is_file())
    assert len(calls) < 5, len(calls)  # not one per chunk
    damaged = {"c/0/9", "c/19/0", "c/19/9"}
    for key in damaged:
        _flip(path / key, len((path / key).read_bytes()) // 2)
    report = zarrcore.verify(str(path))
    assert {p.key for p in report.problems} == damaged
    assert all(p.kind == "corrupt" for p in report.problems)
    assert report.objects == 150


def test_flipped_byte_without_checksum_is_never_all_well(tmp_path, capsys):
    """The default zstd writes no checksum: a flipped byte in its raw block decodes to other
    values. verify cannot see that, so it must not call the data well, and on request fails."""
    path = tmp_path / "a.zarr"
    data = np.random.default_rng(1).random((40, 40))  # incompressible: stored in raw blocks
    a = zarrcore.create_array(str(path), shape=data.shape, dtype="f8", chunks=(20, 20))
    a[...] = data
    _flip(path / "c/1/1", 100)
    assert not np.array_equal(zarrcore.open_array(str(path))[...], data)  # it still decodes
    report = zarrcore.verify(str(path))
    assert report.ok and report.unchecked == 4 and report.unchecked_arrays == [""]
    assert "all well" not in str(report) and "4 objects" in str(report)
    assert main(["verify", "-q", "--json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["unchecked_objects"] == 4 and doc["unchecked_arrays"] == [""]
    strict = zarrcore.verify(str(path), require_checksums=True)
    assert not strict.ok and [(p.kind, p.key) for p in strict.problems] == [("unchecked", "")]
    assert main(["verify", "-q", "--require-checksums", str(path)]) == 1
    assert "no checksum" in capsys.readouterr().out


def test_checked_data_is_all_well(dataset):
    report = zarrcore.verify(str(dataset), require_checksums=True)
    assert report.ok and report.unchecked == 0 and "all well" in str(report)


@pytest.mark.parametrize("fmt, layout, checked", [
    (3, {}, False),                                                       # zstd, no checksum
    (3, {"compressors": ZSTD_CHECKSUM}, True),
    (3, {"compressors": [{"name": "blosc"}]}, False),
    (3, {"compressors": [{"name": "blosc"}, {"name": "crc32c"}]}, True),
    (3, {"compressors": [{"name": "gzip"}]}, True),
    (3, {"compressors": None}, False),
    (3, {"compressors": [{"name": "numcodecs.crc32", "configuration": {}}]}, True),
    (3, {"shards": (20,)}, False),                      # the index's crc32c covers the index only
    (3, {"shards": (20,), "compressors": [{"name": "crc32c"}]}, True),
    (2, {"compressors": {"id": "zlib", "level": 1}}, True),
    (2, {"compressors": {"id": "blosc"}}, False),
    (2, {"compressors": {"id": "lz4"}}, False),
    (2, {"compressors": {"id": "lzma"}}, True),
    (2, {"compressors": {"id": "lzma", "format": 2, "check": -1}}, False),  # .lzma: no check
    (2, {"compressors": {"id": "bz2"}}, True),
    (2, {"filters": [{"id": "fletcher32"}], "compressors": {"id": "blosc"}}, True),
])
def test_unchecked_objects_follow_the_codecs(tmp_path, fmt, layout, checked):
    a = zarrcore.create_array(str(tmp_path / "a"), shape=(40,), dtype="i4", chunks=(10,),
                              zarr_format=fmt, **layout)
    a[...] = np.arange(40)
    report = zarrcore.verify(str(tmp_path / "a"))
    stored = 40 // (layout.get("shards") or (10,))[0]
    assert report.ok and report.unchecked == (0 if checked else stored), str(report)


def test_compare_a_copy_object_by_object(dataset, tmp_path, capsys):
    copy = tmp_path / "copy.zarr"
    zarrcore.copy(str(dataset), str(copy), progress=False)
    assert main(["verify", "-q", str(dataset), str(copy)]) == 0
    out = capsys.readouterr().out
    assert "compared with the source: the same" in out
    # One key changed, one gone, one added.
    changed = bytearray((copy / "gzip/c/1/1").read_bytes())
    changed[-1] ^= 1
    (copy / "gzip/c/1/1").write_bytes(bytes(changed))
    (copy / "crc/c/0/0").unlink()
    (copy / "zstd/c/9").write_bytes(b"x")
    report = compare(str(dataset), str(copy), progress=False)
    assert not report.ok and report.compared == "objects"
    assert [(p.kind, p.key) for p in report.problems] == [
        ("missing", "crc/c/0/0"), ("differs", "gzip/c/1/1"), ("extra", "zstd/c/9")]
    assert main(["verify", "-q", "--json", str(dataset), str(copy)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["compared"] == "objects" and len(doc["problems"]) == 3


def test_compare_a_conversion_value_by_value(dataset, tmp_path, capsys):
    out = tmp_path / "converted.zarr"
    zarrcore.convert(str(dataset / "sharded"), str(out), chunks=(8, 8), shards=False,
                     compressor="gzip:1", progress=False)
    # Other objects, the same values: object by object differs, value by value not.
    objects = compare(str(dataset / "sharded"), str(out), values=False, progress=False)
    assert not objects.ok and "values=True (--values)" in objects.note
    report = compare(str(dataset / "sharded"), str(out), values=True, progress=False)
    assert report.ok and report.arrays == 1 and report.stored_bytes == 40 * 40 * 4, report
    assert main(["verify", "-q", "--values", str(dataset / "sharded"), str(out)]) == 0
    capsys.readouterr()
    a = zarrcore.open_array(str(out), mode="r+")
    a[33, 7] = 2.5
    a.attrs["units"] = "m"
    report = compare(str(dataset / "sharded"), str(out), values=True, progress=False)
    assert [(p.kind, p.key) for p in report.problems] == [("differs", "/"), ("differs", "/")]
    assert any("first at (33, 7): 2.5 where" in p.detail for p in report.problems), report
    assert any("attributes" in p.detail for p in report.problems)
    # Whole nodes missing or extra.
    g = tmp_path / "g.zarr"
    zarrcore.convert(str(dataset), str(g), compressor="zstd:1", progress=False)
    zarrcore.open_group(str(g), mode="r+").create_group("more")
    (g / "gzip" / "zarr.json").unlink()
    kinds = sorted((p.kind, p.key) for p in compare(str(dataset), str(g), values=True,
                                                    progress=False).problems)
    assert ("missing", "gzip") in kinds and ("extra", "more") in kinds
    with pytest.raises(SystemExit):
        main(["verify", str(dataset), str(g), "--valuez"])
    assert main(["verify", "-q", "--missing", str(dataset), str(g)]) == 1
    assert "--missing and --require-checksums check one PATH" in capsys.readouterr().err


def test_progress_counts_shards_of_sharded_arrays(dataset, capsys):
    zarrcore.verify(str(dataset / "sharded"), progress=True)
    line = capsys.readouterr().err
    assert "4/4 shards" in line and "chunks" not in line
    zarrcore.verify(str(dataset), progress=True)
    assert "objects" in capsys.readouterr().err  # sharded and unsharded arrays
