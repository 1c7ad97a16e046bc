/* proc_end.c — subscribers of an exec's output, and how an exec ends: exit, timeout,
 * failure, the shell handed to the next queued command, recreation of a lost container. */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/proc_int.h"
#include "daemon/records.h"
#include "daemon/sandbox.h"
#include "daemon/shellstate.h"
#include "protocol/util.h"

static void
proc_sub_free(struct proc_sub *s)
{
        list_del(&s->node);
        conn_watch_del(&s->watch);
        conn_unref(s->conn);
        free(s);
}

static void
proc_kill_done_cb(void *ctx, int survivors, const struct sbx_error *err)
{
        struct proc *p = ctx;

        if (err)
                log_warn("exec %s: kill: %s", p->id, err->message);
        proc_unref(p);
}

static void
proc_kill_tree(struct proc *p)
{
        if (!p->bp || p->state != PROC_RUNNING)
                return;
        proc_ref(p);
        p->bp->ops->kill(p->bp, (unsigned) g.config->kill_grace_ms, p, proc_kill_done_cb);
}

static void
proc_sub_close_cb(struct conn_watch *w)
{
        struct proc_sub *s = LIST_ENTRY(w, struct proc_sub, watch);
        struct proc *p = s->proc;
        bool fg = s->foreground;

        list_init(&s->watch.node); /* already unlinked by conn */
        proc_sub_free(s);
        /* A congested client that goes no longer holds the output back (the spool takes it):
         * else an agent's exec stays paused and its exit, which follows its output, never
         * comes. */
        proc_update_pause(p);
        /* At shutdown the daemon goes, not the client: what outlives it is left running. */
        if (fg && p->state == PROC_RUNNING && !(g.stopping && proc_outlives_daemon(p))) {
                log_info("exec %s: client disconnected during a foreground exec: killing its "
                         "process tree",
                         p->id);
                proc_kill_tree(p);
        }
}

static void
proc_sub_drain_cb(struct conn_watch *w)
{
        struct proc_sub *s = LIST_ENTRY(w, struct proc_sub, watch);

        proc_update_pause(s->proc);
}

/* Whether c already hears p's output. */
bool
proc_subscribed(struct proc *p, const struct conn *c)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &p->subs)
        {
                if (LIST_ENTRY(pos, struct proc_sub, node)->conn == c)
                        return true;
        }
        return false;
}

void
proc_subscribe(struct proc *p, struct conn *c, bool foreground)
{
        struct proc_sub *s = xcalloc(1, sizeof(*s));

        s->conn = c;
        conn_ref(c);
        s->proc = p;
        s->foreground = foreground;
        s->watch.on_close = proc_sub_close_cb;
        s->watch.on_drain = proc_sub_drain_cb;
        list_add_tail(&p->subs, &s->node);
        conn_watch_add(c, &s->watch);
}

static void
proc_wake_all(struct proc *p, bool readers_only)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &p->waiters)
        {
                struct proc_waiter *w = LIST_ENTRY(pos, struct proc_waiter, node);
                if (!readers_only || w->kind == PROC_WAIT_READ)
                        proc_waiter_answer(w);
        }
}

void
proc_wake_readers(struct proc *p)
{
        if (!list_empty(&p->waiters))
                proc_wake_all(p, true);
}

static void
proc_apply_shell_state(struct proc *p, const struct exec_exit *ex)
{
        char *note = shellstate_apply(p->sb, ex, p->shell_base, p->env, !p->cwd);

        if (note) {
                log_info("exec %s: %s", p->id, note + strlen("sandboxd: "));
                proc_output_cb(p, BACKEND_STDERR, note, strlen(note));
                free(note);
        }
        json_decref(p->shell_base);
        p->shell_base = NULL;
}

/* Hands the sandbox's shell to the next queued command exec. */
static void
proc_release_shell(struct proc *p)
{
        struct sandbox *sb = p->sb;
        struct proc *next;

        if (!p->holds_shell)
                return;
        p->holds_shell = false;
        sb->shell_busy = false;
        while (!sb->shell_busy && !list_empty(&sb->shell_queue)) {
                next = LIST_ENTRY(sb->shell_queue.next, struct proc, qnode);
                list_del(&next->qnode);
                proc_start(next);
                proc_unref(next);
        }
}

