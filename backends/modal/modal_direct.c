/* modal_direct.c — direct mode's sandboxes through Modal's control plane: app get-or-create,
 * image get-or-create (and its build stream), sandbox create with tags, task id, terminate,
 * re-adoption, and the orphan search by tag. Execs are in modal_dexec.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/modal/modal_int.h"
#include "backends/modal/modal_pb.h"

#define DIRECT_CALL_MS         60000
#define DIRECT_TASK_WAIT_S     10.0f /* SandboxGetTaskId waits this long on the server */
#define DIRECT_JOIN_WAIT_S     55.0f /* ImageJoinStreaming, as Modal's clients ask */
#define DIRECT_LIST_PAGES      100
#define GENERIC_STATUS_SUCCESS 1

/* What a failed rpc says, for an error message (new). */
static char *
direct_why(const char *method, const struct grpc_status *st)
{
        return xasprintf("%s: %s: %s", method, grpc_code_name(st->code), st->message);
}

static void
direct_fail(struct modal_create *c, const char *method, const struct grpc_status *st)
{
        char *m = direct_why(method, st);

        if (st->code == GRPC_UNAUTHENTICATED || st->code == GRPC_PERMISSION_DENIED)
                sbx_error_set(&c->err, SBX_E_BACKEND_UNAVAILABLE,
                              json_pack("{s:s,s:s,s:s}", "backend", "modal", "reason", m, "hint",
                                        "check the Modal token (backend.list shows where it "
                                        "comes from)"),
                              "backend 'modal' is unavailable: %s", m);
        else
                modal_create_fail(c, "modal", m);
        free(m);
        modal_create_finish(c);
}

static bool
direct_past_deadline(struct modal_create *c, const char *what)
{
        if (util_now_ms() < c->deadline_ms)
                return false;
        modal_create_fail(c, what, "timed out (create_timeout_s in [backend.modal])");
        modal_create_finish(c);
        return true;
}

/* A GenericResult's status and exception (new in *exc, may stay NULL). */
static int
direct_result(const struct pb_field *f, char **exc)
{
        struct pb_reader r;
        struct pb_field g;
        int status = 0;

        pb_sub(f, &r);
        while (pb_next(&r, &g)) {
                if (g.num == 1 && g.wire == PB_VARINT)
                        status = (int) g.varint;
                else if (g.num == 2 && g.wire == PB_LEN && exc) {
                        free(*exc);
                        *exc = pb_strdup(&g);
                }
        }
        return status;
}

/* ---- the steps of a create ---- */

static void direct_image(struct modal_create *c);
static void direct_join(struct modal_create *c);
static void direct_sandbox(struct modal_create *c);
static void direct_task(struct modal_create *c);

static char *
direct_app_key(struct modal_api *a, const char *env, const char *app)
{
        return xasprintf("%s|%s|%s", modal_api_url(a), env ? env : "", app);
}

static void
direct_app_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct modal_create *c = ctx;
        char *key;

        c->rpc = NULL;
        if (st->code != GRPC_OK) {
                direct_fail(c, "AppGetOrCreate", st);
                return;
        }
        free(c->sb->app_id);
        c->sb->app_id = pb_get_string(msg, len, 1);
        if (!c->sb->app_id || !*c->sb->app_id) {
                modal_create_fail(c, "AppGetOrCreate", "no app id in the answer");
                modal_create_finish(c);
                return;
        }
        key = direct_app_key(c->sb->api, c->environment, c->app);
        json_object_set_new(modal.app_ids, key, json_string(c->sb->app_id));
        free(key);
        direct_image(c);
}

