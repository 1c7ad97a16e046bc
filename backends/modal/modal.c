/* modal.c — the Modal backend's glue: configuration, probe, mode choice, and backend_ops
 * dispatched to the sandbox's mode (modal_direct_ops / modal_managed_ops). */
#include "backends/modal/modal.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/credenv.h"
#include "backends/modal/modal_int.h"
#include "backends/remote_file.h"
#include "policy/policy.h"

#define MODAL_FILE_MAX (1u << 20) /* ~/.modal.toml, the token file */

struct modal_state modal;

/* ---- configuration ---- */

enum mk_type { MK_STR, MK_UINT, MK_MODE, MK_NET, MK_BOOL, MK_URL, MK_TOKEN_FILE, MK_DAEMON };

struct modal_key {
        const char *key;
        enum mk_type type;
        size_t off;
        const char *dflt;
        const char *env; /* read when the key is absent */
        uint64_t max;
};

#define MKS(k, t, f, d, e)                                                                         \
        {                                                                                          \
                k, t, offsetof(struct modal_state, f), d, e, 0                                     \
        }
#define MKU(k, f, d, m)                                                                            \
        {                                                                                          \
                k, MK_UINT, offsetof(struct modal_state, f), d, NULL, m                            \
        }

static const struct modal_key modal_keys[] = {
        MKS("mode", MK_MODE, configured, "auto", NULL),
        MKS("app", MK_STR, app, "sandboxd", NULL),
        MKS("image", MK_STR, image, "debian:bookworm-slim", NULL),
        MKS("network", MK_NET, network, "none", NULL),
        MKS("instance", MK_STR, instance, NULL, NULL),
        MKU("max_lifetime_s", max_lifetime_s, "86400", 7 * 86400),
        MKU("create_timeout_s", create_timeout_s, "600", 86400),
        MKS("gateway_url", MK_URL, gw_url, NULL, "MODAL_GATEWAY_URL"),
        MKS("gateway_token_file", MK_TOKEN_FILE, gw_token, NULL, "TOOL_GATEWAY_USER_TOKEN"),
        MKS("gateway_ready_path", MK_STR, gw_ready_path, "/v1/health", NULL),
        MKU("gateway_ready_timeout_ms", gw_ready_timeout_ms, "3000", 600000),
        MKU("gateway_poll_ms", gw_poll_ms, "250", 60000),
        MKU("drain_grace_ms", drain_grace_ms, "250", 600000),
        /* Read by the daemon itself; only checked here (the field is not written). */
        MKS("recreate", MK_BOOL, loop, NULL, NULL),
        MKS("ask_isolated", MK_DAEMON, loop, NULL, NULL),
        /* Given to every backend; modal's file ops are helper execs, bounded as execs are. */
        MKS("file_timeout_ms", MK_DAEMON, loop, NULL, NULL),
        /* Given to every backend when there is a file; modal takes no secret from it. */
        MKS("config_file", MK_DAEMON, loop, NULL, NULL),
        MKS("state_dir", MK_DAEMON, loop, NULL, NULL),
        /* Given to every backend: what local hides from its commands. */
        MKS("daemon_socket", MK_DAEMON, loop, NULL, NULL),
};

/* Whether url is on this machine (plain http allowed only there: tokens go in headers). */
static bool
modal_url_local(const char *url)
{
        static const char *const hosts[] = {"127.0.0.1", "localhost", "[::1]"};
        const char *h = strstr(url, "://");

        for (size_t i = 0; h && i < ARRAY_SIZE(hosts); i++) {
                size_t n = strlen(hosts[i]);
                if (strncmp(h + 3, hosts[i], n) == 0 && strchr(":/", h[3 + n] ? h[3 + n] : '/'))
                        return true;
        }
        return false;
}

/* An endpoint URL: http(s), no user info, no query; plain http only to localhost. NULL when
 * fine, else what is wrong (static). */
static const char *
modal_url_problem(const char *url)
{
        const char *auth = strstr(url, "://"), *end;

        if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)
                return "is neither http:// nor https://";
        end = auth ? auth + 3 + strcspn(auth + 3, "/") : url;
        if (memchr(auth + 3, '@', (size_t) (end - auth - 3)))
                return "carries credentials (user@): put the token in gateway_token_file";
        if (strpbrk(url, "?#"))
                return "has a query or fragment";
        if (strncmp(url, "http://", 7) == 0 && !modal_url_local(url))
                return "is plain http to a host that is not localhost (the token would cross the "
                       "network in clear): use https";
        return NULL;
}

/* Reads a small file the operator named (the daemon's own configuration). */
static int
modal_read_file(void *ctx, const char *path, char **data, size_t *len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MODAL_FILE_MAX) {
                close(fd);
                return S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
        }
        *data = xmalloc((size_t) st.st_size + 1);
        n = read(fd, *data, (size_t) st.st_size);
        close(fd);
        if (n < 0 || n != st.st_size) {
                free(*data);
                *data = NULL;
                return -EIO;
        }
        (*data)[n] = '\0';
        *len = (size_t) n;
        return 0;
}

