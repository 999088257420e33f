/* zarrcore's array API for compiled code: read and write regions of a Zarr array from any
 * thread, without the GIL.
 *
 * From Python, `zarrcore.Array.native_handle()` makes a handle (zarrcore.array_api.ArrayHandle)
 * and `handle.capsule()` a PyCapsule named "zarrcore.array" holding its `zc_array *`. The
 * functions below take that pointer and never touch Python objects, so they run on threads
 * that do not hold the GIL, many at once on one handle.
 *
 * Use from C:
 *
 *     #include <zarrcore/array_api.h>      // include_dirs=[zarrcore.get_include()]
 *     ...in the module's init, with the GIL:  if (zc_import_array_api() < 0) return NULL;
 *     zc_array *a = zc_array_from_capsule(capsule);   // takes a reference
 *     ...any thread:  zc_array_error err;
 *                     if (zc_array_read(a, start, shape, NULL, buf, NULL, &err) != ZC_ARRAY_OK)
 *                         ...;  // with the GIL again: zc_array_raise(&err)
 *     zc_array_release(a);
 *
 * Lifetime. A handle is reference counted: the Python object holds one reference, each
 * capsule one, and zc_array_retain/zc_array_release add and drop more. Memory lives until the
 * last reference goes. `handle.close()` makes every later call fail with ZC_ARRAY_ERR_CLOSED;
 * calls already running finish normally. So: hold a reference (a capsule, or retain) for as
 * long as any thread may call, and close whenever you like; or keep the Python handle alive
 * until your threads are done.
 *
 * A handle is a snapshot of the array when it was made: its shape, chunking, codecs, fill
 * value and config.write_empty_chunks / config.shard_write_order. Make a new one after a
 * resize. It serves arrays in a local directory store (confined or not) or in a MemoryStore of
 * its own data, whose codecs the compiled core runs by itself: bytes, at most one of zstd /
 * blosc / gzip / zlib, an optional crc32c; and sharding_indexed over such inner codecs with a
 * little-endian index. Others are refused when the handle is made. A handle made with
 * native_handle(cache_bytes=N) keeps up to N bytes of decoded chunks for its reads, shared by
 * every thread, and uses one only while the stored bytes it came from are unchanged (the
 * user guide's page docs/guide/compiled.md, "The decoded-chunk cache").
 *
 * Writes keep the guarantees of the Python path: each chunk or shard replaced atomically (a
 * temporary file renamed over it), partial writes read-modify-written under the key's lock
 * (the same lock file Python takes, across threads, processes and hosts), chunks that hold
 * only the fill value deleted unless write_empty_chunks.
 *
 * Several C files in one extension. The table is a variable each file that includes this
 * header sees; by default it is static, one per file, so a file other than the one that called
 * zc_import_array_api would see none. As with numpy's PY_ARRAY_UNIQUE_SYMBOL and NO_IMPORT,
 * define in every file, before the include, ZC_ARRAY_API_UNIQUE_SYMBOL as one name of your own,
 * and in every file but the one whose module init calls zc_import_array_api, also
 * ZC_NO_IMPORT_ARRAY_API:
 *
 *     #define ZC_ARRAY_API_UNIQUE_SYMBOL mymodule_zc_array_api     // every file
 *     #define ZC_NO_IMPORT_ARRAY_API                               // all but the init's file
 *     #include <zarrcore/array_api.h>
 *
 * Before the table is imported the calls do not crash: zc_array_from_capsule raises
 * RuntimeError (returns NULL), read, write and read_chunk return ZC_ARRAY_ERR_NOT_IMPORTED
 * with a message, ndim and shard_shape return -1, itemsize 0, dtype ZC_ARRAY_DTYPE_OTHER,
 * is_closed 1, and the others do nothing.
 *
 * Every call checks its pointers. A NULL handle, or a NULL where a call writes its answer
 * (the `out` of shape, chunk_shape, shard_shape, fill_value), gets the same answers as before
 * the import, writing nothing: read, write and read_chunk return ZC_ARRAY_ERR_ARGUMENT (also
 * for a NULL buffer, start, shape or coords where the array has dimensions), ndim and
 * shard_shape -1, itemsize 0, dtype ZC_ARRAY_DTYPE_OTHER, is_closed 1; retain, release,
 * shape, chunk_shape and fill_value do nothing. */
