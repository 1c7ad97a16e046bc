/* config.c — INI configuration through inih, table-driven. */
#include "daemon/config.h"

#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/backend.h"
#include "policy/policy.h"
#include "protocol/util.h"

enum config_type {
        CT_STR,
        CT_U64,
        CT_SIZE,
        CT_BOOL,
        CT_UIDS,
        CT_GIDS,
};

struct config_key {
        const char *section;
        const char *name;
        enum config_type type;
        size_t off;
        size_t count_off; /* for lists */
        uint64_t max;     /* for numbers, 0 = no bound */
};

#define K(sec, key, type, field, max)                                                              \
        {                                                                                          \
                sec, key, type, offsetof(struct config, field), 0, max                             \
        }
#define KL(sec, key, type, field, count)                                                           \
        {                                                                                          \
                sec, key, type, offsetof(struct config, field), offsetof(struct config, count), 0  \
        }

static const struct config_key config_keys[] = {
        K("daemon", "socket", CT_STR, socket, 0),
        K("daemon", "state_dir", CT_STR, state_dir, 0),
        K("daemon", "socket_group", CT_STR, socket_group, 0),
        K("daemon", "log_level", CT_STR, log_level, 0),
        KL("daemon", "allow_users", CT_UIDS, allow_uids, nallow_uids),
        KL("daemon", "allow_groups", CT_GIDS, allow_gids, nallow_gids),
        K("limits", "max_message_bytes", CT_SIZE, max_message_bytes, 1ULL << 30),
        K("limits", "conn_write_buffer_max", CT_SIZE, conn_write_buffer_max, 1ULL << 30),
        K("limits", "max_connections", CT_U64, max_connections, 100000),
        K("limits", "max_connections_per_uid", CT_U64, max_connections_per_uid, 100000),
        K("limits", "max_processes_per_uid", CT_U64, max_processes_per_uid, 100000),
        K("limits", "max_sandboxes_per_uid", CT_U64, max_sandboxes_per_uid, 100000),
        K("limits", "max_exited_per_uid", CT_U64, max_exited_per_uid, 1000000),
        K("limits", "spool_max_bytes", CT_SIZE, spool_max_bytes, 1ULL << 40),
        K("limits", "max_output_bytes_limit", CT_SIZE, max_output_bytes_limit, 1ULL << 32),
        K("limits", "max_stdin_bytes", CT_SIZE, max_stdin_bytes, 1ULL << 32),
        K("limits", "max_pending_requests", CT_U64, max_pending_requests, 1000000),
        K("limits", "file_timeout_s", CT_U64, file_timeout_s, 86400),
        K("limits", "max_input_bytes_per_uid", CT_SIZE, max_input_bytes_per_uid, 1ULL << 40),
        K("exec", "default_timeout_s", CT_U64, default_timeout_s, 31536000),
        K("exec", "max_foreground_timeout_s", CT_U64, max_foreground_timeout_s, 31536000),
        K("exec", "kill_grace_ms", CT_U64, kill_grace_ms, 600000),
        K("exec", "drain_grace_ms", CT_U64, drain_grace_ms, 600000),
        K("exec", "exited_retention_s", CT_U64, exited_retention_s, 31536000),
        K("exec", "default_max_output_bytes", CT_SIZE, default_max_output_bytes, 1ULL << 32),
        K("exec", "shell", CT_STR, shell, 0),
        K("sandbox", "default_backend", CT_STR, default_backend, 0),
        K("policy", "rules_file", CT_STR, policy_file, 0),
        K("policy", "approval_timeout_s", CT_U64, approval_timeout_s, 86400),
        K("policy", "subagent_auto_approve", CT_BOOL, subagent_auto_approve, 0),
        KL("policy", "batch_auto_approve_users", CT_UIDS, batch_auto_approve_uids,
           nbatch_auto_approve_uids),
        K("policy", "ask_isolated", CT_STR, ask_isolated, 0),
        K("policy", "audit_max_bytes", CT_SIZE, audit_max_bytes, 1ULL << 40),
        K("policy", "audit_keep", CT_U64, audit_keep, 1000),
};

