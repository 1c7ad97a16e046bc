/* modal_gateway.c — managed mode: the tool gateway's REST API (Bearer token, JSON), its
 * readiness check, sandboxes, and execs started then polled (the API streams nothing: each
 * poll returns the output so far, stdout and stderr together, and the new part is passed on).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends/modal/modal_int.h"
#include "backends/shell.h"
#include "protocol/codec.h"

#define GW_CALL_MS      60000
#define GW_POLL_TIMEOUT 15000
#define GW_START_TRIES  5
#define GW_FAIL_WINDOW  30000 /* polls may fail this long (a lost link) before the exec is */
#define GW_MAX_BODY     (128u << 20)

static const char *const gw_terminal[] = {"completed", "failed", "cancelled", "timeout"};

/* ---- JSON over HTTP ---- */

typedef void (*gw_cb)(void *ctx, long status, json_t *body, const char *error);

struct gw_call {
        struct list link; /* gw_calls */
        gw_cb cb;
        void *ctx;
        struct http_req *req;
        uv_timer_t timer; /* only to report a call that could not start, on the next turn */
        bool timer_init;
};

/* Calls in flight: at shutdown each one ends with an error, not silently. */
static struct list gw_calls = {&gw_calls, &gw_calls};
static bool gw_stopping;

/* What went wrong, from the transport or the body's error/message/code (new, redacted). */
static char *
gw_error_text(long status, json_t *body, const char *terr)
{
        const char *m = json_string_value(json_object_get(body, "error"));
        char *s, *hit;

        if (!m)
                m = json_string_value(json_object_get(body, "message"));
        if (!m)
                m = json_string_value(json_object_get(body, "code"));
        s = status ? xasprintf("HTTP %ld%s%s", status, m ? ": " : "", m ? m : "")
                   : xasprintf("cannot reach the gateway at %s: %s", modal.gw_url,
                               terr ? terr : "transport error");
        while (modal.gw_token && strlen(modal.gw_token) >= 6 && (hit = strstr(s, modal.gw_token)))
                memset(hit, '*', strlen(modal.gw_token));
        return s;
}

static void
gw_close_cb(uv_handle_t *h)
{
        free(h->data);
}

static void
gw_call_free(struct gw_call *c)
{
        list_del(&c->link);
        if (c->timer_init) {
                uv_timer_stop(&c->timer);
                uv_close((uv_handle_t *) &c->timer, gw_close_cb);
        } else {
                free(c);
        }
}

static void
gw_nostart_cb(uv_timer_t *t)
{
        struct gw_call *c = t->data;

        c->cb(c->ctx, 0, NULL,
              gw_stopping ? "the daemon is shutting down"
                          : "cannot start an HTTP request (is libcurl installed?)");
        gw_call_free(c);
}

static void
gw_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        struct gw_call *c = ctx;
        /* ALLOW_NUL: the output may hold NULs (the shell state blob does). */
        json_t *body =
                res->body_len ? json_loadb(res->body, res->body_len, JSON_ALLOW_NUL, NULL) : NULL;

        list_del(&c->link);
        c->cb(c->ctx, res->error ? 0 : res->status, body, res->error);
        json_decref(body);
        free(c);
}

/* One call; cb follows (never from inside this call) unless gw_cancel comes first. */
static struct gw_call *
gw_call(const char *method, const char *path, json_t *body, const char *idem_key, long timeout_ms,
        gw_cb cb, void *ctx)
{
        static const struct http_cbs cbs = {.on_done = gw_done_cb};
        struct gw_call *c = xcalloc(1, sizeof(*c));
        char *auth = xasprintf("Authorization: Bearer %s", modal.gw_token);
        char *key = idem_key ? xasprintf("x-idempotency-key: %s", idem_key) : NULL;
        const char *hdrs[] = {auth, "Content-Type: application/json", "Accept: application/json",
                              key, NULL};
        char *url = xasprintf("%s%s", modal.gw_url, path);
        char *js = body ? json_dumps(body, JSON_COMPACT) : NULL;
        struct http_req_spec s = {.method = method,
                                  .url = url,
                                  .headers = hdrs,
                                  .body = js,
                                  .body_len = js ? strlen(js) : 0,
                                  .connect_timeout_ms = MIN(timeout_ms, 10000L),
                                  .timeout_ms = timeout_ms,
                                  .max_body = GW_MAX_BODY};

        c->cb = cb;
        c->ctx = ctx;
        list_add_tail(&gw_calls, &c->link);
        if (gw_stopping || http_request(modal.http, &s, &cbs, c, &c->req) < 0) {
                c->req = NULL;
                uv_timer_init(modal.loop, &c->timer);
                c->timer.data = c;
                c->timer_init = true;
                uv_timer_start(&c->timer, gw_nostart_cb, 0, 0);
        }
        free(auth);
        free(key);
        free(url);
        free(js);
        return c;
}

