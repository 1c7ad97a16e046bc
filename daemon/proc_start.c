/* proc_start.c — starting an exec: its environment and command, judging it by policy and
 * asking for approval, then the backend's exec_start. */
#include <string.h>
#include <unistd.h>

#include "backends/shell.h"
#include "daemon/approval.h"
#include "daemon/daemon.h"
#include "daemon/hostpaths.h"
#include "daemon/proc_int.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_policy.h"
#include "daemon/shellstate.h"
#include "protocol/codec.h"
#include "protocol/util.h"

static void
env_add(json_t *env, const char *k, const char *v)
{
        if (v)
                json_object_set_new(env, k, json_string(v));
}

/* The minimal environment of a command run as who (new object). */
json_t *
proc_base_env(const struct backend_identity *who, bool pty)
{
        json_t *env = json_object();

        env_add(env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        env_add(env, "HOME", who->home);
        env_add(env, "USER", who->user);
        env_add(env, "LOGNAME", who->user);
        env_add(env, "LANG", "C.UTF-8");
        env_add(env, "TERM", pty ? "xterm-256color" : "dumb");
        return env;
}

/* The environment an exec in sb starts with (new object): the sandbox's shell state, or the
 * minimal environment plus the sandbox's env; then the exec's own env (borrowed, may be NULL).
 * The policy judges the command against exactly this. */
json_t *
proc_exec_env(const struct sandbox *sb, json_t *exec_env, bool pty)
{
        json_t *env;

        if (sb->shell_env) {
                env = json_object();
                json_object_update(env, sb->shell_env);
        } else {
                env = proc_base_env(&sb->who, pty);
                /* The HOME the exec really gets (a remote account's on ssh), or none when it
                 * is not known yet: then the policy takes nothing for the home. */
                if (sandbox_home(sb))
                        json_object_set_new(env, "HOME", json_string(sandbox_home(sb)));
                else
                        json_object_del(env, "HOME");
                json_object_update(env, sb->env);
        }
        if (exec_env)
                json_object_update(env, exec_env);
        return env;
}

/* envp (new, NULL-terminated) from an object of strings. */
static char **
proc_envp(json_t *env)
{
        char **envp = xcalloc(json_object_size(env) + 1, sizeof(*envp));
        const char *k;
        json_t *v;
        size_t i = 0;

        json_object_foreach(env, k, v) envp[i++] = xasprintf("%s=%s", k, json_string_value(v));
        return envp;
}

static void
proc_strv_free(char **v)
{
        shell_argv_free(v);
}

static char **
proc_argv_plain(struct proc *p)
{
        char **argv = xcalloc(json_array_size(p->argv) + 1, sizeof(*argv));
        size_t i;
        json_t *a;

        json_array_foreach(p->argv, i, a) argv[i] = xstrdup(json_string_value(a));
        return argv;
}

/* The directory a command in sb starts in: cwd if given, else the sandbox's current one. */
static const char *
proc_cwd_in(const struct sandbox *sb, const char *cwd)
{
        if (cwd)
                return cwd;
        return sb->cwd ? sb->cwd : sb->workdir;
}

/* argv and *envp (both new) of p, the program when it is not argv[0] (borrowed), and where
 * its shell state is written (borrowed, NULL: nowhere). A command exec whose state is read
 * back keeps the env it starts from. */
static char **
proc_build_exec(struct proc *p, char ***envp, const char **path, const char **state)
{
        json_t *base = proc_exec_env(p->sb, NULL, p->pty), *env = json_copy(base);
        char **argv;

        if (p->env)
                json_object_update(env, p->env);
        *path = NULL;
        *state = p->state_path;
        if (p->command)
                argv = shellstate_argv(p->sb, p->command, state, env, path);
        else
                argv = proc_argv_plain(p);
        *envp = proc_envp(env);
        json_decref(p->shell_base);
        p->shell_base = *state ? json_incref(base) : NULL;
        json_decref(base);
        json_decref(env);
        return argv;
}

static const char *
proc_effective_cwd(struct proc *p)
{
        return proc_cwd_in(p->sb, p->cwd);
}

/* Tells the requester which process its exec became, before any of its output (protocol §10):
 * a client can route live output and kill a foreground exec by its id. */
static void
proc_send_started(struct proc *p)
{
        json_t *params;

        if (p->started_sent || !p->req || conn_closing(p->req->conn))
                return;
        p->started_sent = true;
        params = json_pack("{s:s,s:s}", "exec_id", p->id, "sandbox", p->sb->id);
        if (p->req->id)
                json_object_set(params, "request_id", p->req->id);
        if (p->tag)
                json_object_set_new(params, "tag", json_string(p->tag));
        conn_notify(p->req->conn, "exec.started", params);
}

void
proc_start(struct proc *p)
{
        static const struct backend_exec_cbs cbs = {proc_output_cb, proc_exit_cb};
        struct sbx_error err = {0};
        struct exec_spec spec = {0};
        char **argv, **envp;
        int r;

        if (p->sb->state == SANDBOX_CREATING && p->sb->recreating) {
                proc_wait_recreate(p);
                return;
        }
        if (p->sb->state != SANDBOX_READY || (p->req && conn_closing(p->req->conn))) {
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "exec '%s' was not started: %s", p->id,
                              p->sb->state != SANDBOX_READY ? "its sandbox was destroyed"
                                                            : "the client disconnected");
                proc_fail(p, &err);
                return;
        }
        p->state = PROC_STARTING;
        p->ops = p->sb->ops;
        /* A retry after a recreate holds the shell already. */
        if (p->command && !p->background && !p->holds_shell) {
                if (p->sb->shell_busy) {
                        proc_ref(p);
                        list_add_tail(&p->sb->shell_queue, &p->qnode);
                        return;
                }
                p->sb->shell_busy = true;
                p->holds_shell = true;
                p->state_path = shellstate_path(p->sb, p->key, &err);
                if (!p->state_path) {
                        proc_fail(p, &err);
                        return;
                }
        }
        argv = proc_build_exec(p, &envp, &spec.path, &spec.state_path);
        spec.exec_id = p->key;
        spec.argv = argv;
        spec.envp = envp;
        spec.cwd = proc_effective_cwd(p);
        spec.pty = p->pty;
        spec.pty_rows = p->rows;
        spec.pty_cols = p->cols;
        spec.stdin_open = p->stdin_open;
        spec.stdin_data = p->stdin_data.data;
        spec.stdin_len = p->stdin_data.len;
        spec.merge_stderr = p->merge;
        spec.who = &p->sb->who;
        p->start_ns = util_now_ns();
        p->started_wall = util_wall_ms();
        proc_send_started(p);
        proc_ref(p); /* the backend's, dropped in proc_exit_cb */
        r = p->ops->exec_start(p->sb->bsb, &spec, &cbs, p, &p->bp, &err);
        proc_strv_free(argv);
        proc_strv_free(envp);
        if (r < 0) {
                proc_unref(p);
                if (!err.code)
                        sbx_error_backend(&err, p->ops->name, "cannot start: %s", strerror(-r));
                if ((!p->cwd && shellstate_cwd_gone(p->sb, &err, &p->cwd_lost)) ||
                    (p->command && shellstate_shell_gone(p->sb, &err))) {
                        /* Its inherited cwd was removed: one directory up (depth-bounded);
                         * or the container's shell went: pick again (once). */
                        sbx_error_clear(&err);
                        proc_start(p);
                        return;
                }
                if (proc_may_recreate(p, &err)) {
                        /* stdin_data is kept for the retry. */
                        sbx_error_clear(&err);
                        proc_wait_recreate(p);
                        return;
                }
                proc_fail(p, &err);
                return;
        }
        buf_free(&p->stdin_data);
        p->state = PROC_RUNNING;
        p->stdin_closed = !p->stdin_open;
        proc_flush_parked(p);
        proc_start_persist(p);
        if (p->timeout_ms)
                uv_timer_start(&p->timer, proc_timeout_cb, p->timeout_ms, 0);
        if (p->background && p->req) {
                json_t *res = json_pack("{s:s,s:b,s:s,s:o}", "exec_id", p->id, "background", 1,
                                        "sandbox", p->sb->id, "policy", proc_policy_json(p));
                if (p->recreated)
                        json_object_set_new(res, "sandbox_recreated", json_true());
                rpc_result(p->req, res);
                p->req = NULL;
        }
}

