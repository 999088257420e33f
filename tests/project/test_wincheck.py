"""The Windows port of csrc/, checked from Linux (wheels/wincheck.py, `make wincheck`): every
file cross-compiles with MinGW-w64, warnings as errors, and the system layer behaves as the
core needs when run under Wine."""
import importlib.util
import os
import pathlib
import shutil

import pytest

WINCHECK = pathlib.Path(__file__).resolve().parents[2] / "wheels" / "wincheck.py"
CC = os.environ.get("WIN_CC", "x86_64-w64-mingw32-gcc")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    shutil.which(CC) is None,
    reason=f"no {CC}: the Windows cross-compile check needs MinGW-w64 "
           "(apt-get install gcc-mingw-w64-x86-64)")]


@pytest.fixture(scope="module")
def wincheck():
    spec = importlib.util.spec_from_file_location("wincheck", WINCHECK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compiled(wincheck, tmp_path_factory):
    """(objects directory, failures) of cross-compiling csrc/ once for the module."""
    out = tmp_path_factory.mktemp("wincheck")
    return out, wincheck.compile_all(CC, out)


def test_every_csrc_file_cross_compiles_for_windows_without_warnings(compiled):
    out, failures = compiled
    assert failures == []
    sources = {p.stem for p in (WINCHECK.parent.parent / "csrc").rglob("*.c")}
    assert {p.stem for p in out.glob("*.o")} >= sources


def test_the_system_layer_works_under_wine(wincheck, compiled):
    out, failures = compiled
    wine = wincheck.find_wine()
    if wine is None:
        pytest.skip("no Wine to run the Windows build with (apt-get install wine64)")
    assert failures == []
    assert wincheck.run_os_check(CC, wine, out) == []


def test_a_posix_only_call_fails_the_cross_compile(wincheck, tmp_path, monkeypatch):
    """The check has teeth: a file calling fcntl(), as csrc/ did before its port, fails."""
    root = tmp_path / "root"
    (root / "csrc").mkdir(parents=True)
    (root / "csrc" / "posix_only.c").write_text(
        "#include <fcntl.h>\nint lock_it(int fd) { return fcntl(fd, F_SETLKW, 0); }\n")
    monkeypatch.setattr(wincheck, "ROOT", root)
    out = tmp_path / "out"
    out.mkdir()
    failures = wincheck.compile_all(CC, out)
    assert len(failures) == 1 and failures[0].startswith("csrc/posix_only.c:")