/* The gateway token from a file that only its owner can read. */
static int
modal_token_file(const char *path, char **out, struct sbx_error *err)
{
        struct stat st;
        char *data = NULL;
        size_t len = 0;
        int r;

        if (stat(path, &st) < 0 || (st.st_mode & 077) || (st.st_uid != geteuid() && st.st_uid)) {
                sbx_error_param(err, "gateway_token_file",
                                "[backend.modal] gateway_token_file %s: %s", path,
                                access(path, F_OK) < 0 ? strerror(errno)
                                : (st.st_mode & 077)   ? "readable or writable by group or others "
                                                         "(chmod 600 it)"
                                                       : "owned by another user");
                return -EINVAL;
        }
        r = modal_read_file(NULL, path, &data, &len);
        while (r == 0 && len && strchr(" \t\r\n", data[len - 1]))
                data[--len] = '\0';
        if (r < 0 || !len || strpbrk(data, "\r\n")) {
                sbx_error_param(err, "gateway_token_file",
                                "[backend.modal] gateway_token_file %s: %s", path,
                                r < 0 ? strerror(-r) : "must hold one token on one line");
                free(data);
                return -EINVAL;
        }
        *out = data;
        return 0;
}

static const char *const modal_bools[] = {"true", "false", "yes", "no", "on", "off", "1", "0"};

static int
modal_set_key(struct modal_state *m, const struct modal_key *k, const char *v,
              struct sbx_error *err)
{
        void *field = (char *) m + k->off;
        const char *why = NULL;
        char *end = NULL;

        switch (k->type) {
        case MK_MODE:
                if (modal_mode_parse(v, (enum modal_mode *) field) == 0)
                        return 0;
                why = "expected auto, direct or managed";
                break;
        case MK_NET:
                if (!strcmp(v, "none") || !strcmp(v, "bridge"))
                        break;
                why = "expected none or bridge";
                break;
        case MK_BOOL:
                for (size_t i = 0; i < ARRAY_SIZE(modal_bools); i++)
                        if (!strcasecmp(v, modal_bools[i]))
                                return 0;
                why = "expected true or false";
                break;
        case MK_UINT:
                errno = 0;
                *(uint64_t *) field = strtoull(v, &end, 10);
                if (!errno && *v >= '0' && *v <= '9' && !*end && *(uint64_t *) field <= k->max)
                        return 0;
                sbx_error_param(err, k->key,
                                "[backend.modal] %s = '%s': expected a whole number "
                                "up to %llu",
                                k->key, v, (unsigned long long) k->max);
                return -EINVAL;
        case MK_URL:
                why = modal_url_problem(v);
                break;
        case MK_TOKEN_FILE:
                return modal_token_file(v, (char **) field, err);
        case MK_DAEMON:
                return 0;
        case MK_STR:
                break;
        }
        if (why) {
                sbx_error_param(err, k->key, "[backend.modal] %s = '%s'%s%s", k->key, v,
                                k->type == MK_URL ? " " : ": ", why);
                return -EINVAL;
        }
        if (k->type != MK_BOOL && k->type != MK_MODE) {
                free(*(char **) field);
                *(char **) field = xstrndup(
                        v, strlen(v) - (k->type == MK_URL && *v && v[strlen(v) - 1] == '/'));
        }
        return 0;
}

/* Parses config into m (the fields modal_free_config frees), reporting every problem; returns
 * how many there were. */
static int
modal_config(struct modal_state *m, json_t *config, backend_config_report_fn report, void *ctx)
{
        struct backend_config_tally rep = {report, ctx, 0};
        struct sbx_error e = {0};
        const char *name;
        json_t *v;

        json_object_foreach(config, name, v)
        {
                size_t i;
                for (i = 0; i < ARRAY_SIZE(modal_keys) && strcmp(modal_keys[i].key, name); i++)
                        ;
                if (i == ARRAY_SIZE(modal_keys) || !json_is_string(v)) {
                        sbx_error_param(&e, name,
                                        "unknown key '%s' in section [backend.modal] (see "
                                        "docs/backends/modal.md)",
                                        name);
                        backend_config_tally_error(&rep, name, &e);
                }
        }
        for (size_t i = 0; i < ARRAY_SIZE(modal_keys); i++) {
                const struct modal_key *k = &modal_keys[i];
                const char *s = json_string_value(json_object_get(config, k->key));
                if (!s && k->env && credenv_get(k->env) && *credenv_get(k->env))
                        s = credenv_get(k->env);
                if (k->type == MK_TOKEN_FILE && s == credenv_get("TOOL_GATEWAY_USER_TOKEN") && s) {
                        m->gw_token = xstrdup(s); /* the variable holds the token itself */
                        continue;
                }
                if ((s || k->dflt) && modal_set_key(m, k, s ? s : k->dflt, &e) < 0)
                        backend_config_tally_error(&rep, k->key, &e);
        }
        return rep.n;
}

