/* daytona_ctl.c — what a client does to a running Daytona exec: signal and kill its process
 * tree inside the sandbox (the tree-kill script through POST /process/execute, never a stop of
 * the sandbox, never only a dropped request), and feed its stdin through the session input
 * endpoint and the wrapper's relay. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_exec.h"

#define CTL_IN_MAX     (16u << 20) /* stdin queued and not yet sent */
#define CTL_KILL_SLACK 30000       /* ms the kill request may take beyond the grace */

/* A signal or kill of the tree; on its own once sent (it outlives the exec's handle). */
struct ctl_kill {
        struct list link;       /* in the exec's kills until the command is posted, then (a kill)
                                   in its killing until answered */
        struct daytona_proc *p; /* while in killing; NULL once the exec's handle went */
        struct backend_sandbox *sb; /* referenced */
        char *pidfile;
        bool kill; /* TERM, grace, KILL; else one signal */
        int sig;
        unsigned grace_ms;
        backend_kill_cb cb; /* may be NULL (signals) */
        void *ctx;
};

struct ctl_line {
        struct list link;
        char *line;
        size_t raw; /* stdin bytes it carries */
};

static void ctl_input_next(struct daytona_proc *p);

/* Sets up the exec's control state; initial stdin of a relay exec is queued. */
void
daytona_ctl_init(struct daytona_proc *p, const struct exec_spec *spec)
{
        list_init(&p->kills);
        list_init(&p->killing);
        list_init(&p->inq);
        if (p->in == DAYTONA_STDIN_RELAY && spec->stdin_len)
                daytona_exec_write(p, spec->stdin_data, spec->stdin_len, false);
}

static void
ctl_kill_free(struct ctl_kill *k)
{
        list_del(&k->link);
        daytona_sandbox_unref(k->sb);
        free(k->pidfile);
        free(k);
}

/* The number on the last non-empty line of the script's output (the survivors). */
static int
ctl_last_number(const char *s)
{
        const char *end = s + strlen(s), *p;

        while (end > s && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r'))
                end--;
        for (p = end; p > s && p[-1] >= '0' && p[-1] <= '9'; p--)
                ;
        return p < end ? atoi(p) : 0;
}

/* A kill's answer; an exec whose command ended meanwhile ends now (the last thing done: the
 * daemon may release it from inside on_exit). */
static void
ctl_killed_cb(void *ctx, const struct daytona_res *res)
{
        struct ctl_kill *k = ctx;
        struct daytona_proc *p = k->p;
        const char *out = json_string_value(json_object_get(res->body, "result"));
        struct sbx_error err = {0};

        if (res->status != 200)
                daytona_error(&err, "kill the exec's processes", res, true);
        if (k->cb)
                k->cb(k->ctx, err.code ? -1 : (out ? ctl_last_number(out) : 0),
                      err.code ? &err : NULL);
        sbx_error_clear(&err);
        ctl_kill_free(k);
        if (p && p->end_wait && list_empty(&p->killing))
                daytona_exec_killed(p);
}

/* Runs the tree-kill script in the sandbox, for p's command (posted: its session is known). */
static void
ctl_kill_send(struct ctl_kill *k, const struct daytona_proc *p)
{
        char *guard = daytona_cmd_pidfile(daytona.remote_dir, p->session ? p->session->id : "-");
        char *cmd = daytona_cmd_kill(k->kill ? "kill" : "signal", k->sig, guard, p->exec_id,
                                     k->pidfile, k->grace_ms);
        struct daytona_req r = {.method = "POST",
                                .json = json_pack("{s:s}", "command", cmd),
                                .idempotent = true, /* signalling twice is harmless */
                                .timeout_ms = (long) k->grace_ms + CTL_KILL_SLACK};

        list_del(&k->link);
        if (k->kill && k->p) /* the exec's end waits for it */
                list_add_tail(&k->p->killing, &k->link);
        daytona_send(&r, daytona_tb_url(k->sb, "/process/execute"), ctl_killed_cb, k, NULL);
        json_decref(r.json);
        free(cmd);
        free(guard);
}

static struct ctl_kill *
ctl_kill_new(struct daytona_proc *p, bool kill, int sig, unsigned grace_ms)
{
        struct ctl_kill *k = xcalloc(1, sizeof(*k));

        list_init(&k->link);
        k->p = kill ? p : NULL;
        k->sb = p->sb;
        daytona_sandbox_ref(p->sb);
        k->pidfile = xstrdup(p->pidfile);
        k->kill = kill;
        k->sig = sig;
        k->grace_ms = grace_ms;
        p->signalled = sig; /* a kill's KILL after the grace is recognised too */
        return k;
}

/* TERM, grace, KILL of the exec's tree; cb once nothing is left. */
void
daytona_exec_kill(struct daytona_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct ctl_kill *k;

        if (daytona_exec_done(p)) {
                if (cb)
                        cb(ctx, 0, NULL);
                return;
        }
        if (p->phase == EX_PREP && !p->posts) {
                /* Nothing was sent to the sandbox yet: it never runs. */
                daytona_exec_cancel(p);
                if (cb)
                        cb(ctx, 0, NULL);
                return;
        }
        k = ctl_kill_new(p, true, SIGTERM, grace_ms);
        k->cb = cb;
        k->ctx = ctx;
        if (p->phase == EX_STREAM)
                ctl_kill_send(k, p);
        else
                list_add_tail(&p->kills, &k->link);
}

/* Sends sig to the exec's tree. */
int
daytona_exec_signal(struct daytona_proc *p, int sig)
{
        if (sig <= 0 || sig >= 65)
                return -EINVAL;
        if (daytona_exec_done(p))
                return -ESRCH;
        if (p->phase != EX_STREAM) {
                p->pending_sig = sig;
                p->signalled = sig;
                return 0;
        }
        ctl_kill_send(ctl_kill_new(p, false, sig, 0), p);
        return 0;
}

/* The command is in its session: what waited for it goes out. */
void
daytona_ctl_started(struct daytona_proc *p)
{
        if (p->pending_sig) {
                ctl_kill_send(ctl_kill_new(p, false, p->pending_sig, 0), p);
                p->pending_sig = 0;
        }
        while (!list_empty(&p->kills))
                ctl_kill_send(LIST_ENTRY(p->kills.next, struct ctl_kill, link), p);
        ctl_input_next(p);
}

static void
ctl_line_free(struct ctl_line *l)
{
        list_del(&l->link);
        free(l->line);
        free(l);
}

static void
ctl_input_drop(struct daytona_proc *p)
{
        if (p->in_call)
                daytona_call_cancel(p->in_call);
        p->in_call = NULL;
        while (!list_empty(&p->inq))
                ctl_line_free(LIST_ENTRY(p->inq.next, struct ctl_line, link));
        p->in_bytes = 0;
}

/* The exec ended: kills never sent have nothing left to kill. */
void
daytona_ctl_ended(struct daytona_proc *p)
{
        ctl_input_drop(p);
        p->eof_queued = true;
        while (!list_empty(&p->kills)) {
                struct ctl_kill *k = LIST_ENTRY(p->kills.next, struct ctl_kill, link);
                if (k->cb)
                        k->cb(k->ctx, 0, NULL);
                ctl_kill_free(k);
        }
}

/* Whether a tree kill is under way. */
bool
daytona_ctl_killing(const struct daytona_proc *p)
{
        return !list_empty(&p->killing);
}

/* Frees what is left (the exec's handle goes); kills in flight go on without it. */
void
daytona_ctl_free(struct daytona_proc *p)
{
        daytona_ctl_ended(p);
        while (!list_empty(&p->killing)) {
                struct ctl_kill *k = LIST_ENTRY(p->killing.next, struct ctl_kill, link);
                k->p = NULL;
                list_del(&k->link);
                list_init(&k->link);
        }
}

static void
ctl_input_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_proc *p = ctx;

        p->in_call = NULL;
        if (res->status / 100 != 2) {
                /* 410: the command is over; anything else: the input cannot be delivered.
                 * process.write answered already, so what is queued is dropped. */
                ctl_input_drop(p);
                return;
        }
        ctl_line_free(LIST_ENTRY(p->inq.next, struct ctl_line, link));
        ctl_input_next(p);
}

