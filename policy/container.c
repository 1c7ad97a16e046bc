/* container.c — container-spec checks (sandbox.create params, docker/podman CLI argv).
 *
 * Follows Kubernetes Pod Security "baseline" and CIS Docker §5: privileged mode, host
 * namespaces, capabilities, devices, security options, sysctls, propagation, published ports,
 * and host paths resolved by realpath and matched below AND above protected paths (mounting
 * /var exposes /var/run/docker.sock). Named volumes are judged by their inspected options.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

static const char *const system_paths[] = {"/etc",
                                           "/proc",
                                           "/sys",
                                           "/dev",
                                           "/boot",
                                           "/lib",
                                           "/lib32",
                                           "/lib64",
                                           "/libx32",
                                           "/usr",
                                           "/bin",
                                           "/sbin",
                                           "/root",
                                           "/run",
                                           "/var/run",
                                           "/var/lib/docker",
                                           "/var/lib/containerd",
                                           "/var/lib/kubelet",
                                           "/var/lib/containers",
                                           "/var/log",
                                           NULL};
static const char *const socket_paths[] = {"/var/run/docker.sock",
                                           "/run/docker.sock",
                                           "/run/containerd/containerd.sock",
                                           "/var/run/containerd/containerd.sock",
                                           "/run/podman/podman.sock",
                                           "/var/run/podman/podman.sock",
                                           "/run/crio/crio.sock",
                                           "/var/run/crio/crio.sock",
                                           "/run/buildkit/buildkitd.sock",
                                           "/var/run/buildkit/buildkitd.sock",
                                           "/run/dockershim.sock",
                                           "/run/user/*/docker.sock",
                                           "/run/user/*/podman/podman.sock",
                                           "/run/user/*/buildkit/buildkitd.sock",
                                           NULL};
static const char *const cred_names[] = {".ssh",           ".aws",   ".gnupg", ".kube",
                                         ".docker",        ".azure", ".netrc", ".git-credentials",
                                         ".config/gcloud", NULL};
static const char *const bad_caps[] = {"ALL",       "SYS_ADMIN",       "SYS_MODULE",   "SYS_PTRACE",
                                       "SYS_RAWIO", "DAC_READ_SEARCH", "BPF",          "PERFMON",
                                       "SYS_BOOT",  "MAC_ADMIN",       "MAC_OVERRIDE", NULL};
static const char *const base_caps[] = {
        "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",       "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT", NULL};
static const char *const safe_sysctls[] = {"kernel.shm_rmid_forced",
                                           "net.ipv4.ip_local_port_range",
                                           "net.ipv4.ip_unprivileged_port_start",
                                           "net.ipv4.tcp_syncookies",
                                           "net.ipv4.ping_group_range",
                                           "net.ipv4.ip_local_reserved_ports",
                                           "net.ipv4.tcp_keepalive_time",
                                           "net.ipv4.tcp_fin_timeout",
                                           "net.ipv4.tcp_keepalive_intvl",
                                           "net.ipv4.tcp_keepalive_probes",
                                           NULL};

static bool
in_list(const char *s, const char *const *l)
{
        for (; *l; l++)
                if (strcmp(s, *l) == 0)
                        return true;
        return false;
}

/* The first comps '/'-components of s into out; false if s has fewer. */
static bool
prefix_comps(const char *s, size_t comps, char *out, size_t outlen)
{
        size_t k = 0, seen = 0;

        for (; s[k]; k++)
                if (s[k] == '/' && ++seen > comps)
                        break;
        if (seen < comps || k >= outlen)
                return false;
        memcpy(out, s, k);
        out[k] = '\0';
        return true;
}

static size_t
ncomps(const char *s)
{
        size_t n = 0;

        for (; *s; s++)
                n += *s == '/';
        return n;
}

/* path is pat (a glob) or lies below it. */
static bool
glob_below(const char *path, const char *pat)
{
        char pre[PATH_MAX];

        return prefix_comps(path, ncomps(pat), pre, sizeof(pre)) &&
               fnmatch(pat, pre, FNM_PATHNAME) == 0;
}

