/* docker.c — Docker backend: configuration, API calls, events, probe, sandbox lifecycle. */
#include "backends/docker/docker.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/agent/session.h"
#include "backends/credenv.h"
#include "backends/docker/docker_int.h"
#include "backends/http1.h"
#include "policy/policy.h"

#define DOCKER_MAX_BODY         (64u << 20)
#define DOCKER_PROBE_TIMEOUT_MS 5000  /* each of the probe's two GETs */
#define DOCKER_LIST_TIMEOUT_MS  30000 /* the start-up listing of containers */

#ifndef SANDBOXD_LIBEXECDIR
#define SANDBOXD_LIBEXECDIR "/usr/local/libexec/sandboxd"
#endif

struct docker_state docker;

/* Capabilities added back after CapDrop ALL: what root inside a container needs to own and
 * write files (package managers), switch to an unprivileged user, and signal that user's
 * processes. Everything else (NET_RAW, MKNOD, SYS_CHROOT, AUDIT_WRITE, SETFCAP, …) stays off. */
static const char *const docker_cap_add[] = {"CHOWN",  "DAC_OVERRIDE", "FOWNER", "FSETID",
                                             "SETUID", "SETGID",       "KILL"};

struct docker_callctx {
        struct list link;       /* in docker_calls while in flight */
        struct http_req *req;   /* through libcurl, or */
        struct http1_req *lreq; /* by hand (docker_get) */
        docker_resp_cb cb;
        void *ctx;
};

/* API calls in flight: at shutdown each one is ended with an error, not dropped. */
static struct list docker_calls = {&docker_calls, &docker_calls};

/* The request target of an API path. */
static char *
docker_target(const char *path)
{
        /* _ping and version unversioned: an old daemon must still say which version it is. */
        if (strcmp(path, "/_ping") == 0 || strcmp(path, "/version") == 0)
                return xstrdup(path);
        return xasprintf("/" DOCKER_API "%s", path);
}

/* The full URL of an API path. */
static char *
docker_url(const char *path)
{
        char *t = docker_target(path), *url = xasprintf("%s%s", docker.base_url, t);

        free(t);
        return url;
}

static void
docker_spec_init(struct http_req_spec *s, const char *method, const char *url)
{
        memset(s, 0, sizeof(*s));
        s->method = method;
        s->url = url;
        s->unix_socket = docker.sock_path;
        s->ca_file = docker.ca_file;
        s->cert_file = docker.cert_file;
        s->key_file = docker.key_file;
        s->max_body = DOCKER_MAX_BODY;
}

/* Ends a call: parses the body and hands it to the caller. */
static void
docker_call_end(struct docker_callctx *c, long status, const char *raw, size_t len,
                const char *terr)
{
        json_t *body = NULL;

        list_del(&c->link);
        if (len && raw && raw[0] != '\0')
                body = json_loadb(raw, len, JSON_DECODE_ANY, NULL);
        c->cb(c->ctx, terr ? 0 : status, body, raw, len, terr);
        json_decref(body);
        free(c);
}

static void
docker_call_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        docker_call_end(ctx, res->status, res->body, res->body_len, res->error);
}

static void
docker_get_done_cb(void *ctx, const struct http1_result *res)
{
        docker_call_end(ctx, res->status, res->body, res->body_len, res->error);
}

/* A GET over the Unix socket without libcurl, so that probing and listing at start-up do not
 * initialise libcurl and OpenSSL in a daemon that may never create a container; over tcp (TLS)
 * it is a docker_call (whose timeout is libcurl's connect timeout). */
static int
docker_get(const char *path, unsigned timeout_ms, docker_resp_cb cb, void *ctx)
{
        struct docker_callctx *c;
        char *target;
        int rc;

        if (!docker.sock_path)
                return docker_call("GET", path, NULL, NULL, 0, NULL, cb, ctx);
        if (!docker.initialised)
                return -ENOTCONN;
        c = xcalloc(1, sizeof(*c));
        c->cb = cb;
        c->ctx = ctx;
        target = docker_target(path);
        list_add_tail(&docker_calls, &c->link);
        rc = http1_get(docker.loop, docker.sock_path, "docker", target, DOCKER_MAX_BODY, timeout_ms,
                       docker_get_done_cb, c, &c->lreq);
        if (rc < 0) {
                list_del(&c->link);
                free(c);
        }
        free(target);
        return rc;
}

/* Opens a raw connection to the Docker host through libcurl (tcp:// with TLS): on_done
 * reports it; the request is then a stream (http_stream_*) until http_cancel. */
int
docker_connect_stream(const struct http_cbs *cbs, void *ctx, struct http_req **ret)
{
        struct http_req_spec s;
        char *url = xasprintf("%s/", docker.base_url);
        int rc;

        if (!docker.http || !docker.initialised) {
                free(url);
                return -ENOTCONN;
        }
        docker_spec_init(&s, "GET", url);
        s.connect_only = true;
        rc = http_request(docker.http, &s, cbs, ctx, ret);
        free(url);
        return rc;
}

/* Starts one buffered JSON API call. */
int
docker_call(const char *method, const char *path, json_t *body, const void *raw, size_t rawlen,
            const char *ctype, docker_resp_cb cb, void *ctx)
{
        static const struct http_cbs cbs = {.on_done = docker_call_done_cb};
        const char *hdrs[2] = {NULL, NULL};
        struct http_req_spec s;
        struct docker_callctx *c;
        char *url, *js = NULL, *hdr = NULL;
        int rc;

        if (!docker.http || !docker.initialised)
                return -ENOTCONN;
        url = docker_url(path);
        docker_spec_init(&s, method, url);
        if (body) {
                js = json_dumps(body, JSON_COMPACT);
                s.body = js;
                s.body_len = strlen(js);
                hdrs[0] = "Content-Type: application/json";
        } else if (raw) {
                s.body = raw;
                s.body_len = rawlen;
                hdr = xasprintf("Content-Type: %s", ctype ? ctype : "application/octet-stream");
                hdrs[0] = hdr;
        }
        s.headers = hdrs;
        c = xcalloc(1, sizeof(*c));
        c->cb = cb;
        c->ctx = ctx;
        list_add_tail(&docker_calls, &c->link);
        rc = http_request(docker.http, &s, &cbs, c, &c->req);
        if (rc < 0) {
                list_del(&c->link);
                free(c);
        }
        free(url);
        free(js);
        free(hdr);
        return rc;
}

/* Fills err from a failed call. */
void
docker_error(struct sbx_error *err, const char *what, long status, json_t *body, const char *terr)
{
        const char *msg = json_string_value(json_object_get(body, "message"));

        if (!status) {
                sbx_error_backend(err, "docker", "%s: cannot reach the Docker daemon at %s: %s",
                                  what, docker.host, terr ? terr : "transport error");
                return;
        }
        sbx_error_backend(err, "docker", "%s: HTTP %ld: %s", what, status,
                          msg ? msg : "(no message)");
}

/* Records the container's state. */
void
docker_sandbox_mark(struct backend_sandbox *sb, const char *state)
{
        if (sb->state && strcmp(sb->state, state) == 0)
                return;
        free(sb->state);
        sb->state = xstrdup(state);
        if (strcmp(state, "running") != 0 && strcmp(state, "creating") != 0)
                docker_agent_container_gone(sb);
}

