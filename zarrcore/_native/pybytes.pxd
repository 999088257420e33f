"""A bytes object's contents and size, and the shrinking of a new one, for the Cython
modules: the full C API's field reads and `_PyBytes_Resize`, or, in a build for the stable ABI
(setup.py's ZARRCORE_LIMITED_API), its functions and a copy, `_PyBytes_Resize` not being part
of it."""
from cpython.object cimport PyObject


cdef extern from *:
    """
    #ifdef Py_LIMITED_API
    #define zc_bytes_data(o) PyBytes_AsString(o)
    #define zc_bytes_size(o) PyBytes_Size(o)
    #else
    #define zc_bytes_data(o) PyBytes_AS_STRING(o)
    #define zc_bytes_size(o) PyBytes_GET_SIZE(o)
    #endif

    /* Shrink the new bytes *o (no other reference to it) to n bytes, as _PyBytes_Resize:
     * on failure *o is released and NULL, with an exception set. */
    static int zc_bytes_shrink(PyObject **o, Py_ssize_t n)
    {
    #ifdef Py_LIMITED_API
        if (PyBytes_Size(*o) == n)
            return 0;
        PyObject *copy = PyBytes_FromStringAndSize(PyBytes_AsString(*o), n);
        Py_DECREF(*o);
        *o = copy;
        return copy == NULL ? -1 : 0;
    #else
        return _PyBytes_Resize(o, n);
    #endif
    }
    """
    # (Only on bytes objects: the stable ABI's functions check the type, the macros do not.)
    char *bytes_data "zc_bytes_data"(object o)
    char *bytes_data_raw "zc_bytes_data"(PyObject *o)
    Py_ssize_t bytes_size "zc_bytes_size"(object o)
    int bytes_shrink "zc_bytes_shrink"(PyObject **o, Py_ssize_t n) except -1