/* A foreground exec's answer: its result, or -32005 when how it ended is unknown (the link
 * to it was lost for good): the output it made stays readable (process.read). */
static void
proc_reply(struct proc *p)
{
        struct sbx_error err = {0};

        if (!p->lost) {
                rpc_result(p->req, proc_result_json(p));
                return;
        }
        sbx_error_set(&err, SBX_E_BACKEND,
                      json_pack("{s:s,s:s,s:s}", "backend", p->sb->ops->name, "detail", p->lost,
                                "exec_id", p->id),
                      "%s backend: exec %s: %s", p->sb->ops->name, p->id, p->lost);
        rpc_error(p->req, &err);
        sbx_error_clear(&err);
}

static void
proc_finish(struct proc *p)
{
        struct list *pos, *tmp;

        p->ended_wall = util_wall_ms();
        p->duration_ms = (double) (util_now_ns() - p->start_ns) / 1e6;
        uv_timer_stop(&p->timer);
        for (int i = 0; i < 2; i++)
                if (p->stream && p->out[i].ncarry)
                        proc_stream_chunk(p, i, "", 0, p->out[i].total, true);
        if (p->req) {
                proc_reply(p);
                p->req = NULL;
        }
        /* The result is out: what is kept of the output from now on is the spool. */
        for (int i = 0; i < 2; i++) {
                buf_free(&p->out[i].head);
                free(p->out[i].tail);
                p->out[i].tail = NULL;
                p->out[i].head_cap = p->out[i].tail_cap = 0;
        }
        LIST_FOREACH_SAFE(pos, tmp, &p->subs)
        {
                struct proc_sub *s = LIST_ENTRY(pos, struct proc_sub, node);
                if (p->background || !s->foreground)
                        conn_notify(s->conn, "exec.exit", proc_exit_fields(p));
                proc_sub_free(s);
        }
        proc_wake_all(p, false);
        proc_flush_parked(p);
        if (p->sb->running)
                p->sb->running--;
        sandbox_touch(p->sb);
        proc_release_shell(p);
        proc_persist(p); /* before the backend forgets the exit (after on_exit returns) */
}

static void proc_start_error(struct proc *p, const struct sbx_error *error);

void
proc_exit_cb(void *ctx, const struct exec_exit *ex)
{
        struct proc *p = ctx;

        if (p->keep_files) {
                /* Handed to the next daemon at shutdown (proc_shutdown): what the backend says
                 * as it lets go (a START it sent but saw no answer to "could not start", a link
                 * it drops "lost") is not how the exec ended, and a line about it in the spool
                 * would be bytes the next daemon counts as the exec's own when it resumes. */
                proc_unref(p); /* the backend's reference */
                return;
        }
        if (ex->error) {
                /* It never ran: run it in a recreated container, or say why it could not. */
                proc_start_error(p, ex->error);
                proc_unref(p); /* the backend's reference */
                return;
        }
        proc_cwd_note(p);
        proc_set_ended(p, PROC_EXITED);
        p->exit_code = ex->exit_code;
        p->sig = ex->signal;
        p->oom = ex->oom_killed;
        if (ex->lost) {
                p->lost = xstrdup(ex->lost);
                log_warn("exec %s: lost: %s", p->id, ex->lost);
        }
        if (p->shell_base)
                proc_apply_shell_state(p, ex);
        log_debug("exec %s: exited (code %d, signal %d%s)", p->id, p->exit_code, p->sig,
                  p->timed_out ? ", timed out" : "");
        proc_finish(p);
        proc_unref(p); /* the backend's reference */
}

void
proc_timeout_cb(uv_timer_t *t)
{
        struct proc *p = t->data;

        if (p->state != PROC_RUNNING)
                return;
        p->timed_out = true;
        log_info("exec %s: timeout of %llu ms reached: killing its process tree", p->id,
                 (unsigned long long) p->timeout_ms);
        proc_kill_tree(p);
}

