/* container.c — container-spec checks: the entry points and the spec's own fields (backend,
 * network, mounts, docker, singularity). An allowlist: HostConfig fields go through the table
 * of container_hc.c, mounts through container_mounts.c (judged by what they resolve to), the
 * docker/podman CLI through container_cli.c. Kubernetes Pod Security "baseline"/"restricted"
 * and CIS Docker §5 are the references; see docs/policy.md for every rule and why.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "policy/container_int.h"
#include "protocol/util.h"

/* Adds a built-in finding. */
void
cj_add(struct cjudge *j, const char *rule, const char *match)
{
        analyze_add(j->ev, j->unit, rule, match, match);
}

/* printf into the arena. */
const char *
cj_fmt(struct cjudge *j, const char *fmt, ...)
{
        va_list ap;
        char *s, *out;

        va_start(ap, fmt);
        s = xvasprintf(fmt, ap);
        va_end(ap);
        out = arena_strdup(&j->ev->ar, s);
        free(s);
        return out;
}

/* A value that cannot be judged. */
void
cj_invalid(struct cjudge *j, const char *param, const char *fmt, ...)
{
        va_list ap;
        char *msg;

        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        if (j->cli) {
                cj_add(j, "container.cli-unknown", cj_fmt(j, "%s: %s", param, msg));
        } else {
                if (!j->ev->invalid.code)
                        sbx_error_param(&j->ev->invalid, param, "invalid params: %s: %s", param,
                                        msg);
                cj_add(j, "container.invalid", param);
        }
        free(msg);
}

/* null, false, 0, "", [] or {}. */
bool
cj_empty(json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_STRING:
                return json_string_length(v) == 0;
        case JSON_ARRAY:
                return json_array_size(v) == 0;
        case JSON_OBJECT:
                return json_object_size(v) == 0;
        case JSON_INTEGER:
                return json_integer_value(v) == 0;
        case JSON_REAL:
                return json_real_value(v) == 0;
        case JSON_TRUE:
                return false;
        default:
                return true;
        }
}

/* name is a token of the comma/blank separated list. */
bool
cj_listed(const char *list, const char *name)
{
        size_t n = strlen(name);

        for (const char *p = list; p && *p;) {
                p += strspn(p, ", \t");
                size_t l = strcspn(p, ", \t");
                if (l == n && l && strncmp(p, name, n) == 0)
                        return true;
                p += l;
        }
        return false;
}

/* null or one of the types. */
bool
cj_type_ok(unsigned types, json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_NULL:
                return true;
        case JSON_TRUE:
        case JSON_FALSE:
                return types & J_BOOL;
        case JSON_INTEGER:
                return types & J_INT;
        case JSON_STRING:
                return types & J_STR;
        case JSON_ARRAY:
                return (types & J_ARR) && json_array_size(v) <= CONTAINER_MAX_LIST;
        case JSON_OBJECT:
                return (types & J_OBJ) && json_object_size(v) <= CONTAINER_MAX_LIST;
        default:
                return false;
        }
}

/* An object with known keys (and types). */
bool
cj_object_ok(struct cjudge *j, const char *param, json_t *obj, const char *const *names,
             const unsigned *types)
{
        const char *k;
        json_t *v;

        if (!json_is_object(obj)) {
                cj_invalid(j, param, "must be an object");
                return false;
        }
        json_object_foreach(obj, k, v)
        {
                size_t n = 0;
                while (names[n] && strcmp(names[n], k) != 0)
                        n++;
                if (!names[n] || (types && !cj_type_ok(types[n], v))) {
                        cj_invalid(j, cj_fmt(j, "%s.%s", param, k),
                                   names[n] ? "has the wrong type" : "is not a known field");
                        return false;
                }
        }
        return true;
}

/* network: none | bridge | host (protocol §4). */
static void
spec_network(struct cjudge *j, json_t *net)
{
        const char *s = json_string_value(net);

        if (!net)
                return;
        if (!s) {
                cj_invalid(j, "network", "must be \"none\", \"bridge\" or \"host\"");
        } else if (!strcmp(s, "host")) {
                j->ev->host_access = true;
                cj_add(j, "container.host-ns", "network=host");
        } else if (strcmp(s, "none") != 0 && strcmp(s, "bridge") != 0) {
                cj_invalid(j, "network", "'%s' is not \"none\", \"bridge\" or \"host\"", s);
        }
}

/* docker: {host_config, user} — nothing else of the section reaches Docker. user (Config.User)
 * is the backend's to judge: it knows the caller and whether dockerd remaps users. */
static void
spec_docker(struct cjudge *j, json_t *sec)
{
        const char *key;
        json_t *v;

        if (!sec)
                return;
        if (!json_is_object(sec)) {
                cj_invalid(j, "docker", "must be an object {\"host_config\": {...}, \"user\": …}");
                return;
        }
        json_object_foreach(sec, key, v)
        {
                if (!strcmp(key, "user")) {
                        if (!json_is_string(v) || !json_string_length(v))
                                cj_invalid(j, "docker.user",
                                           "must be a user for the container: \"UID[:GID]\" or "
                                           "a name in the image");
                } else if (strcmp(key, "host_config") != 0) {
                        cj_invalid(j, cj_fmt(j, "docker.%s", key),
                                   "not a field of the docker section (host_config, user)");
                } else if (!json_is_object(v) && !json_is_null(v)) {
                        cj_invalid(j, "docker.host_config", "must be an object");
                } else if (json_is_object(v)) {
                        j->hc = v;
                        hc_check(j, "docker.host_config", v);
                }
        }
}

