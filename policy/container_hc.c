/* container_hc.c — the HostConfig field table: every field of Docker's HostConfig (Engine API
 * 1.41 to 1.47, api/types/container/hostconfig.go) with the JSON types it takes and its check.
 * A field that is not in the table (or spelled differently: Docker matches field names without
 * regard to case) is refused unless the operator lists it as accepted unchecked. JSON null is
 * the Go zero value everywhere ("" / 0 / false / nil), and the checks judge it as such: the
 * daemon merges docker.host_config over its defaults key by key, so a null replaces them.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "policy/container_int.h"
#include "protocol/util.h"

struct hc_field;
typedef void (*hc_fn)(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v);

struct hc_field {
        const char *name;
        unsigned types; /* J_* accepted besides null */
        hc_fn check;    /* NULL: the type is all there is to check */
        const char *rule;
        const char *const *ok; /* accepted values, for hc_enum / hc_mode */
};

/* Capabilities a spec may add (Kubernetes baseline minus what helps an escape: MKNOD makes
 * device nodes, NET_RAW forges packets on shared networks, SETFCAP and SETPCAP hand out
 * capabilities, e.g. to files in a bind mount). */
static const char *const cap_ok[] = {
        "AUDIT_WRITE",      "CHOWN",  "DAC_OVERRIDE", "FOWNER",     "FSETID", "KILL",
        "NET_BIND_SERVICE", "SETGID", "SETUID",       "SYS_CHROOT", NULL};
/* Docker's default set: a `docker run --cap-add` of one of them changes nothing. */
static const char *const cap_docker_default[] = {"MKNOD", "NET_RAW", "SETFCAP", "SETPCAP", NULL};
/* Namespaced sysctls Kubernetes calls safe (they touch only the container's namespaces). */
static const char *const sysctl_ok[] = {"kernel.shm_rmid_forced",
                                        "net.ipv4.ip_local_port_range",
                                        "net.ipv4.ip_local_reserved_ports",
                                        "net.ipv4.ip_unprivileged_port_start",
                                        "net.ipv4.ping_group_range",
                                        "net.ipv4.tcp_syncookies",
                                        "net.ipv4.tcp_keepalive_time",
                                        "net.ipv4.tcp_fin_timeout",
                                        "net.ipv4.tcp_keepalive_intvl",
                                        "net.ipv4.tcp_keepalive_probes",
                                        NULL};
static const char *const log_ok[] = {"", "none", "json-file", "local", NULL};
static const char *const restart_ok[] = {"", "no", NULL};
static const char *const isolation_ok[] = {"", "default", NULL};
static const char *const pid_ok[] = {"", NULL};
static const char *const ipc_ok[] = {"", "none", "private", "shareable", NULL};
static const char *const cgroupns_ok[] = {"private", NULL};

static bool
in_list(const char *s, const char *const *l)
{
        for (; l && *l; l++)
                if (!strcmp(s, *l))
                        return true;
        return false;
}

static const char *
type_name(unsigned types)
{
        static const struct {
                unsigned t;
                const char *name;
        } names[] = {{J_BOOL, "a boolean"},       {J_INT, "an integer"},
                     {J_STR, "a string"},         {J_ARR, "an array"},
                     {J_OBJ, "an object"},        {J_ARR | J_OBJ, "JSON"},
                     {J_INT | J_STR, "a number"}, {J_BOOL | J_STR, "a boolean"}};

        for (size_t k = 0; k < ARRAY_SIZE(names); k++)
                if (names[k].t == types)
                        return names[k].name;
        return "of another type";
}

/* Every element of an array is a string. */
static bool
strings_ok(struct cjudge *j, const char *param, json_t *v)
{
        json_t *e;
        size_t i;

        json_array_foreach(v, i, e) if (!json_is_string(e))
        {
                cj_invalid(j, cj_fmt(j, "%s[%zu]", param, i), "must be a string");
                return false;
        }
        return true;
}

