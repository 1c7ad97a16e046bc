/* conn.c — client connections: framing, bounded write queue, server-to-client calls. */
#include "daemon/conn.h"

#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/rpc.h"
#include "protocol/frame.h"
#include "protocol/util.h"

#define CONN_READ_BUF (64 * 1024)

struct conn_call {
        struct list node;
        char id[32];
        conn_call_cb cb;
        void *ctx;
};

/* Input bytes held by the read buffers of one uid's connections (max_input_bytes_per_uid). */
struct conn_acct {
        struct list node; /* in conn_accts */
        uid_t uid;
        size_t bytes;
        size_t inflight; /* requests in flight on its open connections */
        unsigned refs;   /* connections */
};

struct conn {
        uv_pipe_t pipe;
        struct list node; /* in conn_all */
        int refs;
        uint64_t id;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        gid_t *groups;
        size_t ngroups;
        enum conn_role role;
        bool auto_approve;
        bool hello;    /* daemon.hello was answered: the role is fixed */
        bool confined; /* the peer is inside the daemon's sandboxes: subagent for good */
        char *client;
        struct frame frame;
        struct conn_acct *acct; /* NULL until accepted */
        size_t held;            /* what frame holds, as counted in acct */
        size_t queued;
        bool closing;
        bool reading;
        bool congested;
        struct list watches;
        struct list calls;
        uint64_t next_call;
        size_t inflight;
        bool peer_eof; /* the client shut down its sending side */
        bool rejected; /* refused: its requests are discarded until it goes away */
        bool hup_timer_on;
        uv_timer_t hup_timer; /* while half-closed: notice a full close (POLLHUP) */
        uv_shutdown_t shutdown_req;
};

static const char conn_budget_msg[] =
        "limit reached: this uid's connections hold too many bytes of unfinished messages "
        "(max_input_bytes_per_uid); the message being received was discarded, the connection "
        "stays usable";

/* Shared by every connection: the framer copies what it keeps. */
static char conn_rbuf[CONN_READ_BUF];

struct conn_wreq {
        uv_write_t req;
        struct conn *conn;
        size_t len;
        char data[];
};

static struct list conn_all = {&conn_all, &conn_all};
static unsigned conn_n;
static uint64_t conn_next_id = 1;
static size_t conn_max_message = 16u << 20;
static size_t conn_wbuf_max = 8u << 20;
static size_t conn_max_pending = 100000;
static size_t conn_max_pending_uid = 100000;
static size_t conn_input_max = 64u << 20;
static struct list conn_accts = {&conn_accts, &conn_accts};

/* Sets limits for new connections (the input budget for all at once). */
void
conn_set_limits(size_t max_message, size_t write_buffer_max, size_t max_pending,
                size_t pending_per_uid, size_t input_per_uid)
{
        conn_max_pending = max_pending;
        conn_max_pending_uid = pending_per_uid;
        conn_max_message = max_message;
        conn_wbuf_max = write_buffer_max;
        conn_input_max = input_per_uid;
}

static struct conn_acct *
conn_acct_get(uid_t uid)
{
        struct list *pos, *tmp;
        struct conn_acct *a;

        LIST_FOREACH_SAFE(pos, tmp, &conn_accts)
        {
                a = LIST_ENTRY(pos, struct conn_acct, node);
                if (a->uid == uid) {
                        a->refs++;
                        return a;
                }
        }
        a = xcalloc(1, sizeof(*a));
        a->uid = uid;
        a->refs = 1;
        list_add_tail(&conn_accts, &a->node);
        return a;
}

/* Brings c's share of its uid's budget up to date with what its buffer holds. */
static void
conn_account(struct conn *c)
{
        size_t now = c->closing ? 0 : frame_memory(&c->frame);

        if (!c->acct)
                return;
        c->acct->bytes = c->acct->bytes - c->held + now;
        c->held = now;
}

static void
conn_acct_unref(struct conn_acct *a)
{
        if (--a->refs == 0) {
                list_del(&a->node);
                free(a);
        }
}

