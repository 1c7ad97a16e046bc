/* exec.c — execs on an agent session, as struct backend_proc handles: START or RESUME on every
 * link, output delivered exactly once by offset and acknowledged (the window), stdin by offset,
 * kills kept until answered, EXIT followed by FORGET. */
#include <sys/random.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends/agent/session_int.h"

#define AX_HELPER_MAX_OUT (64u << 20)

enum ax_phase {
        AX_NEW,      /* nothing sent yet on this link */
        AX_STARTING, /* START sent, no STARTED yet */
        AX_RUNNING,  /* STARTED or RESUMED seen: the agent has it */
};

struct ax_kill {
        struct list link;
        uint32_t tag;
        int sig;
        unsigned grace_ms;
        bool sent;
        backend_kill_cb cb;
        void *ctx;
};

struct agent_exec {
        struct backend_proc base;
        struct list link; /* in s->execs until released (or its kills are answered) */
        struct agent_session *s;
        int refs;
        bool released, done, adopted, helper, tty, has_stdin, paused, resumed_once;
        char name[AGENT_NAME_MAX + 1];
        uint32_t id; /* in the current link, 0: none */
        enum ax_phase phase;
        struct buf start; /* the START payload, until STARTED */
        uint64_t rx[2];   /* output delivered so far, per stream */
        uint64_t acked[2];
        struct buf in;                       /* stdin bytes [in_done, in_total) */
        uint64_t in_done, in_sent, in_total; /* written by the agent, sent, queued */
        bool eof_wanted, eof_sent;
        int pending_sig;
        struct list kills; /* struct ax_kill */
        uint32_t next_tag;
        struct backend_exec_cbs cbs;
        void *ctx;
        char *argv0, *cwd;
        agent_helper_cb hcb; /* helpers: stdout collected for hcb */
        void *hctx;
        struct buf hout;
};

static const struct backend_proc_ops ax_ops;

static void
ax_unref(struct agent_exec *x)
{
        if (--x->refs > 0)
                return;
        list_del(&x->link);
        buf_free(&x->start);
        buf_free(&x->in);
        buf_free(&x->hout);
        free(x->argv0);
        free(x->cwd);
        agent_session_unref(x->s);
        free(x);
}

static bool
ax_linked(const struct agent_exec *x)
{
        return x->id && x->s->state == SESS_UP;
}

static void
ax_send(struct agent_exec *x, enum agent_msg type, const void *a, size_t alen, const void *b,
        size_t blen)
{
        if (ax_linked(x))
                agent_session_send(x->s, x->id, type, a, alen, b, blen);
}

static void
ax_ack(struct agent_exec *x)
{
        unsigned char m[16];

        if (x->paused || (x->rx[0] == x->acked[0] && x->rx[1] == x->acked[1]))
                return;
        agent_put64(m, x->rx[0]);
        agent_put64(m + 8, x->rx[1]);
        ax_send(x, AGENT_ACK, m, sizeof(m), NULL, 0);
        x->acked[0] = x->rx[0];
        x->acked[1] = x->rx[1];
}

/* Sends stdin within the window, then EOF once everything queued is out. */
static void
ax_flush_stdin(struct agent_exec *x)
{
        unsigned char off[8];

        if (!ax_linked(x) || x->phase == AX_NEW || !x->has_stdin)
                return;
        while (x->in_sent < x->in_total && x->in_sent - x->in_done < AGENT_STDIN_WINDOW) {
                uint64_t n = MIN(x->in_total - x->in_sent,
                                 (uint64_t) (AGENT_STDIN_WINDOW - (x->in_sent - x->in_done)));
                n = MIN(n, (uint64_t) AGENT_STDIN_CHUNK);
                agent_put64(off, x->in_sent);
                ax_send(x, AGENT_STDIN, off, 8, x->in.data + (x->in_sent - x->in_done), (size_t) n);
                x->in_sent += n;
        }
        if (x->in_sent == x->in_total && x->eof_wanted && !x->eof_sent) {
                agent_put64(off, x->in_total);
                ax_send(x, AGENT_EOF, off, 8, NULL, 0);
                x->eof_sent = true;
        }
}

