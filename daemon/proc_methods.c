/* proc_methods.c — process.list/read/signal/kill/wait/attach/resize, the requests waiting
 * on a process (waiters), and signal names. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/methods.h"
#include "daemon/proc_int.h"
#include "daemon/sandbox.h"
#include "daemon/spool.h"
#include "protocol/codec.h"
#include "protocol/params.h"
#include "protocol/util.h"

#define PROC_MAX_WAIT_MS (24LL * 3600 * 1000)

struct proc *
proc_from_params(struct rpc_req *req, const char *const *keys, struct sbx_error *err)
{
        const char *id = NULL;
        struct proc *p;

        if (params_known(req->params, keys, err) < 0 ||
            params_str(req->params, "exec_id", 64, &id, err) < 0)
                return NULL;
        if (!id) {
                sbx_error_param(err, "exec_id", "invalid params: 'exec_id' is required");
                return NULL;
        }
        p = proc_find(conn_uid(req->conn), id);
        if (!p)
                sbx_error_set(err, SBX_E_NO_PROCESS, NULL,
                              "process '%s' not found (process.list shows yours; exited processes "
                              "are kept for %llu s)",
                              id, (unsigned long long) g.config->exited_retention_s);
        return p;
}

/* A process's state as clients see it: waiting for its turn at the sandbox's shell, not
 * started yet for another reason (policy, approval, sandbox), running, or ended. */
const char *
proc_state_name(const struct proc *p)
{
        if (!proc_live(p))
                return "exited";
        if (p->state == PROC_RUNNING)
                return "running";
        return list_empty(&p->qnode) ? "starting" : "queued";
}

static json_t *
proc_list_entry(struct proc *p)
{
        char a[40], b[40];
        json_t *o;

        util_rfc3339(p->started_wall, a, sizeof(a));
        util_rfc3339(p->ended_wall, b, sizeof(b));
        o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:b,s:s,s:o,s:I,s:I,s:o,s:b}", "exec_id", p->id,
                      "sandbox", p->sb ? p->sb->id : "", "state", proc_state_name(p), "exit_code",
                      p->state == PROC_EXITED && !p->sig ? json_integer(p->exit_code) : json_null(),
                      "signal", proc_signal_json(p->sig), "timed_out", p->timed_out, "started_at",
                      a, "ended_at", p->state >= PROC_EXITED ? json_string(b) : json_null(),
                      "stdout_bytes", (json_int_t) p->out[0].total, "stderr_bytes",
                      (json_int_t) p->out[1].total, "tag",
                      p->tag ? json_string(p->tag) : json_null(), "background", p->background);
        if (p->command)
                json_object_set_new(o, "command", json_string(p->command));
        else
                json_object_set(o, "argv", p->argv);
        return o;
}

/* process.list */
void
method_process_list(struct rpc_req *req)
{
        static const char *const keys[] = {"sandbox", "state", NULL};
        static const char *const states[] = {"running", "exited", NULL};
        struct sbx_error err = {0};
        const char *sbname = NULL;
        struct sandbox *sb = NULL;
        struct list *pos, *tmp;
        int state = -1;
        json_t *a;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "sandbox", 256, &sbname, &err) < 0 ||
            params_enum(req->params, "state", states, &state, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (sbname && !(sb = sandbox_find(conn_uid(req->conn), sbname))) {
                rpc_error_msg(req, SBX_E_NO_SANDBOX, "sandbox '%s' not found", sbname);
                return;
        }
        a = json_array();
        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if ((p->owner != conn_uid(req->conn) && conn_uid(req->conn) != 0) || !p->sb)
                        continue;
                if ((sb && p->sb != sb) || (state == 0 && !proc_live(p)) ||
                    (state == 1 && proc_live(p)))
                        continue;
                json_array_append_new(a, proc_list_entry(p));
        }
        rpc_result(req, json_pack("{s:o}", "processes", a));
}

