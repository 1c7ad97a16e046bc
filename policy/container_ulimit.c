/* container_ulimit.c — the Ulimits a docker spec may ask for: an allowlist of names, each with
 * the most its Soft and Hard may be ([backend.docker] max_ulimits, "NAME=MAX …"; shipped:
 * POLICY_DOCKER_ULIMITS). See docs/backends/docker.md, "Limits and images".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/container_int.h"
#include "protocol/util.h"

/* The rlimits Docker knows (runc's RLIMIT_ + the upper-cased name), in the order of
 * policy_docker_limits.ulimit_max. */
static const char *const ulimit_names[POLICY_ULIMITS] = {
        "as",   "core",   "cpu",   "data", "fsize",  "locks",  "memlock",    "msgqueue",
        "nice", "nofile", "nproc", "rss",  "rtprio", "rttime", "sigpending", "stack",
};

/* The name of rlimit i. */
const char *
policy_docker_ulimit_name(size_t i)
{
        return i < POLICY_ULIMITS ? ulimit_names[i] : NULL;
}

static int
ulimit_index(const char *name, size_t n)
{
        for (int i = 0; i < POLICY_ULIMITS; i++)
                if (strlen(ulimit_names[i]) == n && !strncasecmp(ulimit_names[i], name, n))
                        return i;
        return -1;
}

/* "1048576", "64m" or "unlimited" (-1). */
static int
ulimit_value(const char *s, size_t n, int64_t *out)
{
        char v[32];

        if (n == 0 || n >= sizeof(v))
                return -EINVAL;
        memcpy(v, s, n);
        v[n] = '\0';
        if (!strcmp(v, "unlimited")) {
                *out = -1;
                return 0;
        }
        return limits_size_parse(v, out);
}

static int
ulimit_bad(struct sbx_error *err, const char *list, const char *why)
{
        sbx_error_param(err, "max_ulimits",
                        "[backend.docker] max_ulimits = '%s' is not valid: %s (expected "
                        "NAME=MAX entries such as nofile=1048576 or cpu=unlimited)",
                        list, why);
        return -EINVAL;
}

/* Parses "NAME=MAX, …" into max (every name not listed: POLICY_ULIMIT_REFUSED). */
int
ulimit_list_parse(const char *list, int64_t *max, struct sbx_error *err)
{
        for (int i = 0; i < POLICY_ULIMITS; i++)
                max[i] = POLICY_ULIMIT_REFUSED;
        for (const char *p = list; p && *p;) {
                p += strspn(p, ", \t");
                size_t n = strcspn(p, ", \t"), k = strcspn(p, "=");
                int i;
                if (!n)
                        break;
                if (k >= n)
                        return ulimit_bad(err, list, "an entry has no '='");
                if ((i = ulimit_index(p, k)) < 0)
                        return ulimit_bad(err, list, "a name is not one of Docker's rlimits");
                if (ulimit_value(p + k + 1, n - k - 1, &max[i]) < 0)
                        return ulimit_bad(err, list, "a maximum is not a number or unlimited");
                p += n;
        }
        return 0;
}

/* -1 (unlimited) is above every finite maximum. */
static bool
ulimit_above(int64_t v, int64_t max)
{
        return max != -1 && (v < 0 || v > max);
}

static void
ulimit_one(struct cjudge *j, const char *param, json_t *e, const struct policy_docker_limits *l)
{
        static const char *const sides[] = {"Soft", "Hard"};
        const char *name = json_string_value(json_object_get(e, "Name"));
        int i = name ? ulimit_index(name, strlen(name)) : -1;

        if (i < 0 || l->ulimit_max[i] == POLICY_ULIMIT_REFUSED) {
                cj_invalid(j, cj_fmt(j, "%s.Name", param),
                           "'%s' is not an rlimit a sandbox may set; an operator allows it with "
                           "[backend.docker] max_ulimits (NAME=MAX)",
                           name ? name : "");
                return;
        }
        for (size_t s = 0; s < ARRAY_SIZE(sides); s++) {
                json_t *v = json_object_get(e, sides[s]);
                int64_t n = json_integer_value(v);
                if (v && ulimit_above(n, l->ulimit_max[i]))
                        cj_invalid(j, cj_fmt(j, "%s.%s", param, sides[s]),
                                   "%lld%s is above the maximum %lld of %s; an operator raises "
                                   "it with [backend.docker] max_ulimits (%s=MAX)",
                                   (long long) n, n == -1 ? " (unlimited)" : "",
                                   (long long) l->ulimit_max[i], ulimit_names[i], ulimit_names[i]);
        }
}

/* Every entry of hc's Ulimits within l->ulimit_max. */
void
ulimit_check(struct cjudge *j, json_t *hc, const struct policy_docker_limits *l)
{
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(hc, "Ulimits"), i, e)
                ulimit_one(j, cj_fmt(j, "docker.host_config.Ulimits[%zu]", i), e, l);
}