static void
ax_send_kill(struct agent_exec *x, struct ax_kill *k)
{
        unsigned char m[16];

        agent_put32(m, (uint32_t) k->sig);
        agent_put32(m + 4, k->grace_ms);
        agent_put32(m + 8, AGENT_KILL_WAIT);
        agent_put32(m + 12, k->tag);
        ax_send(x, AGENT_KILL, m, sizeof(m), NULL, 0);
        k->sent = true;
}

static void
ax_send_signal(struct agent_exec *x, int sig)
{
        unsigned char m[16] = {0};

        agent_put32(m, (uint32_t) sig);
        agent_put32(m + 8, AGENT_KILL_SIGNAL);
        ax_send(x, AGENT_KILL, m, sizeof(m), NULL, 0);
}

/* Once the agent has the exec: what waited for it goes out. */
static void
ax_running(struct agent_exec *x)
{
        struct list *pos, *tmp;

        x->phase = AX_RUNNING;
        if (x->pending_sig) {
                ax_send_signal(x, x->pending_sig);
                x->pending_sig = 0;
        }
        LIST_FOREACH_SAFE(pos, tmp, &x->kills)
        {
                struct ax_kill *k = LIST_ENTRY(pos, struct ax_kill, link);
                if (!k->sent)
                        ax_send_kill(x, k);
        }
        ax_flush_stdin(x);
        ax_ack(x);
}

static void
ax_kill_done(struct agent_exec *x, struct ax_kill *k, int survivors)
{
        list_del(&k->link);
        if (k->cb)
                k->cb(k->ctx, survivors, NULL);
        free(k);
        ax_unref(x);
}

/* Ends the exec for the daemon: on_exit (or the helper's callback), then FORGET — after the
 * daemon has recorded the exit, so that a crash in between cannot lose it. */
static void
ax_finish(struct agent_exec *x, struct exec_exit *ex, bool forget)
{
        struct sbx_error e = {0};

        if (x->done)
                return;
        x->done = true;
        x->refs++;
        if (x->helper) {
                if (ex->error || ex->lost)
                        sbx_error_backend(&e, x->s->backend, "%s",
                                          ex->error ? ex->error->message : ex->lost);
                x->hcb(x->hctx,
                       e.code       ? -1
                       : ex->signal ? 128 + ex->signal
                                    : ex->exit_code,
                       x->hout.data, x->hout.len, e.code ? &e : NULL);
                sbx_error_clear(&e);
                x->refs--; /* the engine's own reference: helpers have no release */
        } else {
                x->cbs.on_exit(x->ctx, ex);
        }
        if (forget)
                ax_send(x, AGENT_FORGET, NULL, 0, NULL, 0);
        ax_unref(x);
}

/* ---- messages from the agent ---- */

static const char *
ax_on_started(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        uint64_t in_off;

        if (len != 12 || x->phase != AX_STARTING)
                return "unexpected STARTED";
        in_off = agent_get64(p + 4);
        if (in_off > x->in_total || in_off < x->in_done)
                return "STARTED: stdin offset out of range";
        buf_free(&x->start);
        x->in_sent = MAX(x->in_sent, in_off);
        ax_running(x);
        return NULL;
}

static const char *
ax_on_resumed(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        uint64_t in_off;

        if (len != 32 || x->phase == AX_RUNNING)
                return "unexpected RESUMED";
        in_off = agent_get64(p + 24);
        if (x->adopted && !x->resumed_once) /* a new daemon: stdin goes on from the agent's */
                x->in_done = x->in_sent = x->in_total = in_off;
        else if (in_off > x->in_total || in_off < x->in_done)
                return "RESUMED: stdin offset out of range";
        x->resumed_once = true;
        x->in_sent = in_off;
        for (int s = 0; s < 2; s++) /* older bytes the agent dropped cannot come back */
                x->rx[s] = MAX(x->rx[s], agent_get64(p + 8 + 8 * s));
        ax_running(x);
        return NULL;
}

static void
ax_output(struct agent_exec *x, int s, const char *data, size_t n)
{
        if (x->helper) {
                if (s == 0 && x->hout.len + n <= AX_HELPER_MAX_OUT)
                        buf_append(&x->hout, data, n);
                return;
        }
        x->cbs.on_output(x->ctx, s ? BACKEND_STDERR : BACKEND_STDOUT, data, n);
}

