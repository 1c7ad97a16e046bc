/* sandbox.c — sandbox registry and the sandbox.* methods. */
#include "daemon/sandbox.h"

#include <sys/stat.h>

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/approval.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/proc.h"
#include "daemon/records.h"
#include "daemon/sandbox_policy.h"
#include "daemon/shellstate.h"
#include "policy/policy.h"
#include "protocol/codec.h"
#include "protocol/params.h"
#include "protocol/util.h"

#define SANDBOX_MAX_ENV    1024
#define SANDBOX_MAX_STRING 4096

/* A request waiting for a sandbox being created. */
struct sandbox_waiter {
        struct list node;
        sandbox_ready_cb cb;
        void *ctx;
};

/* One create in progress. */
struct sandbox_create {
        struct sandbox *sb;
        struct conn *conn; /* referenced; for approval and progress */
        struct policy_result pr;
        struct sandbox_spec spec;
        /* What runs once the spec's volumes and containers are inspected: first judgement or
         * re-judgement. */
        void (*judge)(struct sandbox_create *sc, json_t *facts);
        /* While the backend creates (or adopts): in sandbox_in_backend; a close of conn
         * cancels it, and so does the shutdown (ended is then told). */
        struct list link;
        struct conn_watch watch;
        void (*ended)(void *ctx);
        void *ended_ctx;
};

static struct list sandbox_all = {&sandbox_all, &sandbox_all};
static struct list sandbox_in_backend = {&sandbox_in_backend, &sandbox_in_backend};
static uv_timer_t sandbox_timer;
static uint64_t sandbox_seq;

static const char *const sandbox_networks[] = {"none", "bridge", "host", NULL};

/* Fills who for uid/gid/groups (copied), with the user's name and home from the passwd db. */
static void
sandbox_identity_of(uid_t uid, gid_t gid, const gid_t *groups, size_t n,
                    struct backend_identity *who)
{
        struct passwd *pw = getpwuid(uid);

        memset(who, 0, sizeof(*who));
        who->uid = uid;
        who->gid = gid;
        who->ngroups = n;
        who->groups = xcalloc(n ? n : 1, sizeof(gid_t));
        memcpy(who->groups, groups, n * sizeof(gid_t));
        who->user = pw ? xstrdup(pw->pw_name) : xasprintf("%u", (unsigned) who->uid);
        who->home = pw && pw->pw_dir && *pw->pw_dir ? xstrdup(pw->pw_dir) : xstrdup("/");
}

/* Copies a peer's identity. */
void
sandbox_identity(struct conn *c, struct backend_identity *who)
{
        size_t n;
        const gid_t *groups = conn_groups(c, &n);

        sandbox_identity_of(conn_uid(c), conn_gid(c), groups, n, who);
}

/* Frees a copied identity. */
void
sandbox_identity_free(struct backend_identity *who)
{
        free(who->groups);
        free((char *) who->user);
        free((char *) who->home);
        memset(who, 0, sizeof(*who));
}

/* Takes a reference. */
void
sandbox_ref(struct sandbox *sb)
{
        sb->refs++;
}

/* Drops a reference; the last one frees. */
void
sandbox_unref(struct sandbox *sb)
{
        if (--sb->refs > 0)
                return;
        list_del(&sb->node);
        sandbox_identity_free(&sb->who);
        json_decref(sb->spec);
        json_decref(sb->env);
        json_decref(sb->findings);
        json_decref(sb->enforced);
        json_decref(sb->details);
        json_decref(sb->shell_env);
        json_decref(sb->approvals);
        shellstate_forget(sb);
        free(sb->name);
        free(sb->workdir);
        free(sb->image);
        free(sb->state_dir);
        free(sb->runtime_dir);
        free(sb->isolation);
        free(sb->link_reason);
        free(sb->cwd);
        free(sb);
}

/* Finds by id or name for uid. */
struct sandbox *
sandbox_find(uid_t uid, const char *key)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (sb->state == SANDBOX_GONE || sb->state == SANDBOX_DESTROYING)
                        continue;
                if (sb->owner != uid && uid != 0)
                        continue;
                if (!strcmp(sb->id, key))
                        return sb;
                if (sb->owner == uid && !strcmp(sb->name, key))
                        return sb;
        }
        return NULL;
}

/* Activity for the idle timeout. */
void
sandbox_touch(struct sandbox *sb)
{
        sb->last_activity_ms = util_now_ms();
}

/* All sandboxes. */
unsigned
sandbox_count(void)
{
        return list_count(&sandbox_all);
}

