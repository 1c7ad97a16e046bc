/* docker_adopt.c — a sandbox after a daemon restart and at its end: save (what the record
 * keeps), adopt (the container taken back only if it is still this sandbox's), destroy,
 * and at start-up the removal of this instance's containers that no record names. */
#include <stdlib.h>
#include <string.h>

#include "backends/docker/docker_int.h"

#define DOCKER_LIST_TIMEOUT_MS 30000 /* the start-up listing of containers */

/* ---- save / adopt / destroy ---- */

/* backend_ops.save: what adopt needs after a restart (new object). */
json_t *
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
        docker_note_user(c->sb, body);
        docker_note_tmpfs(c->sb, body);
        c->host_access = docker_host_mounts(body, c->sb->use_agent) > 0;
        /* files survive a stop; processes do not */
        docker_user_adopt(c, json_is_true(json_object_get(st, "Running")) ? docker_create_done
                                                                          : docker_launch);
}

/* backend_ops.adopt: takes the recorded container back if it is still this sandbox's. */
void
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
        c->sb->unprivileged = docker_user_unprivileged(spec->owner);
        docker_user_note(c, spec);
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

/* backend_ops.destroy: removes the container (forced, with its anonymous volumes). */
void
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
void
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
