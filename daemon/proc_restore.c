/* proc_restore.c — execs that outlive the daemon (execrec.h): their records written, and
 * taken back at start-up. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/execrec.h"
#include "daemon/log.h"
#include "daemon/proc_int.h"
#include "daemon/sandbox.h"
#include "daemon/spool.h"
#include "protocol/util.h"

json_t *proc_restored; /* exec records loaded at start, waiting for their sandbox */

/* The exec's record (new). */
static json_t *
proc_record_json(struct proc *p)
{
        json_t *r = json_pack(
                "{s:s,s:s,s:s,s:I,s:s,s:b,s:b,s:b,s:i,s:i,s:b,s:b,s:I,s:I,s:I,s:o,s:O}", "key",
                p->key, "exec_id", p->id, "sandbox", p->sb->id, "owner", (json_int_t) p->owner,
                "state", proc_live(p) ? "running" : "exited", "background", p->background, "base64",
                p->base64, "pty", p->pty, "rows", p->rows, "cols", p->cols, "stdin_open",
                p->stdin_open, "merge_stderr", p->merge, "max_output", (json_int_t) p->max_output,
                "timeout_ms", (json_int_t) p->timeout_ms, "started_ms",
                (json_int_t) p->started_wall, "policy", proc_policy_json(p), "record", p->brecord);

        if (p->command)
                json_object_set_new(r, "command", json_string(p->command));
        else
                json_object_set(r, "argv", p->argv);
        if (p->tag)
                json_object_set_new(r, "tag", json_string(p->tag));
        if (p->cwd)
                json_object_set_new(r, "cwd", json_string(p->cwd));
        if (p->env)
                json_object_set(r, "env", p->env);
        if (p->state_path)
                json_object_set_new(r, "state_path", json_string(p->state_path));
        if (p->out[0].own || p->out[1].own)
                json_object_set_new(
                        r, "own_bytes",
                        json_pack("[I,I]", (json_int_t) p->out[0].own, (json_int_t) p->out[1].own));
        if (!proc_live(p)) {
                json_t *ex = proc_exit_fields(p);
                json_object_update(r, ex);
                json_decref(ex);
                json_object_set_new(r, "ended_ms", json_integer((json_int_t) p->ended_wall));
        }
        return r;
}

/* Says why an exec's record was not saved; a full journal only once (a client can fill it: a line
 * per exec would flood the log). */
static void
proc_persist_warn(const struct proc *p, int e)
{
        static bool full_warned;

        if (e == -ENOSPC && full_warned)
                return;
        full_warned |= e == -ENOSPC;
        log_warn("exec %s: its record was not saved (a restart will not take it back): %s%s", p->id,
                 strerror(-e),
                 e == -ENOSPC ? " (the exec journal is full; said once, for this and later execs)"
                              : "");
}

/* Writes (or rewrites) the record of an exec that outlives the daemon. */
void
proc_persist(struct proc *p)
{
        json_t *r;
        int e;

        if (!p->persist || p->keep_files)
                return;
        r = proc_record_json(p);
        e = execrec_put(r);
        if (e < 0)
                proc_persist_warn(p, e);
        json_decref(r);
}

/* A started exec whose backend can take it back after a restart is recorded. */
void
proc_start_persist(struct proc *p)
{
        json_t *rec;

        if (!p->bp->ops->save || !sandbox_persistent(p->sb) || !execrec_id_ok(p->key))
                return;
        rec = p->bp->ops->save(p->bp);
        if (!rec)
                return;
        json_decref(p->brecord);
        p->brecord = rec;
        p->persist = true;
        proc_persist(p);
}

/* Loads the records a previous daemon left (records_restore calls it first). */
void
proc_restore_load(void)
{
        char *warning = NULL;

        json_decref(proc_restored);
        proc_restored = execrec_open(proc_spool_dir, &warning);
        if (warning)
                log_warn("%s", warning);
        free(warning);
}

static const char *
proc_rec_str(json_t *rec, const char *key)
{
        return json_string_value(json_object_get(rec, key));
}

