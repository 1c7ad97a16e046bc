/* daytona_ws.c — WebSocket client on a libcurl connect-only connection. */
#include "backends/daytona/daytona_ws.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/http1.h"
#include "protocol/codec.h"
#include "protocol/util.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

enum ws_phase {
        WS_CONNECTING,
        WS_SPARE,     /* connected, no upgrade asked for yet (daytona_ws_preconnect) */
        WS_HANDSHAKE, /* upgrade sent, reading the answer's head */
        WS_REFUSED,   /* a non-101 answer: reading its body */
        WS_OPEN,
        WS_ENDED,
};

struct daytona_ws {
        struct http_req *conn;
        uv_loop_t *loop;
        uv_poll_t poll;
        uv_timer_t timer;
        bool poll_init, paused;
        int refs;
        enum ws_phase phase;
        struct daytona_ws_cbs cbs; /* on_end NULL: a spare, no upgrade asked for yet */
        void *ctx;
        char *host;      /* "host[:port]" the connection goes to */
        struct buf out;  /* bytes for the connection */
        struct buf in;   /* head, or frame header bytes */
        char accept[29]; /* the Sec-WebSocket-Accept we expect */
        long status;
        size_t body_want;
        bool chunked;
        /* current frame */
        int opcode;    /* of the current data message (continuation frames keep it) */
        int frame_op;  /* of the current frame */
        uint64_t left; /* payload bytes of the current frame still to come */
        bool in_payload;
        unsigned char ctl[125]; /* a control frame's payload */
        size_t nctl;
        bool got_close, sent_close;
        uint64_t last_rx_ms;
};

/* ---- SHA-1 and the accept key ---- */

