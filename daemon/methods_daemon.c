/* methods_daemon.c — daemon.hello, daemon.info, backend.list, policy.check, policy.reload. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/audit.h"
#include "daemon/daemon.h"
#include "daemon/hostpaths.h"
#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/probe_view.h"
#include "daemon/proc.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_policy.h"
#include "daemon/server.h"
#include "protocol/params.h"
#include "protocol/util.h"

static const char *const roles[] = {"interactive", "subagent", "batch", NULL};

static json_t *
backend_names(void)
{
        json_t *a = json_array();

        for (const struct backend_ops *const *b = backend_all(); *b; b++)
                json_array_append_new(a, json_string((*b)->name));
        return a;
}

/* How ASK verdicts will be settled on c: "ask" | "deny" | "approve" (see approval_quick). */
static const char *
hello_approval(struct conn *c)
{
        bool listed = false;

        switch (conn_role(c)) {
        case CONN_ROLE_INTERACTIVE:
                return "ask";
        case CONN_ROLE_SUBAGENT:
                return g.config->subagent_auto_approve && !conn_confined(c) ? "approve" : "deny";
        case CONN_ROLE_BATCH:
                break;
        }
        for (size_t i = 0; i < g.config->nbatch_auto_approve_uids; i++)
                listed |= g.config->batch_auto_approve_uids[i] == conn_uid(c);
        return conn_auto_approve(c) && listed ? "approve" : "deny";
}

/* daemon.hello */
void
method_daemon_hello(struct rpc_req *req)
{
        static const char *const keys[] = {"client", "role", "auto_approve", "protocol", NULL};
        struct sbx_error err = {0};
        const char *client = NULL;
        int role = 0;
        bool auto_approve = false;
        int64_t proto = 1;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "client", 256, &client, &err) < 0 ||
            params_enum(req->params, "role", roles, &role, &err) < 0 ||
            params_bool(req->params, "auto_approve", &auto_approve, &err) < 0 ||
            params_int(req->params, "protocol", 1, 1, &proto, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (auto_approve && role != CONN_ROLE_BATCH) {
                sbx_error_param(&err, "auto_approve",
                                "invalid params: 'auto_approve' is only for role \"batch\"");
                rpc_error(req, &err);
                return;
        }
        if (!conn_set_role(req->conn, (enum conn_role) role, auto_approve, client)) {
                rpc_error_msg(req, SBX_E_INVALID_REQUEST,
                              "invalid request: daemon.hello was sent on this connection already "
                              "(role \"%s\"); the role is set once: open another connection "
                              "for another role",
                              roles[conn_role(req->conn)]);
                return;
        }
        role = (int) conn_role(req->conn);
        rpc_result(req, json_pack("{s:s,s:s,s:i,s:s,s:s,s:o,s:b}", "server", "sandboxd", "version",
                                  SANDBOXD_VERSION, "protocol", 1, "role", roles[role], "approval",
                                  hello_approval(req->conn), "backends", backend_names(),
                                  "in_sandbox", conn_confined(req->conn)));
}

/* Collects probe answers for backend.list / daemon.info. */
struct probe_all {
        struct rpc_req *req;
        json_t *list;
        unsigned pending;
        bool info;
};

struct probe_one {
        struct probe_all *all;
        size_t index;
};

/* daemon.info without the backends. The counts are the daemon's for root and its owner, and
 * the caller's own for anyone else: how busy other users are is none of their business. */
static json_t *
daemon_info_json(uid_t uid)
{
        bool all = daemon_is_admin(uid);

        return json_pack("{s:s,s:i,s:i,s:I,s:o,s:i,s:i,s:i,s:i,s:I,s:s,s:{s:I,s:s},s:s}", "version",
                         SANDBOXD_VERSION, "protocol", 1, "pid", (int) getpid(), "uptime_s",
                         (json_int_t) ((util_now_ms() - g.started_ms) / 1000), "socket",
                         g.socket_path ? json_string(g.socket_path) : json_null(), "connections",
                         (int) (all ? conn_count() : conn_count_uid(uid)), "sandboxes",
                         (int) (all ? sandbox_count() : sandbox_count_uid(uid)), "processes",
                         (int) (all ? proc_running_count() : proc_running_uid(uid)), "waiting",
                         (int) proc_waiting_uid(all ? (uid_t) -1 : uid), "input_bytes",
                         (json_int_t) conn_input_bytes(all ? (uid_t) -1 : uid), "counts",
                         all ? "daemon" : "caller", "policy", "rules",
                         (json_int_t) policy_rule_count(g.policy), "sha256",
                         policy_sha256(g.policy), "state_dir", g.state_dir);
}