/* path is an ancestor of something pat matches. */
static bool
glob_above(const char *path, const char *pat)
{
        char pre[PATH_MAX];
        size_t c = ncomps(path);

        if (strcmp(path, "/") == 0)
                return true;
        return ncomps(pat) > c && prefix_comps(pat, c, pre, sizeof(pre)) &&
               fnmatch(pre, path, FNM_PATHNAME) == 0;
}

static bool
hits(const char *path, const char *pat)
{
        return glob_below(path, pat) || glob_above(path, pat);
}

static bool
is_cred(struct eval *ev, const char *path)
{
        for (const char *const *c = cred_names; *c; c++) {
                size_t l = strlen(*c);
                for (const char *p = strstr(path, *c); p; p = strstr(p + 1, *c))
                        if (p > path && p[-1] == '/' && (p[l] == '/' || p[l] == '\0'))
                                return true;
        }
        if (strcmp(path, "/home") == 0 || fnmatch("/home/*", path, FNM_PATHNAME) == 0)
                return true;
        if (ev->home) {
                const char *h = analyze_path(ev, ev->home);
                size_t l = strlen(path);
                if (!strncmp(h, path, l) && (h[l] == '/' || h[l] == '\0'))
                        return true;
        }
        return false;
}

/* Resolves symlinks; a missing tail is kept as written (Docker creates it). */
static const char *
resolve(struct eval *ev, const char *path)
{
        char buf[PATH_MAX], tmp[PATH_MAX];
        size_t n = strlen(path);

        if (n >= sizeof(tmp))
                return path;
        memcpy(tmp, path, n + 1);
        for (size_t cut = n;;) {
                tmp[cut] = '\0';
                if (realpath(cut ? tmp : "/", buf)) {
                        const char *rest = path + cut;
                        char *out = arena_alloc(&ev->ar, strlen(buf) + strlen(rest) + 2);
                        strcpy(out, buf);
                        if (*rest && strcmp(buf, "/") != 0)
                                strcat(out, rest);
                        else if (*rest)
                                strcpy(out, rest);
                        return analyze_path(ev, out);
                }
                char *slash = strrchr(tmp, '/');
                if (!slash || slash == tmp) {
                        if (cut == 0)
                                return path;
                        cut = 0;
                        continue;
                }
                cut = (size_t) (slash - tmp);
        }
}

static const char *
workspace(struct eval *ev)
{
        return ev->ctx && ev->ctx->workspace && ev->ctx->workspace[0] == '/' ? ev->ctx->workspace
                                                                             : NULL;
}

/* Rule id for one normalised host path, NULL when it is fine. */
static const char *
mount_rule(struct eval *ev, const char *p)
{
        if (strcmp(p, "/") == 0)
                return "container.mount-root";
        for (const char *const *s = socket_paths; *s; s++)
                if (hits(p, *s))
                        return "container.mount-socket";
        for (const char *const *s = system_paths; *s; s++)
                if (hits(p, *s))
                        return "container.mount-system";
        if (ev->ctx && ev->ctx->protected_paths)
                for (const char *const *s = ev->ctx->protected_paths; *s; s++)
                        if (hits(p, analyze_path(ev, *s)))
                                return "container.mount-self";
        if (is_cred(ev, p))
                return "container.mount-credential";
        const char *ws = workspace(ev);
        if (ws && glob_below(p, analyze_path(ev, ws)))
                return NULL;
        return "container.mount-host";
}

static int
severity(const char *rule)
{
        if (!rule)
                return 0;
        return builtin_find(rule)->verdict == POLICY_DENY ? 2 : 1;
}

/* Judges a host path that will show inside the container. */
static void
check_bind(struct eval *ev, int unit, const char *src)
{
        const char *lex;

        ev->host_access = true;
        if (!src || !*src) {
                analyze_add(ev, unit, "container.mount-host", "(empty bind source)", "");
                return;
        }
        if (src[0] == '~' && ev->home) {
                char *j = arena_alloc(&ev->ar, strlen(ev->home) + strlen(src) + 1);
                strcpy(j, ev->home);
                strcat(j, src + 1);
                src = j;
        }
        lex = analyze_path(ev, src);
        if (!lex || lex[0] != '/') {
                analyze_add(ev, unit, "container.mount-host", src, src);
                return;
        }
        const char *res = resolve(ev, lex);
        const char *r1 = mount_rule(ev, lex), *r2 = mount_rule(ev, res);
        const char *r = severity(r2) > severity(r1) ? r2 : r1;
        if (r)
                analyze_add(ev, unit, r, strcmp(lex, res) ? res : src, res);
}

