/* approval.c — settles ASK verdicts: isolation, memory, roles, or an approval.request round
 * trip; keeps the persisted "always" approvals per uid; writes the audit records. */
#include "daemon/approval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/audit.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/sandbox.h"
#include "protocol/util.h"

#define APPROVAL_MAX_ALWAYS   4096 /* persisted approvals per uid */
#define APPROVAL_MAX_SESSION  4096 /* session approvals per sandbox */
#define APPROVAL_MAX_FINDINGS 64   /* rule ids kept in an audit record */

struct approval {
        struct conn *conn;             /* referenced */
        struct sandbox *sb;            /* referenced, may be NULL */
        const struct policy_result *r; /* borrowed: the requester keeps it until cb */
        json_t *choices;               /* offered (owned) */
        json_t *rec;                   /* audit record of the decision (owned) */
        char id[20];                   /* approval_id */
        char *call_id;
        uid_t uid;
        uv_timer_t timer;
        approval_cb cb;
        void *ctx;
        bool answered;
        bool timed_out;
};

/* uid (decimal string) -> policy approval set {key: {rule, subject, created_at}}. */
static json_t *approval_always;
static char *approval_path;

/* ---- persisted approvals ---- */

static json_t *
approval_uid_set(uid_t uid, bool create)
{
        char k[16];
        json_t *set;

        snprintf(k, sizeof(k), "%u", (unsigned) uid);
        set = json_object_get(approval_always, k);
        if (!set && create && approval_always) {
                set = json_object();
                json_object_set_new(approval_always, k, set);
        }
        return set;
}

static void
approval_save(void)
{
        struct sbx_error err = {0};

        if (approval_path && policy_approvals_save(approval_path, approval_always, &err) < 0) {
                log_warn("cannot save persisted approvals: %s", err.message);
                sbx_error_clear(&err);
        }
}

/* Drops what is not {uid: {key: {rule: string, …}}}: a hand-edited file must not crash us. */
static void
approval_sanitize(json_t *all)
{
        const char *uid, *key;
        json_t *set, *e;
        void *t1, *t2;

        json_object_foreach_safe(all, t1, uid, set)
        {
                if (!json_is_object(set) || !*uid || strspn(uid, "0123456789") != strlen(uid) ||
                    strlen(uid) > 10) {
                        json_object_del(all, uid);
                        continue;
                }
                json_object_foreach_safe(set, t2, key, e)
                {
                        if (!json_is_string(json_object_get(e, "rule")))
                                json_object_del(set, key);
                }
        }
}

/* Loads state_dir/approvals.json. */
void
approval_init(const char *state_dir)
{
        struct sbx_error err = {0};
        json_t *set = NULL;

        free(approval_path);
        approval_path = xasprintf("%s/approvals.json", state_dir);
        json_decref(approval_always);
        if (policy_approvals_load(approval_path, &set, &err) < 0) {
                char *bad = xasprintf("%s.bad", approval_path);
                log_warn("persisted approvals unusable (%s); moved to %s, starting empty",
                         err.message, bad);
                if (rename(approval_path, bad) < 0)
                        log_warn("cannot move %s aside: %s", approval_path, strerror(errno));
                free(bad);
                sbx_error_clear(&err);
                set = json_object();
        }
        approval_sanitize(set);
        approval_always = set;
}

/* Frees the persisted set. */
void
approval_shutdown(void)
{
        approval_always = (json_decref(approval_always), NULL);
        free(approval_path);
        approval_path = NULL;
}

static void
approval_stamp(json_t *set)
{
        char ts[40];
        const char *key;
        json_t *e;

        util_rfc3339(util_wall_ms(), ts, sizeof(ts));
        json_object_foreach(set, key, e) if (!json_object_get(e, "created_at"))
                json_object_set_new(e, "created_at", json_string(ts));
}

/* Persists r's ASK keys for uid; negative errno when refused. */
static int
approval_always_add(uid_t uid, const struct policy_result *r)
{
        json_t *set = approval_uid_set(uid, true);
        int e;

        if (!set)
                return -ENOENT;
        if (json_object_size(set) >= APPROVAL_MAX_ALWAYS) {
                log_warn("uid %u has %d persisted approvals already: 'always' kept for this "
                         "request only (revoke some with approval.revoke)",
                         (unsigned) uid, APPROVAL_MAX_ALWAYS);
                return -ENOSPC;
        }
        e = policy_approval_remember(r, set, true);
        if (e < 0)
                return e;
        approval_stamp(set);
        approval_save();
        return 0;
}

