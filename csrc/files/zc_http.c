/* A request and the first bytes of its answer; see zc_http.h. */
#include "files/zc_http.h"

#include <errno.h>

#include "os/zc_os.h"

int zc_http_ask(intptr_t sock, const char *request, size_t request_len, char *answer, size_t cap,
                size_t *got)
{
    size_t done = 0;
    *got = 0;
    if (cap == 0)
        return ZC_ERR_PARAM;
    while (done < request_len) {
        ptrdiff_t n = zc_os_socket_send(sock, request + done, request_len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ZC_ERR_IO;
        done += (size_t)n;
    }
    for (;;) {
        ptrdiff_t n = zc_os_socket_recv(sock, answer, cap);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ZC_ERR_IO;
        *got = (size_t)n;
        return ZC_OK;
    }
}
