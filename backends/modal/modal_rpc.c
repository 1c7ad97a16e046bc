/* modal_rpc.c — Modal control-plane and command-router calls: auth tokens, retries. */
#include "backends/modal/modal_rpc.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backends/modal/modal_pb.h"
#include "protocol/codec.h"
#include "protocol/list.h"

#define RPC_MAX_ATTEMPTS   8
#define RPC_BACKOFF_MS     50
#define RPC_BACKOFF_MAX_MS 2000
#define RPC_TOKEN_TIMEOUT  10000
#define RPC_DEFAULT_LIFE_S (20 * 60) /* a token without exp: Modal's clients assume 20 min */
#define RPC_CLIENT_TYPE    "7"       /* CLIENT_TYPE_LIBMODAL: a client that is not Modal's SDK */
#define RPC_CLIENT_VERSION "1.0.0"   /* the Python SDK version whose behaviour we follow */
#define API_SERVICE        "/modal.client.ModalClient/"
#define ROUTER_SERVICE     "/modal.task_command_router.TaskCommandRouter/"

enum chan_kind { CHAN_API, CHAN_ROUTER };

/* A channel: where calls go and the token they carry. */
struct modal_chan {
        enum chan_kind kind;
        struct modal_api *api;
        char *url;   /* router: from the access call */
        char *token; /* NULL until fetched */
        double exp;  /* wall-clock seconds */
        double refresh_at;
        bool fetching;
        struct list waiting; /* rpcs waiting for a token */
        struct modal_rpc *fetch;
        char *task_id; /* router */
};

struct modal_api {
        int refs;
        uv_loop_t *loop;
        struct http_multi *m;
        char *url, *token_id, *token_secret, *libmodal_version;
        bool localhost;
        struct modal_chan chan;
};

struct modal_router {
        struct modal_chan chan;
};

struct modal_rpc {
        struct list link;  /* rpc_all */
        struct list wlink; /* chan->waiting */
        struct modal_chan *chan;
        char *path;
        struct buf req;
        long timeout_ms;
        bool stream, internal, delivered, auth_retried, paused, ended;
        int attempt;
        char key[33];
        char *used_token;
        modal_msg_cb on_msg;
        modal_end_cb on_end;
        void *ctx;
        struct grpc_call *call;
        struct buf reply;
        bool have_reply;
        uv_timer_t timer;
        bool timer_init;
        /* A failure to hand over on the next loop turn (never from inside a start call). */
        int pending_code;
        char *pending_msg;
};

static struct list rpc_all = {&rpc_all, &rpc_all};
static bool rpc_stopping;

static void rpc_submit(struct modal_rpc *r);
static void chan_fetch(struct modal_chan *ch);

static double
rpc_now(void)
{
        return (double) util_wall_ms() / 1000.0;
}

/* ---- secrets out of messages ---- */

static void
rpc_redact_one(char **msg, const char *secret)
{
        size_t n = secret ? strlen(secret) : 0;
        struct buf b = {0};
        const char *p, *hit;

        if (n < 6 || !strstr(*msg, secret))
                return;
        for (p = *msg; (hit = strstr(p, secret)); p = hit + n) {
                buf_append(&b, p, (size_t) (hit - p));
                buf_append(&b, "[redacted]", 10);
        }
        buf_append(&b, p, strlen(p) + 1);
        free(*msg);
        *msg = b.data;
}

/* A server message with this channel's secrets taken out (new). */
static char *
rpc_redact(struct modal_chan *ch, const char *msg)
{
        char *m = xstrdup(msg ? msg : "");

        rpc_redact_one(&m, ch->api->token_secret);
        rpc_redact_one(&m, ch->api->token_id);
        rpc_redact_one(&m, ch->api->chan.token);
        rpc_redact_one(&m, ch->token);
        return m;
}

/* ---- JWT ---- */

/* The exp claim of a JWT. */
double
modal_jwt_exp(const char *jwt)
{
        const char *a = jwt ? strchr(jwt, '.') : NULL, *b = a ? strchr(a + 1, '.') : NULL;
        struct buf raw = {0};
        char *s;
        json_t *j;
        double exp = 0;

        if (!b || b - a > 8192)
                return 0;
        s = xstrndup(a + 1, (size_t) (b - a - 1));
        for (char *c = s; *c; c++)
                *c = *c == '-' ? '+' : *c == '_' ? '/' : *c;
        if (base64_decode(&raw, s, strlen(s)) == 0 &&
            (j = json_loadb(raw.data ? raw.data : "", raw.len, 0, NULL))) {
                json_t *e = json_object_get(j, "exp");
                exp = json_is_number(e) ? json_number_value(e) : 0;
                json_decref(j);
        }
        buf_free(&raw);
        free(s);
        return exp;
}