static void
probe_done(struct probe_all *a)
{
        if (a->info) {
                json_t *r = daemon_info_json(conn_uid(a->req->conn));
                json_object_set_new(r, "backends", a->list);
                if (g.policy_error)
                        json_object_set_new(json_object_get(r, "policy"), "error",
                                            json_string(g.policy_error));
                json_object_set_new(r, "audit",
                                    json_pack("{s:s?,s:I}", "path", audit_path(), "errors",
                                              (json_int_t) audit_errors()));
                rpc_result(a->req, r);
        } else {
                rpc_result(a->req, json_pack("{s:o}", "backends", a->list));
        }
        free(a);
}

/* What applies to the caller for docker (details.caller). */
static void
probe_docker_caller(struct probe_all *a, json_t *details)
{
        struct backend_identity who;

        sandbox_identity(a->req->conn, &who);
        json_object_set_new(details, "caller", sandbox_policy_docker_caller(&who, details));
        sandbox_identity_free(&who);
}

/* The reason and hint of an unavailable backend: the operator's for root and the daemon's
 * owner, the public ones (probe_view.h) for anyone else. Takes "public" out of details. */
static void
probe_reason(struct probe_all *a, json_t *e, const char *reason, const char *hint, json_t *details)
{
        json_t *pub = json_incref(json_object_get(details, "public"));
        char *r = NULL, *h = NULL;

        json_object_del(details, "public");
        if (reason && !daemon_is_admin(conn_uid(a->req->conn))) {
                probe_view_reason(json_string_value(json_object_get(e, "name")), pub, &r, &h);
                reason = r;
                hint = h;
        }
        if (reason)
                json_object_set_new(e, "reason", json_string(reason));
        if (reason && hint)
                json_object_set_new(e, "hint", json_string(hint));
        json_decref(pub);
        free(r);
        free(h);
}

static void
probe_cb(void *ctx, bool available, const char *reason, const char *hint, json_t *details)
{
        struct probe_one *o = ctx;
        struct probe_all *a = o->all;
        json_t *e = json_array_get(a->list, o->index);

        if (!details)
                details = json_object();
        json_object_set_new(e, "available", json_boolean(available));
        probe_reason(a, e, available ? NULL : reason, hint, details);
        if (!daemon_is_admin(conn_uid(a->req->conn))) {
                const char *name = json_string_value(json_object_get(e, "name"));
                json_t *shown = probe_view_details(name, details);
                json_decref(details);
                details = shown;
        }
        /* What the operator accepts beyond the container checks' allowlist. */
        json_t *op = sandbox_policy_operator(json_string_value(json_object_get(e, "name")));
        if (op)
                json_object_set_new(details, "spec_policy", op);
        if (!strcmp(json_string_value(json_object_get(e, "name")), "docker"))
                probe_docker_caller(a, details);
        json_object_set_new(e, "details", details);
        free(o);
        if (--a->pending == 0)
                probe_done(a);
}

static void
probe_start(struct rpc_req *req, bool info)
{
        struct probe_all *a = xcalloc(1, sizeof(*a));
        size_t i = 0;

        a->req = req;
        a->list = json_array();
        a->info = info;
        a->pending = 1;
        for (const struct backend_ops *const *b = backend_all(); *b; b++, i++) {
                struct probe_one *o = xcalloc(1, sizeof(*o));
                json_array_append_new(a->list, json_pack("{s:s}", "name", (*b)->name));
                o->all = a;
                o->index = i;
                a->pending++;
                (*b)->probe(o, probe_cb);
        }
        if (--a->pending == 0)
                probe_done(a);
}

