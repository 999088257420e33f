"""zarrcore.verify and `zarrcore verify`: every planted damage is named by its key."""
import json
import os

import numpy as np
import pytest
from _exact_values import arrays_of, cast, dtype_pairs, same_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcore
from zarrcore.cli import main
from zarrcore.codecs.sharding import EMPTY
from zarrcore.tools.exact import first_difference
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


def _pair(a_values, b_values, **b_options):
    """Two memory stores holding `a_values` and `b_values` as 1-d arrays."""
    stores = []
    for values, options in ((a_values, {}), (b_values, b_options)):
        store = {}
        # (zarrcore's text before numpy 2 is objects of str: dtype=str says so)
        dtype = str if values.dtype == object else values.dtype
        zarrcore.create_array(store, shape=values.shape, dtype=dtype, chunks=(3,),
                              **options)[...] = values
        stores.append(store)
    return stores


@pytest.mark.parametrize("a, b", [
    (np.array([1, 2**53 + 1], "i8"), np.array([1, 2.0**53], "f8")),
    (np.array([2**64 - 1], "u8"), np.array([2.0**64], "f8")),
    (np.array([2**63], "u8"), np.array([-(2**63)], "i8")),
    (np.array([-1], "i8"), np.array([2**64 - 1], "u8")),
    (np.array([16777217], "i4"), np.array([16777216], "f4")),
    (np.array(["3000-01-01"], "M8[s]"),
     np.array(["3000-01-01"], "M8[s]").astype("M8[ns]")),  # wrapped round to 1830
    (np.array([10**11], "m8[s]"), np.array([10**11], "m8[s]").astype("m8[ns]")),
    (np.array(["2000-01-01T00:00:00.5"], "M8[ms]"), np.array(["2000-01-01"], "M8[s]")),
    (np.array(["NaT"], "M8[s]"), np.array(["1970-01-01"], "M8[ns]")),
    (np.array([0.0], "f8"), np.array([-0.0], "f8")),
    (np.array([0.0], "f4"), np.array([-0.0], "f8")),
    (np.array([np.nan], "f8"), np.array([0x7FF8000000000001], "u8").view("f8")),  # payloads
    (np.array([1 + 1j], "c16"), np.array([1.0], "f8")),
    (np.array([2], "i2"), np.array([True])),
    (np.array([0], "i8"), np.array(["1970-01-01"], "M8[s]")),
])
def test_compare_values_exactly(a, b):
    """verify --values never calls different values the same: numpy's promotion would
    (int64 2**53 + 1 == float64 2**53, a wrapped datetime, uint64 against int64)."""
    src, dst = _pair(a, b)
    report = compare(src, dst, values=True, progress=False)
    assert not report.ok and [p.kind for p in report.problems] == ["differs"], str(report)
    detail = report.problems[0].detail
    assert f"first at ({a.size - 1},)" in detail or "their values mean other things" in detail, \
        detail


@pytest.mark.parametrize("a, b", [
    (np.array([1, 2**53], "i8"), np.array([1, 2.0**53], "f8")),
    (np.array(["2000-01-01", "NaT"], "M8[s]"), np.array(["2000-01-01", "NaT"], "M8[ns]")),
    (np.array([7200], "m8[s]"), np.array([2], "m8[h]")),
    (np.array([np.nan, -0.0, np.inf], "f4"), np.array([np.nan, -0.0, np.inf], "f8")),
    (np.array([-0.0], "f8"), np.array([0], "i4")),  # an integer's zero has no sign
    (np.array([1 + 0j, np.nan], "c8"), np.array([1.0, np.nan], "f8")),
    (np.array([True, False]), np.array([1, 0], "u8")),
    (np.array([-5, 2**62], "i8"), np.array([-5, 2**62], "i8")),
])
def test_compare_values_the_same(a, b):
    src, dst = _pair(a, b)
    report = compare(src, dst, values=True, progress=False)
    assert report.ok, str(report)


