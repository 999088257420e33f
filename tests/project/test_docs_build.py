"""The documentation site builds with warnings as errors (as `make docs` builds it), and the
`test` extra installs what that build needs.

The suite's build reads, checks and cross-references every page as `make docs` does, with
Sphinx's `dummy` builder: it writes no HTML, which would take twice the time (the theme's
navigation of every page) and check nothing more of the sources."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")


def extras():
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's "
                                                    "tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "pyproject.toml")),
                    reason="pyproject.toml is not shipped with the package")
def test_the_test_extra_holds_the_docs_extra():
    def name(requirement):
        return re.match(r"[\w.-]+", requirement).group().lower()

    assert {name(r) for r in extras()["docs"]} - {name(r) for r in extras()["test"]} == set()


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(DOCS), reason="the docs are not shipped with the package")
def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "furo", "myst_parser", "xarray", "dask", "zarr"):
        pytest.importorskip(module, reason=f"the docs build needs {module} (the docs extra)")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "dummy",
         "-d", str(tmp_path / "doctrees"), DOCS, str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-5000:]
    doctrees = tmp_path / "doctrees"
    for page in ("index", "guide/migrating", "guide/performance", "guide/cli", "architecture"):
        assert (doctrees / f"{page}.doctree").exists(), page
    # The CLI reference is rendered from the parser: every subcommand has its section.
    cli = (doctrees / "guide" / "cli.doctree").read_bytes()
    for command in ("info", "tree", "verify", "demo", "convert", "copy"):
        assert f"usage: zarrcore {command}".encode() in cli, command
