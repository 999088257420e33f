"""Extensions built against zarrcore.get_include() use the array API without the GIL: a
Cython module reading and writing random regions in a `prange` loop (OpenMP, 2 threads), and
a plain C module reading and writing tiles from several pthreads through the capsule."""
import importlib
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from compilers import c_compiler

import zarrcore
from zarrcore.array_api import CACHE_SETTLE_SECONDS
from zarrcore.errors import ChunkDecodeError, SelectionError, ZarrcoreError
from zarrcore.storage.memory import MemoryStore

pytest.importorskip("Cython")
pytestmark = pytest.mark.slow  # every test uses `built`, which compiles

# Region i of a call: start starts[i], shape shapes[i], step steps[i]. Writes take region i
# from the same place of `src`, an array of the whole array's shape (the regions of one call
# are disjoint); reads put region i, C-ordered, at byte offsets[i] of `out`.
USER_PYX = """
# cython: language_level=3, boundscheck=False, wraparound=False
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free
cimport zarrcore.array_api as za

za.import_array_api()


def write_regions(za.ArrayHandle handle, const int64_t[:, ::1] starts,
                  const int64_t[:, ::1] shapes, size_t src, const Py_ssize_t[::1] strides,
                  int[::1] thread_of):
    cdef za.zc_array *a = handle.ptr
    cdef Py_ssize_t i, n = starts.shape[0]
    cdef int d, ndim = starts.shape[1]
    cdef char *p
    cdef za.zc_array_error *errs = <za.zc_array_error *>calloc(n, sizeof(za.zc_array_error))
    cdef int *status = <int *>calloc(n, sizeof(int))
    try:
        for i in prange(n, nogil=True, num_threads=2, schedule="static"):
            p = <char *>src
            for d in range(ndim):
                p = p + starts[i, d] * strides[d]
            status[i] = za.zc_array_write(a, &starts[i, 0], &shapes[i, 0], NULL, p,
                                          <const za.ptrdiff_t *>&strides[0], &errs[i])
            thread_of[i] = threadid()
        for i in range(n):
            if status[i] != za.ZC_ARRAY_OK:
                za.raise_error(&errs[i])
    finally:
        free(errs)
        free(status)


def read_regions(za.ArrayHandle handle, const int64_t[:, ::1] starts,
                 const int64_t[:, ::1] shapes, const int64_t[:, ::1] steps, size_t out,
                 const int64_t[::1] offsets, int[::1] thread_of):
    cdef za.zc_array *a = handle.ptr
    cdef Py_ssize_t i, n = starts.shape[0]
    cdef za.zc_array_error *errs = <za.zc_array_error *>calloc(n, sizeof(za.zc_array_error))
    cdef int *status = <int *>calloc(n, sizeof(int))
    try:
        for i in prange(n, nogil=True, num_threads=2, schedule="static"):
            status[i] = za.zc_array_read(a, &starts[i, 0], &shapes[i, 0], &steps[i, 0],
                                         <char *>out + offsets[i], NULL, &errs[i])
            thread_of[i] = threadid()
        for i in range(n):
            if status[i] != za.ZC_ARRAY_OK:
                za.raise_error(&errs[i])
    finally:
        free(errs)
        free(status)


def describe(za.ArrayHandle handle):
    cdef int64_t shape[32]
    cdef int64_t chunks[32]
    cdef int64_t shards[32]
    cdef za.zc_array *a = handle.ptr
    cdef int ndim, sharded
    with nogil:
        ndim = za.zc_array_ndim(a)
        za.zc_array_shape(a, shape)
        za.zc_array_chunk_shape(a, chunks)
        sharded = za.zc_array_shard_shape(a, shards)
    return ([shape[d] for d in range(ndim)], [chunks[d] for d in range(ndim)],
            [shards[d] for d in range(ndim)] if sharded else None, za.zc_array_itemsize(a))
"""

