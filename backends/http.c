/* http.c — libcurl multi-socket API on libuv (uv_poll_t per socket + one uv_timer_t). */
#include "backends/http.h"

/* The type-checking macros of <curl/curl.h> would clash with the dlopen indirection below. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/util.h"

/* libcurl is loaded with dlopen() on the first request rather than linked: with it come
 * OpenSSL, GnuTLS, Kerberos, LDAP and RTMP (its dependencies), megabytes of RSS that a daemon
 * which never calls an HTTP API should not carry. Every libcurl function this file uses goes
 * through this table, with the exact types of <curl/curl.h>. */
static struct {
        void *handle;
        __typeof__(curl_global_init) *global_init;
        __typeof__(curl_easy_init) *easy_init;
        __typeof__(curl_easy_setopt) *easy_setopt;
        __typeof__(curl_easy_getinfo) *easy_getinfo;
        __typeof__(curl_easy_pause) *easy_pause;
        __typeof__(curl_easy_cleanup) *easy_cleanup;
        __typeof__(curl_easy_strerror) *easy_strerror;
        __typeof__(curl_easy_send) *easy_send;
        __typeof__(curl_easy_recv) *easy_recv;
        __typeof__(curl_multi_init) *multi_init;
        __typeof__(curl_multi_setopt) *multi_setopt;
        __typeof__(curl_multi_assign) *multi_assign;
        __typeof__(curl_multi_add_handle) *multi_add_handle;
        __typeof__(curl_multi_remove_handle) *multi_remove_handle;
        __typeof__(curl_multi_socket_action) *multi_socket_action;
        __typeof__(curl_multi_info_read) *multi_info_read;
        __typeof__(curl_multi_cleanup) *multi_cleanup;
        __typeof__(curl_slist_append) *slist_append;
        __typeof__(curl_slist_free_all) *slist_free_all;
        __typeof__(curl_version_info) *version_info;
} curl_dl;

#define HTTP_CURL_SONAME "libcurl.so.4"

static const struct {
        const char *name;
        size_t offset;
} curl_dl_syms[] = {
#define CURL_DL_SYM(field, sym)                                                                    \
        {                                                                                          \
#sym, offsetof(__typeof__(curl_dl), field)                                         \
        }
        CURL_DL_SYM(global_init, curl_global_init),
        CURL_DL_SYM(easy_init, curl_easy_init),
        CURL_DL_SYM(easy_setopt, curl_easy_setopt),
        CURL_DL_SYM(easy_getinfo, curl_easy_getinfo),
        CURL_DL_SYM(easy_pause, curl_easy_pause),
        CURL_DL_SYM(easy_cleanup, curl_easy_cleanup),
        CURL_DL_SYM(easy_strerror, curl_easy_strerror),
        CURL_DL_SYM(easy_send, curl_easy_send),
        CURL_DL_SYM(easy_recv, curl_easy_recv),
        CURL_DL_SYM(multi_init, curl_multi_init),
        CURL_DL_SYM(multi_setopt, curl_multi_setopt),
        CURL_DL_SYM(multi_assign, curl_multi_assign),
        CURL_DL_SYM(multi_add_handle, curl_multi_add_handle),
        CURL_DL_SYM(multi_remove_handle, curl_multi_remove_handle),
        CURL_DL_SYM(multi_socket_action, curl_multi_socket_action),
        CURL_DL_SYM(multi_info_read, curl_multi_info_read),
        CURL_DL_SYM(multi_cleanup, curl_multi_cleanup),
        CURL_DL_SYM(slist_append, curl_slist_append),
        CURL_DL_SYM(slist_free_all, curl_slist_free_all),
        CURL_DL_SYM(version_info, curl_version_info),
#undef CURL_DL_SYM
};

