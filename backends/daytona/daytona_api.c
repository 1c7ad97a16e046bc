/* daytona_api.c — one REST call to the Daytona API or a sandbox's toolbox: headers, JSON,
 * retries with backoff, and what a failure means for the client. */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_int.h"

#define API_TIMEOUT_MS      60000
#define API_BACKOFF_MS      250
#define API_BACKOFF_MAX     8000
#define API_RETRY_AFTER_MAX 60 /* seconds: a longer Retry-After ends the call */
#define API_MAX_HEADERS     8

struct daytona_call {
        struct list link; /* in daytona.calls */
        char *method, *url, *body, *ctype;
        size_t body_len;
        char *headers[API_MAX_HEADERS + 1];
        bool idempotent;
        unsigned retries;
        long timeout_ms;
        int (*on_data)(void *ctx, const char *data, size_t len);
        daytona_cb cb;
        void *ctx;
        struct http_req *req;
        struct buf errbody; /* a streamed call's error answer */
        uv_timer_t timer;
        bool timer_init;
        unsigned attempt;
};

enum api_verdict {
        API_FINAL,
        API_RETRY,     /* the server did not act on it: send again */
        API_AMBIGUOUS, /* it may have: again only when idempotent */
};

static int api_send(struct daytona_call *c);

/* ---- URLs and checks ---- */

static char *
api_vurl(const char *base, const char *fmt, va_list ap)
{
        char *path = xvasprintf(fmt, ap), *url = xasprintf("%s%s", base, path);

        free(path);
        return url;
}

/* An API URL. */
char *
daytona_api_url(const char *fmt, ...)
{
        va_list ap;
        char *url;

        va_start(ap, fmt);
        url = api_vurl(daytona.api_url, fmt, ap);
        va_end(ap);
        return url;
}

/* A toolbox URL of sb. */
char *
daytona_tb_url(const struct backend_sandbox *sb, const char *fmt, ...)
{
        va_list ap;
        char *url;

        va_start(ap, fmt);
        url = api_vurl(sb->toolbox, fmt, ap);
        va_end(ap);
        return url;
}

/* Ids and names the server hands back go into URL paths: only plain characters. */
bool
daytona_id_ok(const char *id)
{
        size_t n = id ? strlen(id) : 0;

        return n > 0 && n <= 128 &&
               strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* https, or http to this machine. */
bool
daytona_url_ok(const char *url)
{
        static const char *const loopback[] = {"http://127.0.0.1", "http://localhost",
                                               "http://[::1]"};

        if (!url || strpbrk(url, " \r\n\t"))
                return false;
        if (!strncmp(url, "https://", 8))
                return url[8] != '\0' && url[8] != '/';
        for (size_t i = 0; i < ARRAY_SIZE(loopback); i++) {
                size_t n = strlen(loopback[i]);
                if (!strncmp(url, loopback[i], n) && strchr(":/", url[n] ? url[n] : '/'))
                        return true;
        }
        return false;
}

/* ---- errors ---- */

/* The server's message: "message" (a string, or NestJS's array of them), else its text. */
const char *
daytona_res_message(const struct daytona_res *res)
{
        json_t *m = json_object_get(res->body, "message");

        if (!res->status && res->terr)
                return res->terr;
        if (json_is_string(m))
                return json_string_value(m);
        if (json_is_array(m) && json_is_string(json_array_get(m, 0)))
                return json_string_value(json_array_get(m, 0));
        if (json_is_string(json_object_get(res->body, "error")))
                return json_string_value(json_object_get(res->body, "error"));
        return "(no message)";
}

/* A copy of s safe to show: printable, at most 300 bytes, without the key. */
static char *
api_scrub(const char *s)
{
        struct buf b = {0};
        size_t klen = daytona.key ? strlen(daytona.key) : 0;

        for (size_t i = 0; s[i] && b.len < 300; i++) {
                if (klen && !strncmp(s + i, daytona.key, klen)) {
                        buf_append(&b, "[redacted]", 10);
                        i += klen - 1;
                        continue;
                }
                unsigned char c = (unsigned char) s[i];
                buf_append(&b, c < 0x20 || c == 0x7f ? "?" : &s[i], 1);
        }
        buf_append(&b, "", 1);
        return b.data;
}

static const struct {
        long status;
        const char *reason, *hint;
} api_auth_errors[] = {
        {401, "Daytona rejected the API key",
         "check the key (api_key_file in [backend.daytona], or DAYTONA_API_KEY in the daemon's "
         "environment); keys are made at https://app.daytona.io/dashboard/keys"},
        {403, "the API key may not do this",
         "give the key the permissions write:sandboxes and delete:sandboxes"},
};

/* Fills err for a failed call. */
void
daytona_error(struct sbx_error *err, const char *what, const struct daytona_res *res,
              bool sandbox_call)
{
        char *msg = api_scrub(res->status ? daytona_res_message(res)
                                          : (res->terr ? res->terr : "no answer"));

        for (size_t i = 0; i < ARRAY_SIZE(api_auth_errors); i++) {
                if (res->status != api_auth_errors[i].status)
                        continue;
                char *reason =
                        xasprintf("%s (HTTP %ld: %s)", api_auth_errors[i].reason, res->status, msg);
                sbx_error_set(err, SBX_E_BACKEND_UNAVAILABLE,
                              json_pack("{s:s,s:s,s:s}", "backend", DAYTONA_NAME, "reason", reason,
                                        "hint", api_auth_errors[i].hint),
                              "daytona: %s: %s", what, reason);
                free(reason);
                free(msg);
                return;
        }
        if (res->status == 404 && sandbox_call)
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "removed"),
                              "daytona: %s: the sandbox no longer exists on Daytona (HTTP 404: "
                              "%s); it was deleted outside sandboxd or by its auto-delete "
                              "interval",
                              what, msg);
        else if (!res->status)
                sbx_error_backend(err, DAYTONA_NAME, "%s: cannot reach Daytona: %s", what, msg);
        else if (res->retry_after_s)
                sbx_error_backend(err, DAYTONA_NAME,
                                  "%s: HTTP %ld: %s (Daytona asks to wait %ld s before trying "
                                  "again)",
                                  what, res->status, msg, res->retry_after_s);
        else
                sbx_error_backend(err, DAYTONA_NAME, "%s: HTTP %ld: %s%s", what, res->status, msg,
                                  res->status == 429   ? " (rate limited; try again later)"
                                  : res->status >= 500 ? " (a Daytona server error; try again)"
                                                       : "");
        free(msg);
}

