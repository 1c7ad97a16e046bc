/* daytona.c — Daytona backend: configuration and credentials, probe, and the backend_ops table
 * (the only glue to backends/backend.h besides the entry points of the other files). */
#include "backends/daytona/daytona.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/credenv.h"
#include "backends/daytona/daytona_int.h"

#define DAYTONA_KEY_MAX       4096
#define DAYTONA_CRED_FILE_MAX (64u << 10)
#define DAYTONA_PROBE_MS      10000

struct daytona_state daytona;

enum dk_type {
        DK_STR,
        DK_INT,
        DK_BOOL,
        DK_OTHER, /* read elsewhere: credentials, the daemon's keys */
};

/* Every key of [backend.daytona]; anything else fails start-up. Documented in
 * docs/backends/daytona.md, docs/configuration.md and sandboxd.conf(5) (a test checks). */
#define DK(key, type, field, lo, hi)                                                               \
        {                                                                                          \
                key, type, offsetof(struct daytona_state, field), lo, hi                           \
        }
#define DKO(key)                                                                                   \
        {                                                                                          \
                key, DK_OTHER, 0, 0, 0                                                             \
        }
static const struct daytona_key {
        const char *name;
        enum dk_type type;
        size_t off;
        int64_t min, max;
} daytona_keys[] = {
        DKO("api_url"),
        DKO("api_key"),
        DKO("api_key_file"),
        DKO("target"),
        DK("image", DK_STR, image, 0, 0),
        DK("snapshot", DK_STR, snapshot, 0, 0),
        DK("network", DK_STR, network, 0, 0),
        DK("auto_stop_minutes", DK_INT, auto_stop, 0, 525600),
        DK("auto_archive_minutes", DK_INT, auto_archive, 0, 525600),
        DK("auto_delete_minutes", DK_INT, auto_delete, -1, 525600),
        DK("max_auto_stop_minutes", DK_INT, max_auto_stop, 0, 525600),
        DK("persistent", DK_BOOL, persistent, 0, 0),
        DK("instance", DK_STR, instance, 0, 0),
        DK("remote_dir", DK_STR, remote_dir, 0, 0),
        DK("create_timeout_s", DK_INT, create_timeout_s, 10, 86400),
        DK("retries", DK_INT, retries, 0, 20),
        DKO("recreate"),
        DKO("ask_isolated"),
};

/* Added by the daemon (backend.h), never read from the file, which may not set it
 * (daemon/config.c refuses it there): the configuration file's path, to tell whether an
 * api_key in it is safe there. */
#define DAYTONA_CONFIG_FILE_KEY "config_file"

/* ---- configuration ---- */

static int
daytona_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
        char *end;
        long long v;

        if (!s || !*s)
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || *end || v < lo || v > hi)
                return -EINVAL;
        *out = v;
        return 0;
}

static int
daytona_parse_bool(const char *s, bool *out)
{
        static const char *const yes[] = {"true", "yes", "on", "1"};
        static const char *const no[] = {"false", "no", "off", "0"};

        for (size_t i = 0; s && i < ARRAY_SIZE(yes); i++) {
                if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
                        *out = !strcasecmp(s, yes[i]);
                        return 0;
                }
        }
        return -EINVAL;
}

/* A config value as a string (the INI gives strings; JSON booleans/integers are accepted). */
static const char *
daytona_cfg_str(json_t *v, char *tmp, size_t n)
{
        if (json_is_string(v))
                return json_string_value(v);
        if (json_is_integer(v)) {
                snprintf(tmp, n, "%lld", (long long) json_integer_value(v));
                return tmp;
        }
        if (json_is_boolean(v))
                return json_is_true(v) ? "true" : "false";
        return NULL;
}

static const struct daytona_key *
daytona_key(const char *name)
{
        for (size_t i = 0; i < ARRAY_SIZE(daytona_keys); i++)
                if (!strcmp(daytona_keys[i].name, name))
                        return &daytona_keys[i];
        return NULL;
}

/* Applies one key of the table. */
static int
daytona_cfg_one(struct daytona_state *d, const struct daytona_key *k, const char *v,
                struct sbx_error *err)
{
        void *field = (char *) d + k->off;
        bool b;

