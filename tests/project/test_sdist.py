"""The source distribution ships what the build reads: its file list (setuptools' egg_info, as
`python -m build --sdist` makes it from MANIFEST.in) against the checkout's build inputs, and
every file a shipped source includes or cimports is shipped too."""
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

if not (ROOT / "setup.py").is_file() or not (ROOT / "MANIFEST.in").is_file():
    pytest.skip("needs the source checkout (setup.py, MANIFEST.in) beside the tests",
                allow_module_level=True)
for needed in ("setuptools", "Cython", "numpy", "blosc"):
    pytest.importorskip(needed, reason=f"setup.py imports {needed} (the build requirements)")

# What the build reads: setup.py's and pyproject.toml's inputs (the README is the long
# description; the licence files; the SBOM's generator), the package, the Cython sources and
# headers, csrc/.
BUILD_INPUTS = ["setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in",
                "licenses/*.txt", "wheels/sbom.py",
                "zarrcore/**/*.py", "zarrcore/**/*.pyi", "zarrcore/**/*.pyx", "zarrcore/**/*.pxd",
                "zarrcore/*.h", "zarrcore/py.typed", "csrc/**/*.c", "csrc/**/*.h"]
# Headers named in quotes that come from outside the sdist: Python's, numpy's, blosc's (those
# in angle brackets are the compiler's and the system's).
OUTSIDE = re.compile(r"Python\.h|blosc\.h|numpy/\w+\.h")


def build_inputs():
    return {p.relative_to(ROOT).as_posix() for pattern in BUILD_INPUTS for p in ROOT.glob(pattern)
            if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def sdist_files(tmp_path_factory):
    egg_base = tmp_path_factory.mktemp("egg-info")
    run = subprocess.run(
        [sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(egg_base)], cwd=ROOT,
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (sources,) = egg_base.glob("*.egg-info/SOURCES.txt")
    return {line for line in sources.read_text().splitlines()
            if line and ".egg-info/" not in line}


def test_the_sdist_ships_exactly_the_build_inputs(sdist_files):
    inputs = build_inputs()
    assert any(name.endswith(".pyx") for name in inputs)
    assert sorted(inputs - sdist_files) == []  # needed, not shipped
    assert sorted(sdist_files - inputs) == []  # shipped, not a build input (generated C...)


def test_what_shipped_sources_include_or_cimport_is_shipped(sdist_files):
    shipped = set(sdist_files)
    missing = []
    for name in sorted(shipped):
        if not name.endswith((".pyx", ".pxd", ".c", ".h")):
            continue
        text = (ROOT / name).read_text(encoding="utf-8")
        for header in re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M) + \
                re.findall(r'^\s*cdef extern from "([^"]+)"', text, re.M):
            found = {f"csrc/{header}", header} & shipped
            if not found and not OUTSIDE.fullmatch(header):
                missing.append(f"{name}: {header}")
        for module in re.findall(
                r"^\s*(?:from\s+(zarrcore\.[\w.]+|\.[\w.]+)\s+cimport|cimport\s+(zarrcore\.[\w.]+))",
                text, re.M):
            module = module[0] or module[1]
            if module.startswith("."):  # (relative to the package `name` is in)
                module = name.rsplit("/", 1)[0].replace("/", ".") + module
            pxd = module.replace(".", "/") + ".pxd"
            if pxd not in shipped:
                missing.append(f"{name}: {pxd}")
    assert missing == []


def test_setup_refuses_a_tree_without_its_cython_sources(tmp_path):
    (tmp_path / "csrc").mkdir()
    (tmp_path / "zarrcore").mkdir()
    (tmp_path / "csrc" / "zc_status.c").write_text("")
    (tmp_path / "setup.py").write_text((ROOT / "setup.py").read_text())
    run = subprocess.run([sys.executable, "setup.py", "-q", "egg_info"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "zarrcore build: no zarrcore/**/*.pyx or csrc/**/*.c" in run.stderr