/* ---- rpc lifecycle ---- */

static void
rpc_timer_close_cb(uv_handle_t *h)
{
        free(h->data);
}

static void
rpc_free(struct modal_rpc *r)
{
        list_del(&r->link);
        list_del(&r->wlink);
        buf_free(&r->req);
        buf_free(&r->reply);
        free(r->path);
        free(r->used_token);
        free(r->pending_msg);
        if (r->timer_init) {
                uv_timer_stop(&r->timer);
                uv_close((uv_handle_t *) &r->timer, rpc_timer_close_cb);
        } else {
                free(r);
        }
}

/* Hands the end over and frees the rpc. */
static void
rpc_finish(struct modal_rpc *r, int code, const char *msg, bool transport)
{
        char *m = rpc_redact(r->chan, msg ? msg : grpc_code_name(code));
        struct grpc_status st = {code, m, transport};
        bool ok = code == GRPC_OK && r->have_reply;

        r->ended = true;
        list_del(&r->wlink);
        r->on_end(r->ctx, &st,
                  ok ? (const unsigned char *) (r->reply.data ? r->reply.data : "") : NULL,
                  ok ? r->reply.len : 0);
        free(m);
        rpc_free(r);
}

static void
rpc_timer_cb(uv_timer_t *t)
{
        struct modal_rpc *r = t->data;

        if (r->pending_code) {
                rpc_finish(r, r->pending_code, r->pending_msg, true);
                return;
        }
        rpc_submit(r);
}

static void
rpc_timer_start(struct modal_rpc *r, uint64_t ms)
{
        if (!r->timer_init) {
                uv_timer_init(r->chan->api->loop, &r->timer);
                r->timer.data = r;
                r->timer_init = true;
        }
        uv_timer_start(&r->timer, rpc_timer_cb, ms, 0);
}

/* Ends r with a failure on the next loop turn. */
static void
rpc_fail_later(struct modal_rpc *r, int code, char *msg /* steals */)
{
        free(r->pending_msg);
        r->pending_msg = msg;
        r->pending_code = code;
        rpc_timer_start(r, 0);
}

static void
rpc_msg_cb(void *ctx, struct grpc_call *c, const unsigned char *msg, size_t len)
{
        struct modal_rpc *r = ctx;

        if (!r->stream) {
                if (!r->have_reply)
                        buf_append(&r->reply, msg, len);
                r->have_reply = true;
                return;
        }
        r->delivered = true;
        r->on_msg(r->ctx, msg, len);
}

static void chan_invalidate(struct modal_chan *ch, const char *used);

static void
rpc_end_cb(void *ctx, struct grpc_call *c, const struct grpc_status *st)
{
        struct modal_rpc *r = ctx;
        bool fresh = !r->stream || !r->delivered; /* nothing consumed yet: safe to repeat */

        r->call = NULL;
        if (st->code == GRPC_UNAUTHENTICATED && !r->internal && !r->auth_retried && fresh &&
            !rpc_stopping) {
                r->auth_retried = true;
                chan_invalidate(r->chan, r->used_token);
                rpc_submit(r);
                return;
        }
        if (grpc_retryable(st) && fresh && r->attempt + 1 < RPC_MAX_ATTEMPTS && !rpc_stopping) {
                uint64_t ms = (uint64_t) RPC_BACKOFF_MS << (r->attempt < 6 ? r->attempt : 6);
                r->attempt++;
                buf_consume(&r->reply, r->reply.len);
                r->have_reply = false;
                rpc_timer_start(r, MIN(ms, (uint64_t) RPC_BACKOFF_MAX_MS));
                return;
        }
        if (st->code == GRPC_OK && !r->stream && !r->have_reply) {
                rpc_finish(r, GRPC_INTERNAL, "the server answered OK without a message", false);
                return;
        }
        rpc_finish(r, st->code, st->message, st->transport);
}

