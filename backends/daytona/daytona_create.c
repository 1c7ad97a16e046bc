/* daytona_create.c — making a sandbox ready: POST /sandbox (or taking a parked persistent one
 * over), polling its state with progress until it runs, then the toolbox (home, working
 * directory, a first session). Re-adoption after a restart runs the same machine from a GET. */
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_int.h"

#define CREATE_POLL_FIRST_MS 100 /* ×1.1 per poll up to 1 s: the SDK's pace */
#define CREATE_POLL_MAX_MS   1000
#define CREATE_POSTS         3

struct create {
        struct list link; /* in cr_all */
        struct backend_sandbox *sb;
        void *ctx;
        backend_progress_cb progress;
        backend_create_cb cb;
        struct daytona_spec spec; /* body and labels (adopt: none) */
        json_t *enforced;
        char *last_state;
        char *want_workdir;
        uint64_t deadline;
        unsigned polls, posts;
        uv_timer_t timer;
        bool timer_init;
        bool adopting, created;
        bool cancel_wanted; /* backend_ops.cancel: ends at the next step */
        struct sbx_error err;
};

/* Creates and adoptions under way, for cancel. */
static struct list cr_all = {&cr_all, &cr_all};

static void cr_poll(struct create *c);
static void cr_fail(struct create *c);
static void cr_post(struct create *c);
static void cr_toolbox(struct create *c);

/* ---- the end ---- */

static void
cr_free_cb(uv_handle_t *h)
{
        free(h->data);
}

static void
cr_free(struct create *c)
{
        list_del(&c->link);
        json_decref(c->spec.body);
        json_decref(c->spec.labels);
        json_decref(c->enforced);
        free(c->last_state);
        free(c->want_workdir);
        sbx_error_clear(&c->err);
        if (c->timer_init)
                uv_close((uv_handle_t *) &c->timer, cr_free_cb);
        else
                free(c);
}

static void
cr_fail_final(struct create *c)
{
        c->cb(c->ctx, NULL, NULL, &c->err);
        daytona_sandbox_unref(c->sb);
        cr_free(c);
}

static void
cr_deleted_cb(void *ctx, const struct daytona_res *res)
{
        cr_fail_final(ctx);
}

/* Fails the create (c->err); a sandbox it made on Daytona is deleted first. */
static void
cr_fail(struct create *c)
{
        struct daytona_req r = {.method = "DELETE", .idempotent = true};

        if (!c->created || !c->sb->dt_id) {
                cr_fail_final(c);
                return;
        }
        daytona_send(&r, daytona_api_url("/sandbox/%s", c->sb->dt_id), cr_deleted_cb, c, NULL);
}

static void
cr_fail_res(struct create *c, const char *what, const struct daytona_res *res)
{
        daytona_error(&c->err, what, res, c->sb->dt_id != NULL);
        cr_fail(c);
}

static void
cr_done(struct create *c)
{
        struct backend_sandbox *sb = c->sb;
        struct sandbox_info info = {0};

        list_add_tail(&daytona.sandboxes, &sb->link);
        info.workdir = sb->workdir;
        info.image = sb->image ? sb->image : sb->snapshot;
        info.host_access = false;
        info.runtime_dir = daytona.remote_dir; /* the shell state of `command` execs too */
        info.home = sb->home;                  /* GET /user-home-dir */
        info.enforced = c->enforced;
        info.details = json_pack("{s:s,s:s?,s:s?,s:s?,s:b,s:O?}", "sandbox_id", sb->dt_id, "name",
                                 sb->dt_name, "state", sb->state, "user", sb->user, "persistent",
                                 sb->persistent, "labels", c->spec.labels);
        c->cb(c->ctx, sb, &info, NULL);
        json_decref(info.details);
        cr_free(c);
}

/* ---- cancel ---- */

/* Called at each step: after a cancel the create ends here, and what it made on Daytona is
 * deleted first (cr_fail). True when it ended. */
static bool
cr_cancelled(struct create *c)
{
        if (!c->cancel_wanted)
                return false;
        sbx_error_clear(&c->err);
        sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "cancelled"),
                      "the %s of daytona sandbox %s was cancelled",
                      c->adopting ? "adoption" : "creation", c->sb->id);
        cr_fail(c);
        return true;
}

static void
cr_timer_init(struct create *c)
{
        if (c->timer_init)
                return;
        uv_timer_init(daytona.loop, &c->timer);
        c->timer.data = c;
        c->timer_init = true;
}

static void
cr_timer_cb(uv_timer_t *t)
{
        if (!cr_cancelled(t->data))
                cr_poll(t->data);
}

/* Abandons the create or adoption started with ctx: the call in flight ends it when it
 * comes back; a wait between polls is cut short (never from inside this call). */
