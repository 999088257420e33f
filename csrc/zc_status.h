/* Status codes shared by every zarrcore C kernel. Zero is success, negatives are errors. */
#ifndef ZC_STATUS_H
#define ZC_STATUS_H

#define ZC_OK 0
#define ZC_ERR_CORRUPT (-1)     /* input is not a valid encoding (garbage or truncated) */
#define ZC_ERR_SIZE (-2)        /* a size does not match, or exceeds a limit */
#define ZC_ERR_NOMEM (-3)       /* allocation failed */
#define ZC_ERR_PARAM (-4)       /* a caller-supplied parameter is invalid */
#define ZC_ERR_CHECKSUM (-5)    /* a stored checksum does not match */
#define ZC_ERR_UNSUPPORTED (-6) /* valid input that this build cannot handle */
#define ZC_ERR_OVERLAP (-7)     /* two ranges that must be disjoint overlap */
#define ZC_ERR_OUTSIDE (-8)     /* a path leads outside a confined store's root (zc_fs.h) */

#endif
