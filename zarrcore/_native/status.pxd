# cython: language_level=3
"""csrc/zc_status.h for the Cython modules: the status codes and the dimension limit (an enum,
so that arrays can be sized by it), and _status.pyx's one mapping of statuses to exceptions."""

cdef extern from "zc_status.h":
    enum: ZC_MAX_NDIM
    int ZC_OK, ZC_ERR_CORRUPT, ZC_ERR_SIZE, ZC_ERR_NOMEM, ZC_ERR_PARAM, ZC_ERR_CHECKSUM
    int ZC_ERR_UNSUPPORTED, ZC_ERR_OVERLAP, ZC_ERR_OUTSIDE, ZC_ERR_LOCK, ZC_ERR_TOO_LARGE, ZC_ERR_IO
    const char *ZC_TOO_LARGE_TEXT