        switch (k->type) {
        case DK_STR:
                free(*(char **) field);
                *(char **) field = *v ? xstrdup(v) : NULL;
                return 0;
        case DK_INT:
                if (daytona_parse_int(v, k->min, k->max, (int64_t *) field) == 0)
                        return 0;
                sbx_error_param(err, k->name,
                                "[backend.daytona] %s = '%s': expected a whole "
                                "number from %lld to %lld",
                                k->name, v, (long long) k->min, (long long) k->max);
                return -EINVAL;
        case DK_BOOL:
                if (daytona_parse_bool(v, &b) == 0) {
                        *(bool *) field = b;
                        return 0;
                }
                sbx_error_param(err, k->name, "[backend.daytona] %s = '%s': expected true or false",
                                k->name, v);
                return -EINVAL;
        case DK_OTHER:
                return 0;
        }
        return -EINVAL;
}

/* Walks the section into d: the first malformed value fails (unknown keys: see
 * daytona_config_parse). */
static int
daytona_cfg_keys(struct daytona_state *d, json_t *config, struct sbx_error *err)
{
        const char *name;
        json_t *v;
        char tmp[32];
        bool b;

        json_object_foreach(config, name, v)
        {
                const struct daytona_key *k = daytona_key(name);
                const char *s = daytona_cfg_str(v, tmp, sizeof(tmp));
                if (!k)
                        continue;
                if (!s) {
                        sbx_error_param(err, name, "[backend.daytona] %s must be a string", name);
                        return -EINVAL;
                }
                if (!strcmp(name, "recreate") && daytona_parse_bool(s, &b) < 0) {
                        sbx_error_param(err, name,
                                        "[backend.daytona] recreate must be true or "
                                        "false");
                        return -EINVAL;
                }
                if (daytona_cfg_one(d, k, s, err) < 0)
                        return -EINVAL;
        }
        if (d->network && strcmp(d->network, "none") && strcmp(d->network, "bridge")) {
                sbx_error_param(err, "network",
                                "[backend.daytona] network = '%s': expected none "
                                "or bridge",
                                d->network);
                return -EINVAL;
        }
        if (!d->remote_dir || d->remote_dir[0] != '/' || strpbrk(d->remote_dir, "'\"\\$`\n")) {
                sbx_error_param(err, "remote_dir",
                                "[backend.daytona] remote_dir must be an "
                                "absolute path without quotes, $, ` or backslashes");
                return -EINVAL;
        }
        return 0;
}

/* ---- credentials ---- */

static void daytona_no_key(const char *hint, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void
daytona_no_key(const char *hint, const char *fmt, ...)
{
        va_list ap;

        free(daytona.key_reason);
        free(daytona.key_hint);
        va_start(ap, fmt);
        daytona.key_reason = xvasprintf(fmt, ap);
        va_end(ap);
        daytona.key_hint = xstrdup(hint);
}

/* Whether a key can go into a header: printable ASCII without spaces. */
static bool
daytona_key_ok(const char *k)
{
        size_t n = strlen(k);

        if (!n || n > DAYTONA_KEY_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) k[i] <= 0x20 || (unsigned char) k[i] >= 0x7f)
                        return false;
        return true;
}

static void
daytona_set_key(const char *key, const char *source)
{
        if (!daytona_key_ok(key)) {
                daytona_no_key("the key is one word of printable ASCII; copy it again from "
                               "https://app.daytona.io/dashboard/keys",
                               "the Daytona API key from %s is malformed", source);
                return;
        }
        daytona.key = xstrdup(key);
        daytona.auth = xasprintf("Authorization: Bearer %s", key);
        daytona.key_source = xstrdup(source);
}

/* Opens a file that must be a regular file of the daemon's user, readable by nobody else. */
static int
daytona_open_private(const char *path, const char *what, int *fd_out)
{
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);

        if (fd < 0) {
                daytona_no_key("create it (one line: the key, or DAYTONA_API_KEY=...), owned by "
                               "the daemon's user, mode 0600",
                               "cannot open %s %s: %s", what, path, strerror(errno));
                return -1;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > DAYTONA_CRED_FILE_MAX ||
            (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 077)) {
                daytona_no_key("chown it to the daemon's user and chmod 600 it",
                               "%s %s is not a private regular file of the daemon's user (mode "
                               "%04o, owner %u): a key there could be read by others",
                               what, path, (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid);
                close(fd);
                return -1;
        }
        *fd_out = fd;
        return 0;
}

