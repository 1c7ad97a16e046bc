/* modal_dexec.c — direct-mode execs through a task's command router.
 *
 * TaskExecStart with a client-chosen exec id (idempotent), then one TaskExecStdioRead stream
 * per output fd, each resumed from its byte offset when the link drops (nothing is lost and
 * nothing repeated), TaskExecStdinWrite in order with offsets, and TaskExecWait long-polls
 * until the exit. User execs run under modal_exec_wrap: kills and signals find the tree from
 * its pid file (remote_sh_kill in a helper exec) and stop the command, never the sandbox.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends/modal/modal_int.h"
#include "backends/modal/modal_pb.h"
#include "backends/remote_sh.h"
#include "backends/shell.h"

#define DX_CHUNK        (1u << 20) /* stdin per write: Modal takes 16 MiB, its clients send 1 */
#define DX_CALL_MS      60000
#define DX_STREAM_TRIES 10
#define DX_WAIT_TRIES   60
#define DX_MIN_GRACE_MS 1000 /* output may trail the exit over a network */

struct dx;

struct dx_stream {
        struct dx *x;
        int fd; /* 1 stdout, 2 stderr */
        struct modal_rpc *rpc;
        uint64_t offset; /* bytes received so far: where a reconnect resumes */
        bool eof;
        int failures;
        uv_timer_t timer;
        bool timer_init;
};

struct dx {
        struct modal_proc base;
        struct list link; /* user execs, for the detach at shutdown */
        int refs;
        char *pidfile;
        char *cwd; /* the workdir asked for, NULL: the sandbox's own */
        bool merge, stdin_open;
        int state_fd; /* 0: no state expected */
        struct modal_rpc *start_rpc, *wait_rpc, *in_rpc;
        struct dx_stream s[2];
        int wait_failures;
        uv_timer_t timer; /* wait retries, then the drain after the exit */
        bool timer_init;
        bool started, exited, done, released, paused;
        bool saved;   /* a record of it exists: it outlives the daemon */
        bool adopted; /* taken back after a restart */
        bool lost;    /* ... and then not found */
        int code, sig, signalled;
        struct buf in;
        uint64_t in_off;
        size_t in_flight;
        bool eof_wanted, eof_sent;
};

static void dx_check(struct dx *x);
static void dx_finish(struct dx *x);
static void dx_stream_open(struct dx_stream *s);
static void dx_wait(struct dx *x);
static void dx_flush_stdin(struct dx *x);

/* User execs alive (their link is in the list from start or adopt until freed). */
static struct list dx_all = {&dx_all, &dx_all};

/* void *: also the remote_sh_kill_ops entries. */
static void
dx_ref(void *obj)
{
        ((struct dx *) obj)->refs++;
}

static void
dx_unref(void *obj)
{
        struct dx *x = obj;

        if (--x->refs > 0)
                return;
        list_del(&x->link);
        modal_proc_clear(&x->base);
        free(x->pidfile);
        free(x->cwd);
        buf_free(&x->in);
        free(x);
}

static void
dx_timer_close_cb(uv_handle_t *h)
{
        dx_unref(h->data);
}

static void
dx_timer_start(struct dx *x, uv_timer_t *t, bool *init, void *data, uv_timer_cb cb, uint64_t ms)
{
        if (!*init) {
                uv_timer_init(modal.loop, t);
                *init = true;
                x->refs++; /* dropped by the close callback */
        }
        t->data = data;
        uv_timer_start(t, cb, ms, 0);
}

static void
dx_timer_close(struct dx *x, uv_timer_t *t, bool *init)
{
        if (!*init)
                return;
        *init = false;
        uv_timer_stop(t);
        t->data = x;
        uv_close((uv_handle_t *) t, dx_timer_close_cb);
}

static struct buf
dx_ids(struct dx *x)
{
        struct buf b = {0};

        pb_put_str(&b, 1, x->base.sb->task_id);
        pb_put_str(&b, 2, x->base.exec_id);
        return b;
}