/* Takes a reference. */
void
docker_sandbox_ref(struct backend_sandbox *sb)
{
        sb->refs++;
}

static void docker_events_update(void);

/* Drops a reference; the last one frees. */
void
docker_sandbox_unref(struct backend_sandbox *sb)
{
        if (!sb || --sb->refs > 0)
                return;
        list_del(&sb->link);
        docker_agent_close(sb, NULL, false);
        free(sb->id);
        free(sb->cid);
        free(sb->name);
        free(sb->workdir);
        free(sb->image);
        free(sb->state);
        json_decref(sb->tmpfs);
        buf_free(&sb->dead_pidfiles);
        free(sb);
        docker_events_update();
}

/* State of a sandbox's container. */
const char *
docker_sandbox_state(const struct backend_sandbox *bsb)
{
        return bsb->state;
}

/* Container id of a sandbox. */
const char *
docker_sandbox_container(const struct backend_sandbox *bsb)
{
        return bsb->cid;
}

/* ---- events: keeps sandbox states current without polling ---- */

static const struct {
        const char *action;
        const char *state;
} docker_event_states[] = {
        {"start", "running"}, {"unpause", "running"}, {"die", "exited"},
        {"stop", "exited"},   {"pause", "paused"},    {"destroy", "removed"},
};

static void
docker_event(json_t *ev)
{
        const char *action = json_string_value(json_object_get(ev, "Action"));
        const char *id = json_string_value(json_object_get(json_object_get(ev, "Actor"), "ID"));
        struct list *pos, *tmp;

        if (!action || !id)
                return;
        for (size_t i = 0; i < ARRAY_SIZE(docker_event_states); i++) {
                if (strcmp(action, docker_event_states[i].action) != 0)
                        continue;
                LIST_FOREACH_SAFE(pos, tmp, &docker.sandboxes)
                {
                        struct backend_sandbox *sb = LIST_ENTRY(pos, struct backend_sandbox, link);
                        if (sb->cid && strcmp(sb->cid, id) == 0 && !sb->destroyed)
                                docker_sandbox_mark(sb, docker_event_states[i].state);
                }
        }
}

static int
docker_events_data_cb(void *ctx, struct http_req *req, const char *data, size_t len)
{
        char *nl;

        buf_append(&docker.events_buf, data, len);
        while ((nl = memchr(docker.events_buf.data, '\n', docker.events_buf.len))) {
                size_t n = (size_t) (nl - docker.events_buf.data);
                json_t *ev = json_loadb(docker.events_buf.data, n, 0, NULL);
                if (ev)
                        docker_event(ev);
                json_decref(ev);
                buf_consume(&docker.events_buf, n + 1);
        }
        if (docker.events_buf.len > (1u << 20))
                buf_consume(&docker.events_buf, docker.events_buf.len);
        return 0;
}

static void
docker_events_retry_cb(uv_timer_t *t)
{
        docker_events_update();
}

static void
docker_events_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        docker.events = NULL;
        buf_consume(&docker.events_buf, docker.events_buf.len);
        if (list_empty(&docker.sandboxes) || !docker.initialised)
                return;
        if (!docker.events_timer_init) {
                uv_timer_init(docker.loop, &docker.events_retry);
                docker.events_timer_init = true;
        }
        uv_timer_start(&docker.events_retry, docker_events_retry_cb, 1000, 0);
}

/* Runs the event stream while sandboxes exist, and only then (so an idle loop can end). */
static void
docker_events_update(void)
{
        static const struct http_cbs cbs = {.on_data = docker_events_data_cb,
                                            .on_done = docker_events_done_cb};
        struct http_req_spec s;
        char *q, *url;

        if (list_empty(&docker.sandboxes) || !docker.initialised) {
                if (docker.events)
                        http_cancel(docker.events);
                docker.events = NULL;
                if (docker.events_timer_init)
                        uv_timer_stop(&docker.events_retry);
                return;
        }
        if (docker.events || !docker.http)
                return;
        q = http_escape("{\"type\":[\"container\"],\"label\":[\"sandboxd=1\"]}");
        url = xasprintf("%s/" DOCKER_API "/events?filters=%s", docker.base_url, q);
        docker_spec_init(&s, "GET", url);
        http_request(docker.http, &s, &cbs, NULL, &docker.events);
        free(url);
        free(q);
}

/* ---- configuration (docker_config.c) ---- */

static int
docker_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        if (docker.initialised)
                return 0;
        docker_config_free(&docker);
        memset(&docker, 0, sizeof(docker));
        list_init(&docker.sandboxes);
        docker.loop = loop;
        if (docker_config_parse(config, &docker, backend_config_first_error, err) > 0)
                return -EINVAL;
        docker.http = http_multi_acquire(loop);
        docker.initialised = true;
        return 0;
}

static void
docker_shutdown(void)
{
        struct list *pos, *tmp;

        if (!docker.initialised)
                return;
        docker.initialised = false;
        docker_events_update();
        if (docker.events_timer_init) {
                uv_close((uv_handle_t *) &docker.events_retry, NULL);
                docker.events_timer_init = false;
        }
        /* The daemon's handles die with the backend: drop its reference to each sandbox (the
         * containers stay, for adopt after the restart). */
        LIST_FOREACH_SAFE(pos, tmp, &docker.sandboxes)
        {
                struct backend_sandbox *sb = LIST_ENTRY(pos, struct backend_sandbox, link);
                list_del(pos);
                /* The agent keeps every exec for the next daemon. */
                agent_session_detach(sb->session);
                sb->session = NULL;
                /* A destroyed one lives on only through its execs' references. */
                if (!sb->destroyed)
                        docker_sandbox_unref(sb);
        }
        buf_free(&docker.events_buf);
        /* Hijacked streams over TLS are connections of the HTTP handle released below. */
        docker_hijack_end_all("the daemon is shutting down");
        /* Calls still in flight end now, with an error (new calls are refused from here on),
         * so that whoever waits on them is told and frees its state. */
        while (!list_empty(&docker_calls)) {
                struct docker_callctx *c =
                        LIST_ENTRY(docker_calls.next, struct docker_callctx, link);
                list_del(&c->link);
                if (c->lreq)
                        http1_cancel(c->lreq);
                else
                        http_cancel(c->req);
                c->cb(c->ctx, 0, NULL, NULL, 0, "the daemon is shutting down");
                free(c);
        }
        http_multi_release(docker.http);
        docker.http = NULL;
}

/* ---- probe ---- */

struct docker_probe {
        void *ctx;
        backend_probe_cb cb;
};

static void
docker_probe_fail(struct docker_probe *pr, const char *terr)
{
        const char *path = docker.sock_path;
        char *reason, *hint;

        if (path && access(path, F_OK) != 0) {
                reason = xasprintf("the Docker daemon is not running (no socket at %s)", path);
                hint = xstrdup("start it: systemctl start docker (or dockerd &)");
        } else if (path && access(path, R_OK | W_OK) != 0) {
                reason = xasprintf("permission denied on %s", path);
                hint = xstrdup("add the daemon's user to the docker group, or run sandboxd as "
                               "root");
        } else {
                reason = xasprintf("cannot reach the Docker daemon at %s: %s", docker.host,
                                   terr ? terr : "no answer");
                hint = xstrdup("check that dockerd is running and DOCKER_HOST is right");
        }
        pr->cb(pr->ctx, false, reason, hint, json_object());
        free(reason);
        free(hint);
        free(pr);
}

