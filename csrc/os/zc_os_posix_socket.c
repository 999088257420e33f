/* Sockets on POSIX systems; see zc_os.h. */
#ifndef _WIN32
#include "os/zc_os.h"

#include <sys/socket.h>
#include <sys/types.h>

/* (macOS has no MSG_NOSIGNAL; Python ignores SIGPIPE there, as everywhere.) */
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

ptrdiff_t zc_os_socket_send(intptr_t sock, const void *buf, size_t len)
{
    return (ptrdiff_t)send((int)sock, buf, len, MSG_NOSIGNAL);
}

ptrdiff_t zc_os_socket_recv(intptr_t sock, void *buf, size_t len)
{
    return (ptrdiff_t)recv((int)sock, buf, len, 0);
}
#endif
