/* modal_grpc.c — gRPC framing and status over HTTP/2 (backends/http.c). */
#include "backends/modal/modal_grpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/util.h"

#define GRPC_DEFAULT_MAX_MSG (16u << 20)
#define GRPC_MAX_HEADER_TEXT 4096

struct grpc_call {
        struct http_req *req;
        struct grpc_call_cbs cbs;
        void *ctx;
        struct buf in; /* response bytes not yet a whole message */
        size_t max_msg;
        long http_status;
        int status;      /* -1 until grpc-status seen */
        char *message;   /* grpc-message */
        bool grpc_ctype; /* content-type application/grpc… */
        bool too_big, bad_frame;
        bool cancelled, in_cb;
};

static const char *const grpc_names[] = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
};

/* The name of a status code. */
const char *
grpc_code_name(int code)
{
        return code >= 0 && (size_t) code < ARRAY_SIZE(grpc_names) ? grpc_names[code] : "?";
}

/* Transient: the link failed, or the server says to come back. */
bool
grpc_retryable(const struct grpc_status *st)
{
        return st->transport || st->code == GRPC_UNAVAILABLE;
}

static void
grpc_call_free(struct grpc_call *c)
{
        buf_free(&c->in);
        free(c->message);
        free(c);
}

static int
grpc_hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        c = (char) (c | 0x20);
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* grpc-message is percent-encoded; control characters are dropped. */
static char *
grpc_unpercent(const char *s, size_t n)
{
        struct buf b = {0};

        for (size_t i = 0; i < n && b.len < GRPC_MAX_HEADER_TEXT; i++) {
                char c = s[i];
                if (c == '%' && i + 2 < n && grpc_hexval(s[i + 1]) >= 0 &&
                    grpc_hexval(s[i + 2]) >= 0) {
                        c = (char) (grpc_hexval(s[i + 1]) * 16 + grpc_hexval(s[i + 2]));
                        i += 2;
                }
                if ((unsigned char) c >= 0x20)
                        buf_append(&b, &c, 1);
        }
        buf_append(&b, "", 1);
        return b.data;
}

static bool
grpc_header_is(const char *line, size_t len, const char *name, const char **val, size_t *vlen)
{
        size_t n = strlen(name);

        if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
                return false;
        *val = line + n + 1;
        *vlen = len - n - 1;
        while (*vlen && (**val == ' ' || **val == '\t')) {
                (*val)++;
                (*vlen)--;
        }
        return true;
}

static void
grpc_header_cb(void *ctx, struct http_req *req, const char *line, size_t len)
{
        struct grpc_call *c = ctx;
        const char *v;
        size_t vl;

        if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
                const char *sp = memchr(line, ' ', len);
                c->http_status = sp ? strtol(sp + 1, NULL, 10) : 0;
                c->status = -1; /* a new response (after a 1xx) starts over */
        } else if (grpc_header_is(line, len, "grpc-status", &v, &vl)) {
                c->status = vl && vl < 4 ? atoi(v) : GRPC_UNKNOWN;
        } else if (grpc_header_is(line, len, "grpc-message", &v, &vl)) {
                free(c->message);
                c->message = grpc_unpercent(v, vl);
        } else if (grpc_header_is(line, len, "content-type", &v, &vl)) {
                c->grpc_ctype = vl >= 16 && strncasecmp(v, "application/grpc", 16) == 0;
        }
}

/* Hands whole messages over; a cancel from inside on_msg stops the loop. */
static void
grpc_deliver(struct grpc_call *c)
{
        size_t off = 0;

        c->in_cb = true;
        while (!c->cancelled && c->in.len - off >= 5) {
                const unsigned char *p = (const unsigned char *) c->in.data + off;
                size_t n = (size_t) p[1] << 24 | (size_t) p[2] << 16 | (size_t) p[3] << 8 | p[4];
                if (p[0] != 0 || n > c->max_msg) {
                        c->bad_frame = p[0] != 0;
                        c->too_big = n > c->max_msg;
                        break;
                }
                if (c->in.len - off - 5 < n)
                        break;
                c->cbs.on_msg(c->ctx, c, p + 5, n);
                off += 5 + n;
        }
        c->in_cb = false;
        buf_consume(&c->in, off);
}

static int
grpc_data_cb(void *ctx, struct http_req *req, const char *data, size_t len)
{
        struct grpc_call *c = ctx;

        if (c->http_status != 200) {
                return 0; /* an HTTP error body is not gRPC: the status line says it all */
        }
        buf_append(&c->in, data, len);
        grpc_deliver(c);
        if (c->cancelled) {
                grpc_call_free(c); /* http_cancel ran already: nothing refers to us */
                return -1;
        }
        return c->too_big || c->bad_frame ? -1 : 0;
}

