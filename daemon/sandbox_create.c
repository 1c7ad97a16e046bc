/* sandbox_create.c — a create in progress: judgement, approval, the backend's create and its
 * cancellation when the client goes; sandbox.create and the default sandbox. */

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/approval.h"
#include "daemon/daemon.h"
#include "daemon/hostpaths.h"
#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/records.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "daemon/sandbox_policy.h"
#include "protocol/util.h"

/* A create of sb for conn (may be NULL: adopt and recreate have none). */
struct sandbox_create *
sandbox_create_new(struct sandbox *sb, struct conn *c)
{
        struct sandbox_create *sc = xcalloc(1, sizeof(*sc));

        sc->sb = sb;
        sandbox_ref(sb);
        sc->conn = c;
        if (c)
                conn_ref(c);
        list_init(&sc->link);
        list_init(&sc->watch.node);
        return sc;
}

/* The client that asked is gone: nobody waits for this sandbox, whatever it made goes. */
static void
sandbox_create_conn_closed_cb(struct conn_watch *w)
{
        struct sandbox_create *sc = LIST_ENTRY(w, struct sandbox_create, watch);

        list_init(&w->node); /* unlinked by conn already */
        if (!sc->sb->ops->cancel)
                return;
        log_info("sandbox %s: its client disconnected while it was being created: cancelling",
                 sc->sb->id);
        sc->sb->ops->cancel(sc);
}

/* The backend is now creating (or adopting) for sc: it can be cancelled. */
void
sandbox_in_backend_add(struct sandbox_create *sc)
{
        list_del(&sc->link);
        list_add_tail(&sandbox_in_backend, &sc->link);
        if (sc->conn && list_empty(&sc->watch.node)) {
                sc->watch.on_close = sandbox_create_conn_closed_cb;
                conn_watch_add(sc->conn, &sc->watch);
        }
}

static void
sandbox_create_free(struct sandbox_create *sc)
{
        list_del(&sc->link);
        conn_watch_del(&sc->watch);
        if (sc->ended)
                sc->ended(sc->ended_ctx);
        policy_result_clear(&sc->pr);
        json_decref(sc->facts);
        json_decref(sc->host_paths);
        if (sc->conn) /* adopt and recreate have no connection */
                conn_unref(sc->conn);
        sandbox_unref(sc->sb);
        free(sc);
}

/* A sandbox whose create failed or was cancelled, or that was destroyed, leaves no state
 * directory: the daemon removes what it made there (shell/, the caller's, only when empty:
 * never a tree the caller controls with the daemon's rights), after its backend is done. A
 * workdir a backend made there is the backend's to remove as its owner; the directory stays
 * while that runs. A failed recreate (adopted sandboxes) keeps it. */
void
sandbox_remove_state_dir(struct sandbox *sb)
{
        char *shell;

        if (!sb->state_dir)
                return;
        shell = xasprintf("%s/shell", sb->state_dir);
        if ((rmdir(shell) < 0 && errno != ENOENT) || rmdir(sb->state_dir) < 0)
                log_warn("sandbox %s: state directory '%s' left: %s", sb->id, sb->state_dir,
                         strerror(errno));
        free(shell);
}

/* Ends sc with err: the sandbox is gone, its waiters told. */
void
sandbox_create_fail(struct sandbox_create *sc, struct sbx_error *err)
{
        struct sandbox *sb = sc->sb;

        if (sc->conn && !sb->recreating)
                sandbox_remove_state_dir(sb);

        sb->state = SANDBOX_GONE;
        log_info("sandbox %s ('%s', uid %u): %s failed: %s", sb->id, sb->name, (unsigned) sb->owner,
                 sb->recreating ? "recreate" : "create", err->message);
        sb->recreating = false;
        sandbox_notify_waiters(sb, err);
        sandbox_unref(sb); /* the registry's reference */
        sandbox_create_free(sc);
        records_save();
}

static void
sandbox_progress_cb(void *ctx, const char *phase, const char *message, int64_t current,
                    int64_t total)
{
        struct sandbox_create *sc = ctx;
        json_t *p;

        if (!sc->conn)
                return;
        p = json_pack("{s:s,s:s,s:s}", "sandbox", sc->sb->id, "phase", phase, "message",
                      message ? message : "");

        if (current >= 0)
                json_object_set_new(p, "current", json_integer(current));
        if (total >= 0)
                json_object_set_new(p, "total", json_integer(total));
        conn_notify(sc->conn, "sandbox.progress", p);
}

