/* Anonymous memory on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#define _GNU_SOURCE
#include "os/zc_os.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

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

int zc_os_shm_create(size_t size)
{
#if defined(__linux__) && defined(SYS_memfd_create)
    if (size > (size_t)INT64_MAX) {
        errno = EFBIG;
        return -1;
    }
    /* The system call itself (Linux 3.17): glibc declares memfd_create only from 2.27, and
       the wheels are built against 2.17. 1 is MFD_CLOEXEC. */
    int fd = (int)syscall(SYS_memfd_create, "zarrcore-cache", 1u);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
#else
    (void)size;
    errno = ENOSYS;
    return -1;
#endif
}

int zc_os_shm_open(const char *path)
{
#if defined(__linux__)
    return open(path, O_RDWR | O_CLOEXEC);
#else
    (void)path;
    errno = ENOSYS;
    return -1;
#endif
}

void *zc_os_shm_map(int fd, size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

int64_t zc_os_shm_size(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    return (int64_t)st.st_size;
}
#endif