#ifndef ZARRCORE_ARRAY_API_H
#define ZARRCORE_ARRAY_API_H

#include <stddef.h>
#include <stdint.h>

#define ZC_ARRAY_API_VERSION 2
#define ZC_ARRAY_MAX_NDIM 32

/* Status codes: 0 is success; each error maps to one Python exception (zc_array_raise). */
#define ZC_ARRAY_OK 0
#define ZC_ARRAY_ERR_CLOSED (-100)      /* the handle was closed: ZarrcoreError */
#define ZC_ARRAY_ERR_SELECTION (-101)   /* region outside the array, bad step: SelectionError */
#define ZC_ARRAY_ERR_ARGUMENT (-102)    /* a NULL pointer or other bad argument: ZarrcoreError */
#define ZC_ARRAY_ERR_READ_ONLY (-103)   /* a write through a read-only array: ReadOnlyError */
#define ZC_ARRAY_ERR_IO (-104)          /* a system call failed (sys_errno): StoreError */
#define ZC_ARRAY_ERR_LOCK (-105)        /* the file system has no locks: LockUnavailableError */
#define ZC_ARRAY_ERR_DECODE (-106)      /* a chunk is truncated or corrupt: ChunkDecodeError */
#define ZC_ARRAY_ERR_CHECKSUM (-107)    /* a checksum does not match: ChecksumError */
#define ZC_ARRAY_ERR_SHARD_INDEX (-108) /* a shard's index is malformed: ShardIndexError */
#define ZC_ARRAY_ERR_NOMEM (-109)       /* out of memory: MemoryError */
#define ZC_ARRAY_ERR_OUTSIDE (-110)     /* a confined store's path leads out: OutsideStoreError */
#define ZC_ARRAY_ERR_NOT_IMPORTED (-111) /* zc_import_array_api was not called: ZarrcoreError */

/* The data type of the items (zc_array_dtype), since version 2. Items are in the machine's
 * byte order unless ZC_ARRAY_DTYPE_SWAPPED is set in the code (arrays whose data type names
 * the other order, as some format 2 arrays do): compare `code & ~ZC_ARRAY_DTYPE_SWAPPED`.
 * Types without a code here (raw bytes, extension floats such as bfloat16) are
 * ZC_ARRAY_DTYPE_OTHER; zc_array_itemsize still gives their size. Codes are never renumbered. */
typedef enum {
    ZC_ARRAY_DTYPE_OTHER = 0,
    ZC_ARRAY_DTYPE_BOOL = 1,
    ZC_ARRAY_DTYPE_INT8 = 2,
    ZC_ARRAY_DTYPE_INT16 = 3,
    ZC_ARRAY_DTYPE_INT32 = 4,
    ZC_ARRAY_DTYPE_INT64 = 5,
    ZC_ARRAY_DTYPE_UINT8 = 6,
    ZC_ARRAY_DTYPE_UINT16 = 7,
    ZC_ARRAY_DTYPE_UINT32 = 8,
    ZC_ARRAY_DTYPE_UINT64 = 9,
    ZC_ARRAY_DTYPE_FLOAT16 = 10,
    ZC_ARRAY_DTYPE_FLOAT32 = 11,
    ZC_ARRAY_DTYPE_FLOAT64 = 12,
    ZC_ARRAY_DTYPE_COMPLEX64 = 13,   /* two float32: real, imaginary */
    ZC_ARRAY_DTYPE_COMPLEX128 = 14,  /* two float64 */
    ZC_ARRAY_DTYPE_DATETIME64 = 15,  /* int64 counts of the array's unit since 1970 */
    ZC_ARRAY_DTYPE_TIMEDELTA64 = 16, /* int64 counts of the array's unit */
    ZC_ARRAY_DTYPE_BYTES = 17,       /* itemsize bytes, zero-padded (numpy "S") */
    ZC_ARRAY_DTYPE_UNICODE = 18,     /* itemsize / 4 UCS4 code points, zero-padded ("U") */
    ZC_ARRAY_DTYPE_SWAPPED = 0x100
} zc_array_dtype_code;