void
proc_drop_subs(struct proc *p)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &p->subs)
        proc_sub_free(LIST_ENTRY(pos, struct proc_sub, node));
}

void
proc_fail(struct proc *p, struct sbx_error *err)
{
        proc_set_ended(p, PROC_FAILED);
        proc_drop_subs(p);
        proc_release_shell(p);
        proc_fail_waiters(p, err);
        proc_flush_parked(p);
        if (p->req) {
                rpc_error(p->req, err);
                p->req = NULL;
        }
        sbx_error_clear(err);
        /* A process that never ran is not worth keeping. */
        list_del(&p->node);
        list_init(&p->node);
        if (p->sb->running)
                p->sb->running--;
        uv_close((uv_handle_t *) &p->timer, proc_timer_close_cb);
}

/* An exec that never ran, after its request was answered (background) or not. */
static void
proc_start_failed(struct proc *p, struct sbx_error *err)
{
        char *m;

        if (p->req) {
                proc_fail(p, err);
                return;
        }
        /* The client holds its exec_id already: it ends like Docker's own runtime failure. */
        m = xasprintf("sandboxd: %s\n", err->message);
        proc_output_cb(p, BACKEND_STDERR, m, strlen(m));
        free(m);
        sbx_error_clear(err);
        proc_set_ended(p, PROC_EXITED);
        p->exit_code = 125;
        proc_finish(p);
}

/* Whether an exec that could not start because of err may run in a recreated container. */
bool
proc_may_recreate(struct proc *p, const struct sbx_error *err)
{
        static const char *const gone[] = {"removed", "exited", "dead"};
        const char *st = json_string_value(json_object_get(err->data, "state"));
        bool vanished = false;

        for (size_t i = 0; st && i < ARRAY_SIZE(gone); i++)
                vanished = vanished || !strcmp(st, gone[i]);
        return err->code == SBX_E_UNUSABLE && vanished && !p->recreated && !g.stopping &&
               sandbox_persistent(p->sb) && records_recreate_enabled(p->sb->ops);
}

static void
proc_recreated_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct proc *p = ctx;
        struct sbx_error e = {0};

        if (err) {
                sbx_error_move(&e, err);
                sbx_error_prefix(&e,
                                 "the container of sandbox '%s' vanished and could not be "
                                 "recreated",
                                 p->sb->id);
        } else if (g.stopping) {
                sbx_error_set(&e, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "stopping"),
                              "exec '%s' was not started: the daemon is shutting down", p->id);
        }
        if (e.code) {
                proc_start_failed(p, &e);
        } else {
                p->recreated = true;
                proc_start(p);
        }
        proc_unref(p);
}

/* Starts p again once its sandbox has a new container. */
void
proc_wait_recreate(struct proc *p)
{
        p->state = PROC_STARTING;
        proc_ref(p);
        sandbox_recreate(p->sb, proc_recreated_cb, p);
}

/* exec_exit.error: the backend could not start the exec after exec_start returned. */
static void
proc_start_error(struct proc *p, const struct sbx_error *error)
{
        struct sbx_error e = {0};

        sbx_error_set(&e, error->code, json_incref(error->data), "%s", error->message);
        log_info("exec %s: the backend could not start it: %s", p->id, error->message);
        if (p->bp) {
                p->bp->ops->release(p->bp);
                p->bp = NULL;
        }
        uv_timer_stop(&p->timer);
        p->state = PROC_STARTING;
        if ((!p->cwd && shellstate_cwd_gone(p->sb, &e, &p->cwd_lost)) ||
            (p->command && shellstate_shell_gone(p->sb, &e))) {
                sbx_error_clear(&e);
                proc_start(p);
                return;
        }
        if (proc_may_recreate(p, &e)) {
                sbx_error_clear(&e);
                proc_wait_recreate(p);
                return;
        }
        proc_start_failed(p, &e);
}