/* Sends one attempt with the channel's current token. */
static void
rpc_send(struct modal_rpc *r)
{
        static const struct grpc_call_cbs cbs = {rpc_msg_cb, rpc_end_cb};
        struct modal_chan *ch = r->chan;
        struct modal_api *a = ch->api;
        char *h[12] = {NULL};
        struct grpc_call_spec s = {0};
        size_t n = 0;
        int rc;

        if (ch->kind == CHAN_API) {
                h[n++] = xstrdup("x-modal-client-type: " RPC_CLIENT_TYPE);
                h[n++] = xstrdup("x-modal-client-version: " RPC_CLIENT_VERSION);
                h[n++] = xasprintf("x-modal-libmodal-version: %s", a->libmodal_version);
                h[n++] = xasprintf("x-modal-token-id: %s", a->token_id);
                h[n++] = xasprintf("x-modal-token-secret: %s", a->token_secret);
                if (!r->internal)
                        h[n++] = xasprintf("x-modal-auth-token: %s", ch->token);
        } else {
                h[n++] = xasprintf("authorization: Bearer %s", ch->token);
        }
        h[n++] = xasprintf("x-idempotency-key: %s", r->key);
        h[n++] = xasprintf("x-retry-attempt: %d", r->attempt);
        free(r->used_token);
        r->used_token = r->internal ? NULL : xstrdup(ch->token);
        s.base_url = ch->url;
        s.path = r->path;
        s.headers = (const char *const *) h;
        s.msg = r->req.data;
        s.len = r->req.len;
        s.timeout_ms = r->timeout_ms;
        rc = grpc_call_start(a->m, &s, &cbs, r, &r->call);
        for (size_t i = 0; i < n; i++)
                free(h[i]);
        if (rc < 0) {
                r->call = NULL;
                rpc_fail_later(r, GRPC_UNAVAILABLE,
                               xasprintf("cannot start the call: %s", strerror(-rc)));
                return;
        }
        if (r->paused)
                grpc_call_pause(r->call);
}

/* Sends r now if its channel has a usable token, else queues it behind a fetch. */
static void
rpc_submit(struct modal_rpc *r)
{
        struct modal_chan *ch = r->chan;
        double now = rpc_now();

        if (rpc_stopping) {
                rpc_fail_later(r, GRPC_UNAVAILABLE, xstrdup("the daemon is shutting down"));
                return;
        }
        if (r->internal || (ch->token && now < ch->exp - 5)) {
                if (!r->internal && now >= ch->refresh_at)
                        chan_fetch(ch); /* in the background: this call uses the old one */
                rpc_send(r);
                return;
        }
        list_del(&r->wlink);
        list_add_tail(&ch->waiting, &r->wlink);
        chan_fetch(ch);
}

static struct modal_rpc *
rpc_new(struct modal_chan *ch, const char *service, const char *method, const struct buf *req,
        long timeout_ms, bool stream)
{
        struct modal_rpc *r = xcalloc(1, sizeof(*r));

        list_init(&r->wlink);
        list_add_tail(&rpc_all, &r->link);
        r->chan = ch;
        r->path = xasprintf("%s%s", service, method);
        if (req && req->len)
                buf_append(&r->req, req->data, req->len);
        r->timeout_ms = timeout_ms;
        r->stream = stream;
        util_random_hex(r->key, 32);
        return r;
}

/* ---- channels and their tokens ---- */

static void
chan_init(struct modal_chan *ch, enum chan_kind kind, struct modal_api *a)
{
        memset(ch, 0, sizeof(*ch));
        ch->kind = kind;
        ch->api = a;
        list_init(&ch->waiting);
}

static void
chan_set_token(struct modal_chan *ch, char *token)
{
        double now = rpc_now(), exp = modal_jwt_exp(token);

        if (exp <= now)
                exp = now + RPC_DEFAULT_LIFE_S;
        free(ch->token);
        ch->token = token;
        ch->exp = exp;
        ch->refresh_at = now + (exp - now) / 2;
}

/* Drops the token a call was refused with (not a newer one fetched meanwhile). */
static void
chan_invalidate(struct modal_chan *ch, const char *used)
{
        if (ch->token && used && strcmp(ch->token, used) == 0) {
                free(ch->token);
                ch->token = NULL;
        }
}

/* The fetch ended: send the waiting rpcs, or fail them with why. */
static void
chan_fetched(struct modal_chan *ch, const struct grpc_status *st, const char *why)
{
        ch->fetching = false;
        ch->fetch = NULL;
        while (!list_empty(&ch->waiting)) {
                struct modal_rpc *r = LIST_ENTRY(ch->waiting.next, struct modal_rpc, wlink);
                list_del(&r->wlink);
                if (why || !ch->token) {
                        char *m = xasprintf("%s: %s", why ? why : "no token", st->message);
                        rpc_finish(r, st->code == GRPC_OK ? GRPC_UNAUTHENTICATED : st->code, m,
                                   st->transport);
                        free(m);
                } else {
                        rpc_send(r);
                }
        }
}