/* What went wrong, filled by a failing call (when not NULL): the status, the system's errno
 * for ZC_ARRAY_ERR_IO and _LOCK, and a message naming the store key. */
#define ZC_ARRAY_MESSAGE_MAX 512
typedef struct {
    int status;
    int sys_errno;
    char message[ZC_ARRAY_MESSAGE_MAX];
} zc_array_error;

typedef struct zc_array zc_array;

/* The function table in the capsule zarrcore.array_api._C_API. Later versions only append
 * members; `size` is sizeof the table the library was built with. */
typedef struct {
    unsigned int version;
    size_t size;
    void (*retain)(zc_array *a);
    void (*release)(zc_array *a);
    int (*is_closed)(const zc_array *a);
    int (*ndim)(const zc_array *a);
    /* Each writes ndim values. chunk_shape: the chunks, the inner chunks when sharded;
     * shard_shape returns 0 (and writes nothing) when the array is not sharded, else 1. */
    void (*shape)(const zc_array *a, int64_t *out);
    void (*chunk_shape)(const zc_array *a, int64_t *out);
    int (*shard_shape)(const zc_array *a, int64_t *out);
    size_t (*itemsize)(const zc_array *a);
    /* The fill value's itemsize bytes, in memory byte order. */
    void (*fill_value)(const zc_array *a, void *out);
    /* Read the region of items start[d] + i * step[d], 0 <= i < shape[d] (step NULL: all 1;
     * steps >= 1) into `out`, whose byte strides are `out_strides` (NULL: C-contiguous).
     * Chunks not stored read as the fill value. */
    int (*read)(zc_array *a, const int64_t *start, const int64_t *shape, const int64_t *step,
                void *out, const ptrdiff_t *out_strides, zc_array_error *err);
    /* Write that region from `in` (byte strides `in_strides`, NULL: C-contiguous). */
    int (*write)(zc_array *a, const int64_t *start, const int64_t *shape, const int64_t *step,
                 const void *in, const ptrdiff_t *in_strides, zc_array_error *err);
    /* Read the whole chunk (inner chunk when sharded) at grid coordinates `coords`, decoded,
     * into `out`: C-contiguous, chunk_shape items, the fill value past the array's end. */
    int (*read_chunk)(zc_array *a, const int64_t *coords, void *out, zc_array_error *err);
    /* Version 2. The data type: a zc_array_dtype_code. */
    int (*dtype)(const zc_array *a);
} zc_array_api;

#ifndef ZARRCORE_ARRAY_API_IMPLEMENTATION
#include <Python.h>
#include <string.h>

/* The table, set by zc_import_array_api: one per file, or one per extension under the name
 * ZC_ARRAY_API_UNIQUE_SYMBOL (defined by the file without ZC_NO_IMPORT_ARRAY_API). */
#ifdef ZC_ARRAY_API_UNIQUE_SYMBOL
#define ZarrcoreArrayAPI ZC_ARRAY_API_UNIQUE_SYMBOL
#ifdef ZC_NO_IMPORT_ARRAY_API
extern const zc_array_api *ZarrcoreArrayAPI;
#else
const zc_array_api *ZarrcoreArrayAPI = NULL;
#endif
#else
#ifdef ZC_NO_IMPORT_ARRAY_API
#error "ZC_NO_IMPORT_ARRAY_API needs ZC_ARRAY_API_UNIQUE_SYMBOL, the table's name in every file"
#endif
static const zc_array_api *ZarrcoreArrayAPI = NULL;
#endif

#define ZC_ARRAY_NOT_IMPORTED_TEXT                                                              \
    "zarrcore's array API was not imported in this C file: call zc_import_array_api() in the "  \
    "module's init; with several C files, define ZC_ARRAY_API_UNIQUE_SYMBOL in each and "       \
    "ZC_NO_IMPORT_ARRAY_API in all but the init's (zarrcore/array_api.h)"

/* Import the table from zarrcore.array_api._C_API; call with the GIL, once per extension
 * module (its init). 0, or -1 with a Python exception set. */
