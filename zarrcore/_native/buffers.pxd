# cython: language_level=3
"""The one way the Cython modules take a buffer of a Python object for C code."""
from cpython.buffer cimport PyBUF_WRITABLE, PyObject_GetBuffer


cdef inline int get_buffer(object obj, Py_buffer *view, int flags, str what) except -1:
    """Fill `view` with the C-contiguous buffer of `obj` (writable when `flags` say so), or
    raise TypeError naming it as `what`. numpy's datetime64/timedelta64 arrays, which export
    no buffer, give their bytes (plain data)."""
    import numpy as np

    try:
        PyObject_GetBuffer(obj, view, flags)
        return 0
    except (BufferError, ValueError) as e:  # numpy reports non-contiguity as ValueError
        err = e
    if isinstance(obj, np.ndarray) and obj.flags.c_contiguous and not obj.dtype.hasobject:
        PyObject_GetBuffer(obj.reshape(-1).view(np.uint8), view, flags)
        return 0
    raise TypeError(f"{what} must be a {'writable ' if flags & PyBUF_WRITABLE else ''}"
                    f"C-contiguous buffer, got {type(obj).__name__}: {err}") from None