/* ---- the call ---- */

static void
api_free_cb(uv_handle_t *h)
{
        free(h->data);
}

static void
api_free(struct daytona_call *c)
{
        list_del(&c->link);
        free(c->method);
        free(c->url);
        free(c->body);
        free(c->ctype);
        for (int i = 0; c->headers[i]; i++)
                free(c->headers[i]);
        buf_free(&c->errbody);
        if (c->timer_init) {
                uv_timer_stop(&c->timer);
                uv_close((uv_handle_t *) &c->timer, api_free_cb);
        } else {
                free(c);
        }
}

static enum api_verdict
api_verdict(const struct http_result *hr)
{
        if (hr->error) {
                switch (hr->curl_code) {
                case CURLE_COULDNT_RESOLVE_HOST:
                case CURLE_COULDNT_CONNECT:
                case CURLE_SSL_CONNECT_ERROR:
                        return API_RETRY;
                case CURLE_OPERATION_TIMEDOUT:
                case CURLE_SEND_ERROR:
                case CURLE_RECV_ERROR:
                case CURLE_GOT_NOTHING:
                case CURLE_PARTIAL_FILE:
                        return API_AMBIGUOUS;
                default:
                        return API_FINAL;
                }
        }
        if (hr->status == 429 || hr->status == 503)
                return API_RETRY;
        if (hr->status == 408 || hr->status == 500 || hr->status == 502 || hr->status == 504)
                return API_AMBIGUOUS;
        return API_FINAL;
}

/* Backoff before attempt n (1-based): 250 ms doubling to 8 s, +-20 %, or Retry-After. */
static uint64_t
api_delay(unsigned n, long retry_after_s)
{
        uint64_t d = API_BACKOFF_MS << MIN(n - 1, 5u);
        char r[3];

        if (d > API_BACKOFF_MAX)
                d = API_BACKOFF_MAX;
        util_random_hex(r, 2);
        d = d * (80 + strtoul(r, NULL, 16) % 41) / 100;
        if ((uint64_t) retry_after_s * 1000 > d)
                d = (uint64_t) retry_after_s * 1000;
        return d;
}

static void api_finish(struct daytona_call *c, const struct http_result *hr, bool ambiguous);

static void
api_timer_cb(uv_timer_t *t)
{
        struct daytona_call *c = t->data;
        struct http_result hr = {.error = "cannot start a request", .curl_code = CURLE_FAILED_INIT};

        if (api_send(c) < 0)
                api_finish(c, &hr, false);
}

static void
api_finish(struct daytona_call *c, const struct http_result *hr, bool ambiguous)
{
        struct daytona_res res = {.status = hr->error ? 0 : hr->status,
                                  .raw = hr->body,
                                  .len = hr->body_len,
                                  .terr = hr->error,
                                  .ambiguous = ambiguous,
                                  .retry_after_s = hr->retry_after_s};

        if (!res.raw && c->errbody.len) {
                res.raw = c->errbody.data;
                res.len = c->errbody.len;
        }
        if (!hr->error && res.raw && res.len)
                res.body = json_loadb(res.raw, res.len, JSON_DECODE_ANY, NULL);
        list_del(&c->link); /* ended: daytona_call_end_all no longer sees it */
        c->cb(c->ctx, &res);
        json_decref(res.body);
        api_free(c);
}