static int config_parse_u64(const char *v, bool size, uint64_t *out);

/* The keys of [backend.NAME] sections (NULL backend: every backend), so that a typo or a bad
 * value is found by --check-config and at load, with its line, not when the backend starts.
 * A backend that reads a new key lists it here. */
enum config_bkind {
        CB_STR,
        CB_UINT,
        CB_INT,        /* a whole number, or -1 and below */
        CB_BOOL,       /* true/false, yes/no, on/off, 1/0 (any case) */
        CB_BOOL_OR_STR /* "off" or a path (docker agent) */
};

static const struct {
        const char *backend;
        const char *key;
        enum config_bkind kind;
} config_backend_keys[] = {
        {NULL, "ask_isolated", CB_STR},
        {"docker", "host", CB_STR},
        {"docker", "cert_path", CB_STR},
        {"docker", "tls", CB_BOOL},
        {"docker", "image", CB_STR},
        {"docker", "network", CB_STR},
        {"docker", "pids_limit", CB_UINT},
        {"docker", "tmp_size", CB_STR},
        {"docker", "instance", CB_STR},
        {"docker", "agent", CB_BOOL_OR_STR},
        {"docker", "recreate", CB_BOOL},
        {"docker", "runtime", CB_STR},
        {"docker", "unchecked_host_config_fields", CB_STR},
        {"docker", "volume_drivers", CB_STR},
        {"docker", "agent_ping_ms", CB_UINT},
        {"docker", "agent_link_timeout_ms", CB_UINT},
        {"docker", "agent_reconnect_ms", CB_UINT},
        /* backends/singularity/singularity.c checks the values further. */
        {"singularity", "executable", CB_STR},
        {"singularity", "agent", CB_STR},
        {"singularity", "image", CB_STR},
        {"singularity", "network", CB_STR},
        {"singularity", "instance", CB_STR},
        {"singularity", "scratch_dir", CB_STR},
        {"singularity", "scratch_base", CB_STR},
        {"singularity", "cache_max_mb", CB_UINT},
        {"singularity", "build_timeout_s", CB_UINT},
        {"singularity", "start_timeout_s", CB_UINT},
        {"singularity", "stop_timeout_s", CB_UINT},
        {"singularity", "limits", CB_STR},
        /* backends/modal/modal.c checks the values further (modes, URLs, the token file). */
        {"modal", "mode", CB_STR},
        {"modal", "app", CB_STR},
        {"modal", "image", CB_STR},
        {"modal", "network", CB_STR},
        {"modal", "instance", CB_STR},
        {"modal", "max_lifetime_s", CB_UINT},
        {"modal", "create_timeout_s", CB_UINT},
        {"modal", "gateway_url", CB_STR},
        {"modal", "gateway_token_file", CB_STR},
        {"modal", "gateway_ready_path", CB_STR},
        {"modal", "gateway_ready_timeout_ms", CB_UINT},
        {"modal", "gateway_poll_ms", CB_UINT},
        {"modal", "recreate", CB_BOOL},
        /* daytona: ranges are checked by the backend (backends/daytona/daytona.c) */
        {"daytona", "api_url", CB_STR},
        {"daytona", "api_key", CB_STR},
        {"daytona", "api_key_file", CB_STR},
        {"daytona", "target", CB_STR},
        {"daytona", "image", CB_STR},
        {"daytona", "snapshot", CB_STR},
        {"daytona", "network", CB_STR},
        {"daytona", "auto_stop_minutes", CB_UINT},
        {"daytona", "auto_archive_minutes", CB_UINT},
        {"daytona", "auto_delete_minutes", CB_INT},
        {"daytona", "max_auto_stop_minutes", CB_UINT},
        {"daytona", "persistent", CB_BOOL},
        {"daytona", "instance", CB_STR},
        {"daytona", "remote_dir", CB_STR},
        {"daytona", "create_timeout_s", CB_UINT},
        {"daytona", "retries", CB_UINT},
        {"daytona", "recreate", CB_BOOL},
};