/* Cancels a call: no callback follows. */
static void
gw_cancel(struct gw_call *c)
{
        if (!c->timer_init)
                http_cancel(c->req);
        gw_call_free(c);
}

/* Daemon shutdown: every call in flight ends now with an error; later ones fail at once. */
void
modal_gateway_shutdown(void)
{
        gw_stopping = true;
        while (!list_empty(&gw_calls)) {
                struct gw_call *c = LIST_ENTRY(gw_calls.next, struct gw_call, link);
                gw_cb cb = c->cb;
                void *ctx = c->ctx;
                gw_cancel(c);
                cb(ctx, 0, NULL, "the daemon is shutting down");
        }
}

/* ---- readiness ---- */

struct gw_waiter {
        struct list link;
        void *ctx;
        void (*cb)(void *ctx);
};

static void
gw_ready_cb(void *ctx, long status, json_t *body, const char *error)
{
        free(modal.gw_ready_error);
        modal.gw_ready_error = NULL;
        modal.gw_checking = false;
        modal.gw_ready = status == 200 && json_is_object(body);
        if (modal.gw_ready) {
                modal.gw_ready_at = util_now_ms();
        } else {
                char *why = status == 200 ? xstrdup("the answer is not a JSON object")
                            : error && strstr(error, "imed out")
                                    ? xasprintf("no answer within %llu ms",
                                                (unsigned long long) modal.gw_ready_timeout_ms)
                                    : gw_error_text(status, body, error);
                modal.gw_ready_error = xasprintf("readiness check GET %s%s: %s", modal.gw_url,
                                                 modal.gw_ready_path, why);
                free(why);
        }
        while (!list_empty(&modal.gw_waiters)) {
                struct gw_waiter *w = LIST_ENTRY(modal.gw_waiters.next, struct gw_waiter, link);
                list_del(&w->link);
                w->cb(w->ctx);
                free(w);
        }
}

/* Checks the gateway (a passed check is trusted for MODAL_READY_TTL_MS). */
void
modal_gateway_check(void *ctx, void (*cb)(void *ctx))
{
        struct gw_waiter *w;

        if (modal.gw_ready && util_now_ms() - modal.gw_ready_at < MODAL_READY_TTL_MS) {
                cb(ctx);
                return;
        }
        modal.gw_ready = false; /* until this check passes: never "ready" by mistake */
        w = xcalloc(1, sizeof(*w));
        w->ctx = ctx;
        w->cb = cb;
        list_add_tail(&modal.gw_waiters, &w->link);
        if (modal.gw_checking)
                return;
        modal.gw_checking = true;
        gw_call("GET", modal.gw_ready_path, NULL, NULL, (long) modal.gw_ready_timeout_ms,
                gw_ready_cb, NULL);
}

/* ---- sandboxes ---- */

static void
gw_ignore_cb(void *ctx, long status, json_t *body, const char *error)
{
}

static bool
gw_status_is(json_t *body, const char *want)
{
        const char *st = json_string_value(json_object_get(body, "status"));

        return !st || !strcmp(st, want); /* no status field: the reference API has none */
}

static void
gw_fail(struct modal_create *c, const char *what, long status, json_t *body, const char *error)
{
        char *m = gw_error_text(status, body, error);

        if (status == 401 || status == 403)
                sbx_error_set(&c->err, SBX_E_BACKEND_UNAVAILABLE,
                              json_pack("{s:s,s:s,s:s}", "backend", "modal", "reason", m, "hint",
                                        "check the gateway token (gateway_token_file)"),
                              "backend 'modal' (managed) is unavailable: %s: %s", what, m);
        else
                modal_create_fail(c, what, m);
        free(m);
        modal_create_finish(c);
}