void
daytona_cancel(void *ctx)
{
        struct list *l, *tmp;

        LIST_FOREACH_SAFE(l, tmp, &cr_all)
        {
                struct create *c = LIST_ENTRY(l, struct create, link);
                if (c->ctx != ctx || c->cancel_wanted)
                        continue;
                c->cancel_wanted = true;
                if (c->timer_init && uv_is_active((uv_handle_t *) &c->timer))
                        uv_timer_start(&c->timer, cr_timer_cb, 0, 0);
        }
}

/* ---- polling until started ---- */

static void
cr_later(struct create *c)
{
        double d = CREATE_POLL_FIRST_MS;

        for (unsigned i = 0; i < c->polls && d < CREATE_POLL_MAX_MS; i++)
                d *= 1.1;
        cr_timer_init(c);
        c->polls++;
        uv_timer_start(&c->timer, cr_timer_cb, (uint64_t) MIN(d, CREATE_POLL_MAX_MS), 0);
}

/* sandbox.progress "sandbox <id>: <what>". */
static void
cr_progress(struct create *c, const char *phase, const char *what)
{
        char *msg;

        if (!c->progress)
                return;
        msg = xasprintf("sandbox %s: %s", c->sb->dt_id, what);
        c->progress(c->ctx, phase, msg, -1, -1);
        free(msg);
}

static void
cr_started_cb(void *ctx, const struct daytona_res *res)
{
        struct create *c = ctx;

        if (cr_cancelled(c))
                return;
        /* 409: a state change was under way; the polling sees where it ends. */
        if (res->status != 200 && res->status != 409) {
                cr_fail_res(c, "start sandbox", res);
                return;
        }
        cr_later(c);
}

static void
cr_start(struct create *c)
{
        struct daytona_req r = {.method = "POST", .idempotent = true};

        cr_progress(c, "start", "starting it");
        daytona_send(&r, daytona_api_url("/sandbox/%s/start", c->sb->dt_id), cr_started_cb, c,
                     NULL);
}

/* A state from which the sandbox will not start. */
static void
cr_unusable(struct create *c, enum daytona_class cl, const char *state, json_t *o)
{
        const char *why = json_string_value(json_object_get(o, "errorReason"));

        sbx_error_set(
                &c->err, cl == DAYTONA_GONE ? SBX_E_UNUSABLE : SBX_E_BACKEND,
                json_pack("{s:s,s:s,s:s?}", "backend", DAYTONA_NAME, "state", state, "reason", why),
                "daytona: sandbox %s is in state '%s': %s", c->sb->dt_id, state,
                why ? why : "no reason given");
        cr_fail(c);
}

/* One Sandbox object seen while creating or re-adopting. */
static void
cr_state(struct create *c, json_t *o)
{
        const char *state, *phase;
        enum daytona_class cl;

        if (cr_cancelled(c))
                return;
        if (daytona_sandbox_take(c->sb, o, &c->err) < 0) {
                cr_fail(c);
                return;
        }
        state = c->sb->state;
        cl = daytona_state_class(state, &phase);
        if (!c->last_state || strcmp(c->last_state, state)) {
                daytona_sandbox_set(&c->last_state, state);
                cr_progress(c, phase, state);
        }
        if (cl == DAYTONA_RUNNING || (cl == DAYTONA_STOPPED && c->adopting))
                cr_toolbox(c); /* an adopted stopped sandbox is started at its next exec */
        else if (cl == DAYTONA_STOPPED)
                cr_start(c);
        else if (cl == DAYTONA_FAILED || cl == DAYTONA_GONE)
                cr_unusable(c, cl, state, o);
        else if (util_now_ms() < c->deadline)
                cr_later(c);
        else {
                sbx_error_backend(&c->err, DAYTONA_NAME,
                                  "sandbox %s is still '%s' after %lld s (create_timeout_s)",
                                  c->sb->dt_id, state, (long long) daytona.create_timeout_s);
                cr_fail(c);
        }
}

static void
cr_polled_cb(void *ctx, const struct daytona_res *res)
{
        struct create *c = ctx;

        if (res->status != 200) {
                cr_fail_res(c, "get sandbox", res);
                return;
        }
        cr_state(c, res->body);
}

static void
cr_poll(struct create *c)
{
        struct daytona_req r = {.idempotent = true};

        daytona_send(&r, daytona_api_url("/sandbox/%s", c->sb->dt_id), cr_polled_cb, c, NULL);
}

/* ---- the toolbox: home, working directory, a first session ---- */

static void
cr_session_cb(void *ctx, struct daytona_session *s, const struct sbx_error *err)
{
        struct create *c = ctx;

        if (!err && c->cancel_wanted)
                daytona_session_put(s, NULL, false);
        if (cr_cancelled(c))
                return;
        if (err) {
                sbx_error_set(&c->err, err->code, json_incref(err->data), "%s", err->message);
                sbx_error_prefix(&c->err, "the sandbox's toolbox does not answer");
                cr_fail(c);
                return;
        }
        daytona_session_put(s, NULL, true);
        cr_done(c);
}