/* Every member of an object is a string. */
static bool
strmap_ok(struct cjudge *j, const char *param, json_t *v)
{
        const char *k;
        json_t *e;

        json_object_foreach(v, k, e) if (!json_is_string(e))
        {
                cj_invalid(j, cj_fmt(j, "%s.%s", param, k), "must be a string");
                return false;
        }
        return true;
}

static void
hc_strs(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        strings_ok(j, param, v);
}

/* Must be false (null). */
static void
hc_false(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (json_is_true(v))
                cj_add(j, f->rule, cj_fmt(j, "%s=true", f->name));
        if (json_is_true(v) && !strcmp(f->rule, "container.privileged"))
                j->ev->host_access = true;
}

/* Must be empty: "", [], {}, 0 or null. */
static void
hc_empty(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        char *s;

        if (cj_empty(v))
                return;
        s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        cj_add(j, f->rule, cj_fmt(j, "%s=%.160s", f->name, s ? s : "?"));
        free(s);
        if (!strcmp(f->rule, "container.device"))
                j->ev->host_access = true;
}

/* Must be null (absent): an empty list would override Docker's defaults too. */
static void
hc_null(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (!json_is_null(v))
                cj_add(j, f->rule, f->name);
}

/* Must be 0. */
static void
hc_zero(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (json_integer_value(v) != 0)
                cj_add(j, f->rule,
                       cj_fmt(j, "%s=%lld", f->name, (long long) json_integer_value(v)));
}

/* One of f->ok, else not valid. */
static void
hc_enum(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        const char *s = json_is_null(v) ? "" : json_string_value(v);

        if (!in_list(s, f->ok))
                cj_invalid(j, param, "'%s' is not accepted", s);
}

/* A namespace mode: one of f->ok; "host" shares the host's, "container:X" another's. */
static void
hc_mode(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        const char *s = json_is_null(v) ? "" : json_string_value(v);
        const char *m = cj_fmt(j, "%s=%s", f->name, s);

        if (in_list(s, f->ok) || (j->cli && !*s))
                return;
        if (!strcmp(s, "host") || !*s) {
                /* "" is Docker's default, which for the cgroup namespace on cgroup v1 is the
                 * host's: sandboxd always asks for "private". */
                j->ev->host_access = true;
                cj_add(j, "container.host-ns", m);
        } else if (!strncmp(s, "container:", 10)) {
                cj_add(j, "container.join-ns", m);
        } else {
                cj_invalid(j, param, "'%s' is not accepted", s);
        }
}

static void
hc_network(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        static const char *const ok[] = {"", "none", "bridge", "default", NULL};
        const char *s = json_is_null(v) ? "" : json_string_value(v);

        if (in_list(s, ok))
                return;
        if (!strcmp(s, "host")) {
                j->ev->host_access = true;
                cj_add(j, "container.host-ns", "NetworkMode=host");
        } else if (!strncmp(s, "container:", 10)) {
                cj_add(j, "container.join-ns", cj_fmt(j, "NetworkMode=%s", s));
        } else if (!j->cli) {
                /* A user-defined network is shared with whatever else joined it. */
                cj_add(j, "container.network", cj_fmt(j, "NetworkMode=%s", s));
        }
}

/* "cap_sys_admin" -> "SYS_ADMIN" (Docker normalises the same way). */
static const char *
cap_name(struct cjudge *j, const char *s)
{
        char *up;

        if (!strncasecmp(s, "CAP_", 4))
                s += 4;
        up = arena_strdup(&j->ev->ar, s);
        for (char *c = up; *c; c++)
                *c = (char) toupper((unsigned char) *c);
        return up;
}

static void
hc_cap_add(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        json_t *e;
        size_t i;

        if (!strings_ok(j, param, v))
                return;
        json_array_foreach(v, i, e)
        {
                const char *c = cap_name(j, json_string_value(e));
                if (!in_list(c, cap_ok) && !(j->cli && in_list(c, cap_docker_default)))
                        cj_add(j, "container.cap", c);
        }
}