USER_C = r"""
#include <Python.h>
#include <pthread.h>
#include <zarrcore/array_api.h>

/* Tiles of `tile` items (clipped at the array's end) of a C-contiguous buffer of the whole
 * array, shared out among threads by an atomic counter. */
typedef struct {
    zc_array *a;
    int ndim, writing;
    int64_t shape[ZC_ARRAY_MAX_NDIM], tile[ZC_ARRAY_MAX_NDIM], grid[ZC_ARRAY_MAX_NDIM];
    ptrdiff_t strides[ZC_ARRAY_MAX_NDIM];
    char *buf;
    int64_t ntiles, next;
    int failed;
    zc_array_error err;
} job;

typedef struct {
    job *j;
    int64_t done;
} worker;

static void *work(void *arg)
{
    worker *w = (worker *)arg;
    job *j = w->j;
    for (;;) {
        int64_t t = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (t >= j->ntiles || __atomic_load_n(&j->failed, __ATOMIC_RELAXED))
            return NULL;
        int64_t start[ZC_ARRAY_MAX_NDIM], count[ZC_ARRAY_MAX_NDIM];
        char *p = j->buf;
        for (int d = j->ndim - 1; d >= 0; d--) {
            start[d] = (t % j->grid[d]) * j->tile[d];
            t /= j->grid[d];
            count[d] = j->shape[d] - start[d] < j->tile[d] ? j->shape[d] - start[d] : j->tile[d];
            p += start[d] * j->strides[d];
        }
        zc_array_error err;
        int st = j->writing ? zc_array_write(j->a, start, count, NULL, p, j->strides, &err)
                            : zc_array_read(j->a, start, count, NULL, p, j->strides, &err);
        if (st != ZC_ARRAY_OK) {
            if (!__atomic_exchange_n(&j->failed, 1, __ATOMIC_ACQ_REL))
                j->err = err;
            return NULL;
        }
        w->done++;
    }
}

/* run(capsule, buffer, tile, nthreads, writing) -> tiles done by each thread */
static PyObject *run(PyObject *self, PyObject *args)
{
    PyObject *capsule, *tile;
    Py_buffer view;
    int nthreads, writing;
    if (!PyArg_ParseTuple(args, "Ow*Oip", &capsule, &view, &tile, &nthreads, &writing))
        return NULL;
    job j = {0};
    worker workers[16];
    pthread_t threads[16];
    PyObject *result = NULL;
    if ((j.a = zc_array_from_capsule(capsule)) == NULL)
        goto out;
    j.ndim = zc_array_ndim(j.a);
    j.writing = writing;
    j.buf = (char *)view.buf;
    zc_array_shape(j.a, j.shape);
    if (nthreads < 1 || nthreads > 16 || PyTuple_Size(tile) != j.ndim) {
        PyErr_SetString(PyExc_ValueError, "bad arguments");
        goto out;
    }
    j.ntiles = 1;
    ptrdiff_t stride = (ptrdiff_t)zc_array_itemsize(j.a);
    for (int d = j.ndim - 1; d >= 0; d--) {
        j.tile[d] = PyLong_AsLongLong(PyTuple_GetItem(tile, d));
        j.grid[d] = (j.shape[d] + j.tile[d] - 1) / j.tile[d];
        j.ntiles *= j.grid[d];
        j.strides[d] = stride;
        stride *= (ptrdiff_t)j.shape[d];
    }
    if ((Py_ssize_t)stride != view.len) {
        PyErr_SetString(PyExc_ValueError, "the buffer must hold the whole array");
        goto out;
    }
    int started = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; started < nthreads; started++) {
        workers[started].j = &j;
        workers[started].done = 0;
        if (pthread_create(&threads[started], NULL, work, &workers[started]) != 0)
            break;
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    Py_END_ALLOW_THREADS
    if (j.failed) {
        zc_array_raise(&j.err);
        goto out;
    }
    result = PyList_New(started);
    for (int i = 0; result && i < started; i++)
        PyList_SET_ITEM(result, i, PyLong_FromLongLong(workers[i].done));
out:
    if (j.a)
        zc_array_release(j.a);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {{"run", run, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "zc_tiles", NULL, -1, methods};

PyMODINIT_FUNC PyInit_zc_tiles(void)
{
    if (zc_import_array_api() < 0)
        return NULL;
    return PyModule_Create(&module);
}
"""

SETUP_PY = """
import zarrcore
from Cython.Build import cythonize
from setuptools import Extension, setup

include = [zarrcore.get_include()]
setup(
    name="zc_array_user",
    ext_modules=cythonize(
        [Extension("zc_regions", ["zc_regions.pyx"], include_dirs=include,
                   extra_compile_args=["-O0", "-fopenmp"], extra_link_args=["-fopenmp"])],
        include_path=include, language_level=3,
    ) + [Extension("zc_tiles", ["zc_tiles.c"], include_dirs=include,
                   extra_compile_args=["-O0", "-Wall", "-Werror"], extra_link_args=["-pthread"])],
)
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The two extension modules, built against this zarrcore (installed or in place)."""
    if c_compiler() is None:
        pytest.skip("no C compiler here to build the extensions")
    where = tmp_path_factory.mktemp("array_api_user")
    (where / "zc_regions.pyx").write_text(textwrap.dedent(USER_PYX))
    (where / "zc_tiles.c").write_text(USER_C)
    (where / "setup.py").write_text(textwrap.dedent(SETUP_PY))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(zarrcore.__file__)), os.environ.get("PYTHONPATH", "")]))
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-j", "2"],
                           cwd=where, env=env, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module("zc_regions"), importlib.import_module("zc_tiles")
    finally:
        sys.path.remove(str(where))


