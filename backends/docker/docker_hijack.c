/* docker_hijack.c — Docker's hijacked connections, driven by hand on a libuv stream.
 *
 * /exec/{id}/start and /containers/{id}/attach answer "101 UPGRADED" and then carry raw stdin
 * one way and, without a tty, 8-byte-framed stdout/stderr the other ([stream, 0, 0, 0,
 * size32be]). libcurl's easy handle does not model that, so the request is written and the
 * stream read here: on a libuv pipe or tcp handle, or, for a tcp:// host with TLS, on a
 * connection libcurl set up (connect-only: it does the TLS handshake and the record layer,
 * we poll its socket). The struct lives inside its owner, which the ref/unref callbacks keep
 * alive while a handle or a request is pending.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/docker/docker_int.h"
#include "backends/http1.h"

#define HIJACK_HEAD_MAX (64u << 10)

struct hijack_write {
        uv_write_t req;
        struct docker_hijack *hj;
        char data[];
};

/* Streams over TLS live on libcurl connections of the backend's multi handle: they must all
 * end before it is released (docker_hijack_end_all). */
static struct list hijack_tls_open = {&hijack_tls_open, &hijack_tls_open};

static void
hijack_close_cb(uv_handle_t *h)
{
        struct docker_hijack *hj = h->data;

        hj->cbs->unref(hj->ctx);
}

/* Closes the connection (idempotent); no callback follows. */
void
docker_hijack_close(struct docker_hijack *hj)
{
        hj->ended = true;
        if (hj->link.next)
                list_del(&hj->link);
        if (hj->poll_init && !uv_is_closing((uv_handle_t *) &hj->poll)) {
                uv_poll_stop(&hj->poll);
                uv_close((uv_handle_t *) &hj->poll, hijack_close_cb);
        }
        if (hj->tls) {
                http_cancel(hj->tls); /* closes the socket; no on_done follows */
                hj->tls = NULL;
        }
        buf_free(&hj->tls_out);
        if (hj->conn_init && !uv_is_closing(&hj->conn.h))
                uv_close(&hj->conn.h, hijack_close_cb);
        if (hj->connecting) {
                hj->connecting = false;
                hj->cbs->unref(hj->ctx); /* last: it may free the owner, and hj with it */
        }
}

static void
hijack_end(struct docker_hijack *hj, const char *error)
{
        if (hj->ended)
                return;
        docker_hijack_close(hj);
        hj->cbs->on_end(hj->ctx, error);
}

/* Ends with "<prefix><what>: <detail>" (the prefix reads into what, e.g. "docker attach"). */
static void
hijack_endf(struct docker_hijack *hj, const char *prefix, const char *detail)
{
        char *msg = xasprintf("%s%s: %s", prefix, hj->what, detail);

        hijack_end(hj, msg);
        free(msg);
}

/* Demultiplexes the framed stream. */
static void
hijack_demux(struct docker_hijack *hj, const char *data, size_t len)
{
        while (len && !hj->ended) {
                if (hj->frame_left) {
                        size_t n = MIN(len, (size_t) hj->frame_left);
                        hj->frame_left -= (uint32_t) n;
                        hj->cbs->on_data(hj->ctx, hj->frame_stream, data, n);
                        data += n;
                        len -= n;
                        continue;
                }
                size_t n = MIN(len, sizeof(hj->fh) - hj->fh_len);
                memcpy(hj->fh + hj->fh_len, data, n);
                hj->fh_len += n;
                data += n;
                len -= n;
                if (hj->fh_len < sizeof(hj->fh))
                        continue;
                hj->fh_len = 0;
                hj->frame_stream = hj->fh[0] == 2 ? 2 : 1;
                hj->frame_left = (uint32_t) hj->fh[4] << 24 | (uint32_t) hj->fh[5] << 16 |
                                 (uint32_t) hj->fh[6] << 8 | hj->fh[7];
        }
}

static void
hijack_bytes(struct docker_hijack *hj, const char *data, size_t len)
{
        if (hj->raw)
                hj->cbs->on_data(hj->ctx, 1, data, len);
        else
                hijack_demux(hj, data, len);
}