/* Sandboxes of one uid. */
unsigned
sandbox_count_uid(uid_t uid)
{
        struct list *pos, *tmp;
        unsigned n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                if (LIST_ENTRY(pos, struct sandbox, node)->owner == uid)
                        n++;
        }
        return n;
}

static const char *const sandbox_state_names[] = {"creating", "ready", "destroying", "gone"};

/* The protocol's sandbox object. */
json_t *
sandbox_json(const struct sandbox *sb, bool reused)
{
        char ts[40];
        json_t *o;

        util_rfc3339(sb->created_wall_ms, ts, sizeof(ts));
        o = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:b,s:b,s:O,s:s,s:i,s:O,s:O}", "id", sb->id, "name",
                      sb->name, "backend", sb->ops->name, "state",
                      sb->state == SANDBOX_READY && sb->link ? sb->link
                                                             : sandbox_state_names[sb->state],
                      "image", sb->image ? json_string(sb->image) : json_null(), "workdir",
                      sb->workdir ? json_string(sb->workdir) : json_null(), "reused", reused,
                      "host_access", sb->host_access, "findings",
                      sb->findings ? sb->findings : json_array(), "created_at", ts, "owner_uid",
                      (int) sb->owner, "env", sb->env, "labels",
                      json_object_get(sb->spec, "labels") ? json_object_get(sb->spec, "labels")
                                                          : json_object());
        json_object_set_new(o, "enforced",
                            sb->enforced ? json_incref(sb->enforced) : json_object());
        if (sb->details)
                json_object_set(o, "details", sb->details);
        if (sb->isolation)
                json_object_set_new(o, "isolation", json_string(sb->isolation));
        if (sb->recreated)
                json_object_set_new(o, "sandbox_recreated", json_true());
        if (sb->state == SANDBOX_READY && sb->link && sb->link_reason)
                json_object_set_new(o, "state_reason", json_string(sb->link_reason));
        if (sb->timeout_s)
                json_object_set_new(o, "timeout_s", json_integer((json_int_t) sb->timeout_s));
        if (sb->idle_timeout_s)
                json_object_set_new(o, "idle_timeout_s",
                                    json_integer((json_int_t) sb->idle_timeout_s));
        return o;
}

static void
sandbox_notify_waiters(struct sandbox *sb, struct sbx_error *err)
{
        struct list *pos, *tmp;

        sandbox_ref(sb);
        LIST_FOREACH_SAFE(pos, tmp, &sb->waiters)
        {
                struct sandbox_waiter *w = LIST_ENTRY(pos, struct sandbox_waiter, node);
                struct sbx_error copy = {0};
                list_del(&w->node);
                if (err)
                        sbx_error_set(&copy, err->code, json_incref(err->data), "%s", err->message);
                w->cb(w->ctx, err ? NULL : sb, err ? &copy : NULL);
                sbx_error_clear(&copy);
                free(w);
        }
        sandbox_unref(sb);
}

static void
sandbox_add_waiter(struct sandbox *sb, sandbox_ready_cb cb, void *ctx)
{
        struct sandbox_waiter *w = xcalloc(1, sizeof(*w));

        w->cb = cb;
        w->ctx = ctx;
        list_add_tail(&sb->waiters, &w->node);
}

/* A create of sb for conn (may be NULL: adopt and recreate have none). */
static struct sandbox_create *
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
static void
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
        if (sc->conn) /* adopt and recreate have no connection */
                conn_unref(sc->conn);
        sandbox_unref(sc->sb);
        free(sc);
}