static const char *const config_bkind_hint[] = {
        [CB_STR] = "a string",
        [CB_UINT] = "a whole number",
        [CB_INT] = "a whole number (negative allowed)",
        [CB_BOOL] = "true or false",
        [CB_BOOL_OR_STR] = "a path or off",
};

static bool
config_bool_word(const char *v)
{
        static const char *const words[] = {"true", "yes", "on", "1", "false", "no", "off", "0"};

        for (size_t i = 0; i < ARRAY_SIZE(words); i++)
                if (!strcasecmp(v, words[i]))
                        return true;
        return false;
}

static bool
config_bvalue_ok(enum config_bkind kind, const char *v)
{
        uint64_t n;

        switch (kind) {
        case CB_UINT:
                return config_parse_u64(v, false, &n) == 0;
        case CB_INT:
                return config_parse_u64(v[0] == '-' ? v + 1 : v, false, &n) == 0;
        case CB_BOOL:
                return config_bool_word(v);
        case CB_STR:
        case CB_BOOL_OR_STR:
                return true;
        }
        return false;
}

/* Checks one key of [backend.NAME]: a known backend, a key it reads, a value of its kind. */
static char *
config_check_backend_key(const char *name, const char *key, const char *v, int lineno)
{
        if (!backend_lookup(name))
                return xasprintf("%d: unknown backend '%s' in section [backend.%s] (backends: "
                                 "local, docker, ssh, singularity, modal, daytona)",
                                 lineno, name, name);
        for (size_t i = 0; i < ARRAY_SIZE(config_backend_keys); i++) {
                if (strcmp(config_backend_keys[i].key, key) ||
                    (config_backend_keys[i].backend &&
                     strcmp(config_backend_keys[i].backend, name)))
                        continue;
                if (config_bvalue_ok(config_backend_keys[i].kind, v))
                        return NULL;
                return xasprintf("%d: [backend.%s] %s = '%s' is not valid: expected %s", lineno,
                                 name, key, v, config_bkind_hint[config_backend_keys[i].kind]);
        }
        return xasprintf("%d: unknown key '%s' in section [backend.%s] (see docs/configuration.md)",
                         lineno, key, name);
}

/* Built-in defaults. */
struct config *
config_new_default(void)
{
        struct config *c = xcalloc(1, sizeof(*c));

        c->log_level = xstrdup("info");
        c->max_message_bytes = 16u << 20;
        c->conn_write_buffer_max = 8u << 20;
        c->max_connections = 1024;
        c->max_connections_per_uid = 256;
        c->max_processes_per_uid = 2048;
        c->max_sandboxes_per_uid = 64;
        c->max_exited_per_uid = 4096;
        c->spool_max_bytes = 64u << 20;
        c->max_output_bytes_limit = 64u << 20;
        c->max_stdin_bytes = 64u << 20;
        c->max_pending_requests = 100000;
        c->file_timeout_s = 60;
        c->max_input_bytes_per_uid = 64u << 20;
        c->default_timeout_s = 180;
        c->max_foreground_timeout_s = 3600;
        c->kill_grace_ms = 2000;
        c->drain_grace_ms = 250;
        c->exited_retention_s = 3600;
        c->default_max_output_bytes = 1u << 20;
        c->default_backend = xstrdup("local");
        c->approval_timeout_s = 120;
        c->audit_max_bytes = 16u << 20;
        c->audit_keep = 5;
        c->backends = json_object();
        return c;
}

/* Frees a configuration. */
struct config *
config_free(struct config *c)
{
        if (!c)
                return NULL;
        for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++)
                if (config_keys[i].type == CT_STR || config_keys[i].type == CT_UIDS ||
                    config_keys[i].type == CT_GIDS)
                        free(*(void **) ((char *) c + config_keys[i].off));
        json_decref(c->backends);
        free(c->path);
        free(c);
        return NULL;
}

struct config_parse {
        struct config *c;
        char *error;
        FILE *f;
        int lineno; /* Debian's inih reports no line numbers: the reader counts them */
};