/* Persisted approvals uid may see. */
json_t *
approval_list(uid_t uid)
{
        json_t *out = json_array(), *set, *e;
        const char *u, *key;

        json_object_foreach(approval_always, u, set)
        {
                unsigned long owner = strtoul(u, NULL, 10);
                if (uid != 0 && owner != uid)
                        continue;
                json_object_foreach(set, key, e)
                {
                        json_t *created = json_object_get(e, "created_at");
                        json_array_append_new(
                                out,
                                json_pack("{s:s,s:O,s:s,s:I,s:O}", "key", key, "rule",
                                          json_object_get(e, "rule"), "subject",
                                          json_string_value(json_object_get(e, "subject")) ?: "",
                                          "uid", (json_int_t) owner, "created_at",
                                          created ? created : json_null()));
                }
        }
        return out;
}

/* Revokes a persisted approval. */
int
approval_revoke(uid_t uid, const char *key, const uid_t *target, struct sbx_error *err)
{
        json_t *set;
        const char *u;
        void *tmp;
        int n = 0;

        json_object_foreach_safe(approval_always, tmp, u, set)
        {
                unsigned long owner = strtoul(u, NULL, 10);
                if ((uid != 0 && owner != uid) || (uid == 0 && target && owner != *target))
                        continue;
                if (policy_approvals_revoke(set, key) == 0)
                        n++;
                if (json_object_size(set) == 0)
                        json_object_del(approval_always, u);
        }
        if (n == 0) {
                sbx_error_param(err, "key", "invalid params: no persisted approval '%s'%s", key,
                                uid == 0 ? "" : " of this uid (see approval.list)");
                return -ENOENT;
        }
        approval_save();
        audit_write(json_pack("{s:I,s:s,s:s,s:i}", "uid", (json_int_t) uid, "kind",
                              "approval.revoke", "key", key, "count", n));
        return n;
}

/* ---- audit records ---- */

static json_t *
approval_rule_ids(const struct policy_result *r)
{
        json_t *ids = json_array();

        for (size_t i = 0; i < r->nfindings && json_array_size(ids) < APPROVAL_MAX_FINDINGS; i++) {
                bool seen = false;
                size_t j;
                json_t *v;
                json_array_foreach(ids, j, v) seen |=
                        !strcmp(json_string_value(v), r->findings[i].rule);
                if (!seen)
                        json_array_append_new(ids, json_string(r->findings[i].rule));
        }
        return ids;
}

static const char *const approval_file_keys[] = {"op", "path", "resolved_path"};

/* The audit record of a decision, before its outcome (new). Never holds secret values. */
static json_t *
approval_audit_base(struct conn *c, json_t *info, const struct policy_result *r)
{
        json_t *rec = json_object(), *v;
        const char *s;

        json_object_set_new(rec, "uid", c ? json_integer(conn_uid(c)) : json_null());
        json_object_set_new(rec, "pid", c ? json_integer(conn_pid(c)) : json_null());
        json_object_set_new(rec, "conn", c ? json_integer((json_int_t) conn_id(c)) : json_null());
        json_object_set(rec, "kind", json_object_get(info, "kind"));
        json_object_set(rec, "sandbox", json_object_get(info, "sandbox"));
        json_object_set(rec, "backend", json_object_get(info, "backend"));
        if ((s = json_string_value(json_object_get(info, "command")))) {
                char *red = audit_redact_command(s);
                v = json_string(red);
                json_object_set_new(rec, "command", v ? v : json_string("(not UTF-8)"));
                free(red);
        } else if ((v = json_object_get(info, "argv"))) {
                json_object_set_new(rec, "argv", audit_redact_argv(v));
        } else if ((v = json_object_get(info, "spec"))) {
                json_object_set_new(rec, "spec", audit_spec_summary(v));
        }
        /* file ops: what was asked for and what it resolved to (never the data) */
        for (size_t i = 0; i < ARRAY_SIZE(approval_file_keys); i++)
                if ((v = json_object_get(info, approval_file_keys[i])))
                        json_object_set(rec, approval_file_keys[i], v);
        if ((v = json_object_get(info, "cwd")))
                json_object_set(rec, "cwd", v);
        json_object_set_new(rec, "verdict", json_string(policy_verdict_name(r->verdict)));
        json_object_set_new(rec, "findings", approval_rule_ids(r));
        return rec;
}

/* Writes the decision record (stolen) and tells the requester. */
static void
approval_conclude(json_t *rec, const char *approval_id, bool allowed, const char *resolution,
                  approval_cb cb, void *ctx)
{
        json_object_set_new(rec, "resolution", json_string(resolution));
        json_object_set_new(rec, "allowed", json_boolean(allowed));
        if (approval_id)
                json_object_set_new(rec, "approval_id", json_string(approval_id));
        audit_write(rec);
        cb(ctx, allowed, resolution);
}