static const char *
opt(json_t *opts, const char *key)
{
        return json_string_value(json_object_get(opts, key));
}

/* A named volume with its driver and options (inspected or given). */
static void
check_volume_opts(struct eval *ev, int unit, const char *name, const char *driver, json_t *opts)
{
        const char *type = opt(opts, "type"), *o = opt(opts, "o"), *dev = opt(opts, "device");

        if (driver && *driver && strcmp(driver, "local") != 0) {
                analyze_add(ev, unit, "container.volume-driver", driver, name);
                return;
        }
        if (type && (!strcmp(type, "nfs") || !strcmp(type, "nfs4") || !strcmp(type, "cifs") ||
                     !strcmp(type, "smb") || !strcmp(type, "smb3")))
                analyze_add(ev, unit, "container.volume-netfs", type, name);
        if (!dev)
                return;
        if (!strncmp(dev, "/dev/", 5) && !(o && strstr(o, "bind"))) {
                ev->host_access = true;
                analyze_add(ev, unit, "container.volume-device", dev, name);
                return;
        }
        if ((o && strstr(o, "bind")) || (type && !strcmp(type, "none")))
                check_bind(ev, unit, dev);
}

static void
check_named(struct eval *ev, int unit, const char *name, json_t *volumes, json_t *driver_cfg)
{
        if (driver_cfg) {
                check_volume_opts(ev, unit, name, opt(driver_cfg, "Name"),
                                  json_object_get(driver_cfg, "Options"));
                return;
        }
        json_t *v = volumes ? json_object_get(volumes, name) : NULL;
        if (v)
                check_volume_opts(ev, unit, name, opt(v, "Driver"), json_object_get(v, "Options"));
}

static bool
looks_path(const char *s)
{
        return s[0] == '/' || s[0] == '~' || s[0] == '.';
}

/* "src:dst[:opts]" */
static void
check_bind_string(struct eval *ev, int unit, const char *b, json_t *volumes)
{
        char *src = arena_strdup(&ev->ar, b);
        char *c = strchr(src, ':');
        const char *opts = NULL;

        if (!c) {
                return; /* anonymous volume */
        }
        *c = '\0';
        opts = strchr(c + 1, ':');
        if (opts && (strstr(opts, "shared") || strstr(opts, "rshared")))
                analyze_add(ev, unit, "container.propagation", b, b);
        if (looks_path(src))
                check_bind(ev, unit, src);
        else
                check_named(ev, unit, src, volumes, NULL);
}

static void
check_caps(struct eval *ev, int unit, json_t *caps)
{
        size_t i;
        json_t *c;

        json_array_foreach(caps, i, c)
        {
                const char *s = json_string_value(c);
                char up[64];
                size_t k = 0;
                if (!s)
                        continue;
                if (!strncasecmp(s, "CAP_", 4))
                        s += 4;
                for (; s[k] && k + 1 < sizeof(up); k++)
                        up[k] = (char) toupper((unsigned char) s[k]);
                up[k] = '\0';
                if (in_list(up, bad_caps))
                        analyze_add(ev, unit, "container.cap", up, up);
                else if (!in_list(up, base_caps))
                        analyze_add(ev, unit, "container.cap-soft", up, up);
        }
}