static void
docker_version_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                  const char *terr)
{
        struct docker_probe *pr = ctx;
        const char *api = json_string_value(json_object_get(body, "ApiVersion"));
        const char *ver = json_string_value(json_object_get(body, "Version"));
        json_t *details;

        if (status != 200 || !api) {
                docker_probe_fail(pr, terr);
                return;
        }
        details =
                json_pack("{s:s,s:s?,s:s,s:s,s:s?,s:s?}", "api_version", api, "server_version", ver,
                          "host", docker.host, "exec", docker.agent ? "agent" : "docker exec",
                          "agent", docker.agent, "agent_note", docker.agent_note);
        if (strtod(api, NULL) + 1e-9 < DOCKER_API_MIN) {
                char *reason =
                        xasprintf("Docker API %s is too old (need %.2f)", api, DOCKER_API_MIN);
                pr->cb(pr->ctx, false, reason, "upgrade Docker to 20.10 or later", details);
                free(reason);
        } else {
                pr->cb(pr->ctx, true, NULL, NULL, details);
        }
        free(pr);
}

static void
docker_ping_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct docker_probe *pr = ctx;

        if (status != 200) {
                docker_probe_fail(pr, terr);
                return;
        }
        if (docker_get("/version", DOCKER_PROBE_TIMEOUT_MS, docker_version_cb, pr) < 0)
                docker_probe_fail(pr, "cannot start a request");
}

static void
docker_probe(void *ctx, backend_probe_cb cb)
{
        struct docker_probe *pr = xcalloc(1, sizeof(*pr));

        pr->ctx = ctx;
        pr->cb = cb;
        if (!docker.initialised) {
                cb(ctx, false, "the docker backend is not initialised", NULL, json_object());
                free(pr);
                return;
        }
        if (docker_get("/_ping", DOCKER_PROBE_TIMEOUT_MS, docker_ping_cb, pr) < 0)
                docker_probe_fail(pr, "cannot start a request");
}

/* ---- create ---- */

struct docker_create {
        struct backend_sandbox *sb;
        void *ctx;
        backend_progress_cb progress;
        backend_create_cb cb;
        char *image;
        json_t *body;      /* container create body */
        json_t *approved;  /* target -> realpath of requested bind sources */
        json_t *requested; /* the spec as approved, for the policy comparison */
        json_t *layers;    /* pull: layer id -> [current, total] */
        json_t *enforced;
        struct buf line;
        char *pull_error;
        bool host_access;
        bool adopting;
        bool cancelled;
        bool want_start;  /* agent mode: start once the attach is open (`docker start -a`) */
        bool starting;    /* the start call is in flight */
        bool agent_early; /* the agent answered (or failed: agent_error) before the start did */
        char *agent_error;
        struct list link;      /* in docker_creates while its cb is pending */
        struct http_req *pull; /* the image pull in flight */
        struct sbx_error err;
};

/* Creates and adopts whose cb is pending, for cancel(ctx). */
static struct list docker_creates = {&docker_creates, &docker_creates};

static struct backend_sandbox *
docker_sandbox_new(const char *id)
{
        struct backend_sandbox *sb = xcalloc(1, sizeof(*sb));

        sb->id = xstrdup(id);
        sb->state = xstrdup("creating");
        sb->refs = 1;
        sb->tmpfs = json_array();
        list_init(&sb->link);
        return sb;
}

static void
docker_create_free(struct docker_create *c)
{
        list_del(&c->link);
        free(c->agent_error);
        free(c->image);
        json_decref(c->body);
        json_decref(c->approved);
        json_decref(c->requested);
        json_decref(c->layers);
        json_decref(c->enforced);
        buf_free(&c->line);
        free(c->pull_error);
        sbx_error_clear(&c->err);
        free(c);
}

static void
docker_create_fail_final(struct docker_create *c)
{
        c->cb(c->ctx, NULL, NULL, &c->err);
        docker_sandbox_unref(c->sb);
        docker_create_free(c);
}

static void
docker_create_removed_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                         const char *terr)
{
        docker_create_fail_final(ctx);
}

/* Fails a create; a container already made is removed first (no Created-state leaks). */
static void
docker_create_fail(struct docker_create *c)
{
        char *path;

        if (c->sb->creating == c) {
                c->sb->creating = NULL;
                docker_agent_close(c->sb, NULL, true);
        }
        if (!c->sb->cid || c->adopting) {
                docker_create_fail_final(c);
                return;
        }
        path = xasprintf("/containers/%s?force=1&v=1", c->sb->cid);
        if (docker_call("DELETE", path, NULL, NULL, 0, NULL, docker_create_removed_cb, c) < 0)
                docker_create_fail_final(c);
        free(path);
}

static void
docker_create_fail_call(struct docker_create *c, const char *what, long status, json_t *body,
                        const char *terr)
{
        docker_error(&c->err, what, status, body, terr);
        docker_create_fail(c);
}

static json_t *
docker_create_enforced(const struct sandbox_spec *spec)
{
        json_t *e = json_object();

        if (spec->res.memory_mb)
                json_object_set_new(e, "memory_mb", json_string("docker"));
        if (spec->res.cpus > 0)
                json_object_set_new(e, "cpus", json_string("docker"));
        json_object_set_new(e, "pids", json_string("docker"));
        if (spec->res.disk_mb)
                json_object_set_new(e, "disk_mb", json_null());
        return e;
}

static void
docker_create_done(struct docker_create *c)
{
        struct backend_sandbox *sb = c->sb;
        struct sandbox_info info = {0};

        docker_sandbox_mark(sb, "running");
        list_add_tail(&docker.sandboxes, &sb->link);
        docker_events_update();
        info.workdir = sb->workdir;
        info.image = sb->image;
        info.host_access = c->host_access;
        info.enforced = c->enforced;
        info.details = json_pack("{s:s,s:s}", "container_id", sb->cid, "container_name",
                                 sb->name ? sb->name : "");
        info.runtime_dir = DOCKER_STATE_DIR;
        c->cb(c->ctx, sb, &info, NULL);
        json_decref(info.details);
        docker_create_free(c);
}

/* The agent's first READY (error NULL), or why it never came: an image where it cannot run
 * fails the create, not the first exec. */
void
docker_create_agent_ready(struct docker_create *c, const char *error)
{
        if (c->starting) { /* the start's answer decides, with this */
                c->agent_early = true;
                free(c->agent_error);
                c->agent_error = error ? xstrdup(error) : NULL;
                return;
        }
        c->sb->creating = NULL;
        if (error) {
                sbx_error_set(&c->err, SBX_E_BACKEND,
                              json_pack("{s:s,s:s,s:s}", "backend", "docker", "reason", error,
                                        "hint",
                                        "the image must run a static binary of the host's "
                                        "architecture from a read-only bind mount; else set "
                                        "agent = off in [backend.docker]"),
                              "docker: sandboxd-agent did not start in the container: %s", error);
                docker_agent_close(c->sb, NULL, true);
                docker_create_fail(c);
                return;
        }
        docker_create_done(c);
}

