"""The scripts of the checkout's wheels/ directory, imported as modules by their tests."""
import importlib
import pathlib
import sys

import pytest

WHEELS = pathlib.Path(__file__).resolve().parents[2] / "wheels"


def wheel_script(name):
    """wheels/NAME.py, imported with wheels/ on the path (for its own imports of its
    neighbours); the test skipped where the checkout's wheels/ is not beside the tests."""
    if not (WHEELS / f"{name}.py").is_file():
        pytest.skip("needs the source checkout (wheels/) beside the tests")
    sys.path.insert(0, str(WHEELS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(WHEELS))
