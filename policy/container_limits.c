/* container_limits.c — the operator's maxima of a docker sandbox ([backend.docker] max_pids,
 * max_memory, max_cpus, max_cpu_shares, max_blkio_weight, max_disk, max_ulimits, and the
 * defaults pids_limit and memory): parsed from
 * the section with the host's defaults, and judged against what a spec asks for in resources.*
 * and docker.host_config. A value above a maximum (or one that means "no limit") is an
 * invalid spec, -32602 naming the field, the value, the maximum and the key that raises it.
 * The per-uid sums (max_pids_per_user, max_memory_per_user) are the daemon's, at create, from
 * policy_docker_usage. See docs/backends/docker.md, "Limits and images".
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/container_int.h"
#include "protocol/util.h"

#define MIB (INT64_C(1) << 20)

enum lim_kind { LK_COUNT, LK_SIZE, LK_CPUS };
enum lim_id {
        K_PIDS,
        K_MAX_PIDS,
        K_PIDS_USER,
        K_MEM,
        K_MAX_MEM,
        K_MEM_USER,
        K_CPUS,
        K_SHARES,
        K_BLKIO,
        K_DISK,
};

#define OFF(f) offsetof(struct policy_docker_limits, f)
#define GIB50  (INT64_C(1) << 50)

static const struct lim_key {
        const char *key;
        size_t off;
        enum lim_kind kind;
        int64_t min, max;
} lim_keys[] = {
        [K_PIDS] = {"pids_limit", OFF(pids), LK_COUNT, 1, 1 << 22},
        [K_MAX_PIDS] = {"max_pids", OFF(max_pids), LK_COUNT, 1, 1 << 22},
        [K_PIDS_USER] = {"max_pids_per_user", OFF(max_pids_user), LK_COUNT, 1, 1 << 22},
        [K_MEM] = {"memory", OFF(memory), LK_SIZE, 6 * MIB, GIB50},
        [K_MAX_MEM] = {"max_memory", OFF(max_memory), LK_SIZE, 6 * MIB, GIB50},
        [K_MEM_USER] = {"max_memory_per_user", OFF(max_memory_user), LK_SIZE, 6 * MIB, GIB50},
        [K_CPUS] = {"max_cpus", OFF(max_nano_cpus), LK_CPUS, 10000000, INT64_C(1024) * 1000000000},
        [K_SHARES] = {"max_cpu_shares", OFF(max_cpu_shares), LK_COUNT, 2, 262144},
        [K_BLKIO] = {"max_blkio_weight", OFF(max_blkio_weight), LK_COUNT, 10, 1000},
        [K_DISK] = {"max_disk", OFF(max_disk), LK_SIZE, 6 * MIB, GIB50},
};

/* a ≤ b, else the first key raises b. */
static const struct {
        enum lim_id a, b;
} lim_order[] = {{K_PIDS, K_MAX_PIDS},
                 {K_MAX_PIDS, K_PIDS_USER},
                 {K_MEM, K_MAX_MEM},
                 {K_MAX_MEM, K_MEM_USER}};

#define LIM(l, off) (*(int64_t *) ((char *) (l) + (off)))

/* "64m", "1G", "1048576": bytes (k, m, g, t, p, e are powers of 1024). 0 or -EINVAL. */
int
limits_size_parse(const char *s, int64_t *out)
{
        static const char units[] = "kmgtpe";
        char *end;
        const char *u;
        long long n;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno)
                return -EINVAL;
        if (*end && (end[1] || !(u = strchr(units, (char) (*end | 0x20)))))
                return -EINVAL;
        for (int k = *end ? (int) (u - units) + 1 : 0; k > 0; k--) {
                if (n > INT64_MAX / 1024)
                        return -EINVAL;
                n *= 1024;
        }
        *out = n;
        return 0;
}

/* One key's value: a JSON number or the string of an INI file. */
static int
lim_value(const struct lim_key *k, json_t *v, int64_t *out)
{
        const char *s = json_string_value(v);
        char *end;
        double d;

        if (k->kind == LK_CPUS) {
                d = json_is_number(v) ? json_number_value(v) : s ? strtod(s, &end) : -1.0;
                if (s && (end == s || *end))
                        return -EINVAL;
                if (!(d >= 0.01 && d <= 1024))
                        return -EINVAL;
                *out = (int64_t) (d * 1e9 + 0.5);
                return 0;
        }
        if (json_is_integer(v))
                *out = json_integer_value(v);
        else if (k->kind == LK_SIZE ? limits_size_parse(s, out) < 0
                                    : (!s || !*s || (*out = strtoll(s, &end, 10), *end)))
                return -EINVAL;
        if (*out < k->min || *out > k->max)
                return -EINVAL;
        if (k->kind == LK_SIZE)
                *out = (*out + MIB - 1) / MIB * MIB;
        return 0;
}