/* The app, from the cache or AppGetOrCreate (CREATE_IF_MISSING). */
static void
direct_app(struct modal_create *c, void (*next)(struct modal_create *c))
{
        char *key = direct_app_key(c->sb->api, c->environment, c->app);
        const char *id = json_string_value(json_object_get(modal.app_ids, key));
        struct buf req = {0};

        free(key);
        if (id) {
                c->sb->app_id = xstrdup(id);
                next(c);
                return;
        }
        pb_put_str(&req, 1, c->app);
        pb_put_str(&req, 2, c->environment ? c->environment : "");
        pb_put_varint(&req, 3, 1); /* OBJECT_CREATION_TYPE_CREATE_IF_MISSING */
        c->rpc = modal_api_unary(c->sb->api, "AppGetOrCreate", &req, DIRECT_CALL_MS, direct_app_cb,
                                 c);
        buf_free(&req);
}

/* Reads ImageGetOrCreate's answer: the image id, and whether (and how) it is built. */
static int
direct_image_answer(struct modal_create *c, const unsigned char *msg, size_t len, char **exc)
{
        struct pb_reader r;
        struct pb_field f;
        int status = 0;

        pb_reader_init(&r, msg, len);
        while (pb_next(&r, &f)) {
                if (f.num == 1 && f.wire == PB_LEN) {
                        free(c->image_id);
                        c->image_id = pb_strdup(&f);
                } else if (f.num == 2 && f.wire == PB_LEN) {
                        status = direct_result(&f, exc);
                }
        }
        return status;
}

static void
direct_built(struct modal_create *c, int status, const char *exc)
{
        char *m;

        if (status == GENERIC_STATUS_SUCCESS) {
                c->progress(c->ctx, "image", "image ready", -1, -1);
                direct_sandbox(c);
                return;
        }
        m = xasprintf("building image '%s' failed (status %d)%s%s", c->image, status,
                      exc ? ": " : "", exc ? exc : "");
        sbx_error_backend(&c->err, "modal", "%s", m);
        free(m);
        modal_create_finish(c);
}

static void
direct_image_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct modal_create *c = ctx;
        char *exc = NULL;
        int status;

        c->rpc = NULL;
        if (st->code != GRPC_OK) {
                direct_fail(c, "ImageGetOrCreate", st);
                return;
        }
        status = direct_image_answer(c, msg, len, &exc);
        if (!c->image_id || !*c->image_id) {
                modal_create_fail(c, "ImageGetOrCreate", "no image id in the answer");
                modal_create_finish(c);
        } else if (status == 0) {
                c->progress(c->ctx, "image", "building the image", -1, -1);
                direct_join(c);
        } else {
                direct_built(c, status, exc);
        }
        free(exc);
}

/* ImageGetOrCreate of "FROM <image>". */
static void
direct_image(struct modal_create *c)
{
        struct buf req = {0}, img = {0};
        char *from = xasprintf("FROM %s", c->image);

        pb_put_str(&img, 6, from);
        pb_put_msg(&req, 2, &img);
        pb_put_str(&req, 4, c->sb->app_id);
        if (c->builder_version)
                pb_put_str(&req, 9, c->builder_version);
        c->progress(c->ctx, "image", from, -1, -1);
        c->rpc = modal_api_unary(c->sb->api, "ImageGetOrCreate", &req, DIRECT_CALL_MS,
                                 direct_image_cb, c);
        free(from);
        buf_free(&img);
        buf_free(&req);
}

/* Build log lines become progress notifications. */
static void
direct_join_logs(struct modal_create *c, const struct pb_field *f)
{
        struct pb_reader r;
        struct pb_field g;

        pb_sub(f, &r);
        while (pb_next(&r, &g)) {
                if (g.num == 1 && g.wire == PB_LEN && g.len) {
                        char *line = xstrndup((const char *) g.data, MIN(g.len, (size_t) 4096));
                        line[strcspn(line, "\n")] = '\0';
                        if (*line)
                                c->progress(c->ctx, "image", line, -1, -1);
                        free(line);
                }
        }
}