/* sandboxd drops every capability; a CapDrop without ALL would bring Docker's defaults back. */
static void
hc_cap_drop(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        json_t *e;
        size_t i;

        if (!strings_ok(j, param, v) || j->cli)
                return;
        json_array_foreach(v, i, e) if (!strcmp(cap_name(j, json_string_value(e)), "ALL")) return;
        cj_add(j, "container.cap-drop", "CapDrop without ALL");
}

/* strconv.ParseBool: 1 true, 0 false, -1 neither. */
static int
parse_bool(const char *s)
{
        static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True", NULL};
        static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False", NULL};

        return in_list(s, t) ? 1 : in_list(s, f) ? 0 : -1;
}

/* How dockerd reads one SecurityOpt entry for no-new-privileges (policy.h). */
int
policy_secopt_nnp(const char *opt)
{
        /* dockerd (daemon/daemon_unix.go parseSecurityOpt): the bare word is on; otherwise it
         * splits at the first '=' when there is one, else at the first ':' (deprecated), and
         * the key must be exactly no-new-privileges with a strconv.ParseBool value. */
        const char *sep = strchr(opt, '=') ? strchr(opt, '=') : strchr(opt, ':');

        if (!strcmp(opt, "no-new-privileges"))
                return 1;
        if (!sep || sep - opt != 17 || strncmp(opt, "no-new-privileges", 17) != 0)
                return -2;
        return parse_bool(sep + 1);
}

/* One SecurityOpt entry: 1 no-new-privileges, 0 refused (finding added), -1 harmless. */
static int
secopt_one(struct cjudge *j, const char *param, const char *s)
{
        size_t k = strcspn(s, "=:");
        int b = policy_secopt_nnp(s);

        if (b == -1)
                cj_invalid(j, param,
                           "'%s': not a boolean (dockerd reads 1, t, T, true, True, TRUE)", s);
        else if (b == 0)
                cj_add(j, "container.secopt", s);
        if (b != -2)
                return b > 0 ? 1 : 0;
        /* podman: more masking is fine, unmasking is not. */
        if (j->cli && k == 4 && !strncmp(s, "mask", 4))
                return -1;
        if (k == 6 && !strncmp(s, "unmask", 6)) {
                cj_add(j, "container.unmask", s);
                return 0;
        }
        cj_add(j, "container.secopt", s);
        return 0;
}

/* Only no-new-privileges: seccomp=, apparmor=, label=, systempaths=, writable-cgroups= … all
 * replace or weaken a default. A spec's list replaces sandboxd's, so it must keep
 * no-new-privileges. */
static void
hc_secopt(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        bool nnp = false;
        json_t *e;
        size_t i;

        if (!strings_ok(j, param, v))
                return;
        json_array_foreach(v, i, e) nnp |=
                secopt_one(j, cj_fmt(j, "%s[%zu]", param, i), json_string_value(e)) == 1;
        if (!nnp && !j->cli)
                cj_add(j, "container.secopt", "SecurityOpt without no-new-privileges");
}

static void
hc_sysctls(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        const char *k;
        json_t *e;

        if (!strmap_ok(j, param, v))
                return;
        json_object_foreach(v, k, e)
        {
                char *n = arena_strdup(&j->ev->ar, k);
                for (char *c = n; *c; c++)
                        if (*c == '/')
                                *c = '.';
                if (!in_list(n, sysctl_ok))
                        cj_add(j, "container.sysctl", k);
        }
}

/* PidsLimit ≤ 0 (or null) means no limit at all. */
static void
hc_pids(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (json_integer_value(v) <= 0)
                cj_add(j, "container.pids-limit",
                       json_is_null(v)
                               ? "PidsLimit=null"
                               : cj_fmt(j, "PidsLimit=%lld", (long long) json_integer_value(v)));
}

static void
hc_oom_score(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        json_int_t n = json_integer_value(v);

        if (n < 0)
                cj_add(j, "container.oom", cj_fmt(j, "OomScoreAdj=%lld", (long long) n));
        else if (n > 1000)
                cj_invalid(j, param, "must be between 0 and 1000");
}