static json_t *
proc_read_json(struct proc *p, const struct read_args *a)
{
        struct pstream *s = &p->out[a->stream];
        struct buf b = {0};
        uint64_t start = 0, stop;
        size_t n;
        bool ended = !proc_live(p);
        json_t *r;

        spool_read(s->spool, a->offset, a->max, &b, &start);
        n = b.len;
        /* Do not split a character unless it is the very end of the stream. */
        if (!a->base64 && !(ended && start + n == spool_total(s->spool)))
                n = utf8_complete_prefix(b.data ? b.data : "", n);
        r = json_pack("{s:o,s:I,s:I,s:b,s:s,s:o,s:o,s:I}", "data",
                      proc_encode(a->base64, b.data ? b.data : "", n), "offset", (json_int_t) start,
                      "next_offset", (json_int_t) (start + n), "eof",
                      ended && start + n >= spool_total(s->spool), "state",
                      ended ? "exited" : "running", "exit_code",
                      p->state == PROC_EXITED && !p->sig ? json_integer(p->exit_code) : json_null(),
                      "signal", proc_signal_json(p->sig), "dropped_bytes",
                      (json_int_t) spool_first(s->spool));
        if (spool_stopped_at(s->spool, &stop)) /* max_spool_bytes_per_uid */
                json_object_set_new(r, "not_kept_from", json_integer((json_int_t) stop));
        buf_free(&b);
        return r;
}

json_t *
proc_wait_json(struct proc *p)
{
        json_t *r;

        if (proc_live(p))
                return json_pack("{s:s,s:s}", "exec_id", p->id, "state", "running");
        r = proc_exit_fields(p);
        json_object_set_new(r, "state", json_string("exited"));
        json_object_set_new(
                r, "truncated",
                json_boolean(p->out[0].total > p->max_output || p->out[1].total > p->max_output));
        json_object_set_new(r, "policy", proc_policy_json(p));
        return r;
}

static void
proc_waiter_close_cb(uv_handle_t *h)
{
        struct proc_waiter *w = h->data;

        proc_unref(w->proc);
        free(w);
}

void
proc_waiter_answer(struct proc_waiter *w)
{
        struct proc *p = w->proc;

        if (w->done)
                return;
        w->done = true;
        list_del(&w->node);
        conn_watch_del(&w->watch);
        uv_timer_stop(&w->timer);
        switch (w->kind) {
        case PROC_WAIT_READ:
                rpc_result(w->req, proc_read_json(p, &w->ra));
                break;
        case PROC_WAIT_EXIT:
                rpc_result(w->req, proc_wait_json(p));
                break;
        case PROC_WAIT_REPEAT:
                proc_repeat_answer(p, w->req);
                break;
        }
        uv_close((uv_handle_t *) &w->timer, proc_waiter_close_cb);
}

/* p will never run: a repeat waiting for its result gets err, other waiters its state. */
void
proc_fail_waiters(struct proc *p, const struct sbx_error *err)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &p->waiters)
        {
                struct proc_waiter *w = LIST_ENTRY(pos, struct proc_waiter, node);
                struct sbx_error e = {0};
                if (w->kind != PROC_WAIT_REPEAT) {
                        proc_waiter_answer(w);
                        continue;
                }
                w->done = true;
                list_del(&w->node);
                conn_watch_del(&w->watch);
                uv_timer_stop(&w->timer);
                sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                rpc_error(w->req, &e);
                uv_close((uv_handle_t *) &w->timer, proc_waiter_close_cb);
        }
}

static void
proc_waiter_timeout_cb(uv_timer_t *t)
{
        proc_waiter_answer(t->data);
}

/* The waiter's connection closed: it is answered (into the void) and freed now, not when its
 * wait_ms or timeout_ms (up to a day) passes: before, a client that sent 100000 long polls and
 * left had the daemon keep about 1 KiB for each, again with every connection. */
static void
proc_waiter_gone_cb(struct conn_watch *cw)
{
        struct proc_waiter *w = LIST_ENTRY(cw, struct proc_waiter, watch);

        list_init(&w->watch.node); /* already unlinked by conn */
        proc_waiter_answer(w);
}

void
proc_wait_on(struct proc *p, struct rpc_req *req, uint64_t timeout_ms, const struct read_args *ra,
             enum proc_wait_kind kind)
{
        struct proc_waiter *w = xcalloc(1, sizeof(*w));

        if (ra)
                w->ra = *ra;
        w->proc = p;
        proc_ref(p);
        w->req = req;
        w->kind = kind;
        uv_timer_init(g.loop, &w->timer);
        w->timer.data = w;
        list_add_tail(&p->waiters, &w->node);
        w->watch.on_close = proc_waiter_gone_cb;
        conn_watch_add(req->conn, &w->watch);
        if (timeout_ms)
                uv_timer_start(&w->timer, proc_waiter_timeout_cb, timeout_ms, 0);
}