static int
lim_bad(struct sbx_error *err, const struct lim_key *k, json_t *v)
{
        char *s = json_dumps(v, JSON_ENCODE_ANY);

        if (k->kind == LK_COUNT)
                sbx_error_param(err, k->key,
                                "[backend.docker] %s = %s is not valid: expected a whole number "
                                "from %lld to %lld",
                                k->key, s ? s : "?", (long long) k->min, (long long) k->max);
        else
                sbx_error_param(err, k->key, "[backend.docker] %s = %s is not valid: expected %s",
                                k->key, s ? s : "?",
                                k->kind == LK_SIZE ? "a size of at least 6m, such as 512m or 2g"
                                                   : "CPUs from 0.01 to 1024, such as 2 or 0.5");
        free(s);
        return -EINVAL;
}

/* The shipped defaults of the keys not given (set: bit K_* for each given), in the order they
 * depend on each other. */
static void
lim_defaults(struct policy_docker_limits *l, unsigned set, const struct policy_host *h)
{
        if (!(set & 1u << K_PIDS_USER))
                l->max_pids_user = MAX(h->pid_max / 4, 64);
        if (!(set & 1u << K_MAX_PIDS))
                l->max_pids = MIN(4096, l->max_pids_user);
        if (!(set & 1u << K_PIDS))
                l->pids = MIN(512, l->max_pids);
        if (!(set & 1u << K_MEM_USER))
                l->max_memory_user = MAX(h->mem / MIB, 64) * MIB;
        if (!(set & 1u << K_MAX_MEM))
                l->max_memory = MAX(h->mem / 2 / MIB, 64) * MIB;
        if (!(set & 1u << K_MEM))
                l->memory = MIN(512 * MIB, l->max_memory);
        if (!(set & 1u << K_CPUS))
                l->max_nano_cpus = MAX(h->cpus, 1) * INT64_C(1000000000);
        if (!(set & 1u << K_SHARES))
                l->max_cpu_shares = 1024;
        /* what a container without a weight gets: CFQ's 500 on cgroup v1, BFQ's 100 on v2 */
        if (!(set & 1u << K_BLKIO))
                l->max_blkio_weight = h->cgroup2 ? 100 : 500;
}

/* allow_pull: a JSON boolean or the strings of an INI file. 1, 0, or -1 when neither. */
static int
lim_bool(json_t *v)
{
        static const char *const yes[] = {"true", "yes", "on", "1"};
        static const char *const no[] = {"false", "no", "off", "0"};
        const char *s = json_string_value(v);

        if (json_is_boolean(v))
                return json_is_true(v);
        for (size_t i = 0; s && i < ARRAY_SIZE(yes); i++) {
                if (!strcasecmp(s, yes[i]))
                        return 1;
                if (!strcasecmp(s, no[i]))
                        return 0;
        }
        return -1;
}

static int
lim_strings(json_t *sec, struct policy_docker_limits *l, struct sbx_error *err)
{
        json_t *pull = json_object_get(sec, "allow_pull"), *images = json_object_get(sec, "images");
        int b = pull ? lim_bool(pull) : 0;

        l->images = json_string_value(images);
        l->image = json_string_value(json_object_get(sec, "image"));
        if (!l->image || !*l->image)
                l->image = POLICY_DOCKER_IMAGE;
        if (images && !l->images) {
                sbx_error_param(err, "images",
                                "[backend.docker] images must be a string: names separated by "
                                "commas or blanks");
                return -EINVAL;
        }
        if (b < 0) {
                sbx_error_param(err, "allow_pull",
                                "[backend.docker] allow_pull is not valid: expected true or false");
                return -EINVAL;
        }
        l->allow_pull = b == 1;
        return image_list_check(l->images, err);
}

static int
lim_ulimits(json_t *sec, struct policy_docker_limits *l, struct sbx_error *err)
{
        json_t *v = json_object_get(sec, "max_ulimits");

        if (v && !json_is_string(v)) {
                sbx_error_param(err, "max_ulimits",
                                "[backend.docker] max_ulimits must be a string: NAME=MAX entries "
                                "separated by commas or blanks");
                return -EINVAL;
        }
        return ulimit_list_parse(v ? json_string_value(v) : POLICY_DOCKER_ULIMITS, l->ulimit_max,
                                 err);
}

