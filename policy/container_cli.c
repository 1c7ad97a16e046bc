/* container_cli.c — docker/podman (and nerdctl) `run`, `create`, `exec` and `volume create`
 * argv, parsed with the CLI's own flag grammar (spf13/pflag, interspersed off: flags end at
 * the image), translated into a HostConfig and judged by the same checks as sandbox.create.
 *
 * pflag: `--name=v` and `--name v` for value flags, `--name` / `--name=false` for booleans
 * (a bool never takes the next word), short bundles `-itv/x:/y` where the first value flag
 * takes the rest of the bundle (a leading '=' dropped) or the next word, `--` ends flags. A
 * flag the table does not know, or a word only known at run time, cannot be judged: that is
 * container.cli-unknown (ASK), and the rest of argv is then scanned for flags too, since where
 * the image starts is no longer known. podman's flags are in the same table; docker refuses the
 * ones it does not have by itself.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/container_int.h"
#include "protocol/util.h"

#define W_OPAQUE (W_DYN | W_SPLIT | W_GLOB) /* a static $(echo …), $(pwd) is known */

struct cli {
        struct cjudge j;
        json_t *hc;
        bool unknown; /* a flag could not be judged: keep scanning after positionals */
        const char *rootfs_image;
        bool rootfs;
};

struct cli_flag;
typedef void (*cli_fn)(struct cli *c, const struct cli_flag *f, const char *v);

struct cli_flag {
        const char *name;
        char sh;    /* shorthand, 0 for none */
        bool value; /* takes a value */
        cli_fn fn;  /* NULL: harmless, nothing to judge */
        const char *field;
};

static void
unknown(struct cli *c, const char *what)
{
        cj_add(&c->j, "container.cli-unknown", what);
        c->unknown = true;
}

static json_t *
hc_get(struct cli *c, const char *field, json_t *(*make)(void) )
{
        json_t *v = json_object_get(c->hc, field);

        if (!v) {
                v = make();
                json_object_set_new(c->hc, field, v);
        }
        return v;
}

static void
ap_list(struct cli *c, const struct cli_flag *f, const char *v)
{
        json_array_append_new(hc_get(c, f->field, json_array), json_string(v));
}

static void
ap_str(struct cli *c, const struct cli_flag *f, const char *v)
{
        json_object_set_new(c->hc, f->field, json_string(v));
}

/* strconv.ParseBool; anything else counts as true (fail closed). */
static void
ap_bool(struct cli *c, const struct cli_flag *f, const char *v)
{
        static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False", NULL};
        bool off = false;

        for (const char *const *n = no; *n; n++)
                off |= !strcmp(v, *n);
        json_object_set_new(c->hc, f->field, json_boolean(!off));
}

static void
ap_int(struct cli *c, const struct cli_flag *f, const char *v)
{
        char *end;
        long long n = strtoll(v, &end, 10);

        if (end == v || *end)
                unknown(c, cj_fmt(&c->j, "--%s %s", f->name, v));
        else
                json_object_set_new(c->hc, f->field, json_integer(n));
}

/* key=value into an object field (--sysctl, --annotation, --storage-opt, --log-opt). */
static void
ap_map(struct cli *c, const struct cli_flag *f, const char *v)
{
        const char *eq = strchr(v, '=');
        char *k = xstrndup(v, eq ? (size_t) (eq - v) : strlen(v));

        json_object_set_new(hc_get(c, f->field, json_object), k, json_string(eq ? eq + 1 : ""));
        free(k);
}

/* pid, ipc, uts, userns, cgroupns, network: podman's spellings mapped to Docker's. */
static void
ap_mode(struct cli *c, const struct cli_flag *f, const char *v)
{
        bool net = !strcmp(f->field, "NetworkMode"), userns = !strcmp(f->field, "UsernsMode");

        if (!strncmp(v, "ns:", 3))
                v = "host"; /* a namespace by path: /proc/1/ns/… is the host's */
        else if (net && (!strcmp(v, "private") || !strncmp(v, "slirp4netns", 11) ||
                         !strncmp(v, "pasta", 5)))
                v = "bridge";
        else if (userns && (!strncmp(v, "keep-id", 7) || !strncmp(v, "auto", 4) ||
                            !strcmp(v, "nomap") || !strcmp(v, "private")))
                v = "";
        else if (!strcmp(v, "private") &&
                 (!strcmp(f->field, "PidMode") || !strcmp(f->field, "UTSMode")))
                v = "";
        json_object_set_new(c->hc, f->field, json_string(v));
}