/* The configured runtime (or Docker's default when none is). */
static void
hc_runtime(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        const char *s = json_is_null(v) ? "" : json_string_value(v);
        const char *want = j->ev->ctx ? j->ev->ctx->runtime : NULL;

        if (want && *want ? strcmp(s, want) != 0 : *s != '\0')
                cj_add(j, "container.runtime", cj_fmt(j, "Runtime=%s", s));
}

/* The default driver of Binds and anonymous volumes: judged like any volume's. */
static void
hc_volume_driver(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        mount_volume(j, param, NULL, json_string_value(v), NULL);
}

static void
hc_log(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        static const char *const names[] = {"Type", "Config", NULL};
        static const unsigned types[] = {J_STR, J_OBJ};
        const char *type;

        if (json_is_null(v) || !cj_object_ok(j, param, v, names, types) ||
            !strmap_ok(j, cj_fmt(j, "%s.Config", param), json_object_get(v, "Config")))
                return;
        type = json_string_value(json_object_get(v, "Type"));
        if (type && !in_list(type, log_ok))
                cj_add(j, "container.log-driver", type);
}

static void
hc_restart(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        static const char *const names[] = {"Name", "MaximumRetryCount", NULL};
        static const unsigned types[] = {J_STR, J_INT};
        const char *name;

        if (json_is_null(v) || !cj_object_ok(j, param, v, names, types) || j->cli)
                return;
        name = json_string_value(json_object_get(v, "Name"));
        if (name && !in_list(name, restart_ok))
                cj_add(j, "container.lifecycle", cj_fmt(j, "RestartPolicy=%s", name));
}

/* sandboxd owns the lifecycle; from the CLI (`docker run --rm`) it is the user's. */
static void
hc_lifecycle(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (!j->cli)
                hc_false(j, f, param, v);
}

static void
hc_storage(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        const char *k;
        json_t *e;

        if (!strmap_ok(j, param, v))
                return;
        json_object_foreach(v, k, e) if (strcmp(k, "size") != 0)
                cj_add(j, "container.storage-opt", k);
}

static void
hc_tmpfs(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (strmap_ok(j, param, v))
                mount_tmpfs_map(j, param, v);
}

/* "8080", "8000-8010" or "" (any free port): the lowest port, 0 for any, -1 when malformed. */
static long
host_port_low(const char *s)
{
        char *end;
        long n;

        if (!*s)
                return 0;
        n = strtol(s, &end, 10);
        if (end == s || n < 0 || n > 65535 || (*end && *end != '-'))
                return -1;
        if (*end == '-') {
                char *e2;
                long hi = strtol(end + 1, &e2, 10);
                if (e2 == end + 1 || *e2 || hi < n || hi > 65535)
                        return -1;
        }
        return n;
}

static void
port_binding(struct cjudge *j, const char *param, const char *key, json_t *b)
{
        static const char *const names[] = {"HostIp", "HostPort", NULL};
        static const unsigned types[] = {J_STR, J_STR};
        const char *ip, *port;
        long low;

        if (!cj_object_ok(j, param, b, names, types))
                return;
        ip = json_string_value(json_object_get(b, "HostIp"));
        port = json_string_value(json_object_get(b, "HostPort"));
        low = host_port_low(port ? port : "");
        if (low < 0) {
                cj_invalid(j, param, "HostPort '%s' is not a port or a range", port);
                return;
        }
        /* Binding a port below 1024 on the host needs root: not for an unprivileged caller. */
        if (j->unprivileged && low > 0 && low < 1024)
                cj_add(j, "container.publish-privileged", cj_fmt(j, "%s -> %ld", key, low));
        if (!ip || !*ip || !strcmp(ip, "0.0.0.0") || !strcmp(ip, "::"))
                cj_add(j, "container.publish", key);
}

static void
hc_ports(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        const char *key;
        json_t *arr, *b;
        size_t i;

        json_object_foreach(v, key, arr)
        {
                const char *p = cj_fmt(j, "%s.%s", param, key);
                if (!json_is_array(arr) && !json_is_null(arr)) {
                        cj_invalid(j, p, "must be an array of {HostIp, HostPort}");
                        continue;
                }
                json_array_foreach(arr, i, b) port_binding(j, cj_fmt(j, "%s[%zu]", p, i), key, b);
        }
}