static void
conn_acct_put(struct conn *c)
{
        struct conn_acct *a = c->acct;

        if (!a)
                return;
        a->bytes -= c->held;
        a->inflight -= c->inflight; /* what is still in flight on c counts no more */
        c->held = 0;
        c->acct = NULL;
        conn_acct_unref(a);
}

struct conn_acct *
conn_charge(struct conn *c, size_t n)
{
        struct conn_acct *a = c->acct;

        if (!a || a->bytes + n > conn_input_max)
                return NULL;
        a->bytes += n;
        a->refs++;
        return a;
}

void
conn_uncharge(struct conn_acct *a, size_t n)
{
        a->bytes -= n;
        conn_acct_unref(a);
}

/* Input bytes held for uid's connections (every uid's for (uid_t) -1). */
size_t
conn_input_bytes(uid_t uid)
{
        struct list *pos, *tmp;
        size_t n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &conn_accts)
        {
                struct conn_acct *a = LIST_ENTRY(pos, struct conn_acct, node);
                if (uid == (uid_t) -1 || a->uid == uid)
                        n += a->bytes;
        }
        return n;
}

/* Open connections of one uid. */
unsigned
conn_count_uid(uid_t uid)
{
        return LIST_COUNT_UID(&conn_all, struct conn, node, uid, uid);
}

/* Bytes queued to uid's connections, not yet written. */
size_t
conn_queued_uid(uid_t uid)
{
        struct list *pos, *tmp;
        size_t n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &conn_all)
        {
                struct conn *c = LIST_ENTRY(pos, struct conn, node);
                if (c->uid == uid)
                        n += c->queued;
        }
        return n;
}

/* Counts a request in flight and returns NULL; or, past max_pending_requests on c or
 * max_pending_requests_per_uid on its uid's open connections, counts none and returns the name
 * of that limit (*value its value). */
const char *
conn_inflight_begin(struct conn *c, size_t *value)
{
        if (c->inflight >= conn_max_pending) {
                *value = conn_max_pending;
                return "max_pending_requests";
        }
        if (c->acct && c->acct->inflight >= conn_max_pending_uid) {
                *value = conn_max_pending_uid;
                return "max_pending_requests_per_uid";
        }
        c->inflight++;
        if (c->acct)
                c->acct->inflight++;
        return NULL;
}

static void conn_maybe_finish(struct conn *c);

/* A request was answered. */
void
conn_inflight_end(struct conn *c)
{
        c->inflight--;
        if (c->acct)
                c->acct->inflight--;
        if (c->peer_eof)
                conn_maybe_finish(c);
}

/* Open connections. */
unsigned
conn_count(void)
{
        return conn_n;
}

static void
conn_read_groups(struct conn *c, int fd)
{
        socklen_t len = 64 * sizeof(gid_t);

        c->groups = xmalloc(len);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len) < 0) {
                if (errno == ERANGE) {
                        c->groups = xrealloc(c->groups, len);
                        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len) == 0) {
                                c->ngroups = len / sizeof(gid_t);
                                return;
                        }
                }
                /* Without the peer's groups run with the primary group only: never more. */
                c->ngroups = 0;
                return;
        }
        c->ngroups = len / sizeof(gid_t);
}

static void conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void conn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void
conn_start_reading(struct conn *c)
{
        if (c->reading || c->closing)
                return;
        if (uv_read_start((uv_stream_t *) &c->pipe, conn_alloc_cb, conn_read_cb) == 0)
                c->reading = true;
}

static void
conn_stop_reading(struct conn *c)
{
        if (!c->reading)
                return;
        uv_read_stop((uv_stream_t *) &c->pipe);
        c->reading = false;
}