static void
ap_device(struct cli *c, const struct cli_flag *f, const char *v)
{
        char *host = xstrndup(v, strcspn(v, ":"));

        json_array_append_new(hc_get(c, "Devices", json_array),
                              json_pack("{s:s}", "PathOnHost", host));
        free(host);
}

static void
ap_gpus(struct cli *c, const struct cli_flag *f, const char *v)
{
        json_array_append_new(hc_get(c, "DeviceRequests", json_array),
                              json_pack("{s:s}", "gpus", v));
}

static void
ap_tmpfs(struct cli *c, const struct cli_flag *f, const char *v)
{
        const char *colon = strchr(v, ':');
        char *path = xstrndup(v, colon ? (size_t) (colon - v) : strlen(v));

        json_object_set_new(hc_get(c, "Tmpfs", json_object), path,
                            json_string(colon ? colon + 1 : ""));
        free(path);
}

/* -p [ip:][hostPort:]containerPort[/proto], ip may be "[v6]". */
static void
ap_publish(struct cli *c, const struct cli_flag *f, const char *v)
{
        char *s = xstrdup(v), *rest = s, *parts[3] = {0};
        const char *ip = "";
        size_t n = 0;

        if (s[0] == '[' && strchr(s, ']')) {
                char *close = strchr(s, ']');
                *close = '\0';
                ip = s + 1;
                rest = close + 1 + (close[1] == ':');
        }
        for (char *p = rest; p && n < 3; n++) {
                parts[n] = p;
                if ((p = strchr(p, ':')))
                        *p++ = '\0';
        }
        const char *cport = parts[n - 1], *hport = n >= 2 ? parts[n - 2] : "";
        if (n == 3)
                ip = parts[0];
        json_object_set_new(hc_get(c, "PortBindings", json_object), cport,
                            json_pack("[{s:s,s:s}]", "HostIp", ip, "HostPort", hport));
        free(s);
}

static void
ap_api_socket(struct cli *c, const struct cli_flag *f, const char *v)
{
        static const struct cli_flag binds = {.field = "Binds"};

        if (strcmp(v, "false") != 0 && strcmp(v, "0") != 0)
                ap_list(c, &binds, "/var/run/docker.sock:/var/run/docker.sock");
}

static void
ap_hooks(struct cli *c, const struct cli_flag *f, const char *v)
{
        cj_add(&c->j, "container.hooks", cj_fmt(&c->j, "--%s %s", f->name, v));
}

static void
ap_runtime_flag(struct cli *c, const struct cli_flag *f, const char *v)
{
        cj_add(&c->j, "container.runtime", cj_fmt(&c->j, "--%s %s", f->name, v));
}

static void
ap_ask(struct cli *c, const struct cli_flag *f, const char *v)
{
        cj_add(&c->j, "container.cli-unknown", cj_fmt(&c->j, "--%s %s", f->name, v));
}

static void
ap_hostpath(struct cli *c, const struct cli_flag *f, const char *v)
{
        mount_host_path(&c->j, cj_fmt(&c->j, "--%s", f->name), v);
}

static void
ap_rootfs(struct cli *c, const struct cli_flag *f, const char *v)
{
        c->rootfs = strcmp(v, "false") != 0;
}

static void ap_mount(struct cli *c, const struct cli_flag *f, const char *v);

#define B(n, s, fn, field)                                                                         \
        {                                                                                          \
                n, s, false, fn, field                                                             \
        }
#define V(n, s, fn, field)                                                                         \
        {                                                                                          \
                n, s, true, fn, field                                                              \
        }

