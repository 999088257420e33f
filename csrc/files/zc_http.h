/* An HTTP/1.1 request sent and the first bytes of its answer received in one call, so that a
 * thread that asks from Python gives up its interpreter lock once for both, not once per
 * system call. No parsing: the caller reads the answer (and receives the rest of it). */
#ifndef ZC_HTTP_H
#define ZC_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "zc_status.h"

/* Send the bytes of `request` from request[*sent] on (*sent: those sent before) on the
 * connected blocking socket `sock`, then receive once into answer[0..cap): ZC_OK with *got
 * the bytes received (0: the peer closed), or ZC_ERR_IO with errno set (a failed send or
 * receive; the socket's receive timeout: EAGAIN). A signal (EINTR) returns at once, *sent
 * telling how far the request went, so that the caller may handle it and call again. */
int zc_http_ask(intptr_t sock, const char *request, size_t request_len, size_t *sent,
                char *answer, size_t cap, size_t *got);

#endif