/* process.read */
void
method_process_read(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "stream",          "offset", "max_bytes",
                                           "wait_ms", "output_encoding", NULL};
        static const char *const streams[] = {"stdout", "stderr", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        int stream = 0, enc = -1;
        int64_t offset = 0, max = 65536, wait = 0;
        struct read_args a;

        if (!p || params_enum(req->params, "stream", streams, &stream, &err) < 0 ||
            params_int(req->params, "offset", 0, INT64_MAX, &offset, &err) < 0 ||
            params_int(req->params, "max_bytes", 1, 16 << 20, &max, &err) < 0 ||
            params_int(req->params, "wait_ms", 0, PROC_MAX_WAIT_MS, &wait, &err) < 0 ||
            params_enum(req->params, "output_encoding", proc_encodings, &enc, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        a.stream = stream;
        a.offset = (uint64_t) offset;
        a.max = (size_t) max;
        a.base64 = enc < 0 ? p->base64 : enc == 1;
        if (wait && proc_live(p) && (uint64_t) offset >= spool_total(p->out[stream].spool)) {
                proc_wait_on(p, req, (uint64_t) wait, &a, PROC_WAIT_READ);
                return;
        }
        rpc_result(req, proc_read_json(p, &a));
}

static const struct {
        const char *name;
        int sig;
} proc_signals[] = {
        {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
        {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP},
        {"CONT", SIGCONT}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"ABRT", SIGABRT},
        {"SEGV", SIGSEGV}, {"BUS", SIGBUS},   {"FPE", SIGFPE},   {"ILL", SIGILL},
        {"TRAP", SIGTRAP}, {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}, {"SYS", SIGSYS},
};

json_t *
proc_signal_json(int sig)
{
        for (size_t i = 0; i < ARRAY_SIZE(proc_signals); i++)
                if (proc_signals[i].sig == sig)
                        return json_sprintf("SIG%s", proc_signals[i].name);
        return sig ? json_sprintf("SIG%d", sig) : json_null();
}

static int
proc_parse_signal(json_t *params, int *sig, struct sbx_error *err)
{
        json_t *v = json_object_get(params, "signal");
        const char *s;

        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 65) {
                *sig = (int) json_integer_value(v);
                return 0;
        }
        s = json_string_value(v);
        if (s && !strncmp(s, "SIG", 3))
                s += 3;
        for (size_t i = 0; s && i < ARRAY_SIZE(proc_signals); i++) {
                if (!strcmp(proc_signals[i].name, s)) {
                        *sig = proc_signals[i].sig;
                        return 0;
                }
        }
        sbx_error_param(err, "signal",
                        "invalid params: 'signal' must be a name such as \"TERM\", \"KILL\", "
                        "\"INT\", \"HUP\" or a number from 1 to 64");
        return -1;
}

int
proc_signal_number(json_t *v)
{
        const char *s = json_string_value(v);

        for (size_t i = 0; s && i < ARRAY_SIZE(proc_signals); i++)
                if (!strcmp(s + 3, proc_signals[i].name))
                        return proc_signals[i].sig;
        return s && !strncmp(s, "SIG", 3) ? atoi(s + 3) : 0;
}

/* process.signal */
void
method_process_signal(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "signal", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        int sig = 0, r;

        if (!p || proc_parse_signal(req->params, &sig, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (p->state != PROC_RUNNING) {
                rpc_error_msg(req, SBX_E_NO_PROCESS, "process '%s' is not running", p->id);
                return;
        }
        r = p->bp->ops->signal(p->bp, sig);
        if (r < 0) {
                sbx_error_backend(&err, p->ops->name, "signal: %s", strerror(-r));
                rpc_error(req, &err);
                return;
        }
        rpc_result(req, json_object());
}

struct proc_kill_req {
        struct proc *p;
        struct rpc_req *req;
};

static void
proc_kill_reply_cb(void *ctx, int survivors, const struct sbx_error *err)
{
        struct proc_kill_req *k = ctx;

        if (err) {
                struct sbx_error e = {0};
                sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                rpc_error(k->req, &e);
        } else {
                rpc_result(k->req, json_pack("{s:s,s:b,s:i}", "exec_id", k->p->id, "killed",
                                             survivors == 0, "survivors", survivors));
        }
        proc_unref(k->p);
        free(k);
}

/* process.kill */
void
method_process_kill(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "grace_ms", NULL};
        struct sbx_error err = {0};
        int64_t grace = (int64_t) g.config->kill_grace_ms;
        struct proc *p = params_int(req->params, "grace_ms", 0, 600000, &grace, &err) < 0
                                 ? NULL
                                 : proc_from_params(req, keys, &err);
        struct proc_kill_req *k;

        if (!p) {
                rpc_error(req, &err);
                return;
        }
        if (p->state != PROC_RUNNING) {
                rpc_result(req, json_pack("{s:s,s:b,s:i,s:b}", "exec_id", p->id, "killed", 1,
                                          "survivors", 0, "already_exited", 1));
                return;
        }
        k = xcalloc(1, sizeof(*k));
        k->p = p;
        proc_ref(p);
        k->req = req;
        p->bp->ops->kill(p->bp, (unsigned) grace, k, proc_kill_reply_cb);
}

/* process.wait */
void
method_process_wait(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "timeout_ms", NULL};
        struct sbx_error err = {0};
        int64_t timeout = -1;
        struct proc *p =
                params_int(req->params, "timeout_ms", 0, PROC_MAX_WAIT_MS, &timeout, &err) < 0
                        ? NULL
                        : proc_from_params(req, keys, &err);

        if (!p) {
                rpc_error(req, &err);
                return;
        }
        if (!proc_live(p) || timeout == 0) {
                rpc_result(req, proc_wait_json(p));
                return;
        }
        /* Without timeout_ms, wait until the process ends. */
        proc_wait_on(p, req, timeout > 0 ? (uint64_t) timeout : 0, NULL, PROC_WAIT_EXIT);
}

static uint64_t
proc_replay(struct proc *p, struct conn *c, int stream, uint64_t from)
{
        struct pstream *s = &p->out[stream];
        /* A replay goes straight into the write queue: at most half of conn_write_buffer_max
         * per stream, the most recent part. The caller reports where it started; the rest is
         * for process.read. */
        uint64_t budget = g.config->conn_write_buffer_max / 2, total = spool_total(s->spool);
        uint64_t off = total > budget && from < total - budget ? total - budget : from;
        uint64_t first = MAX(off, spool_first(s->spool));

        while (off < spool_total(s->spool)) {
                struct buf b = {0};
                uint64_t start;
                size_t n;
                if (spool_read(s->spool, off, PROC_CHUNK, &b, &start) < 0 || !b.len) {
                        buf_free(&b);
                        break;
                }
                n = p->base64 ? b.len : utf8_complete_prefix(b.data, b.len);
                if (!n)
                        n = b.len;
                struct buf line = {0};
                proc_output_line(p, stream, b.data, n, start, &line);
                conn_send_raw(c, line.data, line.len);
                buf_free(&line);
                off = start + n;
                buf_free(&b);
        }
        return first;
}

/* process.attach */
void
method_process_attach(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "offsets", NULL};
        static const char *const okeys[] = {"stdout", "stderr", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        json_t *offsets = NULL;
        int64_t o[2] = {0, 0};
        uint64_t from[2];

        if (!p || params_obj(req->params, "offsets", &offsets, &err) < 0 ||
            (offsets && (params_known(offsets, okeys, &err) < 0 ||
                         params_int(offsets, "stdout", 0, INT64_MAX, &o[0], &err) < 0 ||
                         params_int(offsets, "stderr", 0, INT64_MAX, &o[1], &err) < 0))) {
                rpc_error(req, &err);
                return;
        }
        for (int i = 0; i < 2; i++)
                from[i] = proc_replay(p, req->conn, i, (uint64_t) o[i]);
        if (proc_live(p)) {
                /* again on the same connection: replayed, not heard twice (each attach added a
                 * subscription: every chunk went out once more, and 200000 attaches held 20 MB) */
                if (!proc_subscribed(p, req->conn))
                        proc_subscribe(p, req->conn, false);
                p->stream = true;
        } else {
                /* Before the result: rpc_result frees req (and its conn reference). */
                conn_notify(req->conn, "exec.exit", proc_exit_fields(p));
        }
        rpc_result(req, json_pack("{s:s,s:s,s:{s:I,s:I}}", "exec_id", p->id, "state",
                                  proc_live(p) ? "running" : "exited", "replayed_from", "stdout",
                                  (json_int_t) from[0], "stderr", (json_int_t) from[1]));
}

/* process.resize */
void
method_process_resize(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "rows", "cols", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        int64_t rows = 0, cols = 0;

        if (!p || params_int(req->params, "rows", 1, 1000, &rows, &err) <= 0 ||
            params_int(req->params, "cols", 1, 1000, &cols, &err) <= 0) {
                if (!err.code)
                        sbx_error_param(&err, rows ? "cols" : "rows",
                                        "invalid params: 'rows' and 'cols' are required");
                rpc_error(req, &err);
                return;
        }
        if (!p->pty || p->state != PROC_RUNNING) {
                rpc_error_msg(req, SBX_E_PARAMS, "process '%s' is not a running pty exec", p->id);
                return;
        }
        p->bp->ops->resize(p->bp, (unsigned short) rows, (unsigned short) cols);
        rpc_result(req, json_object());
}
