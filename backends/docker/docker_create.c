/* docker_create.c — creating a sandbox: the image (pulled with progress when missing), the
 * container (its body from docker_spec.c), its read-back against the approved spec, its
 * start (attached first when it runs the agent), and cancel. Adopt (docker_adopt.c) ends
 * through the same steps. */
#include <stdlib.h>
#include <string.h>

#include "backends/docker/docker_int.h"
#include "policy/policy.h"

/* Creates and adopts whose cb is pending, for cancel(ctx). */
struct list docker_creates = {&docker_creates, &docker_creates};

/* A new sandbox object in state "creating", with one reference (the create's). */
struct backend_sandbox *
docker_sandbox_new(const char *id)
{
        struct backend_sandbox *sb = xcalloc(1, sizeof(*sb));

        sb->id = xstrdup(id);
        sb->state = xstrdup("creating");
        sb->refs = 1;
        sb->tmpfs = json_array();
        sb->remaps = -1;
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
        json_decref(c->paths);
        json_decref(c->insp);
        json_decref(c->layers);
        json_decref(c->enforced);
        docker_user_free(c);
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
void
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

/* Fails a create after a failed API call (what, status, body, terr as in docker_error). */
void
docker_create_fail_call(struct docker_create *c, const char *what, long status, json_t *body,
                        const char *terr)
{
        docker_error(&c->err, what, status, body, terr);
        docker_create_fail(c);
}

/* The create or adopt succeeded: the sandbox runs and is listed; cb gets it. */
void
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
        docker_user_details(sb, info.details);
        docker_info_sandbox(sb, info.details);
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
bool
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
void
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

/* The created container's binds are what was approved (c->err otherwise): its policy. */
static void
docker_binds_checked(struct docker_create *c)
{
        json_t *body = c->insp;

        if (docker_create_cancelled(c))
                return;
        if (c->err.code || docker_check_policy(c, body) < 0) {
                docker_create_fail(c);
                return;
        }
        free(c->sb->workdir);
        c->sb->workdir = xstrdup(docker_inspect_workdir(body));
        docker_note_user(c->sb, body);
        docker_note_tmpfs(c->sb, body);
        docker_launch(c);
}

static void
docker_inspected_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                    const char *terr)
{
        struct docker_create *c = ctx;

        if (docker_create_cancelled(c))
                return;
        if (status != 200) {
                docker_create_fail_call(c, "inspect container", status, body, terr);
                return;
        }
        c->insp = json_incref(body);
        docker_check_binds(c, body, docker_binds_checked);
}

void
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
        docker_user_prepare(c);
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

/* Whether the inspected image (body) carries the name asked for: dockerd looks a name it has
 * no tag for up as an image ID prefix, which must not hand an unprivileged caller an image of
 * root's that no listed name names. */
static bool
docker_image_named(struct docker_create *c, json_t *body)
{
        char want[512];
        const char *key;
        json_t *e;
        size_t i;

        if (policy_image_familiar(c->image, want, sizeof(want)) < 0)
                return false;
        key = strchr(want, '@') ? "RepoDigests" : "RepoTags";
        json_array_foreach(json_object_get(body, key), i, e)
        {
                if (json_is_string(e) && !strcmp(json_string_value(e), want))
                        return true;
        }
        return false;
}

static void
docker_image_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct docker_create *c = ctx;

        if (docker_create_cancelled(c))
                return;
        if (status == 200 && c->image_named && !docker_image_named(c, body)) {
                sbx_error_backend(&c->err, "docker",
                                  "image '%s': dockerd found an image that does not carry this "
                                  "name (an ID prefix match); name an image by a tag it has",
                                  c->image);
                docker_create_fail(c);
        } else if (status == 200) {
                docker_create_container(c);
        } else if (status == 404 && c->no_pull) {
                sbx_error_backend(&c->err, "docker",
                                  "image '%s' is not on the docker host, and [backend.docker] "
                                  "allow_pull is off for callers that are neither root nor the "
                                  "daemon's user: an operator pulls it (docker pull %s) or sets "
                                  "allow_pull = true",
                                  c->image, c->image);
                docker_create_fail(c);
        } else if (status == 404) {
                docker_pull(c);
        } else {
                docker_create_fail_call(c, "inspect image", status, body, terr);
        }
}

/* backend_ops.create: the image (pulled if missing), the container, its read-back, its start. */
void
docker_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
              backend_create_cb cb)
{
        struct docker_create *c = xcalloc(1, sizeof(*c));

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
        c->no_pull = spec->no_pull;
        c->image_named = spec->image_named;
        c->owner_id = spec->owner;
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
        c->sb->unprivileged = docker_user_unprivileged(spec->owner);
        c->body = docker_body(c, spec, &c->err);
        if (!c->body) {
                docker_create_fail(c);
                return;
        }
        docker_user_note(c, spec);
        docker_user_decide(c);
}

/* The image the container is made from: inspected, pulled when missing. */
void
docker_create_image(struct docker_create *c)
{
        char *q = http_escape(c->image);
        char *path = xasprintf("/images/%s/json", q);

        if (docker_call("GET", path, NULL, NULL, 0, NULL, docker_image_cb, c) < 0) {
                sbx_error_backend(&c->err, "docker", "cannot start an API request");
                docker_create_fail(c);
        }
        free(path);
        free(q);
}

/* Abandons the create or adopt of ctx at its next step; one waiting for the agent now. */
void
docker_cancel(void *ctx)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &docker_creates)
        {
                struct docker_create *c = LIST_ENTRY(pos, struct docker_create, link);
                if (c->ctx != ctx || c->cancelled)
                        continue;
                c->cancelled = true;
                if (docker_check_binds_cancel(c)) {
                        docker_create_cancelled(c);
                } else if (c->pull) {
                        http_cancel(c->pull); /* no on_done follows */
                        c->pull = NULL;
                        docker_create_cancelled(c);
                } else if (c->sb->creating == c && !c->starting) {
                        docker_create_cancelled(c); /* it closes the session */
                }
                return;
        }
}