/* Accepts a connection. */
struct conn *
conn_accept(uv_stream_t *server)
{
        struct conn *c = xcalloc(1, sizeof(*c));
        struct ucred cred;
        socklen_t len = sizeof(cred);
        uv_os_fd_t fd;

        list_init(&c->watches);
        list_init(&c->calls);
        list_init(&c->node);
        c->refs = 1; /* held by the handle until its close callback */
        uv_pipe_init(server->loop, &c->pipe, 0);
        c->pipe.data = c;
        frame_init(&c->frame, conn_max_message);
        if (uv_accept(server, (uv_stream_t *) &c->pipe) < 0 ||
            uv_fileno((uv_handle_t *) &c->pipe, &fd) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                log_warn("accept failed: %s", strerror(errno));
                conn_close(c);
                return NULL;
        }
        c->id = conn_next_id++;
        c->uid = cred.uid;
        c->gid = cred.gid;
        c->pid = cred.pid;
        c->acct = conn_acct_get(cred.uid);
        conn_read_groups(c, fd);
        list_add_tail(&conn_all, &c->node);
        conn_n++;
        conn_start_reading(c);
        return c;
}

/* Takes a reference. */
void
conn_ref(struct conn *c)
{
        c->refs++;
}

/* Drops a reference; frees after the handle closed. Not inlined: GCC 12's use-after-free
 * analysis misreads the refcount across inlined callers. */
__attribute__((noinline)) void
conn_unref(struct conn *c)
{
        if (--c->refs > 0)
                return;
        frame_free(&c->frame);
        free(c->groups);
        free(c->client);
        free(c);
}

static void
conn_close_cb(uv_handle_t *h)
{
        conn_unref(h->data);
}

static void
conn_shutdown_cb(uv_shutdown_t *req, int status)
{
        struct conn *c = req->data;

        conn_close(c);
        conn_unref(c);
}

/* After the client's EOF: once nothing is in flight, flush what is queued and close. */
static void
conn_maybe_finish(struct conn *c)
{
        if (c->closing || c->inflight || c->congested || c->shutdown_req.data)
                return;
        c->shutdown_req.data = c;
        conn_ref(c);
        if (uv_shutdown(&c->shutdown_req, (uv_stream_t *) &c->pipe, conn_shutdown_cb) < 0) {
                conn_unref(c);
                conn_close(c);
        }
}

static void
conn_hup_cb(uv_timer_t *t)
{
        struct conn *c = t->data;
        uv_os_fd_t fd;
        struct pollfd pfd = {.events = POLLOUT};

        if (c->closing || uv_fileno((uv_handle_t *) &c->pipe, &fd) < 0)
                return;
        pfd.fd = fd;
        /* A half-closed peer only shut its sending side; POLLHUP means it is gone. */
        if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)))
                conn_close(c);
}

static void
conn_hup_close_cb(uv_handle_t *h)
{
        conn_unref(h->data);
}

/* Closes the connection, telling watchers and pending calls first. */
void
conn_close(struct conn *c)
{
        struct list *pos, *tmp;

        if (c->closing)
                return;
        c->closing = true;
        conn_ref(c);
        conn_stop_reading(c);
        conn_acct_put(c);
        if (c->hup_timer_on) {
                c->hup_timer_on = false;
                uv_close((uv_handle_t *) &c->hup_timer, conn_hup_close_cb);
        }
        if (!list_empty(&c->node)) {
                list_del(&c->node);
                conn_n--;
        }
        LIST_FOREACH_SAFE(pos, tmp, &c->watches)
        {
                struct conn_watch *w = LIST_ENTRY(pos, struct conn_watch, node);
                list_del(&w->node);
                w->on_close(w);
        }
        LIST_FOREACH_SAFE(pos, tmp, &c->calls)
        {
                struct conn_call *call = LIST_ENTRY(pos, struct conn_call, node);
                list_del(&call->node);
                call->cb(call->ctx, NULL, NULL);
                free(call);
        }
        uv_close((uv_handle_t *) &c->pipe, conn_close_cb);
        conn_unref(c);
}

/* Whether the connection is closing. */
bool
conn_closing(const struct conn *c)
{
        return c->closing;
}

/* Accessors. */
uint64_t
conn_id(const struct conn *c)
{
        return c->id;
}

/* The peer's uid. */
uid_t
conn_uid(const struct conn *c)
{
        return c->uid;
}