/* ---- output ---- */

static void
dx_out_cb(void *ctx, const char *data, size_t len)
{
        struct dx_stream *s = ctx;
        struct dx *x = s->x;

        modal_proc_output(&x->base, x->merge || s->fd == 1 ? BACKEND_STDOUT : BACKEND_STDERR, data,
                          len);
}

static void
dx_deliver(struct dx_stream *s, const char *data, size_t len)
{
        struct dx *x = s->x;

        if (s->fd == x->state_fd)
                modal_sfilter_feed(&x->base.sf, data, len, dx_out_cb, s);
        else
                dx_out_cb(s, data, len);
}

static void
dx_stream_msg(void *ctx, const unsigned char *msg, size_t len)
{
        struct dx_stream *s = ctx;
        struct pb_reader r;
        struct pb_field f;

        pb_reader_init(&r, msg, len);
        while (!s->x->done && pb_next(&r, &f)) {
                if (f.num != 1 || f.wire != PB_LEN || !f.len)
                        continue;
                s->offset += f.len;
                s->failures = 0;
                dx_deliver(s, (const char *) f.data, f.len);
        }
        if (s->x->exited && !s->x->done)
                dx_check(s->x); /* output after the exit restarts the drain */
}

static void
dx_stream_timer_cb(uv_timer_t *t)
{
        dx_stream_open(t->data);
}

static void
dx_stream_end(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct dx_stream *s = ctx;
        struct dx *x = s->x;
        bool again = st->code != GRPC_OK && st->code != GRPC_NOT_FOUND &&
                     st->code != GRPC_FAILED_PRECONDITION && !modal_rpc_stopping();

        s->rpc = NULL;
        if (again && ++s->failures <= DX_STREAM_TRIES) {
                /* The link dropped or the token expired: resume from the offset. */
                uint64_t ms = 10u << MIN(s->failures, 8);
                dx_timer_start(x, &s->timer, &s->timer_init, s, dx_stream_timer_cb, ms);
                return;
        }
        s->eof = true;
        dx_check(x);
}

static void
dx_stream_open(struct dx_stream *s)
{
        struct dx *x = s->x;
        struct buf req = dx_ids(x);

        if (x->done)
                return;
        pb_put_varint(&req, 3, s->offset);
        pb_put_varint(&req, 4, s->fd == 2 ? 1 : 0);
        s->rpc = modal_router_stream(x->base.sb->router, "TaskExecStdioRead", &req, dx_stream_msg,
                                     dx_stream_end, s);
        if (x->paused)
                modal_rpc_pause(s->rpc);
        buf_free(&req);
}

/* ---- exit ---- */

static void
dx_drain_cb(uv_timer_t *t)
{
        dx_finish(t->data);
}

/* Done when the exit is known and both streams ended; a stream still open after the exit
 * (a background child holds it) gets the drain grace, restarted by each arrival. */
static void
dx_check(struct dx *x)
{
        uint64_t grace = MAX(modal.drain_grace_ms, (uint64_t) DX_MIN_GRACE_MS);

        if (x->done || !x->exited)
                return;
        if (x->s[0].eof && x->s[1].eof) {
                dx_finish(x);
                return;
        }
        dx_timer_start(x, &x->timer, &x->timer_init, x, dx_drain_cb, grace);
}

static void
dx_wait_timer_cb(uv_timer_t *t)
{
        dx_wait(t->data);
}

static void
dx_exited(struct dx *x, int code, int sig)
{
        x->exited = true;
        x->code = code;
        x->sig = sig;
        dx_check(x);
}

