/* docker_config.c — the [backend.docker] section: every key the backend takes, parsed into a
 * struct docker_state by init, and by validate into a scratch one that is then thrown away
 * (so --check-config and start-up see the same errors, all of them). */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/agent/transport.h"
#include "backends/credenv.h"
#include "backends/docker/docker_int.h"
#include "policy/policy.h"

/* Every key of [backend.docker] (docs/backends/docker.md); the daemon reads the last ones. */
static const char *const docker_config_keys[] = {
        "host",
        "cert_path",
        "tls",
        "image",
        "network",
        "pids_limit",
        "tmp_size",
        "instance",
        "agent",
        "runtime",
        "agent_ping_ms",
        "agent_link_timeout_ms",
        "agent_reconnect_ms",
        "recreate",
        "unchecked_host_config_fields",
        "volume_drivers",
        "root_users",
        "root_groups",
        /* the maxima and images: policy_docker_limits_parse (policy/container_limits.c) */
        "max_pids",
        "max_pids_per_user",
        "memory",
        "max_memory",
        "max_memory_per_user",
        "max_cpus",
        "max_cpu_shares",
        "max_blkio_weight",
        "max_disk",
        "max_ulimits",
        "images",
        "allow_pull",
        NULL,
};

/* "[backend.docker] KEY = 'VALUE' is not valid: expected WHAT", with the key as param. */
static int
docker_cfg_bad(struct sbx_error *err, json_t *config, const char *key, const char *what)
{
        const char *v = json_string_value(json_object_get(config, key));

        sbx_error_param(err, key, "[backend.docker] %s = '%s' is not valid: expected %s", key,
                        v ? v : "(not a string)", what);
        return -EINVAL;
}

static char *
docker_cfg_str(json_t *config, const char *key, const char *env, const char *dflt)
{
        const char *v = json_string_value(json_object_get(config, key));

        if (!v && env)
                v = credenv_get(env);
        if (!v || !*v)
                v = dflt;
        return v ? xstrdup(v) : NULL;
}

static int
docker_parse_host(struct docker_state *d, struct sbx_error *err)
{
        const char *h = d->host;

        if (strncmp(h, "unix://", 7) == 0) {
                d->sock_path = xstrdup(h + 7);
                d->base_url = xstrdup("http://docker");
                return 0;
        }
        if (strncmp(h, "tcp://", 6) == 0) {
                const char *hp = h + 6, *colon = strrchr(hp, ':');
                if (!colon || colon == hp) {
                        sbx_error_param(err, "host",
                                        "[backend.docker] host = '%s' is not valid: expected "
                                        "tcp://HOST:PORT",
                                        h);
                        return -EINVAL;
                }
                d->tcp_host = xstrndup(hp, (size_t) (colon - hp));
                d->tcp_port = atoi(colon + 1);
                d->base_url = xasprintf("%s://%s", d->tls ? "https" : "http", hp);
                return 0;
        }
        sbx_error_param(err, "host",
                        "[backend.docker] host = '%s' is not valid: expected unix:///PATH or "
                        "tcp://HOST:PORT (from the section, else DOCKER_HOST)",
                        h);
        return -EINVAL;
}

/* A boolean key: JSON true/false, or the strings of an INI file ("true"/"yes"/"on"/"1" and
 * "false"/"no"/"off"/"0"). Returns 0 and *ret (dflt when absent), or -EINVAL. */
static int
docker_cfg_bool(json_t *config, const char *key, bool dflt, bool *ret)
{
        static const char *const yes[] = {"true", "yes", "on", "1"};
        static const char *const no[] = {"false", "no", "off", "0"};
        json_t *v = json_object_get(config, key);
        const char *s = json_string_value(v);

        *ret = dflt;
        if (!v)
                return 0;
        if (json_is_boolean(v)) {
                *ret = json_is_true(v);
                return 0;
        }
        for (size_t i = 0; s && i < ARRAY_SIZE(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
                        *ret = strcasecmp(s, yes[i]) == 0;
                        return 0;
                }
        }
        return -EINVAL;
}

/* A non-negative integer key: JSON integer or a decimal string (INI). */
static int
docker_cfg_uint(json_t *config, const char *key, int64_t dflt, int64_t *ret)
{
        json_t *v = json_object_get(config, key);
        const char *s = json_string_value(v);
        char *end = NULL;
        long long n;

        *ret = dflt;
        if (!v)
                return 0;
        if (json_is_integer(v)) {
                *ret = json_integer_value(v);
                return *ret < 0 ? -EINVAL : 0;
        }
        if (!s || !*s)
                return -EINVAL;
        errno = 0;
        n = strtoll(s, &end, 10);
        if (errno || *end || n < 0)
                return -EINVAL;
        *ret = n;
        return 0;
}

/* tls, cert_path, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH. */
static int
docker_cfg_tls(json_t *config, struct docker_state *d, struct sbx_error *err)
{
        char *certs = docker_cfg_str(config, "cert_path", "DOCKER_CERT_PATH", NULL);
        const char *verify = credenv_get("DOCKER_TLS_VERIFY");
        bool tls = false;
        int r = 0;

        /* A malformed value is refused, and cannot turn TLS off meanwhile. */
        if (docker_cfg_bool(config, "tls", false, &tls) < 0) {
                tls = true;
                r = docker_cfg_bad(err, config, "tls", "true or false");
        }
        d->tls = tls || (verify && *verify) || certs != NULL;
        if (certs) {
                d->ca_file = xasprintf("%s/ca.pem", certs);
                d->cert_file = xasprintf("%s/cert.pem", certs);
                d->key_file = xasprintf("%s/key.pem", certs);
        }
        free(certs);
        return r;
}