static void
hc_publish_all(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (json_is_true(v))
                cj_add(j, "container.publish", "PublishAllPorts");
}

static void
hc_devices(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        json_t *e;
        size_t i;

        json_array_foreach(v, i, e)
        {
                const char *p = json_is_string(e)
                                        ? json_string_value(e)
                                        : json_string_value(json_object_get(e, "PathOnHost"));
                j->ev->host_access = true;
                cj_add(j, "container.device", cj_fmt(j, "%s[%zu]=%s", f->name, i, p ? p : "?"));
        }
}

static void
hc_binds(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (strings_ok(j, param, v))
                mount_binds(j, param, v, json_string_value(json_object_get(j->hc, "VolumeDriver")));
}

static void
hc_mounts(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        mount_api(j, param, v, json_string_value(json_object_get(j->hc, "VolumeDriver")));
}

static void
hc_volumes_from(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        if (strings_ok(j, param, v))
                mount_volumes_from(j, param, v);
}

/* A blkio device as an unprivileged caller may name it: a block device directly in /dev, not
 * through a link. dockerd stat()s the path as root: anything else would tell the caller what
 * lies in directories it may not search ("stat /root/x: no such file or directory"), and a
 * link in a directory it can write (/dev/shm) could be swapped after this check. */
static void
blkio_path(struct cjudge *j, const char *param, json_t *e)
{
        const char *p = json_string_value(json_object_get(e, "Path"));
        struct stat st;

        if (!j->unprivileged ||
            (p && !strncmp(p, "/dev/", 5) && p[5] && !strchr(p + 5, '/') && strcmp(p + 5, ".") &&
             strcmp(p + 5, "..") && lstat(p, &st) == 0 && S_ISBLK(st.st_mode)))
                return;
        cj_invalid(j, cj_fmt(j, "%s.Path", param),
                   "'%s' is not a block device directly in /dev (write /dev/sda, not a link to it)",
                   p ? p : "");
}

/* Arrays of small objects: Ulimits, blkio weight and throttle devices. */
static void
hc_objects(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        static const char *const ulimit[] = {"Name", "Soft", "Hard", NULL};
        static const unsigned ulimit_t[] = {J_STR, J_INT, J_INT};
        static const char *const weight[] = {"Path", "Weight", NULL};
        static const unsigned weight_t[] = {J_STR, J_INT};
        static const char *const rate[] = {"Path", "Rate", NULL};
        static const unsigned rate_t[] = {J_STR, J_INT};
        const char *const *names = !strcmp(f->name, "Ulimits")             ? ulimit
                                   : !strcmp(f->name, "BlkioWeightDevice") ? weight
                                                                           : rate;
        const unsigned *types = names == ulimit ? ulimit_t : names == weight ? weight_t : rate_t;
        json_t *e;
        size_t i;

        json_array_foreach(v, i, e)
        {
                const char *p = cj_fmt(j, "%s[%zu]", param, i);
                if (cj_object_ok(j, p, e, names, types) && names != ulimit)
                        blkio_path(j, p, e);
        }
}

static void
hc_ints(struct cjudge *j, const struct hc_field *f, const char *param, json_t *v)
{
        json_t *e;
        size_t i;

        if (json_array_size(v) > 2)
                cj_invalid(j, param, "must be [height, width]");
        json_array_foreach(v, i, e) if (!json_is_integer(e))
                cj_invalid(j, cj_fmt(j, "%s[%zu]", param, i), "must be an integer");
}

#define F(n, t, fn, rule, ok)                                                                      \
        {                                                                                          \
                n, t, fn, rule, ok                                                                 \
        }
#define INT(n)           F(n, J_INT, NULL, NULL, NULL)
#define STR(n)           F(n, J_STR, NULL, NULL, NULL)
#define STRS(n)          F(n, J_ARR, hc_strs, NULL, NULL)
#define NONE(n, t, rule) F(n, t, hc_empty, rule, NULL)