static void
modal_free_config(struct modal_state *m)
{
        free(m->app);
        free(m->image);
        free(m->network);
        free(m->instance);
        free(m->gw_url);
        free(m->gw_token);
        free(m->gw_ready_path);
        free(m->gw_ready_error);
        free(m->gw_config_error);
        json_decref(m->app_ids);
}

/* backend_ops.validate: the parse into a scratch state. */
static int
modal_validate(json_t *config, backend_config_report_fn report, void *ctx)
{
        struct modal_state scratch = {0};
        int n = modal_config(&scratch, config, report, ctx);

        modal_free_config(&scratch);
        return n;
}

static int
modal_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        char hex[65];

        if (modal.initialised)
                return 0;
        modal_free_config(&modal);
        memset(&modal, 0, sizeof(modal));
        list_init(&modal.sandboxes);
        list_init(&modal.gw_waiters);
        modal.loop = loop;
        if (modal_config(&modal, config, backend_config_first_error, err) > 0) {
                modal_free_config(&modal);
                memset(&modal, 0, sizeof(modal));
                return -EINVAL;
        }
        /* The instance goes to the provider as a tag: a hash, not the state directory's path. */
        policy_sha256_hex(modal.instance ? modal.instance : "",
                          modal.instance ? strlen(modal.instance) : 0, hex);
        free(modal.instance);
        modal.instance = xstrndup(hex, 16);
        if (!modal.gw_url && modal.gw_token)
                modal.gw_config_error = xstrdup("a gateway token is set but no gateway_url");
        modal.app_ids = json_object();
        modal.http = http_multi_acquire(loop);
        modal.initialised = true;
        return 0;
}

static void
modal_shutdown(void)
{
        struct list *pos, *tmp;

        if (!modal.initialised)
                return;
        modal.initialised = false;
        /* Execs with a record run on for the next daemon: nobody is told they ended. */
        modal_dexec_detach_all();
        /* Calls in flight end now with an error, so whoever waits is told and frees. */
        modal_rpc_shutdown();
        modal_gateway_shutdown();
        LIST_FOREACH_SAFE(pos, tmp, &modal.sandboxes)
        {
                struct backend_sandbox *sb = LIST_ENTRY(pos, struct backend_sandbox, link);
                list_del(pos);
                /* The remote sandboxes stay, for re-adoption after the restart. */
                if (!sb->gone)
                        modal_sandbox_unref(sb);
        }
        modal_api_unref(modal.api);
        modal.api = NULL;
        http_multi_release(modal.http);
        modal.http = NULL;
}

/* ---- sandboxes ---- */

/* A new sandbox handle (refcount 1, in the list). */
struct backend_sandbox *
modal_sandbox_new(const char *id, enum modal_mode mode)
{
        struct backend_sandbox *sb = xcalloc(1, sizeof(*sb));

        sb->refs = 1;
        sb->id = xstrdup(id);
        sb->mode = mode;
        sb->mops = mode == MODAL_MODE_DIRECT ? &modal_direct_ops : &modal_managed_ops;
        list_add_tail(&modal.sandboxes, &sb->link);
        return sb;
}

/* Takes a reference. */
void
modal_sandbox_ref(struct backend_sandbox *sb)
{
        sb->refs++;
}

/* Drops a reference; the last frees. */
void
modal_sandbox_unref(struct backend_sandbox *sb)
{
        if (!sb || --sb->refs > 0)
                return;
        list_del(&sb->link);
        modal_router_free(sb->router);
        modal_api_unref(sb->api);
        free(sb->id);
        free(sb->remote_id);
        free(sb->workdir);
        free(sb->image);
        free(sb->app_id);
        free(sb->task_id);
        free(sb->idem_key);
        json_decref(sb->create_body);
        free(sb);
}

/* ---- direct credentials ---- */

static void
modal_read_creds(struct modal_creds *c)
{
        struct passwd *pw = getpwuid(geteuid());
        const char *home = getenv("HOME");
        /* ~ as Modal's clients expand it: $HOME, else the password database. */
        struct modal_env env = {
                credenv_get("MODAL_TOKEN_ID"),
                credenv_get("MODAL_TOKEN_SECRET"),
                credenv_get("MODAL_CONFIG_PATH"),
                credenv_get("MODAL_PROFILE"),
                credenv_get("MODAL_SERVER_URL"),
                credenv_get("MODAL_ENVIRONMENT"),
                home && *home ? home
                : pw          ? pw->pw_dir
                              : NULL,
        };
        const char *why;

        modal_creds_find(&env, modal_read_file, NULL, c);
        if (c->found && c->server_url && (why = modal_url_problem(c->server_url))) {
                free(c->error);
                c->error = xasprintf("the Modal server URL %s %s", c->server_url, why);
                c->found = false;
        }
}