static void
sandbox_create_fail(struct sandbox_create *sc, struct sbx_error *err)
{
        struct sandbox *sb = sc->sb;

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

static void
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
static void
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
static int
sandbox_fill_spec(struct sandbox_create *sc, struct sbx_error *err)
{
        struct sandbox *sb = sc->sb;
        struct sandbox_spec *s = &sc->spec;

        if (sandbox_make_state_dir(sb, err) < 0)
                return -1;
        sandbox_spec_fields(sb, s);
        s->state_dir = sb->state_dir;
        s->up = &sandbox_upcalls;
        s->up_ctx = sb;
        if (!strcmp(sb->ops->name, "docker"))
                sandbox_policy_docker_spec(s, &sb->who);
        return 0;
}

static void
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

static int
sandbox_parse_resources(json_t *params, struct sbx_error *err)
{
        json_t *res = NULL;
        static const char *const keys[] = {"cpus", "memory_mb", "pids", "disk_mb", NULL};
        double d;
        int64_t n;

        if (params_obj(params, "resources", &res, err) <= 0)
                return err->code ? -1 : 0;
        if (params_known(res, keys, err) < 0 || params_num(res, "cpus", 0.01, 1024, &d, err) < 0 ||
            params_int(res, "memory_mb", 4, 1 << 24, &n, err) < 0 ||
            params_int(res, "pids", 1, 1 << 22, &n, err) < 0 ||
            params_int(res, "disk_mb", 1, 1 << 30, &n, err) < 0) {
                if (err->data)
                        json_object_set_new(
                                err->data, "param",
                                json_sprintf("resources.%s", json_string_value(json_object_get(
                                                                     err->data, "param"))));
                return -1;
        }
        return 0;
}

/* The sandboxd* labels are the daemon's: orphan removal, re-adoption after a restart and the
 * resume by name trust them on every backend, so a client that names one is refused. */
static int
sandbox_labels_ok(json_t *p, struct sbx_error *err)
{
        const char *k;
        json_t *v;

        json_object_foreach(json_object_get(p, "labels"), k, v) if (!strncmp(k, "sandboxd", 8))
        {
                sbx_error_param(err, "labels",
                                "invalid params: label '%s' is reserved (sandboxd sets the "
                                "'sandboxd*' labels of its sandboxes); use another name",
                                k);
                return -1;
        }
        return 0;
}

static int
sandbox_validate(json_t *p, struct sbx_error *err)
{
        const char *s;
        json_t *j;
        int64_t n;
        int e;

        if (params_known(p, policy_sandbox_keys, err) < 0 ||
            params_str(p, "backend", 64, &s, err) < 0 || params_str(p, "name", 128, &s, err) < 0 ||
            params_str(p, "image", SANDBOX_MAX_STRING, &s, err) < 0 ||
            params_str(p, "workdir", SANDBOX_MAX_STRING, &s, err) < 0 ||
            params_str_map(p, "env", SANDBOX_MAX_ENV, &j, err) < 0 ||
            params_str_map(p, "labels", 256, &j, err) < 0 || sandbox_labels_ok(p, err) < 0 ||
            params_enum(p, "network", sandbox_networks, &e, err) < 0 ||
            params_arr(p, "mounts", &j, err) < 0 ||
            params_int(p, "timeout_s", 0, 31536000, &n, err) < 0 ||
            params_int(p, "idle_timeout_s", 0, 31536000, &n, err) < 0 ||
            sandbox_parse_resources(p, err) < 0)
                return -1;
        for (const char *const *k = policy_sandbox_sections; *k; k++) {
                if (json_object_get(p, *k) && !json_is_object(json_object_get(p, *k))) {
                        sbx_error_param(err, *k, "invalid params: '%s' must be an object", *k);
                        return -1;
                }
        }
        s = json_string_value(json_object_get(p, "name"));
        if (s && (!*s || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                   "._-") != strlen(s))) {
                sbx_error_param(err, "name",
                                "invalid params: 'name' may use only letters, digits, '.', '_' "
                                "and '-'");
                return -1;
        }
        s = json_string_value(json_object_get(p, "workdir"));
        if (s && s[0] != '/') {
                sbx_error_param(err, "workdir", "invalid params: 'workdir' must be absolute");
                return -1;
        }
        return 0;
}

/* The spec a sandbox keeps for params (new): labels and mounts always there, the backend
 * resolved. */
static json_t *
sandbox_spec_of(json_t *params, const struct backend_ops *ops)
{
        json_t *spec = json_deep_copy(params);

        if (!json_object_get(spec, "labels"))
                json_object_set_new(spec, "labels", json_object());
        if (!json_object_get(spec, "mounts"))
                json_object_set_new(spec, "mounts", json_array());
        json_object_set_new(spec, "backend", json_string(ops->name));
        return spec;
}

/* A request for an existing sandbox by name gets it only when it asks for the same thing: the
 * same backend (an omitted one is the default, so a docker sandbox asked for by the name of a
 * local one, or the reverse, is not handed out), and every other param it gives as the
 * sandbox has it. Params it leaves out are not compared ("get by name"). */
static int
sandbox_reuse_check(struct sandbox *sb, json_t *params, const struct backend_ops *ops,
                    struct sbx_error *err)
{
        const char *k, *diff = NULL;
        json_t *v;

        if (sb->ops != ops) {
                sbx_error_param(err, "name",
                                "invalid params: a sandbox named '%s' already exists with backend "
                                "'%s', not '%s'; destroy it first or choose another name",
                                sb->name, sb->ops->name, ops->name);
                return -EINVAL;
        }
        json_object_foreach(params, k, v) if (!diff && strcmp(k, "backend") != 0 &&
                                              !json_equal(v, json_object_get(sb->spec, k))) diff =
                k;
        if (!diff)
                return 0;
        sbx_error_param(err, "name",
                        "invalid params: a sandbox named '%s' already exists with a different "
                        "'%s'; destroy it first or choose another name",
                        sb->name, diff);
        return -EINVAL;
}

