/* http1.c — hand-written HTTP/1.1: response parser and a one-shot GET over a Unix socket. */
#include "backends/http1.h"

#include <sys/un.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/util.h"

#define HTTP1_HEAD_MAX  (64u << 10)
#define HTTP1_READ_SIZE (64u << 10)
#define HTTP1_HEX_MAX   15 /* digits of a chunk size: below 2^60 */

struct http1_req {
        uv_pipe_t pipe;
        uv_connect_t connect;
        uv_write_t write;
        uv_timer_t timer;
        char *request;
        struct buf resp;
        struct http1_head head;
        bool have_head;
        size_t max_body;
        http1_cb cb;
        void *ctx;
        int open_handles;
        bool finished; /* the callback ran or was cancelled: only closing is left */
};

/* Copies the value of header line l (n bytes, no CRLF) into v when its name is name. */
static bool
http1_value(const char *l, size_t n, const char *name, char *v, size_t vsize)
{
        size_t nl = strlen(name);

        if (n <= nl || strncasecmp(l, name, nl) != 0 || l[nl] != ':')
                return false;
        l += nl + 1;
        n -= nl + 1;
        while (n && (*l == ' ' || *l == '\t')) {
                l++;
                n--;
        }
        while (n && (l[n - 1] == ' ' || l[n - 1] == '\t'))
                n--;
        snprintf(v, vsize, "%.*s", (int) MIN(n, vsize - 1), l);
        return true;
}

static int
http1_header(struct http1_head *h, const char *l, size_t n)
{
        char v[64], *end;

        if (http1_value(l, n, "Content-Length", v, sizeof(v))) {
                errno = 0;
                h->content_len = strtoll(v, &end, 10);
                if (!v[0] || *end || errno || h->content_len < 0 || v[0] == '-' || v[0] == '+')
                        return -EBADMSG;
        } else if (http1_value(l, n, "Transfer-Encoding", v, sizeof(v))) {
                h->chunked = strcasestr(v, "chunked") != NULL;
        }
        return 0;
}

/* Parses the response head. */
int
http1_parse_head(const char *data, size_t len, size_t max, struct http1_head *h)
{
        const char *end = memmem(data, MIN(len, max), "\r\n\r\n", 4), *p, *nl;

        if (!end)
                return len >= max ? -EMSGSIZE : 0;
        memset(h, 0, sizeof(*h));
        h->content_len = -1;
        if (end - data < 12 || memcmp(data, "HTTP/1.", 7) != 0 || data[8] != ' ')
                return -EBADMSG;
        for (int i = 9; i < 12; i++) {
                if (data[i] < '0' || data[i] > '9')
                        return -EBADMSG;
                h->status = h->status * 10 + (data[i] - '0');
        }
        h->head_len = (size_t) (end + 4 - data);
        /* end + 2 ends the last line; the status line's CRLF is found before it or at end. */
        for (p = (const char *) memmem(data, h->head_len, "\r\n", 2) + 2; p < end + 2; p = nl + 2) {
                nl = memmem(p, (size_t) (end + 2 - p), "\r\n", 2);
                if (http1_header(h, p, (size_t) (nl - p)) < 0)
                        return -EBADMSG;
        }
        return 1;
}

/* Parses one chunk-size line at *p: its size, or -1 when more bytes are needed, -2 when bad. */
static long long
http1_chunk_size(const char **p, const char *end)
{
        const char *nl = memmem(*p, (size_t) (end - *p), "\r\n", 2);
        long long size = 0;
        int digits = 0;

        if (!nl)
                return end - *p > 256 ? -2 : -1;
        for (const char *c = *p; c < nl && *c != ';'; c++, digits++) {
                int d = (*c >= '0' && *c <= '9')   ? *c - '0'
                        : (*c >= 'a' && *c <= 'f') ? *c - 'a' + 10
                        : (*c >= 'A' && *c <= 'F') ? *c - 'A' + 10
                                                   : -1;
                if (d < 0 || digits >= HTTP1_HEX_MAX)
                        return -2;
                size = size * 16 + d;
        }
        *p = nl + 2;
        return digits ? size : -2;
}

/* Decodes a whole chunked body into out: 1 when complete, 0 when more is needed, or -errno. */
static int
http1_dechunk(const char *p, size_t len, size_t max, struct buf *out)
{
        const char *end = p + len;

        for (;;) {
                long long size = http1_chunk_size(&p, end);
                if (size == -1)
                        return 0;
                if (size < 0)
                        return -EBADMSG;
                if (size == 0)
                        break;
                if ((unsigned long long) size > max - out->len)
                        return -EMSGSIZE;
                if ((size_t) (end - p) < (size_t) size + 2)
                        return 0;
                if (memcmp(p + size, "\r\n", 2) != 0)
                        return -EBADMSG;
                buf_append(out, p, (size_t) size);
                p += size + 2;
        }
        /* Trailer lines up to the empty one. */
        while (end - p >= 2 && memcmp(p, "\r\n", 2) != 0) {
                const char *nl = memmem(p, (size_t) (end - p), "\r\n", 2);
                if (!nl)
                        return 0;
                p = nl + 2;
        }
        return end - p >= 2 ? 1 : 0;
}

/* The body after a parsed head: 1 and out filled when complete, 0 when more is needed, -errno. */
static int
http1_body(const char *p, size_t len, bool eof, const struct http1_head *h, size_t max,
           struct buf *out)
{
        int rc;

