"""Build the compiled core: csrc/ as one static library, Cython bindings over it, all linked
to python-blosc's libblosc.a."""
import glob
import importlib.metadata
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build import build
from setuptools.command.build_ext import build_ext


# The system the extensions are built for: this one's, or another's when wheels/cross.py
# cross-compiles (zig's C compiler, the target's headers and libraries named by the
# environment it sets).
TARGET = os.environ.get("ZARRCORE_TARGET_PLATFORM", sys.platform)
# python-blosc's wheels ship the static library as lib/libblosc.a (Linux, macOS) or
# lib/libblosc.lib (Windows, built with /MD as Python's extensions are; lib/blosc.lib beside it
# is only the import library of its blosc.dll, which a wheel of ours must not need).
STATIC_BLOSC = "libblosc.lib" if TARGET == "win32" else "libblosc.a"


def _blosc_paths():
    """Return (include_dir, static libblosc) from the installed `blosc` distribution's files."""
    dist = importlib.metadata.distribution("blosc")
    header = archive = None
    for f in dist.files or ():
        name = str(f).replace("\\", "/")
        if name.endswith("include/blosc.h"):
            header = os.path.abspath(f.locate())
        elif name.endswith("/" + STATIC_BLOSC):
            archive = os.path.abspath(f.locate())
    if header is None or archive is None:
        sys.exit(f"zarrcore build: the installed 'blosc' distribution ships no blosc.h and "
                 f"static {STATIC_BLOSC}")
    return os.path.dirname(header), archive


BLOSC_INCLUDE, BLOSC_ARCHIVE = _blosc_paths()
# ZARRCORE_LIMITED_API=1 builds the bindings for CPython's stable ABI (Py_LIMITED_API 3.11,
# Cython's limited-API mode; an abi3 wheel for CPython 3.11 and later). The wheels are built
# per CPython version instead: through the stable ABI the bindings' per-call work costs more,
# up to 9.5% more instructions (7% more time) for a read of one small chunk, past the 2% an
# abi3 wheel was allowed (benchmarks/RESULTS.md, docs/guide/install.md). Kept to measure again.
LIMITED_API = os.environ.get("ZARRCORE_LIMITED_API") == "1"
LIMITED_API_VERSION = 0x030B0000
if LIMITED_API and (sys.version_info < (3, 11) or hasattr(sys, "_is_gil_enabled")
                    and not sys._is_gil_enabled()):
    sys.exit("zarrcore build: ZARRCORE_LIMITED_API needs a CPython >= 3.11 with the GIL")
MODULES = sorted(p[:-4].replace(os.sep, ".") for p in glob.glob("zarrcore/**/*.pyx", recursive=True))
C_SOURCES = sorted(glob.glob("csrc/**/*.c", recursive=True))
if not MODULES or not C_SOURCES:
    # Without this, a source tree that lost its Cython sources (an sdist without them) would
    # build and install a package with no compiled core, which then fails at import.
    sys.exit(f"zarrcore build: no zarrcore/**/*.pyx or csrc/**/*.c under {os.getcwd()}: an incomplete "
             f"source tree (an sdist must ship them: MANIFEST.in)")
# The public header of the array API (zarrcore/array_api.h) is compiled into the core too.
C_HEADERS = sorted(glob.glob("csrc/**/*.h", recursive=True)) + ["zarrcore/array_api.h"]
# The optimisation level the builder's CFLAGS choose (the last one counts), if any.
CHOSEN_LEVEL = next((flag for flag in reversed(os.environ.get("CFLAGS", "").split())
                     if flag.startswith("-O")), None)
if sys.platform == "win32":
    # MSVC (on Windows; a cross-build for it uses clang, zig's); csrc/os/zc_os.h holds what
    # differs from POSIX systems and GCC-like compilers.
    COMPILE_ARGS = ["/O2", "/std:c11"]