/* A new sandbox in state CREATING for params (borrowed), not registered; id, owner and name
 * are the caller's to fill. */
static struct sandbox *
sandbox_alloc_unlisted(json_t *params, const struct backend_ops *ops)
{
        struct sandbox *sb = xcalloc(1, sizeof(*sb));
        json_t *env = json_object_get(params, "env");

        sb->refs = 1; /* the registry's */
        sb->ops = ops;
        sb->caps = backend_caps(ops, params);
        sb->state = SANDBOX_CREATING;
        sb->spec = sandbox_spec_of(params, ops);
        sb->env = env ? json_deep_copy(env) : json_object();
        sb->created_wall_ms = util_wall_ms();
        sb->timeout_s = (uint64_t) json_integer_value(json_object_get(params, "timeout_s"));
        sb->idle_timeout_s =
                (uint64_t) json_integer_value(json_object_get(params, "idle_timeout_s"));
        sb->approvals = json_object();
        list_init(&sb->node);
        list_init(&sb->waiters);
        list_init(&sb->shell_queue);
        return sb;
}

/* A new registered sandbox in state CREATING for params (borrowed); id, owner and name are
 * the caller's to fill. */
static struct sandbox *
sandbox_alloc(json_t *params, const struct backend_ops *ops)
{
        struct sandbox *sb = sandbox_alloc_unlisted(params, ops);

        list_add_tail(&sandbox_all, &sb->node);
        return sb;
}

static struct sandbox *
sandbox_new(struct conn *c, json_t *params, const struct backend_ops *ops, const char *name)
{
        struct sandbox *sb = sandbox_alloc(params, ops);
        char rnd[9];

        util_random_hex(rnd, 8);
        snprintf(sb->id, sizeof(sb->id), "sbx_%s", rnd);
        sb->owner = conn_uid(c);
        sandbox_identity(c, &sb->who);
        sb->name = name ? xstrdup(name)
                        : xasprintf("sandbox-%llu", (unsigned long long) ++sandbox_seq);
        return sb;
}

/* A spec with a field the checks cannot judge fails with -32602 naming it. */
static bool
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

/* A new docker sandbox may not take its owner's docker sandboxes (it among them, and those
 * being created) together above [backend.docker] max_pids_per_user or max_memory_per_user
 * (-32004); after the judgement, so that a request above a per-sandbox maximum says so. */
static int
sandbox_docker_budget(const struct sandbox *self, struct sbx_error *err)
{
        const struct policy_docker_limits *l = sandbox_policy_docker_limits();
        int64_t pids = 0, mem = 0, p, m;
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (sb->owner != self->owner || sb->ops != self->ops || sb->state == SANDBOX_GONE)
                        continue;
                policy_docker_usage(l, sb->spec, &p, &m);
                pids += p;
                mem += m;
        }
        if (pids > l->max_pids_user)
                sbx_error_limit(err, "max_pids_per_user", (long long) l->max_pids_user,
                                "limit reached: uid %u's docker sandboxes would have %lld pids "
                                "together, above [backend.docker] max_pids_per_user (%lld); "
                                "destroy one, or ask for fewer (resources.pids)",
                                (unsigned) self->owner, (long long) pids,
                                (long long) l->max_pids_user);
        else if (mem > l->max_memory_user)
                sbx_error_limit(err, "max_memory_per_user", (long long) l->max_memory_user,
                                "limit reached: uid %u's docker sandboxes would have %lld MiB "
                                "of memory together, above [backend.docker] "
                                "max_memory_per_user (%lld MiB); destroy one, or ask for less "
                                "(resources.memory_mb)",
                                (unsigned) self->owner, (long long) (mem >> 20),
                                (long long) (l->max_memory_user >> 20));
        return err->code ? -1 : 0;
}

/* Runs the container checks on the merged spec (facts: what the backend inspected, borrowed,
 * may be NULL), then approval, then the backend. */