def test_compare_values_dimension_names_and_typed_attributes(tmp_path):
    def array(path, fmt, names=None, attributes=None):
        a = zarrcore.create_array(str(tmp_path / path), shape=(2, 3), dtype="u1", chunks=(2, 3),
                                  zarr_format=fmt, attributes=attributes or {}, overwrite=True,
                                  **({"dimension_names": names} if fmt == 3 else {}))
        a[...] = 1
        return str(tmp_path / path)

    xy3 = array("xy3", 3, ["x", "y"])
    others = {"['y', 'x']": array("yx3", 3, ["y", "x"]), "[None, None]": array("none3", 3),
              "['y', 'x'] ": array("yx2", 2, attributes={"_ARRAY_DIMENSIONS": ["y", "x"]})}
    for names, other in others.items():
        report = compare(xy3, other, values=True, progress=False)
        assert [p.detail for p in report.problems] == [
            f"dimension names {names.strip()} where the source's are ['x', 'y']"], str(report)
    # v2's _ARRAY_DIMENSIONS is v3's dimension names, and no attribute then.
    xy2 = array("xy2", 2, attributes={"_ARRAY_DIMENSIONS": ["x", "y"], "units": "m"})
    xy3u = array("xy3u", 3, ["x", "y"], {"units": "m"})
    assert compare(xy2, xy3u, values=True, progress=False).ok
    assert compare(xy3u, xy2, values=True, progress=False).ok
    # Attributes compare as typed JSON (written as text: NaN is no JSON zarrcore writes).
    def with_attribute(path, value):
        doc = tmp_path / path / "zarr.json"
        doc.write_text(doc.read_text().replace('"__v__"', json.dumps(value)))
        return str(tmp_path / path)

    for left, right, same in [(1, True, False), (1, 1.0, False), (0.0, -0.0, False),
                              (float("nan"), float("nan"), True), ([1, 2], [2, 1], False),
                              ({"a": 1, "b": [None]}, {"b": [None], "a": 1}, True),
                              (2**70, 2**70, True), ("1", 1, False)]:
        a = with_attribute(array("l", 3, ["x", "y"], {"v": "__v__"}), left)
        b = with_attribute(array("r", 3, ["x", "y"], {"v": "__v__"}), right)
        report = compare(a, b, values=True, progress=False)
        assert report.ok == same, (left, right, str(report))
        assert same or "other attributes" in str(report)
    # Groups too.
    g1 = zarrcore.open_group(str(tmp_path / "g1"), mode="w", attributes={"v": 1})
    g2 = zarrcore.open_group(str(tmp_path / "g2"), mode="w", attributes={"v": True})
    assert not compare(g1, g2, values=True, progress=False).ok