static void
dx_wait_end(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct dx *x = ctx;
        struct pb_reader r;
        struct pb_field f;
        int code = 0, sig = 0;

        x->wait_rpc = NULL;
        if (st->code == GRPC_OK) {
                pb_reader_init(&r, msg, len);
                while (pb_next(&r, &f)) {
                        if (f.wire == PB_VARINT && (f.num == 1 || f.num == 2))
                                *(f.num == 1 ? &code : &sig) = (int) (int32_t) f.varint;
                }
                dx_exited(x, code, sig);
        } else if (x->adopted && st->code == GRPC_NOT_FOUND) {
                x->lost = true; /* the router no longer knows the exec we took back */
                x->s[0].eof = x->s[1].eof = true;
                dx_exited(x, 0, SIGKILL);
        } else if (st->code == GRPC_NOT_FOUND || st->code == GRPC_FAILED_PRECONDITION) {
                x->base.sb->gone = true; /* the task ended, and the exec with it */
                dx_exited(x, 0, SIGKILL);
        } else if (st->code == GRPC_DEADLINE_EXCEEDED && !modal_rpc_stopping()) {
                dx_wait(x); /* the long poll ran out: still running */
        } else if (!modal_rpc_stopping() && ++x->wait_failures <= DX_WAIT_TRIES) {
                dx_timer_start(x, &x->timer, &x->timer_init, x, dx_wait_timer_cb, 1000);
        } else {
                sbx_error_backend(&x->base.fail, "modal", "lost the exec: TaskExecWait: %s: %s",
                                  grpc_code_name(st->code), st->message);
                dx_exited(x, 0, SIGKILL);
        }
}

static void
dx_wait(struct dx *x)
{
        struct buf req = dx_ids(x);

        x->wait_rpc = modal_router_unary(x->base.sb->router, "TaskExecWait", &req, DX_CALL_MS,
                                         dx_wait_end, x);
        buf_free(&req);
}

/* Through sh, a child killed by signal N exits 128+N: a signal only if we sent one. */
static void
dx_deliver_exit(struct dx *x)
{
        bool by_us = !x->sig && x->code > 128 && x->code < 128 + 65 && x->signalled;

        if (x->lost)
                modal_proc_lost(&x->base, "the exec is unknown to the sandbox's command router "
                                          "after the daemon restarted");
        else
                modal_proc_exit(&x->base, by_us ? 0 : x->code, by_us ? x->code - 128 : x->sig);
}

/* Stops every call and timer of x (nothing of it runs on after this). */
static void
dx_stop(struct dx *x)
{
        x->done = true;
        for (int i = 0; i < 2; i++) {
                modal_rpc_cancel(x->s[i].rpc);
                x->s[i].rpc = NULL;
                dx_timer_close(x, &x->s[i].timer, &x->s[i].timer_init);
        }
        modal_rpc_cancel(x->start_rpc);
        modal_rpc_cancel(x->wait_rpc);
        modal_rpc_cancel(x->in_rpc);
        x->start_rpc = x->wait_rpc = x->in_rpc = NULL;
        dx_timer_close(x, &x->timer, &x->timer_init);
}

static void
dx_finish(struct dx *x)
{
        if (x->done)
                return;
        dx_stop(x);
        if (x->state_fd)
                modal_sfilter_end(&x->base.sf, dx_out_cb, &x->s[x->state_fd - 1]);
        if (x->base.helper)
                modal_proc_helper_end(&x->base, x->sig ? 128 + x->sig : x->code, x->base.hout.data,
                                      x->base.hout.len);
        else
                dx_deliver_exit(x);
        dx_unref(x); /* the engine's */
}

/* ---- start ---- */

/* Why TaskExecStart refused: the sandbox is gone (-32006, so the daemon may recreate it), the
 * workdir is missing (-32602 naming it, as local and docker say, so that the daemon moves a
 * sandbox whose directory was removed one level up), or the router's own words. */