static void
sandbox_judge(struct sandbox_create *sc, json_t *facts)
{
        struct sandbox *sb = sc->sb;
        struct sbx_error err = {0};
        struct policy_ctx pctx;

        sandbox_policy_ctx(&pctx, sb->ops->name, &sb->who, sb->spec);
        policy_eval_sandbox(g.policy, &pctx, sb->spec, facts, &sc->pr);
        if (sandbox_invalid(sc))
                return;
        if (!strcmp(sb->ops->name, "docker") && sandbox_docker_budget(sb, &err) < 0) {
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sb->host_access = sc->pr.host_access || pctx.host_access;
        sb->findings = policy_findings_json(&sc->pr);
        approval_decide(sc->conn, NULL, sb->host_access,
                        json_pack("{s:s,s:s,s:s,s:O}", "kind", "sandbox", "sandbox", sb->id,
                                  "backend", sb->ops->name, "spec", sb->spec),
                        &sc->pr, sandbox_approval_cb, sc);
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
static void
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

static json_t *
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

/* The host access a create would find: the spec's judgement and the backend's caps (as in
 * sandbox_judge), before the backend adds its own (local: network "host"). */
static bool
sandbox_preview_host_access(struct sandbox *sb)
{
        struct policy_result pr = {0};
        struct policy_ctx pctx;
        bool host;

        sandbox_policy_ctx(&pctx, sb->ops->name, &sb->who, sb->spec);
        policy_eval_sandbox(g.policy, &pctx, sb->spec, NULL, &pr);
        host = pr.host_access || pctx.host_access;
        policy_result_clear(&pr);
        return host;
}

struct sandbox_preview {
        struct list node; /* in sandbox_previews while the backend looks */
        struct sandbox *sb;
        struct sandbox_spec spec;
        sandbox_ready_cb cb;
        void *ctx;
};

static struct list sandbox_previews = {&sandbox_previews, &sandbox_previews};

static unsigned
sandbox_previews_of(uid_t uid)
{
        struct list *pos, *tmp;
        unsigned n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_previews)
        n += LIST_ENTRY(pos, struct sandbox_preview, node)->sb->owner == uid;
        return n;
}

static void
sandbox_preview_workdir_cb(void *ctx, const char *workdir)
{
        struct sandbox_preview *pv = ctx;

        list_del(&pv->node);
        if (workdir)
                pv->sb->workdir = xstrdup(workdir);
        pv->cb(pv->ctx, pv->sb, NULL);
        sandbox_unref(pv->sb);
        free(pv);
}

/* The sandbox sandbox_default would register for c with ops (new, not registered). */
static struct sandbox *
sandbox_preview_new(struct conn *c, const struct backend_ops *ops)
{
        json_t *params = sandbox_default_params(ops->name);
        struct sandbox *sb = sandbox_alloc_unlisted(params, ops);

        json_decref(params);
        sb->owner = conn_uid(c);
        sandbox_identity(c, &sb->who);
        sb->name = xstrdup("default");
        sb->host_access = sandbox_preview_host_access(sb);
        return sb;
}

/* What sandbox_default would make: see sandbox.h. */
void
sandbox_preview_default(struct conn *c, const char *backend, sandbox_ready_cb cb, void *ctx)
{
        const struct backend_ops *ops;
        struct sandbox_preview *pv;
        struct sbx_error err = {0};

        backend = backend ? backend : g.config->default_backend;
        ops = backend_lookup(backend);
        if (!ops)
                sbx_error_param(&err, "backend",
                                "invalid params: unknown backend '%s' (known: local, docker, ssh, "
                                "singularity, modal, daytona)",
                                backend);
        else if (sandbox_previews_of(conn_uid(c)) >= g.config->max_sandboxes_per_uid)
                sbx_error_limit(&err, "max_sandboxes_per_uid",
                                (long long) g.config->max_sandboxes_per_uid,
                                "limit reached: uid %u already waits for %llu policy.check "
                                "answers about its default sandbox (max_sandboxes_per_uid); "
                                "wait for one",
                                (unsigned) conn_uid(c),
                                (unsigned long long) g.config->max_sandboxes_per_uid);
        if (err.code) {
                cb(ctx, NULL, &err);
                sbx_error_clear(&err);
                return;
        }
        pv = xcalloc(1, sizeof(*pv));
        pv->sb = sandbox_preview_new(c, ops);
        pv->cb = cb;
        pv->ctx = ctx;
        list_add_tail(&sandbox_previews, &pv->node);
        sandbox_spec_fields(pv->sb, &pv->spec);
        if (ops->preview_workdir)
                ops->preview_workdir(&pv->spec, pv, sandbox_preview_workdir_cb);
        else
                sandbox_preview_workdir_cb(pv, NULL);
}

/* sandbox.list */
void
method_sandbox_list(struct rpc_req *req)
{
        static const char *const keys[] = {"backend", NULL};
        struct sbx_error err = {0};
        const char *backend = NULL;
        struct list *pos, *tmp;
        json_t *a;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "backend", 64, &backend, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        a = json_array();
        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (sb->state != SANDBOX_READY && sb->state != SANDBOX_CREATING)
                        continue;
                if (sb->owner != conn_uid(req->conn) && conn_uid(req->conn) != 0)
                        continue;
                if (backend && strcmp(backend, sb->ops->name))
                        continue;
                json_array_append_new(a, sandbox_json(sb, false));
        }
        rpc_result(req, json_pack("{s:o}", "sandboxes", a));
}