static void
gw_created_cb(void *ctx, long status, json_t *body, const char *error)
{
        struct modal_create *c = ctx;
        const char *id = json_string_value(json_object_get(body, "id"));

        c->gw_req = NULL;
        if (status < 200 || status > 299 || !id || !*id) {
                gw_fail(c, "gateway sandbox create", status, body,
                        status == 200 ? "no sandbox id in the answer" : error);
                return;
        }
        c->sb->remote_id = xstrdup(id);
        if (!gw_status_is(body, "running")) {
                modal_create_fail(c, "gateway sandbox create", "the new sandbox is not running");
                modal_create_finish(c);
                return;
        }
        c->progress(c->ctx, "remote", "sandbox created", -1, -1);
        modal_create_probe_workdir(c, modal_create_finish);
}

static json_t *
gw_create_body(const struct modal_create *c)
{
        json_t *b = json_pack("{s:s,s:I,s:I,s:b,s:s}", "image", c->image, "timeoutMs",
                              (json_int_t) c->lifetime_s * 1000, "idleTimeoutMs",
                              (json_int_t) c->lifetime_s * 1000, "persistentFilesystem", 0,
                              "logicalKey", c->id);

        if (c->workdir)
                json_object_set_new(b, "cwd", json_string(c->workdir));
        if (c->milli_cpu)
                json_object_set_new(b, "cpu", json_real((double) c->milli_cpu / 1000.0));
        if (c->memory_mb)
                json_object_set_new(b, "memoryMiB", json_integer(c->memory_mb));
        if (c->disk_mb)
                json_object_set_new(b, "diskMiB", json_integer(c->disk_mb));
        return b;
}

static void
gw_create(struct modal_create *c)
{
        char key[33];

        if (c->block_network) {
                sbx_error_param(&c->err, "network",
                                "invalid params: network 'none' cannot be enforced through the "
                                "managed gateway (its API has no network setting): ask for "
                                "network 'bridge' (or set network = bridge in [backend.modal]), "
                                "or use modal.mode 'direct'");
                modal_create_finish(c);
                return;
        }
        util_random_hex(key, 32);
        c->sb->idem_key = xstrdup(key);
        c->sb->create_body = gw_create_body(c);
        c->progress(c->ctx, "remote", "creating the sandbox through the gateway", -1, -1);
        c->gw_req = gw_call("POST", "/v1/sandboxes", c->sb->create_body, key, GW_CALL_MS,
                            gw_created_cb, c);
}

static json_t *
gw_save(struct backend_sandbox *sb)
{
        return json_pack("{s:s,s:O}", "idempotency_key", sb->idem_key, "create_body",
                         sb->create_body);
}

static void
gw_adopted_cb(void *ctx, long status, json_t *body, const char *error)
{
        struct modal_create *c = ctx;
        const char *id = json_string_value(json_object_get(body, "id"));
        bool answered = status >= 200 && status <= 299;

        c->gw_req = NULL;

        if (answered && id && !strcmp(id, c->sb->remote_id) && gw_status_is(body, "running")) {
                modal_create_finish(c);
                return;
        }
        if (!answered && status != 404) {
                gw_fail(c, "re-adopt", status, body, error);
                return;
        }
        /* Another id would be a new sandbox: it is not ours to keep. */
        if (answered && id && strcmp(id, c->sb->remote_id) != 0) {
                char *path = xasprintf("/v1/sandboxes/%s/terminate", id);
                gw_call("POST", path, NULL, NULL, GW_CALL_MS, gw_ignore_cb, NULL);
                free(path);
        }
        sbx_error_set(&c->err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "removed"),
                      "gateway sandbox %s is gone", c->sb->remote_id);
        modal_create_finish(c);
}

/* The same create (key and body) answers with the same sandbox while it lives. */
static void
gw_adopt(struct modal_create *c)
{
        const char *key = json_string_value(json_object_get(c->record, "idempotency_key"));
        json_t *body = json_object_get(c->record, "create_body");

        if (!key || !json_is_object(body) || !modal_managed_configured()) {
                modal_create_fail(c, "re-adopt",
                                  key ? "the gateway is not configured now" : "malformed record");
                modal_create_finish(c);
                return;
        }
        c->sb->idem_key = xstrdup(key);
        c->sb->create_body = json_incref(body);
        c->gw_req = gw_call("POST", "/v1/sandboxes", body, key, GW_CALL_MS, gw_adopted_cb, c);
}