static void
chan_api_token_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct modal_chan *ch = ctx;
        char *tok = msg ? pb_get_string(msg, len, 1) : NULL;

        if (tok && *tok)
                chan_set_token(ch, tok);
        else
                free(tok);
        chan_fetched(ch, st, tok && *tok ? NULL : "cannot get a Modal auth token (AuthTokenGet)");
}

/* A router URL must be https, unless the server itself is on localhost (tests, local dev). */
static bool
chan_router_url_ok(struct modal_chan *ch, const char *url)
{
        return strncmp(url, "https://", 8) == 0 ||
               (ch->api->localhost && strncmp(url, "http://", 7) == 0);
}

static void
chan_router_access_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct modal_chan *ch = ctx;
        char *jwt = msg ? pb_get_string(msg, len, 1) : NULL;
        char *url = msg ? pb_get_string(msg, len, 2) : NULL;
        struct grpc_status bad = {GRPC_PERMISSION_DENIED, "", false};
        const char *why = "cannot get command router access (TaskGetCommandRouterAccess)";

        if (jwt && *jwt && url && chan_router_url_ok(ch, url)) {
                free(ch->url);
                ch->url = url;
                chan_set_token(ch, jwt);
                chan_fetched(ch, st, NULL);
                return;
        }
        if (url && *url && jwt && *jwt) {
                char *m = xasprintf("refused command router URL '%s': only https is accepted "
                                    "when the server is not on localhost",
                                    url);
                bad.message = m;
                chan_fetched(ch, &bad, why);
                free(m);
        } else {
                chan_fetched(ch, st, why);
        }
        free(jwt);
        free(url);
}

static void
chan_fetch(struct modal_chan *ch)
{
        struct buf req = {0};

        if (ch->fetching)
                return;
        ch->fetching = true;
        if (ch->kind == CHAN_API) {
                ch->fetch =
                        rpc_new(ch, API_SERVICE, "AuthTokenGet", NULL, RPC_TOKEN_TIMEOUT, false);
                ch->fetch->internal = true;
                ch->fetch->on_end = chan_api_token_cb;
                ch->fetch->ctx = ch;
                rpc_submit(ch->fetch);
                return;
        }
        pb_put_str(&req, 1, ch->task_id);
        ch->fetch = modal_api_unary(ch->api, "TaskGetCommandRouterAccess", &req, RPC_TOKEN_TIMEOUT,
                                    chan_router_access_cb, ch);
        buf_free(&req);
}

/* ---- public ---- */

static bool
rpc_is_localhost(const char *url)
{
        static const char *const local[] = {"http://127.0.0.1",  "http://localhost",
                                            "http://[::1]",      "https://127.0.0.1",
                                            "https://localhost", "https://[::1]"};

        for (size_t i = 0; i < ARRAY_SIZE(local); i++) {
                size_t n = strlen(local[i]);
                if (strncmp(url, local[i], n) == 0 && (url[n] == ':' || url[n] == '/' || !url[n]))
                        return true;
        }
        return false;
}

/* A control-plane client. */
struct modal_api *
modal_api_new(uv_loop_t *loop, struct http_multi *m, const char *server_url, const char *token_id,
              const char *token_secret, const char *client_version)
{
        struct modal_api *a = xcalloc(1, sizeof(*a));
        size_t n = strlen(server_url);

        a->refs = 1;
        a->loop = loop;
        a->m = m;
        a->url = xstrndup(server_url, n && server_url[n - 1] == '/' ? n - 1 : n);
        a->token_id = xstrdup(token_id);
        a->token_secret = xstrdup(token_secret);
        a->libmodal_version = xstrdup(client_version);
        a->localhost = rpc_is_localhost(a->url);
        chan_init(&a->chan, CHAN_API, a);
        a->chan.url = xstrdup(a->url);
        return a;
}

/* Takes a reference. */
void
modal_api_ref(struct modal_api *a)
{
        a->refs++;
}

/* Drops a reference. */
void
modal_api_unref(struct modal_api *a)
{
        if (!a || --a->refs > 0)
                return;
        modal_rpc_cancel(a->chan.fetch);
        free(a->chan.url);
        free(a->chan.token);
        free(a->url);
        free(a->token_id);
        free(a->token_secret);
        free(a->libmodal_version);
        free(a);
}

/* The server URL. */
const char *
modal_api_url(const struct modal_api *a)
{
        return a->url;
}