/* A cancelled create stops at its next step (its container, if any, is removed). */
static bool
docker_create_cancelled(struct docker_create *c)
{
        if (!c->cancelled)
                return false;
        sbx_error_clear(&c->err);
        sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "cancelled"),
                      "creating sandbox %s was cancelled", c->sb->id);
        docker_create_fail(c);
        return true;
}

static void
docker_started_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                  const char *terr)
{
        struct docker_create *c = ctx;

        c->starting = false;
        if (docker_create_cancelled(c))
                return;
        if (status != 204 && status != 304) {
                docker_create_fail_call(c, "start container", status, body, terr);
                return;
        }
        if (!c->sb->use_agent) {
                docker_create_done(c);
                return;
        }
        /* The agent's first READY finishes the create (docker_create_agent_ready); it may have
         * come (or failed) already, before this answer. */
        if (c->agent_early) {
                char *e = c->agent_error;
                c->agent_error = NULL;
                docker_create_agent_ready(c, e);
                free(e);
        }
}

static void
docker_start(struct docker_create *c)
{
        char *path = xasprintf("/containers/%s/start", c->sb->cid);

        c->starting = true;
        if (docker_call("POST", path, NULL, NULL, 0, NULL, docker_started_cb, c) < 0) {
                c->starting = false;
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(path);
}

/* The container's attach is open: start it now, so that nothing the agent says (or its dying
 * at once) happens before we listen. */
void
docker_create_attached(struct docker_create *c)
{
        if (!c->want_start)
                return;
        c->want_start = false;
        docker_start(c);
}

/* Starts a created (or stopped) container: with the agent, attached first (`docker start -a`):
 * the first exec does not pay for the attach, and an image where the agent cannot run fails
 * here, not at the first exec. An adopted container's execs are taken back by the daemon first
 * (exec_adopt, then exec_adopt_done). */
static void
docker_launch(struct docker_create *c)
{
        if (!c->sb->use_agent) {
                docker_start(c);
                return;
        }
        c->sb->creating = c;
        c->want_start = true;
        docker_agent_session(c->sb, c->adopting);
}

/* Whether a mount is the daemon's own read-only sandboxd-agent (src resolved). */
static bool
docker_is_agent_mount(const char *dst, const char *src)
{
        return docker.agent && dst && src && strcmp(dst, AGENT_PATH) == 0 &&
               strcmp(src, docker.agent) == 0;
}

/* How many of an adopted container's mounts show something of the host: all but the
 * read-only agent of a container made with one (by this daemon, perhaps from another path
 * before an upgrade). */
static size_t
docker_host_mounts(json_t *insp, bool agent)
{
        size_t i, n = 0;
        json_t *m;

        json_array_foreach(json_object_get(insp, "Mounts"), i, m)
        {
                const char *dst = json_string_value(json_object_get(m, "Destination"));
                if (!agent || !dst || strcmp(dst, AGENT_PATH) != 0 ||
                    json_is_true(json_object_get(m, "RW")))
                        n++;
        }
        return n;
}

/* The mounts Docker actually set up, as a sandbox.create spec for the policy. */
static json_t *
docker_real_spec(json_t *insp)
{
        json_t *hc = json_object_get(insp, "HostConfig");
        json_t *mounts = json_array(), *m;
        size_t i;

        json_array_foreach(json_object_get(insp, "Mounts"), i, m)
        {
                const char *type = json_string_value(json_object_get(m, "Type"));
                const char *src = json_string_value(json_object_get(m, "Source"));
                const char *name = json_string_value(json_object_get(m, "Name"));
                const char *dst = json_string_value(json_object_get(m, "Destination"));
                char real[PATH_MAX];
                if (type && strcmp(type, "bind") == 0 && src && realpath(src, real))
                        src = real;
                if (docker_is_agent_mount(dst, src) && !json_is_true(json_object_get(m, "RW")))
                        continue;
                if (type && strcmp(type, "volume") == 0 && name)
                        src = name;
                json_array_append_new(mounts, json_pack("{s:s?,s:s?,s:s?,s:b}", "type", type,
                                                        "source", src, "target", dst, "readonly",
                                                        !json_is_true(json_object_get(m, "RW"))));
        }
        /* The other HostConfig fields are what was sent (and judged), plus Docker's defaults
         * for the ones not sent: what can differ from the judged spec is what the mounts
         * resolved to, so that is what is judged again. */
        return json_pack("{s:s,s:o,s:{s:{s:s?}}}", "backend", "docker", "mounts", mounts, "docker",
                         "host_config", "NetworkMode",
                         json_string_value(json_object_get(hc, "NetworkMode")));
}

/* A bind whose source resolves elsewhere than approved (a swapped symlink) fails the create. */
static int
docker_check_binds(struct docker_create *c, json_t *insp)
{
        json_t *m;
        size_t i;

        json_array_foreach(json_object_get(insp, "Mounts"), i, m)
        {
                const char *dst = json_string_value(json_object_get(m, "Destination"));
                const char *src = json_string_value(json_object_get(m, "Source"));
                const char *want = json_string_value(json_object_get(c->approved, dst ? dst : ""));
                char real[PATH_MAX];
                if (docker.agent && dst && strcmp(dst, AGENT_PATH) == 0)
                        want = docker.agent;
                if (!want || !src)
                        continue;
                if (!realpath(src, real) || strcmp(real, want) != 0) {
                        sbx_error_set(&c->err, SBX_E_DENIED,
                                      json_pack("{s:s,s:s,s:[]}", "verdict", "deny", "resolution",
                                                "policy", "findings"),
                                      "mount %s: source resolves to %s, but %s was approved", dst,
                                      realpath(src, real) ? real : src, want);
                        return -EPERM;
                }
        }
        return 0;
}

/* The real container, judged by the built-in policy, must not be stricter than the request. */
static int
docker_check_policy(struct docker_create *c, json_t *insp)
{
        json_t *real = docker_real_spec(insp);
        int rc = backend_rejudge("docker", c->requested, real,
                                 "the created container differs from the approved spec", &c->err,
                                 &c->host_access);

        c->host_access = c->host_access || json_object_size(c->approved) > 0;
        json_decref(real);
        return rc;
}

static void
docker_note_tmpfs(struct backend_sandbox *sb, json_t *insp)
{
        json_t *hc = json_object_get(insp, "HostConfig"), *v, *m;
        const char *k;
        size_t i;

        json_array_clear(sb->tmpfs);
        json_object_foreach(json_object_get(hc, "Tmpfs"), k, v)
                json_array_append_new(sb->tmpfs, json_string(k));
        json_array_foreach(json_object_get(hc, "Mounts"), i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Type"));
                if (t && strcmp(t, "tmpfs") == 0)
                        json_array_append(sb->tmpfs, json_object_get(m, "Target"));
        }
}

static void
docker_inspected_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                    const char *terr)
{
        struct docker_create *c = ctx;
        const char *wd =
                json_string_value(json_object_get(json_object_get(body, "Config"), "WorkingDir"));

        if (docker_create_cancelled(c))
                return;
        if (status != 200) {
                docker_create_fail_call(c, "inspect container", status, body, terr);
                return;
        }
        if (docker_check_binds(c, body) < 0 || docker_check_policy(c, body) < 0) {
                docker_create_fail(c);
                return;
        }
        free(c->sb->workdir);
        c->sb->workdir = xstrdup(wd && *wd ? wd : "/");
        docker_note_tmpfs(c->sb, body);
        docker_launch(c);
}

