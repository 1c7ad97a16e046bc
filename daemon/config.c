/* config.c — INI configuration through inih, table-driven. */
#include "daemon/config.h"

#include <linux/magic.h>
#include <sys/statfs.h>

#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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
        K("limits", "max_sandbox_spec_bytes", CT_SIZE, max_sandbox_spec_bytes, 1ULL << 30),
        K("limits", "max_exited_per_uid", CT_U64, max_exited_per_uid, 1000000),
        K("limits", "max_exited_bytes_per_uid", CT_SIZE, max_exited_bytes_per_uid, 1ULL << 40),
        K("limits", "max_spool_bytes_per_uid", CT_SIZE, max_spool_bytes_per_uid, 1ULL << 50),
        K("limits", "spool_max_bytes", CT_SIZE, spool_max_bytes, 1ULL << 40),
        K("limits", "max_output_bytes_limit", CT_SIZE, max_output_bytes_limit, 1ULL << 32),
        K("limits", "max_output_bytes_per_uid", CT_SIZE, max_output_bytes_per_uid, 1ULL << 40),
        K("limits", "max_stdin_bytes", CT_SIZE, max_stdin_bytes, 1ULL << 32),
        K("limits", "max_pending_requests", CT_U64, max_pending_requests, 1000000),
        K("limits", "max_pending_requests_per_uid", CT_U64, max_pending_requests_per_uid,
          100000000),
        K("limits", "file_timeout_s", CT_U64, file_timeout_s, 86400),
        K("limits", "max_input_bytes_per_uid", CT_SIZE, max_input_bytes_per_uid, 1ULL << 40),
        K("limits", "max_path_lookups_per_uid", CT_U64, max_path_lookups_per_uid, 100000),
        K("limits", "max_helpers_per_uid", CT_U64, max_helpers_per_uid, 100000),
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
        c->max_sandbox_spec_bytes = 256u << 10;
        c->max_exited_per_uid = 4096;
        c->max_exited_bytes_per_uid = 64u << 20;
        c->max_spool_bytes_per_uid = 4ULL << 30;
        c->spool_max_bytes = 64u << 20;
        c->max_output_bytes_limit = 64u << 20;
        c->max_output_bytes_per_uid = 256u << 20;
        c->max_stdin_bytes = 64u << 20;
        c->max_pending_requests = 100000;
        c->max_pending_requests_per_uid = 100000;
        c->file_timeout_s = 60;
        c->max_input_bytes_per_uid = 64u << 20;
        c->max_path_lookups_per_uid = 64;
        c->max_helpers_per_uid = 128;
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
        const char *path;
        json_t *errors; /* every problem: [line, "path:line: what"] */
        json_t *lines;  /* section -> key -> line, to place the later checks' errors */
        FILE *f;
        int lineno; /* Debian's inih reports no line numbers: the reader counts them */
};

/* Records a problem; line 0: not known (a value from the environment). */
static void __attribute__((format(printf, 3, 4)))
config_error(struct config_parse *p, int line, const char *fmt, ...)
{
        va_list ap;
        char *msg;

        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        json_array_append_new(p->errors,
                              json_pack("[i,o]", line,
                                        line > 0 ? json_sprintf("%s:%d: %s", p->path, line, msg)
                                                 : json_sprintf("%s: %s", p->path, msg)));
        free(msg);
}

static int
config_error_cmp(const void *a, const void *b)
{
        json_int_t la = json_integer_value(json_array_get(*(json_t *const *) a, 0));
        json_int_t lb = json_integer_value(json_array_get(*(json_t *const *) b, 0));

        return la < lb ? -1 : la > lb;
}

/* Every problem, in the order of the file, one a line (new). */
static char *
config_errors_text(json_t *errors)
{
        size_t n = json_array_size(errors);
        json_t **v = xcalloc(n, sizeof(*v));
        struct buf b = {0};

        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(errors, i);
        qsort(v, n, sizeof(*v), config_error_cmp);
        for (size_t i = 0; i < n; i++)
                buf_appendf(&b, "%s%s", i ? "\n" : "", json_string_value(json_array_get(v[i], 1)));
        buf_append(&b, "", 1);
        free(v);
        return b.data;
}

/* The line where key of section was set, 0 if it was not. */
static int
config_line(const struct config_parse *p, const char *section, const char *key)
{
        return (int) json_integer_value(json_object_get(json_object_get(p->lines, section), key));
}

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

/* Keys the daemon gives every backend's init itself (backend.h): a file may not set them. */
static const char *const config_backend_daemon_keys[] = {
        "drain_grace_ms", "file_timeout_ms", "config_file", "state_dir", "daemon_socket"};