/* The answer to the create repeated with its key: the sandbox the abandoned call made. */
static void
gw_found_cb(void *ctx, long status, json_t *body, const char *error)
{
        struct modal_create *c = ctx;
        const char *id = json_string_value(json_object_get(body, "id"));

        c->gw_req = NULL;
        if (status >= 200 && status <= 299 && id && *id)
                c->sb->remote_id = xstrdup(id);
        modal_create_finish(c); /* terminates it */
}

/* The call in flight is abandoned. The create's may have reached the gateway already: the
 * same idempotency key finds the sandbox it made, which finishing then terminates. Without a
 * call a helper exec runs: its end finishes c. */
static void
gw_create_cancel(struct modal_create *c)
{
        if (!c->gw_req)
                return;
        gw_cancel(c->gw_req);
        c->gw_req = NULL;
        if (c->adopting || c->sb->remote_id) {
                modal_create_finish(c);
                return;
        }
        c->gw_req = gw_call("POST", "/v1/sandboxes", c->sb->create_body, c->sb->idem_key,
                            GW_CALL_MS, gw_found_cb, c);
}

static void
gw_terminated_cb(void *ctx, long status, json_t *body, const char *error)
{
        char *m = NULL, *why = NULL;

        if ((status < 200 || status > 299) && status != 404 && status != 409) {
                m = gw_error_text(status, body, error);
                why = xasprintf("gateway terminate: %s", m);
        }
        modal_done_finish(ctx, why);
        free(why);
        free(m);
}

static void
gw_destroy(struct backend_sandbox *sb, void *ctx, backend_done_cb cb)
{
        char *path = xasprintf("/v1/sandboxes/%s/terminate", sb->remote_id);
        json_t *body = json_pack("{s:b}", "snapshotBeforeTerminate", 0);

        gw_call("POST", path, body, NULL, GW_CALL_MS, gw_terminated_cb,
                modal_done_new(sb, ctx, cb));
        json_decref(body);
        free(path);
}

/* ---- execs: start, then poll ---- */

struct gx {
        struct modal_proc base;
        int refs;
        char *path;
        json_t *start_body;
        bool state;
        size_t delivered;    /* bytes of the gateway's output handed on */
        struct gw_call *req; /* the start or poll in flight (holds a reference) */
        uv_timer_t timer;
        bool timer_init;
        int start_tries;
        uint64_t failing_since; /* monotonic ms of the first failed poll in a row, 0 none */
        uint64_t next_delay;    /* polls start fast and slow down to gateway_poll_ms */
        bool started, done, released, paused, cancelled;
        void *kill_ctx;
        backend_kill_cb kill_cb;
        bool kill_pending;
        int code, sig;
};

static void gx_poll(struct gx *x);
static void gx_start(struct gx *x);

static void
gx_unref(struct gx *x)
{
        if (--x->refs > 0)
                return;
        modal_proc_clear(&x->base);
        free(x->path);
        json_decref(x->start_body);
        free(x);
}

static void
gx_timer_close_cb(uv_handle_t *h)
{
        gx_unref(h->data);
}

static void
gx_out_cb(void *ctx, const char *data, size_t len)
{
        struct gx *x = ctx;

        modal_proc_output(&x->base, BACKEND_STDOUT, data, len);
}

/* The output so far: hands on what is new. */
static void
gx_output(struct gx *x, json_t *body)
{
        const char *out = json_string_value(json_object_get(body, "output"));
        size_t n = out ? json_string_length(json_object_get(body, "output")) : 0;

        if (n <= x->delivered)
                return;
        if (x->state)
                modal_sfilter_feed(&x->base.sf, out + x->delivered, n - x->delivered, gx_out_cb, x);
        else
                gx_out_cb(x, out + x->delivered, n - x->delivered);
        x->delivered = n;
}

static void
gx_helper_done(struct gx *x)
{
        struct buf raw = {0}, clean = {0};
        struct modal_proc *p = &x->base;

        /* The helper's stdout came base64-encoded (the gateway's output is JSON text). */
        for (size_t i = 0; i < p->hout.len; i++)
                if (!strchr(" \r\n\t", p->hout.data[i]))
                        buf_append(&clean, &p->hout.data[i], 1);
        if (!p->fail.code && base64_decode(&raw, clean.data ? clean.data : "", clean.len) < 0)
                sbx_error_backend(&p->fail, "modal",
                                  "a helper's output through the gateway is not base64 (base64 "
                                  "missing in the image?)");
        modal_proc_helper_end(p, x->code, raw.data, raw.len);
        buf_free(&raw);
        buf_free(&clean);
}