static void
dx_start_error(struct dx *x, const struct grpc_status *st)
{
        bool gone = st->code == GRPC_NOT_FOUND || st->code == GRPC_FAILED_PRECONDITION;

        if (gone)
                x->base.sb->gone = true;
        if (!gone && st->code == GRPC_INVALID_ARGUMENT && x->cwd && st->message &&
            strstr(st->message, "workdir"))
                sbx_error_param(&x->base.fail, "cwd", "cwd '%s' in the sandbox: %s", x->cwd,
                                st->message);
        else
                sbx_error_set(
                        &x->base.fail, gone ? SBX_E_UNUSABLE : SBX_E_BACKEND,
                        gone ? json_pack("{s:s}", "state", "removed")
                             : json_pack("{s:s,s:s}", "backend", "modal", "detail", st->message),
                        "modal exec could not start: TaskExecStart: %s: %s",
                        grpc_code_name(st->code), st->message);
}

static void
dx_start_end(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct dx *x = ctx;

        x->start_rpc = NULL;
        if (st->code != GRPC_OK) {
                dx_start_error(x, st);
                x->s[0].eof = x->s[1].eof = true;
                dx_exited(x, 125, 0);
                return;
        }
        x->started = true;
        dx_stream_open(&x->s[0]);
        if (!x->s[1].eof)
                dx_stream_open(&x->s[1]);
        dx_wait(x);
        dx_flush_stdin(x);
}

static void
dx_start(struct dx *x, char *const *argv, char *const *envp, const char *cwd)
{
        struct buf req = dx_ids(x);

        for (size_t i = 0; argv[i]; i++) {
                char *a = modal_text(argv[i]);
                pb_put_str(&req, 3, a);
                free(a);
        }
        pb_put_varint(&req, 4, 1);                                     /* stdout: PIPE */
        pb_put_varint(&req, 5, x->base.helper ? 0 : x->merge ? 2 : 1); /* DEVNULL, STDOUT, PIPE */
        if (cwd) {
                char *c = modal_text(cwd);
                pb_put_str(&req, 7, c);
                free(c);
        }
        modal_env_entries(&req, 12, envp);
        x->start_rpc = modal_router_unary(x->base.sb->router, "TaskExecStart", &req, DX_CALL_MS,
                                          dx_start_end, x);
        buf_free(&req);
}

static struct dx *
dx_new(struct backend_sandbox *sb, const char *id_prefix)
{
        struct dx *x = xcalloc(1, sizeof(*x));
        char rnd[17];

        util_random_hex(rnd, 16);
        modal_proc_init(&x->base, sb, &modal_direct_ops, xasprintf("%s-%s", id_prefix, rnd));
        x->refs = 1;
        list_init(&x->link);
        for (int i = 0; i < 2; i++) {
                x->s[i].x = x;
                x->s[i].fd = i + 1;
        }
        return x;
}

/* Starts a user exec. */
int
modal_dexec_start(struct backend_sandbox *sb, const struct exec_spec *spec,
                  const struct backend_exec_cbs *cbs, void *ctx, struct modal_proc **ret,
                  struct sbx_error *err)
{
        struct dx *x = dx_new(sb, spec->exec_id ? spec->exec_id : "p");
        char **argv;

        x->base.cbs = *cbs;
        x->base.ctx = ctx;
        x->merge = spec->merge_stderr;
        x->stdin_open = spec->stdin_open;
        x->pidfile = xasprintf(MODAL_STATE_DIR "/%s.pid", x->base.exec_id);
        x->state_fd = spec->state_path ? (x->merge ? 1 : 2) : 0;
        x->s[1].eof = x->merge;
        if (spec->stdin_len)
                buf_append(&x->in, spec->stdin_data, spec->stdin_len);
        x->eof_wanted = !spec->stdin_open;
        argv = modal_exec_wrap(spec->argv, spec->envp, x->pidfile, &x->base.sf, spec->state_path,
                               x->state_fd ? x->state_fd : 2);
        x->refs++; /* the daemon's, until exec_release */
        x->cwd = spec->cwd ? xstrdup(spec->cwd) : NULL;
        list_add_tail(&dx_all, &x->link);
        dx_start(x, argv, spec->envp, spec->cwd ? spec->cwd : sb->workdir);
        shell_argv_free(argv);
        *ret = &x->base;
        return 0;
}

