"""A hierarchy with one unreadable node still lists: members(), keys(), tree() and the CLI
report the broken node and go on."""
import json
import subprocess
import sys

import numpy as np
import pytest

import zarrcore
from zarrcore.nodes import BrokenNode


@pytest.fixture(params=[2, 3])
def hierarchy(tmp_path, request):
    fmt = request.param
    root = zarrcore.open_group(tmp_path / "h.zarr", mode="w", zarr_format=fmt)
    root.create_array("a", shape=(4,), dtype="i4")[:] = np.arange(4)
    root.create_group("g").create_array("inner", shape=(2,), dtype="f8")
    root.create_array("z", shape=(3,), dtype="u1")
    broken = root.create_array("broken", shape=(4,), dtype="i4")
    key = "zarr.json" if fmt == 3 else ".zarray"
    (tmp_path / "h.zarr" / "broken" / key).write_text('{"zarr_format": ' + str(fmt) + ', "shape": "x"')
    return tmp_path / "h.zarr", broken.name


def test_members_report_the_broken_node_and_go_on(hierarchy):
    path, _ = hierarchy
    g = zarrcore.open_group(path, mode="r")
    members = dict(g.members(max_depth=None))
    assert sorted(members) == ["a", "broken", "g", "g/inner", "z"]
    broken = members["broken"]
    assert isinstance(broken, BrokenNode) and broken.path == "broken"
    assert isinstance(broken.error, zarrcore.errors.MetadataError)
    assert "broken" in repr(broken)
    assert g.keys() == ["a", "broken", "g", "z"]
    assert g.array_keys() == ["a", "z"] and g.group_keys() == ["g"]
    with pytest.raises(zarrcore.errors.MetadataError):
        g["broken"]


def test_tree_shows_the_broken_node(hierarchy):
    path, _ = hierarchy
    text = zarrcore.open_group(path, mode="r").tree()
    assert "broken (unreadable:" in text
    assert "inner (2,) float64" in text and "z (3,) uint8" in text


@pytest.mark.slow
def test_cli_tree_json_reports_the_broken_node(hierarchy):
    path, _ = hierarchy
    import os

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(zarrcore.__file__)))
    out = subprocess.run([sys.executable, "-m", "zarrcore.cli", "tree", "--json", str(path)],
                         capture_output=True, text=True, env=env, check=True).stdout
    doc = json.loads(out)
    kinds = {m["name"]: m["type"] for m in doc["members"]}
    assert kinds == {"a": "array", "broken": "unreadable", "g": "group", "z": "array"}