static void
proc_approval_cb(void *ctx, bool allowed, const char *resolution)
{
        struct proc *p = ctx;
        struct sbx_error err = {0};

        p->resolution = resolution;
        if (!allowed) {
                approval_deny_error(&err, &p->pr, resolution, p->req ? p->req->conn : NULL);
                proc_fail(p, &err);
                proc_unref(p);
                return;
        }
        if (p->sb->state != SANDBOX_READY) {
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "sandbox '%s' is no longer usable", p->sb->id);
                proc_fail(p, &err);
                proc_unref(p);
                return;
        }
        proc_start(p);
        proc_unref(p);
}

/* Fills ctx to judge a command in sb as an exec with this cwd (NULL: the sandbox's) and env
 * (borrowed, may be NULL) would run; *env (new) is the environment the command starts with,
 * for the caller to release after the evaluation. */
void
proc_policy_ctx(struct sandbox *sb, const char *cwd, json_t *exec_env, struct policy_ctx *ctx,
                json_t **env)
{
        *env = proc_exec_env(sb, exec_env, false);
        ctx->backend = sb->ops->name;
        ctx->host_access = sb->host_access;
        ctx->cwd = proc_cwd_in(sb, cwd);
        ctx->home = sandbox_home(sb);
        ctx->home_unknown = !ctx->home;
        ctx->env = *env;
        /* on the host the exec gets exactly this environment; an image adds its own */
        ctx->env_complete = (sb->caps & BACKEND_CAP_EXACT_ENV) != 0;
        ctx->request_env = exec_env;
        ctx->protected_paths = g.protected_paths;
        ctx->workspace = sb->workdir;
        ctx->daemon_pid = (long) getpid();
        sandbox_policy_resolve_as(ctx, &sb->who);
}