/* run / create / exec, docker and podman. */
static const struct cli_flag flags[] = {
        /* judged */
        B("privileged", 0, ap_bool, "Privileged"),
        B("oom-kill-disable", 0, ap_bool, "OomKillDisable"),
        B("publish-all", 'P', ap_bool, "PublishAllPorts"),
        B("use-api-socket", 0, ap_api_socket, NULL),
        B("rootfs", 0, ap_rootfs, NULL),
        V("volume", 'v', ap_list, "Binds"),
        V("mount", 0, ap_mount, NULL),
        V("volumes-from", 0, ap_list, "VolumesFrom"),
        V("volume-driver", 0, ap_str, "VolumeDriver"),
        V("tmpfs", 0, ap_tmpfs, NULL),
        V("cap-add", 0, ap_list, "CapAdd"),
        V("cap-drop", 0, ap_list, "CapDrop"),
        V("security-opt", 0, ap_list, "SecurityOpt"),
        V("device", 0, ap_device, NULL),
        V("device-cgroup-rule", 0, ap_list, "DeviceCgroupRules"),
        V("gpus", 0, ap_gpus, NULL),
        V("pid", 0, ap_mode, "PidMode"),
        V("ipc", 0, ap_mode, "IpcMode"),
        V("uts", 0, ap_mode, "UTSMode"),
        V("userns", 0, ap_mode, "UsernsMode"),
        V("cgroupns", 0, ap_mode, "CgroupnsMode"),
        V("network", 0, ap_mode, "NetworkMode"),
        V("net", 0, ap_mode, "NetworkMode"),
        V("cgroup-parent", 0, ap_str, "CgroupParent"),
        V("sysctl", 0, ap_map, "Sysctls"),
        V("pids-limit", 0, ap_int, "PidsLimit"),
        V("oom-score-adj", 0, ap_int, "OomScoreAdj"),
        V("cpu-rt-period", 0, ap_int, "CpuRealtimePeriod"),
        V("cpu-rt-runtime", 0, ap_int, "CpuRealtimeRuntime"),
        V("runtime", 0, ap_str, "Runtime"),
        V("publish", 'p', ap_publish, NULL),
        V("link", 0, ap_list, "Links"),
        V("annotation", 0, ap_map, "Annotations"),
        V("storage-opt", 0, ap_map, "StorageOpt"),
        V("hooks-dir", 0, ap_hooks, NULL),
        V("runtime-flag", 0, ap_runtime_flag, NULL),
        V("init-path", 0, ap_hostpath, NULL),
        V("preserve-fds", 0, ap_ask, NULL),
        V("preserve-fd", 0, ap_ask, NULL),
        V("pod", 0, ap_ask, NULL),
        V("cgroup-conf", 0, ap_ask, NULL),
        /* harmless booleans */
        B("detach", 'd', NULL, NULL),
        B("interactive", 'i', NULL, NULL),
        B("tty", 't', NULL, NULL),
        B("quiet", 'q', NULL, NULL),
        B("rm", 0, NULL, NULL),
        B("rmi", 0, NULL, NULL),
        B("init", 0, NULL, NULL),
        B("read-only", 0, NULL, NULL),
        B("read-only-tmpfs", 0, NULL, NULL),
        B("no-healthcheck", 0, NULL, NULL),
        B("disable-content-trust", 0, NULL, NULL),
        B("sig-proxy", 0, NULL, NULL),
        B("help", 0, NULL, NULL),
        B("env-host", 0, NULL, NULL),
        B("http-proxy", 0, NULL, NULL),
        B("no-hosts", 0, NULL, NULL),
        B("passwd", 0, NULL, NULL),
        B("replace", 0, NULL, NULL),
        B("unsetenv-all", 0, NULL, NULL),
        B("tls-verify", 0, NULL, NULL),
        /* harmless values */
        V("add-host", 0, NULL, NULL),
        V("attach", 'a', NULL, NULL),
        V("blkio-weight", 0, NULL, NULL),
        V("blkio-weight-device", 0, NULL, NULL),
        V("cidfile", 0, NULL, NULL),
        V("cpu-count", 0, NULL, NULL),
        V("cpu-percent", 0, NULL, NULL),
        V("cpu-period", 0, NULL, NULL),
        V("cpu-quota", 0, NULL, NULL),
        V("cpu-shares", 'c', NULL, NULL),
        V("cpus", 0, NULL, NULL),
        V("cpuset-cpus", 0, NULL, NULL),
        V("cpuset-mems", 0, NULL, NULL),
        V("detach-keys", 0, NULL, NULL),
        V("device-read-bps", 0, NULL, NULL),
        V("device-read-iops", 0, NULL, NULL),
        V("device-write-bps", 0, NULL, NULL),
        V("device-write-iops", 0, NULL, NULL),
        V("dns", 0, NULL, NULL),
        V("dns-opt", 0, NULL, NULL),
        V("dns-option", 0, NULL, NULL),
        V("dns-search", 0, NULL, NULL),
        V("domainname", 0, NULL, NULL),
        V("entrypoint", 0, NULL, NULL),
        V("env", 'e', NULL, NULL),
        V("env-file", 0, NULL, NULL),
        V("expose", 0, NULL, NULL),
        V("group-add", 0, NULL, NULL),
        V("health-cmd", 0, NULL, NULL),
        V("health-interval", 0, NULL, NULL),
        V("health-retries", 0, NULL, NULL),
        V("health-start-interval", 0, NULL, NULL),
        V("health-start-period", 0, NULL, NULL),
        V("health-timeout", 0, NULL, NULL),
        V("hostname", 'h', NULL, NULL),
        V("ip", 0, NULL, NULL),
        V("ip6", 0, NULL, NULL),
        V("isolation", 0, NULL, NULL),
        V("kernel-memory", 0, NULL, NULL),
        V("label", 'l', NULL, NULL),
        V("label-file", 0, NULL, NULL),
        V("link-local-ip", 0, NULL, NULL),
        V("log-driver", 0, NULL, NULL),
        V("log-opt", 0, NULL, NULL),
        V("mac-address", 0, NULL, NULL),
        V("memory", 'm', NULL, NULL),
        V("memory-reservation", 0, NULL, NULL),
        V("memory-swap", 0, NULL, NULL),
        V("memory-swappiness", 0, NULL, NULL),
        V("name", 0, NULL, NULL),
        V("network-alias", 0, NULL, NULL),
        V("net-alias", 0, NULL, NULL),
        V("platform", 0, NULL, NULL),
        V("pull", 0, NULL, NULL),
        V("restart", 0, NULL, NULL),
        V("shm-size", 0, NULL, NULL),
        V("stop-signal", 0, NULL, NULL),
        V("stop-timeout", 0, NULL, NULL),
        V("ulimit", 0, NULL, NULL),
        V("user", 'u', NULL, NULL),
        V("workdir", 'w', NULL, NULL),
        V("io-maxbandwidth", 0, NULL, NULL),
        V("io-maxiops", 0, NULL, NULL),
        /* podman's harmless values */
        V("arch", 0, NULL, NULL),
        V("authfile", 0, NULL, NULL),
        V("cgroups", 0, NULL, NULL),
        V("chrootdirs", 0, NULL, NULL),
        V("conmon-pidfile", 0, NULL, NULL),
        V("decryption-key", 0, NULL, NULL),
        V("env-merge", 0, NULL, NULL),
        V("gidmap", 0, NULL, NULL),
        V("group-entry", 0, NULL, NULL),
        V("hostuser", 0, NULL, NULL),
        V("image-volume", 0, NULL, NULL),
        V("os", 0, NULL, NULL),
        V("passwd-entry", 0, NULL, NULL),
        V("personality", 0, NULL, NULL),
        V("pidfile", 0, NULL, NULL),
        V("pod-id-file", 0, NULL, NULL),
        V("rdt-class", 0, NULL, NULL),
        V("requires", 0, NULL, NULL),
        V("sdnotify", 0, NULL, NULL),
        V("secret", 0, NULL, NULL),
        V("shm-size-systemd", 0, NULL, NULL),
        V("subgidname", 0, NULL, NULL),
        V("subuidname", 0, NULL, NULL),
        V("systemd", 0, NULL, NULL),
        V("timeout", 0, NULL, NULL),
        V("uidmap", 0, NULL, NULL),
        V("umask", 0, NULL, NULL),
        V("unsetenv", 0, NULL, NULL),
        V("variant", 0, NULL, NULL),
};