/* Sends the oldest queued line (one at a time, so the relay sees them in order). */
static void
ctl_input_next(struct daytona_proc *p)
{
        struct ctl_line *l;
        json_t *body;

        if (p->in_call || list_empty(&p->inq) || p->phase != EX_STREAM)
                return;
        l = LIST_ENTRY(p->inq.next, struct ctl_line, link);
        p->in_bytes -= MIN(p->in_bytes, l->raw);
        l->raw = 0;
        body = json_pack("{s:s}", "data", l->line);
        struct daytona_req r = {.method = "POST", .json = body, .idempotent = true};
        daytona_send(&r,
                     daytona_tb_url(p->sb, "/process/session/%s/command/%s/input", p->session->id,
                                    p->cmd_id),
                     ctl_input_cb, p, &p->in_call);
        json_decref(body);
}

static void
ctl_queue(struct daytona_proc *p, const void *data, size_t len)
{
        struct ctl_line *l = xcalloc(1, sizeof(*l));

        l->line = daytona_cmd_input(++p->in_seq, data, len);
        l->raw = len;
        p->in_bytes += len;
        list_add_tail(&p->inq, &l->link);
}

/* Queues stdin bytes (and the EOF) for the relay. */
int
daytona_exec_write(struct daytona_proc *p, const void *data, size_t len, bool eof)
{
        const char *d = data;

        if (p->in != DAYTONA_STDIN_RELAY || p->eof_queued || daytona_exec_done(p))
                return -EPIPE;
        if (p->in_bytes + len > CTL_IN_MAX)
                return -ENOBUFS;
        for (size_t off = 0; off < len; off += DAYTONA_INPUT_CHUNK)
                ctl_queue(p, d + off, MIN(DAYTONA_INPUT_CHUNK, len - off));
        if (eof) {
                ctl_queue(p, NULL, 0);
                p->eof_queued = true;
        }
        ctl_input_next(p);
        return 0;
}