/* ---- asking ---- */

static bool
approval_uid_listed(uid_t uid)
{
        for (size_t i = 0; i < g.config->nbatch_auto_approve_uids; i++)
                if (g.config->batch_auto_approve_uids[i] == uid)
                        return true;
        return false;
}

/* Whether ASK on a sandbox without host access is allowed for backend (ask_isolated). */
static bool
approval_isolated_allowed(const char *backend)
{
        const char *v = NULL;

        if (backend)
                v = json_string_value(
                        json_object_get(config_backend(g.config, backend), "ask_isolated"));
        if (!v)
                v = g.config->ask_isolated;
        return !v || strcmp(v, "ask") != 0;
}

/* Settles r without asking anyone: 1 allow, 0 deny, -1 ask the client. */
static int
approval_quick(struct conn *c, struct sandbox *sb, bool host_access, json_t *info,
               const struct policy_result *r, const char **resolution)
{
        const char *backend = json_string_value(json_object_get(info, "backend"));
        const char *kind = json_string_value(json_object_get(info, "kind"));

        *resolution = "policy";
        if (r->verdict == POLICY_ALLOW)
                return 1;
        if (r->verdict == POLICY_DENY)
                return 0;
        /* As in the system we replace, an isolated sandbox may run what would be asked about;
         * DENY above applies everywhere. A finding about the sandbox's own spec is not a
         * command inside an isolated sandbox: it decides what the isolation is. */
        if (!host_access && approval_isolated_allowed(backend) &&
            (!kind || strcmp(kind, "sandbox") != 0))
                return 1;
        *resolution = "user";
        if ((sb && policy_approval_covers(r, sb->approvals)) ||
            (c && policy_approval_covers(r, approval_uid_set(conn_uid(c), false))))
                return 1;
        if (!c || conn_closing(c))
                return 0;
        *resolution = "role";
        switch (conn_role(c)) {
        case CONN_ROLE_SUBAGENT:
                /* subagent_auto_approve is for agents the operator runs, never for a process
                 * the daemon itself started (it would approve its own requests). */
                return g.config->subagent_auto_approve && !conn_confined(c) ? 1 : 0;
        case CONN_ROLE_BATCH:
                return conn_auto_approve(c) && approval_uid_listed(conn_uid(c)) ? 1 : 0;
        case CONN_ROLE_INTERACTIVE:
                /* Only a client that said hello is known to answer approval.request: any
                 * other would wait for approval_timeout_s without knowing why. */
                if (!conn_said_hello(c))
                        return 0;
                break;
        }
        *resolution = "user";
        return -1;
}

static void
approval_timer_close_cb(uv_handle_t *h)
{
        struct approval *a = h->data;

        conn_unref(a->conn);
        if (a->sb)
                sandbox_unref(a->sb);
        json_decref(a->choices);
        json_decref(a->rec);
        free(a->call_id);
        free(a);
}

static void
approval_finish(struct approval *a, bool allowed, const char *resolution)
{
        json_t *rec = a->rec;

        a->answered = true;
        a->rec = NULL;
        uv_timer_stop(&a->timer);
        approval_conclude(rec, a->id, allowed, resolution, a->cb, a->ctx);
        uv_close((uv_handle_t *) &a->timer, approval_timer_close_cb);
}

static bool
approval_offered(json_t *choices, const char *d)
{
        size_t i;
        json_t *v;

        json_array_foreach(choices, i, v) if (!strcmp(json_string_value(v), d)) return true;
        return false;
}

/* Remembers an approving answer ("once" remembers nothing). */
static void
approval_apply(struct approval *a, const char *d)
{
        bool always = !strcmp(d, "always");

        if (always && approval_always_add(a->uid, a->r) < 0)
                log_info("approval %s: 'always' not persisted; approved for this request", a->id);
        if ((always || !strcmp(d, "session")) && a->sb &&
            json_object_size(a->sb->approvals) < APPROVAL_MAX_SESSION)
                policy_approval_remember(a->r, a->sb->approvals, false);
}

static void
approval_audit_answer(struct approval *a, const char *decision, const char *problem,
                      const char *resolution)
{
        json_t *rec =
                json_pack("{s:O?,s:O?,s:O?,s:s,s:s,s:O?,s:O?,s:O?,s:o,s:s}", "uid",
                          json_object_get(a->rec, "uid"), "pid", json_object_get(a->rec, "pid"),
                          "conn", json_object_get(a->rec, "conn"), "kind", "approval",
                          "approval_id", a->id, "sandbox", json_object_get(a->rec, "sandbox"),
                          "backend", json_object_get(a->rec, "backend"), "findings",
                          json_object_get(a->rec, "findings"), "decision",
                          decision ? json_string(decision) : json_null(), "resolution", resolution);

        if (problem)
                json_object_set_new(rec, "problem", json_string(problem));
        audit_write(rec);
}

