"""Build the compiled core: csrc/ as one static library, Cython bindings over it, all linked
to python-blosc's libblosc.a."""
import glob
import importlib.metadata
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


# python-blosc's wheels ship the static library as lib/libblosc.a (Linux, macOS) or
# lib/libblosc.lib (Windows, built with /MD as Python's extensions are; lib/blosc.lib beside it
# is only the import library of its blosc.dll, which a wheel of ours must not need).
STATIC_BLOSC = "libblosc.lib" if sys.platform == "win32" else "libblosc.a"


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
C_SOURCES = sorted(glob.glob("csrc/*.c"))
# The public header of the array API (zarrcore/array_api.h) is compiled into the core too.
C_HEADERS = sorted(glob.glob("csrc/*.h")) + ["zarrcore/array_api.h"]
if sys.platform == "win32":
    # MSVC; csrc/zc_os.h holds what differs from POSIX systems and GCC-like compilers.
    COMPILE_ARGS = ["/O2", "/std:c11"]
else:
    COMPILE_ARGS = ["-O3", "-std=c99", "-fvisibility=hidden", "-Wall", "-Wno-unused-function"]
# csrc/ is compiled once into this archive, which every extension links.
CORE_LIBRARY = ("zarrcore_csrc", {
    "sources": C_SOURCES,
    "include_dirs": ["csrc", ".", BLOSC_INCLUDE],
    "cflags": COMPILE_ARGS,
    "obj_deps": {"": C_HEADERS},
})
# The blosc archive goes after the core library on the link line (archives resolve only
# earlier references), and its zstd/lz4/zlib symbols stay private to each extension: on
# Linux by --exclude-libs; on macOS by exporting nothing but the module's PyInit_ (two-level
# namespaces already bind each bundle to its own copy); a Windows DLL exports only what it
# names, PyInit_ (link.exe takes the .lib's path as an input like any other).
if sys.platform.startswith("linux"):
    LINK_ARGS = [BLOSC_ARCHIVE, "-Wl,--exclude-libs,ALL", "-pthread"]
else:
    LINK_ARGS = [BLOSC_ARCHIVE]


def link_args(name):
    if sys.platform == "darwin":
        return LINK_ARGS + [f"-Wl,-exported_symbol,_PyInit_{name.rsplit('.', 1)[-1]}"]
    return LINK_ARGS


def extension(name):
    return Extension(
        name,
        sources=[name.replace(".", "/") + ".pyx"],
        depends=C_SOURCES + C_HEADERS,
        include_dirs=["csrc", ".", BLOSC_INCLUDE, numpy.get_include()],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=link_args(name),
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


class BuildExt(build_ext):
    """build_ext that first builds the core library (plain `build` does, `build_ext` alone not)."""

    def run(self):
        self.run_command("build_clib")
        super().run()


MODULES = sorted(p[:-4].replace("/", ".") for p in glob.glob("zarrcore/*.pyx"))

setup(
    ext_modules=cythonize(
        [extension(m) for m in MODULES],
        # The C Cython writes depends on the numpy it compiles against: one directory per
        # interpreter and numpy, so that virtualenvs built from one tree never share it.
        build_dir=f"build/cython-{sys.implementation.cache_tag}-numpy{numpy.__version__}",
        language_level=3,
        # freethreading_compatible: every module declares Py_MOD_GIL_NOT_USED, so importing
        # zarrcore on a free-threaded CPython leaves the GIL off (the compiled core keeps its
        # shared state under its own locks and atomics).
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                             "freethreading_compatible": True},
    ),
    libraries=[CORE_LIBRARY],
    cmdclass={"build_ext": BuildExt},
    package_data={"zarrcore": ["kernels.pxd", "array_api.pxd", "array_api.h", "py.typed",
                               "*.pyi"]},
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