/* The control-plane client for these credentials (borrowed; kept while they do not change). */
static struct modal_api *
modal_api_for(const struct modal_creds *c)
{
        const char *url = c->server_url ? c->server_url : "https://api.modal.com";

        if (modal.api && modal_api_same(modal.api, url, c->token_id, c->token_secret))
                return modal.api;
        modal_api_unref(modal.api);
        modal.api = modal_api_new(modal.loop, modal.http, url, c->token_id, c->token_secret,
                                  "sandboxd/" SANDBOXD_VERSION);
        return modal.api;
}

/* The client for today's direct credentials, or NULL. */
struct modal_api *
modal_direct_api(void)
{
        struct modal_creds cr;
        struct modal_api *a = NULL;

        modal_read_creds(&cr);
        if (cr.found)
                a = modal_api_for(&cr);
        modal_creds_clear(&cr);
        return a;
}

/* ---- mode choice ---- */

static const char *
modal_managed_why(void)
{
        if (modal.gw_config_error)
                return modal.gw_config_error;
        if (!modal.gw_url)
                return "not configured (no gateway_url in [backend.modal], no MODAL_GATEWAY_URL)";
        if (!modal.gw_token)
                return "not configured (no gateway_token_file in [backend.modal], no "
                       "TOOL_GATEWAY_USER_TOKEN)";
        return modal.gw_ready_error ? modal.gw_ready_error : "readiness not checked";
}

/* Whether managed mode is configured (URL and token, no configuration error). */
bool
modal_managed_configured(void)
{
        return modal.gw_url && modal.gw_token && !modal.gw_config_error;
}

static void
modal_decide(enum modal_mode requested, const struct modal_creds *cr, struct modal_choice *out)
{
        struct modal_resolve_in in = {
                .configured = modal.configured,
                .requested = requested,
                .direct_ok = cr->found,
                .direct_why = cr->error ? cr->error : cr->checked,
                .managed_ready = modal_managed_configured() && modal.gw_ready,
                .managed_why = modal_managed_why(),
        };

        modal_resolve(&in, out);
}

/* Whether a decision for requested may need the gateway's readiness. */
static bool
modal_needs_gateway(enum modal_mode requested)
{
        enum modal_mode want = requested == MODAL_MODE_AUTO ? modal.configured : requested;

        return want != MODAL_MODE_DIRECT && modal_managed_configured();
}

/* ---- probe ---- */

struct modal_probe {
        void *ctx;
        backend_probe_cb cb;
};

static void
modal_probe_answer(void *ctx)
{
        struct modal_probe *pr = ctx;
        struct modal_creds cr;
        struct modal_choice ch;
        json_t *d;

        modal_read_creds(&cr);
        modal_decide(MODAL_MODE_AUTO, &cr, &ch);
        d = json_pack("{s:s,s:o,s:b,s:o,s:b,s:b,s:o,s:s}", "requested_mode",
                      modal_mode_name(modal.configured), "selected",
                      ch.selected == MODAL_MODE_NONE ? json_null()
                                                     : json_string(modal_mode_name(ch.selected)),
                      "has_direct_credentials", cr.found, "credential_source",
                      cr.source ? json_string(cr.source) : json_null(), "managed_configured",
                      modal_managed_configured(), "managed_ready",
                      modal_managed_configured() && modal.gw_ready, "last_readiness_error",
                      modal.gw_ready_error ? json_string(modal.gw_ready_error) : json_null(), "app",
                      modal.app);
        if (cr.found)
                json_object_set_new(
                        d, "server_url",
                        json_string(cr.server_url ? cr.server_url : "https://api.modal.com"));
        if (!cr.found && (cr.error || cr.checked))
                json_object_set_new(d, "direct_error",
                                    json_string(cr.error ? cr.error : cr.checked));
        if (modal.gw_url)
                json_object_set_new(d, "gateway_url", json_string(modal.gw_url));
        backend_probe_public(d,
                             "the daemon has no Modal credentials it can use, and no Modal "
                             "gateway that answers",
                             "the operator must give the daemon Modal credentials (direct mode) or "
                             "a gateway (managed mode): docs/backends/modal.md");
        pr->cb(pr->ctx, ch.selected != MODAL_MODE_NONE, ch.reason, ch.hint, d);
        modal_choice_clear(&ch);
        modal_creds_clear(&cr);
        free(pr);
}