static int
config_parse_u64(const char *v, bool size, uint64_t *out)
{
        char *end;
        unsigned long long n;

        errno = 0;
        if (*v == '-' || !*v)
                return -EINVAL;
        n = strtoull(v, &end, 10);
        if (errno || end == v)
                return -EINVAL;
        if (size && *end) {
                static const char units[] = "KMGT";
                const char *u = strchr(units, *end);
                if (!u || (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B")))
                        return -EINVAL;
                for (const char *s = units; s <= u; s++) {
                        if (n > ULLONG_MAX / 1024)
                                return -ERANGE;
                        n *= 1024;
                }
        } else if (*end) {
                return -EINVAL;
        }
        *out = n;
        return 0;
}

static int
config_parse_ids(const char *v, bool groups, void **out, size_t *count)
{
        char *copy = xstrdup(v), *save = NULL, *tok;
        unsigned *ids = NULL;
        size_t n = 0;
        int r = 0;

        for (tok = strtok_r(copy, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
                char *end;
                unsigned long id = strtoul(tok, &end, 10);
                if (*end || end == tok) {
                        struct passwd *pw = groups ? NULL : getpwnam(tok);
                        struct group *gr = groups ? getgrnam(tok) : NULL;
                        if (!pw && !gr) {
                                r = -ENOENT;
                                break;
                        }
                        id = pw ? pw->pw_uid : gr->gr_gid;
                }
                ids = xrealloc(ids, (n + 1) * sizeof(*ids));
                ids[n++] = (unsigned) id;
        }
        free(copy);
        if (r < 0) {
                free(ids);
                return r;
        }
        free(*out);
        *out = ids;
        *count = n;
        return 0;
}

static int
config_set(struct config *c, const struct config_key *k, const char *v)
{
        void *field = (char *) c + k->off;
        uint64_t n;
        int r;

        switch (k->type) {
        case CT_STR:
                free(*(char **) field);
                *(char **) field = *v ? xstrdup(v) : NULL;
                return 0;
        case CT_U64:
        case CT_SIZE:
                r = config_parse_u64(v, k->type == CT_SIZE, &n);
                if (r < 0 || (k->max && n > k->max))
                        return r < 0 ? r : -ERANGE;
                *(uint64_t *) field = n;
                return 0;
        case CT_BOOL:
                if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
                        *(bool *) field = true;
                else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
                        *(bool *) field = false;
                else
                        return -EINVAL;
                return 0;
        case CT_UIDS:
        case CT_GIDS:
                return config_parse_ids(v, k->type == CT_GIDS, (void **) field,
                                        (size_t *) ((char *) c + k->count_off));
        }
        return -EINVAL;
}

static const char *const config_type_hint[] = {
        [CT_STR] = "a string",
        [CT_U64] = "a whole number",
        [CT_SIZE] = "a size such as 1048576, 64K, 16M or 1G",
        [CT_BOOL] = "true or false",
        [CT_UIDS] = "a list of user names or uids",
        [CT_GIDS] = "a list of group names or gids",
};

static char *
config_reader(char *str, int num, void *stream)
{
        struct config_parse *p = stream;
        char *r = fgets(str, num, p->f);

        if (r)
                p->lineno++;
        return r;
}

static int
config_ini_cb(void *user, const char *section, const char *name, const char *value)
{
        struct config_parse *p = user;
        int lineno = p->lineno;

        if (p->error)
                return 0;
        if (!strncmp(section, "backend.", 8) && section[8]) {
                json_t *sec = json_object_get(p->c->backends, section + 8);
                p->error = config_check_backend_key(section + 8, name, value, lineno);
                if (p->error)
                        return 0;
                if (!sec) {
                        sec = json_object();
                        json_object_set_new(p->c->backends, section + 8, sec);
                }
                json_object_set_new(sec, name, json_string(value));
                return 1;
        }
        for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++) {
                const struct config_key *k = &config_keys[i];
                if (strcmp(k->section, section) || strcmp(k->name, name))
                        continue;
                int r = config_set(p->c, k, value);
                if (r == -ERANGE && k->max)
                        p->error = xasprintf("%d: [%s] %s = '%s' is out of range (at most %llu)",
                                             lineno, section, name, value,
                                             (unsigned long long) k->max);
                else if (r < 0)
                        p->error = xasprintf("%d: [%s] %s = '%s' is not valid: expected %s", lineno,
                                             section, name, value, config_type_hint[k->type]);
                return r < 0 ? 0 : 1;
        }
        for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++) {
                if (!strcmp(config_keys[i].section, section)) {
                        p->error = xasprintf("%d: unknown key '%s' in section [%s] (see "
                                             "docs/configuration.md)",
                                             lineno, name, section);
                        return 0;
                }
        }
        p->error = xasprintf("%d: unknown section [%s] (sections: daemon, limits, exec, sandbox, "
                             "policy, backend.NAME)",
                             lineno, section);
        return 0;
}

/* [policy] ask_isolated and [backend.NAME] ask_isolated take "allow" or "ask". */
static int
config_check_ask_isolated(const struct config *c, const char *path, struct sbx_error *err)
{
        const char *name, *v = c->ask_isolated;
        json_t *sec;

        if (v && strcmp(v, "allow") && strcmp(v, "ask")) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL,
                              "%s: [policy] ask_isolated = '%s' is not valid: expected allow "
                              "or ask",
                              path, v);
                return -EINVAL;
        }
        json_object_foreach(c->backends, name, sec)
        {
                v = json_string_value(json_object_get(sec, "ask_isolated"));
                if (v && strcmp(v, "allow") && strcmp(v, "ask")) {
                        sbx_error_set(err, SBX_E_INTERNAL, NULL,
                                      "%s: [backend.%s] ask_isolated = '%s' is not valid: "
                                      "expected allow or ask",
                                      path, name, v);
                        return -EINVAL;
                }
        }
        return 0;
}