static const char *
ax_on_output(struct agent_exec *x, int s, const unsigned char *p, uint32_t len)
{
        uint64_t off, skip;
        size_t n;

        if (len < 8 || x->phase != AX_RUNNING)
                return "output before STARTED";
        off = agent_get64(p);
        n = len - 8;
        if (off > x->rx[s])
                return "output with a gap";
        skip = x->rx[s] - off; /* sent again after a lost link */
        if (skip >= n)
                return NULL;
        x->rx[s] += n - skip;
        ax_output(x, s, (const char *) p + 8 + skip, (size_t) (n - skip));
        if (!x->done && x->rx[0] + x->rx[1] - x->acked[0] - x->acked[1] >= AGENT_OUT_WINDOW / 4)
                ax_ack(x);
        return NULL;
}

static const char *
ax_on_stdin_ack(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        uint64_t done;

        if (len != 8)
                return "bad STDIN_ACK";
        done = agent_get64(p);
        if (done > x->in_total)
                return "bad STDIN_ACK";
        if (done > x->in_done) {
                buf_consume(&x->in, (size_t) (done - x->in_done));
                x->in_done = done;
                x->in_sent = MAX(x->in_sent, done);
        }
        ax_flush_stdin(x);
        return NULL;
}

static const char *
ax_on_exit(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        struct exec_exit ex = {0};
        int status;

        if (len < 24 || x->phase != AX_RUNNING)
                return "unexpected EXIT";
        if (agent_get64(p + 8) != x->rx[0] || agent_get64(p + 16) != x->rx[1])
                return "EXIT before all of the exec's output";
        status = (int) agent_get32(p);
        if (WIFSIGNALED(status))
                ex.signal = WTERMSIG(status);
        else
                ex.exit_code = WEXITSTATUS(status);
        ex.oom_killed = (agent_get32(p + 4) & AGENT_EXIT_OOM) != 0;
        ex.state_too_big = (agent_get32(p + 4) & AGENT_EXIT_STATE_BIG) != 0;
        if (len > 24) { /* the shell state, at most SHELL_STATE_MAX (the agent's check) */
                ex.state = (const char *) p + 24;
                ex.state_len = len - 24;
        }
        ax_finish(x, &ex, true);
        return NULL;
}

/* FAILED: the exec never ran; the error a local exec would give. */
static const char *
ax_on_failed(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        int e = len >= 4 ? (int) agent_get32(p) : EIO;
        char step[32] = "start";
        struct sbx_error err = {0};
        struct exec_exit ex = {.exit_code = 125, .error = &err};
        const char *where = x->s->where;

        if (len > 4)
                snprintf(step, sizeof(step), "%.*s", (int) strnlen((const char *) p + 4, len - 4),
                         (const char *) p + 4);
        if (strcmp(step, "chdir") == 0)
                sbx_error_param(&err, "cwd", "cwd '%s' %s: %s", x->cwd, where, strerror(e));
        else if (strcmp(step, "exec") == 0 && (e == ENOENT || e == EACCES || e == ENOEXEC))
                sbx_error_param(&err, "argv", "cannot execute '%s' %s: %s", x->argv0, where,
                                strerror(e));
        else if (strcmp(step, "limit") == 0)
                sbx_error_set(&err, SBX_E_LIMIT,
                              json_pack("{s:s,s:i}", "limit", "agent_processes", "value", 4096),
                              "sandboxd-agent %s already runs the most processes it takes at "
                              "once (4096)",
                              where);
        else if (strcmp(step, "env") == 0)
                sbx_error_param(&err, "env", "more than 8192 environment variables");
        else
                sbx_error_backend(&err, x->s->backend, "sandboxd-agent could not %s: %s", step,
                                  strerror(e));
        ax_finish(x, &ex, false);
        sbx_error_clear(&err);
        return NULL;
}

