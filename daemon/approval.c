/* approval.c — settles ASK verdicts: memory, roles, or an approval.request round trip. */
#include "daemon/approval.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/sandbox.h"
#include "protocol/util.h"

struct approval {
        struct conn *conn;
        struct conn_watch watch; /* unused placeholder for symmetry; calls fail on close */
        struct sandbox *sb;      /* referenced, may be NULL */
        json_t *keys;            /* approval keys of the ASK findings (owned) */
        char *call_id;
        uv_timer_t timer;
        approval_cb cb;
        void *ctx;
        bool answered;
        bool timed_out;
};

static json_t *
approval_keys(const struct policy_result *r)
{
        json_t *keys = json_array();

        for (size_t i = 0; i < r->nfindings; i++) {
                const struct policy_finding *f = &r->findings[i];
                if (f->verdict != POLICY_ASK)
                        continue;
                json_array_append_new(keys, json_sprintf("%s\x1f%s", f->rule,
                                                         f->subject ? f->subject
                                                         : f->match ? f->match
                                                                    : ""));
        }
        return keys;
}

static bool
approval_all_in(json_t *keys, json_t *memory)
{
        size_t i, j;
        json_t *k, *m;

        if (!memory || json_array_size(keys) == 0)
                return false;
        json_array_foreach(keys, i, k)
        {
                bool found = false;
                json_array_foreach(memory, j, m) if (json_equal(k, m)) found = true;
                if (!found)
                        return false;
        }
        return true;
}

static json_t *
approval_choices(const struct policy_result *r)
{
        for (size_t i = 0; i < r->nfindings; i++)
                if (r->findings[i].flags & (POLICY_F_NO_ALWAYS | POLICY_F_FLOOR))
                        return json_pack("[s,s,s]", "once", "session", "deny");
        return json_pack("[s,s,s,s]", "once", "session", "always", "deny");
}

static bool
approval_uid_listed(uid_t uid)
{
        for (size_t i = 0; i < g.config->nbatch_auto_approve_uids; i++)
                if (g.config->batch_auto_approve_uids[i] == uid)
                        return true;
        return false;
}

static void
approval_timer_close_cb(uv_handle_t *h)
{
        struct approval *a = h->data;

        conn_unref(a->conn);
        if (a->sb)
                sandbox_unref(a->sb);
        json_decref(a->keys);
        free(a->call_id);
        free(a);
}

static void
approval_finish(struct approval *a, bool allowed, const char *resolution)
{
        if (a->answered)
                return;
        a->answered = true;
        uv_timer_stop(&a->timer);
        a->cb(a->ctx, allowed, resolution);
        uv_close((uv_handle_t *) &a->timer, approval_timer_close_cb);
}

static void
approval_answer_cb(void *ctx, json_t *result, json_t *error)
{
        struct approval *a = ctx;
        const char *d = json_string_value(json_object_get(result, "decision"));

        if (a->answered)
                return;
        if (!d || !strcmp(d, "deny") || error) {
                approval_finish(a, false, a->timed_out ? "timeout" : "user");
                return;
        }
        if (!strcmp(d, "session") && a->sb) {
                json_array_extend(a->sb->approvals, a->keys);
        } else if (!strcmp(d, "always")) {
                /* Persisted approvals come with the policy engine's store; until then an
                 * "always" is honoured for this sandbox like "session". */
                if (a->sb)
                        json_array_extend(a->sb->approvals, a->keys);
        } else if (strcmp(d, "once") && strcmp(d, "session")) {
                approval_finish(a, false, "user");
                return;
        }
        approval_finish(a, true, "user");
}

static void
approval_timeout_cb(uv_timer_t *t)
{
        struct approval *a = t->data;

        a->timed_out = true;
        log_info("approval %s timed out after %llu s: denied", a->call_id,
                 (unsigned long long) g.config->approval_timeout_s);
        /* Cancelling runs approval_answer_cb with no answer, which denies. */
        conn_call_cancel(a->conn, a->call_id);
}

static void
approval_ask(struct conn *c, struct sandbox *sb, json_t *info, const struct policy_result *r,
             json_t *keys, approval_cb cb, void *ctx)
{
        struct approval *a = xcalloc(1, sizeof(*a));
        char rnd[13];
        uint64_t ms = g.config->approval_timeout_s * 1000;

        a->conn = c;
        conn_ref(c);
        a->sb = sb;
        if (sb)
                sandbox_ref(sb);
        a->keys = keys;
        a->cb = cb;
        a->ctx = ctx;
        uv_timer_init(g.loop, &a->timer);
        a->timer.data = a;
        util_random_hex(rnd, 12);
        json_object_set_new(info, "approval_id", json_sprintf("apr_%s", rnd));
        json_object_set_new(info, "findings", policy_findings_json(r));
        json_object_set_new(info, "choices", approval_choices(r));
        json_object_set_new(info, "expires_in_ms", json_integer((json_int_t) ms));
        a->call_id = xstrdup(conn_call(c, "approval.request", info, approval_answer_cb, a));
        if (!a->answered)
                uv_timer_start(&a->timer, approval_timeout_cb, ms, 0);
}

/* Decides on a verdict for one request. */
void
approval_decide(struct conn *c, struct sandbox *sb, bool host_access, json_t *info,
                const struct policy_result *r, approval_cb cb, void *ctx)
{
        json_t *keys;

        if (r->verdict == POLICY_ALLOW) {
                json_decref(info);
                cb(ctx, true, "policy");
                return;
        }
        if (r->verdict == POLICY_DENY) {
                json_decref(info);
                cb(ctx, false, "policy");
                return;
        }
        /* ASK on a sandbox that shows nothing of the host is allowed, as in the system we
         * replace; DENY above applies everywhere. */
        if (!host_access) {
                json_decref(info);
                cb(ctx, true, "policy");
                return;
        }
        keys = approval_keys(r);
        if (sb && approval_all_in(keys, sb->approvals)) {
                json_decref(keys);
                json_decref(info);
                cb(ctx, true, "user");
                return;
        }
        switch (conn_role(c)) {
        case CONN_ROLE_SUBAGENT:
                json_decref(keys);
                json_decref(info);
                cb(ctx, g.config->subagent_auto_approve, "role");
                return;
        case CONN_ROLE_BATCH:
                json_decref(keys);
                json_decref(info);
                cb(ctx, conn_auto_approve(c) && approval_uid_listed(conn_uid(c)), "role");
                return;
        case CONN_ROLE_INTERACTIVE:
                break;
        }
        approval_ask(c, sb, info, r, keys, cb, ctx);
}