static void
hijack_write_cb(uv_write_t *req, int status)
{
        struct hijack_write *w = (struct hijack_write *) req;

        w->hj->cbs->unref(w->hj->ctx);
        free(w);
}

static void hijack_tls_update(struct docker_hijack *hj);

/* Writes a (copied) and then b (copied) as one write; a no-op once the stream is closed. */
void
docker_hijack_send2(struct docker_hijack *hj, const void *a, size_t alen, const void *b,
                    size_t blen)
{
        struct hijack_write *w;
        uv_buf_t ub;

        if (hj->poll_init) {
                if (hj->ended)
                        return;
                buf_append(&hj->tls_out, a, alen);
                if (blen)
                        buf_append(&hj->tls_out, b, blen);
                hijack_tls_update(hj);
                return;
        }
        if (!hj->conn_init || uv_is_closing(&hj->conn.h) || alen + blen == 0)
                return;
        w = xmalloc(sizeof(*w) + alen + blen);
        memcpy(w->data, a, alen);
        if (blen)
                memcpy(w->data + alen, b, blen);
        w->hj = hj;
        ub = uv_buf_init(w->data, (unsigned) (alen + blen));
        hj->cbs->ref(hj->ctx);
        if (uv_write(&w->req, &hj->conn.s, &ub, 1, hijack_write_cb) < 0) {
                hj->cbs->unref(hj->ctx);
                free(w);
        }
}

/* Writes data (copied). */
void
docker_hijack_send(struct docker_hijack *hj, const void *data, size_t len)
{
        docker_hijack_send2(hj, data, len, NULL, 0);
}

/* Bytes waiting in the kernel-side write queue of the connection. */
size_t
docker_hijack_queued(const struct docker_hijack *hj)
{
        if (hj->poll_init)
                return hj->tls_out.len;
        return hj->conn_init ? uv_stream_get_write_queue_size(&hj->conn.s) : 0;
}

static void
hijack_shutdown_cb(uv_shutdown_t *req, int status)
{
        struct docker_hijack *hj = req->data;

        hj->cbs->unref(hj->ctx);
}

/* Half-closes the connection after the queued writes (stdin EOF; not over TLS). */
void
docker_hijack_shutdown(struct docker_hijack *hj)
{
        if (!hj->open || hj->shut || !hj->conn_init || uv_is_closing(&hj->conn.h))
                return;
        hj->shut = true;
        hj->shutdown_req.data = hj;
        hj->cbs->ref(hj->ctx);
        if (uv_shutdown(&hj->shutdown_req, &hj->conn.s, hijack_shutdown_cb) < 0)
                hj->cbs->unref(hj->ctx);
}

static void
hijack_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
        static char slab[64 * 1024];

        b->base = slab;
        b->len = sizeof(slab);
}

static void hijack_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void hijack_tls_read(struct docker_hijack *hj);

/* Stops reading (backpressure). */
void
docker_hijack_pause(struct docker_hijack *hj)
{
        hj->paused = true;
        if (hj->poll_init)
                hijack_tls_update(hj);
        else if (hj->reading && !uv_is_closing(&hj->conn.h))
                uv_read_stop(&hj->conn.s);
}

/* Restarts reading. */
void
docker_hijack_resume(struct docker_hijack *hj)
{
        hj->paused = false;
        if (hj->poll_init) {
                hijack_tls_read(hj); /* the TLS layer may hold bytes the socket will not signal */
                hijack_tls_update(hj);
        } else if (hj->reading && !hj->ended && !uv_is_closing(&hj->conn.h)) {
                uv_read_start(&hj->conn.s, hijack_alloc_cb, hijack_read_cb);
        }
}

/* Parses the answer head; on 101 the stream is open and any bytes after the head are data. */
static void
hijack_handshake(struct docker_hijack *hj)
{
        struct http1_head h;
        int rc = http1_parse_head(hj->hs.data, hj->hs.len, HIJACK_HEAD_MAX, &h);
        char *raw;

        if (rc == 0)
                return;
        if (rc < 0 || (h.status != 101 && h.status != 200)) {
                raw = xasprintf("%.*s", (int) MIN(hj->hs.len, 300u), hj->hs.data);
                hijack_endf(hj, "answer to docker ", raw);
                free(raw);
                return;
        }
        hj->open = true;
        hj->cbs->ref(hj->ctx); /* on_open may close the stream */
        hj->cbs->on_open(hj->ctx);
        if (!hj->ended && hj->hs.len > h.head_len)
                hijack_bytes(hj, hj->hs.data + h.head_len, hj->hs.len - h.head_len);
        buf_free(&hj->hs);
        hj->cbs->unref(hj->ctx);
}

