"""zarrcore.convert and zarrcore.copy: exact results that zarr-python and tensorstore read,
kill-and-resume giving the same bytes, bounded memory."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from _exact_values import arrays_of, cast, dtype_pairs, same_values
from _peer_arrays import unpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peers import peer  # noqa: F401 (a fixture)

import zarrcore
from zarrcore.cli import main
from zarrcore.tools.hierarchy import CONVERT_STATE_KEY

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

# Subprocesses import the zarrcore under test: the installed one, or an in-place build.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(zarrcore.__file__))
DATA = np.random.default_rng(1).normal(size=(60, 70, 33)).astype("f4")


@pytest.fixture
def v2_source(tmp_path):
    """A consolidated v2 hierarchy: blosc-lz4 3-d data with _ARRAY_DIMENSIONS, a zlib + delta
    1-d array, an F-order array and a fill value."""
    root = tmp_path / "src.zarr"
    g = zarrcore.open_group(str(root), mode="w", zarr_format=2, attributes={"title": "t"})
    a = g.create_array("data", shape=DATA.shape, dtype="f4", chunks=(16, 16, 11),
                       compressors={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
                       fill_value=-1.0, attributes={"_ARRAY_DIMENSIONS": ["t", "y", "x"], "units": "K"})
    a[:] = DATA
    a[:16, :16, :11] = -1.0  # one chunk all fill: not stored
    b = g.sub = g.create_group("sub").create_array(
        "ramp", shape=(500,), dtype="i8", chunks=(64,), filters=[{"id": "delta", "dtype": "<i8"}],
        compressors={"id": "zlib", "level": 3})
    b[:] = np.arange(500) * 3
    f = g.create_array("fortran", shape=(9, 13), dtype="u2", chunks=(4, 5), order="F",
                       compressors={"id": "zstd", "level": 2})
    f[:] = np.arange(117, dtype="u2").reshape(9, 13)
    zarrcore.consolidate_metadata(str(root))
    return root


def _expected():
    data = DATA.copy()
    data[:16, :16, :11] = -1.0
    return {"data": data, "sub/ramp": np.arange(500) * 3,
            "fortran": np.arange(117, dtype="u2").reshape(9, 13)}


def _check_everywhere(path, expected):
    """zarrcore, zarr-python and tensorstore read `expected` from the hierarchy at `path`."""
    g = zarr.open_group(str(path), mode="r")
    for name, want in expected.items():
        np.testing.assert_array_equal(zarrcore.open_array(str(path), path=name)[...], want)
        np.testing.assert_array_equal(g[name][...], want)
        fmt = g[name].metadata.zarr_format
        driver = "zarr3" if fmt == 3 else "zarr"
        spec = {"driver": driver, "kvstore": {"driver": "file", "path": str(path / name)}}
        if _beyond_tensorstore(g[name].metadata.to_dict()):
            continue
        got = ts.open(spec, read=True).result().read().result()
        np.testing.assert_array_equal(got, want)


def _beyond_tensorstore(metadata):
    """Does the array use what tensorstore has not: numcodecs.<id> codecs, or v2 filters?
    (Decided up front: a C++ exception out of tensorstore aborts the AddressSanitizer run.)"""
    if metadata["zarr_format"] == 3:
        return "numcodecs." in json.dumps(metadata["codecs"], default=str)
    return bool(metadata.get("filters"))


def test_v2_to_v3_raw_keeps_everything(v2_source, tmp_path):
    dst = tmp_path / "v3.zarr"
    report = zarrcore.convert(str(v2_source), str(dst), zarr_format=3, progress=False)
    assert report.arrays == 3 and report.raw_arrays == 3
    _check_everywhere(dst, _expected())
    meta = json.loads((dst / "data/zarr.json").read_text())
    assert meta["dimension_names"] == ["t", "y", "x"]
    assert meta["attributes"] == {"units": "K"} and meta["fill_value"] == -1.0
    assert [c["name"] for c in meta["codecs"]] == ["bytes", "blosc"]
    ramp = json.loads((dst / "sub/ramp/zarr.json").read_text())
    assert [c["name"] for c in ramp["codecs"]] == ["numcodecs.delta", "bytes", "numcodecs.zlib"]
    fortran = json.loads((dst / "fortran/zarr.json").read_text())
    assert fortran["codecs"][0] == {"name": "transpose", "configuration": {"order": [1, 0]}}
    # Chunks are byte for byte the source's; the fill chunk stays absent.
    assert (dst / "data/c/1/2/0").read_bytes() == (v2_source / "data/1.2.0").read_bytes()
    assert not (dst / "data/c/0/0/0").exists()
    root = json.loads((dst / "zarr.json").read_text())
    assert set(root["consolidated_metadata"]["metadata"]) == {"data", "sub", "sub/ramp", "fortran"}
    assert not (dst / CONVERT_STATE_KEY).exists()
    assert zarrcore.verify(str(dst)).ok


def test_reshard_rechunk_and_back_to_v2(v2_source, tmp_path):
    sharded = tmp_path / "sharded.zarr"
    zarrcore.convert(str(v2_source), str(sharded), zarr_format=3, chunks={"data": (8, 10, 11)},
                     shards={"data": (32, 40, 33)}, compressor="zstd:5", progress=False)
    a = zarrcore.open_array(str(sharded), path="data")
    assert a.shards == (32, 40, 33) and a.chunks == (8, 10, 11)
    _check_everywhere(sharded, _expected())
    # Reshard the sharded array, then rechunk it into v2 with gzip.
    resharded = tmp_path / "resharded.zarr"
    zarrcore.convert(str(sharded), str(resharded), shards=(20, 35, 33), chunks=(5, 7, 11),
                     progress=False)
    assert zarrcore.open_array(str(resharded), path="data").shards == (20, 35, 33)
    _check_everywhere(resharded, _expected())
    back = tmp_path / "back.zarr"
    zarrcore.convert(str(resharded), str(back), zarr_format=2, chunks=(13, 17, 5),
                     compressor="gzip:4", progress=False)
    meta = json.loads((back / "data/.zarray").read_text())
    assert meta["chunks"] == [13, 17, 5] and meta["compressor"] == {"id": "gzip", "level": 4}
    assert json.loads((back / "data/.zattrs").read_text())["_ARRAY_DIMENSIONS"] == ["t", "y", "x"]
    assert meta["fill_value"] == -1.0
    assert json.loads((back / "fortran/.zarray").read_text())["order"] == "F"
    _check_everywhere(back, _expected())
    assert (back / ".zmetadata").exists()


def test_v3_to_v2_raw_and_options(tmp_path):
    src = tmp_path / "a3.zarr"
    a = zarrcore.create_array(str(src), shape=(50, 40), dtype="i2", chunks=(20, 20),
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}],
                              dimension_names=("r", "c"))
    a[:] = np.arange(2000, dtype="i2").reshape(50, 40)
    dst = tmp_path / "a2.zarr"
    assert zarrcore.convert(str(src), str(dst), zarr_format=2, progress=False).raw_arrays == 1
    assert json.loads((dst / ".zattrs").read_text()) == {"_ARRAY_DIMENSIONS": ["r", "c"]}
    assert (dst / "1.1").read_bytes() == (src / "c/1/1").read_bytes()
    np.testing.assert_array_equal(zarr.open_array(str(dst), mode="r")[...], a[...])
    # A lossless dtype change; a lossy one is refused.
    wide = tmp_path / "wide.zarr"
    zarrcore.convert(str(src), str(wide), dtype="int32", progress=False)
    w = zarrcore.open_array(str(wide))
    assert w.dtype == np.int32 and np.array_equal(w[...], a[...])
    with pytest.raises(ValueError, match="does not convert to int8 exactly"):
        zarrcore.convert(str(src), str(tmp_path / "narrow.zarr"), dtype="int8", progress=False)
    with pytest.raises(zarrcore.errors.NodeExistsError):
        zarrcore.convert(str(src), str(wide), progress=False)
    zarrcore.convert(str(src), str(wide), overwrite=True, compressor="none", progress=False)
    assert zarrcore.open_array(str(wide)).dtype == np.int16


def test_narrowing_dtype_converts_when_every_value_fits(tmp_path, capsys):
    src = tmp_path / "wide.zarr"
    a = zarrcore.create_array(str(src), shape=(40, 30), dtype="i8", chunks=(10, 10))
    a[...] = np.arange(1200).reshape(40, 30) - 600
    narrow = tmp_path / "narrow.zarr"
    assert main(["convert", "-q", str(src), str(narrow), "--dtype", "int16"]) == 0
    n = zarrcore.open_array(str(narrow))
    assert n.dtype == np.int16 and np.array_equal(n[...], a[...])
    a[25, 17] = 70000  # one value int16 cannot hold
    assert main(["convert", "-q", str(src), str(tmp_path / "bad.zarr"), "--dtype", "int16"]) == 1
    err = capsys.readouterr().err
    assert "the value 70000 at (25, 17) (stored in 'c/2/1') does not convert to int16" in err
    floats = zarrcore.create_array(str(tmp_path / "f.zarr"), shape=(4,), dtype="f8", chunks=(2,))
    floats[...] = [0.5, np.nan, -1.0, 2.0]
    zarrcore.convert(str(tmp_path / "f.zarr"), str(tmp_path / "f4.zarr"), dtype="f4",
                     progress=False)
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "f4.zarr"))[...],
                                  np.array([0.5, np.nan, -1.0, 2.0], "f4"))
    with pytest.raises(ValueError, match=r"the value 0.5 at \(0,\)"):
        zarrcore.convert(str(tmp_path / "f.zarr"), str(tmp_path / "i.zarr"), dtype="i4",
                         progress=False)


def test_cli_convert_refuses_what_it_cannot_do(v2_source, tmp_path, capsys):
    dst = tmp_path / "out.zarr"
    # A chunk shape no array here has the rank of.
    assert main(["convert", "-q", str(v2_source / "data"), str(dst), "--chunks", "64,64"]) == 1
    err = capsys.readouterr().err
    assert "--chunks" in err and "fits no array here: they have 3 dimensions" in err
    assert not dst.exists()
    # --codecs takes a JSON list; it says so, and where the short forms go.
    assert main(["convert", "-q", str(v2_source), str(dst), "--codecs", "zstd:3"]) == 1
    err = capsys.readouterr().err
    assert "JSON list of v3 codecs" in err and "--compressor" in err and "Expecting" not in err
    # Messages name the command's flags and no empty path.
    assert main(["convert", "-q", str(v2_source), str(dst)]) == 0
    assert main(["convert", "-q", str(v2_source), str(dst)]) == 1
    err = capsys.readouterr().err
    assert "--overwrite" in err and "at ''" not in err
    assert main(["copy", "-q", str(v2_source), str(dst)]) == 1
    err = capsys.readouterr().err
    assert "--overwrite" in err and "--resume" in err and "at ''" not in err


def test_cli_convert_and_copy_into_zips(v2_source, tmp_path, capsys):
    out = tmp_path / "out.zip"
    assert main(["convert", "-q", str(v2_source), str(out), "--zarr-format", "3"]) == 0
    assert main(["convert", "-q", str(v2_source), str(out), "--zarr-format", "3",
                 "--resume", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["objects_written"] == 0 and report["objects_kept"] > 0
    for name, want in _expected().items():
        np.testing.assert_array_equal(zarrcore.open_array(str(out), path=name, mode="r")[...],
                                      want)
    assert main(["convert", "-q", str(v2_source), str(out), "--overwrite"]) == 0
    assert zarrcore.open_group(str(out), mode="r").metadata.zarr_format == 2
    # A path into a zip names a node in it.
    vol = tmp_path / "vol.zip"
    assert main(["copy", "-q", str(v2_source / "sub"), f"{vol}/a/sub"]) == 0
    assert main(["convert", "-q", str(v2_source / "data"), f"{vol}/vol"]) == 0
    assert main(["info", "--json", f"{vol}/vol"]) == 0
    assert json.loads(capsys.readouterr().out)["shape"] == [60, 70, 33]
    np.testing.assert_array_equal(zarrcore.open_array(str(vol), path="a/sub/ramp", mode="r")[...],
                                  np.arange(500) * 3)


def test_memory_stores_and_copy(tmp_path):
    src = {}
    g = zarrcore.open_group(src, mode="w")
    g.create_array("x", shape=(30,), dtype="f8", chunks=(7,))[:] = np.linspace(0, 1, 30)
    dst = {}
    zarrcore.convert(src, dst, chunks=(10,), progress=False)
    assert np.array_equal(zarrcore.open_array(dst, path="x")[...], np.linspace(0, 1, 30))
    copied = {}
    report = zarrcore.copy(dst, copied, progress=False)
    assert copied == dst and report.keys == len(dst)
    on_disk = tmp_path / "copy.zarr"
    assert main(["copy", "-q", str(tmp_path / "none"), str(on_disk)]) == 0  # nothing to copy
    zarrcore.copy(copied, str(on_disk), progress=False, overwrite=True)
    assert zarrcore.verify(str(on_disk)).ok
    np.testing.assert_array_equal(zarr.open_array(str(on_disk / "x"), mode="r")[...], np.linspace(0, 1, 30))


def test_cli_convert(v2_source, tmp_path, capsys):
    dst = tmp_path / "cli.zarr"
    assert main(["convert", "-q", str(v2_source), str(dst), "--zarr-format", "3",
                 "--shards", "32,32,33", "--chunks", "16,16,11", "--compressor", "blosc:zstd:3:bitshuffle",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["arrays"] == 3
    a = zarrcore.open_array(str(dst), path="data")
    assert a.shards == (32, 32, 33)
    inner = a.metadata.codecs[0]["configuration"]["codecs"]
    assert inner[1]["configuration"]["shuffle"] == "bitshuffle"
    # The 1-d and 2-d arrays keep their chunking; they get the compressor.
    assert zarrcore.open_array(str(dst), path="sub/ramp").shards is None
    _check_everywhere(dst, _expected())
    assert main(["convert", "-q", str(v2_source), str(dst)]) == 1  # exists
    assert main(["verify", "-q", str(dst)]) == 0


CONVERT_SCRIPT = """
import sys, zarrcore
zarrcore.config.set(num_threads=1)
zarrcore.convert(sys.argv[1], sys.argv[2], zarr_format=3, chunks=(8, 8, 8), shards=(16, 16, 16),
                 compressor="zstd:3", resume=sys.argv[3] == "resume", progress=False,
                 memory="64MiB")