/* [backend.docker] unchecked_host_config_fields and volume_drivers: see docs/policy.md. */
static int
config_check_docker_policy(const struct config *c, const char *path, struct sbx_error *err)
{
        json_t *sec = json_object_get(c->backends, "docker");
        struct sbx_error e = {0};

        if (policy_container_config_check(
                    json_string_value(json_object_get(sec, "unchecked_host_config_fields")),
                    json_string_value(json_object_get(sec, "volume_drivers")), &e) == 0)
                return 0;
        sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s: [backend.docker] %s", path, e.message);
        sbx_error_clear(&e);
        return -EINVAL;
}

/* Loads the file over the defaults. */
int
config_load(const char *path, bool required, struct config **ret, struct sbx_error *err)
{
        struct config_parse p = {config_new_default(), NULL, NULL, 0};
        FILE *f = fopen(path, "re");
        int r;

        if (!f) {
                r = -errno;
                if (r == -ENOENT && !required) {
                        *ret = p.c;
                        return 0;
                }
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s: cannot open: %s", path, strerror(-r));
                config_free(p.c);
                return r;
        }
        p.f = f;
        r = ini_parse_stream(config_reader, &p, config_ini_cb, &p);
        fclose(f);
        if (p.error || r != 0) {
                if (p.error)
                        sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s:%s", path, p.error);
                else
                        sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s:%d: syntax error", path, r);
                free(p.error);
                config_free(p.c);
                return -EINVAL;
        }
        if (config_check_ask_isolated(p.c, path, err) < 0 ||
            config_check_docker_policy(p.c, path, err) < 0) {
                config_free(p.c);
                return -EINVAL;
        }
        if (!p.c->log_level ||
            (strcmp(p.c->log_level, "info") && strcmp(p.c->log_level, "debug"))) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL,
                              "%s: [daemon] log_level = '%s' is not valid: expected info or debug",
                              path, p.c->log_level ? p.c->log_level : "");
                config_free(p.c);
                return -EINVAL;
        }
        p.c->path = xstrdup(path);
        *ret = p.c;
        return 0;
}

/* The [backend.NAME] section. */
json_t *
config_backend(const struct config *c, const char *name)
{
        static json_t *empty;
        json_t *s = json_object_get(c->backends, name);

        if (s)
                return s;
        if (!empty)
                empty = json_object();
        return empty;
}