static void
docker_inspect_created(struct docker_create *c)
{
        char *path = xasprintf("/containers/%s/json", c->sb->cid);

        if (docker_call("GET", path, NULL, NULL, 0, NULL, docker_inspected_cb, c) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(path);
}

static void
docker_created_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                  const char *terr)
{
        struct docker_create *c = ctx;
        const char *id = json_string_value(json_object_get(body, "Id"));

        if (id && status == 201)
                c->sb->cid = xstrdup(id); /* a cancel removes it */
        if (docker_create_cancelled(c))
                return;
        if (status != 201 || !id) {
                docker_create_fail_call(c, "create container", status, body, terr);
                return;
        }
        docker_inspect_created(c);
}

static void
docker_create_container(struct docker_create *c)
{
        char *name = http_escape(c->sb->name);
        char *path = xasprintf("/containers/create?name=%s", name);

        if (docker_call("POST", path, c->body, NULL, 0, NULL, docker_created_cb, c) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(path);
        free(name);
}

/* ---- image pull with progress ---- */

/* What to do about a failed pull, from the registry's message. */
static const char *
docker_pull_hint(const char *why)
{
        static const struct {
                const char *needle, *hint;
        } hints[] = {
                {"connection refused", "the registry is unreachable (offline?)"},
                {"no such host", "the registry is unreachable (offline?)"},
                {"i/o timeout", "the registry is unreachable (offline?)"},
                {"network is unreachable", "the registry is unreachable (offline?)"},
                {"dial tcp", "the registry is unreachable (offline?)"},
                {"not found", "check the image name and tag"},
                {"manifest unknown", "check the image name and tag"},
                {"does not exist", "check the image name and tag"},
                {"unauthorized", "the registry wants credentials: docker login on the docker host"},
                {"denied", "the registry wants credentials: docker login on the docker host"},
                {"authentication required",
                 "the registry wants credentials: docker login on the docker host"},
        };

        for (size_t i = 0; why && i < ARRAY_SIZE(hints); i++)
                if (strcasestr(why, hints[i].needle))
                        return hints[i].hint;
        return "see the docker host's log";
}

static void
docker_pull_line(struct docker_create *c, json_t *ev)
{
        const char *status = json_string_value(json_object_get(ev, "status"));
        const char *error = json_string_value(json_object_get(ev, "error"));
        const char *id = json_string_value(json_object_get(ev, "id"));
        json_t *pd = json_object_get(ev, "progressDetail");
        int64_t cur = 0, tot = 0;
        const char *k;
        json_t *v;

        /* A refused pull answers {"message": …} (with an HTTP error status), a pull that fails
         * on the way {"error": …}: either is what the client must read. */
        if (!error && !status)
                error = json_string_value(json_object_get(ev, "message"));
        if (error) {
                free(c->pull_error);
                c->pull_error = xstrdup(error);
                return;
        }
        if (id && json_is_integer(json_object_get(pd, "total")))
                json_object_set_new(c->layers, id,
                                    json_pack("[I,I]",
                                              json_integer_value(json_object_get(pd, "current")),
                                              json_integer_value(json_object_get(pd, "total"))));
        json_object_foreach(c->layers, k, v)
        {
                cur += json_integer_value(json_array_get(v, 0));
                tot += json_integer_value(json_array_get(v, 1));
        }
        if (c->progress && status) {
                char *msg = id ? xasprintf("%s: %s", id, status) : xstrdup(status);
                c->progress(c->ctx, "pull", msg, cur, tot);
                free(msg);
        }
}

static int
docker_pull_data_cb(void *ctx, struct http_req *req, const char *data, size_t len)
{
        struct docker_create *c = ctx;
        char *nl;

        buf_append(&c->line, data, len);
        while ((nl = memchr(c->line.data, '\n', c->line.len))) {
                size_t n = (size_t) (nl - c->line.data);
                json_t *ev = json_loadb(c->line.data, n, 0, NULL);
                if (ev)
                        docker_pull_line(c, ev);
                json_decref(ev);
                buf_consume(&c->line, n + 1);
        }
        return c->line.len > (1u << 20) ? -1 : 0;
}

static void
docker_pull_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        struct docker_create *c = ctx;

        c->pull = NULL;
        if (docker_create_cancelled(c))
                return;
        if (c->line.len) {
                json_t *ev = json_loadb(c->line.data, c->line.len, 0, NULL);
                if (ev)
                        docker_pull_line(c, ev);
                json_decref(ev);
        }
        if (res->error || res->status != 200 || c->pull_error) {
                const char *why = c->pull_error ? c->pull_error : res->error;
                char *detail = why ? xstrdup(why)
                                   : xasprintf("the docker daemon answered HTTP %ld", res->status);
                const char *hint = docker_pull_hint(detail);
                sbx_error_backend(&c->err, "docker", "pull %s: %s", c->image, detail);
                sbx_error_prefix(&c->err,
                                 "cannot get image '%s' (%s; or pull or load it on the "
                                 "docker host first)",
                                 c->image, hint);
                json_object_set_new(c->err.data, "hint",
                                    json_sprintf("%s; or pull or load the image on the docker "
                                                 "host first (docker pull, docker load)",
                                                 hint));
                free(detail);
                docker_create_fail(c);
                return;
        }
        if (c->progress)
                c->progress(c->ctx, "pull", "pulled", -1, -1);
        docker_create_container(c);
}

static void
docker_pull(struct docker_create *c)
{
        static const struct http_cbs cbs = {.on_data = docker_pull_data_cb,
                                            .on_done = docker_pull_done_cb};
        char *ref = xstrdup(c->image), *tag = NULL, *slash = strrchr(ref, '/');
        char *colon = strrchr(slash ? slash : ref, ':');
        struct http_req_spec s;
        char *qi, *qt, *url;

        if (colon && !strchr(ref, '@')) {
                *colon = '\0';
                tag = colon + 1;
        }
        qi = http_escape(ref);
        qt = http_escape(tag ? tag : "latest");
        url = strchr(c->image, '@')
                      ? xasprintf("%s/" DOCKER_API "/images/create?fromImage=%s", docker.base_url,
                                  qi)
                      : xasprintf("%s/" DOCKER_API "/images/create?fromImage=%s&tag=%s",
                                  docker.base_url, qi, qt);
        docker_spec_init(&s, "POST", url);
        if (c->progress)
                c->progress(c->ctx, "pull", c->image, 0, 0);
        if (http_request(docker.http, &s, &cbs, c, &c->pull) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(url);
        free(qi);
        free(qt);
        free(ref);
}

static void
docker_image_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct docker_create *c = ctx;

        if (docker_create_cancelled(c))
                return;
        if (status == 200)
                docker_create_container(c);
        else if (status == 404)
                docker_pull(c);
        else
                docker_create_fail_call(c, "inspect image", status, body, terr);
}