"""


def _tree_bytes(path):
    out = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, path)] = open(full, "rb").read()
    return out


@pytest.mark.slow
def test_killed_conversion_resumes_to_the_same_bytes(tmp_path):
    src = tmp_path / "big.zarr"
    a = zarrcore.create_array(str(src), shape=(96, 96, 96), dtype="f4", chunks=(32, 32, 32),
                              zarr_format=2, compressors={"id": "blosc", "cname": "lz4", "clevel": 5})
    a[:] = np.random.default_rng(3).random((96, 96, 96), dtype="f4")
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    whole = tmp_path / "whole.zarr"
    subprocess.run([sys.executable, "-c", CONVERT_SCRIPT, str(src), str(whole), "fresh"],
                   env=env, check=True)
    cut = tmp_path / "cut.zarr"
    proc = subprocess.Popen([sys.executable, "-c", CONVERT_SCRIPT, str(src), str(cut), "fresh"], env=env)
    # Kill it once some shards (of 216) are written, before it is done.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        shards = sum(len(f) for _, _, f in os.walk(cut / "c")) if (cut / "c").exists() else 0
        if shards >= 20 or proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.kill()  # SIGKILL; TerminateProcess on Windows
    proc.wait()
    if not (cut / CONVERT_STATE_KEY).exists():
        pytest.skip("the conversion finished before it could be killed")
    written = sum(len(f) for _, _, f in os.walk(cut / "c"))
    assert 0 < written < 216
    # A plain rerun refuses; --resume finishes it.
    failed = subprocess.run([sys.executable, "-c", CONVERT_SCRIPT, str(src), str(cut), "fresh"],
                            env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and "unfinished conversion" in failed.stderr
    subprocess.run([sys.executable, "-c", CONVERT_SCRIPT, str(src), str(cut), "resume"],
                   env=env, check=True)
    got, want = _tree_bytes(cut), _tree_bytes(whole)
    got = {k: v for k, v in got.items() if ".zarrcore-tmp-" not in k}
    assert got.keys() == want.keys() and got == want


def test_resume_rewrites_damaged_and_missing_objects(tmp_path):
    src = tmp_path / "s.zarr"
    a = zarrcore.create_array(str(src), shape=(40, 40), dtype="u4", chunks=(10, 10))
    a[:] = np.arange(1600, dtype="u4").reshape(40, 40)
    dst = tmp_path / "d.zarr"
    zarrcore.convert(str(src), str(dst), chunks=(20, 20), progress=False)
    want = _tree_bytes(dst)
    # Pretend it was cut short: the state document back, one object gone, one damaged.
    (dst / CONVERT_STATE_KEY).write_text(json.dumps({"source": "", "options": {
        "zarr_format": None, "chunks": [20, 20], "shards": None, "codecs": None,
        "compressor": None, "dtype": None, "dimension_names": None}}))
    (dst / "c/0/1").unlink()
    raw = bytearray((dst / "c/1/1").read_bytes())
    raw[-3] ^= 0xFF
    (dst / "c/1/1").write_bytes(bytes(raw))
    report = zarrcore.convert(str(src), str(dst), chunks=(20, 20), resume=True, progress=False)
    assert report.objects_written == 2 and report.objects_kept == 2
    assert _tree_bytes(dst) == want
    with pytest.raises(ValueError, match="other options"):
        (dst / CONVERT_STATE_KEY).write_text(json.dumps({"options": {}}))
        zarrcore.convert(str(src), str(dst), chunks=(20, 20), resume=True, progress=False)


RSS_SCRIPT = """
zarrcore.config.set(num_threads=2)
base = status_kib("VmRSS")
zarrcore.convert(sys.argv[1], sys.argv[2], zarr_format=3, chunks=(32, 64, 64),
                 shards=(64, 128, 128), compressor="zstd:1", memory=sys.argv[3], progress=False)