static void
modal_probe(void *ctx, backend_probe_cb cb)
{
        struct modal_probe *pr = xcalloc(1, sizeof(*pr));

        pr->ctx = ctx;
        pr->cb = cb;
        if (!modal.initialised) {
                cb(ctx, false, "the modal backend is not initialised", NULL, json_object());
                free(pr);
        } else if (modal_needs_gateway(MODAL_MODE_AUTO)) {
                modal_gateway_check(pr, modal_probe_answer);
        } else {
                modal_probe_answer(pr);
        }
}

/* ---- create ---- */

/* Creates and adopts in progress (cancel finds them by their ctx). */
static struct list modal_creates = {&modal_creates, &modal_creates};

static void
modal_create_free(struct modal_create *c)
{
        list_del(&c->link);
        free(c->id);
        free(c->image);
        free(c->workdir);
        free(c->app);
        free(c->environment);
        free(c->builder_version);
        free(c->image_id);
        free(c->last_entry);
        json_decref(c->record);
        sbx_error_clear(&c->err);
        free(c);
}

/* A destroy in progress. */
struct modal_done *
modal_done_new(struct backend_sandbox *sb, void *ctx, backend_done_cb cb)
{
        struct modal_done *d = xcalloc(1, sizeof(*d));

        d->sb = sb;
        d->ctx = ctx;
        d->cb = cb;
        return d;
}

/* Ends a destroy. */
void
modal_done_finish(struct modal_done *d, const char *why)
{
        struct sbx_error err = {0};

        if (why)
                sbx_error_backend(&err, "modal", "%s", why);
        d->sb->gone = true;
        d->cb(d->ctx, err.code ? &err : NULL);
        sbx_error_clear(&err);
        modal_sandbox_unref(d->sb);
        free(d);
}

/* Sets a -32005 error. */
void
modal_create_fail(struct modal_create *c, const char *what, const char *message)
{
        if (!c->err.code)
                sbx_error_backend(&c->err, "modal", "%s: %s", what, message);
}

/* A failed create's remote sandbox is terminated (or could not be: the answer says so). */
static void
modal_create_removed_cb(void *ctx, const struct sbx_error *err)
{
        struct modal_create *c = ctx;

        if (err)
                sbx_error_set(&c->err, c->err.code, json_incref(c->err.data),
                              "%s (and the sandbox it made could not be terminated: %s)",
                              c->err.message, err->message);
        c->cb(c->ctx, NULL, NULL, &c->err);
        modal_create_free(c);
}

static json_t *
modal_enforced(const struct modal_create *c)
{
        json_t *e = json_object();

        if (c->milli_cpu)
                json_object_set_new(e, "cpus", json_string("modal"));
        if (c->memory_mb)
                json_object_set_new(e, "memory_mb", json_string("modal"));
        if (c->disk_mb)
                json_object_set_new(e, "disk_mb", json_string("modal"));
        if (c->pids_requested)
                json_object_set_new(e, "pids", json_null()); /* Modal has no such limit */
        json_object_set_new(e, "network", json_string(c->block_network ? "blocked" : "open"));
        return e;
}

/* Ends a create or adopt; a sandbox made before a later step failed is terminated. */
void
modal_create_finish(struct modal_create *c)
{
        struct backend_sandbox *sb = c->sb;
        struct sandbox_info info = {0};

        if (c->err.code) {
                /* What the create made goes before the answer: a create cancelled at shutdown
                 * leaves nothing behind. */
                if (sb && sb->remote_id && !c->adopting) {
                        sb->mops->destroy(sb, c, modal_create_removed_cb);
                        return;
                }
                c->cb(c->ctx, NULL, NULL, &c->err);
                modal_sandbox_unref(sb);
                modal_create_free(c);
                return;
        }
        info.workdir = sb->workdir;
        info.image = sb->image;
        info.runtime_dir = MODAL_STATE_DIR;
        info.enforced = modal_enforced(c);
        info.details = json_pack("{s:s,s:s,s:s?,s:s?}", "mode", modal_mode_name(sb->mode),
                                 "remote_id", sb->remote_id, "app", c->app, "task_id", sb->task_id);
        c->cb(c->ctx, sb, &info, NULL);
        json_decref(info.enforced);
        json_decref(info.details);
        modal_create_free(c);
}

struct modal_wd {
        struct modal_create *c;
        void (*done)(struct modal_create *c);
};

static void
modal_workdir_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct modal_wd *w = ctx;
        struct modal_create *c = w->c;
        size_t n = out ? strcspn(out, "\n") : 0;

        if (err)
                modal_create_fail(c, "first exec in the new sandbox", err->message);
        else if (code != 0 || !n || out[0] != '/' || n >= len)
                modal_create_fail(c, "first exec in the new sandbox",
                                  code ? "cannot create or enter the working directory"
                                       : "no working directory reported");
        else {
                free(c->sb->workdir);
                c->sb->workdir = xstrndup(out, n);
        }
        w->done(c);
        free(w);
}