static const struct hc_field fields[] = {
        /* Resources */
        INT("CpuShares"),
        INT("Memory"),
        INT("NanoCpus"),
        NONE("CgroupParent", J_STR, "container.cgroup-parent"),
        INT("BlkioWeight"),
        F("BlkioWeightDevice", J_ARR, hc_objects, NULL, NULL),
        F("BlkioDeviceReadBps", J_ARR, hc_objects, NULL, NULL),
        F("BlkioDeviceWriteBps", J_ARR, hc_objects, NULL, NULL),
        F("BlkioDeviceReadIOps", J_ARR, hc_objects, NULL, NULL),
        F("BlkioDeviceWriteIOps", J_ARR, hc_objects, NULL, NULL),
        INT("CpuPeriod"),
        INT("CpuQuota"),
        F("CpuRealtimePeriod", J_INT, hc_zero, "container.realtime", NULL),
        F("CpuRealtimeRuntime", J_INT, hc_zero, "container.realtime", NULL),
        STR("CpusetCpus"),
        STR("CpusetMems"),
        F("Devices", J_ARR, hc_devices, NULL, NULL),
        NONE("DeviceCgroupRules", J_ARR, "container.device"),
        NONE("DeviceRequests", J_ARR, "container.device"),
        INT("KernelMemory"),
        INT("KernelMemoryTCP"),
        INT("MemoryReservation"),
        INT("MemorySwap"),
        INT("MemorySwappiness"),
        F("OomKillDisable", J_BOOL, hc_false, "container.oom", NULL),
        F("PidsLimit", J_INT, hc_pids, NULL, NULL),
        F("Ulimits", J_ARR, hc_objects, NULL, NULL),
        INT("CpuCount"),
        INT("CpuPercent"),
        INT("IOMaximumIOps"),
        INT("IOMaximumBandwidth"),
        /* HostConfig */
        F("Binds", J_ARR, hc_binds, NULL, NULL),
        NONE("ContainerIDFile", J_STR, "container.host-file"),
        F("LogConfig", J_OBJ, hc_log, NULL, NULL),
        F("NetworkMode", J_STR, hc_network, NULL, NULL),
        F("PortBindings", J_OBJ, hc_ports, NULL, NULL),
        F("RestartPolicy", J_OBJ, hc_restart, NULL, NULL),
        F("AutoRemove", J_BOOL, hc_lifecycle, "container.lifecycle", NULL),
        F("VolumeDriver", J_STR, hc_volume_driver, NULL, NULL),
        F("VolumesFrom", J_ARR, hc_volumes_from, NULL, NULL),
        F("ConsoleSize", J_ARR, hc_ints, NULL, NULL),
        NONE("Annotations", J_OBJ, "container.annotations"),
        F("CapAdd", J_ARR, hc_cap_add, NULL, NULL),
        F("CapDrop", J_ARR, hc_cap_drop, NULL, NULL),
        F("CgroupnsMode", J_STR, hc_mode, NULL, cgroupns_ok),
        STRS("Dns"),
        STRS("DnsOptions"),
        STRS("DnsSearch"),
        STRS("ExtraHosts"),
        STRS("GroupAdd"),
        F("IpcMode", J_STR, hc_mode, NULL, ipc_ok),
        NONE("Cgroup", J_STR, "container.join-ns"),
        NONE("Links", J_ARR, "container.links"),
        F("OomScoreAdj", J_INT, hc_oom_score, NULL, NULL),
        F("PidMode", J_STR, hc_mode, NULL, pid_ok),
        F("Privileged", J_BOOL, hc_false, "container.privileged", NULL),
        F("PublishAllPorts", J_BOOL, hc_publish_all, NULL, NULL),
        F("ReadonlyRootfs", J_BOOL, NULL, NULL, NULL),
        F("SecurityOpt", J_ARR, hc_secopt, NULL, NULL),
        F("StorageOpt", J_OBJ, hc_storage, NULL, NULL),
        F("Tmpfs", J_OBJ, hc_tmpfs, NULL, NULL),
        F("UTSMode", J_STR, hc_mode, NULL, pid_ok),
        F("UsernsMode", J_STR, hc_mode, NULL, pid_ok),
        INT("ShmSize"),
        F("Sysctls", J_OBJ, hc_sysctls, NULL, NULL),
        F("Runtime", J_STR, hc_runtime, NULL, NULL),
        F("Isolation", J_STR, hc_enum, NULL, isolation_ok),
        F("Mounts", J_ARR, hc_mounts, NULL, NULL),
        F("MaskedPaths", J_ARR, hc_null, "container.unmask", NULL),
        F("ReadonlyPaths", J_ARR, hc_null, "container.unmask", NULL),
        F("Init", J_BOOL, NULL, NULL, NULL),
};