static void
gx_finish(struct gx *x)
{
        if (x->done)
                return;
        x->done = true;
        if (x->req) {
                gw_cancel(x->req);
                x->req = NULL;
                x->refs--; /* that call's reference; ours keeps x alive below */
        }
        if (x->timer_init) {
                x->timer_init = false;
                uv_timer_stop(&x->timer);
                uv_close((uv_handle_t *) &x->timer, gx_timer_close_cb);
        }
        if (x->state)
                modal_sfilter_end(&x->base.sf, gx_out_cb, x);
        if (x->kill_pending && x->kill_cb)
                x->kill_cb(x->kill_ctx, 0, NULL);
        if (x->base.helper)
                gx_helper_done(x);
        else
                modal_proc_exit(&x->base, x->code, x->sig);
        gx_unref(x);
}

/* A terminal status ends the exec. */
static bool
gx_terminal(struct gx *x, json_t *body)
{
        const char *st = json_string_value(json_object_get(body, "status"));
        json_t *rc = json_object_get(body, "returncode");
        size_t i;

        for (i = 0; st && i < ARRAY_SIZE(gw_terminal) && strcmp(st, gw_terminal[i]); i++)
                ;
        if (!st || i == ARRAY_SIZE(gw_terminal))
                return false;
        x->code = json_is_integer(rc) ? (int) json_integer_value(rc) : 1;
        /* A cancel we asked for is a kill; a gateway timeout too (the daemon times out first). */
        if (x->cancelled || !strcmp(st, "timeout")) {
                x->sig = SIGKILL;
                x->code = 0;
        }
        return true;
}

static void
gx_timer_cb(uv_timer_t *t)
{
        struct gx *x = t->data;

        if (x->started)
                gx_poll(x);
        else
                gx_start(x);
}

static void
gx_later(struct gx *x, uint64_t ms)
{
        if (x->done || (x->paused && x->started))
                return;
        if (!x->timer_init) {
                uv_timer_init(modal.loop, &x->timer);
                x->timer.data = x;
                x->timer_init = true;
                x->refs++;
        }
        uv_timer_start(&x->timer, gx_timer_cb, ms, 0);
}

/* 10 ms, doubling up to gateway_poll_ms: short commands end early, long ones cost little. */
static uint64_t
gx_delay(struct gx *x)
{
        x->next_delay = x->next_delay ? MIN(x->next_delay * 2, modal.gw_poll_ms) : 10;
        return MIN(x->next_delay, modal.gw_poll_ms);
}

/* A failed poll: the link may come back, within GW_FAIL_WINDOW. */
static void
gx_poll_failed(struct gx *x, long status, json_t *body, const char *error)
{
        uint64_t now = util_now_ms();
        char *m;

        if (status == 409 || status == 404)
                x->base.sb->gone = status == 409;
        if (status != 404 && status != 409 && !gw_stopping) {
                if (!x->failing_since)
                        x->failing_since = now;
                if (now - x->failing_since < GW_FAIL_WINDOW) {
                        gx_later(x, modal.gw_poll_ms);
                        return;
                }
        }
        m = gw_error_text(status, body, error);
        sbx_error_backend(&x->base.fail, "modal", "lost the exec through the gateway: %s", m);
        free(m);
        x->sig = SIGKILL;
        gx_finish(x);
}

static void
gx_poll_cb(void *ctx, long status, json_t *body, const char *error)
{
        struct gx *x = ctx;

        x->req = NULL;
        if (x->done) {
                gx_unref(x);
                return;
        }
        if (status == 200 && json_is_object(body)) {
                x->failing_since = 0;
                gx_output(x, body);
                if (gx_terminal(x, body))
                        gx_finish(x);
                else
                        gx_later(x, gx_delay(x));
        } else {
                gx_poll_failed(x, status, body, error);
        }
        gx_unref(x);
}

static void
gx_poll(struct gx *x)
{
        if (x->done || x->req)
                return;
        x->refs++;
        x->req = gw_call("GET", x->path, NULL, NULL, GW_POLL_TIMEOUT, gx_poll_cb, x);
}