static struct sandbox *
sandbox_from_params(struct rpc_req *req, const char *const *keys)
{
        struct sbx_error err = {0};
        const char *id = NULL;
        struct sandbox *sb;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "id", 256, &id, &err) < 0) {
                rpc_error(req, &err);
                return NULL;
        }
        if (!id) {
                sbx_error_param(&err, "id",
                                "invalid params: 'id' (sandbox id or name) is required");
                rpc_error(req, &err);
                return NULL;
        }
        sb = sandbox_find(conn_uid(req->conn), id);
        if (!sb)
                rpc_error_msg(req, SBX_E_NO_SANDBOX,
                              "sandbox '%s' not found (sandbox.list shows yours)", id);
        return sb;
}

/* sandbox.get */
void
method_sandbox_get(struct rpc_req *req)
{
        static const char *const keys[] = {"id", NULL};
        struct sandbox *sb = sandbox_from_params(req, keys);
        json_t *o;
        char ts[40];
        uint64_t ago;

        if (!sb)
                return;
        o = sandbox_json(sb, false);
        json_object_set_new(o, "processes", json_integer(sb->running));
        ago = util_now_ms() - sb->last_activity_ms;
        util_rfc3339(util_wall_ms() - ago, ts, sizeof(ts));
        json_object_set_new(o, "last_activity", json_string(ts));
        json_object_set_new(o, "cwd",
                            json_text(sb->cwd       ? sb->cwd
                                      : sb->workdir ? sb->workdir
                                                    : "/"));
        rpc_result(req, o);
}

struct sandbox_destroy {
        struct sandbox *sb;
        struct rpc_req *req;
        void (*done)(void *ctx);
        void *ctx;
        bool given_up; /* the daemon stopped first: the sandbox is kept, not destroyed */
};

static void
sandbox_destroyed_cb(void *ctx, const struct sbx_error *err)
{
        struct sandbox_destroy *d = ctx;
        struct sandbox *sb = d->sb;

        if (err)
                log_warn("sandbox %s: destroy: %s", sb->id, err->message);
        else
                log_info("sandbox %s ('%s') destroyed", sb->id, sb->name);
        sb->state = SANDBOX_GONE;
        sb->bsb = NULL;
        if (d->req) {
                if (err) {
                        struct sbx_error e = {0};
                        sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                        rpc_error(d->req, &e);
                } else {
                        rpc_result(d->req, json_pack("{s:s,s:b}", "id", sb->id, "destroyed", 1));
                }
        }
        if (d->done)
                d->done(d->ctx);
        sandbox_unref(sb); /* the registry's */
        sandbox_unref(sb); /* ours */
        free(d);
        records_save();
}

static void
sandbox_procs_gone_cb(void *ctx)
{
        struct sandbox_destroy *d = ctx;

        d->sb->destroying = NULL;
        if (d->given_up) { /* after the backends' shutdown: its side is released, not ours */
                sandbox_unref(d->sb);
                free(d);
                return;
        }
        d->sb->ops->destroy(d->sb->bsb, d, sandbox_destroyed_cb);
}

static void
sandbox_destroy(struct sandbox *sb, struct rpc_req *req, void (*done)(void *), void *ctx)
{
        struct sandbox_destroy *d = xcalloc(1, sizeof(*d));

        d->sb = sb;
        d->req = req;
        d->done = done;
        d->ctx = ctx;
        sandbox_ref(sb);
        sb->state = SANDBOX_DESTROYING;
        sb->destroying = d;
        proc_kill_all(sb, sandbox_procs_gone_cb, d);
}

/* sandbox.destroy */
void
method_sandbox_destroy(struct rpc_req *req)
{
        static const char *const keys[] = {"id", NULL};
        struct sandbox *sb = sandbox_from_params(req, keys);

        if (!sb)
                return;
        if (sb->state == SANDBOX_CREATING) {
                rpc_error_msg(req, SBX_E_UNUSABLE,
                              "sandbox '%s' is still being created; destroy it once it is ready",
                              sb->id);
                return;
        }
        sandbox_destroy(sb, req, NULL, NULL);
}

