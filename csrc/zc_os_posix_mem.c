/* Anonymous memory on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "zc_os.h"

#include <sys/mman.h>

#define PAGE ((size_t)4096)

void *zc_mem_map(size_t size, size_t align)
{
    size_t span = size + (align > PAGE ? align : 0);
    if (span < size)
        return NULL;
    char *raw = (char *)mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    if (align <= PAGE)
        return raw;
    /* Trim the mapping to the aligned block inside it. */
    char *p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (raw + span > p + size)
        munmap(p + size, (size_t)(raw + span - (p + size)));
    return p;
}

void zc_mem_unmap(void *p, size_t size) { munmap(p, size); }

void zc_mem_advise_free(void *p, size_t size)
{
#ifdef MADV_FREE
    madvise(p, size, MADV_FREE);
#else
    (void)p, (void)size;
#endif
}

void zc_mem_advise_huge(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE);
#else
    (void)p, (void)size;
#endif
}
#endif