def test_verify_after_convert_compares_values_and_says_so(tmp_path, capsys):
    """A format 2 hierarchy converted to format 3 sharded stores every object otherwise: verify
    SRC DST compares values then, and says why; --objects shows the object differences and
    names --values."""
    src = tmp_path / "v2.zarr"
    g = zarrcore.open_group(str(src), mode="w", zarr_format=2)
    a = g.create_array("t", shape=(64, 64), dtype="f4", chunks=(16, 16),
                       attributes={"_ARRAY_DIMENSIONS": ["y", "x"]})
    a[...] = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    dst = tmp_path / "v3.zarr"
    assert main(["convert", "-q", str(src), str(dst), "--zarr-format", "3",
                 "--shards", "32,32", "--chunks", "8,8"]) == 0
    assert main(["verify", "-q", str(src), str(dst)]) == 0
    out = capsys.readouterr().out
    assert "the same" in out and "compared value by value: the copy's '/' is in format 3" in out
    assert "--objects" in out
    assert main(["verify", "-q", "--json", str(src), str(dst)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["compared"] == "values" and "value by value" in doc["note"]
    assert main(["verify", "-q", "--objects", str(src), str(dst)]) == 1
    out = capsys.readouterr().out
    assert "differences" in out and "--values" in out and "format 3" in out
    # A copy stores alike: object by object, no note.
    copied = tmp_path / "copy.zarr"
    zarrcore.copy(str(src), str(copied), progress=False)
    report = compare(str(src), str(copied), progress=False)
    assert report.ok and report.compared == "objects" and not report.note
    # The same format, other chunks: values, naming the array.
    rechunked = tmp_path / "rechunked.zarr"
    zarrcore.convert(str(src), str(rechunked), chunks=(32, 32), progress=False)
    report = compare(str(src), str(rechunked), progress=False)
    assert report.ok and report.compared == "values" and "'t'" in report.note, report.note
    # Values differ: reported as differences, the note still says how it compared.
    zarrcore.open_array(str(rechunked), path="t", mode="r+")[3, 4] = -1
    assert main(["verify", "-q", str(src), str(rechunked)]) == 1
    out = capsys.readouterr().out
    assert "first at (3, 4): -1.0 where the source holds 196.0" in out and "value by value" in out
    assert main(["verify", "-q", "--objects", "--values", str(src), str(rechunked)]) == 1
    assert "give one" in capsys.readouterr().err


def test_counts_are_singular_for_one(tmp_path, capsys):
    path = tmp_path / "one.zarr"
    zarrcore.create_array(str(path), shape=(4,), dtype="u1", chunks=(4,),
                          compressors=ZSTD_CHECKSUM)[...] = 1
    report = zarrcore.verify(str(path))
    assert str(report).startswith("1 stored object (") and "in 1 array and 0 groups: all well" \
        in str(report), str(report)
    plain = tmp_path / "plain.zarr"
    zarrcore.create_array(str(plain), shape=(4,), dtype="u1", chunks=(4,))[...] = 1
    text = str(zarrcore.verify(str(plain)))
    assert "1 object (of 1 array) without a checksum" in text, text
    copied = tmp_path / "copy.zarr"
    zarrcore.copy(str(path), str(copied), progress=False)
    text = str(compare(str(path), str(copied), values=False, progress=False))
    assert "stored objects (" in text and "in 1 array and 0 groups" in text, text
    assert "1 objects" not in text and "1 arrays" not in text
    converted = zarrcore.convert(str(path), {}, progress=False)
    assert str(converted).startswith("converted 1 array (1 copied raw) and 0 groups"), converted
    assert "1 object written" in str(converted)
    assert str(zarrcore.copy(str(path), {}, progress=False)).startswith("copied 2 keys")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), dtype_pairs())
def test_compare_values_is_the_same_iff_every_value_is(data, pair):
    """verify --values says "the same" exactly when an oracle in Python's exact arithmetic
    finds every value equal, over pairs of data types."""
    a_dtype, b_dtype = pair
    a = data.draw(arrays_of(a_dtype))
    b = data.draw(st.one_of(st.just(cast(a, b_dtype)),
                            arrays_of(b_dtype, near=a_dtype).filter(lambda b: b.size == a.size)
                            .map(lambda b: b.reshape(a.shape)),
                            st.just(a.astype(a_dtype)) if a_dtype == b_dtype else st.nothing()))
    src, dst = _pair(a, b)
    report = compare(src, dst, values=True, progress=False)
    assert report.ok == same_values(a, b), (a, b, str(report))


def test_compare_values_of_text_held_as_objects_and_as_strings():
    """Text compares with text whatever holds it (numpy strings, StringDType, Python objects);
    bytes never equal text."""
    # zarrcore's text: numpy 2's StringDType, object arrays of str before.
    string = (np.dtypes.StringDType() if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType")
              else np.dtype(object))
    strings = np.array(["a", "bc"], dtype=string)
    for other, same in [(np.array(["a", "bc"], "U2"), True), (np.array(["a", "bd"], "U2"), False),
                        (np.array([b"a", b"bc"], "S2"), False)]:
        src, dst = _pair(strings, other)
        assert compare(src, dst, values=True, progress=False).ok == same, other
    assert not compare(*_pair(np.array([b"a"], "S1"), np.array([b"a"], "S1").astype("S2")),
                       values=True, progress=False).problems
    held = np.empty(2, dtype=object)
    held[:] = ["a", "bc"]
    assert first_difference(held, strings) is None
    assert first_difference(held, np.array(["a", "bd"], "U2")) == (1,)