static inline int zc_import_array_api(void)
{
    /* Imported first: PyCapsule_Import alone does not import a package's submodule. */
    PyObject *module = PyImport_ImportModule("zarrcore.array_api");
    if (module == NULL)
        return -1;
    PyObject *capsule = PyObject_GetAttrString(module, "_C_API");
    Py_DECREF(module);
    if (capsule == NULL)
        return -1;
    /* The table is static in the library, which stays loaded with its module. */
    const zc_array_api *api =
        (const zc_array_api *)PyCapsule_GetPointer(capsule, "zarrcore.array_api._C_API");
    Py_DECREF(capsule);
    if (api == NULL)
        return -1;
    if (api->version < ZC_ARRAY_API_VERSION || api->size < sizeof(zc_array_api)) {
        PyErr_Format(PyExc_ImportError,
                     "zarrcore array API version %u is older than version %d this module was "
                     "built against", api->version, ZC_ARRAY_API_VERSION);
        return -1;
    }
    ZarrcoreArrayAPI = api;
    return 0;
}

/* Raise the TypeError of zc_array_from_capsule for `obj`, which is no array capsule, naming
 * what it is: its type, by the type's attributes (the stable ABI has no PyTypeObject fields),
 * and a capsule's name. */
static inline void zc__array_not_a_capsule(PyObject *obj)
{
    static const char pass[] = ": pass handle.capsule() (the capsule it returns), where handle = "
                               "array.native_handle()";
    if (obj == NULL) {
        PyErr_Format(PyExc_TypeError, "expected the capsule of a zarrcore array handle, not "
                     "NULL%s", pass);
        return;
    }
    const char *name = PyCapsule_CheckExact(obj) ? PyCapsule_GetName(obj) : NULL;
    PyErr_Clear(); /* (from PyCapsule_GetName) */
    PyObject *type = PyObject_Type(obj);
    PyObject *module = PyObject_GetAttrString(type, "__module__");
    PyObject *qualname = module != NULL ? PyObject_GetAttrString(type, "__qualname__") : NULL;
    Py_DECREF(type);
    if (qualname == NULL) {
        Py_XDECREF(module);
        return;
    }
    /* As the type's tp_name reads: "module.qualname", builtins' without their module. */
    if (PyUnicode_Check(module) && PyUnicode_CompareWithASCIIString(module, "builtins") == 0)
        PyErr_Format(PyExc_TypeError, "expected the capsule of a zarrcore array handle, not "
                     "a %S%s%s%s", qualname, name != NULL ? " named " : "",
                     name != NULL ? name : "", pass);
    else if (PyUnicode_Check(module) &&
             PyUnicode_CompareWithASCIIString(module, "zarrcore.array_api") == 0 &&
             PyUnicode_Check(qualname) &&
             PyUnicode_CompareWithASCIIString(qualname, "ArrayHandle") == 0)
        PyErr_Format(PyExc_TypeError, "expected the capsule of a zarrcore array handle, not "
                     "the ArrayHandle itself%s", pass);
    else
        PyErr_Format(PyExc_TypeError, "expected the capsule of a zarrcore array handle, not "
                     "a %S.%S%s", module, qualname, pass);
    Py_DECREF(module);
    Py_DECREF(qualname);
}

/* The handle in a capsule from ArrayHandle.capsule(), with a new reference the caller drops
 * with zc_array_release; NULL with a Python exception set (TypeError for anything but such a
 * capsule, saying what to pass). Call with the GIL. */
static inline zc_array *zc_array_from_capsule(PyObject *capsule)
{
    if (ZarrcoreArrayAPI == NULL) {
        PyErr_SetString(PyExc_RuntimeError, ZC_ARRAY_NOT_IMPORTED_TEXT);
        return NULL;
    }
    if (capsule == NULL || !PyCapsule_IsValid(capsule, "zarrcore.array")) {
        zc__array_not_a_capsule(capsule);
        return NULL;
    }
    zc_array *a = (zc_array *)PyCapsule_GetPointer(capsule, "zarrcore.array");
    if (a != NULL)
        ZarrcoreArrayAPI->retain(a);
    return a;
}

/* Raise the exception of a failed call (the ZarrcoreError subclass of its status) and return
 * NULL, for returning from a Python-level function. Call with the GIL. */
