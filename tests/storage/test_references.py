"""ReferenceStore: kerchunk references (JSON versions 0 and 1, parquet) read natively, their
targets through zarrcore's own stores, within the bounds the caller allows."""
import base64
import gc
import importlib.util
import json
import os
import re
import shutil
import sys
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zarrcore
from zarrcore.errors import (
    ChecksumError, InvalidKeyError, ReadOnlyError, ReferenceFormatError, ReferenceOutsideError,
    ReferenceTargetError, StoreURLError,
)
from zarrcore.storage.base import validate_key, validate_keys
from zarrcore.storage.references import ReferenceStore, Target

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "support", "data", "references")
_spec = importlib.util.spec_from_file_location("references_make", os.path.join(DATA, "make.py"))
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)
VALUES = make.values()
SAMPLE = ("temp", "count", "small", "wide")


def _has_parquet_engine():
    for name in ("pyarrow.parquet", "fastparquet"):
        try:
            if importlib.util.find_spec(name) is not None:
                return True
        except ImportError:
            pass
    return False


@pytest.fixture
def refs_dir(tmp_path):
    """The fixtures, copied into a directory of their own."""
    for name in os.listdir(DATA):
        source = os.path.join(DATA, name)
        if os.path.isdir(source):
            shutil.copytree(source, tmp_path / name)
        else:
            shutil.copy(source, tmp_path / name)
    return tmp_path


def _sample_refs(refs_dir):
    """sample.json's references in version 0's form ({key: reference})."""
    with open(refs_dir / "sample.json") as f:
        refs = json.load(f)
    assert refs["version"] == 1 and not refs.get("templates") and not refs.get("gen")
    return refs["refs"]


def _check(group, names=SAMPLE):
    for name in names:
        np.testing.assert_array_equal(group[name][...], VALUES[name], err_msg=name)
        assert group[name].dtype == VALUES[name].dtype


def _fsspec_group(refs, **options):
    """The same references through fsspec's ReferenceFileSystem (zarrcore's fsspec route)."""
    fsspec = pytest.importorskip("fsspec", reason="the fsspec route needs fsspec")
    fs = fsspec.filesystem("reference", fo=refs, **options)
    return zarrcore.open_group(fs, mode="r")


# -- JSON ---------------------------------------------------------------------------------
def test_json_file_reads_what_h5py_wrote(refs_dir):
    group = zarrcore.open_group(str(refs_dir / "sample.json"), mode="r")
    assert isinstance(group.store, ReferenceStore)
    _check(group)
    assert group.attrs["title"] == "references fixture"
    assert group["temp"].attrs["units"] == "K"
    assert sorted(group.array_keys()) == sorted(SAMPLE)
    _check(zarrcore.open_group(ReferenceStore(refs_dir / "sample.json"), mode="r"))
    (refs_dir / "version0.json").write_text(json.dumps(_sample_refs(refs_dir)))
    _check(zarrcore.open_group(str(refs_dir / "version0.json"), mode="r"))


def test_reference_url_with_fo(refs_dir):
    path = str(refs_dir / "sample.json")
    _check(zarrcore.open_group("reference://", mode="r", storage_options={"fo": path}))
    # A dict has no directory of its own: relative targets are below the current one, and
    # local files need the caller's leave.
    refs = _sample_refs(refs_dir)
    for entry in refs.values():
        if isinstance(entry, list):
            entry[0] = str(refs_dir / entry[0])
    group = zarrcore.open_group("reference://", mode="r", storage_options={
        "fo": refs, "allowed_roots": [str(refs_dir)]})
    _check(group)
    with pytest.raises(StoreURLError, match="unknown options.*'simple'"):
        zarrcore.open_group("reference://", storage_options={"fo": path, "simple": 1})


def test_equals_the_fsspec_route(refs_dir, monkeypatch):
    monkeypatch.chdir(refs_dir)  # (fsspec takes relative targets below the current directory)
    native = zarrcore.open_group(str(refs_dir / "sample.json"), mode="r")
    through_fsspec = _fsspec_group(str(refs_dir / "sample.json"))
    assert not isinstance(through_fsspec.store, ReferenceStore)
    for name in SAMPLE:
        np.testing.assert_array_equal(native[name][...], through_fsspec[name][...])
        np.testing.assert_array_equal(native[name][1:, ...][::2],
                                      through_fsspec[name][1:, ...][::2])