/* Parses the section into out (all zeros on failure). */
int
policy_docker_limits_parse(json_t *sec, const struct policy_host *host,
                           struct policy_docker_limits *out, struct sbx_error *err)
{
        struct policy_docker_limits l = {0};
        unsigned set = 0;

        memset(out, 0, sizeof(*out));
        for (size_t i = 0; i < ARRAY_SIZE(lim_keys); i++) {
                json_t *v = json_object_get(sec, lim_keys[i].key);
                if (v && lim_value(&lim_keys[i], v, &LIM(&l, lim_keys[i].off)) < 0)
                        return lim_bad(err, &lim_keys[i], v);
                set |= v ? 1u << i : 0;
        }
        lim_defaults(&l, set, host);
        for (size_t i = 0; i < ARRAY_SIZE(lim_order); i++) {
                const struct lim_key *a = &lim_keys[lim_order[i].a], *b = &lim_keys[lim_order[i].b];
                if (LIM(&l, a->off) <= LIM(&l, b->off))
                        continue;
                sbx_error_param(err, a->key,
                                "[backend.docker] %s (%lld) is above %s (%lld): lower the "
                                "first or raise the second",
                                a->key, (long long) LIM(&l, a->off), b->key,
                                (long long) LIM(&l, b->off));
                return -EINVAL;
        }
        if (lim_strings(sec, &l, err) < 0 || lim_ulimits(sec, &l, err) < 0)
                return -EINVAL;
        *out = l;
        return 0;
}

/* ---- judging a spec ---- */

/* What a spec asks for, after the defaults (the backend's merge: resources.* wins, and a
 * docker.host_config field it would conflict with is refused there). */
struct lim_want {
        json_t *res, *hc;
        int64_t pids, mem; /* ≤ 0: no limit */
};

static void
lim_want(const struct policy_docker_limits *l, json_t *spec, struct lim_want *w)
{
        json_t *v;

        w->res = json_object_get(spec, "resources");
        w->hc = json_object_get(json_object_get(spec, "docker"), "host_config");
        if ((v = json_object_get(w->res, "pids")))
                w->pids = json_integer_value(v);
        else if ((v = json_object_get(w->hc, "PidsLimit")))
                w->pids = json_integer_value(v);
        else
                w->pids = l->pids;
        if ((v = json_object_get(w->res, "memory_mb")))
                w->mem = json_integer_value(v) * MIB;
        else if ((v = json_object_get(w->hc, "Memory")))
                w->mem = json_integer_value(v);
        else
                w->mem = l->memory;
}

/* The pids and memory a spec takes. */
void
policy_docker_usage(const struct policy_docker_limits *l, json_t *spec, int64_t *pids, int64_t *mem)
{
        struct lim_want w;

        lim_want(l, spec, &w);
        /* "no limit" is refused by the judgement; counted here as the maximum */
        *pids = w.pids > 0 ? w.pids : l->max_pids;
        *mem = w.mem > 0 ? w.mem : l->max_memory;
}

static void
lim_over(struct cjudge *j, const char *param, long long v, const char *unit, long long max,
         const char *key)
{
        cj_invalid(j, param,
                   "%lld%s is above the maximum %lld%s; an operator raises it with "
                   "[backend.docker] %s",
                   v, unit, max, unit, key);
}

/* An integer field of hc, when the spec's resources.* does not set the limit instead. */
static json_t *
lim_hc(const struct lim_want *w, const char *field, const char *resource)
{
        return json_object_get(w->res, resource) ? NULL : json_object_get(w->hc, field);
}

static void
lim_pids(struct cjudge *j, const struct policy_docker_limits *l, const struct lim_want *w)
{
        json_t *v = json_object_get(w->res, "pids");
        const char *param = "resources.pids";

        if (!v && (v = lim_hc(w, "PidsLimit", "pids")))
                param = "docker.host_config.PidsLimit";
        /* ≤ 0 (no limit) is the container.pids-limit finding of the HostConfig table */
        if (v && json_integer_value(v) > l->max_pids)
                lim_over(j, param, (long long) json_integer_value(v), "", (long long) l->max_pids,
                         "max_pids");
}