/* Loads libcurl once; 0, or -ELIBACC when it or one of its functions is missing. */
static int
curl_dl_load(void)
{
        if (curl_dl.handle)
                return 0;
        void *h = dlopen(HTTP_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

        if (!h)
                return -ELIBACC;
        for (size_t i = 0; i < ARRAY_SIZE(curl_dl_syms); i++) {
                void *f = dlsym(h, curl_dl_syms[i].name);
                if (!f) {
                        dlclose(h);
                        return -ELIBACC;
                }
                memcpy((char *) &curl_dl + curl_dl_syms[i].offset, &f, sizeof(f));
        }
        curl_dl.handle = h;
        return 0;
}

/* <curl/curl.h> wraps these three in argument-count macros; the table replaces them. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init         (*curl_dl.global_init)
#define curl_easy_init           (*curl_dl.easy_init)
#define curl_easy_setopt         (*curl_dl.easy_setopt)
#define curl_easy_getinfo        (*curl_dl.easy_getinfo)
#define curl_easy_pause          (*curl_dl.easy_pause)
#define curl_easy_cleanup        (*curl_dl.easy_cleanup)
#define curl_easy_strerror       (*curl_dl.easy_strerror)
#define curl_easy_send           (*curl_dl.easy_send)
#define curl_easy_recv           (*curl_dl.easy_recv)
#define curl_multi_init          (*curl_dl.multi_init)
#define curl_multi_setopt        (*curl_dl.multi_setopt)
#define curl_multi_assign        (*curl_dl.multi_assign)
#define curl_multi_add_handle    (*curl_dl.multi_add_handle)
#define curl_multi_remove_handle (*curl_dl.multi_remove_handle)
#define curl_multi_socket_action (*curl_dl.multi_socket_action)
#define curl_multi_info_read     (*curl_dl.multi_info_read)
#define curl_multi_cleanup       (*curl_dl.multi_cleanup)
#define curl_slist_append        (*curl_dl.slist_append)
#define curl_slist_free_all      (*curl_dl.slist_free_all)
#define curl_version_info        (*curl_dl.version_info)

#define HTTP_DEFAULT_MAX_BODY (16u << 20)

struct http_multi {
        uv_loop_t *loop;
        CURLM *multi;
        uv_timer_t timer;
        uv_idle_t soon; /* a 0 ms timeout: the next loop turn, without blocking in between */
        int closing;    /* handles whose close callback is still to come */
        int refs;
        int in_curl; /* > 0 while libcurl may call back: cancellations are deferred */
        bool dead;
        struct http_req *reqs; /* doubly linked */
        struct http_multi *next;
};

struct http_req {
        struct http_multi *m;
        CURL *easy;
        struct curl_slist *headers;
        char *body;
        struct http_cbs cbs;
        void *ctx;
        struct buf resp;
        size_t max_body;
        bool cancelled;
        bool in_cb;
        bool paused;
        bool too_big;
        bool connect_only; /* a raw stream once connected (http_stream_*) */
        char errbuf[CURL_ERROR_SIZE];
        struct http_req *prev, *next;
};

struct http_sock {
        uv_poll_t poll;
        curl_socket_t fd;
        struct http_multi *m;
};

static struct http_multi *http_multis;
static bool http_global_done;
/* libcurl before 8.0.0 (Debian 12 has 7.88.1) breaks the second request on a reused h2c
 * (prior knowledge) connection with "Error in the HTTP2 framing layer" (curl#10634, fixed
 * by curl#10643): there, each such request gets a connection of its own. */
static bool http_h2c_no_reuse;

static void http_action(struct http_multi *m, curl_socket_t fd, int flags);

static void
http_sock_close_cb(uv_handle_t *h)
{
        free(h->data);
}

static void
http_poll_cb(uv_poll_t *p, int status, int events)
{
        struct http_sock *s = p->data;
        struct http_multi *m = s->m;
        int flags = 0;

        if (status < 0)
                flags = CURL_CSELECT_ERR;
        if (events & UV_READABLE)
                flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
                flags |= CURL_CSELECT_OUT;
        http_action(m, s->fd, flags);
}

static int
http_socket_cb(CURL *easy, curl_socket_t fd, int action, void *userp, void *socketp)
{
        struct http_multi *m = userp;
        struct http_sock *s = socketp;
        int ev = 0;

        if (action == CURL_POLL_REMOVE) {
                if (s) {
                        uv_poll_stop(&s->poll);
                        uv_close((uv_handle_t *) &s->poll, http_sock_close_cb);
                        curl_multi_assign(m->multi, fd, NULL);
                }
                return 0;
        }
        if (!s) {
                s = xcalloc(1, sizeof(*s));
                s->fd = fd;
                s->m = m;
                s->poll.data = s;
                if (uv_poll_init_socket(m->loop, &s->poll, fd) < 0) {
                        free(s);
                        return -1;
                }
                curl_multi_assign(m->multi, fd, s);
        }
        if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
                ev |= UV_READABLE;
        if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
                ev |= UV_WRITABLE;
        uv_poll_start(&s->poll, ev, http_poll_cb);
        return 0;
}

static void
http_timer_cb(uv_timer_t *t)
{
        struct http_multi *m = t->data;

        http_action(m, CURL_SOCKET_TIMEOUT, 0);
}

static void
http_soon_cb(uv_idle_t *i)
{
        struct http_multi *m = i->data;

        uv_idle_stop(&m->soon);
        http_action(m, CURL_SOCKET_TIMEOUT, 0);
}

