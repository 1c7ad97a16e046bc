/* ssh_jump.c — a stream to a host through a jump host's direct-tcpip channel (ssh_jump.h). */
#include "backends/ssh/ssh_jump.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/util.h"

#define JUMP_HIGH (1u << 20) /* queued one way: the other side stops */
#define JUMP_LOW  (256u << 10)

struct ssh_jump {
        int refs;     /* the owner's, the timer's, the pipe's, one per write under way */
        char *name;   /* "jump host 'NAME' (HOST:PORT)" */
        char *target; /* "HOST:PORT" */
        char *host;
        unsigned port;
        unsigned open_timeout_ms;
        const struct ssh_jump_cbs *cbs;
        void *ctx;
        struct ssh_conn *conn;
        struct ssh_chan *ch;
        uv_timer_t timer;
        uv_pipe_t pipe; /* our end of the socketpair */
        int fd;         /* the other end, until the owner has it */
        bool pipe_init, reading, paused, streaming, over, owner_gone;
        bool cut_off; /* the jump host went past the channel's window */
        char rbuf[65536];
};

struct jump_write {
        uv_write_t req;
        struct ssh_jump *j;
        char data[];
};

static void
jump_unref(struct ssh_jump *j)
{
        if (--j->refs > 0)
                return;
        free(j->name);
        free(j->target);
        free(j->host);
        free(j);
}

static void
jump_handle_close_cb(uv_handle_t *h)
{
        jump_unref(h->data);
}

/* Lets go of everything now (idempotent); the handles' close callbacks drop their refs. */
static void
jump_teardown(struct ssh_jump *j)
{
        struct ssh_conn *c = j->conn;

        if (j->ch)
                ssh_chan_close(j->ch);
        j->ch = NULL;
        j->conn = NULL;
        ssh_conn_close(c); /* its channels go with it, without waiting for the server */
        if (j->pipe_init && !uv_is_closing((uv_handle_t *) &j->pipe))
                uv_close((uv_handle_t *) &j->pipe, jump_handle_close_cb);
        if (j->fd >= 0)
                close(j->fd);
        j->fd = -1;
        if (!uv_is_closing((uv_handle_t *) &j->timer))
                uv_close((uv_handle_t *) &j->timer, jump_handle_close_cb);
}

/* The end (why is stolen), told to the owner once: no stream yet, or the stream is gone. */
static void
jump_over(struct ssh_jump *j, char *why)
{
        bool tell = !j->over && !j->owner_gone;

        j->over = true;
        jump_teardown(j); /* j lives on until the timer's close callback, after this turn */
        if (tell && j->streaming)
                j->cbs->on_down(j->ctx, why);
        else if (tell)
                j->cbs->on_stream(j->ctx, -1, why);
        free(why);
}

/* ---- the jump host's connection ---- */

static char *
jump_check_hostkey_cb(void *ctx, ssh_key key)
{
        struct ssh_jump *j = ctx;

        return j->owner_gone ? xstrdup("closed") : j->cbs->check_hostkey(j->ctx, key);
}

static const struct ssh_chan_cbs jump_chan_cbs;

static void
jump_ready_cb(void *ctx, struct ssh_conn *c, const char *error)
{
        struct ssh_jump *j = ctx;
        struct ssh_chan_spec spec = {.kind = SSH_CHAN_TCP, .host = j->host, .port = j->port};

        if (error) {
                jump_over(j, xasprintf("%s: %s", j->name, error));
                return;
        }
        j->ch = ssh_chan_open(c, &spec, &jump_chan_cbs, j);
        if (!j->ch)
                jump_over(j, xasprintf("%s: the connection closed at once", j->name));
}

static void
jump_down_cb(void *ctx, struct ssh_conn *c, const char *why)
{
        struct ssh_jump *j = ctx;

        j->cut_off = ssh_conn_cut_off(c);
        jump_over(j, xasprintf("the link to %s was lost: %s", j->name, why));
}

static const struct ssh_conn_cbs jump_conn_cbs = {
        .check_hostkey = jump_check_hostkey_cb,
        .on_ready = jump_ready_cb,
        .on_down = jump_down_cb,
};

/* ---- the socketpair: our end ---- */