/* Frees what docker_config_parse filled in. */
void
docker_config_free(struct docker_state *d)
{
        free(d->host);
        free(d->sock_path);
        free(d->tcp_host);
        free(d->base_url);
        free(d->ca_file);
        free(d->cert_file);
        free(d->key_file);
        free(d->default_image);
        free(d->default_network);
        free(d->tmp_size);
        free(d->instance);
        free(d->runtime);
        free(d->agent);
        free(d->agent_note);
        free(d->root_users);
        free(d->root_groups);
}

/* agent = PATH | off; unset: next to the daemon's binary, then SANDBOXD_LIBEXECDIR. */
static int
docker_cfg_agent(json_t *config, struct docker_state *d, struct sbx_error *err)
{
        const char *v = json_string_value(json_object_get(config, "agent"));
        char *near = NULL;
        bool on;

        if (v && *v && docker_cfg_bool(config, "agent", true, &on) == 0 && !on) {
                d->agent_note = xstrdup("agent = off in [backend.docker]");
                return 0;
        }
        if (v && *v) {
                d->agent = agent_locate_file(v);
                if (!d->agent)
                        return docker_cfg_bad(err, config, "agent",
                                              "an executable file (build it with make), or "
                                              "agent = off");
                return 0;
        }
        d->agent = agent_locate(&near);
        if (!d->agent)
                d->agent_note = xasprintf("sandboxd-agent not found %s: every exec is a "
                                          "docker exec (run make install)",
                                          near);
        free(near);
        return 0;
}

/* The agent session's timing: agent_ping_ms, agent_link_timeout_ms, agent_reconnect_ms. */
static int
docker_cfg_agent_link(json_t *config, struct docker_state *d, struct sbx_error *err)
{
        static const struct {
                const char *key;
                size_t off;
        } keys[] = {
                {"agent_ping_ms", offsetof(struct docker_state, agent_ping_ms)},
                {"agent_link_timeout_ms", offsetof(struct docker_state, agent_link_timeout_ms)},
                {"agent_reconnect_ms", offsetof(struct docker_state, agent_reconnect_ms)},
        };
        int64_t v;

        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
                if (docker_cfg_uint(config, keys[i].key, 0, &v) < 0 || v > 86400000) {
                        return docker_cfg_bad(err, config, keys[i].key,
                                              "milliseconds from 0 (the default) to 86400000");
                }
                *(unsigned *) ((char *) d + keys[i].off) = (unsigned) v;
        }
        return 0;
}

/* pids_limit, and recreate (read by the daemon at each use, records.c: checked here so that a
 * typo fails the check and start-up). */
static int
docker_cfg_numbers(json_t *config, struct docker_state *d, struct sbx_error *err)
{
        bool recreate;
        int64_t ms;

        if (docker_cfg_uint(config, "pids_limit", 512, &d->pids_limit) < 0)
                return docker_cfg_bad(err, config, "pids_limit", "a whole number");
        /* given by the daemon ([limits] file_timeout_s), as to every backend */
        if (docker_cfg_uint(config, "file_timeout_ms", 60000, &ms) < 0 || !ms || ms > 86400000)
                return docker_cfg_bad(err, config, "file_timeout_ms",
                                      "milliseconds from 1 to 86400000");
        d->check_ms = (unsigned) ms;
        if (docker_cfg_bool(config, "recreate", true, &recreate) < 0)
                return docker_cfg_bad(err, config, "recreate", "true or false");
        return 0;
}

static int
docker_cfg_strings(json_t *config, struct docker_state *d, struct sbx_error *err)
{
        d->default_image = docker_cfg_str(config, "image", NULL, POLICY_DOCKER_IMAGE);
        d->default_network = docker_cfg_str(config, "network", NULL, "none");
        d->tmp_size = docker_cfg_str(config, "tmp_size", NULL, "512m");
        d->instance = docker_cfg_str(config, "instance", NULL, NULL);
        d->runtime = docker_cfg_str(config, "runtime", NULL, NULL);
        d->root_users = docker_cfg_str(config, "root_users", NULL, NULL);
        d->root_groups = docker_cfg_str(config, "root_groups", NULL, NULL);
        return 0;
}

/* host (or DOCKER_HOST); after docker_cfg_tls, which decides the scheme of a tcp:// host. */
static int
docker_cfg_host(json_t *config, struct docker_state *d, struct sbx_error *err)
{
        d->host = docker_cfg_str(config, "host", "DOCKER_HOST", "unix:///var/run/docker.sock");
        return docker_parse_host(d, err);
}

/* Parses config into d (every field docker_config_free frees), reporting every problem;
 * returns how many there were. */
int
docker_config_parse(json_t *config, struct docker_state *d, backend_config_report_fn report,
                    void *ctx)
{
        static int (*const steps[])(json_t *, struct docker_state *, struct sbx_error *) = {
                docker_cfg_numbers, docker_cfg_strings, docker_cfg_tls,
                docker_cfg_host,    docker_cfg_agent,   docker_cfg_agent_link,
        };
        struct backend_config_tally rep = {report, ctx, 0};
        struct sbx_error e = {0};

        backend_config_known(config, "docker", docker_config_keys, backend_config_tally_cb, &rep);
        for (size_t i = 0; i < ARRAY_SIZE(steps); i++)
                if (steps[i](config, d, &e) < 0)
                        backend_config_tally_error(&rep, NULL, &e);
        return rep.n;
}

/* backend_ops.validate: the parse into a scratch state. */
int
docker_config_validate(json_t *config, backend_config_report_fn report, void *ctx)
{
        struct docker_state scratch = {0};
        int n = docker_config_parse(config, &scratch, report, ctx);

        docker_config_free(&scratch);
        return n;
}