def test_version_1_templates_gen_and_inline_values(tmp_path):
    chunks = np.arange(24, dtype="<i4")
    (tmp_path / "gen.bin").write_bytes(b"HEAD" + chunks.tobytes())
    zarray = {"shape": [24], "chunks": [4], "dtype": "<i4", "fill_value": 0, "order": "C",
              "filters": None, "compressor": None, "zarr_format": 2}
    text = np.frombuffer(b"text", dtype="u1")
    refs = {
        "version": 1,
        "templates": {"f": str(tmp_path / "gen.bin"), "name": "g"},
        "refs": {
            ".zgroup": {"zarr_format": 2},  # metadata written as JSON objects
            "g/.zarray": zarray,
            "t/.zarray": json.dumps({**zarray, "shape": [4], "dtype": "|u1"}),
            "t/0": "text",
            "b/.zarray": json.dumps({**zarray, "shape": [2], "chunks": [2]}),
            "b/0": "base64:" + base64.b64encode(np.array([5, -6], "<i4").tobytes()).decode(),
            "g/5": ["{{f}}", 4 + 20 * 4, 16],
        },
        "gen": [{"key": "{{name}}/{{i}}", "url": "{{f}}", "offset": "{{4 + i * 16}}",
                 "length": "16", "dimensions": {"i": {"stop": 5}}}],
    }
    store = ReferenceStore(refs, allowed_roots=[str(tmp_path)])
    group = zarrcore.open_group(store, mode="r")
    np.testing.assert_array_equal(group["g"][...], chunks)
    np.testing.assert_array_equal(group["t"][...], text)
    np.testing.assert_array_equal(group["b"][...], [5, -6])
    assert sorted(store.list_dir("g")) == [".zarray", "0", "1", "2", "3", "4", "5"]
    pytest.importorskip("jinja2", reason="fsspec renders gen with jinja2")
    # (fsspec's version 1 keeps a "base64:" value as text, so "b" is left out)
    through_fsspec = _fsspec_group(refs, simple_templates=False)
    for name in ("g", "t"):
        np.testing.assert_array_equal(group[name][...], through_fsspec[name][...])


def test_whole_file_reference_and_ranges(tmp_path):
    (tmp_path / "whole.bin").write_bytes(np.arange(6, dtype="<f8").tobytes())
    refs = {".zgroup": '{"zarr_format": 2}',
            "w/.zarray": json.dumps({"shape": [6], "chunks": [6], "dtype": "<f8",
                                     "fill_value": 0, "order": "C", "filters": None,
                                     "compressor": None, "zarr_format": 2}),
            "w/0": [str(tmp_path / "whole.bin")],
            "r": [str(tmp_path / "whole.bin"), 8, 16]}
    store = ReferenceStore(refs, allow_local=True)
    np.testing.assert_array_equal(zarrcore.open_array(store, path="w", mode="r")[...],
                                  np.arange(6.0))
    raw = np.arange(6, dtype="<f8").tobytes()
    assert store.get("r") == raw[8:24]
    assert store.get("r", 4, None) == raw[12:24] and store.get("r", -4) == raw[20:24]
    assert [bytes(p) for p in store.get_ranges("r", [(0, 2), (14, 99)])] == [raw[8:10],
                                                                             raw[22:24]]
    assert store.get("w/0", 8, 16) == raw[8:16]
    assert store.getsize("w/0") == 48 and store.getsize("r") == 16
    assert store.get("nothing") is None and not store.exists("nothing")