static const char *
ax_on_killed(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        struct list *pos, *tmp;

        if (len != 8)
                return "bad KILLED";
        LIST_FOREACH_SAFE(pos, tmp, &x->kills)
        {
                struct ax_kill *k = LIST_ENTRY(pos, struct ax_kill, link);
                if (k->tag == agent_get32(p)) {
                        ax_kill_done(x, k, (int) agent_get32(p + 4));
                        break;
                }
        }
        return NULL;
}

static const char *
ax_on_unknown(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        struct exec_exit ex = {.lost = "sandboxd-agent no longer knows this exec (it ended "
                                       "and was forgotten, or the agent restarted)"};

        ax_finish(x, &ex, false);
        return NULL;
}

/* REFUSED: our offsets are ahead of the agent's output (bytes it never sent were counted as
 * its output); nothing can be resumed from there, and the agent kills it at RESUME_END. */
static const char *
ax_on_refused(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        struct exec_exit ex = {0};
        char *why;

        if (len != 16 || x->phase != AX_NEW)
                return "unexpected REFUSED";
        why = xasprintf("cannot be resumed: the daemon counts %llu stdout and %llu stderr bytes, "
                        "sandboxd-agent has only %llu and %llu; its process tree is killed (the "
                        "output received so far stays readable)",
                        (unsigned long long) x->rx[0], (unsigned long long) x->rx[1],
                        (unsigned long long) agent_get64(p),
                        (unsigned long long) agent_get64(p + 8));
        ex.lost = why;
        ax_finish(x, &ex, false);
        free(why);
        return NULL;
}

static struct agent_exec *
ax_by_id(struct agent_session *s, uint32_t id)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &s->execs)
        {
                struct agent_exec *x = LIST_ENTRY(pos, struct agent_exec, link);
                if (x->id == id)
                        return x;
        }
        return NULL;
}

static const char *
ax_on_stdout(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        return ax_on_output(x, 0, p, len);
}

static const char *
ax_on_stderr(struct agent_exec *x, const unsigned char *p, uint32_t len)
{
        return ax_on_output(x, 1, p, len);
}

typedef const char *ax_handler(struct agent_exec *x, const unsigned char *p, uint32_t len);

/* The agent's messages about an exec (KILLED aside: answered even once it is done). */
static ax_handler *const ax_handlers[] = {
        [AGENT_STARTED] = ax_on_started,     [AGENT_RESUMED] = ax_on_resumed,
        [AGENT_STDOUT] = ax_on_stdout,       [AGENT_STDERR] = ax_on_stderr,
        [AGENT_STDIN_ACK] = ax_on_stdin_ack, [AGENT_EXIT] = ax_on_exit,
        [AGENT_FAILED] = ax_on_failed,       [AGENT_UNKNOWN] = ax_on_unknown,
        [AGENT_REFUSED] = ax_on_refused,
};

/* Routes a message to its exec. */
const char *
agent_exec_dispatch(struct agent_session *s, uint32_t id, unsigned type, const unsigned char *p,
                    uint32_t len)
{
        struct agent_exec *x = ax_by_id(s, id);
        ax_handler *h = type < ARRAY_SIZE(ax_handlers) ? ax_handlers[type] : NULL;
        const char *err = NULL;

        if (!x)
                return NULL; /* an exec already released; the agent may still talk about it */
        x->refs++;
        if (type == AGENT_KILLED)
                err = ax_on_killed(x, p, len);
        else if (x->done)
                err = NULL;
        else if (!h)
                err = "unexpected message type for an exec";
        else
                err = h(x, p, len);
        ax_unref(x);
        return err;
}

/* ---- the link ---- */

static void
ax_bind(struct agent_exec *x)
{
        unsigned char m[16];

        x->id = agent_session_new_id(x->s);
        if (x->phase != AX_RUNNING && !x->adopted) {
                x->phase = AX_STARTING;
                agent_session_send(x->s, x->id, AGENT_START, x->start.data, x->start.len, NULL, 0);
                ax_flush_stdin(x);
                return;
        }
        x->phase = AX_NEW; /* until RESUMED */
        agent_put64(m, x->rx[0]);
        agent_put64(m + 8, x->rx[1]);
        agent_session_send(x->s, x->id, AGENT_RESUME, m, sizeof(m), x->name, strlen(x->name) + 1);
        x->acked[0] = x->rx[0];
        x->acked[1] = x->rx[1];
}