/* Runs a helper command (as the sandbox's user, cwd /) and collects its stdout. */
void
modal_dexec_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
                   void *ctx, modal_helper_cb cb)
{
        static char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
                                    "/sbin:/bin",
                                    NULL};
        struct dx *x = dx_new(sb, "h");

        x->base.helper = true;
        x->base.hcb = cb;
        x->base.hctx = ctx;
        x->s[1].eof = true; /* stderr is not read */
        if (inlen)
                buf_append(&x->in, in, inlen);
        x->eof_wanted = true;
        dx_start(x, argv, env, sb->workdir); /* NULL before the first: the image's own */
}

/* ---- stdin ---- */

static void
dx_in_end(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct dx *x = ctx;

        x->in_rpc = NULL;
        if (st->code != GRPC_OK) {
                /* stdin is gone (the command closed it, or the link for good) */
                buf_consume(&x->in, x->in.len);
                x->eof_sent = true;
                return;
        }
        x->in_off += x->in_flight;
        buf_consume(&x->in, x->in_flight);
        if (x->eof_wanted && !x->in.len && x->in_flight == 0)
                x->eof_sent = true;
        x->in_flight = 0;
        dx_flush_stdin(x);
}

static void
dx_flush_stdin(struct dx *x)
{
        struct buf req;
        size_t n;
        bool eof;

        if (!x->started || x->done || x->in_rpc || x->eof_sent || (!x->in.len && !x->eof_wanted))
                return;
        n = MIN(x->in.len, (size_t) DX_CHUNK);
        eof = x->eof_wanted && n == x->in.len;
        req = dx_ids(x);
        pb_put_varint(&req, 3, x->in_off);
        pb_put_bytes(&req, 4, x->in.data, n);
        pb_put_bool(&req, 5, eof);
        x->in_flight = n;
        if (eof && !n)
                x->in_flight = 0;
        x->in_rpc = modal_router_unary(x->base.sb->router, "TaskExecStdinWrite", &req, DX_CALL_MS,
                                       dx_in_end, x);
        if (eof)
                x->eof_sent = true; /* no write may follow this one */
        buf_free(&req);
}

/* Queues stdin bytes. */
int
modal_dexec_write(struct modal_proc *p, const void *data, size_t len, bool eof)
{
        struct dx *x = (struct dx *) p;

        if (!x->stdin_open || x->eof_wanted || x->done)
                return -EPIPE;
        if (len)
                buf_append(&x->in, data, len);
        x->eof_wanted = eof;
        dx_flush_stdin(x);
        return 0;
}

/* ---- signals and kills, by a helper that walks the tree from the pid file ---- */

static const struct remote_sh_kill_ops dx_kill_ops = {
        .helper = modal_dexec_helper,
        .ref = dx_ref,
        .unref = dx_unref,
};

/* Sends sig to the exec's tree. */
int
modal_dexec_signal(struct modal_proc *p, int sig)
{
        struct dx *x = (struct dx *) p;

        if (sig <= 0 || sig >= 65)
                return -EINVAL;
        if (x->done || x->base.sb->gone)
                return -ESRCH;
        x->signalled = sig;
        remote_sh_signal(&dx_kill_ops, x->base.sb, x, x->pidfile, sig);
        return 0;
}

/* TERM, grace, KILL of the exec's tree; the sandbox stays. */
void
modal_dexec_kill(struct modal_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct dx *x = (struct dx *) p;

        if (x->done || x->base.sb->gone) {
                cb(ctx, 0, NULL);
                return;
        }
        x->signalled = SIGTERM;
        remote_sh_kill_tree(&dx_kill_ops, x->base.sb, x, x->pidfile, grace_ms, ctx, cb);
}

/* Stops reading output. */
void
modal_dexec_pause(struct modal_proc *p)
{
        struct dx *x = (struct dx *) p;

        x->paused = true;
        for (int i = 0; i < 2; i++)
                if (x->s[i].rpc)
                        modal_rpc_pause(x->s[i].rpc);
}