/* The first exec: makes our state directory, reports the real workdir (and proves that
 * execs work before the sandbox is called ready). */
void
modal_create_probe_workdir(struct modal_create *c, void (*done)(struct modal_create *c))
{
        static const char script[] = "mkdir -p " MODAL_STATE_DIR " 2>/dev/null; "
                                     "[ -z \"$0\" ] || { mkdir -p \"$0\" && cd \"$0\"; } && pwd -P";
        struct modal_wd *w = xcalloc(1, sizeof(*w));
        char *argv[] = {"sh", "-c", (char *) script, c->workdir ? c->workdir : "", NULL};

        w->c = c;
        w->done = done;
        c->sb->mops->helper(c->sb, argv, NULL, 0, w, modal_workdir_cb);
}

static bool
modal_app_name_ok(const char *s)
{
        size_t n = strlen(s);

        return n && n <= 64 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static bool
modal_image_ok(const char *s)
{
        size_t n = strlen(s);

        return n && n <= 512 && s[0] != '-' &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@+") ==
                       n;
}

/* The sandbox's "modal" section: {mode, app}; anything else is refused. */
static int
modal_parse_section(json_t *sec, struct modal_create *c, struct sbx_error *err)
{
        const char *key, *mode = json_string_value(json_object_get(sec, "mode"));
        const char *app = json_string_value(json_object_get(sec, "app"));
        json_t *v;

        json_object_foreach(sec, key, v)
        {
                if ((strcmp(key, "mode") && strcmp(key, "app")) || !json_is_string(v)) {
                        sbx_error_param(err, "modal",
                                        "invalid params: modal.%s %s (modal takes mode and app, "
                                        "both strings)",
                                        key,
                                        json_is_string(v) ? "is not known" : "must be a string");
                        return -EINVAL;
                }
        }
        if (mode && modal_mode_parse(mode, &c->requested) < 0) {
                sbx_error_param(err, "modal.mode",
                                "invalid params: modal.mode '%s' (auto, direct or managed)", mode);
                return -EINVAL;
        }
        if (app && !modal_app_name_ok(app)) {
                sbx_error_param(err, "modal.app",
                                "invalid params: modal.app must be 1-64 letters, digits, '.', "
                                "'_' or '-'");
                return -EINVAL;
        }
        c->app = xstrdup(app ? app : modal.app);
        return 0;
}

/* Copies what the create needs from the spec, refusing what Modal cannot give. */
static int
modal_parse_spec(const struct sandbox_spec *spec, struct modal_create *c, struct sbx_error *err)
{
        const char *net = spec->network ? spec->network : modal.network;

        if (json_array_size(spec->mounts)) {
                sbx_error_param(err, "mounts",
                                "invalid params: mounts are not available on the modal backend "
                                "(the sandbox runs in Modal's cloud: nothing of this host can be "
                                "mounted); remove them, and use file.write to put files in");
                return -EINVAL;
        }
        if (strcmp(net, "none") && strcmp(net, "bridge")) {
                sbx_error_param(err, "network",
                                "invalid params: network '%s' is not available on the modal "
                                "backend (none or bridge)",
                                net);
                return -EINVAL;
        }
        if (!modal_image_ok(spec->image ? spec->image : modal.image)) {
                /* It becomes a Dockerfile line ("FROM <image>"): nothing else may ride on it. */
                sbx_error_param(err, "image",
                                "invalid params: image must be a registry reference (letters, "
                                "digits and . _ - / : @ +, at most 512)");
                return -EINVAL;
        }
        c->block_network = !strcmp(net, "none");
        c->image = xstrdup(spec->image ? spec->image : modal.image);
        c->workdir = spec->workdir ? xstrdup(spec->workdir) : NULL;
        c->milli_cpu = (int64_t) (spec->res.cpus * 1000.0 + 0.5);
        c->memory_mb = spec->res.memory_mb;
        c->disk_mb = spec->res.disk_mb;
        c->pids_requested = spec->res.pids > 0;
        /* The daemon ends the sandbox at timeout_s; Modal's own limit is the backstop should
         * the daemon be gone by then. */
        c->lifetime_s = spec->timeout_s ? spec->timeout_s + 60 : modal.max_lifetime_s;
        return 0;
}

static void
modal_create_decide(void *ctx)
{
        struct modal_create *c = ctx;
        struct modal_creds cr;
        struct modal_choice ch;

        if (c->cancelled) { /* while the gateway's readiness was checked */
                modal_create_finish(c);
                return;
        }
        modal_read_creds(&cr);
        modal_decide(c->requested, &cr, &ch);
        if (ch.code == SBX_E_PARAMS) {
                sbx_error_param(&c->err, "modal.mode", "invalid params: %s (%s)", ch.reason,
                                ch.hint);
        } else if (ch.selected == MODAL_MODE_NONE) {
                sbx_error_set(&c->err, SBX_E_BACKEND_UNAVAILABLE,
                              json_pack("{s:s,s:s,s:s}", "backend", "modal", "reason", ch.reason,
                                        "hint", ch.hint),
                              "backend 'modal' is unavailable: %s", ch.reason);
        } else {
                c->sb = modal_sandbox_new(c->id, ch.selected);
                c->sb->image = xstrdup(c->image);
                if (ch.selected == MODAL_MODE_DIRECT) {
                        c->sb->api = modal_api_for(&cr);
                        modal_api_ref(c->sb->api);
                        c->environment = cr.environment ? xstrdup(cr.environment) : NULL;
                        c->builder_version =
                                cr.builder_version ? xstrdup(cr.builder_version) : NULL;
                }
        }
        modal_choice_clear(&ch);
        modal_creds_clear(&cr);
        if (c->err.code)
                modal_create_finish(c);
        else
                c->sb->mops->create(c);
}

static struct modal_create *
modal_create_new(const char *id, void *ctx, backend_progress_cb progress, backend_create_cb cb)
{
        struct modal_create *c = xcalloc(1, sizeof(*c));

        c->id = xstrdup(id);
        c->ctx = ctx;
        c->progress = progress;
        c->cb = cb;
        c->deadline_ms = util_now_ms() + modal.create_timeout_s * 1000;
        list_add_tail(&modal_creates, &c->link);
        return c;
}

/* Abandons the create or adopt of ctx: the mode stops what it waits for, and what it made is
 * terminated before the create's cb (SBX_E_UNUSABLE {state: "cancelled"}). */
static void
modal_cancel(void *ctx)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &modal_creates)
        {
                struct modal_create *c = LIST_ENTRY(pos, struct modal_create, link);
                if (c->ctx != ctx || c->cancelled)
                        continue;
                c->cancelled = true;
                sbx_error_clear(&c->err);
                sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "cancelled"),
                              "the %s of sandbox %s was cancelled",
                              c->adopting ? "re-adoption" : "creation", c->id);
                if (c->sb)
                        c->sb->mops->cancel(c); /* may finish (free) c */
                return;
        }
}