/* ---- create: the container body ---- */

static int
docker_mount(struct docker_create *c, json_t *m, json_t *out, struct sbx_error *err)
{
        const char *type = json_string_value(json_object_get(m, "type"));
        const char *src = json_string_value(json_object_get(m, "source"));
        const char *dst = json_string_value(json_object_get(m, "target"));
        bool ro = json_is_true(json_object_get(m, "readonly"));
        char real[PATH_MAX];

        if (!type || !dst || dst[0] != '/') {
                sbx_error_param(err, "mounts", "each mount needs a type and an absolute target");
                return -EINVAL;
        }
        if (strcmp(type, "tmpfs") == 0) {
                json_array_append_new(out, json_pack("{s:s,s:s,s:b}", "Type", "tmpfs", "Target",
                                                     dst, "ReadOnly", ro));
                return 0;
        }
        if (!src || (strcmp(type, "bind") != 0 && strcmp(type, "volume") != 0)) {
                sbx_error_param(err, "mounts", "mount of %s: bad type or no source", dst);
                return -EINVAL;
        }
        if (strcmp(type, "bind") == 0) {
                if (!realpath(src, real)) {
                        sbx_error_param(err, "mounts", "bind source '%s': %s", src,
                                        strerror(errno));
                        return -EINVAL;
                }
                src = real;
                json_object_set_new(c->approved, dst, json_string(real));
        }
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:b}", "Type", type, "Source", src,
                                             "Target", dst, "ReadOnly", ro));
        return 0;
}

/* Volumes Docker creates for a sandbox carry its owner's uid: an unprivileged caller may mount
 * only volumes with its own (policy/container_mounts.c). */
static void
docker_label_volumes(json_t *mounts, const struct sandbox_spec *spec)
{
        json_t *m, *vo, *labels;
        size_t i;

        json_array_foreach(mounts, i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Type"));
                if (!t || strcmp(t, "volume") != 0)
                        continue;
                if (!json_is_object(vo = json_object_get(m, "VolumeOptions")))
                        json_object_set_new(m, "VolumeOptions", vo = json_object());
                if (!json_is_object(labels = json_object_get(vo, "Labels")))
                        json_object_set_new(vo, "Labels", labels = json_object());
                json_object_set_new(
                        labels, "sandboxd.owner",
                        json_sprintf("%u", spec->owner ? (unsigned) spec->owner->uid : 0u));
        }
}

/* The HostConfig keys that carry a resource limit the sandbox reports as enforced by
 * docker: docker.host_config may not set them when the spec's resources do. */
static const struct {
        const char *resource;
        const char *key;
} docker_res_keys[] = {
        {"memory_mb", "Memory"}, {"memory_mb", "MemorySwap"}, {"cpus", "NanoCpus"},
        {"cpus", "CpuQuota"},    {"cpus", "CpuPeriod"},       {"pids", "PidsLimit"},
};

static bool
docker_res_set(const struct sandbox_spec *spec, const char *resource)
{
        if (!strcmp(resource, "memory_mb"))
                return spec->res.memory_mb > 0;
        if (!strcmp(resource, "cpus"))
                return spec->res.cpus > 0;
        return spec->res.pids > 0;
}

/* Refuses a docker.host_config that would silently override resources.* (-32602). */
static int
docker_res_conflict(const struct sandbox_spec *spec, json_t *over, struct sbx_error *err)
{
        for (size_t i = 0; i < ARRAY_SIZE(docker_res_keys); i++) {
                const char *r = docker_res_keys[i].resource, *k = docker_res_keys[i].key;
                if (!json_object_get(over, k) || !docker_res_set(spec, r))
                        continue;
                sbx_error_param(err, "docker.host_config",
                                "docker.host_config.%s conflicts with resources.%s: set the "
                                "limit in one of them",
                                k, r);
                return -EINVAL;
        }
        return 0;
}

static json_t *
docker_host_config(struct docker_create *c, const struct sandbox_spec *spec, struct sbx_error *err)
{
        json_t *caps = json_array(), *mounts = json_array(), *m, *hc;
        const char *net = spec->network ? spec->network : docker.default_network;
        int64_t pids = spec->res.pids ? spec->res.pids : docker.pids_limit;
        char *tmp = xasprintf("rw,nosuid,nodev,size=%s", docker.tmp_size);
        size_t i;

        for (i = 0; i < ARRAY_SIZE(docker_cap_add); i++)
                json_array_append_new(caps, json_string(docker_cap_add[i]));
        hc = json_pack("{s:[s],s:o,s:[s],s:b,s:s,s:{s:s}}", "CapDrop", "ALL", "CapAdd", caps,
                       "SecurityOpt", "no-new-privileges", "Init", 1, "NetworkMode", net, "Tmpfs",
                       "/tmp", tmp);
        free(tmp);
        /* dockerd's default on cgroup v1 is the host's cgroup namespace: the container would
         * see (and the policy flags) the host's whole cgroup tree. */
        json_object_set_new(hc, "CgroupnsMode", json_string("private"));
        if (pids > 0)
                json_object_set_new(hc, "PidsLimit", json_integer(pids));
        if (spec->res.memory_mb > 0) {
                json_object_set_new(hc, "Memory", json_integer(spec->res.memory_mb << 20));
                json_object_set_new(hc, "MemorySwap", json_integer(spec->res.memory_mb << 20));
        }
        if (spec->res.cpus > 0)
                json_object_set_new(hc, "NanoCpus",
                                    json_integer((json_int_t) (spec->res.cpus * 1e9)));
        json_array_foreach(spec->mounts, i, m)
        {
                if (docker_mount(c, m, mounts, err) < 0) {
                        json_decref(mounts);
                        json_decref(hc);
                        return NULL;
                }
        }
        json_object_set_new(hc, "Mounts", mounts);
        /* Exec output travels over the attach stream; a log driver would keep a copy of it. */
        if (docker.agent)
                json_object_set_new(hc, "LogConfig", json_pack("{s:s}", "Type", "none"));
        if (docker.runtime)
                json_object_set_new(hc, "Runtime", json_string(docker.runtime));
        /* docker.host_config merges over the defaults, key by key (a copy: the spec is the
         * sandbox's and stays as it was given). */
        json_t *over = json_deep_copy(json_object_get(spec->section, "host_config"));
        if (docker_res_conflict(spec, over, err) < 0) {
                json_decref(over);
                json_decref(hc);
                return NULL;
        }
        json_object_update(hc, over);
        json_decref(over);
        return hc;
}

static json_t *
docker_labels(const struct sandbox_spec *spec)
{
        json_t *l = json_deep_copy(spec->labels);
        char uid[32];

        if (!json_is_object(l)) {
                json_decref(l);
                l = json_object();
        }
        snprintf(uid, sizeof(uid), "%u", spec->owner ? (unsigned) spec->owner->uid : 0u);
        json_object_set_new(l, "sandboxd", json_string("1"));
        json_object_set_new(l, "sandboxd.owner", json_string(uid));
        json_object_set_new(l, "sandboxd.sandbox", json_string(spec->id));
        json_object_set_new(l, "sandboxd.name", json_string(spec->name ? spec->name : spec->id));
        if (docker.instance)
                json_object_set_new(l, "sandboxd.instance", json_string(docker.instance));
        if (docker.agent)
                json_object_set_new(l, "sandboxd.agent", json_string("1"));
        return l;
}