/* Restarts reading output. */
void
modal_dexec_resume(struct modal_proc *p)
{
        struct dx *x = (struct dx *) p;

        x->paused = false;
        for (int i = 0; i < 2; i++)
                if (x->s[i].rpc)
                        modal_rpc_resume(x->s[i].rpc);
}

/* The daemon is done with the handle. */
void
modal_dexec_release(struct modal_proc *p)
{
        struct dx *x = (struct dx *) p;

        if (x->released)
                return;
        x->released = true;
        if (!x->done && x->saved) { /* shutdown: it runs on, for the next daemon */
                dx_stop(x);
                dx_unref(x); /* the engine's */
        }
        dx_unref(x);
}

/* What exec_adopt needs to take a user exec back: the router's exec id and how its output
 * is read (new), or NULL for a helper. */
json_t *
modal_dexec_save(struct modal_proc *p)
{
        struct dx *x = (struct dx *) p;

        if (p->helper || x->done)
                return NULL;
        x->saved = true;
        return json_pack("{s:s,s:s,s:b,s:i}", "exec", p->exec_id, "marker", p->sf.marker + 4,
                         "merge", x->merge, "state_fd", x->state_fd);
}

static bool
dx_record_ok(const char *id, const char *marker, json_int_t state_fd)
{
        static const char hex[] = "0123456789abcdef";
        size_t n = id ? strlen(id) : 0;

        return n && n <= 128 &&
               strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
                       n &&
               marker && strlen(marker) == MODAL_MARKER_LEN - 4 &&
               strspn(marker, hex) == MODAL_MARKER_LEN - 4 && state_fd >= 0 && state_fd <= 2;
}

/* Takes back a user exec a previous daemon started: output from the daemon's offsets (the
 * router keeps it whole), then its real exit. Where its stdin stood is not known: no more
 * writes are taken. */
int
modal_dexec_adopt(struct backend_sandbox *sb, const struct exec_spec *spec, json_t *record,
                  const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                  struct modal_proc **ret, struct sbx_error *err)
{
        const char *id = json_string_value(json_object_get(record, "exec"));
        const char *marker = json_string_value(json_object_get(record, "marker"));
        json_int_t state_fd = json_integer_value(json_object_get(record, "state_fd"));
        struct dx *x;

        if (!dx_record_ok(id, marker, state_fd) || !sb->router) {
                sbx_error_backend(err, "modal", "%s",
                                  sb->router ? "malformed exec record" : "the sandbox has no task");
                return -EINVAL;
        }
        x = dx_new(sb, "p");
        free(x->base.exec_id);
        x->base.exec_id = xstrdup(id);
        memcpy(x->base.sf.marker + 4, marker, MODAL_MARKER_LEN - 4);
        x->base.cbs = *cbs;
        x->base.ctx = ctx;
        x->merge = json_is_true(json_object_get(record, "merge"));
        x->state_fd = (int) state_fd;
        x->s[1].eof = x->merge;
        x->pidfile = xasprintf(MODAL_STATE_DIR "/%s.pid", id);
        x->eof_wanted = x->eof_sent = true;
        x->started = x->adopted = x->saved = true;
        for (int i = 0; i < 2; i++)
                x->s[i].offset = offsets[i];
        x->refs++; /* the daemon's */
        list_add_tail(&dx_all, &x->link);
        dx_stream_open(&x->s[0]);
        if (!x->s[1].eof)
                dx_stream_open(&x->s[1]);
        dx_wait(x);
        *ret = &x->base;
        return 0;
}

/* Daemon shutdown: execs with a record stop being followed (they run on, for the next
 * daemon) before the calls in flight are failed. */
void
modal_dexec_detach_all(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &dx_all)
        {
                struct dx *x = LIST_ENTRY(pos, struct dx, link);
                if (x->saved && !x->done) {
                        dx_stop(x);
                        dx_unref(x); /* the engine's */
                }
        }
}
