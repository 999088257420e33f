"""The installed package is self-contained (wheels/check_wheel.py): extensions need only the
system's C runtime (glibc's libraries on Linux), export only their PyInit_ function, the
public .pxd is installed, and so is the SBOM of the libraries linked, with their licences."""
import importlib.metadata
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.checks_linking


def package_root():
    import zarrcore

    return pathlib.Path(zarrcore.__file__).parent


def installed_extensions():
    return sorted(p for p in package_root().rglob("*") if p.suffix in (".so", ".pyd"))


def module_path(extension):
    """An extension's module by its path below zarrcore/, as check_wheel names it."""
    relative = extension.relative_to(package_root())
    return "/".join((*relative.parts[:-1], relative.name.split(".")[0]))


def test_installed_package_is_self_contained(check_wheel):
    assert check_wheel.check_installed() == []


def test_each_extension_needs_only_the_c_runtime_and_exports_only_its_init(check_wheel):
    extensions = installed_extensions()
    assert {module_path(p) for p in extensions} == set(check_wheel.EXTENSIONS)
    for path in extensions:
        needed, exported, allowed, tolerated = check_wheel.dynamic_info(path.read_bytes())
        assert needed and all(allowed(lib) for lib in needed), (path.name, needed)
        assert set(exported) - tolerated == {f"PyInit_{path.name.split('.')[0]}"}, path.name


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
            z.write(path, f"zarrcore/{path.relative_to(package_root()).as_posix()}")
        z.writestr("zarrcore/kernels.so", b"not an ELF file")
        z.writestr("zarrcore/_batch.c", b"/* generated */")
    problems = check_wheel.check_wheel(wheel)
    missing = module_path(extensions[0])
    assert f"zarrcore/{missing}: no compiled extension" in problems
    assert "zarrcore/kernels.pxd: missing (needed by `cimport zarrcore.kernels`)" in problems
    assert "zarrcore/array_api.pxd: missing (needed by `cimport zarrcore.array_api`)" in problems
    assert ("zarrcore/array_api.h: missing (needed by `#include <zarrcore/array_api.h>`)"
            in problems)
    assert "zarrcore/kernels.so: not an ELF, Mach-O or PE file" in problems
    assert "zarrcore/_batch.c: not meant to be shipped (a stale build directory?)" in problems
    assert ("zarrcore/py.typed: missing (needed by type checkers, which otherwise ignore the "
            "annotations)" in problems)
    assert "<dist-info>/sboms/zarrcore.cdx.json: 0 found, 1 expected" in problems
    assert len(problems) == 8


def test_a_wheel_with_zip_directory_entries_passes(check_wheel, tmp_path):
    # auditwheel (6.8) writes an entry for each directory into the wheels it repairs.
    import zarrcore

    package = pathlib.Path(zarrcore.__file__).parent
    wheel = tmp_path / "zarrcore-0-cp3-cp3-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("zarrcore/", b"")
        z.writestr("zarrcore-0.dist-info/", b"")
        for path in sorted(package.rglob("*")):
            name = path.relative_to(package.parent).as_posix()
            if "__pycache__" in path.parts:
                continue
            if path.is_dir():
                z.writestr(name + "/", b"")
            else:
                z.write(path, name)
        # The installed dist-info's SBOM and licences, as the wheel had them.
        for f in importlib.metadata.distribution("zarrcore").files or ():
            if f.parts[0].endswith(".dist-info"):
                z.write(f.locate(), f.as_posix())
    assert check_wheel.check_wheel(wheel) == []


def compile_shared(tmp_path, name, code, *link_args):
    """The bytes of a shared object of this C code, linked with no C library but what
    `link_args` name."""
    cc = shutil.which("cc")
    if cc is None or not sys.platform.startswith("linux"):
        pytest.skip("needs a C compiler making ELF shared objects (Linux)")
    source = tmp_path / f"{name}.c"
    source.write_text(code)
    out = tmp_path / name
    subprocess.run([cc, "-shared", "-fPIC", "-nostdlib", "-o", str(out), str(source),
                    *link_args], check=True, capture_output=True, timeout=60)
    return out.read_bytes()


EXTENSION = "int PyInit_kernels(void) { return 0; }\n"


def test_an_extension_needing_musl_libc_passes(check_wheel, tmp_path):
    soname = "libc.musl-x86_64.so.1"
    compile_shared(tmp_path, soname, "int musl_stub;\n", f"-Wl,-soname,{soname}")
    data = compile_shared(tmp_path, "kernels.so", EXTENSION, f"-L{tmp_path}",
                          "-Wl,--no-as-needed", f"-l:{soname}")
    assert check_wheel.elf_dynamic_info(data)[0] == [soname]
    assert check_wheel.check_extension("zarrcore/kernels.so", data) == []


def test_an_extension_searching_the_build_machine_for_libraries_is_refused(check_wheel, tmp_path):
    data = compile_shared(tmp_path, "kernels.so", EXTENSION, "-Wl,-rpath,/opt/build-machine/lib")
    assert check_wheel.check_extension("zarrcore/kernels.so", data) == [
        "zarrcore/kernels.so: searches /opt/build-machine/lib for libraries (RPATH or RUNPATH)"]