static void
direct_join_msg(void *ctx, const unsigned char *msg, size_t len)
{
        struct modal_create *c = ctx;
        struct pb_reader r;
        struct pb_field f;

        pb_reader_init(&r, msg, len);
        while (pb_next(&r, &f)) {
                if (f.num == 1 && f.wire == PB_LEN) {
                        char *exc = NULL;
                        int st = direct_result(&f, &exc);
                        if (st) {
                                /* The build's end: kept in c until the stream ends. */
                                free(c->last_entry);
                                c->last_entry = xasprintf("=%d:%s", st, exc ? exc : "");
                        }
                        free(exc);
                } else if (f.num == 2 && f.wire == PB_LEN) {
                        direct_join_logs(c, &f);
                } else if (f.num == 3 && f.wire == PB_LEN && f.len &&
                           !(c->last_entry && c->last_entry[0] == '=')) {
                        free(c->last_entry);
                        c->last_entry = pb_strdup(&f);
                }
        }
}

static void
direct_join_end(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct modal_create *c = ctx;

        c->rpc = NULL;
        if (c->last_entry && c->last_entry[0] == '=') {
                char *colon = strchr(c->last_entry, ':');
                direct_built(c, atoi(c->last_entry + 1), colon && colon[1] ? colon + 1 : NULL);
                return;
        }
        if (st->code != GRPC_OK && !grpc_retryable(st) && st->code != GRPC_DEADLINE_EXCEEDED) {
                direct_fail(c, "ImageJoinStreaming", st);
                return;
        }
        if (!direct_past_deadline(c, "image build"))
                direct_join(c); /* the server's wait ended: join again from the last entry */
}

static void
direct_join(struct modal_create *c)
{
        struct buf req = {0};

        pb_put_str(&req, 1, c->image_id);
        pb_put_float(&req, 2, DIRECT_JOIN_WAIT_S);
        if (c->last_entry)
                pb_put_str(&req, 3, c->last_entry);
        c->rpc = modal_api_stream(c->sb->api, "ImageJoinStreaming", &req,
                                  (long) (DIRECT_JOIN_WAIT_S * 1000) + 10000, direct_join_msg,
                                  direct_join_end, c);
        buf_free(&req);
}

static void
direct_sandbox_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct modal_create *c = ctx;

        c->rpc = NULL;
        c->rpc_keep = false;
        if (st->code != GRPC_OK) {
                direct_fail(c, "SandboxCreate", st);
                return;
        }
        free(c->sb->remote_id);
        c->sb->remote_id = pb_get_string(msg, len, 1);
        if (!c->sb->remote_id || !*c->sb->remote_id || c->cancelled) {
                /* Cancelled meanwhile: finishing terminates what the answer named. */
                modal_create_fail(c, "SandboxCreate", "no sandbox id in the answer");
                modal_create_finish(c);
                return;
        }
        c->progress(c->ctx, "remote", "sandbox created, waiting for it to start", -1, -1);
        direct_task(c);
}

/* The Sandbox definition: sleep forever (commands come as execs), resources, network. */
static void
direct_definition(struct modal_create *c, struct buf *d)
{
        struct buf res = {0}, net = {0};

        pb_put_str(d, 1, "sleep");
        pb_put_str(d, 1, "infinity");
        pb_put_str(d, 3, c->image_id);
        if (c->memory_mb)
                pb_put_varint(&res, 2, (uint64_t) c->memory_mb);
        if (c->milli_cpu)
                pb_put_varint(&res, 3, (uint64_t) c->milli_cpu);
        if (c->disk_mb)
                pb_put_varint(&res, 6, (uint64_t) c->disk_mb);
        pb_put_msg(d, 5, &res);
        pb_put_varint(d, 7, c->lifetime_s);
        pb_put_varint(&net, 1, c->block_network ? 2 : 1); /* BLOCKED : OPEN */
        pb_put_msg(d, 22, &net);
        buf_free(&res);
        buf_free(&net);
}

static void
direct_sandbox(struct modal_create *c)
{
        struct buf req = {0}, def = {0};

        direct_definition(c, &def);
        pb_put_str(&req, 1, c->sb->app_id);
        pb_put_msg(&req, 2, &def);
        pb_put_map_entry(&req, 4, "sandboxd", "1");
        pb_put_map_entry(&req, 4, "sandboxd.instance", modal.instance);
        pb_put_map_entry(&req, 4, "sandboxd.sandbox", c->sb->id);
        c->rpc = modal_api_unary(c->sb->api, "SandboxCreate", &req, DIRECT_CALL_MS,
                                 direct_sandbox_cb, c);
        c->rpc_keep = true; /* a cancel waits for the id it answers, to terminate it */
        buf_free(&def);
        buf_free(&req);
}