/* The fields every record has; false when it is malformed. */
static bool
proc_restore_fields(struct proc *p, json_t *rec)
{
        json_t *argv = json_object_get(rec, "argv"), *env = json_object_get(rec, "env");
        const char *cmd = proc_rec_str(rec, "command");

        if (!cmd == !json_is_array(argv) || !json_is_object(json_object_get(rec, "record")))
                return false;
        p->command = cmd ? xstrdup(cmd) : NULL;
        p->argv = json_incref(argv);
        p->tag = proc_rec_str(rec, "tag") ? xstrdup(proc_rec_str(rec, "tag")) : NULL;
        p->cwd = proc_rec_str(rec, "cwd") ? xstrdup(proc_rec_str(rec, "cwd")) : NULL;
        p->env = json_is_object(env) ? json_deep_copy(env) : NULL;
        p->state_path =
                proc_rec_str(rec, "state_path") ? xstrdup(proc_rec_str(rec, "state_path")) : NULL;
        p->background = json_is_true(json_object_get(rec, "background"));
        p->base64 = json_is_true(json_object_get(rec, "base64"));
        p->pty = json_is_true(json_object_get(rec, "pty"));
        p->rows = (unsigned short) json_integer_value(json_object_get(rec, "rows"));
        p->cols = (unsigned short) json_integer_value(json_object_get(rec, "cols"));
        p->stdin_open = json_is_true(json_object_get(rec, "stdin_open"));
        p->merge = json_is_true(json_object_get(rec, "merge_stderr"));
        p->max_output = (uint64_t) json_integer_value(json_object_get(rec, "max_output"));
        p->timeout_ms = (uint64_t) json_integer_value(json_object_get(rec, "timeout_ms"));
        p->started_wall = (uint64_t) json_integer_value(json_object_get(rec, "started_ms"));
        p->policy_saved = json_incref(json_object_get(rec, "policy"));
        p->brecord = json_incref(json_object_get(rec, "record"));
        for (int i = 0; i < 2; i++)
                p->out[i].own = (uint64_t) json_integer_value(
                        json_array_get(json_object_get(rec, "own_bytes"), (size_t) i));
        p->persist = true;
        return true;
}

/* An exec that had ended: as it was reported. */
static void
proc_restore_exited(struct proc *p, json_t *rec)
{
        p->exit_code = (int) json_integer_value(json_object_get(rec, "exit_code"));
        p->sig = proc_signal_number(json_object_get(rec, "signal"));
        p->timed_out = json_is_true(json_object_get(rec, "timed_out"));
        p->oom = json_is_true(json_object_get(rec, "oom_killed"));
        p->recreated = json_is_true(json_object_get(rec, "sandbox_recreated"));
        p->lost = proc_rec_str(rec, "lost") ? xstrdup(proc_rec_str(rec, "lost")) : NULL;
        p->ended_wall = (uint64_t) json_integer_value(json_object_get(rec, "ended_ms"));
        p->duration_ms = json_number_value(json_object_get(rec, "duration_ms"));
        proc_set_ended(p, PROC_EXITED);
}

/* A running exec: its backend takes it back from where our spools end. */
static void
proc_restore_running(struct proc *p)
{
        static const struct backend_exec_cbs cbs = {proc_output_cb, proc_exit_cb};
        struct exec_spec spec = {.exec_id = p->key,
                                 .state_path = p->state_path,
                                 .pty = p->pty,
                                 .pty_rows = p->rows,
                                 .pty_cols = p->cols,
                                 .stdin_open = p->stdin_open,
                                 .who = &p->sb->who};
        uint64_t off[2], now = util_wall_ms();
        uint64_t ran = now > p->started_wall ? now - p->started_wall : 0;
        struct sbx_error err = {0};
        int r = -ENOTSUP;

        /* The backend's bytes: what the spools hold but the daemon's own notes. */
        for (int i = 0; i < 2; i++)
                off[i] = p->out[i].total - MIN(p->out[i].own, p->out[i].total);
        p->ops = p->sb->ops;
        p->start_ns = util_now_ns() - ran * 1000000;
        proc_ref(p); /* the backend's, dropped in proc_exit_cb */
        if (p->ops->exec_adopt)
                r = p->ops->exec_adopt(p->sb->bsb, &spec, p->brecord, off, &cbs, p, &p->bp, &err);
        if (r < 0) {
                proc_unref(p);
                p->lost = xasprintf("not taken back after the daemon restarted: %s",
                                    err.message ? err.message : strerror(-r));
                sbx_error_clear(&err);
                p->ended_wall = now;
                proc_set_ended(p, PROC_EXITED);
                proc_persist(p);
                return;
        }
        p->state = PROC_RUNNING;
        p->sb->running++;
        p->stdin_closed = !p->stdin_open;
        if (p->state_path && !p->background) { /* it still holds the sandbox's shell */
                p->holds_shell = true;
                p->sb->shell_busy = true;
                /* what it leaves becomes the state; the env it started from is gone with the
                 * daemon that started it, so its exports are taken as they come */
                p->shell_base = proc_exec_env(p->sb, NULL, p->pty);
        }
        if (p->timeout_ms)
                uv_timer_start(&p->timer, proc_timeout_cb,
                               p->timeout_ms > ran ? p->timeout_ms - ran : 1, 0);
}