static void
jump_write_cb(uv_write_t *req, int status)
{
        struct jump_write *w = req->data;
        struct ssh_jump *j = w->j;

        free(w);
        if (status < 0 && status != UV_ECANCELED && !j->over)
                jump_over(j, xasprintf("the session through %s closed its end: %s", j->name,
                                       uv_strerror(status)));
        else if (j->paused && j->ch && j->pipe.write_queue_size < JUMP_LOW) {
                j->paused = false;
                ssh_chan_resume(j->ch);
        }
        jump_unref(j);
}

/* Bytes from the target, to the target's connection: written now where the socket takes
 * them, queued (copied) where it does not, the channel paused past JUMP_HIGH. */
static void
jump_pipe_write(struct ssh_jump *j, const char *data, size_t len)
{
        uv_buf_t b = uv_buf_init((char *) data, (unsigned) len);
        int n = j->pipe.write_queue_size ? 0 : uv_try_write((uv_stream_t *) &j->pipe, &b, 1);
        struct jump_write *w;

        if (n == UV_EAGAIN)
                n = 0;
        if (n < 0) {
                jump_over(j, xasprintf("the session through %s closed its end: %s", j->name,
                                       uv_strerror(n)));
                return;
        }
        if ((size_t) n == len)
                return;
        w = xmalloc(sizeof(*w) + len - (size_t) n);
        memcpy(w->data, data + n, len - (size_t) n);
        w->j = j;
        w->req.data = w;
        b = uv_buf_init(w->data, (unsigned) (len - (size_t) n));
        j->refs++;
        if (uv_write(&w->req, (uv_stream_t *) &j->pipe, &b, 1, jump_write_cb) < 0) {
                free(w);
                jump_unref(j);
                jump_over(j, xasprintf("cannot write to the session through %s", j->name));
                return;
        }
        if (j->pipe.write_queue_size > JUMP_HIGH && !j->paused) {
                j->paused = true;
                ssh_chan_pause(j->ch);
        }
}

static void
jump_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
        struct ssh_jump *j = h->data;

        *buf = uv_buf_init(j->rbuf, sizeof(j->rbuf));
}

/* Bytes from the target's connection, to the channel; past JUMP_HIGH queued there, reading
 * stops until on_drain. */
static void
jump_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
        struct ssh_jump *j = s->data;

        if (n < 0) {
                jump_over(j, xasprintf("the session through %s closed its end: %s", j->name,
                                       n == UV_EOF ? "end of stream" : uv_strerror((int) n)));
                return;
        }
        if (n == 0 || !j->ch)
                return;
        ssh_chan_write(j->ch, buf->base, (size_t) n);
        if (ssh_chan_queued(j->ch) > JUMP_HIGH) {
                uv_read_stop(s);
                j->reading = false;
        }
}

/* ---- the direct-tcpip channel ---- */

static void
jump_chan_open_cb(void *ctx)
{
        struct ssh_jump *j = ctx;
        int fd = j->fd;

        uv_timer_stop(&j->timer);
        uv_read_start((uv_stream_t *) &j->pipe, jump_alloc_cb, jump_read_cb);
        j->reading = true;
        j->streaming = true;
        j->fd = -1;
        j->cbs->on_stream(j->ctx, fd, NULL);
}

/* From the open on, and before on_open too: the target's banner comes with the open
 * confirmation, in the same read, and libssh hands it over before the channel's step. */
static void
jump_chan_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct ssh_jump *j = ctx;

        if (!j->over)
                jump_pipe_write(j, data, len);
}

static void
jump_chan_drain_cb(void *ctx, size_t queued)
{
        struct ssh_jump *j = ctx;

        if (!j->reading && !j->over && j->pipe_init && queued < JUMP_LOW) {
                j->reading = true;
                uv_read_start((uv_stream_t *) &j->pipe, jump_alloc_cb, jump_read_cb);
        }
}

/* Why the jump host would not open the channel, with what to do about it (new). */
static char *
jump_refused(const struct ssh_jump *j, const struct ssh_chan_end *end)
{
        const char *e = end->error ? end->error : "refused";

        if (end->refused && end->open_reason == SSH_OPEN_PROHIBITED)
                return xasprintf("%s refused to forward a connection to %s (%s): allow TCP "
                                 "forwarding there for this user (sshd_config "
                                 "AllowTcpForwarding yes or local; no PermitOpen, "
                                 "DisableForwarding or authorized_keys restrict or "
                                 "no-port-forwarding that excludes it)",
                                 j->name, j->target, e);
        if (end->refused && end->open_reason == SSH_OPEN_CONNECT_FAILED)
                return xasprintf("%s cannot reach %s (%s): check the entry's host and port as "
                                 "the jump host sees them, and that sshd runs there",
                                 j->name, j->target, e);
        return xasprintf("%s could not open a connection to %s: %s", j->name, j->target, e);
}

