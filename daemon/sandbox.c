/* sandbox.c — the sandbox registry: identity, references, lookup, the sandbox object, waiters
 * for a sandbox being created, expiry, and sandbox.list / sandbox.get. */
#include "daemon/sandbox.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/sandbox_int.h"
#include "daemon/shellstate.h"
#include "protocol/codec.h"
#include "protocol/params.h"

struct list sandbox_all = {&sandbox_all, &sandbox_all};
struct list sandbox_in_backend = {&sandbox_in_backend, &sandbox_in_backend};
static uv_timer_t sandbox_timer;
static uint64_t sandbox_seq;

/* A request waiting for a sandbox being created. */
struct sandbox_waiter {
        struct list node;
        sandbox_ready_cb cb;
        void *ctx;
};

/* Fills who for uid/gid/groups (copied), with the user's name and home from the passwd db. */
void
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
        free(sb->home);
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

/* The HOME of sb's execs (sandbox.h). */
const char *
sandbox_home(const struct sandbox *sb)
{
        if (sb->home)
                return sb->home;
        return sb->caps & BACKEND_CAP_OWN_HOME ? NULL : sb->who.home;
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
        return LIST_COUNT_UID(&sandbox_all, struct sandbox, node, owner, uid);
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

/* Tells the waiters of sb that it is ready, or err. */
void
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

/* Has cb called once sb is ready (or failed). */
void
sandbox_add_waiter(struct sandbox *sb, sandbox_ready_cb cb, void *ctx)
{
        struct sandbox_waiter *w = xcalloc(1, sizeof(*w));

        w->cb = cb;
        w->ctx = ctx;
        list_add_tail(&sb->waiters, &w->node);
}

/* A new sandbox in state CREATING for params (borrowed), not registered; id, owner and name
 * are the caller's to fill. */
struct sandbox *
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
struct sandbox *
sandbox_alloc(json_t *params, const struct backend_ops *ops)
{
        struct sandbox *sb = sandbox_alloc_unlisted(params, ops);

        list_add_tail(&sandbox_all, &sb->node);
        return sb;
}

/* A new registered sandbox of c's peer for params, named name (or sandbox-N). */
struct sandbox *
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

/* The sandbox the "id" param of req names, or NULL with the error answered. */
struct sandbox *
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
void
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

/* Stops the expiry check for good (shutdown). */
void
sandbox_expiry_stop(void)
{
        uv_timer_stop(&sandbox_timer);
        uv_close((uv_handle_t *) &sandbox_timer, NULL);
}
