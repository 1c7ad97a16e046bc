/* sing_run.c — one call of the Apptainer CLI: a child in its own session with our environment,
 * its stdin fed, its stdout collected, its lines handed out (build progress), a time limit. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends/singularity/sing_int.h"
#include "backends/spawn.h"

#define RUN_MAX_OUT  (4u << 20) /* stdout kept (instance list --json of many instances) */
#define RUN_MAX_LINE 1024       /* a longer line is cut */
#define RUN_WHY_MAX  512

struct sing_run {
        uv_process_t proc;
        uv_pipe_t in, out, err;
        uv_timer_t timer;
        uv_write_t wreq;
        int handles; /* open handles; freed at 0 */
        int64_t status;
        int term_signal;
        bool exited, killed, timed_out, cancelled;
        unsigned timeout_ms;
        char *input;
        struct buf outb;               /* stdout */
        struct buf line[2];            /* partial lines of stdout, stderr */
        char why[RUN_WHY_MAX];         /* last FATAL/ERROR line */
        char last[RUN_WHY_MAX];        /* last stderr line */
        char spawn_error[RUN_WHY_MAX]; /* the spawn failed */
        int open_streams;              /* stdout and stderr until EOF */
        sing_line_cb line_cb;
        sing_done_cb done;
        void *ctx;
};

static void
run_finish(struct sing_run *r)
{
        const char *why = r->why[0] ? r->why : r->last;
        int code = r->exited && !r->term_signal ? (int) r->status : -1;
        char msg[RUN_WHY_MAX + 64];

        if (r->spawn_error[0]) {
                why = r->spawn_error;
                code = -1;
        } else if (r->timed_out) {
                snprintf(msg, sizeof(msg), "no answer within %u s%s%s", r->timeout_ms / 1000,
                         why[0] ? ": " : "", why);
                why = msg;
                code = -1;
        } else if (r->term_signal) {
                snprintf(msg, sizeof(msg), "killed by signal %d%s%s", r->term_signal,
                         why[0] ? ": " : "", why);
                why = msg;
        }
        r->done(r->ctx, code, r->outb.data ? r->outb.data : "", r->outb.len, why);
}

static void
run_handle_closed_cb(uv_handle_t *h)
{
        struct sing_run *r = h->data;

        if (--r->handles > 0)
                return;
        run_finish(r);
        buf_free(&r->outb);
        buf_free(&r->line[0]);
        buf_free(&r->line[1]);
        free(r->input);
        free(r);
}

static void
run_close(uv_handle_t *h)
{
        if (!uv_is_closing(h))
                uv_close(h, run_handle_closed_cb);
}

static void
run_close_all(struct sing_run *r)
{
        run_close((uv_handle_t *) &r->proc);
        run_close((uv_handle_t *) &r->timer);
        run_close((uv_handle_t *) &r->in);
        run_close((uv_handle_t *) &r->out);
        run_close((uv_handle_t *) &r->err);
}

/* Everything is over once the process has exited and both streams ended. */
static void
run_maybe_done(struct sing_run *r)
{
        if (r->exited && r->open_streams == 0)
                run_close_all(r);
}

static void
run_line(struct sing_run *r, int stream, const char *s, size_t n)
{
        char line[RUN_MAX_LINE + 1];

        n = MIN(n, RUN_MAX_LINE);
        memcpy(line, s, n);
        line[n] = '\0';
        if (n && line[n - 1] == '\r')
                line[--n] = '\0';
        if (!n)
                return;
        if (stream == 1) {
                snprintf(r->last, sizeof(r->last), "%.*s", RUN_WHY_MAX - 1, line);
                if (!strncmp(line, "FATAL:", 6) || !strncmp(line, "ERROR:", 6))
                        snprintf(r->why, sizeof(r->why), "%.*s", RUN_WHY_MAX - 1, line);
        }
        if (r->line_cb && !r->cancelled)
                r->line_cb(r->ctx, line);
}

/* Splits a stream into lines; a line past RUN_MAX_LINE is handed out cut. */
static void
run_lines(struct sing_run *r, int stream, const char *data, size_t len)
{
        struct buf *b = &r->line[stream];

        buf_append(b, data, len);
        for (;;) {
                char *nl = memchr(b->data, '\n', b->len);
                size_t n = nl ? (size_t) (nl - b->data) : b->len;
                if (!nl && b->len < RUN_MAX_LINE)
                        return;
                run_line(r, stream, b->data, n);
                buf_consume(b, nl ? n + 1 : n);
                if (!b->len)
                        return;
        }
}

static void
run_alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
        static char slab[65536];

        (void) h;
        (void) size;
        *buf = uv_buf_init(slab, sizeof(slab));
}

static void
run_read(struct sing_run *r, int stream, ssize_t n, const uv_buf_t *buf)
{
        if (n > 0) {
                if (stream == 0 && r->outb.len < RUN_MAX_OUT)
                        buf_append(&r->outb, buf->base, MIN((size_t) n, RUN_MAX_OUT - r->outb.len));
                run_lines(r, stream, buf->base, (size_t) n);
                return;
        }
        if (n == 0)
                return;
        if (r->line[stream].len) /* a last line without its newline */
                run_lines(r, stream, "\n", 1);
        uv_read_stop((uv_stream_t *) (stream ? &r->err : &r->out));
        r->open_streams--;
        run_maybe_done(r);
}