else:
    COMPILE_ARGS = ["-std=c99", "-fvisibility=hidden", "-Wall", "-Wno-unused-function"]
    # -O3 unless the builder's CFLAGS choose a level: `make test` builds its copies at -O1 and
    # -O0 (the suite checks behaviour, not speed; the -O3 wheels have `make release-test`).
    if CHOSEN_LEVEL is None:
        COMPILE_ARGS.insert(0, "-O3")
    # Python's own CFLAGS carry -g, with which the bindings' generated C takes about 45% longer
    # to compile (and the wheels are stripped of it anyway): debug information only when the
    # builder's CFLAGS ask for it (.ci/sanitize-build does).
    if not any(flag.startswith("-g") for flag in os.environ.get("CFLAGS", "").split()):
        COMPILE_ARGS.append("-g0")
# csrc/ is compiled once into this archive, which every extension links.
CORE_LIBRARY = ("zarrcore_csrc", {
    "sources": C_SOURCES,
    "include_dirs": ["csrc", ".", BLOSC_INCLUDE],
    "cflags": COMPILE_ARGS,
    "obj_deps": {"": C_HEADERS},
})
# The blosc archive goes after the core library on the link line (archives resolve only
# earlier references), and its zstd/lz4/zlib symbols stay private to each extension: each
# exports nothing but its module's PyInit_, on Linux by a version script (GNU ld and the
# LLVM linker of `zig cc`, which the release wheels are built with, both take one), on macOS
# by -exported_symbol (two-level namespaces already bind each bundle to its own copy); a
# Windows DLL exports only what it names, PyInit_ (link.exe takes the .lib's path as an
# input like any other). zig's Mach-O linker takes no export list: wheels/cross.py hides the
# archive's symbols before the link (wheels/hide_symbols.py) and says so by
# ZARRCORE_HIDDEN_ARCHIVE=1, and the extensions then export what their own C leaves visible,
# PyInit_ alone (-fvisibility=hidden).
HIDDEN_ARCHIVE = os.environ.get("ZARRCORE_HIDDEN_ARCHIVE") == "1"
if TARGET.startswith("linux"):
    LINK_ARGS = [BLOSC_ARCHIVE, "-pthread"]
else:
    LINK_ARGS = [BLOSC_ARCHIVE]
VERSION_SCRIPTS = os.path.join("build", "exports")
IMPORT_LIBRARIES = os.path.join("build", "import-libraries")


def version_script(init):
    """A linker version script that exports `init` alone, written under build/."""
    os.makedirs(VERSION_SCRIPTS, exist_ok=True)
    path = os.path.join(VERSION_SCRIPTS, init + ".map")
    text = f"{{\n  global: {init};\n  local: *;\n}};\n"
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    return path


def link_args(name):
    init = "PyInit_" + name.rsplit(".", 1)[-1]
    if TARGET == "darwin" and not HIDDEN_ARCHIVE:
        return LINK_ARGS + [f"-Wl,-exported_symbol,_{init}"]
    if TARGET.startswith("linux"):
        return LINK_ARGS + [f"-Wl,--version-script={version_script(init)}"]
    if TARGET == "win32" and sys.platform != "win32":
        # A MinGW-style link (zig's, in wheels/cross.py) writes the DLL's import library beside
        # it, where the wheel would pick it up: it goes under build/ instead.
        os.makedirs(IMPORT_LIBRARIES, exist_ok=True)
        return LINK_ARGS + [f"-Wl,--out-implib,{os.path.join(IMPORT_LIBRARIES, name + '.lib')}"]
    return LINK_ARGS


def extension(name):
    macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
    if LIMITED_API:
        macros += [("Py_LIMITED_API", hex(LIMITED_API_VERSION)), ("CYTHON_LIMITED_API", "1")]
    return Extension(
        name,
        sources=[name.replace(".", "/") + ".pyx"],
        # setup.py: its compile and link arguments change the extension too.
        depends=C_SOURCES + C_HEADERS + ["setup.py"],
        include_dirs=["csrc", ".", BLOSC_INCLUDE, numpy.get_include()],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=link_args(name),
        define_macros=macros,
        py_limited_api=LIMITED_API,
    )