static void
modal_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
             backend_create_cb cb)
{
        struct modal_create *c = modal_create_new(spec->id, ctx, progress, cb);

        if (!modal.initialised) {
                modal_create_fail(c, "create", "the modal backend is not initialised");
                modal_create_finish(c);
                return;
        }
        if (modal_parse_section(spec->section, c, &c->err) < 0 ||
            modal_parse_spec(spec, c, &c->err) < 0) {
                modal_create_finish(c);
                return;
        }
        if (modal_needs_gateway(c->requested))
                modal_gateway_check(c, modal_create_decide);
        else
                modal_create_decide(c);
}

/* ---- save / adopt / destroy ---- */

static json_t *
modal_save(struct backend_sandbox *bsb)
{
        json_t *r = bsb->mops->save(bsb);

        json_object_set_new(r, "mode", json_string(modal_mode_name(bsb->mode)));
        json_object_set_new(r, "remote_id", json_string(bsb->remote_id));
        json_object_set_new(r, "workdir", json_string(bsb->workdir ? bsb->workdir : "/"));
        if (bsb->image)
                json_object_set_new(r, "image", json_string(bsb->image));
        return r;
}

static void
modal_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx, backend_create_cb cb)
{
        struct modal_create *c = modal_create_new(spec->id, ctx, NULL, cb);
        const char *mode = json_string_value(json_object_get(record, "mode"));
        const char *rid = json_string_value(json_object_get(record, "remote_id"));
        const char *wd = json_string_value(json_object_get(record, "workdir"));
        const char *image = json_string_value(json_object_get(record, "image"));
        enum modal_mode m;

        c->adopting = true;
        c->record = json_incref(record);
        c->app = xstrdup(modal.app);
        if (!modal.initialised || !rid || !wd || modal_mode_parse(mode, &m) < 0 ||
            m == MODAL_MODE_AUTO) {
                modal_create_fail(c, "adopt",
                                  modal.initialised ? "malformed record"
                                                    : "backend not initialised");
                modal_create_finish(c);
                return;
        }
        c->sb = modal_sandbox_new(spec->id, m);
        c->sb->remote_id = xstrdup(rid);
        c->sb->workdir = xstrdup(wd);
        c->sb->image = image ? xstrdup(image) : NULL;
        c->sb->mops->adopt(c);
}

static void
modal_destroy(struct backend_sandbox *bsb, void *ctx, backend_done_cb cb)
{
        bsb->mops->destroy(bsb, ctx, cb);
}

static void
modal_reap(const char *const *known, void *ctx, backend_reaped_cb cb)
{
        modal_direct_reap(known, ctx, cb);
}

/* ---- execs ---- */

