/* transport.c — transports over fds: a pipe pair, a socketpair, a spawned command's stdio, a
 * Unix socket (transport.h). One uv_pipe_t per direction (one for a socket); the struct goes
 * when the last handle, write and the child process are done with it. */
#include "backends/agent/transport.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/spawn.h"
#include "protocol/util.h"

#define FDT_STDERR_MAX 4096

struct fdt {
        struct agent_transport base;
        uv_pipe_t r, w, e; /* read side, write side (unused for a socket), child's stderr */
        bool two, e_init;
        uv_process_t proc;
        bool has_proc, proc_done, out_eof;
        int64_t exit_status;
        int term_signal;
        struct buf errtext; /* the child's stderr, for the end's message */
        uv_connect_t connect;
        agent_connect_cb connect_cb;
        void *connect_ctx;
        const struct agent_transport_cbs *cbs;
        void *ctx;
        int refs;
        bool started, ended, closed, paused;
        char *end_error;
};

struct fdt_write {
        uv_write_t req;
        struct fdt *t;
        char data[];
};

static char fdt_slab[AGENT_TRANSPORT_READ];

static void
fdt_unref(struct fdt *t)
{
        if (--t->refs > 0)
                return;
        buf_free(&t->errtext);
        free(t->end_error);
        free(t);
}

static void
fdt_handle_close_cb(uv_handle_t *h)
{
        fdt_unref(h->data);
}

static uv_stream_t *
fdt_out(struct fdt *t)
{
        return (uv_stream_t *) (t->two ? &t->w : &t->r);
}

/* Tells the user once, when the stream and (for a command) the process are done. */
static void
fdt_end(struct fdt *t, const char *error)
{
        if (error && !t->end_error)
                t->end_error = xstrdup(error);
        if (t->ended || t->closed || (t->has_proc && !t->proc_done && !error))
                return;
        t->ended = true;
        if (t->has_proc && !t->end_error && (t->exit_status || t->term_signal)) {
                t->end_error = t->term_signal ? xasprintf("the command was killed by signal %d",
                                                          t->term_signal)
                                              : xasprintf("the command exited with status %lld",
                                                          (long long) t->exit_status);
        }
        if (t->end_error && t->errtext.len) {
                char *m =
                        xasprintf("%s: %.*s", t->end_error, (int) t->errtext.len, t->errtext.data);
                free(t->end_error);
                t->end_error = m;
        }
        if (t->started)
                t->cbs->on_end(t->ctx, t->end_error);
}

static void
fdt_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
        b->base = fdt_slab;
        b->len = sizeof(fdt_slab);
}

static void
fdt_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
        struct fdt *t = s->data;

        if (t->closed || t->ended)
                return;
        if (n > 0) {
                t->cbs->on_data(t->ctx, b->base, (size_t) n);
                return;
        }
        if (n == UV_EOF) {
                t->out_eof = true;
                uv_read_stop(s);
                fdt_end(t, NULL);
        } else if (n < 0) {
                fdt_end(t, uv_strerror((int) n));
        }
}

static void
fdt_err_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
        struct fdt *t = s->data;
        size_t room = FDT_STDERR_MAX - MIN(t->errtext.len, FDT_STDERR_MAX);

        if (n > 0)
                buf_append(&t->errtext, b->base, MIN((size_t) n, room));
        else if (n < 0)
                uv_read_stop(s);
}

static void
fdt_start(struct agent_transport *base, const struct agent_transport_cbs *cbs, void *ctx)
{
        struct fdt *t = (struct fdt *) base;

        t->cbs = cbs;
        t->ctx = ctx;
        t->started = true;
        if (!t->paused && !t->out_eof)
                uv_read_start((uv_stream_t *) &t->r, fdt_alloc_cb, fdt_read_cb);
}

static void
fdt_write_cb(uv_write_t *req, int status)
{
        struct fdt_write *w = (struct fdt_write *) req;

        if (status < 0 && status != UV_ECANCELED)
                fdt_end(w->t, uv_strerror(status));
        fdt_unref(w->t);
        free(w);
}

static void
fdt_send(struct agent_transport *base, const void *data, size_t len)
{
        struct fdt *t = (struct fdt *) base;
        struct fdt_write *w;
        uv_buf_t b;

        if (t->closed || t->ended || !len)
                return;
        w = xmalloc(sizeof(*w) + len);
        memcpy(w->data, data, len);
        w->t = t;
        b = uv_buf_init(w->data, (unsigned) len);
        t->refs++;
        if (uv_write(&w->req, fdt_out(t), &b, 1, fdt_write_cb) < 0) {
                t->refs--;
                free(w);
                fdt_end(t, "cannot write to the stream");
        }
}

static size_t
fdt_queued(const struct agent_transport *base)
{
        struct fdt *t = (struct fdt *) base;

        return t->closed ? 0 : uv_stream_get_write_queue_size(fdt_out(t));
}

static void
fdt_pause(struct agent_transport *base)
{
        struct fdt *t = (struct fdt *) base;

        t->paused = true;
        if (!t->closed)
                uv_read_stop((uv_stream_t *) &t->r);
}

static void
fdt_resume(struct agent_transport *base)
{
        struct fdt *t = (struct fdt *) base;

        t->paused = false;
        if (t->started && !t->closed && !t->out_eof)
                uv_read_start((uv_stream_t *) &t->r, fdt_alloc_cb, fdt_read_cb);
}

static void
fdt_close_handle(uv_handle_t *h)
{
        if (!uv_is_closing(h))
                uv_close(h, fdt_handle_close_cb);
}

