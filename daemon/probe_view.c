/* probe_view.c — a backend's probe as an unprivileged caller sees it (probe_view.h).
 *
 * A backend's reason, hint and details are written for the operator: they name the daemon's
 * PATH, its credential files, its home and the sockets it talks to. A caller that is neither
 * root nor the daemon's owner gets an allowlist: per backend the details keys known to hold
 * nothing of the daemon's environment, and the public reason and hint the backend gave for
 * them (what is missing, what the operator must do). Unknown keys and backends show nothing. */
#include "daemon/probe_view.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/util.h"

/* Dotted paths into details. */
static const char *const local_keys[] = {"runs_as_caller",
                                         "cgroups.version",
                                         "cgroups.memory",
                                         "cgroups.pids",
                                         "cgroups.cpu",
                                         "isolation.default",
                                         "isolation.fallback",
                                         "isolation.namespaces.available",
                                         "isolation.namespaces.kernel",
                                         "isolation.namespaces.user_namespaces",
                                         "isolation.namespaces.namespaces",
                                         "isolation.namespaces.landlock_abi",
                                         "isolation.namespaces.seccomp",
                                         "isolation.namespaces.seccomp_denies",
                                         NULL};
static const char *const docker_keys[] = {"api_version", "server_version", "exec", "userns_remap",
                                          "ncpu",        "mem_total",      NULL};
static const char *const ssh_keys[] = {"hosts", "exec", NULL};
static const char *const sing_keys[] = {"version", "limits", NULL};
static const char *const modal_keys[] = {"requested_mode",
                                         "selected",
                                         "has_direct_credentials",
                                         "managed_configured",
                                         "managed_ready",
                                         "app",
                                         NULL};
static const char *const daytona_keys[] = {"target",
                                           "image",
                                           "snapshot",
                                           "network",
                                           "auto_stop_minutes",
                                           "auto_archive_minutes",
                                           "auto_delete_minutes",
                                           "persistent",
                                           NULL};

static const struct {
        const char *backend;
        const char *const *keys;
} probe_views[] = {
        {"local", local_keys},      {"docker", docker_keys}, {"ssh", ssh_keys},
        {"singularity", sing_keys}, {"modal", modal_keys},   {"daytona", daytona_keys},
};

/* Copies src's value at path (dotted) into dst, making the objects on the way. */
static void
probe_view_copy(json_t *dst, json_t *src, const char *path)
{
        const char *dot = strchr(path, '.');
        char *key = dot ? xstrndup(path, (size_t) (dot - path)) : xstrdup(path);
        json_t *v = json_object_get(src, key);

        if (v && !dot) {
                json_object_set(dst, key, v);
        } else if (json_is_object(v)) {
                json_t *sub = json_object_get(dst, key);
                if (!sub) {
                        sub = json_object();
                        json_object_set_new(dst, key, sub);
                }
                probe_view_copy(sub, v, dot + 1);
        }
        free(key);
}

json_t *
probe_view_details(const char *backend, json_t *details)
{
        json_t *out = json_object();

        for (size_t i = 0; i < ARRAY_SIZE(probe_views); i++) {
                if (strcmp(probe_views[i].backend, backend))
                        continue;
                for (const char *const *k = probe_views[i].keys; *k; k++)
                        probe_view_copy(out, details, *k);
        }
        return out;
}

void
probe_view_reason(const char *backend, json_t *pub, char **reason, char **hint)
{
        const char *r = json_string_value(json_object_get(pub, "reason"));
        const char *h = json_string_value(json_object_get(pub, "hint"));

        *reason = r ? xstrdup(r)
                    : xasprintf("the %s backend is not set up on this daemon (root and the "
                                "daemon's user see what is missing)",
                                backend);
        *hint = h ? xstrdup(h)
                  : xasprintf("ask the daemon's operator to set it up (docs/backends/%s.md)",
                              backend);
}
