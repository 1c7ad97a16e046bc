/* daytona_sandbox.c — the sandbox object, what Daytona's states mean, save and destroy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_int.h"

static const struct {
        const char *state;
        enum daytona_class c;
        const char *phase;
} sb_states[] = {
        {"started", DAYTONA_RUNNING, "start"},       {"stopped", DAYTONA_STOPPED, "start"},
        {"archived", DAYTONA_STOPPED, "start"},      {"paused", DAYTONA_STOPPED, "start"},
        {"error", DAYTONA_FAILED, "start"},          {"build_failed", DAYTONA_FAILED, "build"},
        {"destroyed", DAYTONA_GONE, "start"},        {"destroying", DAYTONA_GONE, "start"},
        {"pending_build", DAYTONA_BUSY, "build"},    {"building_snapshot", DAYTONA_BUSY, "build"},
        {"pulling_snapshot", DAYTONA_BUSY, "build"}, {"creating", DAYTONA_BUSY, "start"},
        {"starting", DAYTONA_BUSY, "start"},         {"restoring", DAYTONA_BUSY, "start"},
        {"resuming", DAYTONA_BUSY, "start"},
};

/* The class of a Daytona state. */
enum daytona_class
daytona_state_class(const char *state, const char **phase)
{
        *phase = "start";
        for (size_t i = 0; state && i < ARRAY_SIZE(sb_states); i++) {
                if (!strcmp(state, sb_states[i].state)) {
                        *phase = sb_states[i].phase;
                        return sb_states[i].c;
                }
        }
        return DAYTONA_BUSY; /* stopping, archiving, resizing, unknown, …: it settles */
}

/* A new sandbox object. */
struct backend_sandbox *
daytona_sandbox_new(const char *id)
{
        struct backend_sandbox *sb = xcalloc(1, sizeof(*sb));

        sb->id = xstrdup(id);
        sb->refs = 1;
        list_init(&sb->link);
        list_init(&sb->idle);
        list_init(&sb->draining);
        list_init(&sb->waiters);
        return sb;
}

/* Takes a reference. */
void
daytona_sandbox_ref(struct backend_sandbox *sb)
{
        sb->refs++;
}

/* Drops a reference; the last frees. */
void
daytona_sandbox_unref(struct backend_sandbox *sb)
{
        if (!sb || --sb->refs > 0)
                return;
        list_del(&sb->link);
        free(sb->id);
        free(sb->dt_id);
        free(sb->dt_name);
        free(sb->toolbox);
        free(sb->workdir);
        free(sb->home);
        free(sb->user);
        free(sb->image);
        free(sb->snapshot);
        free(sb->state);
        json_decref(sb->spent);
        free(sb);
}

/* Replaces a string field. */
void
daytona_sandbox_set(char **field, const char *v)
{
        free(*field);
        *field = v ? xstrdup(v) : NULL;
}

/* <toolboxProxyUrl>/<id>, only over https or to this machine: the key goes with every call. */
static int
sb_toolbox_url(struct backend_sandbox *sb, const char *proxy, const char *id, struct sbx_error *err)
{
        size_t n = strlen(proxy);
        char *url;

        while (n && proxy[n - 1] == '/')
                n--;
        url = xasprintf("%.*s/%s", (int) n, proxy, id);
        if (!daytona_url_ok(url)) {
                sbx_error_backend(err, DAYTONA_NAME,
                                  "the sandbox's toolboxProxyUrl is neither https nor local; "
                                  "not sending the key there");
                free(url);
                return -EPERM;
        }
        free(sb->toolbox);
        sb->toolbox = url;
        return 0;
}

/* Takes what a Sandbox object says. */
int
daytona_sandbox_take(struct backend_sandbox *sb, json_t *o, struct sbx_error *err)
{
        const char *id = json_string_value(json_object_get(o, "id"));
        const char *proxy = json_string_value(json_object_get(o, "toolboxProxyUrl"));
        const char *state = json_string_value(json_object_get(o, "state"));

        if (!daytona_id_ok(id) || !state) {
                sbx_error_backend(err, DAYTONA_NAME,
                                  "the API answered without a usable sandbox id or state");
                return -EPROTO;
        }
        if (sb->dt_id && strcmp(sb->dt_id, id)) {
                sbx_error_backend(err, DAYTONA_NAME, "the API answered for another sandbox");
                return -EPROTO;
        }
        daytona_sandbox_set(&sb->dt_id, id);
        daytona_sandbox_set(&sb->state, state);
        if (json_is_string(json_object_get(o, "name")))
                daytona_sandbox_set(&sb->dt_name, json_string_value(json_object_get(o, "name")));
        if (json_is_string(json_object_get(o, "user")))
                daytona_sandbox_set(&sb->user, json_string_value(json_object_get(o, "user")));
        return proxy ? sb_toolbox_url(sb, proxy, id, err) : 0;
}

/* Whether the Sandbox object is the one of sandboxd sandbox sbx_id. */
bool
daytona_sandbox_ours(json_t *o, const char *sbx_id)
{
        const char *l = json_string_value(
                json_object_get(json_object_get(o, "labels"), "sandboxd.sandbox"));

        return l && !strcmp(l, sbx_id);
}

/* What adopt needs after a restart. */
json_t *
daytona_save(struct backend_sandbox *sb)
{
        return json_pack("{s:s,s:s?,s:s?,s:s?,s:s?,s:s?,s:s?,s:b}", "sandbox_id", sb->dt_id, "name",
                         sb->dt_name, "home", sb->home, "workdir", sb->workdir, "user", sb->user,
                         "image", sb->image, "snapshot", sb->snapshot, "persistent",
                         sb->persistent);
}

struct sb_done {
        struct backend_sandbox *sb;
        void *ctx;
        backend_done_cb cb;
};

static void
sb_destroyed_cb(void *ctx, const struct daytona_res *res)
{
        struct sb_done *d = ctx;
        struct sbx_error err = {0};
        bool stop = d->sb->persistent;

        /* 404: gone already; 400 on stop: it is not running (stopped or archived). */
        if (res->status / 100 != 2 && res->status != 404 && !(stop && res->status == 400))
                daytona_error(&err, stop ? "stop sandbox" : "delete sandbox", res, false);
        d->cb(d->ctx, err.code ? &err : NULL);
        sbx_error_clear(&err);
        daytona_sandbox_unref(d->sb);
        free(d);
}

/* Deletes the sandbox, or stops it when it is persistent (resumed by name later). */
void
daytona_destroy(struct backend_sandbox *bsb, void *ctx, backend_done_cb cb)
{
        struct sb_done *d = xcalloc(1, sizeof(*d));
        struct daytona_req r = {.method = bsb->persistent ? "POST" : "DELETE", .idempotent = true};

        d->sb = bsb;
        d->ctx = ctx;
        d->cb = cb;
        bsb->destroyed = true;
        list_del(&bsb->link);
        daytona_sandbox_quiesce(bsb);
        daytona_send(&r,
                     bsb->persistent ? daytona_api_url("/sandbox/%s/stop", bsb->dt_id)
                                     : daytona_api_url("/sandbox/%s", bsb->dt_id),
                     sb_destroyed_cb, d, NULL);
}

/* The daemon's handles go with the backend; the sandboxes stay on Daytona for adopt. */
void
daytona_sandbox_shutdown(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &daytona.sandboxes)
        {
                struct backend_sandbox *sb = LIST_ENTRY(pos, struct backend_sandbox, link);
                list_del(pos);
                daytona_sandbox_quiesce(sb);
                daytona_sandbox_unref(sb);
        }
}