static void
check_devices(struct eval *ev, int unit, json_t *devs)
{
        size_t i;
        json_t *d;

        json_array_foreach(devs, i, d)
        {
                const char *p = json_is_string(d) ? json_string_value(d) : opt(d, "PathOnHost");
                if (!p)
                        continue;
                char *host = arena_strdup(&ev->ar, p);
                char *colon = strchr(host, ':');
                if (colon)
                        *colon = '\0';
                ev->host_access = true;
                const char *n = analyze_path(ev, host);
                bool bad = n && (!strncmp(n, "/dev/sd", 7) || !strncmp(n, "/dev/nvme", 9) ||
                                 !strncmp(n, "/dev/vd", 7) || !strncmp(n, "/dev/xvd", 8) ||
                                 !strncmp(n, "/dev/hd", 7) || !strncmp(n, "/dev/mmcblk", 11) ||
                                 !strncmp(n, "/dev/dm-", 8) || !strncmp(n, "/dev/loop", 9) ||
                                 !strncmp(n, "/dev/mapper", 11) || !strncmp(n, "/dev/disk", 9) ||
                                 !strncmp(n, "/dev/md", 7) || !strcmp(n, "/dev/mem") ||
                                 !strcmp(n, "/dev/kmem") || !strcmp(n, "/dev/port") ||
                                 !strcmp(n, "/dev") || !strncmp(n, "/dev/nbd", 8));
                analyze_add(ev, unit, bad ? "container.device" : "container.device-soft", p, n);
        }
}

static void
check_secopts(struct eval *ev, int unit, json_t *so)
{
        size_t i;
        json_t *o;

        json_array_foreach(so, i, o)
        {
                const char *s = json_string_value(o);
                if (!s)
                        continue;
                char *t = arena_strdup(&ev->ar, s);
                for (char *c = t; *c; c++)
                        if (*c == ':')
                                *c = '=';
                if (!strcmp(t, "seccomp=unconfined") || !strcmp(t, "apparmor=unconfined") ||
                    !strcmp(t, "systempaths=unconfined"))
                        analyze_add(ev, unit, "container.secopt", s, t);
                else if (!strcmp(t, "label=disable") || !strncmp(t, "label=type", 10))
                        analyze_add(ev, unit, "container.selinux", s, t);
        }
}

static void
check_ns(struct eval *ev, int unit, json_t *hc)
{
        static const struct {
                const char *field;
                bool hard;
        } ns[] = {{"PidMode", true},  {"IpcMode", true},      {"UsernsMode", false},
                  {"UTSMode", false}, {"NetworkMode", false}, {"CgroupnsMode", false}};

        for (size_t k = 0; k < ARRAY_SIZE(ns); k++) {
                const char *v = opt(hc, ns[k].field);
                if (!v)
                        continue;
                char *m = xasprintf("%s=%s", ns[k].field, v);
                char *mm = arena_strdup(&ev->ar, m);
                free(m);
                if (!strcmp(v, "host")) {
                        ev->host_access = true;
                        analyze_add(ev, unit,
                                    ns[k].hard ? "container.host-ns" : "container.host-ns-soft", mm,
                                    mm);
                } else if (!strncmp(v, "container:", 10)) {
                        analyze_add(ev, unit, "container.host-ns-soft", mm, mm);
                }
        }
}

static void
check_ports(struct eval *ev, int unit, json_t *hc)
{
        const char *key;
        json_t *arr;

        if (json_is_true(json_object_get(hc, "PublishAllPorts")))
                analyze_add(ev, unit, "container.publish", "PublishAllPorts", "all");
        json_object_foreach(json_object_get(hc, "PortBindings"), key, arr)
        {
                size_t i;
                json_t *b;
                json_array_foreach(arr, i, b)
                {
                        const char *ip = opt(b, "HostIp");
                        if (!ip || !*ip || !strcmp(ip, "0.0.0.0") || !strcmp(ip, "::"))
                                analyze_add(ev, unit, "container.publish", key, key);
                }
        }
}

static void
check_mounts_api(struct eval *ev, int unit, json_t *mounts, json_t *volumes)
{
        size_t i;
        json_t *m;

        json_array_foreach(mounts, i, m)
        {
                const char *type = opt(m, "Type");
                const char *src = opt(m, "Source");
                const char *prop = opt(json_object_get(m, "BindOptions"), "Propagation");
                if (prop && (!strcmp(prop, "shared") || !strcmp(prop, "rshared")))
                        analyze_add(ev, unit, "container.propagation", prop, src ? src : "");
                if (!type || !strcmp(type, "bind"))
                        check_bind(ev, unit, src);
                else if (!strcmp(type, "volume") && src)
                        check_named(ev, unit, src, volumes,
                                    json_object_get(json_object_get(m, "VolumeOptions"),
                                                    "DriverConfig"));
        }
}