/* daemon.info */
void
method_daemon_info(struct rpc_req *req)
{
        static const char *const keys[] = {NULL};
        struct sbx_error err = {0};

        if (params_known(req->params, keys, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        probe_start(req, true);
}

/* backend.list */
void
method_backend_list(struct rpc_req *req)
{
        static const char *const keys[] = {NULL};
        struct sbx_error err = {0};

        if (params_known(req->params, keys, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        probe_start(req, false);
}

/* backend.cache {backend, prune?, all?}: a backend's image cache, listed or pruned (root and
 * the daemon's owner: the cache is the daemon user's). */
void
method_backend_cache(struct rpc_req *req)
{
        static const char *const keys[] = {"backend", "prune", "all", NULL};
        struct sbx_error err = {0};
        const struct backend_ops *ops;
        const char *name = NULL;
        bool prune = false, all = false;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "backend", 64, &name, &err) < 0 ||
            params_bool(req->params, "prune", &prune, &err) < 0 ||
            params_bool(req->params, "all", &all, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (!daemon_is_admin(conn_uid(req->conn))) {
                rpc_error_msg(req, SBX_E_PERMISSION,
                              "permission denied: only root and the daemon's owner may see or "
                              "prune a backend's cache");
                return;
        }
        ops = name ? backend_lookup(name) : NULL;
        if (!ops || !ops->cache) {
                sbx_error_param(&err, "backend",
                                "invalid params: 'backend' must name a backend with an image "
                                "cache (singularity)");
                rpc_error(req, &err);
                return;
        }
        rpc_result(req, ops->cache(prune, all));
}

/* The answer of policy.check: the verdict, or -32602 for a spec that cannot be judged. Clears
 * r. */
static void
policy_check_reply(struct rpc_req *req, struct policy_result *r, bool host_access)
{
        if (r->invalid.code)
                rpc_error(req, &r->invalid);
        else
                rpc_result(req,
                           json_pack("{s:s,s:o,s:b}", "verdict", policy_verdict_name(r->verdict),
                                     "findings", policy_findings_json(r), "host_access",
                                     r->host_access || host_access));
        policy_result_clear(r);
}

/* ---- policy.check: judged in the context an exec would be ---- */

struct check_args {
        const char *command, *backend, *cwd, *sbname, *stdin_text;
        json_t *argv, *spec, *env;
};

static int
check_parse(json_t *params, struct check_args *a, struct sbx_error *err)
{
        static const char *const keys[] = {"command", "argv", "sandbox", "backend",
                                           "cwd",     "env",  "stdin",   NULL};
        json_t *sb = json_object_get(params, "sandbox");

        if (params_known(params, keys, err) < 0 ||
            params_str(params, "command", 1 << 20, &a->command, err) < 0 ||
            params_str_array(params, "argv", 4096, &a->argv, err) < 0 ||
            (json_is_string(sb) ? params_str(params, "sandbox", 256, &a->sbname, err)
                                : params_obj(params, "sandbox", &a->spec, err)) < 0 ||
            params_str(params, "backend", 64, &a->backend, err) < 0 ||
            params_str(params, "cwd", 4096, &a->cwd, err) < 0 ||
            params_str_map(params, "env", 4096, &a->env, err) < 0 ||
            params_str(params, "stdin", g.config->max_stdin_bytes, &a->stdin_text, err) < 0)
                return -1;
        if (!!a->command + !!a->argv + !!a->spec != 1) {
                sbx_error_param(err, "command",
                                "invalid params: give exactly one of 'command', 'argv' or "
                                "'sandbox' (a sandbox.create spec); 'sandbox' as a string names "
                                "the sandbox a command would run in");
                return -1;
        }
        return 0;
}

static void
check_eval(const struct check_args *a, const struct policy_ctx *ctx, struct policy_result *r)
{
        if (a->command) {
                policy_eval_command(g.policy, ctx, a->command, r);
        } else if (a->argv) {
                size_t i, n = json_array_size(a->argv);
                char **v = xcalloc(n + 1, sizeof(*v));
                for (i = 0; i < n; i++)
                        v[i] = (char *) json_string_value(json_array_get(a->argv, i));
                policy_eval_argv(g.policy, ctx, v, r);
                free(v);
        } else {
                policy_eval_sandbox(g.policy, ctx, a->spec, NULL, r);
        }
}

/* A command judged in a sandbox with its host paths resolved first (hostpaths.h). */
struct check_in_job {
        struct rpc_req *req;
        struct check_args a; /* borrowed from req->params */
        struct sandbox *sb;  /* referenced */
        bool host_access;    /* the last judgement's */
};

static void
check_in_eval(void *ctx, json_t *host_paths, json_t *wanted, struct policy_result *r)
{
        struct check_in_job *j = ctx;
        struct policy_ctx pctx = {0};
        json_t *env;

        proc_policy_ctx(j->sb, j->a.cwd, j->a.env, &pctx, &env);
        if (j->a.stdin_text) {
                pctx.stdin_data = j->a.stdin_text;
                pctx.stdin_len = strlen(j->a.stdin_text);
        }
        pctx.host_paths = host_paths;
        pctx.host_paths_wanted = wanted;
        check_eval(&j->a, &pctx, r);
        j->host_access = pctx.host_access;
        json_decref(env);
}

static void
check_in_judged(void *ctx, struct policy_result *r, json_t *paths, struct sbx_error *herr)
{
        struct check_in_job *j = ctx;
        struct sbx_error err = {0};

        if (herr) {
                hostpaths_fail(&err, herr, j->sb->ops->name, "the command");
                rpc_error(j->req, &err);
        } else {
                policy_check_reply(j->req, r, j->host_access);
        }
        sandbox_unref(j->sb);
        free(j);
}

/* Answers with the judgement of a command as an exec in sb (with the request's cwd, env and
 * stdin) would be judged: proc_policy_ctx is the exec's own. */
static void
check_in(struct rpc_req *req, const struct check_args *a, struct sandbox *sb)
{
        struct check_in_job *j = xcalloc(1, sizeof(*j));

        *j = (struct check_in_job){.req = req, .a = *a, .sb = sb};
        sandbox_ref(sb);
        hostpaths_judge(req->conn, &sb->who, check_in_eval, check_in_judged, j);
}

/* A spec judged with its host paths resolved first, as the caller, off the loop. */
struct check_spec_job {
        struct rpc_req *req;
        struct check_args a; /* borrowed from req->params */
        struct backend_identity who;
        struct policy_ctx ctx; /* the last judgement's */
};

static void
check_spec_eval(void *ctx, json_t *host_paths, json_t *wanted, struct policy_result *r)
{
        struct check_spec_job *j = ctx;
        const struct check_args *a = &j->a;
        const char *backend =
                a->backend ? a->backend : json_string_value(json_object_get(a->spec, "backend"));

        sandbox_policy_ctx(&j->ctx, backend ? backend : g.config->default_backend, &j->who,
                           a->spec);
        j->ctx.request_env = a->env;
        j->ctx.host_paths = host_paths;
        j->ctx.host_paths_wanted = wanted;
        check_eval(a, &j->ctx, r);
}

static void
check_spec_judged(void *ctx, struct policy_result *r, json_t *paths, struct sbx_error *herr)
{
        struct check_spec_job *j = ctx;
        struct sbx_error err = {0};

        if (herr) {
                hostpaths_fail(&err, herr, j->ctx.backend, "the sandbox spec");
                rpc_error(j->req, &err);
        } else {
                /* What the backend refuses before making anything is the create's answer too. */
                if (!r->invalid.code && r->verdict != POLICY_DENY &&
                    sandbox_preview_spec(j->req->conn, j->ctx.backend, j->a.spec, &err) < 0)
                        sbx_error_move(&r->invalid, &err);
                policy_check_reply(j->req, r, j->ctx.host_access);
        }
        sandbox_identity_free(&j->who);
        free(j);
}

/* Answers with the judgement of a sandbox.create spec as sandbox.create would judge it for
 * this caller (but without inspecting named volumes and containers: those are judged by the
 * request). */
static void
check_spec(struct rpc_req *req, const struct check_args *a)
{
        struct check_spec_job *j = xcalloc(1, sizeof(*j));

        j->req = req;
        j->a = *a;
        sandbox_identity(req->conn, &j->who);
        hostpaths_judge(req->conn, &j->who, check_spec_eval, check_spec_judged, j);
}

struct check_job {
        struct rpc_req *req;
        struct check_args a; /* borrowed from req->params */
};

static void
check_preview_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct check_job *j = ctx;

        if (err)
                rpc_error(j->req, err);
        else
                check_in(j->req, &j->a, sb);
        free(j);
}

/* policy.check: in the named sandbox, the caller's default sandbox, or, before that exists,
 * in what sandbox_default would make (sandbox_preview_default: nothing is made). */
void
method_policy_check(struct rpc_req *req)
{
        struct check_args a = {0};
        struct sbx_error err = {0};
        struct check_job *j;
        struct sandbox *sb;

        if (check_parse(req->params, &a, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (a.spec) {
                check_spec(req, &a);
                return;
        }
        sb = sandbox_find(conn_uid(req->conn), a.sbname ? a.sbname : "default");
        if (a.sbname && (!sb || sb->state != SANDBOX_READY)) {
                rpc_error_msg(req, SBX_E_NO_SANDBOX,
                              "sandbox '%s' not found or not ready (sandbox.list shows yours)",
                              a.sbname);
        } else if (sb && sb->state == SANDBOX_READY &&
                   (!a.backend || !strcmp(a.backend, sb->ops->name))) {
                check_in(req, &a, sb);
        } else if (a.sbname) {
                sbx_error_param(&err, "backend",
                                "invalid params: sandbox '%s' uses backend '%s', not '%s'",
                                a.sbname, sb->ops->name, a.backend);
                rpc_error(req, &err);
        } else {
                j = xcalloc(1, sizeof(*j));
                *j = (struct check_job){.req = req, .a = a};
                sandbox_preview_default(req->conn, a.backend, check_preview_cb, j);
        }
}

/* policy.reload */
void
method_policy_reload(struct rpc_req *req)
{
        static const char *const keys[] = {NULL};
        struct sbx_error err = {0};

        if (params_known(req->params, keys, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (!daemon_is_admin(conn_uid(req->conn))) {
                rpc_error_msg(req, SBX_E_PERMISSION,
                              "permission denied: only root and the daemon's owner may reload "
                              "the policy");
                return;
        }
        if (server_reload_policy(&err) < 0) {
                rpc_error(req, &err);
                return;
        }
        rpc_result(req, json_pack("{s:I,s:s}", "rules", (json_int_t) policy_rule_count(g.policy),
                                  "sha256", policy_sha256(g.policy)));
}