static inline PyObject *zc_array_raise(const zc_array_error *err)
{
    PyObject *module = PyImport_ImportModule("zarrcore.array_api");
    if (module == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethod(module, "raise_status", "iiy", err->status, err->sys_errno,
                                      err->message);
    Py_DECREF(module);
    Py_XDECREF(r);
    return NULL;
}

/* ZC_ARRAY_ERR_NOT_IMPORTED, told in `err` when not NULL. */
static inline int zc_array_not_imported(zc_array_error *err)
{
    if (err != NULL) {
        err->status = ZC_ARRAY_ERR_NOT_IMPORTED;
        err->sys_errno = 0;
        strncpy(err->message, ZC_ARRAY_NOT_IMPORTED_TEXT, ZC_ARRAY_MESSAGE_MAX - 1);
        err->message[ZC_ARRAY_MESSAGE_MAX - 1] = '\0';
    }
    return ZC_ARRAY_ERR_NOT_IMPORTED;
}

static inline void zc_array_retain(zc_array *a)
{
    if (ZarrcoreArrayAPI != NULL)
        ZarrcoreArrayAPI->retain(a);
}
static inline void zc_array_release(zc_array *a)
{
    if (ZarrcoreArrayAPI != NULL)
        ZarrcoreArrayAPI->release(a);
}
static inline int zc_array_is_closed(const zc_array *a)
{
    return ZarrcoreArrayAPI == NULL ? 1 : ZarrcoreArrayAPI->is_closed(a);
}
static inline int zc_array_ndim(const zc_array *a)
{
    return ZarrcoreArrayAPI == NULL ? -1 : ZarrcoreArrayAPI->ndim(a);
}
static inline void zc_array_shape(const zc_array *a, int64_t *out)
{
    if (ZarrcoreArrayAPI != NULL)
        ZarrcoreArrayAPI->shape(a, out);
}
static inline void zc_array_chunk_shape(const zc_array *a, int64_t *out)
{
    if (ZarrcoreArrayAPI != NULL)
        ZarrcoreArrayAPI->chunk_shape(a, out);
}
static inline int zc_array_shard_shape(const zc_array *a, int64_t *out)
{
    return ZarrcoreArrayAPI == NULL ? -1 : ZarrcoreArrayAPI->shard_shape(a, out);
}
static inline size_t zc_array_itemsize(const zc_array *a)
{
    return ZarrcoreArrayAPI == NULL ? 0 : ZarrcoreArrayAPI->itemsize(a);
}
static inline void zc_array_fill_value(const zc_array *a, void *out)
{
    if (ZarrcoreArrayAPI != NULL)
        ZarrcoreArrayAPI->fill_value(a, out);
}
static inline int zc_array_read(zc_array *a, const int64_t *start, const int64_t *shape,
                                const int64_t *step, void *out, const ptrdiff_t *out_strides,
                                zc_array_error *err)
{
    if (ZarrcoreArrayAPI == NULL)
        return zc_array_not_imported(err);
    return ZarrcoreArrayAPI->read(a, start, shape, step, out, out_strides, err);
}
static inline int zc_array_write(zc_array *a, const int64_t *start, const int64_t *shape,
                                 const int64_t *step, const void *in, const ptrdiff_t *in_strides,
                                 zc_array_error *err)
{
    if (ZarrcoreArrayAPI == NULL)
        return zc_array_not_imported(err);
    return ZarrcoreArrayAPI->write(a, start, shape, step, in, in_strides, err);
}
static inline int zc_array_read_chunk(zc_array *a, const int64_t *coords, void *out,
                                      zc_array_error *err)
{
    if (ZarrcoreArrayAPI == NULL)
        return zc_array_not_imported(err);
    return ZarrcoreArrayAPI->read_chunk(a, coords, out, err);
}
/* The data type, a zc_array_dtype_code (version 2: zc_import_array_api refuses older tables). */
static inline int zc_array_dtype(const zc_array *a)
{
    return ZarrcoreArrayAPI == NULL ? ZC_ARRAY_DTYPE_OTHER : ZarrcoreArrayAPI->dtype(a);
}
#endif

#endif