/* The container's main process is sandboxd-agent, mounted read-only from the host and driven
 * over the attach stream (docker_agent.c). The mount is added after the policy saw the spec:
 * it is the daemon's own, and the read-back checks it separately. */
static void
docker_body_agent(json_t *body, json_t *hc)
{
        json_t *mounts = json_object_get(hc, "Mounts");

        if (!json_is_array(mounts)) {
                mounts = json_array();
                json_object_set_new(hc, "Mounts", mounts);
        }
        json_array_append_new(mounts, json_pack("{s:s,s:s,s:s,s:b}", "Type", "bind", "Source",
                                                docker.agent, "Target", AGENT_PATH, "ReadOnly", 1));
        json_object_set_new(body, "Cmd",
                            json_pack("[sss]", AGENT_PATH, "--runtime-dir", DOCKER_STATE_DIR));
        /* The agent is the container's init (PID 1: it reaps orphans, as docker-init would):
         * any other process holding the container's stdio — docker-init, an entrypoint
         * script that does not exec — is dumpable, so a command could open its
         * /proc/PID/fd/0 and /fd/1 and read or forge the daemon's messages. Set after the
         * docker.host_config merge on purpose; agent = off keeps both. */
        json_object_set_new(body, "Entrypoint", json_array());
        json_object_set_new(hc, "Init", json_false());
        json_object_set_new(body, "OpenStdin", json_true());
        json_object_set_new(body, "StdinOnce", json_false());
        json_object_set_new(body, "AttachStdin", json_true());
        json_object_set_new(body, "AttachStdout", json_true());
        json_object_set_new(body, "Tty", json_false());
}

/* What the read-back (docker_check_policy) compares the created container with: the mounts and
 * the network as requested (copies: the owner labels and the agent's mount added after this
 * are the daemon's own). */
static json_t *
docker_requested(json_t *hc)
{
        static const char *const keys[] = {"Mounts", "Binds", "NetworkMode", "VolumeDriver", NULL};
        json_t *rhc = json_object(), *v;

        for (const char *const *k = keys; *k; k++)
                if ((v = json_object_get(hc, *k)))
                        json_object_set_new(rhc, *k, json_deep_copy(v));
        return json_pack("{s:s,s:{s:o}}", "backend", "docker", "docker", "host_config", rhc);
}

static json_t *
docker_body(struct docker_create *c, const struct sandbox_spec *spec, struct sbx_error *err)
{
        json_t *hc = docker_host_config(c, spec, err), *env = json_array(), *v, *body;
        const char *k;

        if (!hc) {
                json_decref(env);
                return NULL;
        }
        json_object_foreach(spec->env, k, v)
        {
                if (json_is_string(v))
                        json_array_append_new(env, json_sprintf("%s=%s", k, json_string_value(v)));
        }
        body = json_pack("{s:s,s:[sss],s:o,s:o,s:o}", "Image", c->image, "Cmd", "sh", "-c",
                         "mkdir -p " DOCKER_STATE_DIR "; exec sleep 2147483647", "Env", env,
                         "Labels", docker_labels(spec), "HostConfig", hc);
        if (spec->workdir)
                json_object_set_new(body, "WorkingDir", json_string(spec->workdir));
        c->requested = docker_requested(hc);
        docker_label_volumes(json_object_get(hc, "Mounts"), spec);
        if (docker.agent)
                docker_body_agent(body, hc);
        return body;
}

static void
docker_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
              backend_create_cb cb)
{
        struct docker_create *c = xcalloc(1, sizeof(*c));
        char *q, *path;

        c->ctx = ctx;
        c->cb = cb;
        c->progress = progress;
        list_add_tail(&docker_creates, &c->link);
        c->sb = docker_sandbox_new(spec->id);
        c->sb->up = spec->up;
        c->sb->up_ctx = spec->up_ctx;
        c->sb->name = xasprintf("sandboxd-%s", spec->id);
        c->image = xstrdup(spec->image ? spec->image : docker.default_image);
        c->sb->image = xstrdup(c->image);
        c->sb->use_agent = docker.agent != NULL;
        c->approved = json_object();
        c->layers = json_object();
        c->enforced = docker_create_enforced(spec);
        if (!docker.initialised) {
                sbx_error_set(
                        &c->err, SBX_E_BACKEND_UNAVAILABLE,
                        json_pack("{s:s,s:s}", "backend", "docker", "reason", "not initialised"),
                        "docker backend is not initialised");
                docker_create_fail(c);
                return;
        }
        c->body = docker_body(c, spec, &c->err);
        if (!c->body) {
                docker_create_fail(c);
                return;
        }
        q = http_escape(c->image);
        path = xasprintf("/images/%s/json", q);
        if (docker_call("GET", path, NULL, NULL, 0, NULL, docker_image_cb, c) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(path);
        free(q);
}

/* ---- save / adopt / destroy ---- */

static json_t *
docker_save(struct backend_sandbox *bsb)
{
        return json_pack("{s:s,s:s}", "container_id", bsb->cid, "container_name",
                         bsb->name ? bsb->name : "");
}

static void
docker_adopt_inspect_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                        const char *terr)
{
        struct docker_create *c = ctx;
        json_t *st = json_object_get(body, "State"), *cfg = json_object_get(body, "Config");
        const char *wd = json_string_value(json_object_get(cfg, "WorkingDir"));
        const char *image = json_string_value(json_object_get(cfg, "Image"));
        const char *name = json_string_value(json_object_get(body, "Name"));
        const char *owner = json_string_value(
                json_object_get(json_object_get(cfg, "Labels"), "sandboxd.sandbox"));
        const char *agent = json_string_value(
                json_object_get(json_object_get(cfg, "Labels"), "sandboxd.agent"));

        /* A container that is not this sandbox's (its id was recorded wrongly, or reused) is
         * treated as gone: we never take over a container we did not create for it. */
        if (status == 200 && (!owner || strcmp(owner, c->sb->id) != 0))
                status = 404;
        if (status == 404) {
                sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "removed"),
                              "docker container %s of sandbox %s is gone", c->sb->cid, c->sb->id);
                docker_create_fail(c);
                return;
        }
        if (status != 200) {
                docker_create_fail_call(c, "inspect container", status, body, terr);
                return;
        }
        free(c->sb->workdir);
        c->sb->workdir = xstrdup(wd && *wd ? wd : "/");
        /* Its agent is attached at the first exec; one made without it keeps docker exec. */
        c->sb->use_agent = agent && strcmp(agent, "1") == 0;
        if (image && !c->sb->image)
                c->sb->image = xstrdup(image);
        if (name) {
                free(c->sb->name);
                c->sb->name = xstrdup(name[0] == '/' ? name + 1 : name);
        }
        docker_note_tmpfs(c->sb, body);
        c->host_access = docker_host_mounts(body, c->sb->use_agent) > 0;
        if (json_is_true(json_object_get(st, "Running")))
                docker_create_done(c);
        else
                docker_launch(c); /* files survive a stop; processes do not */
}

