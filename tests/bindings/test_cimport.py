"""A Cython extension built against zarrcore.get_include() cimports zarrcore.kernels and
calls its kernels without the GIL."""
import importlib
import os
import subprocess
import sys
import textwrap

import crc32c as crc32c_ref
import numpy as np
import pytest
from compilers import c_compiler

import zarrcore

pytest.importorskip("Cython")

# Raw addresses rather than typed memoryviews keep the generated C small and the build fast.
USER_PYX = """
# cython: language_level=3
cimport zarrcore.kernels as zk


def swap_in_place(size_t address, size_t n, size_t itemsize):
    cdef int status
    with nogil:
        status = zk.byteswap_items(<void *>address, <void *>address, n, itemsize)
    return status


def checksum(bytes data):
    cdef const char *p = data
    cdef size_t n = len(data)
    cdef unsigned int crc
    with nogil:
        crc = zk.crc32c_bytes(0, p, n)
    return crc


def all_fill(size_t address, size_t nbytes, bytes pattern):
    cdef const char *p = pattern
    cdef size_t itemsize = len(pattern)
    cdef int result
    with nogil:
        result = zk.is_fill_bytes(<void *>address, nbytes, p, itemsize)
    return result


OK = zk.OK
"""

SETUP_PY = """
import zarrcore
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    name="zc_user",
    ext_modules=cythonize(
        [Extension("zc_user", ["zc_user.pyx"], include_dirs=[zarrcore.get_include()],
                   extra_compile_args=["-O0"])],
        include_path=[zarrcore.get_include()],
        language_level=3,
    ),
)
"""


def test_pxd_files_ship_in_the_include_dir():
    include = zarrcore.get_include()
    assert os.path.isfile(os.path.join(include, "zarrcore", "kernels.pxd"))


@pytest.mark.slow
def test_cython_extension_cimports_kernels(tmp_path):
    if c_compiler() is None:
        pytest.skip("no C compiler here to build a Cython extension that cimports zarrcore")
    (tmp_path / "zc_user.pyx").write_text(textwrap.dedent(USER_PYX))
    (tmp_path / "setup.py").write_text(textwrap.dedent(SETUP_PY))
    # The build runs where zarrcore imports as in this process (installed or in-place).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(zarrcore.__file__)), os.environ.get("PYTHONPATH", "")]))
    build = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    sys.path.insert(0, str(tmp_path))
    try:
        user = importlib.import_module("zc_user")
    finally:
        sys.path.remove(str(tmp_path))
    a = np.arange(6, dtype="u4")
    assert user.swap_in_place(a.ctypes.data, a.size, 4) == user.OK == 0
    np.testing.assert_array_equal(a, np.arange(6, dtype="u4").byteswap())
    assert user.checksum(b"123456789") == crc32c_ref.crc32c(b"123456789")
    zeros, counts = np.zeros(12, np.uint8), np.arange(12, dtype=np.uint8)
    assert user.all_fill(zeros.ctypes.data, 12, bytes(4)) == 1
    assert user.all_fill(counts.ctypes.data, 12, bytes(4)) == 0