/* podman --seccomp-policy=image takes the profile from the image: judged as a security-opt. */
static const struct cli_flag seccomp_policy = V("seccomp-policy", 0, ap_list, "SecurityOpt");

static const struct cli_flag *
find_long(const char *name, size_t n)
{
        for (size_t k = 0; k < ARRAY_SIZE(flags); k++)
                if (strlen(flags[k].name) == n && !strncmp(flags[k].name, name, n))
                        return &flags[k];
        if (n == 14 && !strncmp(name, "seccomp-policy", n))
                return &seccomp_policy;
        return NULL;
}

static const struct cli_flag *
find_short(char c)
{
        for (size_t k = 0; k < ARRAY_SIZE(flags); k++)
                if (flags[k].sh == c)
                        return &flags[k];
        return NULL;
}

/* Applies one flag whose value word is w (its text v may be a suffix of w). */
static void
apply(struct cli *c, const struct cli_flag *f, const char *v, const struct word *w)
{
        if (!f->fn)
                return;
        bool mount = f->fn == ap_mount || (f->field && !strcmp(f->field, "Binds"));
        if (w && (w->flags & W_OPAQUE) && mount) {
                /* a mount whose source is only known at run time may be any host path */
                cj_add(&c->j, "container.mount-unresolved",
                       cj_fmt(&c->j, "--%s %s (only known at run time)", f->name, v));
                return;
        }
        if (w && (w->flags & W_OPAQUE)) {
                unknown(c, cj_fmt(&c->j, "--%s %s (only known at run time)", f->name, v));
                return;
        }
        if (f == &seccomp_policy && strcmp(v, "image") != 0)
                return;
        f->fn(c, f, v);
}