def random_partition(rng, shape, pieces):
    """Disjoint boxes (start, shape) covering `shape`: random cuts along each axis."""
    cuts = [np.unique(np.r_[0, rng.integers(1, n, size=pieces), n]) for n in shape]
    boxes = []
    for index in np.ndindex(*[len(c) - 1 for c in cuts]):
        start = [int(c[i]) for c, i in zip(cuts, index)]
        boxes.append((start, [int(c[i + 1]) - s for c, i, s in zip(cuts, index, start)]))
    return boxes


def store_of(kind, tmp_path):
    """A directory store's path, or a MemoryStore (its data in C, zarrcore._native.memstore)."""
    return str(tmp_path / "a.zarr") if kind == "directory" else MemoryStore()


@pytest.mark.parametrize("store", ["directory", "memory"])
@pytest.mark.parametrize("shards", [None, (16, 16, 16)])
def test_cython_prange_reads_and_writes_random_regions(built, tmp_path, shards, store):
    regions, _ = built
    a = zarrcore.create_array(store_of(store, tmp_path), shape=(45, 38, 33), dtype="uint16",
                              chunks=(8, 8, 8), shards=shards, fill_value=5)
    handle = a.native_handle()
    assert regions.describe(handle) == ([45, 38, 33], [8, 8, 8], list(shards) if shards else None, 2)
    rng = np.random.default_rng(7)
    src = rng.integers(0, 60000, size=a.shape, dtype=np.uint16)
    # Writes: disjoint boxes not aligned with chunks or shards, so both threads rewrite parts
    # of the same chunks and shards under their locks.
    boxes = random_partition(rng, a.shape, 4)
    starts = np.array([b[0] for b in boxes], np.int64)
    shapes = np.array([b[1] for b in boxes], np.int64)
    thread_of = np.full(len(boxes), -1, np.intc)
    regions.write_regions(handle, starts, shapes, src.ctypes.data, np.array(src.strides, np.intp),
                          thread_of)
    assert set(thread_of) == {0, 1}
    np.testing.assert_array_equal(a[...], src)
    # Reads: random regions with steps, into one buffer.
    n = 200
    starts = np.array([[rng.integers(0, s) for s in a.shape] for _ in range(n)], np.int64)
    steps = rng.integers(1, 4, size=(n, 3)).astype(np.int64)
    shapes = np.array([[rng.integers(1, (s - b - 1) // k + 2) for s, b, k in zip(a.shape, st, sp)]
                       for st, sp in zip(starts, steps)], np.int64)
    sizes = shapes.prod(axis=1) * 2
    offsets = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
    out = np.zeros(int(sizes.sum()), np.uint8)
    thread_of = np.full(n, -1, np.intc)
    regions.read_regions(handle, starts, shapes, steps, out.ctypes.data, offsets, thread_of)
    assert set(thread_of) == {0, 1}
    check_regions(out, starts, shapes, steps, offsets, src)
    # Again through a cache of 5 (inner) chunks that both threads fill, hit and evict.
    time.sleep(CACHE_SETTLE_SECONDS + 0.05)
    cached = a.native_handle(cache_bytes=5 * 8 ** 3 * 2)
    for _ in range(2):
        out[...] = 0
        thread_of[...] = -1
        regions.read_regions(cached, starts, shapes, steps, out.ctypes.data, offsets, thread_of)
        assert set(thread_of) == {0, 1}
        check_regions(out, starts, shapes, steps, offsets, src)
    info = cached.cache_info()
    assert info["hits"] > 0 and info["evictions"] > 0 and info["entries"] <= 5


def check_regions(out, starts, shapes, steps, offsets, src):
    for st, sh, sp, off in zip(starts, shapes, steps, offsets):
        got = out[off:off + sh.prod() * 2].view(np.uint16).reshape(sh)
        sel = tuple(slice(b, b + k * (m - 1) + 1, k) for b, m, k in zip(st, sh, sp))
        np.testing.assert_array_equal(got, src[sel])


def test_cython_errors_raise_after_the_loop(built, tmp_path):
    regions, _ = built
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(10, 10, 10), dtype="uint16",
                              chunks=(5, 5, 5))
    handle = a.native_handle()
    starts = np.array([[0, 0, 0], [8, 0, 0]], np.int64)
    shapes = np.array([[2, 2, 2], [3, 1, 1]], np.int64)
    steps = np.ones((2, 3), np.int64)
    out = np.zeros(64, np.uint8)
    with pytest.raises(SelectionError, match="outside the array"):
        regions.read_regions(handle, starts, shapes, steps, out.ctypes.data,
                             np.array([0, 16], np.int64), np.zeros(2, np.intc))
    handle.close()
    with pytest.raises(ZarrcoreError, match="closed"):
        regions.read_regions(handle, starts[:1], shapes[:1], steps[:1], out.ctypes.data,
                             np.array([0], np.int64), np.zeros(1, np.intc))


@pytest.mark.parametrize("store", ["directory", "memory"])
@pytest.mark.parametrize("shards", [None, (20, 20, 12)])
def test_c_pthreads_read_and_write_tiles(built, tmp_path, shards, store):
    _, tiles = built
    a = zarrcore.create_array(store_of(store, tmp_path), shape=(40, 30, 25), dtype="int32",
                              chunks=(10, 10, 6), shards=shards)
    data = np.random.default_rng(3).integers(-1000, 1000, size=a.shape, dtype=np.int32)
    a[...] = data
    handle = a.native_handle()
    out = np.zeros(a.shape, np.int32)
    done = tiles.run(handle.capsule(), out, (7, 9, 11), 3, False)
    assert len(done) == 3 and sum(done) == 6 * 4 * 3
    np.testing.assert_array_equal(out, data)
    # Writes from the threads, in tiles that split chunks and shards between them.
    new = data[::-1].copy()
    tiles.run(handle.capsule(), new, (7, 9, 11), 3, True)
    np.testing.assert_array_equal(a[...], new)


def test_c_errors_raise_their_zarrcore_error(built, tmp_path):
    _, tiles = built
    a = zarrcore.create_array(str(tmp_path / "a.zarr"), shape=(8, 8), dtype="int32",
                              chunks=(4, 4), shards=(8, 8))
    a[...] = 1
    handle = a.native_handle()
    capsule = handle.capsule()
    out = np.zeros(a.shape, np.int32)
    (tmp_path / "a.zarr" / "c" / "0" / "0").write_bytes(b"\1" * 100)
    with pytest.raises(ChunkDecodeError, match="chunk 'c/0/0'"):
        tiles.run(capsule, out, (4, 4), 2, False)
    handle.close()
    del handle  # the capsule keeps the handle's memory; calls see it closed
    with pytest.raises(ZarrcoreError, match="closed"):
        tiles.run(capsule, out, (4, 4), 2, False)


# One extension of three C files: `init.c` imports the table (its module init), `calls.c` calls
# the API through the table shared by ZC_ARRAY_API_UNIQUE_SYMBOL, and `unimported.c`, without
# the macros, has a table of its own that nothing imports.
TWO_FILE_INIT = r"""
#define ZC_ARRAY_API_UNIQUE_SYMBOL zc_twofile_array_api
#include <zarrcore/array_api.h>

PyObject *describe(PyObject *self, PyObject *capsule);
PyObject *null_calls(PyObject *self, PyObject *capsule);
PyObject *unimported_read(PyObject *self, PyObject *capsule);
PyObject *unimported_open(PyObject *self, PyObject *capsule);

static PyMethodDef methods[] = {{"describe", describe, METH_O, NULL},
                                {"null_calls", null_calls, METH_O, NULL},
                                {"unimported_read", unimported_read, METH_O, NULL},
                                {"unimported_open", unimported_open, METH_O, NULL},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "zc_twofile", NULL, -1, methods};

PyMODINIT_FUNC PyInit_zc_twofile(void)
{
    if (zc_import_array_api() < 0)
        return NULL;
    return PyModule_Create(&module);
}
"""

TWO_FILE_CALLS = r"""
#define PY_SSIZE_T_CLEAN
#define ZC_ARRAY_API_UNIQUE_SYMBOL zc_twofile_array_api
#define ZC_NO_IMPORT_ARRAY_API
#include <zarrcore/array_api.h>

/* describe(capsule) -> (dtype code, itemsize, first item's bytes) */
PyObject *describe(PyObject *self, PyObject *capsule)
{
    zc_array *a = zc_array_from_capsule(capsule);
    if (a == NULL)
        return NULL;
    int64_t start[ZC_ARRAY_MAX_NDIM] = {0}, shape[ZC_ARRAY_MAX_NDIM];
    for (int d = 0; d < ZC_ARRAY_MAX_NDIM; d++)
        shape[d] = 1;
    char item[64];
    zc_array_error err;
    PyObject *result = NULL;
    if (zc_array_itemsize(a) > sizeof item)
        PyErr_SetString(PyExc_ValueError, "item too large");
    else if (zc_array_read(a, start, shape, NULL, item, NULL, &err) != ZC_ARRAY_OK)
        zc_array_raise(&err);
    else
        result = Py_BuildValue("iny#", zc_array_dtype(a), (Py_ssize_t)zc_array_itemsize(a),
                               item, (Py_ssize_t)zc_array_itemsize(a));
    zc_array_release(a);
    return result;
}

/* null_calls(capsule) -> {call: result}: every call with a NULL handle or NULL output,
 * which must neither crash nor write; `untouched` says the outputs kept their bytes. */
PyObject *null_calls(PyObject *self, PyObject *capsule)
{
    zc_array *a = zc_array_from_capsule(capsule);
    if (a == NULL)
        return NULL;
    int64_t shape[ZC_ARRAY_MAX_NDIM], start[ZC_ARRAY_MAX_NDIM] = {0};
    char item[64];
    memset(shape, 0x5a, sizeof shape);
    memset(item, 0x5a, sizeof item);
    zc_array_error err;
    zc_array_retain(NULL);
    zc_array_release(NULL);
    zc_array_shape(NULL, shape);
    zc_array_shape(a, NULL);
    zc_array_chunk_shape(NULL, shape);
    zc_array_chunk_shape(a, NULL);
    zc_array_fill_value(NULL, item);
    zc_array_fill_value(a, NULL);
    int untouched = 1;
    for (size_t i = 0; i < sizeof item; i++)
        untouched &= item[i] == 0x5a;
    for (int d = 0; d < ZC_ARRAY_MAX_NDIM; d++)
        untouched &= shape[d] == (int64_t)0x5a5a5a5a5a5a5a5aLL;
    PyObject *result = Py_BuildValue(
        "{s:i,s:i,s:n,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}",
        "ndim", zc_array_ndim(NULL), "dtype", zc_array_dtype(NULL),
        "itemsize", (Py_ssize_t)zc_array_itemsize(NULL), "is_closed", zc_array_is_closed(NULL),
        "shard_shape_null_array", zc_array_shard_shape(NULL, shape),
        "shard_shape_null_out", zc_array_shard_shape(a, NULL),
        "read_null_array", zc_array_read(NULL, start, shape, NULL, item, NULL, &err),
        "read_null_start", zc_array_read(a, NULL, shape, NULL, item, NULL, &err),
        "read_null_out", zc_array_read(a, start, shape, NULL, NULL, NULL, NULL),
        "write_null_in", zc_array_write(a, start, shape, NULL, NULL, NULL, &err),
        "read_chunk_null_coords", zc_array_read_chunk(a, NULL, item, &err),
        "untouched", untouched);
    zc_array_release(a);
    return result;
}
"""

TWO_FILE_UNIMPORTED = r"""
#include <zarrcore/array_api.h>

/* unimported_read(capsule) -> (status, ndim, message): calls where no table was imported. */
PyObject *unimported_read(PyObject *self, PyObject *capsule)
{
    zc_array *a = (zc_array *)PyCapsule_GetPointer(capsule, "zarrcore.array");
    if (a == NULL)
        return NULL;
    int64_t start[1] = {0}, shape[1] = {1};
    char item[8];
    zc_array_error err;
    int st = zc_array_read(a, start, shape, NULL, item, NULL, &err);
    return Py_BuildValue("iis", st, zc_array_ndim(a), err.message);
}

/* unimported_open(capsule): zc_array_from_capsule there raises. */
PyObject *unimported_open(PyObject *self, PyObject *capsule)
{
    zc_array *a = zc_array_from_capsule(capsule);
    if (a == NULL)
        return NULL;
    zc_array_release(a);
    Py_RETURN_NONE;
}
"""

TWO_FILE_SETUP = """
import zarrcore
from setuptools import Extension, setup

setup(name="zc_twofile", ext_modules=[Extension(
    "zc_twofile", ["init.c", "calls.c", "unimported.c"], include_dirs=[zarrcore.get_include()],
    extra_compile_args=["-O0", "-Wall", "-Werror"])])
"""

# Run in a child process: where the table is missing, a crash must not end the test run.
TWO_FILE_RUN = """
import sys
import numpy as np
import zarrcore
import zc_twofile

out = {}
for dtype in ("int64", "float64"):
    a = zarrcore.create_array(zarrcore.MemoryStore(), shape=(3,), dtype=dtype, chunks=(2,))
    a[...] = [7, 8, 9]
    out[dtype] = zc_twofile.describe(a.native_handle().capsule())
handle = a.native_handle()
out["unimported"] = zc_twofile.unimported_read(handle.capsule())
try:
    zc_twofile.unimported_open(handle.capsule())
except Exception as e:
    out["unimported_open"] = (type(e).__name__, str(e))
print(repr(out))
"""


@pytest.fixture(scope="module")
def two_file_extension(tmp_path_factory):
    """The directory of the extension zc_twofile, built against this zarrcore."""
    if c_compiler() is None:
        pytest.skip("no C compiler here to build the extension")
    where = tmp_path_factory.mktemp("two_file")
    for name, text in (("init.c", TWO_FILE_INIT), ("calls.c", TWO_FILE_CALLS),
                       ("unimported.c", TWO_FILE_UNIMPORTED), ("setup.py", TWO_FILE_SETUP)):
        (where / name).write_text(text)
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=where,
                           env=_build_env(), capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return where


def _build_env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(zarrcore.__file__)), os.environ.get("PYTHONPATH", "")]))


