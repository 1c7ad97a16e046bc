/* sandbox_preview.c — what the default sandbox would be, without making it, for policy.check. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "daemon/sandbox_policy.h"
#include "protocol/util.h"

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
        uid_t uid;        /* whose */
        struct sandbox *sb;
        struct sandbox_spec spec;
        sandbox_ready_cb cb;
        void *ctx;
};

static struct list sandbox_previews = {&sandbox_previews, &sandbox_previews};

static unsigned
sandbox_previews_of(uid_t uid)
{
        return LIST_COUNT_UID(&sandbox_previews, struct sandbox_preview, node, uid, uid);
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
        pv->uid = conn_uid(c);
        pv->cb = cb;
        pv->ctx = ctx;
        list_add_tail(&sandbox_previews, &pv->node);
        sandbox_spec_fields(pv->sb, &pv->spec);
        if (ops->preview_workdir)
                ops->preview_workdir(&pv->spec, pv, sandbox_preview_workdir_cb);
        else
                sandbox_preview_workdir_cb(pv, NULL);
}

/* What a create of params would refuse up front: see sandbox.h. */
int
sandbox_preview_spec(struct conn *c, const char *backend, json_t *params, struct sbx_error *err)
{
        const struct backend_ops *ops = backend_lookup(backend);
        struct sandbox_spec spec = {0};
        struct sandbox *sb;
        int r;

        if (!ops || !ops->check_spec)
                return 0;
        sb = sandbox_alloc_unlisted(params, ops);
        snprintf(sb->id, sizeof(sb->id), "sbx_preview");
        sb->owner = conn_uid(c);
        sandbox_identity(c, &sb->who);
        sb->name = xstrdup("preview");
        sandbox_spec_fields(sb, &spec);
        if (!strcmp(ops->name, "docker")) /* as sandbox_fill_spec does */
                sandbox_policy_docker_spec(&spec, &sb->who);
        r = ops->check_spec(&spec, err);
        sandbox_unref(sb);
        return r;
}