static void
check_host_config(struct eval *ev, int unit, json_t *hc, json_t *volumes)
{
        size_t i;
        json_t *v;
        const char *key;

        if (!json_is_object(hc))
                return;
        if (json_is_true(json_object_get(hc, "Privileged"))) {
                ev->host_access = true;
                analyze_add(ev, unit, "container.privileged", "Privileged", "privileged");
        }
        check_ns(ev, unit, hc);
        check_caps(ev, unit, json_object_get(hc, "CapAdd"));
        check_devices(ev, unit, json_object_get(hc, "Devices"));
        check_secopts(ev, unit, json_object_get(hc, "SecurityOpt"));
        json_object_foreach(json_object_get(hc, "Sysctls"), key, v) if (!in_list(key, safe_sysctls))
                analyze_add(ev, unit, "container.sysctl", key, key);
        json_array_foreach(json_object_get(hc, "Binds"), i, v) if (json_is_string(v))
                check_bind_string(ev, unit, json_string_value(v), volumes);
        check_mounts_api(ev, unit, json_object_get(hc, "Mounts"), volumes);
        check_ports(ev, unit, hc);
        if (json_array_size(json_object_get(hc, "VolumesFrom")))
                analyze_add(ev, unit, "container.volumes-from", "VolumesFrom", "volumes-from");
        json_array_foreach(json_object_get(hc, "DeviceCgroupRules"), i, v)
        {
                const char *r = json_string_value(v);
                if (r)
                        analyze_add(ev, unit,
                                    r[0] == 'a' || strstr(r, "*:*") ? "container.device"
                                                                    : "container.device-cgroup",
                                    r, r);
        }
}

static void
check_protocol_mounts(struct eval *ev, int unit, json_t *mounts, json_t *volumes)
{
        size_t i;
        json_t *m;

        json_array_foreach(mounts, i, m)
        {
                const char *type = opt(m, "type"), *src = opt(m, "source");
                if (type && !strcmp(type, "tmpfs"))
                        continue;
                if (type && !strcmp(type, "volume")) {
                        if (src)
                                check_named(ev, unit, src, volumes, NULL);
                        continue;
                }
                check_bind(ev, unit, src);
        }
}

/* Judges a sandbox.create-shaped spec; findings go to unit. */
void
container_check(struct eval *ev, int unit, json_t *spec, json_t *volumes)
{
        const char *backend = opt(spec, "backend");
        size_t i;
        json_t *b;

        if (!json_is_object(spec))
                return;
        if (backend && (!strcmp(backend, "local") || !strcmp(backend, "singularity")))
                ev->host_access = true;
        const char *net = opt(spec, "network");
        if (net && !strcmp(net, "host")) {
                ev->host_access = true;
                analyze_add(ev, unit, "container.host-ns-soft", "network=host", "network=host");
        }
        check_protocol_mounts(ev, unit, json_object_get(spec, "mounts"), volumes);
        check_host_config(ev, unit, json_object_get(json_object_get(spec, "docker"), "host_config"),
                          volumes);
        json_array_foreach(json_object_get(json_object_get(spec, "singularity"), "binds"), i, b)
        {
                const char *s = json_string_value(b);
                if (!s)
                        continue;
                char *src = arena_strdup(&ev->ar, s);
                char *c = strchr(src, ':');
                if (c)
                        *c = '\0';
                check_bind(ev, unit, src);
        }
}

/* ---- docker / podman CLI ---- */

static const char *const bool_long[] = {"detach",
                                        "interactive",
                                        "tty",
                                        "rm",
                                        "publish-all",
                                        "privileged",
                                        "init",
                                        "read-only",
                                        "no-healthcheck",
                                        "oom-kill-disable",
                                        "help",
                                        "quiet",
                                        "disable-content-trust",
                                        "sig-proxy",
                                        "use-api-socket",
                                        NULL};

