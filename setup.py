"""Build the compiled core: Cython bindings over csrc/, statically linked to python-blosc's libblosc.a."""
import glob
import importlib.metadata
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup


def _blosc_paths():
    """Return (include_dir, libblosc.a) from the installed `blosc` distribution's file list."""
    dist = importlib.metadata.distribution("blosc")
    header = archive = None
    for f in dist.files or ():
        name = str(f).replace("\\", "/")
        if name.endswith("include/blosc.h"):
            header = os.path.abspath(f.locate())
        elif name.endswith("/libblosc.a"):
            archive = os.path.abspath(f.locate())
    if header is None or archive is None:
        sys.exit("zarrcore build: the installed 'blosc' distribution ships no blosc.h/libblosc.a")
    return os.path.dirname(header), archive


BLOSC_INCLUDE, BLOSC_ARCHIVE = _blosc_paths()
C_SOURCES = sorted(glob.glob("csrc/*.c"))
COMPILE_ARGS = ["-O3", "-std=c99", "-fvisibility=hidden", "-Wall", "-Wno-unused-function"]
# The archive's zstd/lz4/zlib symbols stay private to each extension.
LINK_ARGS = ["-Wl,--exclude-libs,ALL", "-pthread"]


def extension(name):
    return Extension(
        name,
        sources=[name.replace(".", "/") + ".pyx"] + C_SOURCES,
        include_dirs=["csrc", BLOSC_INCLUDE, numpy.get_include()],
        extra_objects=[BLOSC_ARCHIVE],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


MODULES = sorted(p[:-4].replace("/", ".") for p in glob.glob("zarrcore/*.pyx"))

setup(
    ext_modules=cythonize(
        [extension(m) for m in MODULES],
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    ),
    package_data={"zarrcore": ["*.pxd", "include/*.h"]},
)
