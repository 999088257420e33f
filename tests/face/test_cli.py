"""The command line: `zarrcore info`, `tree` and `demo`, run through zarrcore.cli.main."""
import importlib.metadata
import os
import subprocess
import sys

import numpy as np
import pytest

import zarrcore
from zarrcore.cli import main


@pytest.fixture
def hierarchy(tmp_path):
    root = tmp_path / "h.zarr"
    g = zarrcore.open_group(str(root), mode="w", attributes={"title": "t"})
    a = g.create_array("temps", shape=(20, 30), dtype="float32", chunks=(10, 10),
                       attributes={"units": "K"})
    a[:10] = 1.5
    sub = g.create_group("sub")
    sub.create_array("counts", shape=(7,), dtype="uint16", chunks=(3,))
    sub.create_group("deeper").create_array("flag", shape=(), dtype="bool", chunks=())
    return root


def test_version_is_the_distributions(capsys):
    # One version, set in zarrcore/__init__.py: the installed distribution's metadata, the
    # module and the command line all show it.
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0
    version = importlib.metadata.version("zarrcore")
    assert capsys.readouterr().out == f"zarrcore {version}\n"
    assert zarrcore.__version__ == version


def test_info_array(hierarchy, capsys):
    assert main(["info", str(hierarchy / "temps")]) == 0
    out = capsys.readouterr().out
    assert "Array" in out
    assert "float32" in out
    assert "(20, 30)" in out and "(10, 10)" in out
    assert "3/6" in out  # chunks initialized
    assert "2400" in out  # bytes


def test_info_group(hierarchy, capsys):
    assert main(["info", str(hierarchy)]) == 0
    out = capsys.readouterr().out
    assert "Group" in out


def test_tree(hierarchy, capsys):
    assert main(["tree", str(hierarchy)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 6  # the root, then one line per member
    body = "\n".join(lines[1:])
    for name in ("temps", "sub", "counts", "deeper", "flag"):
        assert name in body
    assert "(20, 30)" in body and "float32" in body and "uint16" in body
    # Members of "sub" are indented below it.
    indent = {}
    for line in lines[1:]:
        label = line.lstrip("│├└─  ")
        indent[label.split()[0]] = len(line) - len(label)
    assert indent["temps"] == indent["sub"] < indent["counts"] == indent["deeper"] < indent["flag"]


def test_tree_of_array(hierarchy, capsys):
    assert main(["tree", str(hierarchy / "sub" / "counts")]) == 0
    out = capsys.readouterr().out
    assert "(7,)" in out and "uint16" in out


def test_tree_does_not_write(hierarchy, capsys):
    before = sorted(p.relative_to(hierarchy) for p in hierarchy.rglob("*"))
    main(["tree", str(hierarchy)])
    main(["info", str(hierarchy / "temps")])
    assert sorted(p.relative_to(hierarchy) for p in hierarchy.rglob("*")) == before


@pytest.mark.parametrize("command", ["info", "tree"])
def test_missing_path(tmp_path, capsys, command):
    missing = tmp_path / "nope"
    assert main([command, str(missing)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert command in captured.err and "nope" in captured.err
    assert not missing.exists()  # reading never creates anything


def test_corrupt_metadata_reported(tmp_path, capsys):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "zarr.json").write_text("{broken")
    assert main(["info", str(tmp_path / "bad")]) == 1
    err = capsys.readouterr().err
    assert "zarr.json" in err


def test_usage_errors(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code != 0
    with pytest.raises(SystemExit) as info:
        main(["frobnicate", "x"])
    assert info.value.code != 0
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "info" in out and "tree" in out and "demo" in out


def test_demo(tmp_path, capsys):
    path = tmp_path / "demo.zarr"
    assert main(["demo", str(path)]) == 0
    out = capsys.readouterr().out
    assert "verified" in out
    g = zarrcore.open_group(str(path), mode="r")
    assert dict(g.attrs).get("title")
    members = dict(g.members(max_depth=None))
    assert isinstance(members["temperature"], zarrcore.Array)
    assert isinstance(members["climate"], zarrcore.Group)
    assert isinstance(members["climate/station_counts"], zarrcore.Array)
    t = g["temperature"]
    assert t.dtype == np.float32 and t.ndim == 3
    assert t.nchunks_initialized == t.nchunks
    np.testing.assert_array_equal(g["climate/station_counts"][...],
                                  (np.arange(1000) % 97).astype("uint16"))
    # Then the other commands on what demo wrote.
    assert main(["tree", str(path)]) == 0
    tree = capsys.readouterr().out
    assert "temperature" in tree and "station_counts" in tree
    assert main(["info", str(path / "temperature")]) == 0
    assert "float32" in capsys.readouterr().out


def test_demo_readable_by_zarr_python(tmp_path, capsys):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "demo.zarr"
    assert main(["demo", str(path)]) == 0
    capsys.readouterr()
    z = zarr.open_group(str(path), mode="r")
    mine = zarrcore.open_group(str(path), mode="r")
    np.testing.assert_array_equal(z["temperature"][...], mine["temperature"][...])
    np.testing.assert_array_equal(z["climate/station_counts"][...],
                                  mine["climate/station_counts"][...])
    assert tuple(z["temperature"].metadata.dimension_names) == ("time", "lat", "lon")


def test_demo_overwrites(tmp_path, capsys):
    path = tmp_path / "demo.zarr"
    (path / "stale").mkdir(parents=True)
    zarrcore.create_array(str(path), name="stale", shape=(1,), dtype="i1", overwrite=True)
    assert main(["demo", str(path)]) == 0
    assert "verified" in capsys.readouterr().out
    assert "stale" not in zarrcore.open_group(str(path), mode="r")


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(tmp_path):
    zarrcore.open_group(str(tmp_path / "g"), mode="w", attributes={"long": "x" * 300_000})
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zarrcore.__file__))}
    child = subprocess.Popen([sys.executable, "-m", "zarrcore.cli", "info", "--json",
                              str(tmp_path / "g")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
    assert child.stdout.read(10) == b'{\n  "name"'  # then `| head` goes away
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1
    assert err == "", err