class BuildExt(build_ext):
    """build_ext that Cythonizes the modules when it runs (egg_info and sdist, which read the
    extensions' sources, see and ship the .pyx, never generated C) and first builds the core
    library (plain `build` does, `build_ext` alone not)."""

    def run(self):
        generated = {ext.name: ext for ext in cythonize(
            self.extensions,
            # The C Cython writes depends on the numpy it compiles against: one directory per
            # interpreter and numpy, so that virtualenvs built from one tree never share it.
            build_dir=f"build/cython-{sys.implementation.cache_tag}-numpy{numpy.__version__}"
                      + ("-abi3" if LIMITED_API else ""),
            language_level=3,
            # freethreading_compatible: every module declares Py_MOD_GIL_NOT_USED, so importing
            # zarrcore on a free-threaded CPython leaves the GIL off (the compiled core keeps
            # its shared state under its own locks and atomics).
            compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                                 "freethreading_compatible": True},
        )}
        for ext in self.extensions:
            ext.sources = generated[ext.name].sources
        self.run_command("build_clib")
        super().run()

    def build_extensions(self):
        # A Python built with a shared libpython (pyenv's) puts -Wl,-rpath to its lib/ in
        # LDSHARED; the extensions need nothing there, and a wheel must not search the build
        # machine's directories (wheels/check_wheel.py).
        if self.compiler.compiler_type == "unix":
            self.compiler.linker_so = [arg for arg in self.compiler.linker_so
                                       if not arg.startswith(("-Wl,-rpath", "-Wl,-R"))]
        super().build_extensions()


class Build(build):
    """build whose compiled objects and extensions go to directories named after the level
    CFLAGS chose: setuptools rebuilds by timestamps alone, so a build at another level from
    the same tree (make test's -O1, a wheel's -O3) would otherwise reuse them."""

    def finalize_options(self):
        chosen_dirs = any(path is not None for path in (self.build_temp, self.build_lib,
                                                        self.build_platlib))
        super().finalize_options()
        if CHOSEN_LEVEL is not None and not chosen_dirs:
            self.build_temp += CHOSEN_LEVEL
            self.build_platlib += CHOSEN_LEVEL
            self.build_lib = self.build_platlib


class BdistWheel(bdist_wheel):
    """bdist_wheel that writes the wheel's SBOM (PEP 770) into its dist-info directory:
    wheels/sbom.py's CycloneDX document of the libraries statically linked, generated from the
    blosc.h compiled against and the archive linked (the licences it names are the license
    files of pyproject.toml, in dist-info/licenses/)."""

    def write_wheelfile(self, distinfo_path, *args, **kwargs):
        # (Called on the dist-info directory whether made here or by the build backend's
        # metadata step, which pip runs first.)
        super().write_wheelfile(distinfo_path, *args, **kwargs)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "wheels"))
        try:
            import sbom
        finally:
            del sys.path[0]
        os.makedirs(os.path.join(distinfo_path, "sboms"), exist_ok=True)
        text = sbom.build_sbom(os.path.join(BLOSC_INCLUDE, "blosc.h"), BLOSC_ARCHIVE,
                               self.distribution.get_version())
        with open(os.path.join(distinfo_path, "sboms", sbom.SBOM_NAME), "w") as f:
            f.write(text)


setup(
    ext_modules=[extension(m) for m in MODULES],
    libraries=[CORE_LIBRARY],
    cmdclass={"build": Build, "build_ext": BuildExt, "bdist_wheel": BdistWheel},
    package_data={"zarrcore": ["kernels.pxd", "array_api.pxd", "array_api.h", "py.typed",
                               "*.pyi"],
                  "zarrcore._native": ["*.pyi"]},
    options={"build_ext": {"parallel": os.cpu_count() or 1},
             **({"bdist_wheel": {"py_limited_api": "cp311"}} if LIMITED_API else {})},
)
