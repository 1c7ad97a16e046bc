/* fuzz_container.c — libFuzzer target: the container checks and the HTTP helpers.
 *
 * The first byte picks what the rest is: a sandbox.create spec (JSON), a HostConfig (JSON),
 * docker/podman argv after "docker run", bytes for http_escape, or an HTTP response head.
 * Crashes, leaks and sanitizer reports are failures, and so is any of these:
 * - a spec that reaches a host path, a host device or a host namespace (decided here, apart
 *   from the checks, reading field names without regard to case as Docker does) comes back
 *   ALLOW for the daemon's owner, or anything but DENY for an unprivileged caller;
 * - an invalid spec (-32602) whose verdict is not DENY;
 * - http_escape output that is not NUL-terminated, not URL-safe or does not decode back;
 * - a parsed HTTP head whose length is outside the input.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/http.h"
#include "backends/http1.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const prot[] = {"/etc/sandboxd", "/var/lib/sandboxd", NULL};
static struct policy *pol;
static json_t *facts;

/* ---- the oracle: does the spec reach the host? ---- */

/* A member of o whose name equals want without regard to ASCII case (Docker also folds
 * U+017F and U+212A; the checks refuse every non-exact name, so ASCII is enough to find the
 * dangerous ones). */
static json_t *
get(json_t *o, const char *want)
{
        const char *k;
        json_t *v;

        json_object_foreach(o, k, v) if (!strcasecmp(k, want)) return v;
        return NULL;
}

static bool
ns_host(json_t *hc)
{
        static const char *const modes[] = {"PidMode",      "IpcMode",     "UTSMode", "UsernsMode",
                                            "CgroupnsMode", "NetworkMode", NULL};

        for (const char *const *m = modes; *m; m++) {
                const char *s = json_string_value(get(hc, *m));
                if (s && (!strcmp(s, "host") || !strncmp(s, "container:", 10)))
                        return true;
        }
        return json_is_true(get(hc, "Privileged")) || json_array_size(get(hc, "Devices")) ||
               json_array_size(get(hc, "DeviceRequests")) ||
               json_array_size(get(hc, "DeviceCgroupRules")) ||
               json_string_length(get(hc, "Cgroup")) > 0;
}

/* Driver options that put a host path or device behind a volume. */
static bool
opts_host(json_t *opts)
{
        const char *o = json_string_value(get(opts, "o"));

        const char *dev = json_string_value(get(opts, "device"));

        return (get(opts, "device") && (!dev || strcmp(dev, "tmpfs") != 0)) ||
               (o && strstr(o, "dir=")) || (o && strstr(o, "addr="));
}

static bool
volume_host(const char *name)
{
        json_t *v = json_object_get(json_object_get(facts, "volumes"), name ? name : "");

        return v && opts_host(json_object_get(v, "Options"));
}

static bool
mounts_host(json_t *mounts)
{
        json_t *m;
        size_t i;

        json_array_foreach(mounts, i, m)
        {
                const char *t = json_string_value(get(m, "Type"));
                json_t *vo = get(m, "VolumeOptions"), *dc = get(vo, "DriverConfig");
                if ((t && !strcasecmp(t, "bind")) || opts_host(get(dc, "Options")) ||
                    volume_host(json_string_value(get(m, "Source"))))
                        return true;
        }
        return false;
}

static bool
binds_host(json_t *binds)
{
        json_t *b;
        size_t i;

        json_array_foreach(binds, i, b)
        {
                const char *s = json_string_value(b);
                char name[256];
                if (!s || !strchr(s, ':'))
                        continue;
                snprintf(name, sizeof(name), "%.*s", (int) strcspn(s, ":"), s);
                if (name[0] == '/' || volume_host(name))
                        return true;
        }
        return false;
}

static bool
from_host(json_t *from)
{
        json_t *f;
        size_t i;

        json_array_foreach(from, i, f)
        {
                const char *s = json_string_value(f);
                if (s && !strncmp(s + (s[0] == '/'), "hostroot", 8))
                        return true;
        }
        return false;
}

static bool
reaches_host(json_t *spec)
{
        json_t *hc = get(get(spec, "docker"), "host_config"), *m;
        const char *net = json_string_value(get(spec, "network"));
        size_t i;

        json_array_foreach(get(spec, "mounts"), i, m)
        {
                const char *t = json_string_value(get(m, "type"));
                if ((t && !strcmp(t, "bind")) || volume_host(json_string_value(get(m, "source"))))
                        return true;
        }
        return (net && !strcmp(net, "host")) || ns_host(hc) || mounts_host(get(hc, "Mounts")) ||
               binds_host(get(hc, "Binds")) || from_host(get(hc, "VolumesFrom"));
}

/* ---- modes ---- */

