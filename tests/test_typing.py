"""Type check and lint: mypy over the package and over typing_usage.py, which uses the public
API as a user would, and ruff over the package as pyproject.toml configures it. Any type
error or lint finding fails the test. The cache lives under the temporary directory: a
first run takes about 20-40 s, later runs about a second."""
import getpass
import os
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("mypy", reason="mypy is not installed (it is in the `test` extra)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_mypy_package_and_usage():
    cache = os.path.join(tempfile.gettempdir(), f"zarrcore-mypy-cache-{getpass.getuser()}")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "pyproject.toml"),
         "--cache-dir", cache, "--no-error-summary", "--hide-error-context",
         "zarrcore", os.path.join("tests", "typing_usage.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_ruff_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