static void
fdt_close(struct agent_transport *base)
{
        struct fdt *t = (struct fdt *) base;

        if (t->closed)
                return;
        t->closed = true;
        fdt_close_handle((uv_handle_t *) &t->r);
        if (t->two)
                fdt_close_handle((uv_handle_t *) &t->w);
        if (t->e_init)
                fdt_close_handle((uv_handle_t *) &t->e);
        /* The command goes with its stream; its handle closes once it has been reaped. */
        if (t->has_proc && !t->proc_done)
                uv_process_kill(&t->proc, SIGKILL);
        else if (t->has_proc)
                fdt_close_handle((uv_handle_t *) &t->proc);
        fdt_unref(t);
}

static const struct agent_transport_ops fdt_ops = {
        .kind = "fd",
        .start = fdt_start,
        .send = fdt_send,
        .queued = fdt_queued,
        .pause = fdt_pause,
        .resume = fdt_resume,
        .close = fdt_close,
};

static struct fdt *
fdt_new(uv_loop_t *loop, bool two)
{
        struct fdt *t = xcalloc(1, sizeof(*t));

        t->base.ops = &fdt_ops;
        t->refs = 1 + 1 + (two ? 1 : 0); /* the user's, and one per handle */
        t->two = two;
        uv_pipe_init(loop, &t->r, 0);
        t->r.data = t;
        if (two) {
                uv_pipe_init(loop, &t->w, 0);
                t->w.data = t;
        }
        return t;
}

/* A transport over fds. */
struct agent_transport *
agent_transport_fds(uv_loop_t *loop, int rfd, int wfd)
{
        struct fdt *t = fdt_new(loop, rfd != wfd);

        uv_pipe_open(&t->r, rfd);
        if (t->two)
                uv_pipe_open(&t->w, wfd);
        return &t->base;
}

static void
fdt_exit_cb(uv_process_t *p, int64_t status, int sig)
{
        struct fdt *t = p->data;

        spawn_uv_child_del(p->pid);
        t->proc_done = true;
        t->exit_status = status;
        t->term_signal = sig;
        if (t->closed)
                fdt_close_handle((uv_handle_t *) p);
        else if (t->out_eof)
                fdt_end(t, NULL);
}

/* A spawned command's stdio as the stream. */
void
agent_transport_spawn(uv_loop_t *loop, char *const *argv, char *const *envp, void *ctx,
                      agent_connect_cb cb)
{
        struct fdt *t = fdt_new(loop, true);
        uv_stdio_container_t io[3];
        uv_process_options_t o = {0};
        char *msg;
        int r;

        uv_pipe_init(loop, &t->e, 0);
        t->e.data = t;
        t->e_init = true;
        t->refs++;
        io[0] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_READABLE_PIPE,
                                       .data.stream = (uv_stream_t *) &t->w};
        io[1] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
                                       .data.stream = (uv_stream_t *) &t->r};
        io[2] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
                                       .data.stream = (uv_stream_t *) &t->e};
        o.file = argv[0];
        o.args = (char **) argv;
        o.env = (char **) envp;
        o.stdio = io;
        o.stdio_count = 3;
        o.exit_cb = fdt_exit_cb;
        o.flags = UV_PROCESS_DETACHED; /* its own session: our terminal's signals stay ours */
        t->proc.data = t;
        t->refs++; /* the process handle, closed even when the spawn fails */
        r = uv_spawn(loop, &t->proc, &o);
        if (r < 0) {
                msg = xasprintf("cannot run %s: %s", argv[0], uv_strerror(r));
                fdt_close_handle((uv_handle_t *) &t->proc);
                fdt_close(&t->base);
                cb(ctx, NULL, msg);
                free(msg);
                return;
        }
        t->has_proc = true;
        spawn_uv_child_add(t->proc.pid);
        uv_read_start((uv_stream_t *) &t->e, fdt_alloc_cb, fdt_err_read_cb);
        cb(ctx, &t->base, NULL);
}

struct spawn_first {
        const void *data;
        size_t len;
        void *ctx;
        agent_connect_cb cb;
};

static void
spawn_first_cb(void *ctx, struct agent_transport *t, const char *error)
{
        struct spawn_first *f = ctx;

        if (t)
                t->ops->send(t, f->data, f->len);
        f->cb(f->ctx, t, error);
}

/* As agent_transport_spawn, with first written to the command's stdin before anything else. */
void
agent_transport_spawn_first(uv_loop_t *loop, char *const *argv, char *const *envp,
                            const void *first, size_t len, void *ctx, agent_connect_cb cb)
{
        struct spawn_first f = {first, len, ctx, cb};

        /* agent_transport_spawn answers before it returns: f outlives the call. */
        agent_transport_spawn(loop, argv, envp, &f, spawn_first_cb);
}

static void
fdt_connect_cb(uv_connect_t *req, int status)
{
        struct fdt *t = req->data;
        char *msg;

        if (status < 0) {
                msg = xasprintf("cannot connect: %s", uv_strerror(status));
                t->connect_cb(t->connect_ctx, NULL, msg);
                free(msg);
                fdt_close(&t->base);
                return;
        }
        t->connect_cb(t->connect_ctx, &t->base, NULL);
}

/* Connects to a Unix socket. */
void
agent_transport_unix(uv_loop_t *loop, const char *path, void *ctx, agent_connect_cb cb)
{
        struct fdt *t = fdt_new(loop, false);

        t->connect_cb = cb;
        t->connect_ctx = ctx;
        t->connect.data = t;
        uv_pipe_connect(&t->connect, &t->r, path, fdt_connect_cb);
}
