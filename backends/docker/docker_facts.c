/* docker_facts.c — what the container checks need to know before a create: every named volume
 * the spec mentions (GET /volumes/{name}: a local volume with o=bind,device=/etc looks like any
 * other by its name) and every container of VolumesFrom (GET /containers/{name}/json: its
 * mounts are inherited), then the volumes those containers mount. */
#include <string.h>

#include "backends/docker/docker.h"
#include "backends/docker/docker_int.h"
#include "backends/http.h"
#include "policy/policy.h"

#define FACTS_MAX_NAMES 64 /* of each kind; the policy refuses longer lists anyway */

struct docker_facts {
        json_t *out;  /* {volumes: {}, containers: {}} */
        json_t *vols; /* volume names still to inspect */
        int pending;
        bool volumes_asked;
        void *ctx;
        backend_facts_cb cb;
        struct sbx_error err;
};

struct docker_fact_one {
        struct docker_facts *f;
        char *name;
        bool container;
};

static void facts_done(struct docker_facts *f);

static void
facts_add_name(json_t *names, const char *name)
{
        if (name && policy_container_name_ok(name) && json_object_size(names) < FACTS_MAX_NAMES)
                json_object_set_new(names, name, json_true());
}

/* Names of volumes in mounts, HostConfig.Mounts and Binds, and of VolumesFrom containers. */
static void
facts_names(json_t *spec, json_t *vols, json_t *ctrs)
{
        json_t *hc = json_object_get(json_object_get(spec, "docker"), "host_config"), *m;
        size_t i;

        json_array_foreach(json_object_get(spec, "mounts"), i, m)
        {
                const char *t = json_string_value(json_object_get(m, "type"));
                if (t && !strcmp(t, "volume"))
                        facts_add_name(vols, json_string_value(json_object_get(m, "source")));
        }
        json_array_foreach(json_object_get(hc, "Mounts"), i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Type"));
                if (t && !strcmp(t, "volume"))
                        facts_add_name(vols, json_string_value(json_object_get(m, "Source")));
        }
        json_array_foreach(json_object_get(hc, "Binds"), i, m)
        {
                const char *b = json_string_value(m);
                char *n = b && b[0] != '/' ? xstrndup(b, strcspn(b, ":")) : NULL;
                if (n && b[strlen(n)] == ':')
                        facts_add_name(vols, n);
                free(n);
        }
        json_array_foreach(json_object_get(hc, "VolumesFrom"), i, m)
        {
                const char *s = json_string_value(m);
                char *n = s ? xstrndup(s + (s[0] == '/'), strcspn(s + (s[0] == '/'), ":")) : NULL;
                facts_add_name(ctrs, n);
                free(n);
        }
}

static void
facts_one_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct docker_fact_one *o = ctx;
        struct docker_facts *f = o->f;
        json_t *m;
        size_t i;

        if (status == 200 && body) {
                json_object_set(json_object_get(f->out, o->container ? "containers" : "volumes"),
                                o->name, body);
                json_array_foreach(o->container ? json_object_get(body, "Mounts") : NULL, i, m)
                        facts_add_name(f->vols, json_string_value(json_object_get(m, "Name")));
        } else if (status != 404 && !f->err.code) {
                docker_error(&f->err, o->container ? "inspect container" : "inspect volume", status,
                             body, terr);
        }
        free(o->name);
        free(o);
        facts_done(f);
}

static void
facts_ask(struct docker_facts *f, const char *name, bool container)
{
        struct docker_fact_one *o = xcalloc(1, sizeof(*o));
        char *q = http_escape(name);
        char *path = xasprintf(container ? "/containers/%s/json" : "/volumes/%s", q);

        o->f = f;
        o->name = xstrdup(name);
        o->container = container;
        f->pending++;
        if (docker_call("GET", path, NULL, NULL, 0, NULL, facts_one_cb, o) < 0)
                facts_one_cb(o, 0, NULL, NULL, 0, "docker backend not initialised");
        free(path);
        free(q);
}

/* Containers first (their volumes join the list), then the volumes, then cb. */
static void
facts_done(struct docker_facts *f)
{
        const char *name;
        json_t *x;

        if (--f->pending > 0)
                return;
        if (!f->volumes_asked && !f->err.code) {
                f->volumes_asked = true;
                f->pending = 1;
                json_object_foreach(f->vols, name, x) facts_ask(f, name, false);
                facts_done(f);
                return;
        }
        if (f->err.code)
                f->cb(f->ctx, NULL, &f->err);
        else
                f->cb(f->ctx, json_incref(f->out), NULL); /* new, as docker.h says */
        json_decref(f->out);
        json_decref(f->vols);
        sbx_error_clear(&f->err);
        free(f);
}

/* Inspects the named volumes and VolumesFrom containers of a spec. */
void
docker_inspect_spec(json_t *spec, void *ctx, backend_facts_cb cb)
{
        struct docker_facts *f = xcalloc(1, sizeof(*f));
        json_t *ctrs = json_object(), *x;
        const char *name;

        f->out = json_pack("{s:{},s:{}}", "volumes", "containers");
        f->vols = json_object();
        f->ctx = ctx;
        f->cb = cb;
        f->pending = 1;
        facts_names(spec, f->vols, ctrs);
        json_object_foreach(ctrs, name, x) facts_ask(f, name, true);
        json_decref(ctrs);
        facts_done(f);
}

/* ---- the workdir a create would give (policy.check before the default sandbox exists) ---- */

/* See docker_int.h. */
const char *
docker_inspect_workdir(json_t *body)
{
        const char *wd =
                json_string_value(json_object_get(json_object_get(body, "Config"), "WorkingDir"));

        return wd && *wd ? wd : "/";
}

struct docker_wd {
        void *ctx;
        backend_workdir_cb cb;
};

static void
docker_preview_image_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                        const char *terr)
{
        struct docker_wd *w = ctx;

        /* an image not on the host (the create pulls it) or no answer: not known */
        w->cb(w->ctx, status == 200 && body ? docker_inspect_workdir(body) : NULL);
        free(w);
}

/* The spec's workdir, else the image's WorkingDir ("/" when it has none): what the created
 * container reports (docker_create.c). */
void
docker_preview_workdir(const struct sandbox_spec *spec, void *ctx, backend_workdir_cb cb)
{
        struct docker_wd *w;
        char *q, *path;

        if (spec->workdir) {
                cb(ctx, spec->workdir);
                return;
        }
        w = xcalloc(1, sizeof(*w));
        *w = (struct docker_wd){.ctx = ctx, .cb = cb};
        q = http_escape(spec->image ? spec->image : docker.default_image);
        path = xasprintf("/images/%s/json", q);
        if (docker_call("GET", path, NULL, NULL, 0, NULL, docker_preview_image_cb, w) < 0)
                docker_preview_image_cb(w, 0, NULL, NULL, 0, "docker backend not initialised");
        free(path);
        free(q);
}