static void
sandbox_expire_cb(uv_timer_t *t)
{
        struct list *pos, *tmp;
        uint64_t now = util_now_ms(), wall = util_wall_ms();

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (sb->state != SANDBOX_READY)
                        continue;
                bool life = sb->timeout_s && wall - sb->created_wall_ms >= sb->timeout_s * 1000;
                bool idle = sb->idle_timeout_s && !sb->running &&
                            now - sb->last_activity_ms >= sb->idle_timeout_s * 1000;
                if (life || idle) {
                        log_info("sandbox %s ('%s'): %s timeout reached, destroying", sb->id,
                                 sb->name, life ? "lifetime" : "idle");
                        sandbox_destroy(sb, NULL, NULL, NULL);
                }
        }
}

/* Starts the expiry check (once a second; cheap: a list walk). */
void
sandbox_init(uv_loop_t *loop)
{
        uv_timer_init(loop, &sandbox_timer);
        uv_timer_start(&sandbox_timer, sandbox_expire_cb, 1000, 1000);
        uv_unref((uv_handle_t *) &sandbox_timer);
}

struct sandbox_all_destroy {
        unsigned pending;
        void (*cb)(void *ctx);
        void *ctx;
};

static void
sandbox_one_gone_cb(void *ctx)
{
        struct sandbox_all_destroy *a = ctx;

        if (--a->pending == 0) {
                a->cb(a->ctx);
                free(a);
        }
}

/* Destroys that clients asked for and that still wait for their execs when the daemon stops
 * (a link that is down holds them): a sandbox that outlives the daemon is kept for re-adoption
 * as a ready one is, and the client told to destroy it again (its backend is shut down before
 * the execs end: calling it then would use what it freed); another one is waited for. */
static void
sandbox_destroys_at_stop(struct sandbox_all_destroy *a)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                struct sandbox_destroy *d = sb->destroying;
                if (!d || d->done)
                        continue;
                if (!sandbox_persistent(sb)) {
                        a->pending++;
                        d->done = sandbox_one_gone_cb;
                        d->ctx = a;
                        continue;
                }
                if (d->req)
                        rpc_error_msg(d->req, SBX_E_UNUSABLE,
                                      "the daemon is stopping before sandbox '%s' was destroyed "
                                      "(its execs had not ended): it is kept for the next daemon; "
                                      "destroy it again there",
                                      sb->id);
                d->req = NULL;
                d->given_up = true;
                sb->state = SANDBOX_READY; /* recorded and kept below */
        }
}

/* Destroys everything (shutdown), except sandboxes that outlive the daemon: those are
 * recorded for re-adoption after the restart and only forgotten here. */
void
sandbox_destroy_all(void (*cb)(void *ctx), void *ctx)
{
        struct sandbox_all_destroy *a = xcalloc(1, sizeof(*a));
        struct list *pos, *tmp;

        a->cb = cb;
        a->ctx = ctx;
        a->pending = 1;
        uv_timer_stop(&sandbox_timer);
        uv_close((uv_handle_t *) &sandbox_timer, NULL);
        sandbox_destroys_at_stop(a);
        records_save_final();
        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (sb->state != SANDBOX_READY)
                        continue;
                if (sandbox_persistent(sb)) {
                        /* The backend's shutdown releases its side (the container stays);
                         * until then it may still call up: freed by sandbox_shutdown. */
                        log_info("sandbox %s ('%s', %s) kept for re-adoption", sb->id, sb->name,
                                 sb->ops->name);
                        sb->state = SANDBOX_GONE;
                        sb->kept = true;
                        continue;
                }
                a->pending++;
                sandbox_destroy(sb, NULL, sandbox_one_gone_cb, a);
        }
        /* Creates in progress leave nothing behind (a pull, a slow remote start). */
        LIST_FOREACH_SAFE(pos, tmp, &sandbox_in_backend)
        {
                struct sandbox_create *sc = LIST_ENTRY(pos, struct sandbox_create, link);
                if (!sc->sb->ops->cancel || sc->ended)
                        continue;
                a->pending++;
                sc->ended = sandbox_one_gone_cb;
                sc->ended_ctx = a;
                log_info("sandbox %s: cancelling its creation (shutting down)", sc->sb->id);
                sc->sb->ops->cancel(sc);
        }
        sandbox_one_gone_cb(a);
}

/* Frees the sandboxes kept for re-adoption (after the backends' shutdown). */
void
sandbox_shutdown(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (!sb->kept)
                        continue;
                sb->kept = false;
                sb->bsb = NULL;
                sandbox_unref(sb); /* the registry's */
        }
}

