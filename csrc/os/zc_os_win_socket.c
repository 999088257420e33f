/* Sockets on Windows; see zc_os.h. Winsock is a library of its own (WS2_32.dll), which the
 * extensions do not link: these fail, and their callers keep their own sockets' code. */
#ifdef _WIN32
#include "os/zc_os.h"

#include <errno.h>

ptrdiff_t zc_os_socket_send(intptr_t sock, const void *buf, size_t len)
{
    (void)sock, (void)buf, (void)len;
    errno = ENOSYS;
    return -1;
}

ptrdiff_t zc_os_socket_recv(intptr_t sock, void *buf, size_t len)
{
    (void)sock, (void)buf, (void)len;
    errno = ENOSYS;
    return -1;
}
#endif