#define ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static void
sha1_block(uint32_t h[5], const unsigned char *p)
{
        uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

        for (int i = 0; i < 16; i++)
                w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16 |
                       (uint32_t) p[4 * i + 2] << 8 | p[4 * i + 3];
        for (int i = 16; i < 80; i++)
                w[i] = ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        for (int i = 0; i < 80; i++) {
                uint32_t f, k, t;
                if (i < 20) {
                        f = (b & c) | (~b & d);
                        k = 0x5a827999;
                } else if (i < 40) {
                        f = b ^ c ^ d;
                        k = 0x6ed9eba1;
                } else if (i < 60) {
                        f = (b & c) | (b & d) | (c & d);
                        k = 0x8f1bbcdc;
                } else {
                        f = b ^ c ^ d;
                        k = 0xca62c1d6;
                }
                t = ROL(a, 5) + f + e + k + w[i];
                e = d;
                d = c;
                c = ROL(b, 30);
                b = a;
                a = t;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
}

/* SHA-1 of data. */
void
daytona_ws_sha1(const void *data, size_t len, unsigned char out[20])
{
        uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
        const unsigned char *p = data;
        unsigned char tail[128] = {0};
        size_t full = len / 64 * 64, rest = len - full, tlen;
        uint64_t bits = (uint64_t) len * 8;

        for (size_t i = 0; i < full; i += 64)
                sha1_block(h, p + i);
        memcpy(tail, p + full, rest);
        tail[rest] = 0x80;
        tlen = rest + 9 <= 64 ? 64 : 128;
        for (int i = 0; i < 8; i++)
                tail[tlen - 1 - i] = (unsigned char) (bits >> (8 * i));
        for (size_t i = 0; i < tlen; i += 64)
                sha1_block(h, tail + i);
        for (int i = 0; i < 20; i++)
                out[i] = (unsigned char) (h[i / 4] >> (24 - 8 * (i % 4)));
}

/* The accept value for key. */
void
daytona_ws_accept(const char *key, char out[29])
{
        char *s = xasprintf("%s" WS_GUID, key);
        unsigned char d[20];
        struct buf b = {0};

        daytona_ws_sha1(s, strlen(s), d);
        base64_encode(&b, d, sizeof(d));
        snprintf(out, 29, "%.*s", (int) b.len, b.data);
        buf_free(&b);
        free(s);
}

/* ---- lifetime ---- */

static void
ws_ref(struct daytona_ws *ws)
{
        ws->refs++;
}

static void
ws_unref(struct daytona_ws *ws)
{
        if (--ws->refs > 0)
                return;
        buf_free(&ws->out);
        buf_free(&ws->in);
        free(ws->host);
        free(ws);
}

static void
ws_handle_close_cb(uv_handle_t *h)
{
        ws_unref(h->data);
}

/* Releases the connection and the handles (idempotent). */
static void
ws_shut(struct daytona_ws *ws)
{
        ws->phase = WS_ENDED;
        if (ws->poll_init && !uv_is_closing((uv_handle_t *) &ws->poll)) {
                uv_poll_stop(&ws->poll);
                uv_close((uv_handle_t *) &ws->poll, ws_handle_close_cb);
        }
        if (!uv_is_closing((uv_handle_t *) &ws->timer))
                uv_close((uv_handle_t *) &ws->timer, ws_handle_close_cb);
        if (ws->conn) {
                http_cancel(ws->conn);
                ws->conn = NULL;
        }
}

/* Ends the stream and tells the owner (once). */
static void
ws_end(struct daytona_ws *ws, long status, const char *body, size_t blen, const char *error)
{
        if (ws->phase == WS_ENDED)
                return;
        ws_shut(ws);
        if (!ws->cbs.on_end)
                return; /* a spare: its owner finds it dead at daytona_ws_upgrade */
        ws->cbs.on_end(ws->ctx, status, body, blen, error);
        ws_unref(ws); /* the owner's: the handle is gone for it now */
}

/* Closes the stream; no callback follows. */
void
daytona_ws_close(struct daytona_ws *ws)
{
        if (!ws)
                return;
        ws_shut(ws);
        ws_unref(ws); /* the owner's */
}

/* ---- output ---- */

static void ws_update(struct daytona_ws *ws);

/* Queues a masked frame (clients mask every frame). */
static void
ws_send_frame(struct daytona_ws *ws, int opcode, const void *data, size_t len)
{
        unsigned char h[8], mask[4];
        char rnd[9];

        util_random_hex(rnd, 8);
        for (int i = 0; i < 4; i++)
                mask[i] =
                        (unsigned char) strtoul((char[3]){rnd[2 * i], rnd[2 * i + 1], 0}, NULL, 16);
        h[0] = (unsigned char) (0x80 | opcode);
        h[1] = (unsigned char) (0x80 | len); /* control frames only: len <= 125 */
        memcpy(h + 2, mask, 4);
        buf_append(&ws->out, h, 6);
        for (size_t i = 0; i < len; i++) {
                unsigned char c = ((const unsigned char *) data)[i] ^ mask[i % 4];
                buf_append(&ws->out, &c, 1);
        }
        ws_update(ws);
}

/* ---- input: frames ---- */

/* A complete control frame. */
static void
ws_control(struct daytona_ws *ws)
{
        char why[160];
        int code;

        if (ws->frame_op == 0x9) {
                ws_send_frame(ws, 0xA, ws->ctl, ws->nctl);
                return;
        }
        if (ws->frame_op != 0x8)
                return; /* pong */
        code = ws->nctl >= 2 ? ws->ctl[0] << 8 | ws->ctl[1] : 1000;
        if (!ws->sent_close) {
                ws->sent_close = true;
                ws_send_frame(ws, 0x8, ws->ctl, ws->nctl >= 2 ? 2 : 0);
        }
        if (code == 1000) {
                ws_end(ws, 0, NULL, 0, NULL);
                return;
        }
        snprintf(why, sizeof(why), "the server closed the stream with code %d%s%.*s", code,
                 ws->nctl > 2 ? ": " : "", (int) (ws->nctl > 2 ? ws->nctl - 2 : 0),
                 (const char *) ws->ctl + 2);
        ws_end(ws, 0, NULL, 0, why);
}

/* Parses a frame header from ws->in; 1 when complete, 0 when more is needed, -1 bad. */
static int
ws_frame_head(struct daytona_ws *ws)
{
        const unsigned char *h = (const unsigned char *) ws->in.data;
        size_t need = 2;
        uint64_t len;

        if (ws->in.len < 2)
                return 0;
        if (h[1] & 0x80)
                return -1; /* servers never mask */
        len = h[1] & 0x7f;
        need += len == 126 ? 2 : len == 127 ? 8 : 0;
        if (ws->in.len < need)
                return 0;
        if (len == 126)
                len = (uint64_t) h[2] << 8 | h[3];
        else if (len == 127)
                for (int i = 0; i < 8; i++)
                        len = (i ? len << 8 : 0) | h[2 + i];
        ws->frame_op = h[0] & 0x0f;
        if (ws->frame_op >= 8 && (len > 125 || !(h[0] & 0x80)))
                return -1;
        if (ws->frame_op == 1 || ws->frame_op == 2)
                ws->opcode = ws->frame_op;
        else if (ws->frame_op != 0 && ws->frame_op < 8)
                return -1;
        ws->left = len;
        ws->nctl = 0;
        ws->in_payload = true;
        buf_consume(&ws->in, need);
        return 1;
}

/* Consumes received bytes in the open phase. */
static void
ws_frames(struct daytona_ws *ws, const char *d, size_t n)
{
        while (n && ws->phase == WS_OPEN) {
                if (!ws->in_payload) {
                        size_t take = MIN(n, 14 - ws->in.len);
                        buf_append(&ws->in, d, take);
                        int r = ws_frame_head(ws);
                        if (r < 0) {
                                ws_end(ws, 0, NULL, 0, "malformed WebSocket frame");
                                return;
                        }
                        /* Bytes of the header buffer past the header belong to the payload. */
                        size_t extra = r ? ws->in.len : 0;
                        d += take - extra;
                        n -= take - extra;
                        if (!r)
                                continue;
                        ws->in.len = 0;
                } else {
                        size_t take = (size_t) MIN((uint64_t) n, ws->left);
                        if (ws->frame_op >= 8) {
                                memcpy(ws->ctl + ws->nctl, d, take);
                                ws->nctl += take;
                        } else if (take) {
                                ws->cbs.on_data(ws->ctx, d, take);
                        }
                        d += take;
                        n -= take;
                        ws->left -= take;
                }
                if (ws->in_payload && !ws->left) {
                        ws->in_payload = false;
                        if (ws->frame_op >= 8)
                                ws_control(ws);
                }
        }
}

/* ---- input: the handshake ---- */

/* Value of header name in a response head (copied into out), or false. */
static bool
ws_header(const char *head, size_t len, const char *name, char *out, size_t outlen)
{
        size_t nl = strlen(name);
        const char *p = head, *end = head + len;

        while (p < end) {
                const char *eol = memmem(p, (size_t) (end - p), "\r\n", 2);
                if (!eol)
                        break;
                if ((size_t) (eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
                        const char *v = p + nl + 1;
                        while (v < eol && (*v == ' ' || *v == '\t'))
                                v++;
                        snprintf(out, outlen, "%.*s", (int) (eol - v), v);
                        return true;
                }
                p = eol + 2;
        }
        return false;
}

/* Checks a 101 answer; NULL or what is wrong. */
static const char *
ws_check_upgrade(struct daytona_ws *ws, size_t head_len)
{
        char v[256];

        if (!ws_header(ws->in.data, head_len, "Upgrade", v, sizeof(v)) ||
            strcasecmp(v, "websocket") != 0)
                return "the server's 101 answer has no Upgrade: websocket";
        if (!ws_header(ws->in.data, head_len, "Sec-WebSocket-Accept", v, sizeof(v)) ||
            strcmp(v, ws->accept) != 0)
                return "the server's Sec-WebSocket-Accept does not match the key";
        return NULL;
}

/* Whether a chunked refusal body is complete (its last chunk arrived). */
static bool
ws_chunked_end(const struct daytona_ws *ws)
{
        return ws->chunked && ws->in.len >= 5 &&
               !memcmp(ws->in.data + ws->in.len - 5, "0\r\n\r\n", 5);
}

/* Bytes of the answer before the frames. */
static void
ws_handshake(struct daytona_ws *ws, const char *d, size_t n)
{
        struct http1_head h;
        const char *why;
        int r;

        buf_append(&ws->in, d, n);
        r = http1_parse_head(ws->in.data, ws->in.len, DAYTONA_WS_HEAD_MAX, &h);
        if (r < 0) {
                ws_end(ws, 0, NULL, 0, "malformed answer to the WebSocket upgrade");
                return;
        }
        if (r == 0)
                return;
        if (h.status != 101) {
                ws->status = h.status;
                ws->body_want = h.content_len >= 0 ? (size_t) MIN(h.content_len, 65536) : 65536;
                ws->chunked = h.chunked;
                buf_consume(&ws->in, h.head_len);
                ws->phase = WS_REFUSED;
                if (ws->in.len >= ws->body_want || ws_chunked_end(ws))
                        ws_end(ws, ws->status, ws->in.data, MIN(ws->in.len, ws->body_want),
                               "upgrade refused");
                return;
        }
        if ((why = ws_check_upgrade(ws, h.head_len))) {
                ws_end(ws, 0, NULL, 0, why);
                return;
        }
        buf_consume(&ws->in, h.head_len);
        ws->phase = WS_OPEN;
        struct buf rest = ws->in;
        ws->in = (struct buf){0};
        ws_frames(ws, rest.data, rest.len);
        buf_free(&rest);
}

static void
ws_input(struct daytona_ws *ws, const char *d, size_t n)
{
        ws->last_rx_ms = util_now_ms();
        if (ws->phase == WS_HANDSHAKE) {
                ws_handshake(ws, d, n);
        } else if (ws->phase == WS_REFUSED) {
                buf_append(&ws->in, d, n);
                if (ws->in.len >= ws->body_want || ws_chunked_end(ws))
                        ws_end(ws, ws->status, ws->in.data, MIN(ws->in.len, ws->body_want),
                               "upgrade refused");
        } else if (ws->phase == WS_OPEN) {
                ws_frames(ws, d, n);
        } else if (ws->phase == WS_SPARE) {
                ws_end(ws, 0, NULL, 0, "data before the upgrade"); /* the spare is unusable */
        }
}

static void
ws_eof(struct daytona_ws *ws, const char *why)
{
        if (ws->phase == WS_REFUSED)
                ws_end(ws, ws->status, ws->in.data, ws->in.len, "upgrade refused");
        else
                ws_end(ws, 0, NULL, 0, why);
}

/* ---- the connection ---- */

static void
ws_read(struct daytona_ws *ws)
{
        static char slab[64 * 1024];

        while (ws->phase != WS_ENDED && !ws->paused) {
                ssize_t n = http_stream_recv(ws->conn, slab, sizeof(slab));
                if (n == -EAGAIN)
                        return;
                if (n <= 0) {
                        ws_eof(ws, n == 0 ? "the connection was closed without a close frame"
                                          : "receive error on the connection");
                        return;
                }
                ws_input(ws, slab, (size_t) n);
        }
}

static void ws_poll_cb(uv_poll_t *p, int status, int events);

/* Hands queued bytes to the connection and polls for what is still wanted. */
static void
ws_update(struct daytona_ws *ws)
{
        int ev = 0;

        while (ws->phase != WS_ENDED && ws->conn && ws->out.len) {
                ssize_t n = http_stream_send(ws->conn, ws->out.data, ws->out.len);
                if (n == -EAGAIN)
                        break;
                if (n < 0) {
                        ws_end(ws, 0, NULL, 0, "send error on the connection");
                        return;
                }
                buf_consume(&ws->out, (size_t) n);
        }
        if (ws->phase == WS_ENDED || !ws->poll_init)
                return;
        if (!ws->paused)
                ev |= UV_READABLE;
        if (ws->out.len)
                ev |= UV_WRITABLE;
        if (ev)
                uv_poll_start(&ws->poll, ev, ws_poll_cb);
        else
                uv_poll_stop(&ws->poll);
}

static void
ws_poll_cb(uv_poll_t *p, int status, int events)
{
        struct daytona_ws *ws = p->data;

        ws_ref(ws);
        if (status < 0)
                ws_end(ws, 0, NULL, 0, uv_strerror(status));
        if (ws->phase != WS_ENDED && (events & UV_READABLE))
                ws_read(ws);
        if (ws->phase != WS_ENDED)
                ws_update(ws);
        ws_unref(ws);
}

static void
ws_timer_cb(uv_timer_t *t)
{
        struct daytona_ws *ws = t->data;

        if (ws->phase == WS_ENDED)
                return;
        ws_ref(ws);
        if (util_now_ms() - ws->last_rx_ms >= 2 * DAYTONA_WS_PING_MS)
                ws_end(ws, 0, NULL, 0, "no data and no answer to pings for 40 s");
        else if (ws->phase == WS_OPEN)
                ws_send_frame(ws, 0x9, "sbx", 3);
        ws_unref(ws);
}

static void
ws_connected_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        struct daytona_ws *ws = ctx;
        int fd = res->error ? -1 : http_stream_fd(req);

        ws_ref(ws);
        if (fd < 0 || uv_poll_init_socket(ws->loop, &ws->poll, fd) < 0) {
                if (res->error)
                        ws->conn = NULL; /* http.c frees a failed request after this */
                ws_end(ws, 0, NULL, 0, res->error ? res->error : "no socket");
                ws_unref(ws);
                return;
        }
        ws->poll.data = ws;
        ws->poll_init = true;
        ws_ref(ws); /* the poll handle's */
        ws->phase = ws->cbs.on_end ? WS_HANDSHAKE : WS_SPARE;
        ws->last_rx_ms = util_now_ms();
        ws_update(ws);
        ws_unref(ws);
}

/* Splits an http(s) URL into "host[:port]" and the request target (new strings). */
static int
ws_split_url(const char *url, char **host, char **target)
{
        const char *p = strstr(url, "://"), *slash;

        if (!p || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
                return -EINVAL;
        p += 3;
        slash = strchr(p, '/');
        if (slash == p || !*p)
                return -EINVAL;
        *host = slash ? xstrndup(p, (size_t) (slash - p)) : xstrdup(p);
        *target = xstrdup(slash ? slash : "/");
        return 0;
}

static void
ws_request(struct daytona_ws *ws, const char *target, const char *const *hdr)
{
        char raw[17], key[32];
        struct buf k = {0};

        util_random_hex(raw, 16);
        base64_encode(&k, raw, 16);
        snprintf(key, sizeof(key), "%.*s", (int) k.len, k.data);
        buf_free(&k);
        daytona_ws_accept(key, ws->accept);
        buf_appendf(&ws->out,
                    "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
                    target, ws->host, key);
        for (; hdr && *hdr; hdr++)
                buf_appendf(&ws->out, "%s\r\n", *hdr);
        buf_append(&ws->out, "\r\n", 2);
}

/* Opens a connection to url's host for a stream asked for later. */
int
daytona_ws_preconnect(struct http_multi *m, uv_loop_t *loop, const char *url,
                      struct daytona_ws **ret)
{
        static const struct http_cbs conn_cbs = {.on_done = ws_connected_cb};
        struct http_req_spec s = {.url = url, .connect_only = true};
        struct daytona_ws *ws;
        char *host, *target;
        int rc;

        if (ws_split_url(url, &host, &target) < 0)
                return -EINVAL;
        free(target);
        ws = xcalloc(1, sizeof(*ws));
        ws->loop = loop;
        ws->host = host;
        ws->refs = 2; /* the owner's and the timer's */
        uv_timer_init(loop, &ws->timer);
        ws->timer.data = ws;
        rc = http_request(m, &s, &conn_cbs, ws, &ws->conn);
        if (rc < 0) {
                ws->conn = NULL;
                ws_shut(ws);
                ws_unref(ws);
                return rc;
        }
        uv_timer_start(&ws->timer, ws_timer_cb, DAYTONA_WS_PING_MS, DAYTONA_WS_PING_MS);
        *ret = ws;
        return 0;
}

/* Asks for the upgrade to url on a handle of daytona_ws_preconnect. The request goes out on
 * a later loop turn, so no callback runs from inside. */
int
daytona_ws_upgrade(struct daytona_ws *ws, const char *url, const char *const *headers,
                   const struct daytona_ws_cbs *cbs, void *ctx)
{
        char *host, *target;
        int rc = -EPIPE;

        if (ws->cbs.on_end || ws_split_url(url, &host, &target) < 0)
                return -EINVAL;
        if (ws->phase != WS_ENDED && !strcmp(host, ws->host)) {
                ws->cbs = *cbs;
                ws->ctx = ctx;
                ws_request(ws, target, headers);
                if (ws->phase == WS_SPARE) {
                        ws->phase = WS_HANDSHAKE;
                        uv_poll_start(&ws->poll, UV_READABLE | UV_WRITABLE, ws_poll_cb);
                }
                rc = 0;
        }
        free(host);
        free(target);
        return rc;
}

/* Connects and asks for the upgrade. */
int
daytona_ws_open(struct http_multi *m, uv_loop_t *loop, const char *url, const char *const *headers,
                const struct daytona_ws_cbs *cbs, void *ctx, struct daytona_ws **ret)
{
        int rc = daytona_ws_preconnect(m, loop, url, ret);

        if (rc == 0)
                rc = daytona_ws_upgrade(*ret, url, headers, cbs, ctx); /* still connecting */
        return rc;
}

/* Stops reading. */
void
daytona_ws_pause(struct daytona_ws *ws)
{
        ws->paused = true;
        ws_update(ws);
}

/* Restarts reading (the TLS layer may hold bytes already). */
void
daytona_ws_resume(struct daytona_ws *ws)
{
        if (!ws->paused)
                return;
        ws->paused = false;
        ws_ref(ws);
        if (ws->phase != WS_ENDED && ws->poll_init)
                ws_read(ws);
        if (ws->phase != WS_ENDED)
                ws_update(ws);
        ws_unref(ws);
}