/* The backend's create (or adopt) is done: the sandbox is ready, or sc fails. */
void
sandbox_created_cb(void *ctx, struct backend_sandbox *bsb, const struct sandbox_info *info,
                   const struct sbx_error *berr)
{
        struct sandbox_create *sc = ctx;
        struct sandbox *sb = sc->sb;
        struct sbx_error err = {0};

        if (berr || !bsb) {
                sbx_error_set(&err, berr ? berr->code : SBX_E_BACKEND,
                              berr ? json_incref(berr->data) : NULL, "%s",
                              berr ? berr->message : "backend failed");
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sb->bsb = bsb;
        sb->state = SANDBOX_READY;
        if (info->workdir) {
                free(sb->workdir);
                sb->workdir = xstrdup(info->workdir);
        }
        free(sb->home); /* a recreate's may differ */
        sb->home = info->home ? xstrdup(info->home) : NULL;
        if (info->image) {
                free(sb->image);
                sb->image = xstrdup(info->image);
        }
        sb->host_access = sb->host_access || info->host_access;
        json_decref(sb->enforced); /* a recreate replaces them */
        json_decref(sb->details);
        sb->enforced = info->enforced ? json_incref(info->enforced) : NULL;
        sb->details = info->details ? json_incref(info->details) : NULL;
        free(sb->runtime_dir);
        sb->runtime_dir = info->runtime_dir ? xstrdup(info->runtime_dir) : NULL;
        free(sb->isolation);
        sb->isolation = info->isolation ? xstrdup(info->isolation) : NULL;
        sb->recreated = info->recreated;
        sb->link = NULL;
        if (sb->recreating) {
                /* A new container: the shell it had is gone with the old one. */
                free(sb->cwd);
                sb->cwd = NULL;
                json_decref(sb->shell_env);
                sb->shell_env = NULL;
                sb->shell_kind = SHELL_PICK;
        }
        sandbox_touch(sb);
        log_info("sandbox %s ('%s', %s, uid %u) %s", sb->id, sb->name, sb->ops->name,
                 (unsigned) sb->owner, sb->recreating ? "recreated" : "ready");
        sb->recreating = false;
        records_save();
        sandbox_notify_waiters(sb, NULL);
        sandbox_create_free(sc);
}

/* The shell wrapper of a local exec runs as the caller and leaves its state file in
 * <sandbox state dir>/shell, which the caller owns. The directories above it are traverse-only
 * (0711) for others when the daemon is root: nothing in them can be listed or read. */
static int
sandbox_make_shell_dir(struct sandbox *sb, struct sbx_error *err)
{
        char *shell = xasprintf("%s/shell", sb->state_dir);
        char *parent = xasprintf("%s/sandboxes", g.state_dir);
        int r = 0;

        if (mkdir(shell, 0700) < 0 && errno != EEXIST)
                r = -errno;
        else if (geteuid() == 0 && sb->owner != 0 &&
                 (chown(shell, sb->owner, sb->who.gid) < 0 || chmod(sb->state_dir, 0711) < 0 ||
                  chmod(parent, 0711) < 0 || chmod(g.state_dir, 0711) < 0))
                r = -errno;
        if (r < 0)
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot prepare '%s': %s", shell,
                              strerror(-r));
        free(shell);
        free(parent);
        return r;
}

static int
sandbox_make_state_dir(struct sandbox *sb, struct sbx_error *err)
{
        char *dir = xasprintf("%s/sandboxes", g.state_dir);

        free(sb->state_dir); /* set already when adopted or recreated */
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot create '%s': %s", dir,
                              strerror(errno));
                free(dir);
                return -1;
        }
        sb->state_dir = xasprintf("%s/%s", dir, sb->id);
        free(dir);
        if (mkdir(sb->state_dir, 0700) < 0 && errno != EEXIST) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot create '%s': %s", sb->state_dir,
                              strerror(errno));
                return -1;
        }
        return sandbox_make_shell_dir(sb, err);
}

