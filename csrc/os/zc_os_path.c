/* Paths and directories, on every system; see zc_os.h. */
#include "os/zc_os.h"

int zc_os_is_sep(char c)
{
#ifdef _WIN32
    return c == '/' || c == '\\';
#else
    return c == '/';
#endif
}

size_t zc_os_root_length(const char *path)
{
#ifdef _WIN32
    if (((path[0] | 0x20) >= 'a' && (path[0] | 0x20) <= 'z') && path[1] == ':')
        return zc_os_is_sep(path[2]) ? 3 : 2; /* C:\ or C: */
    if (zc_os_is_sep(path[0]) && zc_os_is_sep(path[1])) {
        /* \\host\share\ (or \\?\C:\ and the like): past the two components after "\\". */
        size_t n = 2;
        for (int part = 0; part < 2; part++) {
            while (path[n] && !zc_os_is_sep(path[n]))
                n++;
            if (path[n])
                n++;
        }
        return n;
    }
#endif
    return zc_os_is_sep(path[0]) ? 1 : 0;
}

const char *zc_os_last_sep(const char *path)
{
    const char *last = NULL;
    for (; *path; path++)
        if (zc_os_is_sep(*path))
            last = path;
    return last;
}