static bool
config_sub_name_ok(const char *s)
{
        size_t n = strlen(s);

        return n && n <= 64 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* [backend.NAME.SUB] key = v: into NAME's "sections" {SUB: {key: v}}, for a backend that takes
 * sub-sections (BACKEND_CAP_SECTIONS). */
static void
config_backend_sub_key(struct config_parse *p, const char *name, const char *sub, const char *key,
                       const char *v)
{
        const struct backend_ops *b = backend_lookup(name);
        json_t *sec, *subs, *one;

        if (!(b->caps & BACKEND_CAP_SECTIONS) || !config_sub_name_ok(sub)) {
                config_error(p, p->lineno,
                             b->caps & BACKEND_CAP_SECTIONS
                                     ? "[backend.%s.%s]: '%s' is not a valid name (letters, "
                                       "digits, '.', '_', '-')"
                                     : "section [backend.%s.%s]: backend '%s' has no named "
                                       "sub-sections",
                             name, sub, b->caps & BACKEND_CAP_SECTIONS ? sub : name);
                return;
        }
        if (!(sec = json_object_get(p->c->backends, name)))
                json_object_set_new(p->c->backends, name, sec = json_object());
        if (!(subs = json_object_get(sec, "sections")))
                json_object_set_new(sec, "sections", subs = json_object());
        if (!(one = json_object_get(subs, sub)))
                json_object_set_new(subs, sub, one = json_object());
        json_object_set_new(one, key, json_string(v));
}

/* A key of [backend.NAME]: kept (with its line) for the backend's validate and init. */
static void
config_backend_key(struct config_parse *p, const char *name, const char *key, const char *v)
{
        json_t *sec = json_object_get(p->c->backends, name);

        if (!backend_lookup(name)) {
                if (!config_line(p, name, "")) /* once per section */
                        config_error(p, p->lineno,
                                     "unknown backend '%s' in section [backend.%s] (backends: "
                                     "local, docker, ssh, singularity, modal, daytona)",
                                     name, name);
                json_object_set_new(json_object_get(p->lines, name), "", json_integer(1));
                return;
        }
        for (size_t i = 0; i < ARRAY_SIZE(config_backend_daemon_keys); i++)
                if (!strcmp(key, config_backend_daemon_keys[i]))
                        config_error(p, p->lineno,
                                     "[backend.%s] %s is set by the daemon (from [exec] "
                                     "drain_grace_ms, [limits] file_timeout_s, the file's "
                                     "own path and [daemon] state_dir): remove it",
                                     name, key);
        if (!strcmp(key, "sections"))
                config_error(p, p->lineno,
                             "[backend.%s] sections is where [backend.%s.NAME] sections go: "
                             "remove it",
                             name, name);
        if (!sec) {
                sec = json_object();
                json_object_set_new(p->c->backends, name, sec);
        }
        json_object_set_new(sec, key, json_string(v));
}

/* A key of the daemon's own sections. */
static void
config_daemon_key(struct config_parse *p, const char *section, const char *name, const char *v)
{
        for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++) {
                const struct config_key *k = &config_keys[i];
                if (strcmp(k->section, section) || strcmp(k->name, name))
                        continue;
                int r = config_set(p->c, k, v);
                if (r == -ERANGE && k->max)
                        config_error(p, p->lineno, "[%s] %s = '%s' is out of range (at most %llu)",
                                     section, name, v, (unsigned long long) k->max);
                else if (r < 0)
                        config_error(p, p->lineno, "[%s] %s = '%s' is not valid: expected %s",
                                     section, name, v, config_type_hint[k->type]);
                return;
        }
        for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++) {
                if (!strcmp(config_keys[i].section, section)) {
                        config_error(p, p->lineno,
                                     "unknown key '%s' in section [%s] (see "
                                     "docs/configuration.md)",
                                     name, section);
                        return;
                }
        }
        config_error(p, p->lineno,
                     "unknown section [%s] (sections: daemon, limits, exec, sandbox, policy, "
                     "backend.NAME)",
                     section);
}

/* Every key: recorded with its line, then checked; parsing goes on after a problem so that
 * all of them are reported at once. */
static int
config_ini_cb(void *user, const char *section, const char *name, const char *value)
{
        struct config_parse *p = user;
        bool backend = !strncmp(section, "backend.", 8) && section[8];
        const char *dot = backend ? strchr(section + 8, '.') : NULL;
        /* [backend.NAME.SUB] key: NAME's line of "SUB.key" */
        char *sec = dot ? xstrndup(section + 8, (size_t) (dot - section - 8))
                        : xstrdup(backend ? section + 8 : section);
        char *line_key = dot ? xasprintf("%s.%s", dot + 1, name) : xstrdup(name);
        json_t *lines = json_object_get(p->lines, sec);

        if (!lines) {
                lines = json_object();
                json_object_set_new(p->lines, sec, lines);
        }
        json_object_set_new(lines, line_key, json_integer(p->lineno));
        if (dot && backend_lookup(sec))
                config_backend_sub_key(p, sec, dot + 1, name, value);
        else if (backend) /* an unknown backend NAME is reported there */
                config_backend_key(p, sec, name, value);
        else
                config_daemon_key(p, section, name, value);
        free(sec);
        free(line_key);
        return 1;
}

static bool
config_ask_isolated_ok(const char *v)
{
        return !v || !strcmp(v, "allow") || !strcmp(v, "ask");
}