static void
jump_chan_close_cb(void *ctx, const struct ssh_chan_end *end)
{
        struct ssh_jump *j = ctx;

        j->ch = NULL;
        if (end->error && !ssh_conn_up(j->conn)) /* the connection is dying: say so */
                jump_over(j, xasprintf("the link to %s was lost: %s", j->name, end->error));
        else if (!end->opened)
                jump_over(j, jump_refused(j, end));
        else
                jump_over(j, xasprintf("%s closed the forwarded connection to %s (the target "
                                       "ended it, or the link between them failed)%s%s",
                                       j->name, j->target, end->error ? ": " : "",
                                       end->error ? end->error : ""));
}

static const struct ssh_chan_cbs jump_chan_cbs = {
        .on_open = jump_chan_open_cb,
        .on_data = jump_chan_data_cb,
        .on_drain = jump_chan_drain_cb,
        .on_close = jump_chan_close_cb,
};

static void
jump_timeout_cb(uv_timer_t *t)
{
        struct ssh_jump *j = t->data;

        jump_over(j, xasprintf("%s did not connect to %s within %u s (a firewall dropping "
                               "packets between them, or a wrong address)",
                               j->name, j->target, j->open_timeout_ms / 1000));
}

static void
jump_nostream_cb(uv_timer_t *t)
{
        struct ssh_jump *j = t->data;

        jump_over(j, xstrdup(j->name));
}

/* The socketpair, our end on a pipe handle; -errno. */
static int
jump_socketpair(struct ssh_jump *j, uv_loop_t *loop)
{
        int sv[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                return -errno;
        uv_pipe_init(loop, &j->pipe, 0);
        j->pipe.data = j;
        j->pipe_init = true;
        j->refs++; /* the pipe's */
        j->fd = sv[0];
        if (uv_pipe_open(&j->pipe, sv[1]) < 0) {
                close(sv[1]);
                return -EINVAL;
        }
        return 0;
}

/* Starts. */
struct ssh_jump *
ssh_jump_open(uv_loop_t *loop, const struct ssh_jump_config *cfg, const struct ssh_jump_cbs *cbs,
              void *ctx)
{
        struct ssh_jump *j = xcalloc(1, sizeof(*j));
        unsigned t = cfg->open_timeout_ms ? cfg->open_timeout_ms : 10000;
        int r;

        j->refs = 2; /* the owner's, the timer's */
        j->name = xasprintf("jump host '%s' (%s:%u)", cfg->name, cfg->conn.host, cfg->conn.port);
        j->target = strchr(cfg->host, ':') ? xasprintf("[%s]:%u", cfg->host, cfg->port)
                                           : xasprintf("%s:%u", cfg->host, cfg->port);
        j->host = xstrdup(cfg->host);
        j->port = cfg->port;
        j->open_timeout_ms = t;
        j->cbs = cbs;
        j->ctx = ctx;
        uv_timer_init(loop, &j->timer);
        j->timer.data = j;
        /* From the start: the connection's own timeout covers it until it is up. */
        uv_timer_start(&j->timer, jump_timeout_cb, cfg->conn.connect_timeout_ms + t, 0);
        j->fd = -1;
        r = jump_socketpair(j, loop);
        if (r < 0) { /* told on the timer's next turn, never from inside this call */
                free(j->name);
                j->name = xasprintf("jump host '%s': cannot make a socketpair (%s)", cfg->name,
                                    strerror(-r));
                uv_timer_start(&j->timer, jump_nostream_cb, 0, 0);
                return j;
        }
        j->conn = ssh_conn_open(loop, &cfg->conn, &jump_conn_cbs, j);
        return j;
}

/* Cut off. */
bool
ssh_jump_cut_off(const struct ssh_jump *j)
{
        return j && j->cut_off;
}

/* The owner lets go. */
void
ssh_jump_close(struct ssh_jump *j)
{
        if (!j)
                return;
        j->owner_gone = true;
        jump_teardown(j);
        jump_unref(j);
}