/* A backend's word about the link of a ready sandbox: shown as its state, told to the owner. */
static void
sandbox_link_cb(void *up_ctx, enum backend_link st, const char *reason)
{
        static const char *const states[] = {
                [BACKEND_LINK_LOST] = "reconnecting",
                [BACKEND_LINK_RECONNECTING] = "reconnecting",
                [BACKEND_LINK_BACK] = NULL,
                [BACKEND_LINK_GONE] = "lost",
        };
        struct sandbox *sb = up_ctx;
        const char *state = states[st];
        json_t *n;

        if (sb->state != SANDBOX_READY || state == sb->link)
                return;
        sb->link = state;
        free(sb->link_reason);
        sb->link_reason = reason ? xstrdup(reason) : NULL;
        log_info("sandbox %s ('%s', %s): %s%s%s", sb->id, sb->name, sb->ops->name,
                 state ? state : "link restored", reason ? ": " : "", reason ? reason : "");
        n = json_pack("{s:s,s:s}", "sandbox", sb->id, "state", state ? state : "ready");
        if (reason)
                json_object_set_new(n, "reason", json_string(reason));
        conn_notify_uid(sb->owner, "sandbox.state", n);
}

static const struct backend_upcalls sandbox_upcalls = {.link = sandbox_link_cb};

/* The fields of a backend's spec that come from sb's own (strings borrowed from it). */
void
sandbox_spec_fields(struct sandbox *sb, struct sandbox_spec *s)
{
        json_t *res = json_object_get(sb->spec, "resources");

        s->id = sb->id;
        s->name = sb->name;
        s->image = json_string_value(json_object_get(sb->spec, "image"));
        s->workdir = json_string_value(json_object_get(sb->spec, "workdir"));
        s->network = json_string_value(json_object_get(sb->spec, "network"));
        s->env = sb->env;
        s->labels = json_object_get(sb->spec, "labels");
        s->mounts = json_object_get(sb->spec, "mounts");
        s->section = json_object_get(sb->spec, sb->ops->name);
        s->res.cpus = json_number_value(json_object_get(res, "cpus"));
        s->res.memory_mb = json_integer_value(json_object_get(res, "memory_mb"));
        s->res.pids = json_integer_value(json_object_get(res, "pids"));
        s->res.disk_mb = json_integer_value(json_object_get(res, "disk_mb"));
        s->timeout_s = sb->timeout_s;
        s->owner = &sb->who;
}

/* Fills sc->spec for the backend from the sandbox (and makes its state directory). */
int
sandbox_fill_spec(struct sandbox_create *sc, struct sbx_error *err)
{
        struct sandbox *sb = sc->sb;
        struct sandbox_spec *s = &sc->spec;

        if (sandbox_make_state_dir(sb, err) < 0)
                return -1;
        sandbox_spec_fields(sb, s);
        s->state_dir = sb->state_dir;
        s->host_paths = sc->host_paths;
        s->up = &sandbox_upcalls;
        s->up_ctx = sb;
        if (!strcmp(sb->ops->name, "docker"))
                sandbox_policy_docker_spec(s, &sb->who);
        return 0;
}

