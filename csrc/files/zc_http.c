/* A request and the first bytes of its answer; see zc_http.h. */
#include "files/zc_http.h"

#include "os/zc_os.h"

int zc_http_ask(intptr_t sock, const char *request, size_t request_len, size_t *sent,
                char *answer, size_t cap, size_t *got)
{
    *got = 0;
    if (cap == 0 || *sent > request_len)
        return ZC_ERR_PARAM;
    while (*sent < request_len) {
        ptrdiff_t n = zc_os_socket_send(sock, request + *sent, request_len - *sent);
        if (n < 0)
            return ZC_ERR_IO;
        *sent += (size_t)n;
    }
    ptrdiff_t n = zc_os_socket_recv(sock, answer, cap);
    if (n < 0)
        return ZC_ERR_IO;
    *got = (size_t)n;
    return ZC_OK;
}