static void
add_str(json_t *hc, const char *field, const char *v)
{
        json_t *a = json_object_get(hc, field);

        if (!a) {
                a = json_array();
                json_object_set_new(hc, field, a);
        }
        json_array_append_new(a, json_string(v));
}

/* --mount type=bind,source=/x,target=/y,bind-propagation=shared,volume-opt=k=v */
static void
cli_mount(json_t *hc, const char *v)
{
        json_t *m = json_object(), *opts = json_object();
        char *dup = xstrdup(v), *save = NULL;

        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(t, '=');
                const char *val = eq ? eq + 1 : "true";
                if (eq)
                        *eq = '\0';
                if (!strcmp(t, "type"))
                        json_object_set_new(m, "Type", json_string(val));
                else if (!strcmp(t, "source") || !strcmp(t, "src"))
                        json_object_set_new(m, "Source", json_string(val));
                else if (!strcmp(t, "bind-propagation"))
                        json_object_set_new(m, "BindOptions",
                                            json_pack("{s:s}", "Propagation", val));
                else if (!strcmp(t, "volume-opt") && strchr(val, '=')) {
                        char *k2 = xstrdup(val);
                        char *e2 = strchr(k2, '=');
                        *e2 = '\0';
                        json_object_set_new(opts, k2, json_string(e2 + 1));
                        free(k2);
                } else if (!strcmp(t, "volume-driver"))
                        json_object_set_new(m, "Driver", json_string(val));
        }
        free(dup);
        if (!json_object_get(m, "Type"))
                json_object_set_new(m, "Type", json_string("volume"));
        if (json_object_size(opts) || json_object_get(m, "Driver")) {
                json_t *dc = json_pack("{s:O}", "Options", opts);
                if (json_object_get(m, "Driver"))
                        json_object_set(dc, "Name", json_object_get(m, "Driver"));
                json_object_set_new(m, "VolumeOptions", json_pack("{s:o}", "DriverConfig", dc));
        }
        json_decref(opts);
        json_array_append_new(json_object_get(hc, "Mounts"), m);
}

/* -p [ip:]host:container */
static void
cli_publish(json_t *hc, const char *v)
{
        int colons = 0;

        for (const char *c = v; *c; c++)
                colons += *c == ':';
        if (v[0] == '[' || colons >= 2) {
                const char *ip_end = strrchr(v, ':');
                const char *first = strchr(v, ':');
                if (colons >= 2 && first != ip_end) {
                        char ip[64];
                        size_t l = (size_t) (first - v);
                        if (l >= sizeof(ip))
                                l = sizeof(ip) - 1;
                        memcpy(ip, v, l);
                        ip[l] = '\0';
                        json_object_set_new(json_object_get(hc, "PortBindings"), v,
                                            json_pack("[{s:s}]", "HostIp", ip));
                        return;
                }
        }
        json_object_set_new(json_object_get(hc, "PortBindings"), v,
                            json_pack("[{s:s}]", "HostIp", ""));
}

static void
cli_option(json_t *hc, const char *name, const char *v)
{
        static const struct {
                const char *opt, *field;
        } modes[] = {{"pid", "PidMode"},          {"ipc", "IpcMode"},     {"uts", "UTSMode"},
                     {"network", "NetworkMode"},  {"net", "NetworkMode"}, {"userns", "UsernsMode"},
                     {"cgroupns", "CgroupnsMode"}};
        static const struct {
                const char *opt, *field;
        } lists[] = {{"cap-add", "CapAdd"},
                     {"device", "Devices"},
                     {"security-opt", "SecurityOpt"},
                     {"volume", "Binds"},
                     {"v", "Binds"},
                     {"volumes-from", "VolumesFrom"},
                     {"device-cgroup-rule", "DeviceCgroupRules"}};

        for (size_t k = 0; k < ARRAY_SIZE(modes); k++)
                if (!strcmp(name, modes[k].opt))
                        json_object_set_new(hc, modes[k].field, json_string(v));
        for (size_t k = 0; k < ARRAY_SIZE(lists); k++)
                if (!strcmp(name, lists[k].opt))
                        add_str(hc, lists[k].field, v);
        if (!strcmp(name, "mount"))
                cli_mount(hc, v);
        else if (!strcmp(name, "publish") || !strcmp(name, "p"))
                cli_publish(hc, v);
        else if (!strcmp(name, "sysctl")) {
                char *d = xstrdup(v), *eq = strchr(d, '=');
                if (eq)
                        *eq = '\0';
                json_object_set_new(json_object_get(hc, "Sysctls"), d,
                                    json_string(eq ? eq + 1 : ""));
                free(d);
        } else if (!strcmp(name, "privileged") && strcmp(v, "false") != 0)
                json_object_set_new(hc, "Privileged", json_true());
        else if (!strcmp(name, "publish-all") || !strcmp(name, "P"))
                json_object_set_new(hc, "PublishAllPorts", json_true());
}