static void
direct_ready(struct modal_create *c)
{
        modal_create_finish(c);
}

/* SandboxGetTaskId's answer: 1 with the task id, 0 not yet, -1 finished (c->err set). */
static int
direct_task_answer(struct modal_create *c, const unsigned char *msg, size_t len)
{
        struct pb_reader r;
        struct pb_field f;
        char *exc = NULL;
        int status = -1;

        pb_reader_init(&r, msg, len);
        while (pb_next(&r, &f)) {
                if (f.num == 1 && f.wire == PB_LEN && f.len) {
                        free(c->sb->task_id);
                        c->sb->task_id = pb_strdup(&f);
                } else if (f.num == 2 && f.wire == PB_LEN) {
                        status = direct_result(&f, &exc);
                }
        }
        if (status >= 0) {
                sbx_error_set(&c->err, c->adopting ? SBX_E_UNUSABLE : SBX_E_BACKEND,
                              json_pack("{s:s}", "state", "removed"),
                              "modal sandbox %s has ended (status %d)%s%s", c->sb->remote_id,
                              status, exc ? ": " : "", exc ? exc : "");
                free(exc);
                return -1;
        }
        return c->sb->task_id ? 1 : 0;
}

static void
direct_task_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct modal_create *c = ctx;
        int r;

        c->rpc = NULL;
        if (st->code == GRPC_NOT_FOUND && c->adopting) {
                sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "removed"),
                              "modal sandbox %s is gone", c->sb->remote_id);
                modal_create_finish(c);
                return;
        }
        if (st->code != GRPC_OK) {
                direct_fail(c, "SandboxGetTaskId", st);
                return;
        }
        r = direct_task_answer(c, msg, len);
        if (r < 0) {
                modal_create_finish(c);
        } else if (r == 0) {
                if (!direct_past_deadline(c, "waiting for the sandbox to start"))
                        direct_task(c); /* the server waited already: ask again */
        } else {
                c->sb->router = modal_router_new(c->sb->api, c->sb->task_id);
                if (c->adopting)
                        direct_ready(c);
                else
                        modal_create_probe_workdir(c, direct_ready);
        }
}

static void
direct_task(struct modal_create *c)
{
        struct buf req = {0};

        pb_put_str(&req, 1, c->sb->remote_id);
        pb_put_float(&req, 2, c->adopting ? 0.0f : DIRECT_TASK_WAIT_S);
        pb_put_bool(&req, 3, !c->adopting);
        c->rpc = modal_api_unary(c->sb->api, "SandboxGetTaskId", &req, DIRECT_CALL_MS,
                                 direct_task_cb, c);
        buf_free(&req);
}

static void
direct_create(struct modal_create *c)
{
        direct_app(c, direct_image);
}

/* A call in flight is abandoned (an app, an image build, waiting for the task), except
 * SandboxCreate; without one a helper exec runs: its end finishes c. */
static void
direct_cancel(struct modal_create *c)
{
        if (!c->rpc || c->rpc_keep)
                return;
        modal_rpc_cancel(c->rpc);
        c->rpc = NULL;
        modal_create_finish(c);
}

/* ---- save / adopt / destroy ---- */

static json_t *
direct_save(struct backend_sandbox *sb)
{
        return json_pack("{s:s,s:s?,s:s?}", "server_url", modal_api_url(sb->api), "app_id",
                         sb->app_id, "task_id", sb->task_id);
}