/* The end of the incoming stream (why: for a stream that never opened). */
static void
hijack_eof(struct docker_hijack *hj, const char *why)
{
        if (hj->open)
                hijack_end(hj, NULL);
        else
                hijack_endf(hj, "docker closed the connection before answering ", why);
}

/* Incoming bytes: the answer head, then the stream. */
static void
hijack_input(struct docker_hijack *hj, const char *data, size_t n)
{
        if (hj->open) {
                hijack_bytes(hj, data, n);
                return;
        }
        buf_append(&hj->hs, data, n);
        hijack_handshake(hj);
}

static void
hijack_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
        struct docker_hijack *hj = s->data;

        if (hj->ended)
                return;
        if (n < 0)
                hijack_eof(hj, uv_strerror((int) n));
        else
                hijack_input(hj, b->base, (size_t) n);
}

/* ---- over TLS: libcurl's connection, our poll ---- */

static void
hijack_tls_poll_cb(uv_poll_t *p, int status, int events)
{
        struct docker_hijack *hj = p->data;

        hj->cbs->ref(hj->ctx);
        if (status < 0)
                hijack_endf(hj, "TLS connection to docker failed during ", uv_strerror(status));
        if (!hj->ended && (events & UV_WRITABLE))
                hijack_tls_update(hj);
        if (!hj->ended && (events & UV_READABLE))
                hijack_tls_read(hj);
        if (!hj->ended)
                hijack_tls_update(hj);
        hj->cbs->unref(hj->ctx);
}

/* Hands queued bytes to the TLS layer and polls for what is still wanted. */
static void
hijack_tls_update(struct docker_hijack *hj)
{
        int ev = 0;

        while (!hj->ended && hj->tls_out.len) {
                ssize_t n = http_stream_send(hj->tls, hj->tls_out.data, hj->tls_out.len);
                if (n == -EAGAIN)
                        break;
                if (n < 0) {
                        hijack_endf(hj, "TLS connection to docker failed during ", "send");
                        return;
                }
                buf_consume(&hj->tls_out, (size_t) n);
        }
        if (hj->ended)
                return;
        if (hj->reading && !hj->paused)
                ev |= UV_READABLE;
        if (hj->tls_out.len)
                ev |= UV_WRITABLE;
        if (ev)
                uv_poll_start(&hj->poll, ev, hijack_tls_poll_cb);
        else
                uv_poll_stop(&hj->poll);
}

/* Reads until the TLS layer has nothing more (it may hold decrypted bytes). */
static void
hijack_tls_read(struct docker_hijack *hj)
{
        static char slab[64 * 1024];

        while (!hj->ended && !hj->paused) {
                ssize_t n = http_stream_recv(hj->tls, slab, sizeof(slab));
                if (n == -EAGAIN)
                        return;
                if (n <= 0) {
                        hijack_eof(hj, n == 0 ? "end of stream" : "TLS receive error");
                        return;
                }
                hijack_input(hj, slab, (size_t) n);
        }
}

static void
hijack_tls_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        struct docker_hijack *hj = ctx;
        int fd = res->error ? -1 : http_stream_fd(req);

        hj->connecting = false;
        if (fd < 0 || uv_poll_init_socket(docker.loop, &hj->poll, fd) < 0) {
                hj->tls = NULL; /* http.c frees a failed request after this callback */
                hijack_endf(hj, "cannot connect to docker for ",
                            res->error ? res->error : "no socket");
                if (fd >= 0)
                        http_cancel(req);
                hj->cbs->unref(hj->ctx);
                return;
        }
        hj->poll.data = hj;
        hj->poll_init = true; /* the connect's reference now pins the poll handle */
        hj->reading = true;
        buf_append(&hj->tls_out, hj->request, strlen(hj->request));
        free(hj->request);
        hj->request = NULL;
        hijack_tls_update(hj);
}