/* The peer's primary gid. */
gid_t
conn_gid(const struct conn *c)
{
        return c->gid;
}

/* The peer's pid at connect time. */
pid_t
conn_pid(const struct conn *c)
{
        return c->pid;
}

/* The peer's supplementary groups. */
const gid_t *
conn_groups(const struct conn *c, size_t *n)
{
        *n = c->ngroups;
        return c->groups;
}

/* The role chosen by daemon.hello. */
enum conn_role
conn_role(const struct conn *c)
{
        return c->role;
}

/* Whether a batch client asked for auto-approval. */
bool
conn_auto_approve(const struct conn *c)
{
        return c->auto_approve;
}

/* Whether daemon.hello was said. */
bool
conn_said_hello(const struct conn *c)
{
        return c->hello;
}

/* Sets the role from daemon.hello, once. */
bool
conn_set_role(struct conn *c, enum conn_role role, bool auto_approve, const char *client)
{
        if (c->hello)
                return false;
        c->hello = true;
        c->role = c->confined ? CONN_ROLE_SUBAGENT : role;
        c->auto_approve = !c->confined && auto_approve;
        c->client = client ? xstrdup(client) : NULL;
        return true;
}

/* Confines the connection to the subagent role. */
void
conn_confine(struct conn *c)
{
        c->confined = true;
        c->role = CONN_ROLE_SUBAGENT;
        c->auto_approve = false;
}

/* Whether the peer is inside the daemon's sandboxes. */
bool
conn_confined(const struct conn *c)
{
        return c->confined;
}

static void conn_process(struct conn *c);

static void
conn_write_cb(uv_write_t *req, int status)
{
        struct conn_wreq *w = (struct conn_wreq *) req;
        struct conn *c = w->conn;

        c->queued -= w->len;
        free(w);
        if (status < 0 && status != UV_ECANCELED) {
                log_debug("conn %llu: write failed: %s", (unsigned long long) c->id,
                          uv_strerror(status));
                conn_close(c);
        } else if (c->congested && c->queued <= conn_wbuf_max / 2 && !c->closing) {
                struct list *pos, *tmp;
                c->congested = false;
                conn_ref(c);
                LIST_FOREACH_SAFE(pos, tmp, &c->watches)
                {
                        struct conn_watch *cw = LIST_ENTRY(pos, struct conn_watch, node);
                        if (cw->on_drain)
                                cw->on_drain(cw);
                }
                conn_process(c);
                conn_unref(c);
        }
        conn_unref(c);
}

/* Queues bytes that already form one or more complete NDJSON lines. */
void
conn_send_raw(struct conn *c, const char *data, size_t n)
{
        struct conn_wreq *w;
        uv_buf_t b;

        if (c->closing)
                return;
        w = xmalloc(sizeof(*w) + n);
        memcpy(w->data, data, n);
        w->len = n;
        w->conn = c;
        b = uv_buf_init(w->data, (unsigned) w->len);
        if (uv_write(&w->req, (uv_stream_t *) &c->pipe, &b, 1, conn_write_cb) < 0) {
                free(w);
                conn_close(c);
                return;
        }
        conn_ref(c);
        c->queued += w->len;
        if (c->queued > conn_wbuf_max)
                c->congested = true;
}

/* Queues a message. */
void
conn_send(struct conn *c, json_t *msg)
{
        struct buf b = {0};
        size_t n;

        if (!msg) {
                log_warn("conn %llu: a message could not be built and was not sent (a bug)",
                         (unsigned long long) c->id);
                return;
        }
        if (c->closing) {
                json_decref(msg);
                return;
        }
        n = json_dumpb(msg, NULL, 0, JSON_COMPACT | JSON_REAL_PRECISION(10));
        buf_reserve(&b, n + 1);
        b.len = json_dumpb(msg, b.data, n, JSON_COMPACT | JSON_REAL_PRECISION(10));
        json_decref(msg);
        buf_append(&b, "\n", 1);
        conn_send_raw(c, b.data, b.len);
        buf_free(&b);
}