/* Starts or resumes every exec on the new link. */
void
agent_exec_link_up(struct agent_session *s)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &s->execs)
        {
                struct agent_exec *x = LIST_ENTRY(pos, struct agent_exec, link);
                if (!x->done && !x->released)
                        ax_bind(x);
        }
}

static void
ax_unlink(struct agent_exec *x)
{
        struct list *pos, *tmp;

        x->id = 0;
        x->in_sent = x->in_done;
        x->eof_sent = false;
        if (x->phase == AX_RUNNING)
                x->adopted = true; /* the next link resumes it */
        LIST_FOREACH_SAFE(pos, tmp, &x->kills)
        {
                LIST_ENTRY(pos, struct ax_kill, link)->sent = false;
        }
        x->refs++;
        while (x->done && !list_empty(&x->kills)) /* nobody will answer those now */
                ax_kill_done(x, LIST_ENTRY(x->kills.next, struct ax_kill, link), 0);
        ax_unref(x);
}

/* The link went: ids, unanswered kills and sent-but-unconsumed stdin start over. */
void
agent_exec_link_down(struct agent_session *s)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &s->execs)
        {
                ax_unlink(LIST_ENTRY(pos, struct agent_exec, link));
        }
}

static void
ax_end_lost(struct agent_exec *x, const struct sbx_error *err, bool killed, const char *why)
{
        struct sbx_error e = {0};
        struct exec_exit ex = {0};

        if (x->phase == AX_RUNNING || x->adopted) { /* it ran */
                if (killed)
                        ex.signal = SIGKILL;
                else
                        ex.lost = why;
        } else {
                if (err)
                        sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                else
                        sbx_error_backend(&e, x->s->backend, "%s", why);
                ex.exit_code = 125;
                ex.error = &e;
        }
        ax_finish(x, &ex, false);
        sbx_error_clear(&e);
}

/* The agent process is a new one: nothing that ran in the old one is left. */
void
agent_exec_agent_restarted(struct agent_session *s, bool killed)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &s->execs)
        {
                struct agent_exec *x = LIST_ENTRY(pos, struct agent_exec, link);
                x->refs++;
                if (!x->done && (x->phase == AX_RUNNING || x->adopted))
                        ax_end_lost(x, NULL, killed,
                                    "sandboxd-agent restarted: the exec was lost with it");
                else if (x->phase == AX_STARTING)
                        x->phase = AX_NEW; /* never got there: START it in the new agent */
                ax_unref(x);
        }
}

/* Every exec ends; kills get their answer. */
void
agent_exec_fail_all(struct agent_session *s, const struct sbx_error *err, bool killed,
                    const char *why)
{
        while (!list_empty(&s->execs)) {
                struct agent_exec *x = LIST_ENTRY(s->execs.next, struct agent_exec, link);
                x->refs++;
                list_del(&x->link); /* ax_unref unlinks again, harmlessly */
                while (!list_empty(&x->kills))
                        ax_kill_done(x, LIST_ENTRY(x->kills.next, struct ax_kill, link), 0);
                if (!x->done)
                        ax_end_lost(x, err, killed, why);
                x->id = 0;
                ax_unref(x);
        }
}

/* ---- starting ---- */

static void
ax_strings(struct buf *b, char *const *v, uint32_t *n)
{
        for (*n = 0; v && v[*n]; (*n)++)
                buf_append(b, v[*n], strlen(v[*n]) + 1);
}

