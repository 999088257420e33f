"""wheels/cross.py's targets (`make cross`): the macOS ones at the deployment targets the
cibuildwheel settings give, and the build settings it hands setup.py for each."""
import sys
import tomllib

import pytest
from wheel_scripts import WHEELS, wheel_script

ROOT = WHEELS.parent


@pytest.fixture(scope="module")
def cross():
    return wheel_script("cross")


def test_the_targets_are_macos_arm64_and_x86_64_and_windows_amd64(cross):
    assert {(t.system, t.platform) for t in cross.TARGETS.values()} == {
        ("darwin", "macosx-11.0-arm64"), ("darwin", "macosx-10.15-x86_64"),
        ("win32", "win-amd64")}


def test_the_macos_targets_are_cibuildwheel_s_deployment_targets(cross):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]
    deployment = {o["select"].split("macosx_")[1]: o["environment"]["MACOSX_DEPLOYMENT_TARGET"]
                  for o in config["overrides"] if "macosx" in o["select"]}
    for target in cross.TARGETS.values():
        if target.system == "darwin":
            arch = target.platform.rsplit("-", 1)[-1]
            assert target.platform == f"macosx-{deployment[arch]}-{arch}"
            assert target.zig.endswith(f"-macos.{deployment[arch]}")
            assert target.blosc_platform == target.platform.replace("-", "_").replace(".", "_")


@pytest.mark.parametrize("name, suffix", [("aarch64-macos", ".cpython-{abi}-darwin.so"),
                                          ("x86_64-windows", ".cp{abi}-win_amd64.pyd")])
def test_setup_py_is_handed_the_target_s_extension_suffix(cross, tmp_path, monkeypatch, name,
                                                          suffix):
    monkeypatch.setattr(cross, "CROSS", tmp_path)
    abi = f"{sys.version_info[0]}{sys.version_info[1]}"
    directory, module = cross.target_sysconfig(sys.executable, f"cp{abi}", cross.TARGETS[name])
    settings = {}
    exec((directory / f"{module}.py").read_text(), settings)
    variables = settings["build_time_vars"]
    assert variables["EXT_SUFFIX"] == suffix.format(abi=abi)
    assert variables["MACHDEP"] == cross.TARGETS[name].system
