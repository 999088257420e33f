/* Anonymous memory on Windows: VirtualAlloc; see zc_os.h. */
#ifdef _WIN32
#include "os/zc_os_win.h" /* first: it sets the Windows version */
#include "os/zc_os.h"

#include <errno.h>

#define GRANULARITY ((size_t)64 << 10) /* what VirtualAlloc aligns to unasked */

void *zc_mem_map(size_t size, size_t align)
{
    if (align > GRANULARITY && size + align > size) {
        /* No partial release here: find an aligned free range, then allocate exactly it. Another
         * thread may take the range in between, hence a few tries. */
        for (int tries = 0; tries < 8; tries++) {
            char *raw = (char *)VirtualAlloc(NULL, size + align, MEM_RESERVE, PAGE_NOACCESS);
            if (raw == NULL)
                break;
            char *p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
            VirtualFree(raw, 0, MEM_RELEASE);
            void *q = VirtualAlloc(p, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
            if (q != NULL)
                return q;
        }
    }
    /* Alignment is for speed only: unaligned memory still serves. */
    return VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
}

void zc_mem_unmap(void *p, size_t size)
{
    (void)size;
    VirtualFree(p, 0, MEM_RELEASE);
}

void zc_mem_advise_free(void *p, size_t size) { VirtualAlloc(p, size, MEM_RESET, PAGE_READWRITE); }

void zc_mem_advise_huge(void *p, size_t size)
{
    /* Large pages need a privilege and are never transparent: nothing to ask. */
    (void)p, (void)size;
}

/* No memory shared by descriptor here (zc_os.h). */
int zc_os_shm_create(size_t size)
{
    (void)size;
    errno = ENOSYS;
    return -1;
}

int zc_os_shm_open(const char *path)
{
    (void)path;
    errno = ENOSYS;
    return -1;
}

void *zc_os_shm_map(int fd, size_t size)
{
    (void)fd, (void)size;
    errno = ENOSYS;
    return NULL;
}

int64_t zc_os_shm_size(int fd)
{
    (void)fd;
    errno = ENOSYS;
    return -1;
}
#endif