/* libcurl's timeout. 0 ("as soon as possible", e.g. a request just added) runs on the next
 * loop turn from an idle handle, which makes that turn's poll return at once: a 0 ms uv timer
 * would run again in the same timer phase (libcurl must not be called from its own timer
 * callback), and the usual 1 ms instead costs a full millisecond of sleep per request. */
static int
http_timer_fn(CURLM *multi, long timeout_ms, void *userp)
{
        struct http_multi *m = userp;

        uv_timer_stop(&m->timer);
        uv_idle_stop(&m->soon);
        if (timeout_ms == 0)
                uv_idle_start(&m->soon, http_soon_cb);
        else if (timeout_ms > 0)
                uv_timer_start(&m->timer, http_timer_cb, (uint64_t) timeout_ms, 0);
        return 0;
}

static void
http_req_unlink(struct http_req *r)
{
        struct http_multi *m = r->m;

        if (r->prev)
                r->prev->next = r->next;
        else
                m->reqs = r->next;
        if (r->next)
                r->next->prev = r->prev;
}

static void
http_req_free(struct http_req *r)
{
        http_req_unlink(r);
        curl_multi_remove_handle(r->m->multi, r->easy);
        curl_easy_cleanup(r->easy);
        curl_slist_free_all(r->headers);
        free(r->body);
        buf_free(&r->resp);
        free(r);
}

/* Retry-After of a 429/503 answer, as libcurl parsed it (seconds; 0 when absent). */
static long
http_retry_after(CURL *easy)
{
        curl_off_t ra = 0;

        if (curl_easy_getinfo(easy, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra < 0)
                return 0;
        return ra > 86400 ? 86400 : (long) ra;
}

static void
http_req_finish(struct http_req *r, CURLcode code)
{
        struct http_result res = {0};
        char *ctype = NULL;

        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &res.status);
        curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ctype);
        res.content_type = ctype;
        res.retry_after_s = http_retry_after(r->easy);
        res.curl_code = (int) code;
        if (r->too_big) {
                res.curl_code = CURLE_FILESIZE_EXCEEDED;
                res.error = "response body too large";
        } else if (code != CURLE_OK) {
                res.error = r->errbuf[0] ? r->errbuf : curl_easy_strerror(code);
        }
        if (!r->cbs.on_data) {
                buf_reserve(&r->resp, 0);
                res.body = r->resp.data;
                res.body_len = r->resp.len;
        }
        if (r->connect_only && code == CURLE_OK && !r->cancelled) {
                /* Stays in the multi: removing it would close the connection. The owner now
                 * reads and writes it, and frees it with http_cancel. */
                r->cbs.on_done(r->ctx, r, &res);
                return;
        }
        curl_multi_remove_handle(r->m->multi, r->easy);
        if (!r->cancelled && r->cbs.on_done)
                r->cbs.on_done(r->ctx, r, &res);
        http_req_free(r);
}

static void
http_check_info(struct http_multi *m)
{
        CURLMsg *msg;
        int left;

        while (!m->dead && (msg = curl_multi_info_read(m->multi, &left))) {
                struct http_req *r = NULL;
                CURLcode code;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                /* msg is invalid after remove_handle: copy first. */
                code = msg->data.result;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &r);
                http_req_finish(r, code);
        }
}

/* Frees requests cancelled while libcurl was calling back. */
static void
http_sweep(struct http_multi *m)
{
        struct http_req *r = m->reqs, *next;

        for (; r; r = next) {
                next = r->next;
                if (r->cancelled)
                        http_req_free(r);
        }
}

static void
http_action(struct http_multi *m, curl_socket_t fd, int flags)
{
        int running;

        m->refs++; /* on_done may release the last outside reference */
        m->in_curl++;
        curl_multi_socket_action(m->multi, fd, flags, &running);
        m->in_curl--;
        http_sweep(m);
        http_check_info(m);
        http_multi_release(m);
}

static size_t
http_header_cb(char *data, size_t size, size_t nmemb, void *userp)
{
        struct http_req *r = userp;
        size_t n = size * nmemb, len = n;

        if (r->cancelled)
                return 0;
        while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
                len--;
        if (len) {
                r->in_cb = true;
                r->cbs.on_header(r->ctx, r, data, len);
                r->in_cb = false;
        }
        return r->cancelled ? 0 : n;
}