static int
ax_build_start(struct agent_exec *x, const struct exec_spec *spec, struct sbx_error *err)
{
        unsigned char h[16] = {0};
        uint32_t argc, envc;
        struct buf *b = &x->start;

        buf_append(b, h, sizeof(h));
        buf_append(b, x->name, strlen(x->name) + 1);
        buf_append(b, x->cwd, strlen(x->cwd) + 1);
        buf_append(b, spec->state_path ? spec->state_path : "",
                   spec->state_path ? strlen(spec->state_path) + 1 : 1);
        if (spec->path)
                buf_append(b, spec->path, strlen(spec->path) + 1);
        ax_strings(b, spec->argv, &argc);
        ax_strings(b, spec->envp, &envc);
        agent_put32((unsigned char *) b->data,
                    (spec->pty ? AGENT_START_TTY : 0) | (x->has_stdin ? AGENT_START_STDIN : 0) |
                            (spec->merge_stderr ? AGENT_START_MERGE : 0) |
                            (spec->path ? AGENT_START_PATH : 0));
        agent_put16((unsigned char *) b->data + 4, spec->pty_rows);
        agent_put16((unsigned char *) b->data + 6, spec->pty_cols);
        agent_put32((unsigned char *) b->data + 8, argc);
        agent_put32((unsigned char *) b->data + 12, envc);
        if (b->len > AGENT_MAX_PAYLOAD) {
                sbx_error_param(err, "argv",
                                "command, environment and cwd together exceed %u bytes",
                                AGENT_MAX_PAYLOAD);
                return -E2BIG;
        }
        return 0;
}

static struct agent_exec *
ax_new(struct agent_session *s, const struct exec_spec *spec, const struct backend_exec_cbs *cbs,
       void *ctx)
{
        struct agent_exec *x = xcalloc(1, sizeof(*x));

        x->base.ops = &ax_ops;
        x->s = s;
        agent_session_ref(s);
        x->refs = 1;
        if (cbs)
                x->cbs = *cbs;
        x->ctx = ctx;
        list_init(&x->kills);
        list_init(&x->link);
        snprintf(x->name, sizeof(x->name), "%s", spec->exec_id ? spec->exec_id : "");
        x->tty = spec->pty;
        x->has_stdin = spec->stdin_open || spec->stdin_len > 0;
        x->eof_wanted = !spec->stdin_open;
        x->cwd = xstrdup(spec->cwd ? spec->cwd : "");
        x->argv0 = xstrdup(spec->path                    ? spec->path
                           : spec->argv && spec->argv[0] ? spec->argv[0]
                                                         : "");
        if (spec->stdin_len)
                buf_append(&x->in, spec->stdin_data, spec->stdin_len);
        x->in_total = spec->stdin_len;
        return x;
}

static int
ax_check(struct agent_session *s, const struct exec_spec *spec, struct sbx_error *err)
{
        if (!agent_session_alive(s)) {
                sbx_error_backend(err, s->backend, "%s",
                                  s->error ? s->error : "the agent session is closed");
                return -EIO;
        }
        if (!spec->exec_id || !agent_name_ok(spec->exec_id)) {
                sbx_error_param(err, "exec_id", "exec id '%s' is not a valid agent exec name",
                                spec->exec_id ? spec->exec_id : "");
                return -EINVAL;
        }
        return 0;
}

static void
ax_enlist(struct agent_exec *x)
{
        list_add_tail(&x->s->execs, &x->link);
        if (x->s->state == SESS_UP)
                ax_bind(x);
}

/* Starts an exec. */
int
agent_exec_start(struct agent_session *s, const struct exec_spec *spec,
                 const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                 struct sbx_error *err)
{
        struct agent_exec *x;
        int r = ax_check(s, spec, err);

        if (r == 0 && (!spec->argv || !spec->argv[0])) {
                sbx_error_param(err, "argv", "empty argv");
                r = -EINVAL;
        }
        if (r < 0)
                return r;
        x = ax_new(s, spec, cbs, ctx);
        if ((r = ax_build_start(x, spec, err)) < 0) {
                ax_unref(x);
                return r;
        }
        ax_enlist(x);
        *ret = &x->base;
        return 0;
}

/* Takes back an exec of a previous daemon. */
int
agent_exec_adopt(struct agent_session *s, const struct exec_spec *spec, const uint64_t offsets[2],
                 const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                 struct sbx_error *err)
{
        struct agent_exec *x;
        int r = ax_check(s, spec, err);

        if (r < 0)
                return r;
        x = ax_new(s, spec, cbs, ctx);
        x->adopted = true;
        x->has_stdin = spec->stdin_open;
        x->eof_wanted = !spec->stdin_open;
        for (int i = 0; i < 2; i++)
                x->rx[i] = x->acked[i] = offsets[i];
        ax_enlist(x);
        *ret = &x->base;
        return 0;
}