/* Sends a notification. */
void
conn_notify(struct conn *c, const char *method, json_t *params)
{
        conn_send(c,
                  json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params", params));
}

/* Queued bytes. */
size_t
conn_queued(const struct conn *c)
{
        return c->queued;
}

/* Above the high watermark. */
bool
conn_congested(const struct conn *c)
{
        return c->congested;
}

/* Adds a watcher. */
void
conn_watch_add(struct conn *c, struct conn_watch *w)
{
        list_add_tail(&c->watches, &w->node);
}

/* Removes a watcher (harmless if already removed). */
void
conn_watch_del(struct conn_watch *w)
{
        list_del(&w->node);
}

/* Sends a server-to-client request. */
const char *
conn_call(struct conn *c, const char *method, json_t *params, conn_call_cb cb, void *ctx)
{
        struct conn_call *call = xcalloc(1, sizeof(*call));

        snprintf(call->id, sizeof(call->id), "sbx-%llu", (unsigned long long) ++c->next_call);
        call->cb = cb;
        call->ctx = ctx;
        list_add_tail(&c->calls, &call->node);
        conn_send(c, json_pack("{s:s,s:s,s:s,s:o}", "jsonrpc", "2.0", "id", call->id, "method",
                               method, "params", params));
        return call->id;
}

static struct conn_call *
conn_call_find(struct conn *c, const char *id)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &c->calls)
        {
                struct conn_call *call = LIST_ENTRY(pos, struct conn_call, node);
                if (!strcmp(call->id, id))
                        return call;
        }
        return NULL;
}

/* Cancels a pending call. */
void
conn_call_cancel(struct conn *c, const char *id)
{
        struct conn_call *call = conn_call_find(c, id);

        if (!call)
                return;
        list_del(&call->node);
        call->cb(call->ctx, NULL, NULL);
        free(call);
}

/* Routes a response to a server request; unknown ids are ignored (logged at debug). */
void
conn_handle_response(struct conn *c, json_t *msg)
{
        json_t *id = json_object_get(msg, "id");
        struct conn_call *call =
                json_is_string(id) ? conn_call_find(c, json_string_value(id)) : NULL;

        if (!call) {
                log_debug("conn %llu: response to unknown request ignored",
                          (unsigned long long) c->id);
                return;
        }
        list_del(&call->node);
        call->cb(call->ctx, json_object_get(msg, "result"), json_object_get(msg, "error"));
        free(call);
}

static void
conn_handle_line(struct conn *c, const char *line, size_t len)
{
        json_error_t jerr;
        json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);

        if (!msg) {
                if (json_error_code(&jerr) == json_error_invalid_utf8)
                        rpc_protocol_error(c, -32700, "parse error: invalid UTF-8 at byte %d",
                                           jerr.position);
                else
                        rpc_protocol_error(c, -32700, "parse error at byte %d: %s", jerr.position,
                                           jerr.text);
                return;
        }
        rpc_dispatch(c, msg);
        json_decref(msg);
}

/* Handles buffered lines until none is left or the write queue is full. */
static void
conn_process(struct conn *c)
{
        const char *line;
        size_t len;
        enum frame_status st;

        while (!c->closing && !c->congested) {
                st = frame_next(&c->frame, &line, &len);
                if (st == FRAME_NONE)
                        break;
                if (st == FRAME_TOO_LONG)
                        rpc_protocol_error(c, -32600,
                                           "message too large: the limit is %zu bytes "
                                           "(max_message_bytes); the rest of the line was "
                                           "discarded",
                                           conn_max_message);
                else
                        conn_handle_line(c, line, len);
        }
        if (c->closing)
                return;
        if (c->congested || c->peer_eof)
                conn_stop_reading(c);
        else
                conn_start_reading(c);
        if (c->peer_eof)
                conn_maybe_finish(c);
}

/* The client will send nothing more: answer what is in flight, then close. A client that
 * closed completely is noticed by the POLLHUP check and treated as a disconnect. */
