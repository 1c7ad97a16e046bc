/* docker.c — Docker backend: API calls, the sandbox object, the event stream, init and
 * shutdown, probe, and the backend_ops table. Create is in docker_create.c (its container
 * body and read-back in docker_spec.c), adopt, destroy and orphans in docker_adopt.c; the
 * backend's files are listed in docker_int.h. */
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
#define DOCKER_PROBE_TIMEOUT_MS 5000 /* each of the probe's two GETs */

#ifndef SANDBOXD_LIBEXECDIR
#define SANDBOXD_LIBEXECDIR "/usr/local/libexec/sandboxd"
#endif

struct docker_state docker;

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

/* Fills s for a request to url: the Docker host's socket or TLS files, the body limit. */
void
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
int
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
        free(sb->user);
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
void
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
        json_t *details; /* of an available dockerd, while /info is asked */
};

static void
docker_probe_fail(struct docker_probe *pr, const char *terr)
{
        static const char *const pub[][2] = {
                {"the Docker daemon is not running", "the operator must start dockerd"},
                {"sandboxd may not use the Docker daemon's socket",
                 "the operator must add the daemon's user to the docker group, or run sandboxd "
                 "as root"},
                {"the Docker daemon does not answer",
                 "the operator must check that dockerd runs where [backend.docker] host (or the "
                 "daemon's DOCKER_HOST) points"},
        };
        const char *path = docker.sock_path;
        json_t *details = json_object();
        char *reason, *hint;
        size_t i;

        if (path && access(path, F_OK) != 0) {
                i = 0;
                reason = xasprintf("the Docker daemon is not running (no socket at %s)", path);
                hint = xstrdup("start it: systemctl start docker (or dockerd &)");
        } else if (path && access(path, R_OK | W_OK) != 0) {
                i = 1;
                reason = xasprintf("permission denied on %s", path);
                hint = xstrdup("add the daemon's user to the docker group, or run sandboxd as "
                               "root");
        } else {
                i = 2;
                reason = xasprintf("cannot reach the Docker daemon at %s: %s", docker.host,
                                   terr ? terr : "no answer");
                hint = xstrdup("check that dockerd is running and DOCKER_HOST is right");
        }
        backend_probe_public(details, pub[i][0], pub[i][1]);
        pr->cb(pr->ctx, false, reason, hint, details);
        free(reason);
        free(hint);
        free(pr);
}

/* Whether dockerd remaps users, and its CPUs and memory: what it answers, else as last known. */
static void
docker_probe_info_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                     const char *terr)
{
        struct docker_probe *pr = ctx;

        if (status == 200)
                docker_info_note(body);
        docker_info_details(pr->details);
        pr->cb(pr->ctx, true, NULL, NULL, pr->details);
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
                backend_probe_public(details, reason,
                                     "the operator must upgrade Docker to 20.10 or later");
                pr->cb(pr->ctx, false, reason, "upgrade Docker to 20.10 or later", details);
                free(reason);
                free(pr);
                return;
        }
        pr->details = details;
        if (docker_get("/info", DOCKER_PROBE_TIMEOUT_MS, docker_probe_info_cb, pr) < 0)
                docker_probe_info_cb(pr, 0, NULL, NULL, 0, "cannot start a request");
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

/* The docker backend's vtable (docker.h). */
const struct backend_ops docker_backend_ops = {
        .name = "docker",
        .init = docker_init,
        .validate = docker_config_validate,
        .probe = docker_probe,
        .inspect_spec = docker_inspect_spec,
        .preview_workdir = docker_preview_workdir,
        .check_spec = docker_check_spec,
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