/* The status when no grpc-status came: from the HTTP status as the gRPC spec maps it. */
static int
grpc_from_http(long status)
{
        static const struct {
                long http;
                int code;
        } map[] = {{400, GRPC_INTERNAL},          {401, GRPC_UNAUTHENTICATED},
                   {403, GRPC_PERMISSION_DENIED}, {404, GRPC_UNIMPLEMENTED},
                   {429, GRPC_UNAVAILABLE},       {502, GRPC_UNAVAILABLE},
                   {503, GRPC_UNAVAILABLE},       {504, GRPC_UNAVAILABLE}};

        for (size_t i = 0; i < ARRAY_SIZE(map); i++)
                if (map[i].http == status)
                        return map[i].code;
        return GRPC_UNKNOWN;
}

static void
grpc_status_of(struct grpc_call *c, const struct http_result *res, struct grpc_status *st,
               char **msg)
{
        *msg = NULL;
        st->transport = false;
        if (c->too_big || c->bad_frame) {
                st->code = c->too_big ? GRPC_RESOURCE_EXHAUSTED : GRPC_INTERNAL;
                *msg = xstrdup(c->too_big ? "response message larger than the limit"
                                          : "compressed response message (not offered)");
        } else if (c->status >= 0 && (res->curl_code == 0 || c->status != GRPC_OK)) {
                st->code = c->status;
        } else if (res->curl_code != 0) {
                st->code = GRPC_UNAVAILABLE;
                st->transport = true;
                *msg = xstrdup(res->error ? res->error : "transport error");
        } else if (c->http_status != 200) {
                st->code = grpc_from_http(c->http_status);
                *msg = xasprintf("HTTP %ld without a gRPC status", c->http_status);
        } else {
                st->code = c->grpc_ctype ? GRPC_INTERNAL : GRPC_UNKNOWN;
                *msg = xstrdup(c->in.len ? "the response ended inside a message"
                                         : "the response has no grpc-status");
        }
        st->message = *msg ? *msg : c->message ? c->message : grpc_code_name(st->code);
}

static void
grpc_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        struct grpc_call *c = ctx;
        struct grpc_status st;
        char *msg;

        grpc_status_of(c, res, &st, &msg);
        /* A whole stream that ends inside a message lost data: never report OK then. */
        if (st.code == GRPC_OK && c->in.len) {
                st.code = GRPC_INTERNAL;
                st.message = "the response ended inside a message";
        }
        c->cbs.on_end(c->ctx, c, &st);
        free(msg);
        grpc_call_free(c);
}

/* Starts a call. */
int
grpc_call_start(struct http_multi *m, const struct grpc_call_spec *spec,
                const struct grpc_call_cbs *cbs, void *ctx, struct grpc_call **ret)
{
        static const struct http_cbs hcbs = {
                .on_data = grpc_data_cb, .on_done = grpc_done_cb, .on_header = grpc_header_cb};
        const char *hdrs[64];
        struct http_req_spec s = {0};
        struct grpc_call *c;
        struct buf body = {0};
        char *url, tmo[48];
        size_t n = 0;
        unsigned char pfx[5] = {0, (unsigned char) (spec->len >> 24),
                                (unsigned char) (spec->len >> 16), (unsigned char) (spec->len >> 8),
                                (unsigned char) spec->len};
        int rc;

        hdrs[n++] = "Content-Type: application/grpc";
        hdrs[n++] = "TE: trailers";
        if (spec->timeout_ms > 0) {
                snprintf(tmo, sizeof(tmo), "grpc-timeout: %ldm", spec->timeout_ms);
                hdrs[n++] = tmo;
        }
        for (const char *const *h = spec->headers; h && *h && n < ARRAY_SIZE(hdrs) - 1; h++)
                hdrs[n++] = *h;
        hdrs[n] = NULL;
        buf_append(&body, pfx, sizeof(pfx));
        if (spec->len)
                buf_append(&body, spec->msg, spec->len);
        url = xasprintf("%s%s", spec->base_url, spec->path);
        s.method = "POST";
        s.url = url;
        s.headers = hdrs;
        s.body = body.data;
        s.body_len = body.len;
        s.http2 = true;
        s.timeout_ms = spec->timeout_ms > 0 ? spec->timeout_ms + 1000 : 0;
        c = xcalloc(1, sizeof(*c));
        c->cbs = *cbs;
        c->ctx = ctx;
        c->status = -1;
        c->max_msg = spec->max_msg ? spec->max_msg : GRPC_DEFAULT_MAX_MSG;
        rc = http_request(m, &s, &hcbs, c, &c->req);
        free(url);
        buf_free(&body);
        if (rc < 0) {
                grpc_call_free(c);
                return rc;
        }
        if (ret)
                *ret = c;
        return 0;
}

/* Cancels without a callback. */
void
grpc_call_cancel(struct grpc_call *c)
{
        if (!c || c->cancelled)
                return;
        c->cancelled = true;
        http_cancel(c->req);
        if (!c->in_cb)
                grpc_call_free(c);
}

/* Stops delivering messages. */
void
grpc_call_pause(struct grpc_call *c)
{
        http_pause(c->req);
}

/* Restarts delivering messages. */
void
grpc_call_resume(struct grpc_call *c)
{
        http_resume(c->req);
}