/* Options of run/create/exec up to the image; fills hc. */
static void
cli_parse(const struct word *av, size_t ac, json_t *hc)
{
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (s[0] != '-' || !s[1])
                        return;
                if (!strcmp(s, "--"))
                        return;
                char name[64];
                const char *val = NULL;
                if (s[1] == '-') {
                        const char *eq = strchr(s, '=');
                        size_t l = eq ? (size_t) (eq - s - 2) : strlen(s + 2);
                        if (l >= sizeof(name))
                                continue;
                        memcpy(name, s + 2, l);
                        name[l] = '\0';
                        if (eq)
                                val = eq + 1;
                        else if (in_list(name, bool_long))
                                val = "true";
                        else if (i + 1 < ac)
                                val = av[++i].s;
                        else
                                return;
                } else {
                        /* bundle of booleans (-dit, -P) or one value option (-v x, -vX) */
                        size_t b = strspn(s + 1, "ditPq");
                        if (s[1 + b] == '\0') {
                                if (strchr(s, 'P'))
                                        cli_option(hc, "P", "true");
                                continue;
                        }
                        name[0] = s[1 + b];
                        name[1] = '\0';
                        if (s[2 + b])
                                val = s + 2 + b;
                        else if (i + 1 < ac)
                                val = av[++i].s;
                        else
                                return;
                }
                cli_option(hc, name, val);
        }
}

/* docker/podman run|create|exec|volume create argv (after the program and global options). */
void
container_check_cli(struct eval *ev, int unit, const struct word *av, size_t ac)
{
        if (ac == 0)
                return;
        const char *sub = av[0].s;
        bool saved = ev->host_access;

        if (!strcmp(sub, "volume") && ac > 1 && !strcmp(av[1].s, "create")) {
                json_t *opts = json_object();
                const char *driver = NULL, *name = "(unnamed)";
                for (size_t i = 2; i < ac; i++) {
                        const char *s = av[i].s;
                        bool o = !strcmp(s, "-o") || !strcmp(s, "--opt");
                        bool d = !strcmp(s, "-d") || !strcmp(s, "--driver");
                        const char *v = (o || d) && i + 1 < ac        ? av[++i].s
                                        : !strncmp(s, "--opt=", 6)    ? (o = true, s + 6)
                                        : !strncmp(s, "--driver=", 9) ? (d = true, s + 9)
                                                                      : NULL;
                        if (o && v && strchr(v, '=')) {
                                char *k2 = xstrdup(v), *eq = strchr(k2, '=');
                                *eq = '\0';
                                json_object_set_new(opts, k2, json_string(eq + 1));
                                free(k2);
                        } else if (d && v) {
                                driver = arena_strdup(&ev->ar, v);
                        } else if (s[0] != '-') {
                                name = s;
                        }
                }
                check_volume_opts(ev, unit, name, driver, opts);
                json_decref(opts);
        } else if (!strcmp(sub, "run") || !strcmp(sub, "create") || !strcmp(sub, "exec")) {
                json_t *hc = json_pack("{s:[],s:{},s:{}}", "Mounts", "PortBindings", "Sysctls");
                cli_parse(av, ac, hc);
                json_t *spec = json_pack("{s:s,s:{s:o}}", "backend", "docker", "docker",
                                         "host_config", hc);
                container_check(ev, unit, spec, NULL);
                json_decref(spec);
        }
        ev->host_access = saved;
}