/* singularity.binds ["src[:dst[:opts]]"]: Apptainer binds host paths as the caller. */
static void
spec_singularity(struct cjudge *j, json_t *sec)
{
        json_t *b;
        size_t i;

        json_array_foreach(json_object_get(sec, "binds"), i, b)
        {
                const char *s = json_string_value(b);
                const char *param = cj_fmt(j, "singularity.binds[%zu]", i);
                if (!s) {
                        cj_invalid(j, param, "must be a string \"src[:dst[:opts]]\"");
                        continue;
                }
                mount_host_path(j, param, arena_strndup(&j->ev->ar, s, strcspn(s, ":")));
        }
}

/* local: {isolation: "namespaces" | "none"}; "none" runs on the host itself. */
static void
spec_local(struct cjudge *j, json_t *sec)
{
        static const char *const names[] = {"isolation", NULL};
        static const unsigned types[] = {J_STR};
        const char *iso;

        if (!sec || !cj_object_ok(j, "local", sec, names, types))
                return;
        iso = json_string_value(json_object_get(sec, "isolation"));
        if (iso && strcmp(iso, "namespaces") && strcmp(iso, "none"))
                cj_invalid(j, "local.isolation", "'%s' is not \"namespaces\" or \"none\"", iso);
        else if (iso && !strcmp(iso, "none"))
                j->ev->host_access = true;
}

/* Judges a sandbox.create-shaped spec (the CLI translation included). */
void
container_judge(struct cjudge *j, json_t *spec)
{
        const char *backend = json_string_value(json_object_get(spec, "backend"));

        if (!backend && j->ev->ctx)
                backend = j->ev->ctx->backend;
        if (backend && !strcmp(backend, "singularity"))
                j->ev->host_access = true;
        /* Keys are exact (JSON-RPC params), unlike Docker's: "Mounts" is not "mounts". */
        const char *k;
        json_t *v;
        json_object_foreach(spec, k, v) if (!strv_contains(policy_sandbox_keys, k))
                cj_invalid(j, k, "not a sandbox.create param");
        spec_network(j, json_object_get(spec, "network"));
        mount_protocol(j, "mounts", json_object_get(spec, "mounts"));
        spec_docker(j, json_object_get(spec, "docker"));
        spec_singularity(j, json_object_get(spec, "singularity"));
        spec_local(j, json_object_get(spec, "local"));
}

const char *const policy_sandbox_keys[] = {
        "backend", "name", "image", "workdir", "env", "labels", "network", "resources", "mounts",
        "timeout_s", "idle_timeout_s",
        /* policy_sandbox_sections */
        "local", "docker", "ssh", "singularity", "modal", "daytona", NULL};
const char *const *const policy_sandbox_sections = policy_sandbox_keys + 11;

/* Judges a sandbox.create-shaped spec; findings go to unit. */
void
container_check(struct eval *ev, int unit, json_t *spec, json_t *facts)
{
        const struct policy_ctx *ctx = ev->ctx;
        const char *backend = json_string_value(json_object_get(spec, "backend"));
        struct cjudge j = {.ev = ev,
                           .unit = unit,
                           .volumes = json_object_get(facts, "volumes"),
                           .containers = json_object_get(facts, "containers")};

        if (!backend && ctx)
                backend = ctx->backend;
        /* Only Docker mounts with root's rights on the caller's behalf; Apptainer and the
         * local backend run as the caller. */
        j.unprivileged = ctx && ctx->unprivileged && backend && !strcmp(backend, "docker");
        j.uid = ctx ? ctx->caller_uid : 0;
        container_judge(&j, spec);
        if (ctx && ctx->docker_limits && backend && !strcmp(backend, "docker"))
                limits_check(&j, spec, ctx->docker_limits);
}

/* A field name an operator may list: a Go identifier that Docker would not read as one of the
 * table's fields. */
static int
config_field_ok(const char *name, size_t n, struct sbx_error *err)
{
        char buf[128];
        const char *known;

        snprintf(buf, sizeof(buf), "%.*s", (int) MIN(n, sizeof(buf) - 1), name);
        if ((known = hc_field_folded(buf))) {
                sbx_error_set(err, SBX_E_PARAMS, NULL,
                              "unchecked_host_config_fields: Docker reads '%s' as "
                              "HostConfig.%s, which the policy checks itself; it cannot be "
                              "accepted unchecked",
                              buf, known);
                return -EINVAL;
        }
        if (n >= sizeof(buf) || !((buf[0] >= 'A' && buf[0] <= 'Z')) ||
            strspn(buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != n) {
                sbx_error_set(err, SBX_E_PARAMS, NULL,
                              "unchecked_host_config_fields: '%s' is not a HostConfig field name "
                              "(a capitalised ASCII identifier)",
                              buf);
                return -EINVAL;
        }
        return 0;
}

/* Checks the operator's [backend.docker] lists. */
int
policy_container_config_check(const char *unchecked_fields, const char *volume_drivers,
                              struct sbx_error *err)
{
        for (const char *p = unchecked_fields; p && *p;) {
                p += strspn(p, ", \t");
                size_t l = strcspn(p, ", \t");
                if (l && config_field_ok(p, l, err) < 0)
                        return -EINVAL;
                p += l;
        }
        for (const char *p = volume_drivers; p && *p;) {
                p += strspn(p, ", \t");
                size_t l = strcspn(p, ", \t");
                if (l && strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                   "_.-/:") < l) {
                        sbx_error_set(err, SBX_E_PARAMS, NULL,
                                      "volume_drivers: '%.*s' is not a volume driver name", (int) l,
                                      p);
                        return -EINVAL;
                }
                if (l == 5 && !strncmp(p, "local", 5)) {
                        sbx_error_set(err, SBX_E_PARAMS, NULL,
                                      "volume_drivers: 'local' is always accepted (and its "
                                      "options judged); list only other drivers");
                        return -EINVAL;
                }
                p += l;
        }
        return 0;
}