/* One judgement of the exec (hostpaths_eval_fn): with host_paths as policy_ctx's. */
static void
proc_judge_eval(void *ctx, json_t *host_paths, json_t *wanted, struct policy_result *r)
{
        struct proc *p = ctx;
        struct policy_ctx pctx = {0};
        json_t *env;

        proc_policy_ctx(p->sb, p->cwd, p->env, &pctx, &env);
        pctx.stdin_data = p->stdin_data.data;
        pctx.stdin_len = p->stdin_data.len;
        pctx.stdin_open = p->stdin_open;
        pctx.host_paths = host_paths;
        pctx.host_paths_wanted = wanted;
        if (p->command) {
                policy_eval_command(g.policy, &pctx, p->command, r);
        } else {
                char **argv = proc_argv_plain(p);
                policy_eval_argv(g.policy, &pctx, argv, r);
                proc_strv_free(argv);
        }
        json_decref(env);
}

/* The judgement (with the host paths it names resolved): approval next. */
static void
proc_judged(void *ctx, struct policy_result *r, json_t *paths, struct sbx_error *herr)
{
        struct proc *p = ctx;
        struct sbx_error err = {0};
        const char *cwd = proc_cwd_in(p->sb, p->cwd);
        json_t *info;

        if (p->state != PROC_POLICY) { /* it failed meanwhile (the daemon stops) */
                proc_unref(p);
                return;
        }
        if (herr) {
                hostpaths_fail(&err, herr, p->sb->ops->name, "the command");
                proc_fail(p, &err);
                sbx_error_clear(&err);
                proc_unref(p);
                return;
        }
        p->pr = *r;
        memset(r, 0, sizeof(*r)); /* p->pr has it now */
        p->state = PROC_APPROVAL;
        info = json_pack("{s:s,s:s,s:s}", "kind", "exec", "sandbox", p->sb->id, "backend",
                         p->sb->ops->name);
        if (p->command)
                json_object_set_new(info, "command", json_string(p->command));
        else
                json_object_set(info, "argv", p->argv);
        if (cwd)
                json_object_set_new(info, "cwd", json_text(cwd));
        approval_decide(p->req ? p->req->conn : NULL, p->sb, p->sb->host_access, info, &p->pr,
                        proc_approval_cb, p);
}

/* Judges the exec: the host paths it names (`docker run -v SRC:…`) are resolved first, as its
 * owner, off the loop (hostpaths.h). */
static void
proc_judge(struct proc *p)
{
        p->state = PROC_POLICY;
        proc_ref(p); /* until approval_decide's callback */
        hostpaths_judge(p->req ? p->req->conn : NULL, &p->sb->who, proc_judge_eval, proc_judged, p);
}

void
proc_sandbox_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct proc *p = ctx;

        if (err) {
                struct sbx_error e = {0};
                sbx_error_move(&e, err);
                sbx_error_prefix(&e, "default sandbox");
                /* No sandbox: pretend it never existed. */
                proc_set_ended(p, PROC_FAILED);
                proc_drop_subs(p);
                proc_fail_waiters(p, &e);
                proc_flush_parked(p);
                rpc_error(p->req, &e);
                p->req = NULL;
                list_del(&p->node);
                list_init(&p->node);
                uv_close((uv_handle_t *) &p->timer, proc_timer_close_cb);
                return;
        }
        p->sb = sb;
        sandbox_ref(sb);
        sb->running++;
        sandbox_touch(sb);
        proc_judge(p);
}