/* Hands sc to its backend's create. */
void
sandbox_start_backend(struct sandbox_create *sc)
{
        struct sbx_error err = {0};

        if (sandbox_fill_spec(sc, &err) < 0) {
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sandbox_in_backend_add(sc);
        sc->sb->ops->create(&sc->spec, sc, sandbox_progress_cb, sandbox_created_cb);
}

static void
sandbox_approval_cb(void *ctx, bool allowed, const char *resolution)
{
        struct sandbox_create *sc = ctx;
        struct sbx_error err = {0};

        if (!allowed) {
                sbx_error_set(&err, SBX_E_DENIED,
                              json_pack("{s:s,s:s,s:o}", "verdict",
                                        policy_verdict_name(sc->pr.verdict), "resolution",
                                        resolution, "findings", policy_findings_json(&sc->pr)),
                              "denied by policy (%s): the sandbox spec was not approved%s",
                              resolution, approval_role_hint(sc->conn, resolution));
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sandbox_start_backend(sc);
}

/* A spec with a field the checks cannot judge fails with -32602 naming it. */
bool
sandbox_invalid(struct sandbox_create *sc)
{
        struct sbx_error err = {0};

        if (!sc->pr.invalid.code)
                return false;
        sbx_error_set(&err, sc->pr.invalid.code, json_incref(sc->pr.invalid.data), "%s",
                      sc->pr.invalid.message);
        sandbox_create_fail(sc, &err);
        sbx_error_clear(&err);
        return true;
}

/* Judges sb's spec with facts and host paths as policy_ctx's. */
void
sandbox_eval_spec(struct sandbox *sb, json_t *facts, json_t *host_paths, json_t *wanted,
                  struct policy_result *r)
{
        struct policy_ctx pctx;

        sandbox_policy_ctx(&pctx, sb->ops->name, &sb->who, sb->spec);
        pctx.host_paths = host_paths;
        pctx.host_paths_wanted = wanted;
        policy_eval_sandbox(g.policy, &pctx, sb->spec, facts, r);
}

/* Whether sb has host access by the judgement r or by its backend's caps. */
bool
sandbox_judged_host_access(struct sandbox *sb, const struct policy_result *r)
{
        struct policy_ctx pctx;

        sandbox_policy_ctx(&pctx, sb->ops->name, &sb->who, sb->spec);
        return r->host_access || pctx.host_access;
}

/* One judgement of the merged spec (hostpaths_eval_fn): the container checks. */
void
sandbox_judge_eval(void *ctx, json_t *host_paths, json_t *wanted, struct policy_result *r)
{
        struct sandbox_create *sc = ctx;

        sandbox_eval_spec(sc->sb, sc->facts, host_paths, wanted, r);
}

/* The judgement, with the host paths it named resolved (paths, for the backend): approval
 * next, then the backend. */
static void
sandbox_judged(void *ctx, struct policy_result *r, json_t *paths, struct sbx_error *herr)
{
        struct sandbox_create *sc = ctx;
        struct sandbox *sb = sc->sb;
        struct sbx_error err = {0};

        if (herr) {
                hostpaths_fail(&err, herr, sb->ops->name, "the sandbox spec");
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sc->host_paths = json_incref(paths);
        sc->pr = *r;
        memset(r, 0, sizeof(*r)); /* sc->pr has it now */
        if (sandbox_invalid(sc))
                return;
        if (!strcmp(sb->ops->name, "docker") && sandbox_docker_budget(sb, &err) < 0) {
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sb->host_access = sandbox_judged_host_access(sb, &sc->pr);
        sb->findings = policy_findings_json(&sc->pr);
        approval_decide(sc->conn, NULL, sb->host_access,
                        json_pack("{s:s,s:s,s:s,s:O}", "kind", "sandbox", "sandbox", sb->id,
                                  "backend", sb->ops->name, "spec", sb->spec),
                        &sc->pr, sandbox_approval_cb, sc);
}

/* Judges the merged spec (facts: what the backend inspected, borrowed, may be NULL) with the
 * host paths it names resolved first, as the caller, off the loop (hostpaths.h). */
static void
sandbox_judge(struct sandbox_create *sc, json_t *facts)
{
        sc->facts = json_incref(facts);
        hostpaths_judge(sc->conn, &sc->sb->who, sandbox_judge_eval, sandbox_judged, sc);
}

static void
sandbox_facts_cb(void *ctx, json_t *facts, const struct sbx_error *err)
{
        struct sandbox_create *sc = ctx;
        struct sbx_error e = {0};

        if (err) {
                /* Fail closed: without the volumes' options the spec cannot be judged. */
                sbx_error_set(&e, err->code, json_incref(err->data),
                              "cannot inspect the named volumes and VolumesFrom containers of "
                              "the spec: %s",
                              err->message);
                sandbox_create_fail(sc, &e);
                sbx_error_clear(&e);
                return;
        }
        sc->judge(sc, facts);
        json_decref(facts);
}

/* What the policy needs to know first (docker: named volumes, which can bind host paths, and
 * VolumesFrom containers, whose mounts would be inherited) is asked of the backend; then
 * judge runs. */
void
sandbox_inspect_then(struct sandbox_create *sc, void (*judge)(struct sandbox_create *, json_t *))
{
        if (!sc->sb->ops->inspect_spec) {
                judge(sc, NULL);
                return;
        }
        sc->judge = judge;
        sc->sb->ops->inspect_spec(sc->sb->spec, sc, sandbox_facts_cb);
}

/* Validates, judges and creates; cb gets the result (or the existing sandbox of that name). */
static void
sandbox_create_params(struct conn *c, json_t *params, sandbox_ready_cb cb, void *ctx, bool *reused)
{
        struct sbx_error err = {0};
        const char *bname = json_string_value(json_object_get(params, "backend"));
        const char *name = json_string_value(json_object_get(params, "name"));
        const struct backend_ops *ops;
        struct sandbox *sb;
        struct sandbox_create *sc;

        if (sandbox_validate(params, &err) < 0)
                goto fail;
        if (!bname)
                bname = g.config->default_backend;
        ops = backend_lookup(bname);
        if (!ops) {
                sbx_error_param(&err, "backend",
                                "invalid params: unknown backend '%s' (known: local, docker, ssh, "
                                "singularity, modal, daytona)",
                                bname);
                goto fail;
        }
        if (!ops->exec_start) {
                sbx_error_set(&err, SBX_E_BACKEND_UNAVAILABLE,
                              json_pack("{s:s,s:s,s:s}", "backend", ops->name, "reason",
                                        "not implemented in this version of sandboxd", "hint",
                                        "use backend \"local\" or another available backend "
                                        "(backend.list)"),
                              "backend '%s' is unavailable: not implemented in this version of "
                              "sandboxd",
                              ops->name);
                goto fail;
        }
        sb = name ? sandbox_find(conn_uid(c), name) : NULL;
        if (sb && sb->owner == conn_uid(c)) {
                if (sandbox_reuse_check(sb, params, ops, &err) < 0)
                        goto fail;
                *reused = true;
                if (sb->state == SANDBOX_CREATING)
                        sandbox_add_waiter(sb, cb, ctx);
                else
                        cb(ctx, sb, NULL);
                return;
        }
        if (sandbox_count_uid(conn_uid(c)) >= g.config->max_sandboxes_per_uid) {
                sbx_error_limit(&err, "max_sandboxes_per_uid",
                                (long long) g.config->max_sandboxes_per_uid,
                                "limit reached: uid %u already has %llu sandboxes "
                                "(max_sandboxes_per_uid); destroy one first",
                                (unsigned) conn_uid(c),
                                (unsigned long long) g.config->max_sandboxes_per_uid);
                goto fail;
        }
        sb = sandbox_new(c, params, ops, name);
        sandbox_add_waiter(sb, cb, ctx);
        sc = sandbox_create_new(sb, c);
        sandbox_inspect_then(sc, sandbox_judge);
        return;
fail:
        cb(ctx, NULL, &err);
        sbx_error_clear(&err);
}

struct sandbox_reply {
        struct rpc_req *req;
        bool reused;
};

static void
sandbox_reply_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct sandbox_reply *r = ctx;

        if (err)
                rpc_error(r->req, err);
        else
                rpc_result(r->req, sandbox_json(sb, r->reused));
        free(r);
}

/* sandbox.create */
void
method_sandbox_create(struct rpc_req *req)
{
        struct sandbox_reply *r = xcalloc(1, sizeof(*r));

        if (g.stopping) {
                free(r);
                rpc_error_msg(req, SBX_E_UNUSABLE, "the daemon is shutting down");
                return;
        }
        if (json_dumpb(req->params, NULL, 0, JSON_COMPACT) > g.config->max_sandbox_spec_bytes) {
                /* it is kept in memory and in sandboxes.json for as long as the sandbox lives */
                struct sbx_error err = {0};
                sbx_error_limit(&err, "max_sandbox_spec_bytes",
                                (long long) g.config->max_sandbox_spec_bytes,
                                "limit reached: the sandbox.create params are larger than "
                                "max_sandbox_spec_bytes (%llu bytes as compact JSON); give fewer "
                                "or shorter env, labels or mounts",
                                (unsigned long long) g.config->max_sandbox_spec_bytes);
                free(r);
                rpc_error(req, &err);
                return;
        }
        r->req = req;
        sandbox_create_params(req->conn, req->params, sandbox_reply_cb, r, &r->reused);
}

/* The params of a default sandbox on backend (new). */
json_t *
sandbox_default_params(const char *backend)
{
        return json_pack("{s:s,s:s}", "name", "default", "backend", backend);
}

/* Resolves (or creates) the default sandbox. */
void
sandbox_default(struct conn *c, sandbox_ready_cb cb, void *ctx)
{
        json_t *params = sandbox_default_params(g.config->default_backend);
        bool reused = false;

        sandbox_create_params(c, params, cb, ctx, &reused);
        json_decref(params);
}