static void
api_done_cb(void *ctx, struct http_req *req, const struct http_result *hr)
{
        struct daytona_call *c = ctx;
        enum api_verdict v = api_verdict(hr);
        bool again = v == API_RETRY || (v == API_AMBIGUOUS && c->idempotent);

        c->req = NULL;
        if (again && hr->retry_after_s > API_RETRY_AFTER_MAX)
                again = false;
        if (!again || c->attempt > c->retries) {
                api_finish(c, hr, v == API_AMBIGUOUS && !c->idempotent);
                return;
        }
        if (c->on_data && c->on_data(c->ctx, NULL, 0) < 0) {
                api_finish(c, hr, false);
                return;
        }
        c->errbody.len = 0;
        if (!c->timer_init) {
                uv_timer_init(daytona.loop, &c->timer);
                c->timer.data = c;
                c->timer_init = true;
        }
        uv_timer_start(&c->timer, api_timer_cb, api_delay(c->attempt, hr->retry_after_s), 0);
}

static int
api_data_cb(void *ctx, struct http_req *req, const char *data, size_t len)
{
        struct daytona_call *c = ctx;

        /* Only a successful answer is the caller's data; an error's body is kept aside. */
        if (http_req_status(req) / 100 != 2) {
                if (c->errbody.len < 65536)
                        buf_append(&c->errbody, data, MIN(len, 65536 - c->errbody.len));
                return 0;
        }
        return c->on_data(c->ctx, data, len);
}

/* Sends the next attempt: 0, or negative errno (nothing pending). */
static int
api_send(struct daytona_call *c)
{
        static const struct http_cbs buffered = {.on_done = api_done_cb};
        static const struct http_cbs streamed = {.on_data = api_data_cb, .on_done = api_done_cb};
        struct http_req_spec s = {.method = c->method,
                                  .url = c->url,
                                  .headers = (const char *const *) c->headers,
                                  .body = c->body,
                                  .body_len = c->body_len,
                                  .timeout_ms = c->timeout_ms,
                                  .max_body = DAYTONA_MAX_BODY};
        int rc;

        c->attempt++;
        rc = http_request(daytona.http, &s, c->on_data ? &streamed : &buffered, c, &c->req);
        if (rc < 0)
                c->req = NULL;
        return rc;
}

static void
api_headers(struct daytona_call *c, const struct daytona_req *r)
{
        int n = 0;

        c->headers[n++] = xstrdup(daytona.auth);
        c->headers[n++] = xstrdup("X-Daytona-Source: sandboxd");
        if (r->json)
                c->headers[n++] = xstrdup("Content-Type: application/json");
        else if (r->raw)
                c->headers[n++] = xasprintf("Content-Type: %s",
                                            r->ctype ? r->ctype : "application/octet-stream");
        for (const char *const *h = r->headers; h && *h && n < API_MAX_HEADERS; h++)
                c->headers[n++] = xstrdup(*h);
        c->headers[n] = NULL;
}

/* Starts a call. */
int
daytona_call(const struct daytona_req *r, daytona_cb cb, void *ctx, struct daytona_call **ret)
{
        struct daytona_call *c;

        if (!daytona.initialised || !daytona.auth)
                return -ENOTCONN;
        c = xcalloc(1, sizeof(*c));
        c->method = xstrdup(r->method ? r->method : "GET");
        c->url = xstrdup(r->url);
        if (r->json) {
                c->body = json_dumps(r->json, JSON_COMPACT);
                c->body_len = strlen(c->body);
        } else if (r->raw) {
                c->body = xmalloc(r->raw_len ? r->raw_len : 1);
                memcpy(c->body, r->raw, r->raw_len);
                c->body_len = r->raw_len;
        }
        api_headers(c, r);
        c->idempotent = r->idempotent;
        c->retries = r->once ? 0 : (unsigned) daytona.retries;
        c->timeout_ms = r->timeout_ms ? r->timeout_ms : API_TIMEOUT_MS;
        c->on_data = r->on_data;
        c->cb = cb;
        c->ctx = ctx;
        list_add_tail(&daytona.calls, &c->link);
        int rc = api_send(c);
        if (rc < 0) {
                api_free(c);
                return rc;
        }
        if (ret)
                *ret = c;
        return 0;
}

/* daytona_call for a URL of its own (steals url); when the call cannot start, cb hears so at
 * once (status 0), so the caller has a single path for every failure. */
void
daytona_send(struct daytona_req *r, char *url, daytona_cb cb, void *ctx, struct daytona_call **ret)
{
        r->url = url;
        if (daytona_call(r, cb, ctx, ret) < 0) {
                struct daytona_res res = {.terr = "cannot start a request (libcurl4 missing?)"};
                if (ret)
                        *ret = NULL;
                cb(ctx, &res);
        }
        free(url);
}

/* Cancels a call. */
void
daytona_call_cancel(struct daytona_call *c)
{
        if (!c)
                return;
        if (c->req)
                http_cancel(c->req);
        c->req = NULL;
        api_free(c);
}

/* Ends every call with an error: the HTTP handle is about to go. */
void
daytona_call_end_all(const char *why)
{
        while (!list_empty(&daytona.calls)) {
                struct daytona_call *c = LIST_ENTRY(daytona.calls.next, struct daytona_call, link);
                struct http_result hr = {.error = why, .curl_code = CURLE_ABORTED_BY_CALLBACK};
                if (c->req)
                        http_cancel(c->req);
                c->req = NULL;
                api_finish(c, &hr, false);
        }
}
