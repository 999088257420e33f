/* Temporary files of a directory store.
 *
 * A new version of a stored object is written to a temporary file beside it and renamed over
 * it. Its writer holds an exclusive lock of the whole temporary file from its creation until
 * the rename is done (and the kernel, or the file server, drops that lock when the writer
 * dies), so any process can tell a live writer's file from one a killed writer left behind:
 * only the latter can be locked, and only the latter is removed. */
#ifndef ZC_TEMP_H
#define ZC_TEMP_H

#include <stddef.h>

#include "files/zc_fs.h"

/* Names of temporary files start with this; stores never list them as keys. */
#define ZC_TEMP_PREFIX ".zarrcore-tmp-"

/* Create and lock a new temporary file beside `at` (zc_fs.h: in the directory `at->dir`, and
 * in the directory part of `at->name`), open for writing: ZC_OK with *fd and its name
 * relative to `at->dir` in `tmp`, ZC_ERR_SIZE when the name does not fit in `cap`, ZC_ERR_IO
 * with errno (ENOENT: the directory is missing). Where the file system has no locks the file
 * is created unlocked. */
int zc_temp_create(const zc_at *at, char *tmp, size_t cap, int *fd);

/* Drop the writer's lock of a temporary file that becomes a file others lock in turn. */
void zc_temp_unlock(int fd);

/* Remove the temporary file `tmp` unless a live writer holds it: 1 when removed, 0 when kept
 * (its writer lives, it is gone already, or it cannot be told: no locks, no permission). */
int zc_temp_remove_stale(const zc_root *r, const char *tmp);

#endif
