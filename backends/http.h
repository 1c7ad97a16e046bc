/* http.h — asynchronous HTTP client on the libuv loop; the only libcurl user.
 *
 * One CURLM per loop (http_multi_acquire/http_multi_release, refcounted), driven by the
 * multi-socket API: a uv_poll_t per socket and one uv_timer_t. Requests stream their response body
 * through on_data (or buffer it, bounded, when on_data is NULL) and end with exactly one on_done
 * unless cancelled first. Transports: tcp/http(s) URLs, a Unix socket (unix_socket), TLS client
 * certificates (ca_file/cert_file/key_file, as in DOCKER_CERT_PATH).
 *
 * Threading: everything on the loop thread; callbacks are delivered on the loop thread.
 * libcurl is set up lazily: curl_global_init() runs at the first http_request() (never at
 * start-up, so an idle daemon does not load OpenSSL's state), which is safe because no thread
 * but the loop thread ever calls libcurl. curl_global_cleanup() is never called: the process
 * exit frees it.
 */
#ifndef SANDBOXD_HTTP_H
#define SANDBOXD_HTTP_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct http_multi;
struct http_req;

struct http_req_spec {
        const char *method;         /* "GET", "POST", …; NULL = GET */
        const char *url;            /* with a Unix socket the host is a placeholder */
        const char *unix_socket;    /* may be NULL */
        const char *const *headers; /* NULL-terminated "Name: value", may be NULL */
        const void *body;           /* copied; may be NULL */
        size_t body_len;
        const char *ca_file, *cert_file, *key_file; /* TLS, each may be NULL */
        long connect_timeout_ms;                    /* 0 = 10 s */
        long timeout_ms;                            /* whole transfer, 0 = none (streams) */
        size_t max_body;                            /* buffered mode limit, 0 = 16 MiB */
        /* Connect (and TLS handshake) only, no request: on_done reports the connection, and
         * on success the request stays alive as a raw stream for http_stream_* until the
         * owner frees it with http_cancel. method/body/headers are ignored. */
        bool connect_only;
        /* HTTP/2: with prior knowledge (h2c) for http:// URLs, through ALPN for https://; the
         * request waits for a connection it can multiplex on rather than opening another. */
        bool http2;
};

/* The outcome handed to on_done (all borrowed for the call). */
struct http_result {
        long status;       /* HTTP status, 0 when the transfer failed before a response */
        int curl_code;     /* CURLcode, 0 on transport success */
        const char *error; /* transport error text, NULL on success */
        const char *body;  /* buffered body (NUL-terminated) when on_data was NULL, else NULL */
        size_t body_len;
        const char *content_type; /* may be NULL */
        long retry_after_s;       /* a Retry-After header in seconds (an HTTP date converted),
                                     0 when there is none */
};

struct http_cbs {
        /* Body bytes as they arrive (status known through http_req_status). Return 0 to go on,
         * -1 to abort the transfer (on_done follows with curl_code set). May be NULL: buffer. */
        int (*on_data)(void *ctx, struct http_req *req, const char *data, size_t len);
        /* Exactly once, unless cancelled. The request is freed after it returns. */
        void (*on_done)(void *ctx, struct http_req *req, const struct http_result *res);
        /* Each response header line as it arrives, trailers (HTTP/2, chunked) included, without
         * the line end; the status line too. Borrowed for the call. May be NULL. */
        void (*on_header)(void *ctx, struct http_req *req, const char *line, size_t len);
};

/* The shared multi handle of loop (new reference; created on first use). */
struct http_multi *http_multi_acquire(uv_loop_t *loop);
/* Drops a reference; the last one cancels pending requests and closes the handles (the loop
 * must run afterwards for their close callbacks). NULL is fine. */
void http_multi_release(struct http_multi *m);

/* Starts a request; returns 0 and sets *ret (borrowed handle, valid until on_done or cancel),
 * or negative errno. */
int http_request(struct http_multi *m, const struct http_req_spec *spec, const struct http_cbs *cbs,
                 void *ctx, struct http_req **ret);
/* Cancels a request: no callback follows. Safe from inside this request's on_data. */
void http_cancel(struct http_req *req);
/* HTTP status of a request whose headers have arrived (0 before). */
long http_req_status(struct http_req *req);
/* Stops / restarts delivering on_data (backpressure). */
void http_pause(struct http_req *req);
void http_resume(struct http_req *req);

/* Raw I/O on a connected connect_only request (non-blocking; TLS is libcurl's). The socket
 * is for the caller's own poll: wait on it only after -EAGAIN, since the TLS layer may hold
 * decrypted bytes already. */
int http_stream_fd(struct http_req *req);
/* Bytes sent, -EAGAIN, or -EIO. */
ssize_t http_stream_send(struct http_req *req, const void *data, size_t len);
/* Bytes read, 0 at the end of the stream, -EAGAIN, or -EIO. */
ssize_t http_stream_recv(struct http_req *req, void *buf, size_t len);

/* Whether curl_global_init() has run in this process (a request was made). */
bool http_curl_initialised(void);

/* Percent-encodes s for a URL query or path segment (new). */
char *http_escape(const char *s);

#endif