static const struct hc_field *
hc_find(const char *name)
{
        for (size_t k = 0; k < ARRAY_SIZE(fields); k++)
                if (!strcmp(fields[k].name, name))
                        return &fields[k];
        return NULL;
}

/* Whether name is a field of the table. */
bool
hc_field_known(const char *name)
{
        return hc_find(name) != NULL;
}

/* Go's encoding/json folds field names like bytes.EqualFold: ASCII case, and the two
 * non-ASCII letters whose simple fold is ASCII (U+017F long s, U+212A Kelvin sign). */
static void
fold(const char *s, char *out, size_t cap)
{
        size_t o = 0;

        for (const unsigned char *p = (const unsigned char *) s; *p && o + 1 < cap; p++) {
                if (p[0] == 0xc5 && p[1] == 0xbf) {
                        out[o++] = 's';
                        p++;
                } else if (p[0] == 0xe2 && p[1] == 0x84 && p[2] == 0xaa) {
                        out[o++] = 'k';
                        p += 2;
                } else {
                        out[o++] = (char) tolower(*p);
                }
        }
        out[o] = '\0';
}

/* The table field name folds to, or NULL. */
const char *
hc_field_folded(const char *name)
{
        char a[128], b[128];

        if (strlen(name) >= sizeof(a))
                return NULL;
        fold(name, a, sizeof(a));
        for (size_t k = 0; k < ARRAY_SIZE(fields); k++) {
                fold(fields[k].name, b, sizeof(b));
                if (!strcmp(a, b))
                        return fields[k].name;
        }
        return NULL;
}

static void
hc_unknown(struct cjudge *j, const char *param, const char *key)
{
        const char *like = hc_field_folded(key);
        const char *p = cj_fmt(j, "%s.%s", param, key);

        if (like)
                cj_invalid(j, p,
                           "Docker reads this as HostConfig.%s (it matches field names without "
                           "regard to case); write it exactly as '%s'",
                           like, like);
        else
                cj_invalid(j, p,
                           "not a HostConfig field the policy knows; an operator who accepts it "
                           "unchecked can list it in [backend.docker] "
                           "unchecked_host_config_fields");
}

/* Judges every field of hc. */
void
hc_check(struct cjudge *j, const char *param, json_t *hc)
{
        const char *extra = j->ev->ctx ? j->ev->ctx->unchecked_fields : NULL;
        const char *key;
        json_t *v;

        json_object_foreach(hc, key, v)
        {
                const struct hc_field *f = hc_find(key);
                if (!f && cj_listed(extra, key)) {
                        /* The operator accepted it unchecked: assume the worst for ask_isolated. */
                        j->ev->host_access = true;
                        continue;
                }
                if (!f) {
                        hc_unknown(j, param, key);
                } else if (!cj_type_ok(f->types, v)) {
                        cj_invalid(j, cj_fmt(j, "%s.%s", param, key), "must be %s (or null)",
                                   type_name(f->types));
                } else if (f->check) {
                        /* null reaches the check too: it is the Go zero value. */
                        f->check(j, f, cj_fmt(j, "%s.%s", param, key), v);
                }
        }
}