static void
docker_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx, backend_create_cb cb)
{
        const char *cid = json_string_value(json_object_get(record, "container_id"));
        struct docker_create *c = xcalloc(1, sizeof(*c));
        char *path;

        c->ctx = ctx;
        c->cb = cb;
        c->adopting = true;
        list_add_tail(&docker_creates, &c->link);
        c->sb = docker_sandbox_new(spec->id);
        c->sb->up = spec->up;
        c->sb->up_ctx = spec->up_ctx;
        c->sb->image = spec->image ? xstrdup(spec->image) : NULL;
        c->enforced = docker_create_enforced(spec);
        if (!cid || !docker.initialised) {
                sbx_error_backend(&c->err, "docker", "cannot adopt: %s",
                                  cid ? "backend not initialised" : "record has no container_id");
                docker_create_fail(c);
                return;
        }
        c->sb->cid = xstrdup(cid);
        path = xasprintf("/containers/%s/json", cid);
        if (docker_call("GET", path, NULL, NULL, 0, NULL, docker_adopt_inspect_cb, c) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(path);
}

struct docker_done {
        struct backend_sandbox *sb;
        void *ctx;
        backend_done_cb cb;
};

static void
docker_destroyed_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                    const char *terr)
{
        struct docker_done *d = ctx;
        struct sbx_error err = {0};

        if (status != 204 && status != 404)
                docker_error(&err, "remove container", status, body, terr);
        docker_sandbox_mark(d->sb, "removed");
        d->cb(d->ctx, err.code ? &err : NULL);
        sbx_error_clear(&err);
        docker_sandbox_unref(d->sb);
        free(d);
}

static void
docker_destroy(struct backend_sandbox *bsb, void *ctx, backend_done_cb cb)
{
        struct docker_done *d = xcalloc(1, sizeof(*d));
        char *path = xasprintf("/containers/%s?force=1&v=1", bsb->cid);

        d->sb = bsb;
        d->ctx = ctx;
        d->cb = cb;
        bsb->destroyed = true;
        docker_agent_close(bsb, NULL, true);
        if (docker_call("DELETE", path, NULL, NULL, 0, NULL, docker_destroyed_cb, d) < 0)
                docker_destroyed_cb(d, 0, NULL, NULL, 0, "cannot start an API request");
        free(path);
}

/* ---- orphans ---- */

struct docker_reap {
        int pending, removed;
        void *ctx;
        void (*cb)(void *ctx, int removed, const struct sbx_error *err);
        struct sbx_error err;
};

static void
docker_reap_finish(struct docker_reap *r)
{
        if (--r->pending > 0)
                return;
        r->cb(r->ctx, r->removed, r->err.code ? &r->err : NULL);
        sbx_error_clear(&r->err);
        free(r);
}

static void
docker_reaped_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                 const char *terr)
{
        struct docker_reap *r = ctx;

        if (status == 204)
                r->removed++;
        else if (status != 404 && !r->err.code)
                docker_error(&r->err, "remove orphan", status, body, terr);
        docker_reap_finish(r);
}

static bool
docker_known(const char *const *ids, const char *id)
{
        for (; ids && *ids; ids++)
                if (id && strcmp(*ids, id) == 0)
                        return true;
        return false;
}

struct docker_reap_list {
        struct docker_reap *r;
        const char **ids;
};

static void
docker_reap_list_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                    const char *terr)
{
        struct docker_reap_list *rl = ctx;
        struct docker_reap *r = rl->r;
        json_t *c;
        size_t i;

        if (status != 200)
                docker_error(&r->err, "list containers", status, body, terr);
        json_array_foreach(status == 200 ? body : NULL, i, c)
        {
                const char *sid = json_string_value(
                        json_object_get(json_object_get(c, "Labels"), "sandboxd.sandbox"));
                const char *cid = json_string_value(json_object_get(c, "Id"));
                char *path;
                if (!cid || docker_known(rl->ids, sid))
                        continue;
                path = xasprintf("/containers/%s?force=1&v=1", cid);
                r->pending++;
                if (docker_call("DELETE", path, NULL, NULL, 0, NULL, docker_reaped_cb, r) < 0)
                        docker_reaped_cb(r, 0, NULL, NULL, 0, "cannot start a request");
                free(path);
        }
        for (i = 0; rl->ids && rl->ids[i]; i++)
                free((char *) rl->ids[i]);
        free(rl->ids);
        free(rl);
        docker_reap_finish(r);
}

/* Removes (force) containers labelled sandboxd=1 (and sandboxd.instance=<instance>) whose
 * sandboxd.sandbox label is not in known_ids. */
static void
docker_reap_orphans(const char *const *known_ids, void *ctx, backend_reaped_cb cb)
{
        struct docker_reap_list *rl = xcalloc(1, sizeof(*rl));
        struct docker_reap *r = xcalloc(1, sizeof(*r));
        json_t *f = json_pack("{s:[s]}", "label", "sandboxd=1");
        char *js, *q, *path;
        size_t n = 0;

        if (docker.instance)
                json_array_append_new(json_object_get(f, "label"),
                                      json_sprintf("sandboxd.instance=%s", docker.instance));
        while (known_ids && known_ids[n])
                n++;
        rl->ids = xcalloc(n + 1, sizeof(*rl->ids));
        for (size_t i = 0; i < n; i++)
                rl->ids[i] = xstrdup(known_ids[i]);
        rl->r = r;
        r->ctx = ctx;
        r->cb = cb;
        r->pending = 1;
        js = json_dumps(f, JSON_COMPACT);
        q = http_escape(js);
        path = xasprintf("/containers/json?all=1&filters=%s", q);
        if (docker_get(path, DOCKER_LIST_TIMEOUT_MS, docker_reap_list_cb, rl) < 0)
                docker_reap_list_cb(rl, 0, NULL, NULL, 0, "docker backend not initialised");
        free(path);
        free(q);
        free(js);
        json_decref(f);
}

/* Abandons the create or adopt of ctx at its next step; one waiting for the agent now. */
static void
docker_cancel(void *ctx)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &docker_creates)
        {
                struct docker_create *c = LIST_ENTRY(pos, struct docker_create, link);
                if (c->ctx != ctx || c->cancelled)
                        continue;
                c->cancelled = true;
                if (c->pull) {
                        http_cancel(c->pull); /* no on_done follows */
                        c->pull = NULL;
                        docker_create_cancelled(c);
                } else if (c->sb->creating == c && !c->starting) {
                        docker_create_cancelled(c); /* it closes the session */
                }
                return;
        }
}

const struct backend_ops docker_backend_ops = {
        .name = "docker",
        .init = docker_init,
        .validate = docker_config_validate,
        .probe = docker_probe,
        .inspect_spec = docker_inspect_spec,
        .create = docker_create,
        .cancel = docker_cancel,
        .save = docker_save,
        .adopt = docker_adopt,
        .destroy = docker_destroy,
        .reap_orphans = docker_reap_orphans,
        .exec_start = docker_exec_start,
        .exec_adopt = docker_exec_adopt,
        .exec_adopt_done = docker_exec_adopt_done,
        .file_read = docker_file_read,
        .file_write = docker_file_write,
        .shutdown = docker_shutdown,
};