static void
conn_peer_eof(struct conn *c)
{
        conn_stop_reading(c);
        c->peer_eof = true;
        if (!c->hup_timer_on) {
                uv_timer_init(c->pipe.loop, &c->hup_timer);
                c->hup_timer.data = c;
                conn_ref(c);
                c->hup_timer_on = true;
                uv_timer_start(&c->hup_timer, conn_hup_cb, 200, 200);
        }
        conn_maybe_finish(c);
}

static void
conn_reject_timeout_cb(uv_timer_t *t)
{
        conn_close(t->data);
}

static void
conn_reject_shutdown_cb(uv_shutdown_t *req, int status)
{
        conn_unref(req->data);
}

/* Sends one last message (stolen) and closes once the client has read it: closing with its
 * request still unread would make the client see ECONNRESET instead of the message. */
void
conn_reject(struct conn *c, json_t *msg)
{
        conn_send(c, msg);
        c->rejected = true;
        c->shutdown_req.data = c;
        conn_ref(c);
        if (uv_shutdown(&c->shutdown_req, (uv_stream_t *) &c->pipe, conn_reject_shutdown_cb) < 0)
                conn_unref(c);
        uv_timer_init(c->pipe.loop, &c->hup_timer);
        c->hup_timer.data = c;
        conn_ref(c);
        c->hup_timer_on = true;
        uv_timer_start(&c->hup_timer, conn_reject_timeout_cb, 1000, 0);
}

/* Half-sent lines of one uid may not hold more than max_input_bytes_per_uid in all: the line
 * that crosses it is dropped (its sender is told, the connection stays usable). */
static void
conn_budget(struct conn *c)
{
        size_t dropped;

        if (c->closing)
                return;
        frame_trim(&c->frame, 0); /* idle connections hold nothing */
        conn_account(c);
        if (c->acct->bytes <= conn_input_max || !(dropped = frame_drop_partial(&c->frame)))
                return;
        conn_account(c);
        log_info("conn %llu: uid %u over its input budget: an unfinished message of %zu bytes "
                 "dropped",
                 (unsigned long long) c->id, (unsigned) c->uid, dropped);
        conn_send(c, json_pack("{s:s,s:n,s:{s:i,s:s%,s:{s:s,s:I}}}", "jsonrpc", "2.0", "id",
                               "error", "code", SBX_E_LIMIT, "message", conn_budget_msg,
                               strlen(conn_budget_msg), "data", "limit", "max_input_bytes_per_uid",
                               "value", (json_int_t) conn_input_max));
}

static void
conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
        buf->base = conn_rbuf;
        buf->len = sizeof(conn_rbuf);
}

static void
conn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
        struct conn *c = s->data;

        if (nread == UV_EOF && c->rejected) {
                conn_close(c);
                return;
        }
        if (nread == UV_EOF) {
                conn_peer_eof(c);
                return;
        }
        if (c->rejected)
                return;
        if (nread < 0) {
                log_debug("conn %llu: read: %s", (unsigned long long) c->id,
                          uv_strerror((int) nread));
                conn_close(c);
                return;
        }
        if (nread == 0)
                return;
        frame_feed(&c->frame, buf->base, (size_t) nread);
        conn_ref(c);
        conn_process(c);
        conn_budget(c);
        conn_unref(c);
}

/* Notifies everyone (uid -1) or every connection of uid. */
static void
conn_notify_all(long long uid, const char *method, json_t *params)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &conn_all)
        {
                struct conn *c = LIST_ENTRY(pos, struct conn, node);
                if (uid < 0 || (long long) conn_uid(c) == uid)
                        conn_notify(c, method, json_incref(params));
        }
        json_decref(params);
}

/* Notifies everyone. */
void
conn_broadcast(const char *method, json_t *params)
{
        conn_notify_all(-1, method, params);
}

/* Notifies every open connection of uid. */
void
conn_notify_uid(uid_t uid, const char *method, json_t *params)
{
        conn_notify_all((long long) uid, method, params);
}

/* Closes every connection. */
void
conn_close_all(void)
{
        while (!list_empty(&conn_all))
                conn_close(LIST_ENTRY(conn_all.next, struct conn, node));
}