/* --name[=v] [v]; returns the words used. */
static size_t
long_flag(struct cli *c, const struct word *av, size_t ac, size_t i)
{
        const char *s = av[i].s + 2, *eq = strchr(s, '=');
        const struct cli_flag *f = find_long(s, eq ? (size_t) (eq - s) : strlen(s));

        if (!f) {
                unknown(c, av[i].s);
                return 1;
        }
        if (!f->value) {
                apply(c, f, eq ? eq + 1 : "true", &av[i]);
                return 1;
        }
        if (eq) {
                apply(c, f, eq + 1, &av[i]);
                return 1;
        }
        if (i + 1 < ac)
                apply(c, f, av[i + 1].s, &av[i + 1]);
        return 2;
}

/* -abc, -v/x:/y, -v=/x:/y, -v /x:/y; returns the words used. */
static size_t
short_flags(struct cli *c, const struct word *av, size_t ac, size_t i)
{
        const char *s = av[i].s;

        for (size_t k = 1; s[k]; k++) {
                const struct cli_flag *f = find_short(s[k]);
                const char *rest = s + k + 1;
                if (!f) {
                        unknown(c, cj_fmt(&c->j, "-%c (in %s)", s[k], s));
                        return 1;
                }
                if (!f->value && *rest != '=') {
                        apply(c, f, "true", &av[i]);
                        continue;
                }
                if (*rest == '=')
                        rest++;
                if (*rest || !f->value) {
                        apply(c, f, rest, &av[i]);
                        return 1;
                }
                if (i + 1 < ac)
                        apply(c, f, av[i + 1].s, &av[i + 1]);
                return 2;
        }
        return 1;
}

/* Options up to the image (av[0] is the subcommand). */
static void
cli_parse(struct cli *c, const struct word *av, size_t ac)
{
        size_t i = 1;

        while (i < ac) {
                const struct word *w = &av[i];
                if (!strcmp(w->s, "--")) {
                        if (!c->rootfs_image && i + 1 < ac)
                                c->rootfs_image = av[i + 1].s;
                        return;
                }
                if (w->flags & W_OPAQUE && w->s[0] != '-' && !c->unknown) {
                        /* the image, or flags the shell makes up at run time */
                        unknown(c, cj_fmt(&c->j, "%s (only known at run time)", w->s));
                }
                if (w->s[0] != '-' || !w->s[1]) {
                        if (!c->rootfs_image)
                                c->rootfs_image = w->s;
                        if (!c->unknown)
                                return;
                        i++;
                        continue;
                }
                if (w->flags & W_OPAQUE)
                        unknown(c, cj_fmt(&c->j, "%s (only known at run time)", w->s));
                i += w->s[1] == '-' ? long_flag(c, av, ac, i) : short_flags(c, av, ac, i);
        }
}

/* ---- --mount (a CSV line of key=value) ---- */