/* A helper exec whose stdout is collected. */
void
agent_helper(struct agent_session *s, char *const *argv, const void *in, size_t inlen, void *ctx,
             agent_helper_cb cb)
{
        struct exec_spec spec = {.argv = argv, .stdin_data = in, .stdin_len = inlen, .cwd = "/"};
        struct sbx_error err = {0};
        struct agent_exec *x;
        unsigned char rnd[8];
        char name[24];

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                memset(rnd, 0, sizeof(rnd));
        snprintf(name, sizeof(name), "h_%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
                 rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
        spec.exec_id = name;
        if (ax_check(s, &spec, &err) < 0) {
                cb(ctx, -1, NULL, 0, &err);
                sbx_error_clear(&err);
                return;
        }
        x = ax_new(s, &spec, NULL, NULL);
        x->helper = true;
        x->hcb = cb;
        x->hctx = ctx;
        if (ax_build_start(x, &spec, &err) < 0) {
                cb(ctx, -1, NULL, 0, &err);
                sbx_error_clear(&err);
                ax_unref(x);
                return;
        }
        ax_enlist(x);
}

/* ---- per-exec ops ---- */

static int
ax_write(struct backend_proc *bp, const void *data, size_t len, bool eof)
{
        struct agent_exec *x = (struct agent_exec *) bp;

        if (x->done || x->eof_wanted || !x->has_stdin)
                return -EPIPE;
        buf_append(&x->in, data, len);
        x->in_total += len;
        x->eof_wanted = eof;
        ax_flush_stdin(x);
        return 0;
}

static int
ax_signal(struct backend_proc *bp, int sig)
{
        struct agent_exec *x = (struct agent_exec *) bp;

        if (sig <= 0 || sig >= 65)
                return -EINVAL;
        if (x->done)
                return -ESRCH;
        if (ax_linked(x) && x->phase == AX_RUNNING)
                ax_send_signal(x, sig);
        else
                x->pending_sig = sig;
        return 0;
}

static void
ax_kill(struct backend_proc *bp, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct agent_exec *x = (struct agent_exec *) bp;
        struct ax_kill *k;

        if (x->done && !ax_linked(x)) {
                cb(ctx, 0, NULL);
                return;
        }
        k = xcalloc(1, sizeof(*k));
        *k = (struct ax_kill){
                .tag = ++x->next_tag, .sig = SIGTERM, .grace_ms = grace_ms, .cb = cb, .ctx = ctx};
        list_add_tail(&x->kills, &k->link);
        x->refs++; /* until KILLED, or the link is gone */
        if (ax_linked(x) && x->phase == AX_RUNNING)
                ax_send_kill(x, k);
}

static void
ax_pause(struct backend_proc *bp)
{
        ((struct agent_exec *) bp)->paused = true;
}

static void
ax_resume(struct backend_proc *bp)
{
        struct agent_exec *x = (struct agent_exec *) bp;

        x->paused = false;
        ax_ack(x);
}

static int
ax_resize(struct backend_proc *bp, unsigned short rows, unsigned short cols)
{
        struct agent_exec *x = (struct agent_exec *) bp;
        unsigned char m[4];

        if (!x->tty)
                return -ENOTTY;
        agent_put16(m, rows);
        agent_put16(m + 2, cols);
        ax_send(x, AGENT_RESIZE, m, sizeof(m), NULL, 0);
        return 0;
}

static json_t *
ax_save(struct backend_proc *bp)
{
        return json_pack("{s:s}", "via", "agent");
}

/* The daemon lets go: after on_exit, or at shutdown while it runs (it then stays in the agent
 * for the next daemon, which adopts it by name). */
static void
ax_release(struct backend_proc *bp)
{
        struct agent_exec *x = (struct agent_exec *) bp;

        if (x->released)
                return;
        x->released = true;
        x->done = true;
        if (list_empty(&x->kills))
                list_del(&x->link);
        ax_unref(x);
}

static const struct backend_proc_ops ax_ops = {
        .write = ax_write,
        .signal = ax_signal,
        .kill = ax_kill,
        .pause = ax_pause,
        .resume = ax_resume,
        .resize = ax_resize,
        .save = ax_save,
        .release = ax_release,
};
