# cython: language_level=3
"""File access below a directory store's root (csrc/files/zc_fs.h): the C root the compiled jobs
copy, held by a FileRoot."""

cdef extern from "files/zc_fs.h":
    ctypedef struct zc_root:
        int confined
        int fd
        size_t skip


cdef class FileRoot:
    cdef zc_root root
    cdef readonly str path
    cdef _error(self, int st, int err, path)