/* Splits a CSV record as encoding/csv does: ',' separates, "…" quotes ("" is a quote). */
static size_t
csv_split(struct cjudge *j, const char *s, char **out, size_t max)
{
        size_t n = 0, o = 0;
        char *buf = arena_alloc(&j->ev->ar, strlen(s) + 1);
        bool q = false;

        out[n++] = buf;
        for (const char *p = s; *p; p++) {
                if (*p == '"' && q && p[1] == '"') {
                        buf[o++] = *p++;
                } else if (*p == '"') {
                        q = !q;
                } else if (*p == ',' && !q) {
                        buf[o++] = '\0';
                        if (n == max)
                                return 0;
                        out[n++] = buf + o;
                } else {
                        buf[o++] = *p;
                }
        }
        buf[o] = '\0';
        return q ? 0 : n;
}

/* m.VolumeOptions (created when missing), and its DriverConfig when dc. */
static json_t *
mount_vo(json_t *m, bool dc)
{
        json_t *vo = json_object_get(m, "VolumeOptions"), *d;

        if (!vo) {
                vo = json_object();
                json_object_set_new(m, "VolumeOptions", vo);
        }
        if (!dc)
                return vo;
        if (!(d = json_object_get(vo, "DriverConfig"))) {
                d = json_object();
                json_object_set_new(vo, "DriverConfig", d);
        }
        return d;
}

/* k=v into the map field of obj. */
static void
mount_kv(json_t *obj, const char *field, const char *kv)
{
        const char *eq = strchr(kv, '=');
        char *k = xstrndup(kv, eq ? (size_t) (eq - kv) : strlen(kv));
        json_t *map = json_object_get(obj, field);

        if (!map) {
                map = json_object();
                json_object_set_new(obj, field, map);
        }
        json_object_set_new(map, k, json_string(eq ? eq + 1 : ""));
        free(k);
}

/* Sets one --mount key into the mount.Mount object m; false when the key is not known. */
static bool
mount_key(json_t *m, const char *k, const char *v)
{
        static const char *const ignored[] = {"consistency",
                                              "bind-nonrecursive",
                                              "bind-recursive",
                                              "bind-create-src",
                                              "volume-nocopy",
                                              "volume-subpath",
                                              "tmpfs-size",
                                              "tmpfs-mode",
                                              "image-subpath",
                                              "relabel",
                                              "U",
                                              "idmap",
                                              "chown",
                                              "tmpcopyup",
                                              "notmpcopyup",
                                              NULL};
        const char *val = v ? v : "";

        if (!strcmp(k, "type"))
                json_object_set_new(m, "Type", json_string(val));
        else if (!strcmp(k, "source") || !strcmp(k, "src"))
                json_object_set_new(m, "Source", json_string(val));
        else if (!strcmp(k, "target") || !strcmp(k, "destination") || !strcmp(k, "dst"))
                json_object_set_new(m, "Target", json_string(val));
        else if (!strcmp(k, "readonly") || !strcmp(k, "ro"))
                json_object_set_new(m, "ReadOnly", json_true());
        else if (!strcmp(k, "bind-propagation"))
                json_object_set_new(m, "BindOptions", json_pack("{s:s}", "Propagation", val));
        else if (!strcmp(k, "volume-driver"))
                json_object_set_new(mount_vo(m, true), "Name", json_string(val));
        else if (!strcmp(k, "volume-opt"))
                mount_kv(mount_vo(m, true), "Options", val);
        else if (!strcmp(k, "volume-label"))
                mount_kv(mount_vo(m, false), "Labels", val);
        else {
                for (const char *const *i = ignored; *i; i++)
                        if (!strcmp(k, *i))
                                return true;
                return false;
        }
        return true;
}

static void
ap_mount(struct cli *c, const struct cli_flag *f, const char *v)
{
        char *items[64];
        size_t n = csv_split(&c->j, v, items, ARRAY_SIZE(items));
        json_t *m = json_object();
        const char *type;

        if (!n)
                unknown(c, cj_fmt(&c->j, "--mount %s", v));
        for (size_t k = 0; k < n; k++) {
                char *eq = strchr(items[k], '=');
                if (eq)
                        *eq = '\0';
                if (*items[k] && !mount_key(m, items[k], eq ? eq + 1 : NULL))
                        unknown(c, cj_fmt(&c->j, "--mount %s=…", items[k]));
        }
        if (!json_object_get(m, "Type"))
                json_object_set_new(m, "Type", json_string("volume"));
        type = json_string_value(json_object_get(m, "Type"));
        /* podman's types without a host side, and glob (host paths by pattern). */
        if (!strcmp(type, "devpts") || !strcmp(type, "ramfs") || !strcmp(type, "image") ||
            !strcmp(type, "artifact")) {
                json_decref(m);
                return;
        }
        if (!strcmp(type, "glob"))
                json_object_set_new(m, "Type", json_string("bind"));
        json_array_append_new(hc_get(c, "Mounts", json_array), m);
}