static void
judge(json_t *spec)
{
        struct policy_ctx ctx = {.backend = "docker", .home = "/home/u", .protected_paths = prot};
        struct policy_result r;
        const char *backend = json_string_value(json_object_get(spec, "backend"));
        bool host = reaches_host(spec);

        static struct policy_docker_limits lim;
        static const struct policy_host h = {.cpus = 2, .mem = INT64_C(4) << 30, .pid_max = 32768};
        static json_t *sec;

        /* the daemon's maxima and images on every other pass (NULL: the read-back's) */
        if (!sec) {
                struct sbx_error err = {0};
                sec = json_pack("{s:s}", "images", "busybox:*, alpine:3.19, x.io/a/b:1");
                if (policy_docker_limits_parse(sec, &h, &lim, &err) < 0)
                        abort();
        }
        for (int pass = 0; pass < 4; pass++) {
                int unpriv = pass & 1;
                ctx.docker_limits = pass & 2 ? &lim : NULL;
                ctx.unprivileged = unpriv;
                ctx.caller_uid = unpriv ? 1000 : 0;
                /* ... whose host paths are resolved as it could (policy/hostpath.c) */
                ctx.resolve_as = unpriv;
                ctx.who = (struct policy_who){.uid = 1000, .gid = 1000};
                policy_eval_sandbox(pol, &ctx, spec, facts, &r);
                if (r.invalid.code && r.verdict != POLICY_DENY)
                        abort();
                if (host && r.verdict == POLICY_ALLOW)
                        abort();
                if (host && unpriv && (!backend || !strcmp(backend, "docker")) &&
                    r.verdict != POLICY_DENY && !get(spec, "singularity"))
                        abort();
                json_decref(policy_findings_json(&r));
                policy_result_clear(&r);
        }
}

static void
fuzz_json(const char *s, size_t n, bool hc_only)
{
        json_t *v = json_loadb(s, n, JSON_DECODE_ANY, NULL);

        if (!v)
                return;
        if (hc_only)
                v = json_pack("{s:s,s:{s:o}}", "backend", "docker", "docker", "host_config", v);
        judge(v);
        json_decref(v);
}

static void
fuzz_cli(const char *s, size_t n)
{
        struct policy_ctx ctx = {.backend = "local",
                                 .host_access = true,
                                 .cwd = "/home/u/w",
                                 .home = "/home/u",
                                 .protected_paths = prot};
        struct policy_result r;
        char *cmd = malloc(n + 12);

        memcpy(cmd, "docker run ", 11);
        memcpy(cmd + 11, s, n);
        cmd[n + 11] = '\0';
        policy_eval_command(pol, &ctx, cmd, &r);
        policy_result_clear(&r);
        free(cmd);
}

static void
fuzz_escape(const char *s)
{
        char *e = http_escape(s), *d = malloc(strlen(s) + 1);
        size_t o = 0;

        for (const char *p = e; *p; p++) {
                if (*p == '%' && isxdigit((unsigned char) p[1]) && isxdigit((unsigned char) p[2])) {
                        char hex[3] = {p[1], p[2], 0};
                        d[o++] = (char) strtol(hex, NULL, 16);
                        p += 2;
                } else if (isalnum((unsigned char) *p) || strchr("-_.~/:@", *p)) {
                        d[o++] = *p;
                } else {
                        abort();
                }
        }
        d[o] = '\0';
        if (strcmp(d, s) != 0)
                abort();
        free(d);
        free(e);
}

static void
fuzz_head(const char *s, size_t n)
{
        struct http1_head h;
        int rc = http1_parse_head(s, n, 4096, &h);

        if (rc == 1 && (h.head_len > n || h.head_len < 16 || h.status < 0 || h.status > 999))
                abort();
}

/* One input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s;

        if (size < 1 || size > 65536)
                return 0;
        if (!pol) {
                pol = policy_new_default();
                facts = json_loads("{\"volumes\":{\"evil\":{\"Driver\":\"local\",\"Options\":"
                                   "{\"type\":\"none\",\"o\":\"bind\",\"device\":\"/etc\"}}},"
                                   "\"containers\":{\"hostroot\":{\"Mounts\":[{\"Type\":\"bind\","
                                   "\"Source\":\"/\",\"Destination\":\"/h\"}]}}}",
                                   0, NULL);
        }
        s = malloc(size);
        memcpy(s, data + 1, size - 1);
        s[size - 1] = '\0';
        switch (data[0] % 5) {
        case 0:
                fuzz_json(s, size - 1, false);
                break;
        case 1:
                fuzz_json(s, size - 1, true);
                break;
        case 2:
                fuzz_cli(s, strlen(s));
                break;
        case 3:
                fuzz_escape(s);
                break;
        default:
                fuzz_head(s, size - 1);
                break;
        }
        free(s);
        return 0;
}