print(status_kib("VmHWM") - base)
"""


@pytest.mark.slow
@pytest.mark.measures_memory
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_peak_rss_stays_under_the_memory_limit(tmp_path):
    """A 256 MiB array whose source chunks span the whole first axis, converted with a 96 MiB
    limit: the memory it grows by stays under the limit (and far under the array)."""
    from _probes import run_measured

    src = tmp_path / "rss.zarr"
    shape = (256, 512, 512)
    a = zarrcore.create_array(str(src), shape=shape, dtype="u2", chunks=(256, 64, 64),
                              zarr_format=2, compressors={"id": "blosc", "cname": "lz4", "clevel": 1})
    for i in range(0, 512, 64):
        a[:, i:i + 64] = np.arange(256 * 64 * 512, dtype="u2").reshape(256, 64, 512)
    limit = 96 << 20
    grown_kib, = run_measured(RSS_SCRIPT, src, tmp_path / "o.zarr", limit)
    assert grown_kib * 1024 < limit, grown_kib >> 10
    assert zarrcore.verify(str(tmp_path / "o.zarr")).ok
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "o.zarr"))[:, 64:128],
                                  a[:, 64:128])


def _keys_bytes(path):
    return {k: v for k, v in _tree_bytes(path).items() if not k.startswith(".zarrcore")}


def test_copy_resume_keeps_whole_keys_and_redoes_the_rest(tmp_path):
    src = tmp_path / "src.zarr"
    a = zarrcore.create_array(str(src), shape=(40, 40), dtype="i4", chunks=(10, 10))
    a[:] = np.arange(1600).reshape(40, 40)
    dst = tmp_path / "dst.zarr"
    zarrcore.copy(str(src), str(dst), progress=False)
    # As a copy cut short leaves it: metadata (written last) and some chunks missing, one
    # chunk of another size (left by an older copy of something else).
    (dst / "zarr.json").unlink()
    chunks = sorted(p for p in (dst / "c").rglob("*") if p.is_file())
    for p in chunks[:6]:
        p.unlink()
    chunks[6].write_bytes(b"xx")
    report = zarrcore.copy(str(src), str(dst), resume=True, progress=False)
    assert report.skipped == 16 - 7 and report.keys == 7 + 1  # the metadata is copied again
    assert _keys_bytes(dst) == _keys_bytes(src)
    with pytest.raises(ValueError, match="resume"):
        zarrcore.copy(str(src), str(dst), resume=True, overwrite=True, progress=False)
    # Over a complete copy, resume copies only the metadata again.
    assert main(["copy", "-q", "--resume", str(src), str(dst)]) == 0
    assert _keys_bytes(dst) == _keys_bytes(src)


def test_cli_messages_name_flags_not_parameters(v2_source, tmp_path, capsys):
    dst = tmp_path / "out.zarr"
    assert main(["convert", "-q", str(v2_source), str(dst), "--zarr-format", "2",
                 "--shards", "32,32,33"]) == 1
    err = capsys.readouterr().err
    assert "sharding needs --zarr-format 3" in err and "zarr_format" not in err
    assert main(["convert", "-q", str(v2_source / "data"), str(dst), "--chunks", "64,64"]) == 1
    err = capsys.readouterr().err
    assert "--chunks '64,64' fits no array here" in err and "chunks=" not in err
    assert main(["convert", "-q", str(v2_source), str(dst)]) == 0
    assert main(["convert", "-q", str(v2_source), str(dst)]) == 1
    err = capsys.readouterr().err
    assert "replace it with --overwrite" in err and "=True" not in err
    # The Python API names its parameters.
    with pytest.raises(zarrcore.errors.NodeExistsError, match=r"with overwrite=True"):
        zarrcore.convert(str(v2_source), str(dst), progress=False)


def test_cli_mistyped_flag_shows_the_commands_usage(v2_source, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["convert", str(v2_source), str(tmp_path / "o.zarr"), "--chunkz", "8,8,8"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: zarrcore convert")
    assert "--chunkz (did you mean --chunks?)" in err


def test_cli_resume_takes_the_options_from_the_state(tmp_path, capsys):
    src = tmp_path / "s.zarr"
    a = zarrcore.create_array(str(src), shape=(40, 40), dtype="u4", chunks=(10, 10))
    a[:] = np.arange(1600, dtype="u4").reshape(40, 40)
    dst = tmp_path / "d.zarr"
    options = ["--zarr-format", "3", "--chunks", "20,20", "--compressor", "zstd:3"]
    assert main(["convert", "-q", str(src), str(dst), *options]) == 0
    want = _tree_bytes(dst)
    # Cut short: the state document back (as the first run wrote it), one object gone.
    (dst / CONVERT_STATE_KEY).write_text(json.dumps({"source": "", "options": {
        "zarr_format": 3, "chunks": "20,20", "shards": None, "codecs": None,
        "compressor": "zstd:3", "dtype": None, "dimension_names": None}}))
    (dst / "c/0/1").unlink()
    assert main(["convert", "-q", "--json", str(src), str(dst), "--resume"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["objects_written"] == 1 and report["objects_kept"] == 3
    assert _tree_bytes(dst) == want and not (dst / CONVERT_STATE_KEY).exists()
    # Options given again must be the recorded ones.
    (dst / CONVERT_STATE_KEY).write_text(json.dumps({"source": "", "options": {
        "zarr_format": 3, "chunks": "20,20", "compressor": "zstd:3"}}))
    assert main(["convert", "-q", str(src), str(dst), "--resume", "--chunks", "20,20"]) == 0
    (dst / CONVERT_STATE_KEY).write_text(json.dumps({"source": "", "options": {
        "zarr_format": 3, "chunks": "20,20", "compressor": "zstd:3"}}))
    assert main(["convert", "-q", str(src), str(dst), "--resume", "--chunks", "10,10"]) == 1
    err = capsys.readouterr().err
    assert "other options: --chunks '20,20'; resume" in err


def test_cli_copy_storage_options_apply_to_the_url(s3_bucket, v2_source, capsys):
    pytest.importorskip("obstore", reason="obstore (the remote extra) is not installed")
    server, bucket = s3_bucket
    url = f"s3://{bucket}/copy.zarr"
    options = json.dumps(server.storage_options())
    assert main(["copy", "-q", str(v2_source), url, "--storage-options", options]) == 0, \
        capsys.readouterr().err
    assert main(["verify", "-q", str(v2_source), url, "--storage-options", options]) == 0
    copied = zarrcore.open_array(url, path="data", mode="r",
                                 storage_options=server.storage_options())
    np.testing.assert_array_equal(copied[...],
                                  zarrcore.open_array(str(v2_source), path="data", mode="r")[...])


def _one_array(values, dtype=None, fill_value=None, chunks=(2,)):
    """A memory store holding `values` as a 1-d array."""
    store = {}
    a = zarrcore.create_array(store, shape=np.shape(values), dtype=dtype or values.dtype,
                              chunks=chunks, fill_value=fill_value)
    a[...] = values
    return store


@pytest.mark.parametrize("values, dtype, value, index", [
    (np.array([1, 9007199254740993], "i8"), "float64", "9007199254740993", 1),
    (np.array([0, 2**64 - 1], "u8"), "float64", "18446744073709551615", 1),
    (np.array([16777217], "i8"), "float32", "16777217", 0),
    (np.array([3, 2049], "i4"), "float16", "2049", 1),
    (np.array([65504, 65535], "u2"), "float16", "65535", 1),  # past float16's largest: inf
    (np.array([9007199254740993], "i8"), "complex128", "9007199254740993", 0),
    (np.array([5, 16777217], "u4"), "complex64", "16777217", 1),
    (np.array([1.0, 1e300], "f8"), "float32", "1e+300", 1),                # overflow to inf
    (np.array([0.5, 0.1], "f8"), "float32", "0.1", 1),
    (np.array([1e-45, 5e-324], "f8"), "float32", "1e-45", 0),              # underflow
    (np.array([np.nan, 2.5], "f4"), "int32", "nan", 0),
    (np.array([1.0, 3e9], "f8"), "int32", "3000000000.0", 1),
    (np.array([1 + 0j, 1 + 1j], "c16"), "float64", "(1+1j)", 1),
    (np.array([0, 2], "i1"), "bool", "2", 1),
    (np.array([0, -1], "i8"), "uint64", "-1", 1),
    (np.array([2**63], "u8"), "int64", "9223372036854775808", 0),
    (np.array(["2000-01-01", "3000-01-01"], "M8[s]"), "M8[ns]", "3000-01-01T00:00:00", 1),
    (np.array(["2000-01-01T00:00:01"], "M8[s]"), "M8[m]", "2000-01-01T00:00:01", 0),
    (np.array([10**11], "m8[s]"), "m8[ns]", "100000000000 seconds", 0),
    (np.array([1000, 1500], "m8[ms]"), "m8[s]", "1500 milliseconds", 1),
])
def test_dtype_changes_no_value_numpy_calls_safe(values, dtype, value, index, tmp_path):
    """numpy calls int64 to float64 and datetime64[s] to [ns] safe; convert refuses every
    value that would change, naming the array, both types, the value and its index."""
    src = _one_array(values)
    with pytest.raises(zarrcore.errors.InexactConversionError) as info:
        zarrcore.convert(src, {}, dtype=dtype, progress=False)
    message = str(info.value)
    assert f"the value {value} at ({index},)" in message, message
    assert f"to {np.dtype(dtype)}" in message and f"converts {values.dtype} to" in message
    assert isinstance(info.value, ValueError)


def test_dtype_changes_what_converts_exactly():
    """NaN, infinities, NaT and values that fit convert; the result holds them exactly."""
    cases = [(np.array([np.nan, np.inf, -np.inf, -0.0, 0.5], "f8"), "float16"),
             (np.array([2**53, -(2**53), 2**62], "i8"), "float64"),
             (np.array(["NaT", "2262-04-11", "1678-01-01"], "M8[s]"), "M8[ns]"),
             (np.array(["NaT", 10**9 * 3600], "m8[ns]"), "m8[h]"),
             (np.array([1 + 2j, np.nan], "c16"), "complex64"),
             (np.array([-0.0, 7.0], "f4"), "int8")]
    for values, dtype in cases:
        dst = {}
        zarrcore.convert(_one_array(values), dst, dtype=dtype, progress=False)
        got = zarrcore.open_array(dst)[...]
        assert got.dtype == np.dtype(dtype)
        assert same_values(values, got), (values, got)


@pytest.mark.parametrize("values, fill, dtype", [
    (np.array([1, 2], "i8"), 2**53 + 1, "float64"),
    (np.array([1.0], "f8"), 1e300, "float32"),
    (np.array(["2000-01-01"], "M8[s]"), np.datetime64("3000-01-01", "s"), "M8[ns]"),
])
def test_fill_value_must_convert_exactly(values, fill, dtype):
    src = _one_array(values, fill_value=fill)
    with pytest.raises(zarrcore.errors.InexactConversionError, match="fill value"):
        zarrcore.convert(src, {}, dtype=dtype, progress=False)


@pytest.mark.parametrize("source, dtype", [("i8", "M8[s]"), ("M8[s]", "int64"),
                                           ("m8[s]", "M8[s]"), ("f8", "S8"), ("m8[Y]", "m8[D]")])
def test_dtype_changes_whose_values_cannot_be_compared_are_refused(source, dtype):
    src = _one_array(np.zeros(2, source))
    with pytest.raises(zarrcore.errors.InexactConversionError, match="cannot check"):
        zarrcore.convert(src, {}, dtype=dtype, progress=False)


def test_cli_dtype_refusal_names_array_types_and_value(tmp_path, capsys):
    src = tmp_path / "big.zarr"
    a = zarrcore.create_array(str(src), shape=(6,), dtype="i8", chunks=(2,))
    a[...] = [0, 1, 2, 3, 9007199254740993, 5]
    assert main(["convert", "-q", str(src), str(tmp_path / "f.zarr"), "--dtype", "float64"]) == 1
    err = capsys.readouterr().err
    assert ("the value 9007199254740993 at (4,) (stored in 'c/2') does not convert to float64 "
            "exactly (it would be 9007199254740992.0); --dtype converts int64 to float64 only "
            "where every value does") in err, err
    assert "holds the unfinished conversion: finish it with --resume once the values fit, or " \
        "replace it with --overwrite" in err
    a[4] = 2**53
    assert main(["convert", "-q", str(src), str(tmp_path / "g.zarr"), "--dtype", "float64"]) == 0
    np.testing.assert_array_equal(zarrcore.open_array(str(tmp_path / "g.zarr"))[...],
                                  [0, 1, 2, 3, 2.0**53, 5])


def test_resume_checks_the_values_it_converts(tmp_path):
    """A conversion cut short and resumed checks every block it converts again: a value
    changed in the source since is refused, not written inexactly."""
    src = tmp_path / "s.zarr"
    a = zarrcore.create_array(str(src), shape=(40,), dtype="i8", chunks=(10,))
    a[...] = np.arange(40) * 2**20
    dst = tmp_path / "d.zarr"
    zarrcore.convert(str(src), str(dst), dtype="float64", progress=False)
    (dst / CONVERT_STATE_KEY).write_text(json.dumps({"source": "", "options": {
        "zarr_format": None, "chunks": None, "shards": None, "codecs": None,
        "compressor": None, "dtype": "float64", "dimension_names": None}}))
    (dst / "c/3").unlink()
    a[35] = 2**60 + 1
    with pytest.raises(zarrcore.errors.InexactConversionError, match=r"at \(35,\)"):
        zarrcore.convert(str(src), str(dst), resume=True, progress=False)
    assert not (dst / "c/3").exists()
    assert main(["convert", "-q", "--resume", str(src), str(dst)]) == 1
    a[35] = 2**60
    report = zarrcore.convert(str(src), str(dst), resume=True, progress=False)
    assert report.objects_written == 1 and report.objects_kept == 3
    assert same_values(zarrcore.open_array(str(dst))[...], a[...])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), dtype_pairs())
def test_convert_refuses_or_keeps_every_value(data, pair):
    """Over pairs of data types: convert either refuses with InexactConversionError, when some
    value would change (by an oracle in Python's exact arithmetic), or writes values equal to
    the source's, each exactly."""
    source, target = pair
    values = data.draw(arrays_of(source, near=target))
    src = _one_array(values, fill_value=values[0])
    dst = {}
    numpy_cast = cast(values, target)
    changes = not same_values(values, numpy_cast)
    try:
        zarrcore.convert(src, dst, dtype=target, progress=False)
    except zarrcore.errors.InexactConversionError as e:
        kinds = {np.dtype(source).kind in "mM", np.dtype(target).kind in "mM"}
        assert changes or len(kinds) == 2 or "cannot check" in str(e), (values, e)
        return
    got = zarrcore.open_array(dst)[...]
    assert got.dtype == np.dtype(target) and not changes
    assert same_values(values, got), (values, got)


PEER_WRITES = """
import numpy as np
import zarr
for name, (dtype, values) in payload["arrays"].items():
    a = zarr.create_array(payload["root"] + "/" + name, shape=(len(values),), dtype=dtype,
                          chunks=(2,), zarr_format=3)
    a[...] = np.array(values, dtype=dtype)
result = None
"""

PEER_READS = """
import zarr
result = {name: pack(zarr.open_array(path, mode="r")[...]) for name, path in payload.items()}
"""


@pytest.mark.slow
def test_zarr34_arrays_convert_exactly_both_ways(peer, tmp_path):  # noqa: F811
    """Arrays zarr-python 3.4 wrote: what would change is refused, what converts is read back
    by it exactly."""
    arrays = {"big": ("int64", [1, 2**53 + 1, 3]), "fits": ("int64", [1, 2**53, -(2**40)]),
              "late": ("datetime64[s]", ["2000-01-01", "3000-01-01"]),
              "early": ("datetime64[s]", ["2000-01-01", "2262-04-11"])}
    peer.run(PEER_WRITES, {"root": str(tmp_path), "arrays": arrays})
    for name, dtype in (("big", "float64"), ("late", "M8[ns]")):
        with pytest.raises(zarrcore.errors.InexactConversionError, match="exactly"):
            zarrcore.convert(str(tmp_path / name), str(tmp_path / f"{name}-out"), dtype=dtype,
                             progress=False)
    outputs = {}
    for name, dtype in (("fits", "float64"), ("early", "M8[ns]")):
        outputs[name] = str(tmp_path / f"{name}-out")
        zarrcore.convert(str(tmp_path / name), outputs[name], dtype=dtype, progress=False)
    read = peer.run(PEER_READS, outputs)
    for name, (dtype, values) in arrays.items():
        if name in read:
            got = unpack(read[name])
            assert same_values(np.array(values, dtype=dtype), got), (name, got)


def test_ml_dtypes_convert_exactly_or_not_at_all():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (the ml extra) is not installed")
    halves = np.array([1.0, 2.5, np.nan, -0.0, np.inf], dtype=ml_dtypes.bfloat16)
    dst = {}
    zarrcore.convert(_one_array(halves), dst, dtype="float32", progress=False)
    assert same_values(halves.astype("f8"), zarrcore.open_array(dst)[...].astype("f8"))
    back = {}
    zarrcore.convert(dst, back, dtype="bfloat16", progress=False)
    assert zarrcore.open_array(back)[...].tobytes() == halves.tobytes()
    with pytest.raises(zarrcore.errors.InexactConversionError, match=r"the value 1.0039"):
        zarrcore.convert(_one_array(np.array([1, 1.00390625], "f4")), {}, dtype="bfloat16",
                         progress=False)
    with pytest.raises(zarrcore.errors.InexactConversionError, match="the value 9 at"):
        zarrcore.convert(_one_array(np.array([7, 9], "i2")), {}, dtype="int4", progress=False)


def test_string_types_convert_only_when_no_string_is_cut():
    words = np.array(["abcdef", "x"], "U6")
    with pytest.raises(zarrcore.errors.InexactConversionError, match="the value abcdef at"):
        zarrcore.convert(_one_array(words), {}, dtype="U3", progress=False)
    dst = {}
    zarrcore.convert(_one_array(words), dst, dtype="U8", progress=False)
    assert zarrcore.open_array(dst)[...].tolist() == ["abcdef", "x"]
    with pytest.raises(zarrcore.errors.InexactConversionError, match="cannot check"):
        zarrcore.convert(_one_array(words), {}, dtype="S8", progress=False)