static void
proc_restore_one(struct sandbox *sb, json_t *rec)
{
        const char *id = proc_rec_str(rec, "exec_id"), *key = proc_rec_str(rec, "key");
        struct proc *p;

        if (!id || strlen(id) > PROC_ID_MAX || !key || !execrec_id_ok(key)) {
                log_warn("exec record %s is malformed: removed", key ? key : "?");
                execrec_drop(key ? key : "");
                return;
        }
        p = proc_new(sb->owner, id);
        snprintf(p->key, sizeof(p->key), "%s", key); /* spools, the agent: by key */
        p->sb = sb;
        sandbox_ref(sb);
        if (!proc_restore_fields(p, rec)) {
                log_warn("exec record %s is malformed: removed", p->id);
                proc_set_ended(p, PROC_FAILED);
                proc_forget(p);
                return;
        }
        for (int i = 0; i < 2; i++) {
                char *path = xasprintf("%s/%s.%s", proc_spool_dir, p->key, i ? "err" : "out");
                p->out[i].spool = spool_open(path, g.config->spool_max_bytes);
                if (!p->out[i].spool) /* not a spool: start over, nothing of it can be read */
                        p->out[i].spool = spool_new(path, g.config->spool_max_bytes);
                p->out[i].total = spool_total(p->out[i].spool);
                free(path);
        }
        if (!strcmp(proc_rec_str(rec, "state") ?: "", "exited"))
                proc_restore_exited(p, rec);
        else
                proc_restore_running(p);
        log_info("exec %s (sandbox %s) taken back: %s", p->id, sb->id,
                 proc_live(p) ? "running" : "exited");
}

/* Takes back the execs recorded for sb, which was just re-adopted; then its backend may drop
 * what nobody claimed. */
void
proc_restore_sandbox(struct sandbox *sb)
{
        size_t i = 0;

        while (i < json_array_size(proc_restored)) {
                json_t *rec = json_array_get(proc_restored, i);
                if (strcmp(proc_rec_str(rec, "sandbox") ?: "", sb->id) != 0 ||
                    json_integer_value(json_object_get(rec, "owner")) != (json_int_t) sb->owner) {
                        i++;
                        continue;
                }
                proc_restore_one(sb, rec);
                json_array_remove(proc_restored, i);
        }
        if (sb->ops->exec_adopt_done && sb->bsb)
                sb->ops->exec_adopt_done(sb->bsb);
}

/* Every recorded sandbox was adopted or dropped: records of execs whose sandbox is gone go,
 * with their spools (a sandbox kept for a later start keeps its execs' records). */
void
proc_restore_finish(const char *const *kept_sandboxes)
{
        json_t *rec;
        size_t i;

        json_array_foreach(proc_restored, i, rec)
        {
                const char *id = proc_rec_str(rec, "key"), *sb = proc_rec_str(rec, "sandbox");
                bool kept = false;
                for (size_t k = 0; kept_sandboxes && kept_sandboxes[k]; k++)
                        kept = kept || (sb && !strcmp(sb, kept_sandboxes[k]));
                if (kept || !id)
                        continue;
                for (int s = 0; s < 2; s++) {
                        char *path = xasprintf("%s/%s.%s", proc_spool_dir, id, s ? "err" : "out");
                        unlink(path);
                        free(path);
                }
                execrec_drop(id);
        }
        json_decref(proc_restored);
        proc_restored = NULL;
}