static void
gx_start_cb(void *ctx, long status, json_t *body, const char *error)
{
        struct gx *x = ctx;
        char *m;

        x->req = NULL;
        if (x->done) {
                gx_unref(x);
                return;
        }
        if (status == 200 && json_is_object(body)) {
                x->started = true;
                gx_output(x, body);
                if (gx_terminal(x, body))
                        gx_finish(x);
                else
                        gx_later(x, gx_delay(x));
        } else if ((!status || status >= 500) && ++x->start_tries < GW_START_TRIES &&
                   !gw_stopping) {
                gx_later(x, 100u << x->start_tries); /* same execId: the gateway dedups */
        } else {
                m = gw_error_text(status, body, error);
                if (status == 409 || status == 404)
                        x->base.sb->gone = true;
                sbx_error_set(&x->base.fail, x->base.sb->gone ? SBX_E_UNUSABLE : SBX_E_BACKEND,
                              x->base.sb->gone
                                      ? json_pack("{s:s}", "state", "removed")
                                      : json_pack("{s:s,s:s}", "backend", "modal", "detail", m),
                              "modal exec could not start through the gateway: %s", m);
                free(m);
                x->code = 125;
                gx_finish(x);
        }
        gx_unref(x);
}

static void
gx_start(struct gx *x)
{
        char *path = xasprintf("/v1/sandboxes/%s/execs", x->base.sb->remote_id);

        x->refs++;
        x->req = gw_call("POST", path, x->start_body, NULL, GW_CALL_MS, gx_start_cb, x);
        free(path);
}

static struct gx *
gx_new(struct backend_sandbox *sb)
{
        struct gx *x = xcalloc(1, sizeof(*x));
        char id[33];

        util_random_hex(id, 32);
        modal_proc_init(&x->base, sb, &modal_managed_ops, xstrdup(id));
        x->refs = 1;
        x->path = xasprintf("/v1/sandboxes/%s/execs/%s", sb->remote_id, id);
        return x;
}

/* The start body: the command line (stdin as base64 through `base64 -d`, since stdinData is
 * JSON text), cwd, and the sandbox's lifetime as the exec's backstop. */
static void
gx_body(struct gx *x, const char *cmd, const void *in, size_t inlen, const char *cwd)
{
        struct buf b64 = {0};
        char *line;

        if (inlen) {
                base64_encode(&b64, in, inlen);
                buf_append(&b64, "", 1);
                line = xasprintf("base64 -d | %s", cmd);
        } else {
                line = xasprintf("%s </dev/null", cmd);
        }
        x->start_body = json_pack("{s:s,s:s,s:I}", "execId", x->base.exec_id, "command", line,
                                  "timeoutMs", (json_int_t) modal.max_lifetime_s * 1000);
        if (cwd)
                json_object_set_new(x->start_body, "cwd", json_string(cwd));
        if (inlen)
                json_object_set_new(x->start_body, "stdinData", json_string(b64.data));
        free(line);
        buf_free(&b64);
}

/* The gateway's environment is not the exec's: `env -i` and exactly envp, then argv (new). */
static char *
gx_command(char *const *envp, char *const *argv)
{
        size_t ne = 0, na = 0, k = 0;
        char **full, *cmd;

        while (envp && envp[ne])
                ne++;
        while (argv[na])
                na++;
        full = xcalloc(ne + na + 3, sizeof(*full));
        full[k++] = "env";
        full[k++] = "-i";
        for (size_t i = 0; i < ne; i++)
                full[k++] = envp[i];
        for (size_t i = 0; i < na; i++)
                full[k++] = argv[i];
        cmd = modal_sh_quote_argv(full);
        free(full);
        return cmd;
}

static int
gx_exec_start(struct backend_sandbox *sb, const struct exec_spec *spec,
              const struct backend_exec_cbs *cbs, void *ctx, struct modal_proc **ret,
              struct sbx_error *err)
{
        struct gx *x;
        char **argv, *cmd, *pidfile;

        if (spec->stdin_open) {
                sbx_error_param(err, "stdin_open",
                                "stdin_open is not available in managed mode: the gateway takes "
                                "stdin only when the exec starts (pass stdin, or use direct mode)");
                return -ENOTSUP;
        }
        x = gx_new(sb);
        x->base.cbs = *cbs;
        x->base.ctx = ctx;
        x->state = spec->state_path != NULL;
        pidfile = xasprintf(MODAL_STATE_DIR "/%s.pid", x->base.exec_id);
        argv = modal_exec_wrap(spec->argv, spec->envp, pidfile, &x->base.sf, spec->state_path, 1);
        cmd = gx_command(spec->envp, argv);
        gx_body(x, cmd, spec->stdin_data, spec->stdin_len, spec->cwd ? spec->cwd : sb->workdir);
        free(cmd);
        free(pidfile);
        shell_argv_free(argv);
        x->refs++; /* the daemon's, until exec_release */
        gx_start(x);
        *ret = &x->base;
        return 0;
}