/* Re-adoption: the sandbox must be in the account of today's credentials and still running. */
static void
direct_adopt(struct modal_create *c)
{
        const char *url = json_string_value(json_object_get(c->record, "server_url"));

        c->sb->api = modal_direct_api();
        if (!c->sb->api || !url || strcmp(url, modal_api_url(c->sb->api)) != 0) {
                sbx_error_backend(&c->err, "modal",
                                  "cannot re-adopt modal sandbox %s: it was made through %s, and "
                                  "the daemon has %s",
                                  c->sb->remote_id, url ? url : "an unknown server",
                                  c->sb->api ? "credentials for another server"
                                             : "no direct credentials now");
                c->sb->api = NULL;
                modal_create_finish(c);
                return;
        }
        modal_api_ref(c->sb->api);
        c->sb->app_id = json_string_value(json_object_get(c->record, "app_id"))
                                ? xstrdup(json_string_value(json_object_get(c->record, "app_id")))
                                : NULL;
        direct_task(c);
}

static void
direct_terminated_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        char *why = st->code != GRPC_OK && st->code != GRPC_NOT_FOUND
                            ? direct_why("SandboxTerminate", st)
                            : NULL;

        modal_done_finish(ctx, why);
        free(why);
}

static void
direct_destroy(struct backend_sandbox *sb, void *ctx, backend_done_cb cb)
{
        struct buf req = {0};

        pb_put_str(&req, 1, sb->remote_id);
        modal_api_unary(sb->api, "SandboxTerminate", &req, DIRECT_CALL_MS, direct_terminated_cb,
                        modal_done_new(sb, ctx, cb));
        buf_free(&req);
}

/* ---- orphans ---- */

struct direct_reap {
        struct modal_api *api;
        char **known;
        char *app_id;
        double before;
        int pages, pending, removed;
        void *ctx;
        void (*cb)(void *ctx, int removed, const struct sbx_error *err);
        struct sbx_error err;
};

static void
direct_reap_step(struct direct_reap *rp)
{
        if (--rp->pending > 0)
                return;
        rp->cb(rp->ctx, rp->removed, rp->err.code ? &rp->err : NULL);
        for (size_t i = 0; rp->known && rp->known[i]; i++)
                free(rp->known[i]);
        free(rp->known);
        free(rp->app_id);
        sbx_error_clear(&rp->err);
        modal_api_unref(rp->api);
        free(rp);
}

static void
direct_reap_fail(struct direct_reap *rp, const char *method, const struct grpc_status *st)
{
        char *m = direct_why(method, st);

        if (!rp->err.code)
                sbx_error_backend(&rp->err, "modal", "%s", m);
        free(m);
}

static void
direct_reaped_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct direct_reap *rp = ctx;

        if (st->code == GRPC_OK)
                rp->removed++;
        else if (st->code != GRPC_NOT_FOUND)
                direct_reap_fail(rp, "SandboxTerminate", st);
        direct_reap_step(rp);
}

/* One SandboxInfo: terminated unless its sandboxd.sandbox tag names a known sandbox. */
static void
direct_reap_one(struct direct_reap *rp, const struct pb_field *info)
{
        struct pb_reader r, t;
        struct pb_field f, g;
        char *id = NULL, *owner = NULL;
        bool known = false;

        pb_sub(info, &r);
        while (pb_next(&r, &f)) {
                if (f.num == 1 && f.wire == PB_LEN) {
                        free(id);
                        id = pb_strdup(&f);
                } else if (f.num == 3 && f.wire == PB_FIXED64) {
                        double at = pb_double(&f);
                        if (rp->before == 0 || at < rp->before)
                                rp->before = at;
                } else if (f.num == 6 && f.wire == PB_LEN) {
                        char *name = NULL, *value = NULL;
                        pb_sub(&f, &t);
                        while (pb_next(&t, &g)) {
                                if (g.wire == PB_LEN && (g.num == 1 || g.num == 2)) {
                                        free(g.num == 1 ? name : value);
                                        *(g.num == 1 ? &name : &value) = pb_strdup(&g);
                                }
                        }
                        if (name && !strcmp(name, "sandboxd.sandbox")) {
                                free(owner);
                                owner = value;
                                value = NULL;
                        }
                        free(name);
                        free(value);
                }
        }
        for (size_t i = 0; owner && rp->known && rp->known[i]; i++)
                known |= !strcmp(rp->known[i], owner);
        if (id && *id && !known) {
                struct buf req = {0};
                pb_put_str(&req, 1, id);
                rp->pending++;
                modal_api_unary(rp->api, "SandboxTerminate", &req, DIRECT_CALL_MS, direct_reaped_cb,
                                rp);
                buf_free(&req);
        }
        free(id);
        free(owner);
}

