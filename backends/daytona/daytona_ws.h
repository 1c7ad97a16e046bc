/* daytona_ws.h — a small WebSocket client (RFC 6455, client side, no extensions) for Daytona's
 * log follow stream, which is WebSocket only.
 *
 * libcurl (backends/http.h, connect-only) opens the TCP or TLS connection; the upgrade request,
 * the handshake check (Sec-WebSocket-Accept) and the frames are done here on a uv_poll_t of the
 * connection's socket. Data frames (text, binary, continuation) are delivered as a byte stream;
 * pings are answered; the client pings every DAYTONA_WS_PING_MS and ends the stream with an
 * error when nothing at all arrived for two intervals (a link that died silently).
 *
 * Threading: loop thread only. Ownership: the handle is the caller's until on_end has run or
 * daytona_ws_close was called; no callback follows either.
 */
#ifndef SANDBOXD_DAYTONA_WS_H
#define SANDBOXD_DAYTONA_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "backends/http.h"

#define DAYTONA_WS_PING_MS  20000
#define DAYTONA_WS_HEAD_MAX (64u << 10)

struct daytona_ws;

struct daytona_ws_cbs {
        /* Payload bytes of data frames, in order; borrowed for the call. */
        void (*on_data)(void *ctx, const char *data, size_t len);
        /* The stream is over. status: the HTTP status when the server refused the upgrade
         * (body: the start of its answer), else 0. error: NULL when the server closed the
         * stream normally (close code 1000 or none), else what went wrong. */
        void (*on_end)(void *ctx, long status, const char *body, size_t body_len,
                       const char *error);
};

/* Connects to url (http:// or https://; the scheme of the connection, not ws://) and asks for
 * the upgrade with headers (NULL-terminated "Name: value", borrowed for the call). Returns 0
 * and *ret, or negative errno (nothing pending). */
int daytona_ws_open(struct http_multi *m, uv_loop_t *loop, const char *url,
                    const char *const *headers, const struct daytona_ws_cbs *cbs, void *ctx,
                    struct daytona_ws **ret);
/* Opens a connection to url's host (as daytona_ws_open) for a stream whose URL is not known
 * yet, e.g. while the request that names it is in flight: the TCP (and TLS) set-up then
 * overlaps that request. Nothing is sent and no callback runs until daytona_ws_upgrade. */
int daytona_ws_preconnect(struct http_multi *m, uv_loop_t *loop, const char *url,
                          struct daytona_ws **ret);
/* Asks for the upgrade to url on such a connection, once. 0: as after daytona_ws_open. < 0:
 * the connection failed or was closed meanwhile, or url is on another host (nothing sent, no
 * callback; the caller closes it and opens a new one). */
int daytona_ws_upgrade(struct daytona_ws *ws, const char *url, const char *const *headers,
                       const struct daytona_ws_cbs *cbs, void *ctx);
/* Closes the stream; no callback follows. NULL is fine. */
void daytona_ws_close(struct daytona_ws *ws);
/* Backpressure: stop / restart reading. */
void daytona_ws_pause(struct daytona_ws *ws);
void daytona_ws_resume(struct daytona_ws *ws);

/* Sec-WebSocket-Accept of a key: base64(SHA-1(key + RFC 6455 GUID)), into out[29]. */
void daytona_ws_accept(const char *key, char out[29]);
/* SHA-1 (FIPS 180-4) of data, for the handshake check only. */
void daytona_ws_sha1(const void *data, size_t len, unsigned char out[20]);

#endif