static int
modal_exec_start(struct backend_sandbox *bsb, const struct exec_spec *spec,
                 const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                 struct sbx_error *err)
{
        struct modal_proc *p = NULL;
        int r;

        if (bsb->gone) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "removed"),
                              "modal sandbox %s of %s is gone", bsb->remote_id, bsb->id);
                return -ESRCH;
        }
        if (spec->pty) {
                sbx_error_param(err, "pty", "pty is not available on the modal backend");
                return -ENOTSUP;
        }
        if (!spec->argv || !spec->argv[0]) {
                sbx_error_param(err, "argv", "empty argv");
                return -EINVAL;
        }
        r = bsb->mops->exec_start(bsb, spec, cbs, ctx, &p, err);
        if (r == 0)
                *ret = &p->head;
        return r;
}

/* The per-exec ops: each goes to the exec's mode (head is the first member). */
static int
modal_exec_write(struct backend_proc *bp, const void *data, size_t len, bool eof)
{
        struct modal_proc *p = (struct modal_proc *) bp;

        return p->mops->exec_write(p, data, len, eof);
}

static int
modal_exec_signal(struct backend_proc *bp, int sig)
{
        struct modal_proc *p = (struct modal_proc *) bp;

        return p->mops->exec_signal(p, sig);
}

static void
modal_exec_kill(struct backend_proc *bp, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct modal_proc *p = (struct modal_proc *) bp;

        p->mops->exec_kill(p, grace_ms, ctx, cb);
}

static void
modal_exec_pause(struct backend_proc *bp)
{
        struct modal_proc *p = (struct modal_proc *) bp;

        p->mops->exec_pause(p);
}

static void
modal_exec_resume(struct backend_proc *bp)
{
        struct modal_proc *p = (struct modal_proc *) bp;

        p->mops->exec_resume(p);
}

static int
modal_exec_resize(struct backend_proc *bp, unsigned short rows, unsigned short cols)
{
        return -ENOTTY;
}

static void
modal_exec_release(struct backend_proc *bp)
{
        struct modal_proc *p = (struct modal_proc *) bp;

        if (p)
                p->mops->exec_release(p);
}

/* Direct-mode execs outlive the daemon (the router keeps them); managed ones do not. */
static json_t *
modal_exec_save(struct backend_proc *bp)
{
        struct modal_proc *p = (struct modal_proc *) bp;

        return p->mops->exec_save ? p->mops->exec_save(p) : NULL;
}

static int
modal_exec_adopt(struct backend_sandbox *bsb, const struct exec_spec *spec, json_t *record,
                 const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                 struct backend_proc **ret, struct sbx_error *err)
{
        struct modal_proc *p = NULL;
        int r;

        if (bsb->gone || !bsb->mops->exec_adopt) {
                sbx_error_backend(err, "modal", "%s execs do not outlive the daemon",
                                  bsb->mops->name);
                return -ENOTSUP;
        }
        r = bsb->mops->exec_adopt(bsb, spec, record, offsets, cbs, ctx, &p, err);
        if (r == 0)
                *ret = &p->head;
        return r;
}

const struct backend_proc_ops modal_proc_ops = {
        .save = modal_exec_save,
        .write = modal_exec_write,
        .signal = modal_exec_signal,
        .kill = modal_exec_kill,
        .pause = modal_exec_pause,
        .resume = modal_exec_resume,
        .resize = modal_exec_resize,
        .release = modal_exec_release,
};

/* ---- files, through helper execs (backends/remote_file.c) ---- */

static void
modal_file_helper(void *sb, char *const *argv, const void *in, size_t inlen, void *ctx,
                  remote_file_helper_cb cb)
{
        struct backend_sandbox *b = sb;

        b->mops->helper(b, argv, in, inlen, ctx, cb);
}

static void
modal_file_ref(void *sb)
{
        modal_sandbox_ref(sb);
}

static void
modal_file_unref(void *sb)
{
        modal_sandbox_unref(sb);
}

static const struct remote_file_ops modal_file_ops = {
        .helper = modal_file_helper,
        .ref = modal_file_ref,
        .unref = modal_file_unref,
};

/* Paths are the sandbox's: judge gets the requested path. */
REMOTE_FILE_ENTRIES(modal, modal_file_ops)

const struct backend_ops modal_backend_ops = {
        .name = "modal",
        .init = modal_init,
        .validate = modal_validate,
        .probe = modal_probe,
        .create = modal_create,
        .cancel = modal_cancel,
        .save = modal_save,
        .adopt = modal_adopt,
        .destroy = modal_destroy,
        .exec_start = modal_exec_start,
        .exec_adopt = modal_exec_adopt,
        .file_read = modal_file_read,
        .file_write = modal_file_write,
        .reap_orphans = modal_reap,
        .shutdown = modal_shutdown,
};