static size_t
http_write_cb(char *data, size_t size, size_t nmemb, void *userp)
{
        struct http_req *r = userp;
        size_t n = size * nmemb;
        int rc;

        if (r->cancelled)
                return 0;
        if (!r->cbs.on_data) {
                if (r->resp.len + n > r->max_body) {
                        r->too_big = true;
                        return 0;
                }
                buf_append(&r->resp, data, n);
                return n;
        }
        if (r->paused)
                return CURL_WRITEFUNC_PAUSE;
        r->in_cb = true;
        rc = r->cbs.on_data(r->ctx, r, data, n);
        r->in_cb = false;
        if (rc < 0 || r->cancelled)
                return 0;
        return n;
}

static void
http_multi_free_cb(uv_handle_t *h)
{
        struct http_multi *m = h->data;

        if (--m->closing == 0)
                free(m);
}

/* Returns the loop's multi handle, creating it on first use (without libcurl yet). */
struct http_multi *
http_multi_acquire(uv_loop_t *loop)
{
        struct http_multi *m;

        for (m = http_multis; m; m = m->next) {
                if (m->loop == loop) {
                        m->refs++;
                        return m;
                }
        }
        m = xcalloc(1, sizeof(*m));
        m->loop = loop;
        m->refs = 1;
        uv_timer_init(loop, &m->timer);
        m->timer.data = m;
        uv_idle_init(loop, &m->soon);
        m->soon.data = m;
        m->next = http_multis;
        http_multis = m;
        return m;
}

/* Sets libcurl up at the first request, not at start-up: its global init loads and touches
 * OpenSSL (megabytes of RSS) that a daemon which never talks to an HTTP API does not need.
 * Doing it here, late, is safe: curl_global_init is not thread-safe in every libcurl build
 * (CURL_VERSION_THREADSAFE), but libcurl is only ever
 * called from the loop thread (the daemon's other threads are libuv's thread pool, which runs
 * file-system work and never calls libcurl). */
static int
http_multi_start(struct http_multi *m)
{
        if (m->multi)
                return 0;
        if (!http_global_done) {
                if (curl_dl_load() < 0)
                        return -ELIBACC;
                if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                        abort();
                http_h2c_no_reuse = curl_version_info(CURLVERSION_NOW)->version_num < 0x080000;
                http_global_done = true;
        }
        m->multi = curl_multi_init();
        if (!m->multi)
                abort();
        curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, http_socket_cb);
        curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m);
        curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, http_timer_fn);
        curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m);
        return 0;
}

/* Whether libcurl's global state has been set up (by a request) in this process. */
bool
http_curl_initialised(void)
{
        return http_global_done;
}

/* Drops a reference; the last one tears everything down without callbacks. */
void
http_multi_release(struct http_multi *m)
{
        struct http_multi **pp;

        if (!m || --m->refs > 0)
                return;
        for (pp = &http_multis; *pp; pp = &(*pp)->next) {
                if (*pp == m) {
                        *pp = m->next;
                        break;
                }
        }
        m->dead = true;
        while (m->reqs)
                http_req_free(m->reqs);
        /* May call the socket callback (REMOVE) for cached connections: the loop is alive. */
        if (m->multi)
                curl_multi_cleanup(m->multi);
        m->closing = 2;
        uv_close((uv_handle_t *) &m->timer, http_multi_free_cb);
        uv_close((uv_handle_t *) &m->soon, http_multi_free_cb);
}

static void
http_setup_easy(struct http_req *r, const struct http_req_spec *spec)
{
        CURL *e = r->easy;
        const char *method = spec->method ? spec->method : "GET";

        curl_easy_setopt(e, CURLOPT_URL, spec->url);
        curl_easy_setopt(e, CURLOPT_PRIVATE, r);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_write_cb);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                         spec->connect_timeout_ms ? spec->connect_timeout_ms : 10000L);
        if (spec->timeout_ms)
                curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, spec->timeout_ms);
        if (spec->unix_socket)
                curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, spec->unix_socket);
        if (spec->ca_file)
                curl_easy_setopt(e, CURLOPT_CAINFO, spec->ca_file);
        if (spec->cert_file)
                curl_easy_setopt(e, CURLOPT_SSLCERT, spec->cert_file);
        if (spec->key_file)
                curl_easy_setopt(e, CURLOPT_SSLKEY, spec->key_file);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        if (r->cbs.on_header) {
                curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_header_cb);
                curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
        }
        if (spec->http2) {
                bool tls = strncmp(spec->url, "https:", 6) == 0;
                curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                                 tls ? (long) CURL_HTTP_VERSION_2TLS
                                     : (long) CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
                if (!tls && http_h2c_no_reuse) {
                        curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
                        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
                } else {
                        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
                }
        }
        if (spec->connect_only) {
                r->connect_only = true;
                curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
                return;
        }
        if (strcmp(method, "GET") != 0)
                curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (spec->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
                r->body = xmalloc(spec->body_len + 1);
                if (spec->body_len)
                        memcpy(r->body, spec->body, spec->body_len);
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) spec->body_len);
        }
        for (const char *const *h = spec->headers; h && *h; h++)
                r->headers = curl_slist_append(r->headers, *h);
        /* No "Expect: 100-continue" round trip for uploads. */
        r->headers = curl_slist_append(r->headers, "Expect:");
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
}