/* ---- docker volume create ---- */

/* "-x v", "-xv", "-x=v", "--long v", "--long=v" at av[*i]: the value (*i moves past it), or
 * NULL when av[*i] is not that flag. */
static const char *
flag_value(const struct word *av, size_t ac, size_t *i, char sh, const char *lng)
{
        const char *s = av[*i].s;
        size_t l = strlen(lng);

        if (sh && s[0] == '-' && s[1] == sh)
                return s[2] ? s + 2 + (s[2] == '=') : *i + 1 < ac ? av[++*i].s : NULL;
        if (s[0] == '-' && s[1] == '-' && !strncmp(s + 2, lng, l) && (!s[2 + l] || s[2 + l] == '='))
                return s[2 + l] ? s + 3 + l : *i + 1 < ac ? av[++*i].s : NULL;
        return NULL;
}

static void
volume_create(struct cli *c, const struct word *av, size_t ac)
{
        json_t *opts = json_object();
        const char *driver = NULL, *name = NULL, *v;

        for (size_t i = 2; i < ac; i++) {
                size_t at = i;
                bool opaque =
                        (av[i].flags & W_OPAQUE) || (i + 1 < ac && (av[i + 1].flags & W_OPAQUE));
                if ((v = flag_value(av, ac, &i, 'o', "opt")) && opaque) {
                        const char *what =
                                cj_fmt(&c->j, "volume create -o %s (only known at run time)", v);
                        /* a device only known at run time may be any host path */
                        if (!strncmp(v, "device=", 7))
                                cj_add(&c->j, "container.mount-unresolved", what);
                        else
                                unknown(c, what);
                } else if (v && strchr(v, '=')) {
                        char *k = xstrndup(v, strcspn(v, "="));
                        json_object_set_new(opts, k, json_string(strchr(v, '=') + 1));
                        free(k);
                } else if (v) {
                        unknown(c, cj_fmt(&c->j, "volume create -o %s", v));
                } else if ((v = flag_value(av, ac, &i, 'd', "driver"))) {
                        driver = v;
                } else if ((v = flag_value(av, ac, &i, 0, "name"))) {
                        name = v;
                } else if ((v = flag_value(av, ac, &i, 0, "label"))) {
                        continue;
                } else if (av[i].s[0] == '-') {
                        unknown(c, cj_fmt(&c->j, "volume create %s", av[i].s));
                } else {
                        name = av[i].s;
                }
                for (size_t k = at; k <= i && k < ac; k++)
                        if ((av[k].flags & W_OPAQUE) && k == i)
                                unknown(c, cj_fmt(&c->j,
                                                  "volume create %s (only known at run "
                                                  "time)",
                                                  av[k].s));
        }
        mount_volume(&c->j, "volume create", name, driver, opts);
        json_decref(opts);
}

/* docker/podman run|create|exec|volume create argv (after the program and global options). */
void
container_check_cli(struct eval *ev, int unit, const struct word *av, size_t ac)
{
        struct cli c = {.j = {.ev = ev, .unit = unit, .cli = true}};
        bool saved = ev->host_access;
        const char *sub = ac ? av[0].s : "";

        if (!strcmp(sub, "volume") && ac > 1 && !strcmp(av[1].s, "create")) {
                volume_create(&c, av, ac);
        } else if (!strcmp(sub, "run") || !strcmp(sub, "create") || !strcmp(sub, "exec")) {
                c.hc = json_object();
                json_t *spec = json_pack("{s:s,s:{s:O}}", "backend", "docker", "docker",
                                         "host_config", c.hc);
                cli_parse(&c, av, ac);
                if (c.rootfs && c.rootfs_image)
                        mount_host_path(&c.j, "--rootfs", c.rootfs_image);
                container_judge(&c.j, spec);
                json_decref(spec);
                json_decref(c.hc);
        }
        ev->host_access = saved;
}