static void
cr_dir_cb(void *ctx, const struct daytona_res *res)
{
        struct create *c = ctx;
        const char *dir = json_string_value(json_object_get(res->body, "dir"));
        bool home = !c->sb->home, made = !home && c->want_workdir;

        if (cr_cancelled(c))
                return;
        if (res->status / 100 != 2 || (!made && (!dir || dir[0] != '/'))) {
                cr_fail_res(c, home ? "get the home directory" : "set up the working directory",
                            res);
                return;
        }
        if (home)
                c->sb->home = xstrdup(dir);
        else
                c->sb->workdir = xstrdup(made ? c->want_workdir : dir);
        cr_toolbox(c);
}

/* Next step once the sandbox runs: GET /user-home-dir, then the working directory (POST
 * /files/folder for a requested one, else GET /work-dir), then a session. */
static void
cr_toolbox(struct create *c)
{
        struct daytona_req r = {.idempotent = true};
        char *url, *q;

        if (!c->sb->toolbox) {
                sbx_error_backend(&c->err, DAYTONA_NAME,
                                  "the API gave no toolboxProxyUrl for sandbox %s", c->sb->dt_id);
                cr_fail(c);
                return;
        }
        if (c->sb->home && c->sb->workdir) {
                if (c->adopting)
                        cr_done(c);
                else
                        daytona_session_get(c->sb, c, cr_session_cb);
                return;
        }
        if (!c->sb->home) {
                url = daytona_tb_url(c->sb, "/user-home-dir");
        } else if (c->want_workdir) {
                q = http_escape(c->want_workdir);
                url = daytona_tb_url(c->sb, "/files/folder?path=%s&mode=0755", q);
                r.method = "POST";
                free(q);
        } else {
                url = daytona_tb_url(c->sb, "/work-dir");
        }
        daytona_send(&r, url, cr_dir_cb, c, NULL);
}

/* ---- POST, and finding the sandbox again after an unclear answer ---- */

static void
cr_found_cb(void *ctx, const struct daytona_res *res)
{
        struct create *c = ctx;

        if (res->status == 404 && c->posts < CREATE_POSTS) {
                cr_post(c); /* the first attempt did not make it: again */
                return;
        }
        if (res->status != 200 || !daytona_sandbox_ours(res->body, c->sb->id)) {
                sbx_error_backend(&c->err, DAYTONA_NAME,
                                  "create sandbox: no clear answer, and sandbox %s is not ours "
                                  "(HTTP %ld)",
                                  json_string_value(json_object_get(c->spec.body, "name")),
                                  res->status);
                cr_fail(c);
                return;
        }
        c->created = true;
        cr_state(c, res->body);
}

static void
cr_posted_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_req r = {.idempotent = true};
        struct create *c = ctx;

        if (res->ambiguous || res->status == 409) { /* GET it by name */
                daytona_send(&r,
                             daytona_api_url("/sandbox/%s", json_string_value(json_object_get(
                                                                    c->spec.body, "name"))),
                             cr_found_cb, c, NULL);
                return;
        }
        if (res->status != 200 && res->status != 201) {
                cr_fail_res(c, "create sandbox", res);
                return;
        }
        c->created = true;
        cr_state(c, res->body);
}

/* POST /sandbox: not idempotent by itself; an unclear answer is settled by the name. */
static void
cr_post(struct create *c)
{
        struct daytona_req r = {.method = "POST", .json = c->spec.body};

        if (cr_cancelled(c))
                return;
        if (c->progress && !c->posts)
                c->progress(c->ctx, "start", "creating the sandbox on Daytona", -1, -1);
        c->posts++;
        daytona_send(&r, daytona_api_url("/sandbox"), cr_posted_cb, c, NULL);
}

/* ---- a persistent sandbox of that owner and name is resumed ---- */

static void
cr_relabelled_cb(void *ctx, const struct daytona_res *res)
{
        struct create *c = ctx;

        if (res->status != 200) {
                cr_fail_res(c, "relabel the resumed sandbox", res);
                return;
        }
        cr_poll(c);
}

/* Takes a parked sandbox over: its labels now name the new sandbox id. */
static void
cr_resume_parked(struct create *c, json_t *o)
{
        struct daytona_req r = {.method = "PUT", .idempotent = true};

        if (daytona_sandbox_take(c->sb, o, &c->err) < 0) {
                cr_fail(c);
                return;
        }
        if (c->progress)
                c->progress(c->ctx, "start", "resuming the persistent sandbox of that name", -1,
                            -1);
        r.json = json_pack("{s:O}", "labels", c->spec.labels);
        daytona_send(&r, daytona_api_url("/sandbox/%s/labels", c->sb->dt_id), cr_relabelled_cb, c,
                     NULL);
        json_decref(r.json);
}

