/* modal_grpc.h — gRPC calls (unary and server-streaming) over libcurl's HTTP/2 through
 * backends/http.c: h2c for http:// URLs, TLS with ALPN for https://.
 *
 * A request is one length-prefixed message ([flag 0][len32be][bytes]); responses are parsed
 * from the body the same way and handed over one message at a time. The status comes from
 * grpc-status / grpc-message in the trailers, or in the headers of a "Trailers-Only" answer;
 * an answer without either is an error, so a cut stream is never taken for a finished one.
 * Compressed messages are refused (we never offer compression). Loop thread only.
 */
#ifndef SANDBOXD_MODAL_GRPC_H
#define SANDBOXD_MODAL_GRPC_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/http.h"

enum grpc_code {
        GRPC_OK = 0,
        GRPC_CANCELLED = 1,
        GRPC_UNKNOWN = 2,
        GRPC_INVALID_ARGUMENT = 3,
        GRPC_DEADLINE_EXCEEDED = 4,
        GRPC_NOT_FOUND = 5,
        GRPC_ALREADY_EXISTS = 6,
        GRPC_PERMISSION_DENIED = 7,
        GRPC_RESOURCE_EXHAUSTED = 8,
        GRPC_FAILED_PRECONDITION = 9,
        GRPC_ABORTED = 10,
        GRPC_OUT_OF_RANGE = 11,
        GRPC_UNIMPLEMENTED = 12,
        GRPC_INTERNAL = 13,
        GRPC_UNAVAILABLE = 14,
        GRPC_DATA_LOSS = 15,
        GRPC_UNAUTHENTICATED = 16,
};

/* How a call ended (borrowed for the callback). */
struct grpc_status {
        int code;
        const char *message; /* the server's grpc-message (decoded), or ours; never NULL */
        bool transport;      /* no status from the server: the link failed or was cut */
};

struct grpc_call;

struct grpc_call_cbs {
        /* One response message, borrowed for the call. grpc_call_cancel may be called here. */
        void (*on_msg)(void *ctx, struct grpc_call *c, const unsigned char *msg, size_t len);
        /* Exactly once unless cancelled; the call is freed after it returns. */
        void (*on_end)(void *ctx, struct grpc_call *c, const struct grpc_status *st);
};

struct grpc_call_spec {
        const char *base_url;       /* "http://host:port" or "https://host[:port]" */
        const char *path;           /* "/package.Service/Method" */
        const char *const *headers; /* metadata, NULL-terminated "name: value", may be NULL */
        const void *msg;            /* the request message (copied) */
        size_t len;
        long timeout_ms; /* whole call, also sent as grpc-timeout; 0 = none (streams) */
        size_t max_msg;  /* largest response message accepted; 0 = 16 MiB */
};

/* Starts a call; 0 and *ret (valid until on_end or cancel), or negative errno. */
int grpc_call_start(struct http_multi *m, const struct grpc_call_spec *spec,
                    const struct grpc_call_cbs *cbs, void *ctx, struct grpc_call **ret);
/* Cancels: no callback follows. Safe from inside on_msg. NULL is fine. */
void grpc_call_cancel(struct grpc_call *c);
/* Backpressure: stop / restart delivering messages. */
void grpc_call_pause(struct grpc_call *c);
void grpc_call_resume(struct grpc_call *c);
/* "UNAVAILABLE", … */
const char *grpc_code_name(int code);
/* Whether a call that ended with st may be retried as it is (the link, not the request). */
bool grpc_retryable(const struct grpc_status *st);

#endif
