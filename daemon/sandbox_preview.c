/* sandbox_preview.c — what the default sandbox would be, without making it, for policy.check. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/hostpaths.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "daemon/sandbox_policy.h"
#include "protocol/util.h"

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

/* The preview is over: cb is told sb, or err. */
static void
sandbox_preview_end(struct sandbox_preview *pv, struct sbx_error *err)
{
        list_del(&pv->node);
        pv->cb(pv->ctx, err ? NULL : pv->sb, err);
        sandbox_unref(pv->sb);
        free(pv);
}

static void
sandbox_preview_workdir_cb(void *ctx, const char *workdir)
{
        struct sandbox_preview *pv = ctx;

        if (workdir)
                pv->sb->workdir = xstrdup(workdir);
        sandbox_preview_end(pv, NULL);
}

/* The spec's judgement, as a create's (hostpaths_eval_fn). */
static void
sandbox_preview_eval(void *ctx, json_t *host_paths, json_t *wanted, struct policy_result *r)
{
        sandbox_eval_spec(((struct sandbox_preview *) ctx)->sb, NULL, host_paths, wanted, r);
}

/* The host access a create would find: the spec's judgement (its host paths resolved as the
 * caller first, as a create's) and the backend's caps (as in sandbox_judged), before the
 * backend adds its own (local: network "host"); then the workdir the backend would choose. */
static void
sandbox_preview_judged(void *ctx, struct policy_result *r, json_t *paths, struct sbx_error *herr)
{
        struct sandbox_preview *pv = ctx;
        struct sandbox *sb = pv->sb;
        struct sbx_error err = {0};

        if (herr) { /* as a create's: the default sandbox's would fail so */
                hostpaths_fail(&err, herr, sb->ops->name, "the default sandbox's spec");
                sandbox_preview_end(pv, &err);
                sbx_error_clear(&err);
                return;
        }
        sb->host_access = sandbox_judged_host_access(sb, r);
        sandbox_spec_fields(sb, &pv->spec);
        if (sb->ops->preview_workdir)
                sb->ops->preview_workdir(&pv->spec, pv, sandbox_preview_workdir_cb);
        else
                sandbox_preview_workdir_cb(pv, NULL);
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
        hostpaths_judge(c, &pv->sb->who, sandbox_preview_eval, sandbox_preview_judged, pv);
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
