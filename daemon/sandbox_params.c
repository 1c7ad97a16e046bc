/* sandbox_params.c — the params of sandbox.create: validation, the spec a sandbox keeps, and
 * whether a request by name may reuse an existing sandbox. */

#include <string.h>

#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "protocol/params.h"

#define SANDBOX_MAX_ENV    1024
#define SANDBOX_MAX_STRING 4096

static const char *const sandbox_networks[] = {"none", "bridge", "host", NULL};

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

/* Checks the params of sandbox.create (-32602 naming the field). */
int
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
json_t *
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
int
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