/* Same credentials and URL? */
bool
modal_api_same(const struct modal_api *a, const char *url, const char *token_id,
               const char *token_secret)
{
        size_t n = strlen(url);

        if (n && url[n - 1] == '/')
                n--;
        return strlen(a->url) == n && strncmp(a->url, url, n) == 0 &&
               strcmp(a->token_id, token_id) == 0 && strcmp(a->token_secret, token_secret) == 0;
}

/* A router client for one task. */
struct modal_router *
modal_router_new(struct modal_api *a, const char *task_id)
{
        struct modal_router *r = xcalloc(1, sizeof(*r));

        chan_init(&r->chan, CHAN_ROUTER, a);
        r->chan.task_id = xstrdup(task_id);
        modal_api_ref(a);
        return r;
}

/* Frees a router client. */
void
modal_router_free(struct modal_router *r)
{
        if (!r)
                return;
        modal_rpc_cancel(r->chan.fetch);
        while (!list_empty(&r->chan.waiting))
                modal_rpc_cancel(LIST_ENTRY(r->chan.waiting.next, struct modal_rpc, wlink));
        modal_api_unref(r->chan.api);
        free(r->chan.url);
        free(r->chan.token);
        free(r->chan.task_id);
        free(r);
}

static struct modal_rpc *
rpc_start(struct modal_chan *ch, const char *service, const char *method, const struct buf *req,
          long timeout_ms, modal_msg_cb on_msg, modal_end_cb on_end, void *ctx)
{
        struct modal_rpc *r = rpc_new(ch, service, method, req, timeout_ms, on_msg != NULL);

        r->on_msg = on_msg;
        r->on_end = on_end;
        r->ctx = ctx;
        rpc_submit(r);
        return r;
}

/* A unary control-plane call. */
struct modal_rpc *
modal_api_unary(struct modal_api *a, const char *method, const struct buf *req, long timeout_ms,
                modal_end_cb cb, void *ctx)
{
        return rpc_start(&a->chan, API_SERVICE, method, req, timeout_ms, NULL, cb, ctx);
}

/* A server-streaming control-plane call. */
struct modal_rpc *
modal_api_stream(struct modal_api *a, const char *method, const struct buf *req, long timeout_ms,
                 modal_msg_cb on_msg, modal_end_cb on_end, void *ctx)
{
        return rpc_start(&a->chan, API_SERVICE, method, req, timeout_ms, on_msg, on_end, ctx);
}

/* A unary router call. */
struct modal_rpc *
modal_router_unary(struct modal_router *rt, const char *method, const struct buf *req,
                   long timeout_ms, modal_end_cb cb, void *ctx)
{
        return rpc_start(&rt->chan, ROUTER_SERVICE, method, req, timeout_ms, NULL, cb, ctx);
}

/* A server-streaming router call (no deadline: output streams as long as the exec runs). */
struct modal_rpc *
modal_router_stream(struct modal_router *rt, const char *method, const struct buf *req,
                    modal_msg_cb on_msg, modal_end_cb on_end, void *ctx)
{
        return rpc_start(&rt->chan, ROUTER_SERVICE, method, req, 0, on_msg, on_end, ctx);
}

/* Cancels without a callback. */
void
modal_rpc_cancel(struct modal_rpc *r)
{
        if (!r || r->ended)
                return;
        r->ended = true;
        if (r->chan->fetch == r) {
                r->chan->fetch = NULL;
                r->chan->fetching = false;
        }
        grpc_call_cancel(r->call);
        rpc_free(r);
}

/* Stops delivering messages. */
void
modal_rpc_pause(struct modal_rpc *r)
{
        r->paused = true;
        if (r->call)
                grpc_call_pause(r->call);
}

/* Restarts delivering messages. */
void
modal_rpc_resume(struct modal_rpc *r)
{
        r->paused = false;
        if (r->call)
                grpc_call_resume(r->call);
}

/* Whether modal_rpc_shutdown ran: callers stop retrying. */
bool
modal_rpc_stopping(void)
{
        return rpc_stopping;
}

/* Ends everything in flight. */
void
modal_rpc_shutdown(void)
{
        rpc_stopping = true;
        while (!list_empty(&rpc_all)) {
                struct modal_rpc *r = LIST_ENTRY(rpc_all.next, struct modal_rpc, link);
                grpc_call_cancel(r->call);
                r->call = NULL;
                rpc_finish(r, GRPC_UNAVAILABLE, "the daemon is shutting down", true);
        }
}
