# cython: language_level=3
"""Bindings for csrc/files/zc_http.c: an HTTP request sent and the first bytes of its answer
received in one call that releases the GIL once (storage/_plain_http.py's GETs)."""
import os

from cpython.exc cimport PyErr_CheckSignals
from libc.errno cimport EINTR, errno
from libc.stdint cimport intptr_t

from .status cimport ZC_ERR_IO, ZC_OK

cdef extern from "files/zc_http.h" nogil:
    int zc_http_ask(intptr_t sock, const char *request, size_t request_len, size_t *sent,
                    char *answer, size_t cap, size_t *got)


def ask(intptr_t sock, const unsigned char[::1] request not None,
        unsigned char[::1] answer not None):
    """Send `request` whole on the connected blocking socket `sock`, then receive once into
    `answer`: the bytes received (0: the peer closed). OSError where a system call fails
    (ENOSYS: this system's build has no sockets of its own); a signal's exception (Ctrl-C)
    as Python's own socket calls raise it."""
    cdef int status, failure = 0
    cdef size_t length = request.shape[0], cap = answer.shape[0], sent = 0, got = 0
    cdef const char *sending = <const char *>&request[0] if length else NULL
    if cap == 0:
        raise ValueError("an empty buffer for the answer")
    while True:
        with nogil:
            status = zc_http_ask(sock, sending, length, &sent, <char *>&answer[0], cap, &got)
            failure = errno
        if status != ZC_ERR_IO or failure != EINTR:
            break
        PyErr_CheckSignals()  # (raises what a handler raised; else the call goes on)
    if status == ZC_ERR_IO:
        raise OSError(failure, os.strerror(failure))
    if status != ZC_OK:
        raise ValueError(f"zc_http_ask: status {status}")
    return got