static void
approval_answer_cb(void *ctx, json_t *result, json_t *error)
{
        struct approval *a = ctx;
        const char *d = json_string_value(json_object_get(result, "decision"));
        const char *problem = NULL, *resolution = a->timed_out ? "timeout" : "user";
        bool allowed;

        if (a->answered)
                return;
        if (a->timed_out)
                problem = "timeout";
        else if (error)
                problem = "error answer";
        else if (!result)
                problem = "connection closed";
        else if (!d)
                problem = "malformed answer";
        else if (!approval_offered(a->choices, d))
                problem = "decision not offered";
        allowed = !problem && strcmp(d, "deny") != 0;
        if (allowed)
                approval_apply(a, d);
        approval_audit_answer(a, problem ? NULL : d, problem, resolution);
        approval_finish(a, allowed, resolution);
}

static void
approval_timeout_cb(uv_timer_t *t)
{
        struct approval *a = t->data;

        a->timed_out = true;
        log_info("approval %s timed out after %llu s: denied", a->id,
                 (unsigned long long) g.config->approval_timeout_s);
        /* Cancelling runs approval_answer_cb with no answer, which denies. */
        conn_call_cancel(a->conn, a->call_id);
}

static void
approval_ask(struct conn *c, struct sandbox *sb, json_t *info, const struct policy_result *r,
             json_t *rec, approval_cb cb, void *ctx)
{
        struct approval *a = xcalloc(1, sizeof(*a));
        char rnd[13];
        uint64_t ms = g.config->approval_timeout_s * 1000;

        a->conn = c;
        conn_ref(c);
        a->sb = sb;
        if (sb)
                sandbox_ref(sb);
        a->r = r;
        a->rec = rec;
        a->uid = conn_uid(c);
        a->cb = cb;
        a->ctx = ctx;
        a->choices = policy_result_choices(r);
        uv_timer_init(g.loop, &a->timer);
        a->timer.data = a;
        util_random_hex(rnd, 12);
        snprintf(a->id, sizeof(a->id), "apr_%s", rnd);
        json_object_set_new(info, "approval_id", json_string(a->id));
        json_object_set_new(info, "findings", policy_findings_json(r));
        json_object_set(info, "choices", a->choices);
        json_object_set_new(info, "expires_in_ms", json_integer((json_int_t) ms));
        a->call_id = xstrdup(conn_call(c, "approval.request", info, approval_answer_cb, a));
        if (!a->answered)
                uv_timer_start(&a->timer, approval_timeout_cb, ms, 0);
}

/* What a denied client is told about how to be asked. */
const char *
approval_role_hint(struct conn *c, const char *resolution)
{
        if (!c || strcmp(resolution, "role") != 0)
                return "";
        if (conn_confined(c))
                return "; this connection comes from inside the daemon's own sandboxes, so it is "
                       "a subagent and nobody is asked (docs/protocol.md, daemon.hello)";
        if (!conn_said_hello(c))
                return "; nobody was asked because this connection did not say daemon.hello: "
                       "send {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.hello\","
                       "\"params\":{\"role\":\"interactive\"}} first and answer the "
                       "approval.request the daemon then sends (docs/protocol.md, daemon.hello)";
        return "; this connection's role does not ask for approval (daemon.hello role "
               "'interactive' does)";
}

/* The error of a denied request. */
void
approval_deny_error(struct sbx_error *err, const struct policy_result *r, const char *resolution,
                    struct conn *c)
{
        sbx_error_set(err, SBX_E_DENIED,
                      json_pack("{s:s,s:s,s:o}", "verdict", policy_verdict_name(r->verdict),
                                "resolution", resolution, "findings", policy_findings_json(r)),
                      "denied by policy (%s): %s%s", resolution,
                      r->nfindings ? r->findings[0].message : "not approved",
                      approval_role_hint(c, resolution));
}

/* Decides on a verdict for one request. */
void
approval_decide(struct conn *c, struct sandbox *sb, bool host_access, json_t *info,
                const struct policy_result *r, approval_cb cb, void *ctx)
{
        json_t *rec = approval_audit_base(c, info, r);
        const char *resolution;
        int q = approval_quick(c, sb, host_access, info, r, &resolution);

        if (q >= 0) {
                json_decref(info);
                approval_conclude(rec, NULL, q == 1, resolution, cb, ctx);
                return;
        }
        approval_ask(c, sb, info, r, rec, cb, ctx);
}