/* A helper through the gateway: stdin and stdout travel base64-encoded. */
static void
gx_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen, void *ctx,
          modal_helper_cb cb)
{
        struct gx *x = gx_new(sb);
        char *q = modal_sh_quote_argv(argv);
        char *cmd = xasprintf("t=" MODAL_STATE_DIR "/h.$$; mkdir -p " MODAL_STATE_DIR
                              " 2>/dev/null; %s %s >\"$t\" 2>/dev/null; r=$?; base64 <\"$t\"; "
                              "rm -f \"$t\"; exit $r",
                              inlen ? "base64 -d |" : "</dev/null", q);

        x->base.helper = true;
        x->base.hcb = cb;
        x->base.hctx = ctx;
        x->start_body = json_pack("{s:s,s:s,s:I}", "execId", x->base.exec_id, "command", cmd,
                                  "timeoutMs", (json_int_t) 600000);
        if (sb->workdir)
                json_object_set_new(x->start_body, "cwd", json_string(sb->workdir));
        if (inlen) {
                struct buf b64 = {0};
                base64_encode(&b64, in, inlen);
                buf_append(&b64, "", 1);
                json_object_set_new(x->start_body, "stdinData", json_string(b64.data));
                buf_free(&b64);
        }
        free(q);
        free(cmd);
        gx_start(x);
}

static int
gx_write(struct modal_proc *p, const void *data, size_t len, bool eof)
{
        return -EPIPE; /* stdin_open is refused at start */
}

static void
gx_cancel_cb(void *ctx, long status, json_t *body, const char *error)
{
        struct gx *x = ctx;

        if (!x->done) {
                if (status == 200 && json_is_object(body) && gx_terminal(x, body)) {
                        gx_output(x, body);
                        gx_finish(x);
                } else {
                        gx_poll(x); /* the poll sees it end */
                }
        }
        gx_unref(x);
}

static void
gx_cancel(struct gx *x)
{
        char *path;

        if (x->cancelled || x->done)
                return;
        x->cancelled = true;
        path = xasprintf("%s/cancel", x->path);
        x->refs++;
        gw_call("POST", path, NULL, NULL, GW_CALL_MS, gx_cancel_cb, x);
        free(path);
}

/* The gateway can only cancel: TERM, KILL, INT, HUP and QUIT do that; others are refused. */
static int
gx_signal(struct modal_proc *p, int sig)
{
        struct gx *x = (struct gx *) p;

        if (sig != SIGTERM && sig != SIGKILL && sig != SIGINT && sig != SIGHUP && sig != SIGQUIT)
                return -ENOTSUP;
        if (x->done)
                return -ESRCH;
        gx_cancel(x);
        return 0;
}

static void
gx_kill(struct modal_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct gx *x = (struct gx *) p;

        if (x->done) {
                cb(ctx, 0, NULL);
                return;
        }
        x->kill_ctx = ctx;
        x->kill_cb = cb;
        x->kill_pending = true;
        gx_cancel(x);
}

static void
gx_pause(struct modal_proc *p)
{
        ((struct gx *) p)->paused = true;
}

static void
gx_resume(struct modal_proc *p)
{
        struct gx *x = (struct gx *) p;

        x->paused = false;
        if (x->started && !x->req && !x->done)
                gx_later(x, 0);
}

static void
gx_release(struct modal_proc *p)
{
        struct gx *x = (struct gx *) p;

        if (x->released)
                return;
        x->released = true;
        gx_unref(x);
}

const struct modal_mode_ops modal_managed_ops = {
        .name = "managed",
        .create = gw_create,
        .adopt = gw_adopt,
        .cancel = gw_create_cancel,
        .save = gw_save,
        .destroy = gw_destroy,
        .exec_start = gx_exec_start,
        .exec_write = gx_write,
        .exec_signal = gx_signal,
        .exec_kill = gx_kill,
        .exec_pause = gx_pause,
        .exec_resume = gx_resume,
        .exec_release = gx_release,
        .helper = gx_helper,
};