static void
lim_swap(struct cjudge *j, const struct lim_want *w)
{
        json_t *mem = lim_hc(w, "Memory", "memory_mb"),
               *swap = lim_hc(w, "MemorySwap", "memory_mb");
        json_int_t s = json_integer_value(swap);

        /* Any MemorySwap, null and 0 too, keeps the default memory off (sandbox_policy.c):
         * without Memory it would leave the container with no memory limit at all. */
        if (!swap)
                return;
        if (!mem)
                cj_invalid(j, "docker.host_config.MemorySwap",
                           "needs Memory as well (set both, or neither and the default memory "
                           "limit applies)");
        else if (json_is_null(swap) || s == 0)
                return;
        else if (s < 0)
                cj_invalid(j, "docker.host_config.MemorySwap",
                           "%lld is unlimited swap; give at most twice Memory", (long long) s);
        else if (s / 2 > w->mem)
                cj_invalid(j, "docker.host_config.MemorySwap",
                           "%lld is more than twice Memory (%lld)", (long long) s,
                           (long long) w->mem);
}

static void
lim_memory(struct cjudge *j, const struct policy_docker_limits *l, const struct lim_want *w)
{
        json_t *mb = json_object_get(w->res, "memory_mb"), *v = lim_hc(w, "Memory", "memory_mb");

        if (mb && w->mem > l->max_memory) {
                lim_over(j, "resources.memory_mb", (long long) json_integer_value(mb), " MiB",
                         (long long) (l->max_memory / MIB), "max_memory");
        } else if (v && w->mem <= 0) {
                cj_invalid(j, "docker.host_config.Memory",
                           "%lld is no limit at all; give at most %lld bytes ([backend.docker] "
                           "max_memory), or leave it out for the default (memory)",
                           (long long) w->mem, (long long) l->max_memory);
        } else if (v && w->mem > l->max_memory) {
                lim_over(j, "docker.host_config.Memory", (long long) w->mem, " bytes",
                         (long long) l->max_memory, "max_memory");
        }
        lim_swap(j, w);
}

static void
lim_cpus(struct cjudge *j, const struct policy_docker_limits *l, const struct lim_want *w)
{
        json_t *cpus = json_object_get(w->res, "cpus"), *nano = lim_hc(w, "NanoCpus", "cpus");
        json_int_t quota = json_integer_value(lim_hc(w, "CpuQuota", "cpus"));
        json_int_t period = json_integer_value(lim_hc(w, "CpuPeriod", "cpus"));
        json_int_t shares = json_integer_value(json_object_get(w->hc, "CpuShares"));
        double max = (double) l->max_nano_cpus / 1e9;

        if (cpus && json_number_value(cpus) * 1e9 > (double) l->max_nano_cpus + 0.5)
                cj_invalid(j, "resources.cpus",
                           "%g is above the maximum %g; an operator raises it with "
                           "[backend.docker] max_cpus",
                           json_number_value(cpus), max);
        if (json_integer_value(nano) > l->max_nano_cpus)
                lim_over(j, "docker.host_config.NanoCpus", (long long) json_integer_value(nano), "",
                         (long long) l->max_nano_cpus, "max_cpus");
        /* CpuQuota µs of every CpuPeriod (100000 when not given): quota / period CPUs */
        if (quota > 0 && (double) quota / (double) (period > 0 ? period : 100000) > max)
                cj_invalid(j, "docker.host_config.CpuQuota",
                           "%lld of a period of %lld is more than %g CPUs; an operator raises "
                           "it with [backend.docker] max_cpus",
                           (long long) quota, (long long) (period > 0 ? period : 100000), max);
        if (shares < 0 || shares > l->max_cpu_shares)
                lim_over(j, "docker.host_config.CpuShares", (long long) shares, "",
                         (long long) l->max_cpu_shares, "max_cpu_shares");
}

/* A tmpfs's size= option (Tmpfs map value "rw,size=64m"), or ShmSize, within the memory. */
static void
lim_tmpfs_opts(struct cjudge *j, const char *param, const char *opts, const struct lim_want *w)
{
        for (const char *p = opts; p && *p;) {
                size_t n = strcspn(p, ",");
                int64_t size;
                if (n > 5 && !strncmp(p, "size=", 5)) {
                        char *v = arena_strndup(&j->ev->ar, p + 5, n - 5);
                        if (limits_size_parse(v, &size) < 0)
                                cj_invalid(j, param,
                                           "size=%s is not a size in bytes, k, m or g (a "
                                           "percentage of the host's memory is not taken)",
                                           v);
                        else if (w->mem > 0 && size > w->mem)
                                cj_invalid(j, param,
                                           "size=%s is more than the sandbox's memory (%lld "
                                           "bytes)",
                                           v, (long long) w->mem);
                }
                p += n + (p[n] == ',');
        }
}