def test_two_c_files_share_the_table_and_tell_dtypes_apart(two_file_extension):
    run = subprocess.run([sys.executable, "-c", TWO_FILE_RUN], cwd=two_file_extension,
                         env=_build_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    out = eval(run.stdout)  # noqa: S307 - the repr of a dict of plain values we printed
    # int64 and float64: one item size, their own codes (zarrcore/array_api.h).
    assert out["int64"] == (5, 8, np.int64(7).tobytes())
    assert out["float64"] == (12, 8, np.float64(7).tobytes())
    status, ndim, message = out["unimported"]
    assert status == -111 and ndim == -1  # ZC_ARRAY_ERR_NOT_IMPORTED
    assert "zc_import_array_api()" in message and "ZC_ARRAY_API_UNIQUE_SYMBOL" in message
    error_type, error = out["unimported_open"]
    assert error_type == "RuntimeError" and "ZC_NO_IMPORT_ARRAY_API" in error


# Also in a child process: a NULL the API does not check crashes it.
NULL_RUN = """
import zarrcore
import zc_twofile

for shards in (None, (4,)):
    a = zarrcore.create_array(zarrcore.MemoryStore(), shape=(5,), dtype="int32", chunks=(2,),
                              shards=shards)
    print(repr(zc_twofile.null_calls(a.native_handle().capsule())))
handle = a.native_handle()
for wrong in (handle, handle.capsule, zarrcore.array_api._C_API, None):
    try:
        zc_twofile.describe(wrong)
    except Exception as e:
        print(repr((type(e).__name__, str(e))))
"""


def test_every_c_call_refuses_null_pointers_and_a_handle_for_its_capsule(two_file_extension):
    run = subprocess.run([sys.executable, "-c", NULL_RUN], cwd=two_file_extension,
                         env=_build_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    lines = [eval(line) for line in run.stdout.splitlines()]  # noqa: S307 - our own reprs
    argument = -102  # ZC_ARRAY_ERR_ARGUMENT
    for calls in lines[:2]:
        assert calls == {
            "ndim": -1, "dtype": 0, "itemsize": 0, "is_closed": 1, "shard_shape_null_array": -1,
            "shard_shape_null_out": -1, "read_null_array": argument,
            "read_null_start": argument, "read_null_out": argument, "write_null_in": argument,
            "read_chunk_null_coords": argument, "untouched": 1}
    handle, method, table, none = lines[2:]
    assert handle[0] == "TypeError" and "not the ArrayHandle itself" in handle[1]
    for error in (handle, method, table, none):
        assert error[0] == "TypeError" and "pass handle.capsule()" in error[1], error
    assert "named zarrcore.array_api._C_API" in table[1]
