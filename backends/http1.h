/* http1.h — hand-written HTTP/1.1 on libuv, without libcurl.
 *
 * A response parser (status line, Content-Length, chunked or until EOF; bounded) and a one-shot
 * GET over a Unix socket with "Connection: close". The docker backend uses them where libcurl
 * would cost more than the request: the availability probe and start-up listing (so an idle
 * daemon never initialises libcurl and OpenSSL), and the head of the hijacked exec stream.
 *
 * Threading: everything on the loop thread; the callback is delivered on the loop thread.
 */
#ifndef SANDBOXD_HTTP1_H
#define SANDBOXD_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct http1_req;

/* A parsed response head. */
struct http1_head {
        int status;            /* e.g. 200 */
        size_t head_len;       /* bytes up to and including the blank line */
        long long content_len; /* -1 when absent */
        bool chunked;          /* Transfer-Encoding: chunked */
};

/* Parses the response head at the start of data: 1 when complete (h filled), 0 when more bytes
 * are needed, -EMSGSIZE when no head ends within max bytes, -EBADMSG when it is malformed. */
int http1_parse_head(const char *data, size_t len, size_t max, struct http1_head *h);

/* The outcome handed to the callback (all borrowed for the call). */
struct http1_result {
        int status;        /* HTTP status, 0 when the request failed before a full response */
        const char *error; /* transport or protocol error text, NULL on success */
        const char *body;  /* decoded body, NUL-terminated (may be empty); NULL on error */
        size_t body_len;
};

typedef void (*http1_cb)(void *ctx, const struct http1_result *res);

/* Sends "GET target" with the given Host header on a new connection to the Unix socket
 * sock_path and buffers the answer (body at most max_body bytes); cb runs exactly once, unless
 * cancelled first, after timeout_ms at the latest. Strings are borrowed (copied). Returns 0 and
 * sets *ret (borrowed handle, valid until cb runs or http1_cancel), or negative errno. */
int http1_get(uv_loop_t *loop, const char *sock_path, const char *host, const char *target,
              size_t max_body, unsigned timeout_ms, http1_cb cb, void *ctx, struct http1_req **ret);
/* Cancels a request whose callback has not run: no callback follows. The handles close on the
 * next loop iterations. */
void http1_cancel(struct http1_req *req);

#endif