/* [policy] ask_isolated and [backend.NAME] ask_isolated take "allow" or "ask". */
static void
config_check_ask_isolated(struct config_parse *p)
{
        const char *name, *v = p->c->ask_isolated;
        json_t *sec;

        if (!config_ask_isolated_ok(v))
                config_error(p, config_line(p, "policy", "ask_isolated"),
                             "[policy] ask_isolated = '%s' is not valid: expected allow or ask", v);
        json_object_foreach(p->c->backends, name, sec)
        {
                v = json_string_value(json_object_get(sec, "ask_isolated"));
                if (!config_ask_isolated_ok(v))
                        config_error(p, config_line(p, name, "ask_isolated"),
                                     "[backend.%s] ask_isolated = '%s' is not valid: expected "
                                     "allow or ask",
                                     name, v);
        }
}

/* The host's CPUs, memory and pid_max, read once (the shipped defaults of the docker
 * maxima). */
const struct policy_host *
config_host(void)
{
        static struct policy_host h;
        struct statfs fs;
        FILE *f;

        if (h.cpus)
                return &h;
        h.cpus = MAX(sysconf(_SC_NPROCESSORS_ONLN), 1);
        h.mem = (int64_t) sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
        h.pid_max = 32768; /* the kernel's default, should /proc not say */
        h.cgroup2 = statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
        if ((f = fopen("/proc/sys/kernel/pid_max", "re"))) {
                long long n;
                if (fscanf(f, "%lld", &n) == 1 && n > 0)
                        h.pid_max = n;
                fclose(f);
        }
        return &h;
}

/* [backend.docker] maxima and images (docs/backends/docker.md), unchecked_host_config_fields
 * and volume_drivers (docs/policy.md). */
static void
config_check_docker_policy(struct config_parse *p)
{
        json_t *sec = json_object_get(p->c->backends, "docker");
        const char *fields =
                json_string_value(json_object_get(sec, "unchecked_host_config_fields"));
        struct sbx_error e = {0};

        struct policy_docker_limits l;

        if (policy_docker_limits_parse(sec, config_host(), &l, &e) < 0) {
                config_error(p,
                             config_line(p, "docker",
                                         json_string_value(json_object_get(e.data, "param"))),
                             "%s", e.message);
                sbx_error_clear(&e);
        }
        if (policy_container_config_check(
                    fields, json_string_value(json_object_get(sec, "volume_drivers")), &e) == 0)
                return;
        config_error(p,
                     config_line(p, "docker",
                                 fields ? "unchecked_host_config_fields" : "volume_drivers"),
                     "[backend.docker] %s", e.message);
        sbx_error_clear(&e);
}

struct config_report {
        struct config_parse *p;
        const char *backend;
};

static void
config_backend_report_cb(void *ctx, const char *key, const char *message)
{
        struct config_report *r = ctx;

        config_error(r->p, key ? config_line(r->p, r->backend, key) : 0, "%s", message);
}

/* Each backend checks its section (also an absent one: defaults and the environment count),
 * as its init will parse it; one without validate takes only the daemon's ask_isolated. */
static void
config_check_backends(struct config_parse *p)
{
        for (const struct backend_ops *const *b = backend_all(); *b; b++) {
                json_t *sec = config_backend(p->c, (*b)->name), *v;
                struct config_report r = {p, (*b)->name};
                const char *key;

                if ((*b)->validate) {
                        (*b)->validate(sec, config_backend_report_cb, &r);
                        continue;
                }
                json_object_foreach(sec, key, v)
                {
                        if (strcmp(key, "ask_isolated"))
                                config_error(p, config_line(p, (*b)->name, key),
                                             "unknown key '%s' in section [backend.%s] (the %s "
                                             "backend takes only ask_isolated)",
                                             key, (*b)->name, (*b)->name);
                }
        }
}

/* The checks of values that depend on others, once the whole file is read. */
static void
config_check(struct config_parse *p)
{
        const char *ll = p->c->log_level;

        config_check_ask_isolated(p);
        config_check_docker_policy(p);
        config_check_backends(p);
        if (!ll || (strcmp(ll, "info") && strcmp(ll, "debug")))
                config_error(p, config_line(p, "daemon", "log_level"),
                             "[daemon] log_level = '%s' is not valid: expected info or debug",
                             ll ? ll : "");
}

/* Loads the file over the defaults. */
int
config_load(const char *path, bool required, struct config **ret, struct sbx_error *err)
{
        struct config_parse p = {config_new_default(), path, json_array(), json_object(), NULL, 0};
        FILE *f = fopen(path, "re");
        int r;

        if (!f) {
                r = -errno;
                json_decref(p.lines);
                json_decref(p.errors);
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
        if (r != 0)
                config_error(&p, r, "syntax error");
        else
                config_check(&p);
        json_decref(p.lines);
        if (json_array_size(p.errors)) {
                char *text = config_errors_text(p.errors);
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "%s", text);
                free(text);
                json_decref(p.errors);
                config_free(p.c);
                return -EINVAL;
        }
        json_decref(p.errors);
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
