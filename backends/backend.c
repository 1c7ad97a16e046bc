/* backend.c — the backend registry. */
#include "backends/backend.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona.h"
#include "backends/docker/docker.h"
#include "backends/modal/modal.h"
#include "backends/singularity/singularity.h"
#include "backends/ssh/ssh.h"
#include "policy/policy.h"
#include "protocol/util.h"

static const struct backend_ops *const backend_table[] = {
        &local_backend_ops,
        &docker_backend_ops,
        &ssh_backend_ops,
        &singularity_backend_ops,
        &modal_backend_ops,
        &daytona_backend_ops,
        NULL,
};

/* Whether a comma/space list of user names or uids (or group names or gids) names id. */
static bool
backend_list_has(const char *list, unsigned id, bool groups)
{
        char *copy = xstrdup(list), *save = NULL, *tok;
        bool hit = false;

        for (tok = strtok_r(copy, " ,", &save); tok && !hit; tok = strtok_r(NULL, " ,", &save)) {
                char *end;
                unsigned long n = strtoul(tok, &end, 10);
                if (!strcmp(tok, "*"))
                        hit = true;
                else if (!*end && end != tok)
                        hit = n == id;
                else if (groups) {
                        struct group *g = getgrnam(tok);
                        hit = g && g->gr_gid == id;
                } else {
                        struct passwd *pw = getpwnam(tok);
                        hit = pw && pw->pw_uid == id;
                }
        }
        free(copy);
        return hit;
}

/* Whether who's uid is in users, or its gid or one of its groups in groups (either may be NULL). */
bool
backend_identity_listed(const char *users, const char *groups, const struct backend_identity *who)
{
        if (users && backend_list_has(users, who->uid, false))
                return true;
        if (groups && backend_list_has(groups, who->gid, true))
                return true;
        for (size_t i = 0; groups && i < who->ngroups; i++)
                if (backend_list_has(groups, who->groups[i], true))
                        return true;
        return false;
}

static bool
backend_key_listed(const char *const *keys, const char *key)
{
        for (size_t i = 0; keys && keys[i]; i++)
                if (!strcmp(keys[i], key))
                        return true;
        return false;
}

/* A sandbox's caps. */
unsigned
backend_caps(const struct backend_ops *ops, json_t *spec)
{
        return ops->spec_caps ? ops->spec_caps(spec) : ops->caps;
}

/* Finds a backend by name. */
const struct backend_ops *
backend_lookup(const char *name)
{
        for (size_t i = 0; backend_table[i]; i++)
                if (!strcmp(backend_table[i]->name, name))
                        return backend_table[i];
        return NULL;
}

/* All backends. */
const struct backend_ops *const *
backend_all(void)
{
        return backend_table;
}

/* The host paths a re-judgement takes. */
json_t *
backend_rejudge_paths(json_t *resolved)
{
        json_t *paths = json_object(), *v;
        const char *k;

        json_object_foreach(resolved, k, v)
        {
                char *key = policy_host_path_key(k);
                if (key)
                        json_object_set(paths, key, v);
                free(key);
                if (json_is_string(v))
                        json_object_set(paths, json_string_value(v), v);
        }
        return paths;
}

int
backend_rejudge(const char *backend, json_t *requested, json_t *real, json_t *host_paths,
                const char *what, struct sbx_error *err, bool *host_access)
{
        struct policy *pol = policy_new_default();
        struct policy_ctx pctx = {.backend = backend, .host_paths = host_paths};
        struct policy_result want = {0}, got = {0};
        int rc = 0;

        policy_eval_sandbox(pol, &pctx, requested, NULL, &want);
        policy_eval_sandbox(pol, &pctx, real, NULL, &got);
        if (host_access)
                *host_access = got.host_access;
        if (got.verdict > want.verdict) {
                sbx_error_set(err, SBX_E_DENIED,
                              json_pack("{s:s,s:s,s:o}", "verdict",
                                        policy_verdict_name(got.verdict), "resolution", "policy",
                                        "findings", policy_findings_json(&got)),
                              "%s", what);
                rc = -EPERM;
        }
        policy_result_clear(&want);
        policy_result_clear(&got);
        policy_free(pol);
        return rc;
}

/* Reports the keys of config that are not in keys nor common to every section. */
int
backend_config_known(json_t *config, const char *backend, const char *const *keys,
                     backend_config_report_fn report, void *ctx)
{
        static const char *const common[] = {BACKEND_COMMON_KEYS, NULL};
        const char *key;
        json_t *v;
        int n = 0;

        json_object_foreach(config, key, v)
        {
                if (backend_key_listed(common, key) || backend_key_listed(keys, key))
                        continue;
                char *msg = xasprintf("unknown key '%s' in section [backend.%s] (see "
                                      "docs/backends/%s.md)",
                                      key, backend, backend);
                report(ctx, key, msg);
                free(msg);
                n++;
        }
        return n;
}

void
backend_config_tally_cb(void *ctx, const char *key, const char *message)
{
        struct backend_config_tally *t = ctx;

        t->report(t->ctx, key, message);
        t->n++;
}

void
backend_config_tally_error(struct backend_config_tally *t, const char *key, struct sbx_error *e)
{
        backend_config_tally_cb(t, key ? key : json_string_value(json_object_get(e->data, "param")),
                                e->message);
        sbx_error_clear(e);
}

/* Keeps the first problem reported to init. */
void
backend_config_first_error(void *ctx, const char *key, const char *message)
{
        struct sbx_error *err = ctx;

        if (!err->code)
                sbx_error_param(err, key ? key : "config", "%s", message);
}

void
backend_probe_public(json_t *details, const char *reason, const char *hint)
{
        json_object_set_new(details, "public",
                            json_pack("{s:s,s:s?}", "reason", reason, "hint", hint));
}
