/* Opening beneath a directory on Windows, checked after the open; see zc_os.h and
 * wheels/README.md. Windows has no resolution bounded by a directory (as openat2's
 * RESOLVE_BENEATH) in its documented API: the file is opened by the joined path, links and
 * junctions followed, and kept only when its final path lies beneath the directory's. */
#ifdef _WIN32
#include "os/zc_os_win.h" /* first: it sets the Windows version */
#include "os/zc_os.h"

#include <errno.h>
#include <io.h>
#include <stdlib.h>
#include <wchar.h>

/* Whether `path` is `dir` or lies beneath it (both final paths, as the system spells them). */
static int beneath(const wchar_t *path, const wchar_t *dir)
{
    size_t n = wcslen(dir);
    if (wcsncmp(path, dir, n) != 0)
        return 0;
    return path[n] == L'\0' || path[n] == L'\\' || (n > 0 && dir[n - 1] == L'\\');
}

/* Whether the open file `fd` lies beneath the directory `root`: 1, 0, or -1 with errno. */
static int lies_beneath(int fd, int root)
{
    HANDLE hf = zc_win_handle(fd), hr = zc_win_handle(root);
    if (hf == INVALID_HANDLE_VALUE || hr == INVALID_HANDLE_VALUE)
        return -1;
    wchar_t *f = zc_win_final_path(hf), *r = f != NULL ? zc_win_final_path(hr) : NULL;
    int inside = r != NULL ? beneath(f, r) : -1;
    free(f);
    free(r);
    return inside;
}

int zc_os_open_beneath(int root, const char *rel, int how, unsigned mode)
{
    /* An absolute path leaves the root; a file created outside could not be taken back. */
    if (zc_os_root_length(rel) > 0 || ZC_OPEN_HOW(how) == ZC_OPEN_CREATE) {
        errno = zc_os_root_length(rel) > 0 ? EXDEV : EINVAL;
        return -1;
    }
    int fd = zc_os_open_at(root, rel, how, mode);
    if (fd < 0)
        return -1;
    int inside = lies_beneath(fd, root);
    if (inside == 1)
        return fd;
    int e = inside == 0 ? EXDEV : errno;
    _close(fd);
    errno = e;
    return -1;
}

void zc_os_beneath_by_walking(int on) { (void)on; /* no other way here */ }
#endif