static void
cr_parked_cb(void *ctx, const struct daytona_res *res)
{
        struct create *c = ctx;
        const char *phase;
        json_t *o;
        size_t i;

        if (cr_cancelled(c))
                return;
        if (res->status != 200) {
                cr_fail_res(c, "look for a persistent sandbox of that name", res);
                return;
        }
        json_array_foreach(json_object_get(res->body, "items"), i, o)
        {
                enum daytona_class cl =
                        daytona_state_class(json_string_value(json_object_get(o, "state")), &phase);
                if (cl != DAYTONA_GONE && cl != DAYTONA_FAILED) {
                        cr_resume_parked(c, o);
                        return;
                }
        }
        cr_post(c);
}

/* ---- entry points ---- */

static struct create *
cr_new(const struct sandbox_spec *spec, void *ctx, backend_create_cb cb)
{
        struct create *c = xcalloc(1, sizeof(*c));

        c->ctx = ctx;
        c->cb = cb;
        list_add_tail(&cr_all, &c->link);
        c->sb = daytona_sandbox_new(spec->id);
        c->enforced = daytona_spec_enforced(spec);
        c->deadline = util_now_ms() + (uint64_t) daytona.create_timeout_s * 1000;
        return c;
}

/* Whether the backend can work at all (a key, initialised); else c->err says why. */
static bool
cr_usable(struct create *c)
{
        const char *why = daytona.key_reason ? daytona.key_reason : "not initialised";

        if (daytona.initialised && daytona.auth)
                return true;
        sbx_error_set(&c->err, SBX_E_BACKEND_UNAVAILABLE,
                      json_pack("{s:s,s:s,s:s?}", "backend", DAYTONA_NAME, "reason", why, "hint",
                                daytona.key_hint),
                      "backend daytona is unavailable: %s", why);
        return false;
}

/* Creates a sandbox (or resumes the persistent one of that owner and name). */
void
daytona_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
               backend_create_cb cb)
{
        struct create *c = cr_new(spec, ctx, cb);
        struct daytona_req r = {.idempotent = true};
        char *q;

        c->progress = progress;
        if (!cr_usable(c) || daytona_spec_build(spec, &c->spec, &c->err) < 0) {
                cr_fail(c);
                return;
        }
        c->sb->persistent = c->spec.persistent;
        daytona_sandbox_set(&c->sb->image, c->spec.image);
        daytona_sandbox_set(&c->sb->snapshot, c->spec.snapshot);
        c->want_workdir = spec->workdir ? xstrdup(spec->workdir) : NULL;
        if (!c->sb->persistent) {
                cr_post(c);
                return;
        }
        q = daytona_spec_parked_query(spec);
        daytona_send(&r, daytona_api_url("/sandbox?labels=%s&limit=10", q), cr_parked_cb, c, NULL);
        free(q);
}

static void
cr_adopt_cb(void *ctx, const struct daytona_res *res)
{
        struct create *c = ctx;

        /* Never take over a sandbox that is not this one (a wrong record, a reused id). */
        if (res->status == 200 && !daytona_sandbox_ours(res->body, c->sb->id)) {
                sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "removed"),
                              "daytona sandbox %s is not sandbox %s's", c->sb->dt_id, c->sb->id);
                cr_fail(c);
                return;
        }
        cr_polled_cb(c, res);
}

/* Re-adopts a recorded sandbox. */
void
daytona_adopt(const struct sandbox_spec *spec, json_t *record, void *ctx, backend_create_cb cb)
{
        static const char *const fields[] = {"home", "workdir", "image", "snapshot"};
        struct create *c = cr_new(spec, ctx, cb);
        const char *id = json_string_value(json_object_get(record, "sandbox_id"));
        char **dst[] = {&c->sb->home, &c->sb->workdir, &c->sb->image, &c->sb->snapshot};
        struct daytona_req r = {.idempotent = true};

        c->adopting = true;
        if (!cr_usable(c) || !daytona_id_ok(id)) {
                if (!c->err.code)
                        sbx_error_backend(&c->err, DAYTONA_NAME,
                                          "cannot adopt: the record has no sandbox_id");
                cr_fail(c);
                return;
        }
        c->sb->dt_id = xstrdup(id);
        c->sb->persistent = json_is_true(json_object_get(record, "persistent"));
        for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
                daytona_sandbox_set(dst[i], json_string_value(json_object_get(record, fields[i])));
        daytona_send(&r, daytona_api_url("/sandbox/%s", id), cr_adopt_cb, c, NULL);
}
