/* What every zarrcore C kernel shares: its status codes (zero is success, negatives are
 * errors; zarrcore/_native/status.pyx turns them into exceptions) and the most dimensions an array
 * may have. Every other definition of them refers here. */
#ifndef ZC_STATUS_H
#define ZC_STATUS_H

/* Arrays have at most this many dimensions (zarrcore/array_api.h publishes it again as
 * ZC_ARRAY_MAX_NDIM; zc_array.h checks the two agree). */
#define ZC_MAX_NDIM 32

#define ZC_OK 0
#define ZC_ERR_CORRUPT (-1)     /* input is not a valid encoding (garbage or truncated) */
#define ZC_ERR_SIZE (-2)        /* a size does not match, or exceeds a limit */
#define ZC_ERR_NOMEM (-3)       /* allocation failed */
#define ZC_ERR_PARAM (-4)       /* a caller-supplied parameter is invalid */
#define ZC_ERR_CHECKSUM (-5)    /* a stored checksum does not match */
#define ZC_ERR_UNSUPPORTED (-6) /* valid input that this build cannot handle */
#define ZC_ERR_OVERLAP (-7)     /* two ranges that must be disjoint overlap */
#define ZC_ERR_OUTSIDE (-8)     /* a path leads outside a confined store's root (zc_fs.h) */
#define ZC_ERR_LOCK (-9)        /* a key's lock file cannot be opened or locked (zc_key_lock.h) */
#define ZC_ERR_TOO_LARGE (-10)  /* a stored value larger than any valid one: refused unread */
#define ZC_ERR_IO (-20)         /* a system call failed; errno (or the job's sys_errno) says why */

/* What ZC_ERR_TOO_LARGE means for a chunk, after its key: one text for the Python mapping
 * (zarrcore/_native/status.pyx) and the native handle's messages (zc_array.c). */
#define ZC_TOO_LARGE_TEXT \
    "oversized: larger than any valid chunk of its codecs; refused unread"

#endif