static const struct http_cbs hijack_tls_cbs = {.on_done = hijack_tls_done_cb};

static void
hijack_connect_cb(uv_connect_t *req, int status)
{
        struct docker_hijack *hj = req->data;

        if (status < 0 && !hj->ended)
                hijack_endf(hj, "cannot connect to docker for ", uv_strerror(status));
        if (!hj->ended) {
                docker_hijack_send(hj, hj->request, strlen(hj->request));
                hj->reading = true;
                if (!hj->paused)
                        uv_read_start(&hj->conn.s, hijack_alloc_cb, hijack_read_cb);
        }
        free(hj->request);
        hj->request = NULL;
        hj->cbs->unref(hj->ctx);
}

static int
hijack_connect(struct docker_hijack *hj)
{
        struct sockaddr_storage ss;

        if (docker.sock_path) {
                uv_pipe_connect(&hj->connect_req, &hj->conn.pipe, docker.sock_path,
                                hijack_connect_cb);
                return 0;
        }
        if (uv_ip4_addr(docker.tcp_host, docker.tcp_port, (struct sockaddr_in *) &ss) < 0 &&
            uv_ip6_addr(docker.tcp_host, docker.tcp_port, (struct sockaddr_in6 *) &ss) < 0)
                return -EAFNOSUPPORT;
        return uv_tcp_connect(&hj->connect_req, &hj->conn.tcp, (struct sockaddr *) &ss,
                              hijack_connect_cb);
}

/* Connects and sends "POST /<api><path>" with body (JSON, may be NULL) asking for an upgrade.
 * what names the call in errors ("exec start", "attach"). Returns 0, or negative errno with
 * nothing pending (on_end is not called then). */
int
docker_hijack_open(struct docker_hijack *hj, const char *what, const char *path, const char *body,
                   bool raw)
{
        int rc;

        hj->what = what;
        hj->raw = raw;
        hj->request = xasprintf("POST /" DOCKER_API "%s HTTP/1.1\r\nHost: docker\r\n"
                                "Content-Type: application/json\r\nConnection: Upgrade\r\n"
                                "Upgrade: tcp\r\nContent-Length: %zu\r\n\r\n%s",
                                path, body ? strlen(body) : 0, body ? body : "");
        if (docker.tls) {
                list_add_tail(&hijack_tls_open, &hj->link);
                hj->connecting = true;
                hj->cbs->ref(hj->ctx); /* the connection: then its poll handle */
                rc = docker_connect_stream(&hijack_tls_cbs, hj, &hj->tls);
                if (rc < 0) {
                        list_del(&hj->link);
                        hj->connecting = false;
                        hj->tls = NULL;
                        hj->ended = true;
                        free(hj->request);
                        hj->request = NULL;
                        hj->cbs->unref(hj->ctx);
                }
                return rc;
        }
        if (docker.sock_path)
                uv_pipe_init(docker.loop, &hj->conn.pipe, 0);
        else
                uv_tcp_init(docker.loop, &hj->conn.tcp);
        hj->conn.h.data = hj;
        hj->conn_init = true;
        hj->cbs->ref(hj->ctx); /* the handle, until its close callback */
        hj->connect_req.data = hj;
        hj->cbs->ref(hj->ctx); /* the connect request */
        rc = hijack_connect(hj);
        if (rc < 0) {
                hj->cbs->unref(hj->ctx);
                free(hj->request);
                hj->request = NULL;
                hj->ended = true;
                uv_close(&hj->conn.h, hijack_close_cb);
        }
        return rc;
}

/* Ends every stream over TLS with an error (their owners hear on_end): the backend is about
 * to release the libcurl handle their connections belong to. */
void
docker_hijack_end_all(const char *why)
{
        while (!list_empty(&hijack_tls_open)) {
                struct docker_hijack *hj =
                        LIST_ENTRY(hijack_tls_open.next, struct docker_hijack, link);
                hj->cbs->ref(hj->ctx);
                hijack_end(hj, why);
                hj->cbs->unref(hj->ctx);
        }
}