/* Starts a request. */
int
http_request(struct http_multi *m, const struct http_req_spec *spec, const struct http_cbs *cbs,
             void *ctx, struct http_req **ret)
{
        struct http_req *r;

        if (!m || m->dead || !spec->url)
                return -EINVAL;
        if (http_multi_start(m) < 0)
                return -ELIBACC; /* libcurl.so.4 missing: "cannot access a needed shared library" */
        r = xcalloc(1, sizeof(*r));
        r->m = m;
        r->cbs = *cbs;
        r->ctx = ctx;
        r->max_body = spec->max_body ? spec->max_body : HTTP_DEFAULT_MAX_BODY;
        r->easy = curl_easy_init();
        if (!r->easy) {
                free(r);
                return -ENOMEM;
        }
        http_setup_easy(r, spec);
        r->next = m->reqs;
        if (m->reqs)
                m->reqs->prev = r;
        m->reqs = r;
        if (curl_multi_add_handle(m->multi, r->easy) != CURLM_OK) {
                http_req_free(r);
                return -EIO;
        }
        if (ret)
                *ret = r;
        return 0;
}

/* Cancels a request without a callback. */
void
http_cancel(struct http_req *req)
{
        if (!req || req->cancelled)
                return;
        req->cancelled = true;
        /* Inside a libcurl callback the handle may not be removed: http_sweep frees it. */
        if (!req->m->in_curl)
                http_req_free(req);
}

/* HTTP status so far. */
long
http_req_status(struct http_req *req)
{
        long st = 0;

        curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &st);
        return st;
}

/* Stops delivering data. */
void
http_pause(struct http_req *req)
{
        if (req->paused)
                return;
        req->paused = true;
        if (!req->in_cb) {
                req->m->in_curl++;
                curl_easy_pause(req->easy, CURLPAUSE_RECV);
                req->m->in_curl--;
        }
}

/* Restarts delivering data (may deliver buffered data at once). */
void
http_resume(struct http_req *req)
{
        if (!req->paused)
                return;
        req->paused = false;
        req->m->in_curl++;
        curl_easy_pause(req->easy, CURLPAUSE_CONT);
        req->m->in_curl--;
        if (!req->m->in_curl)
                http_sweep(req->m);
}

/* The connected socket of a connect-only request, or -1. */
int
http_stream_fd(struct http_req *req)
{
        curl_socket_t fd = CURL_SOCKET_BAD;

        if (!req->connect_only || curl_easy_getinfo(req->easy, CURLINFO_ACTIVESOCKET, &fd) != 0)
                return -1;
        return fd == CURL_SOCKET_BAD ? -1 : (int) fd;
}

/* Sends raw bytes on a connect-only stream: bytes sent, -EAGAIN, or -EIO. */
ssize_t
http_stream_send(struct http_req *req, const void *data, size_t len)
{
        size_t n = 0;
        CURLcode rc = curl_easy_send(req->easy, data, len, &n);

        if (rc == CURLE_AGAIN)
                return -EAGAIN;
        return rc == CURLE_OK ? (ssize_t) n : -EIO;
}

/* Receives raw bytes: bytes read, 0 at the end of the stream, -EAGAIN, or -EIO. */
ssize_t
http_stream_recv(struct http_req *req, void *buf, size_t len)
{
        size_t n = 0;
        CURLcode rc = curl_easy_recv(req->easy, buf, len, &n);

        if (rc == CURLE_AGAIN)
                return -EAGAIN;
        return rc == CURLE_OK ? (ssize_t) n : -EIO;
}

/* Percent-encodes s. */
char *
http_escape(const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        struct buf b = {0};

        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~' || c == '/' || c == ':' ||
                    c == '@') {
                        buf_append(&b, s, 1);
                } else {
                        char e[3] = {'%', hex[c >> 4], hex[c & 15]};
                        buf_append(&b, e, 3);
                }
        }
        /* buf_append terminates even when nothing was appended: buf_reserve alone leaves an
         * empty input's buffer unterminated. */
        buf_append(&b, "", 0);
        return b.data;
}
