/* sandbox_adopt.c — re-adopting a recorded sandbox after a restart, and recreating one whose
 * container vanished. */

#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/hostpaths.h"
#include "daemon/log.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "daemon/sandbox_policy.h"
#include "protocol/util.h"

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

/* The judgement of a recreate (hostpaths_judged_fn), with the host paths resolved as the
 * owner: allowed, or asking exactly what was approved at create. */
static void
sandbox_rejudged(void *ctx, struct policy_result *r, json_t *paths, struct sbx_error *herr)
{
        struct sandbox_create *sc = ctx;
        struct sandbox *sb = sc->sb;
        struct sbx_error err = {0};
        json_t *findings;

        if (herr) {
                hostpaths_fail(&err, herr, sb->ops->name, "the sandbox spec again");
                sandbox_create_fail(sc, &err);
                sbx_error_clear(&err);
                return;
        }
        sc->host_paths = json_incref(paths); /* what the backend binds */
        sc->pr = *r;
        memset(r, 0, sizeof(*r)); /* sc->pr has it now */
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

/* Judges a recreate as a create is judged: the host paths its spec names (bind sources) are
 * resolved first as its owner, in helpers, off the loop, bounded (hostpaths.h); nobody's
 * connection waits on them but the execs that asked for the recreate. */
static void
sandbox_rejudge(struct sandbox_create *sc, json_t *facts)
{
        sc->facts = json_incref(facts);
        hostpaths_judge(NULL, &sc->sb->who, sandbox_judge_eval, sandbox_rejudged, sc);
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