static void
lim_sizes(struct cjudge *j, const struct lim_want *w)
{
        json_int_t shm = json_integer_value(json_object_get(w->hc, "ShmSize"));
        const char *path;
        json_t *v, *m;
        size_t i;

        if (shm < 0 || (w->mem > 0 && shm > w->mem))
                cj_invalid(j, "docker.host_config.ShmSize",
                           "%lld is not between 0 and the sandbox's memory (%lld bytes)",
                           (long long) shm, (long long) w->mem);
        json_object_foreach(json_object_get(w->hc, "Tmpfs"), path, v) lim_tmpfs_opts(
                j, cj_fmt(j, "docker.host_config.Tmpfs.%s", path), json_string_value(v), w);
        json_array_foreach(json_object_get(w->hc, "Mounts"), i, m)
        {
                json_int_t size = json_integer_value(
                        json_object_get(json_object_get(m, "TmpfsOptions"), "SizeBytes"));
                if (size < 0 || (w->mem > 0 && size > w->mem))
                        cj_invalid(j,
                                   cj_fmt(j,
                                          "docker.host_config.Mounts[%zu].TmpfsOptions."
                                          "SizeBytes",
                                          i),
                                   "%lld is not between 0 and the sandbox's memory (%lld "
                                   "bytes)",
                                   (long long) size, (long long) w->mem);
        }
}

/* A blkio weight (BlkioWeight, or a BlkioWeightDevice entry's): 0 is "not set". */
static void
lim_weight(struct cjudge *j, const struct policy_docker_limits *l, const char *param, json_t *v)
{
        json_int_t w = json_integer_value(v);

        if (w < 0 || w > l->max_blkio_weight)
                lim_over(j, param, (long long) w, "", (long long) l->max_blkio_weight,
                         "max_blkio_weight");
}

static void
lim_blkio(struct cjudge *j, const struct policy_docker_limits *l, const struct lim_want *w)
{
        json_t *e;
        size_t i;

        lim_weight(j, l, "docker.host_config.BlkioWeight", json_object_get(w->hc, "BlkioWeight"));
        json_array_foreach(json_object_get(w->hc, "BlkioWeightDevice"), i, e)
                lim_weight(j, l, cj_fmt(j, "docker.host_config.BlkioWeightDevice[%zu].Weight", i),
                           json_object_get(e, "Weight"));
}

/* StorageOpt size (the graph drivers read the key in any case): only when the operator says
 * the storage enforces it. overlay2 does so on xfs with pquota only, and dockerd refuses it
 * elsewhere; devicemapper, btrfs and zfs take it too. */
static void
lim_disk(struct cjudge *j, const struct policy_docker_limits *l, const struct lim_want *w)
{
        const char *k;
        json_t *v;
        int64_t size;

        json_object_foreach(json_object_get(w->hc, "StorageOpt"), k, v)
        {
                const char *p = cj_fmt(j, "docker.host_config.StorageOpt.%s", k), *s;
                if (strcasecmp(k, "size") != 0)
                        continue;
                s = json_string_value(v);
                if (!l->max_disk)
                        cj_invalid(j, p,
                                   "a disk size is not enforced unless Docker's storage does "
                                   "(overlay2: xfs mounted with pquota); an operator whose "
                                   "storage does allows it with [backend.docker] max_disk");
                else if (limits_size_parse(s, &size) < 0)
                        cj_invalid(j, p, "'%s' is not a size in bytes, k, m or g", s ? s : "");
                else if (size > l->max_disk)
                        lim_over(j, p, (long long) size, " bytes", (long long) l->max_disk,
                                 "max_disk");
        }
}

/* Judges a docker spec against the operator's maxima (and its image, for an unprivileged
 * caller). */
void
limits_check(struct cjudge *j, json_t *spec, const struct policy_docker_limits *l)
{
        struct lim_want w;

        lim_want(l, spec, &w);
        lim_pids(j, l, &w);
        lim_memory(j, l, &w);
        lim_cpus(j, l, &w);
        lim_sizes(j, &w);
        lim_blkio(j, l, &w);
        lim_disk(j, l, &w);
        ulimit_check(j, w.hc, l);
        image_check(j, spec, l);
}