        buf_consume(out, out->len);
        buf_append(out, "", 0);
        if (h->status == 204 || h->status == 304)
                return 1;
        if (h->chunked) {
                /* Re-decoded from the start: only when the last chunk can have arrived. */
                if (!eof && (len < 5 || memcmp(p + len - 4, "\r\n\r\n", 4) != 0))
                        return 0;
                rc = http1_dechunk(p, len, max, out);
                return rc == 0 && eof ? -EBADMSG : rc;
        }
        if (h->content_len >= 0) {
                if ((unsigned long long) h->content_len > max)
                        return -EMSGSIZE;
                if (len < (size_t) h->content_len)
                        return eof ? -EBADMSG : 0;
                buf_append(out, p, (size_t) h->content_len);
                return 1;
        }
        if (len > max)
                return -EMSGSIZE;
        if (!eof)
                return 0;
        buf_append(out, p, len);
        return 1;
}

static void
http1_close_cb(uv_handle_t *h)
{
        struct http1_req *r = h->data;

        if (--r->open_handles > 0)
                return;
        free(r->request);
        buf_free(&r->resp);
        free(r);
}

static void
http1_close(struct http1_req *r)
{
        r->finished = true;
        uv_timer_stop(&r->timer);
        if (!uv_is_closing((uv_handle_t *) &r->timer))
                uv_close((uv_handle_t *) &r->timer, http1_close_cb);
        if (!uv_is_closing((uv_handle_t *) &r->pipe))
                uv_close((uv_handle_t *) &r->pipe, http1_close_cb);
}

static void
http1_finish(struct http1_req *r, int rc, const struct buf *body)
{
        struct http1_result res = {0};

        if (r->finished)
                return;
        if (rc < 0) {
                res.error = rc == -EMSGSIZE  ? "answer too large"
                            : rc == -EBADMSG ? "malformed or truncated HTTP answer"
                                             : uv_strerror(rc);
        } else {
                res.status = r->head.status;
                res.body = body->data;
                res.body_len = body->len;
        }
        r->finished = true;
        r->cb(r->ctx, &res);
        http1_close(r);
}

/* Looks at what has arrived; finishes the request once the answer is complete or broken. */
static void
http1_step(struct http1_req *r, bool eof)
{
        struct buf body = {0};
        int rc = 1;

        if (!r->have_head) {
                rc = http1_parse_head(r->resp.data, r->resp.len, HTTP1_HEAD_MAX, &r->head);
                r->have_head = rc > 0;
        }
        if (rc > 0)
                rc = http1_body(r->resp.data + r->head.head_len, r->resp.len - r->head.head_len,
                                eof, &r->head, r->max_body, &body);
        if (rc == 0 && eof)
                rc = -EBADMSG;
        if (rc != 0)
                http1_finish(r, rc, &body);
        buf_free(&body);
}

static void
http1_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
        struct http1_req *r = h->data;

        buf_reserve(&r->resp, HTTP1_READ_SIZE);
        *b = uv_buf_init(r->resp.data + r->resp.len, (unsigned) (r->resp.cap - r->resp.len - 1));
}

static void
http1_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
        struct http1_req *r = s->data;

        if (r->finished)
                return;
        if (n > 0) {
                r->resp.len += (size_t) n;
                r->resp.data[r->resp.len] = '\0';
                if (r->resp.len > r->max_body + HTTP1_HEAD_MAX)
                        http1_finish(r, -EMSGSIZE, NULL);
                else
                        http1_step(r, false);
        } else if (n == UV_EOF) {
                http1_step(r, true);
        } else if (n < 0) {
                http1_finish(r, (int) n, NULL);
        }
}

static void
http1_write_cb(uv_write_t *w, int status)
{
        struct http1_req *r = w->data;

        if (status < 0)
                http1_finish(r, status, NULL);
}

static void
http1_connect_cb(uv_connect_t *c, int status)
{
        struct http1_req *r = c->data;
        uv_buf_t b = uv_buf_init(r->request, (unsigned) strlen(r->request));
        int rc;

        if (r->finished)
                return;
        if (status < 0) {
                http1_finish(r, status, NULL);
                return;
        }
        r->write.data = r;
        rc = uv_write(&r->write, (uv_stream_t *) &r->pipe, &b, 1, http1_write_cb);
        if (rc == 0)
                rc = uv_read_start((uv_stream_t *) &r->pipe, http1_alloc_cb, http1_read_cb);
        if (rc < 0)
                http1_finish(r, rc, NULL);
}

static void
http1_timeout_cb(uv_timer_t *t)
{
        http1_finish(t->data, -ETIMEDOUT, NULL);
}

/* Starts a GET over a Unix socket. */
int
http1_get(uv_loop_t *loop, const char *sock_path, const char *host, const char *target,
          size_t max_body, unsigned timeout_ms, http1_cb cb, void *ctx, struct http1_req **ret)
{
        struct http1_req *r;

        /* The strings go into the request line and a header as they are. */
        if (strpbrk(target, " \r\n") || strpbrk(host, "\r\n") || target[0] != '/')
                return -EINVAL;
        /* libuv would connect to a truncated path. */
        if (strlen(sock_path) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                return -ENAMETOOLONG;
        r = xcalloc(1, sizeof(*r));
        r->request =
                xasprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host);
        r->max_body = max_body;
        r->cb = cb;
        r->ctx = ctx;
        uv_pipe_init(loop, &r->pipe, 0);
        uv_timer_init(loop, &r->timer);
        r->pipe.data = r->timer.data = r->connect.data = r;
        r->open_handles = 2;
        uv_timer_start(&r->timer, http1_timeout_cb, timeout_ms, 0);
        uv_pipe_connect(&r->connect, &r->pipe, sock_path, http1_connect_cb);
        if (ret)
                *ret = r;
        return 0;
}

/* Cancels without a callback. */
void
http1_cancel(struct http1_req *req)
{
        if (req && !req->finished)
                http1_close(req);
}