/* Walks the registry. */
void
sandbox_foreach(void (*fn)(struct sandbox *sb, void *ctx), void *ctx)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        fn(LIST_ENTRY(pos, struct sandbox, node), ctx);
}

/* Whether the backend can save and re-adopt sb. */
bool
sandbox_persistent(const struct sandbox *sb)
{
        return sb->ops->save && sb->ops->adopt;
}

/* Keeps "sandbox-N" names of adopted sandboxes from being handed out again. */
static void
sandbox_seq_above(const char *name)
{
        char *end = NULL;
        unsigned long long n;

        if (strncmp(name, "sandbox-", 8) != 0)
                return;
        n = strtoull(name + 8, &end, 10);
        if (end && !*end && n > sandbox_seq)
                sandbox_seq = n;
}

/* Re-adopts a recorded sandbox. */
void
sandbox_adopt(const struct sandbox_record *r, sandbox_ready_cb cb, void *ctx)
{
        struct sandbox *sb = sandbox_alloc(r->spec, r->ops);
        struct sandbox_create *sc;
        struct sbx_error err = {0};

        snprintf(sb->id, sizeof(sb->id), "%s", r->id);
        sb->owner = r->uid;
        sandbox_identity_of(r->uid, r->gid, r->groups, r->ngroups, &sb->who);
        sb->name = xstrdup(r->name);
        sandbox_seq_above(sb->name);
        sb->created_wall_ms = r->created_wall_ms;
        sb->findings = r->findings ? json_incref(r->findings) : json_array();
        sb->host_access = r->host_access;
        sandbox_add_waiter(sb, cb, ctx);
        sc = sandbox_create_new(sb, NULL);
        if (sandbox_fill_spec(sc, &err) < 0) {
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sandbox_in_backend_add(sc);
        r->ops->adopt(&sc->spec, r->record, sc, sandbox_created_cb);
}

/* The judgement of a recreate: allowed, or asking exactly what was approved at create. */
static void
sandbox_rejudge(struct sandbox_create *sc, json_t *facts)
{
        struct sandbox *sb = sc->sb;
        struct policy_ctx pctx;
        struct sbx_error err = {0};
        json_t *findings;

        sandbox_policy_ctx(&pctx, sb->ops->name, &sb->who, sb->spec);
        policy_eval_sandbox(g.policy, &pctx, sb->spec, facts, &sc->pr);
        if (sandbox_invalid(sc))
                return;
        findings = policy_findings_json(&sc->pr);
        if (sc->pr.verdict == POLICY_ALLOW ||
            (sc->pr.verdict == POLICY_ASK && json_equal(findings, sb->findings))) {
                json_decref(findings);
                sandbox_start_backend(sc);
                return;
        }
        sbx_error_set(&err, SBX_E_DENIED,
                      json_pack("{s:s,s:s,s:o}", "verdict", policy_verdict_name(sc->pr.verdict),
                                "resolution", "policy", "findings", findings),
                      "denied by policy: the container of sandbox '%s' vanished and its spec no "
                      "longer passes the policy as it did at create; not recreated",
                      sb->id);
        sandbox_create_fail(sc, &err);
        sbx_error_clear(&err);
}

static void
sandbox_old_gone_cb(void *ctx, const struct sbx_error *err)
{
        struct sandbox_create *sc = ctx;

        if (err)
                log_warn("sandbox %s: removing its old container: %s", sc->sb->id, err->message);
        /* Named volumes may have changed since create: judge their current options. */
        sandbox_inspect_then(sc, sandbox_rejudge);
}

/* Recreates a sandbox whose container vanished. */
void
sandbox_recreate(struct sandbox *sb, sandbox_ready_cb cb, void *ctx)
{
        struct sandbox_create *sc;
        struct backend_sandbox *old = sb->bsb;
        struct sbx_error err = {0};

        if (sb->state == SANDBOX_CREATING) {
                sandbox_add_waiter(sb, cb, ctx);
                return;
        }
        if (sb->state != SANDBOX_READY || !old) {
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "sandbox '%s' was destroyed", sb->id);
                cb(ctx, NULL, &err);
                sbx_error_clear(&err);
                return;
        }
        log_info("sandbox %s ('%s'): its %s container vanished or stopped: recreating it", sb->id,
                 sb->name, sb->ops->name);
        sb->state = SANDBOX_CREATING;
        sb->recreating = true;
        sb->bsb = NULL;
        sandbox_add_waiter(sb, cb, ctx);
        sc = sandbox_create_new(sb, NULL);
        sb->ops->destroy(old, sc, sandbox_old_gone_cb);
}