def test_fletcher32_shuffle_zlib_as_hdf5_writes_them(refs_dir):
    group = zarrcore.open_group(str(refs_dir / "checked.json"), mode="r")
    np.testing.assert_array_equal(group["checked"][...], VALUES["checked"])
    refs = json.loads((refs_dir / "checked.json").read_text())
    _, offset, length = refs["checked/1"]
    data = bytearray((refs_dir / "checked.h5").read_bytes())
    data[offset + length // 2] ^= 0xFF
    (refs_dir / "checked.h5").write_bytes(bytes(data))
    group = zarrcore.open_group(str(refs_dir / "checked.json"), mode="r")
    with pytest.raises((ChecksumError, zarrcore.errors.ChunkDecodeError), match="checked/1"):
        group["checked"][...]


def _route(array):
    """The route a read of the whole array takes (zarrcore.engine.planning.Route)."""
    from zarrcore.metadata.indexing import numpy_indexer

    return array.chunk_engine.routes.plan(
        numpy_indexer(np.s_[...], array.shape, array.chunk_engine.chunk_shape))


def test_hdf5_shuffle_and_deflate_decode_in_compiled_waves(refs_dir):
    from zarrcore.engine.planning import Route

    group = zarrcore.open_group(str(refs_dir / "sample.json"), mode="r")
    for name in ("temp", "wide"):  # h5py's shuffle and gzip filters
        assert _route(group[name]) is Route.CHUNK_WAVES, name
        np.testing.assert_array_equal(group[name][1:, 2:], VALUES[name][1:, 2:])
    # A corrupt stored chunk is an error naming it.
    refs = json.loads((refs_dir / "sample.json").read_text())
    _, offset, length = refs["refs"]["wide/1.1"]
    data = bytearray((refs_dir / "sample.h5").read_bytes())
    data[offset + length // 2] ^= 0xFF
    (refs_dir / "sample.h5").write_bytes(bytes(data))
    group = zarrcore.open_group(str(refs_dir / "sample.json"), mode="r")
    with pytest.raises(zarrcore.errors.ChunkDecodeError, match="wide/1.1"):
        group["wide"][...]


@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<i2", "<u8", "|u1"])
def test_what_h5py_shuffles_and_deflates_reads_in_compiled_waves(tmp_path, dtype):
    from zarrcore.engine.planning import Route

    h5py = pytest.importorskip("h5py", reason="h5py (the test extra) writes the file")
    data = (np.arange(7 * 13) * 37 % 1000).astype(dtype).reshape(7, 13)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("v", data=data, chunks=(3, 5), compression="gzip", shuffle=True)
        dataset = f["v"]
        itemsize = np.dtype(dtype).itemsize
        refs = {".zgroup": json.dumps({"zarr_format": 2}), "v/.zarray": json.dumps({
            "shape": list(data.shape), "chunks": [3, 5], "dtype": dtype, "fill_value": 0,
            "order": "C", "compressor": None, "zarr_format": 2,
            "filters": [{"id": "shuffle", "elementsize": itemsize}, {"id": "zlib", "level": 4}]})}
        for i in range(dataset.id.get_num_chunks()):
            info = dataset.id.get_chunk_info(i)
            key = ".".join(str(o // c) for o, c in zip(info.chunk_offset, (3, 5)))
            refs[f"v/{key}"] = ["f.h5", info.byte_offset, info.size]
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    a = zarrcore.open_group(str(tmp_path / "refs.json"), mode="r")["v"]
    assert _route(a) is Route.CHUNK_WAVES
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[2:6, 4:11], data[2:6, 4:11])


def test_a_reference_reaching_past_2_63_is_a_short_target(tmp_path):
    """Offset and length each below 2**63, their sum past what any file holds: the target is
    too short (ReferenceTargetError), whether its ranges are coalesced with others or not."""
    (tmp_path / "f.bin").write_bytes(b"x" * 100)
    refs = {"far": [str(tmp_path / "f.bin"), 2**63 - 10, 2**63 - 10],
            "near": [str(tmp_path / "f.bin"), 0, 10]}
    store = ReferenceStore(refs, allow_local=True)
    for requests in ([("far", None)], [("far", [(0, 5)]), ("near", None)]):
        with pytest.raises(ReferenceTargetError, match="'far'.*shorter than the reference"):
            list(store.get_many(requests))


def test_read_only(refs_dir):
    group = zarrcore.open_group(str(refs_dir / "sample.json"), mode="r")
    store = group.store
    assert store.read_only and not store.supports_writes and store.supports_listing
    with pytest.raises(ReadOnlyError):
        store.set("count/0", b"x")
    with pytest.raises(ReadOnlyError):
        zarrcore.open_group(store, mode="r+")["count"][0] = 1


# -- parquet --------------------------------------------------------------------------------
@pytest.mark.skipif(not _has_parquet_engine(),
                    reason="parquet references need pyarrow or fastparquet (extra 'references')")
def test_parquet_references(refs_dir):
    group = zarrcore.open_group(str(refs_dir / "sample.parq"), mode="r")
    assert isinstance(group.store, ReferenceStore)
    _check(group)
    store = group.store
    assert store.get("count/5") is None  # past the grid, though in a record's rows
    assert sorted(store.list_dir("temp")) == sorted(
        [".zarray", ".zattrs"] + [f"{i}.{j}" for i in range(4) for j in range(3)])
    _check(zarrcore.open_group("reference://", mode="r",
                               storage_options={"fo": str(refs_dir / "sample.parq")}))


def test_parquet_without_an_engine_says_what_to_install(refs_dir, monkeypatch):
    for name in ("pyarrow", "pyarrow.parquet", "fastparquet", "pandas"):
        monkeypatch.setitem(sys.modules, name, None)  # (import raises ImportError)
    group = zarrcore.open_group(str(refs_dir / "sample.parq"), mode="r")
    with pytest.raises(StoreURLError, match=r"refs\.0\.parq.*zarrcore\[references\]"):
        group["count"][...]


# -- bounds ---------------------------------------------------------------------------------
def _refs_to(target, key="a/0"):
    return {".zgroup": '{"zarr_format": 2}',
            "a/.zarray": json.dumps({"shape": [4], "chunks": [4], "dtype": "|u1",
                                     "fill_value": 0, "order": "C", "filters": None,
                                     "compressor": None, "zarr_format": 2}),
            key: [target, 0, 4]}


def test_bounds_refuse_local_files_outside_the_references_directory(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_bytes(b"KEY!")
    refs = tmp_path / "refs"
    refs.mkdir()
    for name, target in (("absolute.json", str(secret / "key.txt")),
                         ("relative.json", "../secret/key.txt"),
                         ("file_url.json", f"file://{secret}/key.txt")):
        (refs / name).write_text(json.dumps(_refs_to(target)))
        array = zarrcore.open_array(str(refs / name), path="a", mode="r")
        with pytest.raises(ReferenceOutsideError, match=r"'a/0'.*key\.txt"):
            array[...]
        # the caller may widen the bounds
        store = ReferenceStore(refs / name, allowed_roots=[str(secret)])
        assert bytes(zarrcore.open_array(store, path="a", mode="r")[...]) == b"KEY!"
        store = ReferenceStore(refs / name, allow_local=True)
        assert bytes(zarrcore.open_array(store, path="a", mode="r")[...]) == b"KEY!"
    # a symlink inside the directory leading out of it
    os.symlink(secret / "key.txt", refs / "link.bin")
    (refs / "link.json").write_text(json.dumps(_refs_to("link.bin")))
    with pytest.raises(ReferenceOutsideError, match="link.bin"):
        zarrcore.open_array(str(refs / "link.json"), path="a", mode="r")[...]
    # targets inside it read
    (refs / "data.bin").write_bytes(b"data")
    (refs / "inside.json").write_text(json.dumps(_refs_to("data.bin")))
    assert bytes(zarrcore.open_array(str(refs / "inside.json"), path="a", mode="r")[...]) \
        == b"data"


def test_bounds_of_a_dict_and_of_given_roots(tmp_path):
    (tmp_path / "data.bin").write_bytes(b"data")
    refs = _refs_to(str(tmp_path / "data.bin"))
    with pytest.raises(ReferenceOutsideError, match="allow_local"):
        zarrcore.open_array(ReferenceStore(refs), path="a", mode="r")[...]
    # roots given replace the default: remote URLs outside them are refused too
    store = ReferenceStore(_refs_to("s3://bucket/data.bin"), allowed_roots=[str(tmp_path)])
    with pytest.raises(ReferenceOutsideError, match="s3://bucket/data.bin"):
        store.get("a/0")
    store = ReferenceStore(_refs_to("https://example.invalid/x.nc"), remote_protocol="s3")
    with pytest.raises(ReferenceOutsideError, match="example.invalid"):
        store.get("a/0")


def test_remote_references_may_not_reach_local_files(http_server, tmp_path):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    (tmp_path / "data.bin").write_bytes(b"data")
    with open(os.path.join(http_server.root, "remote.json"), "w") as f:
        json.dump(_refs_to(str(tmp_path / "data.bin")), f)
    group = zarrcore.open_group("reference://", mode="r", storage_options={
        "fo": f"{http_server.url}/remote.json"})
    with pytest.raises(ReferenceOutsideError, match="data.bin"):
        group["a"][...]


def test_numpy_integers_as_offsets(tmp_path):
    (tmp_path / "data.bin").write_bytes(bytes([0, 1, 2, 3]))
    refs = _refs_to(str(tmp_path / "data.bin"))
    refs["a/0"] = [refs["a/0"][0], np.int64(refs["a/0"][1]), np.uint32(refs["a/0"][2])]
    array = zarrcore.open_array(ReferenceStore(refs, allowed_roots=[str(tmp_path)]), path="a")
    np.testing.assert_array_equal(array[...], np.arange(4))


def test_a_nul_in_a_target_url_is_a_format_error(tmp_path):
    refs = _refs_to(str(tmp_path / "data\0.bin"))
    array = zarrcore.open_array(ReferenceStore(refs, allowed_roots=[str(tmp_path)]), path="a")
    with pytest.raises(ReferenceFormatError, match=r"'a/0'.*NUL"):
        array[...]


def test_a_references_file_nested_too_deeply(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ReferenceFormatError, match="deep.json.*nested too deeply"):
        ReferenceStore(str(tmp_path / "deep.json"))


def test_missing_and_short_targets(tmp_path):
    (tmp_path / "short.bin").write_bytes(b"ab")
    (tmp_path / "missing.json").write_text(json.dumps(_refs_to("nowhere.bin")))
    (tmp_path / "short.json").write_text(json.dumps(_refs_to("short.bin")))
    for name, target in (("missing", "nowhere.bin"), ("short", "short.bin")):
        array = zarrcore.open_array(str(tmp_path / f"{name}.json"), path="a", mode="r")
        with pytest.raises(ReferenceTargetError, match=rf"'a/0'.*{target}"):
            array[...]


@pytest.mark.parametrize("refs, match", [
    ({"version": 2, "refs": {}}, "unknown version 2"),
    ({"a/0": 3}, "'a/0'.*expected text"),
    ({"a/0": ["f", -1, 4]}, "'a/0': offset"),
    ({"a/0": "base64:&&&"}, "'a/0': invalid base64"),
    ({"version": 1, "refs": {"a/0": ["{{__import__('os')}}"]}}, "only names"),
    ({"version": 1, "refs": {"a/0": ["{{u}}"]}}, "'u' is not defined"),
    ({"version": 1, "templates": {"u": "{{x}}"}}, "takes arguments"),
    ({"version": 1, "templates": {"u": "x" * 1000},
      "refs": {"a/0": ["{{" + "+".join(["u"] * 100) + "}}"]}}, "too large"),
    ({"version": 1, "refs": {"a/0": ["{{" + "(" * 5000 + "1" + ")" * 5000 + "}}"]}},
     "not an expression"),
    ({"version": 1, "gen": [{"key": "k{{i}}", "url": "u",
                             "dimensions": {"i": {"stop": 10**9}}}]}, "more than"),
    ({"version": 1, "gen": [{"key": "k{{i}}", "url": "u",
                             "dimensions": {"i": {"stop": 10**30}}}]}, "more than"),
    ({"../a": "x"}, "not allowed"),
])
def test_malformed_references(refs, match):
    with pytest.raises(ReferenceFormatError, match=match):
        ReferenceStore(refs)


# -- many references ----------------------------------------------------------------------
def _traced(work):
    """(result of `work()`, seconds, bytes it allocated and kept, peak bytes)."""
    gc.collect()
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = work()
        seconds = time.perf_counter() - start
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
        return result, seconds, kept, peak
    finally:
        tracemalloc.stop()


def test_many_plain_references_are_parsed_compactly():
    # main: 18-20 s and 694 MB for a million, about 130 bytes kept a reference beyond the
    # document's own strings; now columns of a few bytes each.
    n = 400_000
    refs = {".zgroup": '{"zarr_format": 2}', "a/odd": ["{{u}}", 3, 4], "a/whole": ["f.nc"],
            **{f"a/{i}": [f"s3://bucket/f{i % 3}.nc", 8 * i, 8] for i in range(n)}}
    doc = {"version": 1, "templates": {"u": "s3://bucket/t.nc"}, "refs": refs}
    store, seconds, kept, peak = _traced(lambda: ReferenceStore(doc))
    assert kept < 48 * n and seconds < 30, (kept, seconds)
    assert store.lookup(f"a/{n - 1}") == Target("s3://bucket/f0.nc", 8 * (n - 1), 8)
    assert store.lookup("a/odd") == Target("s3://bucket/t.nc", 3, 4)
    assert store.lookup("a/whole") == Target("f.nc", 0, None)
    assert store.lookup(".zgroup") == b'{"zarr_format": 2}'
    assert store.lookup("a/x") is None and store.lookup(f"a/{n}") is None
    assert len(list(store.list_prefix("a"))) == n + 2


@given(st.lists(st.text(alphabet="ab./\\\x00", max_size=6), min_size=1, max_size=4))
def test_keys_checked_together_as_one_by_one(keys):
    # validate_keys checks keys joined in one pass: it refuses what validate_key refuses.
    def one_by_one():
        for key in keys:
            validate_key(key)

    try:
        one_by_one()
    except InvalidKeyError as e:
        with pytest.raises(InvalidKeyError, match=re.escape(str(e))):
            validate_keys(keys)
    else:
        validate_keys(keys)


def test_generated_references_are_made_when_asked_for():
    # The most `gen` may make, from a 200-byte document: main made all 4,194,304 (about 5
    # minutes); a key is now parsed back to the values that render it.
    side = 2048
    doc = {"version": 1, "templates": {"u": "s3://bucket/data"},
           "gen": [{"key": "a/{{i}}.{{j}}", "url": "{{u}}/f{{i}}.nc", "offset": "{{j * 1000}}",
                    "length": "1000", "dimensions": {"i": {"stop": side},
                                                     "j": {"start": 1, "stop": side + 1}}}]}
    store, seconds, _, peak = _traced(lambda: ReferenceStore(doc))
    assert seconds < 5 and peak < 8 << 20, (seconds, peak)
    assert store.lookup(f"a/{side - 1}.{side}") == Target(
        f"s3://bucket/data/f{side - 1}.nc", side * 1000, 1000)
    for missing in (f"a/{side}.1", "a/0.0", "a/01.1", "a/-0.1", "a/1.1.1", "b/1.1", "a/1."):
        assert store.lookup(missing) is None, missing


def test_generated_references_match_rendering_every_combination():
    # Lists and ranges with steps, a template in the key, a dimension left out of it (its
    # last value wins, as when every combination is rendered in turn), later entries
    # replacing earlier ones and `refs`; and a key of expressions, rendered once.
    doc = {"version": 1, "templates": {"p": "v"},
           "refs": {"v/x0.1": ["plain"], "other": ["o", 1, 2]},
           "gen": [{"key": "{{p}}/{{name}}{{i}}", "url": "f-{{name}}-{{i}}-{{k}}",
                    "dimensions": {"name": ["x", "yy", 3], "i": {"start": 1, "stop": 8,
                                                                   "step": 3},
                                   "k": ["a", "b"]}},
                   {"key": "v/x{{i}}", "url": "g{{i}}", "offset": "{{i * 10}}",
                    "length": "{{i + 1}}", "dimensions": {"i": [4, 7]}},
                   {"key": "w/{{i * 2}}", "url": "h", "dimensions": {"i": {"stop": 3}}}]}
    expected = {"v/x0.1": Target("plain", 0, None), "other": Target("o", 1, 2)}
    for name in ("x", "yy", 3):
        for i in (1, 4, 7):
            expected[f"v/{name}{i}"] = Target(f"f-{name}-{i}-b", 0, None)
    for i in (4, 7):
        expected[f"v/x{i}"] = Target(f"g{i}", i * 10, i + 1)
    for i in range(3):
        expected[f"w/{i * 2}"] = Target("h", 0, None)
    store = ReferenceStore(doc)
    assert {k: store.lookup(k) for k in expected} == expected
    assert sorted(store.list_prefix("")) == sorted(expected)
    for missing in ("v/x2", "v/z1", "v/3", "w/1", "w/6", "v/yy10"):
        assert store.lookup(missing) is None, missing
    many = {"version": 1, "gen": [{"key": "k{{i + 1}}", "url": "u",
                                   "dimensions": {"i": {"stop": 10**6}}}]}
    with pytest.raises(ReferenceFormatError, match="key of expressions"):
        ReferenceStore(many)
    bad = {"version": 1, "gen": [{"key": "k{{i}}", "url": "{{nowhere}}",
                                  "dimensions": {"i": {"stop": 10**6}}}]}
    with pytest.raises(ReferenceFormatError, match="'nowhere' is not defined"):
        ReferenceStore(bad)


# -- remote targets -----------------------------------------------------------------------
def _with_targets(refs, url):
    return {k: [url, *v[1:]] if isinstance(v, list) else v for k, v in refs.items()}


def test_http_targets_coalesced(http_server, refs_dir):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    shutil.copy(refs_dir / "sample.h5", os.path.join(http_server.root, "sample.h5"))
    refs = _with_targets(_sample_refs(refs_dir), f"{http_server.url}/sample.h5")
    group = zarrcore.open_group("reference://", mode="r", storage_options={"fo": refs})
    http_server.reset()
    np.testing.assert_array_equal(group["temp"][...], VALUES["temp"])
    # 12 chunks laid out one after another: one request
    assert http_server.requests == 1
    _check(group)


def test_many_target_files_fetched_concurrently(http_server, io_config):
    """A virtual dataset over many files (one chunk each, as a concatenation of NetCDF files
    makes): their requests go out together, not one file after another."""
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    io_config.set(io_concurrency=8)
    refs = {".zgroup": '{"zarr_format": 2}',
            "a/.zarray": json.dumps({"shape": [32], "chunks": [4], "dtype": "<i4",
                                     "fill_value": 0, "order": "C", "filters": None,
                                     "compressor": None, "zarr_format": 2})}
    for i in range(8):
        with open(os.path.join(http_server.root, f"part{i}.bin"), "wb") as f:
            f.write(b"\0" * 100 + np.arange(4 * i, 4 * i + 4, dtype="<i4").tobytes())
        refs[f"a/{i}"] = [f"{http_server.url}/part{i}.bin", 100, 16]
    array = zarrcore.open_array(ReferenceStore(refs), path="a", mode="r")
    http_server.reset()
    http_server.faults.delay = 0.2
    np.testing.assert_array_equal(array[...], np.arange(32))
    assert http_server.requests == 8 and http_server.max_in_flight >= 4


def test_s3_targets(s3_bucket, refs_dir):
    server, bucket = s3_bucket
    store = zarrcore.ObjectStore.from_url(f"s3://{bucket}", storage_options=
                                          server.storage_options())
    store.set("dir/sample.h5", (refs_dir / "sample.h5").read_bytes())
    refs = _with_targets(_sample_refs(refs_dir), f"{bucket}/dir/sample.h5")
    group = zarrcore.open_group("reference://", mode="r", storage_options={
        "fo": refs, "remote_protocol": "s3", "remote_options": server.storage_options()})
    _check(group)
    store.set("refs.json", json.dumps(_with_targets(refs, "sample.h5")).encode())
    store.set("dir/refs.json", json.dumps(_with_targets(refs, "sample.h5")).encode())
    # relative targets are below the references file, on its store
    _check(zarrcore.open_group("reference://", mode="r", storage_options={
        "fo": f"s3://{bucket}/dir/refs.json", "target_options": server.storage_options(),
        "remote_options": server.storage_options()}))
    with pytest.raises(ReferenceTargetError, match="'temp/0.0'"):
        zarrcore.open_group("reference://", mode="r", storage_options={
            "fo": f"s3://{bucket}/refs.json", "target_options": server.storage_options(),
            "remote_options": server.storage_options()})["temp"][...]


# -- xarray -------------------------------------------------------------------------------
def test_xarray_opens_references(refs_dir):
    xr = pytest.importorskip("xarray", reason="xarray is not installed")
    # (kerchunk names the dimensions of HDF5 datasets without scales phony_dim_N, so the
    # datasets of the fixture, of other sizes, open one at a time)
    ds = xr.open_dataset(str(refs_dir / "sample.json"), engine="zarrcore",
                         drop_variables=["count", "small", "wide"], mask_and_scale=False)
    np.testing.assert_array_equal(ds["temp"].values, VALUES["temp"])
    assert ds["temp"].attrs["units"] == "K"
    ds = xr.open_dataset("reference://", engine="zarrcore",
                         storage_options={"fo": str(refs_dir / "sample.json")},
                         drop_variables=["count", "small", "temp"], mask_and_scale=False)
    np.testing.assert_array_equal(ds["wide"].values, VALUES["wide"])
