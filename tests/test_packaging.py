"""The installed package is self-contained (wheels/check_wheel.py): extensions need only the
system's C runtime (glibc's libraries on Linux), export only their PyInit_ function, and the
public .pxd is installed."""
import importlib.metadata
import pathlib
import zipfile

import pytest

pytestmark = pytest.mark.checks_linking


def installed_extensions():
    import zarrcore

    return sorted(p for p in pathlib.Path(zarrcore.__file__).parent.iterdir()
                  if p.suffix in (".so", ".pyd"))


def test_installed_package_is_self_contained(check_wheel):
    assert check_wheel.check_installed() == []


def test_each_extension_needs_only_the_c_runtime_and_exports_only_its_init(check_wheel):
    extensions = installed_extensions()
    assert {p.name.split(".")[0] for p in extensions} == set(check_wheel.EXTENSIONS)
    for path in extensions:
        needed, exported, allowed = check_wheel.dynamic_info(path.read_bytes())
        assert needed and all(allowed(lib) for lib in needed), (path.name, needed)
        assert exported == [f"PyInit_{path.name.split('.')[0]}"], path.name


def shared_libblosc():
    for f in importlib.metadata.distribution("blosc").files or ():
        if str(f).endswith(("libblosc.so", "libblosc.dylib", "blosc.dll")):
            return pathlib.Path(f.locate())
    pytest.skip("the installed blosc distribution ships no shared libblosc to check against")


def test_a_library_that_exports_its_codecs_is_refused(check_wheel):
    problems = check_wheel.check_extension("zarrcore/kernels.so", shared_libblosc().read_bytes())
    assert len(problems) == 1
    assert problems[0].startswith("zarrcore/kernels.so: exports ") and "more" in problems[0]


def test_a_wheel_missing_a_public_file_or_extension_or_with_stray_files_is_refused(check_wheel, tmp_path):
    wheel = tmp_path / "zarrcore-0-py3-none-any.whl"
    extensions = installed_extensions()
    with zipfile.ZipFile(wheel, "w") as z:
        for path in extensions[1:]:
            z.write(path, f"zarrcore/{path.name}")
        z.writestr("zarrcore/kernels.so", b"not an ELF file")
        z.writestr("zarrcore/_batch.c", b"/* generated */")
    problems = check_wheel.check_wheel(wheel)
    missing = extensions[0].name.split(".")[0]
    assert f"zarrcore/{missing}: no compiled extension" in problems
    assert "zarrcore/kernels.pxd: missing (needed by `cimport zarrcore.kernels`)" in problems
    assert "zarrcore/array_api.pxd: missing (needed by `cimport zarrcore.array_api`)" in problems
    assert ("zarrcore/array_api.h: missing (needed by `#include <zarrcore/array_api.h>`)"
            in problems)
    assert "zarrcore/kernels.so: not an ELF, Mach-O or PE file" in problems
    assert "zarrcore/_batch.c: not meant to be shipped (a stale build directory?)" in problems
    assert ("zarrcore/py.typed: missing (needed by type checkers, which otherwise ignore the "
            "annotations)" in problems)
    assert len(problems) == 7