/* "KEY=VALUE" (quotes optional) or a bare key; names known to the SDK only. */
static int
daytona_cred_line(char *line, json_t *out)
{
        static const char *const names[] = {"DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_TARGET"};
        char *eq = strchr(line, '='), *v;
        size_t n;

        if (!eq) {
                json_object_set_new(out, "DAYTONA_API_KEY", json_string(line));
                return 0;
        }
        *eq = '\0';
        v = eq + 1;
        n = strlen(v);
        if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
                v[n - 1] = '\0';
                v++;
        }
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                if (!strcmp(line, names[i])) {
                        json_object_set_new(out, line, json_string(v));
                        return 0;
                }
        }
        return -1;
}

/* Reads a credentials file into an object of its names (new), or NULL (key_reason set). */
static json_t *
daytona_cred_file(const char *path)
{
        char buf[DAYTONA_CRED_FILE_MAX + 1], *save = NULL, *line;
        json_t *out;
        ssize_t n;
        int fd;

        if (daytona_open_private(path, "api_key_file", &fd) < 0)
                return NULL;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0) {
                daytona_no_key("check the file", "cannot read api_key_file %s", path);
                return NULL;
        }
        buf[n] = '\0';
        out = json_object();
        for (line = strtok_r(buf, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
                line += strspn(line, " \t");
                if (!*line || *line == '#')
                        continue;
                if (!strncmp(line, "export ", 7))
                        line += 7;
                if (daytona_cred_line(line, out) < 0) {
                        daytona_no_key("use DAYTONA_API_KEY, DAYTONA_API_URL and DAYTONA_TARGET "
                                       "only",
                                       "api_key_file %s names an unknown variable", path);
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

/* api_key in the configuration file is accepted only when nobody else can read that file. */
static void
daytona_key_in_config(const char *key, const char *cfg_path)
{
        struct stat st;

        if (!cfg_path || stat(cfg_path, &st) < 0 || (st.st_mode & 077) ||
            (st.st_uid != geteuid() && st.st_uid != 0)) {
                daytona_no_key("move the key to api_key_file (mode 0600), or chmod 600 the "
                               "configuration file",
                               "api_key is set in %s, which others can read (mode %04o)",
                               cfg_path ? cfg_path : "the configuration",
                               cfg_path ? (unsigned) (st.st_mode & 07777) : 0u);
                return;
        }
        daytona_set_key(key, "api_key in the configuration file");
}

/* Key, URL and target: [backend.daytona], then api_key_file, then the daemon's environment. A
 * key source that is configured but unusable is an error, never a fall-back to the next. */
static void
daytona_credentials(json_t *config, json_t *cred)
{
        const char *file = json_string_value(json_object_get(config, "api_key_file"));
        const char *key = json_string_value(json_object_get(config, "api_key"));
        const char *env = credenv_get("DAYTONA_API_KEY");

        if (file && *file) {
                const char *k = json_string_value(json_object_get(cred, "DAYTONA_API_KEY"));
                char *src = xasprintf("api_key_file %s", file);
                if (k)
                        daytona_set_key(k, src);
                else if (!daytona.key_reason)
                        daytona_no_key("put the key in it (one line, or DAYTONA_API_KEY=...)",
                                       "api_key_file %s holds no key", file);
                free(src);
        } else if (key && *key) {
                daytona_key_in_config(
                        key, json_string_value(json_object_get(config, DAYTONA_CONFIG_FILE_KEY)));
        } else if (env && *env) {
                daytona_set_key(env, "the daemon's environment (DAYTONA_API_KEY)");
        } else {
                daytona_no_key("set api_key_file = PATH (a file of the daemon's user, mode 0600, "
                               "holding the key) in [backend.daytona] of sandboxd.conf, or "
                               "DAYTONA_API_KEY in the daemon's environment",
                               "no Daytona API key is configured");
        }
}

static char *
daytona_pick(json_t *config, const char *key, json_t *cred, const char *cred_name,
             const char *const *envs, const char *dflt)
{
        const char *v = json_string_value(json_object_get(config, key));

        if (!v || !*v)
                v = json_string_value(json_object_get(cred, cred_name));
        for (; (!v || !*v) && envs && *envs; envs++)
                v = credenv_get(*envs);
        if (!v || !*v)
                v = dflt;
        return v ? xstrdup(v) : NULL;
}

static int
daytona_cfg_endpoints(struct daytona_state *d, json_t *config, json_t *cred, struct sbx_error *err)
{
        static const char *const url_envs[] = {"DAYTONA_API_URL", "DAYTONA_SERVER_URL", NULL};
        static const char *const target_envs[] = {"DAYTONA_TARGET", NULL};
        size_t n;

        d->api_url = daytona_pick(config, "api_url", cred, "DAYTONA_API_URL", url_envs,
                                  DAYTONA_DEFAULT_URL);
        n = strlen(d->api_url);
        while (n && d->api_url[n - 1] == '/')
                d->api_url[--n] = '\0';
        if (!daytona_url_ok(d->api_url)) {
                sbx_error_param(err, "api_url",
                                "[backend.daytona] api_url '%s' must be https:// "
                                "(http:// only to 127.0.0.1, localhost or [::1]): the API key "
                                "travels in every request",
                                d->api_url);
                return -EINVAL;
        }
        d->target = daytona_pick(config, "target", cred, "DAYTONA_TARGET", target_envs, NULL);
        if (d->target && !daytona_id_ok(d->target)) {
                sbx_error_param(err, "target", "[backend.daytona] target '%s' is not a region name",
                                d->target);
                return -EINVAL;
        }
        return 0;
}

static void
daytona_free_config(struct daytona_state *d)
{
        for (size_t i = 0; i < ARRAY_SIZE(daytona_keys); i++)
                if (daytona_keys[i].type == DK_STR)
                        free(*(char **) ((char *) d + daytona_keys[i].off));
        free(d->api_url);
        free(d->auth);
        free(d->key);
        free(d->key_source);
        free(d->key_reason);
        free(d->key_hint);
        free(d->target);
}

static void
daytona_defaults(struct daytona_state *d, uv_loop_t *loop)
{
        memset(d, 0, sizeof(*d));
        d->loop = loop;
        list_init(&d->sandboxes);
        list_init(&d->calls);
        d->network = xstrdup("none");
        d->remote_dir = xstrdup("/tmp/.sandboxd");
        d->auto_stop = 15;
        d->auto_archive = 1440;
        d->auto_delete = 10080;
        d->max_auto_stop = 1440;
        d->create_timeout_s = 600;
        d->retries = 5;
}

static void
daytona_report(backend_config_report_fn report, void *ctx, struct sbx_error *e, int *n)
{
        report(ctx, json_string_value(json_object_get(e->data, "param")), e->message);
        sbx_error_clear(e);
        (*n)++;
}

/* Parses config into d (defaults set), reporting every unknown key and the first bad value
 * of each step; returns how many problems there were. */
static int
daytona_config_parse(struct daytona_state *d, json_t *config, json_t *cred,
                     backend_config_report_fn report, void *ctx)
{
        static const char *const common[] = {BACKEND_COMMON_KEYS};
        struct sbx_error e = {0};
        const char *name;
        json_t *v;
        int n = 0;

        json_object_foreach(config, name, v)
        {
                bool known = daytona_key(name) != NULL;
                for (size_t i = 0; i < ARRAY_SIZE(common); i++)
                        known |= !strcmp(name, common[i]);
                if (known)
                        continue;
                sbx_error_param(&e, name,
                                "unknown key '%s' in section [backend.daytona] (see "
                                "docs/backends/daytona.md)",
                                name);
                daytona_report(report, ctx, &e, &n);
        }
        if (daytona_cfg_keys(d, config, &e) < 0)
                daytona_report(report, ctx, &e, &n);
        if (daytona_cfg_endpoints(d, config, cred, &e) < 0)
                daytona_report(report, ctx, &e, &n);
        return n;
}

/* backend_ops.validate: the parse into a scratch state (the credentials file is read, the
 * key is not looked for). */
static int
daytona_validate(json_t *config, backend_config_report_fn report, void *ctx)
{
        const char *file = json_string_value(json_object_get(config, "api_key_file"));
        json_t *cred = file && *file ? daytona_cred_file(file) : NULL;
        struct daytona_state scratch;
        int n;

        daytona_defaults(&scratch, NULL);
        n = daytona_config_parse(&scratch, config, cred, report, ctx);
        daytona_free_config(&scratch);
        json_decref(cred);
        return n;
}

static int
daytona_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        const char *file;
        json_t *cred = NULL;
        int rc;

        if (daytona.initialised)
                return 0;
        daytona_free_config(&daytona);
        daytona_defaults(&daytona, loop);
        file = json_string_value(json_object_get(config, "api_key_file"));
        if (file && *file)
                cred = daytona_cred_file(file);
        rc = daytona_config_parse(&daytona, config, cred, backend_config_first_error, err) > 0
                     ? -EINVAL
                     : 0;
        if (rc == 0 && !daytona.key_reason)
                daytona_credentials(config, cred);
        json_decref(cred);
        if (rc < 0)
                return rc;
        daytona.http = http_multi_acquire(loop);
        daytona.initialised = true;
        return 0;
}

static void
daytona_shutdown(void)
{
        if (!daytona.initialised)
                return;
        daytona_exec_shutdown();
        daytona_sandbox_shutdown();
        daytona_call_end_all("the daemon is shutting down");
        daytona.initialised = false;
        http_multi_release(daytona.http);
        daytona.http = NULL;
}

/* ---- probe ---- */

struct daytona_probe {
        void *ctx;
        backend_probe_cb cb;
};

static json_t *
daytona_details(void)
{
        return json_pack("{s:s,s:s?,s:s?,s:s?,s:s?,s:s,s:I,s:I,s:I,s:b}", "api_url",
                         daytona.api_url, "target", daytona.target, "credential_source",
                         daytona.key_source, "image", daytona.image, "snapshot", daytona.snapshot,
                         "network", daytona.network, "auto_stop_minutes",
                         (json_int_t) daytona.auto_stop, "auto_archive_minutes",
                         (json_int_t) daytona.auto_archive, "auto_delete_minutes",
                         (json_int_t) daytona.auto_delete, "persistent", daytona.persistent);
}

/* Whether the key's permissions (when the server lists them) allow what sandboxd does. */
static const char *
daytona_missing_permission(json_t *perms)
{
        static const char *const need[] = {"write:sandboxes", "delete:sandboxes"};
        size_t i, j;
        json_t *p;

        if (!json_is_array(perms))
                return NULL;
        for (i = 0; i < ARRAY_SIZE(need); i++) {
                bool found = false;
                json_array_foreach(perms, j, p) found |=
                        json_is_string(p) && !strcmp(json_string_value(p), need[i]);
                if (!found)
                        return need[i];
        }
        return NULL;
}

static void
daytona_probe_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_probe *pr = ctx;
        json_t *details = daytona_details(), *perms = json_object_get(res->body, "permissions");
        const char *missing = daytona_missing_permission(perms);
        struct sbx_error err = {0};

        if (res->status == 200 && !missing) {
                json_object_set(details, "key_name", json_object_get(res->body, "name"));
                json_object_set(details, "key_expires_at", json_object_get(res->body, "expiresAt"));
                pr->cb(pr->ctx, true, NULL, NULL, details);
        } else if (res->status == 200) {
                char *reason = xasprintf("the API key lacks the permission %s", missing);
                backend_probe_public(details, reason,
                                     "the operator must give the daemon a Daytona API key with "
                                     "write:sandboxes and delete:sandboxes");
                pr->cb(pr->ctx, false, reason,
                       "create a key with write:sandboxes and delete:sandboxes", details);
                free(reason);
        } else {
                daytona_error(&err, "check the API key", res, false);
                const char *reason = json_string_value(json_object_get(err.data, "reason"));
                const char *hint = json_string_value(json_object_get(err.data, "hint"));
                backend_probe_public(details,
                                     "the Daytona API does not accept the daemon's key, or "
                                     "cannot be reached",
                                     "the operator must check the daemon's Daytona API key and "
                                     "api_url (docs/backends/daytona.md)");
                pr->cb(pr->ctx, false, reason ? reason : err.message,
                       hint ? hint : "check api_url and that this machine can reach it", details);
        }
        sbx_error_clear(&err);
        free(pr);
}

static void
daytona_probe(void *ctx, backend_probe_cb cb)
{
        struct daytona_req r = {.idempotent = true, .timeout_ms = DAYTONA_PROBE_MS, .once = true};
        struct daytona_probe *pr;
        char *url;

        if (!daytona.initialised) {
                cb(ctx, false, "the daytona backend is not initialised", NULL, json_object());
                return;
        }
        if (!daytona.auth) {
                json_t *d = daytona_details();
                backend_probe_public(d, "the daemon has no usable Daytona API key",
                                     "the operator must set api_key_file in [backend.daytona] "
                                     "(docs/backends/daytona.md)");
                cb(ctx, false, daytona.key_reason, daytona.key_hint, d);
                return;
        }
        pr = xcalloc(1, sizeof(*pr));
        pr->ctx = ctx;
        pr->cb = cb;
        url = daytona_api_url("/api-keys/current");
        r.url = url;
        if (daytona_call(&r, daytona_probe_cb, pr, NULL) < 0) {
                cb(ctx, false, "cannot start a request to the Daytona API",
                   "libcurl (libcurl4) must be installed", daytona_details());
                free(pr);
        }
        free(url);
}

/* ---- the vtables (backend.h v2): all the rest of the backend is behind these ---- */

#define DP(bp) ((struct daytona_proc *) (bp)) /* base is its first member */

static int
daytona_op_start(struct backend_sandbox *bsb, const struct exec_spec *spec,
                 const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                 struct sbx_error *err)
{
        struct daytona_proc *p = NULL;
        int rc = daytona_exec_start(bsb, spec, cbs, ctx, &p, err);

        *ret = rc < 0 ? NULL : daytona_exec_base(p);
        return rc;
}

static int
daytona_op_write(struct backend_proc *bp, const void *data, size_t len, bool eof)
{
        return daytona_exec_write(DP(bp), data, len, eof);
}

static int
daytona_op_signal(struct backend_proc *bp, int sig)
{
        return daytona_exec_signal(DP(bp), sig);
}

static void
daytona_op_kill(struct backend_proc *bp, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        daytona_exec_kill(DP(bp), grace_ms, ctx, cb);
}

static void
daytona_op_pause(struct backend_proc *bp)
{
        daytona_exec_pause(DP(bp));
}

static void
daytona_op_resume(struct backend_proc *bp)
{
        daytona_exec_resume(DP(bp));
}

static int
daytona_op_resize(struct backend_proc *bp, unsigned short rows, unsigned short cols)
{
        return daytona_exec_resize(DP(bp), rows, cols);
}

static void
daytona_op_release(struct backend_proc *bp)
{
        daytona_exec_release(DP(bp));
}

static json_t *
daytona_op_save(struct backend_proc *bp)
{
        return daytona_exec_save(DP(bp));
}

static int
daytona_op_adopt(struct backend_sandbox *bsb, const struct exec_spec *spec, json_t *record,
                 const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                 struct backend_proc **ret, struct sbx_error *err)
{
        struct daytona_proc *p = NULL;
        int rc = daytona_exec_adopt(bsb, spec, record, offsets, cbs, ctx, &p, err);

        *ret = rc < 0 ? NULL : daytona_exec_base(p);
        return rc;
}

/* Execs outlive the daemon: the commands run on in the sandbox (save, exec_adopt). */
const struct backend_proc_ops daytona_proc_ops = {
        .write = daytona_op_write,
        .signal = daytona_op_signal,
        .kill = daytona_op_kill,
        .pause = daytona_op_pause,
        .resume = daytona_op_resume,
        .resize = daytona_op_resize,
        .save = daytona_op_save,
        .release = daytona_op_release,
};

const struct backend_ops daytona_backend_ops = {
        .name = DAYTONA_NAME,
        /* Commands run in Daytona's cloud, never on the host. Not BACKEND_CAP_EXACT_ENV:
         * although the wrapper runs them under `env -i`, HOME, USER and LOGNAME become the
         * sandbox user's, so the policy does not read the daemon's environment as theirs. */
        .caps = BACKEND_CAP_OWN_HOME,
        .init = daytona_init,
        .validate = daytona_validate,
        .probe = daytona_probe,
        .create = daytona_create,
        .cancel = daytona_cancel,
        .save = daytona_save,
        .adopt = daytona_adopt,
        .destroy = daytona_destroy,
        .reap_orphans = daytona_reap_orphans,
        .exec_start = daytona_op_start,
        .exec_adopt = daytona_op_adopt,
        .exec_adopt_done = daytona_exec_adopt_done,
        .file_read = daytona_file_read,
        .file_write = daytona_file_write,
        .shutdown = daytona_shutdown,
};