static void direct_reap_list(struct direct_reap *rp);

static void
direct_reap_list_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct direct_reap *rp = ctx;
        struct pb_reader r;
        struct pb_field f;
        double before = rp->before;
        int n = 0;

        if (st->code != GRPC_OK) {
                direct_reap_fail(rp, "SandboxList", st);
                direct_reap_step(rp);
                return;
        }
        pb_reader_init(&r, msg, len);
        while (pb_next(&r, &f)) {
                if (f.num == 1 && f.wire == PB_LEN) {
                        direct_reap_one(rp, &f);
                        n++;
                }
        }
        /* Pages go back in time by creation: the next one ends before the oldest seen. */
        if (n && rp->before != before && ++rp->pages < DIRECT_LIST_PAGES)
                direct_reap_list(rp);
        else
                direct_reap_step(rp);
}

static void
direct_reap_list(struct direct_reap *rp)
{
        struct buf req = {0};

        pb_put_str(&req, 1, rp->app_id);
        if (rp->before > 0)
                pb_put_double(&req, 2, rp->before);
        pb_put_map_entry(&req, 5, "sandboxd.instance", modal.instance);
        modal_api_unary(rp->api, "SandboxList", &req, DIRECT_CALL_MS, direct_reap_list_cb, rp);
        buf_free(&req);
}

static void
direct_reap_app_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct direct_reap *rp = ctx;

        rp->app_id = st->code == GRPC_OK ? pb_get_string(msg, len, 1) : NULL;
        if (!rp->app_id) {
                direct_reap_fail(rp, "AppGetOrCreate", st);
                direct_reap_step(rp);
                return;
        }
        direct_reap_list(rp);
}

/* Terminates tagged sandboxes of this instance that no record knows. */
void
modal_direct_reap(const char *const *known, void *ctx,
                  void (*cb)(void *ctx, int removed, const struct sbx_error *err))
{
        struct direct_reap *rp;
        struct buf req = {0};
        size_t n = 0;

        if (!modal_direct_api()) {
                cb(ctx, 0, NULL); /* no direct credentials: nothing of ours to look for */
                return;
        }
        rp = xcalloc(1, sizeof(*rp));
        rp->api = modal_direct_api();
        modal_api_ref(rp->api);
        rp->ctx = ctx;
        rp->cb = cb;
        rp->pending = 1;
        while (known && known[n])
                n++;
        rp->known = xcalloc(n + 1, sizeof(*rp->known));
        for (size_t i = 0; i < n; i++)
                rp->known[i] = xstrdup(known[i]);
        pb_put_str(&req, 1, modal.app);
        pb_put_varint(&req, 3, 1);
        modal_api_unary(rp->api, "AppGetOrCreate", &req, DIRECT_CALL_MS, direct_reap_app_cb, rp);
        buf_free(&req);
}

const struct modal_mode_ops modal_direct_ops = {
        .name = "direct",
        .create = direct_create,
        .adopt = direct_adopt,
        .cancel = direct_cancel,
        .save = direct_save,
        .destroy = direct_destroy,
        .exec_start = modal_dexec_start,
        .exec_write = modal_dexec_write,
        .exec_signal = modal_dexec_signal,
        .exec_kill = modal_dexec_kill,
        .exec_pause = modal_dexec_pause,
        .exec_resume = modal_dexec_resume,
        .exec_release = modal_dexec_release,
        .exec_save = modal_dexec_save,
        .exec_adopt = modal_dexec_adopt,
        .helper = modal_dexec_helper,
};