static void
run_out_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
        run_read(s->data, 0, n, buf);
}

static void
run_err_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
        run_read(s->data, 1, n, buf);
}

/* The streams' last bytes may still be in the pipes when the exit is seen; a daemonized
 * grandchild may hold them open for good: after this long, the call is over anyway. */
#define RUN_DRAIN_MS 250

static void
run_drained_cb(uv_timer_t *t)
{
        struct sing_run *r = t->data;

        uv_read_stop((uv_stream_t *) &r->out);
        uv_read_stop((uv_stream_t *) &r->err);
        for (int i = 0; i < 2; i++)
                if (r->line[i].len)
                        run_lines(r, i, "\n", 1);
        r->open_streams = 0;
        run_maybe_done(r);
}

static void
run_exit_cb(uv_process_t *p, int64_t status, int sig)
{
        struct sing_run *r = p->data;

        spawn_uv_child_del(p->pid);
        r->exited = true;
        r->status = status;
        r->term_signal = sig;
        if (r->open_streams > 0)
                uv_timer_start(&r->timer, run_drained_cb, RUN_DRAIN_MS, 0);
        run_maybe_done(r);
}

static void
run_kill(struct sing_run *r)
{
        if (r->exited || r->killed)
                return;
        r->killed = true;
        /* Its own session: the group is the call and whatever it started. */
        kill(-r->proc.pid, SIGKILL);
}

static void
run_timeout_cb(uv_timer_t *t)
{
        struct sing_run *r = t->data;

        r->timed_out = true;
        run_kill(r);
}

static void
run_write_cb(uv_write_t *w, int status)
{
        struct sing_run *r = w->data;

        (void) status; /* a call that does not read its stdin is not wrong */
        run_close((uv_handle_t *) &r->in);
}

static void
run_init_handles(struct sing_run *r, uv_loop_t *loop)
{
        uv_pipe_init(loop, &r->in, 0);
        uv_pipe_init(loop, &r->out, 0);
        uv_pipe_init(loop, &r->err, 0);
        uv_timer_init(loop, &r->timer);
        r->in.data = r->out.data = r->err.data = r->timer.data = r->proc.data = r;
        r->handles = 5;
}

static void
run_spawn_failed_cb(uv_timer_t *t)
{
        run_close_all(t->data);
}

/* Writes the call's stdin (copied), then EOF. */
static void
run_feed(struct sing_run *r, const void *in, size_t inlen)
{
        uv_buf_t b;

        if (!inlen) {
                run_close((uv_handle_t *) &r->in);
                return;
        }
        r->input = xmalloc(inlen);
        memcpy(r->input, in, inlen);
        b = uv_buf_init(r->input, (unsigned) inlen);
        r->wreq.data = r;
        if (uv_write(&r->wreq, (uv_stream_t *) &r->in, &b, 1, run_write_cb) < 0)
                run_close((uv_handle_t *) &r->in);
}

/* Starts a tool call. */
struct sing_run *
sing_run_start(char *const *argv, const void *in, size_t inlen, unsigned timeout_ms,
               sing_line_cb line, sing_done_cb done, void *ctx)
{
        struct sing_run *r = xcalloc(1, sizeof(*r));
        uv_stdio_container_t io[3];
        uv_process_options_t o = {0};
        int rc;

        run_init_handles(r, sing.loop);
        r->line_cb = line;
        r->done = done;
        r->ctx = ctx;
        r->timeout_ms = timeout_ms;
        io[0] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_READABLE_PIPE,
                                       .data.stream = (uv_stream_t *) &r->in};
        io[1] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
                                       .data.stream = (uv_stream_t *) &r->out};
        io[2] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
                                       .data.stream = (uv_stream_t *) &r->err};
        o.file = argv[0];
        o.args = (char **) argv;
        o.env = (char **) singularity_env();
        o.cwd = "/";
        o.stdio = io;
        o.stdio_count = 3;
        o.exit_cb = run_exit_cb;
        o.flags = UV_PROCESS_DETACHED;
        rc = uv_spawn(sing.loop, &r->proc, &o);
        if (rc < 0) {
                snprintf(r->spawn_error, sizeof(r->spawn_error), "cannot run %s: %s", argv[0],
                         uv_strerror(rc));
                uv_timer_start(&r->timer, run_spawn_failed_cb, 0, 0); /* done after return */
                return r;
        }
        spawn_uv_child_add(r->proc.pid);
        r->open_streams = 2;
        uv_read_start((uv_stream_t *) &r->out, run_alloc_cb, run_out_cb);
        uv_read_start((uv_stream_t *) &r->err, run_alloc_cb, run_err_cb);
        if (timeout_ms)
                uv_timer_start(&r->timer, run_timeout_cb, timeout_ms, 0);
        run_feed(r, in, inlen);
        return r;
}

/* Kills a call; only done follows. */
void
sing_run_cancel(struct sing_run *r)
{
        r->cancelled = true;
        if (!r->spawn_error[0])
                run_kill(r);
}
