# cython: language_level=3
"""The exceptions of failed csrc/ calls, one mapping for every Cython module, and the
dimension limit of the compiled core for Python code (MAX_NDIM)."""
import errno
import os

from ..errors import (
    ChecksumError, ChunkDecodeError, OutsideStoreError, StoreError, ValueTooLargeError,
    ZarrcoreError,
)

# The most dimensions the compiled core takes (csrc/zc_status.h).
MAX_NDIM = ZC_MAX_NDIM

# An entry's errno that is the failed call's own.
CALL_ERRNO = -1

# What a status means where the caller gives no meaning of its own: (exception class,
# message after `where` (None: the errno's text) [, errno of an OSError [, its file name]]).
_COMMON = {
    ZC_ERR_IO: (StoreError, None, CALL_ERRNO),
    ZC_ERR_OUTSIDE: (OutsideStoreError, "its path resolves outside the confined store's root",
                     errno.EXDEV),
    ZC_ERR_CHECKSUM: (ChecksumError, "crc32c checksum mismatch"),
    ZC_ERR_NOMEM: (MemoryError, "out of memory"),
    ZC_ERR_CORRUPT: (ChunkDecodeError, "data is truncated, oversized or corrupt"),
    ZC_ERR_SIZE: (ChunkDecodeError, "data is truncated, oversized or corrupt"),
    # A stored chunk larger than any valid one, refused unread as the Python routes refuse it
    # (storage.base.too_large).
    ZC_ERR_TOO_LARGE: (ValueTooLargeError, ZC_TOO_LARGE_TEXT.decode(), errno.EFBIG),
}


def status_error(int status, str where="", dict meanings=None, int sys_errno=0):
    """The exception for the failed status `status` of a csrc/ call, its message starting with
    `where`. `meanings` maps statuses to what they mean for this call, as entries of _COMMON;
    its entry None stands for every status it does not name. Statuses it leaves out have
    the common meanings. `sys_errno` is the call's errno."""
    entry = None
    if meanings is not None:
        entry = meanings.get(status) or meanings.get(None)
    if entry is None:
        entry = _COMMON.get(status) or (ZarrcoreError, f"failed with status {status}")
    message = where + (os.strerror(sys_errno) if entry[1] is None else entry[1])
    if len(entry) < 3:
        return entry[0](message)
    code = sys_errno if entry[2] == CALL_ERRNO else entry[2]
    return entry[0](code, message, *entry[3:])
