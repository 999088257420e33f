"""Peer implementations that need another interpreter: zarr-python 3.4 (Python >= 3.12) and the
packages of tests/support/peer-requirements.txt, in the virtualenv `make peer-venv` builds
(.peer-venv at the repository's root, or the interpreter ZARRCORE_PEER_PYTHON names).

`peer` (a module-scoped fixture) runs a script there: the script gets the JSON `payload` as a
variable, and `pack`/`unpack` (tests/support/_peer_arrays.py), and leaves its answer, JSON too, in
`result`. Batch a module's cases into one call: each call starts an interpreter (about a second
with zarr imported)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

_SUPPORT = Path(__file__).resolve().parent
_ROOT = _SUPPORT.parent.parent
_WRAPPER = """
import json, sys
sys.path.insert(0, {support!r})
from _peer_arrays import pack, unpack
payload = json.load(sys.stdin)
result = None
{script}
sys.stdout.write("\\n" + json.dumps(result))
"""


def peer_python() -> tuple[str | None, str]:
    """The peer interpreter, or None and why there is none."""
    named = os.environ.get("ZARRCORE_PEER_PYTHON")
    if named:
        return named, ""
    python = _ROOT / ".peer-venv" / "bin" / "python"
    if not (_ROOT / ".peer-venv" / ".installed").exists():
        return None, ("no peer interpreter: `make peer-venv` builds .peer-venv from a pyenv "
                      "Python >= 3.12 (none was found, or it was not run)")
    return str(python), ""


class Peer:
    """Runs scripts in the peer interpreter."""

    def __init__(self, python: str) -> None:
        self.python = python

    def run(self, script: str, payload: Any = None, timeout: float = 120) -> Any:
        """`result` of `script` run with `payload`; AssertionError with the peer's stderr when
        it fails, TimeoutExpired after `timeout` seconds."""
        # Neither this worktree nor this interpreter's packages: the peer's own only. Nor
        # PYTHON_GIL, which `make ft-test` sets and a GIL build refuses to start with. -P
        # keeps the working directory off sys.path: the checkout's zarrcore.egg-info there
        # would register zarrcore's codec pipeline with the peer's zarr-python.
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHON_GIL")}
        code = _WRAPPER.format(script=script, support=str(_SUPPORT))
        proc = subprocess.run(
            [self.python, "-P", "-c", code], input=json.dumps(payload), capture_output=True,
            text=True, timeout=timeout, env=env, cwd=_ROOT,
        )
        if proc.returncode != 0:
            raise AssertionError(f"peer script failed ({proc.returncode}):\n{proc.stderr}")
        return json.loads(proc.stdout.rsplit("\n", 1)[-1])


@pytest.fixture(scope="module")
def peer() -> Peer:
    python, why = peer_python()
    if python is None:
        pytest.skip(why)
    return Peer(python)
